"""Which leaves of a committed tree are reachable within E of the query: the circuit form of
`fairness.trees.radius.path_distance` + `reachable`, from facts about single turns and pairs of turns.

A leaf's set is the conjunction of its path's turns: x[f_a] >= t_a (right) or x[f_a] < t_a (left) at
each ancestor a. Per free column the plaintext's gap is the largest violation of the path's turns on
it; per sensitive column the slice's value must take every turn. So:

- per ancestor (`NodeFacts`): whether the query goes right there, and the violation of each turn by the
  query on a free feature, max(0, t - x[f]) to go right, max(0, x[f] - t) to go left (0 on a sensitive
  feature); per slice, whether the slice's sensitive value takes each turn (always on a free feature);
- per ancestor a and descendant b (`PairFacts`): whether they split on the same feature, and whether
  a's violation is at least b's;
- per leaf: the squared distance is the sum, over the path's turns, of the violation squared of the
  turn that is the largest on its feature (the first among equals): each feature is counted once.

These are the plaintext's bits, leaf for leaf (both leave aside whether any point reaches the leaf at
all: see `fairness.trees.radius`).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from .gadgets import is_close
from .shape import TreeShape

LEFT, RIGHT = 0, 1


@dataclass
class NodeFacts:
    """One internal node's split against the query (see the module docstring); per direction, a pair
    (left, right)."""

    feature: object  # the committed feature index
    goes_right: object  # [x[f] >= t]: the query's own turn
    magnitude: object  # the violation of the turn the query does not take, |t - x[f]| on a free feature
    violation: tuple  # per direction: the query's distance to the turn's closed half-line on a free feature
    square: tuple  # per direction: violation^2
    in_slice: list  # per slice, per direction: the slice's sensitive value takes the turn (1 on a free feature)


def node_facts(cs, shape: TreeShape, selector: Sequence, threshold, x_at) -> NodeFacts:
    """The facts of one node: selector its one-hot feature bits, x_at the query's value at its feature."""
    W = shape.coordinate_bits
    sens = shape.sensitive_columns
    feature = cs.lin_comb([(f, b) for f, b in enumerate(selector)])
    sensitive = boolean(cs.sum([selector[c] for c in sens]))  # a sub-sum of a checked one-hot
    with cs.scope("goes_right"):
        goes_right = 1 - cs.is_less(x_at, threshold, W)
    with cs.scope("violation"):
        below = cs.mul(1 - sensitive, threshold - x_at)  # free: t - x (0 on a sensitive feature)
        above = cs.mul(below, goes_right)  # free and right of t: t - x <= 0
        violation = (-above, below - above)  # left: max(0, x - t); right: max(0, t - x)
        square = (cs.square(violation[LEFT]), cs.square(violation[RIGHT]))
    in_slice = []
    for s, values in enumerate(shape.slices):
        with cs.scope(f"slice[{s}]"):
            at = cs.lin_comb([(v, selector[c]) for c, v in zip(sens, values)])  # 0 on a free feature
            right = cs.mul(sensitive, 1 - cs.is_less(at, threshold, W))  # sensitive and the value is >= t
            in_slice.append((1 - right, boolean(1 - sensitive + right)))  # right implies sensitive
    return NodeFacts(feature, goes_right, violation[LEFT] + violation[RIGHT], violation, square, in_slice)


@dataclass
class PairFacts:
    """An ancestor a and a descendant b on one path; a's direction is fixed by b's side, so every fact is
    per direction of b."""

    same_and_a_first: tuple  # same feature and a's violation >= b's: b is not the largest first
    same_and_b_larger: tuple  # same feature and b's violation > a's: a is not the largest


