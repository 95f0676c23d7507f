"""A bank's feature schema: how its raw records become the model's inputs.

A schema lists, for each raw attribute in model-input order, what kind it is
and how it is encoded:

- `numeric`: one input, (value - mean) / std, with a domain [min, max] in raw units;
- `categorical`: its categories (raw values as text), encoded `ordinal`
  (one input: the category's code, then (code - mean) / std) or `one_hot`
  (one input per category, 1.0 for the record's category, 0.0 elsewhere;
  `drop` names a category without an input, all 0.0 for it);
- `sensitive`: one input holding the integer code of its value, or one-hot
  inputs (one per value, a bank's OneHotEncoder, optionally dropping one);
  either way each value is an exact integer point, so that the statement can
  enumerate the domain; several sensitive attributes, each with any number of
  values, are allowed;

and the label column with the raw value of each class, in model output order.

The same `FeatureSchema.encode` runs at the bank (precompute, service, CLI)
and in the customer's verifier (the card publishes the schema), so a record
becomes the same doubles on both sides: IEEE double subtraction then
division, one-hot entries exactly 0.0 or 1.0. Errors speak the user's terms:
the attribute, its raw value and its raw domain, never a column index or a
standardised number.

Only pydantic and numpy are needed: the verifier imports this module. Reading a bank's CSV through a
schema (`read_csv`, `csv_header`, `SchemaTable`) is `fairness.schema_csv`.
"""
from __future__ import annotations

import math
from fractions import Fraction
from pathlib import Path
from typing import Annotated, Any, Literal, Mapping, Sequence, Union

import numpy as np
from pydantic import (AfterValidator, BaseModel, ConfigDict, Field, StrictFloat, StrictInt, ValidationError,
                      model_validator)

from fairness.errors import DataError

SCHEMA_FORMAT = "fairproof-schema/1"


# --------------------------------------------------------------------------- record errors


class RecordError(DataError, ValueError):
    """A record that cannot be turned into a query of this model. `field` names the attribute, if one is to blame."""

    def __init__(self, message: str, field: str | None = None):
        super().__init__(message)
        self.field = field


class MissingFieldError(RecordError):
    pass


class UnknownFieldError(RecordError):
    pass


class InvalidValueError(RecordError):
    """A value of the wrong type, or text that is not a number."""


class UnknownCategoryError(RecordError):
    pass


class NonFiniteValueError(RecordError):
    pass


class OutOfBoxError(RecordError):
    """A value outside the model's input domain, or a sensitive value outside its domain."""


# --------------------------------------------------------------------------- raw values


SHOWN_CHARS = 60


def shown(value: Any) -> str:
    """A raw value as errors quote it: its repr, cut short (a 60 KB value is not echoed back)."""
    text = repr(value)
    return text if len(text) <= SHOWN_CHARS else f"{text[:SHOWN_CHARS]}... ({len(text)} characters)"


def category_key(name: str, value: Any) -> str:
    """Canonical text of a category value: 1, 1.0 and "1" are the same category."""
    if isinstance(value, str):
        return value.strip()
    if isinstance(value, (bool, np.bool_)):
        raise InvalidValueError(f"{name} = {shown(value)}: a boolean is not a category value", name)
    if isinstance(value, (int, np.integer)):
        return str(int(value))
    if isinstance(value, (float, np.floating)):
        if not math.isfinite(value):
            raise NonFiniteValueError(f"{name} = {shown(value)} is not finite", name)
        return str(int(value)) if float(value).is_integer() else repr(float(value))
    raise InvalidValueError(f"{name} = {shown(value)}: a {type(value).__name__} is not a category value", name)


def number(name: str, value: Any) -> float:
    """A raw numeric value as a double, refusing booleans, text that is not a number, and infinities."""
    if value is None:
        raise MissingFieldError(f"{name}: value is missing", name)
    if isinstance(value, (bool, np.bool_)):
        raise InvalidValueError(f"{name} = {shown(value)}: a boolean is not a number", name)
    if isinstance(value, str) and not value.strip():
        raise MissingFieldError(f"{name}: value is empty", name)
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise InvalidValueError(f"{name} = {shown(value)} is not a number", name) from None
    except OverflowError:
        raise NonFiniteValueError(f"{name} = {shown(value)} is too large to be a number", name) from None
    if not math.isfinite(v):
        raise NonFiniteValueError(f"{name} = {shown(value)} is not finite", name)
    return v


