"""A tree ensemble in exact fixed point: the model a tree certificate is about.

Inputs are integers at scale 2^s over the model's input encoding (the same encoding and scale as a
network's, `fairness.fixed_point`). A tree's internal node sends x left when

    x[feature] < threshold        (threshold an integer at 2^s)

and right otherwise; a leaf holds one integer at scale 2^v. A query's inputs are the model's float
inputs rounded to the 2^-s grid (half up, `fairness.fixed_point.quantise_value`); every loader rounds
a library threshold t the same way and keeps the library's comparison:

    XGBoost             x < t   ->  x_int < round(t 2^s)
    LightGBM, sklearn   x <= t  ->  x_int <= round(t 2^s)  <=>  x_int < round(t 2^s) + 1

(`threshold_below`, `threshold_at_most`). Rounding is monotone, so the integer split sends a row as the
library does unless the row's input and t are distinct but round to the same integer (closer than
2^-s); an input equal to the threshold decides as the library (XGBoost puts its thresholds at data
values, so this case is common and matters). The import checks agreement on every row of the bank's
data. Between grid points the same comparison holds for real (or rational) x, which is how the
certificate reads the model.

Scores: binary models have one score, multiclass models one per class; tree i adds its leaf value to
score i % n_scores (XGBoost's and LightGBM's layout; a random forest's trees are split into one tree
per class). The base holds one integer per score at 2^v. The decision of a binary model is class 1
exactly when the score is > 0; of a multiclass model the largest score, the lowest index on a tie.
As for networks, a certificate needs the decision strictly: binary score != 0, multiclass a unique
largest score (`strict_decision`).
"""
from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Sequence, Union

from fairness.errors import DataError, ModelError
from fairness.fixed_point import IntVector, SensitiveDomain, join_points

Number = Union[int, Fraction]
LEAF = -1
# One turn of a path: (feature, threshold, right), right meaning x[feature] >= threshold, left x < threshold.
Turn = tuple[int, int, bool]
ENSEMBLE_FORMAT = "fairproof-trees/1"
TREE_ARRAYS = ("feature", "threshold", "left", "right", "value")


def threshold_below(t: float | Fraction, scale_bits: int) -> int:
    """The integer threshold of a split x < t: round(t 2^s), halves up (as inputs are rounded)."""
    return quantise_leaf(t, scale_bits)


def threshold_at_most(t: float | Fraction, scale_bits: int) -> int:
    """The integer threshold of a split x <= t: round(t 2^s) + 1 (x_int <= round(t 2^s))."""
    return quantise_leaf(t, scale_bits) + 1


def quantise_leaf(value: float | Fraction, value_bits: int) -> int:
    """round(value 2^v), halves up, from the exact value of the double."""
    scaled = _exact(value) * (1 << value_bits)
    q, r = divmod(scaled.numerator, scaled.denominator)
    return q + (2 * r >= scaled.denominator)


def _exact(v: float | Fraction) -> Fraction:
    if isinstance(v, Fraction):
        return v
    if not math.isfinite(float(v)):
        raise ValueError(f"a tree threshold or leaf value must be finite, got {v!r}")
    return Fraction(float(v))


@dataclass(frozen=True)
class Tree:
    """One tree as arrays indexed by node (node 0 the root): an internal node has feature >= 0 and
    children after itself; a leaf has feature -1 and its value. Thresholds and values of the other
    kind of node are 0."""

    feature: tuple[int, ...]
    threshold: tuple[int, ...]
    left: tuple[int, ...]
    right: tuple[int, ...]
    value: tuple[int, ...]

    def __post_init__(self) -> None:
        n = len(self.feature)
        if n == 0 or not all(len(a) == n for a in (self.threshold, self.left, self.right, self.value)):
            raise ValueError("a tree needs at least one node and arrays of one length")
        for i in range(n):
            if self.feature[i] == LEAF:
                continue
            if self.feature[i] < 0:
                raise ValueError(f"node {i}: feature index {self.feature[i]} is negative")
            if not (i < self.left[i] < n and i < self.right[i] < n):  # children after the node: no cycle
                raise ValueError(f"node {i}: children {self.left[i]}, {self.right[i]} must follow it")
        if not all(type(v) is int for a in (self.feature, self.threshold, self.left, self.right, self.value)
                   for v in a):
            raise ValueError("tree arrays must hold Python ints")

    def leaf_of(self, x: Sequence[Number]) -> int:
        """The leaf node x reaches (x < threshold goes left)."""
        node = 0
        while self.feature[node] != LEAF:
            node = self.left[node] if x[self.feature[node]] < self.threshold[node] else self.right[node]
        return node

    def leaf_turns(self) -> list[tuple[int, tuple[Turn, ...]]]:
        """Every leaf with its path's turns, root first: (feature, threshold, True for x >= threshold)."""
        out: list[tuple[int, tuple[Turn, ...]]] = []
        stack: list[tuple[int, tuple[Turn, ...]]] = [(0, ())]
        while stack:
            node, turns = stack.pop()
            f = self.feature[node]
            if f == LEAF:
                out.append((node, turns))
                continue
            t = self.threshold[node]
            stack.append((self.right[node], turns + ((f, t, True),)))
            stack.append((self.left[node], turns + ((f, t, False),)))
        return out

    def leaves(self) -> list[tuple[int, dict[int, tuple[int | None, int | None]]]]:
        """Every leaf with its path as a box: feature -> (lowest allowed, first excluded) integers
        (None: unbounded), meaning lo <= x < hi."""
        out: list[tuple[int, dict[int, tuple[int | None, int | None]]]] = []
        stack: list[tuple[int, dict[int, tuple[int | None, int | None]]]] = [(0, {})]
        while stack:
            node, box = stack.pop()
            f = self.feature[node]
            if f == LEAF:
                out.append((node, box))
                continue
            t = self.threshold[node]
            lo, hi = box.get(f, (None, None))
            stack.append((self.right[node], {**box, f: (t if lo is None else max(lo, t), hi)}))
            stack.append((self.left[node], {**box, f: (lo, t if hi is None else min(hi, t))}))
        return out


