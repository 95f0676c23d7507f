"""`fairproof import-model FILE --facts FACTS.yaml` on banks' own pipelines over the real credit datasets.

Every format a bank saves (a joblib Pipeline, a torch state dict, TorchScript, a
whole nn.Sequential, ONNX from skl2onnx and torch.onnx) is imported with every
decision agreeing with the bank's own, its schema read from the fitted objects
(means, scales, categories); one-logit and per-class networks; 2- and 3-value
one-hot sensitive attributes. Each broken variant a bank could hand over is
refused with the rows that disagree (and, where it can tell, the columns).
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from bank_pipelines import CREDIT, DECISION, MARGIN, bank_pipelines  # noqa: F401  (a session fixture)
from fairness.errors import DataError, ModelError
from fairness.model import load_artifact
from fairness.schema import CategoricalFeature, FeatureSchema, NumericFeature, SensitiveAttribute, category_key
from prover_service.cli import main as fairproof
from prover_service.importers.bank_facts import load_facts
from prover_service.importers.detect import detect_format
from prover_service.importers.sklearn_pipeline import read_sklearn
from prover_service.importers.torch_network import module_from_state, read_torch

torch = pytest.importorskip("torch")

# (model file, the CSV of its decisions, its preprocessor or None)
MODELS = {
    "pipeline": ("pipeline.joblib", "pipeline.csv", None),
    "one-logit state dict": ("one_logit_state.pt", "one_logit.csv", "preprocessor.joblib"),
    "one-logit TorchScript": ("one_logit.torchscript", "one_logit.csv", "preprocessor.joblib"),
    "one-logit whole module": ("one_logit_module.pt", "one_logit.csv", "preprocessor.joblib"),
    "per-class state dict": ("per_class_state.pt", "per_class.csv", "preprocessor.joblib"),
    "skl2onnx pipeline": ("pipeline.onnx", "pipeline.csv", None),
    "one-logit torch.onnx": ("one_logit.onnx", "one_logit.csv", "preprocessor.joblib"),
    "per-class torch.onnx": ("per_class.onnx", "per_class.csv", "preprocessor.joblib"),
}
DATASETS = ["german", "default_credit"]


def _facts_options(bank, data: str) -> list[str]:
    """German's facts give every numeric domain; default credit's come from its data, widened by MARGIN."""
    if bank.spec is CREDIT:
        return ["--domain-from", str(bank[data]), "--margin", str(MARGIN)]
    return []


def _import(bank, model: str, out: Path, *, data: str | None = None, preprocessor: str | None = "default",
            extra: tuple[str, ...] = ()) -> int:
    file, csv_name, pre = MODELS[model]
    data = data or csv_name
    pre = pre if preprocessor == "default" else preprocessor
    args = ["import-model", str(bank[file]), "--facts", str(bank["facts.yaml"]), *_facts_options(bank, data),
            "--check", str(bank[data]), "--out", str(out), *extra]
    if pre:
        args += ["--preprocessor", str(bank[pre])]
    return fairproof(args)


def _refusal(capsys, code: int) -> str:
    assert code == 1
    return capsys.readouterr().err


# --------------------------------------------------------------------------- every format imports


@pytest.mark.parametrize("model", list(MODELS))
@pytest.mark.parametrize("dataset", DATASETS)
def test_every_format_imports_with_every_decision_agreeing(bank_pipelines, dataset, model, tmp_path, capsys):
    bank = bank_pipelines[dataset]
    out = tmp_path / "model"
    capsys.readouterr()
    assert _import(bank, model, out) == 0, capsys.readouterr().err
    said = capsys.readouterr().out
    rows = len(bank.rows)
    assert f"decisions checked on {rows} rows" in said and f"{rows} agree" in said

    meta = json.loads((out / "model.json").read_text())
    written = FeatureSchema.load(out / "schema.json")  # the schema beside the artifact, for the bank to read
    assert written == FeatureSchema.parse(meta["schema"])
    assert sorted(written.sensitive) == sorted(bank.spec.sensitive)  # in model-input order
    training = meta["training"]
    assert training["import_check"]["agree"] == rows and training["source"] and training["runtime"]
    assert training["facts"]["sensitive"] == list(bank.spec.sensitive)
    assert training["favourable_value"] == category_key("favourable", bank.spec.facts["favourable"])
    if bank.spec is CREDIT:
        assert training["facts"]["domains_from"]["margin"] == MARGIN
        assert f"widened by margin {MARGIN:g}" in said
    _check_sensitive_in_artifact(meta, written)


def _check_sensitive_in_artifact(meta: dict, schema: FeatureSchema) -> None:
    """The artifact's sensitive features span each attribute's one-hot inputs, one point per value."""
    by_name = {s["name"]: s for s in meta["sensitive"]}
    for attribute, first in schema.sensitive_columns():
        entry = by_name[attribute.name]
        width = len(attribute.inputs)
        columns = entry.get("columns", [entry.get("column")])
        points = entry.get("points") or [[v] for v in entry["values"]]
        assert columns == list(range(first, first + width))
        assert [tuple(p) for p in points] == list(attribute.points)


@pytest.mark.parametrize("dataset", DATASETS)
def test_broken_variants_of_each_format_are_refused_with_the_rows(bank_pipelines, dataset, tmp_path, capsys):
    """Rejection twin of the imports above: the same files with a CSV whose header exchanges two numeric columns
    (pipeline, torch, ONNX): refused, rows and columns named, nothing written."""
    bank = bank_pipelines[dataset]
    a, b = bank.spec.swap
    for model, data in (("pipeline", "pipeline_swapped.csv"), ("one-logit state dict", "one_logit_swapped.csv"),
                        ("skl2onnx pipeline", "pipeline_swapped.csv")):
        out = tmp_path / model.replace(" ", "_")
        capsys.readouterr()
        err = _refusal(capsys, _import(bank, model, out, data=data))
        assert "import refused" in err and "line " in err and "recorded" in err, err
        assert f"the columns {a!r} and {b!r} exchanged" in err or f"the columns {b!r} and {a!r} exchanged" in err, err
        assert not out.exists()


# --------------------------------------------------------------------------- the schema is what the fitted objects say


@pytest.mark.parametrize("dataset", DATASETS)
def test_the_schema_is_what_the_fitted_objects_say(bank_pipelines, dataset):
    bank = bank_pipelines[dataset]
    loaded = _facts(bank, "pipeline.csv")
    model = read_sklearn(bank["pipeline.joblib"], loaded.facts)
    _assert_schema_matches(model.schema, bank.pipeline.steps[0][1], bank.spec)
    torch_model = read_torch(bank["per_class_state.pt"], loaded.facts, preprocessor=bank["preprocessor.joblib"])
    _assert_schema_matches(torch_model.schema, bank.transformer, bank.spec)
    assert model.schema.label.values == tuple(category_key("class", c) for c in bank.pipeline.classes_)


def test_a_schema_follows_the_fitted_scaler_it_is_read_from(bank_pipelines):
    """Rejection twin: a preprocessor fitted with another scaler gives another schema (nothing is re-typed)."""
    import joblib

    bank = bank_pipelines["german"]
    facts = _facts(bank, "pipeline.csv").facts
    standard = read_torch(bank["one_logit_state.pt"], facts, preprocessor=bank["preprocessor.joblib"]).schema
    minmax_ct = joblib.load(bank["preprocessor_minmax.joblib"])
    minmax = read_torch(bank["one_logit_state.pt"], facts, preprocessor=minmax_ct).schema
    _assert_schema_matches(minmax, minmax_ct, bank.spec, scaler="minmax")
    with pytest.raises(AssertionError):
        _assert_schema_matches(minmax, bank.transformer, bank.spec)
    assert standard != minmax


def _assert_schema_matches(schema: FeatureSchema, ct, spec, scaler: str = "standard") -> None:
    """Means/scales from the scalers, categories and drops from the encoders, straight from their attributes."""
    by_name = {f.name: f for f in schema.features}
    steps = {name: (t, cols) for name, t, cols in ct.transformers_}
    num, cols = steps["num"]
    for i, c in enumerate(cols):
        f = by_name[c]
        assert isinstance(f, NumericFeature)
        if scaler == "standard":
            assert (f.mean, f.std) == (num.mean_[i], num.scale_[i])
        else:
            assert (f.mean, f.std) == (-num.min_[i] / num.scale_[i], 1 / num.scale_[i])
    if "range" in steps:
        mm, cols = steps["range"]
        for i, c in enumerate(cols):
            assert (by_name[c].mean, by_name[c].std) == (-mm.min_[i] / mm.scale_[i], 1 / mm.scale_[i])
    for step in ("cat", "binary"):
        if step not in steps:
            continue
        encoder, cols = steps[step]
        for i, c in enumerate(cols):
            f = by_name[c]
            categories = tuple(category_key(c, v) for v in encoder.categories_[i])
            drop = encoder.drop_idx_[i] if encoder.drop_idx_ is not None else None
            if c in spec.sensitive:
                assert isinstance(f, SensitiveAttribute) and f.encoding == "one_hot" and f.values == categories
            else:
                assert isinstance(f, CategoricalFeature) and f.encoding == "one_hot" and f.categories == categories
            assert f.drop == (None if drop is None else categories[int(drop)])
    assert [f.name for f in schema.features] == [c for _, t, cols in ct.transformers_ if t != "drop" for c in cols]


def test_two_and_three_value_one_hot_sensitive_attributes(bank_pipelines):
    german = read_sklearn(bank_pipelines["german"]["pipeline.joblib"],
                          _facts(bank_pipelines["german"], "pipeline.csv").facts).schema
    credit = read_sklearn(bank_pipelines["default_credit"]["pipeline.joblib"],
                          _facts(bank_pipelines["default_credit"], "pipeline.csv").facts).schema
    (fw, _), = german.sensitive_columns()
    assert fw.values == ("A201", "A202") and fw.points == ((1, 0), (0, 1))
    assert fw.labels == ("foreign worker", "not a foreign worker")
    by_name = {f.name: f for f, _ in credit.sensitive_columns()}
    assert by_name["MARRIAGE"].values == ("1", "2", "3") and len(by_name["MARRIAGE"].inputs) == 3
    assert by_name["MARRIAGE"].labels == ("married", "single", "others")
    # OneHotEncoder(drop="if_binary"): SEX is one input, value 1 the all-zero point
    assert by_name["SEX"].drop == "1" and by_name["SEX"].points == ((0,), (1,))


@pytest.mark.parametrize("column, words", [("personal_status", "is dropped by the pipeline"),
                                           ("nationality", "is not a column of the pipeline")])
def test_a_sensitive_column_the_model_does_not_read_is_refused(bank_pipelines, column, words):
    """Rejection twin of the sensitive attributes above."""
    bank = bank_pipelines["german"]
    facts = load_facts(bank["facts.yaml"], sensitive=f"foreign_worker,{column}").facts
    with pytest.raises(ModelError, match=f"sensitive column '{column}' {words}"):
        read_sklearn(bank["pipeline.joblib"], facts)


# --------------------------------------------------------------------------- the networks are the bank's


@pytest.mark.parametrize("dataset", DATASETS)
def test_the_imported_networks_compute_the_banks_scores(bank_pipelines, dataset):
    """One logit z -> logits (0, z): the pipeline's probability is sigmoid(z); a torch network's logits are torch's."""
    import bank_pipelines as bp

    bank = bank_pipelines[dataset]
    facts = _facts(bank, "pipeline.csv").facts
    sk = read_sklearn(bank["pipeline.joblib"], facts)
    records = [{a: r[a] for a in sk.schema.attributes} for r in bank.rows]
    X = np.array([sk.schema.encode(r) for r in records])
    logits = sk.network.forward(X)
    assert np.all(logits[:, 0] == 0)
    df = bp.frame(bank.spec, bank.rows)
    assert np.allclose(1 / (1 + np.exp(-logits[:, 1])), bank.pipeline.predict_proba(df)[:, 1], rtol=0, atol=1e-9)
    assert np.array_equal(sk.runtime.decide(records), sk.network.predict(X))

    for file, outputs in (("one_logit_state.pt", 1), ("per_class_state.pt", 2)):
        tm = read_torch(bank[file], facts, preprocessor=bank["preprocessor.joblib"])
        with torch.no_grad():
            ref = module_from_state(torch.load(bank[file], weights_only=True))(
                torch.tensor(bank.transformer.transform(df), dtype=torch.float32)).numpy()
        got = tm.network.forward(X)
        expected = np.c_[np.zeros(len(ref)), ref[:, 0]] if outputs == 1 else ref
        assert np.allclose(got, expected, rtol=0, atol=1e-4)
        assert tm.network.n_classes == 2 and (outputs == 1) == any("one output logit" in n for n in tm.notes)