def _fmt(v: float) -> str:
    return f"{v:.6g}"


def quantise_floor(value: float, bits: int) -> int:
    """floor(value * 2^bits), exactly."""
    scaled = Fraction(value) * (1 << bits)
    return scaled.numerator // scaled.denominator


def quantise_ceil(value: float, bits: int) -> int:
    return -quantise_floor(-value, bits)


# --------------------------------------------------------------------------- the schema


def _double(value: int | float) -> float:
    try:
        v = float(value)
    except OverflowError:
        raise ValueError("number too large for a double") from None
    if not math.isfinite(v):  # 1e400 reads as infinity; NaN compares with nothing: no schema means either
        raise ValueError(f"a number must be finite, not {v}")
    return v


# Numbers in a schema are JSON numbers, never text or booleans: a card says exactly what it means.
Number = Annotated[Union[StrictInt, StrictFloat], AfterValidator(_double)]
Code = StrictInt


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class NumericFeature(_Strict):
    """One input: (value - mean) / std; records must lie in [min, max] (raw units)."""

    kind: Literal["numeric"]
    name: str = Field(min_length=1)
    min: Number
    max: Number
    mean: Number = 0.0
    std: Number = 1.0
    unit: str = ""

    @model_validator(mode="after")
    def _check(self) -> "NumericFeature":
        if not all(math.isfinite(v) for v in (self.min, self.max, self.mean, self.std)):
            raise ValueError(f"numeric feature {self.name!r}: min, max, mean and std must be finite")
        if not self.std > 0:
            raise ValueError(f"numeric feature {self.name!r}: std must be positive")
        if self.min > self.max:
            raise ValueError(f"numeric feature {self.name!r}: min {self.min} lies above max {self.max}")
        return self

    @property
    def inputs(self) -> tuple[str, ...]:
        return (self.name,)

    def encode(self, raw: Any) -> tuple[float, ...]:
        v = number(self.name, raw)
        if not self.min <= v <= self.max:
            unit = f" {self.unit}" if self.unit else ""
            raise OutOfBoxError(f"{self.name} = {_fmt(v)}{unit} is outside the model's domain "
                                f"[{_fmt(self.min)}, {_fmt(self.max)}]{unit}", self.name)
        return ((v - self.mean) / self.std,)

    def box(self) -> tuple[tuple[float, float], ...]:
        return (((self.min - self.mean) / self.std, (self.max - self.mean) / self.std),)

    def describe(self, values: Sequence[Fraction]) -> str:
        raw = self.mean + self.std * float(values[0])
        return f"{raw:.6g}" + (f" {self.unit}" if self.unit else "")


class CategoricalFeature(_Strict):
    """Categories given as raw text. `ordinal`: one input, (code - mean) / std, codes default to 0..m-1;
    `one_hot`: one input per category."""

    kind: Literal["categorical"]
    name: str = Field(min_length=1)
    categories: tuple[str, ...] = Field(min_length=1)
    labels: tuple[str, ...] | None = None
    encoding: Literal["ordinal", "one_hot"] = "ordinal"
    codes: tuple[Number, ...] | None = None
    mean: Number = 0.0
    std: Number = 1.0
    # one_hot only: the category without an input of its own (all its inputs 0.0), as OneHotEncoder(drop=...).
    drop: str | None = Field(default=None, exclude_if=lambda v: v is None)

    @model_validator(mode="after")
    def _check(self) -> "CategoricalFeature":
        _distinct(self.name, self.categories)
        _labels_fit(self.name, self.categories, self.labels)
        _drop_fits(self.name, self.encoding, self.categories, self.drop)
        if self.encoding == "one_hot":
            if self.codes is not None or self.mean != 0.0 or self.std != 1.0:
                raise ValueError(f"categorical feature {self.name!r}: a one-hot encoding takes no codes, mean or std")
        else:
            if self.codes is not None and len(self.codes) != len(self.categories):
                raise ValueError(f"categorical feature {self.name!r}: {len(self.codes)} codes "
                                 f"for {len(self.categories)} categories")
            if not all(math.isfinite(v) for v in (*self.ordinal_codes, self.mean, self.std)) or not self.std > 0:
                raise ValueError(f"categorical feature {self.name!r}: codes, mean and std must be finite, std positive")
        return self

    @property
    def ordinal_codes(self) -> tuple[float, ...]:
        return self.codes if self.codes is not None else tuple(float(i) for i in range(len(self.categories)))

    @property
    def inputs(self) -> tuple[str, ...]:
        if self.encoding == "one_hot":
            return _one_hot_inputs(self.name, self.categories, self.drop)
        return (self.name,)

    def index(self, raw: Any) -> int:
        if raw is None:
            raise MissingFieldError(f"{self.name}: value is missing", self.name)
        key = category_key(self.name, raw)
        if key not in self.categories:
            raise UnknownCategoryError(f"{self.name} = {shown(raw)} is not one of {', '.join(self.categories)}", self.name)
        return self.categories.index(key)

    def encode(self, raw: Any) -> tuple[float, ...]:
        k = self.index(raw)
        if self.encoding == "one_hot":
            return tuple(float(v) for v in _one_hot_points(self.categories, self.drop)[k])
        return ((self.ordinal_codes[k] - self.mean) / self.std,)

    def box(self) -> tuple[tuple[float, float], ...]:
        if self.encoding == "one_hot":
            return ((0.0, 1.0),) * len(self.inputs)
        scaled = [(c - self.mean) / self.std for c in self.ordinal_codes]
        return ((min(scaled), max(scaled)),)

    def describe(self, values: Sequence[Fraction]) -> str:
        names = self.labels or self.categories
        if self.encoding == "one_hot":
            points = _one_hot_points(self.categories, self.drop)
            if tuple(values) in points:
                return names[points.index(tuple(values))]
            shown_inputs = [c for c in self.categories if c != self.drop]
            return "(" + ", ".join(f"{c}: {float(v):.6g}" for c, v in zip(shown_inputs, values)) + ")"
        for i, c in enumerate(self.ordinal_codes):
            if _same_double(values[0], (c - self.mean) / self.std):
                return names[i]
        return f"code {self.mean + self.std * float(values[0]):.6g}"


