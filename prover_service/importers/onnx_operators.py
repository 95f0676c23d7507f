"""Each ONNX operator the importer represents exactly, translated over the values it follows
(`onnx_values`): pass-through (Identity, Cast, Dropout, Reshape), preprocessing (Scaler, arithmetic,
Gather/Slice, Concat, OneHotEncoder, LabelEncoder), the network (MatMul, Gemm, Relu, BatchNormalization,
the Sigmoid/Softmax head) and what follows the scores (ArgMax, ZipMap). `HANDLERS` maps each operator
to its translation.
"""
from __future__ import annotations

from dataclasses import replace
from fractions import Fraction
from typing import Any, Callable, Sequence

import numpy as np

from fairness.schema import category_key

from .onnx_values import (Column, Columns, Context, DOUBLE, Derived, FLOAT, INT32, INT64, Network, STRING, TYPE_NAMES,
                          describe_value, attrs, column_names, const, last_axis, per_column, per_unit, refuse, single, texts,
                          where)


# Activations that make a network other than a ReLU network: named in their refusal.
NOT_RELU = frozenset({"Tanh", "LeakyRelu", "Elu", "Selu", "Celu", "Softplus", "Softsign", "HardSigmoid", "HardSwish",
                      "PRelu", "Clip", "Gelu", "Mish", "ThresholdedRelu", "Swish", "Sin", "Cos", "Exp", "Log",
                      "Abs", "Sqrt", "Pow", "Erf", "Sign", "Round", "Floor", "Ceil"})


def unknown_operator(op: str) -> str:
    if op in NOT_RELU:
        return (f"a {op} is not exactly representable: only Relu may sit between the affine layers "
                "(and Sigmoid or Softmax close the network)")
    if op == "BatchNormalization":
        return "BatchNormalization is folded only right after an affine layer (Gemm, or MatMul and Add)"
    return (f"operator {op} is not one the importer can represent exactly (preprocessing: Scaler, OneHotEncoder, "
            "LabelEncoder, Concat, FeatureVectorizer, Gather, Slice, ArrayFeatureExtractor, Cast, Reshape, Flatten, "
            "Identity, Add/Sub/Mul/Div by constants; network: Gemm, MatMul, Add, Relu, Sigmoid, Softmax)")


def _identity(node: Any, ins: Sequence[Any], ctx: Context) -> Any:
    return single(ins, node, ctx, Columns, Network, Derived)


def _cast(node: Any, ins: Sequence[Any], ctx: Context) -> Any:
    x = single(ins, node, ctx, Columns, Network, Derived)
    to = int(attrs(node).get("to", FLOAT))
    if isinstance(x, Derived):
        return x
    if isinstance(x, Network):
        if to not in (FLOAT, DOUBLE):
            raise refuse(ctx, node, f"casts {describe_value(x)} to {TYPE_NAMES.get(to, to)}: the scores must stay "
                                     "float or double")
        return x
    if to in (FLOAT, DOUBLE):  # text read as a number, or float <-> double: the bank's own input rounding
        return Columns(tuple(replace(c, text=False) for c in x.cols), x.rank)
    changed = []
    for c in x.cols:
        exact = c.basis == "indicator" or (c.basis == "raw" and c.identity and (to == STRING or not c.text))
        if to not in (STRING, INT64, INT32) or not exact:
            raise refuse(ctx, node, f"casts column {column_names([c])} to {TYPE_NAMES.get(to, to)}, which "
                                     "rounds or reinterprets it")
        changed.append(replace(c, text=to == STRING) if c.basis == "raw" else c)
    return Columns(tuple(changed), x.rank)


def _dropout(node: Any, ins: Sequence[Any], ctx: Context) -> Any:
    """Dropout at inference is the identity; in training mode (or a mode known only at run time) it is random."""
    training = ins[2] if len(ins) > 2 else None
    if training is not None and (not isinstance(training, np.ndarray) or bool(training.reshape(-1)[0])):
        raise refuse(ctx, node, "Dropout in training mode drops units at random: export the model in eval mode")
    if ctx.opset < 7 and not int(attrs(node).get("is_test", 0)):
        raise refuse(ctx, node, "Dropout in training mode drops units at random: export the model in eval mode")
    return _identity(node, ins, ctx)


