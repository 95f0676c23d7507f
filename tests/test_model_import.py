"""Importing a bank's own network under its own schema, checked against its own decisions.

On a synthetic credit book the project does not ship (two sensitive
attributes, one with three values; a one-hot and an ordinal attribute; the
bank's own column order), each supported format is imported with `--check`
against the bank's recorded decisions (the format read from the file, or
given with --format), then certified, proved and verified as a customer does.
Each acceptance has its refusal: the same network under a schema with two
attributes exchanged, a near tie not accepted, classes in another order, an
unsupported operator, no check asked for, a one-logit network under a schema
of three classes. (Banks' whole pipelines, read with their facts instead of a
hand-written schema: tests/test_bank_pipelines.py.)
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import synthetic_credit as book
from fairness.errors import DataError, ModelError
from prover_service.cli import main as fairproof
from verifier_client.cli import main as verify

torch = pytest.importorskip("torch")

ROWS = 240


@pytest.fixture(scope="module")
def bank(tmp_path_factory):
    """The bank's book, its schema file, and its networks in every format, with each one's scored CSV."""
    root = tmp_path_factory.mktemp("bank")
    schema = book.schema()
    rows = book.raw_rows(ROWS, seed=1)
    X = np.array([schema.encode({a: r[a] for a in schema.attributes}) for r in rows])
    y = np.array([schema.label.values.index(r["default"]) for r in rows])
    (root / "schema.json").write_text(json.dumps(book.SCHEMA))
    swapped = [dict(f) for f in book.SCHEMA["features"]]
    swapped[0], swapped[4] = swapped[4], swapped[0]  # age and duration exchanged: both numeric, plausible ranges
    (root / "swapped.json").write_text(json.dumps({**book.SCHEMA, "features": swapped}))

    net = book.train_bank_network(X, y, hidden=3)
    with torch.no_grad():
        torch_decisions = net(torch.tensor(X, dtype=torch.float32)).argmax(1).numpy()
    torch.save(net.state_dict(), root / "net.pt")
    torch.jit.save(torch.jit.script(net), str(root / "net.ts"))
    torch.onnx.export(net, (torch.zeros(1, X.shape[1]),), str(root / "net.onnx"), dynamo=False)

    from sklearn.neural_network import MLPClassifier
    import joblib
    from skl2onnx import to_onnx

    clf = MLPClassifier(hidden_layer_sizes=(3,), max_iter=2000, random_state=0)
    clf.fit(X, np.array(schema.label.values)[y])  # the bank trains on its raw label values
    joblib.dump(clf, root / "clf.joblib")
    (root / "clf.onnx").write_bytes(to_onnx(clf, X[:1].astype(np.float32), options={"zipmap": False}).SerializeToString())
    sk_decisions = np.searchsorted(clf.classes_, clf.predict(X))

    def scored(name, decisions):
        return book.write_csv(root / f"{name}.csv", rows, [schema.label.values[d] for d in decisions])

    files = {"torch": ("net.pt", scored("torch", torch_decisions)),
             "torchscript": ("net.ts", root / "torch.csv"),
             "onnx": ("net.onnx", root / "torch.csv"),
             "sklearn": ("clf.joblib", scored("sklearn", sk_decisions)),
             "sklearn-onnx": ("clf.onnx", root / "sklearn.csv")}
    return {"root": root, "files": files, "rows": rows}


def _import(bank, kind, out, *extra, schema="schema.json"):
    """Import with the format read from the file (the tests below also give --format as an override)."""
    network, data = bank["files"][kind]
    return fairproof(["import-model", str(bank["root"] / network),
                      "--schema", str(bank["root"] / schema), "--out", str(out), *(extra or ("--check", str(data)))])


def _refusal(capsys, *args) -> str:
    """Run `fairproof` expecting it to refuse; its error message."""
    capsys.readouterr()
    assert fairproof(list(args)) == 1
    return capsys.readouterr().err


FORMATS = ["torch", "torchscript", "onnx", "sklearn", "sklearn-onnx"]


@pytest.mark.parametrize("kind", FORMATS)
def test_import_checks_every_row_then_certify_prove_and_verify(bank, kind, tmp_path, capsys):
    out = tmp_path / "model"
    assert _import(bank, kind, out) == 0
    said = capsys.readouterr().out
    assert f"decisions checked on {ROWS} rows" in said and f"{ROWS} agree" in said

    assert fairproof(["commit", "--model", str(out)]) == 0
    card = json.loads((out / "card.json").read_text())
    assert card["feature_schema"]["name"] == "synthetic-credit" and card["features"] == []
    assert f"on {ROWS} rows" in card["import_check"] and f"{ROWS} agree" in card["import_check"]

    record = {a: bank["rows"][0][a] for a in book.schema().attributes}
    (tmp_path / "record.json").write_text(json.dumps(record))
    capsys.readouterr()
    assert fairproof(["certify", "--model", str(out), "--index", "0"]) == 0
    certified = capsys.readouterr().out
    assert fairproof(["prove", "--model", str(out), "--record", str(tmp_path / "record.json"),
                      "--out", str(tmp_path / "bundle.json"), "--single-party-setup"]) == 0
    capsys.readouterr()
    assert verify([str(tmp_path / "bundle.json"), "--card", str(out / "card.json"),
                   "--record", str(tmp_path / "record.json")]) == 0
    verdict = capsys.readouterr().out
    assert "VALID certificate" in verdict and "about your record" in verdict
    bundle = json.loads((tmp_path / "bundle.json").read_text())
    # Row 0 of the CSV is this record: the proved claim is the plaintext one.
    assert f"eps: {bundle['eps']['numerator'] / 2 ** 16:.6f}" in certified

    # Rejection twin: the customer's record with another region is not the certified query.
    other = dict(record, region="north" if record["region"] != "north" else "south")
    (tmp_path / "other.json").write_text(json.dumps(other))
    assert verify([str(tmp_path / "bundle.json"), "--card", str(out / "card.json"),
                   "--record", str(tmp_path / "other.json")]) != 0
    # A record the model cannot take is explained in the customer's own units.
    (tmp_path / "bad.json").write_text(json.dumps(dict(record, age=823)))
    capsys.readouterr()
    assert verify([str(tmp_path / "bundle.json"), "--card", str(out / "card.json"),
                   "--record", str(tmp_path / "bad.json")]) != 0
    assert "age = 823 years is outside the model's domain [18, 80] years" in capsys.readouterr().err


@pytest.mark.parametrize("kind", ["torch", "onnx", "sklearn"])
def test_two_attributes_exchanged_in_the_schema_are_refused_with_the_rows_that_disagree(bank, kind, tmp_path, capsys):
    capsys.readouterr()
    assert _import(bank, kind, tmp_path / "model", schema="swapped.json") == 1
    message = capsys.readouterr().err
    assert "import refused" in message and "line " in message and "recorded" in message
    assert "'duration' and 'age' exchanged" in message or "'age' and 'duration' exchanged" in message
    assert not (tmp_path / "model").exists()  # nothing written


def test_a_near_tie_is_a_warning_accepted_only_when_asked(bank, tmp_path, capsys):
    schema = book.schema()
    from fairness.model import import_torch

    model = import_torch(bank["root"] / "net.pt")
    X = np.array([schema.encode({a: r[a] for a in schema.attributes}) for r in bank["rows"]])
    logits = np.sort(model.forward(X), axis=1)
    closest = int(np.argmin(logits[:, -1] - logits[:, -2]))
    margin = float(logits[closest, -1] - logits[closest, -2])
    decisions = list(model.predict(X))
    decisions[closest] = 1 - decisions[closest]  # the bank's float32 pipeline rounded this row the other way
    scored = book.write_csv(tmp_path / "scored.csv", bank["rows"], [schema.label.values[d] for d in decisions])
    args = ["--check", str(scored), "--tie-tolerance", repr(margin * 1.01)]
    capsys.readouterr()
    assert _import(bank, "torch", tmp_path / "refused", *args) == 1
    err = capsys.readouterr().err
    assert "warning: near tie" in err and "pass --accept-near-ties" in err
    assert _import(bank, "torch", tmp_path / "model", *args, "--accept-near-ties") == 0
    assert fairproof(["commit", "--model", str(tmp_path / "model")]) == 0
    card = json.loads((tmp_path / "model" / "card.json").read_text())
    assert "1 differ only at a near tie" in card["import_check"] and "accepted" in card["import_check"]
    # The same row with a margin above the tolerance is a refusal, not a warning.
    assert _import(bank, "torch", tmp_path / "strict", "--check", str(scored), "--tie-tolerance", repr(margin * 0.5)) == 1
    assert f"import refused: on 1 of {ROWS} rows" in capsys.readouterr().err


def test_no_check_must_be_asked_for_and_the_card_says_so(bank, tmp_path):
    network = str(bank["root"] / "net.pt")
    schema = str(bank["root"] / "schema.json")
    with pytest.raises(SystemExit):  # neither --check nor --no-check
        fairproof(["import-model", network, "--format", "torch", "--schema", schema, "--out", str(tmp_path / "m")])
    assert fairproof(["import-model", network, "--format", "torch", "--schema", schema, "--no-check",
                      "--out", str(tmp_path / "m")]) == 0
    assert fairproof(["commit", "--model", str(tmp_path / "m")]) == 0
    card = json.loads((tmp_path / "m" / "card.json").read_text())
    assert card["import_check"].startswith("imported without a decision check")


def test_a_one_logit_network_under_the_schema_is_imported_as_two_logits(bank, tmp_path, capsys):
    """A logistic network (one output logit) trained on the schema's encoding: class 1 exactly when z > 0."""
    schema = book.schema()
    rows = bank["rows"]
    X = np.array([schema.encode({a: r[a] for a in schema.attributes}) for r in rows])
    y = np.array([schema.label.values.index(r["default"]) for r in rows], dtype=np.float32)
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(X.shape[1], 3), torch.nn.ReLU(), torch.nn.Linear(3, 1))
    opt = torch.optim.Adam(net.parameters(), lr=0.05)
    for _ in range(200):
        opt.zero_grad()
        torch.nn.functional.binary_cross_entropy_with_logits(net(torch.tensor(X, dtype=torch.float32))[:, 0],
                                                             torch.tensor(y)).backward()
        opt.step()
    with torch.no_grad():
        decisions = (net(torch.tensor(X, dtype=torch.float32))[:, 0] > 0).numpy().astype(int)
    torch.save(net.state_dict(), tmp_path / "logistic.pt")
    scored = book.write_csv(tmp_path / "logistic.csv", rows, [schema.label.values[d] for d in decisions])
    capsys.readouterr()
    assert fairproof(["import-model", str(tmp_path / "logistic.pt"), "--format", "torch", "--schema",
                      str(bank["root"] / "schema.json"), "--check", str(scored), "--out", str(tmp_path / "m")]) == 0
    said = capsys.readouterr().out
    assert f"{ROWS} agree" in said and "one output logit z rewritten as the two logits (0, z)" in said
    # Rejection twin: a schema with three classes does not fit a one-logit network.
    three = {**book.SCHEMA, "label": {"column": "default", "values": ["no", "yes", "maybe"]}}
    (tmp_path / "three.json").write_text(json.dumps(three))
    err = _refusal(capsys, "import-model", str(tmp_path / "logistic.pt"), "--schema", str(tmp_path / "three.json"),
                   "--no-check", "--out", str(tmp_path / "t"))
    assert "has 2 outputs but schema 'synthetic-credit' has 3 classes" in err