def pair_facts(cs, shape: TreeShape, a: NodeFacts, a_dir: int, b: NodeFacts) -> PairFacts:
    W = shape.coordinate_bits
    with cs.scope("same"):
        same = cs.is_equal(a.feature, b.feature)
    with cs.scope("larger"):  # a's violation against the one b's turns can have (the other is 0)
        a_at_least = 1 - cs.is_less(a.violation[a_dir], b.magnitude, W + 1)
    a_first, b_larger = [], []
    for b_dir in (LEFT, RIGHT):
        with cs.scope("left" if b_dir == LEFT else "right"):
            against = b.goes_right if b_dir == LEFT else 1 - b.goes_right  # b's violation is its magnitude
            at_least = 1 - cs.mul(against, 1 - a_at_least)  # else it is 0: a's is at least as large
            first = cs.mul(same, at_least)
            a_first.append(first)
            b_larger.append(boolean(same - first))  # first implies same
    return PairFacts(tuple(a_first), tuple(b_larger))


def path_of(depth: int, leaf: int) -> list[tuple[int, int]]:
    """(node, direction) from the root down to leaf `leaf` (heap order; bit depth-1-k of the index is the
    turn at level k, 1 = right)."""
    out, node = [], 0
    for k in range(depth - 1, -1, -1):
        turn = (leaf >> k) & 1
        out.append((node, turn))
        node = 2 * node + 1 + turn
    return out


def reachable_leaves(cs, shape: TreeShape, selectors: Sequence, thresholds: Sequence, x_at: Sequence,
                     eps_sq_scaled) -> list[list]:
    """Per slice, per leaf of one padded tree: reachable at E (`fairness.trees.radius`, bit for bit).
    x_at[k] is the query's value at node k's feature."""
    nodes = []
    for k in range(shape.n_nodes):
        with cs.scope(f"node[{k}]"):
            nodes.append(node_facts(cs, shape, selectors[k], thresholds[k], x_at[k]))
    pairs: dict[tuple[int, int], PairFacts] = {}
    for leaf in range(0, shape.n_leaves, 2):  # every (ancestor, descendant) pair lies on an even leaf's path
        path = path_of(shape.depth, leaf)
        for i, (b, _) in enumerate(path):
            for a, a_dir in path[:i]:
                if (a, b) not in pairs:
                    with cs.scope(f"pair[{a},{b}]"):
                        pairs[a, b] = pair_facts(cs, shape, nodes[a], a_dir, nodes[b])
    near = []
    for leaf in range(shape.n_leaves):
        with cs.scope(f"leaf[{leaf}]"):
            near.append(near_leaf(cs, shape, nodes, pairs, path_of(shape.depth, leaf), eps_sq_scaled))
    out = []
    for s in range(len(shape.slices)):
        row = []
        for leaf in range(shape.n_leaves):
            with cs.scope(f"slice[{s}]/leaf[{leaf}]"):
                takes = [nodes[n].in_slice[s][d] for n, d in path_of(shape.depth, leaf)]
                row.append(cs.and_(near[leaf], all_of(cs, takes)))
        out.append(row)
    return out


def near_leaf(cs, shape: TreeShape, nodes: Sequence[NodeFacts], pairs, path, eps_sq_scaled):
    """1 if the leaf's turns lie closer than eps to x over the free columns."""
    terms = []
    for i, (b, b_dir) in enumerate(path):
        largest = []  # b's turn is the largest (first among equals) on its feature
        for a, _ in path[:i]:
            largest.append(1 - pairs[a, b].same_and_a_first[b_dir])
        for c, c_dir in path[i + 1:]:
            largest.append(boolean(1 - pairs[b, c].same_and_b_larger[c_dir]))
        terms.append(cs.mul(all_of(cs, largest), nodes[b].square[b_dir]) if largest else nodes[b].square[b_dir])
    return is_close(cs, cs.sum(terms), eps_sq_scaled, shape.d2_shift, shape.reach_bits)


def boolean(lc):
    """Mark a linear form known to be 0 or 1 by construction (the comment at each use says why), so that
    the builder's boolean operations do not check it again."""
    lc.boolean = True
    return lc


def all_of(cs, bits: Sequence):
    """The product of boolean values (1 for none; constants 1 are skipped)."""
    out = None
    for b in bits:
        if isinstance(b, int) and b == 1:
            continue
        out = b if out is None else cs.and_(out, b)
    return 1 if out is None else out
