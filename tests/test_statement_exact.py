"""The exact-radius statement: honest witnesses satisfy it, and every way of
lying about the counterexample or a far-class cover leaves it unsatisfied.

Like tests/test_statement_malicious.py, each forgery is built non-strictly
(the builder completes it with honest hints), must fail the R1CS, and must
fail a constraint of the gadget that states the broken rule.
"""
from __future__ import annotations

import dataclasses

import pytest

from circuits.builder import ConstraintSystem
from circuits.groth16.prove import prove
from circuits.groth16.setup import setup
from circuits.groth16.verify import verify
from statement import Counterexample, FarkasEntry, build_statement
from statement.adapter import statement_inputs
from statement.witness import StatementWitnessError
from statement_cases import CASES, SALT, build, case, exact_case, mcl, rejected, some, unsatisfied_labels  # noqa: F401 (mcl: fixture)

HONEST = ["two_layer", "two_layer_farkas", "one_layer", "capped", "three_class", "flip", "three_hidden", "far_class"]


def with_counterexample(c, **changes):
    return dataclasses.replace(c.witness, designation=dataclasses.replace(c.witness.designation, **changes))


@pytest.mark.parametrize("name", HONEST)
def test_honest_exact_witness_satisfies(name):
    c = exact_case(name)
    assert c.shape.exact
    cs = build(c.shape, c.public, c.witness)
    assert cs.compile(wire_names=False).is_satisfied(cs.witness())
    if c.cert.status == "certified" and c.cert.attainment.kind == "counterexample":
        assert isinstance(c.witness.designation, Counterexample)
        if name in CASES:
            assert c.public.eps >= case(name).public.eps  # never below the fast radius


def test_fixture_exercises_counterexamples_and_far_classes():
    kinds = {exact_case(n).cert.attainment.kind for n in HONEST if exact_case(n).cert.attainment is not None}
    assert {"counterexample", "cap"} <= kinds
    assert any(e is not None and exact_case(n).shape.n_hidden <= e.row < exact_case(n).shape.n_rows and e.box is not None
               for n in HONEST for sw in exact_case(n).witness.slices for e in sw.farkas)


# ------------------------------------------------------------ the counterexample

def test_understated_eps_fails_the_distance():
    """E - 1 keeps every cover valid; the counterexample is then not closer than E."""
    c = exact_case("one_layer")
    labels = rejected(c, dataclasses.replace(c.public, eps=c.public.eps - 1))
    assert some(labels, "minimality/distance")


def test_overstated_eps_fails_a_cover():
    c = exact_case("one_layer")
    labels = rejected(c, dataclasses.replace(c.public, eps=c.public.eps + 1))
    assert some(labels, "farkas") or some(labels, "distance")


def test_counterexample_at_the_query_fails_the_class_test():
    c = exact_case("one_layer")
    u = tuple(c.public.query[j] for j in c.shape.free_columns)
    labels = rejected(c, witness=with_counterexample(c, point=u, denominator=1))
    assert some(labels, "minimality/class")


def test_counterexample_outside_the_box_is_refused():
    c = exact_case("one_layer")
    cx = c.witness.designation
    hi = c.shape.box_upper[c.shape.free_columns[0]]
    point = (hi * cx.denominator + cx.denominator,) + cx.point[1:]
    labels = rejected(c, witness=with_counterexample(c, point=point))
    assert some(labels, "minimality")


def test_counterexample_with_zero_denominator_is_refused():
    c = exact_case("one_layer")
    labels = rejected(c, witness=with_counterexample(c, denominator=0))
    assert some(labels, "minimality")


def test_counterexample_denominator_above_the_shape_is_refused():
    c = exact_case("one_layer")
    cx = c.witness.designation
    scale = (1 << c.shape.boundary_bits) // cx.denominator + 1  # same point, denominator too wide
    labels = rejected(c, witness=with_counterexample(c, point=tuple(v * scale for v in cx.point),
                                                     denominator=cx.denominator * scale))
    assert some(labels, "minimality")


def test_counterexample_too_far_is_refused():
    c = exact_case("one_layer")
    cx = c.witness.designation
    u = [c.public.query[j] for j in c.shape.free_columns]
    d = cx.denominator
    lo = [c.shape.box_lower[j] * d for j in c.shape.free_columns]
    hi = [c.shape.box_upper[j] * d for j in c.shape.free_columns]
    far = tuple(min(max(3 * p - 2 * d * x, a), b) for p, x, a, b in zip(cx.point, u, lo, hi))  # u* + 3 (v - u*)
    labels = rejected(c, witness=with_counterexample(c, point=far))
    assert some(labels, "minimality/distance") or some(labels, "minimality/class")


