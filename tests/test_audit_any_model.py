"""Every audit verb on a model the bank imported under its own schema, over the bank's own CSV.

The bank (tests/synthetic_credit.py: two sensitive attributes, sex with two values and region with
three, region held as one code or one-hot over three inputs; a one-hot purpose, an ordinal housing code;
its own column order) trains its network, scores its book and imports the network with `--schema`,
checked on every row. Each verb then reads the same CSV
with `--data`, and each answer is compared with a count made here from the rows themselves. Each
acceptance has its refusal: a CSV without a column, a row outside the domain, a verb without `--data`,
a broken network file, a record given as a list of model inputs.
"""
from __future__ import annotations

import csv
import json
from fractions import Fraction
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import pytest

import synthetic_credit as book
from commitments.record import NOT_A_RECORD
from fairness.fixed_point import quantise_query, quantise_value
from fairness.schema_csv import read_csv
from fairness.spread import SpreadLens, spread
from prover_service.cli import main as fairproof
from prover_service.workspace import ModelWorkspace
from verifier_client.cli import main as verify

torch = pytest.importorskip("torch")

ROWS = 120


def _schema_json(region: str) -> dict:
    """The book's schema with region held as one code, or one-hot over three inputs."""
    features = [dict(f, encoding="one_hot") if f["name"] == "region" and region == "one_hot" else f
                for f in book.SCHEMA["features"]]
    return {**book.SCHEMA, "features": features}


@pytest.fixture(scope="module", params=["code", "one_hot"], ids=["region-code", "region-one-hot"])
def imported(request, tmp_path_factory):
    """The bank's scored book (book.csv: its columns in its own order, the label, its decisions) and its
    network imported under its schema with --check and committed."""
    from fairness.schema import FeatureSchema

    root = tmp_path_factory.mktemp("bank-audit")
    schema = FeatureSchema.model_validate(_schema_json(request.param))
    rows = book.raw_rows(ROWS, seed=3)
    X = np.array([schema.encode({a: r[a] for a in schema.attributes}) for r in rows])
    y = np.array([schema.label.values.index(r["default"]) for r in rows])
    net = book.train_bank_network(X, y, hidden=3)
    with torch.no_grad():
        decided = net(torch.tensor(X, dtype=torch.float32)).argmax(1).numpy()
    torch.save(net.state_dict(), root / "net.pt")
    (root / "schema.json").write_text(json.dumps(_schema_json(request.param)))
    data = book.write_csv(root / "book.csv", rows, [schema.label.values[d] for d in decided])
    model = root / "model"
    assert fairproof(["import-model", str(root / "net.pt"), "--format", "torch", "--schema",
                      str(root / "schema.json"), "--check", str(data), "--out", str(model)]) == 0
    assert fairproof(["commit", "--model", str(model)]) == 0
    return {"root": root, "model": model, "data": data, "rows": rows, "schema": schema}


def _run(capsys, *args: str) -> str:
    capsys.readouterr()
    assert fairproof(["audit", *args]) == 0
    return capsys.readouterr().out


def _refusal(capsys, *args: str) -> str:
    capsys.readouterr()
    code = fairproof(["audit", *args])
    err = capsys.readouterr().err
    assert code != 0 and "Traceback" not in err and err.strip(), args
    return err


def _queries(imported):
    """(workspace, fixed-point model, the CSV's rows as customers' queries, their labels), read here."""
    workspace = ModelWorkspace.open(imported["model"])
    model = workspace.fixed_point()
    table = read_csv(workspace.artifact.preprocessor, imported["data"], require_label=True)
    return workspace, model, [quantise_query(model, list(x)) for x in table.X], list(table.y)


# -- every verb with --data -------------------------------------------------------------------------------


def test_spread_reads_the_banks_csv(imported, tmp_path, capsys):
    out = _run(capsys, "spread", "--model", str(imported["model"]), "--data", str(imported["data"]),
               "--top", "3", "--save-json", str(tmp_path / "s.json"))
    assert f"over {ROWS} individuals of {imported['data']}" in out and "line " in out
    report = json.loads((tmp_path / "s.json").read_text())
    workspace, model, queries, _ = _queries(imported)
    card = workspace.card()
    lens = SpreadLens(card.spread.favourable_class, card.spread.bucket_width)
    ks = [spread(model, q, lens).distinct_buckets for q in queries]
    assert report["individuals"] == ROWS and report["data"] == str(imported["data"])
    assert report["k_distribution"] == {str(k): ks.count(k) for k in range(1, 7)}
    assert report["largest"][0]["k"] == max(ks) and report["largest"][0]["row"].startswith("line ")