def _reshape(node: Any, ins: Sequence[Any], ctx: Context) -> Any:
    x = single(ins, node, ctx, Columns, Network, Derived)
    if isinstance(x, Derived):
        return x
    if node.op_type == "Flatten":
        if int(attrs(node).get("axis", 1)) != 1:
            raise refuse(ctx, node, "flattens from an axis other than 1, mixing rows")
        rank = 2
    else:
        shape = ins[1] if len(ins) > 1 else np.array(attrs(node).get("shape", []))
        rank = _reshaped_rank(const(shape, node, ctx, "shape"), x, node, ctx)
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
        raise refuse(ctx, node, f"reshapes {k} columns per record to {dims}, which does not keep one row per record")
    return len(dims)


def _affine(cols: Columns, scale: Sequence[Fraction], shift: Sequence[Fraction], node: Any, ctx: Context) -> Columns:
    """Each column c -> scale * c + shift (exact rationals)."""
    out = []
    for c, s, t in zip(cols.cols, scale, shift):
        if c.basis == "raw" and c.text:
            raise refuse(ctx, node, f"does arithmetic on the text column {column_names([c])}")
        out.append(replace(c, a=c.a * s, b=c.b * s + t, scaled_by=where(node)))
    return Columns(tuple(out), cols.rank)


def _scaler(node: Any, ins: Sequence[Any], ctx: Context) -> Columns:
    """ai.onnx.ml Scaler: y = (x - offset) * scale, per column."""
    x = single(ins, node, ctx, Columns)
    a = attrs(node)
    k = len(x.cols)
    offset = per_column(np.array(a.get("offset", [0.0]), dtype=np.float32), k, node, ctx)
    scale = per_column(np.array(a.get("scale", [1.0]), dtype=np.float32), k, node, ctx)
    return _affine(x, scale, [-o * s for o, s in zip(offset, scale)], node, ctx)


def _arithmetic(node: Any, ins: Sequence[Any], ctx: Context) -> Any:
    """Add/Sub/Mul/Div with a constant on the columns or the logits; 1 - p of a logistic head."""
    op = node.op_type
    left, right = ins[0], ins[1]
    if not isinstance(left, np.ndarray) and not isinstance(right, np.ndarray):
        if isinstance(left, Columns) and isinstance(right, Columns):
            raise refuse(ctx, node, f"combines columns {column_names(left.cols + right.cols)}: a schema encodes "
                                     "each raw column on its own")
        raise refuse(ctx, node, f"combines {describe_value(left)} with {describe_value(right)}: not an affine map of one input")
    const_first = isinstance(left, np.ndarray)
    c, x = (left, right) if const_first else (right, left)
    if isinstance(x, Network) and x.state == "head" and x.head == "Sigmoid" and op == "Sub" and const_first:
        if not np.all(np.asarray(c, dtype=np.float64) == 1.0):
            raise refuse(ctx, node, "subtracts the probability from a number other than 1")
        return Derived(x, "complement")
    if isinstance(x, Columns):
        k = len(x.cols)
        v = per_column(c, k, node, ctx)
        one, zero = [Fraction(1)] * k, [Fraction(0)] * k
        if op == "Add":
            return _affine(x, one, v, node, ctx)
        if op == "Sub":
            return _affine(x, [Fraction(-1)] * k, v, node, ctx) if const_first else _affine(x, one, [-t for t in v], node, ctx)
        if op == "Mul":
            return _affine(x, v, zero, node, ctx)
        if op == "Div" and not const_first and all(v):
            return _affine(x, [1 / t for t in v], zero, node, ctx)
        raise refuse(ctx, node, "divides by a column or by zero: not an affine map")
    if isinstance(x, Network) and x.state in ("matmul", "affine"):
        u = per_unit(c, x.width, node, ctx)
        w, b = x.weights[-1], x.biases[-1]
        if op == "Add":
            return _with_last(x, w, b + u, "affine")
        if op == "Sub":
            return _with_last(x, -w, u - b, "affine") if const_first else _with_last(x, w, b - u, "affine")
        if op == "Mul":
            return _with_last(x, w * u[:, None], b * u, "affine")
        if op == "Div" and not const_first and np.all(u != 0):
            return _with_last(x, w / u[:, None], b / u, "affine")
        raise refuse(ctx, node, "divides by the logits or by zero: not an affine map")
    raise refuse(ctx, node, f"does arithmetic on {describe_value(x)}, which is not part of an affine layer")


