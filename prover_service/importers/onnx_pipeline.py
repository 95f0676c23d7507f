"""Read a bank's ONNX model as the bank runs it: a skl2onnx pipeline or a torch export.

A bank exports its whole pipeline to ONNX (skl2onnx: one graph input per raw
column, Scaler / OneHotEncoder / LabelEncoder per column, Concat, then the
MLP as MatMul/Add/Relu with a Sigmoid or Softmax head and the label
post-processing), or exports a torch network alone (torch.onnx.export: Gemm
or MatMul+Add, Relu, maybe Sigmoid/Softmax) and keeps its preprocessing in a
fitted scikit-learn transformer. Both torch exporters write that form: the
TorchScript one (dynamo=False) and the default one (torch.export and
onnxscript, opset 18 or later), whose optimiser folds constants, eval-mode
BatchNorm and Dropout away and stores MatMul weights pre-transposed as
initializers; nothing here depends on which wrote the file.

The graph is read by following every tensor, in graph order, as one of:

- a constant (initializers, Constant nodes, and nodes over constants only,
  evaluated by the `onnx` reference evaluator);
- `Columns`: a preprocessed feature tensor, each of its columns a * basis + b
  of ONE raw column, where the basis is the raw value, the indicator of one
  category (OneHotEncoder) or a category's code (LabelEncoder), and a, b are
  exact rationals of the graph's float constants;
- `Network`: the layers applied so far to one `Columns` tensor, an
  alternation of affine maps and Relu, possibly closed by Sigmoid/Softmax;
- `Derived`: what a classifier computes from its scores (1 - p, the
  probability pair, ArgMax, the class label, the ZipMap), which names the
  classes but adds nothing to the decision.

Anything else, and any node that mixes two raw columns or two networks, is
refused with a sentence naming the node. The network's input columns then
give the schema (one feature per raw column, in model-input order) and an
exact rewrite of the first layer where the schema's encoding differs from the
graph's (a scaled one-hot or sensitive input is folded into the weights).

The runtime is onnxruntime on the same file, fed the raw records: the bank's
own artifact, which the checked import compares with the imported network.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from fractions import Fraction
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from fairness.errors import DataError, ModelError
from fairness.model import FloatMLP, _binary_logits
from fairness.schema import (CategoricalFeature, FeatureSchema, LabelColumn, NumericFeature, SensitiveAttribute,
                             category_key, number)

from . import BankFacts, BankModel
from .sklearn_pipeline import MAX_CODE_VALUES

ONNX_DOMAINS = ("", "ai.onnx", "ai.onnx.ml")
# onnxruntime runs at most this many records at once (memory stays flat on a large CSV).
RUN_CHUNK = 4096

# ONNX TensorProto element types the importer feeds or casts to.
FLOAT, INT32, STRING, INT64, DOUBLE = 1, 6, 8, 7, 11
NUMBER_TYPES = {FLOAT: np.float32, DOUBLE: np.float64, INT64: np.int64, INT32: np.int32}
TYPE_NAMES = {FLOAT: "float", DOUBLE: "double", INT64: "int64", INT32: "int32", STRING: "string"}

# Activations that make a network other than a ReLU network: named in their refusal.
NOT_RELU = frozenset({"Tanh", "LeakyRelu", "Elu", "Selu", "Celu", "Softplus", "Softsign", "HardSigmoid", "HardSwish",
                      "PRelu", "Clip", "Gelu", "Mish", "ThresholdedRelu", "Swish", "Sin", "Cos", "Exp", "Log",
                      "Abs", "Sqrt", "Pow", "Erf", "Sign", "Round", "Floor", "Ceil"})


# --------------------------------------------------------------------------- what a tensor holds


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


def _where(node: Any) -> str:
    return f"{node.op_type} node {node.name or node.output[0]!r}"


def _refuse(ctx: Context, node: Any, text: str) -> ModelError:
    return ModelError(f"{ctx.source}: {_where(node)}: {text}")


def _attrs(node: Any) -> dict[str, Any]:
    from onnx import helper

    return {a.name: helper.get_attribute_value(a) for a in node.attribute}


def _texts(values: Sequence[Any]) -> tuple[str, ...]:
    return tuple(v.decode() if isinstance(v, bytes) else str(v) for v in values)


# --------------------------------------------------------------------------- loading


def _load(path: Path) -> Any:
    """The parsed, checked ONNX model; only the standard operator sets (ai.onnx, ai.onnx.ml) are read."""
    import onnx

    if not path.is_file():
        raise ModelError(f"{path}: no such file")
    try:
        model = onnx.load(str(path))
    except Exception as exc:  # protobuf raises several types for a file that is not ONNX
        raise ModelError(f"{path}: cannot parse as ONNX ({type(exc).__name__})") from None
    try:
        onnx.checker.check_model(model)
    except Exception as exc:
        raise ModelError(f"{path}: not a valid ONNX model ({str(exc).splitlines()[0]})") from None
    for opset in model.opset_import:
        if opset.domain not in ONNX_DOMAINS:
            raise ModelError(f"{path}: uses operators of domain {opset.domain!r}; only ai.onnx and ai.onnx.ml "
                             "operators can be read exactly")
    return model


def _opset(model: Any, domain: str) -> int:
    for o in model.opset_import:
        if o.domain == domain or (domain == "" and o.domain == "ai.onnx"):
            return int(o.version)
    return 0


def _constants(graph: Any) -> dict[str, np.ndarray]:
    from onnx import numpy_helper

    return {t.name: numpy_helper.to_array(t) for t in graph.initializer}


@dataclass(frozen=True)
class GraphInput:
    """A graph input the bank's runtime feeds: its element type, columns and fixed batch size (if any)."""

    name: str
    elem_type: int
    rank: int
    width: int
    batch: int | None


def _graph_inputs(graph: Any, consts: Mapping[str, np.ndarray], source: str) -> list[GraphInput]:
    out = []
    for i in graph.input:
        if i.name in consts:  # an initializer also listed as an input (older exporters): a constant
            continue
        t = i.type.tensor_type
        if not i.type.HasField("tensor_type") or t.elem_type not in TYPE_NAMES:
            raise ModelError(f"{source}: graph input {i.name!r} is not a tensor of numbers or text")
        dims = [d.dim_value if d.HasField("dim_value") else None for d in t.shape.dim]
        if not 1 <= len(dims) <= 3 or any(d is None for d in dims[1:]) or (len(dims) == 3 and dims[1] != 1):
            shape = ", ".join("?" if d is None else str(d) for d in dims)
            raise ModelError(f"{source}: graph input {i.name!r} has shape [{shape}]; expected one row per record "
                             "([N], [N, k] or [N, 1, k])")
        width = 1 if len(dims) == 1 else int(dims[-1] or 0)
        out.append(GraphInput(i.name, int(t.elem_type), len(dims), width, dims[0] or None))
    if not out:
        raise ModelError(f"{source}: the graph has no input")
    return out


# --------------------------------------------------------------------------- following the graph


def _follow(model: Any, source: str, inputs: Sequence[GraphInput]) -> dict[str, Any]:
    """The value of every tensor, in graph order (ONNX graphs are topologically sorted)."""
    graph = model.graph
    ctx = Context(source, _opset(model, ""), _opset(model, "ai.onnx.ml"))
    values: dict[str, Any] = dict(_constants(graph))
    for gi in inputs:
        values[gi.name] = Columns(tuple(Column((gi.name, j), "raw", text=gi.elem_type == STRING)
                                        for j in range(gi.width)), gi.rank)
    for node in graph.node:
        if node.domain not in ONNX_DOMAINS:
            raise _refuse(ctx, node, f"operator domain {node.domain!r} is not ai.onnx or ai.onnx.ml")
        for name in node.input:
            if name and name not in values:
                raise _refuse(ctx, node, f"its input {name!r} is not a tensor the importer follows "
                                         "(an auxiliary output of another node, or a missing one)")
        ins = [values[n] if n else None for n in node.input]
        if all(v is None or isinstance(v, np.ndarray) for v in ins) and not node.op_type.startswith("Random"):
            for name, value in zip(node.output, _evaluate(node, ins, ctx)):
                values[name] = value
            continue
        handler = HANDLERS.get(node.op_type)
        if handler is None:
            raise _refuse(ctx, node, _unknown_operator(node.op_type))
        values[node.output[0]] = handler(node, ins, ctx)
    return values


