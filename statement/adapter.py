"""From a fairness certificate to the statement's inputs (bank side).

`statement_shape` derives the public shape of a model for a bucket (K region
slots, F Farkas slots per slice); `statement_inputs` turns a checked
`fairness.certificate.Certificate` into the circuit's public inputs and
private witness (plain ints and cover kinds, see `statement.witness`):

- slot 0 of every slice is the start region (the certificate lists it
  first); padding repeats it, with the same cover kinds;
- covers keep their `CoverKind`; EMPTY_FACET, FAR_FACET and NO_CLASS add a
  pool entry (code, row, multipliers; box multipliers for FAR_FACET), and
  FAR_REGION one entry per distinct neighbouring region (row = n_rows);
  decision rows are indexed by o = j if j < y else j - 1, row H + o;
- attainment 'cap' -> no designation; a neuron/decision attainment -> the
  designation (slice, slot of its code, row) and for a decision row the
  boundary point P / D (fast statements); a counterexample -> its slice,
  class o and point P / D (exact statements, which also take FAR_CLASS
  decision rows as pool entries with box multipliers);
- FLIP -> `StatementWitness.flip` with the start codes of every slice.
"""
from __future__ import annotations

import dataclasses
import secrets
from typing import Sequence

from circuits.field import R
from fairness.certificate import CAP, CERTIFIED, COUNTEREXAMPLE, COUNTEREXAMPLE_BITS, FLIP, Certificate
from fairness.covers import CoverKind
from fairness.farkas import MAX_MULTIPLIER_BITS
from fairness.fixed_point import FixedPointModel
from fairness.geocert import DECISION, NEURON
from fairness.codes import ActivationCode
from fairness.regions import SliceGeometry, eps_cap, free_part
from fairness.slope_plans import DEFAULT_ALPHA_BITS, plan_size
from fairness.bound_radius import radius_search
from fairness.persistence import proved_bounds, proved_slopes
from fairness.spread import SpreadLens, spread

from .commitment import commit
from .shape import BOUND_RADIUS, StatementShape
from .widths import widths
from .witness import (STATUS_CERTIFIED, STATUS_FLIP, Counterexample, Designation, FarkasEntry, SliceWitness,
                      StatementPublic,
                      StatementWitness, StatementWitnessError)

DEFAULT_FARKAS_BITS = MAX_MULTIPLIER_BITS  # the largest multiplier fairness.farkas issues is below 2^40
# Boundary denominators: the certificate interpolates between two exact region
# points, |D| <= 2^(2k+1) V with V the decision form's bound on the box and k the
# dyadic rounding of the LP point (k = 0 usually). Default: V's width + 8 bits.
BOUNDARY_MARGIN_BITS = 8


def new_salt() -> int:
    """A uniformly random field element (the commitment's blinding)."""
    return secrets.randbelow(R)


def parameter_bits(model: FixedPointModel) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """Smallest declared bounds: |W_l| < 2^wb_l, |b_l| < 2^bb_l (at least 1 bit)."""
    net = model.net
    wb = tuple(max(1, max(abs(v) for row in w for v in row).bit_length()) for w in net.weights)
    bb = tuple(max(1, max(abs(v) for v in b).bit_length()) for b in net.biases)
    return wb, bb


