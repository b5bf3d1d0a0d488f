/* The redb reader's hot path: B-tree page walk, leaf/branch decoding, XXH3-128 page
 * verification and batched entry iteration.
 *
 * It mirrors importers/redb/btree.py and tables.py step for step (the same pages in the same
 * order, the same checks in the same order), so that a file gives the same entries or the
 * same error on both paths; errors come back as codes plus numbers, and importers/redb/_c.py
 * turns them into the Python path's messages.
 *
 * Pages are read with pread() into buffers the iterator owns, not through a mapping: a mapped
 * file's pages count towards the process's RSS as they are touched (and the kernel maps 64 KiB
 * around every fault), so a scan of a large file would grow RSS by the file's size.
 *
 * Defences: every page extent is checked against the file size before it is read, and every
 * offset or length read from a page is checked against the page before use; a walk visits at
 * most as many pages as the file holds (a cycle or shared sub-tree is stopped) and is at most
 * REDB_MAX_DEPTH levels deep.  Memory: one buffer per level of the current path plus one for
 * the leaf, each exactly one page (whose extent lies inside the file), reused from page to
 * page.  A page's size comes from order bits in the file, so before a buffer grows the page
 * must fit the per-open memory budget (all of an iterator's buffers together), and a page
 * larger than everything the file holds on disk must not lie in a hole (a sparse file can
 * claim a 4 GiB page in a few KiB): the memory is bounded by the input, not by a number in it.
 */
#define _XOPEN_SOURCE 700
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>

#include "redb_xxh3.h"

#if !defined(SEEK_HOLE) && defined(__linux__)
#define SEEK_HOLE 4 /* Linux's value; glibc names it only under _GNU_SOURCE */
#endif

#define REDB_MAX_DEPTH 64
#define REDB_MAX_ORDER 20
#define REDB_LEAF 1
#define REDB_BRANCH 2
/* The most bytes of verified branch pages one lookup iterator keeps (also at most an eighth
 * of the per-open memory budget). */
#define REDB_CACHE_MAX ((uint64_t)32 << 20)

/* Status of an iterator after a call. */
#define REDB_MORE 0
#define REDB_DONE 1
#define REDB_ERROR 2
#define REDB_NEED 3 /* the next entry needs a data buffer of it->need bytes */

/* Error codes (see _c.py for the messages). */
enum {
    E_NONE = 0,
    E_PAGE_OUTSIDE = 1,  /* page number outside the file's regions */
    E_PAGE_PAST_EOF = 2, /* a = page end, b = file size */
    E_BUDGET = 3,        /* more pages than the file holds */
    E_DEPTH = 4,         /* deeper than REDB_MAX_DEPTH */
    E_PAGE_TYPE = 5,     /* a = type byte */
    E_BRANCH_EMPTY = 6,
    E_BRANCH_TABLE = 7,  /* offset table runs past the page */
    E_BRANCH_KEYS = 8,   /* a = keys end, b = page length */
    E_BRANCH_ORDER = 9,
    E_CHECKSUM = 10,     /* expected/actual */
    E_LEAF_EMPTY = 11,
    E_LEAF_SHORT = 12,   /* a = length */
    E_LEAF_TABLE = 13,   /* a = n */
    E_LEAF_DATA = 14,    /* a = data end, b = length */
    E_LEAF_ORDER = 15,
    E_MM_EMPTY = 16,
    E_MM_INLINE = 17,    /* sub = leaf error code, a/b its numbers */
    E_MM_TRUNCATED = 18,
    E_MM_COUNT = 19,     /* a = values, b = header length, page = sub-tree root */
    E_MM_TAG = 20,       /* a = tag */
    E_LAYOUT = 21,       /* the layout handed in is inconsistent (never from Python) */
    E_IO = 22,           /* pread failed: a = errno */
    E_SHORT = 23,        /* the file ended inside a page it had when opened (it shrank) */
    E_NOMEM = 24,        /* a = bytes wanted */
    E_BUDGET_MEM = 25,   /* a = page bytes, b = the memory budget */
    E_HOLE = 26          /* a = page bytes, b = bytes the file holds on disk */
};

/* The ABI of this file's functions and structs, checked by _c.py (a stale build is ignored). */
#define REDB_ABI 4

typedef struct {
    int fd;
    uint64_t size;
    uint64_t page_size;
    uint64_t header_pages;
    uint64_t max_data_pages;
    uint64_t full_regions;
    uint64_t trailing_pages;
    uint64_t num_regions;
    uint64_t full_region_len;
    uint64_t on_disk; /* bytes the file holds on disk (allocated blocks) */
    uint64_t budget;  /* most page-buffer bytes one iterator may hold */
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
    uint8_t *p;
    uint64_t cap;
} redb_buf;

/* A parsed leaf (a page, or an inline multimap collection): offsets relative to mem. */
typedef struct {
    const uint8_t *mem;
    uint64_t length;
    uint32_t n;
    int64_t kw, vw;    /* fixed widths, or -1 for variable */
    uint64_t key_tab;  /* u32 key end table (variable keys) */
    uint64_t val_tab;  /* u32 value end table (variable values) */
    uint64_t data;     /* where the keys start */
    uint64_t last_key; /* where the keys end and the values start */
    uint64_t end;      /* end of the values */
} redb_leaf;

