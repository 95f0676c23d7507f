"""Every refusal names its rule by a stable reason code (docs/VERIFYING.md), the same in every mode.

The specification and the code cannot drift apart: every code the verifier can emit is documented, and
every documented code is emitted somewhere. A few forgeries show the code reaching the customer, in
--json documents and at the end of the one-line refusal.
"""
from __future__ import annotations

import json
import re
from pathlib import Path

from bank_fixtures import forged
from commitments.bundle import Radius
from verifier_client.cli import main as verify_main
from verifier_client.output import CertificateReport

REPO = Path(__file__).resolve().parents[1]
CODE = re.compile(r'"((?:claims|customer|card|key|proof|log|groups)\.[a-z][a-z-]*)"')
EMITTERS = ("commitments/claims.py", "verifier_client/verify.py", "verifier_client/audit.py",
            "verifier_client/cli.py", "verifier_client/service_client.py")


def _documented() -> set[str]:
    text = (REPO / "docs" / "VERIFYING.md").read_text()
    return set(re.findall(r"`((?:claims|customer|card|key|proof|log|groups)\.[a-z][a-z-]*)`", text))


def _emitted() -> set[str]:
    return {code for path in EMITTERS for code in CODE.findall((REPO / path).read_text())}


def test_every_emitted_code_is_documented_and_every_documented_code_emitted():
    documented, emitted = _documented(), _emitted()
    assert len(documented) >= 25
    assert emitted - documented == set(), "codes the verifier emits but docs/VERIFYING.md does not define"
    assert documented - emitted == set(), "codes docs/VERIFYING.md defines but no verifier emits"


def _json_verdict(tmp_path: Path, capsys, card, bundle, *extra: str) -> CertificateReport:
    (tmp_path / "card.json").write_text(card.canonical_json())
    (tmp_path / "bundle.json").write_text(bundle.model_dump_json())
    code = verify_main([str(tmp_path / "bundle.json"), "--card", str(tmp_path / "card.json"), "--json",
                        "--pin-file", str(tmp_path / "pins.json"), *extra])
    report = CertificateReport.model_validate_json(capsys.readouterr().out, strict=True)
    assert code == (0 if report.valid else 1)
    return report


def test_forgeries_carry_their_rules_code(bank, tmp_path, capsys):
    genuine, card = bank.bundles[0], bank.card
    assert _json_verdict(tmp_path, capsys, card, genuine).reason_code is None  # valid: no code
    cap = card.bucket(genuine.bucket).shape.eps_cap
    cases = {
        "claims.card-digest": genuine.model_copy(update={"card_digest": "0" * 64}),
        "claims.contradiction": genuine.model_copy(update={"decision_label": "a label the bank chose"}),
        "claims.eps-cap": forged(genuine, eps=Radius(numerator=cap + 1, scale_bits=genuine.eps.scale_bits)),
    }
    for code, bundle in cases.items():
        report = _json_verdict(tmp_path, capsys, card, bundle)
        assert not report.valid and report.reason_code == code, (code, report.reason)
    record = tmp_path / "other.json"
    record.write_text(json.dumps(bank.records[1]))
    report = _json_verdict(tmp_path, capsys, card, genuine, "--record", str(record))
    assert report.reason_code == "customer.record"
    report = _json_verdict(tmp_path, capsys, card, genuine, "--trust-contributor", "ab" * 64)
    assert report.reason_code == "customer.contributor"
    # The text mode ends the one line with the code.
    (tmp_path / "bundle.json").write_text(cases["claims.eps-cap"].model_dump_json())
    assert verify_main([str(tmp_path / "bundle.json"), "--card", str(tmp_path / "card.json"),
                        "--pin-file", str(tmp_path / "pins.json")]) == 1
    assert capsys.readouterr().err.rstrip().endswith("[claims.eps-cap]")


def test_a_proof_that_does_not_verify_and_a_pin_mismatch_carry_their_codes(bank, tmp_path, capsys):
    genuine, card = bank.bundles[0], bank.card
    swapped = genuine.model_copy(update={"proof": bank.bundles[1].proof, "proof_hex": bank.bundles[1].proof_hex})
    assert _json_verdict(tmp_path, capsys, card, swapped).reason_code == "proof.rejected"
    assert _json_verdict(tmp_path, capsys, card, genuine).valid  # pinned now
    other = card.model_copy(update={"description": "a re-published card"})
    report = _json_verdict(tmp_path, capsys, other, genuine.model_copy(update={"card_digest": other.digest()}))
    assert report.reason_code == "card.pin-mismatch"
