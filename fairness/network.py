"""The float model: a fully connected ReLU network in float64 (`FloatMLP`), as trained or imported
(`fairness.network_import`) and bundled into an artifact (`fairness.model`).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from fairness.errors import ModelError


@dataclass(frozen=True, eq=False)
class FloatMLP:
    """Fully connected ReLU network: ReLU after every layer but the last (logits)."""

    weights: tuple[np.ndarray, ...]
    biases: tuple[np.ndarray, ...]

    def __init__(self, weights: Sequence[Any], biases: Sequence[Any]) -> None:
        ws = tuple(np.array(w, dtype=np.float64) for w in weights)
        bs = tuple(np.array(b, dtype=np.float64) for b in biases)
        _validate_layers(ws, bs)
        for a in ws + bs:
            a.setflags(write=False)
        object.__setattr__(self, "weights", ws)
        object.__setattr__(self, "biases", bs)

    @property
    def n_inputs(self) -> int:
        return int(self.weights[0].shape[1])

    @property
    def n_classes(self) -> int:
        return int(self.weights[-1].shape[0])

    @property
    def hidden_sizes(self) -> tuple[int, ...]:
        return tuple(int(w.shape[0]) for w in self.weights[:-1])

    @property
    def n_layers(self) -> int:
        return len(self.weights)

    def forward(self, X: Any) -> np.ndarray:
        """Logits, shape (N, n_classes) for X of shape (N, n_inputs) ((n_classes,) for one vector)."""
        X = np.asarray(X, dtype=np.float64)
        single = X.ndim == 1
        h = X[None, :] if single else X
        if h.ndim != 2 or h.shape[1] != self.n_inputs:
            raise ModelError(f"model takes {self.n_inputs} input features, got array of shape {X.shape}")
        for l, (w, b) in enumerate(zip(self.weights, self.biases)):
            h = h @ w.T + b
            if l < self.n_layers - 1:
                h = np.maximum(h, 0.0)
        return h[0] if single else h

    def predict(self, X: Any) -> np.ndarray:
        return np.argmax(self.forward(X), axis=-1)

    def accuracy(self, X: Any, y: Any) -> float:
        y = np.asarray(y)
        return float(np.mean(self.predict(X) == y)) if len(y) else float("nan")

    def __eq__(self, other: object) -> bool:
        return isinstance(other, FloatMLP) and self.equals(other)

    __hash__ = None  # type: ignore[assignment]  # mutable-looking arrays: not hashable

    def equals(self, other: "FloatMLP") -> bool:
        """Bit-identical parameters and shapes."""
        return self.n_layers == other.n_layers and all(
            a.shape == b.shape and np.array_equal(a, b)
            for a, b in zip(self.weights + self.biases, other.weights + other.biases)
        )


def _validate_layers(ws: Sequence[np.ndarray], bs: Sequence[np.ndarray]) -> None:
    if not ws:
        raise ModelError("a model needs at least one layer")
    if len(ws) != len(bs):
        raise ModelError(f"{len(ws)} weight matrices but {len(bs)} bias vectors")
    for l, (w, b) in enumerate(zip(ws, bs)):
        if w.ndim != 2 or w.shape[0] == 0 or w.shape[1] == 0:
            raise ModelError(f"layer {l}: weight must be a non-empty (out, in) matrix, got shape {w.shape}")
        if b.shape != (w.shape[0],):
            raise ModelError(f"layer {l}: bias has shape {b.shape}, expected ({w.shape[0]},)")
        if l and w.shape[1] != ws[l - 1].shape[0]:
            raise ModelError(f"layer {l}: takes {w.shape[1]} inputs but layer {l - 1} gives {ws[l - 1].shape[0]}")
        if not (np.all(np.isfinite(w)) and np.all(np.isfinite(b))):
            raise ModelError(f"layer {l}: non-finite parameter")
