"""A served model's customer record, as the API describes it and as a decision request must meet it.

Built from the model's published card alone (its preprocessing, or its feature schema, and its domain box),
so that the record's description in /openapi.json and the check a decision request meets are one thing:
a record the description accepts is one the model's preprocessing takes into its box, and any other is
refused (422) before the model sees it.

- a numeric attribute is a JSON number in [minimum, maximum]: exactly the doubles whose standardised and
  quantised value lies in the card's box (found double by double with the service's own arithmetic); or
  that number written as plain decimal text ("12", "-3", "45.5": no exponent, no sign but "-", no leading
  zero), whose value lies between the whole numbers inside that range;
- a categorical or sensitive attribute is one of the categories whose code lies in the box, as text; a
  category spelled as a whole number may also be sent as that JSON number (1 or 1.0 for "1").

Depends on the card and the service's quantisation only.
"""
from __future__ import annotations

import math
import re
import struct
import threading
from dataclasses import dataclass
from typing import Any, Callable, Mapping

from commitments.card import ModelCard
from fairness.fixed_point import quantise_value
from fairness.schema import CategoricalFeature, NumericFeature, SensitiveAttribute, shown

from .errors import BadRequest

NUMERIC, CATEGORICAL, SENSITIVE = "numeric", "categorical", "sensitive"

# A whole number as JSON spells it: a category so spelled may also be sent as that number.
_WHOLE = re.compile(r"-?(0|[1-9][0-9]*)", re.ASCII)
# Decimal text is offered only where its whole bounds are exact doubles.
_EXACT_WHOLE = 2**53


# ------------------------------------------------------------------ the rules
@dataclass(frozen=True)
class NumericRule:
    name: str
    minimum: float
    maximum: float
    text: str | None  # the pattern of its decimal text (anchored), None when no whole number lies inside
    unit: str = ""

    def schema(self) -> dict[str, Any]:
        unit = f" ({self.unit})" if self.unit else ""
        words = f"numeric{unit}: a number in [{self.minimum!r}, {self.maximum!r}]"
        out: dict[str, Any] = {"type": "number", "minimum": self.minimum, "maximum": self.maximum, "x-kind": NUMERIC}
        if self.text is not None:
            out["type"] = ["number", "string"]
            out["pattern"] = self.text
            words += ", or written as plain decimal text between the whole numbers of that range"
        out["description"] = words
        return out

    def example(self) -> float | int:
        """A value inside: the whole number nearest the middle of the range, else the middle."""
        middle = (self.minimum + self.maximum) / 2
        whole = round(middle)
        return whole if self.minimum <= whole <= self.maximum else middle

    def check(self, value: Any) -> None:
        if isinstance(value, bool) or value is None:
            raise _refused(self.name, value, "is not a number")
        if isinstance(value, (int, float)):
            if not _finite(value):
                raise _refused(self.name, value, "is not finite (not a number of any domain)")
            if not self.minimum <= value <= self.maximum:
                raise _refused(self.name, value, f"is outside the model's domain [{self.minimum:.6g}, "
                                                 f"{self.maximum:.6g}]: no certificate can be issued for it")
            return
        if isinstance(value, str):
            if self.text is not None and re.fullmatch(self.text[1:-1], value):
                return
            raise _refused(self.name, value, "is not a number of the model's domain written as a JSON number "
                                             "or as plain decimal text (digits, an optional '-' and fraction)")
        raise _refused(self.name, value, "is not a number")


@dataclass(frozen=True)
class CategoryRule:
    name: str
    kind: str  # categorical | sensitive
    categories: tuple[str, ...]  # those whose code lies in the card's box, in the card's order

    @property
    def numbers(self) -> tuple[int, ...]:
        return tuple(int(c) for c in self.categories
                     if _WHOLE.fullmatch(c) and str(int(c)) == c and abs(int(c)) < _EXACT_WHOLE)

    def schema(self) -> dict[str, Any]:
        words = {CATEGORICAL: "categorical: one of its categories",
                 SENSITIVE: "sensitive: one of its values (the certificate holds whatever the value)"}[self.kind]
        return {"enum": [*self.categories, *self.numbers], "description": words, "x-kind": self.kind}

    def example(self) -> str | None:
        return self.categories[0] if self.categories else None

    def check(self, value: Any) -> None:
        if isinstance(value, str):
            if value in self.categories:
                return
        elif isinstance(value, (int, float)) and not isinstance(value, bool):
            if _finite(value) and (isinstance(value, int) or value.is_integer()) and int(value) in self.numbers:
                return
        raise _refused(self.name, value, f"is an unknown category; expected one of {', '.join(self.categories)}")


