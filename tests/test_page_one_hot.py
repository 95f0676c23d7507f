"""The verification page on sensitive attributes spanning several inputs (a bank's one-hot columns), against
`fairproof-verify`: the cases of tests/page_cases.py `one_hot_cases` (a card with race over three inputs, sex
over one with female dropped, region over two with north dropped; and a certificate proved slice by slice under it), each acceptance beside its
rejection twin,
in node and in headless Chromium; the claims derived from every forged signal vector; a customer's record
encoded into the query the verifier encodes."""
from __future__ import annotations

import itertools
import json
from pathlib import Path

import pytest

from browser_fixtures import chromium, verify_in_page
from commitments.record import RecordError, encode_record
from node_runner import run_node
from page_cases import (PageCase, node_verdicts, one_hot_bank, one_hot_cases, one_hot_certificate,
                        one_hot_per_slice_cases, one_hot_query)
from test_page_claims import comparable, forgeries, js_claims, py_claims
from verifier_client.cli import main as verify_main
from verifier_client.page import PAGE_DIR, build_page

EXIT_VERDICTS = {0: "VALID", 1: "INVALID", 2: "UNUSABLE"}


@pytest.fixture(scope="module")
def bank():
    return one_hot_bank()


@pytest.fixture(scope="module")
def cases(bank) -> list[PageCase]:
    return [*one_hot_cases(bank), *one_hot_per_slice_cases(one_hot_bank(per_slice=True))]


def cli_run(case: PageCase, where: Path, capsys) -> tuple[str, str | None, str]:
    """(verdict, reason code, what it says) of `fairproof-verify BUNDLE --card CARD [--record] --json`."""
    where.mkdir(parents=True, exist_ok=True)
    (where / "bundle.json").write_text(case.bundle)
    (where / "card.json").write_text(case.card)
    args = [str(where / "bundle.json"), "--card", str(where / "card.json"), "--pin-file", str(where / "pins")]
    if case.record:
        (where / "record.json").write_text(case.record)
        args += ["--record", str(where / "record.json")]
    capsys.readouterr()
    verdict = EXIT_VERDICTS[verify_main([*args, "--json"])]
    out, err = capsys.readouterr()
    if verdict == "UNUSABLE":
        return verdict, None, err
    report = json.loads(out)
    return verdict, report.get("reason_code"), report.get("reason") or ""


def cli_text(case: PageCase, where: Path, capsys) -> str:
    """What `fairproof-verify` prints for the case (its plain words)."""
    args = [str(where / "bundle.json"), "--card", str(where / "card.json"), "--pin-file", str(where / "pins2")]
    if case.record:
        args += ["--record", str(where / "record.json")]
    capsys.readouterr()
    verify_main(args)
    return capsys.readouterr().out


def test_the_cases_are_what_the_verifier_says(cases, tmp_path, capsys):
    """Every acceptance and its twin, as fairproof-verify judges them, naming the case's rule."""
    assert sum(c.expected == "VALID" for c in cases) >= 8 and sum(c.expected == "UNUSABLE" for c in cases) >= 10
    wrong = []
    for i, case in enumerate(cases):
        verdict, code, reason = cli_run(case, tmp_path / str(i), capsys)
        if (verdict, code) != (case.expected, case.code) or case.reason not in reason:
            wrong.append(f"{case.name}: {verdict} [{code}] {reason[:200]}")
    assert not wrong, "\n".join(wrong)


def test_the_page_in_node_gives_the_verifiers_verdicts_codes_and_words(cases, tmp_path, capsys):
    got = node_verdicts(cases)
    wrong = []
    for i, (case, result) in enumerate(zip(cases, got)):
        verdict, code, reason = cli_run(case, tmp_path / str(i), capsys)
        if (result["verdict"], result["code"]) != (verdict, code) or case.reason not in result["reason"]:
            wrong.append(f"{case.name}: page {result['verdict']} [{result['code']}] {result['reason'][:200]}")
        elif verdict == "UNUSABLE" and result["reason"].removeprefix("malformed card: ") not in reason:
            wrong.append(f"{case.name}: page says {result['reason']!r}, the verifier {reason.strip()!r}")
        elif verdict == "VALID":
            report = result["report"].splitlines()
            printed = cli_text(case, tmp_path / str(i), capsys).splitlines()
            if report != printed[:len(report)] or len(report) < 8:
                wrong.append(f"{case.name}: the page's report is not the verifier's\n{result['report']}")
    assert not wrong, "\n".join(wrong)


