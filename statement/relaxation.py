"""Optimised lower relaxations in the circuit: a private slope alpha in [0, 1] per (bounded quantity, neuron).

Linear bound propagation bounds a hidden ReLU h = relu(z) from below by h >= alpha z wherever a form's
coefficient on h is >= 0. That line lies below ReLU on the whole real line for every alpha in [0, 1]
(z >= 0: alpha z <= z = h; z < 0: alpha z <= 0 = h), whatever the neuron's pre-activation bounds, so a
statement may take alpha as a private input, checked only to lie in [0, 1], and let the prover choose it
(`fairness.alpha_crown` for the bound radius, the triangle LP's dual for the persistence lens): every choice
keeps the bound a valid one, computed in exact integers, and the prover picks the choice that bounds
tightest. alpha is dyadic, a / 2^t with the shape's `alpha_bits` t, and enters the propagation as the integer
slope a 2^(k - t) at the relaxations' common scale 2^k (k = 16).

The slopes are part of the private witness (`StatementWitness.radius_slopes`, `.persistence_slopes`), laid
out as `fairness.alpha_crown.SlicePlan.flat` and `fairness.persistence.PairSlopes.flat` lay them out;
`radius_layout` and `persistence_layout` cut them the same way.
"""
from __future__ import annotations

from typing import Sequence

from fairness.multipliers import RELAXATION_SLOPE_BITS

from .checks import scoped


def unit_slope(cs, a, alpha_bits: int, scale_bits: int = RELAXATION_SLOPE_BITS):
    """The lower slope a / 2^t at the relaxations' scale 2^k (a 2^(k - t); k = scale_bits >= t), for a private a
    checked to lie in [0, 2^t] (t = alpha_bits): its t + 1 bits, the top one allowed only with the others zero
    (a = 2^t, alpha = 1). t + 2 constraints; a value outside, or a negative one (a field element near R), has
    no such decomposition."""
    if not 1 <= alpha_bits <= scale_bits:
        raise ValueError(f"slopes of {alpha_bits} bits cannot be taken at the scale 2^{scale_bits}")
    with cs.scope("unit_slope"):
        bits = cs.to_bits(a, alpha_bits + 1)
        cs.assert_equal(cs.mul(bits[alpha_bits], a - (1 << alpha_bits)), 0)
    return a * (1 << (scale_bits - alpha_bits))


def private_slopes(cs, name: str, values: Sequence[int] | None, n: int, alpha_bits: int,
                   scale_bits: int = RELAXATION_SLOPE_BITS) -> list:
    """n private slopes (values None when building without values), each checked by `unit_slope`, as
    slopes at 2^scale_bits."""
    if values is not None and len(values) != n:
        raise ValueError(f"the statement takes {n} optimised slopes, the witness has {len(values)}")
    wires = cs.private_inputs(scoped(cs, name), n, None if values is None else list(values))
    return [unit_slope(cs, a, alpha_bits, scale_bits) for a in wires]


def _take(values: list, at: int, sizes: Sequence[int]) -> tuple[list[list], int]:
    out = []
    for h in sizes:
        out.append(values[at:at + h])
        at += h
    return out, at


def radius_plan_size(hidden_sizes: Sequence[int], n_classes: int) -> int:
    """Slopes of one slice of the bound radius: per hidden neuron of layers k >= 1 and side (its lower, its
    upper bound) one per neuron of the layers below; per class (y's unused) one per hidden neuron."""
    size = sum(2 * h * sum(hidden_sizes[:k]) for k, h in enumerate(hidden_sizes) if k)
    return size + n_classes * sum(hidden_sizes)


def radius_layout(slopes: list, hidden_sizes: Sequence[int], n_classes: int) -> tuple[list, list]:
    """One slice's slopes as (neurons, margins): neurons[k - 1][i][side][j] the slopes of layer j's neurons in
    the bound of z_k[i] (side 0 lower, 1 upper); margins[c][j] those in the margin against class c."""
    at = 0
    neurons = []
    for k in range(1, len(hidden_sizes)):
        layer = []
        for _ in range(hidden_sizes[k]):
            lower, at = _take(slopes, at, hidden_sizes[:k])
            upper, at = _take(slopes, at, hidden_sizes[:k])
            layer.append((lower, upper))
        neurons.append(layer)
    margins = []
    for _ in range(n_classes):
        per_layer, at = _take(slopes, at, hidden_sizes)
        margins.append(per_layer)
    if at != len(slopes):
        raise ValueError(f"{len(slopes)} slopes for a slice of {at}")
    return neurons, margins


def persistence_layout(slopes: list, hidden_sizes: Sequence[int], n_pairs: int) -> list:
    """The persistence lens's slopes per pair, per side (0: LB, 1: UB), per copy (0: the query's own values,
    1: the counterfactual's), per hidden layer, one per neuron."""
    at = 0
    out = []
    for _ in range(n_pairs):
        sides = []
        for _ in range(2):
            copies = []
            for _ in range(2):
                per_layer, at = _take(slopes, at, hidden_sizes)
                copies.append(per_layer)
            sides.append(copies)
        out.append(sides)
    if at != len(slopes):
        raise ValueError(f"{len(slopes)} slopes for {n_pairs} pairs of {at}")
    return out