def test_counterexample_named_under_another_slice_is_refused():
    """The point flips the decision only in its own slice; under the other slice y still wins."""
    for name in HONEST:
        c = exact_case(name)
        cx = c.witness.designation
        if not isinstance(cx, Counterexample) or c.shape.n_slices < 2:
            continue
        other = (cx.slice_index + 1) % c.shape.n_slices
        cs = build(c.shape, c.public, with_counterexample(c, slice_index=other), strict=False)
        if cs.compile(wire_names=False).is_satisfied(cs.witness()):
            continue  # this point flips in both slices: no forgery to build here
        assert some(unsatisfied_labels(cs), "minimality/class")
        return
    pytest.fail("no counterexample in the fixture that flips in its own slice only")


def test_counterexample_naming_a_class_that_loses_is_refused():
    c = exact_case("three_class")
    cx = c.witness.designation
    assert isinstance(cx, Counterexample)
    labels = rejected(c, witness=with_counterexample(c, other_class=1 - cx.other_class))
    assert some(labels, "minimality/class")


def test_missing_counterexample_is_refused():
    c = exact_case("one_layer")
    labels = rejected(c, witness=dataclasses.replace(c.witness, designation=None))
    assert some(labels, "minimality")


# ------------------------------------------------------------ far-class covers

def _far_class_entry(c):
    for si, sw in enumerate(c.witness.slices):
        for fi, e in enumerate(sw.farkas):
            if e is not None and c.shape.n_hidden <= e.row < c.shape.n_rows and e.box is not None:
                return si, fi, e
    return None


def _replace_entry(c, si, fi, entry):
    slices = list(c.witness.slices)
    pool = list(slices[si].farkas)
    pool[fi] = entry
    slices[si] = dataclasses.replace(slices[si], farkas=tuple(pool))
    return dataclasses.replace(c.witness, slices=tuple(slices))


def _with_far_class():
    for name in HONEST:
        c = exact_case(name)
        if _far_class_entry(c) is not None:
            return c
    pytest.fail("no far-class entry in the fixture")


def test_far_class_entry_without_region_rows_is_refused():
    c = _with_far_class()
    si, fi, e = _far_class_entry(c)
    forged = dataclasses.replace(e, lambdas=(0,) * len(e.lambdas), box=(0,) * len(e.box))
    assert some(rejected(c, witness=_replace_entry(c, si, fi, forged)), "farkas")


