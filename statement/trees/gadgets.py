"""Small gadgets of the tree statement, each the circuit form of one line of `fairness.trees.radius`.

Widths: every operand of a comparison here is known to lie in [-2^W, 2^W) for the shape's coordinate_bits W
(thresholds are range-checked, the box and the query are bounded by the shape), so the compare gadgets'
precondition holds.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

def feature_selector(cs, bits: Sequence):
    """Check a one-hot selector (each entry boolean, their sum 1) and return the feature index it names,
    sum_f f * bits[f] (a linear form: what the commitment binds)."""
    with cs.scope("one_hot"):
        for b in bits:
            cs.assert_is_bool(b)
        cs.assert_equal(cs.sum(bits), 1)
    return cs.lin_comb([(f, b) for f, b in enumerate(bits)])


def select_feature(cs, bits: Sequence, x: Sequence):
    """x[f] for the one-hot selector bits of feature f: sum_f bits[f] x[f] (one product per input)."""
    with cs.scope("select_feature"):
        return cs.inner_product(list(bits), list(x))


def is_close(cs, d2, eps_sq_scaled, d2_shift: int, width: int):
    """[d2 2^d2_shift < eps_sq_scaled]: some point of the box is closer than eps (the caller scales E^2; the
    plaintext's d2 2^(2t) < E^2 2^(2s) divided by the power of two both sides share)."""
    with cs.scope("close"):
        return cs.is_less(d2 * (1 << d2_shift), eps_sq_scaled, width)


@dataclass(frozen=True)
class WorstChoice:
    """A prover's claim: the leaf at `index_bits` (little-endian) is reachable and has the value `value`."""

    value: object
    index_bits: list


def max_over_reachable(cs, values: Sequence, reach: Sequence, choice: WorstChoice, width: int, gate):
    """Where gate is 1, prove that choice.value is the largest value over the reachable leaves: the chosen
    leaf is reachable and holds that value, and every reachable leaf's value is <= it. values are in
    [-2^width, 2^width), so each difference fits width + 1 bits and a negative one (a residue near R) fails
    the range check. Where gate is 0 (a flip: no leaf is reachable), only the chosen value is checked to be
    a leaf's. Returns choice.value."""
    with cs.scope("max_over_reachable"):
        with cs.scope("chosen"):
            cs.assert_equal(cs.mux(choice.index_bits, values), choice.value)
            cs.assert_equal(cs.mul(gate, cs.mux(choice.index_bits, reach)), gate)
        with cs.scope("dominates"):
            for v, r in zip(values, reach):
                cs.assert_range(cs.mul(r, choice.value - v), width + 1)
    return choice.value
