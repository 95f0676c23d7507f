"""Groth16 under a prepared verifying key: the same verdicts and refusals as check_proof, on both backends;
and the customer's verifier built on it (one prepared key per key content, the proof read once)."""
from __future__ import annotations

import pytest

from circuits.backends import get_backend
from circuits.errors import CircuitError, MalformedArtifact
from circuits.field import Q, R
from circuits.groth16 import (Proof, VerifyingKey, check_prepared_proof, check_proof, prepare_verifying_key,
                              proof_to_bytes, prove, setup)
from circuits.groth16.verify import check_verifying_key
from circuits.snarkjs.json_formats import proof_to_json
from commitments.bundle import SnarkjsProof
from commitments.canonical import NonCanonical
from commitments.card import ModelCard
from verifier_client.verify import bucket_prepared_key, bundle_proof, verify_bundle
from backend_fixtures import mcl_or_skip
from groth16_circuits import cubic, cubic_witness, random_system
from test_groth16 import _twist_point_outside_subgroup


@pytest.fixture(scope="module", params=["mcl", "reference"])
def backend(request):
    return mcl_or_skip() if request.param == "mcl" else get_backend("reference")


@pytest.fixture(scope="module")
def keys(backend):
    pk, vk = setup(cubic(), backend, seed="prepared")
    return pk, vk, prepare_verifying_key(vk, backend)


@pytest.fixture(scope="module")
def proof(backend, keys):
    return prove(keys[0], cubic(), cubic_witness(3), backend)  # x = 3: public input 35


def _neg_g1(p):
    return (p[0], (Q - p[1]) % Q)


def _neg_g2(p):
    return (p[0], ((Q - p[1][0]) % Q, (Q - p[1][1]) % Q))


def _same_verdict(pvk, vk, inputs, proof, backend):
    prepared = check_prepared_proof(pvk, inputs, proof, backend)
    assert prepared == check_proof(vk, inputs, proof, backend)
    return prepared


def test_valid_proofs_are_accepted(backend, keys, proof):
    pk, vk, pvk = keys
    assert check_prepared_proof(pvk, [35], proof, backend).ok
    assert check_prepared_proof(pvk, [135], prove(pk, cubic(), cubic_witness(5), backend), backend).ok
    assert check_prepared_proof(pvk, [35], proof).ok  # the key's own backend by default
    assert check_prepared_proof(pvk, iter([35]), proof, backend).ok  # any iterable, read once


def test_tampered_public_inputs_are_refused(backend, keys, proof):
    _, vk, pvk = keys
    for inputs, reason in (
        ([36], "pairing check failed"),
        ([35 + R], "public input 0 is outside [0, R)"),  # never reduced mod R
        ([-1], "public input 0 is outside [0, R)"),
        ([], "expected 1 public inputs, got 0"),
        ([35, 0], "expected 1 public inputs, got 2"),
        ([True], "public input 0 is not an int"),
        (["35"], "public input 0 is not an int"),
    ):
        result = _same_verdict(pvk, vk, inputs, proof, backend)
        assert not result.ok and result.reason == reason


def test_tampered_proof_points_are_refused(backend, keys, proof):
    _, vk, pvk = keys
    a, b, c = proof.a, proof.b, proof.c
    for tampered, reason in (
        (Proof(a=c, b=b, c=a), "pairing check failed"),  # A and C swapped
        (Proof(a=_neg_g1(a), b=b, c=c), "pairing check failed"),
        (Proof(a=a, b=_neg_g2(b), c=c), "pairing check failed"),
        (Proof(a=a, b=b, c=_neg_g1(c)), "pairing check failed"),
        (Proof(a=a, b=backend.g2_add(b, backend.g2_generator()), c=c), "pairing check failed"),
        (Proof(a=(a[0], (a[1] + 1) % Q), b=b, c=c), "proof.A is not on the G1 curve"),
        (Proof(a=a, b=b, c=(c[0], (c[1] + 1) % Q)), "proof.C is not on the G1 curve"),
        (Proof(a=a, b=_twist_point_outside_subgroup(), c=c), "proof.B is not in the order-R subgroup of G2"),
        (Proof(a=None, b=b, c=c), "proof.A is the point at infinity"),
        (Proof(a=a, b=None, c=c), "proof.B is the point at infinity"),
        (Proof(a=list(a), b=b, c=c), "proof.A is not a canonical point"),
    ):
        result = _same_verdict(pvk, vk, [35], tampered, backend)
        assert not result.ok and result.reason == reason, tampered


