"""Import of a bank's network file as a `FloatMLP`: PyTorch (state dict, whole nn.Sequential, TorchScript),
ONNX and a pickled scikit-learn MLPClassifier (`import_model` by format name, `MODEL_FORMATS`).

torch, onnx and scikit-learn are imported only inside the import functions, so this module (and
`fairness`) loads without them.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np

from fairness.errors import ModelError
from fairness.model_formats import MODEL_FORMATS
from fairness.network import FloatMLP


def _check_shape(model: FloatMLP, n_inputs: int | None, n_classes: int | None, hidden_sizes: Sequence[int] | None, source: str) -> FloatMLP:
    if n_inputs is not None and model.n_inputs != n_inputs:
        raise ModelError(f"{source}: network takes {model.n_inputs} inputs, expected {n_inputs}")
    if n_classes is not None and model.n_classes != n_classes:
        raise ModelError(f"{source}: network has {model.n_classes} outputs, expected {n_classes}")
    if hidden_sizes is not None and tuple(model.hidden_sizes) != tuple(hidden_sizes):
        raise ModelError(f"{source}: hidden sizes {model.hidden_sizes}, expected {tuple(hidden_sizes)}")
    return model


def mlp_from_state_dict(state: Mapping[str, Any], source: str = "state dict") -> FloatMLP:
    """A FloatMLP from a state dict of Linear layers in order (e.g. nn.Sequential's
    '0.weight', '0.bias', '2.weight', ...). Any non-Linear parameter is rejected."""
    layers: list[list[Any]] = []  # [prefix, weight, bias]
    by_prefix: dict[str, list[Any]] = {}
    for key, value in state.items():
        prefix, _, leaf = str(key).rpartition(".")
        arr = value.detach().cpu().double().numpy() if hasattr(value, "detach") else np.asarray(value, dtype=np.float64)
        if leaf not in ("weight", "bias"):
            raise ModelError(f"{source}: unsupported parameter {key!r} (only Linear weight/bias are allowed)")
        if prefix not in by_prefix:
            by_prefix[prefix] = [prefix, None, None]
            layers.append(by_prefix[prefix])
        slot = 1 if leaf == "weight" else 2
        if by_prefix[prefix][slot] is not None:
            raise ModelError(f"{source}: parameter {key!r} given twice")
        by_prefix[prefix][slot] = arr
    if not layers:
        raise ModelError(f"{source}: no Linear layers found")
    ws, bs = [], []
    for prefix, w, b in layers:
        if w is None:
            raise ModelError(f"{source}: layer {prefix!r} has a bias but no weight")
        if w.ndim != 2:
            raise ModelError(f"{source}: {prefix}.weight has shape {w.shape}; only Linear layers are supported")
        ws.append(w)
        bs.append(np.zeros(w.shape[0]) if b is None else b)
    try:
        return FloatMLP(ws, bs)
    except ModelError as exc:
        raise ModelError(f"{source}: {exc}") from None


def import_torch(path: str | os.PathLike[str], *, n_inputs: int | None = None, n_classes: int | None = None,
                 hidden_sizes: Sequence[int] | None = None) -> FloatMLP:
    """Load a .pt file holding a state dict (of an nn.Sequential of Linear/ReLU, or
    any plain dict of weight/bias tensors in layer order), a checkpoint dict with
    a 'state_dict' entry, or a whole nn.Sequential of Linear and ReLU.

    Loading uses torch's weights-only unpickler (no arbitrary code runs; see
    `load_torch_file`). One output logit z becomes the two logits (0, z).
    """
    import torch  # lazy: training/import extra

    p = Path(path)
    obj = load_torch_file(p)
    if isinstance(obj, torch.nn.Module):
        model = _mlp_from_sequential(obj, str(p))
    elif isinstance(obj, Mapping):
        if "state_dict" in obj and isinstance(obj["state_dict"], Mapping):
            obj = obj["state_dict"]
        model = _classifier_logits(mlp_from_state_dict(obj, str(p)), None, str(p))
    else:
        raise ModelError(f"{p}: holds a {type(obj).__name__}, expected a state dict or an nn.Sequential")
    return _check_shape(model, n_inputs, n_classes, hidden_sizes, str(p))


def load_torch_file(path: str | os.PathLike[str]) -> Any:
    """What torch.save wrote: a state dict, a checkpoint dict, or a whole nn.Sequential.

    Loading uses torch's weights-only unpickler (no code from the file runs); the only module classes allowed
    are those a Linear/ReLU classifier is made of. A module of another class is named in the refusal.
    """
    import re

    import torch

    p = Path(path)
    if not p.is_file():
        raise ModelError(f"{p}: no such file")
    nn = torch.nn
    allowed = [nn.Sequential, nn.Linear, nn.ReLU, nn.Sigmoid, nn.Softmax, nn.LogSoftmax, nn.Identity, nn.Dropout]
    try:
        with torch.serialization.safe_globals(allowed):
            return torch.load(p, map_location="cpu", weights_only=True)
    except Exception as exc:  # torch raises many types for a bad file
        text = str(exc)
        other = re.search(r"Unsupported global: GLOBAL (\S+)", text)
        if other:
            raise ModelError(f"{p}: holds a pickled {other.group(1)}, which is not an nn.Sequential of Linear and "
                             "ReLU: save the nn.Sequential itself, its state_dict(), or TorchScript") from None
        raise ModelError(f"{p}: cannot load as a PyTorch weights file ({type(exc).__name__}: "
                         f"{text.splitlines()[0] if text else ''})") from None


def _mlp_from_sequential(module: Any, source: str) -> FloatMLP:
    """An nn.Sequential (or its TorchScript) as a classifier's logits: one logit z becomes (0, z)."""
    return _classifier_logits(*torch_layers(module, source), source)


