"""The mcl backend's operations on scalars, single points, pairings and point vectors.

`MclOperations` holds the methods of `circuits.backends.mcl.MclBackend` that
convert and check: scalar vectors (Montgomery Fr), the QAP polynomials (numpy
NTTs), canonical points and their group law, pairing products (one
multi-Miller loop), and vectors of points to and from canonical points and raw
or Montgomery bytes. It is a mixin: the loaded library (`self._lib`) and the
G1 and G2 groups (`self._g1`, `self._g2`, circuits/backends/mcl.py) are the
backend's.
"""
from __future__ import annotations

import os
from operator import index
from typing import Sequence

import numpy as np

from ..errors import CircuitError, MalformedArtifact
from ..field import R
from ..groth16.types import G1Affine, G2Affine
from ..relation_arrays import ArrayR1CS
from . import ntt, sparse_rows
from .base import G1Vector, G2Vector, GTElement, PreparedG2, ScalarVector
from .mcl_points import (_G2_ETH, FP_LIMBS, G1_BYTES, G1_LIMBS, G2_BYTES, G2_LIMBS, GT_LIMBS, _check_vector,
                         _g1_from_canonical, _g1_to_canonical, _g1_try, _g2_from_canonical, _g2_to_canonical, _g2_try,
                         _normalised, _structs_from_affine)
from .mcl_scalars import _standard_limbs

__all__ = ["MclOperations"]


