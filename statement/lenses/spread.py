"""The spread lens as a statement part: every slice's decision and the number of distinct buckets of
the favourable margin, asserted from each slice's logits (`statement.spread`).

Statements give it logits their own way: the whole region statement as logits relative to z_y from
slot 0's decision values (`relative_logits`), a per-slice one by a forward pass of every slice
(`forward_logits`), the bound statement from its exact forward pass.
"""
from __future__ import annotations

from typing import Any, Callable, Sequence

from ..public_inputs import PublicInputs
from ..shape import StatementShape
from ..spread import spread_lens
from ..widths import StatementWidths


def add_spread(cs, shape: StatementShape, wd: StatementWidths, inputs: PublicInputs,
               logits: Callable[[], Sequence[Sequence]]) -> None:
    """Assert the spread inputs of `inputs` from every slice's logits, which `logits()` computes (in the
    "spread" scope, as the lens's own constraints)."""
    with cs.scope("spread"):
        spread_lens(cs, logits(), inputs.spread_decisions, inputs.spread_buckets,
                    favourable_class=shape.favourable_class, width=shape.spread_width, bound=wd.decision.value)


def relative_logits(cs, ge: Sequence, d: Sequence) -> list:
    """z_j - z_y for every class j, from the decision values d_o = z_y - z_j(o), where
    j(o) = o for o < y and o + 1 otherwise, and ge[o] = [y <= o]."""
    C = len(d) + 1
    out = []
    for j in range(C):
        below = cs.mul(1 - ge[j], d[j]) if j < C - 1 else 0  # j < y: o = j
        above = cs.mul(ge[j - 1], d[j - 1]) if j > 0 else 0  # j > y: o = j - 1
        out.append(-(cs.lc(below) + cs.lc(above)))
    return out


def forward_logits(cs, shape: StatementShape, wd: StatementWidths, weights, biases, free_dot: Sequence,
                   slice_values: Sequence[int]) -> list[Any]:
    """The committed model's logits at the query with its sensitive columns set to `slice_values`
    (exact: each ReLU by an exact comparison at the layer's width); free_dot[i] = W_0[i, free] . u*."""
    z = [free_dot[i] + cs.lin_comb([(v, weights[0][i][c]) for c, v in zip(shape.sensitive_columns, slice_values)])
         + biases[0][i] for i in range(shape.hidden_sizes[0])]
    for l in range(1, shape.n_layers):
        width = max(wd.layers[l - 1].value.bit_length(), 1)
        h = [cs.mul(cs.is_less(0, zi, width), zi) for zi in z]
        z = [cs.sum([cs.mul(w, v) for w, v in zip(weights[l][i], h)]) + biases[l][i] for i in range(len(weights[l]))]
    return z
