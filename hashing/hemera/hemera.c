/*
 * hemera: Poseidon2 sponge over the Goldilocks field (p = 2^64 - 2^32 + 1), 32-byte output.
 *
 * Parameters from the public specification (cyberia-to/hemera at e63b85a): width 16,
 * rate 8 elements fed 7 bytes each (56 bytes per block), 4 + 4 full rounds with x^7,
 * 16 partial rounds with x^-1 (0 -> 0), M_E = circ(2*M4, M4, M4, M4), M_I = J + diag(d),
 * padding 0x01 then zeros in one final block, byte length written into state[10].
 * Round constants are derived at setup by the specification's bootstrap.
 * Three implementations of the permutation give identical results: plain C, AVX2 and
 * AVX-512 (the best one the CPU has is chosen at setup); with AVX2 or AVX-512 the batch
 * functions also permute eight independent states at once (hemera_lanes.h).  On AVX-512
 * the streaming absorb loop keeps the state as fractions from block to block and divides
 * once per hemera_update call instead of once per permutation (absorb_blocks_avx512).
 *
 * Element representation: any uint64_t, congruent to the value mod p (not necessarily
 * below p).  Only the output and the inversion input are made canonical.  Every helper is
 * written so that no unsigned arithmetic can overflow unintentionally (wraps are detected
 * and folded back, using 2^64 = 2^32 - 1 mod p), and there are no shifts by >= 64.
 *
 * Defining HEMERA_PORTABLE compiles only the plain-C paths (no __int128, no x86 assembly
 * or AVX-512), which is how those fallbacks are checked on an x86-64 machine.
 */

#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* Sponge state for streaming.  Mirrored field by field in _build.py's cdef. */
typedef struct {
    uint64_t state[16];
    uint8_t buf[56];      /* pending input, always fewer than 56 bytes between calls */
    uint32_t buf_len;
    uint64_t length;      /* total bytes absorbed */
} hemera_ctx;

#define HEMERA_P 0xFFFFFFFF00000001ULL
/* 2^64 mod p */
#define HEMERA_EPS 0x00000000FFFFFFFFULL

#define WIDTH 16
#define RATE 8
#define RATE_BYTES 56
#define HALF_FULL 4
#define PARTIAL 16
#define NUM_CONSTANTS 144
#define LENGTH_SLOT 10
#define DOMAIN_SLOT 11

static const uint64_t DIAG[WIDTH] = {
    0xde9b91a467d6afc0ULL, 0xc5f16b9c76a9be17ULL, 0x0ab0fef2d540ac55ULL, 0x3001d27009d05773ULL,
    0xed23b1f906d3d9ebULL, 0x5ce73743cba97054ULL, 0x1c3bab944af4ba24ULL, 0x2faa105854dbafaeULL,
    0x53ffb3ae6d421a10ULL, 0xbcda9df8884ba396ULL, 0xfc1273e4a31807bbULL, 0xc77952573d5142c0ULL,
    0x56683339a819b85eULL, 0x328fcbd8f0ddc8ebULL, 0xb5101e303fce9cb7ULL, 0x774487b8c40089bbULL,
};

static const uint8_t GENESIS_SEED[5] = {0x63, 0x79, 0x62, 0x65, 0x72};

/* Filled once by hemera_setup(); read-only afterwards. */
static uint64_t RC[NUM_CONSTANTS];
/* hemera_0: the same permutation with every round constant zero (bootstrap only). */
static const uint64_t ZERO_RC[NUM_CONSTANTS] = {0};
/* 2^-k mod p for k = 0..128: the inversion returns x^-1 * 2^k. */
#define MAX_SHIFT 128
static uint64_t INV_POW2[MAX_SHIFT + 1];
/* d[0] + 1 (mod p), for the partial rounds' state[0]. */
static uint64_t DIAG0_PLUS1;
static int READY = 0;

/* ------------------------------------------------------------------ field arithmetic */

/* All-ones when cond is 1, zero when 0: selects without branches, because carries and
 * borrows on hash data are coin flips that a branch predictor cannot learn. */
static inline uint64_t mask_of(uint64_t cond) { return (uint64_t)0 - cond; }

/* The representative in [0, p). */
static inline uint64_t canon(uint64_t x) { return x - (HEMERA_P & mask_of(x >= HEMERA_P)); }

static inline uint64_t add(uint64_t a, uint64_t b) {
    uint64_t s = a + b;
    uint64_t t = s + (HEMERA_EPS & mask_of(s < a));   /* a wrap lost 2^64 = EPS mod p */
    /* A second wrap is only possible after a first one, and then t < EPS: adding EPS
     * once more cannot wrap again. */
    return t + (HEMERA_EPS & mask_of(t < s));
}

#if defined(__SIZEOF_INT128__) && !defined(HEMERA_PORTABLE)
typedef unsigned __int128 u128;

