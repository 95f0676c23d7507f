"""An independent bank's model from import to the customer's check and every audit, on the command line only.

The bank (tests/independent_banks.py) scores Default of Credit Card clients with its own scikit-learn
Pipeline: sex one-hot with two values and marital status one-hot with three, both sensitive; education
ordinal, age min-max scaled, money standardised in a nested Pipeline. It runs, as a bank would:

    fairproof import-model pipeline.joblib --facts facts.yaml --check scored.csv --prediction-column decision
    fairproof commit --persistence 1            (the spread lens is on by default)
    fairproof certify --index I --data scored.csv
    fairproof prove --record customer.json      (the customer's raw attributes)
    fairproof-verify bundle.json --card card.json --record customer.json
    fairproof audit <verb> --data scored.csv    (every verb that reads the bank's CSV)

Each answer is compared with what the bank's own rows say (its recorded decisions, its groups), and each
acceptance has its refusal: a tampered bundle, another customer's record, a row that does not exist, an
audit without the bank's data.
"""
from __future__ import annotations

import contextlib
import csv
import io
import json
from collections import Counter

import pytest

from prover_service.cli import main as fairproof
from verifier_client.cli import main as verify

pytestmark = pytest.mark.slow  # about a minute and a half: key setup and a Groth16 proof, MILPs, the report

ROWS_PER_GROUP = 6  # per (marital status, education, outcome): 108 customers
AUDIT_ROWS = 16
CLASS_LABELS = {"no": "repays", "yes": "defaults"}  # the facts' class_values -> class_labels


@pytest.fixture(scope="module")
def bank(tmp_path_factory):
    """The bank's files, its model imported from its pipeline and committed with both lenses."""
    import joblib

    import independent_banks as ib
    from fairness.errors import DataError

    root = tmp_path_factory.mktemp("bank-end-to-end")
    try:
        frame = ib.credit_frame(per_group=ROWS_PER_GROUP)
    except (DataError, FileNotFoundError) as exc:  # pragma: no cover - depends on the machine
        pytest.skip(f"shared datasets not available: {exc}")
    pipeline = ib.fit_pipeline(ib.credit_preprocessor(), frame, "defaulted", (4,), seed=0)
    decisions = [str(d) for d in pipeline.predict(ib.features(frame, "defaulted"))]
    data = ib.scored_csv(frame, decisions, root / "scored.csv")
    joblib.dump(pipeline, root / "pipeline.joblib")
    facts = ib.facts_file(root / "facts.yaml", ib.credit_facts(label_column="defaulted"))
    model = root / "model"
    assert fairproof(["import-model", str(root / "pipeline.joblib"), "--facts", str(facts), "--check", str(data),
                      "--prediction-column", ib.DECISION, "--out", str(model)]) == 0
    assert fairproof(["commit", "--model", str(model), "--persistence", "1"]) == 0
    with data.open(newline="") as f:
        rows = list(csv.DictReader(f))
    return {"root": root, "model": model, "data": data, "rows": rows}


def _record(row: dict[str, str]) -> dict:
    """A customer's raw attributes as the bank's app sends them: numbers as numbers, words as words."""
    def value(text: str):
        try:
            number = float(text)
        except ValueError:
            return text
        return int(number) if number.is_integer() else number

    return {k: value(v) for k, v in row.items() if k not in ("decision", "defaulted")}


def _quiet(args: list[str]) -> tuple[int, str]:
    """`fairproof ARGS` with its output captured: for module fixtures, which have no capsys."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        code = fairproof(args)
    return code, out.getvalue()


@pytest.fixture(scope="module")
def customer(bank) -> int:
    """The first row of the bank's CSV whose decision no sensitive value alone changes (a certificate with
    a radius), as `fairproof certify --json` says."""
    for index in range(len(bank["rows"])):
        code, out = _quiet(["certify", "--model", str(bank["model"]), "--index", str(index), "--data",
                            str(bank["data"]), "--json"])
        assert code == 0
        if json.loads(out)["status"] == "certified":
            return index
    raise AssertionError("no row of the bank's CSV is certified with a radius")


@pytest.fixture(scope="module")
def proved(bank, customer):
    """The customer's record, the bundle proved for it, and the card the bank hands out with it."""
    root = bank["root"]
    record = root / "customer.json"
    record.write_text(json.dumps(_record(bank["rows"][customer])))
    bundle = root / "bundle.json"
    assert fairproof(["prove", "--model", str(bank["model"]), "--record", str(record), "--out", str(bundle),
                      "--single-party-setup"]) == 0
    card = root / "card-at-issue.json"  # the customer keeps the card the certificate was issued under
    card.write_bytes((bank["model"] / "card.json").read_bytes())
    return {"record": record, "bundle": bundle, "card": card, "row": bank["rows"][customer]}


