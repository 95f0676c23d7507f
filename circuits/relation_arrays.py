"""A rank-1 constraint system as three sparse matrices held in arrays.

`R1CS` keeps every term as a pair of Python ints: plain, and what builders,
digests and setup read. A prover needs only the rows <A_j, w>, <B_j, w>,
<C_j, w>; with the matrices in compressed-row arrays (`SparseRows`) those are
a handful of vectorised operations instead of a Python step per term, and an
.r1cs file decodes into them without making an object per term
(`circuits.snarkjs.r1cs.decode_r1cs_arrays`). Both forms describe the same
relation: `to_r1cs` and `from_r1cs` convert, and the tests check that a proof
made from either is the same.
"""
from __future__ import annotations

import os
import tempfile
import zipfile
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

import numpy as np

from .field import R
from .relation import R1CS, Constraint

COEFFICIENT_BYTES = 32
_R_LIMBS = tuple((R >> (64 * k)) & ((1 << 64) - 1) for k in range(4))


def limbs_below_r(limbs: np.ndarray) -> np.ndarray:
    """Row-wise test that (n, 4) little-endian uint64 limbs are a value below R."""
    below = np.zeros(limbs.shape[0], dtype=bool)
    equal = np.ones(limbs.shape[0], dtype=bool)
    for k in (3, 2, 1, 0):
        below |= equal & (limbs[:, k] < np.uint64(_R_LIMBS[k]))
        equal &= limbs[:, k] == np.uint64(_R_LIMBS[k])
    return below


@dataclass(frozen=True, eq=False)
class SparseRows:
    """One side (A, B or C) of every constraint: row j's terms are
    wire[start[j]:start[j+1]] with coefficients coefficient[start[j]:start[j+1]]
    (little-endian standard form, 32 bytes each, below R)."""

    start: np.ndarray  # int64, n_rows + 1, non-decreasing, from 0 to n_terms
    wire: np.ndarray  # int64, n_terms
    coefficient: np.ndarray  # uint8, (n_terms, 32)

    @property
    def n_rows(self) -> int:
        return len(self.start) - 1

    @property
    def n_terms(self) -> int:
        return len(self.wire)

    def check(self, n_wires: int, what: str) -> None:
        """Raise ValueError unless the arrays are well formed for `n_wires` wires."""
        start, wire, coefficient = self.start, self.wire, self.coefficient
        if start.ndim != 1 or len(start) < 1 or start[0] != 0 or start[-1] != len(wire) or np.any(np.diff(start) < 0):
            raise ValueError(f"{what}: row starts are not a partition of the terms")
        if coefficient.shape != (len(wire), COEFFICIENT_BYTES) or coefficient.dtype != np.uint8:
            raise ValueError(f"{what}: coefficients must be {COEFFICIENT_BYTES} bytes per term")
        if len(wire) and (wire.min() < 0 or wire.max() >= n_wires):
            bad = int(np.flatnonzero((wire < 0) | (wire >= n_wires))[0])
            raise ValueError(f"{what}: constraint {self.row_of(bad)} names wire {int(wire[bad])}, "
                             f"the system has {n_wires}")
        below = limbs_below_r(self.coefficient_limbs())
        if not below.all():
            bad = int(np.flatnonzero(~below)[0])
            raise ValueError(f"{what}: constraint {self.row_of(bad)} has a coefficient not reduced mod r")

    def row_of(self, term: int) -> int:
        return int(np.searchsorted(self.start, term, side="right") - 1)

    def coefficient_limbs(self) -> np.ndarray:
        """(n_terms, 4) little-endian uint64 limbs of the coefficients."""
        return np.ascontiguousarray(self.coefficient).view("<u8").reshape(-1, 4)

    def row(self, j: int) -> tuple[tuple[int, int], ...]:
        lo, hi = int(self.start[j]), int(self.start[j + 1])
        raw = self.coefficient[lo:hi].tobytes()
        return tuple((int(self.wire[k]), int.from_bytes(raw[32 * (k - lo):32 * (k - lo + 1)], "little"))
                     for k in range(lo, hi))

    @classmethod
    def from_rows(cls, rows: list[tuple[tuple[int, int], ...]]) -> SparseRows:
        counts = np.fromiter((len(r) for r in rows), dtype=np.int64, count=len(rows))
        start = np.zeros(len(rows) + 1, dtype=np.int64)
        np.cumsum(counts, out=start[1:])
        wire = np.fromiter((w for r in rows for w, _ in r), dtype=np.int64, count=int(start[-1]))
        coefficient = np.frombuffer(b"".join((k % R).to_bytes(COEFFICIENT_BYTES, "little") for r in rows for _, k in r),
                                    dtype=np.uint8).reshape(-1, COEFFICIENT_BYTES)
        return cls(start, wire, coefficient)


