"""The narrow interface between the proof system and the curve arithmetic.

Groth16 code (setup, prove, verify) talks only to `CurveBackend`. Points cross
this interface in canonical form (affine Python ints, see groth16.types) one
at a time, and in bulk as opaque backend vectors that never leave the backend
except through `*_vector_to_canonical`, `*_vector_to_bytes` and
`*_vector_to_montgomery`. Scalars are
Python ints in [0, R) or opaque `ScalarVector`s.

Two implementations exist: `reference` (py_ecc and plain Python: short,
obviously correct, slow) and `mcl` (the mcl library from the `mclbn256` wheel
switched to alt_bn128 through ctypes, numpy/zk_dtypes for NTTs). Given the
same inputs both return identical canonical values.
"""
from __future__ import annotations

import functools
import os

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from ..errors import MalformedArtifact, UnsatisfiedConstraint
from ..field import Q, R
from ..relation_arrays import ArrayR1CS
from ..groth16.types import G1Affine, G2Affine

# Opaque bulk containers; each backend chooses its own representation.
ScalarVector = Any
G1Vector = Any
G2Vector = Any


@dataclass(frozen=True)
class SparseTerms:
    """The non-zero entries of a sparse matrix M: M[target[k], source[k]] = coefficient[k].

    `target` and `source` are int64 arrays, `coefficient` a list of ints in
    [0, R); all three have one entry per term, in any order, and a (target,
    source) pair may repeat (the entries add up)."""

    target: np.ndarray
    source: np.ndarray
    coefficient: list[int]

    def __post_init__(self) -> None:
        if not (len(self.target) == len(self.source) == len(self.coefficient)):
            raise ValueError("sparse terms: target, source and coefficient lengths differ")


@dataclass(frozen=True)
class PreparedG2:
    """A G2 point that `backend` checked (order-R subgroup) once, in that backend's
    own immutable form: pairings take it without checking it again (a verifying
    key's gamma and delta, a proof's B). Made only by `CurveBackend.g2_prepare`."""

    backend: str
    value: Any


@dataclass(frozen=True)
class GTElement:
    """An element of GT (a pairing product after the final exponentiation) in
    `backend`'s own immutable form; only compared, with `pairing_product_equals`."""

    backend: str
    value: Any


