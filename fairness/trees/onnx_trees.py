"""ONNX `TreeEnsembleClassifier` (ai.onnx.ml) graphs as exact `TreeEnsemble`s.

The node's attributes are read as the ONNX specification lays them out and decided as ONNX Runtime
decides them (its label never depends on `post_transform`, a monotone map of the scores):

- a node tests x[feature] against its value with its mode: BRANCH_LEQ (x <= t), BRANCH_LT (x < t),
  BRANCH_GTE (x >= t) or BRANCH_GT (x > t), the true branch taken when the test holds; BRANCH_EQ and
  BRANCH_NEQ are refused (no box describes them). Thresholds are float32 (`nodes_values`) or double
  (`nodes_values_as_tensor`), rounded to the 2^-s grid as every loader rounds them;
- a leaf adds each of its votes (`class_*`) to its class's score; the scores start at `base_values`;
- two classes with every vote for class 0 (as skl2onnx writes gradient boosting and forests): the
  positive label's score is class 0's, plus base_values[0] when given, and the label is positive when it
  is > 1/2 if no vote is negative, else when it is > 0 (ONNX Runtime's binary case); the ensemble's one
  score is that score minus the threshold, so that its decision is [score > 0]. Votes for both classes
  of a binary model are refused (ONNX Runtime then reads class 1's score alone against 0);
- more classes: the label is the first largest score; each tree adds to one score in the ensemble, so a
  tree voting for several classes is read once per class.

The tree node must read the graph's input directly (a preprocessing node in the graph would change what
the thresholds compare) and its label must be the graph's label output. Agreement with ONNX Runtime on
the bank's rows is what the checked import establishes, never assumed.
"""
from __future__ import annotations

from collections import defaultdict
from fractions import Fraction
from pathlib import Path
from typing import Any, Mapping, Sequence

from fairness.errors import ModelError

from .ensemble import TreeEnsemble, quantise_leaf
from .loaders import DEFAULT_SCALE_BITS, DEFAULT_VALUE_BITS, Converter, RawNode, Scalings, _f32, _fraction, _inputs

# mode -> (the converter's rule for "left", whether the true branch is the left one)
MODES = {"BRANCH_LEQ": ("<=", True), "BRANCH_LT": ("<", True), "BRANCH_GTE": ("<", False), "BRANCH_GT": ("<=", False)}
TREE_OPS = ("TreeEnsembleClassifier",)


def from_onnx(model: Any, *, n_inputs: int | None = None, scale_bits: int = DEFAULT_SCALE_BITS,
              value_bits: int = DEFAULT_VALUE_BITS, scalings: Scalings | None = None) -> TreeEnsemble:
    """A TreeEnsembleClassifier from an ONNX model: a path, its bytes, or an onnx.ModelProto."""
    node, graph_input = _tree_node(_model(model))
    a = _attributes(node)
    labels = a.get("classlabels_int64s") or a.get("classlabels_strings") or []
    n_classes = len(labels)
    if n_classes < 2:
        raise ModelError("ONNX TreeEnsembleClassifier: fewer than two class labels")
    thresholds = a.get("nodes_values_as_tensor")
    exact = thresholds is not None
    if not exact:
        thresholds = a.get("nodes_values", [])
    nodes = _nodes(a, thresholds, exact)
    votes = _votes(a)
    trees = sorted({t for t, _ in nodes})
    base = [Fraction(float(b)) for b in (a.get("base_values_as_tensor") or a.get("base_values") or [])]
    conv = Converter("<=", scale_bits, value_bits, scalings)
    if n_classes == 2:
        raw, base_score = _binary(nodes, votes, trees, base)
        out = [conv.tree(r) for r in raw]
        scores = [base_score]
    else:
        raw, scores = _multiclass(nodes, votes, trees, base, n_classes)
        out = [conv.tree(r) for r in raw]
    n_features = 1 + max((spec[1] for spec in nodes.values() if spec[1] is not None), default=0)
    n = _inputs(n_inputs if n_inputs is not None else graph_input, n_features, "ONNX TreeEnsembleClassifier")
    return TreeEnsemble(n, n_classes, scale_bits, value_bits, tuple(out),
                        tuple(quantise_leaf(b, value_bits) for b in scores))


