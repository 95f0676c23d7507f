"""A bank's fitted scikit-learn pipeline, read from its own fitted attributes.

The bank hands over the pipeline it serves: `Pipeline(ColumnTransformer(...),
MLPClassifier)` saved with joblib, or scalers over all columns before the
classifier, or the fitted transformer alone (the preprocessing of a torch or
ONNX network). Everything the schema says is read from the fitted objects,
never re-typed: a scaler's mean_/scale_ (MinMaxScaler as mean = -min_/scale_,
std = 1/scale_), an encoder's categories_ and drop_idx_, the classifier's
classes_ and weights. What no fitted object says (sensitive columns, numeric
domains, labels) comes from the bank's facts (`BankFacts`).

Each raw column becomes one schema attribute whose inputs are exactly the
columns the transformer writes for it, in the transformer's output order. A
per-input affine map the schema cannot hold (a scaled sensitive column, a
scaler after a one-hot encoder) is folded into the network's first layer and
reported. Anything else that cannot be represented exactly is refused with a
sentence naming the step and the column.

The runtime is the bank's own pipeline: its `predict` on the raw records, built
as a pandas DataFrame (or array) typed as the pipeline was fitted: numbers for
the numeric columns, each encoder's own category values for its columns.

The reading is in three modules: `sklearn_columns` (what each raw column
becomes, step by step), `sklearn_features` (the schema features of those
encodings) and this one (the whole pipeline, its classifier and runtime).
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from fairness.errors import ModelError
from fairness.model import FloatMLP, mlp_from_classifier
from fairness.schema import FeatureSchema, LabelColumn, category_key

from . import BankFacts, BankModel
from .rewrites import as_two_logits
from .sklearn_columns import describe, read_pipeline, read_transformer
from .sklearn_features import Preprocessing, first_error, preprocessing_from


def read_preprocessor(transformer: Any, facts: BankFacts, *, columns: Sequence[str] | None = None,
                      source: str = "preprocessor") -> Preprocessing:
    """A fitted ColumnTransformer, Pipeline of transformers or scaler, as schema features under `facts`.

    `columns`: the raw column names, when the transformer was fitted on an unnamed array (else read from its
    feature_names_in_).
    """
    raw = input_columns(transformer, columns, source)
    encodings = read_transformer(transformer, [(name, i) for i, name in enumerate(raw)], "")
    return preprocessing_from(encodings, facts, transformer=transformer, raw_columns=raw, source=source)


def input_columns(obj: Any, columns: Sequence[str] | None, source: str) -> tuple[str, ...]:
    """The raw columns the fitted object was fitted on, in order."""
    names = getattr(obj, "feature_names_in_", None)
    if names is not None:
        names = tuple(str(n) for n in names)
        if columns is not None and tuple(columns) != names:
            raise ModelError(f"{source}: the facts list the columns {', '.join(columns)}, the pipeline was fitted on "
                             f"{', '.join(names)}")
        return names
    n = getattr(obj, "n_features_in_", None)
    if n is None:
        raise ModelError(f"{source}: the {type(obj).__name__} is not fitted (no n_features_in_)")
    if columns is None:
        raise ModelError(f"{source}: the pipeline was fitted on an unnamed array of {n} columns: list their names "
                         "in the facts file (key 'columns')")
    if len(columns) != n:
        raise ModelError(f"{source}: the facts list {len(columns)} columns, the pipeline was fitted on {n}")
    return tuple(columns)


@dataclass(frozen=True)
class SklearnRuntime:
    """The bank's fitted estimator, predicting on raw records typed as it was fitted."""

    name: str
    estimator: Any
    frame: Callable[[Sequence[Mapping[str, Any]]], Any]
    classes: tuple[str, ...]  # the classifier's classes_ as text, in schema.label order

    def decide(self, records: Sequence[Mapping[str, Any]]) -> np.ndarray:
        predicted = self.estimator.predict(self.frame(records))
        index = {c: i for i, c in enumerate(self.classes)}
        return np.array([index[category_key("class", v)] for v in predicted], dtype=np.int64)