# A final module a classifier may end with: it does not change which class wins.
TORCH_HEADS = ("Sigmoid", "Softmax", "LogSoftmax")
TORCH_NO_OPS = ("Identity", "Dropout")  # the identity in evaluation mode, as the bank serves


def torch_layers(module: Any, source: str) -> tuple[FloatMLP, str | None]:
    """The Linear/ReLU stack of an nn.Sequential or a TorchScript Sequential, float64, with its final head
    (Sigmoid, Softmax, LogSoftmax or None). The logits are kept as the module computes them (one or per class)."""
    kinds_children = [(getattr(c, "original_name", type(c).__name__), c) for _, c in module.named_children()]
    name = getattr(module, "original_name", type(module).__name__)
    if name != "Sequential" or not kinds_children:
        raise ModelError(f"{source}: module is a {name}, expected nn.Sequential of Linear and ReLU")
    layers = [(i, k, c) for i, (k, c) in enumerate(kinds_children) if k not in TORCH_NO_OPS]
    head = None
    if layers and layers[-1][1] in TORCH_HEADS:
        i, head, child = layers.pop()
        dim = getattr(child, "dim", None)
        if head != "Sigmoid" and dim not in (None, 1, -1):
            raise ModelError(f"{source}: {head} at position {i} is taken over dim {dim}, not over the classes")
    for i, kind, _ in layers:
        if kind not in ("Linear", "ReLU"):
            raise ModelError(f"{source}: unsupported module {kind} at position {i} (only Linear and ReLU, and a "
                             f"final {', '.join(TORCH_HEADS)})")
    ws, bs = [], []
    for n, (i, kind, child) in enumerate(layers):
        last = n == len(layers) - 1
        if kind == "Linear":
            if not last and layers[n + 1][1] != "ReLU":
                raise ModelError(f"{source}: Linear at position {i} must be followed by ReLU (or be last)")
            ws.append(child.weight.detach().double().numpy())
            bias = getattr(child, "bias", None)
            bs.append(bias.detach().double().numpy() if bias is not None else np.zeros(ws[-1].shape[0]))
        elif kind == "ReLU":
            if n == 0 or layers[n - 1][1] != "Linear":
                raise ModelError(f"{source}: ReLU at position {i} must follow a Linear layer")
            if last:
                raise ModelError(f"{source}: the last layer must be Linear (logits), not ReLU")
    if not ws:
        raise ModelError(f"{source}: no Linear layers found")
    try:
        return FloatMLP(ws, bs), head
    except ModelError as exc:
        raise ModelError(f"{source}: {exc}") from None


