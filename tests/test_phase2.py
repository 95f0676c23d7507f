"""Phase-2 contributions: the chain verifies, tampering anywhere is refused."""
from __future__ import annotations

import json
from dataclasses import replace

import pytest

from circuits.backends import get_backend
from circuits.errors import CircuitError, MalformedArtifact
from circuits.field import R
from circuits.groth16 import prove, proving_key_digest, setup, verify
from circuits.groth16.phase2 import (
    Transcript,
    contribute,
    hash_to_g2,
    start_transcript,
    verify_contribution_chain,
)
from circuits.curve import g2_in_subgroup, g2_on_curve
from backend_fixtures import mcl_or_skip

from groth16_circuits import cubic, cubic_witness, random_system




# The chain checks run a dozen pairing products: seconds each in pure Python,
# so the reference variant is marked slow.
@pytest.fixture(scope="module", params=["mcl", pytest.param("reference", marks=pytest.mark.slow)])
def backend(request):
    return mcl_or_skip() if request.param == "mcl" else get_backend("reference")


@pytest.fixture(scope="module")
def chain(backend):
    r1cs, witness = random_system(20, 2, seed=21)
    pk0, vk0 = setup(r1cs, backend, seed="phase2")
    transcript = start_transcript(pk0, backend)
    pk1, t1 = contribute(pk0, transcript, backend, name="auditor")
    pk2, t2 = contribute(pk1, t1, backend, name="regulator")
    return r1cs, witness, pk0, vk0, pk2, t2


def _scaled_point(backend, vector, index, k, group="g1"):
    points = backend.g1_vector_to_canonical(vector)
    points[index] = backend.g1_mul(points[index], k)
    return backend.g1_vector(points)


def test_chain_verifies(backend, chain):
    _, _, pk0, _, pk2, t2 = chain
    report = verify_contribution_chain(pk0, pk2, t2, backend, expected_initial_digest=proving_key_digest(pk0, backend))
    assert report.contributions == 2 and report.names == ("auditor", "regulator")
    assert report.transcript_digest == t2.digest()
    assert report.final_key_digest == proving_key_digest(pk2, backend) != report.initial_key_digest


def test_proofs_follow_the_updated_key(backend, chain):
    r1cs, witness, pk0, vk0, pk2, _ = chain
    publics = r1cs.public_inputs(witness)
    new_proof = prove(pk2, r1cs, witness, backend)
    assert verify(pk2.vk, publics, new_proof, backend)
    assert not verify(vk0, publics, new_proof, backend)
    old_proof = prove(pk0, r1cs, witness, backend)
    assert verify(vk0, publics, old_proof, backend)
    assert not verify(pk2.vk, publics, old_proof, backend)
    assert pk2.vk.ic == vk0.ic and pk2.vk.delta_g2 != vk0.delta_g2


def test_known_secret_multiplies_delta(backend):
    pk0, _ = setup(cubic(), backend, seed="known")
    pk1, t1 = contribute(pk0, start_transcript(pk0, backend), backend, secret=7)
    assert pk1.delta_g1 == backend.g1_mul(pk0.delta_g1, 7)
    assert pk1.vk.delta_g2 == backend.g2_mul(pk0.vk.delta_g2, 7)
    inv7 = pow(7, R - 2, R)
    assert backend.g1_vector_to_canonical(pk1.h_query)[0] == backend.g1_mul(backend.g1_vector_to_canonical(pk0.h_query)[0], inv7)
    proof = prove(pk1, cubic(), cubic_witness(4), backend)
    assert verify(pk1.vk, [73], proof, backend) and not verify(pk1.vk, [74], proof, backend)
    with pytest.raises(CircuitError, match="secret"):
        contribute(pk0, start_transcript(pk0, backend), backend, secret=0)


def test_tampered_transcript_refused(backend, chain):
    _, _, pk0, _, pk2, t2 = chain
    first, second = t2.contributions
    cases = {
        "proof of knowledge": replace(t2, contributions=(first, replace(second, rd_g2=first.rd_g2))),
        "previous delta times": replace(t2, contributions=(replace(first, delta_g1=second.delta_g1), second)),
        "different key": replace(t2, initial_key_digest="00" * 32),
    }
    for expected, transcript in cases.items():
        with pytest.raises(MalformedArtifact, match=expected):
            verify_contribution_chain(pk0, pk2, transcript, backend)
    # dropping the last record leaves a delta the key does not carry
    with pytest.raises(MalformedArtifact, match="last delta"):
        verify_contribution_chain(pk0, pk2, replace(t2, contributions=(first,)), backend)
    # reordered records: the PoK bases are bound to the running transcript hash
    with pytest.raises(MalformedArtifact, match="contribution 0"):
        verify_contribution_chain(pk0, pk2, replace(t2, contributions=(second, first)), backend)
    # a renamed contributor changes the transcript hash the next PoK is bound to
    with pytest.raises(MalformedArtifact, match="contribution 1: proof of knowledge"):
        verify_contribution_chain(pk0, pk2, replace(t2, contributions=(replace(first, name="mallory"), second)), backend)


