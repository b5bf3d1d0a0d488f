/* migrate.store.fjall._fjall_c: the C twin of the Fjall hot paths (migrate/store/fjall/_c.py
 * wraps it; migrate/store/fjall/_python.py is the pure-Python twin with the same results).
 *
 * What profiling of scans, bulk builds and journal reads put here: decoding a decompressed
 * data block into items and picking the live rows of a run (the scan), encoding rows into
 * data block payloads (the bulk build), decoding journal markers (opening a keyspace with
 * big journals), and setting the bits of a bloom filter.  Every one of them returns Python
 * objects (bytes, tuples, lists), which cffi cannot make, so this is a plain extension
 * module on the stable ABI (3.11+), like importers/redb/_pairs.c.  Checksums (XXH3) and LZ4
 * stay with the xxhash and lz4 packages.
 *
 * Errors of the decoders are returned, not raised: (None, code, position), the same codes
 * and positions as the Python twin (block.py: TRUNCATED 1, BAD_VARINT 2, BAD_TYPE 3,
 * TRAILING 4).  Every length read from the input is checked against the input before it is
 * used, and no allocation is sized by a length field alone.
 */
#define Py_LIMITED_API 0x030B0000
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

#define FJ_ABI 4

enum { E_OK = 0, E_TRUNCATED = 1, E_BAD_VARINT = 2, E_BAD_TYPE = 3, E_TRAILING = 4 };

/* LEB128 as varint-rs writes it; the Python twin's _varint, step for step. */
static int rd_varint(const uint8_t *b, Py_ssize_t *pp, Py_ssize_t end, int max_bytes,
                     uint64_t limit, uint64_t *out, Py_ssize_t *errpos) {
    Py_ssize_t start = *pp, p = *pp;
    uint64_t value = 0;
    int shift = 0, overflow = 0;
    for (;;) {
        uint8_t c;
        if (p >= end) {
            *errpos = start;
            return E_TRUNCATED;
        }
        c = b[p++];
        if (shift == 63) {
            if ((c & 0x7F) > 1) overflow = 1;
            value |= (uint64_t)(c & 0x01) << 63;
        } else {
            value |= (uint64_t)(c & 0x7F) << shift;
        }
        if (!(c & 0x80)) break;
        shift += 7;
        if (p - start >= max_bytes) {
            *errpos = start;
            return E_BAD_VARINT;
        }
    }
    if (overflow || value > limit) {
        *errpos = start;
        return E_BAD_VARINT;
    }
    *out = value;
    *pp = p;
    return E_OK;
}

static uint64_t be(const uint8_t *p, int n) {
    uint64_t v = 0;
    int i;
    for (i = 0; i < n; i++) v = (v << 8) | p[i];
    return v;
}

static PyObject *error_result(int code, Py_ssize_t pos) {
    return Py_BuildValue("(Oin)", Py_None, code, pos);
}

/* The last key a live filter saw: a bytes object it holds (owned), or -- while the block it
 * came from is being decoded -- a pointer into that block's payload. */
typedef struct {
    PyObject *obj;
    const uint8_t *ptr;
    Py_ssize_t len; /* -1: none yet */
    int in_payload;
} last_key;

static int last_set_obj(last_key *l, PyObject *o) {
    Py_XDECREF(l->obj);
    l->obj = NULL, l->ptr = NULL, l->len = -1, l->in_payload = 0;
    if (o == Py_None) return 0;
    if (!PyBytes_Check(o)) {
        PyErr_SetString(PyExc_TypeError, "last must be bytes or None");
        return -1;
    }
    Py_INCREF(o);
    l->obj = o;
    l->ptr = (const uint8_t *)PyBytes_AsString(o);
    l->len = PyBytes_Size(o);
    return 0;
}

/* Make a last key that points into a payload its own bytes object (before the payload
 * goes away). */
static int last_settle(last_key *l) {
    PyObject *o;
    if (!l->in_payload) return 0;
    o = PyBytes_FromStringAndSize((const char *)l->ptr, l->len);
    if (o == NULL) return -1;
    Py_XDECREF(l->obj);
    l->obj = o, l->ptr = (const uint8_t *)PyBytes_AsString(o), l->in_payload = 0;
    return 0;
}

static PyObject *last_result(last_key *l) {
    PyObject *o = l->obj ? l->obj : Py_None;
    Py_INCREF(o);
    return o;
}

/* Decode the items of one payload into out: mode 0 every item as (key, value, seqno,
 * type); mode 1 only the live rows (key, value), the first version of each key not equal
 * to the last key seen, unless a tombstone.  Returns an E_ code (errpos set), or -1 with a
 * Python exception. */
