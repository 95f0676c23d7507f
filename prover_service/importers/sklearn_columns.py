"""A fitted scikit-learn transformer read column by column: what each raw column becomes (`ColumnEncoding`:
passed through, scaled, one-hot or ordinal encoded, the inputs it writes), from the fitted attributes of
the transformer's steps (ColumnTransformer, Pipeline, the scalers and encoders), anything else refused
with a sentence naming the step and the column. The raw records are typed the same way
for the bank's own pipeline (`record_frame`).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from fairness.errors import ModelError
from fairness.schema import category_key, number


KNOWN_STEPS = ("StandardScaler, MinMaxScaler, MaxAbsScaler, RobustScaler, OneHotEncoder, OrdinalEncoder, "
               "'passthrough', 'drop', and Pipelines and ColumnTransformers of these")


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
        return read_pipeline(transformer.steps, columns, step)
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


def read_pipeline(steps: Sequence[tuple[str, Any]], columns: Sequence[Column], step: str) -> list[ColumnEncoding]:
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