def _classifier_logits(model: FloatMLP, head: str | None, source: str) -> FloatMLP:
    """A network's logits as the statement compares them: a logistic head or one logit z -> (0, z)."""
    if head == "Sigmoid" or model.n_classes == 1:
        if head not in (None, "Sigmoid"):
            raise ModelError(f"{source}: a {head} over one output decides nothing")
        w, b = _binary_logits(model.weights[-1], model.biases[-1], source)
        return FloatMLP((*model.weights[:-1], w), (*model.biases[:-1], b))
    return model


def import_onnx(path: str | os.PathLike[str], *, n_inputs: int | None = None, n_classes: int | None = None,
                hidden_sizes: Sequence[int] | None = None) -> FloatMLP:
    """Load an ONNX graph that is a chain of Gemm (or MatMul + Add) layers with
    Relu between them, the last layer giving logits. Flatten/Identity nodes
    that do not change a 2-D input are tolerated; anything else is rejected."""
    import onnx  # lazy: training/import extra
    from onnx import numpy_helper

    p = Path(path)
    if not p.is_file():
        raise ModelError(f"{p}: no such file")
    try:
        graph = onnx.load(str(p)).graph
    except Exception as exc:
        raise ModelError(f"{p}: cannot parse as ONNX ({type(exc).__name__})") from None
    # Numeric constants only: a classifier's label table (e.g. class names as text) is not a parameter.
    consts = {t.name: a.astype(np.float64) for t in graph.initializer
              if np.issubdtype((a := numpy_helper.to_array(t)).dtype, np.number)}
    for node in graph.node:
        if node.op_type == "Constant":
            for a in node.attribute:
                if a.name == "value":
                    consts[node.output[0]] = numpy_helper.to_array(a.t).astype(np.float64)
    real_inputs = [i.name for i in graph.input if i.name not in consts]
    if len(real_inputs) != 1:
        raise ModelError(f"{p}: expected exactly one graph input, found {real_inputs}")
    current = real_inputs[0]
    ws: list[np.ndarray] = []
    bs: list[np.ndarray] = []
    pending_matmul: np.ndarray | None = None
    relu_after_last = True  # the input is not yet a layer output
    head = None
    for node in graph.node:
        op = node.op_type
        if op == "Constant":
            continue
        data_inputs = [i for i in node.input if i and i not in consts]
        if data_inputs != [current]:
            raise ModelError(f"{p}: node {node.name or op} does not continue the layer chain (inputs {list(node.input)})")
        attrs = {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}
        if op == "Gemm":
            if pending_matmul is not None:
                raise ModelError(f"{p}: MatMul without its Add before Gemm")
            if not relu_after_last:
                raise ModelError(f"{p}: two linear layers without Relu between them")
            if node.input[0] != current or attrs.get("transA", 0):
                raise ModelError(f"{p}: Gemm must take the activations as its first, untransposed input")
            w = consts.get(node.input[1])
            if w is None or w.ndim != 2:
                raise ModelError(f"{p}: Gemm weight {node.input[1]!r} is not a constant matrix")
            w = w if attrs.get("transB", 0) else w.T
            w = w * float(attrs.get("alpha", 1.0))
            b = consts.get(node.input[2]) if len(node.input) > 2 and node.input[2] else np.zeros(w.shape[0])
            if b is None:
                raise ModelError(f"{p}: Gemm bias {node.input[2]!r} is not a constant")
            b = b.reshape(-1) * float(attrs.get("beta", 1.0))
            if b.size == 1:
                b = np.full(w.shape[0], b[0])
            ws.append(w)
            bs.append(b)
            relu_after_last = False
        elif op == "MatMul":
            if pending_matmul is not None or not relu_after_last:
                raise ModelError(f"{p}: MatMul in an unexpected position")
            if node.input[0] != current:
                raise ModelError(f"{p}: MatMul must multiply the activations on the left")
            w = consts.get(node.input[1])
            if w is None or w.ndim != 2:
                raise ModelError(f"{p}: MatMul weight {node.input[1]!r} is not a constant matrix")
            pending_matmul = w.T
        elif op == "Add":
            if pending_matmul is None:
                raise ModelError(f"{p}: Add without a preceding MatMul")
            other = [i for i in node.input if i != current]
            b = consts.get(other[0]) if len(other) == 1 else None
            if b is None:
                raise ModelError(f"{p}: Add must add a constant bias")
            b = b.reshape(-1)
            if b.size == 1:
                b = np.full(pending_matmul.shape[0], b[0])
            ws.append(pending_matmul)
            bs.append(b)
            pending_matmul = None
            relu_after_last = False
        elif op == "Relu":
            if pending_matmul is not None:
                ws.append(pending_matmul)
                bs.append(np.zeros(pending_matmul.shape[0]))
                pending_matmul = None
            if relu_after_last:
                raise ModelError(f"{p}: Relu must follow a linear layer")
            relu_after_last = True
        elif op in ("Flatten", "Identity", "Cast"):
            if ws or pending_matmul is not None:
                raise ModelError(f"{p}: {op} is only allowed before the first layer")
        elif op in ("Sigmoid", "Softmax") and (ws or pending_matmul is not None) and not relu_after_last:
            # A classifier's probability head (e.g. scikit-learn through skl2onnx): the logits end here.
            if pending_matmul is not None:
                ws.append(pending_matmul)
                bs.append(np.zeros(pending_matmul.shape[0]))
                pending_matmul = None
            head = node
            break
        else:
            raise ModelError(f"{p}: unsupported ONNX operator {op} (only Gemm, MatMul, Add, Relu)")
        current = node.output[0]
    if pending_matmul is not None:
        ws.append(pending_matmul)
        bs.append(np.zeros(pending_matmul.shape[0]))
        relu_after_last = False
    if relu_after_last:
        raise ModelError(f"{p}: the graph must end with a linear layer (logits), not Relu")
    if head is None:
        outputs = [o.name for o in graph.output]
        if outputs != [current]:
            raise ModelError(f"{p}: graph output {outputs} is not the end of the layer chain ({current!r})")
    else:
        tail = list(graph.node)[list(graph.node).index(head) + 1:]
        unsupported = sorted({n.op_type for n in tail} - _HEAD_OPERATORS)
        if unsupported:
            raise ModelError(f"{p}: unsupported ONNX operator {unsupported[0]} after the {head.op_type} head "
                             "(only the label post-processing of a classifier may follow it)")
        if head.op_type == "Sigmoid":
            ws[-1], bs[-1] = _binary_logits(ws[-1], bs[-1], str(p))
    if head is None and ws and ws[-1].shape[0] == 1:  # a bare one-logit network: class 1 exactly when z > 0
        ws[-1], bs[-1] = _binary_logits(ws[-1], bs[-1], str(p))
    try:
        model = FloatMLP(ws, bs)
    except ModelError as exc:
        raise ModelError(f"{p}: {exc}") from None
    return _check_shape(model, n_inputs, n_classes, hidden_sizes, str(p))