def test_groups_counts_equal_a_hand_count(imported, tmp_path, capsys):
    out = _run(capsys, "groups", "--model", str(imported["model"]), "--data", str(imported["data"]),
               "--bootstrap", "50", "--distribution", "0", "--save-json", str(tmp_path / "g.json"))
    assert "equal opportunity difference (TPR gap)" in out and "equalized odds" in out
    report = json.loads((tmp_path / "g.json").read_text())
    workspace, model, queries, labels = _queries(imported)
    favourable = workspace.card().architecture.class_labels.index(report["favourable_class"])
    counts: dict[tuple, list[int]] = {s: [0, 0, 0, 0, 0, 0] for s in model.slices()}  # n sel pos tp neg fp
    for q, label in zip(queries, labels):
        c = counts[tuple(q[j] for j in model.sensitive_columns)]
        chosen, positive = model.net.decision(q) == favourable, label == favourable
        c[0] += 1
        c[1] += chosen
        c[2] += positive
        c[3] += chosen and positive
        c[4] += not positive
        c[5] += chosen and not positive
    got = [[g["n"], g["selected"], g["positives"], g["true_positives"], g["negatives"], g["false_positives"]]
           for g in report["groups"]]
    assert got == list(counts.values())
    tpr = [c[3] / c[2] for c in counts.values() if c[2]]
    fpr = [c[5] / c[4] for c in counts.values() if c[4]]
    assert report["equal_opportunity"] == pytest.approx(max(tpr) - min(tpr))
    assert report["false_positive_gap"] == pytest.approx(max(fpr) - min(fpr))
    assert report["equalized_odds"] == pytest.approx(max(max(tpr) - min(tpr), max(fpr) - min(fpr)))


def test_persistence_reads_the_banks_csv_and_solves_every_pair_exactly(imported, tmp_path, capsys):
    out = _run(capsys, "persistence", "--model", str(imported["model"]), "--data", str(imported["data"]),
               "--limit", "6", "--delta", "1", "--exact", "--save-json", str(tmp_path / "p.json"))
    assert "every MILP solved to optimality" in out
    report = json.loads((tmp_path / "p.json").read_text())
    # sex has one other value, region two: three single-attribute flips per individual, seen from each side
    for setting in ("observed", "flipped"):
        rows = [r for r in report["rows"] if r["setting"] == setting]
        assert sum(r["pairs"] for r in rows) == 6 * 3
        for r in rows:
            e = r["exact"]
            assert e["favoured"] + e["disfavoured"] + e["neither"] + e["unresolved"] == r["pairs"]
            assert e["unresolved"] == 0 and e["stopped_short"] == 0
            # the LP is sound: what it certifies, the exact optimum confirms
            assert e["favoured"] >= r["favoured"] and e["disfavoured"] >= r["disfavoured"]


def test_explain_reads_the_banks_csv(imported, tmp_path, capsys):
    out = _run(capsys, "explain", "--model", str(imported["model"]), "--data", str(imported["data"]),
               "--samples", "400", "--time-limit", "20", "--save-json", str(tmp_path / "e.json"))
    report = json.loads((tmp_path / "e.json").read_text())
    assert report["samples"] >= 400 and f"{report['seeds']} discriminatory seeds" in out
    # rules in the bank's raw units: a number from the schema's mean and std with its unit, a category by name
    schema = imported["schema"]
    conditions = [c for r in report["rules"] for c in r["conditions_standardised"]]
    assert conditions and "standardised" not in out
    for rule in report["rules"]:
        assert rule["conditions"] == [c["text"] for c in rule["conditions_standardised"]]
    for c in conditions:
        assert c["text"] in out and "(standardised)" not in c["text"]
        attribute = c["input"].split("=")[0]
        feature = next(f for f in schema.features if f.name == attribute)
        if feature.kind == "numeric":
            raw = feature.mean + feature.std * c["standardised_threshold"]
            assert c["text"] == f"{attribute} {c['op']} {raw:.4g} {feature.unit}"
        else:  # the categories whose encoding satisfies the cut, named
            inside = [name for name in feature.categories
                      if (feature.encode(name)[feature.inputs.index(c["input"])] <= c["standardised_threshold"])
                      == (c["op"] == "<=")]
            assert c["text"] == f"{attribute} in {{{', '.join(inside)}}}"


