"""A bank that runs a gradient-boosted tree ensemble: its pipeline imported, committed and proved.

The bank fits Pipeline(ColumnTransformer(StandardScaler, OneHotEncoder), XGBClassifier or LGBMClassifier) on the
first 300 rows of german.data (foreign worker sensitive, one-hot); `TreeBank` imports it under the bank's facts
with the checked import on those rows, commits (the tree statement's key set up by the bank) and proves the
first customers whose certificates the statement proves. Used by the tree tests and the tree conformance family.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from bank_pipelines import GERMAN, column_transformer, frame, german_rows
from fairness.errors import CertificationError
from fairness.fixed_point import quantise_vector
from prover_service.importers import BankFacts
from prover_service.importers.trees import TreeBankModel, check_tree_import, read_tree_pipeline

FACTS = BankFacts(name="german-trees", sensitive=("foreign_worker",),
                  domains={"duration": (4, 72), "credit_amount": (250, 18424), "age": (19, 75),
                           "installment_commitment": (1, 4), "residence_since": (1, 4)},
                  units={"duration": "months"}, label_column="decision",
                  value_labels={"foreign_worker": {"A201": "foreign worker", "A202": "not a foreign worker"}})


def fitted_pipeline(library: str, n_trees: int = 4, depth: int = 2):
    """(the bank's fitted Pipeline, its raw records without the label)."""
    import lightgbm as lgb
    import xgboost as xgb
    from sklearn.pipeline import Pipeline
    from threadpoolctl import threadpool_limits

    rows = german_rows(300)
    y = np.array([r[GERMAN.label] == "good" for r in rows], dtype=int)
    clf = (xgb.XGBClassifier(n_estimators=n_trees, max_depth=depth, n_jobs=1) if library == "xgboost"
           else lgb.LGBMClassifier(n_estimators=n_trees, num_leaves=1 << depth, max_depth=depth, verbose=-1, n_jobs=1))
    with threadpool_limits(1):
        pipe = Pipeline([("prepare", column_transformer(GERMAN)), ("classify", clf)]).fit(frame(GERMAN, rows), y)
    return pipe, [{k: v for k, v in r.items() if k != GERMAN.label} for r in rows]


@dataclass
class TreeBank:
    """A committed tree-ensemble model directory and the bundles of its first provable customers."""

    root: Path
    library: str = "xgboost"
    n_proved: int = 2
    model_id: str = "german-trees"
    bank: TreeBankModel = field(init=False)
    records: list[dict[str, Any]] = field(init=False)
    bundles: list = field(init=False)
    proved_records: list[dict[str, Any]] = field(init=False)

    def __post_init__(self) -> None:
        from circuits.backends import get_backend
        from prover_service.tree_proving import TreeProver, TreeWorkspace, commit_trees, save_tree_model

        pipe, self.records = fitted_pipeline(self.library)
        self.bank = read_tree_pipeline(pipe, FACTS)
        check = check_tree_import(self.bank, self.records)
        save_tree_model(self.root, self.bank.model.ensemble, self.bank.schema,
                        {"source": self.bank.source, "import_check": {"rows": check.rows, "runtime": check.runtime}})
        self.workspace = TreeWorkspace.open(self.root)
        self.backend = get_backend()
        self.card = commit_trees(self.workspace, self.backend, model_id=self.model_id)
        self.prover = TreeProver(self.workspace, self.backend)
        self.bundles, self.proved_records = [], []
        for record in self.records:
            try:
                proof = self.prover.prove(self.query(record))
            except CertificationError:
                continue
            self.bundles.append(proof.bundle)
            self.proved_records.append({a: record[a] for a in self.bank.schema.attributes})  # what the customer has
            if len(self.bundles) == self.n_proved:
                break

    def query(self, record: dict[str, Any]) -> tuple[int, ...]:
        return self.query_of(self.bank.model, self.bank.schema, record)

    @staticmethod
    def query_of(model, schema, record: dict[str, Any]) -> tuple[int, ...]:
        """A raw record as the model's query (the schema's encoding, quantised half up)."""
        return quantise_vector(schema.encode({a: record[a] for a in schema.attributes}), model.scale_bits)
