"""Small random integer models for the certification tests (no datasets needed)."""
from __future__ import annotations

import random

from fairness.fixed_point import FixedPointModel, QuantisedMLP, SensitiveDomain


def random_model(seed: int, n_inputs: int = 4, hidden: tuple[int, ...] = (4, 2), n_classes: int = 2,
                 scale_bits: int = 8, sensitive_values: tuple[int, ...] = (0, 1),
                 sensitive_column: int = 0, weight_range: float = 1.5) -> FixedPointModel:
    """A random QuantisedMLP with one sensitive feature, box [-1, 1]^n (real units)."""
    rng = random.Random(seed)
    one = 1 << scale_bits
    sizes = (n_inputs,) + tuple(hidden) + (n_classes,)
    weights, biases = [], []
    for l in range(len(sizes) - 1):
        w = tuple(tuple(int(rng.uniform(-weight_range, weight_range) * one) for _ in range(sizes[l]))
                  for _ in range(sizes[l + 1]))
        b = tuple(int(rng.uniform(-0.5, 0.5) * (1 << (scale_bits * (l + 2)))) for _ in range(sizes[l + 1]))
        weights.append(w)
        biases.append(b)
    net = QuantisedMLP(scale_bits=scale_bits, weights=tuple(weights), biases=tuple(biases))
    lower = tuple([-one] * n_inputs)
    upper = tuple([one] * n_inputs)
    sens = (SensitiveDomain.scalar("group", sensitive_column, tuple(v * one for v in sensitive_values),
                            tuple(f"g{v}" for v in sensitive_values)),)
    return FixedPointModel(net=net, box_lower=lower, box_upper=upper, sensitive=sens)


def random_query(model: FixedPointModel, rng: random.Random) -> tuple[int, ...]:
    x = [rng.randint(lo, hi) for lo, hi in zip(model.box_lower, model.box_upper)]
    for f in model.sensitive:
        x[f.column] = rng.choice(f.values)
    return tuple(x)
