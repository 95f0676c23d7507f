"""The registry's per-slice certificates and audit circuits, against the Python verifiers.

A per-slice certificate (tests/test_per_slice_bundles.py's prover: the bank's model, exact radius, one proof
per slice) is accepted only by verifyPerSliceCertificate with every slice's proof in one call: one slice's
proof passed off as the whole certificate, a missing, repeated or reordered slice, slices disagreeing on
any signal but their index, a whole-statement bucket among the slices, or impossible claims are refused, as
bundle_claims refuses them. An audit circuit's proof of group counts (tests/test_group_counts.py's real one)
is accepted only by verifyGroupCounts, never as a certificate, and impossible counts are refused as
verifier_client.audit refuses them.
"""
from __future__ import annotations

import pytest

from bank_fixtures import copy_of_bank_model
from circuits.field import R
from commitments.card import ModelCard
from test_registry_claims import (CERTIFY_TYPES, CHECK, CHECK_GROUPS, GROUPS, NO_PAIRING, PER_SLICE, PER_SLICE_TYPES,
                                  view)
from test_solidity import CERTIFY, PROOF_TYPES, Chain, deploy_card, evm  # noqa: F401 (fixture)
from verifier_client.solidity import per_slice_calldata, proof_calldata


@pytest.fixture(scope="module")
def sliced(bank, evm, tmp_path_factory):
    """The bank's model proved slice by slice for its first customer, and the card's registry deployed."""
    from circuits.backends import get_backend
    from fairness.certificate import EXACT
    from offline_precompute.certify import query_from_record
    from prover_service.bucket_keys import SinglePartyKeySetup
    from prover_service.proving import Prover

    root, workspace, db = copy_of_bank_model(bank, tmp_path_factory, "registry-per-slice")
    prover = Prover(workspace, db, get_backend(), key_setup=SinglePartyKeySetup(), radius=EXACT, per_slice=True)
    query = query_from_record(workspace.artifact, prover.model, bank.records[0])
    bundle = prover.prove(query).bundle
    card = ModelCard.from_json(workspace.card_path.read_bytes())
    db.dispose()
    chain = Chain()
    registry, verifiers = deploy_card(chain, card)
    return chain, registry, verifiers, card, bundle, query


def _call(chain, registry, args):
    return chain.call(registry, PER_SLICE, PER_SLICE_TYPES, list(args))


def test_an_honest_per_slice_certificate_is_accepted_whole(sliced):
    from verifier_client.verify import verify_bundle

    chain, registry, _, card, bundle, query = sliced
    assert bundle.bucket.endswith("-exact-slice") and len(card.slices()) == 2
    assert verify_bundle(bundle, card, query=query).valid
    ok, gas = _call(chain, registry, per_slice_calldata(bundle))
    assert ok and gas < 2 * 1.2 * 477_062, gas


def test_one_slices_proof_is_not_the_whole_certificate(sliced):
    from verifier_client.verify import verify_bundle

    chain, registry, _, card, bundle, _ = sliced
    names, a, b, c, signals = per_slice_calldata(bundle)
    for t in range(len(names)):  # each slice's own valid proof, offered as a certificate
        ok, gas = chain.call(registry, CERTIFY, CERTIFY_TYPES, [names[t], a[t], b[t], c[t], signals[t]])
        assert not ok and gas < NO_PAIRING
    # ... or under the whole statement's bucket, its slice index dropped
    whole = next(x.bucket for x in card.circuits if not x.shape.per_slice)
    assert not chain.call(registry, CERTIFY, CERTIFY_TYPES, [whole, a[0], b[0], c[0], signals[0][:-1]])[0]
    assert not verify_bundle(bundle.model_copy(update={"parts": ()}), card).valid


def _forged(bundle, change):
    names, a, b, c, signals = (list(x) for x in per_slice_calldata(bundle))
    change(names, a, b, c, signals)
    return names, a, b, c, signals


def _python_refuses(bundle, card, **update) -> bool:
    from verifier_client.verify import verify_bundle

    return not verify_bundle(bundle.model_copy(update=update), card).valid


def test_a_missing_repeated_or_reordered_slice_is_refused(sliced):
    chain, registry, _, card, bundle, _ = sliced

    def missing(names, a, b, c, signals):
        for x in (names, a, b, c, signals):
            del x[1:]

    def repeated(names, a, b, c, signals):
        for x in (names, a, b, c, signals):
            x[1] = x[0]

    def reordered(names, a, b, c, signals):
        for x in (names, a, b, c, signals):
            x.reverse()

    def renumbered(names, a, b, c, signals):  # slice 1's proof and signals, numbered 0 and 1 the other way
        signals[0], signals[1] = [*signals[0][:-1], 1], [*signals[1][:-1], 0]

    for forgery in (missing, repeated, reordered, renumbered):
        ok, gas = _call(chain, registry, _forged(bundle, forgery))
        assert not ok, forgery.__name__
    assert _python_refuses(bundle, card, parts=())
    part = bundle.parts[0]
    assert _python_refuses(bundle, card, parts=(part, part))
    assert _python_refuses(bundle, card, parts=(part.model_copy(update={"slice_index": 2}),))


