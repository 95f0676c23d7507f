/* Radix-2 NTTs and elementwise operations over BN254's scalar field Fr.
 *
 * Elements are four little-endian 64-bit limbs of x * 2^256 mod r (Montgomery
 * form), fully reduced into [0, r): the layout of zk_dtypes.bn254_sf_mont and
 * mclBnFr, so numpy arrays are passed by pointer without conversion. Every
 * operation returns the unique reduced representative, so results are
 * byte-identical to the numpy path whatever the order of reductions.
 *
 * Butterflies match circuits/backends/ntt.py exactly:
 *   DIF (natural -> bit-reversed): u' = u + v, v' = (u - v) * w
 *   DIT (bit-reversed -> natural): t = v * w, u' = u + t, v' = u - t
 * Twiddles come from Python as one table: the stage of half-size m uses
 * tw[m - 1 + j] = w_{2m}^j for j < m (so a table for n holds n - 1 entries).
 */
#include <stddef.h>
#include <stdint.h>
#include <x86intrin.h> /* _addcarry_u64, _subborrow_u64: baseline x86-64 */

typedef unsigned __int128 u128;

static const uint64_t MOD[4] = {
    0x43e1f593f0000001ULL, 0x2833e84879b97091ULL, 0xb85045b68181585dULL, 0x30644e72e131a029ULL};
static const uint64_t MOD_INV = 0xc2e1f593efffffffULL; /* -r^-1 mod 2^64 */

/* Stages whose butterfly span exceeds this many elements stream the whole
 * array; smaller ones are finished block by block while a block (512 KiB)
 * stays in the L2 cache. */
#define BLOCK_ELEMS ((size_t)1 << 14)

/* s < 2r (always true for a sum of reduced values: r < 2^254): s mod r. */
static inline void reduce_once(uint64_t *out, const uint64_t s[4]) {
    unsigned long long d[4];
    unsigned char borrow = _subborrow_u64(0, s[0], MOD[0], &d[0]);
    borrow = _subborrow_u64(borrow, s[1], MOD[1], &d[1]);
    borrow = _subborrow_u64(borrow, s[2], MOD[2], &d[2]);
    borrow = _subborrow_u64(borrow, s[3], MOD[3], &d[3]);
    uint64_t keep_s = -(uint64_t)borrow; /* all ones when s < r */
    for (int i = 0; i < 4; i++) out[i] = (s[i] & keep_s) | (d[i] & ~keep_s);
}

static inline void fr_add(uint64_t *out, const uint64_t *a, const uint64_t *b) {
    unsigned long long s[4];
    unsigned char carry = _addcarry_u64(0, a[0], b[0], &s[0]);
    carry = _addcarry_u64(carry, a[1], b[1], &s[1]);
    carry = _addcarry_u64(carry, a[2], b[2], &s[2]);
    (void)_addcarry_u64(carry, a[3], b[3], &s[3]); /* no carry out: a + b < 2r < 2^255 */
    reduce_once(out, (const uint64_t *)s);
}

static inline void fr_sub(uint64_t *out, const uint64_t *a, const uint64_t *b) {
    unsigned long long d[4];
    unsigned char borrow = _subborrow_u64(0, a[0], b[0], &d[0]);
    borrow = _subborrow_u64(borrow, a[1], b[1], &d[1]);
    borrow = _subborrow_u64(borrow, a[2], b[2], &d[2]);
    borrow = _subborrow_u64(borrow, a[3], b[3], &d[3]);
    uint64_t add_mod = -(uint64_t)borrow; /* a < b: add r back */
    unsigned long long o[4];
    unsigned char carry = _addcarry_u64(0, d[0], MOD[0] & add_mod, &o[0]);
    carry = _addcarry_u64(carry, d[1], MOD[1] & add_mod, &o[1]);
    carry = _addcarry_u64(carry, d[2], MOD[2] & add_mod, &o[2]);
    (void)_addcarry_u64(carry, d[3], MOD[3] & add_mod, &o[3]);
    out[0] = o[0]; out[1] = o[1]; out[2] = o[2]; out[3] = o[3];
}

