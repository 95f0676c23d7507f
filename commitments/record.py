r"""A customer's record -> the query vector, from the model card alone.

The bank turns a raw record into the certified query with its preprocessor
(label-encode categories, standardise with the training means and standard
deviations, keep sensitive codes) and then quantises it at the card's scale,
rounding halves up, checking the public input box and the sensitive domains.
A customer repeats that computation from the card's public preprocessing so
that a certificate can be checked to be about *their* record, not someone
else's. Every step below mirrors the bank's arithmetic operation for operation
(IEEE double subtraction then division, exact rational rounding), because one
unit of difference in the last place of the query makes it a different query.

The grammar of a record (the verification page's record.js reads it the same way, value for value):

- a record is a strict JSON document (commitments.canonical: UTF-8 without a byte-order mark, no lone
  surrogate escape, no duplicate key, no number longer than 80 characters nor beyond a double) holding an
  object: each of the card's attributes once, nothing else;
- a number (a numeric attribute) is a JSON number, or a string that spells a JSON number exactly:
  `-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?`, ASCII only. So "45.5", "-3" and "1e3" are numbers;
  "+1", "007", ".5", "5.", "1_2", " 1", "1\n", "\ufeff1", Arabic-Indic or full-width digits, "inf",
  "nan" and "0x10" are not. Its value is the double nearest to it (Python's float(), JavaScript's
  Number(): both round correctly), and it must be finite;
- a category (a categorical or sensitive attribute) is a string equal to one of the card's categories,
  nothing stripped: a string beginning or ending with whitespace, a control character or a format
  character (a BOM: Unicode categories Zs, Zl, Zp, Cc, Cf) is refused, so neither side's notion of
  whitespace matters; or an integral JSON number naming a category by its decimal text (1 and 1.0 name
  "1"; 1.5 names none);
- true, false, null, arrays and objects are no attribute's value.

Anything outside the grammar is refused (a `RecordError` naming the attribute), never read another way.

A record file is read by `read_record_file`, the one reader of `fairproof prove --record`, `fairproof
certify --record` and `fairproof-verify --record`: what the customer has are their raw attributes, so a
JSON list of model inputs is refused by all of them with the same sentence (`NOT_A_RECORD`).

Depends on the card only (pydantic): the verifier client imports it.
"""
from __future__ import annotations

import math
import re
import unicodedata
from fractions import Fraction
from typing import Any, Mapping, Sequence

import numpy as np

from fairness.schema import (InvalidValueError, MissingFieldError, NonFiniteValueError, NumericFeature, OutOfBoxError,
                             RecordError, UnknownCategoryError, UnknownFieldError, shown)

from .canonical import MAX_DOCUMENT_BYTES, NonCanonical, load_json
from .card import FeatureEncoding, ModelCard

__all__ = ["RecordError", "MissingFieldError", "UnknownFieldError", "InvalidValueError", "UnknownCategoryError",
           "NonFiniteValueError", "OutOfBoxError", "CardPreprocessingError", "encode_record", "standardise_record",
           "describe_query", "check_spelling", "RECORD_NUMBER", "NOT_A_RECORD", "parse_record", "read_record_file"]

NUMERIC = "numeric"
CATEGORICAL = "categorical"
SENSITIVE = "sensitive"  # categorical, kept as its raw code (mean 0, std 1 on the card)


NOT_A_RECORD = ("a record is a JSON object of the customer's own attributes (attribute name -> raw value, as the "
                "model card names them), not a list of model inputs")


def parse_record(data: str | bytes, source: str) -> dict[str, Any]:
    """A record document: strict JSON (commitments.canonical) holding an object; RecordError otherwise."""
    try:
        value = load_json(data, f"record {source}")
    except NonCanonical as exc:
        raise RecordError(str(exc)) from None
    if not isinstance(value, dict):
        raise RecordError(f"record {source}: {NOT_A_RECORD}" if isinstance(value, list) else
                          f"record {source}: a record is a JSON object of attribute name -> raw value, "
                          f"not a {type(value).__name__}")
    return value


def read_record_file(path: str, max_bytes: int | None = None) -> dict[str, Any]:
    """The customer's record from a file (`parse_record`); RecordError for a file that is missing,
    unreadable, larger than `max_bytes` (default: the largest document a reader takes) or not a record."""
    limit = MAX_DOCUMENT_BYTES if max_bytes is None else max_bytes
    try:
        with open(path, "rb") as handle:
            data = handle.read(limit + 1)
    except FileNotFoundError:
        raise RecordError(f"record file {path} does not exist") from None
    except OSError as exc:
        raise RecordError(f"cannot read record {path}: {exc.strerror or exc}") from None
    if len(data) > limit:
        raise RecordError(f"record {path} is larger than {limit >> 20} MiB")
    return parse_record(data, str(path))


class CardPreprocessingError(RecordError):
    """The card does not describe a usable preprocessing."""


