"""The BN254 (alt_bn128) fields, as plain Python integers.

Every layer above this one speaks of scalars as ints in [0, R); backends may
hold them in other forms (Montgomery limbs, numpy arrays) internally.
"""

# Scalar field of BN254: the field the circuits compute in.
R = 21888242871839275222246405745257275088548364400416034343698204186575808495617
# Base field of BN254: the field the curve coordinates live in.
Q = 21888242871839275222246405745257275088696311157297823662689037894645226208583

R_TWO_ADICITY = 28
R_GENERATOR = 5  # multiplicative generator of Fr*

# Largest bit width a signed quantity may have and still be read back
# unambiguously from its residue: |v| < 2^MAX_SIGNED_BITS << R / 2.
MAX_SIGNED_BITS = 250


def fr(value: int) -> int:
    """Reduce an integer (possibly negative) into [0, R)."""
    return value % R


def fr_inv(value: int) -> int:
    if value % R == 0:
        raise ZeroDivisionError("0 has no inverse in Fr")
    return pow(value, R - 2, R)


def to_signed(value: int) -> int:
    """Read a residue as the signed integer of least magnitude."""
    value %= R
    return value - R if value > R // 2 else value


# -- the one spelling of a field element ------------------------------------------------

_MAX_DECIMAL_DIGITS = 78  # Q and R have 77 digits


class NonCanonicalNumber(ValueError):
    """A number written in any form but its one canonical decimal spelling."""


def parse_canonical_decimal(text: object, bound: int, what: str) -> int:
    """The integer a canonical decimal string names: ASCII digits, no sign, no leading
    zero, no whitespace, in [0, bound). Never reduces: x and x + bound are refused alike."""
    if not isinstance(text, str):
        raise NonCanonicalNumber(f"{what}: expected a decimal string, found {type(text).__name__}")
    ok = 0 < len(text) <= _MAX_DECIMAL_DIGITS and text.isascii() and text.isdigit() and (text == "0" or text[0] != "0")
    if not ok:
        shown = text if len(text) <= 24 else text[:21] + "..."
        raise NonCanonicalNumber(f"{what}: {shown!r} is not a canonical decimal (ASCII digits, no sign, "
                                 "no leading zero, no spaces)")
    value = int(text)
    if value >= bound:
        raise NonCanonicalNumber(f"{what}: {text} is not below the field modulus")
    return value