@dataclass(frozen=True)
class TreeEnsemble:
    """Trees, base scores and the scales: exact integer inference (`scores`, `decision`)."""

    n_inputs: int
    n_classes: int
    scale_bits: int  # s: inputs and thresholds at 2^s
    value_bits: int  # v: leaf values and base at 2^v
    trees: tuple[Tree, ...]
    base: tuple[int, ...]

    def __post_init__(self) -> None:
        if self.n_classes < 2:
            raise ValueError("an ensemble decides between at least two classes")
        if len(self.base) != self.n_scores or not all(type(b) is int for b in self.base):
            raise ValueError(f"the base needs {self.n_scores} integer(s), one per score")
        if not self.trees or len(self.trees) % self.n_scores:
            raise ValueError(f"{len(self.trees)} trees do not split into {self.n_scores} score(s)")
        for i, tree in enumerate(self.trees):
            if any(f >= self.n_inputs for f in tree.feature):
                raise ValueError(f"tree {i} splits on a feature beyond the model's {self.n_inputs} inputs")

    @property
    def n_scores(self) -> int:
        return 1 if self.n_classes == 2 else self.n_classes

    def score_of_tree(self, i: int) -> int:
        return i % self.n_scores

    def scores(self, x: Sequence[Number]) -> tuple[Number, ...]:
        """The base plus every tree's leaf value, per score (exact)."""
        _check_input(x, self.n_inputs)
        out = list(self.base)
        for i, tree in enumerate(self.trees):
            out[i % self.n_scores] += tree.value[tree.leaf_of(x)]
        return tuple(out)

    def decision(self, x: Sequence[Number]) -> int:
        return decision_of(self.scores(x))

    def strict_decision(self, x: Sequence[Number]) -> int | None:
        """The decision if it is strict (binary score != 0, a unique largest score), else None."""
        return strict_decision_of(self.scores(x))

    def to_json(self) -> dict[str, Any]:
        """The ensemble as JSON (integers only): what a commitment to the ensemble hashes."""
        return {"format": ENSEMBLE_FORMAT, "n_inputs": self.n_inputs, "n_classes": self.n_classes,
                "scale_bits": self.scale_bits, "value_bits": self.value_bits, "base": list(self.base),
                "trees": [{k: list(getattr(t, k)) for k in TREE_ARRAYS} for t in self.trees]}

    @classmethod
    def from_json(cls, data: Any) -> "TreeEnsemble":
        """Read `to_json`'s form back; any defect is a ModelError naming it."""
        try:
            if not isinstance(data, dict) or data.get("format") != ENSEMBLE_FORMAT:
                raise ValueError(f"not a {ENSEMBLE_FORMAT} object")
            ints = [data[k] for k in ("n_inputs", "n_classes", "scale_bits", "value_bits")]
            if not all(type(v) is int and v >= 0 for v in ints):
                raise ValueError("n_inputs, n_classes, scale_bits and value_bits must be non-negative integers")
            trees = tuple(Tree(*(tuple(_int_list(t[k], k)) for k in TREE_ARRAYS)) for t in data["trees"])
            return cls(n_inputs=ints[0], n_classes=ints[1], scale_bits=ints[2], value_bits=ints[3], trees=trees,
                       base=tuple(_int_list(data["base"], "base")))
        except (KeyError, TypeError, ValueError) as exc:
            raise ModelError(f"tree ensemble JSON: {exc}") from None


