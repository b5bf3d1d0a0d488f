/* importers.redb._redb_pairs: a batch of the C reader's entries as Python (key, value) pairs.
 *
 * The C reader (redb.c, through cffi) copies up to a batch of entries into one buffer with
 * four offsets per entry (key start, key end, value start, value end).  Slicing them out in
 * Python costs about three times what building the same list here costs (two bytes objects
 * and a tuple per entry, no interpreter loop), and at a million entries that difference is
 * most of a full scan.  cffi cannot return Python objects, so this one function is a plain
 * extension module on the stable ABI (3.11+: the buffer protocol is part of it).
 *
 * pairs(data, offsets, n) -> list[tuple[bytes, bytes]]: every offset is checked against the
 * data buffer, and 4 * n offsets against the offsets buffer, before anything is read.
 */
#define Py_LIMITED_API 0x030B0000
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

static PyObject *pairs(PyObject *self, PyObject *args) {
    PyObject *data_obj, *offsets_obj, *list = NULL;
    Py_ssize_t n;
    Py_buffer data, offsets;
    (void)self;
    if (!PyArg_ParseTuple(args, "OOn", &data_obj, &offsets_obj, &n)) return NULL;
    if (PyObject_GetBuffer(data_obj, &data, PyBUF_SIMPLE) < 0) return NULL;
    if (PyObject_GetBuffer(offsets_obj, &offsets, PyBUF_SIMPLE) < 0) {
        PyBuffer_Release(&data);
        return NULL;
    }
    if (n < 0 || (size_t)n > (size_t)offsets.len / (4 * sizeof(uint64_t))) {
        PyErr_SetString(PyExc_ValueError, "more entries than offsets");
        goto done;
    }
    {
        const char *d = (const char *)data.buf;
        const uint8_t *o = (const uint8_t *)offsets.buf;
        uint64_t len = (uint64_t)data.len;
        list = PyList_New(n);
        for (Py_ssize_t i = 0; list != NULL && i < n; i++) {
            uint64_t q[4];
            PyObject *k, *v, *pair;
            memcpy(q, o + 32 * (size_t)i, sizeof q); /* the offsets buffer need not be aligned */
            if (q[0] > q[1] || q[1] > len || q[2] > q[3] || q[3] > len) {
                PyErr_SetString(PyExc_ValueError, "entry offsets outside the data");
                Py_CLEAR(list);
                break;
            }
            k = PyBytes_FromStringAndSize(d + q[0], (Py_ssize_t)(q[1] - q[0]));
            v = k ? PyBytes_FromStringAndSize(d + q[2], (Py_ssize_t)(q[3] - q[2])) : NULL;
            pair = v ? PyTuple_Pack(2, k, v) : NULL;
            Py_XDECREF(k);
            Py_XDECREF(v);
            if (pair == NULL) {
                Py_CLEAR(list);
                break;
            }
            PyList_SetItem(list, i, pair); /* steals the reference */
        }
    }
done:
    PyBuffer_Release(&offsets);
    PyBuffer_Release(&data);
    return list;
}

static PyMethodDef methods[] = {
    {"pairs", pairs, METH_VARARGS,
     "pairs(data, offsets, n): n (key, value) bytes pairs from 4 u64 offsets each."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "importers.redb._redb_pairs", NULL, -1, methods,
    NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__redb_pairs(void) { return PyModule_Create(&module); }
