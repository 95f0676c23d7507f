"""GeoCert with projection distances, per slice, in exact arithmetic.

For one slice, starting in the activation region of the query u*, a priority
queue holds the rows (hyperplanes) of the visited regions keyed by their exact
squared projection distance (a `Fraction`). Pop the nearest:

- neuron row k of region R: if the neighbour R ^ k is already visited, nothing
  to do (it will be a NEIGHBOR cover). Otherwise ask the oracle whether the
  facet {R's rows, z_k = 0} meets the box. If the oracle holds an exact Farkas
  certificate of emptiness, skip it (EMPTY_FACET). Otherwise cross: visit
  R ^ k and push its rows. (A facet the LP calls empty but whose certificate
  could not be rounded exactly is crossed as well: visiting an extra region is
  always sound, it only adds rows that need covers.)
  Before crossing, a facet that is not empty gets one refinement: a
  separation certificate (`farkas.find_separation`: multipliers on R's rows,
  the facet's equality and the box bounds) proves an exact lower bound on
  the distance from u* to the facet itself, or to the whole neighbouring
  region R ^ k (which contains the facet), whichever is larger; it is often
  far larger than the hyperplane's projection distance. If it is larger, the row goes back
  into the queue with that bound as its key, and is crossed only if popped
  again before the search stops; if the search stops first, the row is a
  FAR_FACET or FAR_REGION cover (its proved distance is >= the stop
  distance >= eps).
  Keys only grow, so the queue still pops in order of proved distance.
- decision row (y vs class j) of region R: if the oracle holds a NO_CLASS
  certificate (R holds no point of class j in the box), skip it; otherwise
  stop: this row bounds the slice's eps.

Three more stops, all sound (the row simply stays a DISTANCE row, or a
FAR_FACET row with its proved distance): a `limit` (squared distance: the
search stops at the first key >= limit; the prover passes the smallest stop
distance of the other slices, since eps is the minimum over slices and no
region beyond it is needed), a region budget (`max_regions`), and `banned` regions — the prover bans a region whose
attaining decision row has no exact boundary witness (e.g. the region lies
wholly on class j's side), and reruns; the search then stops at the neuron row
leading into it, which needs no witness.

If the queue empties, every row of every visited region is covered without
a distance and the slice's eps is the published cap (`regions.eps_cap`).
Rows with a zero normal have no finite distance and can only be covered by a
neighbour or a certificate; they are popped first.

Oracle answers are re-verified exactly before use (a Farkas certificate that
does not verify is ignored), so a corrupt store can cost radius, never validity.
The result records the visited codes (the covering set S_s, start first), the
oracle answers used, and the number of pops; `certificate.build_certificate`
turns it into covers and eps.
"""
from __future__ import annotations

import heapq
import itertools
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Sequence

from fairness import farkas as fk
from fairness.codes import ActivationCode
from fairness.covers import CoverKind
from fairness.farkas import Box, FarkasCertificate
from fairness.fixed_point import FixedPointModel, IntVector
from fairness.regions import (ClassInfo, FacetInfo, Region, RegionOracle, SliceGeometry, class_system, distance_sq,
                              facet_system, free_box, free_part)

NEURON = "neuron"
DECISION = "decision"
# Separation kinds of refined neuron rows.
FAR_FACET = CoverKind.FAR_FACET
FAR_REGION = CoverKind.FAR_REGION

DEFAULT_MAX_REGIONS = 4096


@dataclass(frozen=True)
class Stop:
    """Why the traversal ended: 'decision' (a real decision row), 'budget'
    (region budget hit while crossing a neuron row) or 'exhausted' (queue empty)."""

    reason: str  # 'decision', 'budget', 'banned', 'limit' or 'exhausted'
    code: ActivationCode | None = None
    kind: str | None = None
    row: int | None = None
    distance_sq: Fraction | None = None


