"""The whole region statement: one proof covers every slice (fast or exact radius).

Order of its parts (the R1CS, and so the keys, depend on it): the preamble (`context`), layer 0's
forms on every slice, each slice's covering, the decisions across slices, the lenses, and the
minimality of the radius (fast: a designated row; exact: a counterexample).
"""
from __future__ import annotations

from typing import Callable

from ..affine import decision_rows
from ..lenses.persistence import add_persistence
from ..lenses.spread import add_spread, relative_logits
from ..shape import StatementShape
from ..witness import StatementPublic, StatementWitness
from .context import StatementHandles, layer0_terms, region_preamble, slice_forms
from .counterexample import counterexample
from .covers import cover_slices
from .decisions import whole_decisions
from .minimality import fast_minimality


def build_whole_statement(cs, shape: StatementShape, public: StatementPublic | None,
                          witness: StatementWitness | None, report: Callable[[str], None]) -> StatementHandles:
    ctx = region_preamble(cs, shape, public, witness)
    with cs.scope("layer0"):
        layer0_terms(ctx)
        w0 = ctx.weights[0]
        base = [slice_forms(ctx, lambda i, sv=sv: cs.lin_comb([(v, w0[i][c])
                                                               for c, v in zip(shape.sensitive_columns, sv)]))
                for sv in shape.slices]
    ctx.dec_rows = decision_rows(cs, ctx.y_bits, ctx.weights[-1], ctx.biases[-1])
    slices = cover_slices(ctx, base, report)
    values = [c.decision_values for c in slices]
    with cs.scope("decisions"):
        whole_decisions(ctx, values)
    if shape.spread:
        add_spread(cs, shape, ctx.wd, ctx.inputs, lambda: [relative_logits(cs, ctx.ge, d) for d in values])
    if shape.persistence:
        add_persistence(cs, shape, ctx.wd, ctx.weights, ctx.biases, ctx.inputs,
                        ctx.val(lambda x: x.persistence_slopes))
        report(f"persistence lens: {cs.n_constraints} constraints")
    with cs.scope("minimality"):
        if shape.exact:
            counterexample(ctx)
        else:
            fast_minimality(ctx, [c.ids for c in slices], [c.distance_kinds for c in slices], base)
    return ctx.handles()