static int decode_payload(const uint8_t *b, Py_ssize_t end, PyObject *out, int mode,
                          last_key *last, uint64_t *size_out, Py_ssize_t *errpos) {
    Py_ssize_t p = 4;
    uint64_t count, i, size = 0;
    int code;
    if (end < 4) {
        *errpos = 0;
        return E_TRUNCATED;
    }
    count = ((uint64_t)b[0] << 24) | ((uint64_t)b[1] << 16) | ((uint64_t)b[2] << 8) | b[3];
    for (i = 0; i < count; i++) {
        uint64_t seqno, klen, vlen = 0;
        Py_ssize_t kpos, vpos = 0;
        uint8_t vtype;
        if ((code = rd_varint(b, &p, end, 10, UINT64_MAX, &seqno, errpos))) return code;
        if (p >= end) {
            *errpos = p;
            return E_TRUNCATED;
        }
        vtype = b[p];
        if (vtype > 2) {
            *errpos = p;
            return E_BAD_TYPE;
        }
        p++;
        if ((code = rd_varint(b, &p, end, 3, 0xFFFF, &klen, errpos))) return code;
        if ((uint64_t)(end - p) < klen) {
            *errpos = p;
            return E_TRUNCATED;
        }
        kpos = p;
        p += (Py_ssize_t)klen;
        if (vtype == 0) {
            if ((code = rd_varint(b, &p, end, 5, 0xFFFFFFFFu, &vlen, errpos))) return code;
            if ((uint64_t)(end - p) < vlen) {
                *errpos = p;
                return E_TRUNCATED;
            }
            vpos = p;
            p += (Py_ssize_t)vlen;
        }
        size += 9 + klen + vlen;
        if (mode == 0) {
            PyObject *item = Py_BuildValue("(y#y#Ki)", (const char *)b + kpos, (Py_ssize_t)klen,
                                           (const char *)b + vpos, (Py_ssize_t)vlen,
                                           (unsigned long long)seqno, (int)vtype);
            if (item == NULL || PyList_Append(out, item) < 0) {
                Py_XDECREF(item);
                return -1;
            }
            Py_DECREF(item);
        } else {
            PyObject *row;
            if (last->len == (Py_ssize_t)klen && memcmp(last->ptr, b + kpos, klen) == 0)
                continue;
            last->ptr = b + kpos, last->len = (Py_ssize_t)klen, last->in_payload = 1;
            if (vtype != 0) continue;
            row = Py_BuildValue("(y#y#)", (const char *)b + kpos, (Py_ssize_t)klen,
                                (const char *)b + vpos, (Py_ssize_t)vlen);
            if (row == NULL || PyList_Append(out, row) < 0) {
                Py_XDECREF(row);
                return -1;
            }
            Py_DECREF(row);
        }
    }
    if (p != end) {
        *errpos = p;
        return E_TRAILING;
    }
    *size_out = size;
    return E_OK;
}

/* decode_items(payload) -> ([(key, value, seqno, type)], size) | (None, code, pos) */
static PyObject *decode_items(PyObject *self, PyObject *arg) {
    Py_buffer view;
    PyObject *list, *result = NULL;
    uint64_t size = 0;
    Py_ssize_t errpos = 0;
    int code;
    (void)self;
    if (PyObject_GetBuffer(arg, &view, PyBUF_SIMPLE) < 0) return NULL;
    list = PyList_New(0);
    if (list != NULL) {
        code = decode_payload((const uint8_t *)view.buf, view.len, list, 0, NULL, &size, &errpos);
        if (code > 0) result = error_result(code, errpos);
        else if (code == 0) result = Py_BuildValue("(OK)", list, (unsigned long long)size);
        Py_DECREF(list);
    }
    PyBuffer_Release(&view);
    return result;
}

/* Set once by _c.py: xxhash.xxh3_64_intdigest and lz4.block.decompress. */
static PyObject *g_xxh64 = NULL, *g_decompress = NULL;

static PyObject *setup(PyObject *self, PyObject *args) {
    PyObject *h, *d;
    (void)self;
    if (!PyArg_ParseTuple(args, "OO", &h, &d)) return NULL;
    Py_XDECREF(g_xxh64);
    Py_XDECREF(g_decompress);
    Py_INCREF(h), Py_INCREF(d);
    g_xxh64 = h, g_decompress = d;
    Py_RETURN_NONE;
}

/* 1 if the stored bytes of a block hash to checksum, 0 if not, -1 on a Python error. */
static int checksum_ok(const uint8_t *p, Py_ssize_t n, uint64_t checksum) {
    PyObject *mv = PyMemoryView_FromMemory((char *)p, n, PyBUF_READ), *got;
    unsigned long long value;
    if (mv == NULL) return -1;
    got = PyObject_CallFunctionObjArgs(g_xxh64, mv, NULL);
    Py_DECREF(mv);
    if (got == NULL) return -1;
    value = PyLong_AsUnsignedLongLong(got);
    Py_DECREF(got);
    if (value == (unsigned long long)-1 && PyErr_Occurred()) return -1;
    return value == checksum;
}