def statement_shape(model: FixedPointModel, *, region_slots: int, farkas_slots: int, eps_bits: int,
                    farkas_bits: int = DEFAULT_FARKAS_BITS, boundary_bits: int | None = None,
                    weight_bits: Sequence[int] | None = None,
                    bias_bits: Sequence[int] | None = None, radius: str = "fast",
                    lens: SpreadLens | None = None, alpha_bits: int | None = None) -> StatementShape:
    """The shape of `model`'s statement for one bucket. An exact-radius shape
    ("exact") proves counterexample minimality; its point denominators default
    to the certifier's 2^COUNTEREXAMPLE_BITS. `lens`: the spread lens's parameters, if it has one.
    `alpha_bits`: the optimised slopes' bits (default: DEFAULT_ALPHA_BITS for the bound radius, else none;
    a shape given the persistence lens later sets its own)."""
    wb, bb = parameter_bits(model)
    net = model.net
    shape = StatementShape(
        n_inputs=net.n_inputs, hidden_sizes=net.hidden_sizes, n_classes=net.n_classes,
        sensitive_columns=model.sensitive_columns, slices=tuple(model.slices()),
        sensitive_widths=model.sensitive_widths,
        box_lower=model.box_lower, box_upper=model.box_upper, scale_bits=model.scale_bits,
        eps_bits=eps_bits, eps_cap=eps_cap(model, eps_bits),
        weight_bits=tuple(weight_bits) if weight_bits is not None else wb,
        bias_bits=tuple(bias_bits) if bias_bits is not None else bb,
        region_slots=region_slots, farkas_slots=farkas_slots, farkas_bits=farkas_bits,
        boundary_bits=boundary_bits if boundary_bits is not None else 1, radius=radius,
        spread_width=lens.bucket_width if lens else 0, favourable_class=lens.favourable_class if lens else 0,
        alpha_bits=(DEFAULT_ALPHA_BITS if radius == BOUND_RADIUS else 0) if alpha_bits is None else alpha_bits)
    if boundary_bits is None and shape.exact:
        shape = dataclasses.replace(shape, boundary_bits=COUNTEREXAMPLE_BITS)
    elif boundary_bits is None:
        v = widths(dataclasses.replace(shape, boundary_bits=1)).decision.value
        shape = dataclasses.replace(shape, boundary_bits=v.bit_length() + BOUNDARY_MARGIN_BITS)
    return shape


def _far_region_code(code: str, k: int, hidden_sizes) -> str:
    return ActivationCode.parse(code, hidden_sizes).flip(k).key


def _pool_size(sc, hidden_sizes) -> int:
    """Pool entries of one slice: one per row certificate, one per distinct far neighbouring region."""
    rows = sum(1 for r in sc.regions for c in (*r.neurons, *r.classes)
               if c is not None and c.farkas is not None and c.kind != CoverKind.FAR_REGION)
    far = {_far_region_code(r.code, k, hidden_sizes) for r in sc.regions for k, c in enumerate(r.neurons)
           if c.kind == CoverKind.FAR_REGION}
    return rows + len(far)


def required_slots(cert: Certificate) -> tuple[int, int]:
    """(regions, Farkas entries) the largest slice of this certificate needs."""
    if cert.status != CERTIFIED:
        return 1, 1
    k = max(len(s.regions) for s in cert.slices)
    hidden = tuple(len(group) for group in cert.slices[0].regions[0].code.split("."))
    f = max(_pool_size(s, hidden) for s in cert.slices)
    return k, max(f, 1)


MIN_BUCKET = 4
# Bucket ladders: each size is this many times the last. The bucket is what a proof reveals about
# its covering set (within a factor of the growth), and every bucket has keys of its own.
BUCKET_GROWTHS = (2, 4)
DEFAULT_BUCKET_GROWTH = 4


def bucket_level(n: int, growth: int = DEFAULT_BUCKET_GROWTH) -> int:
    """The smallest MIN_BUCKET * growth^i >= n.

    Powers of four (the default) pad a statement up to 4x and reveal the
    covering-set size and pool size each within a factor of 4; powers of two
    pad up to 2x (about 1.4x on average, against 2.2x) and reveal each size
    within a factor of 2, one more bit of each, and need about twice as many keys."""
    if growth not in BUCKET_GROWTHS:
        raise ValueError(f"bucket growth must be one of {BUCKET_GROWTHS}, not {growth!r}")
    level = MIN_BUCKET
    while level < n:
        level *= growth
    return level


