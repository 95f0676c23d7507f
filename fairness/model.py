"""The model artifact: a float model with its schema, box and metadata, as a directory.

A model artifact is a directory with two files:

- `model.json`: format version, dataset name, feature names, sensitive
  features (column, domain codes, labels), hidden sizes, number of classes and
  class labels, preprocessing parameters, the public input domain box,
  training hyper-parameters, seed and test accuracy;
- `weights.npz`: arrays `W0, b0, W1, b1, ...` (float64; W_l of shape (out, in)).

The float network itself is `fairness.network` (`FloatMLP`) and its import from PyTorch, ONNX and
scikit-learn `fairness.network_import`; their names are offered here too.
"""
from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

import numpy as np

from fairness.errors import DataError, ModelError
from fairness.network import FloatMLP
from fairness.network_import import (TORCH_HEADS, TORCH_NO_OPS, _binary_logits, import_model, import_onnx,  # noqa: F401
                                     import_sklearn, import_torch, import_torchscript, load_torch_file,
                                     mlp_from_classifier, mlp_from_state_dict, torch_layers)
from fairness.preprocessing import Preprocessor, SensitiveFeature
from fairness.schema import FeatureSchema

ARTIFACT_FORMAT = "fairproof-model/1"
MODEL_JSON = "model.json"
WEIGHTS_NPZ = "weights.npz"

# --------------------------------------------------------------------------- artifact


@dataclass(frozen=True)
class ModelArtifact:
    """A float model with everything needed to quantise, serve and certify it."""

    model: FloatMLP
    dataset: str
    feature_names: tuple[str, ...]
    sensitive: tuple[SensitiveFeature, ...]
    class_labels: tuple[str, ...]
    preprocessor: Preprocessor | FeatureSchema  # a shipped dataset's, or the bank's own schema
    box_lower: tuple[float, ...]
    box_upper: tuple[float, ...]
    training: Mapping[str, Any] = field(default_factory=dict)
    seed: int | None = None
    test_accuracy: float | None = None

    def __post_init__(self) -> None:
        n = self.model.n_inputs
        if len(self.feature_names) != n:
            raise ModelError(f"model takes {n} inputs but {len(self.feature_names)} feature names are given")
        if tuple(self.preprocessor.feature_names) != tuple(self.feature_names):
            raise ModelError("preprocessor feature order differs from the model's feature names")
        if len(self.class_labels) != self.model.n_classes:
            raise ModelError(f"model has {self.model.n_classes} classes but {len(self.class_labels)} class labels")
        if len(self.box_lower) != n or len(self.box_upper) != n:
            raise ModelError("domain box must have one bound per input feature")
        if any(not (math.isfinite(lo) and math.isfinite(hi) and lo <= hi) for lo, hi in zip(self.box_lower, self.box_upper)):
            raise ModelError("domain box bounds must be finite with lower <= upper")
        if tuple(f.name for f in self.sensitive) != tuple(self.preprocessor.sensitive):
            raise ModelError("sensitive features differ from the preprocessor's")
        cols = [c for f in self.sensitive for c in f.columns]
        if not self.sensitive or len(set(cols)) != len(cols) or any(not 0 <= c < n for c in cols):
            raise ModelError("sensitive features must name distinct input columns (at least one)")
        for f in self.sensitive:
            for i, c in enumerate(f.columns):
                if not _input_of(self.feature_names[c], f.name):
                    raise ModelError(f"sensitive feature {f.name!r} is not at column {c} "
                                     f"(that input is {self.feature_names[c]!r})")
                if any(not self.box_lower[c] <= p[i] <= self.box_upper[c] for p in f.points):
                    raise ModelError(f"sensitive feature {f.name!r}: domain lies outside the box at column {c}")

    @property
    def numeric_columns(self) -> tuple[int, ...]:
        """Model inputs that are numeric, non-sensitive features (what a persistence box moves)."""
        pre = self.preprocessor
        if isinstance(pre, FeatureSchema):
            return tuple(column for f, column in pre.columns() if getattr(f, "kind", None) == "numeric")
        return tuple(j for j, (name, kind) in enumerate(zip(pre.feature_names, pre.kinds))
                     if kind == "numeric" and name not in pre.sensitive)

    @property
    def hidden_sizes(self) -> tuple[int, ...]:
        return self.model.hidden_sizes

    @property
    def n_classes(self) -> int:
        return self.model.n_classes

    def metadata(self) -> dict[str, Any]:
        return {
            "format": ARTIFACT_FORMAT,
            "dataset": self.dataset,
            "feature_names": list(self.feature_names),
            "sensitive": [f.to_dict() for f in self.sensitive],
            "n_inputs": self.model.n_inputs,
            "hidden_sizes": list(self.hidden_sizes),
            "n_classes": self.n_classes,
            "class_labels": list(self.class_labels),
            **({"schema": self.preprocessor.model_dump(mode="json")} if isinstance(self.preprocessor, FeatureSchema)
               else {"preprocessing": self.preprocessor.to_dict()}),
            "domain_box": {"lower": list(self.box_lower), "upper": list(self.box_upper)},
            "training": dict(self.training),
            "seed": self.seed,
            "test_accuracy": self.test_accuracy,
        }


