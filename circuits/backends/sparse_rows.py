"""The rows <A_j, w>, <B_j, w>, <C_j, w> of an `ArrayR1CS`, vectorised over
zk_dtypes' Montgomery Fr (the mcl backend's scalar form), checked on the way.

Per side, with the native kernels (native/ntt.c's fr_sparse_rows): one
pass in C over the terms, no temporary per term. Without them: every term's
coefficient times its wire's value in one multiplication, then one segmented
sum per row (`np.add.reduceat`; empty rows are left at zero, since reduceat
would copy the next term into them). Both give the same reduced values.
"""
from __future__ import annotations

import numpy as np

from ..errors import UnsatisfiedConstraint
from ..relation_arrays import ArrayR1CS, SparseRows
from .native import kernels as native_kernels
from .ntt import _TO_MONTGOMERY, FR


def rows_times(rows: SparseRows, w: np.ndarray, n_out: int) -> np.ndarray:
    """out[j] = sum of coefficient * w[wire] over row j's terms (zero beyond the rows). With the
    native kernels, one pass in C without a temporary per term (the same reduced values)."""
    out = np.zeros(n_out, dtype=FR)
    if rows.n_terms == 0:
        return out
    kernels = native_kernels.load()
    if kernels is not None and _row_arrays_fit(rows):
        return kernels.sparse_rows(out, rows.start, rows.wire, rows.coefficient, np.ascontiguousarray(w))
    coefficient = rows.coefficient_limbs().view(FR).reshape(-1) * _TO_MONTGOMERY
    products = coefficient * w[rows.wire]
    nonempty = np.flatnonzero(np.diff(rows.start))
    out[nonempty] = np.add.reduceat(products, rows.start[nonempty])
    return out


def _row_arrays_fit(rows: SparseRows) -> bool:
    """The arrays the C kernel reads: the dtypes it assumes, contiguous (mapped .npy files are)."""
    return (rows.start.dtype == np.int64 and rows.wire.dtype == np.int64 and rows.coefficient.dtype == np.uint8
            and rows.start.flags.c_contiguous and rows.wire.flags.c_contiguous and rows.coefficient.flags.c_contiguous
            and rows.start.ndim == 1 and rows.coefficient.shape == (rows.wire.shape[0], 32))


def first_unequal(x: np.ndarray, y: np.ndarray) -> int | None:
    """Index of the first position where two Fr arrays differ (both hold reduced values)."""
    differs = (x.view(np.uint64).reshape(-1, 4) != y.view(np.uint64).reshape(-1, 4)).any(axis=1)
    hits = np.flatnonzero(differs)
    return int(hits[0]) if len(hits) else None


def row_evaluations(relation: ArrayR1CS, w: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(A(w), B(w), C(w)) padded to `n`, with A's binding rows m + i = w_i for the
    public wires; raises UnsatisfiedConstraint at the first row where A*B != C."""
    m = relation.n_constraints
    a = rows_times(relation.a, w, n)
    b = rows_times(relation.b, w, n)
    c = rows_times(relation.c, w, n)
    bad = first_unequal(a[:m] * b[:m], c[:m])
    if bad is not None:
        raise UnsatisfiedConstraint.at(bad)
    a[m:m + relation.n_public + 1] = w[:relation.n_public + 1]
    return a, b, c