def load_pickled(path: str | Path) -> Any:
    """The bank's joblib/pickle file. Unpickling runs code from the file: import only the bank's own files."""
    import joblib

    p = Path(path)
    if not p.is_file():
        raise ModelError(f"{p}: no such file")
    try:
        return joblib.load(p)
    except Exception as exc:  # unpickling raises many types for a bad file
        raise ModelError(f"{p}: cannot load as a joblib/pickle file of scikit-learn objects ({type(exc).__name__}: "
                         f"{str(exc).splitlines()[0] if str(exc) else ''})") from None


def read_sklearn(path: str | Path, facts: BankFacts | None, *, columns: Sequence[str] | None = None,
                 schema: FeatureSchema | None = None, obj: Any = None) -> BankModel:
    """A fitted Pipeline ending in MLPClassifier (or a list [transformer, ..., MLPClassifier]) under the bank's
    facts; or a bare MLPClassifier under the bank's hand-written `schema`. `obj`: the file's objects, when the
    caller has already unpickled them."""
    obj = load_pickled(path) if obj is None else obj
    if schema is not None:
        return _bare_classifier(obj, schema, str(path))
    if facts is None:
        raise ModelError(f"{path}: give the bank's facts (--facts) or a schema (--schema)")
    steps = _steps(obj, str(path))
    *transformers, (clf_name, clf) = steps
    if not transformers:
        raise ModelError(f"{path}: a bare MLPClassifier says nothing of its columns' encoding: save the whole "
                         "Pipeline, or give the bank's schema with --schema")
    listed = isinstance(obj, (list, tuple))
    source = f"scikit-learn {describe_steps(steps) if listed else describe(obj)}"
    network, notes = _classifier_network(clf, f"{path}: step {clf_name!r}")
    fitted_on = transformers[0][1] if listed else obj  # what knows the raw columns it was fitted on
    raw = input_columns(fitted_on, columns, str(path))
    encodings = read_pipeline(transformers, [(n, i) for i, n in enumerate(raw)], "")
    width = sum(e.width for e in encodings)
    if width != network.n_inputs:
        raise ModelError(f"{path}: the transformers write {width} columns, the MLPClassifier reads {network.n_inputs}")
    named = getattr(fitted_on, "feature_names_in_", None) is not None
    pre = preprocessing_from(encodings, facts, transformer=None, raw_columns=raw, source="", named=named)
    classes = classifier_classes(clf, facts, str(path))
    schema = build_schema(pre, facts, classes, source)
    import sklearn

    runtime = SklearnRuntime(f"scikit-learn {sklearn.__version__}", _chain(steps) if listed else obj, pre.frame, classes)
    return BankModel(schema=schema, network=pre.fold(network), runtime=runtime, source=source,
                     notes=tuple(notes) + pre.notes)


def describe_steps(steps: Sequence[tuple[str, Any]]) -> str:
    return f"[{', '.join(describe(s) for _, s in steps)}]"


def _steps(obj: Any, source: str) -> list[tuple[str, Any]]:
    from sklearn.neural_network import MLPClassifier
    from sklearn.pipeline import Pipeline

    if isinstance(obj, Pipeline):
        steps = [(n, s) for n, s in obj.steps if not (s is None or (isinstance(s, str) and s == "passthrough"))]
    elif isinstance(obj, (list, tuple)) and obj and all(not isinstance(s, tuple) for s in obj):
        steps = [(f"{i}:{type(s).__name__}", s) for i, s in enumerate(obj)]
    elif isinstance(obj, MLPClassifier):
        steps = [("classifier", obj)]
    else:
        raise ModelError(f"{source}: holds a {type(obj).__name__}; expected a fitted Pipeline ending in "
                         "MLPClassifier (or a ColumnTransformer and an MLPClassifier)")
    if not steps or not isinstance(steps[-1][1], MLPClassifier):
        last = type(steps[-1][1]).__name__ if steps else "nothing"
        raise ModelError(f"{source}: the pipeline ends in {last}; FairProof certifies an MLPClassifier with ReLU "
                         "hidden layers")
    return steps