def _fairproof(capsys, *args: str) -> str:
    capsys.readouterr()
    code = fairproof(list(args))
    out, err = capsys.readouterr()
    assert code == 0, err
    return out


def _refused(capsys, run, *args: str) -> str:
    capsys.readouterr()
    code = run(list(args))
    captured = capsys.readouterr()
    assert code != 0 and "Traceback" not in captured.err, captured
    return captured.out + captured.err


def test_the_card_publishes_both_sensitive_attributes_one_hot_and_both_lenses(bank):
    card = json.loads((bank["model"] / "card.json").read_text())
    sensitive = {s["name"]: s for s in card["sensitive"]}
    assert sorted(sensitive) == ["MARRIAGE", "SEX"]
    assert sensitive["SEX"]["labels"] == ["male", "female"] and len(sensitive["SEX"]["columns"]) == 2
    assert sensitive["MARRIAGE"]["labels"] == ["married", "single", "others"]
    assert len(sensitive["MARRIAGE"]["columns"]) == 3
    assert card["spread"] is not None and card["persistence"] is not None
    assert "108 agree" in card["import_check"]


def test_certify_decides_every_row_as_the_bank_did(bank, capsys):
    """Each of the first rows, as `certify --index I --data` reads it: the bank's recorded decision, a
    radius, or eps = 0 with the combination of sensitive values that flips it."""
    for index in range(8):
        out = _fairproof(capsys, "certify", "--model", str(bank["model"]), "--index", str(index), "--data",
                         str(bank["data"]), "--json")
        result = json.loads(out)
        assert result["decision_label"] == CLASS_LABELS[bank["rows"][index]["decision"]]
        assert result["status"] in ("certified", "flip")
        assert (int(result["radius"]["numerator"]) == 0) == (result["status"] == "flip")
    # its rejection twin: a row the bank's CSV does not have
    err = _refused(capsys, fairproof, "certify", "--model", str(bank["model"]), "--index", str(len(bank["rows"])),
                   "--data", str(bank["data"]))
    assert "out of range" in err


def test_the_customer_verifies_the_certificate(bank, proved, capsys):
    bundle = json.loads(proved["bundle"].read_text())
    assert bundle["decision_label"] == CLASS_LABELS[proved["row"]["decision"]]
    assert bundle["status"] == "certified" and int(bundle["eps"]["numerator"]) > 0
    capsys.readouterr()
    assert verify([str(proved["bundle"]), "--card", str(proved["card"]), "--record", str(proved["record"])]) == 0
    out = capsys.readouterr().out
    assert "VALID certificate" in out and "The certificate is about your record." in out
    assert "Persistent bias:" in out and "SEX = " in out and "MARRIAGE = " in out  # the persistence lens
    # the spread lens lists every combination of the two sensitive attributes: 2 x 3
    for sex in ("male", "female"):
        for marriage in ("married", "single", "others"):
            assert f"  {sex}, {marriage}: " in out


def test_a_tampered_bundle_is_invalid(bank, proved, tmp_path, capsys):
    """A larger radius written into the readable field alone contradicts the public signals; written into
    the public signals too, as a forger would, the pairing check fails."""
    from commitments.bundle import CertificateBundle, Radius
    from commitments.claims import signals_for

    honest = CertificateBundle.model_validate_json(proved["bundle"].read_text())
    wider = honest.model_copy(update={"eps": Radius(numerator=honest.eps.numerator + 1,
                                                    scale_bits=honest.eps.scale_bits)})
    forged = wider.model_copy(update={"public_signals": signals_for(wider, int(honest.public_signals[0]))})
    for bundle, code in ((wider, "[claims.contradiction]"), (forged, "[proof.rejected]")):
        path = tmp_path / "forged.json"
        path.write_text(bundle.model_dump_json())
        out = _refused(capsys, verify, str(path), "--card", str(proved["card"]), "--record", str(proved["record"]))
        assert "INVALID certificate" in out and code in out


