"""A bare ONNX network under the bank's hand-written feature schema (`--schema`).

The graph holds the network only (Gemm or MatMul+Add, Relu, an optional
Sigmoid/Softmax head): its input is the schema's encoding of a record. The
runtime is onnxruntime on that encoding, in float32 as the bank serves it. A
graph that holds its own preprocessing (skl2onnx pipelines) is read from the
graph itself with the bank's facts, by `onnx_pipeline.read_onnx`.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from fairness.errors import ModelError
from fairness.model import import_onnx
from fairness.schema import FeatureSchema

from . import BankModel
from .sklearn_pipeline import schema_encoder


@dataclass(frozen=True)
class OnnxRuntime:
    """onnxruntime on the schema's encoding of raw records (float32; batched around a fixed batch size)."""

    name: str
    session: Any
    output: str
    sigmoid: bool  # a one-column output is a probability (threshold 1/2), else a logit (threshold 0)
    inputs: Callable[[Sequence[Mapping[str, Any]]], np.ndarray]

    def decide(self, records: Sequence[Mapping[str, Any]]) -> np.ndarray:
        graph_input = self.session.get_inputs()[0]
        X = self.inputs(records).astype(np.float32)
        batch = graph_input.shape[0] if graph_input.shape else None
        step = batch if isinstance(batch, int) and batch > 0 else max(len(X), 1)  # e.g. a torch export traced on one row
        out = np.concatenate([self.session.run([self.output], {graph_input.name: X[i:i + step]})[0]
                              for i in range(0, len(X), step)])
        if out.ndim == 2 and out.shape[1] == 1:
            return (out[:, 0] > (0.5 if self.sigmoid else 0.0)).astype(np.int64)
        return np.argmax(out, axis=1).astype(np.int64)


def read_onnx_network(path: str | Path, schema: FeatureSchema) -> BankModel:
    """The bare network of `path` over the inputs of `schema`, with onnxruntime as the bank's runtime."""
    import onnx
    import onnxruntime

    network = import_onnx(path)
    if network.n_inputs != schema.n_inputs:
        raise ModelError(f"the network takes {network.n_inputs} inputs but schema {schema.name!r} describes "
                         f"{schema.n_inputs} ({', '.join(schema.feature_names)})")
    if network.n_classes != len(schema.label.values):
        raise ModelError(f"the network has {network.n_classes} outputs but schema {schema.name!r} has "
                         f"{len(schema.label.values)} classes ({', '.join(schema.class_labels)})")
    session = onnxruntime.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    names = [o.name for o in session.get_outputs()]
    output = "probabilities" if "probabilities" in names else names[0]
    producers = {o: n.op_type for n in onnx.load(str(path)).graph.node for o in n.output}
    runtime = OnnxRuntime(f"onnxruntime {onnxruntime.__version__}", session, output,
                          producers.get(output) == "Sigmoid", schema_encoder(schema))
    return BankModel(schema=schema, network=network, runtime=runtime, source="ONNX network",
                     notes=("one output logit z read as the two logits (0, z)",) if _one_output(session, output) else ())


def _one_output(session: Any, output: str) -> bool:
    shape = next(o.shape for o in session.get_outputs() if o.name == output)
    return len(shape) == 2 and shape[1] == 1
