"""The plaintext fairness certificate and its prover (`certify`).

A `Certificate` states: at query x* (integers at scale 2^s) the model decides
y, and every input whose non-sensitive part is at real l2 distance < eps from
x*'s (inside the domain box), with the sensitive features set to ANY domain
combination, is also decided y. eps = E / 2^t exactly (`eps`, `eps_bits`).

Status 'certified': per slice the covering set S_s (start region first) with,
for each region and row, how it is covered (`Cover`), and `attainment`: the
row that makes E maximal (a DISTANCE row with E+1 failing, plus a boundary
witness for decision rows), or 'cap' when E is the published cap.
Status 'flip': some slice does not strictly decide y at x* (another class wins
or ties); E = 0 and `flip` names the first such slice. No covers are needed.

Boundary witness. A point exactly on the decision hyperplane z_y = z_j inside
the region and the box is given as a `RationalPoint` P / D: integer numerators
and one positive integer denominator, in the integer units of scale 2^s. A
power-of-two denominator cannot work in general (an integer hyperplane
a.u + c = 0 rarely passes through a dyadic point), while P / D needs only
integer checks: a.P + c D = 0, n.P <= b D for every region row, lo D <= P <= hi D.
The prover builds it by interpolation between two exact points of the region,
p+ (z_y >= z_j; the query itself in the start region) and p- (z_j >= z_y; an LP
point rounded at a dyadic scale 2^k and re-checked): with v+ = D+ f(p+),
v- = D- f(p-), P = v+ P- - v- P+ and D = v+ D- - v- D+ (|D| <= 2^(2k+1) V where V
bounds the form's values on the box; k = 0 in the common case). Convexity
keeps the point in the region and the box.

`fairness.checker.check_certificate` is the exact verifier; nothing stored
here (codes aside) is trusted by it: hyperplanes are recomputed from weights.
The JSON form (`to_json` / `from_json`) is versioned (`FORMAT`, `VERSION`). The data model and that
form are `fairness.certificate_data`; its names are offered here too.
"""
from __future__ import annotations

from fractions import Fraction
from typing import Sequence

import numpy as np

from fairness.errors import CertificationError
from fairness import farkas as fk
from fairness.farkas import FarkasCertificate
from fairness.fixed_point import FixedPointModel, IntVector
from fairness.radius import REGION_RADII, Radius
from fairness.geocert import DECISION, DEFAULT_MAX_REGIONS, NEURON, SliceSearch, geocert_slice
from fairness.codes import ActivationCode
from fairness.regions import (LPRegionOracle, RationalPoint, Region, RegionOracle, SliceGeometry, class_system,
                              counterexample_error, exact_point, distance_at_least, distance_sq, eps_cap,
                              facet_system, free_box, max_eps)
from fairness.certificate_data import (ATTAINMENT_KINDS, CAP, CERTIFICATE_KINDS, CERTIFIED,  # noqa: F401
                                       COUNTEREXAMPLE, COUNTEREXAMPLE_BITS, COVER_KINDS, DEFAULT_EPS_BITS,
                                       DISTANCE, EMPTY_FACET, FAR_CLASS, FAR_FACET, FAR_REGION, FLIP, FORMAT,
                                       NEIGHBOR, NO_CLASS, SEPARATION_KINDS, VERSION, Attainment, Certificate,
                                       Cover, Flip, RegionCover, SliceCertificate, strict_decision)

# Radius modes of `certify` (fairness.radius.REGION_RADII): FAST is GeoCert with
# projection distances (a lower bound); EXACT keys GeoCert by exact distances and
# proves E = floor(true radius * 2^t) with a counterexample.
FAST = Radius.FAST
EXACT = Radius.EXACT


# ---------------------------------------------------------------- prover

