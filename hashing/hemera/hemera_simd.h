/*
 * SIMD versions of the hemera permutation, included by hemera.c (not a standalone header:
 * it uses hemera.c's field helpers, constants and inversion).
 *
 * Both are compiled into every x86-64 build through per-function target attributes, and
 * hemera_use_simd picks one at run time from what the CPU reports, so the extension is
 * still built with plain -O3 and runs on any x86-64.  They compute exactly what
 * permute_scalar computes; the tests compare all three on the same inputs.
 */

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__)) && !defined(HEMERA_PORTABLE)
#define HEMERA_SIMD 1
#include <immintrin.h>

/* The field arithmetic per lane, written once for AVX-512 and AVX2 and instantiated for
 * each by DEFINE_FIELD_OPS with its hooks: X the intrinsics' prefix, V the vector type,
 * M the lane-mask type, LT(u, w) the mask of u < w, LT_AND(m, u, w) that within m,
 * ADD_EPS_IF(x, m, eps) / SUB_EPS_IF(...) x + or - EPS in the lanes of m, and
 * LO(a, b, ll, mid2, eps) the low 64 bits of a * b. */

/* The end of a product a * b mod p, shared by NAME(a, b) and the square below: from the
 * partial products hh, mid, mid2 and the low 64 bits lo (locals of the caller), the high 64
 * bits, then reduce128's steps.  hi_lo * EPS is one more 32x32 product (EPS < 2^32). */
#define FIELD_REDUCE_TAIL(X, V, LT, ADD_EPS_IF, SUB_EPS_IF)                                 \
        V hi = X##_add_epi64(X##_add_epi64(hh, X##_srli_epi64(mid, 32)),                    \
                             X##_srli_epi64(mid2, 32));                                     \
        V hi_hi = X##_srli_epi64(hi, 32);                                                   \
        V t0 = X##_sub_epi64(lo, hi_hi);                                                    \
        t0 = SUB_EPS_IF(t0, LT(lo, hi_hi), eps);             /* borrowed 2^64 = EPS */      \
        V r = X##_add_epi64(t0, X##_mul_epu32(hi, eps));     /* + hi_lo * EPS */            \
        return ADD_EPS_IF(r, LT(r, t0), eps);

/* a * b mod p: the partial products from four 32x32 products, then FIELD_REDUCE_TAIL. */
#define DEFINE_FIELD_MUL(NAME, ATTR, X, V, SET1, AND, LO, LT, ADD_EPS_IF, SUB_EPS_IF)       \
    ATTR static inline V NAME(V a, V b) {                                                   \
        const V eps = SET1((long long)HEMERA_EPS); /* also the low-32 mask */               \
        V a_hi = X##_srli_epi64(a, 32), b_hi = X##_srli_epi64(b, 32);                       \
        V ll = X##_mul_epu32(a, b);                                                         \
        V lh = X##_mul_epu32(a, b_hi);                                                      \
        V hl = X##_mul_epu32(a_hi, b);                                                      \
        V hh = X##_mul_epu32(a_hi, b_hi);                                                   \
        /* Each partial sum stays below 2^64: (2^32-1)^2 + 2*(2^32-1) = 2^64 - 1. */        \
        V mid = X##_add_epi64(lh, X##_srli_epi64(ll, 32));                                  \
        V mid2 = X##_add_epi64(hl, AND(mid, eps));                                          \
        V lo = LO(a, b, ll, mid2, eps);                                                     \
        FIELD_REDUCE_TAIL(X, V, LT, ADD_EPS_IF, SUB_EPS_IF)                                 \
    }

/* a * a mod p: as NAME above with the two cross products equal (one product and one shift
 * fewer; the compiler does not see that a * b_hi and a_hi * b coincide). */
#define DEFINE_FIELD_SQR(NAME, ATTR, X, V, SET1, AND, LO, LT, ADD_EPS_IF, SUB_EPS_IF)       \
    ATTR static inline V NAME(V a) {                                                        \
        const V eps = SET1((long long)HEMERA_EPS);                                          \
        V a_hi = X##_srli_epi64(a, 32);                                                     \
        V ll = X##_mul_epu32(a, a);                                                         \
        V lh = X##_mul_epu32(a, a_hi);                                                      \
        V hh = X##_mul_epu32(a_hi, a_hi);                                                   \
        V mid = X##_add_epi64(lh, X##_srli_epi64(ll, 32));                                  \
        V mid2 = X##_add_epi64(lh, AND(mid, eps));                                          \
        V lo = LO(a, a, ll, mid2, eps);                                                     \
        FIELD_REDUCE_TAIL(X, V, LT, ADD_EPS_IF, SUB_EPS_IF)                                 \
    }

