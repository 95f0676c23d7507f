"""The feature schema: validation, one record encoder for bank and customer, errors in the user's terms,
and a card that cannot say one thing in its schema and prove another."""
from __future__ import annotations

import json
import math

import numpy as np
import pytest

import synthetic_credit as book
from commitments import record as card_record
from fairness.errors import DataError
from fairness.schema import (FeatureSchema, InvalidValueError, MissingFieldError, NonFiniteValueError, OutOfBoxError,
                             RecordError, UnknownCategoryError, UnknownFieldError)
from fairness.schema_csv import read_csv

GOOD = {"age": 30, "income": "45.5", "purpose": "car", "housing": "own", "duration": 12, "sex": "F", "region": "east"}


@pytest.fixture(scope="module")
def schema() -> FeatureSchema:
    return book.schema()


# ------------------------------------------------------------------ encoding

def test_inputs_follow_the_schema_order_with_one_hot_expanded(schema):
    assert schema.feature_names == ("age", "income", "purpose=car", "purpose=house", "purpose=education", "housing",
                                    "duration", "sex", "region")
    assert schema.attributes == ("age", "income", "purpose", "housing", "duration", "sex", "region")
    assert schema.encode(GOOD) == ((30 - 45.0) / 14.0, (45.5 - 60.0) / 30.0, 1.0, 0.0, 0.0, (1 - 1.0) / 0.8,
                                   (12 - 24.0) / 12.0, 0.0, 2.0)
    assert [c for _, c in schema.sensitive_columns()] == [7, 8]


def test_category_values_are_read_as_the_bank_reads_them():
    s = FeatureSchema.model_validate({**book.SCHEMA, "features": [
        {"name": "grade", "kind": "categorical", "categories": ["1", "2", "3"]},
        {"name": "sex", "kind": "sensitive", "values": ["0", "1"]}]})
    assert s.encode({"grade": 2, "sex": "1"}) == s.encode({"grade": "2", "sex": 1.0}) == s.encode({"grade": 2.0, "sex": 1})


# Every feature kind, every way a raw value can be wrong: the error type, the attribute, the words.
BAD_VALUES = [
    ("age", 823, OutOfBoxError, "age = 823 years is outside the model's domain [18, 80] years"),
    ("age", 17.5, OutOfBoxError, "age = 17.5 years is outside the model's domain [18, 80] years"),
    ("income", "abc", InvalidValueError, "income = 'abc' is not a number"),
    ("income", "", MissingFieldError, "income: value is empty"),
    ("income", None, MissingFieldError, "income: value is missing"),
    ("income", True, InvalidValueError, "income = True: a boolean is not a number"),
    ("income", float("nan"), NonFiniteValueError, "income = nan is not finite"),
    ("income", 10 ** 400, NonFiniteValueError, "too large to be a number"),
    ("duration", "inf", NonFiniteValueError, "duration = 'inf' is not finite"),
    ("purpose", "boat", UnknownCategoryError, "purpose = 'boat' is not one of car, house, education"),
    ("purpose", None, MissingFieldError, "purpose: value is missing"),
    ("housing", 3, UnknownCategoryError, "housing = 3 is not one of rent, own, free"),
    ("housing", [1], InvalidValueError, "housing = [1]: a list is not a category value"),
    ("sex", "X", OutOfBoxError, "sex = 'X' is not one of F, M"),
    ("sex", False, InvalidValueError, "sex = False: a boolean is not a category value"),
    ("region", "west", OutOfBoxError, "region = 'west' is not one of north, south, east"),
    ("region", float("inf"), NonFiniteValueError, "region = inf is not finite"),
]


@pytest.mark.parametrize("field,value,error,words", BAD_VALUES, ids=[f"{f}={v!r}" for f, v, *_ in BAD_VALUES])
def test_a_bad_value_of_every_kind_is_named_in_raw_units(schema, field, value, error, words):
    with pytest.raises(error) as raised:
        schema.encode({**GOOD, field: value})
    assert words in str(raised.value) and raised.value.field == field
    assert isinstance(raised.value, RecordError) and isinstance(raised.value, DataError)