def artifact_from_dataset(model: FloatMLP, dataset: Any, *, box_margin: float | None = None,
                          training: Mapping[str, Any] | None = None, seed: int | None = None) -> ModelArtifact:
    """Bundle a model with a `fairness.datasets.Dataset`'s schema, box and test accuracy."""
    if model.n_inputs != dataset.n_features:
        raise ModelError(f"model takes {model.n_inputs} inputs but dataset {dataset.name!r} has {dataset.n_features} features")
    if model.n_classes != dataset.n_classes:
        raise ModelError(f"model has {model.n_classes} outputs but dataset {dataset.name!r} has {dataset.n_classes} classes")
    lower, upper = dataset.domain_box() if box_margin is None else dataset.domain_box(box_margin)
    train_info = dict(training or {})
    train_info.setdefault("box_margin", box_margin if box_margin is not None else _default_margin())
    train_info.setdefault("split_seed", dataset.split_seed)
    return ModelArtifact(
        model=model, dataset=dataset.name, feature_names=tuple(dataset.feature_names), sensitive=tuple(dataset.sensitive),
        class_labels=tuple(dataset.class_labels), preprocessor=dataset.preprocessor,
        box_lower=tuple(float(v) for v in lower), box_upper=tuple(float(v) for v in upper),
        training=train_info, seed=seed, test_accuracy=model.accuracy(dataset.X_test, dataset.y_test),
    )


def artifact_from_schema(model: FloatMLP, schema: FeatureSchema, *, X_test: Any = None, y_test: Any = None,
                         training: Mapping[str, Any] | None = None) -> ModelArtifact:
    """Bundle a model with the bank's own feature schema: its inputs, sensitive codes, classes and raw domain box."""
    if model.n_inputs != schema.n_inputs:
        raise ModelError(f"the network takes {model.n_inputs} inputs but schema {schema.name!r} describes "
                         f"{schema.n_inputs} ({', '.join(schema.feature_names)})")
    if model.n_classes != len(schema.class_labels):
        raise ModelError(f"the network has {model.n_classes} outputs but schema {schema.name!r} has "
                         f"{len(schema.class_labels)} classes ({', '.join(schema.class_labels)})")
    lower, upper = schema.domain_box()
    sensitive = tuple(SensitiveFeature(f.name, tuple(range(column, column + len(f.inputs))), f.points, f.value_labels)
                      for f, column in schema.sensitive_columns())
    accuracy = model.accuracy(X_test, y_test) if X_test is not None and y_test is not None else None
    return ModelArtifact(
        model=model, dataset=schema.name, feature_names=schema.feature_names, sensitive=sensitive,
        class_labels=schema.class_labels, preprocessor=schema, box_lower=lower, box_upper=upper,
        training=dict(training or {}), seed=None, test_accuracy=accuracy,
    )


def _input_of(input_name: str, attribute: str) -> bool:
    """Whether a model input belongs to an attribute: its own name, or one of its one-hot inputs ("name=value")."""
    return input_name == attribute or input_name.startswith(attribute + "=")


