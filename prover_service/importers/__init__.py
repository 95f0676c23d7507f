"""Importers of a bank's own model artifacts.

A bank hands over the model exactly as it runs it: a fitted scikit-learn Pipeline, a torch network with its
fitted preprocessor, or an ONNX graph.  Each importer reads the fitted objects (never a re-typed schema) and
returns a `BankModel`: the feature schema over the bank's RAW columns, the exact float network over that
schema's inputs, and the bank's own runtime, so that the checked import can compare the imported network with
what the bank itself decides on every row.  What no model file says (which columns are sensitive, their
domains, the favourable class) comes from the bank's small facts file, `BankFacts`.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping, Protocol, Sequence

import numpy as np

from fairness.model import FloatMLP
from fairness.schema import FeatureSchema


@dataclass(frozen=True)
class BankFacts:
    """What no model file says, from the bank's small facts file (YAML or JSON) and options."""
    name: str                                        # model name for the schema
    sensitive: tuple[str, ...]                       # raw column names that are sensitive (at least one)
    domains: Mapping[str, tuple[float, float]]       # raw numeric column -> (min, max), raw units
    units: Mapping[str, str]                         # raw numeric column -> unit text ("" if none)
    label_column: str                                # the decision's column name in the bank's CSV
    class_values: tuple[str, ...] | None = None      # raw class values in model output order (None: from the model)
    class_labels: tuple[str, ...] | None = None      # readable labels, same order
    value_labels: Mapping[str, Mapping[str, str]] = field(default_factory=dict)  # column -> raw value -> label
    favourable: str | None = None                    # raw class value the lenses call favourable


class BankRuntime(Protocol):
    """The bank's own artifact run by its own runtime.

    `decide` takes RAW records (the CSV's text values, as FeatureSchema.encode receives them) and returns class
    indices in schema.label order.
    """
    name: str                                        # e.g. "scikit-learn 1.5.2", "onnxruntime 1.19.0"

    def decide(self, records: Sequence[Mapping[str, Any]]) -> np.ndarray: ...


@dataclass(frozen=True)
class BankModel:
    """A bank's model as read from its own files: schema, exact network, and the bank's runtime."""
    schema: FeatureSchema        # read from the fitted objects / graph, never re-typed
    network: FloatMLP            # fairness.model.FloatMLP over schema.feature_names, >= 2 logits
    runtime: BankRuntime
    source: str                  # what was read, e.g. "scikit-learn Pipeline(ColumnTransformer, MLPClassifier)"
    notes: tuple[str, ...] = ()  # exact rewrites made (one logit -> two, a scaled sensitive column folded, ...)


__all__ = ["BankFacts", "BankModel", "BankRuntime"]