# A number written as text: exactly a JSON number (see the module docstring).
RECORD_NUMBER = re.compile(r"-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?", re.ASCII)
_EDGE_CATEGORIES = frozenset({"Cc", "Cf", "Zs", "Zl", "Zp"})


def _edge(ch: str) -> bool:
    return unicodedata.category(ch) in _EDGE_CATEGORIES


def check_spelling(name: str, numeric: bool, value: Any) -> None:
    """Refuse a value the record grammar (module docstring) does not spell as a number (`numeric`) or a
    category; what it does spell, the encoders below read (and refuse for what it is: missing, unknown...)."""
    if isinstance(value, str):
        if numeric:
            if value == "" or RECORD_NUMBER.fullmatch(value):
                return  # "" is refused as an empty value by the encoder
            try:
                parsed: float | None = float(value)
            except ValueError:
                parsed = None
            if parsed is not None and not math.isfinite(parsed):
                raise NonFiniteValueError(f"{name} = {shown(value)} is not finite", name)
            raise InvalidValueError(f"{name} = {shown(value)} is not a number (write it as a JSON number: ASCII "
                                    "digits, no '+', leading zero, '_' or surrounding space)", name)
        if value and (_edge(value[0]) or _edge(value[-1])):
            raise InvalidValueError(f"{name} = {shown(value)}: a category value has no surrounding spaces, "
                                    "control or format characters", name)
        return
    if not numeric and _is_float(value) and math.isfinite(value) and not float(value).is_integer():
        raise InvalidValueError(f"{name} = {shown(value)}: a category is named by its text or a whole number", name)


def _check_spellings(card: ModelCard, record: Mapping[str, Any]) -> None:
    if card.feature_schema is not None:
        kinds = {f.name: isinstance(f, NumericFeature) for f in card.feature_schema.features}
    else:
        kinds = {f.name: f.kind == NUMERIC for f in card.features}
    for name, numeric in kinds.items():
        if name in record:
            check_spelling(name, numeric, record[name])


def encode_record(card: ModelCard, record: Mapping[str, Any]) -> tuple[int, ...]:
    """The fixed-point query (integers at 2^card.scale_bits, model input order) of `record`.

    `record` maps each feature name of the card to a raw value: a number for
    numeric features, a category code (e.g. "A43", or 1 for "1") for
    categorical and sensitive ones. Raises a `RecordError` subclass that says
    which field is wrong and why.
    """
    scaled = standardise_record(card, record)
    query = tuple(_round_half_up(v, card.scale_bits) for v in scaled)
    if card.feature_schema is not None:
        # The schema checked the raw domain; the card binds that domain to its box. Belt and braces:
        if not all(lo <= v <= hi for v, lo, hi in zip(query, card.box_lower, card.box_upper)):
            raise CardPreprocessingError("the record lies in the schema's domain but outside the card's box")
        return query
    _check_box(card, card.features, record, query)
    return query


def standardise_record(card: ModelCard, record: Mapping[str, Any]) -> tuple[float, ...]:
    """The record as model inputs before quantisation: the doubles the bank's preprocessor gives."""
    if not isinstance(record, Mapping):
        raise InvalidValueError(f"a record must map feature names to values, got {type(record).__name__}")
    if card.feature_schema is not None:
        _check_spellings(card, record)
        encoded = card.feature_schema.encode(record)
        for name, v in zip(card.feature_names, encoded):
            if not math.isfinite(v):
                raise NonFiniteValueError(f"{name}: its standardised value is not finite", name)
        return encoded
    features = _checked_features(card)
    names = [f.name for f in features]
    missing = [n for n in names if n not in record]
    if missing:
        raise MissingFieldError(f"record is missing feature(s): {', '.join(missing)}")
    extra = [str(k) for k in record if k not in names]
    if extra:
        raise UnknownFieldError(f"record has unknown field(s): {', '.join(extra)}; "
                                f"the model's features are {', '.join(names)}")
    _check_spellings(card, record)
    # (v - mean) / std in doubles, exactly as the bank's numpy float64 arithmetic.
    scaled = [(_encode_value(f, record[f.name]) - f.mean) / f.std for f in features]
    for f, v in zip(features, scaled):
        if not math.isfinite(v):
            raise NonFiniteValueError(f"feature {f.name!r}: {record[f.name]!r} is too large "
                                      "(its standardised value is not finite)")
    return tuple(scaled)


def _checked_features(card: ModelCard) -> tuple[FeatureEncoding, ...]:
    if not card.features:
        raise CardPreprocessingError(f"model card {card.model_id!r} does not publish its preprocessing; "
                                     "the record cannot be encoded")
    for f, name in zip(card.features, card.feature_names):
        if f.name != name:
            raise CardPreprocessingError(f"model card: preprocessing names {f.name!r} where the model's input is {name!r}")
        if f.kind not in (NUMERIC, CATEGORICAL, SENSITIVE):
            raise CardPreprocessingError(f"model card: feature {f.name!r} has unknown kind {f.kind!r}")
        if f.kind != NUMERIC and not f.categories:
            raise CardPreprocessingError(f"model card: feature {f.name!r} has no categories")
        if not (f.std > 0 and math.isfinite(f.std) and math.isfinite(f.mean)):
            raise CardPreprocessingError(f"model card: feature {f.name!r} has an unusable mean or standard deviation")
    return card.features