def _chain(steps: Sequence[tuple[str, Any]]) -> Any:
    """A list of fitted steps run one after the other, as the bank runs them."""

    class Chain:
        def predict(self, X: Any) -> Any:
            for _, step in steps[:-1]:
                X = step.transform(X)
            return steps[-1][1].predict(X)

    return Chain()


def _classifier_network(clf: Any, source: str) -> tuple[FloatMLP, list[str]]:
    network = mlp_from_classifier(clf, source, two_logits=False)
    network, notes = as_two_logits(network, source)
    if notes:
        notes = ("the MLPClassifier's logistic output unit z rewritten as the two logits (0, z): class "
                 f"{category_key('class', clf.classes_[1])!r} exactly when z > 0",)
    return network, list(notes)


def classifier_classes(clf: Any, facts: BankFacts, source: str) -> tuple[str, ...]:
    """The classifier's classes_ as text; the facts' class_values, if given, must be the same in the same order."""
    classes = tuple(category_key("class", c) for c in clf.classes_)
    if facts.class_values is not None and tuple(facts.class_values) != classes:
        raise ModelError(f"{source}: the classifier's classes are {', '.join(classes)} in that order; the facts' "
                         f"class_values list {', '.join(facts.class_values)}")
    return classes


def build_schema(pre: Preprocessing, facts: BankFacts, classes: Sequence[str], source: str) -> FeatureSchema:
    """The schema over the raw columns, with the label from the model's classes and the facts' labels."""
    if facts.favourable is not None and facts.favourable not in classes:
        raise ModelError(f"the favourable class {facts.favourable!r} is not one of the model's classes "
                         f"{', '.join(classes)}")
    if facts.class_labels is not None and len(facts.class_labels) != len(classes):
        raise ModelError(f"the facts give {len(facts.class_labels)} class labels for the model's {len(classes)} "
                         f"classes ({', '.join(classes)})")
    if facts.label_column in [f.name for f in pre.features]:
        raise ModelError(f"the decision column {facts.label_column!r} is also a column the model reads")
    try:
        label = LabelColumn(column=facts.label_column, values=tuple(classes), labels=facts.class_labels)
        return FeatureSchema(name=facts.name, description=f"imported from {source}", features=pre.features,
                             label=label)
    except ValueError as exc:
        raise ModelError(f"the schema read from {source} is not valid: {first_error(exc)}") from None


def _bare_classifier(obj: Any, schema: FeatureSchema, source: str) -> BankModel:
    """A bare MLPClassifier on the encoded inputs of the bank's hand-written schema (the --schema route)."""
    from sklearn.neural_network import MLPClassifier

    if not isinstance(obj, MLPClassifier):
        raise ModelError(f"{source}: holds a {describe(obj)}; with --schema give a bare MLPClassifier trained on "
                         "the schema's encoding (a whole Pipeline is read with --facts)")
    network, notes = _classifier_network(obj, source)
    classes = tuple(category_key("class", c) for c in obj.classes_)
    if classes != schema.label.values:
        raise ModelError(f"the classifier's classes are {', '.join(classes)} in that order; the schema's label "
                         f"{schema.label.column!r} lists {', '.join(schema.label.values)}")
    if network.n_inputs != schema.n_inputs:
        raise ModelError(f"the network takes {network.n_inputs} inputs but schema {schema.name!r} describes "
                         f"{schema.n_inputs} ({', '.join(schema.feature_names)})")
    import sklearn

    runtime = SklearnRuntime(f"scikit-learn {sklearn.__version__}", obj, schema_encoder(schema), classes)
    return BankModel(schema=schema, network=network, runtime=runtime, source="scikit-learn MLPClassifier",
                     notes=tuple(notes))


def schema_encoder(schema: FeatureSchema) -> Callable[[Sequence[Mapping[str, Any]]], np.ndarray]:
    """raw records -> the schema's encoded inputs (what a network trained on the schema's encoding reads)."""
    def encode(records: Sequence[Mapping[str, Any]]) -> np.ndarray:
        return np.array([schema.encode({a: r[a] for a in schema.attributes}) for r in records],
                        dtype=np.float64).reshape(len(records), schema.n_inputs)

    return encode
