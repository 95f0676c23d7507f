"""Gradient-boosted and random-forest tree ensembles in exact fixed point, and their fairness radius.

`ensemble` holds the integer model (thresholds at 2^s over the model's input encoding, leaf values at 2^v),
`loaders` reads XGBoost, LightGBM and scikit-learn ensembles into it, `onnx_trees` ONNX
TreeEnsembleClassifier graphs, `radius` certifies a sound radius in
polynomial time, `exact` computes the true radius of small ensembles by enumeration.
"""
from __future__ import annotations

from .ensemble import Tree, TreeEnsemble, TreeModel

__all__ = ["Tree", "TreeEnsemble", "TreeModel"]