typedef struct {
    redb_buf page;      /* the verified branch page */
    uint32_t next;      /* next child to visit */
    uint32_t count;     /* children */
    int64_t seek_child; /* child on the seek path, or -1 */
} redb_level;

typedef struct {
    uint64_t root_page, root_lo, root_hi;
    int64_t kw, vw;
    int started;
    int levels; /* branches on the current path */
    redb_level path[REDB_MAX_DEPTH + 1];
    redb_buf scratch; /* where a page is read before it is known to be a leaf or a branch */
    redb_buf leaf_page;
    redb_leaf leaf; /* the leaf being emitted */
    uint32_t leaf_i;
    int in_leaf;
    int leaf_seek;
    const uint8_t *after;
    uint64_t after_len;
    int has_after;
} redb_tree;

/* Verified branch pages of one tree, kept for point lookups (redb_get): see cache_find. */
typedef struct {
    uint64_t raw, lo, hi; /* the page, and the checksum its parent stores for it */
    uint32_t count;       /* children (branch_check's) */
    int used;
    redb_buf page;
} redb_cached;

typedef struct {
    redb_cached *slots; /* open addressing, linear probing; cap is a power of two */
    uint64_t cap, n;
    uint64_t bytes;     /* page bytes held */
    int64_t kw;         /* the key width the pages were checked with */
    int fd;
} redb_cache;

typedef struct {
    redb_map map;
    redb_err err;
    int status;
    int multimap;
    int fmt;
    int64_t budget;
    uint64_t pages;      /* pages read so far */
    uint64_t page_bytes; /* their bytes */
    uint64_t need;       /* REDB_NEED: data buffer size the next entry needs */
    uint64_t held;       /* bytes of page buffers this iterator holds */
    redb_tree outer;
    redb_tree sub;
    /* multimap: the outer entry being expanded (its key lives in outer's leaf page) */
    int mm_state; /* 0 next outer entry, 1 inline values, 2 sub-tree values */
    int64_t mm_vw;
    const uint8_t *key;
    uint64_t key_len;
    redb_leaf inl;
    uint32_t inl_i;
    uint64_t sub_count, sub_length, sub_page;
    int sub_has_length;
    redb_cache cache; /* redb_get's verified branch pages (an iterator bound to one tree) */
    uint64_t cache_hits; /* branch pages redb_get took from the cache, not the file */
} redb_iter;

/* ---- little-endian reads (bounds are checked by the callers) ---------------------------- */

static inline uint16_t rd16(const uint8_t *p) { return (uint16_t)(p[0] | (p[1] << 8)); }
static inline uint32_t rd32(const uint8_t *p) { return xxh_r32(p); }
static inline uint64_t rd64(const uint8_t *p) { return xxh_r64(p); }

/* ---- geometry ----------------------------------------------------------------------------- */

static int mul_ok(uint64_t a, uint64_t b, uint64_t *out) {
    if (a != 0 && b > UINT64_MAX / a) return 0;
    *out = a * b;
    return 1;
}

/* Fill the geometry; 0 if it is inconsistent or overflows (the Python side has already
 * refused such files, this is a second line of defence). */
int redb_map_init(redb_map *m, int fd, uint64_t size, uint64_t page_size, uint64_t header_pages,
                  uint64_t max_data_pages, uint64_t full_regions, uint64_t trailing_pages) {
    uint64_t full_len, total, trailing_len;
    memset(m, 0, sizeof(*m));
    if (page_size < 512 || page_size > (1u << 24) || (page_size & (page_size - 1)) != 0)
        return 0;
    if (header_pages > (1u << 20) || max_data_pages > (1u << 20) || max_data_pages == 0 ||
        full_regions > (1u << 20) || trailing_pages > max_data_pages)
        return 0;
    full_len = (header_pages + max_data_pages) * page_size;
    if (!mul_ok(full_regions, full_len, &total)) return 0;
    total += page_size;
    if (trailing_pages) {
        trailing_len = (header_pages + trailing_pages) * page_size;
        if (total > UINT64_MAX - trailing_len) return 0;
        total += trailing_len;
    }
    if (total > size || size > (uint64_t)INT64_MAX) return 0;
    m->fd = fd;
    m->size = size;
    m->on_disk = size;
    m->budget = UINT64_MAX;
    m->page_size = page_size;
    m->header_pages = header_pages;
    m->max_data_pages = max_data_pages;
    m->full_regions = full_regions;
    m->trailing_pages = trailing_pages;
    m->num_regions = full_regions + (trailing_pages ? 1 : 0);
    m->full_region_len = full_len;
    return 1;
}

/* The memory limits of a file (btree.py's PageReader.on_disk and budget). */
void redb_map_limits(redb_map *m, uint64_t on_disk, uint64_t budget) {
    m->on_disk = on_disk;
    m->budget = budget;
}

int redb_abi(void) { return REDB_ABI; }

/* File span of page `raw` (layout.py's page_span); 0 when it is outside every region. */
static int page_span(const redb_map *m, uint64_t raw, uint64_t *start, uint64_t *len) {
    uint64_t order = raw >> 59;
    uint64_t region = (raw >> 20) & 0xFFFFFULL;
    uint64_t index, size, data_pages;
    if (order > REDB_MAX_ORDER || region >= m->num_regions) return 0;
    index = raw & (0xFFFFFULL >> order);
    size = m->page_size << order; /* <= 2^44 */
    data_pages = region == m->full_regions ? m->trailing_pages : m->max_data_pages;
    if ((index + 1) * size > data_pages * m->page_size) return 0;
    /* region < num_regions and the layout fits the file (redb_map_init): no overflow. */
    *start = m->page_size + region * m->full_region_len + m->header_pages * m->page_size +
             index * size;
    *len = size;
    return 1;
}

