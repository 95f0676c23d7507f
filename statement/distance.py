"""The exact distance tests of docs/STATEMENT.md, in R1CS.

distance >= eps:        (a.u*+c)^2 2^(2t) >= E^2 2^(2s) ||a||^2, and ||a||^2 != 0
distance < (E+1)/2^t:   (a.u*+c)^2 2^(2t) <  (E+1)^2 2^(2s) ||a||^2

Both sides are non-negative and bounded by the row's distance width
(`widths`), so the difference is range-checked without wrap-around.
"""
from __future__ import annotations

from .checks import assert_nonnegative, assert_product_zero, inverse_or_zero


def distance_slack(cs, value, nsq, e_sq_scaled, t: int):
    """v^2 2^(2t) - E^2 2^(2s) ||a||^2 (E^2 2^(2s) passed in)."""
    return cs.square(value) * (1 << (2 * t)) - cs.mul(e_sq_scaled, nsq)


def assert_distance_if(cs, gate, nonzero_gate, value, nsq, e_sq_scaled, t: int, bound: int) -> None:
    """gate => distance >= eps; nonzero_gate => ||a||^2 != 0."""
    with cs.scope("distance"):
        assert_nonnegative(cs, cs.mul(gate, distance_slack(cs, value, nsq, e_sq_scaled, t)), bound)
        inv = inverse_or_zero(cs, nsq)
        # nonzero_gate * (nsq * inv - 1) == 0: when gated, nsq has an inverse.
        assert_product_zero(cs, nonzero_gate, cs.mul(nsq, inv) - 1)


def distance_at_least(cs, value, nsq, e_sq_scaled, t: int, bound: int):
    """Boolean [distance >= eps] ignoring the zero-normal rule (bound+2 constraints)."""
    with cs.scope("distance_flag"):
        lhs = cs.square(value) * (1 << (2 * t))
        rhs = cs.mul(e_sq_scaled, nsq)
        return cs.is_less_or_equal(rhs, lhs, max(bound.bit_length(), 1))


def assert_below_next_if(cs, gate, value, nsq, e1_sq_scaled, t: int, bound: int) -> None:
    """gate => distance < (E+1)/2^t (E+1 squared and scaled passed in)."""
    with cs.scope("minimality"):
        slack = cs.mul(e1_sq_scaled, nsq) - cs.square(value) * (1 << (2 * t)) - 1
        assert_nonnegative(cs, cs.mul(gate, slack), bound + 1)
