"""The salted Poseidon commitment to a padded tree ensemble.

Canonical preimage (field elements; a signed integer v is encoded as v mod R):

    [ TREE_COMMITMENT_TAG, shape.digest(), salt,
      base_0 .. base_{k-1},
      per tree: (feature_i, threshold_i) for every internal node in heap order, then its 2^D leaf values ]

hashed with `circuits.poseidon.poseidon_chain`, the network commitment's sponge (`statement.commitment`).
The salt makes it hiding, Poseidon's collision resistance binding; the shape digest ties it to the
depth, scales, box, slices and widths the statement is built for.
"""
from __future__ import annotations

from typing import Sequence

from circuits.field import R
from circuits.poseidon import poseidon_chain

from .padding import CompleteTree
from .shape import TreeShape

TREE_COMMITMENT_TAG = int.from_bytes(b"fairproof.trees.v1", "big")


def preimage(salt: int, trees: Sequence[CompleteTree], base: Sequence[int], shape: TreeShape) -> list[int]:
    out = [TREE_COMMITMENT_TAG, shape.digest(), salt % R, *(b % R for b in base)]
    for tree in trees:
        for f, t in zip(tree.feature, tree.threshold):
            out.extend((f % R, t % R))
        out.extend(v % R for v in tree.value)
    return out


def commit(salt: int, trees: Sequence[CompleteTree], base: Sequence[int], shape: TreeShape) -> int:
    """The native commitment (a field element)."""
    return poseidon_chain(preimage(salt, trees, base, shape))


def commit_in_circuit(cs, salt, features, thresholds, values, base, shape: TreeShape):
    """The same hash over circuit values: features[i][k], thresholds[i][k], values[i][j] per tree i."""
    xs = [cs.constant(TREE_COMMITMENT_TAG), cs.constant(shape.digest()), salt, *base]
    for fs, ts, vs in zip(features, thresholds, values):
        for f, t in zip(fs, ts):
            xs.extend((f, t))
        xs.extend(vs)
    with cs.scope("commitment"):
        return cs.poseidon_chain(xs)
