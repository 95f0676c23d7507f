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
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from fairness.errors import ModelError
from fairness.model import FloatMLP, mlp_from_classifier
from fairness.schema import (CategoricalFeature, FeatureSchema, LabelColumn, NumericFeature, SensitiveAttribute,
                             category_key, number)

from . import BankFacts, BankModel
from .bank_facts import facts_not_used
from .rewrites import InputScaling, as_two_logits, fold_input_scaling

KNOWN_STEPS = ("StandardScaler, MinMaxScaler, MaxAbsScaler, RobustScaler, OneHotEncoder, OrdinalEncoder, "
               "'passthrough', 'drop', and Pipelines and ColumnTransformers of these")
MAX_CODE_VALUES = 64  # a numeric sensitive column's integer values, when only its domain gives them


# --------------------------------------------------------------------------- one raw column, as encoded


@dataclass
class ColumnEncoding:
    """How the fitted transformer turns one raw column into model inputs.

    `kind`: "numeric" (one input, the value), "ordinal" (one input, the category's index) or "one_hot"
    (one input per kept category). `scalings`: per input, the (mean, std) the steps after the encoder apply,
    composed: (x - mean) / std.
    """

    column: str
    position: int  # index among the raw columns the whole transformer was fitted on
    kind: str
    step: str
    categories: tuple[Any, ...] = ()
    drop: Any = None
    scalings: list[tuple[float, float]] = field(default_factory=list)
    scaled_by: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        if not self.scalings:
            self.scalings = [(0.0, 1.0)] * self.width

    @property
    def width(self) -> int:
        if self.kind == "one_hot":
            return len(self.categories) - (self.drop is not None)
        return 1

    def scale(self, i: int, mean: float, std: float) -> None:
        """Compose (x - m1) / s1 with (y - mean) / std: x -> (x - (m1 + mean * s1)) / (s1 * std)."""
        m1, s1 = self.scalings[i]
        self.scalings[i] = (mean, std) if (m1, s1) == (0.0, 1.0) else (m1 + mean * s1, s1 * std)


Column = tuple[str, int]  # (raw name, position among the raw columns)


def read_transformer(transformer: Any, columns: Sequence[Column], step: str) -> list[ColumnEncoding]:
    """The encodings of `columns` by one fitted transformer, in its output order."""
    if transformer is None or (isinstance(transformer, str) and transformer == "passthrough"):
        return [ColumnEncoding(name, pos, "numeric", step) for name, pos in columns]
    if isinstance(transformer, str) and transformer == "drop":
        return []
    from sklearn.compose import ColumnTransformer
    from sklearn.pipeline import Pipeline
    from sklearn.preprocessing import FunctionTransformer, OneHotEncoder, OrdinalEncoder

    if isinstance(transformer, FunctionTransformer) and transformer.func is None:
        # remainder="passthrough" is fitted as an identity FunctionTransformer
        return [ColumnEncoding(name, pos, "numeric", step) for name, pos in columns]

    if isinstance(transformer, Pipeline):
        return _read_pipeline(transformer.steps, columns, step)
    if isinstance(transformer, ColumnTransformer):
        return _read_column_transformer(transformer, columns, step)
    if _is_scaler(transformer):
        encodings = [ColumnEncoding(name, pos, "numeric", step) for name, pos in columns]
        return apply_scaler(encodings, transformer, step)
    if isinstance(transformer, OneHotEncoder):
        return _read_one_hot(transformer, columns, step)
    if isinstance(transformer, OrdinalEncoder):
        return _read_ordinal(transformer, columns, step)
    raise ModelError(f"step {step!r} is a {type(transformer).__name__}, which FairProof cannot represent exactly "
                     f"(it reads {_names(columns)}); supported: {KNOWN_STEPS}")


def _read_pipeline(steps: Sequence[tuple[str, Any]], columns: Sequence[Column], step: str) -> list[ColumnEncoding]:
    """The first step encodes the columns; every later step must scale what it gives, input by input."""
    if not steps:
        raise ModelError(f"step {step!r} is an empty Pipeline")
    first_name, first = steps[0]
    encodings = read_transformer(first, columns, _join(step, first_name))
    for name, later in steps[1:]:
        where = _join(step, name)
        if later is None or (isinstance(later, str) and later == "passthrough"):
            continue
        if not _is_scaler(later):
            raise ModelError(f"step {where!r} is a {type(later).__name__} after {type(first).__name__} "
                             f"(on {_names(columns)}); only a scaler can follow an encoder exactly")
        encodings = apply_scaler(encodings, later, where)
    return encodings