/* blocks_decode(buf, pos, mode, last) -> (out, pos, last, bad)
 * Every complete data block of buf from pos: header, checksum, LZ4 (bounded as block.py
 * bounds it), items and their size -- mode 0 items, mode 1 live rows (see decode_payload).
 * Stops at the first block that is not complete in buf (bad False) or that has any problem
 * (bad True: pos is that block's; the caller reads it again the slow way, which raises the
 * one named error; nothing of it is in out). */
static PyObject *blocks_decode(PyObject *self, PyObject *args) {
    PyObject *bufo, *lasto, *out = NULL, *result = NULL;
    Py_ssize_t pos;
    int mode, bad = 0;
    Py_buffer view;
    last_key last = {NULL, NULL, -1, 0};
    (void)self;
    if (!PyArg_ParseTuple(args, "OniO", &bufo, &pos, &mode, &lasto)) return NULL;
    if (g_xxh64 == NULL || g_decompress == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "setup() was not called");
        return NULL;
    }
    if (PyObject_GetBuffer(bufo, &view, PyBUF_SIMPLE) < 0) return NULL;
    if (last_set_obj(&last, lasto) < 0) goto done;
    out = PyList_New(0);
    if (out == NULL) goto done;
    if (pos < 0) pos = 0;
    {
        const uint8_t *b = (const uint8_t *)view.buf;
        Py_ssize_t end = view.len;
        while (end - pos >= 30) {
            const uint8_t *h = b + pos;
            uint64_t checksum = be(h + 6, 8);
            uint64_t stored = be(h + 22, 4), items_size = be(h + 26, 4), size = 0;
            Py_ssize_t mark = PyList_Size(out), errpos;
            last_key saved = last;
            PyObject *payload = NULL;
            const uint8_t *pb;
            Py_ssize_t plen;
            int ok, code;
            if (memcmp(h, "LSM\x02", 4) != 0 || h[4] > 1 || h[5] != 0) {
                bad = 1;
                break;
            }
            if ((uint64_t)(end - pos - 30) < stored) break; /* not complete in buf */
            ok = checksum_ok(h + 30, (Py_ssize_t)stored, checksum);
            if (ok < 0) goto done;
            if (!ok) {
                bad = 1;
                break;
            }
            if (h[4] == 1) {
                uint64_t prefix, by_items, by_lz4;
                PyObject *mv;
                if (stored < 4) {
                    bad = 1;
                    break;
                }
                prefix = (uint64_t)h[30] | ((uint64_t)h[31] << 8) | ((uint64_t)h[32] << 16) |
                         ((uint64_t)h[33] << 24);
                by_items = 4 + items_size + 19 * (items_size / 8 + 1);
                by_lz4 = 255 * stored + 64;
                if (prefix > (by_items < by_lz4 ? by_items : by_lz4)) {
                    bad = 1;
                    break;
                }
                mv = PyMemoryView_FromMemory((char *)h + 30, (Py_ssize_t)stored, PyBUF_READ);
                if (mv == NULL) goto done;
                payload = PyObject_CallFunctionObjArgs(g_decompress, mv, NULL);
                Py_DECREF(mv);
                if (payload == NULL) {
                    PyErr_Clear(); /* the slow path names it */
                    bad = 1;
                    break;
                }
                if (!PyBytes_Check(payload) || (uint64_t)PyBytes_Size(payload) != prefix) {
                    Py_DECREF(payload);
                    bad = 1;
                    break;
                }
                pb = (const uint8_t *)PyBytes_AsString(payload);
                plen = PyBytes_Size(payload);
            } else {
                pb = h + 30, plen = (Py_ssize_t)stored;
            }
            if (saved.obj) Py_INCREF(saved.obj);
            code = decode_payload(pb, plen, out, mode, &last, &size, &errpos);
            if (code == 0 && (size & 0xFFFFFFFFu) != items_size) code = 5;
            if (code == 0) code = last_settle(&last);
            Py_XDECREF(payload);
            if (code != 0) {
                /* roll back: nothing of a bad block is returned */
                if (PyList_SetSlice(out, mark, PyList_Size(out), NULL) < 0) code = -1;
                Py_XDECREF(last.obj);
                last = saved;
                if (code < 0) goto done;
                bad = 1;
                break;
            }
            Py_XDECREF(saved.obj);
            pos += 30 + (Py_ssize_t)stored;
        }
    }
    result = Py_BuildValue("(OnNO)", out, pos, last_result(&last), bad ? Py_True : Py_False);
done:
    Py_XDECREF(out);
    Py_XDECREF(last.obj);
    PyBuffer_Release(&view);
    return result;
}

/* The bytes of a bytes object (the items given to these functions are bytes). */
static int bytes_of(PyObject *o, char **buf, Py_ssize_t *len) {
    if (!PyBytes_Check(o)) {
        PyErr_SetString(PyExc_TypeError, "expected bytes");
        return -1;
    }
    return PyBytes_AsStringAndSize(o, buf, len);
}