def slice_slots(cert: Certificate, slice_index: int) -> tuple[int, int]:
    """(regions, Farkas entries) one slice of this certificate needs (its per-slice statement's bucket)."""
    if cert.status != CERTIFIED:
        return 1, 1
    sc = cert.slices[slice_index]
    hidden = tuple(len(group) for group in cert.slices[0].regions[0].code.split("."))
    return len(sc.regions), max(_pool_size(sc, hidden), 1)


def bucket_sizes(cert: Certificate, growth: int = DEFAULT_BUCKET_GROWTH) -> tuple[int, int]:
    """(K, F): the bucket levels of `required_slots`."""
    k, f = required_slots(cert)
    return bucket_level(k, growth), bucket_level(f, growth)


def _entry_caps(e: FarkasEntry, shape: StatementShape) -> list[int]:
    """Bit caps of an exact statement's pool entry: each multiplier, mu, then each box multiplier."""
    H = shape.n_hidden
    lam_bits = list(shape.lambda_bits)
    mu_bits = lam_bits[e.row] if e.row < H else shape.farkas_bits + 1
    return lam_bits + [mu_bits] + [widths(shape).nu_bits] * len(e.box or ())


def _widened(e: FarkasEntry, shape: StatementShape) -> FarkasEntry:
    """A separation entry with every multiplier times 2^m, m as large as the widths allow.

    Scaling multiplies h(u*) and r' by 2^m, so the distance it proves is the same;
    but the exact statement compares truncated values (`statement.farkas`), and
    those keep the most bits when h and r' are as wide as their caps permit."""
    if e.box is None:
        return e  # emptiness: r' = 0, nothing is truncated that matters
    values = [*e.lambdas, e.mu, *e.box]
    room = [cap - abs(v).bit_length() for v, cap in zip(values, _entry_caps(e, shape)) if v]
    m = min(room, default=0)
    if m <= 0:
        return e
    return FarkasEntry(e.code, e.row, tuple(v << m for v in e.lambdas), e.mu << m, tuple(v << m for v in e.box))


def _check_truncated_separation(e: FarkasEntry | None, geometry: SliceGeometry, shape: StatementShape, y: int,
                                u, eps: int, si: int) -> None:
    """Refuse, with a typed error, a separation entry the exact statement's truncated comparison
    would not accept (the circuit checks H^2 2^(2t) >= E^2 2^(2s) N, `statement.farkas`)."""
    from fairness import farkas as fk
    from fairness.codes import ActivationCode
    from fairness.farkas import FarkasCertificate
    from fairness.regions import class_system, facet_system, free_box

    if e is None or e.box is None:
        return
    H = shape.n_hidden
    region = geometry.region(ActivationCode.from_bits(e.code, shape.hidden_sizes))
    if e.row < H:
        rows, extra, _ = facet_system(region, e.row)
    elif e.row < shape.n_rows:
        o = e.row - H
        rows, extra, _ = class_system(region, y, o if o < y else o + 1)
    else:
        rows, extra = region.rows(), fk.no_row(shape.n_free)
    out = fk.separation(rows, extra, free_box(geometry.model), FarkasCertificate(e.lambdas, e.mu, e.box), u)
    if out is None:
        raise StatementWitnessError(f"slice {si}: a malformed separation entry")
    h, r2 = out
    k = widths(shape).separation_shift
    high = max(h, 0) >> k
    n_high = -(-sum(v * v for v in r2) >> (2 * k))
    if not (h > 0 and (high * high) << (2 * shape.eps_bits) >= (eps * eps * n_high) << (2 * shape.scale_bits)):
        raise StatementWitnessError(f"slice {si}: a separation certificate of row {e.row} proves eps only before "
                                    "the exact statement's truncation; it needs wider multipliers")


