"""The statement circuit accepts honest certificates; structure, widths, commitment."""
from __future__ import annotations

import dataclasses

import pytest

from circuits.builder import ConstraintSystem
from circuits.field import R
from circuits.poseidon import poseidon_hash
from statement import (COMMITMENT_TAG, StatementShapeError, StatementWitnessError, build_statement, commit,
                       commit_in_circuit)
from statement.widths import widths
from statement.adapter import statement_inputs, statement_shape
from statement.witness import STATUS_FLIP
from statement_cases import CASES, SALT, build, case


@pytest.mark.parametrize("name", sorted(CASES))
def test_honest_certificate_satisfies_the_statement(name):
    c = case(name)
    cs = build(c.shape, c.public, c.witness)
    r1cs = cs.compile()
    witness = cs.witness()
    assert r1cs.is_satisfied(witness)
    assert r1cs.n_public == c.shape.n_public
    assert r1cs.public_inputs(witness) == c.public.field_elements()
    assert cs.unconstrained_wires() == []


def test_cases_cover_every_path():
    statuses = {case(n).cert.status for n in CASES}
    assert statuses == {"certified", "flip"}
    attain = {case(n).cert.attainment.kind for n in CASES if case(n).cert.attainment is not None}
    assert attain == {"cap", "neuron", "decision"}
    kinds = {cv.kind for n in CASES for s in case(n).cert.slices for r in s.regions
             for cv in (*r.neurons, *r.classes) if cv is not None}
    assert kinds == {"distance", "neighbor", "empty_facet", "far_region", "no_class"}
    assert case("flip_three_class").public.status == STATUS_FLIP and case("flip_three_class").public.decision == 2


@pytest.mark.parametrize("name", ["two_layer", "flip", "three_class_neuron"])
def test_setup_builds_the_same_r1cs_without_values(name):
    c = case(name)
    proving = build(c.shape, c.public, c.witness).compile(wire_names=False)
    cs = ConstraintSystem(with_values=False)
    build_statement(cs, c.shape)
    setup = cs.compile(wire_names=False)
    assert setup.n_wires == proving.n_wires and setup.n_public == proving.n_public
    assert setup.constraints == proving.constraints


def test_flip_and_certified_certificates_share_keys():
    # Same shape (architecture and bucket), different status: one R1CS.
    a, b = case("two_layer"), case("flip")
    shape = dataclasses.replace(b.shape, region_slots=a.shape.region_slots, farkas_slots=a.shape.farkas_slots)
    pub, wit = statement_inputs(b.model, SALT, b.cert, shape)
    r1 = build(shape, pub, wit)
    assert r1.compile().is_satisfied(r1.witness())
    cs = ConstraintSystem(with_values=False)
    build_statement(cs, shape)
    assert cs.compile(wire_names=False).constraints == r1.compile(wire_names=False).constraints


def test_commitment_matches_documented_construction_and_circuit():
    c = case("two_layer")
    net = c.model.net
    flat = [COMMITMENT_TAG, c.shape.model_digest(), SALT]
    for w, b in zip(net.weights, net.biases):
        flat += [v % R for row in w for v in row] + [v % R for v in b]
    h = len(flat)
    for i in range(0, len(flat), 15):
        h = poseidon_hash([h, *flat[i:i + 15]])
    assert commit(SALT, net.weights, net.biases, c.shape) == h == c.public.commitment
    cs = ConstraintSystem()
    salt = cs.private_input("salt", SALT)
    ws = [[[cs.private_input(f"w{l}_{i}_{j}", v) for j, v in enumerate(row)] for i, row in enumerate(w)]
          for l, w in enumerate(net.weights)]
    bs = [[cs.private_input(f"b{l}_{i}", v) for i, v in enumerate(b)] for l, b in enumerate(net.biases)]
    assert cs.value_of(commit_in_circuit(cs, salt, ws, bs, c.shape)) == h
    # hiding salt and binding weights: any change moves the commitment
    assert commit(SALT + 1, net.weights, net.biases, c.shape) != h
    w2 = [list(map(list, w)) for w in net.weights]
    w2[1][0][0] += 1
    assert commit(SALT, w2, net.biases, c.shape) != h


def test_commitment_is_independent_of_the_bucket():
    c = case("two_layer")
    bigger = dataclasses.replace(c.shape, region_slots=64, farkas_slots=16, eps_bits=12, eps_cap=1)
    net = c.model.net
    assert commit(SALT, net.weights, net.biases, bigger) == c.public.commitment
    assert bigger.digest() != c.shape.digest() and bigger.bucket == "k64-f16"