def _encode_value(feature: FeatureEncoding, raw: Any) -> float:
    """The unscaled value of one feature: its number, or the index of its category."""
    if raw is None:
        raise MissingFieldError(f"feature {feature.name!r}: value is missing")
    if feature.kind != NUMERIC:
        key = _category_key(feature.name, raw)
        if key not in feature.categories:
            raise UnknownCategoryError(f"feature {feature.name!r}: unknown category {raw!r}; "
                                       f"expected one of {', '.join(feature.categories)}")
        return float(feature.categories.index(key))
    if _is_bool(raw):
        raise InvalidValueError(f"feature {feature.name!r}: boolean {raw!r} is not a number")
    try:
        value = float(raw)
    except (TypeError, ValueError):
        raise InvalidValueError(f"feature {feature.name!r}: {raw!r} is not a number") from None
    except OverflowError:
        raise NonFiniteValueError(f"feature {feature.name!r}: {raw!r} is too large") from None
    if not math.isfinite(value):
        raise NonFiniteValueError(f"feature {feature.name!r}: value {raw!r} is not finite")
    return value


def _category_key(name: str, value: Any) -> str:
    """Canonical text of a category value: 1, 1.0 and "1" are the same code (as the bank reads them)."""
    if isinstance(value, str):
        return value.strip()
    if _is_bool(value):
        raise InvalidValueError(f"feature {name!r}: boolean {value!r} is not a category value")
    if _is_integer(value):
        return str(int(value))
    if _is_float(value):
        if not math.isfinite(value):
            raise NonFiniteValueError(f"feature {name!r}: category value {value!r} is not finite")
        if float(value).is_integer():
            return str(int(value))
        return repr(float(value))
    raise InvalidValueError(f"feature {name!r}: category value {value!r} has unsupported type {type(value).__name__}")


def _is_bool(value: Any) -> bool:
    return isinstance(value, (bool, np.bool_))


def _is_integer(value: Any) -> bool:
    return isinstance(value, (int, np.integer))


def _is_float(value: Any) -> bool:
    return isinstance(value, (float, np.floating))


def _round_half_up(value: float, bits: int) -> int:
    """round(value * 2^bits), halves up, from the exact rational value of the double."""
    scaled = Fraction(value) * (1 << bits)
    q, r = divmod(scaled.numerator, scaled.denominator)
    return q + 1 if 2 * r >= scaled.denominator else q


def _check_box(card: ModelCard, features: Sequence[FeatureEncoding], record: Mapping[str, Any],
               query: tuple[int, ...]) -> None:
    unit = 1 << card.scale_bits
    for f, v, lo, hi in zip(features, query, card.box_lower, card.box_upper):
        if not lo <= v <= hi:
            # The box in the customer's own units: mean + std * bound.
            low, high = f.mean + f.std * lo / unit, f.mean + f.std * hi / unit
            raise OutOfBoxError(f"feature {f.name!r} = {record[f.name]!r} lies outside the model's input domain "
                                f"[{low:.6g}, {high:.6g}]: no certificate can be issued for it")
    for s in card.sensitive:
        if s.point_of(query) not in s.points:
            given = ", ".join(repr(record[card.feature_names[c]]) for c in s.input_columns)
            raise OutOfBoxError(f"sensitive feature {s.name!r} = {given} is not a value of its domain")


def describe_query(card: ModelCard, query: tuple[int, ...]) -> list[tuple[str, str]]:
    """Each feature of a fixed-point query in the customer's own units, for people to recognise.

    Numeric values are shown to the precision the query keeps (quantisation
    rounds to 2^-scale_bits standardised units, std * 2^-scale_bits raw
    units); categories are named when the value is exactly one.
    """
    if card.feature_schema is not None:
        return card.feature_schema.describe(query, card.scale_bits)
    unit = 1 << card.scale_bits
    features = card.features or tuple(FeatureEncoding(name=n, kind=NUMERIC) for n in card.feature_names)
    out = []
    for f, v in zip(features, query):
        raw = f.mean + f.std * v / unit
        if f.kind == NUMERIC:
            step = abs(f.std) / unit
            decimals = max(0, math.ceil(-math.log10(step)) - 1) if 0 < step < 1 else 0
            text = f"{raw:.{decimals}f}"
            out.append((f.name, text.rstrip("0").rstrip(".") if "." in text else text))
            continue
        code = round(raw)
        exact = 0 <= code < len(f.categories) and _round_half_up((code - f.mean) / f.std, card.scale_bits) == v
        out.append((f.name, f.categories[code] if exact else f"{raw:.6g} (not a category code)"))
    return out
