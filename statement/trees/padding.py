"""A tree padded to a complete binary tree of a fixed depth: the form the circuit commits to.

Heap order: internal node i (0 the root) has children 2i + 1 (x[f] < threshold) and 2i + 2; the 2^D
leaves follow, leaf j (left to right) being heap node 2^D - 1 + j, so j's bits from the most significant
are the turns from the root (1 = right). A leaf of the original tree above depth D becomes an internal
node splitting on a sensitive column at threshold 0 whose two children both carry the leaf's value,
recursively down to depth D: every point reaches a leaf of the same value as before. The split is on a
sensitive column so that it changes no distance (a sensitive turn has no violation): in each slice one
child takes the turn with the original leaf's distance and value, the other is unreachable. The
reachable values (hence the bound radius) are unchanged. A split on a free column would add a deeper
turn that the distance rule counts (`fairness.trees.radius.path_distance`), loosening the bound.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from fairness.trees.ensemble import LEAF, Tree, Turn

PAD_THRESHOLD = 0


@dataclass(frozen=True)
class CompleteTree:
    """A complete binary tree of depth D: 2^D - 1 internal nodes (feature, threshold), 2^D leaf values."""

    feature: tuple[int, ...]
    threshold: tuple[int, ...]
    value: tuple[int, ...]

    def __post_init__(self) -> None:
        n = len(self.feature)
        if n < 1 or (n + 1) & n or len(self.threshold) != n or len(self.value) != n + 1:
            raise ValueError("a complete tree has 2^D - 1 internal nodes and 2^D leaves (D >= 1)")

    @property
    def depth(self) -> int:
        return len(self.value).bit_length() - 1

    def leaf_of(self, x: tuple[int, ...] | list[int]) -> int:
        """The index j of the leaf x reaches."""
        node = 0
        for _ in range(self.depth):
            node = 2 * node + (1 if x[self.feature[node]] < self.threshold[node] else 2)
        return node - len(self.feature)

    def turns(self) -> list[tuple[Turn, ...]]:
        """Per leaf (in order), its path's turns from the root, as `fairness.trees.ensemble.Tree.leaf_turns`."""
        out = []
        for j in range(len(self.value)):
            turns, node = [], 0
            for k in range(self.depth - 1, -1, -1):
                right = bool((j >> k) & 1)
                turns.append((self.feature[node], self.threshold[node], right))
                node = 2 * node + (2 if right else 1)
            out.append(tuple(turns))
        return out

    def paths(self) -> list[dict[int, tuple[int | None, int | None]]]:
        """Per leaf (in order), its path as a box: feature -> (lowest allowed, first excluded) or None
        (unbounded), as `fairness.trees.ensemble.Tree.leaves` gives it."""
        out = []
        for j in range(len(self.value)):
            box: dict[int, tuple[int | None, int | None]] = {}
            node = 0
            for k in range(self.depth - 1, -1, -1):
                f, t = self.feature[node], self.threshold[node]
                lo, hi = box.get(f, (None, None))
                if (j >> k) & 1:
                    box[f] = (t if lo is None else max(lo, t), hi)
                    node = 2 * node + 2
                else:
                    box[f] = (lo, t if hi is None else min(hi, t))
                    node = 2 * node + 1
            out.append(box)
        return out

    def as_tree(self) -> Tree:
        """The same tree in the ensemble's array form (for the plaintext certificate)."""
        n = len(self.feature)
        return Tree(
            feature=tuple(self.feature) + (LEAF,) * (n + 1),
            threshold=tuple(self.threshold) + (0,) * (n + 1),
            left=tuple(2 * i + 1 for i in range(n)) + (-1,) * (n + 1),
            right=tuple(2 * i + 2 for i in range(n)) + (-1,) * (n + 1),
            value=(0,) * n + tuple(self.value),
        )


def pad_tree(tree: Tree, depth: int, pad_feature: int) -> CompleteTree:
    """The tree as a complete tree of the given depth (ValueError if it is deeper); short leaves split on
    `pad_feature`, a sensitive column (see the module docstring)."""
    if depth < 1:
        raise ValueError("a padded tree has depth >= 1")
    feature: list[int] = [0] * ((1 << depth) - 1)
    threshold: list[int] = [0] * len(feature)
    value: list[int] = [0] * (1 << depth)

    def fill(heap: int, node: int, level: int) -> None:
        if level == depth:
            if tree.feature[node] != LEAF:
                raise ValueError(f"the tree is deeper than {depth}")
            value[heap - len(feature)] = tree.value[node]
            return
        if tree.feature[node] == LEAF:
            feature[heap], threshold[heap] = pad_feature, PAD_THRESHOLD
            fill(2 * heap + 1, node, level + 1)
            fill(2 * heap + 2, node, level + 1)
            return
        feature[heap], threshold[heap] = tree.feature[node], tree.threshold[node]
        fill(2 * heap + 1, tree.left[node], level + 1)
        fill(2 * heap + 2, tree.right[node], level + 1)

    fill(0, 0, 0)
    return CompleteTree(tuple(feature), tuple(threshold), tuple(value))


def pad_trees(trees: Sequence[Tree], depth: int, sensitive_columns: Sequence[int]) -> tuple[CompleteTree, ...]:
    """Every tree padded to `depth`, short leaves splitting on the first sensitive column."""
    return tuple(pad_tree(t, depth, sensitive_columns[0]) for t in trees)