/* ---- buffers and reads ---------------------------------------------------------------------- */

/* Grow b to len bytes, keeping *held (the bytes of all the iterator's buffers) within budget. */
static int buf_reserve(redb_buf *b, uint64_t len, uint64_t *held, uint64_t budget,
                       redb_err *e) {
    uint8_t *p;
    if (b->cap >= len) return 1;
    if (len - b->cap > budget - *held) {
        e->code = E_BUDGET_MEM;
        e->a = len;
        e->b = budget;
        return 0;
    }
    if (len > SIZE_MAX) goto nomem;
    p = (uint8_t *)realloc(b->p, (size_t)len);
    if (p == NULL) goto nomem;
    *held += len - b->cap;
    b->p = p;
    b->cap = len;
    return 1;
nomem:
    e->code = E_NOMEM;
    e->a = len;
    return 0;
}

/* 1 when the file has a hole (bytes never written) in [off, off+len); 0 when it has none or
 * the file system cannot say (btree.py's _has_hole). */
static int has_hole(int fd, uint64_t off, uint64_t len) {
#ifdef SEEK_HOLE
    off_t h = lseek(fd, (off_t)off, SEEK_HOLE);
    if (h < 0) return 0;
    return (uint64_t)h < off + len;
#else
    (void)fd;
    (void)off;
    (void)len;
    return 0;
#endif
}

static void buf_free(redb_buf *b) {
    free(b->p);
    b->p = NULL;
    b->cap = 0;
}

static void buf_swap(redb_buf *a, redb_buf *b) {
    redb_buf t = *a;
    *a = *b;
    *b = t;
}

/* Read len bytes at off (inside the file: checked by the caller) into b. */
static int load(const redb_map *m, redb_buf *b, uint64_t off, uint64_t len, uint64_t *held,
                redb_err *e) {
    uint64_t done = 0;
    if (!buf_reserve(b, len, held, m->budget, e)) return 0;
    while (done < len) {
        uint64_t want = len - done;
        ssize_t got;
        if (want > (1u << 30)) want = 1u << 30;
        got = pread(m->fd, b->p + done, (size_t)want, (off_t)(off + done));
        if (got < 0) {
            if (errno == EINTR) continue;
            e->code = E_IO;
            e->a = (uint64_t)errno;
            return 0;
        }
        if (got == 0) {
            e->code = E_SHORT;
            return 0;
        }
        done += (uint64_t)got;
    }
    return 1;
}

/* ---- leaves ------------------------------------------------------------------------------- */

/* btree.py's leaf_layout over p[0..length): 0 and e->code set when the leaf is malformed. */
static int leaf_parse(const uint8_t *p, uint64_t length, int64_t kw, int64_t vw, redb_leaf *l,
                      redb_err *e) {
    uint64_t n, pos, header_end, last_key, end, prev;
    if (length < 4) {
        e->code = E_LEAF_SHORT;
        e->a = length;
        return 0;
    }
    n = rd16(p + 2);
    header_end = 4 + 4 * n * (uint64_t)((kw < 0) + (vw < 0));
    if (header_end > length) {
        e->code = E_LEAF_TABLE;
        e->a = n;
        return 0;
    }
    pos = 4;
    l->key_tab = l->val_tab = 0;
    if (kw < 0) {
        l->key_tab = pos;
        pos += 4 * n;
    }
    if (vw < 0) {
        l->val_tab = pos;
        pos += 4 * n;
    }
    if (n == 0) {
        last_key = pos;
    } else if (kw < 0) {
        last_key = rd32(p + l->key_tab + 4 * (n - 1));
    } else {
        last_key = pos + (uint64_t)kw * n;
    }
    if (n == 0) {
        end = pos;
    } else if (vw < 0) {
        end = rd32(p + l->val_tab + 4 * (n - 1));
    } else {
        end = last_key + (uint64_t)vw * n;
    }
    if (end > length) {
        e->code = E_LEAF_DATA;
        e->a = end;
        e->b = length;
        return 0;
    }
    /* Offsets must not decrease: pos <= key ends <= last_key <= value ends <= end (fixed
     * widths satisfy this by construction). */
    if (kw < 0) {
        prev = pos;
        for (uint64_t i = 0; i < n; i++) {
            uint64_t k = rd32(p + l->key_tab + 4 * i);
            if (k < prev) goto unordered;
            prev = k;
        }
    }
    if (vw < 0) {
        prev = last_key;
        for (uint64_t i = 0; i < n; i++) {
            uint64_t v = rd32(p + l->val_tab + 4 * i);
            if (v < prev) goto unordered;
            prev = v;
        }
    }
    l->mem = p;
    l->length = length;
    l->n = (uint32_t)n;
    l->kw = kw;
    l->vw = vw;
    l->data = pos;
    l->last_key = last_key;
    l->end = end;
    return 1;
unordered:
    e->code = E_LEAF_ORDER;
    return 0;
}