# --------------------------------------------------------------------------- broken variants


def test_a_one_hot_category_order_reversed_in_the_schema_is_refused(bank_pipelines, tmp_path, capsys):
    """The schema the import wrote is accepted for the bare torch network; the same schema with foreign_worker's
    categories reversed is refused with the rows that disagree."""
    bank = bank_pipelines["german"]
    assert _import(bank, "one-logit state dict", tmp_path / "first") == 0
    schema = json.loads((tmp_path / "first" / "schema.json").read_text())
    (tmp_path / "good.json").write_text(json.dumps(schema))
    for f in schema["features"]:
        if f["name"] == "checking_status":
            f["categories"] = f["categories"][::-1]
    (tmp_path / "reversed.json").write_text(json.dumps(schema))
    base = ["import-model", str(bank["one_logit_state.pt"]), "--check", str(bank["one_logit.csv"]),
            "--prediction-column", DECISION]
    capsys.readouterr()
    assert fairproof([*base, "--schema", str(tmp_path / "good.json"), "--out", str(tmp_path / "good")]) == 0
    assert f"{len(bank.rows)} agree" in capsys.readouterr().out
    err = _refusal(capsys, fairproof([*base, "--schema", str(tmp_path / "reversed.json"), "--out", str(tmp_path / "r")]))
    assert "import refused" in err and "line " in err
    assert not (tmp_path / "r").exists()


