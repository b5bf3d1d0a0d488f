/*
 * The hemera permutation on eight independent states at once ("lanes"), included by
 * hemera_simd.h once per instruction set (not a standalone header).
 *
 * Why: one state's partial rounds are a chain of dependent steps through element 0, which
 * leaves the vector units waiting; eight states side by side, one per lane, turn that into
 * independent work, and their S-box inputs share inversions.  hash_many, hash_leaf_many
 * and hash_node_many run their inputs through here.
 *
 * Layout: element e of lane l is S[e][l] (lanes_state), so each element is LV_PER
 * vectors.  The arithmetic is permute_scalar's, lane by lane, except in the partial
 * rounds: there two rounds' S-box outputs of all eight lanes come from one inversion
 * (inverse_many over sixteen values, Montgomery's trick, on the scalar units; see the
 * comment in permute_lanes), while the vector units compute the d[i] a[i] products and
 * their sum, which do not depend on them.  Results equal the single-state paths bit for
 * bit; the tests compare them.
 *
 * The includer defines: LV (vector type), LV_ATTR (target attribute), LV_NAME(x) (name
 * suffix), LV_PER (vectors per element: 8 / lanes per vector), and the helpers
 * LV_LOAD, LV_STORE, LV_SET1, LV_MUL, LV_ADD (field), LV_PADD (plain 64-bit add), LV_LO32,
 * LV_HI32 (32-bit halves), LV_JOIN (join_limbs), LV_CANON, LV_NONZERO_OR_ONE(n) (n, or 1
 * where n == 0) and LV_IF_ZERO(n, a, b) (a where n == 0, else b); this file undefines them
 * at its end, ready for the next instruction set.
 */

/* x <- M_E x (+ rc, the next round's constants, when not NULL), on 32-bit limbs so that
 * the sums need no reduction (see external_limbs): S = the sum of the four chunks, then
 * per chunk M4 (x_c + S).  Each output limb is at most 35 input limbs (+ one constant
 * limb): below 2^38.  Chunk by chunk, to keep few values live. */
LV_ATTR static inline void LV_NAME(external_lanes)(LV x[WIDTH][LV_PER], const uint64_t *rc) {
    for (int h = 0; h < LV_PER; h++) {
        LV slo[4], shi[4];
        for (int k = 0; k < 4; k++) {
            slo[k] = LV_PADD(LV_PADD(LV_LO32(x[k][h]), LV_LO32(x[k + 4][h])),
                             LV_PADD(LV_LO32(x[k + 8][h]), LV_LO32(x[k + 12][h])));
            shi[k] = LV_PADD(LV_PADD(LV_HI32(x[k][h]), LV_HI32(x[k + 4][h])),
                             LV_PADD(LV_HI32(x[k + 8][h]), LV_HI32(x[k + 12][h])));
        }
        for (int c = 0; c < WIDTH; c += 4) {
            LV lo[4], hi[4];
            for (int j = 0; j < 4; j++) {
                lo[j] = LV_PADD(LV_LO32(x[c + j][h]), slo[j]);
                hi[j] = LV_PADD(LV_HI32(x[c + j][h]), shi[j]);
            }
            LV tlo = LV_PADD(LV_PADD(lo[0], lo[1]), LV_PADD(lo[2], lo[3]));
            LV thi = LV_PADD(LV_PADD(hi[0], hi[1]), LV_PADD(hi[2], hi[3]));
            for (int j = 0; j < 4; j++) {
                int n = (j + 1) & 3;
                LV olo = LV_PADD(LV_PADD(tlo, lo[j]), LV_PADD(lo[n], lo[n]));
                LV ohi = LV_PADD(LV_PADD(thi, hi[j]), LV_PADD(hi[n], hi[n]));
                if (rc) {
                    olo = LV_PADD(olo, LV_SET1(rc[c + j] & HEMERA_EPS));
                    ohi = LV_PADD(ohi, LV_SET1(rc[c + j] >> 32));
                }
                x[c + j][h] = LV_JOIN(olo, ohi);
            }
        }
    }
}

LV_ATTR static inline LV LV_NAME(pow7_lanes)(LV x) {
    LV x2 = LV_MUL(x, x);
    return LV_MUL(LV_MUL(x2, x), LV_MUL(x2, x2));
}

LV_ATTR static inline void LV_NAME(full_round_lanes)(LV x[WIDTH][LV_PER], const uint64_t *rc) {
    for (int e = 0; e < WIDTH; e++)
        for (int h = 0; h < LV_PER; h++) x[e][h] = LV_NAME(pow7_lanes)(x[e][h]);
    LV_NAME(external_lanes)(x, rc);
}

/* Sum of elements 1..15 of each lane mod p, exactly (32-bit halves summed apart). */
LV_ATTR static inline LV LV_NAME(sum_tail_lanes)(LV x[WIDTH][LV_PER], int h) {
    LV lo = LV_LO32(x[1][h]), hi = LV_HI32(x[1][h]);
    for (int e = 2; e < WIDTH; e++) {
        lo = LV_PADD(lo, LV_LO32(x[e][h]));
        hi = LV_PADD(hi, LV_HI32(x[e][h]));
    }
    return LV_JOIN(lo, hi);  /* both below 15 * 2^32 < 2^39 */
}

