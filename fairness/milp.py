"""A mixed-integer programme solved to proven optimality, or said to be short of it.

HiGHS (through scipy.optimize.milp) stops a branch and bound as soon as its
incumbent is within a relative gap of 1e-4 (or an absolute gap of 1e-6) of its
dual bound. On a margin of ten logits that is a thousandth of a logit, so an
"optimum" reported at the default tolerance may be a point that is not the
optimum. Every MILP of the audits goes through `solve`: it asks for a relative
gap of 1e-9 and a tiny absolute gap, and reports what the solver proved: the
objective of its point, its dual bound, the gap between them, and `optimal`
only when HiGHS says it closed that gap (not when it stopped at the time limit
with a point in hand). A caller never calls a value exact unless `optimal`.
"""
from __future__ import annotations

import contextlib
import math
import os
import sys
import warnings
from dataclasses import dataclass
from typing import Iterator, Sequence

import numpy as np

MIP_REL_GAP = 1e-9
MIP_ABS_GAP = 1e-12
MAX_NODES: int | None = None  # branch-and-bound nodes before HiGHS stops short (None: no limit, only the time)
OPTIMAL_STATUS = 0  # scipy.optimize.milp: "Optimization terminated successfully"


@dataclass(frozen=True)
class MilpSolution:
    """What the solver proved about `minimise cost.x`: the point it found (None if none), its objective,
    the dual bound (no feasible point has a lower objective, to the solver's feasibility tolerance), the
    gap between the two, and whether the solver closed the gap to the requested tolerance."""

    x: np.ndarray | None
    objective: float | None
    bound: float | None
    optimal: bool
    message: str

    @property
    def gap(self) -> float | None:
        """objective - bound (>= 0 for a minimisation), when the solver has both."""
        if self.objective is None or self.bound is None:
            return None
        return max(0.0, self.objective - self.bound)

    @property
    def relative_gap(self) -> float | None:
        """The gap scaled by the objective's magnitude, as HiGHS measures it."""
        gap = self.gap
        if gap is None or self.objective is None:
            return None
        return gap / max(abs(self.objective), 1e-300) if gap else 0.0


def solve(cost: Sequence[float], rows: np.ndarray, row_lower: Sequence[float], row_upper: Sequence[float],
          lower: Sequence[float], upper: Sequence[float], integer: Sequence[int],
          time_limit: float) -> MilpSolution:
    """minimise cost.x subject to row_lower <= rows x <= row_upper, lower <= x <= upper, x_i integer where
    integer[i] is 1; to a relative gap of 1e-9 (absolute 1e-12) within `time_limit` seconds."""
    from scipy.optimize import Bounds, LinearConstraint, milp

    constraints = LinearConstraint(rows, row_lower, row_upper) if len(row_lower) else None
    options = {"time_limit": float(time_limit), "mip_rel_gap": MIP_REL_GAP, "mip_abs_gap": MIP_ABS_GAP}
    if MAX_NODES is not None:
        options["node_limit"] = MAX_NODES
    with warnings.catch_warnings(), _solver_quiet():
        # scipy passes options it does not list (mip_abs_gap) to HiGHS verbatim, and says so
        warnings.simplefilter("ignore", RuntimeWarning)
        res = milp(np.asarray(cost, dtype=float), constraints=constraints, integrality=np.asarray(integer),
                   bounds=Bounds(lower, upper), options=options)
    x = None if res.x is None else np.asarray(res.x)
    objective = None if x is None else float(np.dot(np.asarray(cost, dtype=float), x))
    bound = getattr(res, "mip_dual_bound", None)
    bound = None if bound is None or not math.isfinite(float(bound)) else float(bound)
    optimal = res.status == OPTIMAL_STATUS and x is not None
    if optimal and bound is None:
        bound = objective  # a problem without integer variables: the LP optimum is its own bound
    return MilpSolution(x, objective, bound, optimal, str(res.message))


@contextlib.contextmanager
def _solver_quiet() -> Iterator[None]:
    """Standard output closed to the solver: HiGHS prints internal trace lines to the process's stdout
    (file descriptor 1) at some tolerances, which would land in the middle of a report."""
    try:
        sys.stdout.flush()
        saved = os.dup(1)
    except (OSError, ValueError, AttributeError):
        yield  # no usable descriptor 1: nothing to protect
        return
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, 1)
        yield
    finally:
        os.dup2(saved, 1)
        os.close(saved)
        os.close(devnull)
