"""ONNX files as banks export them, for the ONNX importer's tests.

Small synthetic credit data (a few hundred rows: numbers, categories, a
sensitive column), fitted scikit-learn pipelines exported with skl2onnx, torch
networks exported with torch.onnx.export, and a few hand-built graphs for the
shapes no exporter writes. Everything trains in well under a second.
"""
from __future__ import annotations

import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

import numpy as np
import pandas as pd

from prover_service.importers import BankFacts

NUMERIC = ("age", "income", "kids")
DOMAINS = {"age": (18.0, 80.0), "income": (0.0, 12000.0), "kids": (0.0, 4.0)}


def credit_frame(n: int = 300, seed: int = 0) -> pd.DataFrame:
    """Raw records: two continuous numbers, a small count, three categorical columns (sex is sensitive)."""
    rng = np.random.default_rng(seed)
    return pd.DataFrame({
        "age": rng.integers(18, 80, n).astype(float),
        "income": np.round(rng.normal(4000, 1500, n).clip(0, 12000), 2),
        "purpose": rng.choice(["car", "education", "house"], n),
        "sex": rng.choice(["female", "male"], n),
        "region": rng.choice(["east", "north", "south"], n),
        "kids": rng.integers(0, 4, n).astype(float),
    })


def binary_target(frame: pd.DataFrame, seed: int = 1) -> np.ndarray:
    rng = np.random.default_rng(seed)
    score = (frame["income"] / 1500 - frame["age"] / 30 + (frame["purpose"] == "house") * 1.0
             + (frame["sex"] == "male") * 0.5 + rng.normal(0, 0.7, len(frame)))
    return (score > np.median(score)).astype(int).to_numpy()


def three_class_target(frame: pd.DataFrame, seed: int = 2) -> np.ndarray:
    rng = np.random.default_rng(seed)
    score = frame["income"] / 1500 + frame["kids"] * 0.3 - (frame["region"] == "east") + rng.normal(0, 0.5, len(frame))
    return np.digitize(score, np.quantile(score, [1 / 3, 2 / 3]))


def records(frame: pd.DataFrame) -> list[dict[str, str]]:
    """The rows as a CSV gives them: text."""
    return [{c: _text(v) for c, v in row.items()} for row in frame.to_dict("records")]


def _text(v: Any) -> str:
    """A number as a bank's CSV writes it: whole numbers without a fraction (a code 1 is "1")."""
    if isinstance(v, (float, np.floating)):
        return str(int(v)) if float(v).is_integer() else repr(float(v))
    return str(v)


def facts(sensitive: Sequence[str] = ("sex",), **changes: Any) -> BankFacts:
    base = dict(name="synthetic-credit", sensitive=tuple(sensitive), domains=dict(DOMAINS),
                units={"income": "EUR"}, label_column="decision")
    base.update(changes)
    return BankFacts(**base)


def quiet_fit(estimator: Any, X: Any, y: Any) -> Any:
    from sklearn.exceptions import ConvergenceWarning

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        return estimator.fit(X, y)


# --------------------------------------------------------------------------- scikit-learn pipelines


def column_transformer(**overrides: Any) -> Any:
    """StandardScaler, MinMaxScaler, OneHotEncoder(drop="first"), OneHotEncoder(drop="if_binary") on a
    binary and on a three-valued column, passthrough: every step a bank's ColumnTransformer commonly has."""
    from sklearn.compose import ColumnTransformer
    from sklearn.preprocessing import MinMaxScaler, OneHotEncoder, StandardScaler

    steps = {
        "age": ("age", StandardScaler(), ["age"]),
        "income": ("income", MinMaxScaler(), ["income"]),
        "purpose": ("purpose", OneHotEncoder(drop="first"), ["purpose"]),
        "sex": ("sex", OneHotEncoder(drop="if_binary"), ["sex"]),
        "region": ("region", OneHotEncoder(drop="if_binary"), ["region"]),
        "kids": ("kids", "passthrough", ["kids"]),
    }
    steps.update(overrides)
    return ColumnTransformer([s for s in steps.values() if s is not None])


def mlp_pipeline(frame: pd.DataFrame, y: np.ndarray, *, hidden: tuple[int, ...] = (6,), activation: str = "relu",
                 transformer: Any = None) -> Any:
    from sklearn.neural_network import MLPClassifier
    from sklearn.pipeline import Pipeline

    pipe = Pipeline([("columns", transformer if transformer is not None else column_transformer()),
                     ("mlp", MLPClassifier(hidden, activation=activation, max_iter=300, random_state=0))])
    return quiet_fit(pipe, frame, y)


