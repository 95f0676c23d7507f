"""The salted Poseidon commitment to the model's weights.

Canonical preimage (a vector of field elements):

    [ COMMITMENT_TAG,
      shape.model_digest(),          # SHA-256 of the model part of the shape, mod R
      salt,                          # a uniformly random field element (secret)
      W_0 row-major, b_0, W_1 row-major, b_1, ..., W_L row-major, b_L ]

with every signed weight/bias v encoded as v mod R, hashed with
`circuits.poseidon.poseidon_chain` (circomlib Poseidon, chained in chunks of
15 with the length as the seed; see that module). COMMITMENT_TAG is the
big-endian integer of the ASCII bytes "fairproof.weights.v1". Anyone with a
circomlib-compatible Poseidon recomputes it from these lines. The random
salt makes the commitment hiding; Poseidon's collision resistance makes it
binding. The model digest ties the weights to the architecture, box and
sensitive domain (not to a circuit bucket: one commitment serves every bucket).
"""
from __future__ import annotations

from typing import Sequence

from circuits.field import R
from circuits.poseidon import poseidon_chain

from .shape import StatementShape

COMMITMENT_TAG = int.from_bytes(b"fairproof.weights.v1", "big")
COMMITMENT_SCHEME = "poseidon-chain/circomlib; [tag, model_digest, salt, W0, b0, ..., WL, bL]"


def preimage(salt: int, weights: Sequence, biases: Sequence, shape: StatementShape) -> list[int]:
    out = [COMMITMENT_TAG, shape.model_digest(), salt % R]
    for w, b in zip(weights, biases):
        for row in w:
            out.extend(int(v) % R for v in row)
        out.extend(int(v) % R for v in b)
    return out


def commit(salt: int, weights: Sequence, biases: Sequence, shape: StatementShape) -> int:
    """Native commitment (a field element)."""
    return poseidon_chain(preimage(salt, weights, biases, shape))


def committed_parameters(cs, shape, commitment, weights=None, biases=None, salt=None):
    """Declare the private weights, biases and salt (values when given), range-check each parameter against
    the shape's declared bounds ([-2^b, 2^b)), and assert that their commitment is `commitment` (a public
    input). Returns (weights, biases) as circuit values, layer by layer."""
    sizes = (shape.n_inputs, *shape.hidden_sizes, shape.n_classes)
    ws, bs = [], []
    with cs.scope("params"):
        for l in range(len(sizes) - 1):
            w = [cs.private_inputs(f"W{l}[{i}]", sizes[l], None if weights is None else weights[l][i])
                 for i in range(sizes[l + 1])]
            b = cs.private_inputs(f"b{l}", sizes[l + 1], None if biases is None else biases[l])
            for row in w:
                for v in row:
                    cs.assert_signed_range(v, shape.weight_bits[l])
            for v in b:
                cs.assert_signed_range(v, shape.bias_bits[l])
            ws.append(w)
            bs.append(b)
        salt_value = cs.private_input("salt", salt)
    digest = commit_in_circuit(cs, salt_value, ws, bs, shape)
    with cs.scope("commitment_check"):
        cs.assert_equal(digest, commitment)
    return ws, bs


def commit_in_circuit(cs, salt, weights, biases, shape: StatementShape):
    """The same hash over circuit values (weights[l][i][j], biases[l][i], salt as LCs)."""
    xs = [cs.constant(COMMITMENT_TAG), cs.constant(shape.model_digest()), salt]
    for w, b in zip(weights, biases):
        for row in w:
            xs.extend(row)
        xs.extend(b)
    with cs.scope("commitment"):
        return cs.poseidon_chain(xs)