def test_the_schema_route_takes_no_facts_options(bank, tmp_path, capsys):
    err = _refusal(capsys, "import-model", str(bank["root"] / "net.pt"), "--schema", str(bank["root"] / "schema.json"),
                   "--sensitive", "sex", "--no-check", "--out", str(tmp_path / "m"))
    assert "--sensitive complete the bank's facts; with --schema the schema says it all" in err


def test_the_favourable_class_named_at_import_is_the_lenses_default(bank, tmp_path, capsys):
    """--favourable names a raw class value of the schema's label; commit's spread lens takes it."""
    network, schema = str(bank["root"] / "net.pt"), str(bank["root"] / "schema.json")
    assert fairproof(["import-model", network, "--schema", schema, "--favourable", "no", "--no-check",
                      "--out", str(tmp_path / "m")]) == 0
    assert fairproof(["commit", "--model", str(tmp_path / "m")]) == 0
    assert json.loads((tmp_path / "m" / "card.json").read_text())["spread"]["favourable_class"] == 0  # "repays"
    err = _refusal(capsys, "import-model", network, "--schema", schema, "--favourable", "maybe", "--no-check",
                   "--out", str(tmp_path / "x"))
    assert "the favourable class 'maybe' is not one of the model's classes no, yes" in err


def test_check_needs_the_banks_own_decisions(bank, tmp_path, capsys):
    plain = book.write_csv(tmp_path / "plain.csv", bank["rows"])
    capsys.readouterr()
    assert _import(bank, "torch", tmp_path / "m", "--check", str(plain)) == 1
    assert "the bank's own decision of every row in a column 'prediction'" in capsys.readouterr().err