@pytest.mark.parametrize("dataset", DATASETS)
def test_a_preprocessor_with_another_scaler_is_refused(bank_pipelines, dataset, tmp_path, capsys):
    bank = bank_pipelines[dataset]
    err = _refusal(capsys, _import(bank, "one-logit state dict", tmp_path / "m", preprocessor="preprocessor_minmax.joblib"))
    assert "import refused" in err and "line " in err and "bank's network here" in err


@pytest.mark.parametrize("dataset", DATASETS)
def test_a_pipeline_refitted_on_other_rows_is_refused(bank_pipelines, dataset, tmp_path, capsys):
    bank = bank_pipelines[dataset]
    args = ["import-model", str(bank["pipeline_refit.joblib"]), "--facts", str(bank["facts.yaml"]),
            *_facts_options(bank, "pipeline.csv"), "--check", str(bank["pipeline.csv"]), "--out", str(tmp_path / "m")]
    err = _refusal(capsys, fairproof(args))
    assert "import refused" in err and "line " in err


# --------------------------------------------------------------------------- format detection and options


def test_the_format_is_read_from_the_file(bank_pipelines, tmp_path):
    bank = bank_pipelines["german"]
    expected = {"pipeline.joblib": "sklearn", "one_logit_state.pt": "torch", "one_logit_module.pt": "torch",
                "one_logit.torchscript": "torchscript", "pipeline.onnx": "onnx", "per_class.onnx": "onnx"}
    for name, fmt in expected.items():
        assert detect_format(bank[name]) == fmt, name
    renamed = tmp_path / "model.bin"  # ONNX without its suffix: read from the protobuf
    renamed.write_bytes(bank["pipeline.onnx"].read_bytes())
    assert detect_format(renamed) == "onnx"
    (tmp_path / "notes.txt").write_text("not a model")
    with pytest.raises(ModelError, match="cannot tell what this file is"):
        detect_format(tmp_path / "notes.txt")


