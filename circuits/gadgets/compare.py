"""Comparisons of bounded signed integers.

Values are field elements read as signed integers (`field.to_signed`). Every
gadget here takes a width n_bits and REQUIRES its operands to lie in the
signed range [-2^n_bits, 2^n_bits) (so |x| <= 2^n_bits). The caller guarantees
this from the circuit's bit-width analysis or by `assert_signed_range`
(pass `check_inputs=True` to have the gadget add those range checks itself,
n_bits + 1 constraints per operand). When building with values, a violated
precondition raises UnsatisfiedConstraint at once, so a width bug is caught
at witness time rather than becoming a silent wrap-around.

Soundness, given the precondition: d = a - b lies in (-2^(n+1), 2^(n+1)), so
d + 2^(n+1) lies in (0, 2^(n+2)) and decomposes into n+2 bits without
wrapping (n+2 <= 252); its top bit is 1 exactly when d >= 0. Without the
precondition the constraints still force |a - b| < 2^(n+1) as a residue
(the decomposition fails otherwise), and the result is the sign of that
residue.
"""
from __future__ import annotations

from ..errors import UnsatisfiedConstraint
from ..field import MAX_SIGNED_BITS, to_signed
from .bits import _check_width, assert_range, assert_signed_range, to_bits


def _precondition(cs, gadget: str, n_bits: int, check_inputs: bool, *xs):
    _check_width(gadget, n_bits, MAX_SIGNED_BITS)
    lcs = [cs.lc(x) for x in xs]
    lo, hi = -(1 << n_bits), 1 << n_bits
    for x in lcs:
        v = x.value
        if v is not None and cs.strict and not lo <= to_signed(v) < hi:
            raise UnsatisfiedConstraint(
                f"{gadget} in {cs.current_scope or '<top>'}: operand {to_signed(v)} is outside "
                f"[-2^{n_bits}, 2^{n_bits}) (precondition of the comparison)"
            )
        if check_inputs:
            assert_signed_range(cs, x, n_bits)
    return lcs


def is_negative(cs, x, n_bits: int):
    """1 if x < 0 else 0, for x in [-2^n, 2^n). n+1 constraints; this also
    ENFORCES the range of x (x + 2^n must have n+1 bits)."""
    with cs.scope("is_negative"):
        (x,) = _precondition(cs, "is_negative", n_bits, False, x)
        bits = to_bits(cs, x + (1 << n_bits), n_bits + 1)
        return cs.not_(bits[n_bits])


def is_less(cs, a, b, n_bits: int, check_inputs: bool = False):
    """1 if a < b else 0 (boolean), for a, b in [-2^n, 2^n). n+2 constraints."""
    with cs.scope("is_less"):
        a, b = _precondition(cs, "is_less", n_bits, check_inputs, a, b)
        bits = to_bits(cs, a - b + (1 << (n_bits + 1)), n_bits + 2)
        return cs.not_(bits[n_bits + 1])  # top bit = [a - b >= 0]


def is_less_or_equal(cs, a, b, n_bits: int, check_inputs: bool = False):
    """1 if a <= b else 0 (boolean), for a, b in [-2^n, 2^n). n+2 constraints."""
    with cs.scope("is_less_or_equal"):
        a, b = _precondition(cs, "is_less_or_equal", n_bits, check_inputs, a, b)
        bits = to_bits(cs, b - a + (1 << (n_bits + 1)), n_bits + 2)
        return bits[n_bits + 1]  # [b - a >= 0]


def assert_less_or_equal(cs, a, b, n_bits: int, check_inputs: bool = False) -> None:
    """a <= b for a, b in [-2^n, 2^n): b - a in [0, 2^(n+1)). n+1 constraints.

    Sound because a negative b - a >= -2^(n+1) is a residue >= R - 2^(n+1),
    far above 2^(n+1)."""
    with cs.scope("assert_less_or_equal"):
        a, b = _precondition(cs, "assert_less_or_equal", n_bits, check_inputs, a, b)
        d = b - a
        if d.value is not None and cs.strict and to_signed(d.value) < 0:
            raise UnsatisfiedConstraint(
                f"assert_less_or_equal in {cs.current_scope}: {to_signed(a.value)} > {to_signed(b.value)}"
            )
        assert_range(cs, d, n_bits + 1)


def assert_less(cs, a, b, n_bits: int, check_inputs: bool = False) -> None:
    """a < b for a, b in [-2^n, 2^n): b - a - 1 in [0, 2^(n+1)). n+1 constraints."""
    with cs.scope("assert_less"):
        a, b = _precondition(cs, "assert_less", n_bits, check_inputs, a, b)
        d = b - a - 1
        if d.value is not None and cs.strict and to_signed(d.value) < 0:
            raise UnsatisfiedConstraint(
                f"assert_less in {cs.current_scope}: {to_signed(a.value)} >= {to_signed(b.value)}"
            )
        assert_range(cs, d, n_bits + 1)


def abs_value(cs, x, n_bits: int):
    """|x| for x in [-2^n, 2^n) (range enforced); result in [0, 2^n]. n+2 constraints."""
    with cs.scope("abs"):
        neg = is_negative(cs, x, n_bits)
        return cs.select(neg, -cs.lc(x), x)


def minimum(cs, a, b, n_bits: int, check_inputs: bool = False):
    """min(a, b) for a, b in [-2^n, 2^n). n+3 constraints."""
    with cs.scope("min"):
        lt = is_less(cs, a, b, n_bits, check_inputs)
        return cs.select(lt, a, b)


def maximum(cs, a, b, n_bits: int, check_inputs: bool = False):
    """max(a, b) for a, b in [-2^n, 2^n). n+3 constraints."""
    with cs.scope("max"):
        lt = is_less(cs, a, b, n_bits, check_inputs)
        return cs.select(lt, b, a)