@dataclass(frozen=True, eq=False)
class ArrayR1CS:
    """The relation of `R1CS` (same wire layout and meaning), its A, B, C in arrays."""

    n_wires: int
    n_public: int
    a: SparseRows
    b: SparseRows
    c: SparseRows
    n_public_outputs: int = 0

    def __post_init__(self) -> None:
        if not 1 + self.n_public <= self.n_wires:
            raise ValueError(f"{self.n_public} public inputs need more than {self.n_wires} wires")
        if not self.a.n_rows == self.b.n_rows == self.c.n_rows:
            raise ValueError("A, B and C have different numbers of rows")

    @property
    def n_constraints(self) -> int:
        return self.a.n_rows

    @property
    def n_private(self) -> int:
        return self.n_wires - 1 - self.n_public

    def public_inputs(self, witness) -> list[int]:
        return [witness[i] % R for i in range(1, self.n_public + 1)]

    def check(self) -> None:
        for name, side in (("A", self.a), ("B", self.b), ("C", self.c)):
            side.check(self.n_wires, f"side {name}")

    def save(self, path: str | Path, source_digest: str) -> None:
        """Write the arrays to an .npz file (atomically), naming a hex digest of
        what they were made from (an .r1cs file's SHA-256, an `r1cs_digest`)."""
        arrays = {"header": np.array([self.n_wires, self.n_public, self.n_public_outputs], dtype=np.int64),
                  "source_digest": np.frombuffer(bytes.fromhex(source_digest), dtype=np.uint8)}
        for name, side in (("a", self.a), ("b", self.b), ("c", self.c)):
            arrays.update({f"{name}_start": side.start, f"{name}_wire": side.wire, f"{name}_coefficient": side.coefficient})
        path = Path(path)
        # a temporary name of its own: several processes may save the same file at once
        descriptor, partial = tempfile.mkstemp(dir=path.parent, prefix=path.name + ".", suffix=".partial")
        try:
            with os.fdopen(descriptor, "wb") as out:
                np.savez(out, **arrays)
            os.replace(partial, path)
        except BaseException:
            Path(partial).unlink(missing_ok=True)
            raise

    @classmethod
    def load(cls, path: str | Path, source_digest: str) -> ArrayR1CS | None:
        """The arrays saved under `source_digest`, checked (wires in range,
        coefficients below r); None if `path` is missing, unreadable, malformed
        or was saved under another digest. The digest is what the saver
        claimed: a caller that needs more recomputes it from the arrays."""
        try:
            with np.load(path, allow_pickle=False) as saved:
                if saved["source_digest"].tobytes().hex() != source_digest:
                    return None
                n_wires, n_public, n_public_outputs = (int(v) for v in saved["header"])
                sides = [SparseRows(saved[f"{n}_start"].astype(np.int64, copy=False),
                                    saved[f"{n}_wire"].astype(np.int64, copy=False),
                                    saved[f"{n}_coefficient"]) for n in "abc"]
            relation = cls(n_wires, n_public, *sides, n_public_outputs=n_public_outputs)
            relation.check()
        except (OSError, KeyError, ValueError, TypeError, zipfile.BadZipFile):
            return None
        return relation

    @classmethod
    def from_r1cs(cls, r1cs: R1CS) -> ArrayR1CS:
        cs = r1cs.constraints
        return cls(r1cs.n_wires, r1cs.n_public,
                   SparseRows.from_rows([c.a for c in cs]), SparseRows.from_rows([c.b for c in cs]),
                   SparseRows.from_rows([c.c for c in cs]), n_public_outputs=r1cs.n_public_outputs)

    @cached_property
    def relation(self) -> R1CS:
        """The same relation as an `R1CS` (built once, on first use)."""
        constraints = tuple(Constraint(self.a.row(j), self.b.row(j), self.c.row(j)) for j in range(self.n_constraints))
        return R1CS(n_wires=self.n_wires, n_public=self.n_public, constraints=constraints,
                    n_public_outputs=self.n_public_outputs)
