"""Fitted tree ensembles from XGBoost, LightGBM and scikit-learn, as exact `TreeEnsemble`s.

Every loader reads the library's own fitted numbers (never re-trains or re-derives them) and converts
them exactly: a threshold t (a double, or XGBoost's float32) is rounded to the 2^-s grid as inputs are
and keeps the library's comparison (`threshold_below` for XGBoost's x < t, `threshold_at_most` for
LightGBM's and scikit-learn's x <= t; see `fairness.trees.ensemble`); a leaf value is rounded once at 2^v.
XGBoost and scikit-learn's decision trees (GradientBoosting, RandomForest, ExtraTrees) round their input
to float32 before comparing, so their splits are read at the float32 rounding boundary
(`float32_boundary`): a value whose float32 equals a threshold taken from the data goes where the library
sends it. LightGBM and HistGradientBoosting compare doubles. Agreement with the library on real rows is
still an empirical fact the checked import establishes row by row, never assumed.

`scalings` (model input column -> (mean, std), std > 0) says the library was fitted on (x - mean) / std
of the model's input x: a split (x - m) / s < t is x < m + s t, composed exactly in rationals.

Refused, with a plain error: categorical splits, LightGBM's zero-as-missing, vector leaves, random-forest
mode boosters, objectives that are not classification. Missing values have no decision here: the
schema refuses a record with a missing value before any tree sees it.
"""
from __future__ import annotations

import json
import math
from fractions import Fraction
from pathlib import Path
from typing import Any, Mapping, Sequence, Union

import numpy as np

from fairness.errors import ModelError

from .ensemble import LEAF, Tree, TreeEnsemble, quantise_leaf, threshold_at_most, threshold_below

DEFAULT_SCALE_BITS = 16
# Leaf values at 2^-20: finer than the float32 sums XGBoost and scikit-learn score with (a margin of 100
# leaves rounded here moves by at most 5e-5, typically 1e-6), and each bit less is two range-check
# constraints per leaf, slice and side in the statement. A model with a row closer to its boundary than
# that is refused by the checked import, naming the row; a larger value_bits is the remedy.
DEFAULT_VALUE_BITS = 20
Scalings = Mapping[int, tuple[float, float]]

# A tree as read: ("leaf", value) or ("split", feature, threshold, left, right), left taken by the
# converter's rule (x < t or x <= t), or ("split", feature, threshold, left, right, rule) with a rule of its own.
RawNode = Union[tuple[str, Fraction], tuple[str, int, Fraction, Any, Any], tuple[str, int, Fraction, Any, Any, str]]


def float32_boundary(t: Fraction, rule: str) -> Fraction:
    """The real boundary m of a split `x < t` (rule "<") or `x <= t` ("<=") evaluated on float32(x), as
    XGBoost and scikit-learn's decision trees evaluate it: the split sends x right exactly when x >= m
    (x = m itself rounds to the even neighbour). b is the least float32 on the right side, a the float32
    below it, and float32(x) >= b exactly when x is past their midpoint."""
    b = np.float32(float(t))
    if Fraction(float(b)) < t or (rule == "<=" and Fraction(float(b)) == t):
        b = np.nextafter(b, np.float32(np.inf))
    a = np.nextafter(b, np.float32(-np.inf))
    return (Fraction(float(a)) + Fraction(float(b))) / 2


