"""The verification page against `fairproof-verify`, on the honest certificates and every forgery of
tests/page_cases.py: in node (verify.js with snarkjs's node build: the same code, no browser) and in
headless Chromium through the page's own controls (the file `fairproof export-page` writes, opened from
disk). Both must give the verifier's verdict, and for a valid certificate its very words. The Chromium run
saves screenshots and the browser's verification times under artifacts/page/."""
from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from commitments.card import ModelCard
from browser_fixtures import chromium, verify_in_page
from page_cases import PageCase, node_verdicts, page_cases
from verifier_client.cli import main as verify_main
from verifier_client.page import MODULES, PageError, build_page

REPO = Path(__file__).resolve().parents[1]
ARTIFACTS = Path(os.environ.get("FAIRPROOF_TEST_ARTIFACTS", REPO / "artifacts")) / "page"
EXIT_VERDICTS = {0: "VALID", 1: "INVALID", 2: "UNUSABLE"}

@pytest.fixture(scope="module")
def cases(bank) -> list[PageCase]:
    return page_cases(bank)


def page_expected(case: PageCase) -> str:
    return case.extra.get("page", case.expected)


def cli_run(case: PageCase, tmp_path: Path, capsys) -> tuple[str, str]:
    """(verdict, stdout) of `fairproof-verify BUNDLE --card CARD [--record] [--trust-contributor]`."""
    (tmp_path / "bundle.json").write_text(case.bundle)
    (tmp_path / "card.json").write_text(case.card)
    pins = tmp_path / "pins"  # each case is a customer of its own: no pin carried from one case to the next
    pins.unlink(missing_ok=True)
    args = [str(tmp_path / "bundle.json"), "--card", str(tmp_path / "card.json"), "--pin-file", str(pins)]
    if case.record:
        (tmp_path / "record.json").write_text(case.record)
        args += ["--record", str(tmp_path / "record.json")]
    for h in case.trusted:
        args += ["--trust-contributor", h]
    code = verify_main(args)
    return EXIT_VERDICTS[code], capsys.readouterr().out


def test_the_corpus_is_what_the_verifier_says(cases, tmp_path, capsys):
    """The expectations are the verifier's: fairproof-verify gives each case its stated verdict."""
    assert sum(c.expected == "VALID" for c in cases) >= 3 and sum(c.expected != "VALID" for c in cases) >= 35
    for case in cases:
        verdict, _ = cli_run(case, tmp_path, capsys)
        assert verdict == case.expected, case.name


def test_the_page_in_node_gives_the_verifiers_verdicts_and_words(cases, tmp_path, capsys):
    got = node_verdicts(cases)
    for case, result in zip(cases, got):
        assert result["verdict"] == page_expected(case), (case.name, result["reason"])
        if case.reason:
            assert case.reason in result["reason"], (case.name, result["reason"])
        if result["verdict"] == "VALID":
            _, out = cli_run(case, tmp_path, capsys)
            report = result["report"].splitlines()
            assert report == out.splitlines()[:len(report)], case.name  # line for line what the CLI prints
            assert len(report) >= 8 and report[0] == "VALID certificate"


def test_a_pinned_card_digest_that_differs_is_refused_and_the_genuine_one_accepted(bank, cases):
    honest = next(c for c in cases if c.name == "honest")
    bad = PageCase("pinned other", honest.bundle, honest.card, pinned="0" * 64)
    good = PageCase("pinned", honest.bundle, honest.card, pinned=bank.card.digest().upper())
    refused, accepted = node_verdicts([bad, good])
    assert refused["verdict"] == "INVALID" and "not the one you pinned" in refused["reason"]
    assert accepted["verdict"] == "VALID"


def test_the_page_is_deterministic_bound_to_its_card_and_admits_only_its_own_scripts(bank):
    first, again = build_page(bank.card), build_page(ModelCard.from_json(bank.card.canonical_json()))
    assert first.html == again.html and first.digest == again.digest
    assert bank.card.digest() in first.html and "fairproof-card" in first.html
    free = build_page()
    assert free.digest != first.digest and 'id="fairproof-card"' not in free.html and "card-text" in free.html
    for page in (first, free):
        assert "connect-src 'none'" in page.csp and "unsafe-inline" not in page.csp.split("style-src")[0]
        assert page.csp.count("'sha256-") == len(MODULES) + 2  # the modules, snarkjs and canonicalize, nothing else
        assert "http://" not in page.html.split("<script>")[0] and "https://" not in page.html.split("<script>")[0]
    served = build_page(card_url="/v1/models/{model_id}/card")
    assert "connect-src 'self'" in served.csp