def test_global_search_keeps_one_hot_features_real_records(imported, tmp_path, capsys):
    out = _run(capsys, "global", "--model", str(imported["model"]), "--data", str(imported["data"]),
               "--observed-range", "--time-limit", "30", "--save-json", str(tmp_path / "g.json"))
    assert "maximum margin difference" in out
    report = json.loads((tmp_path / "g.json").read_text())
    assert set(report["numeric_columns_restricted"]) == {"age", "income", "duration"}
    assert {"purpose=car", "purpose=house", "purpose=education", "housing"} <= set(
        report["categorical_columns_restricted"])
    difference = report["max_margin_difference"]
    assert len(difference["pairs"]) == 30 and difference["optimal"]
    assert difference["value"] == max(p["value"] for p in difference["pairs"])
    workspace = ModelWorkspace.open(imported["model"])
    names = list(workspace.card().feature_names)
    purpose = [names.index(f"purpose={c}") for c in book.PURPOSES]
    points = [difference["point_standardised"]] + [p["counterexample"]["point_standardised"]
                                                   for p in report["pairs"] if p["counterexample"]]
    for point in points:  # a one-hot feature at one of its categories, never between them
        assert sorted(Fraction(point[j]) for j in purpose) == [0, 0, 1]
    # shown in the bank's raw units: the schema's reading of the standardised point, category names included
    schema = imported["schema"]
    shown = [difference] + [p["counterexample"] for p in report["pairs"] if p["counterexample"]]
    for found in shown:
        point = [Fraction(v) for v in found["point_standardised"]]
        raw = found["point_raw"]
        assert list(raw) == [a for a in schema.attributes if a not in schema.sensitive]
        assert raw["purpose"] in book.PURPOSES and raw["housing"] in ("rent", "own", "free")
        age = next(f for f in schema.features if f.name == "age")
        assert raw["age"] == f"{age.mean + age.std * float(point[names.index('age')]):.6g} years"
    assert "[raw units]" in out and "[standardised units]" not in out
    assert f"purpose={shown[0]['point_raw']['purpose']}" in out
    # rows without --observed-range would be read for nothing: refused rather than ignored
    err = _refusal(capsys, "global", "--model", str(imported["model"]), "--data", str(imported["data"]))
    assert "--observed-range" in err


def test_kdisc_reports_the_rows_largest_k(imported, tmp_path, capsys):
    out = _run(capsys, "kdisc", "--model", str(imported["model"]), "--data", str(imported["data"]),
               "--time-limit", "30", "--samples", "500", "--save-json", str(tmp_path / "k.json"))
    report = json.loads((tmp_path / "k.json").read_text())
    workspace, model, queries, _ = _queries(imported)
    card = workspace.card()
    lens = SpreadLens(card.spread.favourable_class, card.spread.bucket_width)
    assert report["rows"]["individuals"] == ROWS
    assert report["rows"]["largest_k"] == max(spread(model, q, lens).distinct_buckets for q in queries)
    assert report["milp"]["k"] >= report["rows"]["largest_k"]
    # the MILP's individual: a one-hot feature at one of its categories, an ordinal one at one of its codes
    names = list(card.feature_names)
    point = [Fraction(v) for v in report["milp"]["point_standardised"]]
    assert sorted(point[names.index(f"purpose={c}")] for c in book.PURPOSES) == [0, 0, 1]
    housing = next(f for f in imported["schema"].features if f.name == "housing")
    codes = {quantise_value((c - housing.mean) / housing.std, model.scale_bits) for c in housing.ordinal_codes}
    assert point[names.index("housing")] * (1 << model.scale_bits) in codes
    assert report["milp"]["point_raw"]["purpose"] in book.PURPOSES
    assert report["milp"]["point_raw"]["housing"] in housing.categories
    assert f"purpose={report['milp']['point_raw']['purpose']}" in out and "[raw units]" in out


class _Headings(HTMLParser):
    def __init__(self):
        super().__init__()
        self.headings, self._in = [], False

    def handle_starttag(self, tag, attrs):
        self._in = self._in or tag == "h2"

    def handle_endtag(self, tag):
        self._in = self._in and tag != "h2"

    def handle_data(self, data):
        if self._in:
            self.headings.append(data)


