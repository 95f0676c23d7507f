"""The exact certificate checker: the specification of the fairness circuit.

`check_certificate(model, cert)` returns None when the certificate holds and
raises `CertificationError` naming the first failed rule otherwise. Only
integers are compared; every hyperplane is recomputed from the committed
weights and the activation codes (`SliceGeometry.region`), never read from
the certificate. The rules (docs/STATEMENT.md):

0. The query has the model's length, lies in the box, and its sensitive values
   are domain values; eps's scale t and E are non-negative integers.
1. Inference: the decision at the query is y (argmax, lowest index on a tie).
   For every slice s the forward pass at (u*, s) decides y strictly, unless
   the certificate says FLIP naming a slice that does not (then E = 0).
2. Start region: the activation code of (u*, s) is in S_s.
3. Neuron rows: for every R in S_s and hidden neuron i, one of
   DISTANCE   ||a|| > 0 and (a.u*+c)^2 2^(2t) >= E^2 2^(2s) ||a||^2,
   NEIGHBOR   R with bit i flipped is in S_s,
   EMPTY_FACET a Farkas certificate that {u in box : P_R, z_i(u) = 0} is empty,
   FAR_FACET  a separation certificate (lam >= 0, mu, box multipliers nu):
              h(v) = r'.v - B - support(nu) with r' = r + nu (r, B as below),
              h(u*) > 0 and h(u*)^2 2^(2t) >= E^2 2^(2s) ||r'||^2,
   FAR_REGION the same for the whole neighbouring region P_{R^i} in the box
              (its own rows, no extra row: mu = 0).
4. Decision rows: for every R in S_s and class j != y, DISTANCE for
   d_j = z_y - z_j, NO_CLASS: a Farkas certificate that
   {u in box : P_R, d_j(u) <= 0} is empty, or FAR_CLASS: a separation
   certificate putting that set at distance >= eps.
5. Minimality: E <= cap (floor(2^t * box diagonal)); unless attainment is the
   cap (E == cap), the attaining row is DISTANCE-covered and
   (a.u*+c)^2 2^(2t) < (E+1)^2 2^(2s) ||a||^2; a decision row additionally
   has a rational witness P/D (D > 0) with a.P + c D = 0, inside P_R and the box.
   An exact radius instead exhibits a counterexample: a rational point P/D of
   some slice, in the box, closer than (E+1)/2^t, at which a named class j
   at least ties y in the exact forward pass (`regions.counterexample_error`);
   with rules 1-4 this makes E = floor(true radius * 2^t).

Farkas validity (fairness.farkas.verify): lam >= 0 on the region rows n.u <= b,
mu on the extra row (any sign for an equality, >= 0 for an inequality),
r = sum lam n + mu n_e, B = sum lam b + mu b_e; valid iff
B + max_{u in box}(-r.u) < 0, since every point of the system has r.u <= B
while every box point has r.u >= -max_box(-r.u). Separation validity: every
point v of the facet's system in the box has r.v <= B and nu.v <= support(nu),
so h(v) <= 0; h(u*) > 0 then puts v at integer-unit distance
>= h(u*) / ||r'|| from u* (h is ||r'||-Lipschitz), i.e. real distance >= eps.

Why acceptance is sound. Fix a slice s and a point v in the box at distance
< eps = E/2^t from u*. Walk the segment sigma(t) = u* + t (v - u*), t in
[0, 1]; it stays in the box (convex) and within distance < eps of u*.
(a) sigma stays in U = union of P_R over R in S_s. It starts there (rule 2).
Suppose not; let t0 = sup{t : sigma([0, t]) in U}; U is closed, so sigma(t0)
is in some P_R, and right after t0 the segment violates one of R's rows, so a
row i is tight: z_i^R(sigma(t0)) = 0. That row cannot be DISTANCE-covered
(sigma(t0) lies on its hyperplane at distance < eps, so the projection
distance is < eps; a zero normal is never DISTANCE-covered), nor
EMPTY_FACET-covered (sigma(t0) is a point of that facet in the box), nor
FAR_FACET-covered (sigma(t0) is a point of that facet in the box at
distance < eps from u*, while the certificate puts every such point at
distance >= eps), nor FAR_REGION-covered (sigma(t0) also lies in P_{R^i}:
flipping a tight neuron changes no value at sigma(t0), as below). So
every tight row i is NEIGHBOR-covered. On P_R the network equals R's affine
forms, and flipping a tight neuron leaves every value at sigma(t0) unchanged,
so sigma(t0) lies in P_{R^i} with the same tight set; repeating, every code
that differs from R only on tight bits is in S_s and contains sigma(t0). For
small d > 0 the true activation code on (t0, t0 + d] is constant and differs
from R only on tight bits (non-tight values keep their sign), so those points
are in U, contradicting the choice of t0.
(b) The decision stays y. The true margin D(t) = z_y - z_j (true network) is
continuous, D(0) > 0 for every j (rule 1, strict). If the decision at v were
not y, some j has D(1) <= 0, so D(t1) = 0 for some t1; sigma(t1) lies in some
P_R, R in S_s (a), where the logits equal R's forms: sigma(t1) is a point of
{u in box : P_R, d_j(u) <= 0} (so NO_CLASS fails) on the hyperplane d_j = 0
within distance < eps (so DISTANCE fails, including for a zero normal).
Rule 4 excludes both. Hence every input within eps of the query in its
non-sensitive part, with any sensitive values, is decided y: the published
eps is a lower bound on the true fairness radius. Rule 5 only shows that E
is the largest value these covers support (and, for a decision row, that
the boundary is real); it plays no part in soundness. A FLIP certificate
claims nothing but eps = 0, which holds trivially.
"""
from __future__ import annotations