def test_format_override_and_a_wrong_one(bank_pipelines, tmp_path, capsys):
    bank = bank_pipelines["german"]
    assert _import(bank, "pipeline", tmp_path / "m", extra=("--format", "sklearn")) == 0
    err = _refusal(capsys, _import(bank, "one-logit state dict", tmp_path / "w", extra=("--format", "sklearn")))
    assert "--preprocessor is for a torch or ONNX network" in err
    err = _refusal(capsys, fairproof(["import-model", str(bank["one_logit_state.pt"]), "--format", "sklearn",
                                      "--facts", str(bank["facts.yaml"]), "--no-check", "--out", str(tmp_path / "x")]))
    assert "cannot load as a joblib/pickle file" in err


def test_the_facts_or_a_schema_must_be_given(bank_pipelines, tmp_path, capsys):
    bank = bank_pipelines["german"]
    err = _refusal(capsys, fairproof(["import-model", str(bank["pipeline.joblib"]), "--no-check",
                                      "--out", str(tmp_path / "m")]))
    assert "give the bank's facts (--facts FACTS.yaml)" in err
    err = _refusal(capsys, fairproof(["import-model", str(bank["one_logit_state.pt"]), "--facts",
                                      str(bank["facts.yaml"]), "--no-check", "--out", str(tmp_path / "m")]))
    assert "give its fitted preprocessor (--preprocessor FITTED.joblib)" in err


def test_domains_from_data_are_widened_by_the_margin(bank_pipelines, tmp_path):
    bank = bank_pipelines["default_credit"]
    loaded = load_facts(bank["facts.yaml"], domain_from=bank["pipeline.csv"], margin=0.25)
    limits = [float(r["LIMIT_BAL"]) for r in bank.rows]
    lo, hi = min(limits), max(limits)
    assert loaded.facts.domains["LIMIT_BAL"] == (lo - 0.25 * (hi - lo), hi + 0.25 * (hi - lo))
    assert "margin 0.25" in loaded.describe_domains() and loaded.record()["domains_from"]["margin"] == 0.25
    with pytest.raises(DataError, match="--margin widens the domains taken from data"):
        load_facts(bank["facts.yaml"], margin=0.1)
    with pytest.raises(DataError, match="--margin must be a non-negative number"):
        load_facts(bank["facts.yaml"], domain_from=bank["pipeline.csv"], margin=-1.0)


def test_a_record_outside_the_data_domain_is_refused_by_the_schema(bank_pipelines):
    """Rejection twin: without the margin, a value just past the data's range lies outside the domain."""
    bank = bank_pipelines["default_credit"]
    facts = load_facts(bank["facts.yaml"], domain_from=bank["pipeline.csv"]).facts
    schema = read_sklearn(bank["pipeline.joblib"], facts).schema
    record = {a: bank.rows[0][a] for a in schema.attributes}
    schema.encode(record)
    top = max(float(r["AGE"]) for r in bank.rows)
    with pytest.raises(DataError, match="AGE = .* is outside the model's domain"):
        schema.encode(dict(record, AGE=str(top + 1)))


# --------------------------------------------------------------------------- the favourable class reaches the lenses


