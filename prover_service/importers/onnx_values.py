"""What a tensor of a bank's ONNX graph holds, as the importer follows it: a preprocessed feature
tensor (`Columns`, each column an exact affine map of one raw column), the network applied to it so far
(`Network`), or what a classifier derives from its scores (`Derived`); and the helpers every operator's
translation shares to read its inputs and refuse what it cannot represent.
"""
from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Sequence

import numpy as np

from fairness.errors import ModelError


# ONNX TensorProto element types the importer feeds or casts to.
FLOAT, INT32, STRING, INT64, DOUBLE = 1, 6, 8, 7, 11
NUMBER_TYPES = {FLOAT: np.float32, DOUBLE: np.float64, INT64: np.int64, INT32: np.int32}
TYPE_NAMES = {FLOAT: "float", DOUBLE: "double", INT64: "int64", INT32: "int32", STRING: "string"}


@dataclass(frozen=True)
class Column:
    """One column of a preprocessing tensor: a * basis + b, where the basis is a function of ONE raw column.

    `a` and `b` are exact rationals of the graph's float constants, so that mean = -b/a and std = 1/a are
    rounded once, from the numbers the bank's graph holds.
    """

    source: tuple[str, int]           # (graph input, column within it)
    basis: str                        # "raw", "indicator" (of `category`) or "code" (ordinal, LabelEncoder)
    a: Fraction = Fraction(1)
    b: Fraction = Fraction(0)
    text: bool = False                # raw basis: the graph holds the value as text
    category: str = ""                # indicator: the category it is 1 for
    categories: tuple[str, ...] = ()  # indicator: the encoder's categories; code: the encoder's keys, in code order
    codes: tuple[Fraction, ...] = ()  # code: each key's code
    encoder: str = ""                 # the node that encoded the raw column
    scaled_by: str = ""               # the last node that scaled or shifted it

    @property
    def identity(self) -> bool:
        return self.a == 1 and self.b == 0


@dataclass(frozen=True)
class Columns:
    """A preprocessed tensor: its columns along the last axis; rank 1 [N], 2 [N, k] or 3 [N, 1, k]."""

    cols: tuple[Column, ...]
    rank: int


@dataclass(frozen=True)
class Network:
    """Layers applied to one `Columns` tensor: W of shape (out, in), float64 copies of the graph's constants."""

    features: Columns
    weights: tuple[np.ndarray, ...]
    biases: tuple[np.ndarray, ...]
    state: str                  # "matmul" (its bias may follow), "affine", "relu" or "head"
    rank: int
    head: str = ""              # the closing Sigmoid / Softmax / LogSoftmax
    notes: tuple[str, ...] = ()

    @property
    def width(self) -> int:
        return int(self.weights[-1].shape[0])

    @property
    def scores(self) -> bool:
        """Ends in logits or their monotone head: the decision is read from it."""
        return self.state in ("matmul", "affine", "head")


@dataclass(frozen=True)
class Derived:
    """What a classifier computes from its scores: no new decision, perhaps the class values."""

    network: Network
    kind: str                               # "complement" (1 - p), "scores", "index", "label" or "map"
    classes: tuple[str, ...] | None = None  # the class value of each score, when the graph names them


@dataclass(frozen=True)
class Context:
    """What every node handler needs besides its inputs."""

    source: str
    opset: int
    ml_opset: int


def where(node: Any) -> str:
    return f"{node.op_type} node {node.name or node.output[0]!r}"


def refuse(ctx: Context, node: Any, text: str) -> ModelError:
    return ModelError(f"{ctx.source}: {where(node)}: {text}")


def attrs(node: Any) -> dict[str, Any]:
    from onnx import helper

    return {a.name: helper.get_attribute_value(a) for a in node.attribute}


def texts(values: Sequence[Any]) -> tuple[str, ...]:
    return tuple(v.decode() if isinstance(v, bytes) else str(v) for v in values)


def single(ins: Sequence[Any], node: Any, ctx: Context, *kinds: type) -> Any:
    x = ins[0]
    if not isinstance(x, kinds):
        raise refuse(ctx, node, f"applies to {describe_value(x)}, which it cannot take here")
    return x


def describe_value(value: Any) -> str:
    if isinstance(value, Columns):
        return "the preprocessed columns"
    if isinstance(value, Network):
        return {"relu": "the hidden activations", "head": f"the {value.head} scores"}.get(value.state, "the logits")
    if isinstance(value, Derived):
        return {"complement": "1 - p", "scores": "the class probabilities", "index": "the class index",
                "label": "the class label", "map": "the probability map"}[value.kind]
    if isinstance(value, np.ndarray):
        return "a constant"
    return "nothing"


def const(value: Any, node: Any, ctx: Context, what: str) -> np.ndarray:
    if not isinstance(value, np.ndarray):
        raise refuse(ctx, node, f"its {what} must be a constant, not {describe_value(value)}")
    return value


def last_axis(axis: int, rank: int, node: Any, ctx: Context) -> None:
    if (axis + rank if axis < 0 else axis) != rank - 1:
        raise refuse(ctx, node, f"works on axis {axis} of a rank-{rank} tensor; only the column axis (the last) "
                                 "keeps one row per record")


def per_column(c: np.ndarray, k: int, node: Any, ctx: Context) -> list[Fraction]:
    """A constant broadcast along the column axis: one exact rational per column."""
    c = np.asarray(c)
    if c.size == 1:
        return [Fraction(float(c.reshape(-1)[0]))] * k
    if c.shape[-1] == k and c.size == k:
        return [Fraction(float(v)) for v in c.reshape(-1)]
    raise refuse(ctx, node, f"its constant of shape {list(c.shape)} does not broadcast along {k} columns")


def per_unit(c: np.ndarray, k: int, node: Any, ctx: Context) -> np.ndarray:
    c = np.asarray(c, dtype=np.float64)
    if c.size == 1:
        return np.full(k, float(c.reshape(-1)[0]))
    if c.shape[-1] == k and c.size == k:
        return c.reshape(-1).copy()
    raise refuse(ctx, node, f"its constant of shape {list(c.shape)} does not broadcast along {k} units")


def column_names(cols: Sequence[Column]) -> str:
    return ", ".join(sorted({f"{s}[{j}]" if j else s for s, j in (c.source for c in cols)}))
