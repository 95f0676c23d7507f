"""What a dishonest bank can do with its transparency log, and the customer's verifier refusing it.

The bank holds the log key, builds the trees and serves the evidence; it may
sign anything with its key, or make a new key. Every forgery here is signed
for real and carries audit paths that verify against its own root: only the
checks of `verifier_client.log_check` stand between it and the customer.
Each acceptance test has its refusal twin.

The service logs each certificate as a `certificate_committed` leaf (decision,
status, eps and lens summaries, and a salted commitment to the signals, the
salt in the bundle only): the bank may log one whose public fields say
another decision, eps or status than the proof, or that commits under
another salt, or point the customer at another customer's leaf; the customer
rebuilds its leaf from the claims it derived and refuses each.
"""
from __future__ import annotations

import json

import pytest

from commitments.log import (CertificateCommitted, LogEvidence, LogInclusion, bundle_certificate_leaf, leaf_bytes,
                             parse_leaf, signals_commitment)
from log_fixtures import ORIGIN, MemoryLog, bundle_leaf, card_leaf, new_signer, salted, with_evidence
from transparency import note
from transparency.cosignature import CosignatureSigner
from transparency.cosignature import generate_key as generate_witness_key
from verifier_client.log_check import LogRefused, check_log_evidence, expected_certificate_leaf
from verifier_client.pins import PinStore

from bank_fixtures import FakeService, run_cli


@pytest.fixture
def pins(tmp_path):
    return PinStore(tmp_path / "pins.json")


@pytest.fixture
def honest(bank):
    """The bank's log holding its card and both customers' certificates, and the served bundles."""
    log = MemoryLog()
    bundles = [log.issue(b, bank.card) for b in bank.bundles]
    return log, [log.issue(b, bank.card) for b in bundles]  # both at the newest checkpoint


def _another(bundle, n: int):
    """The same statement answering another request: another leaf."""
    return bundle.model_copy(update={"request_id": f"00000000-0000-4000-8000-{n:012d}"})


def _check(bundle, card, pins, log, **kw):
    kw.setdefault("log_key", log.verifier_key)
    kw.setdefault("consistency", log.consistency)
    return check_log_evidence(bundle, card, bundle.log, pins, **kw)


# ------------------------------------------------------------------ honest evidence
def test_an_honest_certificate_and_card_are_in_the_log(bank, honest, pins):
    log, bundles = honest
    verdict = _check(bundles[0], bank.card, pins, log)
    assert verdict.tree_size == log.size == 3 and verdict.card_index == 0
    assert verdict.consistency == "first checkpoint kept for this log"
    assert pins.log(ORIGIN).checkpoint.size == 3 and pins.log(ORIGIN).verifier_key == log.verifier_key
    again = _check(bundles[1], bank.card, pins, log)
    assert again.certificate_index == 2 and again.consistency == "same checkpoint as the one kept"


def test_a_growing_log_is_followed_with_consistency_proofs(bank, honest, pins):
    log, bundles = honest
    _check(bundles[0], bank.card, pins, log)
    later = log.issue(_another(bank.bundles[0], 1), bank.card)
    verdict = _check(later, bank.card, pins, log)
    assert verdict.consistency.startswith("consistent with the kept checkpoint of 3 leaves")
    assert pins.log(ORIGIN).checkpoint.size == 4
    # An older bundle (smaller checkpoint) is still fine: the smaller tree is a prefix of the kept one.
    assert "consistent with the newer checkpoint kept" in _check(bundles[0], bank.card, pins, log).consistency