def test_commit_takes_the_favourable_class_the_bank_named(bank_pipelines, tmp_path, capsys):
    bank = bank_pipelines["default_credit"]
    assert _import(bank, "pipeline", tmp_path / "named") == 0
    assert fairproof(["commit", "--model", str(tmp_path / "named")]) == 0
    card = json.loads((tmp_path / "named" / "card.json").read_text())
    assert card["spread"]["favourable_class"] == 0  # "pays", the facts' favourable 0, not the default last class
    facts = {**bank.spec.facts}
    facts.pop("favourable")
    (tmp_path / "facts.json").write_text(json.dumps(facts))
    args = ["import-model", str(bank["pipeline.joblib"]), "--facts", str(tmp_path / "facts.json"),
            *_facts_options(bank, "pipeline.csv"), "--check", str(bank["pipeline.csv"]), "--out", str(tmp_path / "plain")]
    assert fairproof(args) == 0
    assert fairproof(["commit", "--model", str(tmp_path / "plain")]) == 0
    assert json.loads((tmp_path / "plain" / "card.json").read_text())["spread"]["favourable_class"] == 1


def _facts(bank, data: str):
    if bank.spec is CREDIT:
        return load_facts(bank["facts.yaml"], domain_from=bank[data], margin=MARGIN)
    return load_facts(bank["facts.yaml"])


# --------------------------------------------------------------------------- the reader on small pipelines


def _small_frame(n: int = 120, seed: int = 0):
    import pandas as pd

    rng = np.random.default_rng(seed)
    return pd.DataFrame({"income": rng.gamma(3.0, 20.0, n), "age": rng.integers(18, 80, n).astype(float),
                         "sex": rng.integers(0, 2, n).astype(float), "region": rng.choice(["north", "south", "east"], n),
                         "housing": rng.choice(["rent", "own"], n)})


def _small_target(df):
    return np.where(df["income"] / 60 + (df["region"] == "north") - df["age"] / 80 + 0.3 * df["sex"] > 0.6, "yes", "no")


def _small_facts(**changes):
    from prover_service.importers import BankFacts

    base = dict(name="small", sensitive=("sex",), domains={"income": (0.0, 400.0), "age": (18.0, 80.0)},
                units={"income": "kEUR"}, label_column=DECISION, value_labels={"sex": {"0": "female", "1": "male"}})
    base.update(changes)
    return BankFacts(**base)


def _fit_and_save(tmp_path, pre, clf=None, *, frame=None, name="model.joblib"):
    import joblib
    import warnings

    from sklearn.neural_network import MLPClassifier
    from sklearn.pipeline import Pipeline

    df = _small_frame() if frame is None else frame
    pipeline = Pipeline([("prepare", pre), ("classify", clf or MLPClassifier((4,), max_iter=300, random_state=0))])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        pipeline.fit(df, _small_target(_small_frame()))
    joblib.dump(pipeline, tmp_path / name)
    return pipeline, tmp_path / name


def _text(value) -> str:
    """A value as the bank's CSV writes it (an integral number without a fraction)."""
    return str(int(value)) if isinstance(value, float) and value.is_integer() else str(value)


def _agrees(model, df) -> None:
    """The schema's encoding equals the fitted transformer's output (after the folds), and the decisions agree."""
    records = [{a: _text(v) for a, v in r.items() if a in model.schema.attributes} for r in df.to_dict("records")]
    X = np.array([model.schema.encode(r) for r in records])
    assert np.array_equal(model.runtime.decide(records), model.network.predict(X))


def test_nested_scalers_ordinal_passthrough_and_a_scaled_sensitive_column(tmp_path):
    from sklearn.compose import ColumnTransformer
    from sklearn.pipeline import Pipeline
    from sklearn.preprocessing import MinMaxScaler, OneHotEncoder, OrdinalEncoder, StandardScaler

    pre = ColumnTransformer([
        ("income", Pipeline([("log_free", StandardScaler()), ("range", MinMaxScaler())]), ["income"]),
        ("sex", StandardScaler(), ["sex"]),  # a 0/1 sensitive column the bank scaled
        ("housing", Pipeline([("code", OrdinalEncoder()), ("scale", StandardScaler())]), ["housing"]),
        ("region", OneHotEncoder(drop="first"), ["region"]),
    ], remainder="passthrough")  # age
    pipeline, path = _fit_and_save(tmp_path, pre)
    model = read_sklearn(path, _small_facts())
    features = {f.name: f for f in model.schema.features}
    assert [f.name for f in model.schema.features] == ["income", "sex", "housing", "region", "age"]
    std, mm = pipeline[0].named_transformers_["income"].steps[0][1], pipeline[0].named_transformers_["income"].steps[1][1]
    m2, s2 = -mm.min_[0] / mm.scale_[0], 1 / mm.scale_[0]
    assert features["income"].mean == pytest.approx(std.mean_[0] + m2 * std.scale_[0], rel=1e-15)
    assert features["income"].std == pytest.approx(std.scale_[0] * s2, rel=1e-15)
    assert (features["age"].mean, features["age"].std) == (0.0, 1.0)
    code = pipeline[0].named_transformers_["housing"].steps[1][1]
    assert features["housing"].encoding == "ordinal" and features["housing"].categories == ("own", "rent")
    assert (features["housing"].mean, features["housing"].std) == (code.mean_[0], code.scale_[0])
    assert features["region"].drop == "east"
    sex = features["sex"]
    assert isinstance(sex, SensitiveAttribute) and sex.encoding == "code" and sex.values == ("0", "1")
    assert any("sensitive column 'sex'" in n and "folded exactly into the first layer" in n for n in model.notes)
    _agrees(model, _small_frame(200, seed=3))