def test_far_class_entry_the_checker_refuses_is_refused_by_the_circuit():
    """Perturbations of an honest far-class entry: each one the exact checker refuses, the circuit refuses."""
    from fairness import farkas as fk
    from fairness.farkas import FarkasCertificate
    from fairness.codes import ActivationCode
    from fairness.regions import SliceGeometry, class_system, free_box, free_part

    c = _with_far_class()
    si, fi, e = _far_class_entry(c)
    y = c.public.decision
    j = e.row - c.shape.n_hidden
    j = j if j < y else j + 1
    bits, groups = list(e.code), []
    for h in c.shape.hidden_sizes:
        groups.append("".join(str(b) for b in bits[:h]))
        bits = bits[h:]
    region = SliceGeometry(c.model, c.shape.slices[si]).region(ActivationCode.parse(".".join(groups), c.shape.hidden_sizes))
    rows, extra, _ = class_system(region, y, j)
    u = free_part(c.model, c.public.query)

    def plaintext_ok(entry) -> bool:
        cert = FarkasCertificate(entry.lambdas, entry.mu, entry.box)
        return fk.separation_proves(rows, extra, free_box(c.model), cert, u, c.public.eps, c.shape.eps_bits,
                                    c.shape.scale_bits)

    assert plaintext_ok(e)
    candidates = [dataclasses.replace(e, mu=0), dataclasses.replace(e, lambdas=tuple(v // 2 for v in e.lambdas)),
                  dataclasses.replace(e, box=tuple(2 * v for v in e.box)),
                  dataclasses.replace(e, box=tuple(-v for v in e.box)),
                  dataclasses.replace(e, mu=e.mu * 4)]
    refused = [f for f in candidates if not plaintext_ok(f)]
    assert refused
    for forged in refused:
        assert some(rejected(c, witness=_replace_entry(c, si, fi, forged)), "farkas")


def test_far_class_entry_in_a_fast_statement_is_refused():
    """The fast statement keeps decision entries to emptiness: a separation there is not accepted."""
    c = _with_far_class()
    fast = dataclasses.replace(c.shape, radius="fast")
    witness = dataclasses.replace(c.witness, designation=None)
    public = dataclasses.replace(c.public, eps=0)
    cs = ConstraintSystem(with_values=True, strict=False)
    try:
        build_statement(cs, fast, public, witness)
    except StatementWitnessError as exc:  # the witness check may already refuse the kind
        assert "decision rows" in str(exc)
        return
    assert not cs.compile(wire_names=False).is_satisfied(cs.witness())


# ------------------------------------------------------------ the adapter's choices

def test_exact_shape_refuses_a_fast_certificate():
    f, x = case("one_layer"), exact_case("one_layer")
    with pytest.raises(StatementWitnessError, match="fast statement"):
        statement_inputs(f.model, SALT, f.cert, x.shape)


def test_fast_shape_refuses_an_exact_certificate():
    x = exact_case("one_layer")
    with pytest.raises(StatementWitnessError, match="exact statement"):
        statement_inputs(x.model, SALT, x.cert, dataclasses.replace(x.shape, radius="fast"))


def test_exact_and_fast_shapes_have_different_keys():
    x = exact_case("one_layer")
    fast = dataclasses.replace(x.shape, radius="fast")
    assert x.shape.digest() != fast.digest() and x.shape.bucket != fast.bucket
    assert "radius" not in fast.to_json()  # fast digests are the ones they always were


# ------------------------------------------------------------ under Groth16

def test_exact_statement_proof_verifies_and_binds_public_inputs(mcl):
    c = exact_case("three_class")
    cs = ConstraintSystem(with_values=False)
    build_statement(cs, c.shape)
    pk, vk = setup(cs.compile(wire_names=False), mcl, seed="statement-exact")
    proving = build(c.shape, c.public, c.witness)
    proof = prove(pk, proving.compile(wire_names=False), proving.witness(), mcl)
    assert verify(vk, c.public.field_elements(), proof, mcl)
    for changed in (dataclasses.replace(c.public, eps=c.public.eps + 1),
                    dataclasses.replace(c.public, eps=c.public.eps - 1),
                    dataclasses.replace(c.public, decision=(c.public.decision + 1) % c.shape.n_classes)):
        assert not verify(vk, changed.field_elements(), proof, mcl)


# ------------------------------------------------------------ multiplier widths

def test_fast_neuron_entry_multipliers_stay_narrow():
    """A fast statement squares neuron-row separation values whole, so their multipliers stay below
    2^farkas_bits, even for an otherwise valid certificate (scaled by 2^k, as emptiness allows)."""
    c = case("two_sensitive")
    si, fi = 0, 3
    e = c.witness.slices[si].farkas[fi]
    fb = c.shape.farkas_bits
    assert e is not None and e.row < c.shape.n_hidden and e.box is None
    k = fb - max(e.lambdas).bit_length() + 1  # the largest multiplier reaches 2^fb ...
    assert abs(e.mu) << k < 1 << fb           # ... while mu stays inside its own range
    scaled = dataclasses.replace(e, lambdas=tuple(v << k for v in e.lambdas), mu=e.mu << k)
    labels = rejected(c, witness=_replace_entry(c, si, fi, scaled))
    assert some(labels, f"farkas{fi}") and not some(labels, "farkas_check")


def test_separation_entries_are_widened_to_their_caps_without_changing_what_they_prove():
    """The exact statement truncates h and ||r'||^2: the adapter scales every separation entry by the
    largest power of two its widths allow, which keeps the proved distance and the most bits."""
    from statement.adapter import _entry_caps, _widened

    c = _with_far_class()
    entries = [e for sw in c.witness.slices for e in sw.farkas if e is not None and e.box is not None]
    assert entries
    for e in entries:
        values = [*e.lambdas, e.mu, *e.box]
        assert min(cap - abs(v).bit_length() for v, cap in zip(values, _entry_caps(e, c.shape)) if v) == 0
        j = min((abs(v) & -abs(v)).bit_length() - 1 for v in values if v)  # common power of two
        assert j > 0  # the certifier's multipliers were widened
        smaller = FarkasEntry(e.code, e.row, tuple(v >> j for v in e.lambdas), e.mu >> j, tuple(v >> j for v in e.box))
        assert _widened(smaller, c.shape) == e