def test_another_customers_record_is_refused(bank, proved, tmp_path, capsys):
    other = next(r for r in bank["rows"] if _record(r) != _record(proved["row"]))
    record = tmp_path / "other.json"
    record.write_text(json.dumps(_record(other)))
    out = _refused(capsys, verify, str(proved["bundle"]), "--card", str(proved["card"]), "--record", str(record))
    assert "INVALID certificate" in out and "[customer.record]" in out


# -- every audit verb over the bank's CSV -------------------------------------------------------------------


def _group(row: dict[str, str]) -> tuple[str, str]:
    """The row's (sex, marital status) as the card labels them."""
    from independent_banks import SEX_LABELS

    return SEX_LABELS[row["SEX"]], row["MARRIAGE"]


def _groups(rows) -> Counter:
    return Counter(_group(r) for r in rows)


def _selected(rows) -> Counter:
    """Rows the bank decided favourably ('no': repays), per (sex, marital status)."""
    return Counter(_group(r) for r in rows if r["decision"] == "no")


def _audit(capsys, bank, verb: str, *args: str) -> str:
    return _fairproof(capsys, "audit", verb, "--model", str(bank["model"]), "--data", str(bank["data"]), *args)


def test_audit_groups_counts_the_banks_decisions(bank, tmp_path, capsys):
    _audit(capsys, bank, "groups", "--bootstrap", "50", "--distribution", "0", "--save-json", str(tmp_path / "g.json"))
    report = json.loads((tmp_path / "g.json").read_text())
    assert report["rows"] == len(bank["rows"]) and report["favourable_class"] == "repays"
    got = {tuple(g["labels"]): (g["n"], g["selected"]) for g in report["groups"]}
    groups, selected = _groups(bank["rows"]), _selected(bank["rows"])
    assert got == {k: (groups[k], selected[k]) for k in groups}
    positives = Counter(_group(r) for r in bank["rows"] if r["defaulted"] == "no")
    assert {tuple(g["labels"]): g["positives"] for g in report["groups"]} == {k: positives[k] for k in groups}


def test_audit_spread_and_kdisc_agree_on_the_banks_rows(bank, tmp_path, capsys):
    _audit(capsys, bank, "spread", "--top", "3", "--save-json", str(tmp_path / "s.json"))
    spread = json.loads((tmp_path / "s.json").read_text())
    assert spread["individuals"] == len(bank["rows"]) and spread["slices"] == 6
    assert sum(spread["k_distribution"].values()) == len(bank["rows"])
    largest = max(int(k) for k, n in spread["k_distribution"].items() if n)
    _audit(capsys, bank, "kdisc", "--time-limit", "10", "--samples", "300", "--save-json", str(tmp_path / "k.json"))
    kdisc = json.loads((tmp_path / "k.json").read_text())
    assert kdisc["rows"] == {"data": str(bank["data"]), "individuals": len(bank["rows"]), "largest_k": largest}
    assert len(kdisc["combinations"]) == 6 and largest <= kdisc["milp"]["k"] <= 6


def test_audit_persistence_flips_each_attribute(bank, tmp_path, capsys):
    limit = 6
    _audit(capsys, bank, "persistence", "--limit", str(limit), "--delta", "1", "--save-json", str(tmp_path / "p.json"))
    report = json.loads((tmp_path / "p.json").read_text())
    for setting in ("observed", "flipped"):  # sex has one other value, marital status two
        rows = [r for r in report["rows"] if r["setting"] == setting]
        assert sum(r["pairs"] for r in rows) == limit * (1 + 2)
        assert all(r["favoured"] + r["disfavoured"] + r["inconclusive"] == r["pairs"] for r in rows)