def export_sklearn(pipe: Any, frame: pd.DataFrame, path: Path, *, zipmap: bool = False, double: bool = False) -> Path:
    """skl2onnx as a bank runs it: one graph input per raw column (text for categories, numbers else)."""
    from skl2onnx import convert_sklearn
    from skl2onnx.common.data_types import DoubleTensorType, FloatTensorType, Int64TensorType, StringTensorType

    number = DoubleTensorType if double else FloatTensorType
    types = []
    for c in frame.columns:
        kind = frame[c].dtype.kind
        tensor = StringTensorType if kind in "OUS" else Int64TensorType if kind in "iu" else number
        types.append((c, tensor([None, 1])))
    options = {id(pipe.steps[-1][1]): {"zipmap": zipmap}}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = convert_sklearn(pipe, initial_types=types, options=options, target_opset={"": 17, "ai.onnx.ml": 3})
    path.write_bytes(model.SerializeToString())
    return path


def export_sklearn_array(pipe: Any, width: int, path: Path) -> Path:
    """skl2onnx of a pipeline fitted on an unnamed numeric array: ONE tensor input of `width` columns."""
    from skl2onnx import convert_sklearn
    from skl2onnx.common.data_types import FloatTensorType

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = convert_sklearn(pipe, initial_types=[("X", FloatTensorType([None, width]))],
                                options={id(pipe.steps[-1][1]): {"zipmap": False}},
                                target_opset={"": 17, "ai.onnx.ml": 3})
    path.write_bytes(model.SerializeToString())
    return path


# --------------------------------------------------------------------------- torch networks


def torch_network(n_inputs: int, n_outputs: int, *, hidden: Sequence[int] = (6,), activation: Any = None,
                  head: Any = None, seed: int = 0, X: np.ndarray | None = None, y: np.ndarray | None = None) -> Any:
    """nn.Sequential(Linear, ReLU, ..., Linear[, head]), trained a little on (X, y) when given."""
    import torch
    from torch import nn

    torch.manual_seed(seed)
    sizes = [n_inputs, *hidden]
    layers: list[Any] = []
    for i, o in zip(sizes, sizes[1:]):
        layers += [nn.Linear(i, o), activation() if activation is not None else nn.ReLU()]
    layers.append(nn.Linear(sizes[-1], n_outputs))
    net = nn.Sequential(*layers)
    if X is not None and y is not None:
        _train(net, X, y, n_outputs)
    if head is not None:
        net = nn.Sequential(*net, head)
    return net.eval()


def _train(net: Any, X: np.ndarray, y: np.ndarray, n_outputs: int, steps: int = 150) -> None:
    import torch

    Xt = torch.tensor(X, dtype=torch.float32)
    yt = torch.tensor(y)
    opt = torch.optim.Adam(net.parameters(), lr=0.03)
    loss_fn = torch.nn.BCEWithLogitsLoss() if n_outputs == 1 else torch.nn.CrossEntropyLoss()
    for _ in range(steps):
        opt.zero_grad()
        out = net(Xt)
        loss = loss_fn(out[:, 0], yt.float()) if n_outputs == 1 else loss_fn(out, yt.long())
        loss.backward()
        opt.step()


def export_torch(net: Any, n_inputs: int, path: Path, *, batch: int | None = None, three_d: bool = False,
                 opset: int = 17, training: bool = False, initializers_as_inputs: bool = False,
                 dynamo: bool = False) -> Path:
    """torch.onnx.export (TorchScript exporter): Gemm for a 2-D input, MatMul + Add for [N, 1, k];
    a dynamic batch axis unless `batch` fixes it; the weights also listed as graph inputs, as older
    exports did, with `initializers_as_inputs`. `dynamo`: torch's default exporter instead (torch.export
    and onnxscript, opset 18 or later, constants folded by its optimiser)."""
    import torch

    shape = (batch or 2, 1, n_inputs) if three_d else (batch or 2, n_inputs)
    if dynamo:
        return _export_dynamo(net, shape, path, batch is None, max(opset, 18))
    kwargs: dict[str, Any] = {}
    if batch is None:
        kwargs["dynamic_axes"] = {"x": {0: "rows"}, "y": {0: "rows"}}
    if training:
        kwargs["training"] = torch.onnx.TrainingMode.TRAINING
        kwargs["do_constant_folding"] = False
        net.train()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(net, (torch.zeros(shape),), str(path), input_names=["x"], output_names=["y"],
                          opset_version=opset, dynamo=False, keep_initializers_as_inputs=initializers_as_inputs,
                          **kwargs)
    net.eval()
    return path