def test_missing_and_unknown_fields_are_named(schema):
    record = dict(GOOD)
    del record["region"]
    with pytest.raises(MissingFieldError, match="missing attribute\\(s\\): region"):
        schema.encode(record)
    with pytest.raises(UnknownFieldError, match="unknown field\\(s\\): colour"):
        schema.encode({**GOOD, "colour": "red"})
    with pytest.raises(InvalidValueError, match="must map attribute names"):
        schema.encode([1, 2, 3])


def test_a_record_on_the_domain_edge_lies_in_the_quantised_box(schema):
    lower, upper = schema.quantised_box(16)
    for edge in ({**GOOD, "age": 18, "income": 0, "duration": 3}, {**GOOD, "age": 80, "income": 200, "duration": 72}):
        q = [card_record._round_half_up(v, 16) for v in schema.encode(edge)]
        assert all(lo <= v <= hi for v, lo, hi in zip(q, lower, upper))


def test_describe_shows_a_query_in_the_customers_terms(schema):
    q = [card_record._round_half_up(v, 16) for v in schema.encode(GOOD)]
    described = dict(schema.describe(q, 16))
    assert described["purpose"] == "car" and described["housing"] == "own"
    assert described["sex"] == "female" and described["region"] == "east"
    assert math.isclose(float(described["age"].split()[0]), 30, abs_tol=1e-3) and described["age"].endswith("years")


# ------------------------------------------------------------------ validation

@pytest.mark.parametrize("change,words", [
    (lambda s: s["features"][0].update(std=0), "std must be positive"),
    (lambda s: s["features"][0].update(min=90), "lies above max"),
    (lambda s: s["features"][2].update(codes=[1, 2, 3]), "one-hot encoding takes no codes"),
    (lambda s: s["features"][3].update(codes=[0, 1]), "2 codes for 3 categories"),
    (lambda s: s["features"][5].update(values=["F", "F"]), "values repeated"),
    (lambda s: s["features"][5].update(labels=["female"]), "1 labels for 2 values"),
    (lambda s: s["features"][6].update(codes=[0, 1, 1]), "codes must be distinct"),
    (lambda s: s["features"][6].update(codes=[0, 1, 1.5]), "codes.2"),
    (lambda s: s["features"][6].update(codes=[0, 1, "2"]), "codes.2"),
    (lambda s: s["features"][6].update(codes=[0, True, 2]), "codes.1"),
    (lambda s: s["features"][0].update(mean="45"), "features.0.numeric.mean"),
    (lambda s: s["features"][0].update(max=True), "features.0.numeric.max"),
    (lambda s: s["features"][0].update(std=10 ** 400), "too large for a double"),
    (lambda s: s["features"][5].update(labels=["female", "female"]), "labels repeated"),
    (lambda s: s["label"].update(labels=["repays", "repays"]), "labels repeated"),
    (lambda s: s["features"][0].update(max=float("inf")), "must be finite"),
    (lambda s: s["features"].append(dict(s["features"][0])), "attribute(s) named twice: age"),
    (lambda s: s.update(features=s["features"][:5]), "at least one sensitive attribute"),
    (lambda s: s["label"].update(column="age"), "is also a feature"),
    (lambda s: s["features"][0].update(kind="text"), "features.0"),
    (lambda s: s["features"][0].update(colour="red"), "Extra inputs are not permitted"),
])
def test_a_defective_schema_is_refused_with_its_place_named(tmp_path, change, words):
    data = json.loads(json.dumps(book.SCHEMA))
    change(data)
    (tmp_path / "s.json").write_text(json.dumps(data))
    with pytest.raises(DataError) as raised:
        FeatureSchema.load(tmp_path / "s.json")
    assert "invalid feature schema" in str(raised.value) and words in str(raised.value)


def test_a_schema_reads_from_yaml_and_refuses_unreadable_files(tmp_path):
    yaml = pytest.importorskip("yaml")
    (tmp_path / "s.yaml").write_text(yaml.safe_dump(book.SCHEMA))
    assert FeatureSchema.load(tmp_path / "s.yaml") == book.schema()
    (tmp_path / "bad.json").write_text("{not json")
    with pytest.raises(DataError, match="not valid json"):
        FeatureSchema.load(tmp_path / "bad.json")
    with pytest.raises(DataError, match="does not exist"):
        FeatureSchema.load(tmp_path / "none.json")