# What a classifier exported to ONNX may do after its probability head: turn probabilities into a label.
_HEAD_OPERATORS = {"Sub", "Concat", "Identity", "ArgMax", "ArrayFeatureExtractor", "Reshape", "Cast", "ZipMap"}


def _binary_logits(w: np.ndarray, b: np.ndarray, source: str) -> tuple[np.ndarray, np.ndarray]:
    """One logistic output unit z -> the two logits (0, z): class 1 wins exactly when sigmoid(z) > 1/2."""
    if w.shape[0] != 1:
        raise ModelError(f"{source}: a logistic head needs one output unit, the last layer has {w.shape[0]}")
    return np.vstack([np.zeros_like(w), w]), np.concatenate([np.zeros(1), b])


def import_torchscript(path: str | os.PathLike[str], *, n_inputs: int | None = None, n_classes: int | None = None,
                       hidden_sizes: Sequence[int] | None = None) -> FloatMLP:
    """A TorchScript archive (torch.jit.save) of an nn.Sequential of Linear and ReLU."""
    import torch

    p = Path(path)
    if not p.is_file():
        raise ModelError(f"{p}: no such file")
    try:
        module = torch.jit.load(str(p), map_location="cpu")
    except Exception as exc:
        raise ModelError(f"{p}: cannot load as TorchScript ({type(exc).__name__})") from None
    if getattr(module, "original_name", None) != "Sequential":
        raise ModelError(f"{p}: a TorchScript {getattr(module, 'original_name', '?')}; expected an nn.Sequential "
                         "of Linear and ReLU")
    model = _mlp_from_sequential(module, str(p))
    return _check_shape(model, n_inputs, n_classes, hidden_sizes, str(p))