# ------------------------------------------------------------------ forgeries
def test_a_fork_of_the_same_size_is_refused(bank, honest, pins):
    log, bundles = honest
    _check(bundles[0], bank.card, pins, log)
    # The bank shows this customer another history of the same size: the certificate is in it, but the
    # second certificate is replaced, so the root differs. Signed with the real key.
    other = MemoryLog(signer=log.signer)
    other.publish(bank.card)
    other.issue(bank.bundles[0], bank.card)
    fork = other.issue(_another(bank.bundles[1], 2), bank.card)
    assert other.size == log.size and other.root() != log.root()
    with pytest.raises(LogRefused, match="FORK"):
        _check(fork, bank.card, pins, log, consistency=other.consistency)
    assert pins.log(ORIGIN).checkpoint.size == 3 and pins.log(ORIGIN).checkpoint.root_hash  # the evidence is kept


def test_a_rewritten_history_is_refused_even_when_larger(bank, honest, pins):
    log, bundles = honest
    _check(bundles[0], bank.card, pins, log)
    rewritten = MemoryLog(signer=log.signer)  # drops the first certificate, then grows past the kept size
    rewritten.publish(bank.card)
    for i in range(3):
        bundle = rewritten.issue(_another(bank.bundles[1], 10 + i), bank.card)
    with pytest.raises(LogRefused, match="FORK"):
        _check(bundle, bank.card, pins, log, consistency=rewritten.consistency)


def test_a_shrunk_tree_is_refused(bank, honest, pins):
    log, bundles = honest
    _check(bundles[1], bank.card, pins, log)
    shrunk = MemoryLog(signer=log.signer)  # two leaves, but not the prefix of the kept three
    shrunk.publish(bank.card)
    bundle = shrunk.issue(bank.bundles[1], bank.card)
    with pytest.raises(LogRefused, match="FORK"):
        _check(bundle, bank.card, pins, log, consistency=log.consistency)
    # Twin: the honest prefix of the same size is accepted.
    assert "consistent" in _check(with_evidence(bundles[0], log.evidence(1, 0, size=2)), bank.card, pins,
                                  log).consistency


def test_a_checkpoint_smaller_than_the_kept_one_is_refused_when_it_claims_to_be_the_newest(bank, honest, pins):
    log, bundles = honest
    _check(bundles[1], bank.card, pins, log)
    old = with_evidence(bundles[0], log.evidence(1, 0, size=2))
    with pytest.raises(LogRefused, match="ROLLBACK"):
        _check(old, bank.card, pins, log, newest=True)


def test_a_checkpoint_under_the_banks_other_key_is_refused(bank, honest, pins):
    log, bundles = honest
    _check(bundles[0], bank.card, pins, log)  # pins the log key
    rogue = MemoryLog(signer=new_signer(ORIGIN))  # same origin, the bank's new key
    bundle = rogue.issue(bank.bundles[0], bank.card)
    with pytest.raises(LogRefused, match="pinned with key"):
        _check(bundle, bank.card, pins, rogue, log_key=rogue.verifier_key)
    with pytest.raises(LogRefused, match="not signed by the log key"):
        _check(bundle, bank.card, pins, rogue, log_key=None)


def test_a_key_named_for_another_origin_is_refused(bank, honest, pins):
    log, bundles = honest
    other = note.generate_key("other.test/log")[1]
    with pytest.raises(LogRefused, match="named 'other.test/log'"):
        _check(bundles[0], bank.card, pins, log, log_key=other)


def test_evidence_for_another_certificate_is_refused(bank, honest, pins):
    log, bundles = honest
    swapped = with_evidence(bundles[0], bundles[1].log)  # a real path, but to the other customer's leaf
    with pytest.raises(LogRefused, match="certificate is not in the log"):
        _check(swapped, bank.card, pins, log)
    assert _check(bundles[0], bank.card, pins, log)  # twin


def test_a_changed_request_id_breaks_the_leaf(bank, honest, pins):
    log, bundles = honest
    moved = bundles[0].model_copy(update={"request_id": "00000000-0000-4000-8000-000000000000"})
    with pytest.raises(LogRefused, match="certificate is not in the log"):
        _check(moved, bank.card, pins, log)