static inline uint64_t reduce128(u128 x) {
    uint64_t lo = (uint64_t)x;
    uint64_t hi = (uint64_t)(x >> 64);
    uint64_t hi_hi = hi >> 32;
    uint64_t hi_lo = hi & HEMERA_EPS;
    /* x = lo + hi_lo * 2^64 + hi_hi * 2^96, and 2^96 = -1, 2^64 = EPS (mod p). */
    uint64_t t0 = lo - hi_hi;
    t0 -= HEMERA_EPS & mask_of(lo < hi_hi);          /* borrowed 2^64 = EPS */
    uint64_t t1 = (hi_lo << 32) - hi_lo;              /* hi_lo * EPS, below 2^64 */
    uint64_t r = t0 + t1;
    return r + (HEMERA_EPS & mask_of(r < t0));       /* carry; r < t1 <= 2^64 - 2^33 + 1 */
}

static inline uint64_t mul(uint64_t a, uint64_t b) { return reduce128((u128)a * b); }

/* Reduce a sum of at most 2^32 64-bit terms held in a u128. */
static inline uint64_t reduce_small(u128 x) {
    uint64_t lo = (uint64_t)x;
    uint64_t hi = (uint64_t)(x >> 64);   /* < 2^32, so hi * EPS < 2^64 */
    return add(lo, hi * HEMERA_EPS);
}
#else
/* Portable fallback without 128-bit integers: schoolbook 64x64 -> 128. */
typedef struct { uint64_t lo, hi; } u128;

static inline uint64_t reduce_parts(uint64_t lo, uint64_t hi) {
    uint64_t hi_hi = hi >> 32;
    uint64_t hi_lo = hi & HEMERA_EPS;
    uint64_t t0 = lo - hi_hi;
    t0 -= HEMERA_EPS & mask_of(lo < hi_hi);
    uint64_t t1 = (hi_lo << 32) - hi_lo;
    uint64_t r = t0 + t1;
    return r + (HEMERA_EPS & mask_of(r < t0));
}

static inline uint64_t mul(uint64_t a, uint64_t b) {
    uint64_t a0 = a & 0xFFFFFFFFULL, a1 = a >> 32, b0 = b & 0xFFFFFFFFULL, b1 = b >> 32;
    uint64_t p00 = a0 * b0, p01 = a0 * b1, p10 = a1 * b0, p11 = a1 * b1;
    uint64_t mid = (p00 >> 32) + (p01 & 0xFFFFFFFFULL) + (p10 & 0xFFFFFFFFULL);
    uint64_t lo = (p00 & 0xFFFFFFFFULL) | (mid << 32);
    uint64_t hi = p11 + (p01 >> 32) + (p10 >> 32) + (mid >> 32);
    return reduce_parts(lo, hi);
}
#endif

static inline uint64_t pow7(uint64_t x) {
    uint64_t x2 = mul(x, x);
    uint64_t x3 = mul(x2, x);
    uint64_t x4 = mul(x2, x2);
    return mul(x3, x4);
}

/*
 * One selection step of the inversion below.  With lt = (u < w): absdiff <- w - u and
 * partner <- r and w <- u when lt (absdiff arrives as u - w, partner as s), and
 * swapped = lt ? all ones : 0.  Which of u, w is larger is a coin flip on hash data, and
 * compilers turn these selects into a branch that mispredicts half the time (GCC does
 * even with __builtin_expect_with_probability); on x86-64 the selects are therefore
 * written as cmov, elsewhere as masks.  Same results either way.
 */
static inline void gcd_select(uint64_t u, uint64_t *w, uint64_t r, uint64_t *absdiff,
                              uint64_t *partner, uint64_t *swapped) {
    uint64_t neg = *w - u;
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__)) && !defined(HEMERA_PORTABLE)
    uint64_t ww = *w, d = *absdiff, p = *partner, m;
    __asm__("cmpq %[ww], %[u]\n\t"      /* CF = u < w */
            "cmovbq %[neg], %[d]\n\t"
            "cmovbq %[r], %[p]\n\t"
            "cmovbq %[u], %[ww]\n\t"
            "sbbq %[m], %[m]"             /* cmov leaves the flags: m = CF ? -1 : 0 */
            : [d] "+r"(d), [p] "+r"(p), [ww] "+r"(ww), [m] "=r"(m)
            : [u] "r"(u), [neg] "r"(neg), [r] "r"(r)
            : "cc");
    *w = ww;
    *absdiff = d;
    *partner = p;
    *swapped = m;
#else
    uint64_t m = mask_of(u < *w);
    *absdiff = (neg & m) | (*absdiff & ~m);
    *partner = (r & m) | (*partner & ~m);
    *w = (u & m) | (*w & ~m);
    *swapped = m;
