/* The group code of msm.c, written once over a field F and included by msm.c twice: for G1 over Fq and
 * for G2 over Fq2 (the addition formulas do not involve the curve constant). Before each inclusion msm.c
 * defines F (the coordinate field), F_(name) (its operations), F_ONE, G(name) (this group's names),
 * POINT_LIMBS (64-bit limbs per mcl point struct), IS_INF_MARK / SET_INF_MARK (an affine point at
 * infinity) and MSM_ENTRY (the entry point's name). Not a header of its own: it is only ever compiled
 * as part of msm.c (affine points marked at infinity by IS_INF_MARK). */

typedef struct { F x, y; } G(affine);        /* IS_INF_MARK(&x): the point at infinity */
typedef struct { F x, y, z; } G(jacobian);   /* z == 0: the point at infinity */
/* --- Jacobian arithmetic (y^2 = x^3 + 3, a = 0; EFD formulas) -------------------- */

static inline int G(jac_is_inf)(const G(jacobian) *p) { return F_(is_zero)(&p->z); }

static void G(jac_dbl)(G(jacobian) *r, const G(jacobian) *p) { /* dbl-2009-l */
    if (G(jac_is_inf)(p) || F_(is_zero)(&p->y)) {
        memset(r, 0, sizeof *r);
        return;
    }
    F a, b, c, d, e, f, t;
    F_(sqr)(&a, &p->x);
    F_(sqr)(&b, &p->y);
    F_(sqr)(&c, &b);
    F_(add)(&t, &p->x, &b);
    F_(sqr)(&t, &t);
    F_(sub)(&t, &t, &a);
    F_(sub)(&t, &t, &c);
    F_(dbl)(&d, &t);
    F_(dbl)(&e, &a);
    F_(add)(&e, &e, &a);
    F_(sqr)(&f, &e);
    F z3;
    F_(mul)(&z3, &p->y, &p->z);
    F_(dbl)(&r->z, &z3);
    F_(dbl)(&t, &d);
    F_(sub)(&r->x, &f, &t);
    F_(sub)(&t, &d, &r->x);
    F_(mul)(&t, &e, &t);
    F_(dbl)(&c, &c);
    F_(dbl)(&c, &c);
    F_(dbl)(&c, &c);
    F_(sub)(&r->y, &t, &c);
}

static void G(jac_add_affine)(G(jacobian) *r, const G(jacobian) *p, const G(affine) *q) { /* madd-2007-bl */
    if (IS_INF_MARK(&q->x)) {
        *r = *p;
        return;
    }
    if (G(jac_is_inf)(p)) {
        r->x = q->x;
        r->y = q->y;
        r->z = F_ONE;
        return;
    }
    F z1z1, u2, s2, h, hh, i, j, rr, v, t;
    F_(sqr)(&z1z1, &p->z);
    F_(mul)(&u2, &q->x, &z1z1);
    F_(mul)(&s2, &q->y, &p->z);
    F_(mul)(&s2, &s2, &z1z1);
    F_(sub)(&h, &u2, &p->x);
    F_(sub)(&rr, &s2, &p->y);
    if (F_(is_zero)(&h)) {
        if (F_(is_zero)(&rr)) {
            G(jac_dbl)(r, p);
        } else {
            memset(r, 0, sizeof *r);
        }
        return;
    }
    F_(dbl)(&rr, &rr);
    F_(sqr)(&hh, &h);
    F_(dbl)(&i, &hh);
    F_(dbl)(&i, &i);
    F_(mul)(&j, &h, &i);
    F_(mul)(&v, &p->x, &i);
    F x3, y3, z3;
    F_(sqr)(&x3, &rr);
    F_(sub)(&x3, &x3, &j);
    F_(sub)(&x3, &x3, &v);
    F_(sub)(&x3, &x3, &v);
    F_(sub)(&t, &v, &x3);
    F_(mul)(&y3, &rr, &t);
    F_(mul)(&t, &p->y, &j);
    F_(dbl)(&t, &t);
    F_(sub)(&y3, &y3, &t);
    F_(add)(&z3, &p->z, &h);
    F_(sqr)(&z3, &z3);
    F_(sub)(&z3, &z3, &z1z1);
    F_(sub)(&z3, &z3, &hh);
    r->x = x3;
    r->y = y3;
    r->z = z3;
}