/* live(items, last) -> ([(key, value)], last): the first version of each key not equal to
 * last, unless it is a tombstone (type 1 or 2). */
static PyObject *live(PyObject *self, PyObject *args) {
    PyObject *items, *last, *out, *result;
    Py_ssize_t n, i;
    char *lbuf = NULL;
    Py_ssize_t llen = -1;
    (void)self;
    if (!PyArg_ParseTuple(args, "OO", &items, &last)) return NULL;
    if (!PyList_Check(items)) {
        PyErr_SetString(PyExc_TypeError, "items must be a list");
        return NULL;
    }
    if (last != Py_None && bytes_of(last, &lbuf, &llen) < 0) return NULL;
    Py_INCREF(last);
    out = PyList_New(0);
    if (out == NULL) {
        Py_DECREF(last);
        return NULL;
    }
    n = PyList_Size(items);
    for (i = 0; i < n; i++) {
        PyObject *item = PyList_GetItem(items, i), *key, *vt;
        char *kbuf;
        Py_ssize_t klen;
        long vtype;
        if (item == NULL || !PyTuple_Check(item) || PyTuple_Size(item) < 4) {
            PyErr_SetString(PyExc_TypeError, "items are (key, value, seqno, type) tuples");
            goto fail;
        }
        key = PyTuple_GetItem(item, 0);
        if (bytes_of(key, &kbuf, &klen) < 0) goto fail;
        if (llen == klen && memcmp(kbuf, lbuf, (size_t)klen) == 0) continue;
        Py_DECREF(last);
        last = key;
        Py_INCREF(last);
        lbuf = kbuf, llen = klen;
        vt = PyTuple_GetItem(item, 3);
        vtype = PyLong_AsLong(vt);
        if (vtype == -1 && PyErr_Occurred()) goto fail;
        if (vtype == 0) {
            PyObject *pair = PyTuple_Pack(2, key, PyTuple_GetItem(item, 1));
            if (pair == NULL || PyList_Append(out, pair) < 0) {
                Py_XDECREF(pair);
                goto fail;
            }
            Py_DECREF(pair);
        }
    }
    result = Py_BuildValue("(NN)", out, last);
    return result;
fail:
    Py_DECREF(out);
    Py_DECREF(last);
    return NULL;
}

static size_t varint_len(uint64_t v) {
    size_t n = 1;
    while (v >= 0x80) v >>= 7, n++;
    return n;
}

static uint8_t *put_varint(uint8_t *o, uint64_t v) {
    while (v >= 0x80) {
        *o++ = (uint8_t)((v & 0x7F) | 0x80);
        v >>= 7;
    }
    *o++ = (uint8_t)v;
    return o;
}

/* encode_items(items) -> (payload, size) for (key, value, seqno, type) tuples. */
static PyObject *encode_items(PyObject *self, PyObject *arg) {
    Py_ssize_t n, i;
    size_t total = 4;
    uint64_t size = 0;
    PyObject *payload;
    uint8_t *o;
    (void)self;
    if (!PyList_Check(arg)) {
        PyErr_SetString(PyExc_TypeError, "items must be a list");
        return NULL;
    }
    n = PyList_Size(arg);
    for (i = 0; i < n; i++) {
        PyObject *item = PyList_GetItem(arg, i);
        char *kb, *vb;
        Py_ssize_t kl, vl;
        unsigned long long seqno;
        long vtype;
        if (!PyTuple_Check(item) || PyTuple_Size(item) < 4) {
            PyErr_SetString(PyExc_TypeError, "items are (key, value, seqno, type) tuples");
            return NULL;
        }
        if (bytes_of(PyTuple_GetItem(item, 0), &kb, &kl) < 0) return NULL;
        if (bytes_of(PyTuple_GetItem(item, 1), &vb, &vl) < 0) return NULL;
        seqno = PyLong_AsUnsignedLongLong(PyTuple_GetItem(item, 2));
        vtype = PyLong_AsLong(PyTuple_GetItem(item, 3));
        if (PyErr_Occurred()) return NULL;
        total += varint_len(seqno) + 1 + varint_len((uint64_t)kl) + (size_t)kl;
        size += 9 + (uint64_t)kl;
        if (vtype == 0) {
            total += varint_len((uint64_t)vl) + (size_t)vl;
            size += (uint64_t)vl;
        }
    }
    payload = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)total);
    if (payload == NULL) return NULL;
    o = (uint8_t *)PyBytes_AsString(payload);
    *o++ = (uint8_t)(n >> 24), *o++ = (uint8_t)(n >> 16), *o++ = (uint8_t)(n >> 8);
    *o++ = (uint8_t)n;
    for (i = 0; i < n; i++) {
        PyObject *item = PyList_GetItem(arg, i);
        char *kb, *vb;
        Py_ssize_t kl, vl;
        long vtype = PyLong_AsLong(PyTuple_GetItem(item, 3));
        PyBytes_AsStringAndSize(PyTuple_GetItem(item, 0), &kb, &kl);
        PyBytes_AsStringAndSize(PyTuple_GetItem(item, 1), &vb, &vl);
        o = put_varint(o, PyLong_AsUnsignedLongLong(PyTuple_GetItem(item, 2)));
        *o++ = (uint8_t)vtype;
        o = put_varint(o, (uint64_t)kl);
        memcpy(o, kb, (size_t)kl), o += kl;
        if (vtype == 0) {
            o = put_varint(o, (uint64_t)vl);
            memcpy(o, vb, (size_t)vl), o += vl;
        }
    }
    return Py_BuildValue("(NK)", payload, (unsigned long long)size);
}