def spread_inputs(model: FixedPointModel, shape: StatementShape, query) -> dict:
    """The spread lens's public inputs (fairness.spread, computed in plaintext), if the shape has the lens."""
    if not shape.spread:
        return {}
    sp = spread(model, query, SpreadLens(shape.favourable_class, shape.spread_width))
    return {"spread_decisions": sp.decisions, "spread_buckets": sp.distinct_buckets}


def persistence_inputs(model: FixedPointModel, shape: StatementShape, query, delta: int | None) -> dict:
    """The persistence lens's public inputs (fairness.persistence, computed in plaintext), if the shape
    has the lens: delta (an integer at the input scale) and the bounds per counterfactual pair."""
    if not shape.persistence:
        if delta is not None:
            raise StatementWitnessError("this statement has no persistence lens: it takes no delta")
        return {}
    cap = max(shape.box_upper[j] - shape.box_lower[j] for j in shape.persistence_columns)
    if type(delta) is not int or not 0 <= delta <= cap:
        raise StatementWitnessError(f"a statement with the persistence lens needs delta, an int at 2^s in [0, {cap}] "
                                    "(the widest moved column of the domain box)")
    bounds = proved_bounds(model, query, shape.favourable_class, shape.persistence_columns, delta,
                           alpha_bits=shape.alpha_bits)
    return {"persistence_delta": delta, "persistence_bounds": tuple(bounds)}


def persistence_slopes(model: FixedPointModel, shape: StatementShape, query, delta: int | None) -> tuple[int, ...]:
    """The persistence lens's optimised slopes behind `persistence_inputs`' bounds (witness; shapes with the
    lens and alpha_bits only, else none)."""
    if not shape.persistence or not shape.alpha_bits:
        return ()
    found = proved_slopes(model, query, shape.favourable_class, shape.persistence_columns, delta, shape.alpha_bits)
    return tuple(a for pair in found for side in pair for a in side.flat())


def radius_slopes(model: FixedPointModel, shape: StatementShape, cert: Certificate) -> tuple[int, ...]:
    """The bound radius's optimised slopes (witness; bound shapes with alpha_bits only): those the search
    `fairness.bound_radius.radius_search` found for the query, which prove its eps; a flip proves no bound,
    so any slopes do (zeros)."""
    if not shape.alpha_bits:
        return ()
    found = radius_search(model, cert.query, shape.eps_bits, shape.alpha_bits) if cert.status == CERTIFIED else None
    if found is None or found.plans is None:
        return (0,) * (plan_size(shape.hidden_sizes, shape.n_classes) * shape.n_slices)
    if found.decision != cert.decision or found.eps < cert.eps:
        raise StatementWitnessError(f"the bound radius's slopes prove eps {found.eps} for decision {found.decision}, "
                                    f"not the certificate's {cert.eps} for {cert.decision}")
    return tuple(a for plan in found.plans for a in plan.flat())


def model_commitment(model: FixedPointModel, salt: int, shape: StatementShape) -> int:
    return commit(salt, model.net.weights, model.net.biases, shape)


def _check_model(model: FixedPointModel, shape: StatementShape) -> None:
    net = model.net
    same = (net.n_inputs == shape.n_inputs and net.hidden_sizes == shape.hidden_sizes
            and net.n_classes == shape.n_classes and model.sensitive_columns == shape.sensitive_columns
            and tuple(model.slices()) == shape.slices and shape.attribute_widths == model.sensitive_widths
            and model.box_lower == shape.box_lower
            and model.box_upper == shape.box_upper and model.scale_bits == shape.scale_bits)
    if not same:
        raise StatementWitnessError("the model does not match the statement shape")
    for l, (w, b) in enumerate(zip(net.weights, net.biases)):
        if any(abs(v) >= 1 << shape.weight_bits[l] for row in w for v in row) or \
                any(abs(v) >= 1 << shape.bias_bits[l] for v in b):
            raise StatementWitnessError(f"layer {l} parameters exceed the shape's declared bounds")