Rule = NumericRule | CategoryRule


def _finite(value: int | float) -> bool:
    try:
        return math.isfinite(value)
    except OverflowError:  # an integer beyond any double
        return False


def _refused(name: str, value: Any, why: str) -> BadRequest:
    return BadRequest(f"record refused: {name} = {shown(value)} {why}")


@dataclass(frozen=True)
class RecordContract:
    """Every attribute of a model's record, in the card's order."""

    model_id: str
    rules: tuple[Rule, ...]

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(r.name for r in self.rules)

    def schema(self) -> dict[str, Any]:
        """The record's JSON Schema (OpenAPI 3.1)."""
        return {"title": f"Record of model {self.model_id}", "type": "object",
                "description": "a customer's record: each attribute of the model's card, nothing else",
                "properties": {r.name: r.schema() for r in self.rules},
                "required": list(self.names), "additionalProperties": False, "examples": [self.example()]}

    def example(self) -> dict[str, Any]:
        """A record the model takes: each attribute inside its domain."""
        return {r.name: r.example() for r in self.rules}

    def check(self, record: Mapping[str, Any]) -> None:
        """Refuse (BadRequest, 422) a record outside the description, naming the first attribute to blame."""
        missing = [n for n in self.names if n not in record]
        if missing:
            raise BadRequest(f"record refused: record is missing feature(s): {', '.join(missing)}")
        extra = [shown(k) for k in record if k not in self.names]
        if extra:
            raise BadRequest(f"record refused: record has unknown field(s): {', '.join(extra)}; the model's "
                             f"features are {', '.join(self.names)}")
        for rule in self.rules:
            rule.check(record[rule.name])


def record_contract(card: ModelCard) -> RecordContract | None:
    """The card's record contract; None when the card publishes no preprocessing (no record can be read)."""
    if card.feature_schema is not None:
        return RecordContract(card.model_id, tuple(_schema_rule(f) for f in card.feature_schema.features))
    if not card.features:
        return None
    # Feature encodings are one input each: only a one-column attribute can be one of them.
    sensitive = {s.column: s for s in card.sensitive if s.column is not None}
    rules: list[Rule] = []
    for column, f in enumerate(card.features):
        lo, hi = card.box_lower[column], card.box_upper[column]

        def inside(v: float, mean=f.mean, std=f.std, lo=lo, hi=hi, values=sensitive.get(column)) -> bool:
            q = _quantised(v, mean, std, card.scale_bits)
            return q is not None and lo <= q <= hi and (values is None or q in values.values)

        if f.kind == NUMERIC:
            rules.append(_numeric(f.name, card.scale_bits, f.mean, f.std, lo, hi))
        else:
            kind = SENSITIVE if f.kind == SENSITIVE or column in sensitive else CATEGORICAL
            rules.append(CategoryRule(f.name, kind, tuple(c for i, c in enumerate(f.categories) if inside(float(i)))))
    return RecordContract(card.model_id, tuple(rules))


class RecordContracts:
    """Each published card's contract, built once: a published card never changes."""

    def __init__(self) -> None:
        self._by_digest: dict[str, RecordContract | None] = {}
        self._lock = threading.Lock()

    def of(self, card: ModelCard) -> RecordContract | None:
        digest = card.digest()
        with self._lock:
            if digest in self._by_digest:
                return self._by_digest[digest]
        contract = record_contract(card)
        with self._lock:
            return self._by_digest.setdefault(digest, contract)


def _schema_rule(f: NumericFeature | CategoricalFeature | SensitiveAttribute) -> Rule:
    """An imported model's attribute: its schema states the raw domain itself."""
    if isinstance(f, NumericFeature):
        return NumericRule(f.name, float(f.min), float(f.max), _text_pattern(float(f.min), float(f.max)), f.unit)
    if isinstance(f, SensitiveAttribute):
        return CategoryRule(f.name, SENSITIVE, f.values)
    return CategoryRule(f.name, CATEGORICAL, f.categories)


# ------------------------------------------------------------------ exact numeric ranges
def _quantised(v: float, mean: float, std: float, bits: int) -> int | None:
    """The service's query coordinate of raw value `v`: (v - mean) / std in doubles, then round half up at
    2^bits (fairness.fixed_point.quantise_value); None when not finite."""
    scaled = (v - mean) / std
    return quantise_value(scaled, bits) if math.isfinite(scaled) else None