class MclOperations:
    """Scalars, polynomials, single points, pairings and vector conversions of the mcl backend (mixin)."""

    name: str

    # --- scalars -----------------------------------------------------------------
    def scalar_vector(self, values: Sequence[int]) -> ScalarVector:
        if isinstance(values, np.ndarray) and values.dtype == ntt.FR:
            return np.ascontiguousarray(values)
        try:
            reduced = [index(v) % R for v in values]  # index(): ints and numpy ints, never floats
        except TypeError as exc:
            raise CircuitError(f"scalars must be integers: {exc}") from None
        return ntt.fr_array(reduced) if reduced else np.zeros(0, dtype=ntt.FR)

    def scalar_vector_from_limbs(self, limbs: np.ndarray) -> ScalarVector:
        """One vectorised multiplication by 2^256: the limbs read as Montgomery words are x * 2^-256."""
        if limbs.shape[0] == 0:
            return np.zeros(0, dtype=ntt.FR)
        return np.ascontiguousarray(limbs, dtype=np.uint64).view(ntt.FR).reshape(-1) * ntt._TO_MONTGOMERY

    def is_scalar_vector(self, value: object) -> bool:
        return isinstance(value, np.ndarray) and value.dtype == ntt.FR and value.ndim == 1

    def scalar_vector_to_ints(self, vector: ScalarVector) -> list[int]:
        std = _standard_limbs(vector).tobytes()
        return [int.from_bytes(std[i : i + 32], "little") for i in range(0, len(std), 32)]

    def row_evaluations(self, relation: ArrayR1CS, witness: ScalarVector, n: int
                        ) -> tuple[ScalarVector, ScalarVector, ScalarVector]:
        return sparse_rows.row_evaluations(relation, self.scalar_vector(witness), n)

    # --- polynomials -----------------------------------------------------------------
    def qap_quotient(self, a: ScalarVector, b: ScalarVector, c: ScalarVector) -> ScalarVector:
        return ntt.qap_quotient(a, b, c)

    def qap_odd_coset(self, a: ScalarVector, b: ScalarVector, c: ScalarVector) -> ScalarVector:
        return ntt.qap_odd_coset(a, b, c)

    # --- single points -------------------------------------------------------------------
    def g1_generator(self) -> G1Affine:
        return (1, 2)

    def g2_generator(self) -> G2Affine:
        return _G2_ETH

    def g1_add(self, p: G1Affine, q: G1Affine) -> G1Affine:
        a, b = _g1_from_canonical(self._lib, p), _g1_from_canonical(self._lib, q)
        self._lib.mclBnG1_add(a.ctypes.data, a.ctypes.data, b.ctypes.data)
        return _g1_to_canonical(self._lib, a)

    def g1_mul(self, p: G1Affine, k: int) -> G1Affine:
        a = _g1_from_canonical(self._lib, p)
        s = self.scalar_vector([k])
        self._lib.mclBnG1_mul(a.ctypes.data, a.ctypes.data, s.ctypes.data)
        return _g1_to_canonical(self._lib, a)

    def g2_add(self, p: G2Affine, q: G2Affine) -> G2Affine:
        a, b = _g2_from_canonical(self._lib, p), _g2_from_canonical(self._lib, q)
        self._lib.mclBnG2_add(a.ctypes.data, a.ctypes.data, b.ctypes.data)
        return _g2_to_canonical(self._lib, a)

    def g2_mul(self, p: G2Affine, k: int) -> G2Affine:
        a = _g2_from_canonical(self._lib, p)
        s = self.scalar_vector([k])
        self._lib.mclBnG2_mul(a.ctypes.data, a.ctypes.data, s.ctypes.data)
        return _g2_to_canonical(self._lib, a)

    def g1_is_valid(self, p: G1Affine) -> bool:
        return _g1_try(self._lib, p) is not None

    def g2_is_valid(self, p: G2Affine) -> bool:
        return _g2_try(self._lib, p) is not None

    def pairing_product_is_one(self, pairs: Sequence[tuple[G1Affine, G2Affine]]) -> bool:
        """One multi-Miller loop (mclBn_millerLoopVec), one final exponentiation."""
        return bool(self._lib.mclBnGT_isOne(self._pairing(pairs).ctypes.data))

    def g2_prepare(self, q: G2Affine) -> PreparedG2 | None:
        """The checked mclBnG2 struct as bytes (immutable: a prepared key cannot be altered).
        mcl's line precomputation (mclBn_precomputeG2) is not used: measured, a
        precomputed loop is no faster than millerLoopVec over the three pairs of a
        verification (which shares the squarings), and it mishandles a G1 point at
        infinity."""
        struct = _g2_try(self._lib, q)
        return None if struct is None else PreparedG2(self.name, struct.tobytes())

    def pairing_product(self, pairs: Sequence[tuple[G1Affine, G2Affine | PreparedG2]]) -> GTElement:
        return GTElement(self.name, self._pairing(pairs).tobytes())

    def pairing_product_equals(self, pairs: Sequence[tuple[G1Affine, G2Affine | PreparedG2]],
                               target: GTElement) -> bool:
        if not isinstance(target, GTElement) or target.backend != self.name:
            raise CircuitError("pairing target must be a GT element of the mcl backend")
        expected = np.frombuffer(target.value, dtype=np.uint64)
        return bool(self._lib.mclBnGT_isEqual(self._pairing(pairs).ctypes.data, expected.ctypes.data))

    def _pairing(self, pairs: Sequence[tuple[G1Affine, G2Affine | PreparedG2]]) -> np.ndarray:
        """prod e(P_i, Q_i) as an mclBnGT: one millerLoopVec, one final exponentiation."""
        # Every input is validated once, including pairs skipped as trivial; the
        # structs made by the check are the Miller loop's inputs. A PreparedG2 was
        # checked when it was made.
        g1s = np.zeros((len(pairs), G1_LIMBS), dtype=np.uint64)
        g2s = np.zeros((len(pairs), G2_LIMBS), dtype=np.uint64)
        live = []
        for i, (p, q) in enumerate(pairs):
            if _g1_try(self._lib, p, g1s[i]) is None:
                raise MalformedArtifact(f"pairing G1 input is not on the curve: {p!r}")
            if isinstance(q, PreparedG2):
                if q.backend != self.name:
                    raise CircuitError(f"a G2 point prepared by the {q.backend} backend given to mcl")
                g2s[i] = np.frombuffer(q.value, dtype=np.uint64)
            elif _g2_try(self._lib, q, g2s[i]) is None:
                raise MalformedArtifact(f"pairing G2 input is not in the order-R subgroup: {q!r}")
            if p is not None and not self._lib.mclBnG2_isZero(g2s[i].ctypes.data):
                live.append(i)
        f = np.zeros(GT_LIMBS, dtype=np.uint64)
        if not live:
            self._lib.mclBnGT_setInt(f.ctypes.data, 1)
            return f
        g1s, g2s = np.ascontiguousarray(g1s[live]), np.ascontiguousarray(g2s[live])
        self._lib.mclBn_millerLoopVec(f.ctypes.data, g1s.ctypes.data, g2s.ctypes.data, len(live))
        self._lib.mclBn_finalExp(f.ctypes.data, f.ctypes.data)
        return f


    def g1_vector(self, points: Sequence[G1Affine]) -> G1Vector:
        out = np.zeros((len(points), G1_LIMBS), dtype=np.uint64)
        for i, p in enumerate(points):
            if _g1_try(self._lib, p, out[i]) is None:
                raise MalformedArtifact(f"G1 point {i} is not on the BN254 G1 curve: {p!r}")
        return out

    def g2_vector(self, points: Sequence[G2Affine]) -> G2Vector:
        out = np.zeros((len(points), G2_LIMBS), dtype=np.uint64)
        for i, p in enumerate(points):
            if _g2_try(self._lib, p, out[i]) is None:
                raise MalformedArtifact(f"G2 point {i} is not in the BN254 G2 order-R subgroup: {p!r}")
        return out

    def g1_vector_to_canonical(self, vector: G1Vector) -> list[G1Affine]:
        return [_g1_to_canonical(self._lib, row) for row in vector]

    def g2_vector_to_canonical(self, vector: G2Vector) -> list[G2Affine]:
        return [_g2_to_canonical(self._lib, row) for row in vector]

    def g1_vector_to_bytes(self, vector: G1Vector) -> bytes:
        return np.ascontiguousarray(vector, dtype="<u8").tobytes()

    def g1_vector_from_bytes(self, data: bytes) -> G1Vector:
        return self._g1.check_raw(data, G1_BYTES, "G1")

    def vector_from_own_bytes(self, group: str, data: bytes) -> G1Vector | G2Vector:
        """The structs as written: one copy, no curve checks (see the base class for when that is right)."""
        unit, limbs = (G1_BYTES, G1_LIMBS) if group == "g1" else (G2_BYTES, G2_LIMBS)
        if len(data) % unit:
            raise MalformedArtifact(f"{group.upper()} vector: {len(data)} bytes is not a multiple of {unit}")
        return np.frombuffer(data, dtype="<u8").reshape(-1, limbs).copy()

    def vector_from_own_file(self, group: str, path: str | os.PathLike[str]) -> G1Vector | G2Vector:
        """The file's structs as a read-only memory map: nothing is read or copied until an MSM touches
        the points (mulVec and the native MSM take the mapped rows as they are)."""
        unit, limbs = (G1_BYTES, G1_LIMBS) if group == "g1" else (G2_BYTES, G2_LIMBS)
        size = os.path.getsize(path)
        if size % unit:
            raise MalformedArtifact(f"{group.upper()} vector: {size} bytes is not a multiple of {unit}")
        if size == 0:
            return np.zeros((0, limbs), dtype=np.uint64)
        return np.memmap(path, dtype="<u8", mode="r", shape=(size // unit, limbs))

    def g2_vector_to_bytes(self, vector: G2Vector) -> bytes:
        return np.ascontiguousarray(vector, dtype="<u8").tobytes()

    def g1_vector_from_montgomery(self, data: bytes) -> G1Vector:
        """mcl keeps Fq in the same Montgomery form (x * 2^256 mod Q), so affine
        points become mclBnG1 structs by appending z = 1 (z = 0 for the all-zero
        point at infinity), then the checks of g1_vector_from_bytes."""
        return self._g1.check_raw(_structs_from_affine(data, G1_LIMBS), G1_BYTES, "G1")

    def g2_vector_from_montgomery(self, data: bytes, check_subgroup: bool = True) -> G2Vector:
        return self._g2.check_raw(_structs_from_affine(data, G2_LIMBS), G2_BYTES, "G2", check_subgroup)

    def g1_vector_to_montgomery(self, vector: G1Vector) -> bytes:
        """x || y of each struct after a batched normalisation (any z accepted)."""
        _check_vector(vector, G1_LIMBS, "G1")
        return np.ascontiguousarray(_normalised(vector, "G1")[:, : 2 * FP_LIMBS]).tobytes()

    def g2_vector_to_montgomery(self, vector: G2Vector) -> bytes:
        _check_vector(vector, G2_LIMBS, "G2")
        return np.ascontiguousarray(_normalised(vector, "G2")[:, : 4 * FP_LIMBS]).tobytes()

    def g2_vector_from_bytes(self, data: bytes, check_subgroup: bool = True) -> G2Vector:
        """Loads raw G2 structs. Every point is checked on the twist; with
        check_subgroup (the default) also in the order-R subgroup, which costs
        about two G2 scalar multiplications per point (see the benchmark).
        Pass False only for data whose integrity is otherwise assured (for
        example a proving key this process wrote and checksummed)."""
        return self._g2.check_raw(data, G2_BYTES, "G2", check_subgroup)