# --------------------------------------------------------------------------- the graph


def _model(source: Any) -> Any:
    import onnx

    if isinstance(source, onnx.ModelProto):
        return source
    try:
        if isinstance(source, (bytes, bytearray)):
            return onnx.load_from_string(bytes(source))
        return onnx.load(str(Path(source)))
    except Exception as exc:  # onnx raises DecodeError, OSError, ...
        raise ModelError(f"ONNX model: cannot read it ({exc})") from None


def _tree_node(model: Any) -> tuple[Any, int | None]:
    """The graph's one TreeEnsembleClassifier, checked to read the graph's input and to give its label
    output; and the input's width when the graph declares it."""
    graph = model.graph
    found = [n for n in graph.node if n.op_type in TREE_OPS and n.domain == "ai.onnx.ml"]
    if len(found) != 1:
        kinds = sorted({n.op_type for n in graph.node})
        raise ModelError(f"ONNX model: expected one ai.onnx.ml TreeEnsembleClassifier, found {len(found)} "
                         f"(nodes: {', '.join(kinds) or 'none'})")
    node = found[0]
    inputs = {i.name: i for i in graph.input}
    if len(node.input) != 1 or node.input[0] not in inputs:
        raise ModelError("ONNX model: the TreeEnsembleClassifier does not read the graph's input directly; "
                         "a preprocessing node would change what its thresholds compare (export the trees alone "
                         "and give the preprocessing as the schema)")
    outputs = {o.name for o in graph.output}
    if not node.output or node.output[0] not in outputs:
        raise ModelError("ONNX model: the TreeEnsembleClassifier's label is not an output of the graph")
    dims = inputs[node.input[0]].type.tensor_type.shape.dim
    width = dims[-1].dim_value if len(dims) == 2 and dims[-1].HasField("dim_value") else None
    return node, width


def _attributes(node: Any) -> dict[str, Any]:
    import onnx
    from onnx import numpy_helper

    out: dict[str, Any] = {}
    for attr in node.attribute:
        value = onnx.helper.get_attribute_value(attr)
        if isinstance(value, onnx.TensorProto):
            value = numpy_helper.to_array(value).tolist()
        elif isinstance(value, bytes):
            value = value.decode()
        elif isinstance(value, list) and value and isinstance(value[0], bytes):
            value = [v.decode() for v in value]
        out[attr.name] = value
    return out


# --------------------------------------------------------------------------- nodes and votes

# (tree id, node id) -> (mode, feature or None for a leaf, threshold, true node, false node)
Nodes = Mapping[tuple[int, int], tuple[str, int | None, Fraction, int, int]]


def _nodes(a: Mapping[str, Any], thresholds: Sequence[float], exact: bool) -> Nodes:
    keys = ("nodes_treeids", "nodes_nodeids", "nodes_featureids", "nodes_modes", "nodes_truenodeids",
            "nodes_falsenodeids")
    columns = [a.get(k) for k in keys]
    if any(c is None for c in columns) or len({len(c) for c in columns} | {len(thresholds)}) != 1:
        raise ModelError("ONNX TreeEnsembleClassifier: the nodes_* attributes are missing or of unequal lengths")
    out: dict[tuple[int, int], tuple[str, int | None, Fraction, int, int]] = {}
    for tree, node, feature, mode, true, false, t in zip(*columns, thresholds):
        where = f"ONNX tree {tree} node {node}"
        if mode == "LEAF":
            out[int(tree), int(node)] = (mode, None, Fraction(0), -1, -1)
            continue
        if mode not in MODES:
            raise ModelError(f"{where}: split mode {mode} cannot be certified (only <=, <, >=, >)")
        value = _fraction(t, where) if exact else _f32(t, where)
        out[int(tree), int(node)] = (mode, int(feature), value, int(true), int(false))
    return out