def test_a_card_the_log_never_published_is_refused(bank, pins):
    log = MemoryLog()
    log.append(b'{"kind":"unrelated"}')  # the card itself is never logged
    index = log.append(bundle_leaf(bank.bundles[0]))
    bundle = with_evidence(bank.bundles[0], log.evidence(index, 0))
    with pytest.raises(LogRefused, match="card is not in the log"):
        _check(bundle, bank.card, pins, log)


def test_an_inclusion_for_another_tree_size_is_refused(bank, honest, pins):
    log, bundles = honest
    evidence = bundles[0].log
    stretched = LogEvidence(checkpoint=evidence.checkpoint, card=evidence.card,
                            certificate=LogInclusion(leaf_index=evidence.certificate.leaf_index, tree_size=4,
                                                     proof=evidence.certificate.proof))
    with pytest.raises(LogRefused, match="tree of 4 leaves"):
        _check(with_evidence(bundles[0], stretched), bank.card, pins, log)


def test_a_checkpoint_whose_root_is_not_the_trees_is_refused(bank, honest, pins):
    log, bundles = honest
    evidence = bundles[0].log
    wrong_root = log.checkpoint(root=bytes(32))  # signed for real, root of nothing
    with pytest.raises(LogRefused, match="not in the log"):
        _check(with_evidence(bundles[0], evidence.model_copy(update={"checkpoint": wrong_root})), bank.card, pins, log)


@pytest.mark.parametrize("mangle", [
    lambda c: c.replace("\n\n", "\n"),                         # no blank line before the signatures
    lambda c: c.replace(ORIGIN + "\n", ORIGIN + "\n0", 1),      # a leading zero on the size
    lambda c: c[:-10] + ("B" if c[-10] == "A" else "A") + c[-9:],  # a broken signature
    lambda c: "x" + c,                                          # another origin than the key's
])
def test_malformed_checkpoints_are_refused(bank, honest, pins, mangle):
    log, bundles = honest
    evidence = bundles[0].log
    bad = evidence.model_copy(update={"checkpoint": mangle(evidence.checkpoint)})
    with pytest.raises(LogRefused):
        _check(with_evidence(bundles[0], bad), bank.card, pins, log)


def test_a_trusted_witness_must_have_cosigned(bank, honest, pins):
    log, bundles = honest
    witness = CosignatureSigner.from_key(generate_witness_key("witness.test")[0])
    with pytest.raises(LogRefused, match="cosignature by trusted witness witness.test"):
        _check(bundles[0], bank.card, pins, log, witnesses=[witness.verifier()])
    body = log.checkpoint().split("\n\n")[0] + "\n"
    cosigned = log.checkpoint() + witness.cosign(body, 1_700_000_000)
    evidence = bundles[0].log.model_copy(update={"checkpoint": cosigned})
    verdict = _check(with_evidence(bundles[0], evidence), bank.card, pins, log, witnesses=[witness.verifier()])
    assert verdict.witnesses == ("witness.test",)
    # The bank cosigning with its own key under the witness's name does not count.
    impostor = CosignatureSigner.from_key(generate_witness_key("witness.test")[0])
    faked = bundles[0].log.model_copy(update={"checkpoint": log.checkpoint() + impostor.cosign(body, 1_700_000_000)})
    with pytest.raises(LogRefused, match="cosignature by trusted witness"):
        _check(with_evidence(bundles[0], faked), bank.card, pins, log, witnesses=[witness.verifier()])


def test_no_evidence_is_refused(bank, pins):
    with pytest.raises(LogRefused, match="no transparency-log evidence"):
        check_log_evidence(bank.bundles[0], bank.card, None, pins, log_key=new_signer().verifier().vkey())


