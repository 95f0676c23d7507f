/* BN254 multi-scalar multiplication in G1 and G2: sum k_i P_i by signed-window
 * bucket sums, each bucket summed in affine coordinates with batched inversions.
 *
 * Points come as mcl's mclBnG1 / mclBnG2 structs (x, y, z; an Fq coordinate is
 * four little-endian 64-bit limbs in Montgomery form v * 2^256 mod q, an Fq2
 * coordinate two of them, c0 then c1, with u^2 = -1), normalised: z = 1
 * (affine) or z = 0 (the point at infinity); any other z makes the call
 * return MSM_NOT_NORMALISED and the caller uses mcl instead. Scalars come as
 * zk_dtypes.bn254_sf_mont / mclBnFr elements (Montgomery form mod r).
 *
 * Why it is faster than a Jacobian bucket method on the same field code:
 *  - a scalar k above r/2 is replaced by r - k on the negated point, so the
 *    small negative values of fixed-point witnesses are small here too;
 *  - points are grouped by the bit length of their scalar, and each group
 *    gets its own window width and only as many windows as its widest
 *    scalar needs: the 0/1 entries of bit decompositions are one plain sum,
 *    32-bit entries take a third of the windows of full-width ones;
 *  - within a window, the points are sorted by bucket (a counting sort) and
 *    every bucket is summed as a tree of affine additions: all additions of
 *    one tree level across all buckets share one field inversion (Montgomery's
 *    batch trick), which makes an addition cost about 6 multiplications
 *    instead of the 11 of a mixed Jacobian addition.
 * The buckets of a window are then combined by the usual running sums in
 * Jacobian coordinates, the windows by doublings (Horner), and the result is
 * written back as a normalised mclBnG1 struct.
 *
 * Single-threaded and re-entrant: callers run independent calls (other MSMs,
 * or halves of one) on their own threads.
 *
 * The group code is written once over a field F and included twice from the
 * end of this file (G1 over Fq, G2 over Fq2: the addition formulas do not
 * involve the curve constant); the entry points are g1_msm_affine and
 * g2_msm_affine.
 */
#ifndef MSM_GROUP_PASS
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <x86intrin.h> /* _addcarry_u64, _subborrow_u64: baseline x86-64 */

typedef unsigned __int128 u128;

enum { MSM_OK = 0, MSM_NOT_NORMALISED = -1, MSM_NO_MEMORY = -2 };

typedef struct { uint64_t l[4]; } fq;

#define INF_MARK UINT64_MAX /* never the top limb of a reduced coordinate */
enum { PAIR_ADD, PAIR_DOUBLE, PAIR_FIRST, PAIR_SECOND, PAIR_INFINITY }; /* what a pending pair of points sums to */

#define MAX_WINDOW 16       /* signed digits fit int32 comfortably; 2^15 buckets */
#define BATCH 2048          /* additions sharing one inversion */

static const uint64_t QM[4] = {0x3c208c16d87cfd47ULL, 0x97816a916871ca8dULL, 0xb85045b68181585dULL,
                               0x30644e72e131a029ULL};
static const uint64_t QM_INV = 0x87d20782e4866389ULL; /* -q^-1 mod 2^64 */
static const fq Q_ONE = {{0xd35d438dc58f0d9dULL, 0x0a78eb28f5c70b3dULL, 0x666ea36f7879462cULL,
                          0x0e0a77c19a07df2fULL}}; /* 2^256 mod q */
static const uint64_t RM[4] = {0x43e1f593f0000001ULL, 0x2833e84879b97091ULL, 0xb85045b68181585dULL,
                               0x30644e72e131a029ULL};
static const uint64_t RM_INV = 0xc2e1f593efffffffULL; /* -r^-1 mod 2^64 */

/* --- field arithmetic (Montgomery, fully reduced) ------------------------------- */

static inline void reduce_once(uint64_t *out, const uint64_t s[4], const uint64_t m[4]) {
    unsigned long long d[4];
    unsigned char borrow = _subborrow_u64(0, s[0], m[0], &d[0]);
    borrow = _subborrow_u64(borrow, s[1], m[1], &d[1]);
    borrow = _subborrow_u64(borrow, s[2], m[2], &d[2]);
    borrow = _subborrow_u64(borrow, s[3], m[3], &d[3]);
    uint64_t keep_s = -(uint64_t)borrow;
    for (int i = 0; i < 4; i++) out[i] = (s[i] & keep_s) | (d[i] & ~keep_s);
}