def test_columns_selected_by_index_take_their_names_from_the_facts(tmp_path):
    """A pipeline fitted on an unnamed array: the facts file's `columns` names its columns."""
    from sklearn.compose import ColumnTransformer
    from sklearn.preprocessing import OneHotEncoder, StandardScaler

    df = _small_frame()
    pre = ColumnTransformer([("num", StandardScaler(), [0, 1, 2]), ("cat", OneHotEncoder(), [3, 4])])
    _, path = _fit_and_save(tmp_path, pre, frame=df.to_numpy(dtype=object))
    with pytest.raises(ModelError, match="fitted on an unnamed array of 5 columns: list their names"):
        read_sklearn(path, _small_facts())
    facts = _small_facts(sensitive=("region",), value_labels={}, domains={"income": (0.0, 400.0), "age": (18.0, 80.0),
                                                                          "sex": (0.0, 1.0)})
    model = read_sklearn(path, facts, columns=list(df.columns))
    assert model.schema.attributes == ("income", "age", "sex", "region", "housing")
    assert model.schema.features[3].encoding == "one_hot"
    _agrees(model, _small_frame(200, seed=4))


def test_a_column_transformer_and_a_classifier_saved_side_by_side(tmp_path):
    """[ColumnTransformer, MLPClassifier] in one joblib file, as some banks keep them; a bare classifier alone
    says nothing of its columns and is refused."""
    import joblib
    import warnings

    from sklearn.compose import ColumnTransformer
    from sklearn.neural_network import MLPClassifier
    from sklearn.preprocessing import OneHotEncoder, StandardScaler

    df = _small_frame()
    ct = ColumnTransformer([("num", StandardScaler(), ["income", "age", "sex"]),
                            ("cat", OneHotEncoder(), ["region", "housing"])]).fit(df)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        clf = MLPClassifier((4,), max_iter=300, random_state=0).fit(ct.transform(df), _small_target(df))
    joblib.dump([ct, clf], tmp_path / "pair.joblib")
    model = read_sklearn(tmp_path / "pair.joblib", _small_facts())
    assert model.source == "scikit-learn [ColumnTransformer(StandardScaler, OneHotEncoder), MLPClassifier]"
    _agrees(model, _small_frame(200, seed=6))
    joblib.dump(clf, tmp_path / "bare.joblib")
    with pytest.raises(ModelError, match="a bare MLPClassifier says nothing of its columns' encoding"):
        read_sklearn(tmp_path / "bare.joblib", _small_facts())


@pytest.mark.parametrize("case, words", [
    ("imputer", "step 'prepare/num' is a SimpleImputer, which FairProof cannot represent exactly"),
    ("infrequent", "step 'prepare/cat': OneHotEncoder groups infrequent categories"),
    ("infrequent_unknown", "handle_unknown='infrequent_if_exist'"),
    ("twice", "column 'income' is used twice, by step 'prepare/num' and by step 'prepare/again'"),
    ("clip", "MinMaxScaler(clip=True) is not an affine map"),
    ("tanh", "hidden activation 'tanh'; only 'relu' can be certified"),
    ("encoder_then_imputer", "only a scaler can follow an encoder exactly"),
])
def test_what_cannot_be_represented_exactly_is_refused_naming_the_step(tmp_path, case, words):
    from sklearn.compose import ColumnTransformer
    from sklearn.impute import SimpleImputer
    from sklearn.neural_network import MLPClassifier
    from sklearn.pipeline import Pipeline
    from sklearn.preprocessing import MinMaxScaler, OneHotEncoder, StandardScaler

    numeric = {"imputer": SimpleImputer(), "clip": MinMaxScaler(clip=True)}.get(case, StandardScaler())
    encoder = {"infrequent": OneHotEncoder(min_frequency=5),
               "infrequent_unknown": OneHotEncoder(handle_unknown="infrequent_if_exist"),
               "encoder_then_imputer": Pipeline([("hot", OneHotEncoder()), ("fill", SimpleImputer())])}.get(case, OneHotEncoder())
    steps = [("num", numeric, ["income", "age", "sex"]), ("cat", encoder, ["region", "housing"])]
    if case == "twice":
        steps.append(("again", MinMaxScaler(), ["income"]))
    clf = MLPClassifier((3,), activation="tanh", max_iter=50, random_state=0) if case == "tanh" else None
    _, path = _fit_and_save(tmp_path, ColumnTransformer(steps), clf)
    with pytest.raises(ModelError, match=words.replace("(", r"\(").replace(")", r"\)")):
        read_sklearn(path, _small_facts())