#endif
}

/*
 * Inversion by binary GCD: returns s with s = x^-1 * 2^k (mod p), and the shift k.
 *
 * Used once per permutation (the partial rounds run on fractions, see round_factors).
 * Why not x^(p-2): that is a chain of 64 dependent squarings, several times slower than
 * the loop below, one subtract-and-shift step of which is about four cycles of
 * dependent work.
 *
 * Each value has a partner cofactor (u with s, w with r) and the exact integer invariant
 * p = u*s + w*r holds with u, w odd and r, s >= 0, so r, s <= p never overflow.  A step
 * puts |u - w| >> j (j trailing zeros) in u with its partner = (partner of the larger)
 * << j, and min(u, w) in w with partner r + s.  Modulo p, the partner of whichever value
 * started as x satisfies partner * x = +-(other value) * 2^k, the sign flipping each time
 * the slots trade places; the loop ends at u = w = 1 (gcd 1), so the answer is s or
 * r = p - s according to that parity.  The caller passes 0 < x < p.
 * Variable time is fine: hemera hashes public content, there is no secret to leak.
 */
static inline uint64_t inv_shifted(uint64_t x, unsigned *shift) {
    unsigned k = (unsigned)__builtin_ctzll(x);
    uint64_t u = HEMERA_P, w = x >> k, r = 0, s = 1, flip = 0;
    /* At most ~128 steps (each removes at least one bit of u*w < 2^128); the bound only
     * keeps a logic error from turning into an endless loop. */
    for (int guard = 0; u != w && guard < 256; guard++) {
        uint64_t diff = u - w;
        /* ctz(u - w) = ctz(w - u), and u != w keeps the argument non-zero. */
        unsigned j = (unsigned)__builtin_ctzll(diff);
        uint64_t absdiff = diff, larger_partner = s, swapped;
        gcd_select(u, &w, r, &absdiff, &larger_partner, &swapped);
        u = absdiff >> j;
        r = r + s;
        s = larger_partner << j;
        flip ^= swapped;
        k += j;
    }
    *shift = k;
    /* flip = 0: s and r kept their roles, and the congruence is s * x = w * 2^k = 2^k. */
    return (s & ~flip) | (r & flip);
}

/* ------------------------------------------------------------------ permutation */

#if defined(__SIZEOF_INT128__) && !defined(HEMERA_PORTABLE)
/* state <- M_E * state (+ rc, when rc != NULL: the next round's constants, folded in).
 * By linearity circ(2*M4, M4, M4, M4) x = M4 (x_c + S) per chunk c, with S the sum of the
 * four chunks; and M4 y = t + y + 2 * rot(y), with t the chunk sum and rot(y)_i =
 * y_(i+1 mod 4) (row 0: (a+b+c+d) + a + 2b = 2a + 3b + c + d, and so on).  Fewer
 * operations than M4 per chunk plus column sums, and few enough live values to stay in
 * registers.  Widened sums: y < 2^65, each output < 7 * 2^65 + rc < 2^69. */
static inline void external(uint64_t *st, const uint64_t *rc) {
    uint64_t s[4];
    for (int k = 0; k < 4; k++)
        s[k] = reduce_small((u128)st[k] + st[k + 4] + st[k + 8] + st[k + 12]);
    for (int c = 0; c < WIDTH; c += 4) {
        u128 y0 = (u128)st[c] + s[0], y1 = (u128)st[c + 1] + s[1];
        u128 y2 = (u128)st[c + 2] + s[2], y3 = (u128)st[c + 3] + s[3];
        u128 t = y0 + y1 + y2 + y3;
        u128 o0 = t + y0 + 2 * y1, o1 = t + y1 + 2 * y2;
        u128 o2 = t + y2 + 2 * y3, o3 = t + y3 + 2 * y0;
        if (rc) {
            o0 += rc[c];
            o1 += rc[c + 1];
            o2 += rc[c + 2];
            o3 += rc[c + 3];
        }
        st[c] = reduce_small(o0);
        st[c + 1] = reduce_small(o1);
        st[c + 2] = reduce_small(o2);
        st[c + 3] = reduce_small(o3);
    }
}
#else
static inline void external(uint64_t *st, const uint64_t *rc) {
    uint64_t m[WIDTH];
    for (int c = 0; c < WIDTH; c += 4) {
        uint64_t a = st[c], b = st[c + 1], x = st[c + 2], y = st[c + 3];
        uint64_t t01 = add(a, b), t23 = add(x, y), t0123 = add(t01, t23);
        uint64_t t01123 = add(t0123, b), t01233 = add(t0123, y);
        m[c + 3] = add(t01233, add(a, a));
        m[c + 1] = add(t01123, add(x, x));
        m[c] = add(t01123, t01);
        m[c + 2] = add(t01233, t23);
    }
    uint64_t sum[4];
    for (int k = 0; k < 4; k++) sum[k] = add(add(m[k], m[k + 4]), add(m[k + 8], m[k + 12]));
    for (int i = 0; i < WIDTH; i++) st[i] = add(add(m[i], sum[i & 3]), rc ? rc[i] : 0);
}
#endif