def test_classes_in_another_order_than_the_schema_are_refused(bank, tmp_path, capsys):
    reordered = {**book.SCHEMA, "label": {"column": "default", "values": ["yes", "no"]}}
    (tmp_path / "schema.json").write_text(json.dumps(reordered))
    err = _refusal(capsys, "import-model", str(bank["root"] / "clf.joblib"), "--format", "sklearn",
                   "--schema", str(tmp_path / "schema.json"), "--no-check", "--out", str(tmp_path / "m"))
    assert "classes are no, yes in that order" in err


def test_a_network_the_schema_does_not_fit_is_refused(bank, tmp_path, capsys):
    narrow = {**book.SCHEMA, "features": book.SCHEMA["features"][1:]}
    (tmp_path / "schema.json").write_text(json.dumps(narrow))
    err = _refusal(capsys, "import-model", str(bank["root"] / "net.pt"), "--format", "torch",
                   "--schema", str(tmp_path / "schema.json"), "--no-check", "--out", str(tmp_path / "m"))
    assert "takes 9 inputs but schema 'synthetic-credit' describes 8" in err


def test_an_unsupported_onnx_operator_is_named(tmp_path):
    net = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.Tanh(), torch.nn.Linear(3, 2))
    torch.onnx.export(net, (torch.zeros(1, 4),), str(tmp_path / "tanh.onnx"), dynamo=False)
    from fairness.model import import_onnx

    with pytest.raises(ModelError, match="unsupported ONNX operator Tanh"):
        import_onnx(tmp_path / "tanh.onnx")