/* encode_rows(rows, pos, seqno, block_size, last, final, hash)
 *   -> ([(payload, size, first_key, end_key, count, h1, h2)], consumed, last, error)
 * The bulk path: rows (key, value) from index pos, every key new and ascending, cut into
 * data blocks the way lsm-tree's writer cuts them (a block ends with the item whose size
 * brings the block to block_size); the rows after the last complete block are left for the
 * next call unless final.  hash: None, or xxhash.xxh3_128_digest, whose 16 bytes give each
 * key's bloom hashes (h1: the high 64 bits, h2: the low 64), returned per block as native
 * u64 arrays (bytes).  error: None or (code, index): 1 not (bytes, bytes), 2 key length not
 * 1..65535, 3 value longer than 2^32 - 1, 4 key not above the previous one; nothing from
 * the incomplete block before it is returned. */
static PyObject *make_block(PyObject *rows, Py_ssize_t start, Py_ssize_t end, uint64_t seqno,
                            size_t bytes, uint64_t size, PyObject *hash) {
    PyObject *payload = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)bytes), *blk = NULL;
    PyObject *h1 = NULL, *h2 = NULL;
    Py_ssize_t count = end - start, j;
    uint8_t *o;
    if (payload == NULL) return NULL;
    o = (uint8_t *)PyBytes_AsString(payload);
    *o++ = (uint8_t)(count >> 24), *o++ = (uint8_t)(count >> 16);
    *o++ = (uint8_t)(count >> 8), *o++ = (uint8_t)count;
    if (hash != Py_None) {
        h1 = PyBytes_FromStringAndSize(NULL, 8 * count);
        h2 = h1 ? PyBytes_FromStringAndSize(NULL, 8 * count) : NULL;
        if (h2 == NULL) goto fail;
    } else {
        h1 = Py_None, h2 = Py_None;
        Py_INCREF(h1), Py_INCREF(h2);
    }
    for (j = start; j < end; j++) {
        PyObject *row = PyList_GetItem(rows, j), *key = PyTuple_GetItem(row, 0);
        char *kb, *vb;
        Py_ssize_t kl, vl;
        PyBytes_AsStringAndSize(key, &kb, &kl);
        PyBytes_AsStringAndSize(PyTuple_GetItem(row, 1), &vb, &vl);
        o = put_varint(o, seqno);
        *o++ = 0;
        o = put_varint(o, (uint64_t)kl);
        memcpy(o, kb, (size_t)kl), o += kl;
        o = put_varint(o, (uint64_t)vl);
        memcpy(o, vb, (size_t)vl), o += vl;
        if (hash != Py_None) {
            PyObject *d = PyObject_CallFunctionObjArgs(hash, key, NULL);
            uint64_t a, b;
            if (d == NULL) goto fail;
            if (!PyBytes_Check(d) || PyBytes_Size(d) != 16) {
                Py_DECREF(d);
                PyErr_SetString(PyExc_ValueError, "the hash must give 16 bytes");
                goto fail;
            }
            a = be((const uint8_t *)PyBytes_AsString(d), 8);
            b = be((const uint8_t *)PyBytes_AsString(d) + 8, 8);
            Py_DECREF(d);
            memcpy(PyBytes_AsString(h1) + 8 * (j - start), &a, 8);
            memcpy(PyBytes_AsString(h2) + 8 * (j - start), &b, 8);
        }
    }
    blk = Py_BuildValue("(NKOOnNN)", payload, (unsigned long long)size,
                        PyTuple_GetItem(PyList_GetItem(rows, start), 0),
                        PyTuple_GetItem(PyList_GetItem(rows, end - 1), 0), count, h1, h2);
    return blk;
fail:
    Py_DECREF(payload);
    Py_XDECREF(h1);
    Py_XDECREF(h2);
    return NULL;
}