/* Sum of elements 1..15 mod p. */
static inline uint64_t sum_tail(const uint64_t *st) {
#if defined(__SIZEOF_INT128__) && !defined(HEMERA_PORTABLE)
    u128 acc = 0;
    for (int i = 1; i < WIDTH; i++) acc += st[i];
    return reduce_small(acc);
#else
    uint64_t acc = 0;
    for (int i = 1; i < WIDTH; i++) acc = add(acc, st[i]);
    return acc;
#endif
}

/*
 * The partial rounds without a field inversion per round.
 *
 * Each partial round needs y = x^-1 of x = state[0] + c, and the next round's x depends
 * on y: sixteen inversions in a row were the speed limit of the hash.  Instead the state
 * is carried as fractions with one shared denominator, state[i] = a[i] / z: then x =
 * n / z with n = a[0] + c z, y = z / n, and one round of M_I = J + diag(d) gives, over the
 * new denominator z' = z n,
 *     a'[i] = n (d[i] a[i] + S) + z^2       (i >= 1, S = a[1] + ... + a[15])
 *     a'[0] = (d[0] + 1) z^2 + n S
 * (the specification's y + sum and d y, multiplied out).  x = 0 (n = 0: the S-box maps 0
 * to 0, y = 0) is the same formula with n replaced by 1 and the z^2 terms by 0, selected
 * without a branch.  z is a product of non-zero factors, so it is never 0; one inversion
 * after the sixteenth round turns the fractions back into field elements.  Exact field
 * arithmetic throughout: the results are the specification's, bit for bit.
 *
 * round_factors: from a[0], the round's constant c and the denominator z, the factor n
 * (1 when x = 0) and the z^2 term q (0 when x = 0).
 */
static inline void round_factors(uint64_t a0, uint64_t c, uint64_t z, uint64_t zsq,
                                 uint64_t *n_out, uint64_t *q_out) {
    uint64_t n = canon(add(a0, mul(c, z)));
    uint64_t nonzero = mask_of(n != 0);
    *n_out = (n & nonzero) | (1 & ~nonzero);
    *q_out = zsq & nonzero;
}

/* z^-1 for 0 < z (mod p): the binary GCD's shifted inverse, unshifted. */
static inline uint64_t inverse(uint64_t z) {
    unsigned k;
    uint64_t s = inv_shifted(canon(z), &k);
    if (k > MAX_SHIFT) k = MAX_SHIFT; /* unreachable: k < 128 for 0 < z < p */
    return mul(s, INV_POW2[k]);
}

static void permute_scalar(uint64_t *st, const uint64_t *rc) {
    const uint64_t *full = rc, *part = rc + 2 * HALF_FULL * WIDTH;
    /* Initial M_E, with the first round's constants added during its reduction. */
    external(st, full);
    for (int r = 0; r < HALF_FULL; r++) {
        for (int i = 0; i < WIDTH; i++) st[i] = pow7(st[i]);
        external(st, r + 1 < HALF_FULL ? full + (r + 1) * WIDTH : NULL);
    }
    uint64_t z = 1, zsq = 1;
    for (int r = 0; r < PARTIAL; r++) {
        uint64_t n, q;
        round_factors(st[0], part[r], z, zsq, &n, &q);
        uint64_t sum = sum_tail(st);
        for (int i = 1; i < WIDTH; i++) st[i] = add(mul(n, add(mul(st[i], DIAG[i]), sum)), q);
        st[0] = add(mul(DIAG0_PLUS1, q), mul(n, sum));
        z = mul(z, n);
        zsq = mul(z, z);
    }
    const uint64_t *term = full + HALF_FULL * WIDTH;
    uint64_t zinv = inverse(z);
    for (int i = 0; i < WIDTH; i++) st[i] = add(mul(st[i], zinv), term[i]);
    for (int r = 0; r < HALF_FULL; r++) {
        for (int i = 0; i < WIDTH; i++) st[i] = pow7(st[i]);
        external(st, r + 1 < HALF_FULL ? term + (r + 1) * WIDTH : NULL);
    }
}

/* Eight states side by side for the batch functions: element e of lane l is e[e][l]. */
#define LANES 8
typedef struct {
    _Alignas(64) uint64_t e[WIDTH][LANES];
} lanes_state;