from typing import Sequence

from fairness import farkas as fk
from fairness.farkas import FarkasCertificate
from fairness.certificate_data import (CAP, CERTIFIED, COUNTEREXAMPLE, DISTANCE, EMPTY_FACET, FAR_CLASS, FAR_FACET,
                                       FAR_REGION, FLIP, NEIGHBOR, NO_CLASS, VERSION, Certificate, strict_decision)
from fairness.errors import CertificationError
from fairness.fixed_point import FixedPointModel
from fairness.geocert import DECISION, NEURON
from fairness.codes import ActivationCode
from fairness.regions import (RationalPoint, SliceGeometry, class_system, counterexample_error, distance_at_least,
                              distance_below_next, eps_cap, facet_system, free_box, free_part)

__all__ = ["check_certificate"]


def _fail(message: str) -> None:
    raise CertificationError(message)


def _farkas_ok(rows, extra, eq, box, cert) -> bool:
    """Exact Farkas check; multipliers must be Python ints (floats would make the test inexact)."""
    if not isinstance(cert, FarkasCertificate) or type(cert.extra) is not int \
            or not all(type(v) is int for v in cert.multipliers):
        return False
    return fk.verify(rows, extra, eq, box, cert)


def _separation_ok(rows, extra, box, cert, u, e, t, s) -> bool:
    """Exact separation check (fairness.farkas.separation_proves) on Python ints only."""
    if not isinstance(cert, FarkasCertificate) or type(cert.extra) is not int or cert.box is None \
            or not all(type(v) is int for v in (*cert.multipliers, *cert.box)):
        return False
    return fk.separation_proves(rows, extra, box, cert, u, e, t, s)


def check_certificate(model: FixedPointModel, cert: Certificate) -> None:
    """Accept (return None) or raise CertificationError with the failed rule."""
    if not isinstance(cert, Certificate):
        _fail("not a Certificate")
    if cert.version != VERSION:
        _fail(f"unsupported certificate version {cert.version}")
    t, e = cert.eps_bits, cert.eps
    if type(t) is not int or t < 0 or type(e) is not int or e < 0:
        _fail("eps must be a non-negative integer at a non-negative scale")
    query = _check_query(model, cert.query)
    net = model.net
    y = net.decision(query)
    if cert.decision != y:
        _fail(f"wrong decision: the model decides {y}, the certificate says {cert.decision}")
    slices = model.slices()
    strict = [strict_decision(net.logits(model.with_slice(query, sv))) for sv in slices]

    if cert.status == FLIP:
        _check_flip(cert, slices, strict, y)
        return
    if cert.status != CERTIFIED:
        _fail(f"unknown status {cert.status!r}")
    if cert.flip is not None:
        _fail("a certified radius cannot carry a flip")
    for index, d in enumerate(strict):
        if d != y:
            _fail(f"slice {index} {slices[index]} does not strictly decide {y} at the query: eps must be 0 (FLIP)")
    if len(cert.slices) != len(slices):
        _fail(f"certificate has {len(cert.slices)} slices, the model has {len(slices)}")
    cap = eps_cap(model, t)
    if e > cap:
        _fail(f"eps {e} exceeds the published cap {cap}")

    box = free_box(model)
    u = free_part(model, query)
    code_sets = []
    for index, (sc, sv) in enumerate(zip(cert.slices, slices)):
        if tuple(sc.slice_values) != tuple(sv):
            _fail(f"slice {index}: values {sc.slice_values} are not the model's slice {sv}")
        code_sets.append(_check_slice(model, index, sc, sv, u, y, e, t, box))
    _check_attainment(model, cert, slices, code_sets, u, y, e, t, cap, box)


