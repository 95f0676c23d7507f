"""A bank's fitted tree-ensemble pipeline, read from its own fitted objects, and the checked import.

The bank hands over the Pipeline it serves: its preprocessing (a ColumnTransformer of scalers and
encoders, read exactly as for networks by the scikit-learn importer) and, as the last step, an XGBClassifier,
an LGBMClassifier, or a scikit-learn GradientBoostingClassifier, HistGradientBoostingClassifier,
RandomForestClassifier or ExtraTreesClassifier. The schema comes from the fitted preprocessing under
the bank's facts; the ensemble from the classifier's own fitted trees (`fairness.trees.loaders`), a
scaling the schema cannot hold (a scaled sensitive or one-hot column) composed exactly into the
thresholds of that column.

The checked import runs the fixed-point ensemble and the bank's own pipeline on every row of the bank's
data (and compares with the decisions it recorded, if given): any row where they differ refuses the
import, naming the rows. A tree has no logit margin to call a difference a rounding tie: every
difference is refused.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np

from fairness.errors import DataError, ModelError
from fairness.fixed_point import SensitiveDomain, quantise_vector
from fairness.schema import FeatureSchema, RecordError
from fairness.trees.ensemble import TreeEnsemble, TreeModel
from fairness.trees.loaders import DEFAULT_SCALE_BITS, DEFAULT_VALUE_BITS, from_lightgbm, from_sklearn, from_xgboost

from . import BankFacts, BankRuntime
from .sklearn_columns import describe, read_transformer
from .sklearn_features import preprocessing_from
from .sklearn_pipeline import SklearnRuntime, build_schema, classifier_classes, input_columns, load_pickled

SHOWN_ROWS = 10


@dataclass(frozen=True)
class TreeBankModel:
    """A bank's tree ensemble as read from its own files: schema, the fixed-point model, the bank's runtime."""

    schema: FeatureSchema
    model: TreeModel           # the integer ensemble over schema.feature_names, with the box and sensitive domains
    runtime: BankRuntime
    source: str                # e.g. "scikit-learn Pipeline(ColumnTransformer(StandardScaler, OneHotEncoder), XGBClassifier)"
    notes: tuple[str, ...] = ()


def tree_model(ensemble: TreeEnsemble, schema: FeatureSchema) -> TreeModel:
    """The ensemble with the schema's domain box (rounded outward) and its sensitive attributes' points, all at
    the ensemble's input scale."""
    if ensemble.n_inputs != schema.n_inputs:
        raise ModelError(f"the ensemble reads {ensemble.n_inputs} inputs, schema {schema.name!r} describes "
                         f"{schema.n_inputs} ({', '.join(schema.feature_names)})")
    if ensemble.n_classes != len(schema.label.values):
        raise ModelError(f"the ensemble decides between {ensemble.n_classes} classes, the schema's label "
                         f"{schema.label.column!r} lists {len(schema.label.values)}")
    s = ensemble.scale_bits
    lower, upper = schema.quantised_box(s)
    sensitive = tuple(SensitiveDomain(f.name, tuple(range(c, c + len(f.inputs))),
                                      tuple(tuple(v << s for v in p) for p in f.points), tuple(f.value_labels))
                      for f, c in schema.sensitive_columns())
    return TreeModel(ensemble, lower, upper, sensitive)


# The classifiers a tree pipeline may end with (the loaders read each one's own fitted trees).
TREE_CLASSIFIERS = frozenset({"XGBClassifier", "LGBMClassifier", "GradientBoostingClassifier",
                              "HistGradientBoostingClassifier", "RandomForestClassifier", "ExtraTreesClassifier"})


def is_tree_pipeline(obj: Any) -> bool:
    """Whether `obj` is a fitted Pipeline whose last step is one of the tree-ensemble classifiers read here."""
    from sklearn.pipeline import Pipeline

    return isinstance(obj, Pipeline) and len(obj.steps) >= 2 and type(obj.steps[-1][1]).__name__ in TREE_CLASSIFIERS


def read_tree_pipeline(source: Any, facts: BankFacts, *, columns: Sequence[str] | None = None,
                       scale_bits: int = DEFAULT_SCALE_BITS, value_bits: int = DEFAULT_VALUE_BITS) -> TreeBankModel:
    """A fitted Pipeline (or its joblib file) whose last step is a tree-ensemble classifier, under the facts."""
    from sklearn.pipeline import Pipeline

    where = str(source) if isinstance(source, (str, Path)) else "pipeline"
    obj = load_pickled(source) if isinstance(source, (str, Path)) else source
    if not isinstance(obj, Pipeline) or len(obj.steps) < 2:
        raise ModelError(f"{where}: expected a fitted Pipeline of the preprocessing and a tree-ensemble classifier "
                         f"(got {describe(obj)}); a bare classifier says nothing of its columns' encoding")
    clf_name, clf = obj.steps[-1]
    raw = input_columns(obj, columns, where)
    encodings = read_transformer(obj[:-1], [(n, i) for i, n in enumerate(raw)], "")
    named = getattr(obj, "feature_names_in_", None) is not None
    pre = preprocessing_from(encodings, facts, transformer=None, raw_columns=raw, source="", named=named)
    scalings = {sc.column: (sc.mean, sc.std) for sc in pre.scalings}
    ensemble = _ensemble(clf, f"{where}: step {clf_name!r}", scale_bits, value_bits, scalings)
    if ensemble.n_inputs < pre.n_inputs:  # a booster sized by the highest feature it splits on
        ensemble = TreeEnsemble(pre.n_inputs, ensemble.n_classes, ensemble.scale_bits, ensemble.value_bits,
                                ensemble.trees, ensemble.base)
    if ensemble.n_inputs != pre.n_inputs:
        raise ModelError(f"{where}: the transformers write {pre.n_inputs} columns, the {type(clf).__name__} reads "
                         f"{ensemble.n_inputs}")
    classes = classifier_classes(clf, facts, where)
    text = f"scikit-learn {describe(obj)}"
    schema = build_schema(pre, facts, classes, text)
    import sklearn

    runtime = SklearnRuntime(f"scikit-learn {sklearn.__version__} {_library(clf)}".strip(), obj, pre.frame, classes)
    notes = tuple(n.replace("folded exactly into the first layer, which reads the unscaled inputs",
                            "composed exactly into that input's thresholds") for n in pre.notes)
    return TreeBankModel(schema=schema, model=tree_model(ensemble, schema), runtime=runtime, source=text, notes=notes)


