"""The tree-ensemble bound certificate as a zero-knowledge statement.

`shape` holds the public parameters (counts, padded depth, scales, box, slices, widths), `padding` the
complete trees the statement commits to, `commitment` the salted Poseidon commitment, `witness` the
public inputs and honest witness from a `fairness.trees.TreeModel`, `gadgets` the named pieces and
`reach` which leaves are reachable (from facts about splits and pairs of splits, never a box), and
`circuit` the constraint system (`build_tree_statement`), the circuit twin of `fairness.trees.radius`.
"""
from __future__ import annotations

from .circuit import build_tree_statement
from .padding import CompleteTree, pad_tree, pad_trees
from .shape import TreeShape, TreeShapeError, tree_shape
from .witness import TreePublic, TreeWitness, WorstLeaf, tree_statement_inputs

__all__ = ["CompleteTree", "TreePublic", "TreeShape", "TreeShapeError", "TreeWitness", "WorstLeaf",
           "build_tree_statement", "pad_tree", "pad_trees", "tree_shape", "tree_statement_inputs"]