def certify(model: FixedPointModel, query: Sequence[int], oracle: RegionOracle | None = None, *,
            eps_bits: int = DEFAULT_EPS_BITS, max_regions: int = DEFAULT_MAX_REGIONS,
            max_retries: int = 8, separate: bool = True, radius: str = Radius.FAST) -> Certificate:
    """Decision and fairness certificate for `query` (integers at scale 2^s).

    `radius` "fast" certifies GeoCert's projection-distance radius (a lower
    bound on the true one); "exact" certifies E = floor(true radius * 2^t)
    with a counterexample (falling back to the fast certificate, with its
    lower bound, when no counterexample can be exhibited).
    `separate` lets GeoCert prove far facets with separation certificates
    (FAR_FACET covers) instead of crossing them; off, every non-empty facet
    closer than the stop is crossed (larger covering sets, same soundness)."""
    query = _check_query(model, query)
    if eps_bits < 0:
        raise CertificationError("eps_bits must be non-negative")
    if radius not in REGION_RADII:
        raise CertificationError(f"radius must be one of {', '.join(REGION_RADII)}, not {radius!r}")
    oracle = oracle if oracle is not None else LPRegionOracle(model)
    net = model.net
    y = net.decision(query)
    slices = model.slices()
    for index, sv in enumerate(slices):
        d = strict_decision(net.logits(model.with_slice(query, sv)))
        if d != y:
            return Certificate(query=query, decision=y, eps=0, eps_bits=eps_bits, status=FLIP,
                               flip=Flip(index, tuple(sv), d is None))

    cap = eps_cap(model, eps_bits)
    if radius == EXACT:
        cert = _certify_exact(model, query, y, slices, oracle, eps_bits, cap, max_regions)
        if cert is not None:
            return cert
    # The stopped search first (smallest covering sets). Its attaining row can be a decision
    # row with no exact boundary witness in the start region (a class region the LP finds
    # empty but whose Farkas certificate cannot be rounded exactly), which no ban can
    # avoid; a slice searched to its own stop may then attain a smaller, witnessable E.
    # So fall back to unstopped searches, then to searches without separation
    # certificates: each attempt is checked the same way, only the covering sets grow.
    attempts = [(True, separate), (False, separate)] + ([(False, False)] if separate else [])
    for stop_early, separate_facets in attempts:
        cert = _certify_searches(model, query, y, slices, oracle, eps_bits, cap, max_regions, max_retries,
                                 separate_facets, stop_early)
        if cert is None:
            continue
        if separate_facets and _deferred_stop(cert, model):
            # A refined facet let the search enter a region only after its decision hyperplane,
            # whose projection distance (below the entry) then bounds E: GeoCert without
            # refinements enters in projection order and may stop later. Keep the larger E.
            plain = _certify_searches(model, query, y, slices, oracle, eps_bits, cap, max_regions, max_retries,
                                      False, True)
            if plain is not None and plain.eps > cert.eps:
                return plain
        return cert
    raise CertificationError("no boundary witness can be produced for the attaining decision row "
                             "(degenerate class region touching the start region)")


def _certify_searches(model, query, y, slices, oracle, eps_bits, cap, max_regions, max_retries, separate,
                      stop_early) -> Certificate | None:
    """One search strategy: the certificate, or None when no attaining row can be witnessed."""
    banned: list[set[str]] = [set() for _ in slices]
    searches = _search_slices(model, query, y, slices, oracle, max_regions, banned, separate, stop_early)
    for _ in range(max_retries + 1):
        covers = [_assign_covers(model, s, oracle) for s in searches]
        e, candidates = _eps_and_candidates(model, searches, covers, cap, eps_bits)
        attainment, failed = _choose_attainment(model, searches, candidates, oracle, y, e, cap)
        if attainment is not None:
            pruned = [_prune(model, si, search, cov, e, eps_bits, attainment)
                      for si, (search, cov) in enumerate(zip(searches, covers))]
            whole = [([c.key for c in search.codes], cov) for search, cov in zip(searches, covers)]
            # Same E either way; prove the smaller statement (pool entries cost more than regions).
            kept = min((pruned, whole), key=lambda option: _statement_cost(option, model))
            return _assemble(query, y, e, eps_bits, searches, kept, attainment, model)
        # Every attaining row is an unwitnessable decision row: keep the search
        # out of those regions and stop at the facet leading into them instead.
        progress = False
        for si, key in failed:
            if key != searches[si].codes[0].key and key not in banned[si]:
                banned[si].add(key)
                progress = True
        if not progress:
            break
        searches = _search_slices(model, query, y, slices, oracle, max_regions, banned, separate, stop_early)
    return None


