"""Small gadgets of the tree statement, each the circuit form of one line of `fairness.trees.radius`.

A box is a pair (lower, upper) of per-input circuit values meaning lower <= x < upper on the integer
grid (its real closure: lower <= x <= upper, clipped to the domain box). Widths: `width` is the shape's
coordinate_bits W; every operand of a comparison here is known to lie in [-2^W, 2^W) (thresholds are
range-checked, the box and the query are bounded by the shape), so the compare gadgets' precondition holds.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

Box = tuple[list, list]


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


def split_box(cs, box: Box, bits: Sequence, threshold, right: bool, domain: Box, width: int) -> Box:
    """The box of a node's child: the left child (x[f] < threshold) lowers f's upper bound to
    min(upper, threshold), the right child raises its lower bound to max(lower, threshold); every other
    feature keeps its bounds (its candidate is the domain's own bound, which changes nothing)."""
    lower, upper = list(box[0]), list(box[1])
    with cs.scope("right" if right else "left"):
        for f, b in enumerate(bits):
            with cs.scope(f"x[{f}]"):
                if right:
                    lower[f] = cs.max(lower[f], cs.select(b, threshold, domain[0][f]), width)
                else:
                    upper[f] = cs.min(upper[f], cs.select(b, threshold, domain[1][f]), width)
    return lower, upper


def leaf_boxes(cs, selectors: Sequence[Sequence], thresholds: Sequence, domain: Box, width: int) -> list[Box]:
    """Every leaf's box of a complete tree in heap order, derived from its path: starting from the domain
    box (upper bound exclusive: box_upper + 1), each turn applies `split_box` (ancestors' boxes shared)."""
    boxes: list[Box] = [domain]
    for node in range(len(thresholds)):
        with cs.scope(f"node[{node}]"):
            boxes.append(split_box(cs, boxes[node], selectors[node], thresholds[node], False, domain, width))
            boxes.append(split_box(cs, boxes[node], selectors[node], thresholds[node], True, domain, width))
    return boxes[len(thresholds):]


def relu(cs, z, width: int):
    """max(0, z) for z in [-2^width, 2^width)."""
    with cs.scope("relu"):
        return cs.select(cs.is_negative(z, width), 0, z)


def box_distance2(cs, box: Box, x: Sequence, free: Sequence[int], box_upper: Sequence[int], width: int):
    """Squared l2 distance from x to the box's closure clipped to the domain, over the free columns
    (`fairness.trees.radius.distance_sq` on `leaf_box`'s bounds): per feature the closed upper bound is
    min(box_upper, upper) = upper - [upper == box_upper + 1] (upper never exceeds box_upper + 1), and the
    gap is max(0, lower - x) + max(0, x - closed upper) (at most one term is positive on a non-empty box;
    an empty box is unreachable whatever its distance)."""
    lower, upper = box
    total = []
    with cs.scope("distance2"):
        for f in free:
            closed = upper[f] - cs.is_equal(upper[f], box_upper[f] + 1)
            gap = relu(cs, lower[f] - x[f], width + 1) + relu(cs, x[f] - closed, width + 1)
            total.append(cs.square(gap))
    return cs.sum(total)


def free_nonempty(cs, box: Box, free: Sequence[int], width: int):
    """1 if lower < upper on every free column (the leaf meets the domain box), else 0."""
    with cs.scope("nonempty"):
        flag = cs.one
        for f in free:
            flag = cs.and_(flag, cs.is_less(box[0][f], box[1][f], width))
        return flag


def holds_slice(cs, box: Box, columns: Sequence[int], values: Sequence[int], width: int):
    """1 if the slice's fixed values lie in the box (lower <= v < upper on each sensitive column), else 0."""
    with cs.scope("holds_slice"):
        flag = cs.one
        for c, v in zip(columns, values):
            flag = cs.and_(flag, cs.is_less_or_equal(box[0][c], v, width))
            flag = cs.and_(flag, cs.is_less(v, box[1][c], width))
        return flag


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


def max_over_reachable(cs, values: Sequence, reach: Sequence, choice: WorstChoice, width: int, gate,
                       lowest: bool = False):
    """Where gate is 1, prove that choice.value is the largest (lowest=True: the smallest) value over the
    reachable leaves: the chosen leaf is reachable and holds that value, and every reachable leaf's value
    is <= it (>= it). values are in [-2^width, 2^width), so each difference fits width + 1 bits and a
    negative one (a residue near R) fails the range check. Where gate is 0 (a flip: no leaf is reachable),
    only the chosen value is checked to be a leaf's. Returns choice.value."""
    sign = -1 if lowest else 1
    with cs.scope("min_over_reachable" if lowest else "max_over_reachable"):
        with cs.scope("chosen"):
            cs.assert_equal(cs.mux(choice.index_bits, values), choice.value)
            cs.assert_equal(cs.mul(gate, cs.mux(choice.index_bits, reach)), gate)
        with cs.scope("dominates"):
            for v, r in zip(values, reach):
                cs.assert_range(cs.mul(r, (choice.value - v) * sign), width + 1)
    return choice.value
