"""The salted Poseidon commitment to a padded tree ensemble.

Canonical preimage (field elements):

    [ TREE_COMMITMENT_TAG, shape.digest(), salt,
      pack(base, b_v + 1, signed),
      pack(every tree's node features in heap order, tree after tree, feature_bits, unsigned),
      pack(every tree's node thresholds, likewise, b_t + 1, signed),
      pack(every tree's 2^D leaf values, tree after tree, b_v + 1, signed) ]

hashed with `circuits.poseidon.poseidon_chain`, the network commitment's sponge (`statement.commitment`);
`pack` is `circuits.gadgets.bits.pack` (values side by side in 252 bits). The circuit range-checks every
threshold and value to the shape's widths and every feature is a checked one-hot's index (< n_inputs),
so the packing is injective. The salt makes the commitment hiding, Poseidon's collision resistance
binding; the shape digest ties it to the depth, scales, box, slices and widths the statement is built for.
"""
from __future__ import annotations

from typing import Sequence

from circuits.field import R
from circuits.gadgets.bits import pack, pack_native
from circuits.poseidon import poseidon_chain

from .padding import CompleteTree
from .shape import TreeShape

TREE_COMMITMENT_TAG = int.from_bytes(b"fairproof.trees.v2", "big")


def feature_bits(shape: TreeShape) -> int:
    """Width of a feature index (0 <= f < n_inputs)."""
    return max(1, (shape.n_inputs - 1).bit_length())


def preimage(salt: int, trees: Sequence[CompleteTree], base: Sequence[int], shape: TreeShape) -> list[int]:
    return [TREE_COMMITMENT_TAG, shape.digest(), salt % R,
            *pack_native(list(base), shape.value_range_bits + 1, signed=True),
            *pack_native([f for t in trees for f in t.feature], feature_bits(shape), signed=False),
            *pack_native([v for t in trees for v in t.threshold], shape.threshold_bits + 1, signed=True),
            *pack_native([v for t in trees for v in t.value], shape.value_range_bits + 1, signed=True)]


def commit(salt: int, trees: Sequence[CompleteTree], base: Sequence[int], shape: TreeShape) -> int:
    """The native commitment (a field element)."""
    return poseidon_chain(preimage(salt, trees, base, shape))


def commit_in_circuit(cs, salt, features, thresholds, values, base, shape: TreeShape):
    """The same hash over circuit values: features[i][k], thresholds[i][k], values[i][j] per tree i, each
    already constrained to its width (`committed_ensemble`)."""
    with cs.scope("commitment"):
        xs = [cs.constant(TREE_COMMITMENT_TAG), cs.constant(shape.digest()), salt,
              *pack(cs, list(base), shape.value_range_bits + 1, signed=True, already_range_checked=True),
              *pack(cs, [f for fs in features for f in fs], feature_bits(shape), signed=False,
                    already_range_checked=True),
              *pack(cs, [t for ts in thresholds for t in ts], shape.threshold_bits + 1, signed=True,
                    already_range_checked=True),
              *pack(cs, [v for vs in values for v in vs], shape.value_range_bits + 1, signed=True,
                    already_range_checked=True)]
        return cs.poseidon_chain(xs)