def _default_margin() -> float:
    from fairness.preprocessing import DEFAULT_BOX_MARGIN

    return DEFAULT_BOX_MARGIN


def save_artifact(artifact: ModelArtifact, directory: str | os.PathLike[str]) -> Path:
    """Write model.json and weights.npz into `directory` (created if needed)."""
    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    arrays = {}
    for l, (w, b) in enumerate(zip(artifact.model.weights, artifact.model.biases)):
        arrays[f"W{l}"] = w
        arrays[f"b{l}"] = b
    tmp_npz = out / (WEIGHTS_NPZ + ".tmp.npz")
    np.savez(tmp_npz, **arrays)
    os.replace(tmp_npz, out / WEIGHTS_NPZ)
    tmp_json = out / (MODEL_JSON + ".tmp")
    tmp_json.write_text(json.dumps(artifact.metadata(), indent=2, allow_nan=False) + "\n")
    os.replace(tmp_json, out / MODEL_JSON)
    return out


def load_artifact(directory: str | os.PathLike[str]) -> ModelArtifact:
    """Read and validate an artifact directory written by `save_artifact`."""
    d = Path(directory)
    meta_path, weights_path = d / MODEL_JSON, d / WEIGHTS_NPZ
    if not meta_path.is_file():
        raise ModelError(f"{meta_path}: missing (not a model artifact directory)")
    if not weights_path.is_file():
        raise ModelError(f"{weights_path}: missing")
    try:
        meta = json.loads(meta_path.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ModelError(f"{meta_path}: not valid JSON ({exc})") from None
    if not isinstance(meta, dict) or meta.get("format") != ARTIFACT_FORMAT:
        raise ModelError(f"{meta_path}: unknown format {meta.get('format') if isinstance(meta, dict) else None!r}, expected {ARTIFACT_FORMAT!r}")
    try:
        with np.load(weights_path, allow_pickle=False) as npz:
            files = dict(npz)
    except (OSError, ValueError) as exc:
        raise ModelError(f"{weights_path}: unreadable ({exc})") from None
    n_layers = len(meta.get("hidden_sizes", [])) + 1
    expected = {f"{k}{l}" for l in range(n_layers) for k in ("W", "b")}
    if set(files) != expected:
        raise ModelError(f"{weights_path}: arrays {sorted(files)} do not match hidden sizes {meta.get('hidden_sizes')} (expected {sorted(expected)})")
    model = FloatMLP([files[f"W{l}"] for l in range(n_layers)], [files[f"b{l}"] for l in range(n_layers)])
    if list(model.hidden_sizes) != list(meta["hidden_sizes"]) or model.n_classes != meta.get("n_classes") or model.n_inputs != meta.get("n_inputs"):
        raise ModelError(f"{d}: weights have shape {model.n_inputs}->{model.hidden_sizes}->{model.n_classes}, "
                         f"model.json says {meta.get('n_inputs')}->{tuple(meta['hidden_sizes'])}->{meta.get('n_classes')}")
    try:
        return ModelArtifact(
            model=model,
            dataset=str(meta["dataset"]),
            feature_names=tuple(str(x) for x in meta["feature_names"]),
            sensitive=tuple(SensitiveFeature.from_dict(s) for s in meta["sensitive"]),
            class_labels=tuple(str(x) for x in meta["class_labels"]),
            preprocessor=(FeatureSchema.parse(meta["schema"], str(meta_path)) if "schema" in meta
                          else Preprocessor.from_dict(meta["preprocessing"])),
            box_lower=tuple(float(x) for x in meta["domain_box"]["lower"]),
            box_upper=tuple(float(x) for x in meta["domain_box"]["upper"]),
            training=dict(meta.get("training") or {}),
            seed=meta.get("seed"),
            test_accuracy=meta.get("test_accuracy"),
        )
    except (KeyError, TypeError, ValueError, DataError) as exc:
        raise ModelError(f"{meta_path}: malformed ({type(exc).__name__}: {exc})") from None
