"""Which inputs `fairproof commit --persistence` lets the persistence lens move: a model's numeric features only.

A model imported under the bank's own schema moves the inputs of the schema's numeric attributes and nothing
else: never a one-hot category's inputs (0/1 indicators, not a quantity a customer could nudge), never an
ordinal category's code, never a sensitive attribute's inputs. A model of a shipped dataset keeps moving its
numeric, non-sensitive features. Both are read from the card `fairproof commit` writes; the expected columns
are computed here from the schema's own attribute kinds (or the shipped preprocessor's), not from the code
under test.
"""
from __future__ import annotations

import json

import numpy as np
import pytest

from fairness.model import FloatMLP, artifact_from_schema, save_artifact
from fairness.schema import FeatureSchema, NumericFeature
from prover_service.cli import main as fairproof

SCHEMA = {
    "format": "fairproof-schema/1",
    "name": "mixed-credit",
    "features": [
        {"name": "income", "kind": "numeric", "min": 0, "max": 200, "mean": 60.0, "std": 30.0},
        {"name": "purpose", "kind": "categorical", "encoding": "one_hot", "categories": ["car", "tv", "school"]},
        {"name": "race", "kind": "sensitive", "encoding": "one_hot", "values": ["a", "b", "c"]},
        {"name": "duration", "kind": "numeric", "min": 3, "max": 72, "mean": 24.0, "std": 12.0},
        {"name": "housing", "kind": "categorical", "categories": ["rent", "own", "free"], "mean": 1.0, "std": 0.8},
        {"name": "sex", "kind": "sensitive", "values": ["F", "M"]},
        {"name": "age", "kind": "numeric", "min": 18, "max": 90, "mean": 40.0, "std": 12.0},
    ],
    "label": {"column": "default", "values": ["no", "yes"], "labels": ["repays", "defaults"]},
}


def _network(n_inputs: int, seed: int = 3) -> FloatMLP:
    rng = np.random.default_rng(seed)
    return FloatMLP([rng.normal(0, 0.5, (3, n_inputs)), rng.normal(0, 0.5, (2, 3))],
                    [rng.normal(0, 0.2, 3), rng.normal(0, 0.2, 2)])


def _commit(model_dir, capsys) -> dict:
    assert fairproof(["commit", "--model", str(model_dir), "--persistence", "0.25"]) == 0
    out = capsys.readouterr().out
    card = json.loads((model_dir / "card.json").read_text())
    return {"card": card, "out": out}


def _moved(card: dict) -> list[str]:
    return [card["feature_names"][j] for j in card["persistence"]["columns"]]


def test_an_imported_model_moves_its_numeric_attributes_only(tmp_path, capsys):
    schema = FeatureSchema.model_validate(SCHEMA)
    save_artifact(artifact_from_schema(_network(schema.n_inputs), schema), tmp_path / "model")
    committed = _commit(tmp_path / "model", capsys)
    numeric = [name for f in schema.features if isinstance(f, NumericFeature) for name in f.inputs]
    assert _moved(committed["card"]) == numeric == ["income", "duration", "age"]
    assert "persistent bias over income, duration, age" in committed["out"]
    # its twin: the inputs a persistence box must leave where the customer put them
    others = set(schema.feature_names) - set(numeric)
    assert {"purpose=car", "purpose=tv", "purpose=school", "race=a", "housing", "sex"} <= others
    assert not others & set(_moved(committed["card"]))


def test_a_shipped_dataset_moves_its_numeric_features_as_before(tmp_path, capsys):
    from fairness.datasets import CATEGORICAL, load_dataset
    from fairness.errors import DataError
    from fairness.model import artifact_from_dataset

    try:
        german = load_dataset("german", sensitive=["foreign_worker"], seed=0)
    except (DataError, FileNotFoundError) as exc:  # pragma: no cover - depends on the machine
        pytest.skip(f"German Credit dataset not available: {exc}")
    save_artifact(artifact_from_dataset(_network(german.n_features), german), tmp_path / "model")
    committed = _commit(tmp_path / "model", capsys)
    pre = german.preprocessor
    numeric = [name for name, kind in zip(pre.feature_names, pre.kinds)
               if kind != CATEGORICAL and name not in pre.sensitive]
    assert _moved(committed["card"]) == numeric and len(numeric) >= 3
    categorical = [name for name, kind in zip(pre.feature_names, pre.kinds) if kind == CATEGORICAL]
    assert categorical and not set(categorical) & set(_moved(committed["card"]))