def _read_column_transformer(ct: Any, columns: Sequence[Column], step: str) -> list[ColumnEncoding]:
    if not hasattr(ct, "transformers_"):
        raise ModelError(f"step {step!r}: the ColumnTransformer is not fitted")
    weights = ct.transformer_weights or {}
    used: dict[str, str] = {}
    encodings: list[ColumnEncoding] = []
    for name, transformer, selection in ct.transformers_:
        where = _join(step, name)
        chosen = resolve_columns(selection, columns, where)
        if not chosen or (isinstance(transformer, str) and transformer == "drop"):
            continue
        for column, _ in chosen:
            if column in used:
                raise ModelError(f"column {column!r} is used twice, by step {used[column]!r} and by step "
                                 f"{where!r}: FairProof needs each raw column encoded once")
            used[column] = where
        block = read_transformer(transformer, chosen, where)
        expected = _output_width(ct, name)
        if expected is not None and expected != sum(e.width for e in block):
            raise ModelError(f"step {where!r} writes {expected} columns, FairProof reads {sum(e.width for e in block)} "
                             f"from its fitted attributes (on {_names(chosen)})")
        weight = weights.get(name, 1.0)
        if weight != 1.0:
            if not (isinstance(weight, (int, float)) and math.isfinite(weight) and weight > 0):
                raise ModelError(f"step {where!r}: transformer weight {weight!r} cannot be represented (it must be "
                                 "a positive number)")
            for e in block:
                for i in range(e.width):
                    e.scale(i, 0.0, 1.0 / weight)
                e.scaled_by.append(f"{where} weight {weight:g}")
        encodings.extend(block)
    return encodings


def _join(step: str, name: str) -> str:
    """A nested step's name as the bank would write it: outer/inner."""
    return f"{step}/{name}" if step else str(name)


def _output_width(ct: Any, name: str) -> int | None:
    indices = getattr(ct, "output_indices_", None)
    if not indices or name not in indices:
        return None
    s = indices[name]
    return s.stop - s.start


def _read_one_hot(encoder: Any, columns: Sequence[Column], step: str) -> list[ColumnEncoding]:
    if not hasattr(encoder, "categories_"):
        raise ModelError(f"step {step!r}: the OneHotEncoder is not fitted")
    _refuse_infrequent(encoder, columns, step)
    drops = getattr(encoder, "drop_idx_", None)
    out = []
    for i, (name, pos) in enumerate(columns):
        categories = tuple(encoder.categories_[i])
        drop_index = None if drops is None else drops[i]
        drop = None if drop_index is None else categories[int(drop_index)]
        out.append(ColumnEncoding(name, pos, "one_hot", step, categories=categories, drop=drop))
    return out


def _read_ordinal(encoder: Any, columns: Sequence[Column], step: str) -> list[ColumnEncoding]:
    if not hasattr(encoder, "categories_"):
        raise ModelError(f"step {step!r}: the OrdinalEncoder is not fitted")
    _refuse_infrequent(encoder, columns, step)
    return [ColumnEncoding(name, pos, "ordinal", step, categories=tuple(encoder.categories_[i]))
            for i, (name, pos) in enumerate(columns)]


def _refuse_infrequent(encoder: Any, columns: Sequence[Column], step: str) -> None:
    """Grouping rare categories makes one input stand for several values the schema would tell apart."""
    kind = type(encoder).__name__
    if getattr(encoder, "handle_unknown", None) == "infrequent_if_exist":
        raise ModelError(f"step {step!r}: {kind} with handle_unknown='infrequent_if_exist' (on {_names(columns)}) "
                         "cannot be represented exactly; refit it with handle_unknown='error' or 'ignore'")
    if getattr(encoder, "min_frequency", None) is not None or getattr(encoder, "max_categories", None) is not None \
            or getattr(encoder, "_infrequent_enabled", False):
        raise ModelError(f"step {step!r}: {kind} groups infrequent categories (min_frequency/max_categories, on "
                         f"{_names(columns)}), which cannot be represented exactly; refit it without")


def _is_scaler(obj: Any) -> bool:
    from sklearn.preprocessing import MaxAbsScaler, MinMaxScaler, RobustScaler, StandardScaler

    return isinstance(obj, (StandardScaler, MinMaxScaler, MaxAbsScaler, RobustScaler))