def test_a_sklearn_classifier_with_another_activation_is_refused(tmp_path):
    from sklearn.neural_network import MLPClassifier
    import joblib

    from fairness.model import import_sklearn

    X = np.random.default_rng(0).normal(size=(40, 3))
    clf = MLPClassifier(hidden_layer_sizes=(2,), activation="tanh", max_iter=50).fit(X, X[:, 0] > 0)
    joblib.dump(clf, tmp_path / "tanh.joblib")
    with pytest.raises(ModelError, match="only 'relu' can be certified"):
        import_sklearn(tmp_path / "tanh.joblib")


def test_torchscript_of_another_architecture_is_refused(tmp_path):
    from fairness.model import import_torchscript

    net = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.Sigmoid(), torch.nn.Linear(3, 2))
    torch.jit.save(torch.jit.script(net), str(tmp_path / "net.ts"))
    with pytest.raises(ModelError, match="unsupported module Sigmoid at position 1"):
        import_torchscript(tmp_path / "net.ts")


def test_imported_model_index_reads_rows_of_the_given_csv(bank, tmp_path, capsys):
    out = tmp_path / "model"
    assert _import(bank, "torch", out) == 0
    assert "out of range" in _refusal(capsys, "certify", "--model", str(out), "--index", str(ROWS))
    # Another file of the bank's customers, given explicitly.
    other = book.write_csv(tmp_path / "other.csv", book.raw_rows(5, seed=9))
    capsys.readouterr()
    assert fairproof(["certify", "--model", str(out), "--index", "4", "--data", str(other)]) == 0
    assert "decision:" in capsys.readouterr().out
    assert "out of range" in _refusal(capsys, "certify", "--model", str(out), "--index", "5", "--data", str(other))


