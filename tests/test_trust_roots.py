"""The customer's trust roots against a bank that controls the card, its keys, its service and its log.

Each test builds what a dishonest bank would (its own key listed under the auditor's contribution, a new
log after the customer pinned one, a box of width 0, a card re-published with other labels, radius kind,
cap, lens parameters or keys, attestations by the wrong key or of the wrong card) and shows it refused with
one line and the documented exit status, in file mode, service mode and, where it applies, `--dataset`
mode; every refusal has its acceptance twin.
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from bank_fixtures import FakeService, forged, run_cli
from circuits.backends import get_backend
from circuits.groth16 import check_proof, prove, proof_to_bytes, setup, vk_digest
from circuits.snarkjs.json_formats import proof_to_json, verifying_key_to_json
from circuits.relation import R1CS, Constraint
from commitments.attestation import Attestation, AttestationStatement, AttestedCircuit, attested_circuits, \
    sign_attestation
from commitments.bundle import CertificateBundle, Radius, SnarkjsProof
from commitments.card import ContributionRecord, ModelCard, SetupRecord, VerifyingKeyJson
from commitments.log import card_order_problem
from log_fixtures import MemoryLog, new_signer
from transparency import note
from verifier_client.cli import main as verify_main
from verifier_client.output import CertificateReport

AUDITOR_HASH = "a1" * 64


def auditor(name: str = "auditor.example") -> note.Signer:
    return note.Signer.from_key(note.generate_key(name)[0])


AUDITOR = auditor()
ROGUE = auditor("auditor.example")  # the same name, the bank's own key


def attest(card: ModelCard, signer: note.Signer = AUDITOR, **fields) -> Attestation:
    """What `fairproof audit-keys --attest` signs for `card` (the audit itself is tests/test_ceremony.py's)."""
    circuits = tuple(AttestedCircuit(name=n, r1cs_digest=r, verifying_key_digest=v, contributions=(AUDITOR_HASH,))
                     for n, r, v in attested_circuits(card))
    statement = AttestationStatement(model_id=card.model_id, card_digest=card.digest(), commitment=card.commitment,
                                     phase1_digest="0" * 64, circuits=circuits, lenses=card.lenses,
                                     date="2026-11-28")
    return sign_attestation(statement.model_copy(update=fields), signer)


def with_ceremony(card: ModelCard) -> ModelCard:
    """The bank's card as a ceremony would leave it: every bucket lists the auditor's contribution."""
    record = SetupRecord(method="ceremony", phase1_digest="1" * 64, phase1_power=20, circuit_hash="2" * 128,
                         contributions=(ContributionRecord(name="auditor", hash=AUDITOR_HASH),),
                         transcript_digest="3" * 64)
    return card.model_copy(update={"circuits": tuple(b.model_copy(update={"setup": record}) for b in card.circuits)})


@pytest.fixture(scope="module")
def genuine(bank):
    """(card, bundle): the bank's honest card with its ceremony record, and a certificate under it."""
    card = with_ceremony(bank.card)
    return card, bank.bundles[0].model_copy(update={"card_digest": card.digest()})


def own_key_forgery(bank, card: ModelCard) -> tuple[ModelCard, CertificateBundle]:
    """The bank replaces one bucket's key by a key it set up alone (the trapdoor is its own: any statement
    proves), leaves the setup record listing the auditor, and proves the other decision with eps 15."""
    bucket = card.bucket(bank.bundles[0].bucket)
    n_public = bucket.n_public
    r1cs = R1CS(n_wires=n_public + 2, n_public=n_public,
                constraints=(Constraint(a=((n_public + 1, 1),), b=((n_public + 1, 1),), c=((n_public + 1, 1),)),))
    pk, vk = setup(r1cs, get_backend())

    rekeyed = bucket.model_copy(update={"verifying_key": VerifyingKeyJson.model_validate(verifying_key_to_json(vk)),
                                        "verifying_key_digest": vk_digest(vk)})
    card = card.model_copy(update={"circuits": tuple(rekeyed if b.bucket == bucket.bucket else b
                                                     for b in card.circuits)})
    genuine = bank.bundles[0]
    other = 1 - genuine.decision
    eps = min(bucket.shape.eps_cap, 15 << card.eps_scale_bits)
    draft = forged(genuine, decision=other, decision_label=card.architecture.class_labels[other],
                   eps=Radius(numerator=eps, scale_bits=card.eps_scale_bits, capped=eps == bucket.shape.eps_cap))
    public = [int(s) for s in draft.public_signals]
    proof = prove(pk, r1cs, [1, *public, 1], get_backend())
    assert check_proof(vk, public, proof, get_backend()).ok  # the forgery is real under the bank's key
    bundle = draft.model_copy(update={"card_digest": card.digest(),
                                      "proof": SnarkjsProof.model_validate(proof_to_json(proof)),
                                      "proof_hex": proof_to_bytes(proof).hex()})
    return card, bundle


def files(tmp_path: Path, card: ModelCard, bundle: CertificateBundle, *attestations: Attestation) -> list[str]:
    (tmp_path / "card.json").write_text(card.canonical_json())
    (tmp_path / "bundle.json").write_text(bundle.model_dump_json())
    argv = [str(tmp_path / "bundle.json"), "--card", str(tmp_path / "card.json"),
            "--pin-file", str(tmp_path / "pins.json")]
    for i, a in enumerate(attestations):
        (tmp_path / f"attestation{i}.json").write_text(a.model_dump_json())
        argv += ["--attestation", str(tmp_path / f"attestation{i}.json")]
    return argv


def one_line(err: str) -> str:
    lines = [line for line in err.splitlines() if line.strip() and not line.startswith("  job ")]
    lines = [line for line in lines if "pinned now" not in line and "first use of model" not in line]
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


TRUST = ["--trust-auditor", AUDITOR.verifier().vkey()]


# -- 1. the bank's own key listed as the auditor's ------------------------------------------------------------


def test_the_banks_own_key_under_the_auditors_name_is_refused_in_file_mode(bank, genuine, tmp_path, capsys):
    card, bundle = genuine
    vouched = attest(card)
    assert verify_main([*files(tmp_path, card, bundle, vouched), *TRUST]) == 0
    out = capsys.readouterr().out
    assert "VALID certificate" in out and f"attested by {AUDITOR.name}" in out
    forged_card, forged_bundle = own_key_forgery(bank, card)
    # A customer with the genuine card pinned: the pin refuses the re-published card; a customer with no pin
    # (first use): the auditor's attestation is of another card.
    for pin_dir, words in ((tmp_path, "card changed"), (tmp_path / "fresh", "does not cover this card")):
        pin_dir.mkdir(exist_ok=True)
        argv = files(pin_dir, forged_card, forged_bundle, vouched)
        assert verify_main([*argv, *TRUST, "--trust-contributor", AUDITOR_HASH]) == 1
        assert words in one_line(capsys.readouterr().err)
    # No attestation at all: refused, naming the auditor the customer trusts.
    assert verify_main([*files(tmp_path / "fresh", forged_card, forged_bundle), *TRUST]) == 1
    assert "no auditor you trust (auditor.example) attested" in one_line(capsys.readouterr().err)


def test_the_banks_own_key_is_refused_in_service_mode_on_first_use(bank, genuine, tmp_path, capsys):
    card, bundle = genuine
    vouched = attest(card)
    forged_card, forged_bundle = own_key_forgery(bank, card)
    first_use, honest = tmp_path / "first-use", tmp_path / "honest"
    first_use.mkdir(), honest.mkdir()
    service = FakeService(forged_card, forged_bundle, attestations=[vouched])
    assert run_cli(service, bank.records[0], first_use, *TRUST, "--trust-contributor", AUDITOR_HASH) == 1
    assert "does not cover this card" in capsys.readouterr().err
    assert run_cli(FakeService(card, bundle, attestations=[vouched]), bank.records[0], honest, *TRUST) == 0
    assert f"attested by {AUDITOR.name}" in capsys.readouterr().out


def test_the_banks_own_audit_key_is_refused_in_dataset_mode(bank, tmp_path_factory, tmp_path, capsys):
    from bank_fixtures import copy_of_bank_model
    from prover_service.audit_proving import GroupCountsProver, audit_dataset

    root, workspace, store = copy_of_bank_model(bank, tmp_path_factory, "attested-audit")
    store.dispose()
    dataset, _ = audit_dataset(workspace, rows=6)
    bundle = GroupCountsProver(workspace, single_party=True).prove(dataset)
    card = ModelCard.from_json(workspace.card_path.read_bytes())
    vouched = attest(card)
    (tmp_path / "dataset.json").write_text(dataset.model_dump_json())
    argv = [*files(tmp_path, card, bank.bundles[0], vouched), "--dataset", str(tmp_path / "dataset.json"), *TRUST]
    (tmp_path / "bundle.json").write_text(bundle.model_dump_json())
    assert verify_main(argv) == 0
    assert "VALID proof of group counts" in capsys.readouterr().out
    # The bank's own key for the audit circuit, on a re-published card (setup record untouched).

    circuit = card.audit_circuits[0]
    n_public = circuit.n_public
    _, vk = setup(R1CS(n_wires=n_public + 2, n_public=n_public, constraints=(
        Constraint(a=((n_public + 1, 1),), b=((n_public + 1, 1),), c=((n_public + 1, 1),)),)), get_backend())
    rogue = card.model_copy(update={"audit_circuits": (circuit.model_copy(update={
        "verifying_key": VerifyingKeyJson.model_validate(verifying_key_to_json(vk)),
        "verifying_key_digest": vk_digest(vk)}),)})
    (tmp_path / "card.json").write_text(rogue.canonical_json())
    (tmp_path / "bundle.json").write_text(bundle.model_copy(update={"card_digest": rogue.digest()}).model_dump_json())
    assert verify_main([*argv, "--pin-file", str(tmp_path / "other-pins.json")]) == 1
    assert "does not cover this card" in capsys.readouterr().err


# -- 2. attestations that are not the trusted auditor's word on this card ----------------------------------------


def test_attestations_by_another_key_of_another_card_or_model_are_refused(bank, genuine, tmp_path, capsys):
    card, bundle = genuine
    cases = {
        "the bank's own key under the auditor's name": (attest(card, ROGUE), "no auditor you trust"),
        "an older card": (attest(card, card_digest="4" * 64), "not this card"),
        "another model's card, replayed": (attest(card, model_id="adult-model"), "of model 'adult-model'"),
        "another commitment": (attest(card, commitment="5"), "another commitment"),
        "another key than the card's": (attest(card, circuits=tuple(
            AttestedCircuit(name=n, r1cs_digest=r, verifying_key_digest="9" * 64, contributions=(AUDITOR_HASH,))
            for n, r, _ in attested_circuits(card))), "not the card's"),
    }
    for name, (attestation, words) in cases.items():
        (tmp_path / name).mkdir()
        assert verify_main([*files(tmp_path / name, card, bundle, attestation), *TRUST]) == 1, name
        assert words in one_line(capsys.readouterr().err), name
    # Tampered text under a genuine signature: the note does not open.
    good = attest(card)
    tampered = good.model_copy(update={"note": good.note.replace(card.digest(), "6" * 64)})
    (tmp_path / "tampered").mkdir()
    assert verify_main([*files(tmp_path / "tampered", card, bundle, tampered), *TRUST]) == 1
    assert "attestation" in one_line(capsys.readouterr().err)
    (tmp_path / "good").mkdir()
    assert verify_main([*files(tmp_path / "good", card, bundle, tampered, good), *TRUST]) == 0


def test_a_malformed_trusted_auditor_key_or_attestation_file_is_unusable_input(genuine, tmp_path, capsys):
    card, bundle = genuine
    assert verify_main([*files(tmp_path, card, bundle), "--trust-auditor", "not-a-key"]) == 2
    assert "--trust-auditor" in one_line(capsys.readouterr().err)
    (tmp_path / "attestation0.json").write_text('{"auditor_key": 1, "note": "x"}')
    argv = [str(tmp_path / "bundle.json"), "--card", str(tmp_path / "card.json"), "--attestation",
            str(tmp_path / "attestation0.json"), "--pin-file", str(tmp_path / "pins.json")]
    assert verify_main(argv) == 2
    assert "attestation" in one_line(capsys.readouterr().err)


def test_trusted_auditors_from_the_pin_file(genuine, tmp_path, capsys):
    card, bundle = genuine
    (tmp_path / "pins.json").write_text(json.dumps({"version": 1, "trusted_auditors": [AUDITOR.verifier().vkey()]}))
    argv = files(tmp_path, card, bundle)
    assert verify_main(argv) == 1
    assert "no auditor you trust" in one_line(capsys.readouterr().err)
    assert verify_main(files(tmp_path, card, bundle, attest(card))) == 0


# -- 3. a card re-published with other words ----------------------------------------------------------------------


def _relabelled(card: ModelCard) -> ModelCard:
    a = card.architecture
    return card.model_copy(update={"architecture": a.model_copy(update={"class_labels": a.class_labels[::-1]})})


def _renamed_radius(card: ModelCard) -> ModelCard:
    """The fast bucket presented as exact (same key): the verifier would print "exact"."""
    b = card.circuits[0]
    exact = b.model_copy(update={"bucket": b.bucket + "-exact", "shape": b.shape.model_copy(update={"radius": "exact"})})
    return card.model_copy(update={"circuits": (exact, *card.circuits[1:])})


def _other_cap(card: ModelCard) -> ModelCard:
    b = card.circuits[0]
    return card.model_copy(update={"circuits": (b.model_copy(update={"shape": b.shape.model_copy(
        update={"eps_cap": b.shape.eps_cap // 2})}), *card.circuits[1:])})


def _other_spread(card: ModelCard) -> ModelCard:
    return card.model_copy(update={"spread": card.spread.model_copy(update={"bucket_width": 2 * card.spread.bucket_width})})


def _other_sensitive_labels(card: ModelCard) -> ModelCard:
    s = card.sensitive[0]
    return card.model_copy(update={"sensitive": (s.model_copy(update={"labels": s.labels[::-1]}), *card.sensitive[1:])})


REPUBLISHED = {"class labels swapped": (_relabelled, "class_labels"),
               "a fast bucket renamed exact": (_renamed_radius, "removed"),
               "a bucket's cap halved": (_other_cap, "eps_cap"),
               "the spread's bucket width doubled": (_other_spread, "bucket_width"),
               "sensitive labels swapped": (_other_sensitive_labels, "labels")}


@pytest.mark.parametrize("change", list(REPUBLISHED))
def test_a_republished_card_that_changes_words_is_refused(bank, tmp_path, capsys, change):
    edit, field = REPUBLISHED[change]
    card = bank.card
    assert verify_main(files(tmp_path, card, bank.bundles[0])) == 0  # the genuine card, pinned on first use
    assert "pinned now, on first use" in capsys.readouterr().err
    republished = ModelCard.model_validate(edit(card).model_dump())
    bucket = bank.bundles[0].bucket if change != "a fast bucket renamed exact" else republished.circuits[0].bucket
    bundle = bank.bundles[0].model_copy(update={"card_digest": republished.digest(), "bucket": bucket})
    # File mode: the pin refuses it; accepting an update refuses any change but added buckets.
    assert verify_main(files(tmp_path, republished, bundle)) == 1
    assert "card changed" in one_line(capsys.readouterr().err)
    assert verify_main([*files(tmp_path, republished, bundle), "--accept-card-update"]) == 1
    line = one_line(capsys.readouterr().err)
    assert "accepts only added circuit buckets" in line and field in line
    # Service mode: the same.
    assert run_cli(FakeService(card, bank.bundles[0]), bank.records[0], tmp_path) == 0
    capsys.readouterr()
    assert run_cli(FakeService(republished, bundle), bank.records[0], tmp_path, "--accept-card-update") == 1
    assert "accepts only added circuit buckets" in capsys.readouterr().err


def test_a_changed_card_a_trusted_auditor_attested_is_repinned_and_said_so(bank, tmp_path, capsys):
    assert verify_main(files(tmp_path, bank.card, bank.bundles[0])) == 0
    capsys.readouterr()
    republished = _other_cap(bank.card)
    bundle = bank.bundles[0].model_copy(update={"card_digest": republished.digest()})
    assert verify_main([*files(tmp_path, republished, bundle, attest(republished, ROGUE)), *TRUST]) == 1
    assert "card changed" in one_line(capsys.readouterr().err)  # attested, but not by an auditor one trusts
    assert verify_main([*files(tmp_path, republished, bundle, attest(republished)), *TRUST]) == 0
    captured = capsys.readouterr()
    assert "re-pinned now (attested by auditor.example)" in captured.err and "eps_cap" in captured.err
    assert "attested by auditor.example" in captured.out
    assert verify_main(files(tmp_path, bank.card, bank.bundles[0])) == 1  # the old card no longer matches


def test_a_card_that_only_adds_a_bucket_is_accepted_on_request_with_its_changes(bank, tmp_path, capsys):
    card = bank.card
    assert verify_main(files(tmp_path, card, bank.bundles[0])) == 0
    extra = card.circuits[0].model_copy(update={"bucket": "k64-f64", "shape": card.circuits[0].shape.model_copy(
        update={"region_slots": 64, "farkas_slots": 64}), "r1cs_digest": "7" * 64, "verifying_key_digest": "8" * 64})
    grown = card.model_copy(update={"circuits": (*card.circuits, extra)})
    bundle = bank.bundles[0].model_copy(update={"card_digest": grown.digest()})
    assert verify_main(files(tmp_path, grown, bundle)) == 1
    assert "card changed" in one_line(capsys.readouterr().err)
    assert verify_main([*files(tmp_path, grown, bundle), "--accept-card-update"]) == 0
    captured = capsys.readouterr()
    assert "added k64-f64" in captured.err and "accepted by you" in captured.out
    assert verify_main(files(tmp_path, grown, bundle)) == 0  # pinned now
    assert verify_main(files(tmp_path, card, bank.bundles[0])) == 1  # and the old card no longer matches


def test_file_mode_consults_the_pins_of_service_mode(bank, tmp_path, capsys):
    assert run_cli(FakeService(bank.card, bank.bundles[0]), bank.records[0], tmp_path) == 0
    relabelled = _relabelled(bank.card)
    bundle = bank.bundles[0].model_copy(update={"card_digest": relabelled.digest()})
    assert verify_main(files(tmp_path, relabelled, bundle)) == 1
    assert "card changed" in one_line(capsys.readouterr().err)


# -- 4. the persistence box in file mode ---------------------------------------------------------------------------


def test_file_mode_applies_the_cards_default_box(bank, tmp_path, capsys):
    from offline_precompute.certify import query_from_record

    zero = bank.prover.prove(query_from_record(bank.prover.workspace.artifact, bank.prover.model, bank.records[0]),
                             persistence_delta=0).bundle
    assert bank.card.persistence.default_delta > 0
    for extra in ([], ["--require-lens", "persistence"]):
        assert verify_main([*files(tmp_path, bank.card, zero), *extra]) == 1
        assert "not the box you asked for" in one_line(capsys.readouterr().err)
    assert verify_main([*files(tmp_path, bank.card, zero), "--delta", "0"]) == 0  # asked for: that box
    assert verify_main(files(tmp_path, bank.card, bank.bundles[0])) == 0  # the default box


# -- 5. the log belongs to the service ------------------------------------------------------------------------------


def test_a_new_log_after_pinning_is_refused_by_the_customer(bank, tmp_path, capsys):
    assert run_cli(FakeService(bank.card, bank.bundles[0]), bank.records[0], tmp_path) == 0
    capsys.readouterr()
    private = MemoryLog(origin="bank.test/private-log", signer=new_signer("bank.test/private-log"))
    assert run_cli(FakeService(bank.card, bank.bundles[0], log=private), bank.records[0], tmp_path) == 1
    line = one_line(capsys.readouterr().err)
    assert "REFUSED (transparency log)" in line and "publishes its log as 'bank.test/log'" in line
    # The same origin under a new key: refused as well.
    rekeyed = MemoryLog(signer=new_signer())
    assert run_cli(FakeService(bank.card, bank.bundles[0], log=rekeyed), bank.records[0], tmp_path) == 1
    assert "REFUSED (transparency log)" in one_line(capsys.readouterr().err)
    assert run_cli(FakeService(bank.card, bank.bundles[0]), bank.records[0], tmp_path) == 0  # the pinned log


def test_a_new_log_after_pinning_is_refused_in_file_mode(bank, tmp_path, capsys):
    log = MemoryLog()
    logged = log.issue(bank.bundles[0], bank.card)
    assert verify_main([*files(tmp_path, bank.card, logged), "--log-key", log.verifier_key]) == 0
    capsys.readouterr()
    private = MemoryLog(origin="bank.test/private-log", signer=new_signer("bank.test/private-log"))
    other = private.issue(bank.bundles[0], bank.card)
    assert verify_main([*files(tmp_path, bank.card, other), "--log-key", private.verifier_key,
                        "--require-log"]) == 1
    line = one_line(capsys.readouterr().err)
    assert "REFUSED (transparency log)" in line and "a model's log never changes" in line


def test_the_card_leaf_comes_before_the_certificate_leaf(bank, tmp_path, capsys):
    log = MemoryLog()
    from log_fixtures import bundle_leaf, with_evidence

    certificate_index = log.append(bundle_leaf(bank.bundles[0]))
    card_index = log.publish(bank.card)
    late = with_evidence(bank.bundles[0], log.evidence(certificate_index, card_index))
    assert verify_main([*files(tmp_path, bank.card, late), "--log-key", log.verifier_key]) == 1
    assert card_order_problem(card_index, certificate_index) in one_line(capsys.readouterr().err)
    assert card_order_problem(0, 1) is None
    honest = MemoryLog().issue(bank.bundles[0], bank.card)
    (tmp_path / "honest").mkdir()
    assert verify_main([*files(tmp_path / "honest", bank.card, honest), "--log-key", log.verifier_key]) == 0


# -- 6. what the proof covers and what the card says ---------------------------------------------------------------


def test_the_verdict_separates_the_proof_from_the_card(bank, genuine, tmp_path, capsys):
    card, bundle = genuine
    assert verify_main([*files(tmp_path, card, bundle, attest(card)), *TRUST, "--json"]) == 0
    report = CertificateReport.model_validate_json(capsys.readouterr().out, strict=True)
    trust = report.certificate.card
    assert trust.attested_by == [AUDITOR.name] and trust.card_digest == card.digest()
    assert "class and sensitive labels" in trust.stated_by_card and "the query" in trust.proved
    assert "first use" in trust.pin
    assert verify_main(files(tmp_path, card, bundle)) == 0
    out = capsys.readouterr().out
    assert "The proof shows:" in out and "The card states (not proved" in out
    assert "attested by no auditor you named" in out and "matches the card pinned on" in out