def test_the_report_names_the_labels_of_a_one_hot_flip_and_of_every_persistence_point(cases):
    """The plain words name value labels, never the points: the flip's slice, the spread's combinations and the
    persistence bounds of each attribute's other values (the customer's own is not listed)."""
    flip = next(c for c in cases if c.name.startswith("counterfactual flip"))
    report = node_verdicts([flip])[0]["report"]
    assert "with race, sex, region set to group a, male, south and nothing else changed" in report
    assert "  group c, female, east: defaults" in report and "  group a, male, south: repays" in report
    listed = [line.split(":")[0].strip() for line in report.splitlines() if " = " in line and "logits" in line]
    assert listed == ["race = group c", "race = group a", "sex = female", "region = north", "region = east"]


def test_the_page_derives_the_claims_the_verifier_derives_from_every_forged_signal(bank):
    """Each signal changed every way a forger might, and each sensitive attribute's inputs set to every pattern
    of 0 and 1 (its points and all the others): the page and commitments.claims refuse the same vectors or
    derive the same claims."""
    card, honest = bank.card, one_hot_certificate(bank)
    flip = one_hot_certificate(bank, flip=4)
    vectors = [*forgeries(list(honest.public_signals)), *forgeries(list(flip.public_signals))]
    for f in card.sensitive:
        for pattern in itertools.product((0, 1), repeat=len(f.input_columns)):
            query = one_hot_query(bank, **{f.name: pattern})
            vectors.append(list(one_hot_certificate(bank, query=query).public_signals))
    cases = [[v, honest.bucket] for v in vectors]
    expected = [py_claims(v, card, honest.bucket) for v in vectors]
    got = [comparable(c) for c in js_claims(card.canonical_json(), cases)]
    accepted = sum(e is not None for e in expected)
    assert 2 + sum(len(f.points) for f in card.sensitive) <= accepted < len(expected) // 2
    mismatches = [(v, e, g) for v, e, g in zip(vectors, expected, got) if e != g]
    assert not mismatches, mismatches[:3]


RECORD_RUNNER = """
const canonical = require(process.argv[1] + '/canonical.js');
const record = require(process.argv[1] + '/record.js');
let input = ''; process.stdin.on('data', d => input += d).on('end', () => {
  const job = JSON.parse(input);
  const card = canonical.parseJson(job.card);
  process.stdout.write(JSON.stringify(job.records.map((text) => {
    try { return record.encodeRecord(card, canonical.parseJson(text)).map(String); }
    catch (e) { if (e instanceof record.RecordError) return null; throw e; }
  })));
});
"""


def test_a_record_is_encoded_into_the_query_the_verifier_encodes(bank):
    """Every value of every one-hot attribute (the dropped ones all zeros), and values that are none."""
    from fairness.schema import RecordError as SchemaRecordError

    card = bank.card
    records = [{**bank.record, "race": r, "sex": s, "region": g}
               for r, s, g in itertools.product(("a", "b", "c"), ("F", "M"), ("north", "south", "east"))]
    records += [{**bank.record, name: bad} for name in ("race", "sex", "region")
                for bad in ("d", "", " b", 1, None, True, "north" if name != "region" else "F")]
    texts = [json.dumps(r) for r in records]

    def python(text):
        try:
            return [str(v) for v in encode_record(card, json.loads(text))]
        except (RecordError, SchemaRecordError):
            return None

    expected = [python(t) for t in texts]
    got = run_node(RECORD_RUNNER, {"card": card.canonical_json(), "records": texts}, str(PAGE_DIR))
    assert got == expected
    assert all(e is not None for e in expected[:18]) and all(e is None for e in expected[18:])
    assert len({tuple(e) for e in expected[:18]}) == 18  # each combination its own query


# -------------------------------------------------------------------------------------------- Chromium


def test_the_page_in_chromium_gives_every_one_hot_case_its_verdict(cases, tmp_path):
    page = tmp_path / "verify.html"
    page.write_text(build_page().html)
    driver = chromium()
    try:
        driver.get(page.as_uri())
        for case in cases:
            result = verify_in_page(driver, case)
            assert result["verdict"] == case.expected, (case.name, result["text"])
            assert case.reason in result["text"], (case.name, result["text"])
            if case.expected == "VALID":
                assert "whatever the value of race, sex, region" in result["text"] or "Not certified fair" in result["text"]
        errors = [e for e in driver.get_log("browser") if e.get("level") == "SEVERE"]
        assert not errors, errors  # no script error, no blocked request
    finally:
        driver.quit()