def apply_scaler(encodings: list[ColumnEncoding], scaler: Any, step: str) -> list[ColumnEncoding]:
    """Compose a fitted scaler, one (mean, std) per input, onto the encodings (in their output order)."""
    width = sum(e.width for e in encodings)
    n = getattr(scaler, "n_features_in_", None)
    if n is None:
        raise ModelError(f"step {step!r}: the {type(scaler).__name__} is not fitted")
    if n != width:
        raise ModelError(f"step {step!r}: the {type(scaler).__name__} was fitted on {n} columns, the steps before it "
                         f"give {width}")
    params = scaler_parameters(scaler, step)
    i = 0
    for e in encodings:
        for j in range(e.width):
            mean, std = params[i]
            if not (math.isfinite(mean) and math.isfinite(std) and std > 0):
                raise ModelError(f"step {step!r}: column {e.column!r} is scaled by {1 / std if std else 0:g}, which "
                                 "cannot be represented (a positive finite scale is needed)")
            e.scale(j, mean, std)
            i += 1
        e.scaled_by.append(f"{type(scaler).__name__} in step {step!r}")
    return encodings


def scaler_parameters(scaler: Any, step: str) -> list[tuple[float, float]]:
    """Each input's (mean, std) such that the scaler computes (x - mean) / std."""
    from sklearn.preprocessing import MaxAbsScaler, MinMaxScaler, RobustScaler, StandardScaler

    n = scaler.n_features_in_
    if isinstance(scaler, StandardScaler):
        means = scaler.mean_ if scaler.with_mean and scaler.mean_ is not None else np.zeros(n)
        scales = scaler.scale_ if scaler.with_std and scaler.scale_ is not None else np.ones(n)
        return [(float(m), float(s)) for m, s in zip(means, scales)]
    if isinstance(scaler, MinMaxScaler):
        if scaler.clip:
            raise ModelError(f"step {step!r}: MinMaxScaler(clip=True) is not an affine map (it clips values outside "
                             "the fitted range); refit it with clip=False")
        return [(float(-m / s), float(1 / s)) for m, s in zip(scaler.min_, scaler.scale_)]
    if isinstance(scaler, MaxAbsScaler):
        return [(0.0, float(s)) for s in scaler.scale_]
    if isinstance(scaler, RobustScaler):
        centres = scaler.center_ if scaler.with_centering else np.zeros(n)
        scales = scaler.scale_ if scaler.with_scaling else np.ones(n)
        return [(float(m), float(s)) for m, s in zip(centres, scales)]
    raise ModelError(f"step {step!r}: {type(scaler).__name__} is not a scaler FairProof reads")


def resolve_columns(selection: Any, columns: Sequence[Column], step: str) -> list[Column]:
    """The raw columns a ColumnTransformer entry selects: by name, index, slice or boolean mask."""
    names = [c[0] for c in columns]
    if isinstance(selection, (str, int, np.integer)):
        selection = [selection]
    if isinstance(selection, slice):
        return list(columns[_slice_of(selection, names, step)])
    items = list(np.asarray(selection, dtype=object).ravel()) if not isinstance(selection, list) else selection
    if items and all(isinstance(v, (bool, np.bool_)) for v in items):
        if len(items) != len(columns):
            raise ModelError(f"step {step!r}: a boolean column mask of {len(items)} for {len(columns)} columns")
        return [c for c, keep in zip(columns, items) if keep]
    out = []
    for v in items:
        if isinstance(v, str):
            if v not in names:
                raise ModelError(f"step {step!r} reads column {v!r}, which is not one of {', '.join(names)}")
            out.append(columns[names.index(v)])
        elif isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_)):
            if not -len(columns) <= int(v) < len(columns):
                raise ModelError(f"step {step!r} reads column {int(v)}, there are {len(columns)}")
            out.append(columns[int(v)])
        else:
            raise ModelError(f"step {step!r}: column selection {v!r} is neither a name nor an index")
    return out


def _slice_of(s: slice, names: Sequence[str], step: str) -> slice:
    if isinstance(s.start, str) or isinstance(s.stop, str):  # pandas label slices include their end
        try:
            start = names.index(s.start) if s.start is not None else None
            stop = names.index(s.stop) + 1 if s.stop is not None else None
        except ValueError:
            raise ModelError(f"step {step!r}: column slice {s!r} names a column that is not one of "
                             f"{', '.join(names)}") from None
        return slice(start, stop, s.step)
    return s