static PyObject *encode_rows(PyObject *self, PyObject *args) {
    PyObject *rows, *last, *hash, *blocks, *error = Py_None, *new_last;
    Py_ssize_t pos, n, i, start;
    unsigned long long seqno;
    Py_ssize_t block_size;
    int final;
    char *lb = NULL;
    Py_ssize_t ll = -1;
    uint64_t size = 0;
    size_t bytes = 4, sl;
    (void)self;
    if (!PyArg_ParseTuple(args, "OnKnOpO", &rows, &pos, &seqno, &block_size, &last, &final,
                          &hash))
        return NULL;
    if (!PyList_Check(rows)) {
        PyErr_SetString(PyExc_TypeError, "rows must be a list");
        return NULL;
    }
    if (last != Py_None && bytes_of(last, &lb, &ll) < 0) return NULL;
    sl = varint_len(seqno);
    blocks = PyList_New(0);
    if (blocks == NULL) return NULL;
    Py_INCREF(error);
    n = PyList_Size(rows);
    if (pos < 0) pos = 0;
    start = pos;
    for (i = pos; i < n; i++) {
        PyObject *row = PyList_GetItem(rows, i);
        char *kb = NULL, *vb;
        Py_ssize_t kl = 0, vl;
        int code = 0;
        if (!PyTuple_Check(row) || PyTuple_Size(row) != 2 ||
            !PyBytes_Check(PyTuple_GetItem(row, 0)) || !PyBytes_Check(PyTuple_GetItem(row, 1))) {
            code = 1;
        } else {
            PyBytes_AsStringAndSize(PyTuple_GetItem(row, 0), &kb, &kl);
            PyBytes_AsStringAndSize(PyTuple_GetItem(row, 1), &vb, &vl);
            if (kl < 1 || kl > 0xFFFF) code = 2;
            else if ((uint64_t)vl > 0xFFFFFFFFu) code = 3;
            else if (ll >= 0) {
                Py_ssize_t m = kl < ll ? kl : ll;
                int c = memcmp(kb, lb, (size_t)m);
                if (c < 0 || (c == 0 && kl <= ll)) code = 4;
            }
        }
        if (code) {
            Py_DECREF(error);
            error = Py_BuildValue("(in)", code, i);
            if (error == NULL) goto fail;
            final = 0;
            break;
        }
        lb = kb, ll = kl;
        bytes += sl + 1 + varint_len((uint64_t)kl) + (size_t)kl + varint_len((uint64_t)vl) +
                 (size_t)vl;
        size += 9 + (uint64_t)kl + (uint64_t)vl;
        if (size >= (uint64_t)block_size) {
            PyObject *blk = make_block(rows, start, i + 1, seqno, bytes, size, hash);
            if (blk == NULL || PyList_Append(blocks, blk) < 0) {
                Py_XDECREF(blk);
                goto fail;
            }
            Py_DECREF(blk);
            start = i + 1, size = 0, bytes = 4;
        }
    }
    if (final && n > start) {
        PyObject *blk = make_block(rows, start, n, seqno, bytes, size, hash);
        if (blk == NULL || PyList_Append(blocks, blk) < 0) {
            Py_XDECREF(blk);
            goto fail;
        }
        Py_DECREF(blk);
        start = n;
    }
    new_last = start > pos ? PyTuple_GetItem(PyList_GetItem(rows, start - 1), 0) : last;
    return Py_BuildValue("(NnON)", blocks, start, new_last, error);
fail:
    Py_DECREF(blocks);
    Py_XDECREF(error);
    return NULL;
}

/* encode_handles(handles) -> (payload, size) for index handles (end_key, offset). */
static PyObject *encode_handles(PyObject *self, PyObject *arg) {
    Py_ssize_t n, i;
    size_t total = 4;
    uint64_t size = 0;
    PyObject *payload;
    uint8_t *o;
    (void)self;
    if (!PyList_Check(arg)) {
        PyErr_SetString(PyExc_TypeError, "handles must be a list");
        return NULL;
    }
    n = PyList_Size(arg);
    for (i = 0; i < n; i++) {
        PyObject *h = PyList_GetItem(arg, i);
        char *kb;
        Py_ssize_t kl;
        unsigned long long off;
        if (!PyTuple_Check(h) || PyTuple_Size(h) != 2) {
            PyErr_SetString(PyExc_TypeError, "handles are (end_key, offset) tuples");
            return NULL;
        }
        if (bytes_of(PyTuple_GetItem(h, 0), &kb, &kl) < 0) return NULL;
        off = PyLong_AsUnsignedLongLong(PyTuple_GetItem(h, 1));
        if (PyErr_Occurred()) return NULL;
        total += varint_len(off) + varint_len((uint64_t)kl) + (size_t)kl;
        size += 8 + (uint64_t)kl;
    }
    payload = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)total);
    if (payload == NULL) return NULL;
    o = (uint8_t *)PyBytes_AsString(payload);
    *o++ = (uint8_t)(n >> 24), *o++ = (uint8_t)(n >> 16), *o++ = (uint8_t)(n >> 8);
    *o++ = (uint8_t)n;
    for (i = 0; i < n; i++) {
        PyObject *h = PyList_GetItem(arg, i);
        char *kb;
        Py_ssize_t kl;
        PyBytes_AsStringAndSize(PyTuple_GetItem(h, 0), &kb, &kl);
        o = put_varint(o, PyLong_AsUnsignedLongLong(PyTuple_GetItem(h, 1)));
        o = put_varint(o, (uint64_t)kl);
        memcpy(o, kb, (size_t)kl), o += kl;
    }
    return Py_BuildValue("(NK)", payload, (unsigned long long)size);
}