def import_sklearn(path: str | os.PathLike[str], *, n_inputs: int | None = None, n_classes: int | None = None,
                   hidden_sizes: Sequence[int] | None = None) -> FloatMLP:
    """A pickled (joblib) scikit-learn MLPClassifier with ReLU activations.

    Unpickling runs code from the file: import only the bank's own files.
    """
    import joblib
    from sklearn.neural_network import MLPClassifier

    p = Path(path)
    if not p.is_file():
        raise ModelError(f"{p}: no such file")
    try:
        clf = joblib.load(p)
    except Exception as exc:
        raise ModelError(f"{p}: cannot load as a pickled scikit-learn model ({type(exc).__name__})") from None
    if not isinstance(clf, MLPClassifier):
        raise ModelError(f"{p}: holds a {type(clf).__name__}; only MLPClassifier is supported")
    return _check_shape(mlp_from_classifier(clf, str(p)), n_inputs, n_classes, hidden_sizes, str(p))


def mlp_from_classifier(clf: Any, source: str, *, two_logits: bool = True) -> FloatMLP:
    """A fitted MLPClassifier's network (float64 copies of its weights). Its logistic output unit z (two
    classes) becomes the logits (0, z), unless `two_logits` is False (then the one logit is kept)."""
    from sklearn.neural_network import MLPClassifier

    if not isinstance(clf, MLPClassifier):
        raise ModelError(f"{source}: a {type(clf).__name__}; only MLPClassifier is supported")
    if not hasattr(clf, "coefs_"):
        raise ModelError(f"{source}: the MLPClassifier is not fitted")
    if clf.activation != "relu":
        raise ModelError(f"{source}: hidden activation {clf.activation!r}; only 'relu' can be certified")
    ws = [np.asarray(c, dtype=np.float64).T for c in clf.coefs_]
    bs = [np.asarray(b, dtype=np.float64) for b in clf.intercepts_]
    if clf.out_activation_ == "logistic":
        if two_logits:
            ws[-1], bs[-1] = _binary_logits(ws[-1], bs[-1], source)
    elif clf.out_activation_ != "softmax":
        raise ModelError(f"{source}: output activation {clf.out_activation_!r} (a multi-label model?) is not supported")
    try:
        return FloatMLP(ws, bs)
    except ModelError as exc:
        raise ModelError(f"{source}: {exc}") from None


def import_model(path: str | os.PathLike[str], fmt: str, **shape: Any) -> FloatMLP:
    """Import a network by format name: one of `MODEL_FORMATS`."""
    importers = {"torch": import_torch, "torchscript": import_torchscript, "onnx": import_onnx,
                 "sklearn": import_sklearn}
    if fmt not in importers:
        raise ModelError(f"unknown model format {fmt!r}; choose one of {', '.join(MODEL_FORMATS)}")
    return importers[fmt](path, **shape)