class CurveBackend(ABC):
    name: str

    # --- scalars -----------------------------------------------------------
    @abstractmethod
    def scalar_vector(self, values: Sequence[int]) -> ScalarVector:
        """Pack ints (reduced mod R by the caller or not) into a backend vector."""

    @abstractmethod
    def scalar_vector_to_ints(self, vector: ScalarVector) -> list[int]: ...

    def scalar_vector_from_limbs(self, limbs: np.ndarray) -> ScalarVector:
        """An (n, 4) array of little-endian uint64 limbs (standard form, each value below R, as a .wtns
        file holds them) as a scalar vector. This default goes through Python ints."""
        raw = np.ascontiguousarray(limbs, dtype="<u8").tobytes()
        return self.scalar_vector([int.from_bytes(raw[i:i + 32], "little") for i in range(0, len(raw), 32)])

    def is_scalar_vector(self, value: Any) -> bool:
        """Whether `value` is already one of this backend's scalar vectors (then passed on as it is)."""
        return False

    def row_evaluations(self, relation: ArrayR1CS, witness: ScalarVector, n: int
                        ) -> tuple[ScalarVector, ScalarVector, ScalarVector]:
        """(A(w), B(w), C(w)) of a relation in arrays, each padded with zeros to
        `n`, with A's binding rows m + i = w_i for the public wires 0..n_public.
        Raises UnsatisfiedConstraint at the first row where A*B != C.
        This default goes term by term in Python; a backend may vectorise it."""
        w = self.scalar_vector_to_ints(witness)
        m = relation.n_constraints
        a, b, c = ([sum(w[wire] * k for wire, k in rows.row(j)) % R for j in range(m)] + [0] * (n - m)
                   for rows in (relation.a, relation.b, relation.c))
        for j in range(m):
            if a[j] * b[j] % R != c[j]:
                raise UnsatisfiedConstraint.at(j)
        a[m:m + relation.n_public + 1] = w[:relation.n_public + 1]
        return self.scalar_vector(a), self.scalar_vector(b), self.scalar_vector(c)

    # --- polynomials over Fr on power-of-two domains ----------------------
    @abstractmethod
    def qap_quotient(self, a: ScalarVector, b: ScalarVector, c: ScalarVector) -> ScalarVector:
        """Coefficients of H = (A*B - C) / Z_H.

        a, b, c are the evaluations of A, B, C on the multiplicative subgroup H
        of size n = len(a) (a power of two, generator omega_n = 5^((R-1)/n)),
        Z_H = X^n - 1. Returns the n - 1 coefficients h_0 .. h_{n-2} (the
        quotient has degree n - 2). Raises if A*B - C is not divisible by Z_H.
        """

    @abstractmethod
    def qap_odd_coset(self, a: ScalarVector, b: ScalarVector, c: ScalarVector) -> ScalarVector:
        """Values of A*B - C at the odd 2n-th roots of unity w^(2j+1), j < n
        (w = omega_{2n} = 5^((R-1)/(2n)), natural order), from the same inputs as
        `qap_quotient`. These are the H-MSM scalars for keys in snarkjs's basis
        (keys.ODD_COSET_LAGRANGE); no quotient is formed, the division by Z is
        in the key. Raises if A*B - C does not vanish on H.
        """

    # --- single points (canonical form) -------------------------------------
    @abstractmethod
    def g1_generator(self) -> G1Affine: ...

    @abstractmethod
    def g2_generator(self) -> G2Affine: ...

    @abstractmethod
    def g1_add(self, p: G1Affine, q: G1Affine) -> G1Affine: ...

    @abstractmethod
    def g1_mul(self, p: G1Affine, k: int) -> G1Affine: ...

    @abstractmethod
    def g2_add(self, p: G2Affine, q: G2Affine) -> G2Affine: ...

    @abstractmethod
    def g2_mul(self, p: G2Affine, k: int) -> G2Affine: ...

    @abstractmethod
    def g1_is_valid(self, p: G1Affine) -> bool:
        """On the curve (and, for G2, in the prime-order subgroup)."""

    @abstractmethod
    def g2_is_valid(self, p: G2Affine) -> bool: ...

    @abstractmethod
    def pairing_product_is_one(self, pairs: Sequence[tuple[G1Affine, G2Affine]]) -> bool:
        """prod e(P_i, Q_i) == 1 in GT."""

    # --- pairings against a fixed target (a prepared verifying key) -------------------
    # G2 inputs below are canonical points (checked on every call, MalformedArtifact
    # when invalid) or this backend's PreparedG2 (checked once, when prepared).

    @abstractmethod
    def g2_prepare(self, q: G2Affine) -> PreparedG2 | None:
        """q in this backend's form for pairings, or None unless q is in the order-R
        subgroup (the check of g2_is_valid, done here once)."""

    @abstractmethod
    def pairing_product(self, pairs: Sequence[tuple[G1Affine, G2Affine | PreparedG2]]) -> GTElement:
        """prod e(P_i, Q_i) in GT (final exponentiation applied)."""

    @abstractmethod
    def pairing_product_equals(self, pairs: Sequence[tuple[G1Affine, G2Affine | PreparedG2]],
                               target: GTElement) -> bool:
        """prod e(P_i, Q_i) == target: one multi-Miller loop, one final exponentiation."""

    # --- bulk points ---------------------------------------------------------
    @abstractmethod
    def g1_fixed_base(self, base: G1Affine, scalars: Sequence[int]) -> G1Vector:
        """[k * base for k in scalars] (key generation)."""

    @abstractmethod
    def g2_fixed_base(self, base: G2Affine, scalars: Sequence[int]) -> G2Vector: ...

    @abstractmethod
    def g1_msm(self, points: G1Vector, scalars: ScalarVector, threads: int | None = None) -> G1Affine:
        """sum k_i * P_i; scalars may be shorter than points (missing ones are 0).
        `threads` caps the threads this call may use (None: the backend's choice)."""

    @abstractmethod
    def g2_msm(self, points: G2Vector, scalars: ScalarVector, threads: int | None = None) -> G2Affine: ...

    @abstractmethod
    def g1_vector_scale(self, vector: G1Vector, k: int) -> G1Vector:
        """[k * P for P in vector], a new vector (a phase-2 contribution divides
        whole key sections by its secret)."""

    @abstractmethod
    def g1_sparse_combination(self, points: G1Vector, terms: SparseTerms, size: int) -> G1Vector:
        """out[t] = sum of coefficient * points[source] over the terms with target t,
        for t < size (infinity where there is none): a sparse matrix times a
        vector of points, as a key is combined from phase-1 points."""

    @abstractmethod
    def g2_sparse_combination(self, points: G2Vector, terms: SparseTerms, size: int) -> G2Vector: ...

    @abstractmethod
    def g1_vector(self, points: Sequence[G1Affine]) -> G1Vector: ...

    @abstractmethod
    def g2_vector(self, points: Sequence[G2Affine]) -> G2Vector: ...

    @abstractmethod
    def g1_vector_to_canonical(self, vector: G1Vector) -> list[G1Affine]: ...

    @abstractmethod
    def g2_vector_to_canonical(self, vector: G2Vector) -> list[G2Affine]: ...

    @abstractmethod
    def g1_vector_to_bytes(self, vector: G1Vector) -> bytes:
        """The backend's raw storage form (fast to load back with g1_vector_from_bytes)."""

    @abstractmethod
    def g1_vector_from_bytes(self, data: bytes) -> G1Vector:
        """Inverse of g1_vector_to_bytes; validates every point (raises MalformedArtifact)."""

    @abstractmethod
    def g2_vector_to_bytes(self, vector: G2Vector) -> bytes: ...

    @abstractmethod
    def g2_vector_from_bytes(self, data: bytes, check_subgroup: bool = True) -> G2Vector:
        """Inverse of g2_vector_to_bytes; every point must be on the twist, and with
        check_subgroup (default) in the order-R subgroup, which costs a scalar
        multiplication per point. Skip it only for data whose integrity is
        assured otherwise (a key this process wrote and checksummed)."""

    def vector_from_own_bytes(self, group: str, data: bytes) -> G1Vector | G2Vector:
        """Bytes this backend wrote itself and whose integrity is assured otherwise (a proving key whose
        files match the SHA-256 recorded when it was saved): no per-point work where the backend can
        skip it. The default validates like the checked loaders."""
        return self.g1_vector_from_bytes(data) if group == "g1" else self.g2_vector_from_bytes(data, check_subgroup=False)

    def vector_from_own_file(self, group: str, path: str | os.PathLike[str]) -> G1Vector | G2Vector:
        """`vector_from_own_bytes` of a file's contents; a backend whose vectors can live in a read-only
        memory map returns one (the file is then read as the MSMs touch it, and shared between processes
        through the page cache). The file must not be rewritten in place while the vector is in use."""
        with open(path, "rb") as handle:
            return self.vector_from_own_bytes(group, handle.read())

    # --- the affine Montgomery layout of snarkjs's .zkey and .ptau files ---------
    # Each coordinate is 32 bytes little-endian holding x * 2^256 mod Q (an Fq2
    # element as c0 || c1); a point is x || y; all-zero bytes are the point at
    # infinity. The defaults below parse point by point; backends whose own
    # layout is close override them with bulk conversions.

    def g1_vector_from_montgomery(self, data: bytes) -> G1Vector:
        """G1 points in the affine Montgomery layout; every coordinate must be
        below Q and every point on the curve (raises MalformedArtifact)."""
        require_montgomery_points(data, 2, "G1")
        coords = montgomery_coordinates(data, 2, "G1")
        return self.g1_vector([None if p == (0, 0) else p for p in zip(coords[0::2], coords[1::2])])

    def g2_vector_from_montgomery(self, data: bytes, check_subgroup: bool = True) -> G2Vector:
        """G2 points in the affine Montgomery layout, as g1_vector_from_montgomery;
        check_subgroup as in g2_vector_from_bytes (this default always checks)."""
        require_montgomery_points(data, 4, "G2")
        c = montgomery_coordinates(data, 4, "G2")
        points = [((c[i], c[i + 1]), (c[i + 2], c[i + 3])) for i in range(0, len(c), 4)]
        return self.g2_vector([None if p == ((0, 0), (0, 0)) else p for p in points])

    def g1_vector_to_montgomery(self, vector: G1Vector) -> bytes:
        """The vector in the affine Montgomery layout (inverse of g1_vector_from_montgomery)."""
        return b"".join(montgomery_point(p, 2) for p in self.g1_vector_to_canonical(vector))

    def g2_vector_to_montgomery(self, vector: G2Vector) -> bytes:
        return b"".join(montgomery_point(p, 4) for p in self.g2_vector_to_canonical(vector))

    def vector_len(self, vector: Any) -> int:
        return len(vector)

    def vector_slice(self, vector: Any, start: int, stop: int) -> Any:
        """Entries start..stop-1 of a scalar or point vector (a view where the backend can)."""
        return vector[start:stop]