/* Key and value of entry i of a parsed leaf (offsets validated by leaf_parse). */
static inline void leaf_entry(const redb_leaf *l, uint32_t i, const uint8_t **k, uint64_t *klen,
                              const uint8_t **v, uint64_t *vlen) {
    const uint8_t *p = l->mem;
    uint64_t k0, k1, v0, v1;
    if (l->kw < 0) {
        k0 = i ? rd32(p + l->key_tab + 4 * (uint64_t)(i - 1)) : l->data;
        k1 = rd32(p + l->key_tab + 4 * (uint64_t)i);
    } else {
        k0 = l->data + (uint64_t)l->kw * i;
        k1 = k0 + (uint64_t)l->kw;
    }
    if (l->vw < 0) {
        v0 = i ? rd32(p + l->val_tab + 4 * (uint64_t)(i - 1)) : l->last_key;
        v1 = rd32(p + l->val_tab + 4 * (uint64_t)i);
    } else {
        v0 = l->last_key + (uint64_t)l->vw * i;
        v1 = v0 + (uint64_t)l->vw;
    }
    *k = p + k0;
    *klen = k1 - k0;
    *v = p + v0;
    *vlen = v1 - v0;
}

/* ---- pages -------------------------------------------------------------------------------- */

static int verify(const uint8_t *p, uint64_t end, uint64_t lo, uint64_t hi, redb_err *e) {
    uint64_t alo, ahi;
    xxh3_128(p, (size_t)end, &alo, &ahi);
    if (alo != lo || ahi != hi) {
        e->code = E_CHECKSUM;
        e->expected_lo = lo;
        e->expected_hi = hi;
        e->actual_lo = alo;
        e->actual_hi = ahi;
        return 0;
    }
    return 1;
}

/* Branch page p[0..len): checks its structure and checksum (btree.py's _branch); sets the
 * number of children. */
static int branch_check(const uint8_t *p, uint64_t len, int64_t kw, uint64_t lo, uint64_t hi,
                        uint32_t *children, redb_err *e) {
    uint64_t n = rd16(p + 2), keys_at, end;
    int ordered = 1;
    if (n == 0) {
        e->code = E_BRANCH_EMPTY;
        return 0;
    }
    keys_at = 8 + 24 * (n + 1);
    if (kw < 0) {
        uint64_t prev;
        if (keys_at + 4 * n > len) {
            e->code = E_BRANCH_TABLE;
            return 0;
        }
        end = rd32(p + keys_at + 4 * (n - 1));
        prev = keys_at + 4 * n;
        for (uint64_t i = 0; i < n; i++) {
            uint64_t k = rd32(p + keys_at + 4 * i);
            if (k < prev) {
                ordered = 0;
                break;
            }
            prev = k;
        }
    } else {
        end = keys_at + (uint64_t)kw * n;
    }
    if (end > len || !ordered) {
        e->code = ordered ? E_BRANCH_KEYS : E_BRANCH_ORDER;
        e->a = end;
        e->b = len;
        return 0;
    }
    if (!verify(p, end, lo, hi, e)) return 0;
    *children = (uint32_t)(n + 1);
    return 1;
}

/* Separator key i of a verified branch (bounds were checked by branch_check). */
static void branch_key(const uint8_t *p, int64_t kw, uint32_t count, uint32_t i,
                       const uint8_t **key, uint64_t *key_len) {
    uint64_t n = count - 1, keys_at = 8 + 24 * (uint64_t)count, k0, k1;
    if (kw < 0) {
        k0 = i ? rd32(p + keys_at + 4 * (uint64_t)(i - 1)) : keys_at + 4 * n;
        k1 = rd32(p + keys_at + 4 * (uint64_t)i);
    } else {
        k0 = keys_at + (uint64_t)kw * i;
        k1 = k0 + (uint64_t)kw;
    }
    *key = p + k0;
    *key_len = k1 - k0;
}

static void child_of(const uint8_t *p, uint32_t count, uint32_t i, uint64_t *page, uint64_t *lo,
                     uint64_t *hi) {
    *lo = rd64(p + 8 + 16 * (uint64_t)i);
    *hi = rd64(p + 16 + 16 * (uint64_t)i);
    *page = rd64(p + 8 + 16 * (uint64_t)count + 8 * (uint64_t)i);
}

/* Python's bytes ordering: memcmp, then length. */
static inline int key_cmp(const uint8_t *a, uint64_t alen, const uint8_t *b, uint64_t blen) {
    uint64_t n = alen < blen ? alen : blen;
    int c = n ? memcmp(a, b, (size_t)n) : 0;
    if (c) return c;
    return alen < blen ? -1 : (alen > blen ? 1 : 0);
}

/* The walk's guards before page raw at depth is visited (read or taken from the cache): the
 * page budget, then the depth (btree.py's Tree._open). */
static int guard_page(redb_iter *it, uint64_t raw, int depth) {
    redb_err *e = &it->err;
    memset(e, 0, sizeof(*e));
    e->page = raw;
    e->has_page = 1;
    if (--it->budget < 0) {
        e->code = E_BUDGET;
        return 0;
    }
    if (depth > REDB_MAX_DEPTH) {
        e->code = E_DEPTH;
        return 0;
    }
    return 1;
}