LV_ATTR SCHED_LANES static void LV_NAME(permute_lanes)(lanes_state *ls, const uint64_t *rc) {
    const uint64_t *full = rc, *part = rc + 2 * HALF_FULL * WIDTH;
    LV x[WIDTH][LV_PER];
    for (int e = 0; e < WIDTH; e++)
        for (int h = 0; h < LV_PER; h++) x[e][h] = LV_LOAD(&ls->e[e][h * (LANES / LV_PER)]);
    LV_NAME(external_lanes)(x, full);
    for (int r = 0; r < HALF_FULL; r++)
        LV_NAME(full_round_lanes)(x, r + 1 < HALF_FULL ? full + (r + 1) * WIDTH : NULL);
    /* Partial rounds, two at a time with one inversion for both (inverse_many over
     * sixteen values): with S the sum of elements 1..15, round r's S-box output y sets
     * element 0 to (d[0] + 1) y + S, so round r+1's S-box input is (d[0] + 1) y + w with
     * w = S + c[r+1]: for x = round r's input that is u / x with u = (d[0] + 1) + w x,
     * hence y' = x / u.  For x = 0 (y = 0) it is w, hence y' = 1 / w.  Inverting x and
     * u (or w) together gives both rounds' outputs; the vector units meanwhile compute
     * round r's d[i] a[i] and their sum, which do not depend on them. */
    const LV d0 = LV_SET1(DIAG[0]), d0p1 = LV_SET1(DIAG0_PLUS1), fifteen = LV_SET1(15);
    LV sum[LV_PER];
    for (int h = 0; h < LV_PER; h++) sum[h] = LV_NAME(sum_tail_lanes)(x, h);
    for (int r = 0; r < PARTIAL; r += 2) {
        const LV c = LV_SET1(part[r]), c_next = LV_SET1(part[r + 1]);
        uint64_t xs[2 * LANES], ys[2 * LANES];
        LV in[LV_PER];
        for (int h = 0; h < LV_PER; h++) {
            LV w = LV_CANON(LV_ADD(sum[h], c_next));
            in[h] = LV_CANON(LV_ADD(x[0][h], c));
            LV u = LV_CANON(LV_ADD(d0p1, LV_MUL(w, in[h])));
            LV_STORE(&xs[h * (LANES / LV_PER)], in[h]);
            LV_STORE(&xs[LANES + h * (LANES / LV_PER)], LV_IF_ZERO(in[h], w, u));
        }
        LV dsum[LV_PER];
        for (int h = 0; h < LV_PER; h++) {
            for (int e = 1; e < WIDTH; e++) x[e][h] = LV_MUL(x[e][h], LV_SET1(DIAG[e]));
            dsum[h] = LV_NAME(sum_tail_lanes)(x, h);
        }
        inverse_many(xs, ys, 2 * LANES);
        for (int h = 0; h < LV_PER; h++) {
            LV y = LV_LOAD(&ys[h * (LANES / LV_PER)]);
            LV y_next = LV_MUL(LV_NONZERO_OR_ONE(in[h]), LV_LOAD(&ys[LANES + h * (LANES / LV_PER)]));
            /* Round r. */
            LV total = LV_ADD(y, sum[h]);
            x[0][h] = LV_ADD(LV_MUL(d0, y), total);
            for (int e = 1; e < WIDTH; e++) x[e][h] = LV_ADD(x[e][h], total);
            sum[h] = LV_ADD(dsum[h], LV_MUL(fifteen, total));
            /* Round r + 1 (its S-box input is x[0][h] + c_next, whose inverse is y_next). */
            for (int e = 1; e < WIDTH; e++) x[e][h] = LV_MUL(x[e][h], LV_SET1(DIAG[e]));
            LV dsum_next = LV_NAME(sum_tail_lanes)(x, h);
            total = LV_ADD(y_next, sum[h]);
            x[0][h] = LV_ADD(LV_MUL(d0, y_next), total);
            for (int e = 1; e < WIDTH; e++) x[e][h] = LV_ADD(x[e][h], total);
            sum[h] = LV_ADD(dsum_next, LV_MUL(fifteen, total));
        }
    }
    const uint64_t *term = full + HALF_FULL * WIDTH;
    for (int e = 0; e < WIDTH; e++)
        for (int h = 0; h < LV_PER; h++) x[e][h] = LV_ADD(x[e][h], LV_SET1(term[e]));
    for (int r = 0; r < HALF_FULL; r++)
        LV_NAME(full_round_lanes)(x, r + 1 < HALF_FULL ? term + (r + 1) * WIDTH : NULL);
    for (int e = 0; e < WIDTH; e++)
        for (int h = 0; h < LV_PER; h++) LV_STORE(&ls->e[e][h * (LANES / LV_PER)], x[e][h]);
}

#undef LV
#undef LV_ATTR
#undef LV_NAME
#undef LV_PER
#undef LV_LOAD
#undef LV_STORE
#undef LV_SET1
#undef LV_MUL
#undef LV_ADD
#undef LV_PADD
#undef LV_LO32
#undef LV_HI32
#undef LV_JOIN
#undef LV_CANON
#undef LV_NONZERO_OR_ONE
#undef LV_IF_ZERO