def _select(x: Columns, indices: np.ndarray, node: Any, ctx: Context, keep_rank: bool = True) -> Columns:
    k = len(x.cols)
    picked = []
    for i in np.asarray(indices).reshape(-1):
        i = int(i)
        if not -k <= i < k:
            raise refuse(ctx, node, f"selects column {i} of {k}")
        picked.append(x.cols[i])
    rank = x.rank if keep_rank or x.rank == 1 else x.rank - 1
    return Columns(tuple(picked), rank)


def _gather(node: Any, ins: Sequence[Any], ctx: Context) -> Columns:
    x = single(ins, node, ctx, Columns)
    idx = const(ins[1], node, ctx, "indices")
    axis = int(attrs(node).get("axis", 0))
    last_axis(axis, x.rank, node, ctx)
    return _select(x, idx, node, ctx, keep_rank=idx.ndim > 0)


def _array_feature_extractor(node: Any, ins: Sequence[Any], ctx: Context) -> Any:
    """ai.onnx.ml ArrayFeatureExtractor: columns by index, or the class label of an ArgMax (skl2onnx)."""
    x, idx = ins[0], ins[1]
    if isinstance(x, np.ndarray) and isinstance(idx, Derived) and idx.kind == "index":
        return Derived(idx.network, "label", texts(x.reshape(-1).tolist()))
    x = single(ins, node, ctx, Columns)
    return _select(x, const(idx, node, ctx, "indices"), node, ctx)


def _slice(node: Any, ins: Sequence[Any], ctx: Context) -> Columns:
    x = single(ins, node, ctx, Columns)
    a = attrs(node)
    if ctx.opset < 10:
        starts, ends, axes, steps = a["starts"], a["ends"], a.get("axes"), None
    else:
        starts, ends = (const(v, node, ctx, "bounds").tolist() for v in ins[1:3])
        axes = const(ins[3], node, ctx, "axes").tolist() if len(ins) > 3 and ins[3] is not None else None
        steps = const(ins[4], node, ctx, "steps").tolist() if len(ins) > 4 and ins[4] is not None else None
    axes = list(range(len(starts))) if axes is None else axes
    steps = [1] * len(starts) if steps is None else steps
    cols = list(range(len(x.cols)))
    for start, end, axis, step in zip(starts, ends, axes, steps):
        if (axis + x.rank if axis < 0 else axis) == 0 and start == 0 and end >= 2 ** 62 and step == 1:
            continue  # every row
        last_axis(int(axis), x.rank, node, ctx)
        cols = cols[slice(int(start), int(end), int(step))]
    return Columns(tuple(x.cols[i] for i in cols), x.rank)


def _concat(node: Any, ins: Sequence[Any], ctx: Context) -> Any:
    parts = list(ins)
    if len(parts) == 2 and isinstance(parts[0], Derived) and parts[0].kind == "complement" \
            and isinstance(parts[1], Network) and parts[1] is parts[0].network:
        return Derived(parts[1], "scores")  # skl2onnx's (1 - p, p) of a logistic head
    if not all(isinstance(p, Columns) for p in parts):
        raise refuse(ctx, node, "joins " + ", ".join(sorted({describe_value(p) for p in parts})) +
                      ": only preprocessed columns are joined")
    ranks = {p.rank for p in parts}
    if len(ranks) != 1:
        raise refuse(ctx, node, "joins tensors of different ranks")
    rank = ranks.pop()
    last_axis(int(attrs(node).get("axis", 1)), rank, node, ctx)
    return Columns(tuple(c for p in parts for c in p.cols), rank)


