"""A bank whose sensitive attribute is one-hot encoded, as banks' OneHotEncoder writes it.

The bank's schema has two numeric attributes, `race` one-hot over three values (three model inputs, each
value a unit point) and `sex` held as one code; its network is a small random ReLU network that leans on
race, so some customers' decisions change with race alone. `OneHotBank` commits it with the radius, the
spread and the persistence lenses, precomputes its regions and proves two customers: one certified, one
whose decision flips when race alone changes. No shipped dataset is needed.
"""
from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import numpy as np

from fairness.schema import FeatureSchema

MODEL = "onehot-credit"
PERSISTENCE_DELTA = 0.25  # the card's default box half-width, standardised units
RACES = ("a", "b", "c")
SEXES = ("F", "M")


def schema_json(drop: str | None = None) -> dict[str, Any]:
    """The bank's schema; `drop` names a race value without an input of its own (OneHotEncoder(drop=...))."""
    race = {"name": "race", "kind": "sensitive", "encoding": "one_hot", "values": list(RACES),
            **({"drop": drop} if drop is not None else {})}
    return {
        "format": "fairproof-schema/1",
        "name": MODEL,
        "description": "A synthetic credit book with a one-hot sensitive attribute",
        "features": [
            {"name": "income", "kind": "numeric", "min": 0, "max": 200, "mean": 60.0, "std": 30.0, "unit": "kEUR"},
            race,
            {"name": "duration", "kind": "numeric", "min": 3, "max": 72, "mean": 24.0, "std": 12.0,
             "unit": "months"},
            {"name": "sex", "kind": "sensitive", "values": list(SEXES), "labels": ["female", "male"]},
        ],
        "label": {"column": "default", "values": ["no", "yes"], "labels": ["repays", "defaults"]},
    }


def schema(drop: str | None = None) -> FeatureSchema:
    return FeatureSchema.model_validate(schema_json(drop))


# A customer every combination of race and sex decides alike, and one whom race c (alone) decides otherwise.
CERTIFIED = {"income": 50, "race": "b", "duration": 70, "sex": "F"}
FLIPPED = {"income": 90, "race": "b", "duration": 24, "sex": "F"}
# Under race dropping "a": a customer of the dropped value, whose race inputs are all zeros.
DROPPED = {"income": 50, "race": "a", "duration": 70, "sex": "M"}


def network(bank_schema: FeatureSchema, seed: int = 2):
    """The bank's network: one hidden layer of three ReLUs, its weights on race's inputs tripled."""
    from fairness.model import FloatMLP

    rng = np.random.default_rng(seed)
    sizes = [bank_schema.n_inputs, 3, 2]
    weights = [rng.normal(0, 0.8, (sizes[i + 1], sizes[i])) for i in range(2)]
    biases = [rng.normal(0, 0.3, sizes[i + 1]) for i in range(2)]
    race = [j for j, name in enumerate(bank_schema.feature_names) if name.startswith("race=")]
    weights[0][:, race] *= 3
    return FloatMLP(weights, biases)


def artifact(drop: str | None = None):
    from fairness.model import artifact_from_schema

    bank_schema = schema(drop)
    return artifact_from_schema(network(bank_schema), bank_schema)


def plaintext_decisions(bank_artifact, model, record: dict[str, Any]) -> dict[tuple[str, str], int]:
    """The committed integer model's decision for the record with every (race, sex), each record encoded by
    the schema from its raw values (never through the statement's slices)."""
    from fairness.fixed_point import quantise_query

    out = {}
    for race, sex in itertools.product(RACES, SEXES):
        x = bank_artifact.preprocessor.encode({**record, "race": race, "sex": sex})
        out[(race, sex)] = model.net.decision(quantise_query(model, x))
    return out


class OneHotBank:
    """The committed one-hot model and its customers' certificates (bundles re-issued under the final card:
    a bucket added for a later customer changes the card, not an earlier one's statement). With `drop`, race's
    dropped value has no input (two inputs, that value all zeros) and `records` name the customers."""

    def __init__(self, root: Path, drop: str | None = None, records: list[dict[str, Any]] | None = None):
        from circuits.backends import get_backend
        from commitments.card import ModelCard
        from fairness.model import save_artifact
        from offline_precompute.certify import query_from_record
        from offline_precompute.db import open_database, resolve_store_url
        from offline_precompute.enumerate import precompute
        from prover_service.bucket_keys import SinglePartyKeySetup
        from prover_service.proving import Prover
        from prover_service.publishing import commit_model
        from prover_service.workspace import ModelWorkspace

        self.artifact = artifact(drop)
        save_artifact(self.artifact, root / "model")
        workspace = ModelWorkspace.open(root / "model")
        commit_model(workspace, model_id=MODEL, persistence_delta=PERSISTENCE_DELTA)
        self.db = open_database(resolve_store_url(None, workspace.root))
        self.prover = Prover(workspace, self.db, get_backend(), key_setup=SinglePartyKeySetup())
        self.model = self.prover.model
        precompute(self.db, self.model)
        self.records = [dict(r) for r in (records or (CERTIFIED, FLIPPED))]
        proved = [self.prover.prove(query_from_record(self.artifact, self.model, r)) for r in self.records]
        self.card = ModelCard.from_json(self.prover.card.canonical_json())  # as served
        self.certificates = [p.certificate for p in proved]
        self.bundles = [p.bundle.model_copy(update={"card_digest": self.card.digest()}) for p in proved]
