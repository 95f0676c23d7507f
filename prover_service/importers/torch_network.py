"""A bank's torch network, as it saved it: a state dict, TorchScript, or the nn.Sequential pickled whole.

The network is a stack of Linear and ReLU, ending in one logit (a logistic
classifier: class 1 exactly when z > 0, or sigmoid(z) > 1/2 with a final
Sigmoid) or one logit per class (optionally a final Softmax). A torch file says
nothing of the columns: its preprocessing is the bank's fitted scikit-learn
transformer (`preprocessor`, read by `sklearn_pipeline.read_preprocessor`, so
the schema comes from its fitted attributes) or the bank's hand-written
feature schema (`schema`).

The runtime is torch itself: the bank's module (a state dict is loaded into
torch's own nn.Linear/nn.ReLU) on float32 inputs, which are the fitted
preprocessor's own transform of the raw records (or the schema's encoding).
"""
from __future__ import annotations

import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from fairness.errors import ModelError
from fairness.model import FloatMLP, load_torch_file, mlp_from_state_dict, torch_layers
from fairness.schema import FeatureSchema

from . import BankFacts, BankModel
from .rewrites import as_two_logits
from .sklearn_pipeline import build_schema, describe, load_pickled, read_preprocessor, schema_encoder


@dataclass(frozen=True)
class TorchNetwork:
    """The bank's module (for its runtime) and its logits as a float64 network."""

    module: Any
    network: FloatMLP       # the module's logits: one, or one per class
    head: str | None        # its final Sigmoid / Softmax / LogSoftmax, if any
    kind: str               # "state dict", "TorchScript" or "whole module"


def is_torchscript(path: str | Path) -> bool:
    """A torch.jit.save archive: a zip with constants.pkl and compiled code (a torch.save zip has neither)."""
    try:
        with zipfile.ZipFile(path) as z:
            names = z.namelist()
    except (OSError, zipfile.BadZipFile):
        return False
    return any(n.endswith("/constants.pkl") or n == "constants.pkl" for n in names) or \
        any("/code/" in n for n in names)


def load_torch_network(path: str | Path) -> TorchNetwork:
    """Load a torch file of any of the three kinds, refusing anything but a Linear/ReLU classifier."""
    import torch

    p = Path(path)
    if not p.is_file():
        raise ModelError(f"{p}: no such file")
    if is_torchscript(p):
        try:
            module = torch.jit.load(str(p), map_location="cpu")
        except Exception as exc:  # torch raises many types for a bad archive
            raise ModelError(f"{p}: cannot load as TorchScript ({type(exc).__name__})") from None
        network, head = _classifier(*torch_layers(module, f"{p} (TorchScript)"), p)
        return TorchNetwork(module.eval(), network, head, "TorchScript")
    obj = load_torch_file(p)
    if isinstance(obj, torch.nn.Module):
        network, head = _classifier(*torch_layers(obj, str(p)), p)
        return TorchNetwork(obj.eval(), network, head, "whole module")
    if isinstance(obj, Mapping):
        state = obj["state_dict"] if isinstance(obj.get("state_dict"), Mapping) else obj
        network = mlp_from_state_dict(state, f"{p} (state dict)")
        return TorchNetwork(module_from_state(state).eval(), network, None, "state dict")
    raise ModelError(f"{p}: holds a {type(obj).__name__}, expected a state dict, an nn.Sequential or TorchScript")


def _classifier(network: FloatMLP, head: str | None, path: Path) -> tuple[FloatMLP, str | None]:
    """A Sigmoid decides between two classes only over one logit: over several it is a multi-label model."""
    if head == "Sigmoid" and network.n_classes != 1:
        raise ModelError(f"{path}: a Sigmoid over {network.n_classes} outputs is a multi-label model, not a "
                         "classifier's decision (a logistic head needs one output unit)")
    if head in ("Softmax", "LogSoftmax") and network.n_classes == 1:
        raise ModelError(f"{path}: a {head} over one output decides nothing")
    return network, head


def module_from_state(state: Mapping[str, Any]) -> Any:
    """torch's own Sequential of Linear/ReLU, loaded with the state dict's tensors (float32, as trained)."""
    import torch

    prefixes = list(dict.fromkeys(str(k).rpartition(".")[0] for k in state))
    layers: list[Any] = []
    for i, prefix in enumerate(prefixes):
        weight = state[f"{prefix}.weight"]
        linear = torch.nn.Linear(weight.shape[1], weight.shape[0], bias=f"{prefix}.bias" in state)
        linear.load_state_dict({k.rpartition(".")[2]: v for k, v in state.items() if k.rpartition(".")[0] == prefix})
        layers += [linear] + ([torch.nn.ReLU()] if i < len(prefixes) - 1 else [])
    return torch.nn.Sequential(*layers)


