"""The public inputs and the honest witness of a tree statement, from a TreeModel, a query and E.

Reachability is computed by the plaintext certificate's own functions (`fairness.trees.radius`:
`path_distance`, `reachable`) on every leaf of every padded tree, so the circuit's bits are
those of the plaintext bound, leaf for leaf; the status and the flip slice are `flip_check`'s.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from circuits.field import R
from fairness.trees.ensemble import TreeModel
from fairness.trees.radius import flip_check, path_distance, reachable

from .commitment import commit
from .padding import CompleteTree, pad_trees
from .shape import TreeShape, TreeShapeError


# The status public input: the radius is certified, or a slice flips the decision (E = 0).
CERTIFIED_STATUS, FLIP_STATUS = 0, 1


@dataclass(frozen=True)
class TreePublic:
    """The statement's public inputs, in declaration order: commitment, decision, E, status, flip slice,
    query (the network certificate's order, `statement.public_inputs`)."""

    commitment: int
    decision: int
    eps: int
    status: int
    flip_slice: int
    query: tuple[int, ...]

    def signals(self) -> list[int]:
        """The public inputs as field elements, in declaration order."""
        return [self.commitment, self.decision, self.eps, self.status, self.flip_slice,
                *(v % R for v in self.query)]


@dataclass(frozen=True)
class WorstLeaf:
    """The prover's choice for one tree in one slice: a reachable leaf whose signed value s v is the largest
    (s = -1 on a tree adding to y's score, so its smallest value; +1 otherwise, its largest), and s v."""

    index: int
    value: int


@dataclass(frozen=True)
class TreeWitness:
    salt: int
    trees: tuple[CompleteTree, ...]
    base: tuple[int, ...]
    paths: tuple[int, ...]  # per tree, the leaf the query reaches
    worst: tuple[tuple[WorstLeaf, ...], ...]  # per slice, per tree
    # The query with the flip slice's sensitive values: per tree the leaf it reaches, and (multiclass) a
    # class other than y scoring at least y's there (checked only under a flip).
    flip_paths: tuple[int, ...]
    rival: int


def reach_bits(model: TreeModel, tree: CompleteTree, query: Sequence[int], slice_values: Sequence[int],
               eps: int, eps_bits: int) -> list[bool]:
    """Per leaf of the padded tree: reachable in the slice at E (the plaintext certificate's test)."""
    out = []
    for turns in tree.turns():
        d2 = path_distance(model, turns, slice_values, query)
        out.append(d2 is not None and reachable(d2, eps, eps_bits, model.scale_bits))
    return out


def worst_leaf(tree: CompleteTree, reach: Sequence[bool], sign: int) -> WorstLeaf:
    """The first reachable leaf of largest signed value (leaf 0 if none is reachable: the circuit then
    refuses, as it must)."""
    indices = [j for j, r in enumerate(reach) if r] or [0]
    j = max(indices, key=lambda j: sign * tree.value[j])
    return WorstLeaf(j, sign * tree.value[j])


def tree_signs(n_trees: int, n_scores: int, decision: int) -> list[int]:
    """Per tree, -1 when it adds to the decision's score (binary: the one score, when y = 1), else +1."""
    if n_scores == 1:
        return [-1 if decision == 1 else 1] * n_trees
    return [-1 if i % n_scores == decision else 1 for i in range(n_trees)]


def rival_class(scores: Sequence[int], decision: int) -> int:
    """A class other than `decision` with the largest score (the first on a tie); 0 for one score."""
    if len(scores) == 1:
        return 0
    return max((c for c in range(len(scores)) if c != decision), key=lambda c: (scores[c], -c))


def tree_statement_inputs(model: TreeModel, shape: TreeShape, query: Sequence[int], eps: int,
                          salt: int) -> tuple[TreePublic, TreeWitness]:
    """(public, witness) for `query` at E = eps over every slice of the model. The decision, the status and
    the flip slice are the model's (`flip_check`: a flip is proved at E = 0); whether E is provable is the
    circuit's question (the honest witness at a larger E, or at E > 0 under a flip, is refused)."""
    ens = model.ensemble
    if (len(ens.trees), ens.n_inputs, ens.n_classes, model.sensitive_columns) != \
            (shape.n_trees, shape.n_inputs, shape.n_classes, shape.sensitive_columns):
        raise TreeShapeError("the model does not have the shape's trees, inputs, classes or sensitive columns")
    q = model.check_query(query)
    y, flip, _ = flip_check(model, q)
    status, flip_slice = (CERTIFIED_STATUS, 0) if flip is None else (FLIP_STATUS, flip)
    counterfactual = model.with_slice(q, shape.slices[flip_slice])
    trees = pad_trees(ens.trees, shape.depth, shape.sensitive_columns)
    signs = tree_signs(len(trees), shape.n_scores, y)
    worst = tuple(tuple(worst_leaf(t, reach_bits(model, t, q, s, eps, shape.eps_bits), sign)
                        for t, sign in zip(trees, signs)) for s in shape.slices)
    public = TreePublic(commit(salt, trees, ens.base, shape), y, eps, status, flip_slice, q)
    return public, TreeWitness(salt, trees, tuple(ens.base), tuple(t.leaf_of(q) for t in trees), worst,
                               tuple(t.leaf_of(counterfactual) for t in trees),
                               rival_class(ens.scores(counterfactual), y))
