"""Walking a bank's ONNX graph: the file loaded and its opsets checked, its inputs, every node followed
in graph order (constants evaluated by the `onnx` reference evaluator, every other node translated by
`onnx_operators`), and the one network whose scores make the decision.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np

from fairness.errors import ModelError

from .onnx_operators import HANDLERS, unknown_operator
from .onnx_values import STRING, TYPE_NAMES, Column, Columns, Context, Derived, Network, describe_value, refuse


ONNX_DOMAINS = ("", "ai.onnx", "ai.onnx.ml")


def load_model(path: Path) -> Any:
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


def opset_of(model: Any, domain: str) -> int:
    for o in model.opset_import:
        if o.domain == domain or (domain == "" and o.domain == "ai.onnx"):
            return int(o.version)
    return 0


def constants(graph: Any) -> dict[str, np.ndarray]:
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


def graph_inputs(graph: Any, consts: Mapping[str, np.ndarray], source: str) -> list[GraphInput]:
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


def follow(model: Any, source: str, inputs: Sequence[GraphInput]) -> dict[str, Any]:
    """The value of every tensor, in graph order (ONNX graphs are topologically sorted)."""
    graph = model.graph
    ctx = Context(source, opset_of(model, ""), opset_of(model, "ai.onnx.ml"))
    values: dict[str, Any] = dict(constants(graph))
    for gi in inputs:
        values[gi.name] = Columns(tuple(Column((gi.name, j), "raw", text=gi.elem_type == STRING)
                                        for j in range(gi.width)), gi.rank)
    for node in graph.node:
        if node.domain not in ONNX_DOMAINS:
            raise refuse(ctx, node, f"operator domain {node.domain!r} is not ai.onnx or ai.onnx.ml")
        for name in node.input:
            if name and name not in values:
                raise refuse(ctx, node, f"its input {name!r} is not a tensor the importer follows "
                                         "(an auxiliary output of another node, or a missing one)")
        ins = [values[n] if n else None for n in node.input]
        if all(v is None or isinstance(v, np.ndarray) for v in ins) and not node.op_type.startswith("Random"):
            for name, value in zip(node.output, _evaluate(node, ins, ctx)):
                values[name] = value
            continue
        handler = HANDLERS.get(node.op_type)
        if handler is None:
            raise refuse(ctx, node, unknown_operator(node.op_type))
        values[node.output[0]] = handler(node, ins, ctx)
    return values


def _evaluate(node: Any, ins: Sequence[np.ndarray | None], ctx: Context) -> list[np.ndarray]:
    """A node over constants only (Constant, a shape computation): evaluated by the onnx reference runtime."""
    from onnx.reference import ReferenceEvaluator

    try:
        ev = ReferenceEvaluator(node, opsets={"": ctx.opset or 13, "ai.onnx.ml": ctx.ml_opset or 3})
        feeds = {n: v for n, v in zip(node.input, ins) if n}
        return [np.asarray(v) for v in ev.run(None, feeds)]
    except Exception as exc:
        raise refuse(ctx, node, f"cannot evaluate it over its constant inputs ({type(exc).__name__})") from None


@dataclass(frozen=True)
class Decision:
    """How the bank's runtime output becomes a class index: a label, an index, or scores."""

    output: str
    kind: str                          # "label", "index" or "scores"
    classes: tuple[str, ...] | None    # label: the class value of each index
    threshold: float | None = None     # scores of one column: class 1 when above it


def find_decision(model: Any, values: Mapping[str, Any], source: str) -> tuple[Network, Decision]:
    """The one network every graph output comes from, and the output the bank's runtime decides by."""
    found: list[tuple[str, Any]] = []
    for out in model.graph.output:
        v = values.get(out.name)
        if not isinstance(v, (Network, Derived)):
            raise ModelError(f"{source}: graph output {out.name!r} is {describe_value(v)}, not a score or label of the "
                             "network")
        found.append((out.name, v))
    networks = [(name, v if isinstance(v, Network) else v.network) for name, v in found]
    name0, net = networks[0]
    for name, other in networks[1:]:
        if not _same_scores(net, other):
            raise ModelError(f"{source}: graph outputs {name0!r} and {name!r} come from different networks; "
                             "their decisions could conflict")
    if not net.scores:
        raise ModelError(f"{source}: graph output {name0!r} is {describe_value(net)}: the network must end in logits "
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
