"""The public shape of a tree-ensemble statement: what the circuit is built for, before any model value.

Every tree is padded to a complete binary tree of depth `depth` (`statement.trees.padding`), so the
circuit depends only on the counts, the scales, the domain box, the slices and the bit widths below,
never on the model's structure. Widths (all checked in the circuit on the private values):

- thresholds in [-2^threshold_bits, 2^threshold_bits);
- leaf values and the base in [-2^value_range_bits, 2^value_range_bits);
- eps = E / 2^eps_bits with 1 <= E <= eps_cap for a certified radius, E = 0 for a flip (the cap is the
  network code's, `fairness.trees.radius.eps_cap`).

Derived widths (`coordinate_bits`, `score_bits`, `reach_bits`) bound every intermediate value so that
no comparison's operands leave its range and no sum wraps the field.
"""
from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass
from typing import Any

from circuits.field import MAX_SIGNED_BITS, R
from fairness.trees.ensemble import TreeModel
from fairness.trees.radius import eps_cap as plaintext_eps_cap

TREE_SHAPE_FORMAT = "fairproof-tree-statement/1"


class TreeShapeError(ValueError):
    """A tree statement shape that is inconsistent or too wide for the field."""


@dataclass(frozen=True)
class TreeShape:
    """The public parameters of a tree-ensemble statement."""

    n_trees: int
    depth: int
    n_inputs: int
    n_classes: int
    scale_bits: int  # s: inputs and thresholds at 2^s
    value_bits: int  # v: leaf values and base at 2^v
    eps_bits: int  # t: eps = E / 2^t
    box_lower: tuple[int, ...]
    box_upper: tuple[int, ...]
    sensitive_columns: tuple[int, ...]
    slices: tuple[tuple[int, ...], ...]
    threshold_bits: int
    value_range_bits: int
    eps_cap: int

    def __post_init__(self) -> None:
        if self.depth < 1 or self.n_trees < 1 or self.n_inputs < 1:
            raise TreeShapeError("a tree statement needs at least one tree, depth >= 1 and one input")
        if self.n_classes < 2 or self.n_trees % self.n_scores:
            raise TreeShapeError(f"{self.n_trees} trees do not split into {self.n_scores} score(s)")
        if len(self.box_lower) != self.n_inputs or len(self.box_upper) != self.n_inputs:
            raise TreeShapeError("the domain box needs one bound per input")
        if any(lo > hi for lo, hi in zip(self.box_lower, self.box_upper)):
            raise TreeShapeError("the domain box has a lower bound above its upper bound")
        cols = self.sensitive_columns
        if not cols or len(set(cols)) != len(cols) or any(not 0 <= c < self.n_inputs for c in cols):
            raise TreeShapeError("sensitive columns must be distinct input indices (at least one)")
        if not self.slices or any(len(s) != len(cols) for s in self.slices) or len(set(self.slices)) != len(self.slices):
            raise TreeShapeError("slices must be distinct, one value per sensitive column")
        if self.eps_cap < 1:
            raise TreeShapeError("eps_cap must be at least 1 (a certified radius proves E >= 1)")
        if self.reach_bits + 2 > MAX_SIGNED_BITS:
            raise TreeShapeError(f"the reachability comparison needs {self.reach_bits} bits: too wide for the field")

    @property
    def n_scores(self) -> int:
        return 1 if self.n_classes == 2 else self.n_classes

    @property
    def n_nodes(self) -> int:
        """Internal nodes of one padded tree (heap order: node i has children 2i+1, 2i+2)."""
        return (1 << self.depth) - 1

    @property
    def n_leaves(self) -> int:
        return 1 << self.depth

    @property
    def free_columns(self) -> tuple[int, ...]:
        s = set(self.sensitive_columns)
        return tuple(i for i in range(self.n_inputs) if i not in s)

    @property
    def coordinate_bits(self) -> int:
        """W: every threshold, box bound, box upper bound + 1 and query value lies in [-2^W, 2^W)."""
        widest = max(max(abs(v) for v in self.box_lower), max(abs(v) + 1 for v in self.box_upper))
        return max(self.threshold_bits, widest.bit_length()) + 1

    @property
    def score_bits(self) -> int:
        """|a score, or a sum of worst leaves plus the base| < 2^score_bits."""
        return self.value_range_bits + (self.n_trees + 1).bit_length()

    @property
    def eps_value_bits(self) -> int:
        return self.eps_cap.bit_length()

    @property
    def d2_shift(self) -> int:
        """d2 2^(2t) < E^2 2^(2s) is compared as d2 2^d2_shift < E^2 2^eps_sq_shift (the shared power of
        two divided out)."""
        return 2 * (self.eps_bits - min(self.eps_bits, self.scale_bits))

    @property
    def eps_sq_shift(self) -> int:
        return 2 * (self.scale_bits - min(self.eps_bits, self.scale_bits))

    @property
    def reach_bits(self) -> int:
        """Width of the reachability comparison: a violation is < 2^(W+1), and a leaf's squared distance
        counts at most one turn per level of its path (and per free feature and direction), so
        d2 < k 2^(2W+2) with k = min(depth, 2 n_free)."""
        terms = max(min(self.depth, 2 * len(self.free_columns)), 1)
        distance = 2 * (self.coordinate_bits + 1) + self.d2_shift + terms.bit_length()
        radius = 2 * self.eps_value_bits + self.eps_sq_shift
        return max(distance, radius) + 1

    def to_json(self) -> dict[str, Any]:
        out = asdict(self)
        out["slices"] = [list(s) for s in self.slices]
        return {"format": TREE_SHAPE_FORMAT, **out}

    def digest(self) -> int:
        """SHA-256 of the canonical JSON of the shape, as a field element (what the commitment binds)."""
        text = json.dumps(self.to_json(), sort_keys=True, separators=(",", ":"))
        return int.from_bytes(hashlib.sha256(text.encode()).digest(), "big") % R