/* Montgomery product a * b * 2^-256 mod m (m's top limb below 2^62: no fifth word). */
static inline void mont_mul(uint64_t *out, const uint64_t *a, const uint64_t *b, const uint64_t m[4],
                            uint64_t m_inv) {
    uint64_t t[4] = {0, 0, 0, 0};
    for (int i = 0; i < 4; i++) {
        uint64_t bi = b[i];
        u128 x = (u128)a[0] * bi + t[0];
        uint64_t A = (uint64_t)(x >> 64);
        t[0] = (uint64_t)x;
        uint64_t k = t[0] * m_inv;
        u128 y = (u128)k * m[0] + t[0];
        uint64_t C = (uint64_t)(y >> 64);
        for (int j = 1; j < 4; j++) {
            x = (u128)a[j] * bi + t[j] + A;
            A = (uint64_t)(x >> 64);
            y = (u128)k * m[j] + (uint64_t)x + C;
            C = (uint64_t)(y >> 64);
            t[j - 1] = (uint64_t)y;
        }
        t[3] = C + A;
    }
    reduce_once(out, t, m);
}

typedef struct { fq c0, c1; } fq2; /* c0 + c1 u, u^2 = -1 */

/* Products and squares in Fq and Fq2: the C versions below, or faster ones of the same Montgomery
 * form handed in by `msm_use_field` (mcl's mclBnFp_mul, mclBnFp_sqr, mclBnFp2_mul, mclBnFp2_sqr,
 * whose code is generated for the CPU). Set once, before any MSM runs. */
typedef void (*fq_binary)(fq *o, const fq *a, const fq *b);
typedef void (*fq_unary)(fq *o, const fq *a);
typedef void (*fq2_binary)(fq2 *o, const fq2 *a, const fq2 *b);
typedef void (*fq2_unary)(fq2 *o, const fq2 *a);

static void c_mul(fq *o, const fq *a, const fq *b) { mont_mul(o->l, a->l, b->l, QM, QM_INV); }
static void c_sqr(fq *o, const fq *a) { mont_mul(o->l, a->l, a->l, QM, QM_INV); }
static void c_mul2(fq2 *o, const fq2 *a, const fq2 *b);
static void c_sqr2(fq2 *o, const fq2 *a);
static fq_binary field_mul = c_mul;
static fq_unary field_sqr = c_sqr;
static fq2_binary field_mul2 = c_mul2;
static fq2_unary field_sqr2 = c_sqr2;

void msm_use_field(fq_binary mul, fq_unary sqr, fq2_binary mul2, fq2_unary sqr2) {
    field_mul = mul ? mul : c_mul;
    field_sqr = sqr ? sqr : c_sqr;
    field_mul2 = mul2 ? mul2 : c_mul2;
    field_sqr2 = sqr2 ? sqr2 : c_sqr2;
}

static inline void fq_mul(fq *o, const fq *a, const fq *b) { field_mul(o, a, b); }
static inline void fq_sqr(fq *o, const fq *a) { field_sqr(o, a); }

static inline void fq_add(fq *o, const fq *a, const fq *b) {
    unsigned long long s[4];
    unsigned char carry = _addcarry_u64(0, a->l[0], b->l[0], &s[0]);
    carry = _addcarry_u64(carry, a->l[1], b->l[1], &s[1]);
    carry = _addcarry_u64(carry, a->l[2], b->l[2], &s[2]);
    (void)_addcarry_u64(carry, a->l[3], b->l[3], &s[3]); /* a + b < 2q < 2^255 */
    reduce_once(o->l, (const uint64_t *)s, QM);
}

static inline void fq_sub(fq *o, const fq *a, const fq *b) {
    unsigned long long d[4], r[4];
    unsigned char borrow = _subborrow_u64(0, a->l[0], b->l[0], &d[0]);
    borrow = _subborrow_u64(borrow, a->l[1], b->l[1], &d[1]);
    borrow = _subborrow_u64(borrow, a->l[2], b->l[2], &d[2]);
    borrow = _subborrow_u64(borrow, a->l[3], b->l[3], &d[3]);
    uint64_t add_q = -(uint64_t)borrow;
    unsigned char carry = _addcarry_u64(0, d[0], QM[0] & add_q, &r[0]);
    carry = _addcarry_u64(carry, d[1], QM[1] & add_q, &r[1]);
    carry = _addcarry_u64(carry, d[2], QM[2] & add_q, &r[2]);
    (void)_addcarry_u64(carry, d[3], QM[3] & add_q, &r[3]);
    for (int i = 0; i < 4; i++) o->l[i] = r[i];
}