_MONT_Q = (1 << 256) % Q
_MONT_Q_INV = pow(1 << 256, -1, Q)


def montgomery_point(p: G1Affine | G2Affine, per_point: int) -> bytes:
    """One canonical point (G1: per_point 2, G2: 4) in the affine Montgomery layout."""
    if p is None:
        return bytes(32 * per_point)
    coords = p if per_point == 2 else (*p[0], *p[1])
    return b"".join((v * _MONT_Q % Q).to_bytes(32, "little") for v in coords)


def montgomery_coordinates(data: bytes, per_point: int, what: str) -> list[int]:
    """Standard-form ints of the 32-byte Montgomery coordinates in `data`
    (`per_point` coordinates a point), refusing any >= Q."""
    unit = 32 * per_point
    if len(data) % unit:
        raise MalformedArtifact(f"{what} vector: {len(data)} bytes is not a multiple of {unit}")
    out = []
    for i in range(0, len(data), 32):
        v = int.from_bytes(data[i : i + 32], "little")
        if v >= Q:
            raise MalformedArtifact(f"{what} vector: point {i // unit} has a coordinate >= Q")
        out.append(v * _MONT_Q_INV % Q)
    return out


# --- whole-vector checks of the affine Montgomery layout ----------------------------------
# One pass of numpy over a section instead of a Python loop per point: limbs
# compared with Q, and the curve equation evaluated in zk_dtypes' Montgomery
# Fq (the same words: x * 2^256 mod Q in four little-endian u64 limbs), so
# no coordinate is converted. Each check is the per-point one, on every point.