def _feature_vectorizer(node: Any, ins: Sequence[Any], ctx: Context) -> Columns:
    """ai.onnx.ml FeatureVectorizer: the inputs' columns side by side, in input order."""
    dims = list(attrs(node).get("inputdimensions", []))
    cols: list[Column] = []
    for i, part in enumerate(ins):
        if not isinstance(part, Columns):
            raise refuse(ctx, node, f"joins {describe_value(part)}: only preprocessed columns are joined")
        if i < len(dims) and dims[i] != len(part.cols):
            raise refuse(ctx, node, f"declares {dims[i]} columns for input {i}, which has {len(part.cols)}")
        cols.extend(part.cols)
    return Columns(tuple(cols), 2)


def _raw_column(x: Columns, node: Any, ctx: Context) -> Column:
    if len(x.cols) != 1 or x.cols[0].basis != "raw" or not x.cols[0].identity:
        raise refuse(ctx, node, "encodes a tensor that is not one raw column as the bank's data holds it")
    return x.cols[0]


def _one_hot_encoder(node: Any, ins: Sequence[Any], ctx: Context) -> Columns:
    """ai.onnx.ml OneHotEncoder of one raw column: one indicator per category, in the encoder's order."""
    x = single(ins, node, ctx, Columns)
    raw = _raw_column(x, node, ctx)
    a = attrs(node)
    if "cats_strings" in a:
        cats = texts(a["cats_strings"])
    elif "cats_int64s" in a:
        cats = tuple(str(int(v)) for v in a["cats_int64s"])
    else:
        raise refuse(ctx, node, "names no categories")
    keys = tuple(category_key(raw.source[0], v) for v in cats)
    if len(set(keys)) != len(keys):
        raise refuse(ctx, node, f"lists a category of column {column_names([raw])} twice")
    cols = tuple(Column(raw.source, "indicator", category=k, categories=keys, encoder=where(node)) for k in keys)
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
            raise refuse(ctx, node, f"maps no label to class {missing[0]}")
        return Derived(x.network, "label", tuple(table[k] for k in before))
    x = single(ins, node, ctx, Columns)
    raw = _raw_column(x, node, ctx)
    try:
        codes = tuple(Fraction(float(v)) for v in values)
    except ValueError:
        raise refuse(ctx, node, f"maps column {column_names([raw])} to text, not to numeric codes") from None
    keys = tuple(category_key(raw.source[0], k) for k in keys)
    if len(set(keys)) != len(keys) or len(set(codes)) != len(codes):
        raise refuse(ctx, node, f"maps column {column_names([raw])} with a repeated category or code")
    col = Column(raw.source, "code", categories=keys, codes=codes, encoder=where(node))
    return Columns((col,), x.rank)


def _label_map(node: Any, ctx: Context) -> tuple[tuple[str, ...], tuple[str, ...]]:
    from onnx import numpy_helper

    a = attrs(node)
    found = {}
    for side in ("keys", "values"):
        for suffix in ("strings", "int64s", "floats"):
            if f"{side}_{suffix}" in a:
                found[side] = texts([category_key(side, v) if not isinstance(v, bytes) else v
                                      for v in a[f"{side}_{suffix}"]])
        if f"{side}_tensor" in a:
            found[side] = texts(numpy_helper.to_array(a[f"{side}_tensor"]).reshape(-1).tolist())
    if "keys" not in found or "values" not in found or len(found["keys"]) != len(found["values"]):
        raise refuse(ctx, node, "has no complete key -> value table")
    return found["keys"], found["values"]


def _with_last(x: Network, w: np.ndarray, b: np.ndarray, state: str) -> Network:
    return replace(x, weights=x.weights[:-1] + (w,), biases=x.biases[:-1] + (b,), state=state)


