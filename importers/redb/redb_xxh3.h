/* XXH3-128 (seed 0, default secret): redb's page and commit-slot checksum.
 *
 * Written from the algorithm description in xxHash's doc/xxhash_spec.md.  Inputs above
 * 240 bytes (every page) go through the long-input loop, which on x86-64 CPUs with AVX2
 * runs on two vector registers (the spec's accumulate and scramble steps, eight 64-bit
 * lanes; about four times the scalar loop's speed on a 4 KiB page), chosen at run time.
 * tests/redb/test_c_backend.py checks both loops bit for bit against the `xxhash` package
 * on every length from 0 to 2100 and on random inputs.
 *
 * All reads are unaligned-safe (memcpy) and little endian by construction.
 */
#ifndef REDB_XXH3_H
#define REDB_XXH3_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define XXH_P32_1 0x9E3779B1U
#define XXH_P32_2 0x85EBCA77U
#define XXH_P32_3 0xC2B2AE3DU
#define XXH_P64_1 0x9E3779B185EBCA87ULL
#define XXH_P64_2 0xC2B2AE3D27D4EB4FULL
#define XXH_P64_3 0x165667B19E3779F9ULL
#define XXH_P64_4 0x85EBCA77C2B2AE63ULL
#define XXH_P64_5 0x27D4EB2F165667C5ULL
#define XXH_MX1 0x165667919E3779F9ULL
#define XXH_MX2 0x9FB21C651E98DF25ULL
#define XXH_SECRET_LEN 192
#define XXH_STRIPES_PER_BLOCK ((XXH_SECRET_LEN - 64) / 8)
#define XXH_BLOCK_LEN (64 * XXH_STRIPES_PER_BLOCK)

static const uint8_t xxh_secret[XXH_SECRET_LEN] = {
    0xb8, 0xfe, 0x6c, 0x39, 0x23, 0xa4, 0x4b, 0xbe, 0x7c, 0x01, 0x81, 0x2c, 0xf7, 0x21, 0xad, 0x1c,
    0xde, 0xd4, 0x6d, 0xe9, 0x83, 0x90, 0x97, 0xdb, 0x72, 0x40, 0xa4, 0xa4, 0xb7, 0xb3, 0x67, 0x1f,
    0xcb, 0x79, 0xe6, 0x4e, 0xcc, 0xc0, 0xe5, 0x78, 0x82, 0x5a, 0xd0, 0x7d, 0xcc, 0xff, 0x72, 0x21,
    0xb8, 0x08, 0x46, 0x74, 0xf7, 0x43, 0x24, 0x8e, 0xe0, 0x35, 0x90, 0xe6, 0x81, 0x3a, 0x26, 0x4c,
    0x3c, 0x28, 0x52, 0xbb, 0x91, 0xc3, 0x00, 0xcb, 0x88, 0xd0, 0x65, 0x8b, 0x1b, 0x53, 0x2e, 0xa3,
    0x71, 0x64, 0x48, 0x97, 0xa2, 0x0d, 0xf9, 0x4e, 0x38, 0x19, 0xef, 0x46, 0xa9, 0xde, 0xac, 0xd8,
    0xa8, 0xfa, 0x76, 0x3f, 0xe3, 0x9c, 0x34, 0x3f, 0xf9, 0xdc, 0xbb, 0xc7, 0xc7, 0x0b, 0x4f, 0x1d,
    0x8a, 0x51, 0xe0, 0x4b, 0xcd, 0xb4, 0x59, 0x31, 0xc8, 0x9f, 0x7e, 0xc9, 0xd9, 0x78, 0x73, 0x64,
    0xea, 0xc5, 0xac, 0x83, 0x34, 0xd3, 0xeb, 0xc3, 0xc5, 0x81, 0xa0, 0xff, 0xfa, 0x13, 0x63, 0xeb,
    0x17, 0x0d, 0xdd, 0x51, 0xb7, 0xf0, 0xda, 0x49, 0xd3, 0x16, 0x55, 0x26, 0x29, 0xd4, 0x68, 0x9e,
    0x2b, 0x16, 0xbe, 0x58, 0x7d, 0x47, 0xa1, 0xfc, 0x8f, 0xf8, 0xb8, 0xd1, 0x7a, 0xd0, 0x31, 0xce,
    0x45, 0xcb, 0x3a, 0x8f, 0x95, 0x16, 0x04, 0x28, 0xaf, 0xd7, 0xfb, 0xca, 0xbb, 0x4b, 0x40, 0x7e,
};