static inline void fq_dbl(fq *o, const fq *a) { fq_add(o, a, a); }

static inline int fq_is_zero(const fq *a) { return (a->l[0] | a->l[1] | a->l[2] | a->l[3]) == 0; }

static inline int fq_eq(const fq *a, const fq *b) {
    return ((a->l[0] ^ b->l[0]) | (a->l[1] ^ b->l[1]) | (a->l[2] ^ b->l[2]) | (a->l[3] ^ b->l[3])) == 0;
}

static inline void fq_neg(fq *o, const fq *a) {
    static const fq zero = {{0, 0, 0, 0}};
    fq_sub(o, &zero, a);
}

/* a^(q-2) = a^-1 (a != 0), square and multiply over the fixed exponent. */
static void fq_inv(fq *o, const fq *a) {
    uint64_t e[4] = {QM[0] - 2, QM[1], QM[2], QM[3]}; /* q's low limb is odd and > 2: no borrow */
    fq r = Q_ONE, base = *a;
    for (int limb = 0; limb < 4; limb++) {
        uint64_t bits = e[limb];
        for (int i = 0; i < 64; i++) {
            if (bits & 1) fq_mul(&r, &r, &base);
            fq_sqr(&base, &base);
            bits >>= 1;
        }
    }
    *o = r;
}

/* --- scalars ----------------------------------------------------------------------- */

/* Montgomery form -> standard form (multiply by 2^-256 mod r). */
static inline void fr_from_mont(uint64_t out[4], const uint64_t in[4]) {
    static const uint64_t one[4] = {1, 0, 0, 0};
    mont_mul(out, in, one, RM, RM_INV);
}

static inline int bit_length(const uint64_t k[4]) {
    for (int i = 3; i >= 0; i--)
        if (k[i]) return 64 * i + 64 - __builtin_clzll(k[i]);
    return 0;
}

/* k > (r - 1) / 2: then r - k is the smaller magnitude. */
static inline int above_half(const uint64_t k[4]) {
    static const uint64_t half[4] = {0xa1f0fac9f8000000ULL, 0x9419f4243cdcb848ULL, 0xdc2822db40c0ac2eULL,
                                     0x183227397098d014ULL}; /* (r - 1) / 2 */
    for (int i = 3; i >= 0; i--) {
        if (k[i] != half[i]) return k[i] > half[i];
    }
    return 0;
}

static inline void r_minus(uint64_t k[4]) {
    unsigned long long d[4];
    unsigned char borrow = _subborrow_u64(0, RM[0], k[0], &d[0]);
    borrow = _subborrow_u64(borrow, RM[1], k[1], &d[1]);
    borrow = _subborrow_u64(borrow, RM[2], k[2], &d[2]);
    (void)_subborrow_u64(borrow, RM[3], k[3], &d[3]);
    for (int i = 0; i < 4; i++) k[i] = d[i];
}

/* |k| as the smaller of k and r - k, in standard form, from a Montgomery scalar; returns 1 when it
 * is r - k (the point then enters negated). */
static inline int magnitude(uint64_t out[4], const uint64_t *mont) {
    fr_from_mont(out, mont);
    int neg = above_half(out);
    if (neg) r_minus(out);
    return neg;
}

static inline uint64_t bits_at(const uint64_t k[4], unsigned bit, unsigned width) {
    if (bit >= 256) return 0;
    unsigned limb = bit / 64, shift = bit % 64;
    uint64_t d = k[limb] >> shift;
    if (shift + width > 64 && limb + 1 < 4) d |= k[limb + 1] << (64 - shift);
    return d & ((UINT64_C(1) << width) - 1);
}

/* Estimated cost of a window width (in affine additions): bucket sums plus running sums. */
static unsigned choose_window(size_t m, unsigned bits) {
    unsigned best = 1;
    double best_cost = -1;
    for (unsigned c = 2; c <= MAX_WINDOW; c++) {
        unsigned windows = (bits + 1 + c - 1) / c; /* signed digits may carry one bit further */
        double cost = (double)windows * ((double)m + 4.5 * (double)((size_t)1 << (c - 1)));
        if (best_cost < 0 || cost < best_cost) {
            best = c;
            best_cost = cost;
        }
        if (c > bits + 1) break;
    }
    return best;
}

/* Groups by bit length of the magnitude: 1, then up to each bound below. */
static const unsigned GROUP_BITS[] = {1, 8, 16, 32, 64, 128, 256};
#define N_GROUPS (sizeof GROUP_BITS / sizeof GROUP_BITS[0])