def test_shape_json_round_trip():
    import json

    from statement import StatementShape

    for name in ("two_layer", "two_sensitive"):
        shape = case(name).shape
        again = StatementShape.from_json(json.loads(json.dumps(shape.to_json())))
        assert again == shape and again.digest() == shape.digest()
    with pytest.raises(StatementShapeError):
        StatementShape.from_json({"n_inputs": 3})


def test_widths_refuse_an_over_wide_shape():
    c = case("two_layer")
    widths(c.shape)  # fine
    wide = dataclasses.replace(c.shape, weight_bits=(60, 60, 60), bias_bits=(120, 180, 240))
    with pytest.raises(StatementShapeError, match="wrap"):
        widths(wide)
    with pytest.raises(StatementShapeError, match="wrap"):
        build_statement(ConstraintSystem(with_values=False), wide)
    deep_eps = dataclasses.replace(c.shape, eps_bits=100, eps_cap=1 << 103)
    with pytest.raises(StatementShapeError, match="distance comparison"):
        widths(deep_eps)


def test_widths_bound_the_honest_values():
    # Every in-circuit magnitude of an honest run stays below the derived bounds.
    c = case("two_layer_farkas")
    wd = widths(c.shape)
    from fairness import farkas as fk
    from fairness.codes import ActivationCode
    from fairness.regions import SliceGeometry, class_system, facet_system, free_part
    u = free_part(c.model, c.cert.query)
    for sv, sc in zip(c.model.slices(), c.cert.slices):
        geom = SliceGeometry(c.model, sv)
        for rc in sc.regions:
            region = geom.region(ActivationCode.parse(rc.code, c.shape.hidden_sizes))
            for k, f in enumerate(region.neurons):
                lw = wd.layers[0 if k < c.shape.hidden_sizes[0] else 1]
                assert abs(f.value(u)) <= lw.value and f.norm_sq <= lw.norm_sq
                assert max(abs(a) for a in f.normal) <= lw.normal and abs(f.offset) <= lw.offset
            d = region.decision_form(c.cert.decision, 1 - c.cert.decision)
            assert abs(d.value(u)) <= wd.decision.value and d.norm_sq <= wd.decision.norm_sq
            for k, cover in enumerate((*rc.neurons, *rc.classes)):
                if cover is None or cover.farkas is None:
                    continue
                if k < len(rc.neurons):
                    rows, extra, _ = facet_system(region, k)
                else:
                    rows, extra, _ = class_system(region, c.cert.decision, k - len(rc.neurons))
                r, big_b = fk.combine(rows, extra, cover.farkas)
                assert max(abs(v) for v in r) <= wd.farkas_residual and abs(big_b) <= wd.farkas_offset


def test_shape_validation_and_adapter_errors():
    c = case("two_layer_farkas")
    with pytest.raises(StatementShapeError):
        dataclasses.replace(c.shape, region_slots=0)
    with pytest.raises(StatementShapeError):
        dataclasses.replace(c.shape, slices=((0,), (0,)))
    small = dataclasses.replace(c.shape, region_slots=2)
    with pytest.raises(StatementWitnessError, match="regions"):
        statement_inputs(c.model, SALT, c.cert, small)
    o = case("one_layer")  # five pool entries
    few = dataclasses.replace(o.shape, farkas_slots=1)
    with pytest.raises(StatementWitnessError, match="Farkas"):
        statement_inputs(o.model, SALT, o.cert, few)
    narrow = dataclasses.replace(c.shape, farkas_bits=8)
    with pytest.raises(StatementWitnessError, match="multiplier"):
        statement_inputs(c.model, SALT, c.cert, narrow)
    other = statement_shape(case("one_layer").model, region_slots=8, farkas_slots=8, eps_bits=6)
    with pytest.raises(StatementWitnessError, match="does not match"):
        statement_inputs(c.model, SALT, c.cert, other)
    d = case("two_layer")
    assert d.witness.designation.denominator > 2
    with pytest.raises(StatementWitnessError, match="boundary denominator"):
        statement_inputs(d.model, SALT, d.cert, dataclasses.replace(d.shape, boundary_bits=1))
    short = dataclasses.replace(c.public, query=c.public.query[:-1])
    with pytest.raises(StatementWitnessError, match="query"):
        build(c.shape, short, c.witness)


def test_statement_package_does_not_import_the_prover_side():
    import subprocess
    import sys

    # Of `fairness`, only the cover kinds (an enum) and the multiplier widths (integer rules) are shared.
    code = ("import sys, statement; "
            "bad = sorted(m for m in sys.modules if m.split('.')[0] in ('prover_service', 'torch', 'scipy') "
            "or (m.startswith('fairness.') and m not in ('fairness.covers', 'fairness.multipliers')) "
            "or m == 'statement.adapter'); "
            "print(bad); sys.exit(1 if bad else 0)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
