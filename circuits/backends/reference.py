"""Reference curve backend: py_ecc's BN254 and plain Python integers.

Short and obviously correct, slow (a G1 scalar multiplication costs
milliseconds, a pairing about half a second). It is the cross-check for the
fast backend and the verifier's fallback where the native library cannot load.

Representations:
- ScalarVector: `list[int]`, every entry in [0, R).
- G1Vector / G2Vector: `list` of canonical affine points (groth16.types), so
  the vectors are their own canonical form.
- Raw bytes (`*_vector_to_bytes`): the Ethereum precompile encoding (EIP-196 /
  EIP-197), big-endian 32-byte field elements. G1: x || y (64 bytes); G2:
  x.c1 || x.c0 || y.c1 || y.c0 (128 bytes, imaginary part first). The point at
  infinity is all zero bytes, unambiguous since (0, 0) is on neither curve.
"""
from __future__ import annotations

from operator import index
from typing import Sequence

from py_ecc import optimized_bn128 as ob

from ..errors import CircuitError, MalformedArtifact, UnsatisfiedConstraint
from ..field import Q, R, R_GENERATOR, R_TWO_ADICITY
from ..groth16.types import G1Affine, G2Affine
from .base import CurveBackend, G1Vector, G2Vector, GTElement, PreparedG2, ScalarVector, SparseTerms

FQ, FQ2, FQ12 = ob.FQ, ob.FQ2, ob.FQ12

G1_BYTES = 64
G2_BYTES = 128

# --- NTT over Fr with Python ints ---------------------------------------------