def test_degenerate_keys_cannot_be_prepared(backend, keys):
    _, vk, _ = keys
    g1 = backend.g1_generator()
    for bad in (
        VerifyingKey(vk.alpha_g1, vk.beta_g2, vk.gamma_g2, vk.gamma_g2, vk.ic),  # delta = gamma
        VerifyingKey(vk.alpha_g1, vk.beta_g2, vk.gamma_g2, _neg_g2(vk.gamma_g2), vk.ic),  # delta = -gamma
        VerifyingKey(None, vk.beta_g2, vk.gamma_g2, vk.delta_g2, vk.ic),
        VerifyingKey(vk.alpha_g1, vk.beta_g2, vk.gamma_g2, vk.delta_g2, (vk.ic[0], None)),
        VerifyingKey(vk.alpha_g1, _twist_point_outside_subgroup(), vk.gamma_g2, vk.delta_g2, vk.ic),
        VerifyingKey(vk.alpha_g1, vk.beta_g2, vk.gamma_g2, vk.delta_g2, (vk.ic[0], (g1[0], g1[1] + 1))),
    ):
        with pytest.raises(MalformedArtifact) as expected:
            check_verifying_key(bad, backend)
        with pytest.raises(MalformedArtifact) as refused:
            prepare_verifying_key(bad, backend)
        assert str(refused.value) == str(expected.value)


def test_a_proof_under_another_keys_prepared_form_is_refused(backend, keys, proof):
    _, other_vk = setup(cubic(), backend, seed="another")
    result = _same_verdict(prepare_verifying_key(other_vk, backend), other_vk, [35], proof, backend)
    assert not result.ok and result.reason == "pairing check failed"


def test_a_key_prepared_on_one_backend_is_not_used_on_another():
    mcl, reference = mcl_or_skip(), get_backend("reference")
    pk, vk = setup(cubic(), mcl, seed="prepared")
    pvk = prepare_verifying_key(vk, mcl)
    proof = prove(pk, cubic(), cubic_witness(3), mcl)
    with pytest.raises(CircuitError, match="prepared on the mcl backend"):
        check_prepared_proof(pvk, [35], proof, reference)
    # nor its prepared points or GT element, handed to the other backend's pairing
    with pytest.raises(CircuitError):
        reference.pairing_product_equals([(proof.a, pvk.gamma_g2_neg)], reference.pairing_product([]))
    with pytest.raises(CircuitError):
        reference.pairing_product_equals([(proof.a, proof.b)], pvk.alpha_beta)


def test_an_input_whose_ic_sum_is_infinity(backend):
    """IC(x) = O drops out of the product (e(O, Q) = 1): a key with ic[1] = -ic[0] and x = 1,
    with A = [alpha beta + delta], B = [1], C = [1] satisfying the equation."""
    g1, g2 = backend.g1_generator(), backend.g2_generator()
    alpha, beta, gamma, delta = 11, 13, 17, 19
    ic0 = backend.g1_mul(g1, 7)
    vk = VerifyingKey(backend.g1_mul(g1, alpha), backend.g2_mul(g2, beta), backend.g2_mul(g2, gamma),
                      backend.g2_mul(g2, delta), (ic0, _neg_g1(ic0)))
    pvk = prepare_verifying_key(vk, backend)
    forged = Proof(a=backend.g1_mul(g1, alpha * beta + delta), b=g2, c=g1)
    assert _same_verdict(pvk, vk, [1], forged, backend).ok
    assert _same_verdict(pvk, vk, [2], forged, backend).reason == "pairing check failed"


def test_prepared_and_unprepared_verification_agree(backend):
    """An oracle: on a batch of valid and invalid proofs both verifiers give the same verdict and reason."""
    r1cs, witness = random_system(40, 3, seed=5)
    pk, vk = setup(r1cs, backend, seed=5)
    pvk = prepare_verifying_key(vk, backend)
    public = r1cs.public_inputs(witness)
    g1 = backend.g1_generator()
    blindings = [(1, 2), (R - 1, 12345)] if backend.name == "mcl" else [(1, 2)]
    cases = []
    for r, s in blindings:
        p = prove(pk, r1cs, witness, backend, r=r, s=s)
        cases += [
            (public, p),
            ([public[0], public[1], (public[2] + 1) % R], p),
            ([public[0] + R, *public[1:]], p),
            (public, Proof(a=backend.g1_add(p.a, g1), b=p.b, c=p.c)),
            (public, Proof(a=p.a, b=p.b, c=backend.g1_add(p.c, g1))),
            (public, Proof(a=p.c, b=p.b, c=p.a)),
            (public, Proof(a=p.a, b=_twist_point_outside_subgroup(), c=p.c)),
        ]
    verdicts = [_same_verdict(pvk, vk, inputs, p, backend) for inputs, p in cases]
    assert [v.ok for v in verdicts].count(True) == len(blindings)