def _names(columns: Sequence[Column]) -> str:
    return ", ".join(repr(c[0]) for c in columns) or "no columns"


# --------------------------------------------------------------------------- encodings -> schema features


@dataclass(frozen=True)
class Preprocessing:
    """A fitted transformer read as schema features: what a network after it reads, and how to run it."""

    features: tuple[Any, ...]           # schema features (raw columns) in model-input order
    scalings: tuple[InputScaling, ...]  # per model input, to fold into the network's first layer
    notes: tuple[str, ...]
    source: str                         # e.g. "ColumnTransformer(StandardScaler, OneHotEncoder)"
    transformer: Any                    # the fitted object (None when only encodings were read)
    frame: Callable[[Sequence[Mapping[str, Any]]], Any]  # raw records -> the input the transformer was fitted on

    @property
    def n_inputs(self) -> int:
        return sum(len(f.inputs) for f in self.features)

    def fold(self, network: FloatMLP) -> FloatMLP:
        """The network reading the schema's inputs (every non-schema scaling folded into layer 0)."""
        return fold_input_scaling(network, self.scalings) if self.scalings else network

    def transform(self, records: Sequence[Mapping[str, Any]]) -> np.ndarray:
        """The bank's own transformer on raw records (dense float64)."""
        out = self.transformer.transform(self.frame(records))
        out = out.toarray() if hasattr(out, "toarray") else out
        return np.asarray(out, dtype=np.float64)


def read_preprocessor(transformer: Any, facts: BankFacts, *, columns: Sequence[str] | None = None,
                      source: str = "preprocessor") -> Preprocessing:
    """A fitted ColumnTransformer, Pipeline of transformers or scaler, as schema features under `facts`.

    `columns`: the raw column names, when the transformer was fitted on an unnamed array (else read from its
    feature_names_in_).
    """
    raw = input_columns(transformer, columns, source)
    encodings = read_transformer(transformer, [(name, i) for i, name in enumerate(raw)], "")
    return preprocessing_from(encodings, facts, transformer=transformer, raw_columns=raw, source=source)


def preprocessing_from(encodings: Sequence[ColumnEncoding], facts: BankFacts, *, transformer: Any,
                       raw_columns: Sequence[str], source: str,
                       named: bool | None = None) -> Preprocessing:
    """Schema features, folds and notes from the encodings; refuses a sensitive column the model does not use."""
    present = [e.column for e in encodings]
    for name in facts.sensitive:
        if name not in present:
            where = "is dropped by the pipeline" if name in raw_columns else \
                f"is not a column of the pipeline (its columns: {', '.join(raw_columns)})"
            raise ModelError(f"sensitive column {name!r} {where}: the model must read every sensitive column")
    unused = facts_not_used(facts, present)
    if unused:
        raise ModelError(f"the facts name column(s) {', '.join(map(repr, unused))}, which the model does not use "
                         f"(it reads {', '.join(present)})")
    features, scalings, notes = [], [], []
    column = 0
    for e in encodings:
        feature, folded, note = _feature(e, facts, column)
        features.append(feature)
        scalings.extend(folded)
        notes.extend(note)
        column += e.width
    named = bool(getattr(transformer, "feature_names_in_", None) is not None) if named is None else named
    frame = record_frame(encodings, raw_columns, named=named)
    return Preprocessing(features=tuple(features), scalings=tuple(scalings), notes=tuple(notes),
                         source=f"{source} {describe(transformer)}".strip(), transformer=transformer, frame=frame)


def _feature(e: ColumnEncoding, facts: BankFacts, first: int) -> tuple[Any, list[InputScaling], list[str]]:
    """One encoding as a schema feature, plus the scalings to fold (model input columns from `first`)."""
    scaled = [(first + i, m, s) for i, (m, s) in enumerate(e.scalings) if (m, s) != (0.0, 1.0)]
    by = " then ".join(e.scaled_by) or "its scaling"
    if e.column in facts.sensitive:
        feature = _sensitive(e, facts)
        folds = [InputScaling(c, m, s) for c, m, s in scaled]
        return feature, folds, _fold_notes(f"sensitive column {e.column!r}", by, scaled)
    if e.kind == "numeric":
        mean, std = e.scalings[0]
        lo, hi = _domain(e, facts)
        return NumericFeature(kind="numeric", name=e.column, min=lo, max=hi, mean=mean, std=std,
                              unit=facts.units.get(e.column, "")), [], []
    categories = _category_texts(e)
    labels = _labels(e.column, categories, facts)
    if e.kind == "ordinal":
        mean, std = e.scalings[0]
        return CategoricalFeature(kind="categorical", name=e.column, categories=categories, labels=labels,
                                  encoding="ordinal", mean=mean, std=std), [], []
    drop = None if e.drop is None else category_key(e.column, e.drop)
    feature = CategoricalFeature(kind="categorical", name=e.column, categories=categories, labels=labels,
                                 encoding="one_hot", drop=drop)
    notes = _fold_notes(f"one-hot column {e.column!r}", by, scaled)
    return feature, [InputScaling(c, m, s) for c, m, s in scaled], notes


