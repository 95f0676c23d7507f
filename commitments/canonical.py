"""One spelling per value: the canonical forms every public document uses.

A dishonest bank controls every byte of a card and a bundle. If the customer's
side accepted two spellings of one number ("7" and "07", "7" and "٧", 7 and
7 + r), a field it prints could differ from the value the proof speaks of.
So the verifier side reads public documents through this module only:

- decimal strings are ASCII digits, no sign, no leading zero, no whitespace,
  below a stated bound (a field modulus), never reduced;
- JSON is strict: no duplicate keys, no NaN or Infinity, no number longer
  than any value a document can hold, then pydantic in strict mode (no
  "1" for 1, no 1.0 for 1, no true for 1).

Depends on pydantic only: the verifier client imports it.
"""
from __future__ import annotations

import re
from typing import Annotated, Any, Callable, TypeVar

from dataclasses import dataclass

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


# -- strict JSON ---------------------------------------------------------------------------


def check_json(text: str | bytes, what: str) -> None:
    """Refuse what pydantic's parser would silently accept: duplicate keys, NaN, huge numbers."""
    if len(text) > MAX_DOCUMENT_BYTES:
        raise NonCanonical(f"{what}: {len(text)} bytes is larger than any document allows")
    if isinstance(text, bytes):
        try:
            text = text.decode("utf-8")
        except UnicodeDecodeError:
            raise NonCanonical(f"{what}: not UTF-8 text") from None
    try:
        strict_loads(text, _MAX_JSON_NUMBER_CHARS)
    except MalformedArtifact as exc:
        raise NonCanonical(f"{what}: {exc}") from None
    except (ValueError, RecursionError) as exc:
        raise NonCanonical(f"{what}: not valid JSON ({exc})") from None


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
