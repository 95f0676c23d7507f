"""Exact rewrites of an imported network, each one reported in the BankModel's notes.

Two situations need the network changed without changing a single decision:

- a network with ONE output logit z (a logistic head, or a bare one-logit
  network): the statement compares logits, so it becomes the two logits (0, z),
  and class 1 wins exactly when z > 0, as sigmoid(z) > 1/2;
- a per-input affine map the schema cannot hold, e.g. a StandardScaler on a 0/1
  sensitive column (a sensitive value must be an exact integer point of its
  inputs) or a scaler after a one-hot encoder: the map x -> (x - m) / s is
  folded into the first layer, W'[:, c] = W[:, c] / s and b' = b - W[:, c] * m / s,
  so the network reads the unscaled input and computes the same pre-activations.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

from fairness.errors import ModelError
from fairness.model import FloatMLP, _binary_logits


@dataclass(frozen=True)
class InputScaling:
    """Model input `column` is (x - mean) / std of what the schema gives it: to be folded into layer 0."""

    column: int
    mean: float
    std: float

    @property
    def is_identity(self) -> bool:
        return self.mean == 0.0 and self.std == 1.0


def fold_input_scaling(network: FloatMLP, scalings: Sequence[InputScaling]) -> FloatMLP:
    """The network reading unscaled inputs: every scaling folded exactly into the first layer."""
    w = np.array(network.weights[0], dtype=np.float64)
    b = np.array(network.biases[0], dtype=np.float64)
    for s in scalings:
        if not 0 <= s.column < w.shape[1]:
            raise ModelError(f"a scaling names model input {s.column}, the network takes {w.shape[1]} inputs")
        if not (np.isfinite(s.mean) and np.isfinite(s.std) and s.std != 0):
            raise ModelError(f"model input {s.column}: scale {s.std!r} and centre {s.mean!r} cannot be folded")
        b = b - w[:, s.column] * s.mean / s.std
        w[:, s.column] = w[:, s.column] / s.std
    return FloatMLP((w, *network.weights[1:]), (b, *network.biases[1:]))


def as_two_logits(network: FloatMLP, source: str) -> tuple[FloatMLP, tuple[str, ...]]:
    """A one-logit network as the logits (0, z); a network with a logit per class as is. Returns the notes."""
    if network.n_classes != 1:
        return network, ()
    w, b = _binary_logits(network.weights[-1], network.biases[-1], source)
    note = "one output logit z rewritten as the two logits (0, z): class 1 exactly when z > 0"
    return FloatMLP((*network.weights[:-1], w), (*network.biases[:-1], b)), (note,)