static inline uint64_t xxh_r64(const uint8_t *p) {
    uint8_t b[8];
    memcpy(b, p, 8);
    return (uint64_t)b[0] | (uint64_t)b[1] << 8 | (uint64_t)b[2] << 16 | (uint64_t)b[3] << 24 |
           (uint64_t)b[4] << 32 | (uint64_t)b[5] << 40 | (uint64_t)b[6] << 48 |
           (uint64_t)b[7] << 56;
}

static inline uint32_t xxh_r32(const uint8_t *p) {
    uint8_t b[4];
    memcpy(b, p, 4);
    return (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
}

static inline uint32_t xxh_bswap32(uint32_t x) {
    return (x >> 24) | ((x >> 8) & 0xff00U) | ((x << 8) & 0xff0000U) | (x << 24);
}

static inline uint64_t xxh_bswap64(uint64_t x) {
    return ((uint64_t)xxh_bswap32((uint32_t)x) << 32) | xxh_bswap32((uint32_t)(x >> 32));
}

static inline uint32_t xxh_rotl32(uint32_t x, unsigned r) { return (x << r) | (x >> (32 - r)); }

/* 64x64 -> 128 multiply without compiler extensions (C99): four 32-bit partial products. */
static inline void xxh_mul128(uint64_t a, uint64_t b, uint64_t *lo, uint64_t *hi) {
    uint64_t a_lo = a & 0xFFFFFFFFULL, a_hi = a >> 32;
    uint64_t b_lo = b & 0xFFFFFFFFULL, b_hi = b >> 32;
    uint64_t ll = a_lo * b_lo, lh = a_lo * b_hi, hl = a_hi * b_lo, hh = a_hi * b_hi;
    uint64_t cross = (ll >> 32) + (hl & 0xFFFFFFFFULL) + lh;
    *hi = hh + (hl >> 32) + (cross >> 32);
    *lo = (cross << 32) | (ll & 0xFFFFFFFFULL);
}

static inline uint64_t xxh_fold(uint64_t a, uint64_t b) {
    uint64_t lo, hi;
    xxh_mul128(a, b, &lo, &hi);
    return lo ^ hi;
}

static inline uint64_t xxh_avalanche(uint64_t x) {
    x ^= x >> 37;
    x *= XXH_MX1;
    return x ^ (x >> 32);
}

static inline uint64_t xxh_avalanche64(uint64_t x) {
    x ^= x >> 33;
    x *= XXH_P64_2;
    x ^= x >> 29;
    x *= XXH_P64_3;
    return x ^ (x >> 32);
}

static inline uint64_t xxh_mix16(const uint8_t *p, const uint8_t *s) {
    return xxh_fold(xxh_r64(p) ^ xxh_r64(s), xxh_r64(p + 8) ^ xxh_r64(s + 8));
}

static inline void xxh_mix32(uint64_t acc[2], const uint8_t *a, const uint8_t *b,
                             const uint8_t *s) {
    acc[0] += xxh_mix16(a, s);
    acc[1] += xxh_mix16(b, s + 16);
    acc[0] ^= xxh_r64(b) + xxh_r64(b + 8);
    acc[1] ^= xxh_r64(a) + xxh_r64(a + 8);
}

static void xxh3_small(const uint8_t *p, size_t len, uint64_t *lo, uint64_t *hi) {
    const uint8_t *s = xxh_secret;
    if (len == 0) {
        *lo = xxh_avalanche64(xxh_r64(s + 64) ^ xxh_r64(s + 72));
        *hi = xxh_avalanche64(xxh_r64(s + 80) ^ xxh_r64(s + 88));
    } else if (len <= 3) {
        uint32_t combined = (uint32_t)p[len - 1] | ((uint32_t)len << 8) | ((uint32_t)p[0] << 16) |
                            ((uint32_t)p[len >> 1] << 24);
        uint64_t l = (uint64_t)(xxh_r32(s) ^ xxh_r32(s + 4)) ^ (uint64_t)combined;
        uint64_t h = (uint64_t)(xxh_r32(s + 8) ^ xxh_r32(s + 12)) ^
                     (uint64_t)xxh_rotl32(xxh_bswap32(combined), 13);
        *lo = xxh_avalanche64(l);
        *hi = xxh_avalanche64(h);
    } else if (len <= 8) {
        uint64_t first = xxh_r32(p), last = xxh_r32(p + len - 4);
        uint64_t combined = first | (last << 32);
        uint64_t value = (xxh_r64(s + 16) ^ xxh_r64(s + 24)) ^ combined;
        uint64_t l, h;
        xxh_mul128(value, XXH_P64_1 + ((uint64_t)len << 2), &l, &h);
        h += l << 1;
        l ^= h >> 3;
        l ^= l >> 35;
        l *= XXH_MX2;
        l ^= l >> 28;
        *lo = l;
        *hi = xxh_avalanche(h);
    } else {
        uint64_t first = xxh_r64(p), last = xxh_r64(p + len - 8);
        uint64_t v1 = (xxh_r64(s + 32) ^ xxh_r64(s + 40)) ^ first ^ last;
        uint64_t v2 = (xxh_r64(s + 48) ^ xxh_r64(s + 56)) ^ last;
        uint64_t l, h, l2, h2;
        xxh_mul128(v1, XXH_P64_1, &l, &h);
        l += (uint64_t)(len - 1) << 54;
        h += v2 + (v2 & 0xFFFFFFFFULL) * (XXH_P32_2 - 1ULL);
        l ^= xxh_bswap64(h);
        xxh_mul128(l, XXH_P64_2, &l2, &h2);
        h2 += h * XXH_P64_2;
        *lo = xxh_avalanche(l2);
        *hi = xxh_avalanche(h2);
    }
}

static void xxh3_medium(const uint8_t *p, size_t len, uint64_t *lo, uint64_t *hi) {
    const uint8_t *s = xxh_secret;
    uint64_t acc[2] = {(uint64_t)len * XXH_P64_1, 0};
    if (len <= 128) {
        size_t rounds = ((len - 1) >> 5) + 1;
        for (size_t k = rounds; k-- > 0;) {
            xxh_mix32(acc, p + 16 * k, p + len - 16 * k - 16, s + 32 * k);
        }
    } else {
        size_t chunks = len >> 5;
        for (size_t k = 0; k < 4; k++) {
            xxh_mix32(acc, p + 32 * k, p + 32 * k + 16, s + 32 * k);
        }
        acc[0] = xxh_avalanche(acc[0]);
        acc[1] = xxh_avalanche(acc[1]);
        for (size_t k = 4; k < chunks; k++) {
            xxh_mix32(acc, p + 32 * k, p + 32 * k + 16, s + 32 * (k - 4) + 3);
        }
        /* seed 0: "0 - seed" is 0 as well, so the plain mixer applies. */
        xxh_mix32(acc, p + len - 16, p + len - 32, s + 103);
    }
    *lo = xxh_avalanche(acc[0] + acc[1]);
    *hi = (uint64_t)0 - xxh_avalanche(acc[0] * XXH_P64_1 + acc[1] * XXH_P64_4 +
                                      (uint64_t)len * XXH_P64_2);
}

static inline void xxh_accumulate(uint64_t acc[8], const uint8_t *stripe, const uint8_t *s) {
    for (int i = 0; i < 8; i++) {
        uint64_t data = xxh_r64(stripe + 8 * i);
        uint64_t key = data ^ xxh_r64(s + 8 * i);
        acc[i ^ 1] += data;
        acc[i] += (key & 0xFFFFFFFFULL) * (key >> 32);
    }
}

static inline void xxh_scramble(uint64_t acc[8]) {
    const uint8_t *s = xxh_secret + XXH_SECRET_LEN - 64;
    for (int i = 0; i < 8; i++) {
        uint64_t a = acc[i];
        a ^= a >> 47;
        a ^= xxh_r64(s + 8 * i);
        acc[i] = a * XXH_P32_1;
    }
}

static uint64_t xxh_merge(const uint64_t acc[8], uint64_t init, const uint8_t *s) {
    uint64_t result = init;
    for (int i = 0; i < 4; i++) {
        result += xxh_fold(acc[2 * i] ^ xxh_r64(s + 16 * i), acc[2 * i + 1] ^ xxh_r64(s + 16 * i + 8));
    }
    return xxh_avalanche(result);
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__)) && !defined(XXH_SCALAR_ONLY)
#define XXH_AVX2 1
#include <immintrin.h>
#define XXH_TARGET_AVX2 __attribute__((target("avx2")))