def _int_list(v: Any, name: str) -> list[int]:
    if not isinstance(v, list) or not all(type(i) is int for i in v):
        raise ValueError(f"{name} must be a list of integers")
    return v


def decision_of(scores: Sequence[Number]) -> int:
    if len(scores) == 1:
        return int(scores[0] > 0)
    return max(range(len(scores)), key=lambda j: (scores[j], -j))


def strict_decision_of(scores: Sequence[Number]) -> int | None:
    if len(scores) == 1:
        return None if scores[0] == 0 else int(scores[0] > 0)
    top = max(scores)
    winners = [j for j, v in enumerate(scores) if v == top]
    return winners[0] if len(winners) == 1 else None


def margins(scores: Sequence[Number], y: int, n_classes: int) -> dict[int, Number]:
    """score_y - score_c for every class c != y (binary: the score signed towards y)."""
    if len(scores) == 1:
        return {1 - y: scores[0] if y == 1 else -scores[0]}
    return {c: scores[y] - scores[c] for c in range(n_classes) if c != y}


def _check_input(x: Sequence[Number], n: int) -> None:
    if len(x) != n:
        raise DataError(f"the ensemble takes {n} inputs, got {len(x)}")
    for i, v in enumerate(x):
        if type(v) is not int and not isinstance(v, Fraction):
            raise DataError(f"input {i} = {v!r} is not an exact number: a missing value (or a float) has no "
                            "decision in the fixed-point ensemble")


@dataclass(frozen=True)
class TreeModel:
    """What a tree certificate is about: the integer ensemble, its input domain box and its sensitive
    attributes, all at the ensemble's input scale 2^s (the layout of `fairness.fixed_point.FixedPointModel`)."""

    ensemble: TreeEnsemble
    box_lower: IntVector
    box_upper: IntVector
    sensitive: tuple[SensitiveDomain, ...]

    def __post_init__(self) -> None:
        n = self.ensemble.n_inputs
        if len(self.box_lower) != n or len(self.box_upper) != n:
            raise ValueError("the domain box must have one bound per input feature")
        if any(lo > hi for lo, hi in zip(self.box_lower, self.box_upper)):
            raise ValueError("domain box has a lower bound above its upper bound")
        columns = self.sensitive_columns
        if not columns or len(set(columns)) != len(columns) or any(not 0 <= c < n for c in columns):
            raise ValueError("sensitive columns must be distinct input indices (at least one)")
        for f in self.sensitive:
            for label, point in zip(f.labels, f.points):
                if any(not self.box_lower[c] <= v <= self.box_upper[c] for c, v in zip(f.columns, point)):
                    raise ValueError(f"sensitive feature {f.name!r}: value {label!r} lies outside the box")

    @property
    def scale_bits(self) -> int:
        return self.ensemble.scale_bits

    @property
    def sensitive_columns(self) -> tuple[int, ...]:
        return tuple(c for f in self.sensitive for c in f.columns)

    @property
    def free_columns(self) -> tuple[int, ...]:
        s = set(self.sensitive_columns)
        return tuple(i for i in range(self.ensemble.n_inputs) if i not in s)

    def slices(self) -> list[IntVector]:
        """Every combination of sensitive values (product order), as the network model lists them."""
        return [join_points(combo) for combo in itertools.product(*(f.points for f in self.sensitive))]

    def with_slice(self, x: Sequence[Number], slice_values: Sequence[int]) -> tuple[Number, ...]:
        out = list(x)
        for c, v in zip(self.sensitive_columns, slice_values):
            out[c] = v
        return tuple(out)

    def in_box(self, x: Sequence[Number]) -> bool:
        return all(lo <= v <= hi for v, lo, hi in zip(x, self.box_lower, self.box_upper))

    def check_query(self, x: Sequence[Number]) -> IntVector:
        """x as a valid query: integers, inside the box, each sensitive attribute at one of its points."""
        _check_input(x, self.ensemble.n_inputs)
        if not all(type(v) is int for v in x):
            raise DataError("a query holds integers at the model's scale")
        bad = [i for i, (v, lo, hi) in enumerate(zip(x, self.box_lower, self.box_upper)) if not lo <= v <= hi]
        if bad:
            raise DataError(f"query feature(s) {bad} lie outside the model's domain box")
        q = tuple(int(v) for v in x)
        for f in self.sensitive:
            if f.point_of(q) not in f.points:
                raise DataError(f"sensitive feature {f.name!r} of the query is not a value of its domain")
        return q
