"""Every way of lying about the statement leaves the constraint system unsatisfied.

Each test builds the witness non-strictly (the builder completes it with the
honest hints instead of refusing early), shows the R1CS rejects it, and
checks that a constraint of the expected gadget is among the violated ones.
"""
from __future__ import annotations

import dataclasses
import random

import pytest

from circuits.field import R
from fairness import farkas as fk
from fairness.certificate import certify
from fairness.checker import check_certificate
from fairness.covers import CoverKind
from fairness.errors import CertificationError
from fairness.fixed_point import FixedPointModel, QuantisedMLP
from fairness.codes import ActivationCode
from fairness.regions import SliceGeometry, class_system, facet_system, free_part
from statement import FarkasEntry
from statement.adapter import bucket_sizes, model_commitment, statement_inputs
from statement_cases import SALT, build, case, rejected, some


def replace_slice(witness, si, **changes):
    slices = list(witness.slices)
    slices[si] = dataclasses.replace(slices[si], **changes)
    return dataclasses.replace(witness, slices=tuple(slices))


# (a) ---------------------------------------------------------------- weights
def test_a_weights_other_than_committed():
    c = case("two_layer")
    net = c.model.net
    w = [list(map(list, layer)) for layer in net.weights]
    w[1][0][1] += 1
    other = FixedPointModel(QuantisedMLP(net.scale_bits, tuple(tuple(map(tuple, l)) for l in w), net.biases),
                            c.model.box_lower, c.model.box_upper, c.model.sensitive)
    cert = certify(other, c.cert.query, eps_bits=c.shape.eps_bits)  # an honest certificate of the other model
    k, f = bucket_sizes(cert)
    shape = dataclasses.replace(c.shape, region_slots=max(k, c.shape.region_slots),
                                farkas_slots=max(f, c.shape.farkas_slots))
    pub, wit = statement_inputs(other, SALT, cert, shape)
    honest = build(shape, pub, wit)
    assert honest.compile().is_satisfied(honest.witness())
    forged = dataclasses.replace(pub, commitment=c.public.commitment)  # ... under the published commitment
    labels = rejected(dataclasses.replace(c, shape=shape), forged, wit)
    assert labels == {"commitment_check"}


def test_a_weights_out_of_declared_range():
    c = case("two_layer")
    w = [list(map(list, layer)) for layer in c.witness.weights]
    w[0][0][0] = 1 << (c.shape.weight_bits[0] + 1)
    wit = dataclasses.replace(c.witness, weights=tuple(tuple(map(tuple, l)) for l in w))
    assert some(rejected(c, None, wit), "params/assert_signed_range")


# (b) ---------------------------------------------------------------- decision
@pytest.mark.parametrize("name", ["two_layer", "three_class"])
def test_b_another_decision(name):
    c = case(name)
    other = (c.public.decision + 1) % c.model.net.n_classes
    labels = rejected(c, dataclasses.replace(c.public, decision=other))
    assert some(labels, "/slot0") or some(labels, "decisions")


def test_b_decision_out_of_range():
    c = case("two_layer")
    labels = rejected(c, dataclasses.replace(c.public, decision=2))
    assert some(labels, "decision")


# (c) ---------------------------------------------------------------- eps
@pytest.mark.parametrize("name", ["two_layer", "three_class_neuron", "one_layer"])
def test_c_inflated_eps(name):
    c = case(name)
    assert c.public.eps < c.shape.eps_cap
    labels = rejected(c, dataclasses.replace(c.public, eps=c.public.eps + 1))
    assert some(labels, "covers")  # the attaining row is closer than (E+1)/2^t


def test_c_eps_above_cap():
    c = case("capped")
    assert c.public.eps == c.shape.eps_cap
    assert some(rejected(c, dataclasses.replace(c.public, eps=c.public.eps + 1)), "eps")


def test_c_deflated_eps_fails_minimality():
    c = case("two_layer")
    assert c.public.eps > 0
    labels = rejected(c, dataclasses.replace(c.public, eps=c.public.eps - 1))
    assert some(labels, "minimality")


def test_c_flip_with_nonzero_eps():
    c = case("flip")
    assert some(rejected(c, dataclasses.replace(c.public, eps=1)), "eps")


