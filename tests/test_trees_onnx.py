"""ONNX TreeEnsembleClassifier graphs (fairness.trees.onnx_trees) against ONNX Runtime, row by row.

scikit-learn's gradient boosting and random forests, binary and three-class, exported by skl2onnx: the
exact ensemble decides every row as ONNX Runtime labels it (continuous inputs, not only a grid), and the
same holds after every split is rewritten with the opposite comparison (x > t with its branches swapped
for x <= t). The rejection twins: a moved threshold or base no longer agrees; a graph that preprocesses
before the trees, an equality split, votes for class 1 in a binary model, a model without trees and bytes
that are no model are refused in plain words.
"""
from __future__ import annotations

import numpy as np
import pytest

from fairness.errors import ModelError
from fairness.fixed_point import quantise_vector
from fairness.trees.ensemble import TreeEnsemble
from fairness.trees.onnx_trees import from_onnx

S = 16


def data(seed: int, classes: int, n: int = 300) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    X = rng.uniform(-2, 2, size=(n, 4)).astype(np.float32)
    X[:, 3] = rng.integers(0, 2, n)
    z = X[:, 0] + 0.7 * X[:, 1] - 0.4 * X[:, 2] + 0.3 * X[:, 3]
    y = (z > 0).astype(int) if classes == 2 else np.digitize(z, [-0.6, 0.6])
    return X, y


def exported(clf, X: np.ndarray):
    from skl2onnx import to_onnx

    return to_onnx(clf, X[:1], target_opset={"": 17, "ai.onnx.ml": 3}, options={id(clf): {"zipmap": False}})


def runtime_labels(model, X: np.ndarray) -> list[int]:
    import onnxruntime as ort

    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return [int(v) for v in session.run(None, {session.get_inputs()[0].name: X})[0]]


def decisions(ens: TreeEnsemble, X: np.ndarray) -> list[int]:
    return [ens.decision(quantise_vector(x, S)) for x in X.astype(np.float64)]


def classifiers(classes: int):
    from sklearn.ensemble import GradientBoostingClassifier, RandomForestClassifier

    return [GradientBoostingClassifier(n_estimators=8, max_depth=3, random_state=0),
            RandomForestClassifier(n_estimators=6, max_depth=4, random_state=0)]


def tree_node(model):
    return next(n for n in model.graph.node if n.op_type == "TreeEnsembleClassifier")


def attribute(node, name: str):
    return next(a for a in node.attribute if a.name == name)


@pytest.mark.parametrize("classes", [2, 3])
def test_every_row_is_decided_as_onnx_runtime_labels_it(classes):
    from threadpoolctl import threadpool_limits

    X, y = data(3, classes)
    for clf in classifiers(classes):
        with threadpool_limits(1):
            clf.fit(X, y)
        model = exported(clf, X)
        ens = from_onnx(model, scale_bits=S)
        labels = runtime_labels(model, X)
        assert decisions(ens, X) == labels, type(clf).__name__
        assert len(set(labels)) == classes  # every class is decided somewhere: the check can tell them apart
        # the rejection twin: the base moved towards the first class no longer agrees
        moved = TreeEnsemble(ens.n_inputs, ens.n_classes, S, ens.value_bits, ens.trees,
                             (ens.base[0] + (8 << ens.value_bits),) + ens.base[1:])
        assert decisions(moved, X) != labels


def test_the_opposite_comparison_with_swapped_branches_reads_the_same():
    """BRANCH_LEQ -> BRANCH_GT with true and false swapped is the same function; BRANCH_LT / BRANCH_GTE
    differ from them only on the threshold itself, which the rows then hit exactly."""
    from sklearn.ensemble import GradientBoostingClassifier

    X, y = data(4, 2)
    clf = GradientBoostingClassifier(n_estimators=6, max_depth=3, random_state=0).fit(X, y)
    model = exported(clf, X)
    node = tree_node(model)
    modes, true, false = (attribute(node, k) for k in ("nodes_modes", "nodes_truenodeids", "nodes_falsenodeids"))
    for i, mode in enumerate(modes.strings):
        if mode == b"BRANCH_LEQ" and i % 2:
            modes.strings[i] = b"BRANCH_GT"
            true.ints[i], false.ints[i] = false.ints[i], true.ints[i]
    assert b"BRANCH_GT" in modes.strings and b"BRANCH_LEQ" in modes.strings
    on_thresholds = at_thresholds(node, X[:30])
    for rows in (X, on_thresholds):
        assert decisions(from_onnx(model, scale_bits=S), rows) == runtime_labels(model, rows)
    for i, mode in enumerate(modes.strings):  # the strict forms, on the thresholds themselves
        modes.strings[i] = {b"BRANCH_GT": b"BRANCH_GTE", b"BRANCH_LEQ": b"BRANCH_LT"}.get(mode, mode)
    assert decisions(from_onnx(model, scale_bits=S), on_thresholds) == runtime_labels(model, on_thresholds)


def at_thresholds(node, rows: np.ndarray) -> np.ndarray:
    """Each row once per split, its feature set to the split's threshold exactly (float32)."""
    features = attribute(node, "nodes_featureids").ints
    values = attribute(node, "nodes_values").floats
    modes = attribute(node, "nodes_modes").strings
    out = []
    for f, t, mode in zip(features, values, modes):
        if mode != b"LEAF":
            copy = rows.copy()
            copy[:, f] = t
            out.append(copy)
    return np.concatenate(out)


def test_a_moved_threshold_no_longer_agrees():
    from sklearn.ensemble import GradientBoostingClassifier

    X, y = data(5, 2)
    clf = GradientBoostingClassifier(n_estimators=6, max_depth=2, random_state=0).fit(X, y)
    model = exported(clf, X)
    labels = runtime_labels(model, X)
    values = attribute(tree_node(model), "nodes_values").floats
    values[0] += 1.5  # the first tree's root split, read by every row
    assert decisions(from_onnx(model, scale_bits=S), X) == runtime_labels(model, X)  # read as the runtime reads it
    assert runtime_labels(model, X) != labels  # and it is another model


def test_what_cannot_be_read_is_refused_in_plain_words():
    from sklearn.ensemble import GradientBoostingClassifier
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    X, y = data(6, 2)
    clf = GradientBoostingClassifier(n_estimators=3, max_depth=2, random_state=0).fit(X, y)
    with pytest.raises(ModelError, match="does not read the graph's input directly"):
        from_onnx(exported(make_pipeline(StandardScaler(), clf).fit(X, y), X))
    with pytest.raises(ModelError, match="expected one ai.onnx.ml TreeEnsembleClassifier, found 0"):
        from_onnx(exported(LogisticRegression().fit(X, y), X))
    with pytest.raises(ModelError, match="cannot read it"):
        from_onnx(b"not an onnx model")

    model = exported(clf, X)
    modes = attribute(tree_node(model), "nodes_modes")
    modes.strings[0] = b"BRANCH_EQ"
    with pytest.raises(ModelError, match="split mode BRANCH_EQ cannot be certified"):
        from_onnx(model)

    model = exported(clf, X)
    attribute(tree_node(model), "class_ids").ints[0] = 1
    with pytest.raises(ModelError, match="votes for class 1 is not read"):
        from_onnx(model)
    assert from_onnx(exported(clf, X)).n_classes == 2  # the untouched export reads