class SensitiveAttribute(_Strict):
    """A sensitive attribute; the certificate ranges over every value.

    `code`: one input holding the integer code of the value (codes default to 0..m-1).
    `one_hot`: one input per value (1.0 for the record's value, 0.0 elsewhere), as a bank's
    OneHotEncoder writes it; `drop` names a value without an input of its own (all inputs 0.0).
    Either way each value is one exact integer point of the attribute's inputs (`points`), so the
    statement can enumerate the domain.
    """

    kind: Literal["sensitive"]
    name: str = Field(min_length=1)
    values: tuple[str, ...] = Field(min_length=2)
    labels: tuple[str, ...] | None = None
    # Written only when not the default, so schemas published before one-hot attributes keep their form.
    encoding: Literal["code", "one_hot"] = Field(default="code", exclude_if=lambda v: v == "code")
    codes: tuple[Code, ...] | None = None
    drop: str | None = Field(default=None, exclude_if=lambda v: v is None)

    @model_validator(mode="after")
    def _check(self) -> "SensitiveAttribute":
        _distinct(self.name, self.values)
        _labels_fit(self.name, self.values, self.labels)
        _drop_fits(self.name, "one_hot" if self.encoding == "one_hot" else "code", self.values, self.drop)
        if self.codes is not None:
            if self.encoding == "one_hot":
                raise ValueError(f"sensitive attribute {self.name!r}: a one-hot encoding takes no codes")
            if len(self.codes) != len(self.values):
                raise ValueError(f"sensitive attribute {self.name!r}: {len(self.codes)} codes for {len(self.values)} values")
            if len(set(self.codes)) != len(self.codes):
                raise ValueError(f"sensitive attribute {self.name!r}: codes must be distinct")
        return self

    @property
    def value_codes(self) -> tuple[int, ...]:
        """The integer code of each value (`code` encoding only)."""
        if self.encoding == "one_hot":
            raise ValueError(f"sensitive attribute {self.name!r} is one-hot encoded: its values are points, not codes")
        return self.codes if self.codes is not None else tuple(range(len(self.values)))

    @property
    def points(self) -> tuple[tuple[int, ...], ...]:
        """Each value as the integers its inputs hold (unscaled), in value order."""
        if self.encoding == "one_hot":
            return _one_hot_points(self.values, self.drop)
        return tuple((c,) for c in self.value_codes)

    @property
    def value_labels(self) -> tuple[str, ...]:
        return self.labels or self.values

    @property
    def inputs(self) -> tuple[str, ...]:
        if self.encoding == "one_hot":
            return _one_hot_inputs(self.name, self.values, self.drop)
        return (self.name,)

    def encode(self, raw: Any) -> tuple[float, ...]:
        if raw is None:
            raise MissingFieldError(f"{self.name}: value is missing", self.name)
        key = category_key(self.name, raw)
        if key not in self.values:
            raise OutOfBoxError(f"{self.name} = {shown(raw)} is not one of {', '.join(self.values)}", self.name)
        return tuple(float(v) for v in self.points[self.values.index(key)])

    def box(self) -> tuple[tuple[float, float], ...]:
        points = self.points
        return tuple((float(min(p[i] for p in points)), float(max(p[i] for p in points)))
                     for i in range(len(self.inputs)))

    def describe(self, values: Sequence[Fraction]) -> str:
        point = tuple(values)
        for p, label in zip(self.points, self.value_labels):
            if point == tuple(Fraction(v) for v in p):
                return label
        return "code " + ", ".join(f"{float(v):.6g}" for v in values)