def statement_inputs(model: FixedPointModel, salt: int, cert: Certificate, shape: StatementShape,
                     part: int | None = None, *,
                     persistence_delta: int | None = None) -> tuple[StatementPublic, StatementWitness]:
    """Public inputs and witness for a certificate (which must pass `fairness.checker`); for a
    per-slice shape, those of slice `part`'s proof; `persistence_delta` (at 2^s) when the shape has
    the persistence lens."""
    _check_model(model, shape)
    if shape.radius == BOUND_RADIUS:
        return bound_statement_inputs(model, salt, cert, shape, persistence_delta=persistence_delta)
    if shape.per_slice != (part is not None):
        raise StatementWitnessError("a per-slice statement needs the slice it covers, a whole statement none")
    if part is not None and not (type(part) is int and 0 <= part < shape.n_slices):
        raise StatementWitnessError(f"slice {part!r} is not one of the model's {shape.n_slices} slices")
    covered = [part] if part is not None else list(range(shape.n_slices))
    lenses = persistence_inputs(model, shape, cert.query, persistence_delta)
    if cert.eps_bits != shape.eps_bits:
        raise StatementWitnessError(f"certificate eps scale 2^{cert.eps_bits} differs from the shape's 2^{shape.eps_bits}")
    if not 0 <= salt < R:
        raise StatementWitnessError("salt must be a field element")
    net = model.net
    commitment = model_commitment(model, salt, shape)
    u = free_part(model, cert.query)

    def slopes() -> dict:  # last: the slope search runs once every other check has passed
        return {"persistence_slopes": persistence_slopes(model, shape, cert.query, persistence_delta)}

    if cert.status == FLIP:
        if cert.flip is None:
            raise StatementWitnessError("FLIP certificate without a flip slice")
        public = StatementPublic(commitment, cert.decision, 0, STATUS_FLIP, cert.flip.slice_index, tuple(cert.query),
                                 part, **spread_inputs(model, shape, cert.query), **lenses)
        starts = [SliceGeometry(model, shape.slices[si]).code_of(u).bit_ints for si in covered]
        return public, dataclasses.replace(StatementWitness.flip(shape, net.weights, net.biases, salt, starts), **slopes())
    if cert.status != CERTIFIED:
        raise StatementWitnessError(f"unknown certificate status {cert.status!r}")
    _check_radius_kind(cert, shape)
    slices, slot_of = [], {}
    for si in covered:
        witness, slot_of[si] = _slice_witness(model, shape, cert, si, u)
        slices.append(witness)
    designation = _designation(cert, shape, slot_of, u)
    public = StatementPublic(commitment, cert.decision, cert.eps, STATUS_CERTIFIED, 0, tuple(cert.query), part,
                             **spread_inputs(model, shape, cert.query), **lenses)
    return public, StatementWitness(net.weights, net.biases, salt, tuple(slices), designation, **slopes())


def _check_radius_kind(cert: Certificate, shape: StatementShape) -> None:
    """Refuse a certificate whose radius (fast or exact) is not the statement's."""
    exact_cert = cert.radius_is_exact or any(c is not None and c.kind == CoverKind.FAR_CLASS
                                             for sc in cert.slices for rc in sc.regions for c in rc.classes)
    if exact_cert and not shape.exact:
        raise StatementWitnessError("this statement proves the fast (projection) radius; an exact-radius "
                                    "certificate (far class regions, a counterexample) needs the exact statement")
    if shape.exact and cert.attainment is not None and cert.attainment.kind not in (CAP, COUNTEREXAMPLE):
        raise StatementWitnessError("this statement proves the exact radius; a fast certificate (minimality by a "
                                    "projection-distance row) needs the fast statement")


def _other(j: int, y: int) -> int:
    """The decision row index o of class j != y."""
    return j if j < y else j - 1


