"""The statement circuit under Groth16: setup from the value-free build, prove
from the witness build, verify against the public inputs the bundle expects."""
from __future__ import annotations

import dataclasses

import pytest

from circuits.builder import ConstraintSystem
from circuits.groth16.prove import prove
from circuits.groth16.setup import setup
from circuits.groth16.verify import verify
from statement import build_statement
from statement_cases import build, case, mcl  # noqa: F401 (fixture)


@pytest.mark.parametrize("name", ["three_class_neuron", pytest.param("flip", marks=pytest.mark.slow)])
def test_statement_proof_verifies_and_binds_public_inputs(mcl, name):
    c = case(name)
    cs = ConstraintSystem(with_values=False)
    build_statement(cs, c.shape)
    pk, vk = setup(cs.compile(wire_names=False), mcl, seed=f"statement-{name}")
    proving = build(c.shape, c.public, c.witness)
    r1cs = proving.compile(wire_names=False)
    proof = prove(pk, r1cs, proving.witness(), mcl)
    public = c.public.field_elements()
    assert verify(vk, public, proof, mcl)
    for changed in (dataclasses.replace(c.public, eps=c.public.eps + 1),
                    dataclasses.replace(c.public, decision=(c.public.decision + 1) % c.shape.n_classes),
                    dataclasses.replace(c.public, commitment=c.public.commitment + 1),
                    dataclasses.replace(c.public, query=(c.public.query[0],) + tuple(v + 1 for v in c.public.query[1:]))):
        assert not verify(vk, changed.field_elements(), proof, mcl)
