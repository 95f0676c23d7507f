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
 * The group code is written once over a field F (msm_group.h) and included
 * twice from the end of this file (G1 over Fq, G2 over Fq2: the addition
 * formulas do not involve the curve constant); the entry points are
 * g1_msm_affine and g2_msm_affine.
 */
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

#define F fq
#define F_(name) CAT(fq_, name)
#define F_ONE Q_ONE
#define G(name) CAT(name, _g1)
#define POINT_LIMBS 12
#define IS_INF_MARK(x) ((x)->l[3] == INF_MARK)
#define SET_INF_MARK(x) ((x)->l[3] = INF_MARK)
#define MSM_ENTRY g1_msm_affine
#include "msm_group.h"
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
#include "msm_group.h"