static void G(jac_add)(G(jacobian) *r, const G(jacobian) *p, const G(jacobian) *q) { /* add-2007-bl */
    if (G(jac_is_inf)(p)) {
        *r = *q;
        return;
    }
    if (G(jac_is_inf)(q)) {
        *r = *p;
        return;
    }
    F z1z1, z2z2, u1, u2, s1, s2, h, i, j, rr, v, t;
    F_(sqr)(&z1z1, &p->z);
    F_(sqr)(&z2z2, &q->z);
    F_(mul)(&u1, &p->x, &z2z2);
    F_(mul)(&u2, &q->x, &z1z1);
    F_(mul)(&s1, &p->y, &q->z);
    F_(mul)(&s1, &s1, &z2z2);
    F_(mul)(&s2, &q->y, &p->z);
    F_(mul)(&s2, &s2, &z1z1);
    F_(sub)(&h, &u2, &u1);
    F_(sub)(&rr, &s2, &s1);
    if (F_(is_zero)(&h)) {
        if (F_(is_zero)(&rr)) {
            G(jac_dbl)(r, p);
        } else {
            memset(r, 0, sizeof *r);
        }
        return;
    }
    F_(dbl)(&rr, &rr);
    F_(dbl)(&i, &h);
    F_(sqr)(&i, &i);
    F_(mul)(&j, &h, &i);
    F_(mul)(&v, &u1, &i);
    F x3, y3, z3;
    F_(sqr)(&x3, &rr);
    F_(sub)(&x3, &x3, &j);
    F_(sub)(&x3, &x3, &v);
    F_(sub)(&x3, &x3, &v);
    F_(sub)(&t, &v, &x3);
    F_(mul)(&y3, &rr, &t);
    F_(mul)(&t, &s1, &j);
    F_(dbl)(&t, &t);
    F_(sub)(&y3, &y3, &t);
    F_(add)(&z3, &p->z, &q->z);
    F_(sqr)(&z3, &z3);
    F_(sub)(&z3, &z3, &z1z1);
    F_(sub)(&z3, &z3, &z2z2);
    F_(mul)(&z3, &z3, &h);
    r->x = x3;
    r->y = y3;
    r->z = z3;
}

/* --- summing many G(affine) points at once ------------------------------------------ */


typedef struct {
    size_t src[BATCH], dst[BATCH];
    unsigned char kind[BATCH];
    F den[BATCH], prefix[BATCH];
    size_t count;
} G(pair_batch);

/* The pending pairs: buf[dst] = buf[src] + buf[src + 1], one inversion for all. */
static void G(flush_pairs)(G(affine) *buf, G(pair_batch) *pb) {
    size_t n = pb->count;
    if (!n) return;
    /* Montgomery's batch inversion in four interleaved lanes (pair i in lane i % 4): the running
     * products of one lane do not wait for the others, so four multiplications are in flight
     * instead of one; the four lane products share one inversion. */
    F acc[4] = {F_ONE, F_ONE, F_ONE, F_ONE};
    for (size_t i = 0; i < n; i++) {
        pb->prefix[i] = acc[i & 3]; /* product of the lane's denominators before i */
        F_(mul)(&acc[i & 3], &acc[i & 3], &pb->den[i]);
    }
    F p01, p23, all, inv_all, inv01, inv23, inv[4];
    F_(mul)(&p01, &acc[0], &acc[1]);
    F_(mul)(&p23, &acc[2], &acc[3]);
    F_(mul)(&all, &p01, &p23);
    F_(inv)(&inv_all, &all);
    F_(mul)(&inv01, &inv_all, &p23);
    F_(mul)(&inv23, &inv_all, &p01);
    F_(mul)(&inv[0], &inv01, &acc[1]);
    F_(mul)(&inv[1], &inv01, &acc[0]);
    F_(mul)(&inv[2], &inv23, &acc[3]);
    F_(mul)(&inv[3], &inv23, &acc[2]);
    for (size_t i = n; i-- > 0;) { /* den[i] becomes its inverse */
        F den_inv;
        F_(mul)(&den_inv, &inv[i & 3], &pb->prefix[i]);
        F_(mul)(&inv[i & 3], &inv[i & 3], &pb->den[i]);
        pb->den[i] = den_inv;
    }
    for (size_t i = 0; i < n; i++) { /* in order: a result may land where a later pair read */
        const F *den_inv = &pb->den[i];
        const G(affine) *a = &buf[pb->src[i]], *b = a + 1;
        G(affine) *out = &buf[pb->dst[i]];
        switch (pb->kind[i]) {
        case PAIR_FIRST: *out = *a; break;
        case PAIR_SECOND: *out = *b; break;
        case PAIR_INFINITY: SET_INF_MARK(&out->x); break;
        default: {
            F lambda, num, x3, t;
            if (pb->kind[i] == PAIR_ADD) {
                F_(sub)(&num, &b->y, &a->y);
            } else {
                F_(sqr)(&num, &a->x);
                F_(add)(&t, &num, &num);
                F_(add)(&num, &t, &num);
            }
            F_(mul)(&lambda, &num, den_inv);
            F_(sqr)(&x3, &lambda);
            F_(sub)(&x3, &x3, &a->x);
            F_(sub)(&x3, &x3, &b->x);
            F_(sub)(&t, &a->x, &x3);
            F_(mul)(&t, &lambda, &t);
            F_(sub)(&out->y, &t, &a->y);
            out->x = x3;
        }
        }
    }
    pb->count = 0;
}