# ------------------------------------------------------------------ CSV

def test_csv_rows_are_read_by_column_name_and_defects_name_their_line(schema, tmp_path):
    rows = book.raw_rows(5)
    path = book.write_csv(tmp_path / "b.csv", rows)
    table = read_csv(schema, path)
    assert table.lines == (2, 3, 4, 5, 6) and table.X.shape == (5, 9)
    assert np.array_equal(table.X[0], schema.encode({a: rows[0][a] for a in schema.attributes}))
    assert list(table.y) == [schema.label.values.index(r["default"]) for r in rows]
    rows[3]["age"] = "823"
    with pytest.raises(DataError, match=":5: age = 823 years is outside the model's domain"):
        read_csv(schema, book.write_csv(tmp_path / "c.csv", rows))
    rows[3]["age"] = "40"
    rows[1]["region"] = "west"
    table = read_csv(schema, book.write_csv(tmp_path / "d.csv", rows), drop_outside_sensitive_domain=True)
    assert table.dropped == 1 and table.lines == (2, 4, 5, 6)
    with pytest.raises(DataError, match="missing column\\(s\\) purpose, housing, duration, sex, region"):
        read_csv(schema, book.write_csv(tmp_path / "e.csv", rows, columns=["age", "income"]))


# ------------------------------------------------------------------ the card binds the schema

@pytest.fixture(scope="module")
def card(tmp_path_factory):
    """A card committed from an imported model (no keys needed: the card's own checks are under test)."""
    torch = pytest.importorskip("torch")
    from fairness.model import FloatMLP, artifact_from_schema, save_artifact
    from prover_service.publishing import commit_model
    from prover_service.workspace import ModelWorkspace

    rng = np.random.default_rng(0)
    model = FloatMLP([rng.normal(size=(3, 9)), rng.normal(size=(2, 3))], [rng.normal(size=3), rng.normal(size=2)])
    root = tmp_path_factory.mktemp("schema-card") / "model"
    save_artifact(artifact_from_schema(model, book.schema(), training={"import_check": "none"}), root)
    del torch
    card = commit_model(ModelWorkspace.open(root), model_id="synthetic")
    object.__setattr__(card, "model_root", root)  # for the bank-side comparison; not part of the card
    return card


def test_the_verifier_encodes_a_record_exactly_as_the_bank(card):
    from offline_precompute.certify import load_fixed_point, query_from_record

    artifact, model = load_fixed_point(card.model_root, card.scale_bits)
    for record in (GOOD, {**GOOD, "age": 80, "income": "0.1", "purpose": "education", "sex": "M", "region": "north"}):
        assert card_record.encode_record(card, record) == tuple(query_from_record(artifact, model, record))


@pytest.mark.parametrize("field,value,error", [(f, v, e) for f, v, e, _ in BAD_VALUES])
def test_the_verifiers_record_errors_are_the_banks(card, field, value, error):
    with pytest.raises(error) as raised:
        card_record.encode_record(card, {**GOOD, field: value})
    assert raised.value.field == field


def _forged(card, **changes):
    from commitments.card import ModelCard

    data = json.loads(card.canonical_json())
    for path, value in changes.items():
        target = data
        keys = path.split("__")
        for k in keys[:-1]:
            target = target[int(k)] if isinstance(target, list) else target[k]
        target[int(keys[-1]) if isinstance(target, list) else keys[-1]] = value
    return ModelCard.model_validate(data)