def _unknown_operator(op: str) -> str:
    if op in NOT_RELU:
        return (f"a {op} is not exactly representable: only Relu may sit between the affine layers "
                "(and Sigmoid or Softmax close the network)")
    if op == "BatchNormalization":
        return "BatchNormalization is folded only right after an affine layer (Gemm, or MatMul and Add)"
    return (f"operator {op} is not one the importer can represent exactly (preprocessing: Scaler, OneHotEncoder, "
            "LabelEncoder, Concat, FeatureVectorizer, Gather, Slice, ArrayFeatureExtractor, Cast, Reshape, Flatten, "
            "Identity, Add/Sub/Mul/Div by constants; network: Gemm, MatMul, Add, Relu, Sigmoid, Softmax)")


def _evaluate(node: Any, ins: Sequence[np.ndarray | None], ctx: Context) -> list[np.ndarray]:
    """A node over constants only (Constant, a shape computation): evaluated by the onnx reference runtime."""
    from onnx.reference import ReferenceEvaluator

    try:
        ev = ReferenceEvaluator(node, opsets={"": ctx.opset or 13, "ai.onnx.ml": ctx.ml_opset or 3})
        feeds = {n: v for n, v in zip(node.input, ins) if n}
        return [np.asarray(v) for v in ev.run(None, feeds)]
    except Exception as exc:
        raise _refuse(ctx, node, f"cannot evaluate it over its constant inputs ({type(exc).__name__})") from None


# ---- helpers over values


def _single(ins: Sequence[Any], node: Any, ctx: Context, *kinds: type) -> Any:
    x = ins[0]
    if not isinstance(x, kinds):
        raise _refuse(ctx, node, f"applies to {_describe(x)}, which it cannot take here")
    return x


def _describe(value: Any) -> str:
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


def _const(value: Any, node: Any, ctx: Context, what: str) -> np.ndarray:
    if not isinstance(value, np.ndarray):
        raise _refuse(ctx, node, f"its {what} must be a constant, not {_describe(value)}")
    return value


def _last_axis(axis: int, rank: int, node: Any, ctx: Context) -> None:
    if (axis + rank if axis < 0 else axis) != rank - 1:
        raise _refuse(ctx, node, f"works on axis {axis} of a rank-{rank} tensor; only the column axis (the last) "
                                 "keeps one row per record")


def _per_column(c: np.ndarray, k: int, node: Any, ctx: Context) -> list[Fraction]:
    """A constant broadcast along the column axis: one exact rational per column."""
    c = np.asarray(c)
    if c.size == 1:
        return [Fraction(float(c.reshape(-1)[0]))] * k
    if c.shape[-1] == k and c.size == k:
        return [Fraction(float(v)) for v in c.reshape(-1)]
    raise _refuse(ctx, node, f"its constant of shape {list(c.shape)} does not broadcast along {k} columns")


def _per_unit(c: np.ndarray, k: int, node: Any, ctx: Context) -> np.ndarray:
    c = np.asarray(c, dtype=np.float64)
    if c.size == 1:
        return np.full(k, float(c.reshape(-1)[0]))
    if c.shape[-1] == k and c.size == k:
        return c.reshape(-1).copy()
    raise _refuse(ctx, node, f"its constant of shape {list(c.shape)} does not broadcast along {k} units")


def _column_names(cols: Sequence[Column]) -> str:
    return ", ".join(sorted({f"{s}[{j}]" if j else s for s, j in (c.source for c in cols)}))


# ---- pass-through


def _identity(node: Any, ins: Sequence[Any], ctx: Context) -> Any:
    return _single(ins, node, ctx, Columns, Network, Derived)


def _cast(node: Any, ins: Sequence[Any], ctx: Context) -> Any:
    x = _single(ins, node, ctx, Columns, Network, Derived)
    to = int(_attrs(node).get("to", FLOAT))
    if isinstance(x, Derived):
        return x
    if isinstance(x, Network):
        if to not in (FLOAT, DOUBLE):
            raise _refuse(ctx, node, f"casts {_describe(x)} to {TYPE_NAMES.get(to, to)}: the scores must stay "
                                     "float or double")
        return x
    if to in (FLOAT, DOUBLE):  # text read as a number, or float <-> double: the bank's own input rounding
        return Columns(tuple(replace(c, text=False) for c in x.cols), x.rank)
    changed = []
    for c in x.cols:
        exact = c.basis == "indicator" or (c.basis == "raw" and c.identity and (to == STRING or not c.text))
        if to not in (STRING, INT64, INT32) or not exact:
            raise _refuse(ctx, node, f"casts column {_column_names([c])} to {TYPE_NAMES.get(to, to)}, which "
                                     "rounds or reinterprets it")
        changed.append(replace(c, text=to == STRING) if c.basis == "raw" else c)
    return Columns(tuple(changed), x.rank)


def _dropout(node: Any, ins: Sequence[Any], ctx: Context) -> Any:
    """Dropout at inference is the identity; in training mode (or a mode known only at run time) it is random."""
    training = ins[2] if len(ins) > 2 else None
    if training is not None and (not isinstance(training, np.ndarray) or bool(training.reshape(-1)[0])):
        raise _refuse(ctx, node, "Dropout in training mode drops units at random: export the model in eval mode")
    if ctx.opset < 7 and not int(_attrs(node).get("is_test", 0)):
        raise _refuse(ctx, node, "Dropout in training mode drops units at random: export the model in eval mode")
    return _identity(node, ins, ctx)


def _reshape(node: Any, ins: Sequence[Any], ctx: Context) -> Any:
    x = _single(ins, node, ctx, Columns, Network, Derived)
    if isinstance(x, Derived):
        return x
    if node.op_type == "Flatten":
        if int(_attrs(node).get("axis", 1)) != 1:
            raise _refuse(ctx, node, "flattens from an axis other than 1, mixing rows")
        rank = 2
    else:
        shape = ins[1] if len(ins) > 1 else np.array(_attrs(node).get("shape", []))
        rank = _reshaped_rank(_const(shape, node, ctx, "shape"), x, node, ctx)
    if isinstance(x, Columns):
        return Columns(x.cols, rank)
    return replace(x, rank=rank)


def _reshaped_rank(shape: np.ndarray, x: Columns | Network, node: Any, ctx: Context) -> int:
    """The rank after a Reshape that keeps one row per record and its columns last; refuse any other."""
    k = len(x.cols) if isinstance(x, Columns) else x.width
    before = {1: [-1], 2: [-1, k], 3: [-1, 1, k]}[x.rank]
    dims = [before[i] if d == 0 and i < len(before) else int(d) for i, d in enumerate(shape.reshape(-1))]
    inner = dims[1:]
    ok = (len(dims) == 1 and k == 1) or (
        len(dims) in (2, 3) and all(d == 1 for d in inner[:-1]) and inner[-1] in (k, -1) and
        not (inner[-1] == -1 and dims[0] == -1))
    if not ok:
        raise _refuse(ctx, node, f"reshapes {k} columns per record to {dims}, which does not keep one row per record")
    return len(dims)


# ---- preprocessing


def _affine(cols: Columns, scale: Sequence[Fraction], shift: Sequence[Fraction], node: Any, ctx: Context) -> Columns:
    """Each column c -> scale * c + shift (exact rationals)."""
    out = []
    for c, s, t in zip(cols.cols, scale, shift):
        if c.basis == "raw" and c.text:
            raise _refuse(ctx, node, f"does arithmetic on the text column {_column_names([c])}")
        out.append(replace(c, a=c.a * s, b=c.b * s + t, scaled_by=_where(node)))
    return Columns(tuple(out), cols.rank)


