"""Measures the benchmarks share: the nearest-rank 95th percentile and the process's peak memory."""
from __future__ import annotations

import resource
from typing import Sequence


def p95(values: Sequence[float]) -> float:
    """The 95th percentile, nearest rank: the value at least 95% of the values are at or below."""
    ordered = sorted(values)
    return ordered[max(0, -(-95 * len(ordered) // 100) - 1)]


def peak_rss_mib() -> float:
    """This process's peak resident memory so far, in MiB."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