def _export_dynamo(net: Any, shape: tuple[int, ...], path: Path, dynamic: bool, opset: int) -> Path:
    """torch.onnx.export(dynamo=True): what torch 2.9 and later write by default."""
    import contextlib
    import io

    import torch

    kwargs: dict[str, Any] = {}
    if dynamic:
        kwargs["dynamic_shapes"] = ({0: torch.export.Dim("rows")},)
    with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()):
        warnings.simplefilter("ignore")
        torch.onnx.export(net, (torch.zeros(shape),), str(path), input_names=["x"], output_names=["y"],
                          opset_version=opset, dynamo=True, **kwargs)
    return path


# --------------------------------------------------------------------------- onnxruntime's own logits


def head_input(path: Path) -> str | None:
    """The tensor the graph's Sigmoid / Softmax reads: the logits (None when the graph ends in logits)."""
    import onnx

    for node in onnx.load(str(path)).graph.node:
        if node.op_type in ("Sigmoid", "Softmax"):
            return node.input[0]
    return None


def onnx_logits(path: Path, feeds: dict[str, np.ndarray]) -> np.ndarray:
    """onnxruntime's float32 logits on `feeds`: the graph's logits tensor made an output of a copy of it."""
    import onnx
    import onnxruntime as ort

    model = onnx.load(str(path))
    name = head_input(path) or model.graph.output[0].name
    if name not in [o.name for o in model.graph.output]:
        model.graph.output.append(onnx.helper.make_empty_tensor_value_info(name))
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    out = session.run([name], feeds)[0]
    return np.asarray(out, dtype=np.float64).reshape(out.shape[0], -1)


def column_feeds(frame: pd.DataFrame, double: bool = False) -> dict[str, np.ndarray]:
    """A skl2onnx pipeline's inputs straight from the DataFrame (one [N, 1] array per column)."""
    feeds = {}
    for c in frame.columns:
        kind = frame[c].dtype.kind
        dtype = object if kind in "OUS" else np.int64 if kind in "iu" else np.float64 if double else np.float32
        feeds[c] = frame[c].to_numpy().astype(dtype).reshape(-1, 1)
    return feeds


def as_logit_pairs(logits: np.ndarray) -> np.ndarray:
    """One logit z per row as the pair (0, z), the importer's two-logit form."""
    return np.hstack([np.zeros_like(logits), logits]) if logits.shape[1] == 1 else logits


# --------------------------------------------------------------------------- hand-built graphs


@dataclass(frozen=True)
class Layer:
    w: np.ndarray  # (in, out), as MatMul takes it
    b: np.ndarray


def small_layers(n_inputs: int, hidden: int = 3, n_outputs: int = 2, seed: int = 0) -> tuple[Layer, Layer]:
    rng = np.random.default_rng(seed)
    return (Layer(rng.normal(size=(n_inputs, hidden)).astype(np.float32), rng.normal(size=hidden).astype(np.float32)),
            Layer(rng.normal(size=(hidden, n_outputs)).astype(np.float32),
                  rng.normal(size=n_outputs).astype(np.float32)))


def graph_model(nodes: list[Any], inputs: list[Any], outputs: list[str], constants: dict[str, np.ndarray],
                path: Path) -> Path:
    """A hand-built ONNX model (opset 17, ai.onnx.ml 3): what an unusual exporter or a hand edit writes."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    outs = [helper.make_tensor_value_info(o, TensorProto.FLOAT, [None, None]) for o in outputs]
    graph = helper.make_graph(nodes, "bank", inputs, outs,
                              [numpy_helper.from_array(v, k) for k, v in constants.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("ai.onnx.ml", 3)])
    model.ir_version = 8
    onnx.save(model, str(path))
    return path


def float_input(name: str, width: int = 1) -> Any:
    from onnx import TensorProto, helper

    return helper.make_tensor_value_info(name, TensorProto.FLOAT, [None, width])


def mlp_nodes(x: str, layers: Sequence[Layer], prefix: str = "") -> tuple[list[Any], dict[str, np.ndarray], str]:
    """MatMul + Add (+ Relu between) over tensor `x`; returns the nodes, their constants and the logits' name."""
    from onnx import helper

    nodes, consts = [], {}
    current = x
    for i, layer in enumerate(layers):
        w, b = f"{prefix}W{i}", f"{prefix}B{i}"
        consts[w], consts[b] = layer.w, layer.b
        nodes += [helper.make_node("MatMul", [current, w], [f"{prefix}mm{i}"], name=f"{prefix}MatMul{i}"),
                  helper.make_node("Add", [f"{prefix}mm{i}", b], [f"{prefix}z{i}"], name=f"{prefix}Add{i}")]
        current = f"{prefix}z{i}"
        if i < len(layers) - 1:
            nodes.append(helper.make_node("Relu", [current], [f"{prefix}h{i}"], name=f"{prefix}Relu{i}"))
            current = f"{prefix}h{i}"
    return nodes, consts, current
