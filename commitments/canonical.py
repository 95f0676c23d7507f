"""One spelling per value: the canonical forms every public document uses.

A dishonest bank controls every byte of a card and a bundle. If the customer's
side accepted two spellings of one number ("7" and "07", "7" and "٧", 7 and
7 + r), a field it prints could differ from the value the proof speaks of.
So the verifier side reads public documents through this module only:

- decimal strings are ASCII digits, no sign, no leading zero, no whitespace,
  below a stated bound (a field modulus), never reduced;
- JSON is strict: no duplicate keys, no NaN or Infinity, no number longer
  than any value a document can hold, then pydantic in strict mode (no
  "1" for 1, no 1.0 for 1, no true for 1);
- a card's digest is SHA-256 over its RFC 8785 canonical form (JCS, `canonical_bytes`), so every
  integer it holds is within I-JSON's +-(2^53 - 1) and larger ones are decimal strings (`DecimalInt`);
- text is strict (one reading of every byte, the verification page's too,
  verifier_client/page/verify.js `decodeText` and `textProblem`): UTF-8
  only, no byte-order mark, no string or key holding a lone surrogate
  (`"\\ud800"` or `"\\udc00"` escaped alone names no character), and no
  number that is not finite as a double (`1e400` reads as infinity: refused,
  as the page's parser refuses it).

Depends on pydantic only: the verifier client imports it.
"""
from __future__ import annotations

import json
import math
import re
from typing import Annotated, Any, Callable, TypeVar

from dataclasses import dataclass

import rfc8785
from pydantic import BaseModel, GetCoreSchemaHandler, GetJsonSchemaHandler, ValidationError
from pydantic.json_schema import JsonSchemaValue
from pydantic_core import CoreSchema, core_schema

from circuits.errors import MalformedArtifact
from circuits.field import Q, R, NonCanonicalNumber, parse_canonical_decimal
from circuits.snarkjs.json_formats import strict_loads

M = TypeVar("M", bound=BaseModel)

# Far more than a card or bundle needs, far less than what makes int() or the parser slow.
MAX_DOCUMENT_BYTES = 64 * 1024 * 1024
_MAX_JSON_NUMBER_CHARS = 80  # room for any field element, so pydantic names the field it overflows


class NonCanonical(ValueError):
    """A value or document that is not in its one canonical form (the message names the field)."""


def parse_decimal(text: Any, bound: int, what: str) -> int:
    """The integer a canonical decimal string names, which must lie in [0, bound)."""
    try:
        return parse_canonical_decimal(text, bound, what)
    except NonCanonicalNumber as exc:
        raise NonCanonical(str(exc)) from None


@dataclass(frozen=True)
class _CanonicalText:
    """A string type's canonical-form check, and the same rule in its JSON Schema (a pattern, and for a
    field element the bound, as `x-fairproof-below`), so a schema-driven reader refuses what this refuses."""

    check: Callable[[str], object]  # raises NonCanonical
    pattern: str
    below: int | None = None

    def __get_pydantic_core_schema__(self, source: Any, handler: GetCoreSchemaHandler) -> CoreSchema:
        def validate(text: str) -> str:
            self.check(text)
            return text
        return core_schema.no_info_after_validator_function(validate, handler(source))

    def __get_pydantic_json_schema__(self, schema: CoreSchema, handler: GetJsonSchemaHandler) -> JsonSchemaValue:
        out = handler(schema)
        out["pattern"] = self.pattern
        if self.below is not None:
            out["x-fairproof-below"] = str(self.below)
        return out


def _field_decimal(bound: int, name: str) -> _CanonicalText:
    return _CanonicalText(lambda text: parse_decimal(text, bound, name),
                          r"^(0|[1-9][0-9]*)$", bound)


# Decimal strings of scalar-field (R) and base-field (Q) elements.
FrDecimal = Annotated[str, _field_decimal(R, "scalar field element")]
FqDecimal = Annotated[str, _field_decimal(Q, "base field coordinate")]


def _hex(text: str, length: int, what: str) -> str:
    if len(text) != length or not re.fullmatch(r"[0-9a-f]*", text, re.ASCII):
        raise NonCanonical(f"{what}: expected {length} lower-case hex digits")
    return text