# (d) ---------------------------------------------------------------- neighbour
def test_d_omitted_neighbour_region():
    c = case("two_layer_farkas")
    for si, sw in enumerate(c.witness.slices):
        targets = {k for k in range(1, len(sw.codes)) if sw.codes[k] != sw.codes[0]}
        if targets:
            break
    k = min(targets)
    gone = sw.codes[k]
    codes = tuple(sw.codes[0] if code == gone else code for code in sw.codes)
    kinds = tuple(sw.kinds[0] if code == gone else kd for code, kd in zip(sw.codes, sw.kinds))
    labels = rejected(c, None, replace_slice(c.witness, si, codes=codes, kinds=kinds))
    assert some(labels, "membership/lookup")


def test_d_neighbour_cover_without_neighbour():
    # a region whose neuron row is claimed NEIGHBOR while the flipped code is absent
    c = case("three_class")
    sw = c.witness.slices[0]
    kinds = [list(k) for k in sw.kinds]
    codes = set(sw.codes)
    H = c.shape.n_hidden
    for k, code in enumerate(sw.codes):
        for i in range(H):
            flipped = tuple(b ^ (j == i) for j, b in enumerate(code))
            if flipped not in codes:
                kinds[k][i] = CoverKind.NEIGHBOR
                break
        else:
            continue
        break
    labels = rejected(c, None, replace_slice(c.witness, 0, kinds=tuple(map(tuple, kinds))))
    assert some(labels, "membership/lookup")


# (e) ---------------------------------------------------------------- Farkas
ENTRY_KINDS = ("facet", "class", "region")  # EMPTY_FACET, NO_CLASS, FAR_REGION pool entries


def _entry_kind(c, e) -> str:
    return "region" if e.row == c.shape.n_rows else "facet" if e.row < c.shape.n_hidden else "class"


def _farkas_case(kind: str = "facet", name: str = "one_layer"):
    c = case(name)
    for si, sw in enumerate(c.witness.slices):
        for f, e in enumerate(sw.farkas):
            if e is not None and _entry_kind(c, e) == kind:
                return c, si, f, e
    raise AssertionError(f"no {kind} pool entry")


def _native_valid(c, si, e: FarkasEntry) -> bool:
    geom = SliceGeometry(c.model, c.model.slices()[si])
    hidden = c.shape.hidden_sizes
    code = ActivationCode.parse(".".join("".join(str(b) for b in e.code[sum(hidden[:l]):sum(hidden[:l + 1])])
                                  for l in range(len(hidden))), hidden)
    region = geom.region(code)
    H = c.shape.n_hidden
    if e.row == c.shape.n_rows:  # a whole neighbouring region (FAR_REGION)
        rows, extra, eq = region.rows(), fk.no_row(geom.box.dim), False
    elif e.row < H:
        rows, extra, eq = facet_system(region, e.row)
    else:
        o = e.row - H
        y = c.public.decision
        rows, extra, eq = class_system(region, y, o if o < y else o + 1)
    if e.box is not None:  # a separation certificate: the facet is at distance >= eps
        return fk.separation_proves(rows, extra, geom.box, fk.FarkasCertificate(e.lambdas, e.mu, e.box),
                                    free_part(c.model, c.public.query), c.public.eps, c.shape.eps_bits,
                                    c.shape.scale_bits)
    return fk.verify(rows, extra, eq, geom.box, fk.FarkasCertificate(e.lambdas, e.mu))


@pytest.mark.parametrize("kind", ENTRY_KINDS)
def test_e_forged_farkas_multipliers_zero(kind):
    c, si, f, e = _farkas_case(kind)
    assert _native_valid(c, si, e)
    forged = dataclasses.replace(e, lambdas=(0,) * len(e.lambdas), mu=0)
    assert not _native_valid(c, si, forged)
    pool = list(c.witness.slices[si].farkas)
    pool[f] = forged
    assert some(rejected(c, None, replace_slice(c.witness, si, farkas=tuple(pool))), "farkas_check")


