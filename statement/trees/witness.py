"""The public inputs and the honest witness of a tree statement, from a TreeModel, a query and E.

Reachability is computed by the plaintext certificate's own functions (`fairness.trees.radius`:
`leaf_box`, `distance_sq`, `reachable`) on every leaf of every padded tree, so the circuit's bits are
those of the plaintext bound, leaf for leaf.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from fairness.trees.ensemble import TreeModel
from fairness.trees.radius import distance_sq, leaf_box, reachable

from .commitment import commit
from .padding import CompleteTree, pad_tree
from .shape import TreeShape, TreeShapeError


@dataclass(frozen=True)
class TreePublic:
    """The statement's public inputs, in declaration order: commitment, decision, E, query."""

    commitment: int
    decision: int
    eps: int
    query: tuple[int, ...]


@dataclass(frozen=True)
class WorstLeaves:
    """The prover's choice for one tree in one slice: a reachable leaf of smallest and one of largest value."""

    lowest_index: int
    lowest_value: int
    highest_index: int
    highest_value: int


@dataclass(frozen=True)
class TreeWitness:
    salt: int
    trees: tuple[CompleteTree, ...]
    base: tuple[int, ...]
    paths: tuple[int, ...]  # per tree, the leaf the query reaches
    worst: tuple[tuple[WorstLeaves, ...], ...]  # per slice, per tree


def reach_bits(model: TreeModel, tree: CompleteTree, query: Sequence[int], slice_values: Sequence[int],
               eps: int, eps_bits: int) -> list[bool]:
    """Per leaf of the padded tree: reachable in the slice at E (the plaintext certificate's test)."""
    out = []
    for path in tree.paths():
        box = leaf_box(model, path, slice_values)
        out.append(box is not None and reachable(distance_sq(query, box[0], box[1], model.free_columns), eps,
                                                 eps_bits, model.scale_bits))
    return out


def worst_leaves(tree: CompleteTree, reach: Sequence[bool]) -> WorstLeaves:
    """The first reachable leaf of smallest and of largest value (leaf 0 if none is reachable: the
    circuit then refuses, as it must)."""
    indices = [j for j, r in enumerate(reach) if r] or [0]
    low = min(indices, key=lambda j: tree.value[j])
    high = max(indices, key=lambda j: tree.value[j])
    return WorstLeaves(low, tree.value[low], high, tree.value[high])


def tree_statement_inputs(model: TreeModel, shape: TreeShape, query: Sequence[int], eps: int,
                          salt: int) -> tuple[TreePublic, TreeWitness]:
    """(public, witness) for `query` at E = eps over every slice of the model. The decision is the model's;
    whether E is provable is the circuit's question (the honest witness at a larger E is refused)."""
    ens = model.ensemble
    if (len(ens.trees), ens.n_inputs, ens.n_classes, model.sensitive_columns) != \
            (shape.n_trees, shape.n_inputs, shape.n_classes, shape.sensitive_columns):
        raise TreeShapeError("the model does not have the shape's trees, inputs, classes or sensitive columns")
    q = model.check_query(query)
    trees = tuple(pad_tree(t, shape.depth) for t in ens.trees)
    worst = tuple(tuple(worst_leaves(t, reach_bits(model, t, q, s, eps, shape.eps_bits)) for t in trees)
                  for s in shape.slices)
    public = TreePublic(commit(salt, trees, ens.base, shape), ens.decision(q), eps, q)
    return public, TreeWitness(salt, trees, tuple(ens.base), tuple(t.leaf_of(q) for t in trees), worst)
