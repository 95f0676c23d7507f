"""An exact reference for the extremes of a two-copy margin difference over a box, for one-hidden-layer
networks with two free inputs.

With one hidden layer, every hidden neuron of either copy switches on a straight line of the two free
inputs. Inside a cell of the arrangement of those lines (and the box's edges) both copies are affine,
so the difference of margins is affine there and reaches its minimum and maximum over the cell at a
vertex of the cell: an intersection of two of the lines. The extremes over the box are therefore the
extremes over every intersection point that lies in the box, each evaluated exactly (Fractions, the
model's own integer forward pass). No solver is involved.
"""
from __future__ import annotations

import itertools
from fractions import Fraction
from typing import Sequence

from fairness.fixed_point import FixedPointModel


def arrangement_vertices(model: FixedPointModel, slices: Sequence[int], lower: Sequence[int],
                         upper: Sequence[int]) -> list[list[Fraction]]:
    """Every vertex of the arrangement, as full input vectors (real units; the sensitive columns and the
    other fixed columns at `lower`): the box [lower, upper] (integers at 2^s) must leave exactly two
    non-sensitive columns free, and the network must have one hidden layer."""
    if len(model.net.weights) != 2:
        raise ValueError("the reference handles one hidden layer")
    one = 1 << model.scale_bits
    sensitive = set(model.sensitive_columns)
    free = [j for j in range(model.net.n_inputs) if j not in sensitive and lower[j] != upper[j]]
    if len(free) != 2:
        raise ValueError("the reference handles exactly two free inputs")
    lines = []  # (a, c): a . z + c = 0 over the free inputs z
    for index in slices:
        x = {j: Fraction(lower[j], one) for j in range(model.net.n_inputs) if j not in free}
        for c, v in zip(model.sensitive_columns, model.slices()[index]):
            x[c] = Fraction(v, one)
        for row, b in zip(model.net.weights[0], model.net.biases[0]):
            a = [Fraction(row[j], one) for j in free]
            lines.append((a, Fraction(b, one * one) + sum(Fraction(row[j], one) * v for j, v in x.items())))
    for k, j in enumerate(free):
        axis = [Fraction(int(i == k)) for i in range(2)]
        lines += [(axis, -Fraction(lower[j], one)), (axis, -Fraction(upper[j], one))]
    vertices = []
    for (a1, c1), (a2, c2) in itertools.combinations(lines, 2):
        det = a1[0] * a2[1] - a1[1] * a2[0]
        if det == 0:
            continue
        z = ((c2 * a1[1] - c1 * a2[1]) / det, (c1 * a2[0] - c2 * a1[0]) / det)
        if all(Fraction(lower[j], one) <= v <= Fraction(upper[j], one) for v, j in zip(z, free)):
            point = [Fraction(lower[j], one) for j in range(model.net.n_inputs)]
            for v, j in zip(z, free):
                point[j] = v
            vertices.append(point)
    return vertices