def _scaler(node: Any, ins: Sequence[Any], ctx: Context) -> Columns:
    """ai.onnx.ml Scaler: y = (x - offset) * scale, per column."""
    x = _single(ins, node, ctx, Columns)
    a = _attrs(node)
    k = len(x.cols)
    offset = _per_column(np.array(a.get("offset", [0.0]), dtype=np.float32), k, node, ctx)
    scale = _per_column(np.array(a.get("scale", [1.0]), dtype=np.float32), k, node, ctx)
    return _affine(x, scale, [-o * s for o, s in zip(offset, scale)], node, ctx)


def _arithmetic(node: Any, ins: Sequence[Any], ctx: Context) -> Any:
    """Add/Sub/Mul/Div with a constant on the columns or the logits; 1 - p of a logistic head."""
    op = node.op_type
    left, right = ins[0], ins[1]
    if not isinstance(left, np.ndarray) and not isinstance(right, np.ndarray):
        if isinstance(left, Columns) and isinstance(right, Columns):
            raise _refuse(ctx, node, f"combines columns {_column_names(left.cols + right.cols)}: a schema encodes "
                                     "each raw column on its own")
        raise _refuse(ctx, node, f"combines {_describe(left)} with {_describe(right)}: not an affine map of one input")
    const_first = isinstance(left, np.ndarray)
    c, x = (left, right) if const_first else (right, left)
    if isinstance(x, Network) and x.state == "head" and x.head == "Sigmoid" and op == "Sub" and const_first:
        if not np.all(np.asarray(c, dtype=np.float64) == 1.0):
            raise _refuse(ctx, node, "subtracts the probability from a number other than 1")
        return Derived(x, "complement")
    if isinstance(x, Columns):
        k = len(x.cols)
        v = _per_column(c, k, node, ctx)
        one, zero = [Fraction(1)] * k, [Fraction(0)] * k
        if op == "Add":
            return _affine(x, one, v, node, ctx)
        if op == "Sub":
            return _affine(x, [Fraction(-1)] * k, v, node, ctx) if const_first else _affine(x, one, [-t for t in v], node, ctx)
        if op == "Mul":
            return _affine(x, v, zero, node, ctx)
        if op == "Div" and not const_first and all(v):
            return _affine(x, [1 / t for t in v], zero, node, ctx)
        raise _refuse(ctx, node, "divides by a column or by zero: not an affine map")
    if isinstance(x, Network) and x.state in ("matmul", "affine"):
        u = _per_unit(c, x.width, node, ctx)
        w, b = x.weights[-1], x.biases[-1]
        if op == "Add":
            return _with_last(x, w, b + u, "affine")
        if op == "Sub":
            return _with_last(x, -w, u - b, "affine") if const_first else _with_last(x, w, b - u, "affine")
        if op == "Mul":
            return _with_last(x, w * u[:, None], b * u, "affine")
        if op == "Div" and not const_first and np.all(u != 0):
            return _with_last(x, w / u[:, None], b / u, "affine")
        raise _refuse(ctx, node, "divides by the logits or by zero: not an affine map")
    raise _refuse(ctx, node, f"does arithmetic on {_describe(x)}, which is not part of an affine layer")


def _select(x: Columns, indices: np.ndarray, node: Any, ctx: Context, keep_rank: bool = True) -> Columns:
    k = len(x.cols)
    picked = []
    for i in np.asarray(indices).reshape(-1):
        i = int(i)
        if not -k <= i < k:
            raise _refuse(ctx, node, f"selects column {i} of {k}")
        picked.append(x.cols[i])
    rank = x.rank if keep_rank or x.rank == 1 else x.rank - 1
    return Columns(tuple(picked), rank)


def _gather(node: Any, ins: Sequence[Any], ctx: Context) -> Columns:
    x = _single(ins, node, ctx, Columns)
    idx = _const(ins[1], node, ctx, "indices")
    axis = int(_attrs(node).get("axis", 0))
    _last_axis(axis, x.rank, node, ctx)
    return _select(x, idx, node, ctx, keep_rank=idx.ndim > 0)


def _array_feature_extractor(node: Any, ins: Sequence[Any], ctx: Context) -> Any:
    """ai.onnx.ml ArrayFeatureExtractor: columns by index, or the class label of an ArgMax (skl2onnx)."""
    x, idx = ins[0], ins[1]
    if isinstance(x, np.ndarray) and isinstance(idx, Derived) and idx.kind == "index":
        return Derived(idx.network, "label", _texts(x.reshape(-1).tolist()))
    x = _single(ins, node, ctx, Columns)
    return _select(x, _const(idx, node, ctx, "indices"), node, ctx)


def _slice(node: Any, ins: Sequence[Any], ctx: Context) -> Columns:
    x = _single(ins, node, ctx, Columns)
    a = _attrs(node)
    if ctx.opset < 10:
        starts, ends, axes, steps = a["starts"], a["ends"], a.get("axes"), None
    else:
        starts, ends = (_const(v, node, ctx, "bounds").tolist() for v in ins[1:3])
        axes = _const(ins[3], node, ctx, "axes").tolist() if len(ins) > 3 and ins[3] is not None else None
        steps = _const(ins[4], node, ctx, "steps").tolist() if len(ins) > 4 and ins[4] is not None else None
    axes = list(range(len(starts))) if axes is None else axes
    steps = [1] * len(starts) if steps is None else steps
    cols = list(range(len(x.cols)))
    for start, end, axis, step in zip(starts, ends, axes, steps):
        if (axis + x.rank if axis < 0 else axis) == 0 and start == 0 and end >= 2 ** 62 and step == 1:
            continue  # every row
        _last_axis(int(axis), x.rank, node, ctx)
        cols = cols[slice(int(start), int(end), int(step))]
    return Columns(tuple(x.cols[i] for i in cols), x.rank)


def _concat(node: Any, ins: Sequence[Any], ctx: Context) -> Any:
    parts = list(ins)
    if len(parts) == 2 and isinstance(parts[0], Derived) and parts[0].kind == "complement" \
            and isinstance(parts[1], Network) and parts[1] is parts[0].network:
        return Derived(parts[1], "scores")  # skl2onnx's (1 - p, p) of a logistic head
    if not all(isinstance(p, Columns) for p in parts):
        raise _refuse(ctx, node, "joins " + ", ".join(sorted({_describe(p) for p in parts})) +
                      ": only preprocessed columns are joined")
    ranks = {p.rank for p in parts}
    if len(ranks) != 1:
        raise _refuse(ctx, node, "joins tensors of different ranks")
    rank = ranks.pop()
    _last_axis(int(_attrs(node).get("axis", 1)), rank, node, ctx)
    return Columns(tuple(c for p in parts for c in p.cols), rank)


def _feature_vectorizer(node: Any, ins: Sequence[Any], ctx: Context) -> Columns:
    """ai.onnx.ml FeatureVectorizer: the inputs' columns side by side, in input order."""
    dims = list(_attrs(node).get("inputdimensions", []))
    cols: list[Column] = []
    for i, part in enumerate(ins):
        if not isinstance(part, Columns):
            raise _refuse(ctx, node, f"joins {_describe(part)}: only preprocessed columns are joined")
        if i < len(dims) and dims[i] != len(part.cols):
            raise _refuse(ctx, node, f"declares {dims[i]} columns for input {i}, which has {len(part.cols)}")
        cols.extend(part.cols)
    return Columns(tuple(cols), 2)


def _raw_column(x: Columns, node: Any, ctx: Context) -> Column:
    if len(x.cols) != 1 or x.cols[0].basis != "raw" or not x.cols[0].identity:
        raise _refuse(ctx, node, "encodes a tensor that is not one raw column as the bank's data holds it")
    return x.cols[0]