@dataclass
class SliceSearch:
    """Outcome of GeoCert on one slice."""

    slice_values: IntVector
    query_u: IntVector
    decision: int
    codes: list[ActivationCode]
    regions: dict[str, Region]
    facets: dict[tuple[str, int], FacetInfo] = field(default_factory=dict)
    classes: dict[tuple[str, int], ClassInfo] = field(default_factory=dict)
    stop: Stop = Stop("exhausted")
    steps: int = 0
    # Rows that were popped and found uncoverable (must be DISTANCE covers).
    forced_distance: set[tuple[str, str, int]] = field(default_factory=set)
    # Neuron rows refined by a separation certificate: (code, row) -> (cert, proved distance^2, kind).
    separations: dict[tuple[str, int], tuple[FarkasCertificate, Fraction, str]] = field(default_factory=dict)
    # Exact searches: decision rows refined by a separation certificate of the
    # region's class-j part, (code, j) -> (cert, proved distance^2).
    class_separations: dict[tuple[str, int], tuple[FarkasCertificate, Fraction]] = field(default_factory=dict)
    geometry: SliceGeometry | None = None  # the slice's region builder (neighbours of kept regions)
    # Key (proved squared distance, or the projection's) of the row each region was entered through.
    entered_at: dict[str, Fraction] = field(default_factory=dict)
    # Exact searches: multiplier caps (bits) per hidden neuron, `farkas.exact_multiplier_bits`.
    caps: tuple[int, ...] | None = None

    def separation_caps(self, extra: int | None) -> tuple[int, ...] | None:
        """Caps for a system of a region's rows plus an extra row: a neuron's
        facet equality (extra = that neuron) or a decision row / none (None)."""
        if self.caps is None:
            return None
        return self.caps + ((fk.MAX_MULTIPLIER_BITS,) if extra is None else (self.caps[extra],))


def _priority(region: Region, kind: str, row: int, u: Sequence[int], y: int, scale_bits: int) -> Fraction:
    form = region.neurons[row] if kind == NEURON else region.decision_form(y, row)
    if form.norm_sq == 0:
        return Fraction(-1)  # no finite distance: settle these first
    d = distance_sq(form, u, scale_bits)
    assert d is not None
    return d


def _checked_facet(region: Region, k: int, info: FacetInfo, box: Box) -> FacetInfo:
    """Oracle answers are not trusted: a certificate that does not verify is dropped (the facet is crossed)."""
    if info.farkas is not None and not fk.verify(*facet_system(region, k), box, info.farkas):
        return FacetInfo(info.nonempty, None)
    return info


def _checked_class(region: Region, y: int, j: int, info: ClassInfo, box: Box) -> ClassInfo:
    if info.farkas is not None and not fk.verify(*class_system(region, y, j), box, info.farkas):
        return ClassInfo(True, None, info.tie_point)
    return info


def _refine(geom: SliceGeometry, region: Region, k: int, box: Box, u: Sequence[int],
            scale_bits: int, search: SliceSearch) -> tuple[FarkasCertificate, Fraction, str] | None:
    """The better proved lower bound on the distance from u to the facet of (region, k):
    a separation from the facet itself (FAR_FACET), or from the whole neighbouring
    region, which contains the facet (FAR_REGION; also the fallback for lower-dimensional
    facets, where the nearest-point program is degenerate). An exact search always
    asks for the facet's own distance (the key GeoCert's exactness rests on)."""
    exact = search.caps is not None
    precisions = fk.EXACT_SEPARATION_PRECISIONS if exact else fk.SEPARATION_PRECISIONS
    # The region first: its certificate can be shared by every row leading into it.
    whole = fk.find_region_separation(geom.region(region.code.flip(k)).rows(), box, u, scale_bits, precisions,
                                      search.separation_caps(None))
    best = None if whole is None else (whole[0], whole[1], FAR_REGION)
    if exact or best is None or best[1] <= _priority(region, NEURON, k, u, -1, scale_bits):
        facet = fk.find_separation(*facet_system(region, k), box, u, scale_bits, precisions,
                                   search.separation_caps(k))
        if facet is not None and (best is None or facet[1] > best[1]):
            best = (facet[0], facet[1], FAR_FACET)
    return best