def _check_query(model: FixedPointModel, query: Sequence[int]) -> tuple[int, ...]:
    if len(query) != model.net.n_inputs or not all(type(v) is int for v in query):
        _fail(f"query must be {model.net.n_inputs} integers")
    q = tuple(query)
    if not model.in_box(q):
        _fail("query lies outside the domain box")
    f = model.off_domain(q)
    if f is not None:
        _fail(f"query's sensitive feature {f.name!r} (column(s) {list(f.columns)}) is not a domain value")
    return q


def _check_flip(cert: Certificate, slices, strict, y: int) -> None:
    f = cert.flip
    if f is None:
        _fail("FLIP status without a flipping slice")
    if cert.eps != 0:
        _fail("a flip certifies eps = 0 only")
    if not 0 <= f.slice_index < len(slices) or tuple(f.slice_values) != tuple(slices[f.slice_index]):
        _fail("flip names a slice the model does not have")
    d = strict[f.slice_index]
    if d == y:
        _fail(f"slice {f.slice_index} decides {y} strictly: it does not flip")
    if f.tie != (d is None):
        _fail("flip's tie flag does not match the forward pass")


def _check_slice(model, index, sc, slice_values, u, y, e, t, box) -> dict:
    s = model.scale_bits
    hidden = model.net.hidden_sizes
    n_hidden = sum(hidden)
    n_classes = model.net.n_classes
    geom = SliceGeometry(model, slice_values)
    codes = {}
    for rc in sc.regions:
        if not isinstance(rc.code, str):
            _fail(f"slice {index}: activation codes must be strings")
        try:
            code = ActivationCode.parse(rc.code, hidden)
        except ValueError as exc:
            _fail(f"slice {index}: {exc}")
        if rc.code in codes:
            _fail(f"slice {index}: code {rc.code} repeated")
        codes[rc.code] = code
    start = geom.code_of(u).key
    if start not in codes:
        _fail(f"slice {index}: the query's region {start} is not in the covering set")

    for rc in sc.regions:
        where = f"slice {index}, region {rc.code}"
        region = geom.region(codes[rc.code])
        if len(rc.neurons) != n_hidden or len(rc.classes) != n_classes:
            _fail(f"{where}: needs {n_hidden} neuron covers and {n_classes} class entries")
        for k, cover in enumerate(rc.neurons):
            form = region.neurons[k]
            if cover.kind == DISTANCE:
                if not distance_at_least(form.value(u), form.norm_sq, e, t, s):
                    _fail(f"{where}, neuron {k}: hyperplane closer than eps")
            elif cover.kind == NEIGHBOR:
                if region.code.flip(k).key not in codes:
                    _fail(f"{where}, neuron {k}: neighbour region is not in the covering set")
            elif cover.kind == EMPTY_FACET:
                rows, extra, eq = facet_system(region, k)
                if not _farkas_ok(rows, extra, eq, box, cover.farkas):
                    _fail(f"{where}, neuron {k}: invalid Farkas certificate for an empty facet")
            elif cover.kind == FAR_FACET:
                rows, extra, _ = facet_system(region, k)
                if not _separation_ok(rows, extra, box, cover.farkas, u, e, t, s):
                    _fail(f"{where}, neuron {k}: invalid separation certificate for a far facet")
            elif cover.kind == FAR_REGION:
                rows = geom.region(region.code.flip(k)).rows()
                if cover.farkas is None or cover.farkas.extra != 0 or \
                        not _separation_ok(rows, fk.no_row(box.dim), box, cover.farkas, u, e, t, s):
                    _fail(f"{where}, neuron {k}: invalid separation certificate for a far neighbouring region")
            else:
                _fail(f"{where}, neuron {k}: cover kind {cover.kind!r} does not apply to a neuron")
        for j, cover in enumerate(rc.classes):
            if j == y:
                if cover is not None:
                    _fail(f"{where}: the decision's own class takes no cover")
                continue
            if cover is None:
                _fail(f"{where}, class {j}: missing cover")
            form = region.decision_form(y, j)
            if cover.kind == DISTANCE:
                if not distance_at_least(form.value(u), form.norm_sq, e, t, s):
                    _fail(f"{where}, class {j}: decision hyperplane closer than eps")
            elif cover.kind == NO_CLASS:
                rows, extra, eq = class_system(region, y, j)
                if not _farkas_ok(rows, extra, eq, box, cover.farkas):
                    _fail(f"{where}, class {j}: invalid Farkas certificate for an empty class region")
            elif cover.kind == FAR_CLASS:
                rows, extra, _ = class_system(region, y, j)
                if not _separation_ok(rows, extra, box, cover.farkas, u, e, t, s):
                    _fail(f"{where}, class {j}: invalid separation certificate for a far class region")
            else:
                _fail(f"{where}, class {j}: cover kind {cover.kind!r} does not apply to a decision row")
    return codes