/* a + b mod p, for any 64-bit lanes (the vector form of add()). */
#define DEFINE_FIELD_ADD(NAME, ATTR, X, V, M, SET1, LT, LT_AND, ADD_EPS_IF)                 \
    ATTR static inline V NAME(V a, V b) {                                                   \
        const V eps = SET1((long long)HEMERA_EPS);                                          \
        V s = X##_add_epi64(a, b);                                                          \
        M wrap = LT(s, a);                                                                  \
        V t = ADD_EPS_IF(s, wrap, eps);                                                     \
        /* A second wrap only follows a first one, and leaves t < EPS. */                   \
        return ADD_EPS_IF(t, LT_AND(wrap, t, eps), eps);                                    \
    }

/* mulN, addN and pow7xN (x^7, the S-box) for one instruction set. */
#define DEFINE_FIELD_OPS(N, ATTR, X, V, M, SET1, AND, LO, LT, LT_AND, ADD_EPS_IF, SUB_EPS_IF) \
    DEFINE_FIELD_MUL(mul##N, ATTR, X, V, SET1, AND, LO, LT, ADD_EPS_IF, SUB_EPS_IF)         \
    DEFINE_FIELD_SQR(sqr##N, ATTR, X, V, SET1, AND, LO, LT, ADD_EPS_IF, SUB_EPS_IF)         \
    DEFINE_FIELD_ADD(add##N, ATTR, X, V, M, SET1, LT, LT_AND, ADD_EPS_IF)                   \
    ATTR static inline V pow7x##N(V x) {                                                    \
        V x2 = sqr##N(x);                                                                   \
        return mul##N(mul##N(x2, x), sqr##N(x2));                                           \
    }

/* AVX-512 F + DQ (vpmullq) + VL: the partial rounds use the AVX-512 forms on 4-lane
 * registers (see permute_frac_avx512). */
#define AVX512 __attribute__((target("avx512f,avx512dq,avx512vl")))

/* Instruction scheduling before register allocation (-fschedule-insns, off by default on
 * x86), for GCC, on the permutations only (the helpers they inline take the scheduling of
 * the function they are inlined into).  The single-state AVX-512 permutation is one long
 * dependent sequence mixing vector and scalar work, a partial round longer than the CPU's
 * reordering window, so the order GCC emits matters.  Measured on Zen 4 (C core, CPU time,
 * identical results): one long input +7% (AVX-512, SCHED_ONE); the eight-lane permutations
 * +2% (AVX-512) and +3% (AVX2) with register-pressure-aware scheduling (SCHED_LANES), which
 * is slower on the single state; the AVX2 single-state permutation was slower with either,
 * so it keeps the defaults. */
#if defined(__GNUC__) && !defined(__clang__)
#define SCHED_ONE __attribute__((optimize("schedule-insns")))
#define SCHED_LANES __attribute__((optimize("schedule-insns,sched-pressure")))
#else
#define SCHED_ONE
#define SCHED_LANES
#endif
#define AVX512_ONE AVX512 SCHED_ONE

/*
 * The same permutation with the state in two 8-lane AVX-512 registers.  Why: the 64
 * products of each full round and the 15 of each partial round are independent, and the
 * scalar code spends most of its time on them (the partial rounds on four 4-lane
 * registers, see permute_frac_avx512).  Used only when the CPU has AVX-512 F, DQ and VL
 * (checked in hemera_setup); the tests compare it with the scalar path.
 */

/* On AVX-512 the low 64 bits of a product are one vpmullq, and lane masks are registers. */
#define LO8(a, b, ll, mid2, eps) _mm512_mullo_epi64(a, b)
#define ADD_EPS_IF8(x, m, eps) _mm512_mask_add_epi64(x, m, x, eps)
#define SUB_EPS_IF8(x, m, eps) _mm512_mask_sub_epi64(x, m, x, eps)
DEFINE_FIELD_OPS(8, AVX512, _mm512, __m512i, __mmask8, _mm512_set1_epi64, _mm512_and_si512, LO8,
                 _mm512_cmplt_epu64_mask, _mm512_mask_cmplt_epu64_mask, ADD_EPS_IF8, SUB_EPS_IF8)

/* The same operations on 4-lane registers with AVX-512VL (mulv, addv, ...): vpmullq and
 * unsigned compares into mask registers, which AVX2 lacks. */
#define LOV(a, b, ll, mid2, eps) _mm256_mullo_epi64(a, b)
#define ADD_EPS_IFV(x, m, eps) _mm256_mask_add_epi64(x, m, x, eps)
#define SUB_EPS_IFV(x, m, eps) _mm256_mask_sub_epi64(x, m, x, eps)
DEFINE_FIELD_OPS(v, AVX512, _mm256, __m256i, __mmask8, _mm256_set1_epi64x, _mm256_and_si256, LOV,
                 _mm256_cmplt_epu64_mask, _mm256_mask_cmplt_epu64_mask, ADD_EPS_IFV, SUB_EPS_IFV)

/* The linear part of M_E on one limb of every element (a = elements 0..7, b = 8..15).
 * By linearity circ(2*M4, M4, M4, M4) x = M4 (x_c + S) per chunk c, with S the sum of
 * the four chunks; and per chunk M4 y = t + y + 2 * rot(y), with t the chunk sum and
 * rot(y)_i = y_(i+1 mod 4) (row 0: (a+b+c+d) + a + 2b = 2a + 3b + c + d, and so on).
 * Limbs are below 2^32 and the coefficients of a row add up to 35, so plain 64-bit
 * additions cannot wrap. */
AVX512 static inline void external_limbs(__m512i *a, __m512i *b) {
    const __m512i rot1 = _mm512_set_epi64(4, 7, 6, 5, 0, 3, 2, 1);
    const __m512i rot2 = _mm512_set_epi64(5, 4, 7, 6, 1, 0, 3, 2);
    __m512i ab = _mm512_add_epi64(*a, *b);
    __m512i s = _mm512_add_epi64(ab, _mm512_shuffle_i64x2(ab, ab, 0x4E));  /* swap halves */
    __m512i v[2] = {_mm512_add_epi64(*a, s), _mm512_add_epi64(*b, s)};
    for (int h = 0; h < 2; h++) {
        __m512i y = v[h];
        __m512i r1 = _mm512_permutexvar_epi64(rot1, y);
        __m512i u = _mm512_add_epi64(y, r1);                                /* y_i + y_(i+1) */
        __m512i t = _mm512_add_epi64(u, _mm512_permutexvar_epi64(rot2, u)); /* chunk sum */
        v[h] = _mm512_add_epi64(_mm512_add_epi64(t, u), r1);                /* t + y + 2y_(i+1) */
    }
    *a = v[0];
    *b = v[1];
}

/* The top bit of each lane: set where u + v wrapped, given s = u + v (mod 2^64).  A carry
 * out of the top bit is (u & v) | ((u | v) & ~s) there: one ternary-logic instruction,
 * where an unsigned compare into a mask register takes several cycles more on some CPUs
 * (this sits on the permutation's critical path once per round). */
AVX512 static inline __m512i carry_bits(__m512i u, __m512i v, __m512i s) {
    return _mm512_ternarylogic_epi64(u, v, s, 0xD4);
}

/* lo + hi * 2^32 mod p, for lo, hi below 2^39: with hi = h1 * 2^32 + h0, the value is
 * lo + h0 * 2^32 + h1 * EPS (2^64 = EPS).  At most one of the two sums can wrap (after
 * a first wrap the running value is below 2^39), and one EPS then fixes it. */
AVX512 static inline __m512i join_limbs(__m512i lo, __m512i hi) {
    const __m512i eps = _mm512_set1_epi64((long long)HEMERA_EPS);
    __m512i h1 = _mm512_srli_epi64(hi, 32);
    __m512i h0s = _mm512_slli_epi64(hi, 32);
    __m512i x = _mm512_add_epi64(h0s, lo);                          /* h0 * 2^32 + lo */
    __m512i y = _mm512_sub_epi64(_mm512_slli_epi64(h1, 32), h1);    /* h1 * EPS */
    __m512i r = _mm512_add_epi64(x, y);
    __m512i wrapped = _mm512_or_si512(carry_bits(h0s, lo, x), carry_bits(x, y, r));
    return _mm512_add_epi64(r, _mm512_and_si512(_mm512_srai_epi64(wrapped, 63), eps));
}

/* a + k mod p for any a and a canonical k (below p): the sum wraps at most once, and then
 * it is below k, so one EPS fixes it (addv's second correction cannot be needed). */
AVX512 static inline __m256i addv_canonical(__m256i a, __m256i k) {
    const __m256i eps = _mm256_set1_epi64x((long long)HEMERA_EPS);
    __m256i s = _mm256_add_epi64(a, k);
    return _mm256_mask_add_epi64(s, _mm256_cmplt_epu64_mask(s, k), s, eps);
}

/* state <- M_E state + (ra, rb): the next full round's constants (any 64-bit values, e.g.
 * the constants times a denominator), folded in. */
AVX512 static inline void external8_plus(__m512i *a, __m512i *b, __m512i ra, __m512i rb) {
    const __m512i lo32 = _mm512_set1_epi64((long long)HEMERA_EPS);
    __m512i alo = _mm512_and_si512(*a, lo32), ahi = _mm512_srli_epi64(*a, 32);
    __m512i blo = _mm512_and_si512(*b, lo32), bhi = _mm512_srli_epi64(*b, 32);
    external_limbs(&alo, &blo);
    external_limbs(&ahi, &bhi);
    /* One more term per row: the sums stay below 36 * 2^32. */
    alo = _mm512_add_epi64(alo, _mm512_and_si512(ra, lo32));
    ahi = _mm512_add_epi64(ahi, _mm512_srli_epi64(ra, 32));
    blo = _mm512_add_epi64(blo, _mm512_and_si512(rb, lo32));
    bhi = _mm512_add_epi64(bhi, _mm512_srli_epi64(rb, 32));
    *a = join_limbs(alo, ahi);
    *b = join_limbs(blo, bhi);
}

/* state <- M_E state (the last full round: no constants follow). */
AVX512 static inline void external8_last(__m512i *a, __m512i *b) {
    const __m512i lo32 = _mm512_set1_epi64((long long)HEMERA_EPS);
    __m512i alo = _mm512_and_si512(*a, lo32), ahi = _mm512_srli_epi64(*a, 32);
    __m512i blo = _mm512_and_si512(*b, lo32), bhi = _mm512_srli_epi64(*b, 32);
    external_limbs(&alo, &blo);
    external_limbs(&ahi, &bhi);
    *a = join_limbs(alo, ahi);
    *b = join_limbs(blo, bhi);
}

/* state <- M_E state (+ rc when not NULL: the next full round's constants, folded in). */
AVX512 static inline void external8(__m512i *a, __m512i *b, const uint64_t *rc) {
    if (rc)
        external8_plus(a, b, _mm512_loadu_si512((const void *)rc),
                       _mm512_loadu_si512((const void *)(rc + 8)));
    else
        external8_last(a, b);
}

/* 15 x mod p: the product's high word is below 15, worth h * EPS (below 2^36), so the sum
 * wraps at most once (a full product's reduction is twice the instructions). */
static inline uint64_t times15(uint64_t x) {
    u128 prod = (u128)x * 15;
    uint64_t lo = (uint64_t)prod, h = (uint64_t)(prod >> 64);
    uint64_t r = lo + h * HEMERA_EPS;
    return r + (HEMERA_EPS & mask_of(r < lo));
}

/* lo + hi * 2^32 mod p for lo, hi below 2^40 (sums of 32-bit halves), without 128-bit
 * arithmetic (which the compiler routes through the stack here): the bits of hi above 32
 * are worth h1 * 2^64 = h1 * EPS, and lo + h1 * EPS < 2^41 cannot wrap. */
static inline uint64_t join_sums(uint64_t lo, uint64_t hi) {
    return add(hi << 32, lo + (hi >> 32) * HEMERA_EPS);
}

/* Sum of elements 1..15 mod p (v[c] = elements 4c .. 4c+3; element 0 is ignored), exactly:
 * the 32-bit halves are summed separately, then both in one reduction tree. */
AVX512 static inline uint64_t hsum15(const __m256i *v) {
    const __m256i lo32 = _mm256_set1_epi64x((long long)HEMERA_EPS);
    __m256i lo = _mm256_maskz_and_epi64(0xE, v[0], lo32);
    __m256i hi = _mm256_maskz_srli_epi64(0xE, v[0], 32);
    for (int c = 1; c < 4; c++) {
        lo = _mm256_add_epi64(lo, _mm256_and_si256(v[c], lo32));
        hi = _mm256_add_epi64(hi, _mm256_srli_epi64(v[c], 32));
    }
    /* Lanes 0-1: lo's partial sums, 2-3: hi's (each below 2^36: no wrap). */
    __m256i t = _mm256_add_epi64(_mm256_permute2x128_si256(lo, hi, 0x20),
                                 _mm256_permute2x128_si256(lo, hi, 0x31));
    t = _mm256_add_epi64(t, _mm256_shuffle_epi32(t, 0x4E));
    uint64_t lo_sum = (uint64_t)_mm_cvtsi128_si64(_mm256_castsi256_si128(t));
    uint64_t hi_sum = (uint64_t)_mm_cvtsi128_si64(_mm256_extracti128_si256(t, 1));
    return join_sums(lo_sum, hi_sum);
}

/* A round's constants (ra, rb), times the state's denominator k when scaled (k = 1
 * otherwise: a state of field elements, nothing to multiply). */
AVX512 static inline void scaled_rc8(const uint64_t *rc, uint64_t k, int scaled, __m512i *ra,
                                     __m512i *rb) {
    *ra = _mm512_loadu_si512((const void *)rc);
    *rb = _mm512_loadu_si512((const void *)(rc + 8));
    if (scaled) {
        const __m512i kv = _mm512_set1_epi64((long long)k);
        *ra = mul8(*ra, kv);
        *rb = mul8(*rb, kv);
    }
}

/*
 * The permutation on a state held as fractions: element i is (a, b)[i] / *z, and so is the
 * result, over a new *z (never 0).  Every step of the permutation keeps a shared
 * denominator w: x^7 maps v / w to v^7 / w^7, the linear layers act on the numerators, and
 * a round's constants are added as rc w (a vector product off the critical path); the
 * partial rounds were already computed on fractions (permute_scalar) and now simply start
 * from w instead of 1.  So no inversion is needed at all: the sponge (absorb_blocks_avx512)
 * carries the denominator from block to block and divides once at the end of a run of
 * blocks, instead of one binary-GCD inversion -- hundreds of dependent scalar steps, a
 * fifth of the permutation's instructions -- per block.  Exact field arithmetic: the
 * quotients are the specification's values, bit for bit.
 */
/* x^7 on all sixteen elements (a = 0..7, b = 8..15): twelve on the vector units, the last
 * four on the scalar units.  In the full rounds the vector units are the limit (every
 * field product is some twenty vector instructions) while the scalar units, with their
 * 64 x 64 -> 128-bit multiply, would otherwise only follow the denominator; handing them a
 * quarter of the second register's S-boxes shortens the rounds (measured:
 * benchmarks/hemera.py, one long input). */
AVX512 static inline void sbox16(__m512i *a, __m512i *b) {
    _Alignas(32) uint64_t t[4];
    _mm256_store_si256((__m256i *)t, _mm512_extracti64x4_epi64(*b, 1));
    for (int i = 0; i < 4; i++) t[i] = pow7(t[i]);
    __m256i lo = pow7xv(_mm512_castsi512_si256(*b));
    *a = pow7x8(*a);
    __m256i hi = _mm256_set_epi64x((long long)t[3], (long long)t[2], (long long)t[1],
                                   (long long)t[0]);
    *b = _mm512_inserti64x4(_mm512_castsi256_si512(lo), hi, 1);
}

AVX512_ONE static inline void permute_frac_avx512(__m512i *pa, __m512i *pb, uint64_t *pz,
                                              const uint64_t *rc, int scaled) {
    const uint64_t *full = rc, *part = rc + 2 * HALF_FULL * WIDTH;
    __m512i a = *pa, b = *pb, ra, rb;
    uint64_t w = *pz;
    scaled_rc8(full, w, scaled, &ra, &rb);
    external8_plus(&a, &b, ra, rb);
    for (int r = 0; r < HALF_FULL; r++) {
        sbox16(&a, &b);
        w = pow7(w);
        if (r + 1 < HALF_FULL) {
            scaled_rc8(full + (r + 1) * WIDTH, w, scaled, &ra, &rb);
            external8_plus(&a, &b, ra, rb);
        } else {
            external8_last(&a, &b);
        }
    }
    /* Partial rounds, over the denominator z as in permute_scalar, in the form
     *     a' = n (d . a) + (n S + q)     (elements 1..15; element 0 is not used)
     *     S' = n (sum(d . a) + 15 S) + 15 q,   a0' = (d0 + 1) q + n S
     * so that a round's vector work is two products in a row, and S (the sum of elements
     * 1..15) comes from a scalar recurrence instead of waiting for the new vectors.  Here
     * the state is four 4-lane registers instead of two 8-lane ones: the same work, in
     * four independent chains of shorter instructions, which this dependent sequence of
     * rounds runs faster on (measured: benchmarks/hemera.py, one long input). */
    __m256i v[4], diag[4];
    v[0] = _mm512_castsi512_si256(a);
    v[1] = _mm512_extracti64x4_epi64(a, 1);
    v[2] = _mm512_castsi512_si256(b);
    v[3] = _mm512_extracti64x4_epi64(b, 1);
    for (int c = 0; c < 4; c++) diag[c] = _mm256_loadu_si256((const __m256i *)(DIAG + 4 * c));
    uint64_t a0 = (uint64_t)_mm_cvtsi128_si64(_mm512_castsi512_si128(a));
    uint64_t sum = hsum15(v);
    uint64_t z = w, zsq = mul(w, w);
    for (int r = 0; r < PARTIAL; r++) {
        uint64_t n, q;
        round_factors(a0, part[r], z, zsq, &n, &q);
        __m256i d[4];
        for (int c = 0; c < 4; c++) d[c] = mulv(v[c], diag[c]);
        uint64_t dsum = hsum15(d);
        const __m256i nv = _mm256_set1_epi64x((long long)n);
        const __m256i kv = _mm256_set1_epi64x((long long)canon(add(mul(n, sum), q)));
        for (int c = 0; c < 4; c++) v[c] = addv_canonical(mulv(d[c], nv), kv);
        a0 = add(mul(DIAG0_PLUS1, q), mul(n, sum));
        sum = add(mul(n, add(dsum, times15(sum))), times15(q));
        z = mul(z, n);
        zsq = mul(z, z);
    }
    v[0] = _mm256_mask_mov_epi64(v[0], 0x1, _mm256_set1_epi64x((long long)a0));
    a = _mm512_inserti64x4(_mm512_castsi256_si512(v[0]), v[1], 1);
    b = _mm512_inserti64x4(_mm512_castsi256_si512(v[2]), v[3], 1);
    /* The middle full round's constants, then the last full rounds, on fractions over z. */
    const uint64_t *term = full + HALF_FULL * WIDTH;
    scaled_rc8(term, z, 1, &ra, &rb);
    a = add8(a, ra);
    b = add8(b, rb);
    w = z;
    for (int r = 0; r < HALF_FULL; r++) {
        sbox16(&a, &b);
        w = pow7(w);
        if (r + 1 < HALF_FULL) {
            scaled_rc8(term + (r + 1) * WIDTH, w, 1, &ra, &rb);
            external8_plus(&a, &b, ra, rb);
        } else {
            external8_last(&a, &b);
        }
    }
    *pa = a;
    *pb = b;
    *pz = w;
}

/* (a, b) / z as field elements (one inversion). */
AVX512 static inline void divide8(__m512i *a, __m512i *b, uint64_t z) {
    const __m512i zinv = _mm512_set1_epi64((long long)inverse(z));
    *a = mul8(*a, zinv);
    *b = mul8(*b, zinv);
}

AVX512_ONE static void permute_avx512(uint64_t *st, const uint64_t *rc) {
    __m512i a = _mm512_loadu_si512((const void *)st);
    __m512i b = _mm512_loadu_si512((const void *)(st + 8));
    uint64_t z = 1;
    permute_frac_avx512(&a, &b, &z, rc, 0);
    divide8(&a, &b, z);
    _mm512_storeu_si512((void *)st, a);
    _mm512_storeu_si512((void *)(st + 8), b);
}

/* The sponge's absorb loop on AVX-512: blocks 56-byte blocks from data into st (field
 * elements), with the state kept as fractions from block to block (permute_frac_avx512):
 * a block's 8 input elements are added to the rate as m z, and st is divided by z once
 * at the end. */
AVX512_ONE static void absorb_blocks_avx512(uint64_t *st, const uint8_t *data, size_t blocks,
                                        const uint64_t *rc) {
    __m512i a = _mm512_loadu_si512((const void *)st);
    __m512i b = _mm512_loadu_si512((const void *)(st + 8));
    uint64_t z = 1;
    for (size_t k = 0; k < blocks; k++, data += RATE_BYTES) {
        uint64_t m[RATE];
        for (int e = 0; e < RATE; e++) m[e] = load7(data + 7 * e);
        const __m512i mv = _mm512_loadu_si512((const void *)m);
        a = add8(a, mul8(mv, _mm512_set1_epi64((long long)z)));
        permute_frac_avx512(&a, &b, &z, rc, 1);
    }
    divide8(&a, &b, z);
    _mm512_storeu_si512((void *)st, a);
    _mm512_storeu_si512((void *)(st + 8), b);
}

/* The eight-lane permutation (hemera_lanes.h) on one AVX-512 register per element. */
AVX512 static inline __m512i canon8(__m512i v) {
    const __m512i p = _mm512_set1_epi64((long long)HEMERA_P);
    return _mm512_mask_sub_epi64(v, _mm512_cmpge_epu64_mask(v, p), v, p);
}
AVX512 static inline __m512i nonzero_or_one8(__m512i n) {
    return _mm512_mask_mov_epi64(_mm512_set1_epi64(1), _mm512_test_epi64_mask(n, n), n);
}
AVX512 static inline __m512i if_zero8(__m512i n, __m512i a, __m512i b) {
    return _mm512_mask_mov_epi64(a, _mm512_test_epi64_mask(n, n), b);
}
#define LV __m512i
#define LV_ATTR AVX512
#define LV_NAME(x) x##_avx512
#define LV_PER 1
#define LV_LOAD(p) _mm512_loadu_si512((const void *)(p))
#define LV_STORE(p, v) _mm512_storeu_si512((void *)(p), (v))
#define LV_SET1(x) _mm512_set1_epi64((long long)(x))
#define LV_MUL mul8
#define LV_ADD add8
#define LV_PADD _mm512_add_epi64
#define LV_LO32(v) _mm512_and_si512((v), _mm512_set1_epi64((long long)HEMERA_EPS))
#define LV_HI32(v) _mm512_srli_epi64((v), 32)
#define LV_JOIN join_limbs
#define LV_CANON canon8
#define LV_NONZERO_OR_ONE nonzero_or_one8
#define LV_IF_ZERO if_zero8
#include "hemera_lanes.h"

#define AVX2 __attribute__((target("avx2")))

/*
 * The permutation on AVX2 (most x86-64 CPUs without AVX-512): one 4-lane register per
 * 4-element chunk.  Same arithmetic as the AVX-512 version; AVX2 has no unsigned
 * compare, so a < b is computed as a signed compare with the top bits flipped.
 */

AVX2 static inline __m256i lt4(__m256i a, __m256i b) {  /* all ones where a < b */
    const __m256i top = _mm256_set1_epi64x((long long)0x8000000000000000ULL);
    return _mm256_cmpgt_epi64(_mm256_xor_si256(b, top), _mm256_xor_si256(a, top));
}

/* On AVX2 the low 64 bits of a product come from the 32x32 products too (there is no
 * 64-bit multiply), and a lane mask is a vector of all-ones or zero lanes. */
#define LO4(a, b, ll, mid2, eps) \
    _mm256_or_si256(_mm256_slli_epi64(mid2, 32), _mm256_and_si256(ll, eps))
#define LT_AND4(m, u, w) _mm256_and_si256(m, lt4(u, w))
#define ADD_EPS_IF4(x, m, eps) _mm256_add_epi64(x, _mm256_and_si256(m, eps))
#define SUB_EPS_IF4(x, m, eps) _mm256_sub_epi64(x, _mm256_and_si256(m, eps))
DEFINE_FIELD_OPS(4, AVX2, _mm256, __m256i, __m256i, _mm256_set1_epi64x, _mm256_and_si256, LO4,
                 lt4, LT_AND4, ADD_EPS_IF4, SUB_EPS_IF4)

/* M_E's linear part on one limb of every element, v[c] = chunk c (see external_limbs). */
AVX2 static inline void external_limbs4(__m256i *v) {
    __m256i s = _mm256_add_epi64(_mm256_add_epi64(v[0], v[1]), _mm256_add_epi64(v[2], v[3]));
    for (int c = 0; c < 4; c++) {
        __m256i y = _mm256_add_epi64(v[c], s);
        __m256i r1 = _mm256_permute4x64_epi64(y, 0x39);                     /* y_(i+1) */
        __m256i u = _mm256_add_epi64(y, r1);
        __m256i t = _mm256_add_epi64(u, _mm256_permute4x64_epi64(u, 0x4E)); /* chunk sum */
        v[c] = _mm256_add_epi64(_mm256_add_epi64(t, u), r1);
    }
}

AVX2 static inline __m256i join_limbs4(__m256i lo, __m256i hi) {  /* see join_limbs */
    const __m256i eps = _mm256_set1_epi64x((long long)HEMERA_EPS);
    __m256i h1 = _mm256_srli_epi64(hi, 32);
    __m256i x = _mm256_add_epi64(_mm256_slli_epi64(hi, 32), lo);
    __m256i c1 = lt4(x, lo);
    __m256i y = _mm256_sub_epi64(_mm256_slli_epi64(h1, 32), h1);
    __m256i r = _mm256_add_epi64(x, y);
    __m256i c2 = lt4(r, x);
    return _mm256_add_epi64(r, _mm256_and_si256(_mm256_or_si256(c1, c2), eps));
}

AVX2 static inline void external4(__m256i *v, const uint64_t *rc) {
    const __m256i lo32 = _mm256_set1_epi64x((long long)HEMERA_EPS);
    __m256i lo[4], hi[4];
    for (int c = 0; c < 4; c++) {
        lo[c] = _mm256_and_si256(v[c], lo32);
        hi[c] = _mm256_srli_epi64(v[c], 32);
    }
    external_limbs4(lo);
    external_limbs4(hi);
    for (int c = 0; c < 4; c++) {
        if (rc) {
            __m256i k = _mm256_loadu_si256((const __m256i *)(rc + 4 * c));
            lo[c] = _mm256_add_epi64(lo[c], _mm256_and_si256(k, lo32));
            hi[c] = _mm256_add_epi64(hi[c], _mm256_srli_epi64(k, 32));
        }
        v[c] = join_limbs4(lo[c], hi[c]);
    }
}

AVX2 static inline uint64_t hsum4x4(const __m256i *v) {  /* exact, like hsum15 */
    const __m256i lo32 = _mm256_set1_epi64x((long long)HEMERA_EPS);
    __m256i lo = _mm256_setzero_si256(), hi = _mm256_setzero_si256();
    for (int c = 0; c < 4; c++) {
        lo = _mm256_add_epi64(lo, _mm256_and_si256(v[c], lo32));
        hi = _mm256_add_epi64(hi, _mm256_srli_epi64(v[c], 32));
    }
    __m128i l2 = _mm_add_epi64(_mm256_castsi256_si128(lo), _mm256_extracti128_si256(lo, 1));
    __m128i h2 = _mm_add_epi64(_mm256_castsi256_si128(hi), _mm256_extracti128_si256(hi, 1));
    uint64_t lo_sum = (uint64_t)_mm_cvtsi128_si64(l2) + (uint64_t)_mm_extract_epi64(l2, 1);
    uint64_t hi_sum = (uint64_t)_mm_cvtsi128_si64(h2) + (uint64_t)_mm_extract_epi64(h2, 1);
    return join_sums(lo_sum, hi_sum);
}

AVX2 static void permute_avx2(uint64_t *st, const uint64_t *rc) {
    const uint64_t *full = rc, *part = rc + 2 * HALF_FULL * WIDTH;
    __m256i v[4], diag[4];
    for (int c = 0; c < 4; c++) v[c] = _mm256_loadu_si256((const __m256i *)(st + 4 * c));
    external4(v, full);
    for (int r = 0; r < HALF_FULL; r++) {
        for (int c = 0; c < 4; c++) v[c] = pow7x4(v[c]);
        external4(v, r + 1 < HALF_FULL ? full + (r + 1) * WIDTH : NULL);
    }
    /* Partial rounds: element 0 in a scalar, lane 0 of v[0] kept at zero (as AVX-512). */
    for (int c = 0; c < 4; c++) diag[c] = _mm256_loadu_si256((const __m256i *)(DIAG + 4 * c));
    const __m256i zero = _mm256_setzero_si256();
    uint64_t s0 = (uint64_t)_mm_cvtsi128_si64(_mm256_castsi256_si128(v[0]));
    v[0] = _mm256_blend_epi32(v[0], zero, 0x03);
    /* Fractions over z, in the form of permute_avx512 (lane 0 of v[0] stays zero). */
    uint64_t z = 1, zsq = 1, sum = hsum4x4(v);
    for (int r = 0; r < PARTIAL; r++) {
        uint64_t n, q;
        round_factors(s0, part[r], z, zsq, &n, &q);
        __m256i d[4];
        for (int c = 0; c < 4; c++) d[c] = mul4(v[c], diag[c]);
        uint64_t dsum = hsum4x4(d);
        const __m256i nv = _mm256_set1_epi64x((long long)n);
        const __m256i kv = _mm256_set1_epi64x((long long)add(mul(n, sum), q));
        for (int c = 0; c < 4; c++) v[c] = add4(mul4(d[c], nv), kv);
        v[0] = _mm256_blend_epi32(v[0], zero, 0x03);
        s0 = add(mul(DIAG0_PLUS1, q), mul(n, sum));
        sum = add(mul(n, add(dsum, times15(sum))), times15(q));
        z = mul(z, n);
        zsq = mul(z, z);
    }
    v[0] = _mm256_blend_epi32(v[0], _mm256_set1_epi64x((long long)s0), 0x03);
    const __m256i zinv = _mm256_set1_epi64x((long long)inverse(z));
    const uint64_t *term = full + HALF_FULL * WIDTH;
    for (int c = 0; c < 4; c++)
        v[c] = add4(mul4(v[c], zinv), _mm256_loadu_si256((const __m256i *)(term + 4 * c)));
    for (int r = 0; r < HALF_FULL; r++) {
        for (int c = 0; c < 4; c++) v[c] = pow7x4(v[c]);
        external4(v, r + 1 < HALF_FULL ? term + (r + 1) * WIDTH : NULL);
    }
    for (int c = 0; c < 4; c++) _mm256_storeu_si256((__m256i *)(st + 4 * c), v[c]);
}

/* The eight-lane permutation (hemera_lanes.h) on two AVX2 registers per element. */
AVX2 static inline __m256i canon4(__m256i v) {
    const __m256i p = _mm256_set1_epi64x((long long)HEMERA_P);
    return _mm256_sub_epi64(v, _mm256_andnot_si256(lt4(v, p), p));
}
AVX2 static inline __m256i nonzero_or_one4(__m256i n) {
    __m256i is_zero = _mm256_cmpeq_epi64(n, _mm256_setzero_si256());
    return _mm256_or_si256(n, _mm256_and_si256(is_zero, _mm256_set1_epi64x(1)));
}
AVX2 static inline __m256i if_zero4(__m256i n, __m256i a, __m256i b) {
    return _mm256_blendv_epi8(b, a, _mm256_cmpeq_epi64(n, _mm256_setzero_si256()));
}
#define LV __m256i
#define LV_ATTR AVX2
#define LV_NAME(x) x##_avx2
#define LV_PER 2
#define LV_LOAD(p) _mm256_loadu_si256((const __m256i *)(p))
#define LV_STORE(p, v) _mm256_storeu_si256((__m256i *)(p), (v))
#define LV_SET1(x) _mm256_set1_epi64x((long long)(x))
#define LV_MUL mul4
#define LV_ADD add4
#define LV_PADD _mm256_add_epi64
#define LV_LO32(v) _mm256_and_si256((v), _mm256_set1_epi64x((long long)HEMERA_EPS))
#define LV_HI32(v) _mm256_srli_epi64((v), 32)
#define LV_JOIN join_limbs4
#define LV_CANON canon4
#define LV_NONZERO_OR_ONE nonzero_or_one4
#define LV_IF_ZERO if_zero4
#include "hemera_lanes.h"
#endif

