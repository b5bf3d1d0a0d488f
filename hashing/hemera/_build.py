"""cffi build script (out-of-line API mode) for the hemera C core.

Referenced from ``setup.py`` (``cffi_modules``); the C source lives beside it in ``hemera.c``
(which includes ``hemera_simd.h``, which includes ``hemera_lanes.h``).
"""

from __future__ import annotations

from pathlib import Path

from cffi import FFI

HERE = Path(__file__).resolve().parent

CDEF = """
typedef struct {
    uint64_t state[16];
    uint8_t buf[56];
    uint32_t buf_len;
    uint64_t length;
} hemera_ctx;

int hemera_setup(void);
void hemera_round_constants(uint64_t *out);
void hemera_permute(uint64_t *st, int zero_constants);
int hemera_use_simd(int level);
void hemera_init(hemera_ctx *ctx);
void hemera_update(hemera_ctx *ctx, const char *data, size_t len);
void hemera_digest(const hemera_ctx *ctx, char *out);
void hemera_hash(const char *data, size_t len, char *out);
void hemera_hash_many(const char *data, const uint64_t *ends, size_t first, size_t count,
                      char *out);
void hemera_hash_leaf(const char *data, size_t len, uint64_t counter, int is_root, char *out);
void hemera_hash_node(const char *left, const char *right, int is_root, char *out);
void hemera_hash_leaf_many(const char *data, const uint64_t *ends, size_t first, size_t count,
                           uint64_t counter, int is_root, char *out);
void hemera_hash_node_many(const char *pairs, size_t first, size_t count, int is_root,
                           char *out);
void hemera_permute_many(uint64_t *states, size_t n, int zero_constants);
"""

ffi = FFI()
ffi.cdef(CDEF)
ffi.set_source(
    "hashing.hemera._hemera_c",
    (HERE / "hemera.c").read_text(encoding="utf-8"),
    include_dirs=[str(HERE)],  # hemera.c includes hemera_simd.h from beside it
    depends=[str(HERE / name) for name in ("hemera.c", "hemera_simd.h", "hemera_lanes.h")],
    extra_compile_args=["-O3"],
)

if __name__ == "__main__":
    ffi.compile(verbose=True)
