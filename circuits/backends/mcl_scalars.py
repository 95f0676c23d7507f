"""Scalar vectors of the mcl backend split for MSMs by size.

mcl's mulVec costs grow with the widest scalar of a call, and fixed-point
witnesses are mostly tiny (bits, small magnitudes, small negatives), so an
MSM's scalars are classified (`_msm_jobs`) and each class gets its own call.
`_standard_limbs` reads the Montgomery scalars (zk_dtypes.bn254_sf_mont) in
standard form, as the classification and the fixed-base window table need.
"""
from __future__ import annotations

import numpy as np

from . import ntt
from .mcl_points import FP_LIMBS

_RAW_ONE = np.array([1, 0, 0, 0], dtype=np.uint64).view(ntt.FR)  # Montgomery form of 2^-256


def _standard_limbs(scalars: np.ndarray) -> np.ndarray:
    """(n, 4) uint64 limbs of the standard (non-Montgomery) form: mont_mul(x*2^256, 1) = x."""
    return (scalars * _RAW_ONE).view(np.uint64).reshape(-1, FP_LIMBS)


def _msm_jobs(scalars: np.ndarray) -> list[tuple[np.ndarray | None, np.ndarray, bool]]:
    """Partition scalar indices into (indices, scalars, negate) classes by size.

    Fixed-point witnesses are mostly tiny: bits, small magnitudes, and negative
    numbers (R - s with small s). mcl's mulVec cost grows with the widest scalar
    in the call, so each class gets its own call: zeros are dropped, and a
    scalar k with R - k < 2^64 is replaced by R - k on the negated sum. Classes:
    magnitude 1, [2, 2^32), [2^32, 2^64) (each positive or negated), and full
    width. indices None means "all of the first len(scalars) points" (no gather).
    """
    m = scalars.shape[0]
    std = _standard_limbs(scalars)
    high_zero = ~std[:, 1:].any(axis=1)
    low = std[:, 0]
    wide = np.flatnonzero(~high_zero)
    negated = -scalars[wide]
    neg_std = _standard_limbs(negated)
    neg_small = ~neg_std[:, 1:].any(axis=1)
    full = wide[~neg_small]
    if full.size == m:
        return [(None, scalars, False)]
    jobs: list[tuple[np.ndarray | None, np.ndarray, bool]] = []
    small_pos = np.flatnonzero(high_zero & (low != 0))
    small_neg = wide[neg_small]
    for idx, lows, values, negate in (
        (small_pos, low[small_pos], None, False),
        (small_neg, neg_std[neg_small, 0], negated[neg_small], True),
    ):
        for lo, hi in ((1, 2), (2, 1 << 32), (1 << 32, None)):
            mask = lows >= np.uint64(lo)
            if hi is not None:
                mask &= lows < np.uint64(hi)
            if mask.any():
                sel = idx[mask]
                jobs.append((sel, scalars[sel] if values is None else values[mask], negate))
    if full.size:
        jobs.append((full, scalars[full], False))
    if len(jobs) == 1 and jobs[0][0].size == m and not jobs[0][2]:
        return [(None, scalars, False)]  # one class holding every point: no gather
    return jobs