def root_of_unity(n: int) -> int:
    """The canonical primitive n-th root of unity omega_n = 5^((R-1)/n) (n a power of two)."""
    check_domain_size(n)
    return pow(R_GENERATOR, (R - 1) // n, R)


def check_domain_size(n: int) -> None:
    if n < 1 or n & (n - 1) or n.bit_length() - 1 > R_TWO_ADICITY:
        raise CircuitError(f"domain size {n} is not a power of two <= 2^{R_TWO_ADICITY}")


def ntt(values: Sequence[int], omega: int) -> list[int]:
    """Evaluations [f(omega^i)] of the polynomial with coefficients `values`
    (iterative radix-2 Cooley-Tukey, bit-reversed input order)."""
    n = len(values)
    out = [values[_bit_reverse(i, n)] % R for i in range(n)]
    size = 2
    while size <= n:
        half = size // 2
        w_step = pow(omega, n // size, R)
        twiddles = [1] * half
        for j in range(1, half):
            twiddles[j] = twiddles[j - 1] * w_step % R
        for start in range(0, n, size):
            for j in range(half):
                u = out[start + j]
                v = out[start + j + half] * twiddles[j] % R
                out[start + j] = (u + v) % R
                out[start + j + half] = (u - v) % R
        size *= 2
    return out


def intt(values: Sequence[int], omega: int) -> list[int]:
    """Inverse of `ntt`: coefficients from evaluations on <omega>."""
    n = len(values)
    n_inv = pow(n, R - 2, R)
    out = ntt(values, pow(omega, R - 2, R))
    return [v * n_inv % R for v in out]


def _bit_reverse(i: int, n: int) -> int:
    bits = n.bit_length() - 1
    return int(format(i, f"0{bits}b")[::-1], 2) if bits else 0


def qap_quotient_ints(a: Sequence[int], b: Sequence[int], c: Sequence[int]) -> list[int]:
    """H = (A*B - C) / (X^n - 1) from evaluations on H (see CurveBackend.qap_quotient).

    Divisibility is exact iff a_i * b_i == c_i for every i, because A*B - C
    restricted to H is exactly that; it is checked first. The quotient is then
    computed on the coset g*H (g = 5), where Z_H is the non-zero constant g^n - 1.
    """
    n = len(a)
    if len(b) != n or len(c) != n:
        raise CircuitError(f"qap_quotient: lengths differ ({len(a)}, {len(b)}, {len(c)})")
    check_domain_size(n)
    for i in range(n):
        if (a[i] * b[i] - c[i]) % R:
            raise UnsatisfiedConstraint(f"A*B - C is not divisible by Z_H: constraint {i} fails")
    omega = root_of_unity(n)
    g = R_GENERATOR
    g_powers = [1] * n
    for i in range(1, n):
        g_powers[i] = g_powers[i - 1] * g % R
    coset_evals = []
    for evals in (a, b, c):
        coeffs = intt(evals, omega)
        coset_evals.append(ntt([x * gp % R for x, gp in zip(coeffs, g_powers)], omega))
    z_inv = pow((pow(g, n, R) - 1) % R, R - 2, R)
    ea, eb, ec = coset_evals
    h_coset = [(x * y - z) * z_inv % R for x, y, z in zip(ea, eb, ec)]
    g_inv = pow(g, R - 2, R)
    h = intt(h_coset, omega)
    gi = 1
    for i in range(n):
        h[i] = h[i] * gi % R
        gi = gi * g_inv % R
    if h[n - 1] != 0:  # cannot happen after the pointwise check; guards the arithmetic
        raise UnsatisfiedConstraint("quotient has degree n - 1: A*B - C not divisible by Z_H")
    return h[: n - 1] if n > 1 else []


def qap_odd_coset_ints(a: Sequence[int], b: Sequence[int], c: Sequence[int]) -> list[int]:
    """(A*B - C)(w^(2j+1)) for j < n, w = omega_{2n}, from evaluations on H
    (see CurveBackend.qap_odd_coset): each of A, B, C is interpolated on H and
    evaluated on the coset w*H (coefficient i times w^i, then an NTT)."""
    n = len(a)
    if len(b) != n or len(c) != n:
        raise CircuitError(f"qap_odd_coset: lengths differ ({len(a)}, {len(b)}, {len(c)})")
    check_domain_size(n)
    if n.bit_length() > R_TWO_ADICITY:
        raise CircuitError(f"domain size {n}: the odd coset needs 2n-th roots of unity")
    for i in range(n):
        if (a[i] * b[i] - c[i]) % R:
            raise UnsatisfiedConstraint(f"A*B - C is not divisible by Z_H: constraint {i} fails")
    omega = root_of_unity(n)
    w = root_of_unity(2 * n)
    w_powers = [pow(w, i, R) for i in range(n)]
    ea, eb, ec = (ntt([x * wp % R for x, wp in zip(intt(evals, omega), w_powers)], omega) for evals in (a, b, c))
    return [(x * y - z) % R for x, y, z in zip(ea, eb, ec)]


# --- conversions between canonical and py_ecc's projective form ------------------


def _g1_to_proj(p: G1Affine) -> tuple:
    if p is None:
        return ob.Z1
    return (FQ(p[0]), FQ(p[1]), FQ.one())


def _g1_from_proj(p: tuple) -> G1Affine:
    if ob.is_inf(p):
        return None
    x, y = ob.normalize(p)
    return (int(x), int(y))


def _g2_to_proj(p: G2Affine) -> tuple:
    if p is None:
        return ob.Z2
    (x0, x1), (y0, y1) = p
    return (FQ2([x0, x1]), FQ2([y0, y1]), FQ2.one())


def _g2_from_proj(p: tuple) -> G2Affine:
    if ob.is_inf(p):
        return None
    x, y = ob.normalize(p)
    return ((int(x.coeffs[0]), int(x.coeffs[1])), (int(y.coeffs[0]), int(y.coeffs[1])))


def _is_coord(v: object) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and 0 <= v < Q


def g1_on_curve(p: G1Affine) -> bool:
    """Well-formed and on y^2 = x^3 + 3 (G1 has cofactor 1, so this is membership)."""
    if p is None:
        return True
    if not (isinstance(p, tuple) and len(p) == 2 and all(_is_coord(v) for v in p)):
        return False
    x, y = p
    return (y * y - x * x * x - 3) % Q == 0


def g2_on_curve(p: G2Affine) -> bool:
    """Well-formed and on the twist y^2 = x^3 + 3/(9+u); not a subgroup check."""
    if p is None:
        return True
    try:
        (x0, x1), (y0, y1) = p
    except (TypeError, ValueError):
        return False
    if not all(_is_coord(v) for v in (x0, x1, y0, y1)):
        return False
    return ob.is_on_curve(_g2_to_proj(p), ob.b2)


def _require_g1(p: G1Affine, what: str = "G1 point") -> None:
    if not g1_on_curve(p):
        raise MalformedArtifact(f"{what} is not on the BN254 G1 curve: {p!r}")


def _require_g2(p: G2Affine, what: str = "G2 point") -> None:
    if not g2_on_curve(p):
        raise MalformedArtifact(f"{what} is not on the BN254 G2 twist: {p!r}")


def _check_scalar(k: object) -> int:
    try:
        return index(k) % R  # ints and numpy ints, never floats
    except TypeError:
        raise CircuitError(f"scalars must be integers, got {type(k).__name__}") from None


# --- MSM (bucket method) ------------------------------------------------------


def _pippenger(points: Sequence[tuple], scalars: Sequence[int], zero: tuple) -> tuple:
    """sum k_i * P_i over projective points by the bucket method, window c bits."""
    pairs = [(p, k) for p, k in zip(points, scalars) if k]
    if not pairs:
        return zero
    if len(pairs) < 8:
        acc = zero
        for p, k in pairs:
            acc = ob.add(acc, ob.multiply(p, k))
        return acc
    c = max(2, len(pairs).bit_length() - 3)
    max_bits = max(k for _, k in pairs).bit_length()
    mask = (1 << c) - 1
    result = zero
    for shift in reversed(range(0, max_bits, c)):
        for _ in range(c):
            result = ob.double(result) if not ob.is_inf(result) else result
        buckets = [zero] * (mask + 1)
        for p, k in pairs:
            d = (k >> shift) & mask
            if d:
                buckets[d] = ob.add(buckets[d], p)
        running, window = zero, zero
        for d in range(mask, 0, -1):
            running = ob.add(running, buckets[d])
            window = ob.add(window, running)
        result = ob.add(result, window)
    return result


class ReferenceBackend(CurveBackend):
    """py_ecc-based backend; see the module docstring for representations."""

    name = "reference"

    # --- scalars -----------------------------------------------------------
    def scalar_vector(self, values: Sequence[int]) -> ScalarVector:
        return [_check_scalar(v) for v in values]

    def scalar_vector_to_ints(self, vector: ScalarVector) -> list[int]:
        return list(vector)

    # --- polynomials ---------------------------------------------------------
    def qap_quotient(self, a: ScalarVector, b: ScalarVector, c: ScalarVector) -> ScalarVector:
        return qap_quotient_ints(a, b, c)

    def qap_odd_coset(self, a: ScalarVector, b: ScalarVector, c: ScalarVector) -> ScalarVector:
        return qap_odd_coset_ints(a, b, c)

    # --- single points ---------------------------------------------------------
    def g1_generator(self) -> G1Affine:
        return _g1_from_proj(ob.G1)

    def g2_generator(self) -> G2Affine:
        return _g2_from_proj(ob.G2)

    def g1_add(self, p: G1Affine, q: G1Affine) -> G1Affine:
        _require_g1(p)
        _require_g1(q)
        return _g1_from_proj(ob.add(_g1_to_proj(p), _g1_to_proj(q)))

    def g1_mul(self, p: G1Affine, k: int) -> G1Affine:
        _require_g1(p)
        return _g1_from_proj(ob.multiply(_g1_to_proj(p), _check_scalar(k)))

    def g2_add(self, p: G2Affine, q: G2Affine) -> G2Affine:
        _require_g2(p)
        _require_g2(q)
        return _g2_from_proj(ob.add(_g2_to_proj(p), _g2_to_proj(q)))

    def g2_mul(self, p: G2Affine, k: int) -> G2Affine:
        _require_g2(p)
        return _g2_from_proj(ob.multiply(_g2_to_proj(p), _check_scalar(k)))

    def g1_is_valid(self, p: G1Affine) -> bool:
        return g1_on_curve(p)

    def g2_is_valid(self, p: G2Affine) -> bool:
        # The twist has a large cofactor: on-curve points outside the order-R
        # subgroup exist and must be refused (small-subgroup attacks on pairings).
        if not g2_on_curve(p):
            return False
        return p is None or ob.is_inf(ob.multiply(_g2_to_proj(p), R))

    def pairing_product_is_one(self, pairs: Sequence[tuple[G1Affine, G2Affine]]) -> bool:
        """Miller loops multiplied together, one final exponentiation."""
        return self._pairing(pairs) == FQ12.one()

    def g2_prepare(self, q: G2Affine) -> PreparedG2 | None:
        """The checked canonical point itself: py_ecc has no faster form worth keeping."""
        return PreparedG2(self.name, q) if self.g2_is_valid(q) else None

    def pairing_product(self, pairs: Sequence[tuple[G1Affine, G2Affine | PreparedG2]]) -> GTElement:
        return GTElement(self.name, self._pairing(pairs))

    def pairing_product_equals(self, pairs: Sequence[tuple[G1Affine, G2Affine | PreparedG2]],
                               target: GTElement) -> bool:
        if not isinstance(target, GTElement) or target.backend != self.name:
            raise CircuitError("pairing target must be a GT element of the reference backend")
        return self._pairing(pairs) == target.value

    def _pairing(self, pairs: Sequence[tuple[G1Affine, G2Affine | PreparedG2]]) -> FQ12:
        from py_ecc.optimized_bn128.optimized_pairing import cast_point_to_fq12, miller_loop

        acc = FQ12.one()
        for p, q in pairs:
            _require_g1(p, "pairing G1 input")
            if isinstance(q, PreparedG2):
                if q.backend != self.name:
                    raise CircuitError(f"a G2 point prepared by the {q.backend} backend given to the reference backend")
                q = q.value  # checked when prepared
            elif not self.g2_is_valid(q):
                raise MalformedArtifact(f"pairing G2 input is not in the order-R subgroup: {q!r}")
            if p is None or q is None:
                continue
            acc = acc * miller_loop(
                ob.twist(_g2_to_proj(q)), cast_point_to_fq12(_g1_to_proj(p)), final_exponentiate=False
            )
        return ob.final_exponentiate(acc)

    # --- bulk points ---------------------------------------------------------------
    def g1_fixed_base(self, base: G1Affine, scalars: Sequence[int]) -> G1Vector:
        _require_g1(base)
        b = _g1_to_proj(base)
        return [_g1_from_proj(ob.multiply(b, _check_scalar(k))) for k in scalars]

    def g2_fixed_base(self, base: G2Affine, scalars: Sequence[int]) -> G2Vector:
        _require_g2(base)
        b = _g2_to_proj(base)
        return [_g2_from_proj(ob.multiply(b, _check_scalar(k))) for k in scalars]

    def g1_msm(self, points: G1Vector, scalars: ScalarVector, threads: int | None = None) -> G1Affine:
        # pure Python: one thread whatever `threads` says
        _check_msm_lengths(points, scalars)
        return _g1_from_proj(_pippenger([_g1_to_proj(p) for p in points[: len(scalars)]], scalars, ob.Z1))

    def g2_msm(self, points: G2Vector, scalars: ScalarVector, threads: int | None = None) -> G2Affine:
        _check_msm_lengths(points, scalars)
        return _g2_from_proj(_pippenger([_g2_to_proj(p) for p in points[: len(scalars)]], scalars, ob.Z2))

    def g1_vector_scale(self, vector: G1Vector, k: int) -> G1Vector:
        k = _check_scalar(k)
        return [None if p is None else _g1_from_proj(ob.multiply(_g1_to_proj(p), k)) for p in vector]

    def g1_sparse_combination(self, points: G1Vector, terms: SparseTerms, size: int) -> G1Vector:
        return [_g1_from_proj(p) for p in _sparse_combination(points, terms, size, _g1_to_proj, ob.Z1)]

    def g2_sparse_combination(self, points: G2Vector, terms: SparseTerms, size: int) -> G2Vector:
        return [_g2_from_proj(p) for p in _sparse_combination(points, terms, size, _g2_to_proj, ob.Z2)]

    def g1_vector(self, points: Sequence[G1Affine]) -> G1Vector:
        for i, p in enumerate(points):
            _require_g1(p, f"G1 point {i}")
        return list(points)

    def g2_vector(self, points: Sequence[G2Affine]) -> G2Vector:
        for i, p in enumerate(points):
            if not self.g2_is_valid(p):
                raise MalformedArtifact(f"G2 point {i} is not in the order-R subgroup")
        return list(points)

    def g1_vector_to_canonical(self, vector: G1Vector) -> list[G1Affine]:
        return list(vector)

    def g2_vector_to_canonical(self, vector: G2Vector) -> list[G2Affine]:
        return list(vector)

    def g1_vector_to_bytes(self, vector: G1Vector) -> bytes:
        return b"".join(encode_g1(p) for p in vector)

    def g1_vector_from_bytes(self, data: bytes) -> G1Vector:
        if len(data) % G1_BYTES:
            raise MalformedArtifact(f"G1 vector: {len(data)} bytes is not a multiple of {G1_BYTES}")
        out = []
        for i in range(0, len(data), G1_BYTES):
            p = decode_g1(data[i : i + G1_BYTES])
            if not g1_on_curve(p):
                raise MalformedArtifact(f"G1 vector: point {i // G1_BYTES} is not on the curve")
            out.append(p)
        return out

    def g2_vector_to_bytes(self, vector: G2Vector) -> bytes:
        return b"".join(encode_g2(p) for p in vector)

    def g2_vector_from_bytes(self, data: bytes, check_subgroup: bool = True) -> G2Vector:
        if len(data) % G2_BYTES:
            raise MalformedArtifact(f"G2 vector: {len(data)} bytes is not a multiple of {G2_BYTES}")
        out = []
        for i in range(0, len(data), G2_BYTES):
            p = decode_g2(data[i : i + G2_BYTES])
            if not (self.g2_is_valid(p) if check_subgroup else g2_on_curve(p)):
                raise MalformedArtifact(f"G2 vector: point {i // G2_BYTES} is not in the order-R subgroup")
            out.append(p)
        return out


def _sparse_combination(points: Sequence, terms: SparseTerms, size: int, to_proj, zero: tuple) -> list[tuple]:
    """Projective sums, term by term (see CurveBackend.g1_sparse_combination)."""
    out = [zero] * size
    for t, s, k in zip(terms.target, terms.source, terms.coefficient):
        t, s = int(t), int(s)
        if not (0 <= t < size and 0 <= s < len(points)):
            raise CircuitError("sparse combination: a term's target or source is out of range")
        out[t] = ob.add(out[t], ob.multiply(to_proj(points[s]), _check_scalar(k)))
    return out


def _check_msm_lengths(points: Sequence, scalars: Sequence) -> None:
    if len(scalars) > len(points):
        raise CircuitError(f"MSM: {len(scalars)} scalars for {len(points)} points")


# --- EIP-196/197 encoding -------------------------------------------------------


def _be(v: int) -> bytes:
    return v.to_bytes(32, "big")


def encode_g1(p: G1Affine) -> bytes:
    return bytes(G1_BYTES) if p is None else _be(p[0]) + _be(p[1])


def decode_g1(data: bytes) -> G1Affine:
    """Parse 64 bytes; coordinates >= Q are rejected (non-canonical)."""
    if data == bytes(G1_BYTES):
        return None
    x, y = int.from_bytes(data[:32], "big"), int.from_bytes(data[32:], "big")
    if x >= Q or y >= Q:
        raise MalformedArtifact("G1 point: coordinate not reduced mod Q")
    return (x, y)


def encode_g2(p: G2Affine) -> bytes:
    if p is None:
        return bytes(G2_BYTES)
    (x0, x1), (y0, y1) = p
    return _be(x1) + _be(x0) + _be(y1) + _be(y0)


def decode_g2(data: bytes) -> G2Affine:
    if data == bytes(G2_BYTES):
        return None
    x1, x0, y1, y0 = (int.from_bytes(data[i : i + 32], "big") for i in range(0, 128, 32))
    if max(x0, x1, y0, y1) >= Q:
        raise MalformedArtifact("G2 point: coordinate not reduced mod Q")
    return ((x0, x1), (y0, y1))
