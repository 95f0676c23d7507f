"""Per-slice exact statements: one proof per slice, each in its own slice's bucket.

Honest parts satisfy their circuits; together they state what the whole
statement states. Each rule a part carries has its forgery: the attaining
slice's part at a larger (or smaller) eps, a flip claimed in a slice that does
not flip, a decision that is not the argmax at the query's own slice, a slice
index outside the slices; and a proof of one slice does not verify as
another's. (Another slice's witness offered for a slice at the same eps is no
forgery: eps is the minimum over slices, so that claim is true, and the
circuit checks it against the claimed slice's own regions.)
"""
from __future__ import annotations

import dataclasses
from functools import lru_cache

import pytest

from circuits.builder import ConstraintSystem
from circuits.groth16 import r1cs_digest
from circuits.groth16.prove import prove
from circuits.groth16.setup import setup
from circuits.groth16.verify import verify
from statement import StatementShapeError, build_statement, statement_relation
from statement.adapter import slice_slots, statement_inputs, statement_shape
from statement.witness import StatementWitnessError
from statement_cases import EPS_BITS, SALT, build, exact_case, mcl, rejected, some  # noqa: F401 (mcl: fixture)

NAMES = ["two_layer", "two_layer_farkas", "capped", "three_class", "flip", "two_sensitive", "far_class"]


@lru_cache(maxsize=None)
def part(name: str, si: int):
    """(shape, public, witness) of slice si's proof, in the smallest bucket that holds that slice."""
    c = exact_case(name)
    k, f = slice_slots(c.cert, si)
    shape = dataclasses.replace(statement_shape(c.model, region_slots=max(k, 2), farkas_slots=max(f, 2),
                                                eps_bits=EPS_BITS, radius="exact"), per_slice=True)
    public, witness = statement_inputs(c.model, SALT, c.cert, shape, part=si)
    return shape, public, witness


def _refused(shape, public, witness) -> set[str]:
    """The forged part, built non-strictly: its R1CS must refuse it; the violated scopes."""
    return rejected(dataclasses.replace(exact_case("two_layer"), shape=shape, public=public, witness=witness))


@pytest.mark.parametrize("name", NAMES)
def test_every_slice_part_of_an_honest_certificate_satisfies_its_circuit(name):
    c = exact_case(name)
    for si in range(c.shape.n_slices):
        shape, public, witness = part(name, si)
        cs = build(shape, public, witness)
        r1cs = cs.compile(wire_names=False)
        assert r1cs.is_satisfied(cs.witness())
        assert r1cs.n_public == shape.n_public == c.shape.n_public + 1
        assert r1cs_digest(r1cs) == r1cs_digest(statement_relation(shape))  # keys come from the shape alone
        assert public.field_elements()[:-1] == c.public.field_elements() and public.part_slice == si


def test_a_part_is_smaller_than_the_whole_and_names_its_bucket():
    c = exact_case("two_layer_farkas")
    shape, _, _ = part("two_layer_farkas", 0)
    assert shape.bucket.endswith("-exact-slice") and shape.digest() != c.shape.digest()
    assert statement_relation(shape).n_constraints < statement_relation(c.shape).n_constraints
    assert "per_slice" not in c.shape.to_json()  # whole statements keep their digests


@pytest.mark.parametrize("bad", [-1, 2, 7, None, True])
def test_a_part_slice_outside_the_slices_is_refused_before_any_constraint(bad):
    shape, public, witness = part("two_layer", 0)
    with pytest.raises(StatementWitnessError, match="names the slice it covers"):
        build(shape, dataclasses.replace(public, part_slice=bad), witness)


def test_the_attaining_slices_part_refuses_a_larger_eps():
    """The counterexample binds eps from above in every part; the covering binds it from below in the
    part of the slice that attains it: there, E + 1 breaks a cover."""
    for name in ("two_layer", "far_class", "three_class"):
        c = exact_case(name)
        if c.cert.attainment is None or c.cert.attainment.kind != "counterexample":
            continue
        si = c.cert.attainment.slice_index
        shape, public, witness = part(name, si)
        _refused(shape, dataclasses.replace(public, eps=public.eps + 1), witness)
        _refused(shape, dataclasses.replace(public, eps=public.eps - 1), witness)  # the counterexample is too far


def test_a_flip_claimed_in_a_slice_that_keeps_the_decision_is_refused():
    c = exact_case("flip")
    assert c.cert.status == "flip"
    flipping = c.cert.flip.slice_index
    keeping = 1 - flipping
    shape, public, witness = part("flip", keeping)
    labels = _refused(shape, dataclasses.replace(public, flip_slice=keeping), witness)
    assert some(labels, "decisions")


def test_a_decision_other_than_the_argmax_at_the_querys_own_slice_is_refused():
    c = exact_case("three_class")
    own = next(si for si, sv in enumerate(c.shape.slices)
               if all(c.public.query[col] == v for col, v in zip(c.shape.sensitive_columns, sv)))
    shape, public, witness = part("three_class", own)
    wrong = dataclasses.replace(public, decision=(public.decision + 1) % c.shape.n_classes)
    assert _refused(shape, wrong, witness)


def test_whole_and_per_slice_inputs_are_not_interchangeable():
    c = exact_case("two_layer")
    shape, public, witness = part("two_layer", 0)
    with pytest.raises(StatementWitnessError, match="per-slice"):
        build(shape, public, c.witness)  # every slice's witness for one slice's statement
    with pytest.raises(StatementWitnessError, match="names no part slice"):
        build(c.shape, public, c.witness)
    with pytest.raises(StatementWitnessError, match="needs the slice"):
        statement_inputs(c.model, SALT, c.cert, shape)
    with pytest.raises(StatementWitnessError, match="not one of"):
        statement_inputs(c.model, SALT, c.cert, shape, part=c.shape.n_slices)


def test_fast_statements_are_never_split():
    c = exact_case("two_layer")
    fast = statement_shape(c.model, region_slots=2, farkas_slots=2, eps_bits=EPS_BITS)
    with pytest.raises(StatementShapeError, match="exact radius only"):
        dataclasses.replace(fast, per_slice=True)


def test_a_part_proof_verifies_for_its_slice_only(mcl):
    c = exact_case("two_layer")
    shape, public, witness = part("two_layer", 0)
    cs = ConstraintSystem(with_values=False)
    build_statement(cs, shape)
    pk, vk = setup(cs.compile(wire_names=False), mcl, seed="per-slice")
    proving = build(shape, public, witness)
    proof = prove(pk, proving.compile(wire_names=False), proving.witness(), mcl)
    assert verify(vk, public.field_elements(), proof, mcl)
    assert c.public.field_elements() == public.field_elements()[:-1]
    for changed in (dataclasses.replace(public, part_slice=1), dataclasses.replace(public, eps=public.eps + 1),
                    dataclasses.replace(public, decision=1 - public.decision)):
        assert not verify(vk, changed.field_elements(), proof, mcl)
    for slice_value in (2, -1 % (1 << 255), c.shape.n_slices + 1):
        assert not verify(vk, public.field_elements()[:-1] + [slice_value], proof, mcl)