@dataclass(frozen=True)
class TorchRuntime:
    """The bank's torch module on float32 inputs made from raw records by the bank's own preprocessing."""

    name: str
    module: Any
    head: str | None
    inputs: Callable[[Sequence[Mapping[str, Any]]], np.ndarray]

    def decide(self, records: Sequence[Mapping[str, Any]]) -> np.ndarray:
        import torch

        with torch.no_grad():
            out = self.module(torch.tensor(self.inputs(records), dtype=torch.float32)).numpy()
        if out.ndim != 2:
            raise ModelError(f"the torch module returns an array of shape {out.shape}, expected (rows, outputs)")
        if out.shape[1] == 1:  # a logistic classifier: class 1 when sigmoid(z) > 1/2, i.e. z > 0
            threshold = 0.5 if self.head == "Sigmoid" else 0.0
            return (out[:, 0] > threshold).astype(np.int64)
        return out.argmax(axis=1).astype(np.int64)


def read_torch(path: str | Path, facts: BankFacts | None, *, preprocessor: Any = None,
               schema: FeatureSchema | None = None, columns: Sequence[str] | None = None) -> BankModel:
    """The bank's torch network with its preprocessing: a fitted transformer (object or joblib path) under
    `facts`, or the bank's `schema`."""
    import torch

    loaded = load_torch_network(path)
    source = f"torch {loaded.kind} of nn.Sequential({_shape(loaded.network)}{', ' + loaded.head if loaded.head else ''})"
    network, notes = as_two_logits(loaded.network, str(path))
    runtime_name = f"torch {torch.__version__}"
    if schema is not None:
        if network.n_inputs != schema.n_inputs:
            raise ModelError(f"the network takes {network.n_inputs} inputs but schema {schema.name!r} describes "
                             f"{schema.n_inputs} ({', '.join(schema.feature_names)})")
        if network.n_classes != len(schema.label.values):
            raise ModelError(f"the network has {network.n_classes} outputs but schema {schema.name!r} has "
                             f"{len(schema.label.values)} classes ({', '.join(schema.class_labels)})")
        runtime = TorchRuntime(runtime_name, loaded.module, loaded.head, schema_encoder(schema))
        return BankModel(schema=schema, network=network, runtime=runtime, source=source, notes=notes)
    if facts is None or preprocessor is None:
        raise ModelError(f"{path}: a torch network says nothing of its columns: give its fitted preprocessor "
                         "(--preprocessor FITTED.joblib) with the bank's facts (--facts), or its schema (--schema)")
    fitted = load_pickled(preprocessor) if isinstance(preprocessor, (str, Path)) else preprocessor
    pre = read_preprocessor(fitted, facts, columns=columns, source="preprocessor")
    if pre.n_inputs != network.n_inputs:
        raise ModelError(f"the preprocessor {describe(fitted)} writes {pre.n_inputs} columns, the network {path} "
                         f"reads {network.n_inputs}")
    classes, class_note = torch_classes(network.n_classes, facts)
    source = f"{source} after scikit-learn {describe(fitted)}"
    schema = build_schema(pre, facts, classes, source)
    runtime = TorchRuntime(runtime_name, loaded.module, loaded.head, pre.transform)
    return BankModel(schema=schema, network=pre.fold(network), runtime=runtime, source=source,
                     notes=notes + class_note + pre.notes)


def torch_classes(n_classes: int, facts: BankFacts) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The raw class value of each output: the facts' class_values, else the output index."""
    if facts.class_values is None:
        values = tuple(str(i) for i in range(n_classes))
        return values, (f"class values {', '.join(values)} are the output indices (the facts give no class_values)",)
    if len(facts.class_values) != n_classes:
        raise ModelError(f"the facts list {len(facts.class_values)} class_values ({', '.join(facts.class_values)}), "
                         f"the network decides between {n_classes} classes")
    return tuple(facts.class_values), ()


def _shape(network: FloatMLP) -> str:
    sizes = [network.n_inputs, *network.hidden_sizes, network.n_classes]
    return " -> ".join(map(str, sizes))