@pytest.mark.parametrize("kind", ENTRY_KINDS)
def test_e_forged_farkas_multipliers_perturbed(kind):
    c, si, f, e = _farkas_case(kind, "capped" if kind == "class" else "one_layer")
    rng = random.Random(7)
    pool = list(c.witness.slices[si].farkas)
    for attempt in range(200):  # a perturbation that the exact plaintext check refuses
        spread = 1 + attempt // 50  # widen the perturbation if the certificate has slack
        lam = tuple(max(0, v + rng.randint(-spread * (v // 2) - 1, spread * (v // 2) + 1)) for v in e.lambdas)
        mu = -e.mu if e.row < c.shape.n_hidden else e.mu // (2 + spread) if e.row < c.shape.n_rows else 0
        box = None if e.box is None else tuple(v + rng.randint(-spread * abs(v), spread * abs(v)) for v in e.box)
        forged = dataclasses.replace(e, lambdas=lam, mu=mu, box=box)
        if not _native_valid(c, si, forged):
            break
    else:
        pytest.fail("no invalid perturbation found")
    pool[f] = forged
    assert some(rejected(c, None, replace_slice(c.witness, si, farkas=tuple(pool))), "farkas_check")


def test_e_region_entry_with_extra_multiplier():
    c, si, f, e = _farkas_case("region")
    pool = list(c.witness.slices[si].farkas)
    pool[f] = dataclasses.replace(e, mu=5)  # a whole region has no extra row to weigh
    assert some(rejected(c, None, replace_slice(c.witness, si, farkas=tuple(pool))), "farkas")


def test_e_region_entry_box_multipliers_tampered():
    c, si, f, e = _farkas_case("region")
    for k in range(4, 60):  # the smallest tilt of the box multipliers the exact check refuses
        forged = dataclasses.replace(e, box=tuple(v + (1 << k) * (-1) ** j for j, v in enumerate(e.box)))
        if not _native_valid(c, si, forged):
            break
    else:
        pytest.fail("no refused tilt")
    pool = list(c.witness.slices[si].farkas)
    pool[f] = forged
    assert some(rejected(c, None, replace_slice(c.witness, si, farkas=tuple(pool))), "farkas_check")


def test_e_decision_entry_cannot_claim_distance():
    # A NO_CLASS entry must prove emptiness (r' = 0): box multipliers that leave a
    # residual normal (a distance claim) are refused even if h(u*) stays positive.
    c, si, f, e = _farkas_case("class", "capped")
    forged = dataclasses.replace(e, box=tuple(0 for _ in range(c.shape.n_free)))
    pool = list(c.witness.slices[si].farkas)
    pool[f] = forged
    assert some(rejected(c, None, replace_slice(c.witness, si, farkas=tuple(pool))), "farkas_check")


def test_e_far_region_cover_without_pool_entry():
    c, si, f, e = _farkas_case("region")
    pool = list(c.witness.slices[si].farkas)
    pool[f] = None  # drop the region entry but keep the FAR_REGION covers
    assert some(rejected(c, None, replace_slice(c.witness, si, farkas=tuple(pool))), "membership/lookup")


def test_e_far_region_entry_for_another_region():
    # The entry must be keyed by the neighbour the row leads into: naming a different code breaks the lookup.
    c, si, f, e = _farkas_case("region")
    other = tuple(1 - b for b in e.code)
    pool = list(c.witness.slices[si].farkas)
    pool[f] = dataclasses.replace(e, code=other)
    assert some(rejected(c, None, replace_slice(c.witness, si, farkas=tuple(pool))), "membership/lookup")


def test_e_farkas_cover_without_pool_entry():
    c, si, f, e = _farkas_case()
    pool = list(c.witness.slices[si].farkas)
    pool[f] = None  # drop the entry but keep the Farkas cover kind
    assert some(rejected(c, None, replace_slice(c.witness, si, farkas=tuple(pool))), "membership/lookup")


def test_e_negative_lambda():
    c, si, f, e = _farkas_case()
    pool = list(c.witness.slices[si].farkas)
    pool[f] = dataclasses.replace(e, lambdas=(-1,) + e.lambdas[1:])
    assert some(rejected(c, None, replace_slice(c.witness, si, farkas=tuple(pool))), "assert_range")


# (f) ---------------------------------------------------------------- hidden flip
@pytest.mark.parametrize("name", ["flip", "flip_three_class"])
def test_f_hidden_flipping_slice(name):
    c = case(name)
    fs = c.cert.flip.slice_index
    for e in (0, 1):
        pub = dataclasses.replace(c.public, status=0, flip_slice=0, eps=e)
        labels = rejected(c, pub)
        assert some(labels, f"slice{fs}/slot0")  # that slice does not strictly decide y


def test_f_flip_claimed_on_a_slice_that_agrees():
    c = case("two_layer")
    pub = dataclasses.replace(c.public, status=1, flip_slice=1, eps=0)
    assert some(rejected(c, pub), "decisions")


def test_f_flip_names_a_missing_slice():
    c = case("flip")
    pub = dataclasses.replace(c.public, flip_slice=5)
    assert some(rejected(c, pub), "eps")


# (g) ---------------------------------------------------------------- derived hyperplanes
@pytest.mark.parametrize("fragment", ["slice0/slot1/layer1/mul", "slice1/slot0/layer2/mul", "slice0/farkas0/layer1/mul"])
def test_g_edited_derived_hyperplane(fragment):
    c = case("two_layer")
    cs = build(c.shape, c.public, c.witness)
    r1cs = cs.compile()
    witness = cs.witness()
    assert r1cs.is_satisfied(witness)
    wires = cs.r1cs_wires_matching(lambda name: name.startswith(fragment))
    assert wires
    for wire in wires[:: max(1, len(wires) // 5)]:
        bad = list(witness)
        bad[wire] = (bad[wire] + 1) % R
        idx = r1cs.first_unsatisfied(bad)
        assert idx is not None
        assert cs.constraint_label(idx).startswith(fragment.rsplit("/", 1)[0])


def test_g_start_region_code_is_forced():
    # the activation bits of slot 0 come from comparisons: flipping one is caught
    c = case("two_layer")
    cs = build(c.shape, c.public, c.witness)
    r1cs = cs.compile()
    witness = cs.witness()
    bits = cs.r1cs_wires_matching(lambda n: n.startswith("slice0/slot0/layer1/is_less"))
    assert bits
    for wire in bits:
        bad = list(witness)
        bad[wire] = 1 - bad[wire]
        assert not r1cs.is_satisfied(bad)


# (h) ---------------------------------------------------------------- another query / model
def test_h_another_query():
    c = case("two_layer")
    rng = random.Random(99)
    free = c.model.free_columns
    for _ in range(100):
        q = list(c.public.query)
        for j in free:
            q[j] = rng.randint(c.model.box_lower[j], c.model.box_upper[j])
        try:  # the plaintext checker refuses this certificate at the new query
            check_certificate(c.model, dataclasses.replace(c.cert, query=tuple(q)))
        except CertificationError:
            break
    else:
        pytest.fail("no refused query found")
    assert rejected(c, dataclasses.replace(c.public, query=tuple(q)))


def test_h_query_outside_box_or_domain():
    c = case("two_layer")
    free = c.model.free_columns[0]
    q = list(c.public.query)
    q[free] = c.model.box_upper[free] + 1
    assert some(rejected(c, dataclasses.replace(c.public, query=tuple(q))), "query")
    q = list(c.public.query)
    col = c.model.sensitive_columns[0]
    q[col] = 1  # not a domain value (domain is {0, 2^s})
    assert some(rejected(c, dataclasses.replace(c.public, query=tuple(q))), "query")


def test_h_another_models_commitment():
    c, d = case("two_layer"), case("flip")
    other = model_commitment(d.model, SALT, d.shape)
    assert other != c.public.commitment
    assert rejected(c, dataclasses.replace(c.public, commitment=other)) == {"commitment_check"}


def test_h_another_salt():
    c = case("two_layer")
    wit = dataclasses.replace(c.witness, salt=(SALT + 1) % R)
    assert rejected(c, None, wit) == {"commitment_check"}


def test_h_query_sensitive_combination_outside_domain():
    c = case("two_sensitive")
    q = list(c.public.query)
    q[1] = 32  # between domain values of the second sensitive feature
    assert some(rejected(c, dataclasses.replace(c.public, query=tuple(q))), "query")


# boundary witness of the attaining decision row ------------------------------
def _with_point(c, point, den):
    d = dataclasses.replace(c.witness.designation, point=tuple(point), denominator=den)
    return dataclasses.replace(c.witness, designation=d)


def test_boundary_point_off_the_hyperplane():
    c = case("two_layer")
    d = c.witness.designation
    assert d.row >= c.shape.n_hidden  # a decision row
    p = list(d.point)
    p[0] += 1
    assert some(rejected(c, None, _with_point(c, p, d.denominator)), "minimality/boundary")


def test_boundary_point_with_zero_denominator():
    c = case("two_layer")
    d = c.witness.designation
    assert some(rejected(c, None, _with_point(c, [0] * len(d.point), 0)), "minimality/boundary")


def test_designated_row_must_be_distance_covered():
    c = case("three_class_neuron")
    d = c.witness.designation
    sw = c.witness.slices[d.slice_index]
    kinds = [list(k) for k in sw.kinds]
    # claim the attaining neuron row is covered by a Farkas entry instead (none exists)
    kinds[d.slot][d.row] = CoverKind.EMPTY_FACET
    labels = rejected(c, None, replace_slice(c.witness, d.slice_index, kinds=tuple(map(tuple, kinds))))
    assert some(labels, "minimality")


# (i) ---------------------------------------------------------------- optimised relaxation slopes
# Statements with `alpha_bits` take every lower relaxation slope alpha = a / 2^t as a private input: any alpha in
# [0, 1] is sound (relu(z) >= alpha z), anything else is not, and the constraint system must say so; so must it
# for bounds l, u that cut into a ReLU's input range. Each refusal has its twin: the honest optimised witness.

ALPHA_BITS = 16
ONE = 1 << ALPHA_BITS


def _bound_case(seed: int = 23, hidden=(4, 2)):
    """A bound-radius statement with optimised slopes, for a query whose slopes are not all CROWN's."""
    from fairness.bound_radius import bound_certificate
    from fairness_toy_models import random_model, random_query
    from statement.adapter import statement_shape

    model = random_model(seed, n_inputs=5, hidden=hidden)
    shape = statement_shape(model, region_slots=1, farkas_slots=1, eps_bits=16, radius="bound", alpha_bits=ALPHA_BITS)
    rng = random.Random(seed)
    while True:
        cert = bound_certificate(model, random_query(model, rng), alpha_bits=ALPHA_BITS)
        crown = bound_certificate(model, cert.query, alpha_bits=0)
        if cert.status == "certified" and cert.eps > crown.eps:  # the optimised slopes prove more than CROWN's
            public, witness = statement_inputs(model, SALT, cert.certificate(model), shape)
            return shape, public, witness, (model, crown)


def _lens_case(name: str = "two_layer", delta: int = 40):
    """A region statement with the persistence lens and optimised slopes."""
    c = case(name)
    sens = set(c.shape.sensitive_columns)
    cols = tuple(j for j in range(c.shape.n_inputs) if j not in sens)[:2]
    shape = dataclasses.replace(c.shape, persistence_columns=cols, favourable_class=1, alpha_bits=ALPHA_BITS)
    public, witness = statement_inputs(c.model, SALT, c.cert, shape, persistence_delta=delta)
    return shape, public, witness


def _refused(shape, public, witness) -> set[str]:
    cs = build(shape, public, witness, strict=False)
    assert not cs.compile(wire_names=False).is_satisfied(cs.witness())
    from statement_cases import unsatisfied_labels

    return unsatisfied_labels(cs)


def _accepted(shape, public, witness) -> bool:
    cs = build(shape, public, witness, strict=False)
    return cs.compile(wire_names=False).is_satisfied(cs.witness())


def _with_slope(values: tuple[int, ...], index: int, value: int) -> tuple[int, ...]:
    out = list(values)
    out[index] = value
    return tuple(out)


def _index_of(values: tuple[int, ...], wanted) -> int:
    return next(i for i, a in enumerate(values) if wanted(a))


def test_i_the_honest_optimised_witnesses_are_accepted():
    shape, public, witness, (_, crown) = _bound_case()
    assert _accepted(shape, public, witness) and public.eps > crown.eps
    assert any(0 < a < ONE for a in witness.radius_slopes)  # slopes strictly inside (0, 1): not CROWN's
    shape, public, witness = _lens_case()
    assert _accepted(shape, public, witness)
    assert any(0 < a < ONE for a in witness.persistence_slopes)


@pytest.mark.parametrize("forged", [ONE + 1, 2 * ONE, -1, R - ONE, 1 << 200])
def test_i_a_bound_radius_slope_outside_zero_one_is_refused(forged):
    """alpha one step above 1 (rounded up past it), far above, one step below 0 (rounded down past it, as a
    field element R - 1), a field element near R, and one far beyond the range check's width."""
    shape, public, witness, _ = _bound_case()
    at = _index_of(witness.radius_slopes, lambda a: a == ONE) if forged == ONE + 1 else \
        _index_of(witness.radius_slopes, lambda a: a == 0) if forged == -1 else 0
    labels = _refused(shape, public, dataclasses.replace(witness, radius_slopes=_with_slope(
        witness.radius_slopes, at, forged % R)))
    assert some(labels, "slopes/unit_slope"), labels


@pytest.mark.parametrize("forged", [ONE + 1, -1, R - 7])
def test_i_a_persistence_slope_outside_zero_one_is_refused(forged):
    shape, public, witness = _lens_case()
    at = _index_of(witness.persistence_slopes, lambda a: a == ONE) if forged == ONE + 1 else \
        _index_of(witness.persistence_slopes, lambda a: a == 0) if forged == -1 else 3
    labels = _refused(shape, public, dataclasses.replace(witness, persistence_slopes=_with_slope(
        witness.persistence_slopes, at, forged % R)))
    assert some(labels, "persistence/slopes/unit_slope"), labels


def test_i_a_slope_rounded_the_wrong_way_past_one_would_have_proved_more():
    """Why the range check matters: a slope a hair above 1 where the relaxation is unsound can inflate the
    bound. The circuit refuses it at the range check alone, whatever the rest of the witness."""
    shape, public, witness, _ = _bound_case()
    slopes = tuple(min(a + 1, ONE + 1) if a == ONE else a for a in witness.radius_slopes)  # every 1 rounded up
    labels = _refused(shape, public, dataclasses.replace(witness, radius_slopes=slopes))
    assert some(labels, "slopes/unit_slope"), labels


def test_i_in_range_slopes_keep_the_bound_sound_but_not_the_published_one():
    """Any slope in [0, 1] is sound, so other in-range slopes are refused only where they prove less than the
    public statement says: all-zero slopes cannot carry the optimised eps, nor the lens's optimised bounds;
    CROWN's slopes (0 or 1) carry CROWN's eps and not the optimised one."""
    from fairness.alpha_crown import optimise_plans

    shape, public, witness, (model, crown) = _bound_case()
    zeros = dataclasses.replace(witness, radius_slopes=(0,) * len(witness.radius_slopes))
    assert some(_refused(shape, public, zeros), "margins")
    plans = optimise_plans(model, public.query, public.decision, crown.eps, 16, ALPHA_BITS, iterations=0)
    crowns = dataclasses.replace(witness, radius_slopes=tuple(a for plan in plans for a in plan.flat()))
    assert set(crowns.radius_slopes) <= {0, ONE}
    assert _accepted(shape, dataclasses.replace(public, eps=crown.eps), crowns)
    assert some(_refused(shape, public, crowns), "margins")
    shape, public, witness = _lens_case()
    zeros = dataclasses.replace(witness, persistence_slopes=(0,) * len(witness.persistence_slopes))
    assert some(_refused(shape, public, zeros), "persistence/pair")


def test_i_intermediate_bounds_that_cut_into_the_relu_are_refused(monkeypatch):
    """Bounds l, u narrower than the set's (a neuron claimed stable, or l rounded up) would let a relaxation
    hold only on part of the neuron's range; with optimised slopes as without, the circuit refuses them."""
    import statement.bound_radius as circuit

    shape, public, witness, _ = _bound_case()
    floor = circuit.floor_hint
    monkeypatch.setattr(circuit, "floor_hint", lambda scale: (lambda v: [floor(scale)(v)[0] + 1]))
    assert some(_refused(shape, public, witness), "neuron")
    monkeypatch.undo()
    honest = circuit.upper_hint
    for lie in ((lambda l, u: [1, 0, 0]), (lambda l, u: [0, 1, 0])):  # "active" or "dead" whatever its bounds
        monkeypatch.setattr(circuit, "upper_hint", lie)
        assert some(_refused(shape, public, witness), "neuron")
        monkeypatch.undo()
    monkeypatch.setattr(circuit, "upper_hint", lambda l, u: [*honest(l, u)[:2], max(honest(l, u)[2] - 1, 0)])
    assert some(_refused(shape, public, witness), "neuron")  # the upper line rounded down: below ReLU at u
    monkeypatch.undo()
    assert _accepted(shape, public, witness)


def test_i_a_witness_with_too_few_slopes_is_refused_in_plain_words():
    shape, public, witness, _ = _bound_case()
    with pytest.raises(Exception, match="optimised slopes"):
        build(shape, public, dataclasses.replace(witness, radius_slopes=witness.radius_slopes[:-1]), strict=False)
