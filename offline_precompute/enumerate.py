"""Offline enumeration of the activation regions of every slice, into the store.

Per slice (sensitive features fixed to one combination of domain values), a
breadth-first search starts at the region of the box centre and crosses every
non-empty facet. For each region it records, through `RegionComputer`:

- a representative point (`fairness.regions.lp_representative`: an exact
  rational point of P_R, as deep inside as the LP finds);
- for every hidden neuron k, `LPRegionOracle.facet`: whether the facet on
  z_k = 0 is non-empty inside the box (then the neighbouring code, R with bit
  k flipped, is the adjacency, and an exact rational point of the facet is
  stored) or an exact Farkas certificate that it is empty;
- for every ordered pair of classes (y, j), `LPRegionOracle.no_class`: whether
  P_R holds a point where class j at least ties y (with an exact tie point),
  or a Farkas certificate that it holds none.

These are exactly the answers `fairness.regions.RegionOracle` gives GeoCert,
so the store-backed oracle (`offline_precompute.oracle`) can serve them.

Resumption: the frontier is the set of region rows with ``expanded = false``.
Regions are expanded in batches; one transaction writes a batch's facets,
class claims, newly discovered neighbours and the ``expanded`` flags, so an
interruption at any point loses at most the uncommitted batch, which the next
run redoes (writes are insert-or-ignore, so nothing is duplicated). Two
workers on the same model only waste effort; they never corrupt each other.
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Callable

import numpy as np

from fairness import farkas as fk
from fairness.fixed_point import FixedPointModel, IntVector
from fairness.codes import ActivationCode
from fairness.regions import LPRegionOracle, RationalPoint, Region, SliceGeometry, free_box, lp_representative
from offline_precompute import store as st
from offline_precompute.db import Database

DEFAULT_BATCH = 16


@dataclass(frozen=True)
class PrecomputeProgress:
    """Reported after every expanded region (before its batch is committed)."""

    slice_index: int
    n_slices: int
    slice_values: IntVector
    regions_found: int  # in this slice, committed plus this batch's discoveries
    regions_expanded: int  # in this slice
    lps: int  # LPs solved by this run
    elapsed: float  # seconds in this run

    @property
    def rate(self) -> float:
        """LPs per second in this run."""
        return self.lps / self.elapsed if self.elapsed > 0 else 0.0


@dataclass(frozen=True)
class PrecomputeSummary:
    digest: str
    n_slices: int
    regions: int
    facets: int
    nonempty_facets: int
    class_claims: int
    lps: int  # solved by this run (0 when everything was already stored)
    seconds: float
    slices_skipped: int  # already complete before this run


ProgressCallback = Callable[[PrecomputeProgress], None]


# ---------------------------------------------------------------- per-region computation

def facet_point(region: Region, k: int, box: fk.Box, scale_bits: int) -> RationalPoint | None:
    """An exact rational point on z_k = 0 inside P_R and the box, as central as an LP finds.

    LP (real units v = u / 2^s): min t subject to the other rows n̂ v - t <= b̂,
    the normalised equality â_k v = -ĉ_k, and the box. The optimum is rounded
    to a dyadic rational and projected exactly onto the hyperplane; the result
    is kept only if it satisfies every row and the box exactly.
    """
    from scipy.optimize import linprog

    form = region.neurons[k]
    nsq = form.norm_sq
    if nsq == 0:
        return None
    scale = float(1 << scale_bits)
    rows = [r for i, r in enumerate(region.rows()) if i != k]
    dim = box.dim
    a_ub, b_ub = [], []
    for r in rows:
        norm = math.sqrt(sum(v * v for v in r.normal)) or 1.0
        a_ub.append([v / norm for v in r.normal] + [-1.0])
        b_ub.append(float(r.bound) / norm / scale)
    norm_k = math.sqrt(nsq)
    a_eq = [[v / norm_k for v in form.normal] + [0.0]]
    b_eq = [-float(form.offset) / norm_k / scale]
    bounds = [(lo / scale, hi / scale) for lo, hi in zip(box.lower, box.upper)] + [(None, 0.0)]
    cost = np.zeros(dim + 1)
    cost[-1] = 1.0
    res = linprog(cost, A_ub=np.array(a_ub) if a_ub else None, b_ub=np.array(b_ub) if b_ub else None,
                  A_eq=np.array(a_eq), b_eq=np.array(b_eq), bounds=bounds, method="highs")
    if res.status != 0:
        return None
    for extra_bits in (8, 16, 24, 32, 48):
        den = 1 << extra_bits
        nums = [int(round(float(x) * scale * den)) for x in res.x[:dim]]
        value = sum(a * x for a, x in zip(form.normal, nums)) + form.offset * den  # den * z_k(p)
        proj = tuple(x * nsq - value * a for x, a in zip(nums, form.normal))
        pden = den * nsq
        g = math.gcd(pden, *proj)
        point = RationalPoint(tuple(x // g for x in proj), pden // g)
        if point.in_box(box) and region.contains_rational(point) and point.form_value(form) == 0:
            return point
    return None


@dataclass(frozen=True)
class RegionResult:
    code: str
    point: RationalPoint | None
    facets: tuple[st.FacetEntry, ...]
    claims: tuple[st.ClassClaimEntry, ...]
    lps: int

    @property
    def neighbours(self) -> tuple[str, ...]:
        return tuple(f.neighbor_code for f in self.facets if f.nonempty)


class RegionComputer:
    """Computes every stored fact about a region with HiGHS (via `fairness.regions`)."""

    def __init__(self, model: FixedPointModel, oracle: LPRegionOracle | None = None):
        self.model = model
        self.box = free_box(model)
        self.oracle = oracle or LPRegionOracle(model)
        self.slices = [tuple(v) for v in model.slices()]
        self._geometry: dict[int, SliceGeometry] = {}
        self.extra_lps = 0  # LPs outside the oracle (representatives, facet points)

    @property
    def lps(self) -> int:
        return self.oracle.lp_calls + self.extra_lps

    def geometry(self, slice_index: int) -> SliceGeometry:
        geo = self._geometry.get(slice_index)
        if geo is None:
            geo = self._geometry[slice_index] = SliceGeometry(self.model, self.slices[slice_index])
        return geo

    def seed_code(self, slice_index: int) -> str:
        """Code of the (integer) centre of the free box on this slice."""
        centre = [(lo + hi) // 2 for lo, hi in zip(self.box.lower, self.box.upper)]
        return self.geometry(slice_index).code_of(centre).key

    def region(self, slice_index: int, code: str) -> Region:
        return self.geometry(slice_index).region(ActivationCode.parse(code, self.model.net.hidden_sizes))

    def facet_entry(self, slice_index: int, region: Region, k: int) -> st.FacetEntry:
        info = self.oracle.facet(region, k)
        code = region.code.key
        if info.nonempty:
            self.extra_lps += 1
            p = facet_point(region, k, self.box, self.model.scale_bits)
            return st.FacetEntry(slice_index, code, k, True, point=None if p is None else p.to_json())
        cert = None if info.farkas is None else info.farkas.to_json()
        return st.FacetEntry(slice_index, code, k, False, certificate=cert)

    def claim_entry(self, slice_index: int, region: Region, y: int, j: int) -> st.ClassClaimEntry:
        info = self.oracle.no_class(region, y, j)
        return st.ClassClaimEntry(
            slice_index, region.code.key, y, j, info.reachable,
            point=None if info.tie_point is None else info.tie_point.to_json(),
            certificate=None if info.farkas is None else info.farkas.to_json(),
        )

    def expand(self, slice_index: int, code: str) -> RegionResult:
        before = self.lps
        region = self.region(slice_index, code)
        self.extra_lps += 1
        point = lp_representative(region, self.box, self.model.scale_bits)
        n_hidden = sum(self.model.net.hidden_sizes)
        facets = tuple(self.facet_entry(slice_index, region, k) for k in range(n_hidden))
        classes = range(self.model.net.n_classes)
        claims = tuple(self.claim_entry(slice_index, region, y, j) for y in classes for j in classes if j != y)
        # a sanity link between the two encodings of codes used across the codebase
        assert all(f.neighbor_code == region.code.flip(f.neuron).key for f in facets if f.nonempty)
        return RegionResult(code, point, facets, claims, self.lps - before)


# ---------------------------------------------------------------- the search

def precompute(
    db: Database,
    model: FixedPointModel,
    *,
    batch_size: int = DEFAULT_BATCH,
    progress: ProgressCallback | None = None,
    computer: RegionComputer | None = None,
) -> PrecomputeSummary:
    """Enumerate every slice's regions into the store, resuming any earlier run."""
    if batch_size < 1:
        raise ValueError("batch_size must be at least 1")
    computer = computer or RegionComputer(model)
    start = time.perf_counter()
    lps_before = computer.lps
    with db.sessions.begin() as s:
        digest = st.ensure_model(s, model)
    n_slices = len(computer.slices)
    skipped = 0
    for si in range(n_slices):
        with db.sessions() as s:
            # "complete" alone is not enough: a concurrent worker may have committed new
            # frontier regions after another one marked the slice complete.
            done = st.slice_status(s, digest)[si].status == "complete" and not st.frontier(s, digest, si, limit=1)
        if done:
            skipped += 1
            continue
        _enumerate_slice(db, digest, computer, si, batch_size, progress, start, lps_before)
    with db.sessions() as s:
        c = st.counts(s, digest)
        nonempty = st.count_nonempty_facets(s, digest)
    return PrecomputeSummary(
        digest=digest, n_slices=n_slices, regions=c.regions, facets=c.facets, nonempty_facets=nonempty,
        class_claims=c.class_claims, lps=computer.lps - lps_before,
        seconds=time.perf_counter() - start, slices_skipped=skipped,
    )