/* Read page raw into t->scratch after the budget, depth and bounds checks (btree.py's order). */
static int open_page(redb_iter *it, redb_tree *t, uint64_t raw, int depth, uint64_t *len) {
    redb_err *e = &it->err;
    uint64_t off;
    if (!guard_page(it, raw, depth)) return 0;
    if (!page_span(&it->map, raw, &off, len)) {
        e->code = E_PAGE_OUTSIDE;
        return 0;
    }
    e->offset = off;
    e->has_offset = 1;
    if (off + *len > it->map.size) {
        e->code = E_PAGE_PAST_EOF;
        e->a = off + *len;
        e->b = it->map.size;
        return 0;
    }
    /* The page's size comes from order bits in the file: bound it by the budget and by
     * what the file really holds (btree.py's check_span, same order, same numbers). */
    if (*len > it->map.budget) {
        e->code = E_BUDGET_MEM;
        e->a = *len;
        e->b = it->map.budget;
        return 0;
    }
    if (*len > it->map.on_disk && has_hole(it->map.fd, off, *len)) {
        e->code = E_HOLE;
        e->a = *len;
        e->b = it->map.on_disk;
        return 0;
    }
    if (!load(&it->map, &t->scratch, off, *len, &it->held, e)) return 0;
    it->pages++;
    it->page_bytes += *len;
    return 1;
}

/* Visit page raw of tree t at depth: a verified branch is pushed onto the path, a verified
 * leaf becomes the current leaf.  0 on error. */
static int visit(redb_iter *it, redb_tree *t, uint64_t raw, uint64_t lo, uint64_t hi, int depth,
                 int seek) {
    redb_err *e = &it->err;
    uint64_t len;
    const uint8_t *p;
    if (!open_page(it, t, raw, depth, &len)) return 0;
    p = t->scratch.p;
    if (p[0] == REDB_LEAF) {
        if (rd16(p + 2) == 0) {
            e->code = E_LEAF_EMPTY;
            return 0;
        }
        if (!leaf_parse(p, len, t->kw, t->vw, &t->leaf, e)) return 0;
        if (!verify(p, t->leaf.end, lo, hi, e)) return 0;
        buf_swap(&t->scratch, &t->leaf_page); /* t->leaf.mem points at the page it swaps in */
        t->in_leaf = 1;
        t->leaf_i = 0;
        t->leaf_seek = seek;
        return 1;
    }
    if (p[0] == REDB_BRANCH) {
        uint32_t count;
        redb_level *lv;
        int64_t first = 0;
        if (!branch_check(p, len, t->kw, lo, hi, &count, e)) return 0;
        if (seek) {
            /* bisect.bisect_right over the separator keys, exactly as Python runs it. */
            uint32_t a = 0, b = count - 1;
            while (a < b) {
                uint32_t mid = (a + b) / 2;
                const uint8_t *k;
                uint64_t klen;
                branch_key(p, t->kw, count, mid, &k, &klen);
                if (key_cmp(t->after, t->after_len, k, klen) < 0)
                    b = mid;
                else
                    a = mid + 1;
            }
            first = a;
        }
        /* depth <= REDB_MAX_DEPTH here, so the path never overflows. */
        lv = &t->path[t->levels++];
        buf_swap(&t->scratch, &lv->page);
        lv->count = count;
        lv->next = (uint32_t)first;
        lv->seek_child = seek ? first : -1;
        return 1;
    }
    e->code = E_PAGE_TYPE;
    e->a = p[0];
    return 0;
}

/* The current entry of tree t, visiting pages until there is one: 1 found, 0 finished,
 * -1 error.  It stays current until tree_advance. */
static int tree_peek(redb_iter *it, redb_tree *t, const uint8_t **k, uint64_t *klen,
                     const uint8_t **v, uint64_t *vlen) {
    for (;;) {
        if (t->in_leaf) {
            while (t->leaf_i < t->leaf.n) {
                leaf_entry(&t->leaf, t->leaf_i, k, klen, v, vlen);
                if (t->leaf_seek && key_cmp(*k, *klen, t->after, t->after_len) <= 0) {
                    t->leaf_i++;
                    continue;
                }
                return 1;
            }
            t->in_leaf = 0;
        }
        if (!t->started) {
            t->started = 1;
            if (!visit(it, t, t->root_page, t->root_lo, t->root_hi, 0, t->has_after)) return -1;
            continue;
        }
        /* Climb to the deepest branch with a child left, and visit that child. */
        while (t->levels > 0 && t->path[t->levels - 1].next >= t->path[t->levels - 1].count)
            t->levels--;
        if (t->levels == 0) return 0;
        {
            redb_level *lv = &t->path[t->levels - 1];
            uint64_t page, lo, hi;
            uint32_t i = lv->next++;
            int seek = lv->seek_child == (int64_t)i;
            child_of(lv->page.p, lv->count, i, &page, &lo, &hi);
            if (!visit(it, t, page, lo, hi, t->levels, seek)) return -1;
        }
    }
}

static inline void tree_advance(redb_tree *t) { t->leaf_i++; }

static void tree_init(redb_tree *t, uint64_t page, uint64_t lo, uint64_t hi, int64_t kw,
                      int64_t vw) {
    /* Keeps the buffers: a multimap's sub-tree walker is reused for every sub-tree. */
    t->root_page = page;
    t->root_lo = lo;
    t->root_hi = hi;
    t->kw = kw;
    t->vw = vw;
    t->started = 0;
    t->levels = 0;
    t->in_leaf = 0;
    t->leaf_i = 0;
    t->leaf_seek = 0;
    t->after = NULL;
    t->after_len = 0;
    t->has_after = 0;
}