def _one_hot_encoder(node: Any, ins: Sequence[Any], ctx: Context) -> Columns:
    """ai.onnx.ml OneHotEncoder of one raw column: one indicator per category, in the encoder's order."""
    x = _single(ins, node, ctx, Columns)
    raw = _raw_column(x, node, ctx)
    a = _attrs(node)
    if "cats_strings" in a:
        cats = _texts(a["cats_strings"])
    elif "cats_int64s" in a:
        cats = tuple(str(int(v)) for v in a["cats_int64s"])
    else:
        raise _refuse(ctx, node, "names no categories")
    keys = tuple(category_key(raw.source[0], v) for v in cats)
    if len(set(keys)) != len(keys):
        raise _refuse(ctx, node, f"lists a category of column {_column_names([raw])} twice")
    cols = tuple(Column(raw.source, "indicator", category=k, categories=keys, encoder=_where(node)) for k in keys)
    return Columns(cols, x.rank + 1)


def _label_encoder(node: Any, ins: Sequence[Any], ctx: Context) -> Any:
    """ai.onnx.ml LabelEncoder: a raw column's categories to codes (OrdinalEncoder), or class indices to labels."""
    x = ins[0]
    keys, values = _label_map(node, ctx)
    if isinstance(x, Derived) and x.kind in ("index", "label"):
        table = dict(zip(keys, values))
        before = x.classes if x.kind == "label" and x.classes is not None else \
            tuple(str(i) for i in range(x.network.width))
        missing = [k for k in before if k not in table]
        if missing:
            raise _refuse(ctx, node, f"maps no label to class {missing[0]}")
        return Derived(x.network, "label", tuple(table[k] for k in before))
    x = _single(ins, node, ctx, Columns)
    raw = _raw_column(x, node, ctx)
    try:
        codes = tuple(Fraction(float(v)) for v in values)
    except ValueError:
        raise _refuse(ctx, node, f"maps column {_column_names([raw])} to text, not to numeric codes") from None
    keys = tuple(category_key(raw.source[0], k) for k in keys)
    if len(set(keys)) != len(keys) or len(set(codes)) != len(codes):
        raise _refuse(ctx, node, f"maps column {_column_names([raw])} with a repeated category or code")
    col = Column(raw.source, "code", categories=keys, codes=codes, encoder=_where(node))
    return Columns((col,), x.rank)


def _label_map(node: Any, ctx: Context) -> tuple[tuple[str, ...], tuple[str, ...]]:
    from onnx import numpy_helper

    a = _attrs(node)
    found = {}
    for side in ("keys", "values"):
        for suffix in ("strings", "int64s", "floats"):
            if f"{side}_{suffix}" in a:
                found[side] = _texts([category_key(side, v) if not isinstance(v, bytes) else v
                                      for v in a[f"{side}_{suffix}"]])
        if f"{side}_tensor" in a:
            found[side] = _texts(numpy_helper.to_array(a[f"{side}_tensor"]).reshape(-1).tolist())
    if "keys" not in found or "values" not in found or len(found["keys"]) != len(found["values"]):
        raise _refuse(ctx, node, "has no complete key -> value table")
    return found["keys"], found["values"]


# ---- the network


def _with_last(x: Network, w: np.ndarray, b: np.ndarray, state: str) -> Network:
    return replace(x, weights=x.weights[:-1] + (w,), biases=x.biases[:-1] + (b,), state=state)


def _add_layer(x: Any, w: np.ndarray, b: np.ndarray, state: str, rank: int, node: Any, ctx: Context) -> Network:
    """An affine map (W of shape (out, in)) applied to the columns or to the hidden activations."""
    if isinstance(x, Columns):
        if w.shape[1] != len(x.cols):
            raise _refuse(ctx, node, f"takes {w.shape[1]} inputs but the preprocessing gives {len(x.cols)} columns")
        return Network(x, (w,), (b,), state, rank)
    if isinstance(x, Network) and x.state == "relu":
        if w.shape[1] != x.width:
            raise _refuse(ctx, node, f"takes {w.shape[1]} inputs but the layer before gives {x.width}")
        return replace(x, weights=x.weights + (w,), biases=x.biases + (b,), state=state, rank=rank)
    if isinstance(x, Network) and x.state == "head":
        raise _refuse(ctx, node, f"follows the {x.head} head: only Relu may sit between affine layers")
    if isinstance(x, Network):
        raise _refuse(ctx, node, "follows an affine layer without a Relu between them")
    raise _refuse(ctx, node, f"multiplies {_describe(x)}, not the activations of one record")


def _matmul(node: Any, ins: Sequence[Any], ctx: Context) -> Network:
    x, w = ins[0], ins[1]
    if isinstance(x, np.ndarray):
        raise _refuse(ctx, node, "multiplies a constant by the activations (the weights must be the right operand)")
    w = _const(w, node, ctx, "weight")
    if w.ndim != 2:
        raise _refuse(ctx, node, f"its weight has shape {list(w.shape)}; a layer's weight is a matrix")
    rank = x.rank if isinstance(x, (Columns, Network)) else 2
    if rank == 1:
        raise _refuse(ctx, node, "multiplies a one-dimensional tensor, not one row per record")
    w = np.asarray(w, dtype=np.float64).T
    return _add_layer(x, w, np.zeros(w.shape[0]), "matmul", rank, node, ctx)


def _gemm(node: Any, ins: Sequence[Any], ctx: Context) -> Network:
    """Y = alpha * A' B' + beta * C with A the activations (untransposed) and B, C constants."""
    a = _attrs(node)
    x = ins[0]
    if int(a.get("transA", 0)) or isinstance(x, np.ndarray):
        raise _refuse(ctx, node, "does not take the activations as its first, untransposed operand")
    w = np.asarray(_const(ins[1], node, ctx, "weight"), dtype=np.float64)
    if w.ndim != 2:
        raise _refuse(ctx, node, f"its weight has shape {list(w.shape)}; a layer's weight is a matrix")
    w = (w if int(a.get("transB", 0)) else w.T) * float(a.get("alpha", 1.0))
    bias = np.zeros(w.shape[0])
    if len(ins) > 2 and ins[2] is not None:
        bias = _per_unit(_const(ins[2], node, ctx, "bias"), w.shape[0], node, ctx) * float(a.get("beta", 1.0))
    if isinstance(x, (Columns, Network)) and x.rank != 2:
        raise _refuse(ctx, node, "takes a tensor that is not [N, k]")
    return _add_layer(x, w, bias, "affine", 2, node, ctx)


def _relu(node: Any, ins: Sequence[Any], ctx: Context) -> Network:
    x = ins[0]
    if isinstance(x, Network) and x.state in ("matmul", "affine"):
        return replace(x, state="relu")
    raise _refuse(ctx, node, f"applies to {_describe(x)}; Relu must follow an affine layer")


def _head(node: Any, ins: Sequence[Any], ctx: Context) -> Network:
    """Sigmoid / Softmax / LogSoftmax closing the network: monotone, so the logits decide."""
    x = ins[0]
    if not (isinstance(x, Network) and x.state in ("matmul", "affine")):
        raise _refuse(ctx, node, f"applies to {_describe(x)}; it may only close the network, right after "
                                 "its last affine layer")
    if node.op_type == "Sigmoid" and x.width > 1:
        raise _refuse(ctx, node, f"a Sigmoid over {x.width} outputs is a multi-label model, not one decision "
                                 "between classes")
    if node.op_type != "Sigmoid":
        axis = int(_attrs(node).get("axis", -1 if ctx.opset >= 13 else 1))
        axis = axis + x.rank if axis < 0 else axis
        if not (axis == x.rank - 1 or (ctx.opset < 13 and axis == 1)):
            raise _refuse(ctx, node, f"normalises over axis {axis}, not over the classes of one record")
        if x.width < 2:
            raise _refuse(ctx, node, "normalises one output, which is always 1: the network decides nothing")
    return replace(x, state="head", head=node.op_type)