# --- the customer's verifier (verifier_client.verify) on a real certificate -------------------------------------


def test_the_verifier_keeps_one_prepared_key_per_key_content(bank, backend):
    bucket = bank.card.bucket(bank.bundles[0].bucket)
    assert verify_bundle(bank.bundles[0], bank.card, backend)
    pvk = bucket_prepared_key(bucket, backend)
    assert pvk is bucket_prepared_key(bucket, backend) and pvk.backend == backend.name
    reparsed = ModelCard.model_validate_json(bank.card.canonical_json())  # new objects, same content
    assert bucket_prepared_key(reparsed.bucket(bucket.bucket), backend) is pvk


def test_the_card_digest_follows_the_content_not_the_object(bank):
    bundle, genuine = bank.bundles[0], bank.card
    assert genuine.digest() == bundle.card_digest
    edited = genuine.model_copy(update={"description": genuine.description + " (edited)"})
    assert edited.digest() != bundle.card_digest
    assert "another model card" in verify_bundle(bundle, edited).reasons[0]
    # A card read from JSON is the card as published: another spelling of the same fields is another card.
    card = ModelCard.from_json(genuine.canonical_json())
    assert card.digest() == bundle.card_digest
    respelled = ModelCard.from_json(genuine.canonical_json().replace('"description":""', '"description":"" ', 1))
    assert respelled == card and respelled.digest() == bundle.card_digest  # whitespace is not a spelling
    filled = ModelCard.from_json(genuine.model_dump_json())  # every default written out: published otherwise
    assert filled == card and filled.digest() != bundle.card_digest
    assert "another model card" in verify_bundle(bundle, filled).reasons[0]
    # No canonical form holds NaN or an infinity: such a card has no digest at all.
    for mean in (float("nan"), float("inf"), float("-inf")):
        features = (genuine.features[0].model_copy(update={"mean": mean}), *genuine.features[1:])
        with pytest.raises(NonCanonical, match="not finite"):
            genuine.model_copy(update={"features": features}).digest()


def _with_proof(bundle, proof_json, proof_hex):
    return bundle.model_copy(update={"proof": SnarkjsProof.model_validate(proof_json), "proof_hex": proof_hex})


def test_the_json_proof_must_be_the_compressed_one(bank):
    bundle = bank.bundles[0]
    proof = bundle_proof(bundle)
    negated_a = Proof(a=_neg_g1(proof.a), b=proof.b, c=proof.c)
    negated_b = Proof(a=proof.a, b=_neg_g2(proof.b), c=proof.c)
    for json_proof, hex_proof in ((negated_a, proof), (proof, negated_a), (proof, negated_b), (negated_b, proof)):
        verdict = verify_bundle(_with_proof(bundle, proof_to_json(json_proof), proof_to_bytes(hex_proof).hex()),
                                bank.card)
        assert not verdict and verdict.reasons[0] == "the compressed proof and the JSON proof differ"
    # A point off the curve is a parse error of the JSON, whatever the bytes say.
    off_curve = Proof(a=(proof.a[0], (proof.a[1] + 1) % Q), b=proof.b, c=proof.c)
    verdict = verify_bundle(_with_proof(bundle, proof_to_json(off_curve), proof_to_bytes(off_curve).hex()), bank.card)
    assert not verdict and "pi_a" in verdict.reasons[0] and "not on the BN254 G1 curve" in verdict.reasons[0]


def test_b_outside_the_subgroup_is_refused_once_read(bank, backend):
    """Reading the proof leaves B's subgroup check to the verifier: it is made there."""
    bundle = bank.bundles[0]
    proof = bundle_proof(bundle)
    outside = Proof(a=proof.a, b=_twist_point_outside_subgroup(), c=proof.c)
    forged = _with_proof(bundle, proof_to_json(outside), proof_to_bytes(outside).hex())
    assert bundle_proof(forged) == outside
    verdict = verify_bundle(forged, bank.card, backend)
    assert not verdict and verdict.reasons[0] == "proof rejected: proof.B is not in the order-R subgroup of G2"
