"""Widths of the integer multipliers of Farkas and separation certificates.

Shared by the certifier, which rounds multipliers to fit, and the statement,
whose range checks enforce the same widths. Plain integer rules, no solver.
"""
from __future__ import annotations

from typing import Sequence

# Fast statements range-check every multiplier against this many bits; exact
# statements against this many on decision rows (see `exact_multiplier_bits`).
MAX_MULTIPLIER_BITS = 40


def exact_multiplier_bits(hidden_sizes: Sequence[int], scale_bits: int,
                          base_bits: int = MAX_MULTIPLIER_BITS) -> tuple[int, ...]:
    """Bit cap of each hidden neuron's multiplier (flat order) in exact-radius statements.

    Layer l's rows are at scale 2^(s(l+2)), about 2^s per layer below the next
    and 2^(s(L-l)) below the decision rows (L hidden layers), so the optimal
    multipliers grow by about as much from the decision row down. Each layer
    gets s (L - l) more bits than the decision row's `base_bits`: every
    multiplier keeps ~base_bits significant bits of its own."""
    n_layers = len(hidden_sizes)
    return tuple(base_bits + scale_bits * (n_layers - l) for l, h in enumerate(hidden_sizes) for _ in range(h))


# Linear bound propagation's ReLU relaxation slopes are dyadic at 2^-RELAXATION_SLOPE_BITS, rounded
# outward (fairness.persistence, and the persistence lens's circuit, which pins the same rounding).
RELAXATION_SLOPE_BITS = 16