def _batch_normalization(node: Any, ins: Sequence[Any], ctx: Context) -> Network:
    """Inference-mode BatchNormalization right after an affine layer, folded into it (a note says so)."""
    x = ins[0]
    if not (isinstance(x, Network) and x.state in ("matmul", "affine") and x.rank == 2):
        raise _refuse(ctx, node, _unknown_operator("BatchNormalization"))
    if int(_attrs(node).get("training_mode", 0)):
        raise _refuse(ctx, node, "BatchNormalization in training mode uses each batch's statistics: export the "
                                 "model in eval mode")
    gamma, beta, mean, var = (_per_unit(_const(v, node, ctx, "statistics"), x.width, node, ctx) for v in ins[1:5])
    factor = gamma / np.sqrt(var + float(_attrs(node).get("epsilon", 1e-5)))
    w, b = x.weights[-1], x.biases[-1]
    folded = _with_last(x, w * factor[:, None], (b - mean) * factor + beta, "affine")
    note = (f"{_where(node)} (inference mode) folded into the affine layer before it: "
            "W' = W * gamma / sqrt(var + eps), b' = (b - mean) * gamma / sqrt(var + eps) + beta")
    return replace(folded, notes=x.notes + (note,))


# ---- after the scores


def _argmax(node: Any, ins: Sequence[Any], ctx: Context) -> Derived:
    x = ins[0]
    rank = x.rank if isinstance(x, Network) else 2
    _last_axis(int(_attrs(node).get("axis", 0)), rank, node, ctx)
    if isinstance(x, Network) and x.scores and x.width >= 2:
        return Derived(x, "index")
    if isinstance(x, Derived) and x.kind == "scores":
        return Derived(x.network, "index")
    raise _refuse(ctx, node, f"takes the largest of {_describe(x)}, not of two or more class scores")


def _zipmap(node: Any, ins: Sequence[Any], ctx: Context) -> Derived:
    x = ins[0]
    a = _attrs(node)
    labels = a.get("classlabels_strings") or a.get("classlabels_int64s")
    classes = _texts(labels) if labels is not None else None
    if isinstance(x, Network) and x.state == "head" and x.width >= 2:
        return Derived(x, "map", classes)
    if isinstance(x, Derived) and x.kind == "scores":
        return Derived(x.network, "map", classes)
    raise _refuse(ctx, node, f"maps {_describe(x)}, not class probabilities")


def _label_shape(node: Any, ins: Sequence[Any], ctx: Context) -> Derived:
    """Squeeze / Unsqueeze of a label or index (skl2onnx and converters reshape labels)."""
    return _single(ins, node, ctx, Derived)


HANDLERS: dict[str, Callable[[Any, Sequence[Any], Context], Any]] = {
    "Identity": _identity, "Cast": _cast, "Dropout": _dropout, "Reshape": _reshape, "Flatten": _reshape,
    "Scaler": _scaler, "Add": _arithmetic, "Sub": _arithmetic, "Mul": _arithmetic, "Div": _arithmetic,
    "Gather": _gather, "ArrayFeatureExtractor": _array_feature_extractor, "Slice": _slice, "Concat": _concat,
    "FeatureVectorizer": _feature_vectorizer, "OneHotEncoder": _one_hot_encoder, "LabelEncoder": _label_encoder,
    "MatMul": _matmul, "Gemm": _gemm, "Relu": _relu, "Sigmoid": _head, "Softmax": _head, "LogSoftmax": _head,
    "BatchNormalization": _batch_normalization, "ArgMax": _argmax, "ZipMap": _zipmap,
    "Squeeze": _label_shape, "Unsqueeze": _label_shape,
}


# --------------------------------------------------------------------------- the decision


@dataclass(frozen=True)
class Decision:
    """How the bank's runtime output becomes a class index: a label, an index, or scores."""

    output: str
    kind: str                          # "label", "index" or "scores"
    classes: tuple[str, ...] | None    # label: the class value of each index
    threshold: float | None = None     # scores of one column: class 1 when above it


def _decision(model: Any, values: Mapping[str, Any], source: str) -> tuple[Network, Decision]:
    """The one network every graph output comes from, and the output the bank's runtime decides by."""
    found: list[tuple[str, Any]] = []
    for out in model.graph.output:
        v = values.get(out.name)
        if not isinstance(v, (Network, Derived)):
            raise ModelError(f"{source}: graph output {out.name!r} is {_describe(v)}, not a score or label of the "
                             "network")
        found.append((out.name, v))
    networks = [(name, v if isinstance(v, Network) else v.network) for name, v in found]
    name0, net = networks[0]
    for name, other in networks[1:]:
        if not _same_scores(net, other):
            raise ModelError(f"{source}: graph outputs {name0!r} and {name!r} come from different networks; "
                             "their decisions could conflict")
    if not net.scores:
        raise ModelError(f"{source}: graph output {name0!r} is {_describe(net)}: the network must end in logits "
                         "(an affine layer), optionally with Sigmoid or Softmax")
    by_kind = {v.kind: (name, v) for name, v in reversed(found) if isinstance(v, Derived)}
    if "label" in by_kind:
        name, v = by_kind["label"]
        return net, Decision(name, "label", v.classes)
    if "index" in by_kind:
        return net, Decision(by_kind["index"][0], "index", None)
    for name, v in found:
        if isinstance(v, Network) or v.kind == "scores":
            width = v.width if isinstance(v, Network) else 2
            head = v.head if isinstance(v, Network) else "Softmax"
            threshold = None if width > 1 else (0.5 if head == "Sigmoid" else 0.0)
            classes = next((d.classes for _, d in found if isinstance(d, Derived) and d.classes), None)
            return net, Decision(name, "scores", classes, threshold)
    raise ModelError(f"{source}: no graph output gives the scores or the label")


def _same_scores(a: Network, b: Network) -> bool:
    return a is b or (a.features is b.features and len(a.weights) == len(b.weights) and all(
        np.array_equal(x, y) for x, y in zip(a.weights + a.biases, b.weights + b.biases)) and a.scores and b.scores)


# --------------------------------------------------------------------------- the schema


@dataclass(frozen=True)
class FirstLayer:
    """The first affine layer, rewritten as the schema's inputs need it."""

    w: np.ndarray
    b: np.ndarray
    notes: tuple[str, ...]


def _blocks(cols: Sequence[Column], names: Mapping[tuple[str, int], str], source: str) -> list[tuple[str, list[int]]]:
    """Consecutive network inputs from the same raw column; a raw column in two places is refused."""
    blocks: list[tuple[str, list[int]]] = []
    for i, c in enumerate(cols):
        name = names[c.source]
        if blocks and blocks[-1][0] == name:
            blocks[-1][1].append(i)
        elif any(n == name for n, _ in blocks):
            raise ModelError(f"{source}: column {name!r} reaches the network in two places (inputs "
                             f"{blocks[[n for n, _ in blocks].index(name)][1][0]} and {i}); a schema encodes each "
                             "raw column once")
        else:
            blocks.append((name, [i]))
    return blocks


def _fold(layer: FirstLayer, i: int, a: Fraction, b: Fraction) -> FirstLayer:
    """Input i of the graph's first layer held a * v + b; the schema's input holds v: W'[:, i] = W[:, i] * a,
    b' = b + W[:, i] * b."""
    w = layer.w.copy()
    w[:, i] = layer.w[:, i] * float(a)
    return FirstLayer(w, layer.b + layer.w[:, i] * float(b), layer.notes)


def _with_note(layer: FirstLayer, note: str) -> FirstLayer:
    return FirstLayer(layer.w, layer.b, layer.notes + (note,))


def _feature(name: str, cols: list[Column], first: list[int], layer: FirstLayer, facts: BankFacts,
             source: str) -> tuple[Any, FirstLayer]:
    """The schema feature of one raw column and the first layer rewritten for its encoding."""
    kinds = {c.basis for c in cols}
    if len(kinds) > 1 or (kinds != {"indicator"} and len(cols) > 1):
        raise ModelError(f"{source}: column {name!r} reaches the network {len(cols)} times "
                         f"({', '.join(sorted(kinds))}); a schema encodes each raw column once")
    sensitive = name in facts.sensitive
    kind = kinds.pop()
    if kind == "indicator":
        return _one_hot_feature(name, cols, first, layer, facts, sensitive, source)
    c, i = cols[0], first[0]
    if kind == "code":
        return _code_feature(name, c, i, layer, facts, sensitive, source)
    if sensitive:
        return _sensitive_number(name, c, i, layer, facts, source)
    return _numeric_feature(name, c, i, layer, facts, source)