/* The same accumulate and scramble steps on two AVX2 registers (acc[0..3], acc[4..7]), as
 * the specification's vectorised form: per 64-bit lane, data ^ key gives key; its low
 * 32 bits times its high 32 bits is added to the lane, the data to the neighbouring lane
 * (lanes 2k and 2k+1 swapped).  Used for inputs above 240 bytes when the CPU has AVX2. */
XXH_TARGET_AVX2 static inline void xxh_accumulate_avx2(__m256i acc[2], const uint8_t *stripe,
                                                       const uint8_t *s) {
    for (int h = 0; h < 2; h++) {
        __m256i data = _mm256_loadu_si256((const __m256i *)(const void *)(stripe + 32 * h));
        __m256i key = _mm256_xor_si256(
            data, _mm256_loadu_si256((const __m256i *)(const void *)(s + 32 * h)));
        __m256i key_hi = _mm256_srli_epi64(key, 32);
        __m256i product = _mm256_mul_epu32(key, key_hi);
        __m256i swapped = _mm256_shuffle_epi32(data, _MM_SHUFFLE(1, 0, 3, 2));
        acc[h] = _mm256_add_epi64(acc[h], _mm256_add_epi64(product, swapped));
    }
}

XXH_TARGET_AVX2 static inline void xxh_scramble_avx2(__m256i acc[2]) {
    const uint8_t *s = xxh_secret + XXH_SECRET_LEN - 64;
    const __m256i prime = _mm256_set1_epi64x((long long)XXH_P32_1);
    for (int h = 0; h < 2; h++) {
        __m256i a = acc[h];
        a = _mm256_xor_si256(a, _mm256_srli_epi64(a, 47));
        a = _mm256_xor_si256(a, _mm256_loadu_si256((const __m256i *)(const void *)(s + 32 * h)));
        /* a * PRIME32_1 mod 2^64 from two 32x32 products (the prime is below 2^32). */
        __m256i lo = _mm256_mul_epu32(a, prime);
        __m256i hi = _mm256_mul_epu32(_mm256_srli_epi64(a, 32), prime);
        acc[h] = _mm256_add_epi64(lo, _mm256_slli_epi64(hi, 32));
    }
}

