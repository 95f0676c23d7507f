"""Importing a bank's own network under its own feature schema, checked row by row.

The check answers one question: on the bank's data, does the model we would
commit to decide exactly as the bank's model does? Three decisions are compared
on every row of the bank's CSV:

- the bank's own decision, recorded in the CSV by its own pipeline (this is
  what catches a schema that orders, codes or scales a feature differently
  from the pipeline the network was trained with);
- the bank's network run by its own runtime (onnxruntime, torch, scikit-learn)
  on the schema's encoding (this catches a network read wrongly);
- the imported exact fixed-point network, as it will be committed and proved.

A row where they differ refuses the import, unless the float logits of the
imported network are within `tie_tolerance` of a tie there: then the
difference is rounding (float32 runtimes, fixed-point weights) and is reported
as a warning the bank may accept.
"""
from __future__ import annotations

import hashlib
import itertools
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import numpy as np

from fairness.errors import DataError, ModelError
from fairness.fixed_point import DEFAULT_SCALE_BITS, quantise_query, to_fixed_point
from fairness.model import FloatMLP, ModelArtifact
from fairness.schema import FeatureSchema, SchemaTable, category_key

DEFAULT_TIE_TOLERANCE = 1e-3


@dataclass(frozen=True)
class RowDisagreement:
    line: int  # CSV line of the row
    recorded: int
    runtime: int | None
    imported: int
    margin: float  # float logit gap between the imported network's two best classes

    def describe(self, labels: tuple[str, ...]) -> str:
        runtime = "" if self.runtime is None else f", bank's network here {labels[self.runtime]!r}"
        return (f"line {self.line}: recorded {labels[self.recorded]!r}{runtime}, imported {labels[self.imported]!r} "
                f"(logit margin {self.margin:.3g})")


@dataclass(frozen=True)
class ImportCheck:
    rows: int
    data_sha256: str
    runtime: str
    disagreements: tuple[RowDisagreement, ...]
    tie_tolerance: float
    hint: str = ""
    near_ties: tuple[RowDisagreement, ...] = field(init=False)
    refusals: tuple[RowDisagreement, ...] = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "near_ties", tuple(d for d in self.disagreements if d.margin <= self.tie_tolerance))
        object.__setattr__(self, "refusals", tuple(d for d in self.disagreements if d.margin > self.tie_tolerance))

    def summary(self) -> str:
        agree = self.rows - len(self.disagreements)
        text = f"decisions checked on {self.rows} rows of the bank's data (sha256 {self.data_sha256[:16]}...): {agree} agree"
        if self.near_ties:
            text += f", {len(self.near_ties)} differ only at a near tie (logit margin <= {self.tie_tolerance:g})"
        return text

    def record(self) -> dict:
        return {"rows": self.rows, "agree": self.rows - len(self.disagreements), "near_ties": len(self.near_ties),
                "data_sha256": self.data_sha256, "runtime": self.runtime, "tie_tolerance": self.tie_tolerance}


def bank_runtime(path: str | Path, fmt: str) -> tuple[str, Callable[[np.ndarray], np.ndarray]]:
    """(name, X -> class indices) running the bank's file with the bank's own runtime, in float32 as it serves."""
    path = str(path)
    if fmt == "onnx":
        import onnxruntime

        session = onnxruntime.InferenceSession(path, providers=["CPUExecutionProvider"])
        graph_input = session.get_inputs()[0]
        names = [o.name for o in session.get_outputs()]
        scores = "probabilities" if "probabilities" in names else names[0]
        batch = graph_input.shape[0] if graph_input.shape else None
        fixed_batch = isinstance(batch, int) and batch > 0  # e.g. a torch export traced on one row

        def run(X: np.ndarray) -> np.ndarray:
            X = X.astype(np.float32)
            chunks = [X[i:i + batch] for i in range(0, len(X), batch)] if fixed_batch else [X]
            out = np.concatenate([session.run([scores], {graph_input.name: c})[0] for c in chunks])
            return np.argmax(out, axis=1)

        return f"onnxruntime {onnxruntime.__version__}", run
    if fmt == "sklearn":
        import joblib
        import sklearn

        clf = joblib.load(path)
        return f"scikit-learn {sklearn.__version__}", lambda X: np.searchsorted(clf.classes_, clf.predict(X))
    if fmt in ("torch", "torchscript"):
        import torch

        if fmt == "torchscript":
            module = torch.jit.load(path, map_location="cpu")
        else:
            module = _module_from_state(torch.load(path, map_location="cpu", weights_only=True))
        module.eval()

        def run_torch(X: np.ndarray) -> np.ndarray:
            with torch.no_grad():
                return module(torch.tensor(X, dtype=torch.float32)).argmax(dim=1).numpy()

        return f"torch {torch.__version__}", run_torch
    raise ModelError(f"no runtime for format {fmt!r}")