static void tree_free(redb_tree *t) {
    for (int i = 0; i <= REDB_MAX_DEPTH; i++) buf_free(&t->path[i].page);
    buf_free(&t->scratch);
    buf_free(&t->leaf_page);
}

/* ---- the lookup cache of verified branch pages -------------------------------------------
 *
 * Point lookups in random key order (the links check looks up every history commit in the
 * content table) descend the same upper levels again and again; redb_get keeps the branch
 * pages it has read and verified, keyed by page number *and* the checksum the parent stores
 * for it, and takes a page from here instead of reading and hashing it again.  Sound because
 * a page is only ever used under the checksum it was verified against: the Merkle chain
 * from the commit's root checksum to every page a lookup uses is the same as without the
 * cache (a cached page hashed to exactly the checksum the verified parent now asks for), and
 * a parent asking for the same page number under another checksum misses and reads the
 * page afresh (so a shared or damaged page still fails as it did).  The file cannot change
 * what a lookup returns behind the cache: redb never rewrites a page of a committed tree in
 * place, and the pipeline holds the source sealed (SHA-256 before, re-checked after the
 * run), so a file changed during the read is refused whatever was cached.  Leaves are never
 * cached: every lookup reads and verifies its leaf.  Every page still has its checksum
 * verified at least once per iterator (the first time it is used), the walk's page budget
 * and depth guards count cached pages as visited, and the cache is bounded (REDB_CACHE_MAX,
 * an eighth of the memory budget): past the bound pages are read as before.  It lives as
 * long as the iterator (one per bound tree getter, i.e. per open file and table), and is
 * dropped if the iterator is used for another file or key width. */

static uint64_t cache_slot(const redb_cache *c, uint64_t raw) {
    return ((raw * 0x9E3779B97F4A7C15ULL) >> 32) & (c->cap - 1);
}

static void cache_clear(redb_cache *c) {
    for (uint64_t i = 0; i < c->cap; i++) buf_free(&c->slots[i].page);
    free(c->slots);
    memset(c, 0, sizeof(*c));
}

/* The cached branch page raw verified against checksum (lo, hi), or NULL. */
static const redb_cached *cache_find(const redb_cache *c, uint64_t raw, uint64_t lo,
                                     uint64_t hi) {
    if (c->n == 0) return NULL;
    for (uint64_t i = cache_slot(c, raw);; i = (i + 1) & (c->cap - 1)) {
        const redb_cached *s = &c->slots[i];
        if (!s->used) return NULL;
        if (s->raw == raw) return s->lo == lo && s->hi == hi ? s : NULL;
    }
}

/* Keep the verified branch page in *b (its buffer moves into the cache, *b is left empty)
 * when it fits the bound; the caller's buffer is kept otherwise. */
static void cache_put(redb_cache *c, uint64_t max_bytes, uint64_t raw, uint64_t lo, uint64_t hi,
                      uint32_t count, redb_buf *b) {
    redb_cached *s;
    uint64_t i;
    if (b->cap > max_bytes - c->bytes || c->bytes > max_bytes) return;
    if (2 * (c->n + 1) > c->cap) { /* grow to keep the load at most 1/2 */
        redb_cache bigger = *c;
        uint64_t cap = c->cap ? 2 * c->cap : 64;
        bigger.slots = (redb_cached *)calloc((size_t)cap, sizeof(redb_cached));
        if (bigger.slots == NULL) return; /* no memory: the page is simply not cached */
        bigger.cap = cap;
        for (uint64_t j = 0; j < c->cap; j++) {
            if (!c->slots[j].used) continue;
            for (i = cache_slot(&bigger, c->slots[j].raw); bigger.slots[i].used;
                 i = (i + 1) & (cap - 1)) {
            }
            bigger.slots[i] = c->slots[j];
        }
        free(c->slots);
        *c = bigger;
    }
    for (i = cache_slot(c, raw); c->slots[i].used; i = (i + 1) & (c->cap - 1))
        if (c->slots[i].raw == raw) return; /* the same page under another checksum */
    s = &c->slots[i];
    s->raw = raw;
    s->lo = lo;
    s->hi = hi;
    s->count = count;
    s->used = 1;
    buf_swap(&s->page, b);
    c->bytes += s->page.cap;
    c->n++;
}

/* ---- iterators ---------------------------------------------------------------------------- */

redb_iter *redb_iter_new(void) { return (redb_iter *)calloc(1, sizeof(redb_iter)); }

void redb_iter_free(redb_iter *it) {
    if (it == NULL) return;
    tree_free(&it->outer);
    tree_free(&it->sub);
    cache_clear(&it->cache);
    free(it);
}

static void iter_reset(redb_iter *it, const redb_map *m, int64_t budget) {
    it->map = *m;
    memset(&it->err, 0, sizeof(it->err));
    it->status = REDB_MORE;
    it->multimap = 0;
    it->fmt = 0;
    it->budget = budget;
    it->pages = it->page_bytes = it->need = 0;
    it->mm_state = 0;
    it->mm_vw = 0;
    it->key = NULL;
    it->key_len = 0;
    it->inl_i = 0;
    it->sub_count = it->sub_length = it->sub_page = 0;
    it->sub_has_length = 0;
}

/* A tree (normal table, table tree, system tree): keys after `after` when has_after (the
 * caller keeps `after` alive while the iterator is used). */