/* y[i] = x[i]^-1 (0 for 0) for n canonical x[i] (n a power of two, at most 2 * LANES)
 * with one inversion: Montgomery's trick on a binary tree (products of pairs, of pairs of
 * pairs, ... up to the root; invert the root; each node's inverse times its sibling's
 * product is its child's inverse).  Zeros are replaced by 1 for the products and give 0.
 * Depth log2(n) each way, 3n - 3 products. */
static void inverse_many(const uint64_t *x, uint64_t *y, int n) {
    uint64_t t[4 * LANES], inv[4 * LANES]; /* node k: children 2k+1, 2k+2; leaves n-1.. */
    for (int i = 0; i < n; i++) t[n - 1 + i] = x[i] | (uint64_t)(x[i] == 0);
    for (int k = n - 2; k >= 0; k--) t[k] = mul(t[2 * k + 1], t[2 * k + 2]);
    inv[0] = inverse(t[0]);
    for (int k = 0; k < n - 1; k++) {
        inv[2 * k + 1] = mul(inv[k], t[2 * k + 2]);
        inv[2 * k + 2] = mul(inv[k], t[2 * k + 1]);
    }
    for (int i = 0; i < n; i++) y[i] = inv[n - 1 + i] & mask_of(x[i] != 0);
}

/* One input element: 7 bytes little-endian (below 2^56 < p, so never reduced). */
static inline uint64_t load7(const uint8_t *b) {
    return (uint64_t)b[0] | (uint64_t)b[1] << 8 | (uint64_t)b[2] << 16 | (uint64_t)b[3] << 24 |
           (uint64_t)b[4] << 32 | (uint64_t)b[5] << 40 | (uint64_t)b[6] << 48;
}

/* The AVX-512 and AVX2 permutations, one state and eight lanes (x86-64 with GCC or Clang
 * only). */
#include "hemera_simd.h"

/* Which permutation runs: 0 plain C, 1 AVX2, 2 AVX-512.  Set by hemera_setup and
 * hemera_use_simd; read-only while hashing. */
static int SIMD_LEVEL = 0;

static inline void permute_with(uint64_t *st, const uint64_t *rc) {
#ifdef HEMERA_SIMD
    if (SIMD_LEVEL == 2) {
        permute_avx512(st, rc);
        return;
    }
    if (SIMD_LEVEL == 1) {
        permute_avx2(st, rc);
        return;
    }
#endif
    permute_scalar(st, rc);
}

/* Use the best permutation up to level (0 plain C, 1 AVX2, 2 AVX-512) that the CPU
 * supports; returns the level in use.  Exposed so the tests can compare every path.
 * Not to be called while another thread hashes. */
int hemera_use_simd(int level) {
    int best = 0;
#ifdef HEMERA_SIMD
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx2")) best = 1;
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq") &&
        __builtin_cpu_supports("avx512vl"))
        best = 2;
#endif
    SIMD_LEVEL = level < best ? (level > 0 ? level : 0) : best;
    return SIMD_LEVEL;
}

/* ------------------------------------------------------------------ sponge */

/* Field addition of a 56-byte block into the rate (not XOR, not overwrite). */
static void add_block(uint64_t *st, const uint8_t *block) {
    for (int e = 0; e < RATE; e++) st[e] = add(st[e], load7(block + 7 * e));
}

static void absorb_block(uint64_t *st, const uint8_t *block, const uint64_t *rc) {
    add_block(st, block);
    permute_with(st, rc);
}

/* blocks whole blocks from data, one after the other (the sponge's absorb loop). */
static void absorb_blocks(uint64_t *st, const uint8_t *data, size_t blocks) {
#ifdef HEMERA_SIMD
    if (SIMD_LEVEL == 2 && blocks > 1) {
        absorb_blocks_avx512(st, data, blocks, RC);
        return;
    }
#endif
    for (size_t k = 0; k < blocks; k++, data += RATE_BYTES) absorb_block(st, data, RC);
}

static void pad_block(uint8_t *block, const uint8_t *tail, size_t n) {
    memset(block, 0, RATE_BYTES);
    if (n) memcpy(block, tail, n);
    block[n] = 0x01;
}

int hemera_setup(void) {
    if (READY) return 0;
    hemera_use_simd(2);
    uint64_t st[WIDTH] = {0};
    uint8_t block[RATE_BYTES];
    pad_block(block, GENESIS_SEED, sizeof GENESIS_SEED);
    add_block(st, block);
    st[LENGTH_SLOT] = sizeof GENESIS_SEED;
    /* Tables for the inversion are needed by the zero-constant permutation too. */
    uint64_t half = (HEMERA_P + 1) / 2;          /* 2^-1 mod p */
    INV_POW2[0] = 1;
    for (int k = 1; k <= MAX_SHIFT; k++) INV_POW2[k] = mul(INV_POW2[k - 1], half);
    DIAG0_PLUS1 = canon(add(DIAG[0], 1));
    permute_with(st, ZERO_RC);
    int filled = 0;
    for (;;) {
        for (int i = 0; i < RATE && filled < NUM_CONSTANTS; i++) RC[filled++] = canon(st[i]);
        if (filled == NUM_CONSTANTS) break;
        permute_with(st, ZERO_RC);
    }
    READY = 1;
    return 0;
}