/* --- Fq2 = Fq[u] / (u^2 + 1) ------------------------------------------------------- */

static const fq2 Q2_ONE = {{{0xd35d438dc58f0d9dULL, 0x0a78eb28f5c70b3dULL, 0x666ea36f7879462cULL,
                             0x0e0a77c19a07df2fULL}}, {{0, 0, 0, 0}}};

static inline void fq2_add(fq2 *o, const fq2 *a, const fq2 *b) { fq_add(&o->c0, &a->c0, &b->c0); fq_add(&o->c1, &a->c1, &b->c1); }
static inline void fq2_sub(fq2 *o, const fq2 *a, const fq2 *b) { fq_sub(&o->c0, &a->c0, &b->c0); fq_sub(&o->c1, &a->c1, &b->c1); }
static inline void fq2_dbl(fq2 *o, const fq2 *a) { fq2_add(o, a, a); }
static inline void fq2_neg(fq2 *o, const fq2 *a) { fq_neg(&o->c0, &a->c0); fq_neg(&o->c1, &a->c1); }
static inline int fq2_is_zero(const fq2 *a) { return fq_is_zero(&a->c0) && fq_is_zero(&a->c1); }
static inline int fq2_eq(const fq2 *a, const fq2 *b) { return fq_eq(&a->c0, &b->c0) && fq_eq(&a->c1, &b->c1); }
static inline void fq2_mul(fq2 *o, const fq2 *a, const fq2 *b) { field_mul2(o, a, b); }
static inline void fq2_sqr(fq2 *o, const fq2 *a) { field_sqr2(o, a); }

static void c_mul2(fq2 *o, const fq2 *a, const fq2 *b) { /* Karatsuba */
    fq t0, t1, sa, sb, c1;
    c_mul(&t0, &a->c0, &b->c0);
    c_mul(&t1, &a->c1, &b->c1);
    fq_add(&sa, &a->c0, &a->c1);
    fq_add(&sb, &b->c0, &b->c1);
    c_mul(&c1, &sa, &sb);
    fq_sub(&c1, &c1, &t0);
    fq_sub(&c1, &c1, &t1);
    fq_sub(&o->c0, &t0, &t1);
    o->c1 = c1;
}

static void c_sqr2(fq2 *o, const fq2 *a) { /* (a0 + a1)(a0 - a1) + 2 a0 a1 u */
    fq s, d, p;
    fq_add(&s, &a->c0, &a->c1);
    fq_sub(&d, &a->c0, &a->c1);
    c_mul(&p, &a->c0, &a->c1);
    c_mul(&o->c0, &s, &d);
    fq_dbl(&o->c1, &p);
}

/* (a0 - a1 u) / (a0^2 + a1^2), a != 0 */
static void fq2_inv(fq2 *o, const fq2 *a) {
    fq n0, n1, ni, c1;
    fq_sqr(&n0, &a->c0);
    fq_sqr(&n1, &a->c1);
    fq_add(&n0, &n0, &n1);
    fq_inv(&ni, &n0);
    fq_mul(&c1, &a->c1, &ni);
    fq_mul(&o->c0, &a->c0, &ni);
    fq_neg(&o->c1, &c1);
}

/* --- the two groups --------------------------------------------------------------------- */

#define CAT_(a, b) a##b
#define CAT(a, b) CAT_(a, b)
#define MSM_GROUP_PASS

#define F fq
#define F_(name) CAT(fq_, name)
#define F_ONE Q_ONE
#define G(name) CAT(name, _g1)
#define POINT_LIMBS 12
#define IS_INF_MARK(x) ((x)->l[3] == INF_MARK)
#define SET_INF_MARK(x) ((x)->l[3] = INF_MARK)
#define MSM_ENTRY g1_msm_affine
#include __FILE__
#undef F
#undef F_
#undef F_ONE
#undef G
#undef POINT_LIMBS
#undef IS_INF_MARK
#undef SET_INF_MARK
#undef MSM_ENTRY

#define F fq2
#define F_(name) CAT(fq2_, name)
#define F_ONE Q2_ONE
#define G(name) CAT(name, _g2)
#define POINT_LIMBS 24
#define IS_INF_MARK(x) ((x)->c0.l[3] == INF_MARK)
#define SET_INF_MARK(x) ((x)->c0.l[3] = INF_MARK)
#define MSM_ENTRY g2_msm_affine
#include __FILE__

#else /* MSM_GROUP_PASS: the group code over F (affine points marked at infinity by IS_INF_MARK) */

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

#endif /* MSM_GROUP_PASS */
