"""The model's side of the model card: its sensitive features, architecture, encodings and lenses.

The parts of a `commitments.card.ModelCard` that describe the committed model
rather than its circuits: each sensitive attribute with its input columns,
values and labels; the network's architecture; the public preprocessing of
each raw attribute; and the spread and persistence lenses a card's buckets
prove beside the radius (with `scaled_delta`, a persistence delta at the input
scale). Pydantic only, as the card: the verifier client imports it.
"""
from __future__ import annotations

import math
from fractions import Fraction
from typing import Annotated, Any, Final, Literal, TypeAlias

from pydantic import BaseModel, ConfigDict, Field, SerializerFunctionWrapHandler, model_serializer, model_validator

from .canonical import DecimalInt

__all__ = ["ArchitectureCard", "FeatureEncoding", "ModelKind", "PersistenceLensCard", "RELU_NETWORK",
           "SensitiveFeatureCard", "SpreadLensCard", "TREE_ENSEMBLE", "scaled_delta"]


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class SensitiveFeatureCard(_Frozen):
    """A sensitive attribute: the input column(s) it occupies and, per value, the integers (at scale
    2^scale_bits) those columns hold, with readable labels.

    One column: `column` and one integer per value (the form every card had before attributes could
    span several inputs, kept for them so their digests do not change). Several (e.g. one-hot):
    `columns` and per value a list of one integer per column. Exactly one of the two is written."""

    name: str
    column: int | None = Field(default=None, ge=0, exclude_if=lambda v: v is None)
    columns: tuple[Annotated[int, Field(ge=0)], ...] | None = Field(default=None, exclude_if=lambda v: v is None)
    # Domain values as integers at scale 2^scale_bits (one per value, or one list per value), with labels.
    values: tuple[int | tuple[int, ...], ...]
    labels: tuple[str, ...]

    @model_validator(mode="after")
    def _labels_match(self) -> "SensitiveFeatureCard":
        if (self.column is None) == (self.columns is None):
            raise ValueError(f"sensitive feature {self.name!r}: give either column (one input) or columns "
                             "(several), not both nor neither")
        if not self.values or len(self.values) != len(self.labels):
            raise ValueError(f"sensitive feature {self.name!r}: one label per domain value")
        if self.columns is not None:
            if not self.columns or len(set(self.columns)) != len(self.columns):
                raise ValueError(f"sensitive feature {self.name!r}: its columns must be distinct (at least one)")
            for label, value in zip(self.labels, self.values):
                if not isinstance(value, tuple) or len(value) != len(self.columns):
                    raise ValueError(f"sensitive feature {self.name!r}: value {label!r} must be a list of "
                                     f"{len(self.columns)} integers, one per column {list(self.columns)}")
        elif any(isinstance(v, tuple) for v in self.values):
            raise ValueError(f"sensitive feature {self.name!r}: a one-column attribute's values are integers")
        if len(set(self.values)) != len(self.values):
            raise ValueError(f"sensitive feature {self.name!r}: two values are the same")
        return self

    @property
    def input_columns(self) -> tuple[int, ...]:
        """The input columns the attribute occupies, in the order of its points' coordinates."""
        if self.columns is not None:
            return self.columns
        assert self.column is not None  # the validator admits exactly one of the two
        return (self.column,)

    @property
    def points(self) -> tuple[tuple[int, ...], ...]:
        """Each value as the integers its columns hold (1-tuples for a one-column attribute)."""
        return tuple(v if isinstance(v, tuple) else (v,) for v in self.values)

    def point_of(self, query: tuple[int, ...]) -> tuple[int, ...]:
        """The attribute's columns of a query."""
        return tuple(query[c] for c in self.input_columns)

    def label_of(self, point: tuple[int, ...]) -> str:
        """The label of one of the attribute's points."""
        return self.labels[self.points.index(tuple(point))]

    def written(self, point: tuple[int, ...]) -> int | tuple[int, ...]:
        """A point as the card writes a value: an integer for a one-column attribute, a list otherwise."""
        return point[0] if self.columns is None else tuple(point)


RELU_NETWORK: Final = "relu-network"
TREE_ENSEMBLE: Final = "tree-ensemble"
ModelKind: TypeAlias = Literal["relu-network", "tree-ensemble"]


class ArchitectureCard(_Frozen):
    """What kind of model the commitment is to, and its public sizes: a ReLU network's hidden layers, or
    a tree ensemble (no hidden layers; its trees' count and depth are its buckets' shapes)."""

    n_inputs: int = Field(gt=0)
    hidden_sizes: tuple[int, ...]
    n_classes: int = Field(ge=2)
    class_labels: tuple[str, ...]
    kind: ModelKind = RELU_NETWORK  # unwritten for a network: cards from before tree ensembles keep their digests

    @model_validator(mode="after")
    def _labels_match(self) -> "ArchitectureCard":
        if len(self.class_labels) != self.n_classes:
            raise ValueError("one class label per class")
        if any(h <= 0 for h in self.hidden_sizes):
            raise ValueError("hidden layer sizes must be positive")
        if self.kind == TREE_ENSEMBLE and self.hidden_sizes:
            raise ValueError("a tree ensemble has no hidden layers")
        return self

    @model_serializer(mode="wrap")
    def _network_unwritten(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        data: dict[str, Any] = handler(self)
        if self.kind == RELU_NETWORK:
            data.pop("kind", None)
        return data


class FeatureEncoding(_Frozen):
    """How one raw attribute becomes one model input (public preprocessing)."""

    # A mean or std of inf or NaN is refused (naming the field), never printed as "+-inf" nor crashed on.
    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)

    name: str
    kind: str  # "numeric", "categorical" or "sensitive"
    categories: tuple[str, ...] = ()  # label encoding order, for categorical and sensitive
    mean: float = 0.0
    std: float = 1.0

class SpreadLensCard(_Frozen):
    """The counterfactual spread lens (fairness.spread), proved by every bucket of a card that has it:
    each slice's decision at the query and the number of distinct buckets of the favourable class's
    logit margin, buckets `bucket_width` wide at the logit scale 2^(scale_bits (hidden layers + 2))."""

    favourable_class: int = Field(ge=0)
    bucket_width: Annotated[int, DecimalInt(1, 1 << 200, "spread bucket width")]  # beyond 2^53: a decimal string


def scaled_delta(delta: float, scale_bits: int) -> int:
    """delta (standard deviations) at the input scale 2^scale_bits, rounded up: the box a proof covers then
    contains the one asked for. ValueError for a negative or non-finite delta."""
    if isinstance(delta, bool) or not isinstance(delta, (int, float)) or not math.isfinite(delta) or delta < 0:
        raise ValueError(f"delta must be a non-negative number of standard deviations, not {delta!r}")
    return math.ceil(Fraction(delta) * (1 << scale_bits))


class PersistenceLensCard(_Frozen):
    """The persistent-bias lens (fairness.persistence), proved by every bucket of a card that has it: for
    each value of each sensitive attribute, bounds on the gap between the favourable class's logit margin
    at the customer and at that counterfactual, with the SAME inputs moved within delta on `columns` (a box
    at the input scale 2^scale_bits). The customer's request names delta; `default_delta` otherwise."""

    favourable_class: int = Field(ge=0)
    columns: tuple[int, ...] = Field(min_length=1)
    default_delta: int = Field(ge=0)