def _drop_fits(name: str, encoding: str, values: Sequence[str], drop: str | None) -> None:
    if drop is None:
        return
    if encoding != "one_hot":
        raise ValueError(f"{name!r}: only a one-hot encoding drops a value")
    if drop not in values:
        raise ValueError(f"{name!r}: the dropped value {drop!r} is not one of its values")


def _one_hot_inputs(name: str, values: Sequence[str], drop: str | None) -> tuple[str, ...]:
    return tuple(f"{name}={v}" for v in values if v != drop)


def _one_hot_points(values: Sequence[str], drop: str | None) -> tuple[tuple[int, ...], ...]:
    """Each value's one-hot inputs: 1 at its own input, 0 elsewhere; the dropped value all 0."""
    kept = [v for v in values if v != drop]
    return tuple(tuple(1 if k == v else 0 for k in kept) for v in values)


Feature = Annotated[Union[NumericFeature, CategoricalFeature, SensitiveAttribute], Field(discriminator="kind")]


class LabelColumn(_Strict):
    """The decision: the raw value of each class in model output order, and readable labels."""

    column: str = Field(min_length=1)
    values: tuple[str, ...] = Field(min_length=2)
    labels: tuple[str, ...] | None = None

    @model_validator(mode="after")
    def _check(self) -> "LabelColumn":
        _distinct(self.column, self.values)
        _labels_fit(self.column, self.values, self.labels)
        return self

    @property
    def class_labels(self) -> tuple[str, ...]:
        return self.labels or self.values

    def index(self, raw: Any, where: str) -> int:
        key = category_key(self.column, raw)
        if key not in self.values:
            raise DataError(f"{where}: {self.column} = {shown(raw)} is not one of {', '.join(self.values)}")
        return self.values.index(key)