# ------------------------------------------------------------------ through the command line
def test_the_service_mode_client_pins_the_log_and_refuses_a_fork_later(bank, tmp_path, capsys):
    service = FakeService(bank.card, bank.bundles[0])
    assert run_cli(service, bank.records[0], tmp_path) == 0
    out = capsys.readouterr().out
    assert "Transparency log bank.test/log: certificate is leaf 1" in out
    # Next time the bank serves the same customer another history, larger, signed with the real key,
    # and answers consistency proofs from that history.
    refork = MemoryLog(signer=service.log.signer)
    refork.append(card_leaf(bank.card) + b" ")  # not even the same first leaf
    bundle = refork.issue(bank.bundles[0], bank.card)
    assert refork.size == 3 and service.log.size == 2
    forked_service = FakeService(bank.card, bundle, log=refork)
    assert run_cli(forked_service, bank.records[0], tmp_path) == 1
    assert "FORK" in capsys.readouterr().err


def test_the_service_mode_client_refuses_a_bundle_without_evidence(bank, tmp_path, capsys):
    service = FakeService(bank.card, bank.bundles[0])
    service.bundle = with_evidence(service.bundle, None)
    assert run_cli(service, bank.records[0], tmp_path) == 1
    assert "no transparency-log evidence" in capsys.readouterr().err


def test_file_mode_checks_evidence_and_can_require_it(bank, honest, tmp_path, capsys):
    from verifier_client.cli import main

    log, bundles = honest
    card = tmp_path / "card.json"
    card.write_text(bank.card.canonical_json())
    plain, logged = tmp_path / "plain.json", tmp_path / "logged.json"
    plain.write_text(bank.bundles[0].model_dump_json())
    logged.write_text(bundles[0].model_dump_json())
    pin_file = ["--pin-file", str(tmp_path / "pins.json")]
    assert main([str(plain), "--card", str(card), *pin_file]) == 0
    assert "Transparency log: none" in capsys.readouterr().out
    assert main([str(plain), "--card", str(card), "--require-log", *pin_file]) == 1
    assert main([str(logged), "--card", str(card), *pin_file]) == 1  # no key pinned or named
    assert "no key is pinned" in capsys.readouterr().err
    assert main([str(logged), "--card", str(card), "--log-key", log.verifier_key, *pin_file]) == 0
    assert "certificate is leaf 1" in capsys.readouterr().out
    rogue = note.generate_key(ORIGIN)[1]
    assert main([str(logged), "--card", str(card), "--log-key", rogue, *pin_file]) == 1


# ------------------------------------------------------------------ the certificate_committed leaf
def _scalars(value):
    if isinstance(value, dict):
        for v in value.values():
            yield from _scalars(v)
    elif isinstance(value, list):
        for v in value:
            yield from _scalars(v)
    else:
        yield value


def _salted_log(bank) -> tuple[MemoryLog, list]:
    """The bank's log as the service keeps it now: each bundle with its salt, each leaf certificate_committed."""
    log = MemoryLog()
    bundles = [log.issue(salted(b), bank.card) for b in bank.bundles]
    return log, [with_evidence(b, log.evidence(log.index(bundle_leaf(b)), 0)) for b in bundles]


def _forged_leaf(bank, bundle, **fields) -> tuple[MemoryLog, object]:
    """A log holding the card and, for `bundle`, a leaf whose fields are changed; the bundle with evidence to it."""
    log = MemoryLog()
    log.publish(bank.card)
    leaf = bundle_certificate_leaf(bundle)
    index = log.append(leaf_bytes(leaf.model_copy(update=fields)))
    return log, with_evidence(bundle, log.evidence(index, 0))


