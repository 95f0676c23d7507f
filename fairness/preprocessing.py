"""The preprocessing that turns a raw customer record into a model input vector, as the shipped datasets
use it (`fairness.datasets` loads them).

Categorical attributes are label-encoded, every non-sensitive feature is standardised with the mean and
standard deviation of the training split only, and each sensitive feature is kept as its raw code 0..m-1
(0/1 when binary) so that its domain is a small set of exact integers. A `Dataset` is the result: the
preprocessed splits with their `Preprocessor` and sensitive features; `dataset_schema` states the same
preprocessing as a feature schema.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

import numpy as np

from fairness.errors import DataError

# Domain box margin, in training standard deviations (features are standardised,
# so this is also the margin in model input units). Half a standard deviation
# beyond the training range admits customers slightly outside what was seen.
DEFAULT_BOX_MARGIN = 0.5

NUMERIC = "numeric"
CATEGORICAL = "categorical"


@dataclass(frozen=True)
class SensitiveFeature:
    """A sensitive attribute: the input columns it occupies and, per value, the integer point (raw,
    unscaled) its columns hold, with the value's label.

    An attribute kept as one code (the shipped datasets) is one column and 1-tuples (`scalar`); a
    one-hot attribute is one column per kept value and unit points (a dropped value all zeros)."""

    name: str
    columns: tuple[int, ...]
    points: tuple[tuple[int, ...], ...]
    labels: tuple[str, ...]

    def __post_init__(self) -> None:
        object.__setattr__(self, "columns", tuple(int(c) for c in self.columns))
        object.__setattr__(self, "points", tuple(tuple(int(v) for v in p) for p in self.points))
        object.__setattr__(self, "labels", tuple(str(v) for v in self.labels))
        if not self.columns or len(set(self.columns)) != len(self.columns):
            raise DataError(f"sensitive feature {self.name!r}: needs distinct input columns (at least one)")
        if not self.points or len(self.points) != len(self.labels):
            raise DataError(f"sensitive feature {self.name!r}: one label per value")
        for label, point in zip(self.labels, self.points):
            if len(point) != len(self.columns):
                raise DataError(f"sensitive feature {self.name!r}: value {label!r} has {len(point)} integers, "
                                f"one per column {list(self.columns)} expected")
        if len(set(self.points)) != len(self.points):
            raise DataError(f"sensitive feature {self.name!r}: two values have the same point")

    @classmethod
    def scalar(cls, name: str, column: int, values: Sequence[int], labels: Sequence[str]) -> "SensitiveFeature":
        """An attribute held in one input column as one integer code per value."""
        return cls(name, (column,), tuple((v,) for v in values), tuple(labels))

    @property
    def width(self) -> int:
        return len(self.columns)

    @property
    def column(self) -> int:
        """The input column of a one-column attribute."""
        return self._single("column")[0]

    @property
    def values(self) -> tuple[int, ...]:
        """The integer codes of a one-column attribute."""
        self._single("values")
        return tuple(p[0] for p in self.points)

    def _single(self, what: str) -> tuple[int, ...]:
        if self.width != 1:
            raise DataError(f"sensitive feature {self.name!r} spans {self.width} input columns "
                            f"{list(self.columns)}: it has no single {what}; use its columns and points")
        return self.columns

    def to_dict(self) -> dict[str, Any]:
        """A one-column attribute in the form model.json always had; a wider one by its columns and points."""
        if self.width == 1:
            return {"name": self.name, "column": self.column, "values": list(self.values), "labels": list(self.labels)}
        return {"name": self.name, "columns": list(self.columns), "points": [list(p) for p in self.points],
                "labels": list(self.labels)}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "SensitiveFeature":
        labels = tuple(str(v) for v in d["labels"])
        if "columns" in d:
            return cls(str(d["name"]), tuple(int(c) for c in d["columns"]),
                       tuple(tuple(int(v) for v in p) for p in d["points"]), labels)
        return cls.scalar(str(d["name"]), int(d["column"]), tuple(int(v) for v in d["values"]), labels)


def _raw_key(value: Any) -> str:
    """Canonical string of a raw categorical value (1, 1.0 and '1' are the same code)."""
    if type(value) is str:  # the common case, first
        return value.strip()
    if isinstance(value, (bool, np.bool_)):
        raise DataError(f"boolean {value!r} is not a category value")
    if isinstance(value, (int, np.integer)):
        return str(int(value))
    if isinstance(value, (float, np.floating)):
        if not math.isfinite(value):
            raise DataError(f"category value {value!r} is not finite")
        if float(value).is_integer():
            return str(int(value))
        return repr(float(value))
    if isinstance(value, str):
        return value.strip()
    raise DataError(f"category value {value!r} has unsupported type {type(value).__name__}")


@dataclass(frozen=True)
class Preprocessor:
    """Raw record -> model input vector.

    Feature i is numeric (its value as a float) or categorical (the index of its
    raw value in `categories[name]`); then, unless it is sensitive, it is
    standardised: (v - means[i]) / stds[i]. Sensitive features keep their code.
    """

    feature_names: tuple[str, ...]
    kinds: tuple[str, ...]
    categories: Mapping[str, tuple[str, ...]]
    means: tuple[float, ...]
    stds: tuple[float, ...]
    sensitive: tuple[str, ...]
    # Human-readable label of each category (for sensitive features shown on certificates).
    category_labels: Mapping[str, tuple[str, ...]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        n = len(self.feature_names)
        if not (len(self.kinds) == len(self.means) == len(self.stds) == n):
            raise DataError("preprocessor: feature names, kinds, means and stds differ in length")
        for name, kind in zip(self.feature_names, self.kinds):
            if kind not in (NUMERIC, CATEGORICAL):
                raise DataError(f"preprocessor: feature {name!r} has unknown kind {kind!r}")
            if kind == CATEGORICAL and not self.categories.get(name):
                raise DataError(f"preprocessor: categorical feature {name!r} has no categories")
        for name in self.sensitive:
            if name not in self.feature_names:
                raise DataError(f"preprocessor: sensitive feature {name!r} is not a feature")
            if self.kinds[self.feature_names.index(name)] != CATEGORICAL:
                raise DataError(f"preprocessor: sensitive feature {name!r} must be categorical")
        if any(not (s > 0 and math.isfinite(s)) for s in self.stds):
            raise DataError("preprocessor: standard deviations must be positive and finite")

    @property
    def n_features(self) -> int:
        return len(self.feature_names)

    def column(self, name: str) -> int:
        try:
            return self.feature_names.index(name)
        except ValueError:
            raise DataError(f"unknown feature {name!r}; features are {', '.join(self.feature_names)}") from None

    def encode_value(self, name: str, raw: Any) -> float:
        """The unscaled value of one feature: its number, or its category code."""
        i = self.column(name)
        if raw is None:
            raise DataError(f"feature {name!r}: value is missing")
        if self.kinds[i] == CATEGORICAL:
            key = _raw_key(raw)
            cats = self.categories[name]
            if key not in cats:
                raise DataError(f"feature {name!r}: unknown category {raw!r}; expected one of {', '.join(cats)}")
            return float(cats.index(key))
        if isinstance(raw, (bool, np.bool_)):
            raise DataError(f"feature {name!r}: boolean {raw!r} is not a number")
        try:
            v = float(raw)
        except (TypeError, ValueError):
            raise DataError(f"feature {name!r}: {raw!r} is not a number") from None
        except OverflowError:  # an integer beyond any float
            raise DataError(f"feature {name!r}: value is not finite (too large for a number)") from None
        if not math.isfinite(v):
            raise DataError(f"feature {name!r}: value {raw!r} is not finite")
        return v

    def transform_record(self, record: Mapping[str, Any]) -> np.ndarray:
        """One raw record (feature name -> raw value) -> model input vector (float64)."""
        if not isinstance(record, Mapping):
            raise DataError(f"a record must be a mapping of feature name to value, got {type(record).__name__}")
        missing = [n for n in self.feature_names if n not in record]
        if missing:
            raise DataError(f"record is missing feature(s): {', '.join(missing)}")
        extra = [k for k in record if k not in self.feature_names]
        if extra:
            raise DataError(f"record has unknown field(s): {', '.join(map(str, extra))}")
        raw = np.array([self.encode_value(n, record[n]) for n in self.feature_names], dtype=np.float64)
        return self.scale(raw[None, :])[0]

    def transform_records(self, records: Sequence[Mapping[str, Any]]) -> np.ndarray:
        return np.stack([self.transform_record(r) for r in records]) if records else np.zeros((0, self.n_features))

    def scale(self, encoded: np.ndarray) -> np.ndarray:
        """Standardise encoded rows (sensitive columns pass through unchanged)."""
        return (np.asarray(encoded, dtype=np.float64) - np.asarray(self.means)) / np.asarray(self.stds)

    def to_dict(self) -> dict[str, Any]:
        return {
            "feature_names": list(self.feature_names),
            "kinds": list(self.kinds),
            "categories": {k: list(v) for k, v in self.categories.items()},
            "category_labels": {k: list(v) for k, v in self.category_labels.items()},
            "means": list(self.means),
            "stds": list(self.stds),
            "sensitive": list(self.sensitive),
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "Preprocessor":
        try:
            return cls(
                feature_names=tuple(str(x) for x in d["feature_names"]),
                kinds=tuple(str(x) for x in d["kinds"]),
                categories={str(k): tuple(str(x) for x in v) for k, v in d["categories"].items()},
                means=tuple(float(x) for x in d["means"]),
                stds=tuple(float(x) for x in d["stds"]),
                sensitive=tuple(str(x) for x in d["sensitive"]),
                category_labels={str(k): tuple(str(x) for x in v) for k, v in d.get("category_labels", {}).items()},
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise DataError(f"malformed preprocessing parameters: {exc}") from None

    def sensitive_features(self) -> tuple[SensitiveFeature, ...]:
        out = []
        for name in self.sensitive:
            cats = self.categories[name]
            labels = self.category_labels.get(name) or cats
            out.append(SensitiveFeature.scalar(name, self.column(name), tuple(range(len(cats))), tuple(labels)))
        return tuple(out)


@dataclass(frozen=True)
class Dataset:
    """A preprocessed dataset: float64 features, integer class labels."""

    name: str
    feature_names: tuple[str, ...]
    X_train: np.ndarray
    y_train: np.ndarray
    X_test: np.ndarray
    y_test: np.ndarray
    n_classes: int
    class_labels: tuple[str, ...]
    preprocessor: Preprocessor
    sensitive: tuple[SensitiveFeature, ...]
    split_seed: int
    records_test: tuple[Mapping[str, Any], ...] = ()

    @property
    def n_features(self) -> int:
        return len(self.feature_names)

    @property
    def sensitive_columns(self) -> tuple[int, ...]:
        return tuple(c for f in self.sensitive for c in f.columns)

    def domain_box(self, margin: float = DEFAULT_BOX_MARGIN) -> tuple[np.ndarray, np.ndarray]:
        """Public input domain box (model input units).

        Non-sensitive feature i: [min_i - margin, max_i + margin] over the
        training split (margin in standard deviations of the raw feature, since
        inputs are standardised). Sensitive features: exactly the range of their
        points at each of their columns ([0, m-1] for a code).
        """
        if not (margin >= 0 and math.isfinite(margin)):
            raise DataError(f"box margin must be a non-negative finite number, got {margin}")
        lower = self.X_train.min(axis=0) - margin
        upper = self.X_train.max(axis=0) + margin
        for f in self.sensitive:
            for i, c in enumerate(f.columns):
                lower[c] = min(p[i] for p in f.points)
                upper[c] = max(p[i] for p in f.points)
        return lower, upper


def dataset_schema(dataset: Dataset, margin: float = DEFAULT_BOX_MARGIN) -> Any:
    """The shipped preprocessing of `dataset` as a feature schema (`fairness.schema.FeatureSchema`).

    Encodings are the loader's exactly (label codes, the training split's means
    and standard deviations, sensitive codes kept), so a record encodes to the
    same doubles either way. The numeric domain is the training range widened
    by `margin` standard deviations, as the shipped box; categories range over
    their codes (the shipped box also widens those, though no record reaches
    the widening).
    """
    from fairness.schema import FeatureSchema

    pre = dataset.preprocessor
    raw_min = np.asarray(pre.means) + np.asarray(pre.stds) * dataset.X_train.min(axis=0)
    raw_max = np.asarray(pre.means) + np.asarray(pre.stds) * dataset.X_train.max(axis=0)
    features: list[dict[str, Any]] = []
    for i, (name, kind) in enumerate(zip(pre.feature_names, pre.kinds)):
        if name in pre.sensitive:
            labels = pre.category_labels.get(name)
            features.append({"name": name, "kind": "sensitive", "values": list(pre.categories[name]),
                             **({"labels": list(labels)} if labels else {})})
        elif kind == CATEGORICAL:
            labels = pre.category_labels.get(name)
            features.append({"name": name, "kind": "categorical", "encoding": "ordinal",
                             "categories": list(pre.categories[name]), "mean": pre.means[i], "std": pre.stds[i],
                             **({"labels": list(labels)} if labels else {})})
        else:
            features.append({"name": name, "kind": "numeric", "mean": pre.means[i], "std": pre.stds[i],
                             "min": float(raw_min[i] - margin * pre.stds[i]),
                             "max": float(raw_max[i] + margin * pre.stds[i])})
    label_values = [str(k) for k in range(dataset.n_classes)]
    return FeatureSchema.model_validate({
        "name": dataset.name,
        "description": f"the shipped {dataset.name} preprocessing (split seed {dataset.split_seed})",
        "features": features,
        "label": {"column": "label", "values": label_values, "labels": list(dataset.class_labels)},
    })