def _ensemble(clf: Any, where: str, scale_bits: int, value_bits: int, scalings: dict[int, tuple[float, float]]
              ) -> TreeEnsemble:
    kind = type(clf).__name__
    try:
        if kind == "XGBClassifier":
            return from_xgboost(bytes(clf.get_booster().save_raw("json")), n_inputs=int(clf.n_features_in_),
                                scale_bits=scale_bits, value_bits=value_bits, scalings=scalings)
        if kind == "LGBMClassifier":
            return from_lightgbm(clf.booster_.dump_model(), n_inputs=int(clf.n_features_in_),
                                 scale_bits=scale_bits, value_bits=value_bits, scalings=scalings)
        return from_sklearn(clf, scale_bits=scale_bits, value_bits=value_bits, scalings=scalings)
    except ModelError as exc:
        raise ModelError(f"{where}: {exc}") from None


def _library(clf: Any) -> str:
    kind = type(clf).__name__
    if kind == "XGBClassifier":
        import xgboost

        return f"+ xgboost {xgboost.__version__}"
    if kind == "LGBMClassifier":
        import lightgbm

        return f"+ lightgbm {lightgbm.__version__}"
    return ""


# --------------------------------------------------------------------------- the checked import


@dataclass(frozen=True)
class TreeRowDisagreement:
    row: int             # the row's number as the bank counts it (its CSV line when given)
    runtime: int         # the bank's own pipeline
    imported: int        # the fixed-point ensemble
    recorded: int | None

    def describe(self, labels: Sequence[str]) -> str:
        recorded = "" if self.recorded is None else f"recorded {labels[self.recorded]!r}, "
        return (f"row {self.row}: {recorded}bank's pipeline {labels[self.runtime]!r}, "
                f"imported ensemble {labels[self.imported]!r}")


@dataclass(frozen=True)
class TreeImportCheck:
    rows: int
    runtime: str

    def summary(self) -> str:
        return f"decisions checked on {self.rows} rows of the bank's data: all agree with {self.runtime}"


def imported_decisions(bank: TreeBankModel, records: Sequence[Mapping[str, Any]]) -> np.ndarray:
    """The fixed-point ensemble's decision on each raw record (the schema's encoding of its attributes, other
    fields ignored as in the bank's CSV, quantised half up)."""
    s = bank.model.scale_bits
    attributes = bank.schema.attributes
    out = []
    for i, r in enumerate(records):
        try:
            x = bank.schema.encode({a: r[a] for a in attributes if a in r})
        except RecordError as exc:
            raise DataError(f"record {i}: {exc}") from None
        out.append(bank.model.ensemble.decision(quantise_vector(x, s)))
    return np.array(out, dtype=np.int64)


def check_tree_import(bank: TreeBankModel, records: Sequence[Mapping[str, Any]], *,
                      rows: Sequence[int] | None = None, recorded: Sequence[int] | None = None) -> TreeImportCheck:
    """Refuse (ModelError naming the rows) unless the fixed-point ensemble decides as the bank's pipeline, and as
    the recorded decisions when given, on every record. `rows`: the bank's number of each record (e.g. its CSV
    line; default 1, 2, ...)."""
    if not records:
        raise DataError("the checked import needs the bank's data: no rows given")
    numbers = list(rows) if rows is not None else list(range(1, len(records) + 1))
    if len(numbers) != len(records) or (recorded is not None and len(recorded) != len(records)):
        raise DataError("rows and recorded decisions need one entry per record")
    imported = imported_decisions(bank, records)
    try:
        run = np.asarray(bank.runtime.decide(records), dtype=np.int64)
    except (DataError, ModelError):
        raise
    except Exception as exc:  # the bank's runtime raises its own types
        raise ModelError(f"the bank's own runtime ({bank.runtime.name}) fails on the records "
                         f"({type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''})") from None
    bad = imported != run
    if recorded is not None:
        bad |= imported != np.asarray(recorded, dtype=np.int64)
    if bad.any():
        found = [TreeRowDisagreement(numbers[i], int(run[i]), int(imported[i]),
                                     None if recorded is None else int(recorded[i]))
                 for i in map(int, np.flatnonzero(bad))]
        labels = bank.schema.class_labels
        shown = "; ".join(d.describe(labels) for d in found[:SHOWN_ROWS])
        more = f" (and {len(found) - SHOWN_ROWS} more)" if len(found) > SHOWN_ROWS else ""
        raise ModelError(f"the imported ensemble does not decide as the bank's model on {len(found)} of "
                         f"{len(records)} rows: {shown}{more}")
    return TreeImportCheck(rows=len(records), runtime=bank.runtime.name)