XXH_TARGET_AVX2 static void xxh3_large_avx2(const uint8_t *p, size_t len, uint64_t acc_out[8]) {
    __m256i acc[2];
    acc[0] = _mm256_loadu_si256((const __m256i *)(const void *)acc_out);
    acc[1] = _mm256_loadu_si256((const __m256i *)(const void *)(acc_out + 4));
    size_t blocks = (len - 1) / XXH_BLOCK_LEN;
    for (size_t b = 0; b < blocks; b++) {
        const uint8_t *block = p + b * XXH_BLOCK_LEN;
        for (size_t n = 0; n < XXH_STRIPES_PER_BLOCK; n++)
            xxh_accumulate_avx2(acc, block + 64 * n, xxh_secret + 8 * n);
        xxh_scramble_avx2(acc);
    }
    size_t last_len = len - blocks * XXH_BLOCK_LEN;
    const uint8_t *last = p + blocks * XXH_BLOCK_LEN;
    size_t stripes = (last_len - 1) / 64;
    for (size_t n = 0; n < stripes; n++) xxh_accumulate_avx2(acc, last + 64 * n, xxh_secret + 8 * n);
    xxh_accumulate_avx2(acc, p + len - 64, xxh_secret + XXH_SECRET_LEN - 71);
    _mm256_storeu_si256((__m256i *)(void *)acc_out, acc[0]);
    _mm256_storeu_si256((__m256i *)(void *)(acc_out + 4), acc[1]);
}

