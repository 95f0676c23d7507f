"""Which leaves of a committed tree are reachable within E of the query: the circuit form of
`fairness.trees.radius.path_distance` + `reachable`, from facts about single turns and pairs of turns.

A leaf's set is the conjunction of its path's turns: x[f_a] >= t_a (right) or x[f_a] < t_a (left) at
each ancestor a. Per free column and direction the plaintext counts the deepest turn that way, with
the query's violation of it; per sensitive column the slice's value must take every turn. So:

- per ancestor (`NodeFacts`): whether the query goes right there, and the violation of each turn by the
  query on a free feature, max(0, t - x[f]) to go right, max(0, x[f] - t) to go left (0 on a sensitive
  feature); per slice, whether the slice's sensitive value takes each turn (always on a free feature);
- per ancestor a and descendant b: whether they split on the same feature (`same_feature`);
- per leaf: the squared distance is the sum, over the path's turns, of the violation squared of each
  turn that no deeper turn of the path repeats (same feature, same direction): each feature and
  direction counted once, by its deepest turn.

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
    violation: tuple  # per direction: the query's distance to the turn's closed half-line on a free feature
    square: tuple  # per direction: violation^2
    in_slice: list  # per slice, per direction: the slice's sensitive value takes the turn (1 on a free feature)


def node_facts(cs, shape: TreeShape, selector: Sequence, threshold, x_at, goes_right) -> NodeFacts:
    """The facts of one node: selector its one-hot feature bits, x_at the query's value at its feature,
    goes_right the query's turn there ([x_at >= threshold], from inference)."""
    W = shape.coordinate_bits
    sens = shape.sensitive_columns
    feature = cs.lin_comb([(f, b) for f, b in enumerate(selector)])
    sensitive = boolean(cs.sum([selector[c] for c in sens]))  # a sub-sum of a checked one-hot
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
    return NodeFacts(feature, goes_right, violation, square, in_slice)


def same_feature(cs, a: NodeFacts, b: NodeFacts):
    """[a and b split on the same feature] (two committed indices)."""
    with cs.scope("same"):
        return cs.is_equal(a.feature, b.feature)


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
                     right: Sequence, eps_sq_scaled) -> list[list]:
    """Per slice, per leaf of one padded tree: reachable at E (`fairness.trees.radius`, bit for bit).
    x_at[k] is the query's value at node k's feature, right[k] its turn there."""
    nodes = []
    for k in range(shape.n_nodes):
        with cs.scope(f"node[{k}]"):
            nodes.append(node_facts(cs, shape, selectors[k], thresholds[k], x_at[k], right[k]))
    same: dict[tuple[int, int], object] = {}
    for leaf in range(0, shape.n_leaves, 2):  # every (ancestor, descendant) pair lies on an even leaf's path
        path = path_of(shape.depth, leaf)
        for i, (b, _) in enumerate(path):
            for a, _ in path[:i]:
                if (a, b) not in same:
                    with cs.scope(f"pair[{a},{b}]"):
                        same[a, b] = same_feature(cs, nodes[a], nodes[b])
    near = []
    for leaf in range(shape.n_leaves):
        with cs.scope(f"leaf[{leaf}]"):
            near.append(near_leaf(cs, shape, nodes, same, path_of(shape.depth, leaf), eps_sq_scaled))
    out = []
    for s in range(len(shape.slices)):
        row = []
        for leaf in range(shape.n_leaves):
            with cs.scope(f"slice[{s}]/leaf[{leaf}]"):
                takes = [nodes[n].in_slice[s][d] for n, d in path_of(shape.depth, leaf)]
                row.append(cs.and_(near[leaf], all_of(cs, takes)))
        out.append(row)
    return out


def near_leaf(cs, shape: TreeShape, nodes: Sequence[NodeFacts], same, path, eps_sq_scaled):
    """1 if the leaf's turns lie closer than eps to x over the free columns: each turn's violation squared
    counts unless a deeper turn of the path goes the same way on the same feature."""
    terms = []
    for i, (b, b_dir) in enumerate(path):
        repeated = [same[b, c] for c, c_dir in path[i + 1:] if c_dir == b_dir]
        deepest = all_of(cs, [boolean(1 - r) for r in repeated])  # no deeper turn the same way on b's feature
        terms.append(nodes[b].square[b_dir] if isinstance(deepest, int) else cs.mul(deepest, nodes[b].square[b_dir]))
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