def test_report_reads_the_banks_csv(imported, tmp_path, capsys):
    page = tmp_path / "report.html"
    _run(capsys, "report", "--model", str(imported["model"]), "--data", str(imported["data"]), "--out", str(page),
         "--customers", "3", "--samples", "300", "--time-limit", "20", "--draws", "500")
    parser = _Headings()
    parser.feed(page.read_text())
    assert f"Selection rates by group ({imported['data']})" in parser.headings
    assert "equalized odds" in page.read_text() and "maximum margin difference" in page.read_text()


def test_dataset_reads_the_banks_csv(imported, tmp_path, capsys):
    _run(capsys, "dataset", "--model", str(imported["model"]), "--data", str(imported["data"]),
         "--out", str(tmp_path / "d.json"))
    dataset = json.loads((tmp_path / "d.json").read_text())
    _, _, queries, labels = _queries(imported)
    favourable = imported["schema"].class_labels.index(dataset["favourable_label"])
    assert dataset["source"] == str(imported["data"])
    assert [tuple(int(v) for v in r) for r in dataset["rows"]] == [tuple(q) for q in queries]
    assert dataset["labels"] == [int(label == favourable) for label in labels]


def test_probabilistic_learned_from_the_csv_equals_its_network_file(imported, tmp_path, capsys):
    network = tmp_path / "network.json"
    _run(capsys, "probabilistic", "--model", str(imported["model"]), "--data", str(imported["data"]),
         "--write-network", str(network), "--save-json", str(tmp_path / "a.json"))
    learned = json.loads((tmp_path / "a.json").read_text())
    assert learned["method"] == "enumeration" and len(learned["groups"]) == 6
    assert sum(g["probability"] for g in learned["groups"]) == pytest.approx(1.0)
    # the group's frequencies are the rows' (Justicia's p_i are frequencies given the group)
    rows = imported["rows"]
    for g in learned["groups"]:
        share = sum(r["sex"] == g["group"]["sex"] and r["region"] == g["group"]["region"] for r in rows) / len(rows)
        assert g["probability"] == pytest.approx(share)
    _run(capsys, "probabilistic", "--model", str(imported["model"]), "--network", str(network),
         "--save-json", str(tmp_path / "b.json"))
    again = json.loads((tmp_path / "b.json").read_text())
    rates = [g["positive_probability"] for g in learned["groups"]]
    assert [g["positive_probability"] for g in again["groups"]] == rates
    assert learned["statistical_parity"] == pytest.approx(max(rates) - min(rates))
    assert learned["disparate_impact"] == pytest.approx(min(rates) / max(rates))


# -- refusals ---------------------------------------------------------------------------------------------


VERBS = {  # each verb's options besides --model and --data, kept small
    "spread": [], "persistence": ["--limit", "2", "--delta", "1"], "groups": ["--distribution", "0"],
    "explain": ["--samples", "100", "--time-limit", "5"], "kdisc": ["--time-limit", "5", "--samples", "10"],
    "global": ["--observed-range", "--time-limit", "5"], "probabilistic": [],
    "report": ["--customers", "1", "--samples", "100", "--time-limit", "5", "--draws", "100"],
    "dataset": [],
}


def _rewritten(imported, path: Path, change) -> Path:
    """The bank's CSV with `change(header, rows)` applied."""
    with imported["data"].open(newline="") as fh:
        table = list(csv.reader(fh))
    header, rows = change(table[0], table[1:])
    with path.open("w", newline="") as fh:
        csv.writer(fh).writerows([header, *rows])
    return path


@pytest.mark.parametrize("verb", sorted(VERBS))
def test_a_csv_without_a_column_is_refused_naming_it(imported, tmp_path, capsys, verb):
    def drop(column):
        def change(header, rows):
            j = header.index(column)
            return header[:j] + header[j + 1:], [r[:j] + r[j + 1:] for r in rows]
        return change

    without = _rewritten(imported, tmp_path / "no-income.csv", drop("income"))
    out = ["--out", str(tmp_path / "out")] if verb in ("report", "dataset") else []
    err = _refusal(capsys, verb, "--model", str(imported["model"]), "--data", str(without), *VERBS[verb], *out)
    assert "missing column(s) income" in err
    if verb in ("groups", "report", "dataset"):  # these need each row's true outcome
        no_label = _rewritten(imported, tmp_path / "no-label.csv", drop("default"))
        err = _refusal(capsys, verb, "--model", str(imported["model"]), "--data", str(no_label), *VERBS[verb], *out)
        assert "no column 'default'" in err and "true outcome" in err


