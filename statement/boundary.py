"""The boundary witness of the attaining decision row.

A rational point P / D (1 <= D < 2^boundary_bits + 1) inside the box
(lo D <= P <= hi D), on the designated decision hyperplane (a.P + c D = 0),
inside the designated region (sign of z_k(P) D agrees with the code bit:
on => >= 0, off => <= 0). The region checks are gated by `is_decision`;
the box and denominator checks always hold (an unused witness is u*, 1).
"""
from __future__ import annotations

from .checks import assert_nonnegative


def form_at_point(cs, form, point, den):
    """D * z(P / D) = a.P + c D."""
    return cs.sum([cs.mul(a, p) for a, p in zip(form.normal, point)] + [cs.mul(form.offset, den)])


def check_boundary(cs, point, den, decision_form, neurons, code_bits, is_decision, box_lo, box_hi,
                   boundary_bits: int, widths) -> None:
    with cs.scope("boundary"):
        cs.assert_range(den - 1, boundary_bits)  # 1 <= D <= 2^boundary_bits
        for p, lo, hi in zip(point, box_lo, box_hi):
            span = (hi - lo) * (1 << boundary_bits) + 1
            assert_nonnegative(cs, p - den * lo, span)
            assert_nonnegative(cs, den * hi - p, span)
        # a.P + c D = 0 (the selected decision form is zero when the row is a neuron row)
        cs.assert_equal(form_at_point(cs, decision_form, point, den), 0)
        for k, form in enumerate(neurons):
            w = cs.mul(is_decision, form_at_point(cs, form, point, den))
            signed = cs.mul(2 * code_bits[k] - 1, w)
            assert_nonnegative(cs, signed, widths.boundary_value)