def _add_layer(x: Any, w: np.ndarray, b: np.ndarray, state: str, rank: int, node: Any, ctx: Context) -> Network:
    """An affine map (W of shape (out, in)) applied to the columns or to the hidden activations."""
    if isinstance(x, Columns):
        if w.shape[1] != len(x.cols):
            raise refuse(ctx, node, f"takes {w.shape[1]} inputs but the preprocessing gives {len(x.cols)} columns")
        return Network(x, (w,), (b,), state, rank)
    if isinstance(x, Network) and x.state == "relu":
        if w.shape[1] != x.width:
            raise refuse(ctx, node, f"takes {w.shape[1]} inputs but the layer before gives {x.width}")
        return replace(x, weights=x.weights + (w,), biases=x.biases + (b,), state=state, rank=rank)
    if isinstance(x, Network) and x.state == "head":
        raise refuse(ctx, node, f"follows the {x.head} head: only Relu may sit between affine layers")
    if isinstance(x, Network):
        raise refuse(ctx, node, "follows an affine layer without a Relu between them")
    raise refuse(ctx, node, f"multiplies {describe_value(x)}, not the activations of one record")


def _matmul(node: Any, ins: Sequence[Any], ctx: Context) -> Network:
    x, w = ins[0], ins[1]
    if isinstance(x, np.ndarray):
        raise refuse(ctx, node, "multiplies a constant by the activations (the weights must be the right operand)")
    w = const(w, node, ctx, "weight")
    if w.ndim != 2:
        raise refuse(ctx, node, f"its weight has shape {list(w.shape)}; a layer's weight is a matrix")
    rank = x.rank if isinstance(x, (Columns, Network)) else 2
    if rank == 1:
        raise refuse(ctx, node, "multiplies a one-dimensional tensor, not one row per record")
    w = np.asarray(w, dtype=np.float64).T
    return _add_layer(x, w, np.zeros(w.shape[0]), "matmul", rank, node, ctx)


def _gemm(node: Any, ins: Sequence[Any], ctx: Context) -> Network:
    """Y = alpha * A' B' + beta * C with A the activations (untransposed) and B, C constants."""
    a = attrs(node)
    x = ins[0]
    if int(a.get("transA", 0)) or isinstance(x, np.ndarray):
        raise refuse(ctx, node, "does not take the activations as its first, untransposed operand")
    w = np.asarray(const(ins[1], node, ctx, "weight"), dtype=np.float64)
    if w.ndim != 2:
        raise refuse(ctx, node, f"its weight has shape {list(w.shape)}; a layer's weight is a matrix")
    w = (w if int(a.get("transB", 0)) else w.T) * float(a.get("alpha", 1.0))
    bias = np.zeros(w.shape[0])
    if len(ins) > 2 and ins[2] is not None:
        bias = per_unit(const(ins[2], node, ctx, "bias"), w.shape[0], node, ctx) * float(a.get("beta", 1.0))
    if isinstance(x, (Columns, Network)) and x.rank != 2:
        raise refuse(ctx, node, "takes a tensor that is not [N, k]")
    return _add_layer(x, w, bias, "affine", 2, node, ctx)


def _relu(node: Any, ins: Sequence[Any], ctx: Context) -> Network:
    x = ins[0]
    if isinstance(x, Network) and x.state in ("matmul", "affine"):
        return replace(x, state="relu")
    raise refuse(ctx, node, f"applies to {describe_value(x)}; Relu must follow an affine layer")


def _head(node: Any, ins: Sequence[Any], ctx: Context) -> Network:
    """Sigmoid / Softmax / LogSoftmax closing the network: monotone, so the logits decide."""
    x = ins[0]
    if not (isinstance(x, Network) and x.state in ("matmul", "affine")):
        raise refuse(ctx, node, f"applies to {describe_value(x)}; it may only close the network, right after "
                                 "its last affine layer")
    if node.op_type == "Sigmoid" and x.width > 1:
        raise refuse(ctx, node, f"a Sigmoid over {x.width} outputs is a multi-label model, not one decision "
                                 "between classes")
    if node.op_type != "Sigmoid":
        axis = int(attrs(node).get("axis", -1 if ctx.opset >= 13 else 1))
        axis = axis + x.rank if axis < 0 else axis
        if not (axis == x.rank - 1 or (ctx.opset < 13 and axis == 1)):
            raise refuse(ctx, node, f"normalises over axis {axis}, not over the classes of one record")
        if x.width < 2:
            raise refuse(ctx, node, "normalises one output, which is always 1: the network decides nothing")
    return replace(x, state="head", head=node.op_type)