def test_a_snarkjs_build_other_than_the_pinned_one_is_refused(tmp_path, monkeypatch):
    fake = tmp_path / "snarkjs.min.js"
    fake.write_text("var snarkjs = { groth16: { verify: async () => true } };")
    monkeypatch.setenv("FAIRPROOF_SNARKJS_BROWSER", str(fake))
    with pytest.raises(PageError, match="is not snarkjs"):
        build_page()


def test_a_canonicalize_other_than_the_pinned_one_is_refused(tmp_path, monkeypatch):
    import verifier_client.page as page

    fake = tmp_path / "canonicalize.js"
    fake.write_text("export default function canonicalize (o) { return JSON.stringify(o); }")
    monkeypatch.setattr(page, "canonicalize_candidates", lambda: [fake])
    with pytest.raises(PageError, match="is not canonicalize 5.1.0"):
        build_page()
    monkeypatch.setattr(page, "canonicalize_candidates", lambda: [tmp_path / "absent.js"])
    with pytest.raises(PageError, match="canonicalize 5.1.0 is not installed"):
        build_page()


def test_export_page_writes_the_page_and_names_its_digest(bank, tmp_path, capsys):
    from prover_service.cli import main as fairproof

    (tmp_path / "card.json").write_text(bank.card.canonical_json())
    out = tmp_path / "site" / "verify.html"
    assert fairproof(["export-page", "--card", str(tmp_path / "card.json"), "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    page = build_page(bank.card)
    assert out.read_text() == page.html and page.digest in printed
    (tmp_path / "bad.json").write_text(bank.card.canonical_json()[:-1] + ', "x": 1}')
    assert fairproof(["export-page", "--card", str(tmp_path / "bad.json"), "--out", str(out)]) != 0
    assert "not a model card" in capsys.readouterr().err and out.read_text() == page.html  # the old page stays


# -------------------------------------------------------------------------------------------- Chromium


def test_the_page_in_chromium_accepts_the_honest_and_refuses_every_forgery(bank, cases, tmp_path):
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    bound = tmp_path / "verify.html"
    bound.write_text(build_page(bank.card).html)
    free = tmp_path / "verify-any-card.html"
    free.write_text(build_page().html)
    driver = chromium()
    timings, shots = [], {}
    try:
        driver.get(free.as_uri())  # the page a customer opens from disk, given the card too
        for case in cases:
            result = verify_in_page(driver, case)
            assert result["verdict"] == page_expected(case), (case.name, result["text"])
            if case.reason:
                assert case.reason in result["text"], (case.name, result["text"])
            if result["verdict"] == "VALID":
                timings.append(result["ms"])
                assert "whatever the value of foreign_worker" in result["text"]
            if case.name in ("honest", "B outside the order-r subgroup"):
                shots[case.name] = ARTIFACTS / f"{case.name.replace(' ', '-')}.png"
                driver.save_screenshot(str(shots[case.name]))
        driver.get(bound.as_uri())  # the page bound to the card: the customer gives the bundle alone
        honest = next(c for c in cases if c.name == "honest")
        result = verify_in_page(driver, PageCase("bound", honest.bundle, "", honest.record))
        assert result["verdict"] == "VALID" and "The certificate is about your record." in result["text"]
        timings.append(result["ms"])
        other = next(c for c in cases if c.name == "delta = gamma bundle, genuine card")
        assert verify_in_page(driver, PageCase("bound", other.bundle, ""))["verdict"] == "INVALID"
        errors = [e for e in driver.get_log("browser") if e.get("level") == "SEVERE"]
        assert not errors, errors  # no script error, no blocked request
    finally:
        driver.quit()
    assert all(p.is_file() and p.stat().st_size > 10_000 for p in shots.values())
    (ARTIFACTS / "timings.json").write_text(json.dumps({"valid_verifications_ms": timings}, indent=1))
    print(f"\nbrowser verification of a valid certificate: {min(timings):.0f}-{max(timings):.0f} ms "
          f"(first {timings[0]:.0f} ms); screenshots in {ARTIFACTS}")