@pytest.mark.parametrize("changes,words", [
    # The schema promises a narrower domain than the box the proof covers (or a wider one).
    ({"feature_schema__features__0__max": 70.0}, "domain box differs"),
    ({"box_upper__0": 10 ** 6}, "domain box differs"),
    # Sensitive labels swapped in the schema only: the certificate would name the wrong group.
    ({"feature_schema__features__5__labels": ["male", "female"]}, "sensitive attributes differ"),
    ({"sensitive__0__labels": ["male", "female"]}, "sensitive attributes differ"),
    # A sensitive code in the schema that is not the proof's domain value.
    ({"feature_schema__features__6__codes": [0, 1, 3]}, "differ"),
    # Classes relabelled in the schema only.
    ({"feature_schema__label__labels": ["defaults", "repays"]}, "classes differ"),
    # A different input order in the schema than the statement's feature names.
    ({"feature_names__0": "income", "feature_names__1": "age"}, "model inputs differ"),
])
def test_a_card_whose_schema_disagrees_with_its_statement_is_refused(card, changes, words):
    from pydantic import ValidationError

    with pytest.raises(ValidationError, match=words):
        _forged(card, **changes)


def test_a_card_cannot_publish_both_encodings_and_a_schema(card):
    from pydantic import ValidationError

    encodings = [{"name": n, "kind": "numeric"} for n in card.feature_names]
    with pytest.raises(ValidationError, match="either as feature encodings or as a schema"):
        _forged(card, features=encodings)


def test_a_card_without_a_schema_keeps_its_digest_form(card):
    plain = json.loads(card.canonical_json())
    assert "feature_schema" in plain and "import_check" in plain
    from commitments.card import ModelCard

    stripped = ModelCard.model_validate({**card.model_dump(mode="json"), "feature_schema": None, "import_check": None,
                                         "features": [{"name": n, "kind": "numeric"} for n in card.feature_names]})
    assert "feature_schema" not in json.loads(stripped.canonical_json())
    assert "import_check" not in json.loads(stripped.canonical_json())


def test_a_shipped_models_record_outside_the_box_is_named_in_raw_units():
    """The shipped datasets' models speak the same language: the attribute and its raw domain, no column index."""
    from fairness.datasets import load_dataset
    from fairness.fixed_point import to_fixed_point
    from fairness.model import FloatMLP, artifact_from_dataset
    from offline_precompute.certify import query_from_record

    try:
        dataset = load_dataset("german")
    except DataError as exc:  # pragma: no cover - depends on the machine
        pytest.skip(f"German Credit not available: {exc}")
    rng = np.random.default_rng(1)
    model = FloatMLP([rng.normal(size=(3, 20)), rng.normal(size=(2, 3))], [np.zeros(3), np.zeros(2)])
    artifact = artifact_from_dataset(model, dataset)
    fixed = to_fixed_point(artifact, 16)
    record = dict(dataset.records_test[0])
    assert query_from_record(artifact, fixed, record)  # in the box
    with pytest.raises(DataError, match=r"^duration = 823 is outside the model's domain \[-?[0-9.]+, [0-9.]+\]$"):
        query_from_record(artifact, fixed, {**record, "duration": 823})
    with pytest.raises(DataError, match="feature 'foreign_worker': unknown category 'A209'"):
        query_from_record(artifact, fixed, {**record, "foreign_worker": "A209"})


@pytest.mark.parametrize("name", ["german", "credit", "compas"])
def test_a_shipped_datasets_schema_encodes_every_record_as_its_loader(name, tmp_path, capsys):
    """Bit-identical inputs on every test record; a record the schema refuses lies outside the shipped box too."""
    from fairness.datasets import load_dataset
    from prover_service.cli import main

    try:
        dataset = load_dataset(name)
    except DataError as exc:  # pragma: no cover - depends on the machine
        pytest.skip(f"{name} not available: {exc}")
    assert main(["schema", "--dataset", name, "--out", str(tmp_path / "s.json")]) == 0
    schema = FeatureSchema.load(tmp_path / "s.json")
    lower, upper = dataset.domain_box()
    encoded = 0
    for record in dataset.records_test:
        shipped = dataset.preprocessor.transform_record(record)
        try:
            ours = schema.transform_record(record)
        except OutOfBoxError:
            assert not np.all((shipped >= lower) & (shipped <= upper))
            continue
        assert np.array_equal(ours, shipped)
        encoded += 1
    assert encoded >= len(dataset.records_test) - 2