def _slice_witness(model: FixedPointModel, shape: StatementShape, cert: Certificate, si: int,
                   u) -> tuple[SliceWitness, dict[str, int]]:
    """Slice si's codes (padded by repeating the start region), cover kinds and Farkas pool, and each
    region code's first slot."""
    sc = cert.slices[si]
    if len(sc.regions) > shape.region_slots:
        raise StatementWitnessError(f"slice {si} has {len(sc.regions)} regions; the bucket holds {shape.region_slots}")
    codes, kinds, pool = [], [], []
    far_regions: dict[str, FarkasEntry] = {}
    index: dict[str, int] = {}
    for rc in sc.regions:
        bits = ActivationCode.parse(rc.code, shape.hidden_sizes).bit_ints
        index.setdefault(rc.code, len(codes))
        codes.append(bits)
        row_kinds = [CoverKind(c.kind) for c in rc.neurons]
        row_kinds += [CoverKind(rc.classes[j].kind) for j in range(shape.n_classes) if j != cert.decision]
        kinds.append(tuple(row_kinds))
        pool += _region_entries(shape, rc, bits, far_regions, cert.decision)
    if len(pool) > shape.farkas_slots:
        raise StatementWitnessError(f"slice {si} needs {len(pool)} Farkas entries; the bucket holds {shape.farkas_slots}")
    _check_pool_bits(shape, pool, si)
    if shape.exact:
        geometry = SliceGeometry(model, shape.slices[si])
        pool = [_widened(e, shape) for e in pool]
        for e in pool:
            _check_truncated_separation(e, geometry, shape, cert.decision, u, cert.eps, si)
    start = SliceGeometry(model, shape.slices[si]).code_of(u).bit_ints
    if codes[0] != start:
        raise StatementWitnessError(f"slice {si}: the first region of the certificate is not the query's region")
    pad = shape.region_slots - len(codes)
    codes += [codes[0]] * pad
    kinds += [kinds[0]] * pad
    farkas = tuple(pool) + (None,) * (shape.farkas_slots - len(pool))
    return SliceWitness(tuple(codes), tuple(kinds), farkas), index


def _region_entries(shape: StatementShape, rc, bits, far_regions: dict[str, FarkasEntry], y: int) -> list[FarkasEntry]:
    """One region's pool entries: one per row certificate, and one per neighbouring region first reached
    by FAR_REGION (`far_regions` holds those already entered, shared by their rows)."""
    H = shape.n_hidden
    out = []
    for k, c in enumerate(rc.neurons):
        if c.kind == CoverKind.FAR_REGION:
            nb = _far_region_code(rc.code, k, shape.hidden_sizes)
            if nb not in far_regions:  # one entry per neighbouring region, shared by its rows
                far_regions[nb] = FarkasEntry(
                    ActivationCode.parse(nb, shape.hidden_sizes).bit_ints, shape.n_rows,
                    tuple(c.farkas.multipliers), c.farkas.extra, c.farkas.box)
                out.append(far_regions[nb])
        elif c.farkas is not None:
            out.append(FarkasEntry(bits, k, tuple(c.farkas.multipliers), c.farkas.extra, c.farkas.box))
    for j, c in enumerate(rc.classes):
        if c is not None and c.farkas is not None:
            out.append(FarkasEntry(bits, H + _other(j, y), tuple(c.farkas.multipliers), c.farkas.extra,
                                   c.farkas.box if c.kind == CoverKind.FAR_CLASS else None))
    return out