def _certify_exact(model, query, y, slices, oracle, eps_bits, cap, max_regions) -> Certificate | None:
    """The exact-radius certificate: GeoCert keyed by exact distances on every slice,
    E the largest value its covers support, made maximal by a counterexample.
    None when no counterexample closer than (E+1)/2^t can be exhibited (a search
    cut by its region budget, or certificates rounded below the nearest point)."""
    searches = _search_slices(model, query, y, slices, oracle, max_regions, [set() for _ in slices], True,
                              True, exact=True)
    covers = [_assign_covers(model, search, oracle) for search in searches]
    e, _ = _eps_and_candidates(model, searches, covers, cap, eps_bits)
    if e == cap:
        attainment = Attainment(CAP)
    else:
        attainment = _counterexample(model, searches, y, e, eps_bits)
        if attainment is None:
            return None
    pruned = [_prune(model, si, search, cov, e, eps_bits, attainment)
              for si, (search, cov) in enumerate(zip(searches, covers))]
    whole = [([c.key for c in search.codes], cov) for search, cov in zip(searches, covers)]
    kept = min((pruned, whole), key=lambda option: _statement_cost(option, model))
    return _assemble(query, y, e, eps_bits, searches, kept, attainment, model)


def _counterexample(model: FixedPointModel, searches: list[SliceSearch], y: int, e: int,
                    eps_bits: int) -> Attainment | None:
    """A point of another class closer than (E+1)/2^t: near the nearest class point of
    each slice's stop row first, then of every other refined decision row close enough."""
    bound = Fraction((e + 1) ** 2, 1 << (2 * eps_bits))
    rows: list[tuple[Fraction, int, str, int]] = []
    for si, search in enumerate(searches):
        if search.stop.reason == "decision" and search.stop.distance_sq is not None:
            rows.append((search.stop.distance_sq, si, search.stop.code.key, search.stop.row))
        for (key, j), (_, d2) in search.class_separations.items():
            if d2 < bound:
                rows.append((d2, si, key, j))
    tried = set()
    for _, si, key, j in sorted(rows):
        if (si, key, j) in tried:
            continue
        tried.add((si, key, j))
        search = searches[si]
        point = _class_point_near(model, search.regions[key], search.slice_values, y, j, search.query_u, e,
                                  eps_bits)
        if point is not None:
            return Attainment(COUNTEREXAMPLE, si, None, j, point)
    return None


def _class_point_near(model: FixedPointModel, region: Region, slice_values, y: int, j: int, u, e: int,
                      eps_bits: int) -> RationalPoint | None:
    """A rational point at which class j at least ties y, closer to u than (E+1)/2^t.

    The nearest point v of the region's class-j part (float) is rounded at a
    few dyadic denominators (at most 2^COUNTEREXAMPLE_BITS); if rounding lands
    on y's side, v is pulled a little towards an interior point of the class
    part (convexity keeps the mix in the region and the box, where class j
    then wins). Every candidate is checked exactly (`counterexample_error`),
    never assumed."""
    box = free_box(model)
    s = model.scale_bits
    rows, extra, _ = class_system(region, y, j)
    v = fk.nearest_point(rows, extra, False, box, u, s)
    if v is None:
        return None

    def ok(p: RationalPoint) -> bool:
        return counterexample_error(model, slice_values, y, j, p, u, e, eps_bits) is None

    rounded = [_dyadic(v, s, k, box) for k in (24, 32, COUNTEREXAMPLE_BITS)]
    for p in rounded:
        if ok(p):
            return p
    inner = exact_point(rows, extra, box, s)
    if inner is None:
        return None
    target = np.array(inner.numerators, dtype=float) / inner.denominator / (1 << s)
    for m in (40, 32, 24, 16, 12, 8, 4, 2):
        p = _dyadic(v + (target - v) / (1 << m), s, COUNTEREXAMPLE_BITS, box)
        if ok(p):
            return p
    return None


def _dyadic(v, scale_bits: int, k: int, box) -> RationalPoint:
    """v (real units) as numerators / 2^k in integer units, clipped into the box."""
    den = 1 << k
    nums = tuple(min(max(int(round(float(x) * (1 << scale_bits) * den)), lo * den), hi * den)
                 for x, lo, hi in zip(v, box.lower, box.upper))
    return RationalPoint(nums, den)


def _deferred_stop(cert: Certificate, model: FixedPointModel) -> bool:
    """Whether E is attained by a DISTANCE decision row of a region other than the start
    region (its region was entered through a crossed facet, possibly a refined one)."""
    a = cert.attainment
    if a is None or a.kind != DECISION:
        return False
    return a.code != cert.slices[a.slice_index].regions[0].code


def _stop_distance(search: SliceSearch) -> Fraction | None:
    return search.stop.distance_sq if search.stop.reason != "exhausted" else None


