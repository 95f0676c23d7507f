"""`fairproof plot`: eps histograms from verified bundles and plaintext certificates; forged bundles refused."""
from __future__ import annotations

import json
from fractions import Fraction

from commitments.claims import bundle_claims
from prover_service.cli import main as fairproof

from bank_fixtures import forged


def test_plot_from_bundles_and_plaintext(bank, tmp_path, capsys):
    card = tmp_path / "card.json"
    card.write_text(bank.card.canonical_json())
    (tmp_path / "proved").mkdir()
    for i, bundle in enumerate(bank.bundles):
        (tmp_path / "proved" / f"{i}.json").write_text(bundle.model_dump_json())
    certificate = bank.prover.certify(bank.bundles[0].query)
    (tmp_path / "plain").mkdir()
    (tmp_path / "plain" / "0.json").write_text(json.dumps({"certificate": certificate.to_json()}))
    out, table = tmp_path / "eps.png", tmp_path / "eps.json"
    assert fairproof(["plot", "--out", str(out), "--save-json", str(table), "--card", str(card),
                      f"proved={tmp_path}/proved/*.json", f"plaintext={tmp_path}/plain/*.json"]) == 0
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    rows = {r["label"]: r for r in json.loads(table.read_text())}
    proved = rows["proved"]
    claims = [bundle_claims(b, bank.card) for b in bank.bundles]
    drawn = sorted(c.eps for c in claims if c.status == "certified" and not c.capped)
    assert sorted(Fraction(e) for e in proved["eps"]) == drawn and proved["source"] == "proved"
    assert proved["drawn"] + proved["flips"] + proved["capped"] == len(bank.bundles)
    assert rows["plaintext"]["source"] == "plaintext" and rows["plaintext"]["files"] == 1
    assert "proved" in capsys.readouterr().out


def test_plot_refuses_a_forged_bundle_or_an_unknown_card(bank, tmp_path, capsys):
    card = tmp_path / "card.json"
    card.write_text(bank.card.canonical_json())
    bundle = bank.bundles[0]
    liar = forged(bundle, eps={**bundle.eps.model_dump(), "numerator": bundle.eps.numerator + 1})
    (tmp_path / "liar.json").write_text(liar.model_dump_json())
    out = tmp_path / "eps.png"
    assert fairproof(["plot", "--out", str(out), "--card", str(card), f"x={tmp_path}/liar.json"]) != 0
    assert "not a valid certificate" in capsys.readouterr().err and not out.exists()
    (tmp_path / "honest.json").write_text(bundle.model_dump_json())
    assert fairproof(["plot", "--out", str(out), f"x={tmp_path}/honest.json"]) != 0  # no --card
    assert "not one given with --card" in capsys.readouterr().err
    assert fairproof(["plot", "--out", str(out), "no-equals-sign"]) != 0