def _enumerate_slice(db: Database, digest: str, computer: RegionComputer, si: int, batch_size: int,
                     progress: ProgressCallback | None, start: float, lps_before: int) -> None:
    with db.sessions.begin() as s:
        # Write-only transaction (no read first: on SQLite a read-then-write transaction can
        # fail at once under a concurrent writer). The seed code is deterministic, so on a
        # resumed slice this insert is a no-op.
        st.add_regions(s, digest, [st.RegionEntry(si, computer.seed_code(si), depth=0)])
        st.update_slice(s, digest, si, status="running")
    with db.sessions() as s:
        known = {r.code: r for r in st.regions(s, digest, si)}
    expanded = sum(1 for r in known.values() if r.expanded)
    while True:
        with db.sessions() as s:
            batch = st.frontier(s, digest, si, limit=batch_size)
        if not batch:
            break
        t0 = time.perf_counter()
        lps0 = computer.lps
        results: list[tuple[st.RegionEntry, RegionResult]] = []
        for entry in batch:
            result = computer.expand(si, entry.code)
            results.append((entry, result))
            for code in result.neighbours:
                known.setdefault(code, st.RegionEntry(si, code, entry.depth + 1))
            expanded += 1
            if progress is not None:
                progress(PrecomputeProgress(si, len(computer.slices), computer.slices[si], len(known), expanded,
                                            computer.lps - lps_before, time.perf_counter() - start))
        with db.sessions.begin() as s:
            for entry, result in results:
                st.add_facets(s, digest, result.facets)
                st.add_class_claims(s, digest, result.claims)
                st.add_regions(s, digest, [st.RegionEntry(si, c, entry.depth + 1) for c in result.neighbours])
                st.mark_expanded(s, digest, si, entry.code, None if result.point is None else result.point.to_json())
            st.update_slice(s, digest, si, add_lps=computer.lps - lps0, add_seconds=time.perf_counter() - t0)
    with db.sessions.begin() as s:
        st.update_slice(s, digest, si, status="complete")