def _check_attainment(model, cert, slices, code_sets, u, y, e, t, cap, box) -> None:
    a = cert.attainment
    if a is None:
        _fail("missing attainment of eps")
    if a.kind == CAP:
        if e != cap:
            _fail(f"eps {e} is claimed to be the cap but the cap is {cap}")
        return
    if a.kind == COUNTEREXAMPLE:
        if type(a.slice_index) is not int or not 0 <= a.slice_index < len(slices):
            _fail("the counterexample names a slice the model does not have")
        if a.code is not None:
            _fail("a counterexample names no region")
        if not isinstance(a.witness, RationalPoint):
            _fail("the counterexample needs its rational point")
        why = counterexample_error(model, slices[a.slice_index], y, a.row, a.witness, u, e, t)
        if why is not None:
            _fail(why)
        return
    if a.kind not in (NEURON, DECISION):
        _fail(f"unknown attainment kind {a.kind!r}")
    if type(a.slice_index) is not int or type(a.row) is not int or not isinstance(a.code, str):
        _fail("attainment needs a slice index, a region code and a row")
    if not 0 <= a.slice_index < len(slices) or a.code not in code_sets[a.slice_index]:
        _fail("attainment names a region outside the covering sets")
    region = SliceGeometry(model, slices[a.slice_index]).region(code_sets[a.slice_index][a.code])
    rc = next(r for r in cert.slices[a.slice_index].regions if r.code == a.code)
    if a.kind == NEURON:
        if not 0 <= a.row < len(region.neurons) or rc.neurons[a.row].kind != DISTANCE:
            _fail("attaining neuron row is not a DISTANCE cover")
        form = region.neurons[a.row]
        if a.witness is not None:
            _fail("a neuron row takes no boundary witness")
    else:
        if not 0 <= a.row < model.net.n_classes or a.row == y or rc.classes[a.row].kind != DISTANCE:
            _fail("attaining decision row is not a DISTANCE cover")
        form = region.decision_form(y, a.row)
    if not distance_below_next(form.value(u), form.norm_sq, e, t, model.scale_bits):
        _fail("eps is not maximal: the attaining row is at distance >= (E+1)/2^t")
    if a.kind == DECISION:
        w = a.witness
        if w is None:
            _fail("attaining decision row needs a boundary witness")
        if not isinstance(w, RationalPoint) or type(w.denominator) is not int \
                or not all(type(v) is int for v in w.numerators):
            _fail("boundary witness must be integers")
        if len(w.numerators) != len(u) or w.denominator <= 0:
            _fail("boundary witness has the wrong shape or a non-positive denominator")
        if not w.in_box(box):
            _fail("boundary witness lies outside the box")
        if not region.contains_rational(w):
            _fail("boundary witness lies outside its region")
        if w.form_value(form) != 0:
            _fail("boundary witness is not on the decision hyperplane")
