"""Where the committed model discriminates, in rules a person can read (HyFair's Algorithm 2).

Samples of the domain (around given discriminatory seeds and uniformly over the box, on the input
grid, categorical features at their categories: an ordinal one at one of its codes, a one-hot one at
one of its categories' points, never between them) are labelled by k, the number of distinct decisions
the committed model gives over every combination of sensitive values with nothing else changed
(exact integer model). A shallow decision tree (scikit-learn) on the non-sensitive features
separates k >= 2 from k = 1; each path to a leaf that predicts k >= 2 is a rule. Per rule, on a
fresh sample drawn the same way: its coverage, its precision (share with k >= 2 among the points it
covers), and HyFair's robustness measure, mean k where the rule holds minus mean k where it does
not. Rules are printed in raw units when the preprocessing says how (`describe_condition`).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping, Sequence

import numpy as np

from fairness.fixed_point import FixedPointModel, integer_logits

Block = tuple[tuple[int, ...], tuple[tuple[int, ...], ...]]  # as the global search's: columns, their points


@dataclass(frozen=True)
class Condition:
    column: int
    upper: bool  # True: x <= threshold; False: x > threshold
    threshold: float  # standardised units


@dataclass(frozen=True)
class Rule:
    conditions: tuple[Condition, ...]
    coverage: float  # share of the fresh sample the rule covers
    precision: float  # share of covered points with k >= 2
    mean_k_difference: float  # mean k (rule holds) - mean k (rule does not)
    covered: int


@dataclass(frozen=True)
class Explanation:
    samples: int
    discriminatory_share: float  # in the training sample
    rules: tuple[Rule, ...]
    tree_accuracy: float  # on the fresh sample


def logits_per_slice(model: FixedPointModel, points: np.ndarray) -> list:
    """For every sensitive combination, the exact integer logits of the grid points with their sensitive
    columns set to it."""
    out = []
    for values in model.slices():
        x = points.copy()
        for c, v in zip(model.sensitive_columns, values):
            x[:, c] = v
        out.append(integer_logits(model.net, x.astype(object)))
    return out


def distinct_decisions(model: FixedPointModel, points: np.ndarray) -> np.ndarray:
    """k per grid point: how many distinct decisions its sensitive combinations get (exact)."""
    decided = [[max(range(len(row)), key=lambda j, row=row: (row[j], -j)) for row in z]
               for z in logits_per_slice(model, points)]
    return np.array([len(set(d)) for d in zip(*decided)], dtype=int)


def draw_encodings(points: np.ndarray, choices: Mapping[int, Sequence[int]], blocks: Sequence[Block],
                   rng: np.random.Generator) -> None:
    """Set every categorical input of `points` (in place) to an encoding drawn uniformly: a column in
    `choices` to one of its values, a block's columns to one of its points (a one-hot feature's
    categories), so that no sample lies between two categories."""
    for j, values in choices.items():
        points[:, j] = rng.choice(np.array(values, dtype=np.int64), size=len(points))
    for columns, block_points in blocks:
        table = np.array(block_points, dtype=np.int64)
        points[:, list(columns)] = table[rng.integers(0, len(table), size=len(points))]


def nearest_encodings(points: np.ndarray, choices: Mapping[int, Sequence[int]], blocks: Sequence[Block],
                      rng: np.random.Generator, redraw: float = 0.2) -> None:
    """Move every categorical input of `points` (in place) to its nearest encoding, or with probability
    `redraw` to one drawn uniformly: a step around a seed that stays on real records' encodings."""
    for j, values in choices.items():
        vals = np.array(values, dtype=np.int64)
        nearest = vals[np.abs(points[:, j][:, None] - vals[None, :]).argmin(axis=1)]
        points[:, j] = np.where(rng.random(len(points)) < redraw, rng.choice(vals, size=len(points)), nearest)
    for columns, block_points in blocks:
        table = np.array(block_points, dtype=np.int64)
        block = points[:, list(columns)]
        nearest = np.abs(block[:, None, :] - table[None, :, :]).sum(axis=2).argmin(axis=1)
        drawn = rng.integers(0, len(table), size=len(points))
        points[:, list(columns)] = table[np.where(rng.random(len(points)) < redraw, drawn, nearest)]