def _batch_normalization(node: Any, ins: Sequence[Any], ctx: Context) -> Network:
    """Inference-mode BatchNormalization right after an affine layer, folded into it (a note says so)."""
    x = ins[0]
    if not (isinstance(x, Network) and x.state in ("matmul", "affine") and x.rank == 2):
        raise refuse(ctx, node, unknown_operator("BatchNormalization"))
    if int(attrs(node).get("training_mode", 0)):
        raise refuse(ctx, node, "BatchNormalization in training mode uses each batch's statistics: export the "
                                 "model in eval mode")
    gamma, beta, mean, var = (per_unit(const(v, node, ctx, "statistics"), x.width, node, ctx) for v in ins[1:5])
    factor = gamma / np.sqrt(var + float(attrs(node).get("epsilon", 1e-5)))
    w, b = x.weights[-1], x.biases[-1]
    folded = _with_last(x, w * factor[:, None], (b - mean) * factor + beta, "affine")
    note = (f"{where(node)} (inference mode) folded into the affine layer before it: "
            "W' = W * gamma / sqrt(var + eps), b' = (b - mean) * gamma / sqrt(var + eps) + beta")
    return replace(folded, notes=x.notes + (note,))


def _argmax(node: Any, ins: Sequence[Any], ctx: Context) -> Derived:
    x = ins[0]
    rank = x.rank if isinstance(x, Network) else 2
    last_axis(int(attrs(node).get("axis", 0)), rank, node, ctx)
    if isinstance(x, Network) and x.scores and x.width >= 2:
        return Derived(x, "index")
    if isinstance(x, Derived) and x.kind == "scores":
        return Derived(x.network, "index")
    raise refuse(ctx, node, f"takes the largest of {describe_value(x)}, not of two or more class scores")


def _zipmap(node: Any, ins: Sequence[Any], ctx: Context) -> Derived:
    x = ins[0]
    a = attrs(node)
    labels = a.get("classlabels_strings") or a.get("classlabels_int64s")
    classes = texts(labels) if labels is not None else None
    if isinstance(x, Network) and x.state == "head" and x.width >= 2:
        return Derived(x, "map", classes)
    if isinstance(x, Derived) and x.kind == "scores":
        return Derived(x.network, "map", classes)
    raise refuse(ctx, node, f"maps {describe_value(x)}, not class probabilities")


def _label_shape(node: Any, ins: Sequence[Any], ctx: Context) -> Derived:
    """Squeeze / Unsqueeze of a label or index (skl2onnx and converters reshape labels)."""
    return single(ins, node, ctx, Derived)


HANDLERS: dict[str, Callable[[Any, Sequence[Any], Context], Any]] = {
    "Identity": _identity, "Cast": _cast, "Dropout": _dropout, "Reshape": _reshape, "Flatten": _reshape,
    "Scaler": _scaler, "Add": _arithmetic, "Sub": _arithmetic, "Mul": _arithmetic, "Div": _arithmetic,
    "Gather": _gather, "ArrayFeatureExtractor": _array_feature_extractor, "Slice": _slice, "Concat": _concat,
    "FeatureVectorizer": _feature_vectorizer, "OneHotEncoder": _one_hot_encoder, "LabelEncoder": _label_encoder,
    "MatMul": _matmul, "Gemm": _gemm, "Relu": _relu, "Sigmoid": _head, "Softmax": _head, "LogSoftmax": _head,
    "BatchNormalization": _batch_normalization, "ArgMax": _argmax, "ZipMap": _zipmap,
    "Squeeze": _label_shape, "Unsqueeze": _label_shape,
}