def geocert_slice(model: FixedPointModel, query: Sequence[int], decision: int, slice_values: Sequence[int],
                  oracle: RegionOracle, *, max_regions: int = DEFAULT_MAX_REGIONS,
                  banned: frozenset[str] = frozenset(), limit: Fraction | None = None,
                  separate: bool = True, exact: bool = False) -> SliceSearch:
    """Run GeoCert on one slice: keyed by projection distances, refined lazily.

    `exact` refines decision rows too: a popped decision row whose region's
    class-j part lies farther than its hyperplane goes back into the queue
    keyed by the proved distance to that part (a separation certificate), so
    the search stops at the nearest point of another class within the
    explored regions, and facets are keyed by their own distance. Keys are
    lower bounds that only grow, so the first refined decision row popped is
    the exact radius of the slice (up to the certificates' rounding).

    `banned` codes are never entered: a row leading into one stops the search
    like a decision boundary (used when a region's boundary cannot be witnessed).
    `limit` stops the search at the first key >= limit; `separate` enables the
    facet refinement by separation certificates.
    """
    geom = SliceGeometry(model, tuple(slice_values))
    u = free_part(model, query)
    s = model.scale_bits
    y = decision
    n_classes = model.net.n_classes
    start = geom.code_of(u)
    start_key = start.key
    if start_key in banned:
        raise ValueError("the start region cannot be banned")
    search = SliceSearch(tuple(slice_values), u, y, [start], {}, geometry=geom,
                         caps=fk.exact_multiplier_bits(model.net.hidden_sizes, s) if exact else None)
    box = free_box(model)
    visited: set[str] = set()
    heap: list = []
    counter = itertools.count()

    def visit(code: ActivationCode) -> None:
        key = code.key
        region = geom.region(code)
        visited.add(key)
        search.regions[key] = region
        if code is not start:
            search.codes.append(code)
        for k in range(len(region.neurons)):
            heapq.heappush(heap, (_priority(region, NEURON, k, u, y, s), next(counter), key, NEURON, k, None))
        for j in range(n_classes):
            if j != y:
                heapq.heappush(heap, (_priority(region, DECISION, j, u, y, s), next(counter), key, DECISION, j,
                                      None))

    def finish(stop: Stop) -> SliceSearch:
        search.stop = stop
        return search

    visit(start)
    while heap:
        d2, _, key, kind, row, sep = heap[0]
        if limit is not None and d2 >= limit and d2 >= 0:
            return finish(Stop("limit", None, None, None, limit))
        heapq.heappop(heap)
        search.steps += 1
        region = search.regions[key]
        if kind == NEURON:
            nb = region.code.flip(row)
            nb_key = nb.key
            if nb_key in visited:
                continue
            if sep is None:
                info = _checked_facet(region, row, oracle.facet(region, row), box)
                search.facets[(key, row)] = info
                if info.farkas is not None:
                    continue
                if separate and d2 >= 0:
                    found = _refine(geom, region, row, box, u, s, search)
                    if found is not None and found[1] > d2:
                        search.separations[(key, row)] = found
                        heapq.heappush(heap, (found[1], next(counter), key, NEURON, row, found[0]))
                        continue
            # Zero-normal rows cost no distance; crossing them is exempt from the budget.
            over_budget = len(visited) >= max_regions and region.neurons[row].norm_sq > 0
            if nb_key in banned or over_budget:
                # The row becomes a DISTANCE row: its projection distance (not a
                # refined key) bounds eps, so the minimality rule can name it.
                search.forced_distance.add((key, NEURON, row))
                proj = _priority(region, NEURON, row, u, y, s)
                return finish(Stop("budget" if nb_key not in banned else "banned", region.code, NEURON, row,
                                   max(proj, Fraction(0))))
            search.entered_at[nb_key] = d2
            visit(nb)
            continue
        if sep is None:
            info = _checked_class(region, y, row, oracle.no_class(region, y, row), box)
            search.classes[(key, row)] = info
            if info.farkas is not None:
                continue
            if exact and d2 >= 0:
                found = fk.find_separation(*class_system(region, y, row), box, u, s, fk.EXACT_SEPARATION_PRECISIONS,
                                           search.separation_caps(None))
                if found is not None and found[1] > d2:
                    search.class_separations[(key, row)] = found
                    heapq.heappush(heap, (found[1], next(counter), key, DECISION, row, found[0]))
                    continue
            search.forced_distance.add((key, DECISION, row))
        return finish(Stop("decision", region.code, DECISION, row, max(d2, Fraction(0))))
    return finish(Stop("exhausted"))