def _numeric_feature(name: str, c: Column, i: int, layer: FirstLayer, facts: BankFacts,
                     source: str) -> tuple[NumericFeature, FirstLayer]:
    """a * x + b = (x - mean) / std with mean = -b / a, std = 1 / a; a negative a is folded as a sign."""
    if c.a == 0:
        raise ModelError(f"{source}: column {name!r} is multiplied by 0 ({c.scaled_by}): the network ignores it")
    if name not in facts.domains:
        raise DataError(f"{source}: numeric column {name!r} has no domain: give its [min, max] in raw units in the "
                        "facts' domains, or take it from data with --domain-from DATA.csv")
    lo, hi = facts.domains[name]
    if c.a < 0:
        layer = _with_note(_fold(layer, i, Fraction(-1), Fraction(0)),
                           f"{name}: the graph scales it by a negative factor; the sign is folded into the first layer")
    feature = NumericFeature(kind="numeric", name=name, min=lo, max=hi, mean=float(-c.b / c.a),
                             std=float(1 / abs(c.a)), unit=facts.units.get(name, ""))
    return feature, layer


def _sensitive_number(name: str, c: Column, i: int, layer: FirstLayer, facts: BankFacts,
                      source: str) -> tuple[SensitiveAttribute, FirstLayer]:
    """A sensitive column the graph reads as a number: its values must be integer codes (from the facts)."""
    values, codes = _sensitive_codes(name, c, facts, source)
    feature = SensitiveAttribute(kind="sensitive", name=name, values=values, codes=codes,
                                 labels=_value_labels(name, values, facts, source))
    if not c.identity:
        layer = _with_note(_fold(layer, i, c.a, c.b),
                           f"{name}: the bank scales this sensitive column ({c.scaled_by}: {_affine_text(c)}); the "
                           "scaling is folded into the first layer so that its input holds the integer code")
    return feature, layer


def _sensitive_codes(name: str, c: Column, facts: BankFacts, source: str) -> tuple[tuple[str, ...], tuple[int, ...]]:
    how = (f"list its codes in the facts file (value_labels: {{{name}: {{0: ..., 1: ...}}}}) or give it an integer "
           f"domain (domains: {{{name}: [0, 1]}})")
    if c.text:
        raise ModelError(f"{source}: sensitive column {name!r} reaches the network as text, not as a code")
    if name in facts.value_labels:
        keys = list(facts.value_labels[name])
        if not all(_is_int_text(k) for k in keys):
            raise DataError(f"{source}: sensitive column {name!r} enters the network as a number, so its values must "
                            f"be integer codes; the facts' value_labels give {', '.join(keys)}")
        codes = sorted(int(k) for k in keys)
    elif name in facts.domains:
        lo, hi = facts.domains[name]
        if not (float(lo).is_integer() and float(hi).is_integer()):
            raise DataError(f"{source}: sensitive column {name!r} enters the network as a number, so its values must "
                            f"be integer codes, but its domain [{lo:g}, {hi:g}] is not: {how}")
        codes = list(range(int(lo), int(hi) + 1))
        if len(codes) > MAX_CODE_VALUES:
            raise DataError(f"{source}: sensitive column {name!r} has {len(codes)} integer codes in [{lo:g}, {hi:g}]; "
                            f"at most {MAX_CODE_VALUES} values can be enumerated: {how}")
    else:
        raise DataError(f"{source}: sensitive column {name!r} enters the network as a number, so its values must be "
                        f"integer codes: {how}")
    if len(codes) < 2:
        raise DataError(f"{source}: sensitive column {name!r} takes a single value; it needs at least two")
    return tuple(str(v) for v in codes), tuple(codes)


def _is_int_text(text: str) -> bool:
    try:
        return float(text).is_integer() and str(int(float(text))) == text
    except ValueError:
        return False


def _affine_text(c: Column) -> str:
    return f"x * {float(c.a):.9g} + {float(c.b):.9g}"


def _code_feature(name: str, c: Column, i: int, layer: FirstLayer, facts: BankFacts, sensitive: bool,
                  source: str) -> tuple[Any, FirstLayer]:
    """A LabelEncoder's codes: ordinal categorical (scaling in mean/std), or a sensitive code (scaling folded)."""
    labels = _value_labels(name, c.categories, facts, source)
    if sensitive:
        if not all(v.denominator == 1 for v in c.codes):
            raise ModelError(f"{source}: sensitive column {name!r} is coded by {c.encoder} with codes that are not "
                             "integers")
        feature = SensitiveAttribute(kind="sensitive", name=name, values=c.categories,
                                     codes=tuple(int(v) for v in c.codes), labels=labels)
        if not c.identity:
            layer = _with_note(_fold(layer, i, c.a, c.b),
                               f"{name}: the bank scales this sensitive column's codes ({c.scaled_by}); the scaling "
                               "is folded into the first layer so that its input holds the integer code")
        return feature, layer
    if c.a == 0:
        raise ModelError(f"{source}: column {name!r} is multiplied by 0 ({c.scaled_by}): the network ignores it")
    if c.a < 0:
        layer = _with_note(_fold(layer, i, Fraction(-1), Fraction(0)),
                           f"{name}: the graph scales its codes by a negative factor; the sign is folded into the "
                           "first layer")
    ordinal = CategoricalFeature(kind="categorical", name=name, categories=c.categories, labels=labels,
                                 encoding="ordinal", codes=tuple(float(v) for v in c.codes), mean=float(-c.b / c.a),
                                 std=float(1 / abs(c.a)))
    return ordinal, layer


def _one_hot_feature(name: str, cols: list[Column], first: list[int], layer: FirstLayer, facts: BankFacts,
                     sensitive: bool, source: str) -> tuple[Any, FirstLayer]:
    """A OneHotEncoder's indicators, in its category order, all of them or all but the dropped one."""
    encoders = {c.encoder for c in cols}
    if len(encoders) > 1:
        raise ModelError(f"{source}: column {name!r} is one-hot encoded twice ({', '.join(sorted(encoders))})")
    categories = cols[0].categories
    kept = [c.category for c in cols]
    if len(set(kept)) != len(kept):
        raise ModelError(f"{source}: column {name!r}: a category's indicator reaches the network twice")
    if kept != [v for v in categories if v in kept]:
        raise ModelError(f"{source}: column {name!r}: its indicators reach the network in an order "
                         f"({', '.join(kept)}) other than the encoder's ({', '.join(categories)})")
    missing = [v for v in categories if v not in kept]
    if len(missing) > 1:
        raise ModelError(f"{source}: column {name!r}: only {len(kept)} of its {len(categories)} categories reach the "
                         f"network ({', '.join(missing)} do not); a one-hot encoding may drop one category")
    drop = missing[0] if missing else None
    scaled = [(i, c) for i, c in zip(first, cols) if not c.identity]
    for i, c in scaled:
        layer = _fold(layer, i, c.a, c.b)
    if scaled:
        layer = _with_note(layer, f"{name}: the graph scales its one-hot indicators ({scaled[0][1].scaled_by}); the "
                                  "scaling is folded into the first layer so that its inputs are exactly 0 or 1")
    labels = _value_labels(name, categories, facts, source)
    if sensitive:
        return SensitiveAttribute(kind="sensitive", name=name, values=categories, labels=labels, encoding="one_hot",
                                  drop=drop), layer
    return CategoricalFeature(kind="categorical", name=name, categories=categories, labels=labels,
                              encoding="one_hot", drop=drop), layer


def _value_labels(name: str, values: Sequence[str], facts: BankFacts, source: str) -> tuple[str, ...] | None:
    given = facts.value_labels.get(name)
    if given is None:
        return None
    unknown = [v for v in given if v not in values]
    if unknown:
        raise DataError(f"{source}: the facts label value {unknown[0]!r} of column {name!r}, which the model does not "
                        f"know (its values: {', '.join(values)})")
    missing = [v for v in values if v not in given]
    if missing:
        raise DataError(f"{source}: the facts' value_labels of column {name!r} give no label for "
                        f"{', '.join(missing)}")
    return tuple(given[v] for v in values)