def _check_pool_bits(shape: StatementShape, pool: list[FarkasEntry], si: int) -> None:
    """Refuse a pool entry whose multipliers exceed the shape's bits."""
    H = shape.n_hidden
    nu_limit = 1 << widths(shape).nu_neuron_bits
    for e in pool:
        lam_bits = shape.lambda_bits if H <= e.row < shape.n_rows else shape.neuron_entry_lambda_bits
        mu_bits = lam_bits[e.row] if e.row < H else shape.farkas_bits + (1 if e.row < shape.n_rows else 0)
        if any(not 0 <= v < 1 << b for v, b in zip(e.lambdas, lam_bits)) or abs(e.mu) >= 1 << mu_bits:
            raise StatementWitnessError(f"slice {si}: a Farkas multiplier of row {e.row} exceeds the shape's "
                                        f"bits ({', '.join(map(str, sorted(set(lam_bits))))})")
        if e.box is not None and any(abs(v) >= nu_limit for v in e.box):
            raise StatementWitnessError(f"slice {si}: a box multiplier exceeds the shape's bound")


def _designation(cert: Certificate, shape: StatementShape, slot_of: dict[int, dict[str, int]],
                 u) -> Designation | Counterexample | None:
    """The minimality witness of the certificate's attainment: none at the cap, a designated row (and a
    decision row's boundary point) in fast statements, a counterexample in exact ones."""
    H = shape.n_hidden
    a = cert.attainment
    if a is None:
        raise StatementWitnessError("certificate has no attainment")
    if a.kind in (NEURON, DECISION):
        slot = slot_of[a.slice_index][a.code]
        if a.kind == NEURON:
            return Designation(a.slice_index, slot, a.row, tuple(u), 1)
        w = a.witness
        if w is None:
            raise StatementWitnessError("decision attainment without a boundary point")
        if not 1 <= w.denominator <= 1 << shape.boundary_bits:
            raise StatementWitnessError(f"boundary denominator has {w.denominator.bit_length()} bits; the shape "
                                        f"allows {shape.boundary_bits} (choose a larger boundary_bits)")
        return Designation(a.slice_index, slot, H + _other(a.row, cert.decision), tuple(w.numerators), w.denominator)
    if a.kind == COUNTEREXAMPLE:
        w = a.witness
        if w is None or not 1 <= w.denominator <= 1 << shape.boundary_bits:
            raise StatementWitnessError(f"the counterexample's denominator must lie in [1, 2^{shape.boundary_bits}]")
        return Counterexample(a.slice_index, _other(a.row, cert.decision), tuple(w.numerators), w.denominator)
    if a.kind != CAP:
        raise StatementWitnessError(f"unknown attainment kind {a.kind!r}")
    return None


def bound_statement_inputs(model: FixedPointModel, salt: int, cert: Certificate, shape: StatementShape, *,
                           persistence_delta: int | None = None) -> tuple[StatementPublic, StatementWitness]:
    """Public inputs and witness of a bound-radius statement: the certificate's decision, eps (certified by
    fairness.bound_radius, whose choices the circuit's hints make, with the search's optimised slopes in the
    witness when the shape has alpha_bits) or flip, and the lenses; no regions."""
    _check_model(model, shape)
    if cert.eps_bits != shape.eps_bits:
        raise StatementWitnessError(f"certificate eps scale 2^{cert.eps_bits} differs from the shape's 2^{shape.eps_bits}")
    if not 0 <= salt < R:
        raise StatementWitnessError("salt must be a field element")
    lenses = {**spread_inputs(model, shape, cert.query), **persistence_inputs(model, shape, cert.query, persistence_delta)}
    commitment = model_commitment(model, salt, shape)
    if cert.status == FLIP:
        if cert.flip is None:
            raise StatementWitnessError("FLIP certificate without a flip slice")
        public = StatementPublic(commitment, cert.decision, 0, STATUS_FLIP, cert.flip.slice_index, tuple(cert.query),
                                 None, **lenses)
    else:
        public = StatementPublic(commitment, cert.decision, cert.eps, STATUS_CERTIFIED, 0, tuple(cert.query), None,
                                 **lenses)
    return public, StatementWitness(model.net.weights, model.net.biases, salt, (), None,
                                    radius_slopes=radius_slopes(model, shape, cert),
                                    persistence_slopes=persistence_slopes(model, shape, cert.query, persistence_delta))