def test_tampered_key_refused(backend, chain):
    _, _, pk0, _, pk2, t2 = chain
    cases = {
        "l_query": pk2.with_changes(l_query=_scaled_point(backend, pk2.l_query, 3, 2)),
        "h_query": pk2.with_changes(h_query=_scaled_point(backend, pk2.h_query, 0, 5)),
        "a_query changed": pk2.with_changes(a_query=_scaled_point(backend, pk2.a_query, 1, 3)),
        "delta_g2 does not match": pk2.with_changes(vk=replace(pk2.vk, delta_g2=pk0.vk.delta_g2)),
        "ic changed": pk2.with_changes(vk=replace(pk2.vk, ic=(pk2.vk.ic[1], *pk2.vk.ic[1:]))),
        "delta_g1 is not": pk2.with_changes(delta_g1=pk0.delta_g1),
    }
    for expected, key in cases.items():
        with pytest.raises(MalformedArtifact, match=expected):
            verify_contribution_chain(pk0, key, t2, backend)
    # a different initial key (other setup secrets) is not the transcript's
    other0, _ = setup(random_system(20, 2, seed=21)[0], backend, seed="other")
    with pytest.raises(MalformedArtifact, match="different key"):
        verify_contribution_chain(other0, pk2, t2, backend)
    with pytest.raises(MalformedArtifact, match="pinned"):
        verify_contribution_chain(pk0, pk2, t2, backend, expected_initial_digest="11" * 32)


def test_contribution_needs_matching_transcript(backend, chain):
    _, _, pk0, _, pk2, t2 = chain
    with pytest.raises(CircuitError, match="latest delta"):
        contribute(pk0, t2, backend)  # key and transcript out of step


def test_transcript_json_round_trip(chain, tmp_path):
    *_, t2 = chain
    path = tmp_path / "transcript.json"
    t2.save(path)
    assert Transcript.load(path) == t2
    data = json.loads(path.read_text())
    data["contributions"][0]["name"] = "someone else"
    with pytest.raises(MalformedArtifact, match="digest"):
        Transcript.from_dict(data)
    data = json.loads(path.read_text())
    data["contributions"][1]["rd_g2"] = "ff" * 64
    with pytest.raises(MalformedArtifact):
        Transcript.from_dict(data)
    with pytest.raises(MalformedArtifact):
        Transcript.from_dict({"format": "something else"})


def test_hash_to_g2_lands_in_subgroup():
    p, q = hash_to_g2(b"seed-1"), hash_to_g2(b"seed-2")
    assert p != q and p == hash_to_g2(b"seed-1")
    assert g2_on_curve(p) and g2_in_subgroup(p) and p is not None


def test_keys_from_phase1_points_match_setup(backend):
    """Deriving the key from phase-1 points (no secrets) equals setup with gamma = delta = 1,
    and phase-2 contributions on top of it verify and give working keys."""
    from circuits.groth16.phase1 import derive_keys_from_phase1, phase1_from_secrets
    from circuits.groth16.qap import domain_size
    from circuits.groth16.setup import ToxicWaste

    r1cs, witness = random_system(12, 2, seed=31)
    tau, alpha, beta = 1234567891011, 2223334445556, 7778889990001
    pk_setup, vk_setup = setup(r1cs, backend, toxic=ToxicWaste(tau=tau, alpha=alpha, beta=beta, gamma=1, delta=1))
    phase1 = phase1_from_secrets(domain_size(r1cs), tau, alpha, beta, backend)
    pk0, vk0 = derive_keys_from_phase1(r1cs, backend, phase1)
    assert vk0 == vk_setup
    assert proving_key_digest(pk0, backend) == proving_key_digest(pk_setup, backend)
    pk1, t1 = contribute(pk0, start_transcript(pk0, backend), backend, name="bank")
    pk2, t2 = contribute(pk1, t1, backend, name="auditor")
    verify_contribution_chain(pk0, pk2, t2, backend)
    publics = r1cs.public_inputs(witness)
    proof = prove(pk2, r1cs, witness, backend)
    assert verify(pk2.vk, publics, proof, backend)
    with pytest.raises(MalformedArtifact, match="delta equals"):  # the uncontributed key is degenerate
        verify(vk0, publics, proof, backend)
    # phase-1 points for another tau give a different key
    other = phase1_from_secrets(domain_size(r1cs), tau + 1, alpha, beta, backend)
    assert derive_keys_from_phase1(r1cs, backend, other)[1] != vk0