def _schema_features(net: Network, names: Mapping[tuple[str, int], str], facts: BankFacts,
                     source: str) -> tuple[list[Any], FirstLayer]:
    layer = FirstLayer(net.weights[0].copy(), net.biases[0].copy(), ())
    features = []
    cols = net.features.cols
    for name, idx in _blocks(cols, names, source):
        feature, layer = _feature(name, [cols[i] for i in idx], idx, layer, facts, source)
        features.append(feature)
    return features, layer


def _check_facts(features: Sequence[Any], facts: BankFacts, source: str) -> None:
    """Every column the facts single out (sensitive, labelled, given a unit) must be one the model reads."""
    from .bank_facts import facts_not_used

    names = [f.name for f in features]
    for name in facts.sensitive:
        if name not in names:
            raise DataError(f"{source}: sensitive column {name!r} is not an input of the model (its columns: "
                            f"{', '.join(names)}): the model must read every sensitive column")
    unused = facts_not_used(facts, names)
    if unused:
        raise DataError(f"{source}: the facts name column(s) {', '.join(map(repr, unused))}, which the model does "
                        f"not use (it reads {', '.join(names)})")
    if facts.label_column in names:
        raise DataError(f"{source}: the decision column {facts.label_column!r} is also a column the model reads")


# --------------------------------------------------------------------------- classes


def _label_column(n_classes: int, model_classes: tuple[str, ...] | None, facts: BankFacts,
                  source: str) -> tuple[LabelColumn, tuple[str, ...]]:
    """The class values: the graph's own (skl2onnx's classes), else the facts', else 0..k-1 (said in a note)."""
    notes: tuple[str, ...] = ()
    if model_classes is not None:
        values = tuple(category_key("class", v) for v in model_classes)
        if len(values) != n_classes:
            raise ModelError(f"{source}: the graph names {len(values)} classes but its network has {n_classes} scores")
        if facts.class_values is not None and tuple(facts.class_values) != values:
            raise DataError(f"{source}: the facts' class_values ({', '.join(facts.class_values)}) differ from the "
                            f"model's classes ({', '.join(values)}), in that order")
    elif facts.class_values is not None:
        values = tuple(facts.class_values)
        if len(values) != n_classes:
            raise DataError(f"{source}: the facts give {len(values)} class_values but the network has {n_classes} "
                            "classes")
    else:
        values = tuple(str(i) for i in range(n_classes))
        notes = (f"the graph does not name its classes: they are taken as {', '.join(values)} in output order "
                 "(class_values in the facts file name them)",)
    if facts.class_labels is not None and len(facts.class_labels) != len(values):
        raise DataError(f"{source}: {len(facts.class_labels)} class_labels for {len(values)} classes")
    if facts.favourable is not None and facts.favourable not in values:
        raise DataError(f"{source}: the favourable class {facts.favourable!r} is not one of the model's classes "
                        f"({', '.join(values)})")
    return LabelColumn(column=facts.label_column, values=values, labels=facts.class_labels), notes


# --------------------------------------------------------------------------- the bank's runtime


Encoder = Callable[[Sequence[Mapping[str, Any]]], dict[str, np.ndarray]]


@dataclass(frozen=True)
class OnnxRuntime:
    """The bank's ONNX file run by onnxruntime on raw records: class indices in the schema's label order."""

    name: str
    session: Any
    encode: Encoder
    batch: int | None
    decision: Decision
    labels: LabelColumn

    def decide(self, records: Sequence[Mapping[str, Any]]) -> np.ndarray:
        records = list(records)
        out = []
        step = self.batch or RUN_CHUNK
        for start in range(0, len(records), step):
            chunk = records[start:start + step]
            rows = len(chunk)
            if self.batch and rows < self.batch:
                chunk = chunk + [chunk[-1]] * (self.batch - rows)  # a fixed batch: pad, then drop the padding
            feeds = self.encode(chunk)
            try:
                result = self.session.run([self.decision.output], feeds)[0]
            except Exception as exc:  # onnxruntime's own errors, e.g. a category its encoder does not know
                raise DataError(f"onnxruntime refuses records {start + 1} to {start + rows}: "
                                f"{str(exc).splitlines()[0]}") from None
            out.append(self._classes(result)[:rows])
        return np.concatenate(out) if out else np.zeros(0, dtype=np.int64)

    def _classes(self, result: Any) -> np.ndarray:
        d = self.decision
        if d.kind == "label":
            flat = np.asarray(result).reshape(-1).tolist()
            return np.array([self.labels.index(_texts([v])[0], "onnxruntime") for v in flat], dtype=np.int64)
        scores = np.asarray(result, dtype=np.float64)
        if d.kind == "index":
            return scores.reshape(-1).astype(np.int64)
        scores = scores.reshape(scores.shape[0], -1)
        if scores.shape[1] == 1:
            return (scores[:, 0] > (d.threshold or 0.0)).astype(np.int64)
        return np.argmax(scores, axis=1).astype(np.int64)


def _session(path: Path) -> Any:
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    options.log_severity_level = 3
    try:
        return ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
    except Exception as exc:
        raise ModelError(f"{path}: onnxruntime cannot run it ({str(exc).splitlines()[0]})") from None


def _runtime_name() -> str:
    import onnxruntime as ort

    return f"onnxruntime {ort.__version__}"


def _raw_encoder(inputs: Sequence[GraphInput], names: Mapping[tuple[str, int], str], used: set[str]) -> Encoder:
    """Each graph input fed its raw columns in the type the graph declares; columns the network ignores get a
    neutral filler."""

    def encode(records: Sequence[Mapping[str, Any]]) -> dict[str, np.ndarray]:
        feeds = {}
        for gi in inputs:
            columns = [[_raw_value(r, names[(gi.name, j)], gi.elem_type, names[(gi.name, j)] in used)
                        for r in records] for j in range(gi.width)]
            dtype = object if gi.elem_type == STRING else NUMBER_TYPES[gi.elem_type]
            array = np.array(columns, dtype=dtype).T
            feeds[gi.name] = array.reshape((len(records),) + ((1, gi.width) if gi.rank == 3 else
                                                              (gi.width,) if gi.rank == 2 else ()))
        return feeds

    return encode


def _raw_value(record: Mapping[str, Any], name: str, elem_type: int, used: bool) -> Any:
    if not used:
        return "" if elem_type == STRING else 0
    if name not in record:
        raise DataError(f"record is missing attribute {name}")
    raw = record[name]
    if elem_type == STRING:
        return category_key(name, raw)
    v = number(name, raw)
    if elem_type in (INT64, INT32):
        if not v.is_integer():
            raise DataError(f"{name} = {raw!r}: the model reads this column as an integer")
        return int(v)
    return v


# --------------------------------------------------------------------------- where the features come from


@dataclass(frozen=True)
class Reading:
    """The schema's features, the network over their inputs (before the two-logit rewrite), and the encoder
    that feeds the bank's runtime from raw records."""

    features: tuple[Any, ...]
    weights: tuple[np.ndarray, ...]
    biases: tuple[np.ndarray, ...]
    encode: Encoder
    notes: tuple[str, ...]
    what: str


def _bare_tensor(net: Network, inputs: Sequence[GraphInput]) -> GraphInput | None:
    """The graph input, if the network reads one tensor as it is (no preprocessing in the graph)."""
    cols = net.features.cols
    if len(inputs) != 1:
        return None
    gi = inputs[0]
    plain = all(c.basis == "raw" and c.identity and not c.text and c.source == (gi.name, j) for j, c in enumerate(cols))
    return gi if plain and len(cols) == gi.width else None


