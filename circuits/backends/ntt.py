"""Vectorised NTTs over Fr with numpy and zk_dtypes' Montgomery dtype.

Arrays are 1-D numpy arrays of `zk_dtypes.bn254_sf_mont` (four little-endian
64-bit limbs, x * 2^256 mod R: byte-identical to mcl's mclBnFr), so results go
to the MSM without conversion.

Two butterfly orders avoid bit-reversal permutations in the QAP step:
- `dif` (Gentleman-Sande): natural-order input -> bit-reversed output;
- `dit` (Cooley-Tukey): bit-reversed input -> natural-order output.
Each stage is one broadcast over a (blocks, 2, half) view of the array.

When the native kernels load (`native/kernels.py`: C compiled at run time,
FAIRPROOF_NATIVE_NTT=0 disables them) `dif`, `dit` and the quotient's
elementwise steps run in C with the same butterflies and the same reduced
Montgomery values, so results are byte-identical; ctypes releases the GIL, so
the quotient (and `qap_odd_coset`, the H scalars for keys in snarkjs's basis)
runs its independent transforms on two threads. Without them
(no compiler, failed build) the numpy code below is used.
"""
from __future__ import annotations

import threading
from functools import lru_cache

import numpy as np
import zk_dtypes

from ..errors import CircuitError, UnsatisfiedConstraint
from ..field import R, R_GENERATOR, R_TWO_ADICITY
from .native import kernels as native_kernels

FR = np.dtype(zk_dtypes.bn254_sf_mont)
COSET_SHIFT = R_GENERATOR  # g: the QAP quotient is evaluated on g*H, where Z_H(g w^i) = g^n - 1 != 0

_cache_lock = threading.RLock()  # re-entered: cached factors use the cached permutation


# A raw limb pattern L read as this dtype means L * 2^-256; multiplying by 2^256
# (in Montgomery form) turns it into L itself.
_TO_MONTGOMERY = np.array([(1 << 256) % R], dtype=FR)


def fr_array(values) -> np.ndarray:
    """Ints (already reduced to [0, R)) -> Montgomery array.

    Witnesses of fixed-point circuits are mostly below 2^64: such a list goes
    through numpy's native uint64 conversion and one vectorised Montgomery
    multiplication, several times faster than converting each int to the dtype."""
    if isinstance(values, list) and values:
        try:
            low = np.array(values, dtype=np.uint64)
        except (OverflowError, TypeError, ValueError):
            pass  # a value needs more than 64 bits (or is not an int): the generic path below
        else:
            if low.ndim == 1:
                limbs = np.zeros((low.shape[0], 4), dtype=np.uint64)
                limbs[:, 0] = low
                return limbs.view(FR).reshape(-1) * _TO_MONTGOMERY
    return np.array(values, dtype=FR)


def fr_const(value: int) -> np.ndarray:
    return np.array([value % R], dtype=FR)


def check_domain_size(n: int) -> int:
    if n < 1 or n & (n - 1) or n.bit_length() - 1 > R_TWO_ADICITY:
        raise CircuitError(f"domain size {n} is not a power of two <= 2^{R_TWO_ADICITY}")
    return n.bit_length() - 1


def powers(base: int, n: int) -> np.ndarray:
    """[base^0, ..., base^(n-1)] by repeated doubling of the filled prefix."""
    out = np.empty(n, dtype=FR)
    if n == 0:
        return out
    out[0] = fr_const(1)[0]
    filled, step = 1, base % R
    while filled < n:
        take = min(filled, n - filled)
        out[filled : filled + take] = out[:take] * fr_const(step)
        filled += take
        step = step * step % R
    return out


@lru_cache(maxsize=64)
def _bit_reverse_permutation(n: int) -> np.ndarray:
    """rev_{2k} = [2 rev_k, 2 rev_k + 1]: O(n) work in log n vector steps."""
    check_domain_size(n)
    rev = np.zeros(1, dtype=np.int64)
    while rev.shape[0] < n:
        rev = np.concatenate((2 * rev, 2 * rev + 1))
    rev.flags.writeable = False  # shared by every caller
    return rev


def bit_reverse_permutation(n: int) -> np.ndarray:
    with _cache_lock:
        return _bit_reverse_permutation(n)