/* take(iterator, max_rows, max_bytes) -> list: the next rows of an iterator, at most
 * max_rows of them, ending early once their values (the second item of a (bytes, bytes)
 * tuple; anything else counts 0 and is left for encode_rows to refuse) reach max_bytes. */
static PyObject *take(PyObject *self, PyObject *args) {
    PyObject *it, *out, *row;
    Py_ssize_t max_rows, max_bytes, bytes = 0;
    (void)self;
    if (!PyArg_ParseTuple(args, "Onn", &it, &max_rows, &max_bytes)) return NULL;
    if (!PyIter_Check(it)) {
        PyErr_SetString(PyExc_TypeError, "take() needs an iterator");
        return NULL;
    }
    out = PyList_New(0);
    if (out == NULL) return NULL;
    while (PyList_Size(out) < max_rows && bytes < max_bytes && (row = PyIter_Next(it)) != NULL) {
        if (PyTuple_Check(row) && PyTuple_Size(row) == 2 && PyBytes_Check(PyTuple_GetItem(row, 1)))
            bytes += PyBytes_Size(PyTuple_GetItem(row, 1));
        if (PyList_Append(out, row) < 0) {
            Py_DECREF(row);
            Py_DECREF(out);
            return NULL;
        }
        Py_DECREF(row);
    }
    if (PyErr_Occurred()) {
        Py_DECREF(out);
        return NULL;
    }
    return out;
}

/* bloom_bits(m, k, h1, h2) -> bytes: the filter's m/8 bytes with every probe set. */
static PyObject *bloom_bits(PyObject *self, PyObject *args) {
    unsigned long long m, k;
    PyObject *h1o, *h2o, *out = NULL;
    Py_buffer b1, b2;
    (void)self;
    if (!PyArg_ParseTuple(args, "KKOO", &m, &k, &h1o, &h2o)) return NULL;
    if (m == 0 || m % 8) {
        PyErr_SetString(PyExc_ValueError, "m must be a positive multiple of 8");
        return NULL;
    }
    if (PyObject_GetBuffer(h1o, &b1, PyBUF_SIMPLE) < 0) return NULL;
    if (PyObject_GetBuffer(h2o, &b2, PyBUF_SIMPLE) < 0) {
        PyBuffer_Release(&b1);
        return NULL;
    }
    if (b1.len != b2.len || b1.len % 8) {
        PyErr_SetString(PyExc_ValueError, "h1 and h2 must be arrays of u64 of one length");
    } else if ((out = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)(m / 8))) != NULL) {
        uint8_t *bits = (uint8_t *)PyBytes_AsString(out);
        const uint8_t *p1 = (const uint8_t *)b1.buf, *p2 = (const uint8_t *)b2.buf;
        Py_ssize_t n = b1.len / 8, i;
        memset(bits, 0, (size_t)(m / 8));
        for (i = 0; i < n; i++) {
            uint64_t h1, h2, j;
            memcpy(&h1, p1 + 8 * i, 8);
            memcpy(&h2, p2 + 8 * i, 8);
            for (j = 0; j < k; j++) {
                uint64_t idx = h1 % m;
                bits[idx >> 3] |= (uint8_t)(0x80u >> (idx & 7));
                h1 += h2;
                h2 += j;
            }
        }
    }
    PyBuffer_Release(&b2);
    PyBuffer_Release(&b1);
    return out;
}

/* journal_markers(buf, pos) -> (markers, stop, code): journal.markers, step for step. */
enum { J_NEED = 0, J_BAD_TAG = 1, J_BAD_TYPE = 2, J_BAD_NAME = 3, J_BAD_TRAILER = 4,
       J_BAD_COMPRESSION = 5 };