def test_slices_that_disagree_or_a_whole_bucket_among_them_are_refused(sliced):
    chain, registry, _, card, bundle, _ = sliced
    whole = next(x.bucket for x in card.circuits if not x.shape.per_slice)
    for position in (1, 2, 5, len(bundle.public_signals) - 2):
        def disagree(names, a, b, c, signals, position=position):
            signals[1] = list(signals[1])
            signals[1][position] = (signals[1][position] + 1) % R

        ok, gas = _call(chain, registry, _forged(bundle, disagree))
        assert not ok and gas < NO_PAIRING, position

    def whole_part(names, a, b, c, signals):
        names[1] = whole

    assert not _call(chain, registry, _forged(bundle, whole_part))[0]
    assert _python_refuses(bundle, card, parts=(bundle.parts[0].model_copy(update={"bucket": whole}),))

    def swapped_proofs(names, a, b, c, signals):  # slice 0's proof passed off as slice 1's
        a[1], b[1], c[1] = a[0], b[0], c[0]

    assert not _call(chain, registry, _forged(bundle, swapped_proofs))[0]


@pytest.mark.parametrize("forgery", ["status 2", "a decision that is no class", "eps above the bucket's cap",
                                     "query below the box", "own value's bounds excluding 0"])
def test_impossible_claims_on_every_slice_are_refused_before_any_pairing(sliced, forgery):
    from test_registry_claims import Layout, _forge, python_ok

    chain, registry, _, card, bundle, _ = sliced
    L = Layout(card, bundle.bucket)
    names, a, b, c, signals = per_slice_calldata(bundle)
    forged = [[*_forge(forgery, L, s[:-1]), s[-1]] for s in signals]  # the same lie told by every slice
    for t, s in enumerate(forged):
        assert not python_ok(s, card, names[t])
        assert not view(chain, registry, CHECK, ["string", "uint256[]"], [names[t], s])
    ok, gas = _call(chain, registry, (names, a, b, c, forged))
    assert not ok and gas < NO_PAIRING


# ----------------------------------------------------------------------------- audit circuits

@pytest.fixture(scope="module")
def audited(bank, evm, tmp_path_factory):
    """A real German Credit group-counts proof on 12 rows (its card has the audit circuit), registry deployed."""
    from prover_service.audit_proving import GroupCountsProver, audit_dataset

    root, workspace, store = copy_of_bank_model(bank, tmp_path_factory, "registry-audit")
    store.dispose()
    dataset, _ = audit_dataset(workspace, rows=12)
    bundle = GroupCountsProver(workspace, single_party=True).prove(dataset)
    card = ModelCard.from_json(workspace.card_path.read_bytes())
    chain = Chain()
    registry, verifiers = deploy_card(chain, card)
    return chain, registry, verifiers, card, dataset, bundle


def test_group_counts_are_accepted_by_their_own_function_only(audited):
    from verifier_client.audit import verify_group_counts

    chain, registry, verifiers, card, dataset, bundle = audited
    assert verify_group_counts(bundle, card, dataset)
    a, b, c = proof_calldata(bundle.proof)
    signals = [int(v) for v in bundle.public_signals]
    assert view(chain, registry, CHECK_GROUPS, ["string", "uint256[]"], [bundle.circuit, signals])
    assert chain.call(registry, GROUPS, CERTIFY_TYPES, [bundle.circuit, a, b, c, signals])[0]
    # The audit circuit's verifier is deployed beside the buckets, but verifies no certificate:
    assert not chain.call(registry, CERTIFY, CERTIFY_TYPES, [bundle.circuit, a, b, c, signals])[0]
    assert not view(chain, registry, CHECK, ["string", "uint256[]"], [bundle.circuit, signals])
    # ... and a bucket's verifier no group counts.
    bucket = card.circuits[0].bucket
    assert not chain.call(registry, GROUPS, CERTIFY_TYPES, [bucket, a, b, c, signals])[0]


@pytest.mark.parametrize("forgery", ["true positives above selected", "selected above rows", "rows not summing",
                                     "true positives above positives", "another commitment", "one signal short"])
def test_impossible_group_counts_are_refused(audited, forgery):
    chain, registry, _, card, _, bundle = audited
    s = [int(v) for v in bundle.public_signals]
    if forgery == "true positives above selected":
        s[5] = s[4] + 1
    elif forgery == "selected above rows":
        s[4] = s[2] + 1
    elif forgery == "rows not summing":
        s[2] += 1
    elif forgery == "true positives above positives":
        s[3], s[5] = 0, max(s[5], 1)
        s[4] = max(s[4], s[5])
    elif forgery == "another commitment":
        s[0] = (s[0] + 1) % R
    else:
        s = s[:-1]
    assert not view(chain, registry, CHECK_GROUPS, ["string", "uint256[]"], [bundle.circuit, s])
    a, b, c = proof_calldata(bundle.proof)
    ok, gas = chain.call(registry, GROUPS, CERTIFY_TYPES, [bundle.circuit, a, b, c, s])
    assert not ok and gas < NO_PAIRING


def test_an_audit_circuits_verifier_cannot_be_registered_as_a_bucket(audited):
    from test_solidity import DeploymentRefused, compile_card
    from verifier_client.solidity import card_verifiers

    chain, _, verifiers, card, _, bundle = audited
    compiled, _ = compile_card(card)
    order = [v.bucket for v in card_verifiers(card)]
    addresses = [verifiers[name] for name in order]
    bucket, audit = 0, order.index(bundle.circuit)
    swapped = list(addresses)
    swapped[bucket], swapped[audit] = addresses[audit], addresses[bucket]
    # (refused for its size here, the audit statement having other public inputs; for its key otherwise)
    with pytest.raises(DeploymentRefused, match="another number of public inputs|not the card's key"):
        chain.deploy(compiled["FairProofRegistry"].bytecode, ["address[]"], [swapped])
    assert chain.deploy(compiled["FairProofRegistry"].bytecode, ["address[]"], [addresses])