/* Pairs are flushed in order of dst within a pass, and dst <= src, so a result never
 * overwrites a point that a pending pair still reads (see G(sum_segments)). */
static void G(queue_pair)(G(affine) *buf, G(pair_batch) *pb, size_t src, size_t dst) {
    const G(affine) *a = &buf[src], *b = a + 1;
    size_t i = pb->count;
    pb->src[i] = src;
    pb->dst[i] = dst;
    pb->den[i] = F_ONE;
    if (IS_INF_MARK(&a->x)) {
        pb->kind[i] = PAIR_SECOND;
    } else if (IS_INF_MARK(&b->x)) {
        pb->kind[i] = PAIR_FIRST;
    } else if (!F_(eq)(&a->x, &b->x)) {
        pb->kind[i] = PAIR_ADD;
        F_(sub)(&pb->den[i], &b->x, &a->x);
    } else if (F_(eq)(&a->y, &b->y) && !F_(is_zero)(&a->y)) {
        pb->kind[i] = PAIR_DOUBLE;
        F_(dbl)(&pb->den[i], &a->y);
    } else {
        pb->kind[i] = PAIR_INFINITY;
    }
    if (++pb->count == BATCH) G(flush_pairs)(buf, pb);
}

/* Segment s is buf[start[s] .. start[s] + len[s]); afterwards each segment holds
 * its sum in buf[start[s]] (len[s] is 0 or 1). Every pass halves every segment:
 * neighbours are added pairwise, the results packed to the front (dst = start + p
 * reads start + 2p, start + 2p + 1), and an odd last point moved after them once
 * the whole pass is flushed. */
static void G(sum_segments)(G(affine) *buf, const size_t *start, size_t *len, size_t n_segments, G(pair_batch) *pb) {
    for (;;) {
        int any = 0;
        for (size_t s = 0; s < n_segments; s++) {
            size_t pairs = len[s] / 2;
            for (size_t p = 0; p < pairs; p++) G(queue_pair)(buf, pb, start[s] + 2 * p, start[s] + p);
            any |= pairs > 0;
        }
        if (!any) return;
        G(flush_pairs)(buf, pb);
        for (size_t s = 0; s < n_segments; s++) {
            if (len[s] < 2) continue;
            if (len[s] & 1) buf[start[s] + len[s] / 2] = buf[start[s] + len[s] - 1];
            len[s] = (len[s] + 1) / 2;
        }
    }
}

/* --- one G(group) of points, all scalars at most `bits` bits --------------------------- */

typedef struct {
    const uint64_t *points; /* mcl structs (x, y, z), POINT_LIMBS limbs each */
    uint32_t *index;        /* the group's points */
    uint64_t (*k)[4];       /* their magnitudes (standard form) */
    unsigned char *negate;  /* 1: the point enters negated */
    size_t m;
} G(group);