static PyObject *journal_markers(PyObject *self, PyObject *args) {
    PyObject *bufo, *out, *result = NULL;
    Py_ssize_t pos;
    Py_buffer view;
    int code = J_NEED;
    (void)self;
    if (!PyArg_ParseTuple(args, "On", &bufo, &pos)) return NULL;
    if (PyObject_GetBuffer(bufo, &view, PyBUF_SIMPLE) < 0) return NULL;
    out = PyList_New(0);
    if (out == NULL) goto done;
    if (pos < 0) pos = 0;
    {
        const uint8_t *b = (const uint8_t *)view.buf;
        Py_ssize_t end = view.len;
        while (pos < end) {
            uint8_t tag = b[pos];
            PyObject *m;
            if (tag == 2) {
                Py_ssize_t q, vstart;
                uint64_t plen, klen, vlen;
                uint8_t vtype;
                PyObject *name, *key, *u;
                if (pos + 3 > end) break;
                vtype = b[pos + 1];
                if (vtype > 2) {
                    code = J_BAD_TYPE;
                    break;
                }
                plen = b[pos + 2];
                q = pos + 3 + (Py_ssize_t)plen;
                if (q + 2 > end) break;
                klen = be(b + q, 2);
                q += 2;
                if ((uint64_t)(end - q) < klen + 4) break;
                vlen = be(b + q + klen, 4);
                vstart = q + (Py_ssize_t)klen + 4;
                if ((uint64_t)(end - vstart) < vlen) break;
                u = PyUnicode_DecodeUTF8((const char *)b + pos + 3, (Py_ssize_t)plen, "strict");
                if (u == NULL) {
                    if (!PyErr_ExceptionMatches(PyExc_UnicodeDecodeError)) goto fail;
                    PyErr_Clear();
                    code = J_BAD_NAME;
                    break;
                }
                Py_DECREF(u);
                name = PyBytes_FromStringAndSize((const char *)b + pos + 3, (Py_ssize_t)plen);
                key = name ? PyBytes_FromStringAndSize((const char *)b + q, (Py_ssize_t)klen)
                           : NULL;
                if (key == NULL) {
                    Py_XDECREF(name);
                    goto fail;
                }
                m = Py_BuildValue("(inniNNnn)", 2, pos, vstart + (Py_ssize_t)vlen, (int)vtype,
                                  name, key, vstart, (Py_ssize_t)vlen);
                pos = vstart + (Py_ssize_t)vlen;
            } else if (tag == 1) {
                if (pos + 15 > end) break;
                if (b[pos + 13] != 0 || b[pos + 14] != 0) {
                    code = J_BAD_COMPRESSION;
                    break;
                }
                m = Py_BuildValue("(innKK)", 1, pos, pos + 15,
                                  (unsigned long long)be(b + pos + 1, 4),
                                  (unsigned long long)be(b + pos + 5, 8));
                pos += 15;
            } else if (tag == 3) {
                if (pos + 13 > end) break;
                if (memcmp(b + pos + 9, "FJL\x02", 4) != 0) {
                    code = J_BAD_TRAILER;
                    break;
                }
                m = Py_BuildValue("(innK)", 3, pos, pos + 13,
                                  (unsigned long long)be(b + pos + 1, 8));
                pos += 13;
            } else {
                code = J_BAD_TAG;
                break;
            }
            if (m == NULL || PyList_Append(out, m) < 0) {
                Py_XDECREF(m);
                goto fail;
            }
            Py_DECREF(m);
        }
    }
    result = Py_BuildValue("(Oni)", out, pos, code);
fail:
    Py_DECREF(out);
done:
    PyBuffer_Release(&view);
    return result;
}

static PyObject *abi(PyObject *self, PyObject *unused) {
    (void)self, (void)unused;
    return PyLong_FromLong(FJ_ABI);
}

static PyMethodDef methods[] = {
    {"abi", abi, METH_NOARGS, "The interface version of this module."},
    {"setup", setup, METH_VARARGS, "setup(xxh3_64_intdigest, lz4_decompress)"},
    {"blocks_decode", blocks_decode, METH_VARARGS,
     "blocks_decode(buf, pos, mode, last) -> (out, pos, last, bad)"},
    {"decode_items", decode_items, METH_O,
     "decode_items(payload) -> (items, size) | (None, code, pos)"},
    {"live", live, METH_VARARGS, "live(items, last) -> (rows, last)"},
    {"encode_items", encode_items, METH_O, "encode_items(items) -> (payload, size)"},
    {"encode_rows", encode_rows, METH_VARARGS,
     "encode_rows(rows, pos, seqno, block_size, last, final, hash) -> (blocks, consumed, last, "
     "error)"},
    {"bloom_bits", bloom_bits, METH_VARARGS, "bloom_bits(m, k, h1, h2) -> bytes"},
    {"take", take, METH_VARARGS, "take(iterator, max_rows, max_bytes) -> list"},
    {"encode_handles", encode_handles, METH_O, "encode_handles(handles) -> (payload, size)"},
    {"journal_markers", journal_markers, METH_VARARGS,
     "journal_markers(buf, pos) -> (markers, stop, code)"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "migrate.store.fjall._fjall_c", NULL, -1, methods,
    NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__fjall_c(void) { return PyModule_Create(&module); }
