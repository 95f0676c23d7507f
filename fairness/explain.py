"""Where the committed model discriminates, in rules a person can read (HyFair's Algorithm 2).

Samples of the domain (around given discriminatory seeds and uniformly over the box, on the input
grid, categorical features at their categories) are labelled by k, the number of distinct decisions
the committed model gives over every combination of sensitive values with nothing else changed
(exact integer model). A shallow decision tree (scikit-learn) on the non-sensitive features
separates k >= 2 from k = 1; each path to a leaf that predicts k >= 2 is a rule. Per rule, on a
fresh sample drawn the same way: its coverage, its precision (share with k >= 2 among the points it
covers), and HyFair's robustness measure, mean k where the rule holds minus mean k where it does
not. Rules are printed in raw units when the preprocessing says how (`describe_rule`).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping, Sequence

import numpy as np

from .fixed_point import FixedPointModel, integer_logits


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


def sample(model: FixedPointModel, choices: Mapping[int, Sequence[int]], seeds: np.ndarray, n: int,
           rng: np.random.Generator, spread: float = 0.3) -> np.ndarray:
    """n grid points: half around the seeds (Gaussian steps of `spread` standardised units on numeric
    columns, each categorical column redrawn with probability 0.2), half uniform in the box."""
    one = 1 << model.scale_bits
    lo, hi = np.array(model.box_lower, dtype=np.int64), np.array(model.box_upper, dtype=np.int64)
    uniform = rng.integers(lo, hi + 1, size=(n - n // 2 if len(seeds) else n, len(lo)))
    for j, values in choices.items():
        uniform[:, j] = rng.choice(np.array(values, dtype=np.int64), size=len(uniform))
    if not len(seeds):
        return uniform
    near = seeds[rng.integers(0, len(seeds), n // 2)].astype(np.int64)
    near = near + np.rint(rng.normal(0, spread * one, size=near.shape)).astype(np.int64)
    for j, values in choices.items():
        redraw = rng.random(len(near)) < 0.2
        vals = np.array(values, dtype=np.int64)
        nearest = vals[np.abs(near[:, j][:, None] - vals[None, :]).argmin(axis=1)]
        near[:, j] = np.where(redraw, rng.choice(vals, size=len(near)), nearest)
    near = np.clip(near, lo, hi)
    return np.concatenate([near, uniform])


def explain(model: FixedPointModel, choices: Mapping[int, Sequence[int]], seeds: Sequence[Sequence[int]],
            samples: int = 5000, depth: int = 3, seed: int = 0) -> Explanation:
    from sklearn.tree import DecisionTreeClassifier

    if samples < 100 or depth < 1:
        raise ValueError("the explanation needs at least 100 samples and a tree depth of at least 1")
    rng = np.random.default_rng(seed)
    seed_array = np.array(list(seeds), dtype=np.int64).reshape(-1, model.net.n_inputs)
    free = [j for j in range(model.net.n_inputs) if j not in model.sensitive_columns]
    one = 1 << model.scale_bits
    train = sample(model, choices, seed_array, samples, rng)
    k_train = distinct_decisions(model, train)
    # balanced: a leaf predicts k >= 2 where its share is above the sample's base rate (discrimination is rare)
    tree = DecisionTreeClassifier(max_depth=depth, min_samples_leaf=max(10, samples // 100), random_state=seed,
                                  class_weight="balanced")
    tree.fit(train[:, free] / one, k_train >= 2)
    fresh = sample(model, choices, seed_array, samples, rng)
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
    """One condition in raw units when the preprocessing says how (a shipped dataset's), else standardised."""
    j = condition.column
    name = feature_names[j]
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