class Converter:
    """Raw trees -> integer trees under one split rule, one input scale and one value scale."""

    def __init__(self, rule: str, scale_bits: int, value_bits: int, scalings: Scalings | None, *,
                 float32_inputs: bool = False):
        if not isinstance(scale_bits, int) or not isinstance(value_bits, int) or scale_bits < 0 or value_bits < 0:
            raise ModelError("scale_bits and value_bits must be non-negative integers")
        self.rule, self.scale_bits, self.value_bits = rule, scale_bits, value_bits
        self.float32_inputs = float32_inputs
        self.scalings = dict(scalings or {})
        for c, (m, s) in self.scalings.items():
            if not (math.isfinite(m) and math.isfinite(s) and s > 0):
                raise ModelError(f"input {c}: scaling (x - {m}) / {s} cannot be folded into thresholds")

    def threshold(self, feature: int, t: Fraction, rule: str | None = None) -> int:
        rule = rule or self.rule
        if self.float32_inputs:  # the library rounds its input to float32 before comparing
            t, rule = float32_boundary(t, rule), "<"
        if feature in self.scalings:
            m, s = self.scalings[feature]
            t = Fraction(m) + Fraction(s) * t
        convert = threshold_below if rule == "<" else threshold_at_most
        return convert(t, self.scale_bits)

    def tree(self, root: RawNode) -> Tree:
        feature: list[int] = []
        threshold: list[int] = []
        left: list[int] = []
        right: list[int] = []
        value: list[int] = []

        def add(node: RawNode) -> int:  # preorder: children land after their parent
            i = len(feature)
            feature.append(LEAF)
            threshold.append(0)
            left.append(-1)
            right.append(-1)
            value.append(0)
            if node[0] == "leaf":
                value[i] = quantise_leaf(node[1], self.value_bits)  # type: ignore[misc]
                return i
            _, f, t, lo, hi, *rule = node  # type: ignore[misc]
            feature[i], threshold[i] = int(f), self.threshold(int(f), t, *rule)
            left[i] = add(lo)
            right[i] = add(hi)
            return i

        add(root)
        return Tree(tuple(feature), tuple(threshold), tuple(left), tuple(right), tuple(value))


def _fraction(v: Any, what: str) -> Fraction:
    x = float(v)
    if not math.isfinite(x):
        raise ModelError(f"{what}: {v!r} is not a finite number")
    return Fraction(x)


def _f32(v: Any, what: str) -> Fraction:
    """XGBoost's numbers are float32: the JSON's decimal text read back as the float32 it was written from."""
    return _fraction(np.float32(float(v)), what)


# --------------------------------------------------------------------------- XGBoost


def from_xgboost(model: Mapping[str, Any] | str | bytes | bytearray | Path, *, n_inputs: int | None = None,
                 scale_bits: int = DEFAULT_SCALE_BITS, value_bits: int = DEFAULT_VALUE_BITS,
                 scalings: Scalings | None = None) -> TreeEnsemble:
    """An XGBoost classifier from its JSON model (`Booster.save_model("m.json")`, or `save_raw("json")`):
    a path, the JSON text/bytes, or the parsed dict. (`from_xgboost_dump` reads `get_dump` output.)"""
    data = _json(model, "XGBoost model")
    try:
        learner = data["learner"]
        params = learner["learner_model_param"]
        objective = learner["objective"]["name"]
        booster = learner["gradient_booster"]
        trees_json = booster["model"]["trees"]
        tree_info = list(booster["model"]["tree_info"])
    except (KeyError, TypeError):
        raise ModelError("XGBoost model: not a Booster JSON model (save_model with a .json name)") from None
    if booster.get("name") != "gbtree":
        raise ModelError(f"XGBoost model: booster {booster.get('name')!r} is not a tree booster (gbtree)")
    if int(params.get("num_target", 1)) != 1:
        raise ModelError("XGBoost model: several targets cannot be certified")
    n_classes = max(int(params.get("num_class", 0)), 2)
    n_features = int(params["num_feature"])
    n_scores = 1 if n_classes == 2 else n_classes
    base_values = _xgb_base(params["base_score"], n_scores)
    if objective in ("binary:logistic", "reg:logistic"):
        if n_scores != 1:
            raise ModelError(f"XGBoost model: objective {objective} with {n_classes} classes")
        p = base_values[0]
        if not 0 < p < 1:
            raise ModelError(f"XGBoost model: base_score {p} is not a probability")
        base = [Fraction(math.log(p / (1 - p)))]
    elif objective in ("binary:logitraw", "binary:hinge") and n_scores == 1:
        base = [Fraction(base_values[0])]
    elif objective in ("multi:softprob", "multi:softmax") and n_scores > 1:
        base = [Fraction(b) for b in base_values]
    else:
        raise ModelError(f"XGBoost model: objective {objective!r} with {n_classes} classes is not a classifier "
                         "FairProof reads (binary:logistic, binary:logitraw, multi:softprob, multi:softmax)")
    if tree_info != [i % n_scores for i in range(len(trees_json))]:
        raise ModelError("XGBoost model: trees are not laid out one per class in turn")
    conv = Converter("<", scale_bits, value_bits, scalings, float32_inputs=True)
    trees = tuple(conv.tree(_xgb_tree(t, i)) for i, t in enumerate(trees_json))
    n = _inputs(n_inputs, n_features, "XGBoost model")
    return TreeEnsemble(n, n_classes, scale_bits, value_bits, trees,
                        tuple(quantise_leaf(b, value_bits) for b in base))