/* One permutation of a 16-element state, in place (inputs may be any uint64_t; outputs are
 * canonical).  zero_constants selects hemera_0, the constant-free permutation of the
 * bootstrap.  Exposed so the tests can compare the two backends state by state. */
void hemera_permute(uint64_t *st, int zero_constants) {
    permute_with(st, zero_constants ? ZERO_RC : RC);
    for (int i = 0; i < WIDTH; i++) st[i] = canon(st[i]);
}

void hemera_round_constants(uint64_t *out) {
    memcpy(out, RC, sizeof RC);
}

void hemera_init(hemera_ctx *ctx) {
    memset(ctx, 0, sizeof *ctx);
    ctx->state[DOMAIN_SLOT] = 0; /* plain hash domain */
}

void hemera_update(hemera_ctx *ctx, const char *data, size_t len) {
    const uint8_t *p = (const uint8_t *)data;
    ctx->length += (uint64_t)len;
    if (ctx->buf_len) {
        size_t take = RATE_BYTES - ctx->buf_len;
        if (take > len) take = len;
        memcpy(ctx->buf + ctx->buf_len, p, take);
        ctx->buf_len += (uint32_t)take;
        p += take;
        len -= take;
        if (ctx->buf_len < RATE_BYTES) return;
        absorb_block(ctx->state, ctx->buf, RC);
        ctx->buf_len = 0;
    }
    size_t blocks = len / RATE_BYTES;
    absorb_blocks(ctx->state, p, blocks);
    p += blocks * RATE_BYTES;
    len -= blocks * RATE_BYTES;
    if (len) {
        memcpy(ctx->buf, p, len);
        ctx->buf_len = (uint32_t)len;
    }
}

void hemera_digest(const hemera_ctx *ctx, char *out) {
    uint64_t st[WIDTH];
    uint8_t block[RATE_BYTES];
    memcpy(st, ctx->state, sizeof st);
    pad_block(block, ctx->buf, ctx->buf_len);
    add_block(st, block);
    /* The length replaces the slot's content (it is not added). */
    st[LENGTH_SLOT] = canon(ctx->length);
    permute_with(st, RC);
    for (int e = 0; e < 4; e++) {
        uint64_t v = canon(st[e]);
        for (int b = 0; b < 8; b++) out[8 * e + b] = (char)(uint8_t)(v >> (8 * b));
    }
}

void hemera_hash(const char *data, size_t len, char *out) {
    hemera_ctx ctx;
    hemera_init(&ctx);
    hemera_update(&ctx, data, len);
    hemera_digest(&ctx, out);
}

/* ------------------------------------------------------------------ tree mode */

/* The tree layer of the specification (specs/tree.md): a leaf is the plain hash of its
 * chunk, re-permuted with the chunk counter in state[8] and CHUNK (| ROOT) in state[9]; a
 * parent adds its two children's limbs into the rate (left 0..3, right 4..7) with PARENT
 * (| ROOT) in state[9] and permutes once.  Built only on the sponge and permutation above. */
#define TREE_COUNTER_SLOT 8
#define TREE_FLAGS_SLOT 9
#define FLAG_ROOT 1
#define FLAG_PARENT 2
#define FLAG_CHUNK 4

/* One 8-byte little-endian limb of a chaining value. */
static inline uint64_t load8(const uint8_t *b) {
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--) v = v << 8 | b[i];
    return v;
}

static void tree_output(uint64_t *st, char *out) {
    for (int e = 0; e < 4; e++) {
        uint64_t v = canon(st[e]);
        for (int b = 0; b < 8; b++) out[8 * e + b] = (char)(uint8_t)(v >> (8 * b));
    }
}

void hemera_hash_leaf(const char *data, size_t len, uint64_t counter, int is_root, char *out) {
    uint8_t base[32];
    hemera_hash(data, len, (char *)base);
    uint64_t st[WIDTH] = {0};
    for (int e = 0; e < 4; e++) st[e] = load8(base + 8 * e);
    st[TREE_COUNTER_SLOT] = canon(counter);
    st[TREE_FLAGS_SLOT] = FLAG_CHUNK | (is_root ? FLAG_ROOT : 0);
    permute_with(st, RC);
    tree_output(st, out);
}

