"""Small assertion helpers shared by the statement gadgets."""
from __future__ import annotations

from circuits.field import R, to_signed

from .widths import bits


def assert_nonnegative(cs, x, bound: int) -> None:
    """0 <= x, for x known (from the widths) to satisfy |x| <= bound < 2^250.

    bits(bound) constraints: x is decomposed into bits(bound) bits. A negative
    x is the residue R - |x| > 2^251, which has no such decomposition."""
    cs.assert_range(x, bits(bound))


def assert_product_zero(cs, a, b) -> None:
    """a * b == 0 as one constraint (a gate times a violation)."""
    a, b = cs.lc(a), cs.lc(b)
    if a.is_constant() or b.is_constant():
        cs.assert_equal(cs.mul(a, b), 0)
        return
    cs.assert_mul(a, b, 0)


def inverse_or_zero(cs, x):
    """A hinted wire holding 1/x (0 for x = 0); UNCONSTRAINED: callers pin it."""
    (inv,) = cs.hint("inv", lambda v: [pow(v, R - 2, R) if v % R else 0], [x], 1)
    return inv


def scoped(cs, name: str) -> str:
    """An input name unique within the system: the current scope, then the name."""
    scope = cs.current_scope
    return f"{scope}/{name}" if scope else name


def bool_inputs(cs, name: str, values, n: int):
    """n private inputs asserted boolean."""
    out = cs.private_inputs(scoped(cs, name), n, values)
    for b in out:
        cs.assert_is_bool(b)
    return out


def floor_div(cs, value, width: int, bound: int):
    """floor(value / width) for |value| <= bound and an integer width >= 1.

    value = width q + r with 0 <= r < width and |q| <= bound // width + 1 as
    integers (both range-checked), so no wrap-around: q is the floor."""
    q_bound = bound // width + 1
    (q,) = cs.hint("quotient", lambda v: [to_signed(v) // width], [value], 1)
    cs.assert_range(q + q_bound, bits(2 * q_bound))
    rem = value - q * width
    assert_nonnegative(cs, rem, width - 1)
    assert_nonnegative(cs, width - 1 - rem, width - 1)
    return q
