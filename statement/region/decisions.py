"""The decisions across slices: y is the argmax at the query's own slice (lowest index on a tie), and
under status 1 some class at least ties y at the flip slice.

Slot 0's decision values d_o = z_y - z_j(o) at u* give both: d_o >= 1 for classes j(o) < y and
d_o >= 0 for j(o) > y at the own slice; a one-hot class o with d_o <= 0 at the flip slice. A per-slice
statement holds its own slice's values only: its checks apply when that slice is the query's own or
the flip slice (the verifier asks for every slice's proof).
"""
from __future__ import annotations

from typing import Any, Callable

from ..checks import assert_nonnegative, bool_inputs
from ..shape import StatementShape
from ..witness import StatementPublic, StatementWitness
from .context import RegionContext


def whole_decisions(ctx: RegionContext, values: list) -> None:
    """The checks over every slice's decision values (`values[s][o]`)."""
    cs = ctx.cs

    def argmax_margin(o: int) -> Any:
        return cs.sum([cs.mul(q, d[o]) for q, d in zip(ctx.q_slice, values)]) - 1 + ctx.ge[o]

    def flipped(o_bits: list) -> Any:
        return cs.sum([cs.mul(ob, cs.sum([cs.mul(f, d[o]) for f, d in zip(ctx.flip_bits, values)]))
                       for o, ob in enumerate(o_bits)])

    _decisions(ctx, argmax_margin, flipped)


def part_decisions(ctx: RegionContext, part_bits: list, values: list) -> None:
    """The checks of a per-slice statement over its one slice's decision values (`values[0][o]`)."""
    cs = ctx.cs
    own = cs.sum([cs.mul(b, q) for b, q in zip(part_bits, ctx.q_slice)])
    flip_here = cs.sum([cs.mul(b, f) for b, f in zip(part_bits, ctx.flip_bits)])

    def argmax_margin(o: int) -> Any:
        return cs.mul(own, values[0][o] - 1 + ctx.ge[o])

    def flipped(o_bits: list) -> Any:
        return cs.mul(flip_here, cs.sum([cs.mul(ob, values[0][o]) for o, ob in enumerate(o_bits)]))

    _decisions(ctx, argmax_margin, flipped)


def _decisions(ctx: RegionContext, argmax_margin: Callable[[int], Any], flipped: Callable[[list], Any]) -> None:
    """argmax_margin(o) >= 0 for every decision row o; one-hot flip class bits summing to status, and
    flipped(bits) <= 0 (the chosen row's value at the flip slice)."""
    cs, shape = ctx.cs, ctx.shape
    C = shape.n_classes
    for o in range(C - 1):
        assert_nonnegative(cs, argmax_margin(o), ctx.wd.decision.value + 1)
    o_bits = bool_inputs(cs, "flip_class", ctx.val(lambda x: flip_class_bits(ctx.public, x, shape)), C - 1)
    cs.assert_equal(cs.sum(o_bits), ctx.inputs.status)
    assert_nonnegative(cs, -flipped(o_bits), ctx.wd.decision.value)


def flip_class_bits(public: StatementPublic | None, witness: StatementWitness, shape: StatementShape) -> list[int]:
    """One-hot o with d_o <= 0 at the flip slice (all zero for status 0); computed natively."""
    C = shape.n_classes
    if public is None or public.status != 1 or not 0 <= public.flip_slice < shape.n_slices:
        return [0] * (C - 1)
    x = list(public.query)
    for c, v in zip(shape.sensitive_columns, shape.slices[public.flip_slice]):
        x[c] = v
    h = x
    for l, (w, b) in enumerate(zip(witness.weights, witness.biases)):
        z = [sum(wi * hi for wi, hi in zip(row, h)) + bi for row, bi in zip(w, b)]
        h = z if l == len(witness.weights) - 1 else [max(v, 0) for v in z]
    y = public.decision
    others = [j for j in range(C) if j != y]
    for o, j in enumerate(others):
        if h[j] >= h[y]:
            return [int(k == o) for k in range(C - 1)]
    return [1] + [0] * (C - 2)  # no flipping class: the constraints will refuse