def hex_validator(length: int, what: str) -> _CanonicalText:
    """The check of `hex_string`: declare `X: TypeAlias = Annotated[str, hex_validator(...)]` so type
    checkers see the alias (a function returning the Annotated type is not one)."""
    return _CanonicalText(lambda text: _hex(text, length, what),
                          f"^[0-9a-f]{{{length}}}$")


def hex_string(length: int, what: str) -> Any:  # a typing special form, not a class
    return Annotated[str, hex_validator(length, what)]


Sha256Hex = Annotated[str, hex_validator(64, "SHA-256 digest")]


@dataclass(frozen=True)
class DecimalInt:
    """An integer too wide for I-JSON, written as a canonical decimal string: `Annotated[int, DecimalInt(...)]`.

    Python code holds an int in [low, bound); a JSON document holds the decimal string (never a number,
    which RFC 8785 could not canonicalise and a browser would round)."""

    low: int
    bound: int
    what: str

    def _parse(self, text: str) -> int:
        value = parse_decimal(text, self.bound, self.what)
        if value < self.low:
            raise NonCanonical(f"{self.what}: {text} is below {self.low}")
        return value

    def _check(self, value: int) -> int:
        if not self.low <= value < self.bound:
            raise ValueError(f"{self.what}: {value} is not in [{self.low}, {self.bound})")
        return value

    def __get_pydantic_core_schema__(self, source: Any, handler: GetCoreSchemaHandler) -> CoreSchema:
        from_text = core_schema.chain_schema([core_schema.str_schema(strict=True),
                                              core_schema.no_info_plain_validator_function(self._parse)])
        from_int = core_schema.chain_schema([core_schema.int_schema(strict=True),
                                             core_schema.no_info_plain_validator_function(self._check)])
        return core_schema.json_or_python_schema(
            json_schema=from_text, python_schema=core_schema.union_schema([from_int, from_text]),
            serialization=core_schema.plain_serializer_function_ser_schema(str, when_used="json"))

    def __get_pydantic_json_schema__(self, schema: CoreSchema, handler: GetJsonSchemaHandler) -> JsonSchemaValue:
        pattern = {0: r"^(0|[1-9][0-9]*)$", 1: r"^[1-9][0-9]*$"}[self.low]  # the lower bounds a pattern states
        return {"type": "string", "pattern": pattern, "x-fairproof-below": str(self.bound)}


# -- RFC 8785 -----------------------------------------------------------------------------

I_JSON_MAX = 2**53 - 1  # RFC 7493: the integers every JSON reader holds exactly


def canonical_bytes(value: Any, what: str) -> bytes:
    """RFC 8785 (JSON Canonicalization Scheme) of a JSON value, with the `rfc8785` package.

    NonCanonical, naming the place, for what JCS cannot write: an integer beyond +-(2^53 - 1) (spell it as
    a decimal string), a non-finite number or a lone surrogate."""
    check_values(value, what)
    place = _first_wide_integer(value)
    if place is not None:
        raise NonCanonical(f"{what}: {place[0]}: the integer {place[1]} is beyond 2^53 - 1, which JSON cannot "
                           "hold exactly (RFC 7493, RFC 8785)")
    try:
        return rfc8785.dumps(value)
    except rfc8785.CanonicalizationError as exc:  # pragma: no cover - every case is refused above
        raise NonCanonical(f"{what}: {exc}") from None


def _first_wide_integer(value: Any) -> tuple[str, int] | None:
    stack: list[tuple[Any, list[str | int]]] = [(value, [])]
    while stack:
        v, path = stack.pop()
        if isinstance(v, int) and not isinstance(v, bool):
            if abs(v) > I_JSON_MAX:
                return _where(path), v
        elif isinstance(v, dict):
            stack.extend((x, [*path, k]) for k, x in reversed(list(v.items())))
        elif isinstance(v, list):
            stack.extend((x, [*path, i]) for i, x in reversed(list(enumerate(v))))
    return None


# -- strict JSON ---------------------------------------------------------------------------


BOM_MESSAGE = "begins with a byte-order mark (save it as UTF-8 without one)"
NOT_UTF8_MESSAGE = "not UTF-8 text"
LONE_SURROGATE_MESSAGE = "a lone surrogate escape is not text"
NOT_FINITE_MESSAGE = "a number out of range (it is not finite as a double)"