/* Montgomery product a * b * 2^-256 mod r; out may alias a or b.
 * CIOS with the "no-carry" shortcut (valid because r's top limb is below
 * 2^63 - 1): the running sum never needs a fifth and sixth word. */
static inline void fr_mul(uint64_t *out, const uint64_t *a, const uint64_t *b) {
    uint64_t t[4] = {0, 0, 0, 0};
    for (int i = 0; i < 4; i++) {
        uint64_t bi = b[i];
        u128 x = (u128)a[0] * bi + t[0];
        uint64_t A = (uint64_t)(x >> 64);
        t[0] = (uint64_t)x;
        uint64_t m = t[0] * MOD_INV;
        u128 y = (u128)m * MOD[0] + t[0];
        uint64_t C = (uint64_t)(y >> 64);
        for (int j = 1; j < 4; j++) {
            x = (u128)a[j] * bi + t[j] + A;
            A = (uint64_t)(x >> 64);
            y = (u128)m * MOD[j] + (uint64_t)x + C;
            C = (uint64_t)(y >> 64);
            t[j - 1] = (uint64_t)y;
        }
        t[3] = C + A;
    }
    reduce_once(out, t); /* t < 2r */
}

static void dif_stage(uint64_t *a, size_t len, size_t m, const uint64_t *tw) {
    uint64_t t[4];
    for (size_t blk = 0; blk < len; blk += 2 * m) {
        uint64_t *u = a + 4 * blk, *v = a + 4 * (blk + m);
        for (size_t j = 0; j < m; j++, u += 4, v += 4) {
            fr_sub(t, u, v);
            fr_add(u, u, v);
            if (m == 1) {
                v[0] = t[0]; v[1] = t[1]; v[2] = t[2]; v[3] = t[3];
            } else {
                fr_mul(v, t, tw + 4 * (m - 1 + j));
            }
        }
    }
}

static void dit_stage(uint64_t *a, size_t len, size_t m, const uint64_t *tw) {
    uint64_t t[4];
    for (size_t blk = 0; blk < len; blk += 2 * m) {
        uint64_t *u = a + 4 * blk, *v = a + 4 * (blk + m);
        for (size_t j = 0; j < m; j++, u += 4, v += 4) {
            if (m == 1) {
                t[0] = v[0]; t[1] = v[1]; t[2] = v[2]; t[3] = v[3];
            } else {
                fr_mul(t, v, tw + 4 * (m - 1 + j));
            }
            fr_sub(v, u, t);
            fr_add(u, u, t);
        }
    }
}

/* In place, n a power of two: natural order -> bit-reversed order (unscaled). */
void fr_ntt_dif(uint64_t *a, size_t n, const uint64_t *tw) {
    size_t m = n / 2;
    for (; m >= 1 && 2 * m > BLOCK_ELEMS; m /= 2) dif_stage(a, n, m, tw);
    if (m == 0) return;
    size_t block = 2 * m;
    for (size_t s = 0; s < n; s += block)
        for (size_t mm = m; mm >= 1; mm /= 2) dif_stage(a + 4 * s, block, mm, tw);
}

/* In place, n a power of two: bit-reversed order -> natural order (unscaled). */
void fr_ntt_dit(uint64_t *a, size_t n, const uint64_t *tw) {
    size_t block = n < BLOCK_ELEMS ? n : BLOCK_ELEMS;
    if (block >= 2)
        for (size_t s = 0; s < n; s += block)
            for (size_t m = 1; m < block; m *= 2) dit_stage(a + 4 * s, block, m, tw);
    for (size_t m = block; m < n; m *= 2) dit_stage(a, n, m, tw);
}

/* out[i] = a[i] * b[i] (Montgomery); out may alias a or b. */
void fr_mul_vec(uint64_t *out, const uint64_t *a, const uint64_t *b, size_t n) {
    for (size_t i = 0; i < n; i++) fr_mul(out + 4 * i, a + 4 * i, b + 4 * i);
}