class FeatureSchema(_Strict):
    """Every raw attribute in model-input order, and the label column."""

    format: Literal["fairproof-schema/1"] = SCHEMA_FORMAT
    name: str = Field(min_length=1)
    description: str = ""
    features: tuple[Feature, ...] = Field(min_length=1)
    label: LabelColumn

    @model_validator(mode="after")
    def _check(self) -> "FeatureSchema":
        names = [f.name for f in self.features]
        repeated = sorted({n for n in names if names.count(n) > 1})
        if repeated:
            raise ValueError(f"attribute(s) named twice: {', '.join(repeated)}")
        if self.label.column in names:
            raise ValueError(f"the label column {self.label.column!r} is also a feature")
        if not any(isinstance(f, SensitiveAttribute) for f in self.features):
            raise ValueError("a schema needs at least one sensitive attribute")
        inputs = self.feature_names
        if len(set(inputs)) != len(inputs):
            raise ValueError("two model inputs have the same name (a one-hot input collides with an attribute)")
        return self

    # ---- shape

    @property
    def attributes(self) -> tuple[str, ...]:
        """Raw attribute names: the fields of a customer's record."""
        return tuple(f.name for f in self.features)

    @property
    def feature_names(self) -> tuple[str, ...]:
        """Model input names, in order (a one-hot attribute gives 'name=category' per category)."""
        return tuple(i for f in self.features for i in f.inputs)

    @property
    def n_inputs(self) -> int:
        return len(self.feature_names)

    @property
    def sensitive(self) -> tuple[str, ...]:
        return tuple(f.name for f in self.features if isinstance(f, SensitiveAttribute))

    def columns(self) -> list[tuple[Any, int]]:
        """(attribute, first model input column) in order."""
        out, col = [], 0
        for f in self.features:
            out.append((f, col))
            col += len(f.inputs)
        return out

    def sensitive_columns(self) -> list[tuple[SensitiveAttribute, int]]:
        return [(f, c) for f, c in self.columns() if isinstance(f, SensitiveAttribute)]

    @property
    def class_labels(self) -> tuple[str, ...]:
        return self.label.class_labels

    # ---- encoding

    def encode(self, record: Mapping[str, Any]) -> tuple[float, ...]:
        """A raw record (attribute -> raw value) as model inputs (doubles, before quantisation)."""
        if not isinstance(record, Mapping):
            raise InvalidValueError(f"a record must map attribute names to values, got {type(record).__name__}")
        missing = [n for n in self.attributes if n not in record]
        if missing:
            raise MissingFieldError(f"record is missing attribute(s): {', '.join(missing)}", missing[0])
        extra = [str(k) for k in record if k not in self.attributes]
        if extra:
            raise UnknownFieldError(f"record has unknown field(s): {', '.join(extra)}; "
                                    f"the model's attributes are {', '.join(self.attributes)}", extra[0])
        out: list[float] = []
        for f in self.features:
            out.extend(f.encode(record[f.name]))
        return tuple(out)

    def transform_record(self, record: Mapping[str, Any]) -> np.ndarray:
        return np.array(self.encode(record), dtype=np.float64)

    def domain_box(self) -> tuple[tuple[float, ...], tuple[float, ...]]:
        """The raw domain as a box of model inputs (doubles)."""
        bounds = [b for f in self.features for b in f.box()]
        return tuple(lo for lo, _ in bounds), tuple(hi for _, hi in bounds)

    def quantised_box(self, scale_bits: int) -> tuple[tuple[int, ...], tuple[int, ...]]:
        """The domain box at 2^scale_bits, rounded outward: what a card built from this schema publishes."""
        lower, upper = self.domain_box()
        return (tuple(quantise_floor(v, scale_bits) for v in lower),
                tuple(quantise_ceil(v, scale_bits) for v in upper))

    def describe(self, query: Sequence[int], scale_bits: int) -> list[tuple[str, str]]:
        """(attribute, value in the customer's terms) of a fixed-point query."""
        values = [Fraction(v, 1 << scale_bits) for v in query]
        return [(f.name, f.describe(values[c:c + len(f.inputs)])) for f, c in self.columns()]

    # ---- files

    @classmethod
    def load(cls, path: str | Path) -> "FeatureSchema":
        """Read a schema from JSON or YAML (by extension), with a clear error for any defect."""
        p = Path(path)
        if not p.is_file():
            raise DataError(f"schema file {p} does not exist")
        try:
            text = p.read_text()
        except (OSError, UnicodeDecodeError) as exc:
            raise DataError(f"schema file {p} is unreadable ({exc})") from None
        try:
            if p.suffix.lower() in (".yaml", ".yml"):
                import yaml

                data = yaml.safe_load(text)
            else:
                import json

                data = json.loads(text)
        except Exception as exc:  # the parsers raise many types for bad text
            raise DataError(f"schema file {p} is not valid {p.suffix.lstrip('.') or 'JSON'}: {exc}") from None
        return cls.parse(data, str(p))

    @classmethod
    def parse(cls, data: Any, source: str = "schema") -> "FeatureSchema":
        try:
            return cls.model_validate(data)
        except ValidationError as exc:
            problems = "; ".join(f"{'.'.join(map(str, e['loc'])) or 'schema'}: {e['msg']}" for e in exc.errors())
            raise DataError(f"{source}: invalid feature schema ({problems})") from None


def _distinct(name: str, values: Sequence[str]) -> None:
    if len(set(values)) != len(values):
        raise ValueError(f"{name!r}: values repeated")
    if any(v != v.strip() or not v for v in values):
        raise ValueError(f"{name!r}: values must be non-empty text without surrounding spaces")


def _labels_fit(name: str, values: Sequence[str], labels: Sequence[str] | None) -> None:
    if labels is not None and len(labels) != len(values):
        raise ValueError(f"{name!r}: {len(labels)} labels for {len(values)} values")
    if labels is not None and len(set(labels)) != len(labels):
        # Two values under one label would make a certificate name a group ambiguously.
        raise ValueError(f"{name!r}: labels repeated")


def _same_double(exact: Fraction, double: float) -> bool:
    return math.isfinite(double) and Fraction(double) == exact