def bit_reversed_powers(base: int, n: int, scale: int = 1) -> np.ndarray:
    """[scale * base^rev(i) for i < n] (rev: log2(n)-bit reversal) without a gather:
    the bit-reversed powers of x for 2k are those of x^2 for k, then x times them."""
    log_n = check_domain_size(n)
    out = fr_const(scale)
    squares = [base % R]
    while len(squares) < log_n:
        squares.append(squares[-1] * squares[-1] % R)
    for x in reversed(squares[:log_n]):  # x = base^(n/2), ..., base^2, base
        out = np.concatenate((out, out * fr_const(x)))
    return out


@lru_cache(maxsize=64)
def _stage_twiddles(n: int, inverse: bool) -> tuple[np.ndarray, ...]:
    """Per-stage twiddles: entry for half-size m is [w_{2m}^j for j < m], contiguous."""
    omega = pow(R_GENERATOR, (R - 1) // n, R)
    if inverse:
        omega = pow(omega, R - 2, R)
    full = powers(omega, max(n // 2, 1))
    stages = []
    m = 1
    while m < n:
        stages.append(np.ascontiguousarray(full[:: n // (2 * m)][:m]))
        m *= 2
    return tuple(stages)


def stage_twiddles(n: int, inverse: bool) -> tuple[np.ndarray, ...]:
    with _cache_lock:
        return _stage_twiddles(n, inverse)


@lru_cache(maxsize=64)
def _flat_twiddles(n: int, inverse: bool) -> np.ndarray:
    """The stage twiddles in one array, half-size m at offset m - 1 (the native layout)."""
    stages = _stage_twiddles(n, inverse)
    out = np.concatenate(stages) if stages else np.zeros(0, dtype=FR)
    out.flags.writeable = False  # shared by every caller
    return out


def flat_twiddles(n: int, inverse: bool) -> np.ndarray:
    with _cache_lock:
        return _flat_twiddles(n, inverse)


def _native_for(*arrays: np.ndarray):
    """The native kernels if they are available and can take these arrays in place."""
    kernels = native_kernels.load()
    if kernels is None:
        return None
    for arr in arrays:
        if arr.dtype != FR or arr.ndim != 1 or not arr.flags.c_contiguous or not arr.flags.writeable:
            return None
    return kernels


def dif(a: np.ndarray, inverse: bool = False) -> np.ndarray:
    """In place: natural-order coefficients -> bit-reversed evaluations on <omega_n>
    (unscaled: with inverse=True this is n times the inverse transform)."""
    kernels = _native_for(a)
    if kernels is None:
        return dif_numpy(a, inverse)
    check_domain_size(a.shape[0])
    return kernels.dif(a, flat_twiddles(a.shape[0], inverse))


def dit(a: np.ndarray, inverse: bool = False) -> np.ndarray:
    """In place: bit-reversed input -> natural-order output (unscaled, see `dif`)."""
    kernels = _native_for(a)
    if kernels is None:
        return dit_numpy(a, inverse)
    check_domain_size(a.shape[0])
    return kernels.dit(a, flat_twiddles(a.shape[0], inverse))


def dif_numpy(a: np.ndarray, inverse: bool = False) -> np.ndarray:
    """`dif` in numpy (the fallback, and the reference the native code is tested against)."""
    n = a.shape[0]
    check_domain_size(n)
    tw = stage_twiddles(n, inverse)
    m = n // 2
    tmp = np.empty(n // 2, dtype=FR)
    while m >= 1:
        view = a.reshape(n // (2 * m), 2, m)
        u, v = view[:, 0, :], view[:, 1, :]
        t = tmp.reshape(n // (2 * m), m)
        np.subtract(u, v, out=t)
        np.add(u, v, out=u)
        if m == 1:
            v[...] = t  # the last stage's only twiddle is 1: a copy, not a multiplication
        else:
            np.multiply(t, tw[m.bit_length() - 1], out=v)
        m //= 2
    return a


def dit_numpy(a: np.ndarray, inverse: bool = False) -> np.ndarray:
    """`dit` in numpy."""
    n = a.shape[0]
    check_domain_size(n)
    tw = stage_twiddles(n, inverse)
    m = 1
    tmp = np.empty(n // 2, dtype=FR)
    while m < n:
        view = a.reshape(n // (2 * m), 2, m)
        u, v = view[:, 0, :], view[:, 1, :]
        t = tmp.reshape(n // (2 * m), m)
        if m == 1:  # the first stage's only twiddle is 1
            np.subtract(u, v, out=t)
            np.add(u, v, out=u)
            v[...] = t
        else:
            np.multiply(v, tw[m.bit_length() - 1], out=t)
            np.subtract(u, t, out=v)
            np.add(u, t, out=u)
        m *= 2
    return a


def ntt(coeffs: np.ndarray) -> np.ndarray:
    """Evaluations on <omega_n>, natural order (copy)."""
    out = dif(np.array(coeffs, dtype=FR, copy=True))
    return out[bit_reverse_permutation(out.shape[0])]


def intt(evals: np.ndarray) -> np.ndarray:
    """Coefficients from evaluations on <omega_n>, natural order (copy)."""
    n = evals.shape[0]
    out = dif(np.array(evals, dtype=FR, copy=True), inverse=True)
    out = out[bit_reverse_permutation(n)]
    out *= fr_const(pow(n, R - 2, R))
    return out


@lru_cache(maxsize=16)
def _quotient_factors(n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Constants of `qap_quotient` for domain size n, with z = g^n - 1:
    - bit-reversed g^i / n: undo the unscaled inverse NTT and enter the coset g*H;
    - bit-reversed g^-i / (n z): leave the coset after the inverse NTT, divide by Z;
    - 1 / (n z): scale the unscaled inverse NTT of C."""
    n_inv = pow(n, R - 2, R)
    z_inv = pow((pow(COSET_SHIFT, n, R) - 1) % R, R - 2, R)
    into = bit_reversed_powers(COSET_SHIFT, n, n_inv)
    leave = bit_reversed_powers(pow(COSET_SHIFT, R - 2, R), n, n_inv * z_inv)
    return into, leave, fr_const(n_inv * z_inv % R)


def quotient_factors(n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    with _cache_lock:
        return _quotient_factors(n)


def _checked_rows(caller: str, a: np.ndarray, b: np.ndarray, c: np.ndarray) -> tuple[np.ndarray, ...]:
    """a, b, c as contiguous arrays, after checking their type, their common
    power-of-two length and a_i * b_i == c_i for every row i (exactly: A*B - C
    vanishes on H, so Z_H divides it, iff this holds)."""
    for arr, label in ((a, "a"), (b, "b"), (c, "c")):
        if not isinstance(arr, np.ndarray) or arr.dtype != FR or arr.ndim != 1:
            raise CircuitError(f"{caller}: {label} is not a scalar vector of this backend")
    n = a.shape[0]
    if b.shape[0] != n or c.shape[0] != n:
        raise CircuitError(f"{caller}: lengths differ ({a.shape[0]}, {b.shape[0]}, {c.shape[0]})")
    check_domain_size(n)
    a, b, c = (np.ascontiguousarray(x) for x in (a, b, c))
    kernels = native_kernels.load()
    ab = a * b if kernels is None else kernels.mul(np.empty_like(a), a, b)
    bad = np.flatnonzero(np.any(ab.view(np.uint64).reshape(n, 4) != c.view(np.uint64).reshape(n, 4), axis=1))
    if bad.size:
        raise UnsatisfiedConstraint(
            f"A*B - C is not divisible by Z_H: constraint {int(bad[0])} fails ({bad.size} in all)"
        )
    return a, b, c


def qap_quotient(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
    """h_0..h_{n-2} of H = (A*B - C) / (X^n - 1) from evaluations of A, B, C on H.

    A*B - C vanishes on H (so Z_H divides it) iff a_i * b_i == c_i for all i:
    this is checked exactly first. Then six NTTs instead of the textbook seven:
    on the coset g*H, Z = z = g^n - 1 is constant and H has degree < n, so H is
    the coset interpolation of (A*B - C) / z. Interpolation is linear, and
    interpolating C's coset values gives back C's coefficients: so
        H = (coset-interpolation of A*B on g*H - coefficients of C) / z,
    and C needs only its inverse NTT on H, not a second (coset) NTT.
    Concretely: A, B to g*H (inverse DIF, * bit-reversed g^i / n, DIT each);
    A*B; inverse DIF, * bit-reversed g^-i / (n z); minus the inverse DIF of C
    scaled by 1 / (n z); one bit-reversal permutation.
    """
    a, b, c = _checked_rows("qap_quotient", a, b, c)
    n = a.shape[0]
    kernels = native_kernels.load()
    h = _quotient_numpy(a, b, c) if kernels is None else _quotient_native(kernels, a, b, c)
    perm = bit_reverse_permutation(n)
    if h[perm[n - 1 :]].view(np.uint64).any():  # impossible after the pointwise check; guards the arithmetic
        raise UnsatisfiedConstraint("quotient has degree n - 1: A*B - C not divisible by Z_H")
    return h[perm[: n - 1]]


def _quotient_numpy(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
    """Bit-reversed coefficients of H (see `qap_quotient`), numpy NTTs."""
    into, leave, c_scale = quotient_factors(a.shape[0])
    h = _coset_evaluations(a, into)
    h *= _coset_evaluations(b, into)
    dif_numpy(h, inverse=True)
    h *= leave  # bit-reversed coefficients of (A*B mod (X^n - g^n)) / z
    c_coeffs = np.array(c, dtype=FR, copy=True)
    dif_numpy(c_coeffs, inverse=True)
    c_coeffs *= c_scale  # bit-reversed coefficients of C = (A*B mod (X^n - 1)), over z
    h -= c_coeffs
    return h


def _coset_evaluations(evals: np.ndarray, into: np.ndarray) -> np.ndarray:
    """Evaluations on g*H (natural order, new array) of the polynomial of degree < n
    with the given evaluations on H: inverse DIF, multiply by bit-reversed g^i / n, DIT."""
    work = np.array(evals, dtype=FR, copy=True)
    dif_numpy(work, inverse=True)
    work *= into
    return dit_numpy(work)


# Below this size a second thread costs more than it saves.
NATIVE_THREAD_MIN = 1 << 12


def _in_pair(first, second, parallel: bool) -> None:
    """Run two callables, the first on a helper thread when `parallel` (both release the GIL)."""
    if not parallel:
        first()
        second()
        return
    errors: list[BaseException] = []

    def guarded() -> None:
        try:
            first()
        except BaseException as exc:  # noqa: BLE001 - re-raised below
            errors.append(exc)

    helper = threading.Thread(target=guarded, daemon=True)
    helper.start()
    try:
        second()
    finally:
        helper.join()
    if errors:
        raise errors[0]


def _native_coset_evaluation(kernels, work: np.ndarray, into: np.ndarray, inverse_tw: np.ndarray,
                             forward_tw: np.ndarray):
    """A task putting `work` (values on H) into its values on the coset, in place: interpolate,
    twist by `into`, evaluate (`_coset_evaluations` in C)."""
    def run() -> None:
        kernels.dif(work, inverse_tw)
        kernels.mul(work, work, into)
        kernels.dit(work, forward_tw)

    return run


def _quotient_native(kernels, a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
    """The same steps and values as `_quotient_numpy` in C, as two balanced chains of
    three NTTs: A to the coset, then A*B interpolated; beside it B to the coset,
    then C interpolated."""
    n = a.shape[0]
    into, leave, c_scale = quotient_factors(n)
    inverse_tw, forward_tw = flat_twiddles(n, True), flat_twiddles(n, False)
    h, hb, c_coeffs = np.array(a, copy=True), np.array(b, copy=True), np.array(c, copy=True)
    parallel = n >= NATIVE_THREAD_MIN

    def to_coset(work: np.ndarray):
        return _native_coset_evaluation(kernels, work, into, inverse_tw, forward_tw)

    def interpolate_product() -> None:
        kernels.mul(h, h, hb)
        kernels.dif(h, inverse_tw)
        kernels.mul(h, h, leave)  # bit-reversed coefficients of (A*B mod (X^n - g^n)) / z

    def interpolate_c() -> None:
        kernels.dif(c_coeffs, inverse_tw)
        kernels.mul_scalar(c_coeffs, c_coeffs, c_scale)  # bit-reversed coefficients of C, over z

    _in_pair(to_coset(hb), to_coset(h), parallel)
    _in_pair(interpolate_c, interpolate_product, parallel)
    kernels.sub(h, h, c_coeffs)
    return h


# --- the odd coset (snarkjs's H basis) -----------------------------------------------


def odd_coset_shift(n: int) -> int:
    """omega_{2n}: the odd 2n-th roots of unity are omega_{2n} * H, where X^n = -1."""
    log_n = check_domain_size(n)
    if log_n + 1 > R_TWO_ADICITY:
        raise CircuitError(f"domain size {n}: the odd coset needs 2n-th roots of unity (at most 2^{R_TWO_ADICITY - 1})")
    return pow(R_GENERATOR, (R - 1) // (2 * n), R)


@lru_cache(maxsize=16)
def _odd_coset_factors(n: int) -> np.ndarray:
    """Bit-reversed omega_{2n}^i / n: undo the unscaled inverse NTT and enter omega_{2n} * H."""
    out = bit_reversed_powers(odd_coset_shift(n), n, pow(n, R - 2, R))
    out.flags.writeable = False  # shared by every caller
    return out


def odd_coset_factors(n: int) -> np.ndarray:
    with _cache_lock:
        return _odd_coset_factors(n)


def qap_odd_coset(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
    """(A*B - C)(omega_{2n}^(2j+1)) for j < n, natural order, from evaluations on H.

    The scalars for a key whose H points are [L'_{2j+1}(tau) / delta]_1 (L' the
    Lagrange basis of the 2n-th roots; snarkjs's section 9): A*B - C has degree
    <= 2n - 2 and vanishes on the even roots (= H), so its value at tau is the sum
    of its odd-root values times L'_{2j+1}(tau), which is h(tau) Z(tau). The
    division by Z is in the key's points, so no quotient is formed here.
    Six NTTs: A, B, C each to the coset (inverse DIF, * bit-reversed
    omega_{2n}^i / n, DIT); then A*B - C pointwise. Checks a_i * b_i == c_i first.
    """
    a, b, c = _checked_rows("qap_odd_coset", a, b, c)
    into = odd_coset_factors(a.shape[0])
    kernels = native_kernels.load()
    if kernels is None:
        return _odd_coset_numpy(a, b, c, into)
    return _odd_coset_native(kernels, a, b, c, into)


def _odd_coset_numpy(a: np.ndarray, b: np.ndarray, c: np.ndarray, into: np.ndarray) -> np.ndarray:
    p = _coset_evaluations(a, into)
    p *= _coset_evaluations(b, into)
    p -= _coset_evaluations(c, into)
    return p


def _odd_coset_native(kernels, a: np.ndarray, b: np.ndarray, c: np.ndarray, into: np.ndarray) -> np.ndarray:
    """`_odd_coset_numpy` in C. Three chains of two NTTs on two threads:
    A's and B's side by side, then C's with each NTT split across both threads
    (top DIF stage by halves of its butterflies, then the two independent halves;
    DIT the other way round), so neither core waits for a third chain."""
    n = a.shape[0]
    inverse_tw, forward_tw = flat_twiddles(n, True), flat_twiddles(n, False)
    pa, pb, pc = np.array(a, copy=True), np.array(b, copy=True), np.array(c, copy=True)
    parallel = n >= NATIVE_THREAD_MIN

    def to_coset(work: np.ndarray):
        return _native_coset_evaluation(kernels, work, into, inverse_tw, forward_tw)

    _in_pair(to_coset(pa), to_coset(pb), parallel)
    if parallel:
        _split_dif(kernels, pc, inverse_tw)
        _in_pair(lambda: kernels.mul(pc[: n // 2], pc[: n // 2], into[: n // 2]),
                 lambda: kernels.mul(pc[n // 2 :], pc[n // 2 :], into[n // 2 :]), True)
        _split_dit(kernels, pc, forward_tw)
    else:
        to_coset(pc)()
    kernels.mul(pa, pa, pb)
    kernels.sub(pa, pa, pc)
    return pa


def _split_dif(kernels, x: np.ndarray, twiddles: np.ndarray) -> None:
    """kernels.dif(x, twiddles) on two threads (same butterflies, same values).

    The top stage's twiddles are entries n/2 - 1 .. n - 2 of the flat table; the
    entries before them are exactly the table for size n/2 (w_{2m} does not
    depend on n), so each half is a size-n/2 DIF with the same table."""
    n, half, quarter = x.shape[0], x.shape[0] // 2, x.shape[0] // 4
    top = twiddles[half - 1 : n - 1]
    _in_pair(lambda: kernels.dif_butterflies(x[:quarter], x[half : half + quarter], top[:quarter]),
             lambda: kernels.dif_butterflies(x[quarter:half], x[half + quarter :], top[quarter:]), True)
    _in_pair(lambda: kernels.dif(x[:half], twiddles), lambda: kernels.dif(x[half:], twiddles), True)


def _split_dit(kernels, x: np.ndarray, twiddles: np.ndarray) -> None:
    """kernels.dit(x, twiddles) on two threads: the halves first, then the last stage."""
    n, half, quarter = x.shape[0], x.shape[0] // 2, x.shape[0] // 4
    top = twiddles[half - 1 : n - 1]
    _in_pair(lambda: kernels.dit(x[:half], twiddles), lambda: kernels.dit(x[half:], twiddles), True)
    _in_pair(lambda: kernels.dit_butterflies(x[:quarter], x[half : half + quarter], top[:quarter]),
             lambda: kernels.dit_butterflies(x[quarter:half], x[half + quarter :], top[quarter:]), True)