@pytest.mark.parametrize("verb", ["spread", "groups", "probabilistic", "global"])
def test_a_row_outside_the_domain_is_refused_naming_line_and_value(imported, tmp_path, capsys, verb):
    def older(header, rows):
        rows[4][header.index("age")] = "95"
        return header, rows

    bad = _rewritten(imported, tmp_path / "old.csv", older)
    err = _refusal(capsys, verb, "--model", str(imported["model"]), "--data", str(bad), *VERBS[verb])
    assert ":6: age = 95 years is outside the model's domain [18, 80] years" in err


@pytest.mark.parametrize("verb", ["spread", "persistence", "groups", "explain", "report", "dataset", "probabilistic"])
def test_an_imported_model_without_data_is_told_to_pass_it(imported, tmp_path, capsys, verb):
    out = ["--out", str(tmp_path / "out")] if verb in ("report", "dataset") else []
    err = _refusal(capsys, verb, "--model", str(imported["model"]), *VERBS[verb], *out)
    assert "pass its rows with --data FILE.csv" in err and "age, income, purpose" in err


def test_a_network_file_the_model_cannot_read_is_refused(imported, tmp_path, capsys):
    network = tmp_path / "network.json"
    _run(capsys, "probabilistic", "--model", str(imported["model"]), "--data", str(imported["data"]),
         "--write-network", str(network))
    good = json.loads(network.read_text())

    def written(change) -> Path:
        data = json.loads(json.dumps(good))
        change(data)
        path = tmp_path / "bad.json"
        path.write_text(json.dumps(data))
        return path

    def age_state(data, value):
        age = next(v for v in data["variables"] if v["name"] == "age")
        age["states"][0] = value

    cases = [
        (lambda d: d["variables"][0].update(probabilities=[0.5, 0.6]), "summing to 1"),
        (lambda d: age_state(d, "95"), "variable 'age', state '95': age = 95 years is outside the model's domain"),
        (lambda d: d["variables"].reverse(), "must be variables listed before it"),
        (lambda d: d["variables"].pop(), "no variable for the model's attribute"),
        (lambda d: d.update(format="something else"), "not a Bayesian network file"),
    ]
    for change, words in cases:
        err = _refusal(capsys, "probabilistic", "--model", str(imported["model"]), "--network", str(written(change)))
        assert words in err, (words, err)
    err = _refusal(capsys, "probabilistic", "--model", str(imported["model"]), "--network", str(network),
                   "--data", str(imported["data"]))
    assert "not both" in err


# -- one record format for prove and verify ---------------------------------------------------------------


def test_prove_and_verify_read_one_record_format(imported, tmp_path, capsys):
    schema = imported["schema"]
    record = {a: imported["rows"][0][a] for a in schema.attributes}
    (tmp_path / "record.json").write_text(json.dumps(record))
    bundle = tmp_path / "bundle.json"
    assert fairproof(["prove", "--model", str(imported["model"]), "--record", str(tmp_path / "record.json"),
                      "--out", str(bundle), "--single-party-setup"]) == 0
    capsys.readouterr()
    card = str(imported["model"] / "card.json")
    assert verify([str(bundle), "--card", card, "--record", str(tmp_path / "record.json")]) == 0
    assert "about your record" in capsys.readouterr().out

    # The same customer as a list of model inputs: refused by both with the same sentence.
    workspace = ModelWorkspace.open(imported["model"])
    inputs = list(workspace.artifact.preprocessor.encode(record))
    (tmp_path / "inputs.json").write_text(json.dumps(inputs))
    assert fairproof(["prove", "--model", str(imported["model"]), "--record", str(tmp_path / "inputs.json"),
                      "--out", str(tmp_path / "other.json"), "--single-party-setup"]) == 1
    prover_says = capsys.readouterr().err
    assert verify([str(bundle), "--card", card, "--record", str(tmp_path / "inputs.json")]) == 2
    verifier_says = capsys.readouterr().err
    for said in (prover_says, verifier_says):
        assert f"record {tmp_path / 'inputs.json'}: {NOT_A_RECORD}" in said and "Traceback" not in said
    assert not (tmp_path / "other.json").exists()
