"""The per-slice region statement (exact radius only): one proof covers ONE slice, named by a public
input and chosen by one-hot bits.

Its base forms, covers and pool are that slice's; the argmax and flip checks are gated on it being the
query's own or the flip slice; the counterexample is checked in full, and the spread lens runs a
forward pass of every slice of its own. One proof per slice states the whole statement
(docs/STATEMENT.md, "Per-slice proofs").
"""
from __future__ import annotations

from typing import Callable

from ..affine import decision_rows
from ..checks import bool_inputs
from ..lenses.persistence import add_persistence
from ..lenses.spread import add_spread, forward_logits
from ..shape import StatementShape
from ..witness import StatementPublic, StatementWitness
from .context import RegionContext, StatementHandles, layer0_terms, region_preamble, slice_forms
from .counterexample import counterexample
from .covers import cover_slices
from .decisions import part_decisions


def build_per_slice_statement(cs, shape: StatementShape, public: StatementPublic | None,
                              witness: StatementWitness | None, report: Callable[[str], None]) -> StatementHandles:
    ctx = region_preamble(cs, shape, public, witness)
    with cs.scope("part"):
        part_bits = _part_bits(ctx)
    with cs.scope("layer0"):
        layer0_terms(ctx)
        base = [_part_forms(ctx, part_bits)]
    ctx.dec_rows = decision_rows(cs, ctx.y_bits, ctx.weights[-1], ctx.biases[-1])
    (covering,) = cover_slices(ctx, base, report)
    with cs.scope("decisions"):
        part_decisions(ctx, part_bits, [covering.decision_values])
    if shape.spread:  # the part holds one slice's forms: every slice's logits afresh
        add_spread(cs, shape, ctx.wd, ctx.inputs, lambda: [
            forward_logits(cs, shape, ctx.wd, ctx.weights, ctx.biases, ctx.free_dot, sv) for sv in shape.slices])
    if shape.persistence:
        add_persistence(cs, shape, ctx.wd, ctx.weights, ctx.biases, ctx.inputs,
                        ctx.val(lambda x: x.persistence_slopes))
        report(f"persistence lens: {cs.n_constraints} constraints")
    with cs.scope("minimality"):
        counterexample(ctx)
    return ctx.handles()


def _part_bits(ctx: RegionContext) -> list:
    """One-hot bits of the slice the statement covers, summing to one and naming the public part."""
    cs, S = ctx.cs, ctx.shape.n_slices
    public = ctx.public
    bits = bool_inputs(cs, "slice", None if public is None else [int(public.part_slice == s) for s in range(S)], S)
    cs.assert_equal(cs.sum(bits), 1)
    cs.assert_equal(cs.lin_comb([(s, b) for s, b in enumerate(bits)]), ctx.inputs.part)
    return bits


def _part_forms(ctx: RegionContext, part_bits: list) -> list:
    """Layer 0's forms on the covered slice: its sensitive values chosen by the part's bits."""
    cs, shape, w0 = ctx.cs, ctx.shape, ctx.weights[0]
    values = [cs.lin_comb([(sv[ci], b) for sv, b in zip(shape.slices, part_bits)])
              for ci in range(len(shape.sensitive_columns))]
    return slice_forms(ctx, lambda i: cs.sum([cs.mul(w0[i][c], v) for c, v in zip(shape.sensitive_columns, values)]))