def _numeric(name: str, bits: int, mean: float, std: float, lo: int, hi: int) -> NumericRule:
    """The doubles v with lo <= quantised(v) <= hi: an interval, since every step is monotone in v."""
    def at_least(bound: int) -> Callable[[float], bool]:
        return lambda v: (q := _quantised(v, mean, std, bits)) is not None and q >= bound

    minimum = _first(at_least(lo), mean + std * lo / (1 << bits))
    above = _first(at_least(hi + 1), mean + std * (hi + 1) / (1 << bits))
    maximum = math.nextafter(above, -math.inf)
    return NumericRule(name, minimum, maximum, _text_pattern(minimum, maximum))


def _first(holds: Callable[[float], bool], guess: float) -> float:
    """The smallest double for which `holds` (false below some double, true from it on) is true."""
    step = max(1.0, abs(guess)) * 1e-9
    low = guess - step
    while holds(low):
        step = _wider(step)
        low = guess - step
    high = guess + step
    while not holds(high):
        step = _wider(step)
        high = guess + step
    a, b = _key(low), _key(high)  # holds(low) is false, holds(high) true
    while b - a > 1:
        middle = (a + b) // 2
        if holds(_double(middle)):
            b = middle
        else:
            a = middle
    return _double(b)


def _wider(step: float) -> float:
    if step > 1e300:
        raise ValueError("the card's box has no edge among the finite numbers")
    return step * 2


def _key(x: float) -> int:
    """Doubles in order as integers (-0.0 and 0.0 alike)."""
    bits = struct.unpack("<q", struct.pack("<d", x))[0]
    return bits if bits >= 0 else -(bits & 0x7FFF_FFFF_FFFF_FFFF)


def _double(key: int) -> float:
    bits = key if key >= 0 else (-key) | -0x8000_0000_0000_0000
    return struct.unpack("<d", struct.pack("<q", bits))[0]


# ------------------------------------------------------------------ decimal text between whole bounds
_ANY_FRACTION = r"(\.[0-9]+)?"
_ZERO_FRACTION = r"(\.0+)?"


def _text_pattern(minimum: float, maximum: float) -> str | None:
    """The anchored pattern of plain decimal text -?(0|[1-9][0-9]*)(.[0-9]+)? whose value lies in [A, B], the
    whole numbers ceil(minimum) and floor(maximum); None when there is none (or they are not exact)."""
    if not (math.isfinite(minimum) and math.isfinite(maximum)):
        return None
    a, b = math.ceil(minimum), math.floor(maximum)
    if a > b or max(abs(a), abs(b)) >= _EXACT_WHOLE:
        return None
    parts: list[str] = []
    if b >= 0:  # 0 <= value <= b: a whole part below b with any fraction, or b itself
        low = max(a, 0)
        if low <= b - 1:
            parts.append(_whole(low, b - 1) + _ANY_FRACTION)
        parts.append(_whole(b, b) + _ZERO_FRACTION)
    if a < 0:  # a <= value < 0 (and -0): "-" and a magnitude m + f with max(-b, 0) <= m + f <= -a
        least = max(-b, 0)
        if least <= -a - 1:
            parts.append("-" + _whole(least, -a - 1) + _ANY_FRACTION)
        parts.append("-" + _whole(-a, -a) + _ZERO_FRACTION)
    elif a == 0:  # zero written with a sign
        parts.append("-0" + _ZERO_FRACTION)
    return "^(" + "|".join(parts) + ")$"


def _whole(low: int, high: int) -> str:
    """A group matching the whole numbers low..high (0 <= low <= high) written without leading zeros."""
    alternatives: list[str] = []
    for digits in range(len(str(low)), len(str(high)) + 1):
        first = 0 if digits == 1 else 10 ** (digits - 1)
        a, b = max(low, first), min(high, 10**digits - 1)
        if a <= b:
            alternatives.extend(_same_length(str(a), str(b)))
    return "(" + "|".join(alternatives) + ")"


def _same_length(a: str, b: str) -> list[str]:
    """Patterns matching the numbers a..b, both written with the same number of digits."""
    if a == b:
        return [a]
    if len(a) == 1:
        return [f"[{a}-{b}]"]
    if a[0] == b[0]:
        return [a[0] + "(" + "|".join(_same_length(a[1:], b[1:])) + ")"]
    rest = len(a) - 1
    out = [a[0] + "(" + "|".join(_same_length(a[1:], "9" * rest)) + ")"]
    if int(b[0]) - int(a[0]) > 1:
        out.append(f"[{int(a[0]) + 1}-{int(b[0]) - 1}]" + "[0-9]" * rest)
    out.append(b[0] + "(" + "|".join(_same_length("0" * rest, b[1:])) + ")")
    return out