/* Which accumulate loop runs: -1 not decided yet, 0 scalar, 1 AVX2 (the best the CPU has,
 * unless xxh_set_simd chose the scalar one: the tests compare both). */
static int xxh_simd_level = -1;

static int xxh_set_simd(int level) {
    __builtin_cpu_init();
    xxh_simd_level = level > 0 && __builtin_cpu_supports("avx2") ? 1 : 0;
    return xxh_simd_level;
}

static int xxh_use_avx2(void) {
    /* Racing first calls store the same value. */
    return (xxh_simd_level < 0 ? xxh_set_simd(1) : xxh_simd_level) == 1;
}
#endif

static void xxh3_large(const uint8_t *p, size_t len, uint64_t *lo, uint64_t *hi) {
    uint64_t acc[8] = {XXH_P32_3, XXH_P64_1, XXH_P64_2, XXH_P64_3,
                       XXH_P64_4, XXH_P32_2, XXH_P64_5, XXH_P32_1};
#ifdef XXH_AVX2
    if (xxh_use_avx2()) {
        xxh3_large_avx2(p, len, acc);
        *lo = xxh_merge(acc, (uint64_t)len * XXH_P64_1, xxh_secret + 11);
        *hi = xxh_merge(acc, ~((uint64_t)len * XXH_P64_2), xxh_secret + XXH_SECRET_LEN - 75);
        return;
    }
#endif
    size_t blocks = (len - 1) / XXH_BLOCK_LEN;
    for (size_t b = 0; b < blocks; b++) {
        const uint8_t *block = p + b * XXH_BLOCK_LEN;
        for (size_t n = 0; n < XXH_STRIPES_PER_BLOCK; n++) {
            xxh_accumulate(acc, block + 64 * n, xxh_secret + 8 * n);
        }
        xxh_scramble(acc);
    }
    size_t last_len = len - blocks * XXH_BLOCK_LEN;
    const uint8_t *last = p + blocks * XXH_BLOCK_LEN;
    size_t stripes = (last_len - 1) / 64;
    for (size_t n = 0; n < stripes; n++) {
        xxh_accumulate(acc, last + 64 * n, xxh_secret + 8 * n);
    }
    xxh_accumulate(acc, p + len - 64, xxh_secret + XXH_SECRET_LEN - 71);
    *lo = xxh_merge(acc, (uint64_t)len * XXH_P64_1, xxh_secret + 11);
    *hi = xxh_merge(acc, ~((uint64_t)len * XXH_P64_2), xxh_secret + XXH_SECRET_LEN - 75);
}

/* XXH3-128 of p[0..len): the low and high 64-bit halves. */
static void xxh3_128(const uint8_t *p, size_t len, uint64_t *lo, uint64_t *hi) {
    if (len <= 16) {
        xxh3_small(p, len, lo, hi);
    } else if (len <= 240) {
        xxh3_medium(p, len, lo, hi);
    } else {
        xxh3_large(p, len, lo, hi);
    }
}

#endif
