"""Optimised lower relaxation slopes as data: how many a statement takes, in which order, at what precision.

A bound-radius proof with optimised slopes (`alpha_bits` > 0) takes, per slice, one slope alpha = a / 2^bits
in [0, 1] per (bounded quantity, neuron below it): `SlicePlan` holds them, `flat` lays them out as the
witness does (statement.relaxation cuts them the same way). The search that chooses them is
`fairness.alpha_crown` (torch); this module is plain, so what only reads plans needs no torch.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from .fixed_point import FixedPointModel

# Slopes are a / 2^ALPHA_BITS by default: 2^-16 is far below what the bound can feel, and a range check of
# 18 constraints per slope in the circuit.
DEFAULT_ALPHA_BITS = 16

Slopes = tuple[tuple[int, ...], ...]  # one tuple per hidden layer below a quantity, one int per neuron


@dataclass(frozen=True)
class SlicePlan:
    """The lower slopes of one slice's propagation, alpha = a / 2^bits with 0 <= a <= 2^bits.

    neurons[k - 1][i] = (slopes of the lower bound of z_k[i], slopes of its upper bound), for every hidden
    layer k >= 1; margins[c] = the slopes of the margin z_y - z_c (those of c = y are unused, all 0). Each
    `Slopes` has one tuple per hidden layer below the quantity, one slope per neuron of that layer."""

    bits: int
    neurons: tuple[tuple[tuple[Slopes, Slopes], ...], ...]
    margins: tuple[Slopes, ...]

    def flat(self) -> list[int]:
        """Every slope in the circuit's order: layer by layer, neuron by neuron, lower side then upper, each
        quantity's slopes layer by layer; then the margins class by class."""
        out: list[int] = []
        for layer in self.neurons:
            for sides in layer:
                for slopes in sides:
                    out += [a for per_layer in slopes for a in per_layer]
        for slopes in self.margins:
            out += [a for per_layer in slopes for a in per_layer]
        return out


def plan_size(hidden_sizes: Sequence[int], n_classes: int) -> int:
    """How many slopes a `SlicePlan` of this architecture holds."""
    size = sum(2 * h * sum(hidden_sizes[:k]) for k, h in enumerate(hidden_sizes) if k)
    return size + n_classes * sum(hidden_sizes)


def unflatten(values: Sequence[int], bits: int, hidden_sizes: Sequence[int], n_classes: int) -> SlicePlan:
    """The `SlicePlan` whose `flat()` is `values`."""
    at = 0

    def take(top: int) -> Slopes:
        nonlocal at
        out = []
        for h in hidden_sizes[:top]:
            out.append(tuple(values[at:at + h]))
            at += h
        return tuple(out)

    neurons = tuple(tuple((take(k), take(k)) for _ in range(hidden_sizes[k])) for k in range(1, len(hidden_sizes)))
    margins = tuple(take(len(hidden_sizes)) for _ in range(n_classes))
    if at != len(values):
        raise ValueError(f"{len(values)} slopes for a plan of {at}")
    return SlicePlan(bits, neurons, margins)


def model_key(model: FixedPointModel) -> tuple:
    """What the slopes depend on in a model: the network, the box and each attribute's columns and points
    (not the names and labels, which a circuit's prover does not know)."""
    return (model.net, model.box_lower, model.box_upper, tuple((f.columns, f.points) for f in model.sensitive))