def _xgb_base(text: Any, n_scores: int) -> list[float]:
    values = [float(np.float32(float(v))) for v in str(text).strip("[]").split(",") if v.strip()]
    if len(values) == 1 and n_scores > 1:
        values = values * n_scores
    if len(values) != n_scores:
        raise ModelError(f"XGBoost model: base_score {text!r} for {n_scores} score(s)")
    return values


def _xgb_tree(t: Mapping[str, Any], index: int) -> RawNode:
    where = f"XGBoost tree {index}"
    if int(t["tree_param"].get("size_leaf_vector", 1)) > 1:
        raise ModelError(f"{where}: vector leaves (multi_strategy) cannot be certified")
    if any(int(v) != 0 for v in t.get("split_type", [])):
        raise ModelError(f"{where}: a categorical split cannot be certified (one-hot encode the column instead)")
    left, right = t["left_children"], t["right_children"]
    cond, feat = t["split_conditions"], t["split_indices"]

    def node(i: int) -> RawNode:
        if left[i] == -1:
            return ("leaf", _f32(cond[i], where))
        return ("split", int(feat[i]), _f32(cond[i], where), node(left[i]), node(right[i]))

    return node(0)


def from_xgboost_dump(dump: Sequence[str | Mapping[str, Any]], *, n_classes: int, base_margin: Sequence[float],
                      n_inputs: int, feature_names: Sequence[str] | None = None,
                      scale_bits: int = DEFAULT_SCALE_BITS, value_bits: int = DEFAULT_VALUE_BITS,
                      scalings: Scalings | None = None) -> TreeEnsemble:
    """An XGBoost classifier from `Booster.get_dump(dump_format="json")` (one JSON text per tree). A dump says
    nothing of the objective or the base score: give the number of classes and the base margin per score
    (binary:logistic's base_score p is the margin log(p / (1 - p)))."""
    n_scores = 1 if n_classes == 2 else n_classes
    if len(base_margin) != n_scores:
        raise ModelError(f"XGBoost dump: {len(base_margin)} base margin(s) for {n_scores} score(s)")
    names = {n: i for i, n in enumerate(feature_names or ())}
    conv = Converter("<", scale_bits, value_bits, scalings, float32_inputs=True)
    trees = []
    for i, text in enumerate(dump):
        where = f"XGBoost dump tree {i}"
        root = text if isinstance(text, Mapping) else _json(str(text), where)
        trees.append(conv.tree(_xgb_dump_node(root, names, where)))
    return TreeEnsemble(n_inputs, n_classes, scale_bits, value_bits, tuple(trees),
                        tuple(quantise_leaf(_fraction(b, "XGBoost dump base margin"), value_bits) for b in base_margin))


def _xgb_dump_node(node: Mapping[str, Any], names: Mapping[str, int], where: str) -> RawNode:
    if "leaf" in node:
        return ("leaf", _f32(node["leaf"], where))
    if "split_condition" not in node:
        raise ModelError(f"{where}: node {node.get('nodeid')} is not a numeric split (categorical splits cannot be "
                         "certified)")
    split = str(node["split"])
    if split in names:
        feature = names[split]
    elif split.startswith("f") and split[1:].isdigit():
        feature = int(split[1:])
    else:
        raise ModelError(f"{where}: split on {split!r}, which is not one of the given feature names")
    children = {int(c["nodeid"]): c for c in node["children"]}
    yes, no = children[int(node["yes"])], children[int(node["no"])]
    return ("split", feature, _f32(node["split_condition"], where), _xgb_dump_node(yes, names, where),
            _xgb_dump_node(no, names, where))