def test_the_same_pipeline_with_representable_steps_imports(tmp_path):
    """Acceptance twin of the refusals above."""
    from sklearn.compose import ColumnTransformer
    from sklearn.preprocessing import OneHotEncoder, StandardScaler

    steps = [("num", StandardScaler(), ["income", "age", "sex"]), ("cat", OneHotEncoder(), ["region", "housing"])]
    _, path = _fit_and_save(tmp_path, ColumnTransformer(steps))
    _agrees(read_sklearn(path, _small_facts()), _small_frame(200, seed=5))


@pytest.mark.parametrize("facts, words", [
    (dict(domains={"income": (0.0, 400.0)}), "numeric column 'age' .* has no domain"),
    (dict(value_labels={"sex": {"0": "f", "1": "m"}, "colour": {"red": "r"}}), "the facts name column\\(s\\) 'colour'"),
    (dict(class_values=("yes", "no")), "the classifier's classes are no, yes in that order"),
    (dict(favourable="maybe"), "the favourable class 'maybe' is not one of the model's classes no, yes"),
    (dict(value_labels={"sex": {"f": "female", "m": "male"}}), "sensitive column 'sex' .* its values must be integers"),
])
def test_facts_that_do_not_fit_the_pipeline_are_refused(tmp_path, facts, words):
    from sklearn.compose import ColumnTransformer
    from sklearn.preprocessing import OneHotEncoder, StandardScaler

    steps = [("num", StandardScaler(), ["income", "age", "sex"]), ("cat", OneHotEncoder(), ["region", "housing"])]
    _, path = _fit_and_save(tmp_path, ColumnTransformer(steps))
    read_sklearn(path, _small_facts())  # the same pipeline under fitting facts imports
    with pytest.raises(ModelError, match=words):
        read_sklearn(path, _small_facts(**facts))


# --------------------------------------------------------------------------- torch files


def test_a_pickled_module_of_another_class_is_refused_by_name(tmp_path):
    """Rejection twin of the whole nn.Sequential imported above."""
    net = _WrappedNet()
    torch.save(net, tmp_path / "custom.pt")
    with pytest.raises(ModelError, match=r"holds a pickled .*_WrappedNet, which is not an nn.Sequential"):
        read_torch(tmp_path / "custom.pt", _small_facts(), preprocessor=object())


def test_torch_stacks_that_are_not_linear_relu_are_refused(tmp_path):
    nn = torch.nn
    cases = {"tanh.pt": (nn.Sequential(nn.Linear(3, 2), nn.Tanh(), nn.Linear(2, 1)),
                         "holds a pickled torch.nn.modules.activation.Tanh"),
             "tanh.ts": (nn.Sequential(nn.Linear(3, 2), nn.Tanh(), nn.Linear(2, 1)), "unsupported module Tanh"),
             "softmax0.pt": (nn.Sequential(nn.Linear(3, 2), nn.ReLU(), nn.Linear(2, 2), nn.Softmax(dim=0)),
                             "Softmax at position 3 is taken over dim 0"),
             "multilabel.pt": (nn.Sequential(nn.Linear(3, 2), nn.ReLU(), nn.Linear(2, 3), nn.Sigmoid()),
                               "a logistic head needs one output unit")}
    from prover_service.importers.torch_network import load_torch_network

    for name, (net, words) in cases.items():
        if name.endswith(".ts"):
            torch.jit.save(torch.jit.script(net), str(tmp_path / name))
        else:
            torch.save(net, tmp_path / name)
        with pytest.raises(ModelError, match=words):
            load_torch_network(tmp_path / name)
    ok = nn.Sequential(nn.Linear(3, 2), nn.ReLU(), nn.Dropout(0.1), nn.Linear(2, 3), nn.Softmax(dim=1))
    torch.save(ok, tmp_path / "ok.pt")
    loaded = load_torch_network(tmp_path / "ok.pt")
    assert loaded.head == "Softmax" and loaded.network.n_classes == 3