def _votes(a: Mapping[str, Any]) -> dict[tuple[int, int], dict[int, Fraction]]:
    """(tree id, leaf id) -> class -> the sum of its votes there."""
    weights = a.get("class_weights_as_tensor") or a.get("class_weights")
    columns = [a.get("class_treeids"), a.get("class_nodeids"), a.get("class_ids"), weights]
    if any(c is None for c in columns) or len({len(c) for c in columns}) != 1:
        raise ModelError("ONNX TreeEnsembleClassifier: the class_* attributes are missing or of unequal lengths")
    out: dict[tuple[int, int], dict[int, Fraction]] = defaultdict(lambda: defaultdict(Fraction))
    for tree, node, c, w in zip(*columns):
        out[int(tree), int(node)][int(c)] += _fraction(w, f"ONNX tree {tree} leaf {node} weight")
    return out


def _raw_tree(nodes: Nodes, votes: Mapping[tuple[int, int], Mapping[int, Fraction]], tree: int, c: int) -> RawNode:
    """Tree `tree` with each leaf's vote for class c (0 where it has none)."""
    def walk(node: int, depth: int) -> RawNode:
        if (tree, node) not in nodes:
            raise ModelError(f"ONNX tree {tree}: node {node} is referenced but not defined")
        if depth > 64:
            raise ModelError(f"ONNX tree {tree}: deeper than 64 levels (a cycle?)")
        mode, feature, t, true, false = nodes[tree, node]
        if feature is None:
            return ("leaf", votes.get((tree, node), {}).get(c, Fraction(0)))
        rule, true_is_left = MODES[mode]
        left, right = (true, false) if true_is_left else (false, true)
        return ("split", feature, t, walk(left, depth + 1), walk(right, depth + 1), rule)

    return walk(0, 0)


def _binary(nodes: Nodes, votes, trees: Sequence[int], base: Sequence[Fraction]) -> tuple[list[RawNode], Fraction]:
    classes = {c for leaf in votes.values() for c in leaf}
    if classes - {0}:
        raise ModelError("ONNX TreeEnsembleClassifier: a binary model with votes for class 1 is not read (ONNX "
                         "Runtime then decides by class 1's score alone); export every vote for class 0, as "
                         "skl2onnx does")
    all_positive = all(w >= 0 for leaf in votes.values() for w in leaf.values())
    threshold = Fraction(1, 2) if all_positive else Fraction(0)
    start = base[0] if base else Fraction(0)
    return [_raw_tree(nodes, votes, t, 0) for t in trees], start - threshold


def _multiclass(nodes: Nodes, votes, trees: Sequence[int], base: Sequence[Fraction],
                n_classes: int) -> tuple[list[RawNode], list[Fraction]]:
    if base and len(base) != n_classes:
        raise ModelError(f"ONNX TreeEnsembleClassifier: {len(base)} base values for {n_classes} classes")
    touched: dict[int, set[int]] = defaultdict(set)
    for (tree, _), leaf in votes.items():
        touched[tree].update(leaf)
    if not base and set().union(*touched.values()) != set(range(n_classes)):
        raise ModelError("ONNX TreeEnsembleClassifier: a class has no vote and no base value (ONNX Runtime then "
                         "leaves it out of the argmax)")
    if all(touched[t] <= {i % n_classes} for i, t in enumerate(trees)):  # one class per tree, in turn
        raw = [_raw_tree(nodes, votes, t, i % n_classes) for i, t in enumerate(trees)]
    else:  # a tree voting for several classes: once per class
        raw = [_raw_tree(nodes, votes, t, c) for t in trees for c in range(n_classes)]
    return raw, list(base) if base else [Fraction(0)] * n_classes