def _search_slices(model, query, y, slices, oracle, max_regions, banned, separate,
                   stop_early: bool = True, exact: bool = False) -> list[SliceSearch]:
    """GeoCert on every slice, each stopped at the smallest stop distance of the others
    (with `stop_early`; otherwise each slice runs to its own stop).

    eps is the minimum over slices, so a slice needs no region beyond the
    smallest stop distance found anywhere: every row it leaves queued there
    is a DISTANCE (or FAR_FACET) row at distance >= that stop >= eps. A
    slice searched before a smaller stop was known is searched again with it
    (the store and the oracle's memo make that cheap); its covering set is
    then a prefix of the first search's."""
    searches: list[SliceSearch | None] = [None] * len(slices)
    limit: Fraction | None = None
    for _ in range(2):
        for si, sv in enumerate(slices):
            old = searches[si]
            if old is not None and (limit is None or (d := _stop_distance(old)) is not None and d <= limit):
                continue
            searches[si] = geocert_slice(model, query, y, sv, oracle, max_regions=max_regions,
                                         banned=frozenset(banned[si]), limit=limit, separate=separate,
                                         exact=exact)
            d = _stop_distance(searches[si])
            if stop_early and d is not None and (limit is None or d < limit):
                limit = d
    return searches  # type: ignore[return-value]


def _check_query(model: FixedPointModel, query: Sequence[int]) -> IntVector:
    if len(query) != model.net.n_inputs:
        raise CertificationError(f"query has {len(query)} features, the model takes {model.net.n_inputs}")
    if not all(isinstance(v, int) and not isinstance(v, bool) for v in query):
        raise CertificationError("query must be integers at the model's scale")
    q = tuple(query)
    if not model.in_box(q):
        raise CertificationError("query lies outside the model's domain box")
    f = model.off_domain(q)
    if f is not None:
        raise CertificationError(f"query's sensitive feature {f.name!r} (column(s) {list(f.columns)}) "
                                 "is not a domain value")
    return q


RowKey = tuple[str, str, int]  # (code, 'neuron' | 'decision', row)


def _assign_covers(model: FixedPointModel, search: SliceSearch, oracle: RegionOracle) -> dict[RowKey, Cover]:
    covers: dict[RowKey, Cover] = {}
    box = free_box(model)
    keys = {c.key for c in search.codes}
    y = search.decision
    for code in search.codes:
        key = code.key
        region = search.regions[key]
        for k, form in enumerate(region.neurons):
            info = search.facets.get((key, k))
            if (key, NEURON, k) not in search.forced_distance and code.flip(k).key in keys:
                cover = Cover(NEIGHBOR)
            elif info is not None and info.farkas is not None:
                cover = Cover(EMPTY_FACET, info.farkas)
            elif (sep := search.separations.get((key, k))) is not None \
                    and (key, NEURON, k) not in search.forced_distance:
                cover = Cover(sep[2], sep[0])
            elif form.norm_sq == 0 and (f := _verified(facet_system(region, k), box,
                                                       oracle.facet(region, k).farkas)) is not None:
                cover = Cover(EMPTY_FACET, f)
            else:
                cover = Cover(DISTANCE)
            covers[(key, NEURON, k)] = cover
        for j in range(model.net.n_classes):
            if j == y:
                continue
            info = search.classes.get((key, j))
            farkas = None if info is None else info.farkas
            if info is None and region.decision_form(y, j).norm_sq == 0:
                farkas = _verified(class_system(region, y, j), box, oracle.no_class(region, y, j).farkas)
            if farkas is not None:
                covers[(key, DECISION, j)] = Cover(NO_CLASS, farkas)
            elif (sep := search.class_separations.get((key, j))) is not None:
                covers[(key, DECISION, j)] = Cover(FAR_CLASS, sep[0])
            else:
                covers[(key, DECISION, j)] = Cover(DISTANCE)
    return covers


def _verified(system, box, cert: FarkasCertificate | None) -> FarkasCertificate | None:
    rows, extra, eq = system
    return cert if cert is not None and fk.verify(rows, extra, eq, box, cert) else None


def _form(region: Region, kind: str, row: int, y: int):
    return region.neurons[row] if kind == NEURON else region.decision_form(y, row)