def test_the_committed_leaf_holds_no_query_and_is_rebuilt_from_the_claims(bank, pins):
    log, bundles = _salted_log(bank)
    for bundle in bundles:
        leaf = parse_leaf(bundle_leaf(bundle))
        assert isinstance(leaf, CertificateCommitted) and leaf.signals_commitment == signals_commitment(
            bundle.log_salt, bundle.public_signals)
        text = bundle_leaf(bundle).decode()
        assert "public_signals" not in text and "query" not in text and bundle.log_salt not in text
        values = {str(v) for v in _scalars(json.loads(text))}
        # Not one query value, lens value or bound larger than the leaf's counts (small numbers are everywhere).
        assert not values & {s for s in bundle.public_signals[5:] if int(s) >= 2**16}
        # The customer rebuilds exactly this leaf from the claims it derives, never from the readable fields.
        assert expected_certificate_leaf(bundle, bank.card) == leaf
        verdict = _check(bundle, bank.card, pins, log)
        assert verdict.leaf_kind == "certificate_committed" and "old kind" not in verdict.describe()
    # Twin: an old bundle (no salt) is still checked against its old certificate_issued leaf.
    old_log = MemoryLog()
    old = old_log.issue(bank.bundles[0], bank.card)
    verdict = _check(old, bank.card, PinStore(pins.path.with_name("old-pins.json")), old_log)
    assert verdict.leaf_kind == "certificate_issued" and "old kind" in verdict.describe()
    # A salted bundle whose log holds only its old leaf is refused: the salt names the new leaf.
    downgraded = with_evidence(salted(bank.bundles[0]), old.log)
    with pytest.raises(LogRefused, match="certificate is not in the log"):
        _check(downgraded, bank.card, PinStore(pins.path.with_name("old-pins.json")), old_log)


def _moved(summary):
    """One counterfactual value of the attribute moved to another status: another persistence verdict."""
    if summary.inconclusive:
        return summary.model_copy(update={"inconclusive": summary.inconclusive - 1, "favoured": summary.favoured + 1})
    if summary.favoured:
        return summary.model_copy(update={"favoured": summary.favoured - 1, "disfavoured": summary.disfavoured + 1})
    return summary.model_copy(update={"disfavoured": summary.disfavoured - 1, "favoured": summary.favoured + 1})


def _other_value(bank, bundle, field: str):
    leaf = bundle_certificate_leaf(bundle)
    labels = bank.card.architecture.class_labels
    return {
        "decision": {"decision": (leaf.decision + 1) % len(labels)},
        "eps": {"eps_numerator": leaf.eps_numerator + 1},
        "status": {"status": "certified" if leaf.status == "counterfactual_flip" else "counterfactual_flip"},
        "capped": {"capped": not leaf.capped},
        "spread": {"spread": leaf.spread.model_copy(update={"score_buckets": leaf.spread.score_buckets + 1})},
        "persistence": {"persistence": (_moved(leaf.persistence[0]), *leaf.persistence[1:])},
        "bucket": {"bucket": "k4-f4" if leaf.bucket != "k4-f4" else "k16-f16"},
        "request_id": {"request_id": "00000000-0000-4000-8000-000000000001"},
    }[field]


@pytest.mark.parametrize("field", ["decision", "eps", "status", "capped", "spread", "persistence", "bucket",
                                   "request_id"])
def test_a_leaf_whose_public_fields_contradict_the_proof_is_refused(bank, pins, field):
    bundle = salted(bank.bundles[0])
    log, forged = _forged_leaf(bank, bundle, **_other_value(bank, bundle, field))
    with pytest.raises(LogRefused, match="certificate is not in the log"):
        _check(forged, bank.card, pins, log)
    honest_log, honest = _forged_leaf(bank, bundle)  # twin: the same log with the leaf unchanged
    assert _check(honest, bank.card, PinStore(pins.path.with_name("twin.json")), honest_log).certificate_index == 1


def test_a_leaf_committed_under_another_salt_is_refused(bank, pins):
    bundle = salted(bank.bundles[0], "11" * 32)
    log = MemoryLog()
    other = log.issue(salted(bank.bundles[0], "22" * 32), bank.card)  # same certificate, the bank's own salt
    with pytest.raises(LogRefused, match="certificate is not in the log"):
        _check(with_evidence(bundle, other.log), bank.card, pins, log)
    assert _check(log.issue(bundle, bank.card), bank.card, pins, log)  # twin: its own salt