def tree_shape(model: TreeModel, depth: int, *, eps_bits: int, threshold_bits: int | None = None,
               value_range_bits: int | None = None) -> TreeShape:
    """The shape of a model's statement at a padded depth; widths default to the model's own needs."""
    ens = model.ensemble
    thresholds = [t for tree in ens.trees for f, t in zip(tree.feature, tree.threshold) if f >= 0]
    values = [v for tree in ens.trees for f, v in zip(tree.feature, tree.value) if f < 0] + list(ens.base)
    need_t = max((_signed_bits(t) for t in thresholds), default=0)
    need_v = max(_signed_bits(v) for v in values)
    if threshold_bits is not None and threshold_bits < need_t:
        raise TreeShapeError(f"a threshold needs {need_t} bits, the shape declares {threshold_bits}")
    if value_range_bits is not None and value_range_bits < need_v:
        raise TreeShapeError(f"a leaf value or the base needs {need_v} bits, the shape declares {value_range_bits}")
    return TreeShape(
        n_trees=len(ens.trees), depth=depth, n_inputs=ens.n_inputs, n_classes=ens.n_classes,
        scale_bits=ens.scale_bits, value_bits=ens.value_bits, eps_bits=eps_bits,
        box_lower=tuple(model.box_lower), box_upper=tuple(model.box_upper),
        sensitive_columns=model.sensitive_columns, slices=tuple(tuple(s) for s in model.slices()),
        threshold_bits=need_t if threshold_bits is None else threshold_bits,
        value_range_bits=need_v if value_range_bits is None else value_range_bits,
        eps_cap=plaintext_eps_cap(model, eps_bits))


def _signed_bits(v: int) -> int:
    """The least b with -2^b <= v < 2^b."""
    return (v if v >= 0 else -v - 1).bit_length()