/* Limbs >= p are read as field elements (reduced), as the reference reads chaining values. */
void hemera_hash_node(const char *left, const char *right, int is_root, char *out) {
    uint64_t st[WIDTH] = {0};
    st[TREE_FLAGS_SLOT] = FLAG_PARENT | (is_root ? FLAG_ROOT : 0);
    for (int e = 0; e < 4; e++) {
        st[e] = canon(load8((const uint8_t *)left + 8 * e));
        st[4 + e] = canon(load8((const uint8_t *)right + 8 * e));
    }
    permute_with(st, RC);
    tree_output(st, out);
}

/* ------------------------------------------------------------------ batches */

/*
 * hash_many, hash_leaf_many and hash_node_many: each input is a job (absorb its blocks,
 * then the final padded block; a leaf then takes one more permutation, a node has only
 * that one).  With AVX2 or AVX-512, eight jobs run side by side through the lane
 * permutation, and a lane that finishes takes the next job; when no job is left to start
 * and fewer than LANES_MIN lanes are still busy, those finish one by one on the
 * single-state permutation (a nearly empty lane step costs more than that).  Plain C runs
 * every job on the single-state permutation.  The results do not depend on the path.
 */

enum { JOB_HASH, JOB_LEAF, JOB_NODE };
/* STAGE_ABSORB: blocks left to add; STAGE_FINAL: the padded block went in, the output
 * follows the next permutation; STAGE_TREE: a leaf's or node's own permutation next. */
enum { STAGE_ABSORB, STAGE_FINAL, STAGE_TREE };
#define LANES_MIN 3

typedef struct {
    int mode;
    const uint8_t *data;
    const uint64_t *ends;   /* input i is data[ends[i-1] .. ends[i]), ends[-1] = 0 */
    uint64_t counter;       /* leaf: the chunk counter (canonical) */
    uint64_t flags;         /* leaf, node: the tree flags */
    char *out;              /* output i at out[32 * i] */
} batch;

typedef struct {
    const uint8_t *p;
    uint64_t len, pos;
    size_t idx;
    int stage;
} job;

/* The job machine works on one state "column": element e at col[e * stride] (stride 1 for
 * a plain state, LANES for one lane of a lanes_state). */
static void job_start(const batch *b, size_t idx, job *j, uint64_t *col, size_t stride) {
    for (int e = 0; e < WIDTH; e++) col[e * stride] = 0;  /* DOMAIN_SLOT: plain hash, 0 */
    j->idx = idx;
    if (b->mode == JOB_NODE) {
        const uint8_t *pair = b->data + 64 * idx;
        for (int e = 0; e < 4; e++) {
            col[e * stride] = canon(load8(pair + 8 * e));
            col[(4 + e) * stride] = canon(load8(pair + 32 + 8 * e));
        }
        col[TREE_FLAGS_SLOT * stride] = b->flags;
        j->stage = STAGE_TREE;
        return;
    }
    uint64_t start = idx ? b->ends[idx - 1] : 0;
    j->p = b->data + start;
    j->len = b->ends[idx] - start;
    j->pos = 0;
    j->stage = STAGE_ABSORB;
}

/* Add the job's next input before a permutation. */
static void job_feed(job *j, uint64_t *col, size_t stride) {
    if (j->stage != STAGE_ABSORB) return;
    uint64_t left = j->len - j->pos;
    const uint8_t *block = j->p + j->pos;
    uint8_t padded[RATE_BYTES];
    if (left < RATE_BYTES) {
        pad_block(padded, block, (size_t)left);
        block = padded;
    }
    for (int e = 0; e < RATE; e++)
        col[e * stride] = add(col[e * stride], load7(block + 7 * e));
    if (left < RATE_BYTES) {
        col[LENGTH_SLOT * stride] = canon(j->len);  /* replaces the slot (hemera_digest) */
        j->stage = STAGE_FINAL;
    } else {
        j->pos += RATE_BYTES;
    }
}

/* After a permutation: 1 when the job's output has been written. */
static int job_after(const batch *b, job *j, uint64_t *col, size_t stride) {
    if (j->stage == STAGE_ABSORB) return 0;
    if (j->stage == STAGE_FINAL && b->mode == JOB_LEAF) {
        uint64_t base[4];
        for (int e = 0; e < 4; e++) base[e] = canon(col[e * stride]);
        for (int e = 0; e < WIDTH; e++) col[e * stride] = e < 4 ? base[e] : 0;
        col[TREE_COUNTER_SLOT * stride] = b->counter;
        col[TREE_FLAGS_SLOT * stride] = b->flags;
        j->stage = STAGE_TREE;
        return 0;
    }
    char *out = b->out + 32 * j->idx;
    for (int e = 0; e < 4; e++) {
        uint64_t v = canon(col[e * stride]);
        for (int k = 0; k < 8; k++) out[8 * e + k] = (char)(uint8_t)(v >> (8 * k));
    }
    return 1;
}

static void job_run_single(const batch *b, job *j, uint64_t *st) {
    do {
        job_feed(j, st, 1);
        permute_with(st, RC);
    } while (!job_after(b, j, st, 1));
}