def _module_from_state(obj):
    """torch's own Sequential of Linear/ReLU, loaded with the state dict's tensors (float32, as trained)."""
    import torch

    if isinstance(obj, torch.nn.Module):
        return obj
    if "state_dict" in obj:
        obj = obj["state_dict"]
    prefixes = list(dict.fromkeys(k.rpartition(".")[0] for k in obj))
    layers: list[torch.nn.Module] = []
    for i, prefix in enumerate(prefixes):
        weight = obj[f"{prefix}.weight"]
        linear = torch.nn.Linear(weight.shape[1], weight.shape[0], bias=f"{prefix}.bias" in obj)
        linear.load_state_dict({k.rpartition(".")[2]: v for k, v in obj.items() if k.rpartition(".")[0] == prefix})
        layers += [linear] + ([torch.nn.ReLU()] if i < len(prefixes) - 1 else [])
    return torch.nn.Sequential(*layers)


def sklearn_classes(path: str | Path) -> tuple[str, ...]:
    import joblib

    return tuple(category_key("class", c) for c in joblib.load(path).classes_)


def check_import(artifact: ModelArtifact, schema: FeatureSchema, table: SchemaTable, recorded: np.ndarray,
                 runtime: tuple[str, Callable[[np.ndarray], np.ndarray]] | None, data_path: str | Path, *,
                 scale_bits: int = DEFAULT_SCALE_BITS, tie_tolerance: float = DEFAULT_TIE_TOLERANCE) -> ImportCheck:
    """Compare recorded, runtime and imported fixed-point decisions on every row (see the module docstring)."""
    fixed = to_fixed_point(artifact, scale_bits)
    imported = np.array([fixed.net.decision(quantise_query(fixed, [float(v) for v in x])) for x in table.X])
    run = runtime[1](table.X) if runtime is not None else None
    margins = _margins(artifact.model, table.X)
    bad = (imported != recorded) | ((run != recorded) if run is not None else False)
    disagreements = tuple(
        RowDisagreement(line=table.lines[i], recorded=int(recorded[i]), imported=int(imported[i]),
                        runtime=None if run is None else int(run[i]), margin=float(margins[i]))
        for i in np.flatnonzero(bad))
    hint = _swap_hint(artifact.model, schema, table.X, recorded) if any(d.margin > tie_tolerance for d in disagreements) else ""
    digest = hashlib.sha256(Path(data_path).read_bytes()).hexdigest()
    return ImportCheck(rows=len(table.X), data_sha256=digest, runtime=runtime[0] if runtime else "none",
                       disagreements=disagreements, tie_tolerance=tie_tolerance, hint=hint)


def _margins(model: FloatMLP, X: np.ndarray) -> np.ndarray:
    logits = np.sort(model.forward(X), axis=1)
    return logits[:, -1] - logits[:, -2]


def _swap_hint(model: FloatMLP, schema: FeatureSchema, X: np.ndarray, recorded: np.ndarray) -> str:
    """If exchanging two model inputs makes every decision agree, say which: the likeliest schema mistake."""
    names = schema.feature_names
    best = (np.mean(model.predict(X) == recorded), None)
    for i, j in itertools.combinations(range(X.shape[1]), 2):
        swapped = X.copy()
        swapped[:, [i, j]] = swapped[:, [j, i]]
        agreement = np.mean(model.predict(swapped) == recorded)
        if agreement > best[0]:
            best = (agreement, (i, j))
    if best[1] is None or best[0] < 0.99:
        return ""
    i, j = best[1]
    return (f"with the model inputs {names[i]!r} and {names[j]!r} exchanged, {best[0]:.1%} of the decisions agree: "
            "the schema probably lists them in the wrong order")


def recorded_decisions(schema: FeatureSchema, table: SchemaTable, column: str, data_path: str | Path) -> np.ndarray:
    """The bank's own decisions, read from `column` as raw class values of the schema's label."""
    values = table.extra.get(column)
    if values is None:
        raise DataError(f"{data_path}: the check needs the bank's own decision of every row in a column {column!r}")
    return np.array([schema.label.index(v, f"{data_path}:{line}") for v, line in zip(values, table.lines)])