# --------------------------------------------------------------------------- LightGBM


def from_lightgbm(dump: Mapping[str, Any] | str | bytes | bytearray | Path, *, n_inputs: int | None = None,
                  scale_bits: int = DEFAULT_SCALE_BITS, value_bits: int = DEFAULT_VALUE_BITS,
                  scalings: Scalings | None = None) -> TreeEnsemble:
    """A LightGBM classifier from `Booster.dump_model()` (a dict, its JSON text, or a JSON file)."""
    data = _json(dump, "LightGBM model")
    try:
        objective = str(data["objective"]).split()[0]
        n_classes = max(int(data["num_class"]), 2)
        per_iteration = int(data["num_tree_per_iteration"])
        infos = data["tree_info"]
        n_features = int(data["max_feature_idx"]) + 1
    except (KeyError, TypeError, ValueError):
        raise ModelError("LightGBM model: not a Booster.dump_model() dictionary") from None
    n_scores = 1 if n_classes == 2 else n_classes
    if objective not in ("binary", "multiclass", "multiclassova", "softmax", "ova") or per_iteration != n_scores:
        raise ModelError(f"LightGBM model: objective {data['objective']!r} is not a classifier FairProof reads "
                         "(binary, multiclass)")
    if data.get("average_output"):
        raise ModelError("LightGBM model: random-forest mode (averaged output) is not read; use boosting")
    conv = Converter("<=", scale_bits, value_bits, scalings)
    trees = []
    for i, info in enumerate(infos):
        if info.get("is_linear"):
            raise ModelError(f"LightGBM tree {i}: linear trees cannot be certified")
        trees.append(conv.tree(_lgb_node(info["tree_structure"], f"LightGBM tree {i}")))
    n = _inputs(n_inputs, n_features, "LightGBM model")
    return TreeEnsemble(n, n_classes, scale_bits, value_bits, tuple(trees), (0,) * n_scores)


def _lgb_node(node: Mapping[str, Any], where: str) -> RawNode:
    if "leaf_value" in node:
        return ("leaf", _fraction(node["leaf_value"], where))
    if node.get("decision_type") != "<=":
        raise ModelError(f"{where}: split {node.get('decision_type')!r} (categorical) cannot be certified")
    if node.get("missing_type") == "Zero":
        raise ModelError(f"{where}: zero_as_missing sends zeros by a default direction; refit without it")
    return ("split", int(node["split_feature"]), _fraction(node["threshold"], where),
            _lgb_node(node["left_child"], where), _lgb_node(node["right_child"], where))


# --------------------------------------------------------------------------- scikit-learn


