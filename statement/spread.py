"""The counterfactual spread lens in the circuit (fairness.spread is its plaintext twin).

Given, per slice, the committed model's logits at the query (up to one shift
per slice: argmax and margins do not see it), the gadgets here pin

    decision_s   the argmax, lowest index on a tie       (a public input per slice)
    b_s          floor((z_f - max_{j != f} z_j) / W)      (private)
    k            the number of distinct b_s              (a public input)

`bound` bounds every logit difference z_i - z_j of every slice (the statement's
decision-row bound), so no comparison can wrap.
"""
from __future__ import annotations

from typing import Sequence

from circuits.field import R

from .checks import assert_nonnegative, floor_div  # noqa: F401 (floor_div: part of the lens's gadgets)


def _signed(v: int) -> int:
    return v if v <= (R - 1) // 2 else v - R


def argmax(cs, values: Sequence, bound: int):
    """(one-hot bits of the argmax of `values`, lowest index on a tie; the maximum).

    Every value is at most the chosen one, and strictly below it before the
    chosen index: v - z_j - [j < chosen] >= 0 for all j."""
    n = len(values)
    if n == 1:
        return [1], values[0]

    def pick(*vals):
        signed = [_signed(v) for v in vals]
        top = max(range(n), key=lambda j: (signed[j], -j))
        return [int(j == top) for j in range(n)]

    chosen = cs.hint("argmax", pick, values, n)
    for b in chosen:
        cs.assert_is_bool(b)
    cs.assert_equal(cs.sum(chosen), 1)
    top = cs.sum([cs.mul(b, v) for b, v in zip(chosen, values)])
    for j, v in enumerate(values):
        before = cs.sum(chosen[j + 1:]) if j + 1 < n else 0  # [j < chosen index]
        assert_nonnegative(cs, top - v - before, bound + 1)
    return chosen, top


def distinct_count(cs, values: Sequence):
    """The number of distinct values: sum over s of [values[s] differs from every earlier one]."""
    firsts = []
    for s, v in enumerate(values):
        first = 1
        for t in range(s):
            first = cs.mul(first, 1 - cs.is_equal(v, values[t]))
        firsts.append(first)
    return cs.sum(firsts)


def spread_lens(cs, logits: Sequence[Sequence], decisions: Sequence, bucket_count, *, favourable_class: int,
                width: int, bound: int) -> None:
    """Assert each slice's decision and the bucket count (public inputs) from each slice's logits."""
    buckets = []
    for s, z in enumerate(logits):
        with cs.scope(f"slice{s}"):
            chosen, _ = argmax(cs, z, bound)
            cs.assert_equal(cs.lin_comb([(j, b) for j, b in enumerate(chosen)]), decisions[s])
            _, best_other = argmax(cs, [v for j, v in enumerate(z) if j != favourable_class], bound)
            buckets.append(floor_div(cs, z[favourable_class] - best_other, width, bound))
    with cs.scope("buckets"):
        cs.assert_equal(distinct_count(cs, buckets), bucket_count)