def decode_text(data: bytes, what: str) -> str:
    """The text of a document's bytes, read one way only: UTF-8, no byte-order mark."""
    if data.startswith(b"\xef\xbb\xbf"):
        raise NonCanonical(f"{what}: {BOM_MESSAGE}")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise NonCanonical(f"{what}: {NOT_UTF8_MESSAGE}") from None


def _is_surrogate(text: str) -> bool:
    return any("\ud800" <= ch <= "\udfff" for ch in text)


def _where(path: list[str | int]) -> str:
    return ".".join(str(p) for p in path) or "document"


def _first_defect(value: Any) -> tuple[str, str] | None:
    """(where, what is wrong) of the first lone surrogate (in a string or a key) or non-finite number."""
    stack: list[tuple[Any, list[str | int]]] = [(value, [])]
    while stack:
        v, path = stack.pop()
        if isinstance(v, float):
            if not math.isfinite(v):
                return _where(path), NOT_FINITE_MESSAGE
        elif isinstance(v, str):
            if _is_surrogate(v):
                return _where(path), LONE_SURROGATE_MESSAGE
        elif isinstance(v, dict):
            if any(_is_surrogate(k) for k in v):
                return _where(path), f"{LONE_SURROGATE_MESSAGE} (in a key)"
            stack.extend((x, [*path, k]) for k, x in reversed(list(v.items())))
        elif isinstance(v, list):
            stack.extend((x, [*path, i]) for i, x in reversed(list(enumerate(v))))
    return None


def check_values(value: Any, what: str) -> None:
    """Refuse a parsed JSON value holding a lone surrogate (in a string or a key) or a non-finite number,
    naming the first such place (as pydantic names a field: `features.0.mean`)."""
    defect = _first_defect(value)
    if defect is not None:
        raise NonCanonical(f"{what}: {defect[0]}: {defect[1]}")


def load_json(text: str | bytes, what: str) -> Any:
    """The value of a strict JSON document (see the module docstring); NonCanonical naming the defect."""
    if len(text) > MAX_DOCUMENT_BYTES:
        raise NonCanonical(f"{what}: {len(text)} bytes is larger than any document allows")
    if isinstance(text, bytes):
        text = decode_text(text, what)
    elif text.startswith("\ufeff"):
        raise NonCanonical(f"{what}: {BOM_MESSAGE}")
    try:
        value = strict_loads(text, _MAX_JSON_NUMBER_CHARS)
    except MalformedArtifact as exc:
        where = _constant_place(text)  # NaN or Infinity: name the field, as for 1e400
        raise NonCanonical(f"{what}: {where + ': ' if where else ''}{exc}") from None
    except (ValueError, RecursionError) as exc:
        raise NonCanonical(f"{what}: not valid JSON ({exc})") from None
    check_values(value, what)
    return value


def _constant_place(text: str) -> str | None:
    """Where a NaN or Infinity literal stands in `text` (read leniently, only to say so), if it is one."""
    try:
        defect = _first_defect(json.loads(text, parse_constant=float))
    except (ValueError, RecursionError):
        return None
    return defect[0] if defect is not None else None


def check_json(text: str | bytes, what: str) -> None:
    """Refuse what pydantic's parser would silently accept: duplicate keys, NaN and infinities (1e400),
    huge numbers, a byte-order mark, bytes that are not UTF-8, lone surrogate escapes."""
    load_json(text, what)


def parse_strict(model: type[M], text: str | bytes, what: str) -> M:
    """`model` from JSON `text`, strictly: canonical JSON, strict types, every field named on error."""
    check_json(text, what)
    try:
        return model.model_validate_json(text, strict=True)
    except ValidationError as exc:
        raise NonCanonical(f"{what}: {first_error(exc)}") from None


def first_error(exc: ValidationError) -> str:
    err = exc.errors()[0]
    where = ".".join(str(p) for p in err.get("loc", ())) or "document"
    message = str(err.get("msg", "invalid"))
    ctx = err.get("ctx") or {}
    if isinstance(ctx.get("error"), Exception):  # our validators' own messages, not pydantic's wrapper
        message = str(ctx["error"])
    return f"{where}: {message}"