void redb_iter_tree(redb_iter *it, const redb_map *m, uint64_t page, uint64_t lo, uint64_t hi,
                    int64_t kw, int64_t vw, int64_t budget, const char *after, uint64_t after_len,
                    int has_after) {
    iter_reset(it, m, budget);
    tree_init(&it->outer, page, lo, hi, kw, vw);
    it->outer.after = (const uint8_t *)after;
    it->outer.after_len = after_len;
    it->outer.has_after = has_after;
}

/* A multimap table: key -> collection (inline leaf of values, or a sub-tree of them). */
void redb_iter_multimap(redb_iter *it, const redb_map *m, uint64_t page, uint64_t lo,
                        uint64_t hi, int64_t kw, int64_t vw, int fmt, int64_t budget) {
    iter_reset(it, m, budget);
    it->multimap = 1;
    it->fmt = fmt;
    it->mm_vw = vw;
    tree_init(&it->outer, page, lo, hi, kw, -1);
}

/* tables.py's multimap_batches, one pair at a time: the current pair (1), finished (0) or
 * error (-1); it stays current until multimap_advance. */
static int multimap_peek(redb_iter *it, const uint8_t **k, uint64_t *klen, const uint8_t **v,
                         uint64_t *vlen) {
    redb_err *e = &it->err;
    for (;;) {
        if (it->mm_state == 1) {
            if (it->inl_i < it->inl.n) {
                const uint8_t *unit;
                uint64_t unit_len;
                leaf_entry(&it->inl, it->inl_i, v, vlen, &unit, &unit_len);
                *k = it->key;
                *klen = it->key_len;
                return 1;
            }
            it->mm_state = 0;
        } else if (it->mm_state == 2) {
            const uint8_t *unit;
            uint64_t unit_len;
            int r = tree_peek(it, &it->sub, v, vlen, &unit, &unit_len);
            if (r < 0) return -1;
            if (r > 0) {
                *k = it->key;
                *klen = it->key_len;
                return 1;
            }
            if (it->sub_has_length && it->sub_count != it->sub_length) {
                memset(e, 0, sizeof(*e));
                e->code = E_MM_COUNT;
                e->a = it->sub_count;
                e->b = it->sub_length;
                e->page = it->sub_page;
                e->has_page = 1;
                return -1;
            }
            it->mm_state = 0;
        }
        {
            const uint8_t *c;
            uint64_t clen;
            int r = tree_peek(it, &it->outer, &it->key, &it->key_len, &c, &clen);
            if (r <= 0) return r;
            /* The key and collection stay valid in outer's leaf page until outer is peeked
             * again, which only happens once this collection is exhausted. */
            tree_advance(&it->outer);
            memset(e, 0, sizeof(*e));
            if (clen == 0) {
                e->code = E_MM_EMPTY;
                return -1;
            }
            if (c[0] == 1) {
                if (!leaf_parse(c + 1, clen - 1, it->mm_vw, 0, &it->inl, e)) {
                    e->sub = e->code;
                    e->code = E_MM_INLINE;
                    return -1;
                }
                it->inl_i = 0;
                it->mm_state = 1;
            } else if ((c[0] == 3 && it->fmt >= 2) || (c[0] == 2 && it->fmt == 1)) {
                if (clen < (it->fmt == 1 ? 25u : 33u)) {
                    e->code = E_MM_TRUNCATED;
                    return -1;
                }
                it->sub_has_length = it->fmt != 1;
                it->sub_length = it->fmt != 1 ? rd64(c + 25) : 0;
                it->sub_page = rd64(c + 1);
                it->sub_count = 0;
                tree_init(&it->sub, it->sub_page, rd64(c + 9), rd64(c + 17), it->mm_vw, 0);
                it->mm_state = 2;
            } else {
                e->code = E_MM_TAG;
                e->a = c[0];
                return -1;
            }
        }
    }
}

static void multimap_advance(redb_iter *it) {
    if (it->mm_state == 1) {
        it->inl_i++;
    } else if (it->mm_state == 2) {
        tree_advance(&it->sub);
        it->sub_count++;
    }
}

/* Copy up to `cap` entries into data[0..data_cap) and their (key start, key end, value start,
 * value end) offsets into out[4*i .. 4*i+3].  Returns the count; it->status says whether
 * more follow, the walk is done, it failed (it->err), or the next entry alone needs a data
 * buffer of it->need bytes (REDB_NEED: call again with a larger one). */
size_t redb_iter_next(redb_iter *it, uint64_t *out, size_t cap, char *data, uint64_t data_cap) {
    size_t n = 0;
    uint64_t used = 0;
    if (it->status == REDB_NEED) it->status = REDB_MORE;
    if (it->status != REDB_MORE) return 0;
    while (n < cap) {
        const uint8_t *k, *v;
        uint64_t klen, vlen;
        int r = it->multimap ? multimap_peek(it, &k, &klen, &v, &vlen)
                             : tree_peek(it, &it->outer, &k, &klen, &v, &vlen);
        uint64_t *o = out + 4 * n;
        if (r < 0) {
            it->status = REDB_ERROR;
            break;
        }
        if (r == 0) {
            it->status = REDB_DONE;
            break;
        }
        if (klen + vlen > data_cap - used) {
            if (n == 0) {
                it->status = REDB_NEED;
                it->need = klen + vlen;
            }
            break; /* the entry stays current for the next call */
        }
        memcpy(data + used, k, (size_t)klen);
        o[0] = used;
        o[1] = used + klen;
        memcpy(data + used + klen, v, (size_t)vlen);
        o[2] = used + klen;
        o[3] = used + klen + vlen;
        used += klen + vlen;
        if (it->multimap)
            multimap_advance(it);
        else
            tree_advance(&it->outer);
        n++;
    }
    return n;
}