/* out[i] = a[i] * s for one element s. */
void fr_mul_scalar(uint64_t *out, const uint64_t *a, const uint64_t *s, size_t n) {
    uint64_t k[4] = {s[0], s[1], s[2], s[3]};
    for (size_t i = 0; i < n; i++) fr_mul(out + 4 * i, a + 4 * i, k);
}

/* out[i] = a[i] - b[i]. */
void fr_sub_vec(uint64_t *out, const uint64_t *a, const uint64_t *b, size_t n) {
    for (size_t i = 0; i < n; i++) fr_sub(out + 4 * i, a + 4 * i, b + 4 * i);
}

/* The top stage of a DIF on its own, over count butterfly pairs (u[j], v[j]) with
 * twiddles tw[j]: lets two threads share one large transform (the top stage
 * split in ranges of j, then the two halves are independent transforms). */
void fr_dif_butterflies(uint64_t *u, uint64_t *v, const uint64_t *tw, size_t count) {
    uint64_t t[4];
    for (size_t j = 0; j < count; j++, u += 4, v += 4, tw += 4) {
        fr_sub(t, u, v);
        fr_add(u, u, v);
        fr_mul(v, t, tw);
    }
}

/* The last stage of a DIT on its own (see fr_dif_butterflies). */
void fr_dit_butterflies(uint64_t *u, uint64_t *v, const uint64_t *tw, size_t count) {
    uint64_t t[4];
    for (size_t j = 0; j < count; j++, u += 4, v += 4, tw += 4) {
        fr_mul(t, v, tw);
        fr_sub(v, u, t);
        fr_add(u, u, t);
    }
}

/* out[j] = sum of coefficient * w[wire] over the terms of row j (start[j] <= t < start[j + 1]), for
 * j < n_rows: one side of a constraint system times a witness, without a temporary per term.
 * Coefficients are in standard form (32 bytes little-endian, below r, as .r1cs files and the relation
 * arrays hold them) and are brought into Montgomery form on the way (a product by 2^512 mod r); the
 * coefficients 1 and r - 1, most terms of a circuit, cost an addition or a subtraction. Returns 0, or
 * -1 at the first wire index outside [0, n_wires) or row start outside [0, n_terms] (out is then
 * incomplete). */
int fr_sparse_rows(uint64_t *out, const int64_t *start, const int64_t *wire, const uint64_t *coefficient,
                   const uint64_t *w, size_t n_rows, size_t n_wires, size_t n_terms) {
    static const uint64_t R2[4] = {0x1bb8e645ae216da7ULL, 0x53fe3ab1e35c59e3ULL, 0x8c49833d53bb8085ULL,
                                   0x0216d0b17f4e44a5ULL};
    static const uint64_t MINUS_ONE[4] = {0x43e1f593f0000000ULL, 0x2833e84879b97091ULL, 0xb85045b68181585dULL,
                                          0x30644e72e131a029ULL};
    for (size_t j = 0; j < n_rows; j++) {
        uint64_t acc[4] = {0, 0, 0, 0}, term[4];
        if (start[j] < 0 || start[j + 1] < 0 || (size_t)start[j + 1] > n_terms) return -1;
        for (int64_t t = start[j]; t < start[j + 1]; t++) {
            int64_t v = wire[t];
            if (v < 0 || (size_t)v >= n_wires) return -1;
            const uint64_t *k = coefficient + 4 * t, *x = w + 4 * v;
            if (k[0] == 1 && !(k[1] | k[2] | k[3])) {
                fr_add(acc, acc, x);
            } else if (k[0] == MINUS_ONE[0] && k[1] == MINUS_ONE[1] && k[2] == MINUS_ONE[2] && k[3] == MINUS_ONE[3]) {
                fr_sub(acc, acc, x);
            } else {
                fr_mul(term, k, R2);
                fr_mul(term, term, x);
                fr_add(acc, acc, term);
            }
        }
        out[4 * j] = acc[0]; out[4 * j + 1] = acc[1]; out[4 * j + 2] = acc[2]; out[4 * j + 3] = acc[3];
    }
    return 0;
}