def _eps_and_candidates(model, searches, covers, cap, eps_bits):
    """E = min(cap, max_eps over every DISTANCE row); the rows attaining it."""
    best = cap
    rows: list[tuple[int, int, RowKey]] = []
    box = free_box(model)
    for si, (search, cov) in enumerate(zip(searches, covers)):
        for rk, cover in cov.items():
            if cover.kind in SEPARATION_KINDS:
                # Its proved distance is >= the stop distance >= eps by construction;
                # bounding E by it as well keeps that true without relying on it.
                region = search.regions[rk[0]]
                facet_rows, extra = separated_system(search.geometry, region, rk[2], cover.kind, search.decision)
                h, r2 = fk.separation(facet_rows, extra, box, cover.farkas, search.query_u)
                nsq = sum(v * v for v in r2)
                if nsq:
                    best = min(best, max_eps(h, nsq, eps_bits, model.scale_bits))
                continue
            if cover.kind != DISTANCE:
                continue
            form = _form(search.regions[rk[0]], rk[1], rk[2], search.decision)
            m = max_eps(form.value(search.query_u), form.norm_sq, eps_bits, model.scale_bits)
            if m is None:  # zero normal: cannot be a distance cover; force E = 0 and fail below
                m = -1
            rows.append((m, si, rk))
            best = min(best, m)
    return max(best, 0), [(si, rk) for m, si, rk in rows if m == best]


def _choose_attainment(model, searches, candidates, oracle, y, e, cap):
    """A valid attainment, or (None, failed (slice, code) pairs)."""
    if not candidates and e == cap:
        return Attainment("cap"), []
    box = free_box(model)
    failed = []
    ordered = sorted(candidates, key=lambda c: (c[1][1] != NEURON, c[0]))
    for si, (key, kind, row) in ordered:
        region = searches[si].regions[key]
        form = _form(region, kind, row, y)
        if form.norm_sq == 0:
            failed.append((si, key))
            continue
        if kind == NEURON:
            return Attainment(NEURON, si, key, row), []
        info = searches[si].classes.get((key, row)) or oracle.no_class(region, y, row)
        w = info.tie_point
        if w is not None and w.in_box(box) and region.contains_rational(w) and w.form_value(form) == 0:
            return Attainment(DECISION, si, key, row, w), []
        failed.append((si, key))
    if e == cap:
        return Attainment("cap"), []
    return None, failed


# Relative circuit cost of one pool entry against one region slot (Adult (8,2) at 2^16:
# about 2.6k and 1.0k constraints; German (4,2): 2.6k and 0.8k).
POOL_ENTRY_COST = 2.7


def _statement_cost(kept: list[tuple[list[str], dict[RowKey, Cover]]], model: FixedPointModel) -> float:
    """Region slots + POOL_ENTRY_COST x pool entries of the largest slice (a FAR_REGION
    entry is shared by every row leading into the same neighbour)."""
    hidden = model.net.hidden_sizes
    regions, entries = 0, 0
    for codes, cov in kept:
        far, rows = set(), 0
        for (key, kind, row), cover in cov.items():
            if key not in codes or cover.farkas is None:
                continue
            if cover.kind == FAR_REGION:
                far.add(ActivationCode.parse(key, hidden).flip(row).key)
            else:
                rows += 1
        regions, entries = max(regions, len(codes)), max(entries, rows + len(far))
    return regions + POOL_ENTRY_COST * entries


def separated_system(geometry: SliceGeometry, region: Region, k: int, kind: str, y: int | None = None):
    """(rows, extra row) a separation cover of row k of `region` separates from u*: the facet
    {P_R, z_k = 0} (FAR_FACET), the whole neighbouring region P_{R ^ k} (FAR_REGION; extra
    row `no_row`), or the region's class-k part {P_R, z_k >= z_y} (FAR_CLASS)."""
    if kind == FAR_CLASS:
        rows, extra, _ = class_system(region, y, k)
        return rows, extra
    if kind == FAR_FACET:
        rows, extra, _ = facet_system(region, k)
        return rows, extra
    nb = geometry.region(region.code.flip(k))
    return nb.rows(), fk.no_row(len(region.neurons[0].normal))