@functools.lru_cache(maxsize=None)
def fq_dtype(form: str = "mont") -> np.dtype:
    """zk_dtypes' BN254 Fq in Montgomery ("mont") or standard ("std") form (made once per form;
    zk_dtypes registers its dtypes at run time)."""
    import zk_dtypes

    return np.dtype(zk_dtypes.prime_field(Q, form))


_Q_LIMBS = [np.uint64((Q >> (64 * i)) & 0xFFFF_FFFF_FFFF_FFFF) for i in range(4)]


def limbs_below_q(limbs: np.ndarray) -> np.ndarray:
    """Row-wise (four little-endian u64 limbs) < Q, a vectorised lexicographic compare."""
    less = np.zeros(limbs.shape[0], dtype=bool)
    equal = np.ones(limbs.shape[0], dtype=bool)
    for i in reversed(range(4)):
        less |= equal & (limbs[:, i] < _Q_LIMBS[i])
        equal &= limbs[:, i] == _Q_LIMBS[i]
    return less


def _fq_constant(v: int) -> np.ndarray:
    return np.frombuffer((v * _MONT_Q % Q).to_bytes(32, "little"), dtype="<u8").view(fq_dtype())


# b' = 3 / (9 + u), the constant of the twist y^2 = x^3 + b' over Fq2 = Fq[u]/(u^2 + 1)
B2 = (
    19485874751759354771024239261021720505790618469301721065564631296452457478373,
    266929791119991161246907387137283842545076965332900288569378510910307636690,
)


def first_invalid_montgomery(data: bytes, per_point: int) -> tuple[int, str] | None:
    """(index, "coordinate" or "curve") of the first bad point of an affine
    Montgomery vector (G1: per_point 2, G2: 4), or None when every coordinate is
    below Q and every point is all zeros (infinity) or on its curve: y^2 = x^3 + 3
    in G1, y^2 = x^3 + b' on the twist (not a subgroup check). The byte length
    must be a whole number of points."""
    words = np.frombuffer(data, dtype="<u8").reshape(-1, 4)
    bad = np.flatnonzero(~limbs_below_q(words))
    if bad.size:
        return int(bad[0]) // per_point, "coordinate"
    if not words.shape[0]:
        return None
    f = words.view(fq_dtype()).reshape(-1, per_point)
    if per_point == 2:
        x, y = f[:, 0], f[:, 1]
        off = y * y != x * x * x + _fq_constant(3)
    else:
        x0, x1, y0, y1 = f[:, 0], f[:, 1], f[:, 2], f[:, 3]
        xx0, xx1 = x0 * x0 - x1 * x1, (x0 + x0) * x1
        x30, x31 = xx0 * x0 - xx1 * x1, xx0 * x1 + xx1 * x0
        yy0, yy1 = y0 * y0 - y1 * y1, (y0 + y0) * y1
        off = (yy0 != x30 + _fq_constant(B2[0])) | (yy1 != x31 + _fq_constant(B2[1]))
    infinity = ~words.reshape(-1, 4 * per_point).any(axis=1)
    bad = np.flatnonzero(off & ~infinity)
    return (int(bad[0]), "curve") if bad.size else None


def require_montgomery_points(data: bytes, per_point: int, what: str) -> None:
    """first_invalid_montgomery, raising MalformedArtifact in the backends' wording."""
    unit = 32 * per_point
    if len(data) % unit:
        raise MalformedArtifact(f"{what} vector: {len(data)} bytes is not a multiple of {unit}")
    found = first_invalid_montgomery(data, per_point)
    if found is not None:
        index, kind = found
        if kind == "coordinate":
            raise MalformedArtifact(f"{what} vector: point {index} has a coordinate >= Q")
        curve = "the curve" if per_point == 2 else "the twist"
        raise MalformedArtifact(f"{what} vector: point {index} is not on {curve}")