class _WrappedNet(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.inner = torch.nn.Linear(3, 1)

    def forward(self, x):
        return self.inner(x)


# --------------------------------------------------------------------------- the facts file


def test_the_facts_file_is_read_strictly(tmp_path):
    good = {"name": "bank", "label_column": "decision", "sensitive": ["sex"], "domains": {"age": [18, 80]}}
    (tmp_path / "good.yaml").write_text(json.dumps(good))
    loaded = load_facts(tmp_path / "good.yaml")
    assert loaded.facts.domains == {"age": (18.0, 80.0)} and loaded.facts.sensitive == ("sex",)
    assert load_facts(tmp_path / "good.yaml", sensitive="sex,race").facts.sensitive == ("sex", "race")
    for bad, words in [({**good, "sensitve": ["sex"]}, "unknown key\\(s\\) sensitve"),
                       ({**good, "domains": {"age": [80, 18]}}, "domain of 'age' is empty: min 80 lies above max 18"),
                       ({**good, "domains": {"age": ["young", 80]}}, "min of the domain of 'age' must be a finite number"),
                       ({**good, "sensitive": []}, "no sensitive column named"),
                       ({k: v for k, v in good.items() if k != "label_column"}, "outcome column the model predicts is not named"),
                       ({**good, "class_values": ["no", "yes"], "favourable": "maybe"}, "favourable class 'maybe'"),
                       ({**good, "class_values": ["no", "yes"], "class_labels": ["x"]}, "1 class_labels for 2")]:
        (tmp_path / "bad.json").write_text(json.dumps(bad))
        with pytest.raises(DataError, match=words):
            load_facts(tmp_path / "bad.json")
    (tmp_path / "broken.yaml").write_text("name: [unclosed")
    with pytest.raises(DataError, match="is not valid YAML"):
        load_facts(tmp_path / "broken.yaml")


def _with_outcomes(bank, tmp_path: Path) -> tuple[Path, int]:
    """pipeline.csv with an `outcome` column: the bank's decision, changed on every seventh row (a model is
    not always right), so the outcomes and the decisions differ on some rows."""
    import csv

    with Path(bank["pipeline.csv"]).open(newline="") as fh:
        rows = list(csv.reader(fh))
    header, body = rows[0], rows[1:]
    classes = sorted({r[header.index("decision")] for r in body})
    out = tmp_path / "scored.csv"
    changed = 0
    with out.open("w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(header + ["outcome"])
        for i, r in enumerate(body):
            decision = r[header.index("decision")]
            outcome = classes[1 - classes.index(decision)] if i % 7 == 0 else decision
            changed += outcome != decision
            w.writerow(r + [outcome])
    return out, changed


def _facts_with(bank, tmp_path: Path, **keys: str) -> Path:
    import yaml

    facts = yaml.safe_load(Path(bank["facts.yaml"]).read_text())
    facts.update(keys)
    path = tmp_path / "facts.yaml"
    path.write_text(yaml.safe_dump(facts))
    return path


def test_the_outcome_and_the_banks_decisions_are_separate_columns(bank_pipelines, tmp_path, capsys):
    """label_column is what the model predicts (the audits' truth); decision_column the bank's own decisions,
    which the checked import compares."""
    bank = bank_pipelines["german"]
    scored, changed = _with_outcomes(bank, tmp_path)
    assert changed > 0
    facts = _facts_with(bank, tmp_path, label_column="outcome", decision_column="decision")
    assert fairproof(["import-model", str(bank["pipeline.joblib"]), "--facts", str(facts), "--check", str(scored),
                      "--out", str(tmp_path / "m")]) == 0
    artifact = load_artifact(tmp_path / "m")
    assert artifact.preprocessor.label.column == "outcome"
    assert artifact.training["facts"]["decision_column"] == "decision"
    # the artifact's test accuracy is against the outcomes, which the bank's decisions miss on `changed` rows
    assert artifact.test_accuracy is not None and artifact.test_accuracy < 1.0


def test_checking_against_the_outcomes_instead_of_the_decisions_is_refused(bank_pipelines, tmp_path, capsys):
    bank = bank_pipelines["german"]
    scored, changed = _with_outcomes(bank, tmp_path)
    facts = _facts_with(bank, tmp_path, label_column="outcome")  # no decision_column: the outcomes are compared
    err = _refusal(capsys, fairproof(["import-model", str(bank["pipeline.joblib"]), "--facts", str(facts),
                                      "--check", str(scored), "--out", str(tmp_path / "m")]))
    assert f"on {changed} of" in err and "line 2:" in err
    assert not (tmp_path / "m").exists()


def test_the_bank_guide_facts_example_reads_and_a_misspelt_key_is_refused(tmp_path):
    guide = (Path(__file__).resolve().parents[1] / "docs" / "guides" / "bank.md").read_text()
    example = guide.split("```yaml\n", 1)[1].split("```", 1)[0]
    (tmp_path / "facts.yaml").write_text(example)
    loaded = load_facts(tmp_path / "facts.yaml")
    assert loaded.facts.label_column == "default" and loaded.decision_column == "decision"
    assert loaded.facts.sensitive == ("sex", "nationality") and loaded.facts.domains["age"] == (18.0, 80.0)
    (tmp_path / "typo.yaml").write_text(example.replace("decision_column:", "decision_colum:"))
    with pytest.raises(DataError, match="unknown key.*decision_colum"):
        load_facts(tmp_path / "typo.yaml")