def test_the_api_names_the_attribute_of_a_bad_record_in_raw_units(bank, tmp_path):
    from fastapi.testclient import TestClient

    from prover_service.service.app import create_app
    from prover_service.service.settings import Settings

    models = tmp_path / "models"
    assert _import(bank, "torch", models / "synthetic") == 0
    assert fairproof(["commit", "--model", str(models / "synthetic")]) == 0
    admin = {"X-API-Key": "schema-test-admin-key"}
    settings = Settings(models_dir=models, admin_api_key=admin["X-API-Key"], workers=0)
    good = {a: bank["rows"][0][a] for a in book.schema().attributes}
    with TestClient(create_app(settings)) as client:
        assert client.post("/v1/admin/models", json={"directory": "synthetic"}, headers=admin).status_code == 201
        url = "/v1/models/synthetic/decisions"
        for field, value, words in [("age", 823, "age = 823 years is outside the model's domain [18, 80] years"),
                                    ("sex", "X", "sex = 'X' is not one of F, M"),
                                    ("purpose", "boat", "purpose = 'boat' is not one of car, house, education"),
                                    ("income", "abc", "income = 'abc' is not a number")]:
            r = client.post(url, json={"record": {**good, field: value}})
            assert r.status_code == 422 and words in r.json()["detail"], r.text
        accepted = client.post(url, json={"record": good})
        assert accepted.status_code in (200, 202), accepted.text
        card = client.get("/v1/models/synthetic/card").json()
        assert card["feature_schema"]["name"] == "synthetic-credit"


def test_a_compas_model_with_a_binary_race_attribute_is_trained_imported_and_certified(tmp_path, capsys):
    """African-American and Caucasian rows only, race and sex sensitive: four slices per customer."""
    import csv

    from fairness.datasets import resolve_data_dir, verified_bytes
    from fairness.schema import FeatureSchema
    from fairness.schema_csv import read_csv

    try:
        data_dir = resolve_data_dir()
        verified_bytes(data_dir, "compas/compas-scores-two-years.csv")
    except DataError as exc:  # pragma: no cover - depends on the machine
        pytest.skip(f"COMPAS not available: {exc}")
    schema_path = Path(__file__).resolve().parents[1] / "docs" / "schemas" / "compas_binary_race.json"
    schema = FeatureSchema.load(schema_path)
    table = read_csv(schema, data_dir / "compas" / "compas-scores-two-years.csv", drop_outside_sensitive_domain=True)
    assert table.dropped > 0 and len(table.X) > 5000  # the other four race values are left out, and counted

    net = book.train_bank_network(table.X, table.y, hidden=4, epochs=150)
    with torch.no_grad():
        decisions = net(torch.tensor(table.X, dtype=torch.float32)).argmax(1).numpy()
    assert (decisions == table.y).mean() > 0.6
    torch.save(net.state_dict(), tmp_path / "compas.pt")
    scored = tmp_path / "compas_scored.csv"  # the bank's export of its scored rows
    with scored.open("w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow([*schema.attributes, schema.label.column, "prediction"])
        for record, label, decision in zip(table.records, table.y, decisions):
            w.writerow([record[a] for a in schema.attributes] + [schema.label.values[label], schema.label.values[decision]])

    out = tmp_path / "model"
    assert fairproof(["import-model", str(tmp_path / "compas.pt"), "--format", "torch", "--schema", str(schema_path),
                      "--check", str(scored), "--out", str(out)]) == 0
    assert f"{len(table.X)} agree" in capsys.readouterr().out
    assert fairproof(["commit", "--model", str(out)]) == 0
    card = json.loads((out / "card.json").read_text())
    assert [(s["name"], s["labels"]) for s in card["sensitive"]] == [
        ("sex", ["female", "male"]), ("race", ["African-American", "Caucasian"])]
    for index in range(3):
        capsys.readouterr()
        assert fairproof(["certify", "--model", str(out), "--index", str(index)]) == 0
        said = capsys.readouterr().out
        assert "decision:" in said and "eps:" in said
        assert "slice sex+race=" in said or "counterfactual flip: setting sex=" in said
