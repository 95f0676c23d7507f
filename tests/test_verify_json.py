"""`fairproof-verify --json`: one document per verdict, checked against its published schema, every value
from the verified claims (never a bundle's readable field); refusals as documents too, same exit status."""
from __future__ import annotations

import json
from fractions import Fraction

import pytest

from commitments.claims import bundle_claims
from verifier_client.cli import main as verify_main
from verifier_client.output import SCHEMA_DIR, SCHEMAS, CertificateReport, schema_text

from bank_fixtures import FakeService, forged, run_cli


def _report(capsys) -> CertificateReport:
    out = capsys.readouterr().out
    return CertificateReport.model_validate_json(out, strict=True)


@pytest.mark.parametrize("name", sorted(SCHEMAS))
def test_the_published_schemas_are_the_models(name):
    assert (SCHEMA_DIR / name).read_text() == schema_text(SCHEMAS[name])


def test_a_valid_certificate_as_json(bank, tmp_path, capsys):
    bundle, card = bank.bundles[0], bank.card
    (tmp_path / "b.json").write_text(bundle.model_dump_json())
    (tmp_path / "c.json").write_text(card.canonical_json())
    (tmp_path / "r.json").write_text(json.dumps(bank.records[0]))
    code = verify_main([str(tmp_path / "b.json"), "--card", str(tmp_path / "c.json"), "--record",
                        str(tmp_path / "r.json"), "--json", "--pin-file", str(tmp_path / "pins.json")])
    report = _report(capsys)
    assert code == 0 and report.valid and report.reason is None
    claims = bundle_claims(bundle, card)
    cert = report.certificate
    assert (cert.decision, cert.decision_label, cert.status, cert.bucket) == \
        (claims.decision, claims.decision_label, claims.status, claims.bucket)
    assert Fraction(cert.radius.value.exact) == claims.eps and cert.radius.kind == claims.radius
    assert cert.query == list(claims.query) and cert.about_your_record is True
    assert cert.spread == claims.spread.readable() and cert.persistence == claims.persistence.readable()
    assert "Keys of bucket" in cert.setup and cert.transparency_log


def test_a_forged_certificate_as_json(bank, tmp_path, capsys):
    bundle, card = bank.bundles[0], bank.card
    liar = forged(bundle, eps={**bundle.eps.model_dump(), "numerator": bundle.eps.numerator + 1})
    (tmp_path / "b.json").write_text(liar.model_dump_json())
    (tmp_path / "c.json").write_text(card.canonical_json())
    code = verify_main([str(tmp_path / "b.json"), "--card", str(tmp_path / "c.json"), "--json",
                        "--pin-file", str(tmp_path / "pins.json")])
    report = _report(capsys)
    assert code == 1 and not report.valid and report.certificate is None and "INVALID" in report.reason


def test_service_mode_as_json(bank, tmp_path, capsys):
    service = FakeService(bank.card, bank.bundles[0])
    assert run_cli(service, bank.records[0], tmp_path, "--json") == 0
    report = _report(capsys)
    assert report.valid and report.certificate.about_your_record is True
    # The service answers with another customer's certificate: refused, as a document.
    other = FakeService(bank.card, bank.bundles[1])
    (tmp_path / "again").mkdir()
    assert run_cli(other, bank.records[0], tmp_path / "again", "--json") == 1
    assert not _report(capsys).valid


def test_unusable_input_is_not_a_verdict(tmp_path, capsys):
    (tmp_path / "b.json").write_text("{")
    assert verify_main([str(tmp_path / "b.json"), "--card", str(tmp_path / "b.json"), "--json"]) == 2
    assert capsys.readouterr().out == ""
