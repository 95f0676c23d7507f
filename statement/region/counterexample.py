"""Minimality of an exact statement's radius, unless E = E_cap or status 1 (the gate): a point P / D
of a chosen slice, in the box, closer than (E+1)/2^t, where a chosen class o at least ties y in the
committed model.

The forward pass runs on the integers (P, D * slice) with every bias times D: ReLU is positively
homogeneous, so it yields D times the pre-activations at the rational point (|D z| <= V D,
`boundary_value`), and d_o = D (logit_y - logit_j(o)) <= 0 is the tie or the loss. Ungated: P = u*,
D = 1 and no slice or class is chosen, which every constraint accepts.
"""
from __future__ import annotations

from ..checks import assert_nonnegative, bool_inputs, scoped
from ..widths import bits
from .context import RegionContext


def counterexample(ctx: RegionContext) -> None:
    cs, shape = ctx.cs, ctx.shape
    S, C, nf = shape.n_slices, shape.n_classes, shape.n_free
    gate = ctx.gate_min
    cx = ctx.val(lambda x: x.designation)
    have = cs.with_values
    sel = bool_inputs(cs, "slice", None if not have else
                      [int(cx is not None and cx.slice_index == s) for s in range(S)], S)
    cs.assert_equal(cs.sum(sel), gate)
    o_bits = bool_inputs(cs, "class", None if not have else
                         [int(cx is not None and cx.other_class == o) for o in range(C - 1)], C - 1)
    cs.assert_equal(cs.sum(o_bits), gate)
    if have:
        p_vals, d_val = ((list(cx.point), cx.denominator) if cx is not None
                         else ([ctx.public.query[j] for j in shape.free_columns], 1))
    else:
        p_vals = d_val = None
    point = cs.private_inputs(scoped(cs, "P"), nf, p_vals)
    den = cs.private_input(scoped(cs, "D"), d_val)
    cs.assert_range(den - 1, shape.boundary_bits)  # 1 <= D <= 2^boundary_bits
    for p, lo, hi in zip(point, ctx.box_lo_free, ctx.box_hi_free):
        span = (hi - lo) * (1 << shape.boundary_bits) + 1
        assert_nonnegative(cs, p - den * lo, span)
        assert_nonnegative(cs, den * hi - p, span)
    h = _scaled_hidden(ctx, sel, point, den)
    with cs.scope("class"):
        d = [cs.sum([cs.mul(w, v) for w, v in zip(delta, h)]) + cs.mul(delta0, den) for delta, delta0 in ctx.dec_rows]
        chosen = cs.sum([cs.mul(ob, do) for ob, do in zip(o_bits, d)])
        assert_nonnegative(cs, -chosen, ctx.wd.boundary_value)  # logit_j(o) >= logit_y at P / D
    with cs.scope("distance"):
        diffs = [p - cs.mul(den, q) for p, q in zip(point, ctx.query_free)]
        lhs = cs.sum([cs.square(v) for v in diffs]) * (1 << (2 * shape.eps_bits))
        rhs = cs.mul(ctx.e1_sq, cs.square(den))
        assert_nonnegative(cs, cs.mul(gate, rhs - lhs - 1), ctx.wd.counterexample_distance + 1)


def _scaled_hidden(ctx: RegionContext, sel: list, point: list, den) -> list:
    """D times the last hidden layer's activations at P / D on the chosen slice: the forward pass on
    (P, D * slice) with every bias times D, each ReLU by an exact comparison."""
    cs, shape = ctx.cs, ctx.shape
    sel_den = [cs.mul(b, den) for b in sel]
    x: list = [None] * shape.n_inputs
    for j, p in zip(shape.free_columns, point):
        x[j] = p
    for ci, c in enumerate(shape.sensitive_columns):
        x[c] = cs.lin_comb([(sv[ci], sd) for sv, sd in zip(shape.slices, sel_den)])
    width = bits(ctx.wd.boundary_value)
    h = x
    for l in range(shape.n_layers - 1):
        with cs.scope(f"layer{l}"):
            z = [cs.sum([cs.mul(w, v) for w, v in zip(ctx.weights[l][i], h)]) + cs.mul(ctx.biases[l][i], den)
                 for i in range(len(ctx.weights[l]))]
            h = [cs.mul(cs.is_less(0, zi, width), zi) for zi in z]
    return h