def test_the_leaf_of_another_customers_certificate_is_refused(bank, pins):
    log, bundles = _salted_log(bank)
    # The other customer's leaf, with a real path, or the other customer's salt under this customer's bundle.
    with pytest.raises(LogRefused, match="certificate is not in the log"):
        _check(with_evidence(bundles[0], bundles[1].log), bank.card, pins, log)
    with pytest.raises(LogRefused, match="certificate is not in the log"):
        _check(bundles[0].model_copy(update={"log_salt": bundles[1].log_salt, "log": bundles[1].log}), bank.card,
               pins, log)
    assert _check(bundles[0], bank.card, pins, log)  # twin


def test_a_bundle_whose_fields_contradict_its_proof_cannot_name_a_leaf(bank, pins):
    log, bundles = _salted_log(bank)
    lying = bundles[0].model_copy(update={"decision": 1 - bundles[0].decision})  # the signals still say otherwise
    with pytest.raises(LogRefused, match="does not hold under its card"):
        _check(lying, bank.card, pins, log)
    assert _check(bundles[0], bank.card, pins, log)  # twin


def test_a_malformed_salt_is_refused_by_the_bundle(bank):
    from commitments.bundle import CertificateBundle
    from commitments.canonical import NonCanonical

    text = salted(bank.bundles[0], "ab" * 32).model_dump_json()
    assert CertificateBundle.from_json(text).log_salt == "ab" * 32
    with pytest.raises(NonCanonical):
        CertificateBundle.from_json(text.replace("ab" * 32, "AB" * 32))
    with pytest.raises(ValueError, match="64 lower-case hex"):
        signals_commitment("ab" * 31, bank.bundles[0].public_signals)
    assert '"log_salt"' not in bank.bundles[0].model_dump_json()  # an unsalted bundle is spelled as before


def test_file_mode_refuses_a_forged_committed_leaf(bank, tmp_path, capsys):
    from verifier_client.cli import main

    card = tmp_path / "card.json"
    card.write_text(bank.card.canonical_json())
    bundle = salted(bank.bundles[0])
    log, honest = _forged_leaf(bank, bundle)
    forged_log, forged = _forged_leaf(bank, bundle, **_other_value(bank, bundle, "eps"))
    for name, b in (("honest", honest), ("forged", forged)):
        (tmp_path / f"{name}.json").write_text(b.model_dump_json())
    pin_file = ["--pin-file", str(tmp_path / "pins.json")]
    assert main([str(tmp_path / "forged.json"), "--card", str(card), "--log-key", forged_log.verifier_key,
                 *pin_file]) == 1
    assert "certificate is not in the log" in capsys.readouterr().err
    assert main([str(tmp_path / "honest.json"), "--card", str(card), "--log-key", log.verifier_key, *pin_file]) == 0
    assert "certificate is leaf 1" in capsys.readouterr().out


@pytest.mark.parametrize("field", ["decision", "status", "salt", "another customer"])
def test_the_service_mode_client_refuses_a_forged_committed_leaf(bank, tmp_path, capsys, field):
    bundle = salted(bank.bundles[0])
    if field == "salt":
        log = MemoryLog()
        forged = with_evidence(bundle, log.issue(salted(bank.bundles[0]), bank.card).log)
    elif field == "another customer":
        log, bundles = _salted_log(bank)
        forged = with_evidence(bundles[0], bundles[1].log)
    else:
        log, forged = _forged_leaf(bank, bundle, **_other_value(bank, bundle, field))
    (tmp_path / "forged").mkdir()
    assert run_cli(FakeService(bank.card, forged, log=log), bank.records[0], tmp_path / "forged") == 1
    assert "certificate is not in the log" in capsys.readouterr().err
    (tmp_path / "honest").mkdir()
    honest = FakeService(bank.card, salted(bank.bundles[0]))  # twin: the service's log holds the honest leaf
    assert honest.bundle.log_salt is not None and run_cli(honest, bank.records[0], tmp_path / "honest") == 0
    assert "certificate is leaf 1" in capsys.readouterr().out