def _prune(model: FixedPointModel, si: int, search: SliceSearch, covers: dict[RowKey, Cover], e: int, eps_bits: int,
           attainment: "Attainment") -> tuple[list[str], dict[RowKey, Cover]]:
    """The covering set actually needed for E: (codes in search order, covers).

    The search enters regions up to its stop, which can lie beyond eps (a
    decision row's projection distance can be far below the distance of the
    region it belongs to). Kept: the start region, every region entered
    through a row whose key (a proved distance) is below eps, and the
    attaining region. A kept region's row into a dropped region is covered by
    DISTANCE or FAR_FACET against E when it can be (a separation certificate
    is computed if the search made none); otherwise the neighbour is kept
    too, until the set is closed. Decision rows keep their covers. Every
    cover is rechecked exactly by `fairness.checker`."""
    s = model.scale_bits
    u = search.query_u
    box = free_box(model)
    eps_sq = Fraction(e * e, 1 << (2 * eps_bits))
    start = search.codes[0].key
    keep = {start} | {k for k, d in search.entered_at.items() if d < eps_sq}
    if attainment.kind in (NEURON, DECISION) and attainment.slice_index == si:
        keep.add(attainment.code)
    out: dict[RowKey, Cover] = {}
    far_regions: dict[str, FarkasCertificate | None] = {}

    def far_region(nb_key: str, code) -> FarkasCertificate | None:
        """One separation certificate per excluded neighbour, shared by every row leading into it."""
        if nb_key not in far_regions:
            rows = search.geometry.region(code).rows()
            found = fk.find_region_separation(rows, box, u, s, caps=search.separation_caps(None))
            ok = found is not None and fk.separation_proves(rows, fk.no_row(box.dim), box, found[0], u, e,
                                                            eps_bits, s)
            far_regions[nb_key] = found[0] if ok else None
        return far_regions[nb_key]

    pending = list(keep)
    while pending:
        key = pending.pop()
        region = search.regions[key]
        for k, form in enumerate(region.neurons):
            rk = (key, NEURON, k)
            nb = region.code.flip(k)
            nb_key = nb.key
            old = covers[rk]
            if old.kind in (DISTANCE, EMPTY_FACET) or (old.kind == NEIGHBOR and nb_key in keep):
                out[rk] = old
                continue
            if form.norm_sq and distance_at_least(form.value(u), form.norm_sq, e, eps_bits, s):
                out[rk] = Cover(DISTANCE)
                continue
            if (cert := far_region(nb_key, nb)) is not None:
                out[rk] = Cover(FAR_REGION, cert)
                continue
            if old.kind in SEPARATION_KINDS:
                out[rk] = old
                continue
            rows, extra, eq = facet_system(region, k)
            sep = search.separations.get((key, k))
            if (sep is None or sep[2] != FAR_FACET) and form.norm_sq:
                found = fk.find_separation(rows, extra, eq, box, u, s, caps=search.separation_caps(k))
                sep = None if found is None else (found[0], found[1], FAR_FACET)
            if sep is not None and sep[2] == FAR_FACET and fk.separation_proves(rows, extra, box, sep[0], u, e,
                                                                                 eps_bits, s):
                out[rk] = Cover(FAR_FACET, sep[0])
                continue
            out[rk] = old
            keep.add(nb_key)
            pending.append(nb_key)
        for j in range(model.net.n_classes):
            if j != search.decision:
                out[(key, DECISION, j)] = covers[(key, DECISION, j)]
    codes = [c.key for c in search.codes if c.key in keep]
    return codes, out


def _assemble(query, y, e, eps_bits, searches, kept, attainment, model) -> Certificate:
    slices = []
    for search, (codes, cov) in zip(searches, kept):
        regions = []
        for key in codes:
            n_neurons = len(search.regions[key].neurons)
            regions.append(RegionCover(
                key, tuple(cov[(key, NEURON, k)] for k in range(n_neurons)),
                tuple(None if j == y else cov[(key, DECISION, j)] for j in range(model.net.n_classes))))
        slices.append(SliceCertificate(search.slice_values, tuple(regions), search.steps))
    mds = None
    if attainment.kind == COUNTEREXAMPLE:
        u = searches[attainment.slice_index].query_u
        p = attainment.witness
        mds = Fraction(sum((x - p.denominator * v) ** 2 for x, v in zip(p.numerators, u)),
                       (p.denominator * p.denominator) << (2 * model.scale_bits))
    elif attainment.kind != CAP:
        s = searches[attainment.slice_index]
        form = _form(s.regions[attainment.code], attainment.kind, attainment.row, y)
        mds = distance_sq(form, s.query_u, model.scale_bits)
    return Certificate(query=query, decision=y, eps=e, eps_bits=eps_bits, status=CERTIFIED,
                       slices=tuple(slices), attainment=attainment, min_distance_sq=mds)
