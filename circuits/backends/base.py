"""The narrow interface between the proof system and the curve arithmetic.

Groth16 code (setup, prove, verify) talks only to `CurveBackend`. Points cross
this interface in canonical form (affine Python ints, see groth16.types) one
at a time, and in bulk as opaque backend vectors that never leave the backend
except through `*_vector_to_canonical` / `*_vector_to_bytes`. Scalars are
Python ints in [0, R) or opaque `ScalarVector`s.

Two implementations exist: `reference` (py_ecc and plain Python: short,
obviously correct, slow) and `mcl` (the mcl library from the `mclbn256` wheel
switched to alt_bn128 through ctypes, numpy/zk_dtypes for NTTs). Given the
same inputs both return identical canonical values.
"""
from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any, Sequence

from ..groth16.types import G1Affine, G2Affine

# Opaque bulk containers; each backend chooses its own representation.
ScalarVector = Any
G1Vector = Any
G2Vector = Any


class CurveBackend(ABC):
    name: str

    # --- scalars -----------------------------------------------------------
    @abstractmethod
    def scalar_vector(self, values: Sequence[int]) -> ScalarVector:
        """Pack ints (reduced mod R by the caller or not) into a backend vector."""

    @abstractmethod
    def scalar_vector_to_ints(self, vector: ScalarVector) -> list[int]: ...

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

    def vector_len(self, vector: Any) -> int:
        return len(vector)
