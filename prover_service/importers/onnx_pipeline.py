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

The reading is in four modules: `onnx_values` (what a tensor holds),
`onnx_operators` (each operator's translation), `onnx_graph` (loading the
file and following its nodes to the decision) and `onnx_schema` (the schema
and first-layer rewrite); this one reads a file and runs the bank's runtime.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from fairness.errors import DataError, ModelError
from fairness.model import FloatMLP, _binary_logits
from fairness.schema import FeatureSchema, LabelColumn, category_key, number

from . import BankFacts, BankModel
from .onnx_graph import Decision, GraphInput, constants, find_decision, follow, graph_inputs, load_model, opset_of
from .onnx_schema import check_facts, label_column_of, schema_features
from .onnx_values import INT32, INT64, NUMBER_TYPES, STRING, Network, texts


# onnxruntime runs at most this many records at once (memory stays flat on a large CSV).
RUN_CHUNK = 4096


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
            return np.array([self.labels.index(texts([v])[0], "onnxruntime") for v in flat], dtype=np.int64)
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
    features, layer = schema_features(net, names, facts, source)
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
    model = load_model(p)
    inputs = graph_inputs(model.graph, constants(model.graph), source)
    net, decision = find_decision(model, follow(model, source, inputs), source)
    if preprocessor is not None or schema is not None:
        reading = _outside_graph(net, inputs, facts, preprocessor, schema, columns, source)
    elif facts is None:
        raise ModelError(f"{source}: give the bank's facts (which columns are sensitive, their domains)")
    else:
        reading = _in_graph(net, inputs, facts, columns, source)
    if facts is not None:
        check_facts(reading.features, facts, source)
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
        label, class_notes = label_column_of(network.n_classes, decision.classes, facts, source)
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
    return f"{what} {path.name}" + (f" (exported by {producer}, opset {opset_of(model, '')})" if producer else "")