def sample(model: FixedPointModel, choices: Mapping[int, Sequence[int]], seeds: np.ndarray, n: int,
           rng: np.random.Generator, spread: float = 0.3, blocks: Sequence[Block] = ()) -> np.ndarray:
    """n grid points: half around the seeds (Gaussian steps of `spread` standardised units on numeric
    columns, each categorical feature at its nearest encoding or redrawn with probability 0.2), half
    uniform in the box (categorical features at a uniformly drawn encoding)."""
    one = 1 << model.scale_bits
    lo, hi = np.array(model.box_lower, dtype=np.int64), np.array(model.box_upper, dtype=np.int64)
    uniform = rng.integers(lo, hi + 1, size=(n - n // 2 if len(seeds) else n, len(lo)))
    draw_encodings(uniform, choices, blocks, rng)
    if not len(seeds):
        return uniform
    near = seeds[rng.integers(0, len(seeds), n // 2)].astype(np.int64)
    near = np.clip(near + np.rint(rng.normal(0, spread * one, size=near.shape)).astype(np.int64), lo, hi)
    nearest_encodings(near, choices, blocks, rng)
    return np.concatenate([near, uniform])


def explain(model: FixedPointModel, choices: Mapping[int, Sequence[int]], seeds: Sequence[Sequence[int]],
            samples: int = 5000, depth: int = 3, seed: int = 0, blocks: Sequence[Block] = ()) -> Explanation:
    """The rules of the module docstring. `choices` and `blocks`: the categorical inputs' encodings (the
    global search's `categorical_choices` and `one_hot_blocks`), the only values samples give them."""
    from sklearn.tree import DecisionTreeClassifier

    if samples < 100 or depth < 1:
        raise ValueError("the explanation needs at least 100 samples and a tree depth of at least 1")
    rng = np.random.default_rng(seed)
    seed_array = np.array(list(seeds), dtype=np.int64).reshape(-1, model.net.n_inputs)
    free = [j for j in range(model.net.n_inputs) if j not in model.sensitive_columns]
    one = 1 << model.scale_bits
    train = sample(model, choices, seed_array, samples, rng, blocks=blocks)
    k_train = distinct_decisions(model, train)
    # balanced: a leaf predicts k >= 2 where its share is above the sample's base rate (discrimination is rare)
    tree = DecisionTreeClassifier(max_depth=depth, min_samples_leaf=max(10, samples // 100), random_state=seed,
                                  class_weight="balanced")
    tree.fit(train[:, free] / one, k_train >= 2)
    fresh = sample(model, choices, seed_array, samples, rng, blocks=blocks)
    k_fresh = distinct_decisions(model, fresh)
    accuracy = float(np.mean(tree.predict(fresh[:, free] / one) == (k_fresh >= 2)))
    rules = []
    t = tree.tree_
    positive = list(tree.classes_).index(True) if True in tree.classes_ else None

    def walk(node: int, path: tuple[Condition, ...]) -> None:
        if t.children_left[node] == t.children_right[node]:  # a leaf
            if positive is not None and np.argmax(t.value[node][0]) == positive:
                holds = np.ones(len(fresh), dtype=bool)
                for c in path:
                    column = fresh[:, c.column] / one
                    holds &= column <= c.threshold if c.upper else column > c.threshold
                covered = int(holds.sum())
                precision = float(np.mean(k_fresh[holds] >= 2)) if covered else 0.0
                difference = (float(k_fresh[holds].mean() - k_fresh[~holds].mean())
                              if covered and covered < len(fresh) else 0.0)
                rules.append(Rule(path, covered / len(fresh), precision, difference, covered))
            return
        column = free[t.feature[node]]
        threshold = float(t.threshold[node])
        walk(t.children_left[node], path + (Condition(column, True, threshold),))
        walk(t.children_right[node], path + (Condition(column, False, threshold),))

    walk(0, ())
    rules.sort(key=lambda r: (-r.precision * r.coverage, -r.precision))
    return Explanation(samples, float(np.mean(k_train >= 2)), tuple(rules), accuracy)


def describe_condition(condition: Condition, preprocessor, feature_names: Sequence[str]) -> str:
    """One condition in raw units when the preprocessing says how (a bank's schema or a shipped dataset's
    preprocessor), else standardised."""
    from fairness.schema import FeatureSchema

    j = condition.column
    name = feature_names[j]
    if isinstance(preprocessor, FeatureSchema):
        return _schema_condition(condition, preprocessor)
    kinds = getattr(preprocessor, "kinds", None)
    if kinds is None:
        return f"{name} {'<=' if condition.upper else '>'} {condition.threshold:.4g} (standardised)"
    raw = condition.threshold * preprocessor.stds[j] + preprocessor.means[j]
    if kinds[j] == "categorical":
        categories = preprocessor.categories[name]
        labels = getattr(preprocessor, "category_labels", {}).get(name) or categories
        picked = [labels[k] for k in range(len(categories)) if (k <= raw) == condition.upper]
        return f"{name} in {{{', '.join(map(str, picked))}}}"
    return f"{name} {'<=' if condition.upper else '>'} {raw:.4g}"


def _schema_condition(condition: Condition, schema) -> str:
    """A condition on one model input in the schema's terms: a number as mean + std * threshold with its
    unit; a categorical feature (one input of a one-hot block, or an ordinal code) as the categories
    whose encoding satisfies it."""
    from fairness.schema import CategoricalFeature, NumericFeature

    op = "<=" if condition.upper else ">"
    for feature, first in schema.columns():
        k = condition.column - first
        if not 0 <= k < len(feature.inputs):
            continue
        if isinstance(feature, NumericFeature):
            raw = feature.mean + feature.std * condition.threshold
            return f"{feature.name} {op} {raw:.4g}" + (f" {feature.unit}" if feature.unit else "")
        if isinstance(feature, CategoricalFeature):
            encoded = [feature.encode(c)[k] for c in feature.categories]
            names = feature.labels or feature.categories
            picked = [n for n, v in zip(names, encoded) if (v <= condition.threshold) == condition.upper]
            return f"{feature.name} in {{{', '.join(picked)}}}"
        break
    return f"{schema.feature_names[condition.column]} {op} {condition.threshold:.4g} (standardised)"


def condition_json(condition: Condition, preprocessor, feature_names: Sequence[str]) -> dict:
    """A condition for a JSON report: its raw-units text beside the standardised threshold it was cut at."""
    return {"text": describe_condition(condition, preprocessor, feature_names),
            "input": feature_names[condition.column], "op": "<=" if condition.upper else ">",
            "standardised_threshold": condition.threshold}