def test_audit_global_and_explain_search_every_pair(bank, tmp_path, capsys):
    _audit(capsys, bank, "global", "--observed-range", "--time-limit", "10", "--save-json", str(tmp_path / "gl.json"))
    report = json.loads((tmp_path / "gl.json").read_text())
    assert len(report["pairs"]) == 6 * 5  # ordered pairs of distinct combinations
    statuses = {p["status"] for p in report["pairs"]}
    assert statuses <= {"counterexample", "fair (optimal)", "unknown"}
    assert report["verdict"].startswith("DISCRIMINATES") == ("counterexample" in statuses)
    # each numeric column kept to the range the bank's rows show, in model inputs at the card's scale
    schema = json.loads((bank["model"] / "schema.json").read_text())
    numeric = {f["name"]: f for f in schema["features"] if f["kind"] == "numeric"}
    assert set(report["numeric_columns_restricted"]) == set(numeric)
    for name, (low, high) in report["numeric_columns_restricted"].items():
        raw = [float(r[name]) for r in bank["rows"]]
        scaled = [(v - numeric[name]["mean"]) / numeric[name]["std"] * 2**16 for v in (min(raw), max(raw))]
        assert [low, high] == pytest.approx(scaled, abs=1), name
    # its refusal: the rows alone, without saying what to do with them
    err = _refused(capsys, fairproof, "audit", "global", "--model", str(bank["model"]), "--data", str(bank["data"]))
    assert "--observed-range" in err and err.count("\n") <= 1
    _audit(capsys, bank, "explain", "--samples", "200", "--time-limit", "10", "--save-json", str(tmp_path / "e.json"))
    rules = json.loads((tmp_path / "e.json").read_text())
    assert rules["samples"] == 200 and 0 <= rules["discriminatory_share"] <= 1


def test_audit_probabilistic_covers_every_group(bank, tmp_path, capsys):
    _audit(capsys, bank, "probabilistic", "--samples", "500", "--save-json", str(tmp_path / "pr.json"))
    report = json.loads((tmp_path / "pr.json").read_text())
    assert {g["labels"] for g in report["groups"]} == {f"{s}, {m}" for s, m in _groups(bank["rows"])}
    assert sum(g["probability"] for g in report["groups"]) == pytest.approx(1)


def test_audit_report_is_one_page(bank, tmp_path, capsys):
    page = tmp_path / "report.html"
    _audit(capsys, bank, "report", "--out", str(page), "--customers", "2", "--samples", "200", "--time-limit", "5",
           "--draws", "500")
    html = page.read_text()
    assert html.lstrip().lower().startswith("<!doctype html") and "<script" not in html.lower()


def test_audit_dataset_proves_group_counts_the_auditor_verifies(bank, proved, tmp_path, capsys):
    dataset, proof = tmp_path / "audit.json", tmp_path / "groups.json"
    _audit(capsys, bank, "dataset", "--rows", str(AUDIT_ROWS), "--out", str(dataset))
    assert len(json.loads(dataset.read_text())["rows"]) == AUDIT_ROWS
    _fairproof(capsys, "audit", "prove-groups", "--model", str(bank["model"]), "--dataset", str(dataset),
               "--out", str(proof), "--single-party-setup")
    card = str(bank["model"] / "card.json")  # the card now publishes the audit circuit
    assert verify([str(proof), "--card", card, "--dataset", str(dataset), "--json"]) == 0
    verdict = json.loads(capsys.readouterr().out)
    assert verdict["valid"] is True and verdict["rows"] == AUDIT_ROWS
    first = bank["rows"][:AUDIT_ROWS]  # every row lies inside the box: the dataset is the CSV's first rows
    counts, selected = _groups(first), _selected(first)
    got = {tuple(g["labels"]): (g["rows"], g["selected"]) for g in verdict["groups"]}
    assert got == {k: (counts[k], selected[k]) for k in got} and set(counts) <= set(got)
    # its rejection twin: the same proof over a dataset with one label changed
    doctored = json.loads(dataset.read_text())
    doctored["labels"][0] = 1 - doctored["labels"][0]
    other = tmp_path / "doctored.json"
    other.write_text(json.dumps(doctored))
    out = _refused(capsys, verify, str(proof), "--card", card, "--dataset", str(other))
    assert "INVALID group-counts proof" in out and "[groups.dataset]" in out


@pytest.mark.parametrize("verb", ["spread", "groups", "persistence"])
def test_an_audit_without_the_banks_data_is_one_clear_line(bank, capsys, verb):
    err = _refused(capsys, fairproof, "audit", verb, "--model", str(bank["model"]))
    assert "--data" in err and err.count("\n") <= 1
