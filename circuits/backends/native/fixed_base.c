/* Fixed-base scalar multiplication with a precomputed window table.
 *
 * out[i] = k_i * G for many scalars k_i and one base G, as
 *
 *     k_i * G = sum_j table[j][d_ij],   table[j][d] = d * 2^(w j) * G,
 *
 * where d_ij is the j-th w-bit digit of k_i: one point addition per non-zero
 * digit instead of a double-and-add ladder. The curve arithmetic is the
 * caller's (mcl's mclBnG1_add or mclBnG2_add, passed by address), so this file
 * knows nothing about the curve: points are opaque structs of point_bytes
 * bytes whose all-zero value is the point at infinity (mcl's z = 0).
 * Scalars are canonical little-endian 4 x 64-bit integers below 2^256.
 * The results are Jacobian; the caller normalises them in one batch.
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

typedef void (*point_add)(void *z, const void *x, const void *y);

static inline uint64_t digit(const uint64_t *k, unsigned bit, unsigned window) {
    unsigned limb = bit / 64, shift = bit % 64;
    uint64_t d = k[limb] >> shift;
    if (shift + window > 64 && limb + 1 < 4)
        d |= k[limb + 1] << (64 - shift);
    return d & ((UINT64_C(1) << window) - 1);
}

void fixed_base_windowed(uint8_t *out, const uint8_t *table, size_t point_bytes, const uint64_t *scalars,
                         size_t n, unsigned window, unsigned n_windows, point_add add) {
    size_t row = (size_t)1 << window;
    for (size_t i = 0; i < n; i++) {
        uint8_t *acc = out + i * point_bytes;
        const uint64_t *k = scalars + 4 * i;
        memset(acc, 0, point_bytes);
        for (unsigned j = 0; j < n_windows; j++) {
            uint64_t d = digit(k, j * window, window);
            if (d)
                add(acc, acc, table + ((size_t)j * row + (size_t)d) * point_bytes);
        }
    }
}
