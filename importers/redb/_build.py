"""cffi build script (out-of-line API mode) for the redb reader's C hot path.

Referenced from ``setup.py`` (``cffi_modules``); the C source lives beside it in ``redb.c``
(which includes ``redb_xxh3.h``).  ``BBG_REDB_CFLAGS`` / ``BBG_REDB_LDFLAGS`` add compiler and
linker flags.  A sanitizer build, into a copy of the tree, then the redb tests under it --
what tests/redb/test_sanitizer.py does in the slow suite (cffi compiles into the current
directory and reads a pyproject.toml there, so build from an empty one and copy the module
into ``COPY/importers/redb/``)::

    cd EMPTY_DIR && \
    BBG_REDB_CFLAGS="-O1 -g -fno-wrapv -fsanitize=address,undefined -fno-sanitize-recover=all" \
    BBG_REDB_LDFLAGS="-fsanitize=address,undefined" python COPY/importers/redb/_build.py
    cd COPY && LD_PRELOAD=$(gcc -print-file-name=libasan.so) ASAN_OPTIONS=detect_leaks=0 \
        python -m pytest tests/redb -m "slow or not slow"
"""

from __future__ import annotations

import os
import shlex
from pathlib import Path

from cffi import FFI

HERE = Path(__file__).resolve().parent

CDEF = """
typedef struct {
    int fd;
    uint64_t size;
    ...;
} redb_map;

typedef struct {
    int code;
    int sub;
    int has_page;
    int has_offset;
    uint64_t page;
    uint64_t offset;
    uint64_t a;
    uint64_t b;
    uint64_t expected_lo, expected_hi, actual_lo, actual_hi;
} redb_err;

typedef struct {
    redb_err err;
    int status;
    int64_t budget;
    uint64_t pages;
    uint64_t page_bytes;
    uint64_t need;
    uint64_t cache_hits;
    ...;
} redb_iter;

int redb_map_init(redb_map *m, int fd, uint64_t size, uint64_t page_size,
                  uint64_t header_pages, uint64_t max_data_pages, uint64_t full_regions,
                  uint64_t trailing_pages);
void redb_map_limits(redb_map *m, uint64_t on_disk, uint64_t budget);
int redb_abi(void);
redb_iter *redb_iter_new(void);
void redb_iter_free(redb_iter *it);
void redb_iter_tree(redb_iter *it, const redb_map *m, uint64_t page, uint64_t lo, uint64_t hi,
                    int64_t kw, int64_t vw, int64_t budget, const char *after,
                    uint64_t after_len, int has_after);
void redb_iter_multimap(redb_iter *it, const redb_map *m, uint64_t page, uint64_t lo,
                        uint64_t hi, int64_t kw, int64_t vw, int fmt, int64_t budget);
size_t redb_iter_next(redb_iter *it, uint64_t *out, size_t cap, char *data, uint64_t data_cap);
int redb_get(redb_iter *it, const redb_map *m, uint64_t page, uint64_t lo, uint64_t hi,
             int64_t kw, int64_t vw, int64_t budget, const char *key, uint64_t key_len,
             const char **value, uint64_t *value_len);
int redb_absent(redb_iter *it, const redb_map *m, uint64_t page, uint64_t lo, uint64_t hi,
                int64_t kw, int64_t vw, int64_t budget, const char *keys, uint64_t key_len,
                uint64_t n, uint32_t *absent, uint64_t *counts);
void redb_xxh3_128(const char *data, size_t len, uint64_t *out);
int redb_xxh3_simd(int level);
"""

ffi = FFI()
ffi.cdef(CDEF)
ffi.set_source(
    "importers.redb._redb_c",
    (HERE / "redb.c").read_text(encoding="utf-8"),
    include_dirs=[str(HERE)],  # redb.c includes redb_xxh3.h from beside it
    depends=[str(HERE / "redb.c"), str(HERE / "redb_xxh3.h")],
    extra_compile_args=["-O3", "-std=c99", *shlex.split(os.environ.get("BBG_REDB_CFLAGS", ""))],
    extra_link_args=shlex.split(os.environ.get("BBG_REDB_LDFLAGS", "")),
)

if __name__ == "__main__":
    ffi.compile(verbose=True)