static inline void G(load_point)(G(affine) *out, const uint64_t *points, uint32_t i, int negate) {
    const uint64_t *p = points + POINT_LIMBS * (size_t)i;
    memcpy(&out->x, p, sizeof(F));
    if (negate) {
        F y;
        memcpy(&y, p + POINT_LIMBS / 3, sizeof(F));
        F_(neg)(&out->y, &y);
    } else {
        memcpy(&out->y, p + POINT_LIMBS / 3, sizeof(F));
    }
}

/* The group's sum by signed windows of width c; buf holds m G(affine) points. */
static int G(pippenger)(G(jacobian) *result, const G(group) *g, unsigned bits, G(affine) *buf, G(pair_batch) *pb) {
    unsigned c = choose_window(g->m, bits);
    unsigned windows = (bits + 1 + c - 1) / c;
    size_t buckets = (size_t)1 << (c - 1);
    size_t *count = calloc(buckets + 1, sizeof *count);
    size_t *start = malloc((buckets + 1) * sizeof *start);
    size_t *len = malloc((buckets + 1) * sizeof *len);
    unsigned char *carry = calloc(g->m ? g->m : 1, 1);
    int32_t *digit = malloc((g->m ? g->m : 1) * sizeof *digit);
    if (!count || !start || !len || !carry || !digit) {
        free(count); free(start); free(len); free(carry); free(digit);
        return MSM_NO_MEMORY;
    }
    G(jacobian) *window_sum = calloc(windows, sizeof *window_sum);
    if (!window_sum) {
        free(count); free(start); free(len); free(carry); free(digit);
        return MSM_NO_MEMORY;
    }
    const int64_t full = (int64_t)1 << c, half = (int64_t)1 << (c - 1);
    for (unsigned w = 0; w < windows; w++) {
        memset(count, 0, (buckets + 1) * sizeof *count);
        for (size_t t = 0; t < g->m; t++) {
            int64_t d = (int64_t)bits_at(g->k[t], w * c, c) + carry[t];
            /* the last window keeps d = half: its bucket exists, and windows * c > bits
             * leaves no carry beyond it */
            int wrap = d >= half && w + 1 < windows;
            carry[t] = (unsigned char)wrap;
            if (wrap) d -= full;
            digit[t] = (int32_t)d;
            count[d < 0 ? -d : d]++;
        }
        size_t pos = 0;
        for (size_t b = 1; b <= buckets; b++) {
            start[b] = pos;
            len[b] = 0;
            pos += count[b];
        }
        for (size_t t = 0; t < g->m; t++) {
            int32_t d = digit[t];
            if (!d) continue;
            size_t b = (size_t)(d < 0 ? -d : d);
            G(load_point)(&buf[start[b] + len[b]++], g->points, g->index[t], (d < 0) ^ g->negate[t]);
        }
        G(sum_segments)(buf, start + 1, len + 1, buckets, pb);
        G(jacobian) running, total;
        memset(&running, 0, sizeof running);
        memset(&total, 0, sizeof total);
        for (size_t b = buckets; b >= 1; b--) {
            if (len[b]) G(jac_add_affine)(&running, &running, &buf[start[b]]);
            G(jac_add)(&total, &total, &running);
        }
        window_sum[w] = total;
    }
    G(jacobian) acc = window_sum[windows - 1];
    for (unsigned w = windows - 1; w-- > 0;) {
        for (unsigned i = 0; i < c; i++) G(jac_dbl)(&acc, &acc);
        G(jac_add)(&acc, &acc, &window_sum[w]);
    }
    *result = acc;
    free(count); free(start); free(len); free(carry); free(digit); free(window_sum);
    return MSM_OK;
}

/* The sum of the group's points (every magnitude 1). */
static void G(plain_sum)(G(jacobian) *result, const G(group) *g, G(affine) *buf, G(pair_batch) *pb) {
    for (size_t t = 0; t < g->m; t++) G(load_point)(&buf[t], g->points, g->index[t], g->negate[t]);
    size_t start = 0, len = g->m;
    G(sum_segments)(buf, &start, &len, 1, pb);
    memset(result, 0, sizeof *result);
    if (len) G(jac_add_affine)(result, result, &buf[0]);
}