def _fold_notes(what: str, by: str, scaled: Sequence[tuple[int, float, float]]) -> list[str]:
    """The rewrite said in words: which scaling went into the first layer (the schema keeps exact points)."""
    if not scaled:
        return []
    if len(scaled) == 1:
        _, m, s = scaled[0]
        how = f"(x - {m:.6g}) / {s:.6g}"
    else:
        how = f"a centre and scale on each of its {len(scaled)} inputs"
    return [f"{what}: {by}, {how}, folded exactly into the first layer, which reads the unscaled inputs"]


def _sensitive(e: ColumnEncoding, facts: BankFacts) -> SensitiveAttribute:
    if e.kind == "one_hot":
        values = _category_texts(e)
        drop = None if e.drop is None else category_key(e.column, e.drop)
        return _sensitive_attribute(e.column, values, _labels(e.column, values, facts), encoding="one_hot", drop=drop)
    if e.kind == "ordinal":
        values = _category_texts(e)
        return _sensitive_attribute(e.column, values, _labels(e.column, values, facts),
                                    codes=tuple(range(len(values))))
    values, codes = _integer_values(e, facts)
    return _sensitive_attribute(e.column, values, _labels(e.column, values, facts), codes=codes)


def _sensitive_attribute(name: str, values: tuple[str, ...], labels: tuple[str, ...] | None, *,
                         encoding: str = "code", drop: str | None = None,
                         codes: tuple[int, ...] | None = None) -> SensitiveAttribute:
    if len(values) < 2:
        raise ModelError(f"sensitive column {name!r} has a single value ({', '.join(values)}) in the fitted "
                         "encoder: a certificate needs at least two")
    try:
        return SensitiveAttribute(kind="sensitive", name=name, values=values, labels=labels, encoding=encoding,
                                  drop=drop, codes=codes)
    except ValueError as exc:
        raise ModelError(f"sensitive column {name!r}: {_first_error(exc)}") from None


def _integer_values(e: ColumnEncoding, facts: BankFacts) -> tuple[tuple[str, ...], tuple[int, ...]]:
    """A numeric sensitive column's values: the facts' value_labels (integers), else its integer domain."""
    if e.column in facts.value_labels:
        values = tuple(facts.value_labels[e.column])
        try:
            codes = tuple(int(v) for v in values)
        except ValueError:
            raise ModelError(f"sensitive column {e.column!r} is numeric in step {e.step!r}: its values must be "
                             f"integers, the facts' value_labels give {', '.join(values)}") from None
        order = sorted(range(len(codes)), key=codes.__getitem__)
        return tuple(str(codes[i]) for i in order), tuple(codes[i] for i in order)
    domain = facts.domains.get(e.column)
    if domain is not None and all(float(v).is_integer() for v in domain) and domain[1] - domain[0] < MAX_CODE_VALUES:
        codes = tuple(range(int(domain[0]), int(domain[1]) + 1))
        return tuple(str(c) for c in codes), codes
    raise ModelError(f"sensitive column {e.column!r} is numeric in step {e.step!r}: list its integer values in the "
                     f"facts' value_labels (e.g. {e.column}: {{1: ..., 2: ...}}) or give it an integer domain")


def _domain(e: ColumnEncoding, facts: BankFacts) -> tuple[float, float]:
    domain = facts.domains.get(e.column)
    if domain is None:
        raise ModelError(f"numeric column {e.column!r} (step {e.step!r}) has no domain: give its [min, max] in the "
                         "facts' domains, or take it from data with --domain-from DATA.csv")
    return float(domain[0]), float(domain[1])


