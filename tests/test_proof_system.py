"""The statement's proof system seam: `Groth16` is a `ProofSystem` and proves what it should."""
from __future__ import annotations

import dataclasses

import pytest

from circuits.errors import CircuitError
from circuits.field import R
from backend_fixtures import mcl_or_skip
from groth16_circuits import cubic, cubic_witness
from statement import statement_relation
from statement.proof_system import Groth16, ProofSystem, RelationKey
from statement_cases import build, case


@pytest.fixture(scope="module")
def system():
    return Groth16(mcl_or_skip())


def test_groth16_satisfies_the_protocol():
    assert isinstance(Groth16(), ProofSystem)
    assert not isinstance(object(), ProofSystem)


def test_cubic_proof_verifies_and_binds_its_public_input(system):
    relation = cubic()
    proving_key, verifying_key = system.setup(relation, seed="proof-system-cubic")
    assert isinstance(proving_key, RelationKey) and proving_key.relation is relation
    prepared = system.prepare(verifying_key)
    witness = cubic_witness(3)
    public = witness[1:2]
    proof = system.prove(proving_key, public, witness)
    assert system.verify(prepared, public, proof)
    assert not system.verify(prepared, [(public[0] + 1) % R], proof)
    with pytest.raises(CircuitError, match="public"):
        system.prove(proving_key, [(public[0] + 1) % R], witness)  # the assignment says otherwise


def test_statement_proof_through_the_seam(system):
    c = case("three_class_neuron")
    proving_key, verifying_key = system.setup(statement_relation(c.shape), seed="proof-system-statement")
    prepared = system.prepare(verifying_key)
    public = c.public.field_elements()
    proof = system.prove(proving_key, public, build(c.shape, c.public, c.witness).witness())
    assert system.verify(prepared, public, proof)
    tampered = dataclasses.replace(c.public, eps=c.public.eps + 1).field_elements()
    assert not system.verify(prepared, tampered, proof)


def test_the_verifier_refuses_through_the_seam_with_its_reason(system):
    """`check` is `verify` with the refusal's reason, which the customer's verdict reports."""
    relation = cubic()
    proving_key, verifying_key = system.setup(relation, seed="proof-system-check")
    prepared = system.prepare(verifying_key)
    witness = cubic_witness(2)
    proof = system.prove(proving_key, witness[1:2], witness)
    assert system.check(prepared, witness[1:2], proof).ok
    refused = system.check(prepared, [(witness[1] + 1) % R], proof)
    assert not refused.ok and refused.reason == "pairing check failed"
    short = system.check(prepared, [], proof)
    assert not short.ok and "public" in short.reason


def test_the_customers_verifier_checks_proofs_through_the_seam():
    """No verifier of ours calls the Groth16 check directly: every one goes through `Groth16`."""
    from pathlib import Path

    root = Path(__file__).resolve().parents[1] / "verifier_client"
    direct = [str(p) for p in root.rglob("*.py") if "check_prepared_proof(" in p.read_text()
              or "prepare_verifying_key(" in p.read_text()]
    assert direct == []
    assert any("Groth16(backend).check(" in p.read_text() for p in root.rglob("*.py"))