static void G(write_normalised)(uint64_t *out, const G(jacobian) *p) {
    memset(out, 0, POINT_LIMBS * sizeof *out);
    if (G(jac_is_inf)(p)) return;
    F zi, zi2, zi3, x, y;
    F_(inv)(&zi, &p->z);
    F_(sqr)(&zi2, &zi);
    F_(mul)(&zi3, &zi2, &zi);
    F_(mul)(&x, &p->x, &zi2);
    F_(mul)(&y, &p->y, &zi3);
    memcpy(out, &x, sizeof(F));
    memcpy(out + POINT_LIMBS / 3, &y, sizeof(F));
    memcpy(out + 2 * (POINT_LIMBS / 3), &F_ONE, sizeof(F));
}

/* out (one mcl struct of the group, normalised) = sum_i k_i P_i over i < n. */
int MSM_ENTRY(uint64_t *out, const uint64_t *points, const uint64_t *scalars, size_t n) {
    size_t counts[N_GROUPS] = {0};
    unsigned widest[N_GROUPS] = {0};
    unsigned char *group_of = malloc(n ? n : 1);
    if (!group_of) return MSM_NO_MEMORY;
    /* classify by magnitude (sign and magnitude are recomputed when the groups are laid out: cheaper
     * than keeping a copy of every scalar); refuse points that are not normalised */
    for (size_t i = 0; i < n; i++) {
        const F *z = (const F *)(points + POINT_LIMBS * i + 2 * (POINT_LIMBS / 3));
        group_of[i] = N_GROUPS;
        if (F_(is_zero)(z)) continue;
        if (!F_(eq)(z, &F_ONE)) {
            free(group_of);
            return MSM_NOT_NORMALISED;
        }
        uint64_t v[4];
        magnitude(v, scalars + 4 * i);
        int bl = bit_length(v);
        if (!bl) continue;
        unsigned gi = 0;
        while (GROUP_BITS[gi] < (unsigned)bl) gi++;
        group_of[i] = (unsigned char)gi;
        counts[gi]++;
        if ((unsigned)bl > widest[gi]) widest[gi] = (unsigned)bl;
    }
    /* lay the groups out one after the other (stable) */
    size_t offset[N_GROUPS], fill[N_GROUPS], total = 0, largest = 0;
    for (size_t gi = 0; gi < N_GROUPS; gi++) {
        offset[gi] = fill[gi] = total;
        total += counts[gi];
        if (counts[gi] > largest) largest = counts[gi];
    }
    uint64_t (*gk)[4] = malloc((total ? total : 1) * sizeof *gk);
    unsigned char *gneg = malloc(total ? total : 1);
    uint32_t *index = malloc((total ? total : 1) * sizeof *index);
    G(affine) *buf = malloc((largest ? largest : 1) * sizeof *buf);
    G(pair_batch) *pb = malloc(sizeof *pb);
    if (!gk || !gneg || !index || !buf || !pb) {
        free(group_of); free(gk); free(gneg); free(index); free(buf); free(pb);
        return MSM_NO_MEMORY;
    }
    pb->count = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned gi = group_of[i];
        if (gi == N_GROUPS) continue;
        size_t t = fill[gi]++;
        index[t] = (uint32_t)i;
        gneg[t] = (unsigned char)magnitude(gk[t], scalars + 4 * i);
    }
    free(group_of);
    G(jacobian) sum;
    memset(&sum, 0, sizeof sum);
    int status = MSM_OK;
    for (size_t gi = 0; gi < N_GROUPS && status == MSM_OK; gi++) {
        if (!counts[gi]) continue;
        G(group) g = {points, index + offset[gi], gk + offset[gi], gneg + offset[gi], counts[gi]};
        G(jacobian) part;
        if (GROUP_BITS[gi] == 1) {
            G(plain_sum)(&part, &g, buf, pb);
        } else {
            status = G(pippenger)(&part, &g, widest[gi], buf, pb);
        }
        G(jac_add)(&sum, &sum, &part);
    }
    free(gk); free(gneg); free(buf); free(pb); free(index);
    if (status == MSM_OK) G(write_normalised)(out, &sum);
    return status;
}