def from_sklearn(estimator: Any, *, scale_bits: int = DEFAULT_SCALE_BITS, value_bits: int = DEFAULT_VALUE_BITS,
                 scalings: Scalings | None = None) -> TreeEnsemble:
    """A fitted GradientBoostingClassifier, HistGradientBoostingClassifier or RandomForestClassifier
    (or ExtraTreesClassifier)."""
    from sklearn.ensemble import (ExtraTreesClassifier, GradientBoostingClassifier, HistGradientBoostingClassifier,
                                  RandomForestClassifier)

    name = type(estimator).__name__
    n_classes = len(getattr(estimator, "classes_", ()))
    if n_classes < 2:
        raise ModelError(f"{name}: not a fitted classifier of at least two classes")
    n = int(estimator.n_features_in_)
    if isinstance(estimator, GradientBoostingClassifier):  # its trees read float32(X)
        conv = Converter("<=", scale_bits, value_bits, scalings, float32_inputs=True)
        stages = estimator.estimators_
        lr = float(estimator.learning_rate)
        trees = [conv.tree(_sk_tree(stages[i, k].tree_, lambda v, lr=lr: Fraction(lr * float(v[0])), f"{name} tree"))
                 for i in range(stages.shape[0]) for k in range(stages.shape[1])]
        base = estimator._raw_predict_init(np.zeros((1, n), dtype=np.float32))[0]
    elif isinstance(estimator, HistGradientBoostingClassifier):
        conv = Converter("<=", scale_bits, value_bits, scalings)
        trees = [conv.tree(_hgb_tree(p.nodes, f"{name} tree")) for stage in estimator._predictors for p in stage]
        base = np.asarray(estimator._baseline_prediction, dtype=np.float64).ravel()
    elif isinstance(estimator, (RandomForestClassifier, ExtraTreesClassifier)):  # float32(X) too
        conv = Converter("<=", scale_bits, value_bits, scalings, float32_inputs=True)
        trees = []
        for t in estimator.estimators_:
            for c in range(1 if n_classes == 2 else n_classes):
                trees.append(conv.tree(_sk_tree(t.tree_, _forest_leaf(n_classes, c), f"{name} tree")))
        base = np.zeros(1 if n_classes == 2 else n_classes)
    else:
        raise ModelError(f"{name} is not a tree ensemble FairProof reads (GradientBoostingClassifier, "
                         "HistGradientBoostingClassifier, RandomForestClassifier, ExtraTreesClassifier)")
    return TreeEnsemble(n, n_classes, scale_bits, value_bits, tuple(trees),
                        tuple(quantise_leaf(_fraction(b, f"{name} base"), value_bits) for b in base))


def _forest_leaf(n_classes: int, c: int) -> Any:
    """A forest tree's leaf as the score it adds: its class fractions normalised exactly (as predict_proba
    normalises); binary p1 - p0, multiclass p_c."""
    def value(v: Any) -> Fraction:
        fractions = [Fraction(float(p)) for p in v]
        total = sum(fractions)
        if total <= 0:
            raise ModelError("a forest leaf has no weight")
        return (fractions[1] - fractions[0]) / total if n_classes == 2 else fractions[c] / total

    return value


def _sk_tree(t: Any, leaf: Any, where: str) -> RawNode:
    if t.n_outputs != 1:
        raise ModelError(f"{where}: several outputs cannot be certified")
    left, right, feature, threshold, value = t.children_left, t.children_right, t.feature, t.threshold, t.value

    def node(i: int) -> RawNode:
        if left[i] == -1:
            return ("leaf", leaf(value[i][0]))
        return ("split", int(feature[i]), _fraction(threshold[i], where), node(int(left[i])), node(int(right[i])))

    return node(0)


def _hgb_tree(nodes: Any, where: str) -> RawNode:
    def node(i: int) -> RawNode:
        row = nodes[i]
        if row["is_leaf"]:
            return ("leaf", _fraction(row["value"], where))
        if row["is_categorical"]:
            raise ModelError(f"{where}: a categorical split cannot be certified (one-hot encode the column)")
        return ("split", int(row["feature_idx"]), _fraction(row["num_threshold"], where),
                node(int(row["left"])), node(int(row["right"])))

    return node(0)


# --------------------------------------------------------------------------- helpers


def _json(source: Any, what: str) -> Mapping[str, Any]:
    if isinstance(source, Mapping):
        return source
    try:
        if isinstance(source, Path):
            source = source.read_text()
        elif isinstance(source, str) and not source.lstrip().startswith("{"):
            source = Path(source).read_text()
        data = json.loads(source)
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise ModelError(f"{what}: cannot read it as JSON ({exc})") from None
    if not isinstance(data, Mapping):
        raise ModelError(f"{what}: the JSON is not an object")
    return data


def _inputs(given: int | None, read: int, what: str) -> int:
    if given is None:
        return read
    if given < read:
        raise ModelError(f"{what}: it reads {read} inputs, the model has {given}")
    return given