def _in_graph(net: Network, inputs: Sequence[GraphInput], facts: BankFacts, columns: Sequence[str] | None,
              source: str) -> Reading:
    """The features the graph's own preprocessing gives (skl2onnx), the first layer rewritten for them."""
    bare = _bare_tensor(net, inputs)
    if bare is not None and bare.width > 1 and columns is None:
        raise ModelError(f"{source}: the graph holds the network only (its input {bare.name!r} takes {bare.width} "
                         "numbers): give the fitted preprocessor the network was trained behind, or a schema")
    names = _input_names(inputs, columns, source)
    features, layer = _schema_features(net, names, facts, source)
    used = {f.name for f in features}
    notes = list(layer.notes)
    ignored = sorted({n for n in names.values() if n not in used})
    if ignored:
        notes.append(f"graph input column(s) {', '.join(ignored)} do not reach the network; the runtime feeds them a "
                     "neutral filler")
    return Reading(tuple(features), (layer.w, *net.weights[1:]), (layer.b, *net.biases[1:]),
                   _raw_encoder(inputs, names, used), tuple(notes), "ONNX pipeline")


def _outside_graph(net: Network, inputs: Sequence[GraphInput], facts: BankFacts | None, preprocessor: Any,
                   schema: FeatureSchema | None, columns: Sequence[str] | None, source: str) -> Reading:
    """A network-only graph (a torch export) behind the bank's fitted preprocessor or its schema."""
    bare = _bare_tensor(net, inputs)
    if bare is None:
        raise ModelError(f"{source}: the graph already holds its preprocessing; a separate preprocessor or schema "
                         "would apply it twice")
    if schema is not None:
        if schema.n_inputs != bare.width:
            raise ModelError(f"{source}: the network takes {bare.width} inputs but schema {schema.name!r} describes "
                             f"{schema.n_inputs} ({', '.join(schema.feature_names)})")
        from .sklearn_pipeline import schema_encoder

        return Reading(tuple(schema.features), net.weights, net.biases, _rows_encoder(bare, schema_encoder(schema)),
                       (), f"ONNX network with schema {schema.name!r}")
    from .rewrites import fold_input_scaling
    from .sklearn_pipeline import describe, load_pickled, read_preprocessor

    if facts is None:
        raise ModelError(f"{source}: give the bank's facts with the preprocessor")
    fitted = load_pickled(preprocessor) if isinstance(preprocessor, (str, Path)) else preprocessor
    pre = read_preprocessor(fitted, facts, columns=columns, source="preprocessor")
    if pre.n_inputs != bare.width:
        raise ModelError(f"{source}: the preprocessor {describe(fitted)} writes {pre.n_inputs} columns, the network "
                         f"reads {bare.width}")
    folded = fold_input_scaling(FloatMLP(net.weights, net.biases), pre.scalings)
    return Reading(pre.features, folded.weights, folded.biases, _rows_encoder(bare, pre.transform), pre.notes,
                   f"ONNX network after scikit-learn {describe(fitted)}")


def _rows_encoder(gi: GraphInput, encode_rows: Callable[[Sequence[Mapping[str, Any]]], np.ndarray]) -> Encoder:
    """One tensor input fed the preprocessed rows, in the type the graph declares."""

    def encode(records: Sequence[Mapping[str, Any]]) -> dict[str, np.ndarray]:
        X = np.asarray(encode_rows(records), dtype=NUMBER_TYPES.get(gi.elem_type, np.float32))
        return {gi.name: X.reshape((len(records), 1, gi.width) if gi.rank == 3 else (len(records), gi.width))}

    return encode


# --------------------------------------------------------------------------- reading a file


def read_onnx(path: str | Path, facts: BankFacts | None, *, preprocessor: Any = None,
              schema: FeatureSchema | None = None, columns: Sequence[str] | None = None) -> BankModel:
    """A bank's ONNX model as a BankModel: the exact float network, the schema and onnxruntime on the same file.

    The features come from the graph's own preprocessing (a skl2onnx pipeline) or, when the graph holds the
    network only (a torch export), from `preprocessor` (a fitted scikit-learn transformer, or the path of its
    joblib file) or the bank's `schema`. `columns` names the raw columns of an input that holds several (a
    pipeline fitted on an unnamed array); an input of one column is named by itself.
    """
    p = Path(path)
    source = str(p)
    model = _load(p)
    inputs = _graph_inputs(model.graph, _constants(model.graph), source)
    net, decision = _decision(model, _follow(model, source, inputs), source)
    if preprocessor is not None or schema is not None:
        reading = _outside_graph(net, inputs, facts, preprocessor, schema, columns, source)
    elif facts is None:
        raise ModelError(f"{source}: give the bank's facts (which columns are sensitive, their domains)")
    else:
        reading = _in_graph(net, inputs, facts, columns, source)
    if facts is not None:
        _check_facts(reading.features, facts, source)
    notes = [*net.notes, *reading.notes]
    weights, biases = list(reading.weights), list(reading.biases)
    if net.width == 1:
        weights[-1], biases[-1] = _binary_logits(weights[-1], biases[-1], source)
        notes.append("one output logit z read as the two logits (0, z): class 1 exactly when z > 0")
    try:
        network = FloatMLP(weights, biases)
    except ModelError as exc:
        raise ModelError(f"{source}: {exc}") from None
    if schema is not None:
        feature_schema = _given_schema(schema, network.n_classes, decision, source)
    elif facts is not None:
        label, class_notes = _label_column(network.n_classes, decision.classes, facts, source)
        notes.extend(class_notes)
        feature_schema = _feature_schema(facts, reading.features, label, p, source)
    else:  # the features came from the facts or from a schema
        raise ModelError(f"{source}: give the bank's facts or its schema")
    runtime = OnnxRuntime(_runtime_name(), _session(p), reading.encode, _batch(inputs), decision,
                          feature_schema.label)
    return BankModel(schema=feature_schema, network=network, runtime=runtime,
                     source=_source_text(model, p, reading.what), notes=tuple(notes))


def _feature_schema(facts: BankFacts, features: Sequence[Any], label: LabelColumn, path: Path,
                    source: str) -> FeatureSchema:
    try:
        return FeatureSchema(name=facts.name, features=tuple(features), label=label,
                             description=f"imported from {path.name}")
    except ValueError as exc:  # pydantic's ValidationError: the facts and the graph do not make a schema
        raise DataError(f"{source}: the graph and the facts do not make a feature schema ({exc})") from None


def _given_schema(schema: FeatureSchema, n_classes: int, decision: Decision, source: str) -> FeatureSchema:
    """The bank's own schema, as given: its label must name the network's classes (and the graph's, if any)."""
    values = schema.label.values
    if len(values) != n_classes:
        raise ModelError(f"{source}: the network has {n_classes} classes but the schema's label lists "
                         f"{len(values)} ({', '.join(values)})")
    if decision.classes is not None and tuple(category_key("class", v) for v in decision.classes) != values:
        raise ModelError(f"{source}: the graph's classes ({', '.join(decision.classes)}) differ from the schema's "
                         f"({', '.join(values)})")
    return schema



def _input_names(inputs: Sequence[GraphInput], columns: Sequence[str] | None, source: str) -> dict[tuple[str, int], str]:
    """The raw column name of every graph input column."""
    names: dict[tuple[str, int], str] = {}
    wide = [gi for gi in inputs if gi.width > 1]
    if wide and columns is None:
        raise ModelError(f"{source}: graph input {wide[0].name!r} holds {wide[0].width} columns without names: list "
                         "them, in order, in the facts file (columns: [...])")
    if wide and (len(wide) > 1 or len(columns or ()) != wide[0].width):
        raise ModelError(f"{source}: graph input {wide[0].name!r} holds {wide[0].width} columns but the facts name "
                         f"{len(columns or ())}")
    for gi in inputs:
        for j in range(gi.width):
            names[(gi.name, j)] = columns[j] if gi.width > 1 and columns is not None else gi.name
    return names


def _batch(inputs: Sequence[GraphInput]) -> int | None:
    sizes = {gi.batch for gi in inputs if gi.batch}
    return sizes.pop() if len(sizes) == 1 else None


def _source_text(model: Any, path: Path, what: str) -> str:
    producer = " ".join(v for v in (model.producer_name, model.producer_version) if v)
    return f"{what} {path.name}" + (f" (exported by {producer}, opset {_opset(model, '')})" if producer else "")