def _category_texts(e: ColumnEncoding) -> tuple[str, ...]:
    try:
        texts = tuple(category_key(e.column, c) for c in e.categories)
    except ValueError as exc:
        raise ModelError(f"step {e.step!r}: column {e.column!r} has a category FairProof cannot name ({exc}); "
                         "refit the encoder without missing values") from None
    if len(set(texts)) != len(texts) or not all(texts):
        raise ModelError(f"step {e.step!r}: column {e.column!r} has categories that read alike as text: "
                         f"{', '.join(map(repr, e.categories))}")
    return texts


def _labels(column: str, values: tuple[str, ...], facts: BankFacts) -> tuple[str, ...] | None:
    given = facts.value_labels.get(column)
    if not given:
        return None
    unknown = [v for v in given if v not in values]
    if unknown:
        raise ModelError(f"the facts label value(s) {', '.join(map(repr, unknown))} of column {column!r}, which the "
                         f"fitted encoder does not know (its values: {', '.join(values)})")
    labels = tuple(given.get(v, v) for v in values)
    if len(set(labels)) != len(labels):
        raise ModelError(f"the facts' value_labels of column {column!r} give two values the same label")
    return labels


def _first_error(exc: Exception) -> str:
    errors = getattr(exc, "errors", None)
    if callable(errors):
        return "; ".join(str(e.get("msg", e)) for e in errors())
    return str(exc)


# --------------------------------------------------------------------------- raw records -> the pipeline's input


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


def record_frame(encodings: Sequence[ColumnEncoding], raw_columns: Sequence[str], *,
                 named: bool) -> Callable[[Sequence[Mapping[str, Any]]], Any]:
    """raw records -> a DataFrame (fitted on one) or an array, each column typed as the pipeline saw it."""
    converters = {e.column: _converter(e) for e in encodings}
    numeric_only = all(e.kind == "numeric" for e in encodings)

    def frame(records: Sequence[Mapping[str, Any]]) -> Any:
        table = {c: [converters[c](r[c]) for r in records] if c in converters else [None] * len(records)
                 for c in raw_columns}
        if named:
            import pandas as pd

            return pd.DataFrame({c: pd.Series(v, dtype="float64" if c in converters and
                                              _numeric(encodings, c) else None) for c, v in table.items()},
                                columns=list(raw_columns))
        if numeric_only:
            return np.array([[0.0 if v is None else v for v in vs] for vs in zip(*table.values())],
                            dtype=np.float64).reshape(len(records), len(raw_columns))
        rows = np.empty((len(records), len(raw_columns)), dtype=object)
        for j, c in enumerate(raw_columns):
            rows[:, j] = table[c]
        return rows

    return frame


def _numeric(encodings: Sequence[ColumnEncoding], column: str) -> bool:
    return any(e.column == column and e.kind == "numeric" for e in encodings)


def _converter(e: ColumnEncoding) -> Callable[[Any], Any]:
    """A raw value as the fitted step saw its column: a float, or the encoder's own category object."""
    if e.kind == "numeric":
        return lambda raw: number(e.column, raw)
    by_text = {category_key(e.column, c): c for c in e.categories}

    def category(raw: Any) -> Any:
        value = by_text.get(category_key(e.column, raw), raw)
        return value.item() if isinstance(value, np.generic) else value

    return category


def describe(obj: Any) -> str:
    """A fitted object's shape in words, e.g. Pipeline(ColumnTransformer(StandardScaler, OneHotEncoder), MLPClassifier)."""
    from sklearn.compose import ColumnTransformer
    from sklearn.pipeline import Pipeline

    if obj is None:
        return ""
    if isinstance(obj, str):
        return repr(obj)
    if isinstance(obj, Pipeline):
        return f"Pipeline({', '.join(describe(s) for _, s in obj.steps)})"
    if isinstance(obj, ColumnTransformer):
        parts = [describe(t) for _, t, cols in getattr(obj, "transformers_", obj.transformers)
                 if not (isinstance(t, str) and t == "drop")]
        return f"ColumnTransformer({', '.join(dict.fromkeys(parts))})"
    return type(obj).__name__


# --------------------------------------------------------------------------- the whole pipeline


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
                 schema: FeatureSchema | None = None) -> BankModel:
    """A fitted Pipeline ending in MLPClassifier (or a list [transformer, ..., MLPClassifier]) under the bank's
    facts; or a bare MLPClassifier under the bank's hand-written `schema`."""
    obj = load_pickled(path)
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
    encodings = _read_pipeline(transformers, [(n, i) for i, n in enumerate(raw)], "")
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
        raise ModelError(f"the schema read from {source} is not valid: {_first_error(exc)}") from None


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