typedef void (*lanes_fn)(lanes_state *, const uint64_t *);

static lanes_fn lanes_permutation(void) {
#ifdef HEMERA_SIMD
    if (SIMD_LEVEL == 2) return permute_lanes_avx512;
    if (SIMD_LEVEL == 1) return permute_lanes_avx2;
#endif
    return NULL;
}

static void run_batch(const batch *b, size_t first, size_t count) {
    lanes_fn perm = lanes_permutation();
    size_t next = first, stop = first + count;
    if (perm == NULL || count < 2) {
        for (; next < stop; next++) {
            uint64_t st[WIDTH];
            job j;
            job_start(b, next, &j, st, 1);
            job_run_single(b, &j, st);
        }
        return;
    }
    lanes_state ls;
    job jobs[LANES];
    int busy[LANES], nbusy = 0;
    for (int l = 0; l < LANES; l++) {
        busy[l] = next < stop;
        if (busy[l]) {
            job_start(b, next++, &jobs[l], &ls.e[0][l], LANES);
            nbusy++;
        } else {
            for (int e = 0; e < WIDTH; e++) ls.e[e][l] = 0;  /* idle lanes permute zeros */
        }
    }
    while (nbusy > 0 && (next < stop || nbusy >= LANES_MIN)) {
        for (int l = 0; l < LANES; l++)
            if (busy[l]) job_feed(&jobs[l], &ls.e[0][l], LANES);
        perm(&ls, RC);
        for (int l = 0; l < LANES; l++) {
            if (!busy[l] || !job_after(b, &jobs[l], &ls.e[0][l], LANES)) continue;
            if (next < stop) {
                job_start(b, next++, &jobs[l], &ls.e[0][l], LANES);
            } else {
                busy[l] = 0;
                nbusy--;
            }
        }
    }
    for (int l = 0; l < LANES; l++) {
        if (!busy[l]) continue;
        uint64_t st[WIDTH];
        for (int e = 0; e < WIDTH; e++) st[e] = ls.e[e][l];
        job_run_single(b, &jobs[l], st);
    }
}

/* Hash inputs first .. first+count-1 of n laid end to end in one buffer (input i is
 * data[ends[i-1] .. ends[i]), ends[-1] = 0) into out[32*i ..].  One call per batch, so
 * the caller's GIL is released for all of it; disjoint ranges may run in parallel threads. */
void hemera_hash_many(const char *data, const uint64_t *ends, size_t first, size_t count,
                      char *out) {
    batch b = {JOB_HASH, (const uint8_t *)data, ends, 0, 0, out};
    run_batch(&b, first, count);
}

/* hash_leaf of the inputs first .. first+count-1 (laid out as in hemera_hash_many), same
 * counter and flag. */
void hemera_hash_leaf_many(const char *data, const uint64_t *ends, size_t first,
                           size_t count, uint64_t counter, int is_root, char *out) {
    batch b = {JOB_LEAF, (const uint8_t *)data, ends, canon(counter),
               (uint64_t)(FLAG_CHUNK | (is_root ? FLAG_ROOT : 0)), out};
    run_batch(&b, first, count);
}

/* hash_node of the 64-byte (left || right) inputs first .. first+count-1 laid end to end. */
void hemera_hash_node_many(const char *pairs, size_t first, size_t count, int is_root,
                           char *out) {
    batch b = {JOB_NODE, (const uint8_t *)pairs, NULL, 0,
               (uint64_t)(FLAG_PARENT | (is_root ? FLAG_ROOT : 0)), out};
    run_batch(&b, first, count);
}

/* n states of 16 elements laid end to end, each permuted in place through the batch path
 * (the lane permutation when there is one) with canonical outputs.  For the tests. */
void hemera_permute_many(uint64_t *states, size_t n, int zero_constants) {
    const uint64_t *rc = zero_constants ? ZERO_RC : RC;
    lanes_fn perm = lanes_permutation();
    for (size_t i = 0; i < n; i += LANES) {
        size_t m = n - i < LANES ? n - i : LANES;
        if (perm == NULL) {
            for (size_t k = 0; k < m; k++) permute_with(states + WIDTH * (i + k), rc);
        } else {
            lanes_state ls;
            memset(&ls, 0, sizeof ls);
            for (size_t k = 0; k < m; k++)
                for (int e = 0; e < WIDTH; e++) ls.e[e][k] = states[WIDTH * (i + k) + e];
            perm(&ls, rc);
            for (size_t k = 0; k < m; k++)
                for (int e = 0; e < WIDTH; e++) states[WIDTH * (i + k) + e] = ls.e[e][k];
        }
        for (size_t k = 0; k < m * WIDTH; k++) states[WIDTH * i + k] = canon(states[WIDTH * i + k]);
    }
}