/* Point lookup (btree.py's Tree.get): 1 found (the value's bytes in *value, valid until the
 * iterator is reused or freed), 0 absent, -1 error (it->err).  Branch pages come from the
 * iterator's cache of verified pages when they are there (see cache_find), else they are
 * read, verified and kept; the leaf is always read and verified. */
int redb_get(redb_iter *it, const redb_map *m, uint64_t page, uint64_t lo, uint64_t hi,
             int64_t kw, int64_t vw, int64_t budget, const char *key_c, uint64_t key_len,
             const char **value, uint64_t *value_len) {
    const uint8_t *key = (const uint8_t *)key_c;
    redb_tree *t = &it->outer;
    redb_cache *cache = &it->cache;
    uint64_t cache_max = m->budget / 8 < REDB_CACHE_MAX ? m->budget / 8 : REDB_CACHE_MAX;
    int depth = 0;
    iter_reset(it, m, budget);
    tree_init(t, page, lo, hi, kw, vw);
    if (cache->n && (cache->kw != kw || cache->fd != m->fd)) cache_clear(cache);
    cache->kw = kw;
    cache->fd = m->fd;
    for (;;) {
        const uint8_t *k, *v, *bp;
        uint64_t klen, vlen;
        uint32_t count;
        const redb_cached *hit = cache_find(cache, page, lo, hi);
        if (hit != NULL) {
            if (!guard_page(it, page, depth)) return -1;
            bp = hit->page.p;
            count = hit->count;
            it->cache_hits++;
        } else {
            t->levels = 0;
            t->in_leaf = 0;
            if (!visit(it, t, page, lo, hi, depth, 0)) return -1;
            if (t->in_leaf) {
                /* bisect_left over the leaf's keys, then an exact match. */
                uint32_t x = 0, y = t->leaf.n;
                while (x < y) {
                    uint32_t mid = (x + y) / 2;
                    leaf_entry(&t->leaf, mid, &k, &klen, &v, &vlen);
                    if (key_cmp(k, klen, key, key_len) < 0)
                        x = mid + 1;
                    else
                        y = mid;
                }
                if (x >= t->leaf.n) return 0;
                leaf_entry(&t->leaf, x, &k, &klen, &v, &vlen);
                if (key_cmp(k, klen, key, key_len) != 0) return 0;
                *value = (const char *)v;
                *value_len = vlen;
                return 1;
            }
            count = t->path[0].count;
            cache_put(cache, cache_max, page, lo, hi, count, &t->path[0].page);
            hit = cache_find(cache, page, lo, hi);
            bp = hit != NULL ? hit->page.p : t->path[0].page.p;
            if (hit != NULL) it->held -= hit->page.cap; /* no longer the walk's buffer */
        }
        {
            /* bisect_left over the separators: child i holds the keys up to key i. */
            uint32_t x = 0, y = count - 1;
            while (x < y) {
                uint32_t mid = (x + y) / 2;
                branch_key(bp, kw, count, mid, &k, &klen);
                if (key_cmp(k, klen, key, key_len) < 0)
                    x = mid + 1;
                else
                    y = mid;
            }
            child_of(bp, count, x, &page, &lo, &hi);
            depth++;
        }
    }
}

/* redb_get of each of n keys of key_len bytes packed in keys (one call for a list: the links
 * check asks whether a list of history commits' content ids are there): the positions of the
 * keys absent go to absent[0..counts[0]), in order, and counts[2] is the pages read.  0 when
 * every lookup ran, -1 on the first that failed (it->err; counts[1] its position, the keys
 * before it answered).  Each lookup is redb_get's: its own page budget, branch pages from the
 * cache, its leaf read and verified. */
int redb_absent(redb_iter *it, const redb_map *m, uint64_t page, uint64_t lo, uint64_t hi,
                int64_t kw, int64_t vw, int64_t budget, const char *keys, uint64_t key_len,
                uint64_t n, uint32_t *absent, uint64_t *counts) {
    const char *value;
    uint64_t value_len;
    counts[0] = counts[1] = counts[2] = 0;
    for (uint64_t i = 0; i < n; i++) {
        int found = redb_get(it, m, page, lo, hi, kw, vw, budget, keys + i * key_len, key_len,
                             &value, &value_len);
        counts[2] += it->pages;
        if (found < 0) {
            counts[1] = i;
            return -1;
        }
        if (!found) absent[counts[0]++] = (uint32_t)i;
    }
    return 0;
}

/* XXH3-128 for the tests (low and high halves). */
void redb_xxh3_128(const char *data, size_t len, uint64_t *out) {
    xxh3_128((const uint8_t *)data, len, &out[0], &out[1]);
}

/* Use the AVX2 loop of XXH3 (level 1, when the CPU has it) or the scalar one (0); returns
 * the level in use.  For the tests (both give the same hashes); not thread-safe. */
int redb_xxh3_simd(int level) {
#ifdef XXH_AVX2
    return xxh_set_simd(level);
#else
    (void)level;
    return 0;
#endif
}
