"""A small synthetic credit dataset the project does not ship, and a bank that trains on it.

The bank has its own pipeline: raw attributes in its own order, a one-hot
purpose, an ordinal housing code, two sensitive attributes (sex with two
values, region with three), and its own standardisation. It trains a ReLU
network with that pipeline and records its own decision in every row, as a
bank exporting its scored data would.
"""
from __future__ import annotations

import csv
from pathlib import Path

import numpy as np

from fairness.schema import FeatureSchema

SCHEMA = {
    "format": "fairproof-schema/1",
    "name": "synthetic-credit",
    "description": "A synthetic consumer-credit book",
    "features": [
        {"name": "age", "kind": "numeric", "min": 18, "max": 80, "mean": 45.0, "std": 14.0, "unit": "years"},
        {"name": "income", "kind": "numeric", "min": 0, "max": 200, "mean": 60.0, "std": 30.0, "unit": "kEUR"},
        {"name": "purpose", "kind": "categorical", "encoding": "one_hot", "categories": ["car", "house", "education"]},
        {"name": "housing", "kind": "categorical", "encoding": "ordinal", "categories": ["rent", "own", "free"],
         "mean": 1.0, "std": 0.8},
        {"name": "duration", "kind": "numeric", "min": 3, "max": 72, "mean": 24.0, "std": 12.0, "unit": "months"},
        {"name": "sex", "kind": "sensitive", "values": ["F", "M"], "labels": ["female", "male"]},
        {"name": "region", "kind": "sensitive", "values": ["north", "south", "east"]},
    ],
    "label": {"column": "default", "values": ["no", "yes"], "labels": ["repays", "defaults"]},
}
PURPOSES = ("car", "house", "education")
HOUSING = ("rent", "own", "free")


def schema() -> FeatureSchema:
    return FeatureSchema.model_validate(SCHEMA)


def raw_rows(n: int, seed: int = 0) -> list[dict[str, str]]:
    rng = np.random.default_rng(seed)
    rows = []
    for _ in range(n):
        age = int(rng.integers(18, 81))
        income = round(float(np.clip(rng.gamma(4.0, 15.0), 0, 200)), 1)
        duration = int(rng.integers(3, 73))
        purpose, housing = PURPOSES[rng.integers(3)], HOUSING[rng.integers(3)]
        sex, region = ("F", "M")[rng.integers(2)], ("north", "south", "east")[rng.integers(3)]
        risk = 0.04 * duration - 0.03 * income + 0.02 * (45 - age) + (0.6 if purpose == "education" else 0.0) \
            + (0.5 if housing == "rent" else 0.0) + 0.3 * (sex == "M") + rng.normal(0, 0.6)
        rows.append({"age": str(age), "income": str(income), "purpose": purpose, "housing": housing,
                     "duration": str(duration), "sex": sex, "region": region, "default": "yes" if risk > -0.3 else "no"})
    return rows


def train_bank_network(X: np.ndarray, y: np.ndarray, hidden: int = 4, seed: int = 0, epochs: int = 300):
    """The bank's own torch training (float32, full batch Adam)."""
    import torch

    torch.manual_seed(seed)
    net = torch.nn.Sequential(torch.nn.Linear(X.shape[1], hidden), torch.nn.ReLU(), torch.nn.Linear(hidden, 2))
    opt = torch.optim.Adam(net.parameters(), lr=0.05)
    Xt, yt = torch.tensor(X, dtype=torch.float32), torch.tensor(y)
    for _ in range(epochs):
        opt.zero_grad()
        torch.nn.functional.cross_entropy(net(Xt), yt).backward()
        opt.step()
    return net


def write_bank(root: Path, n_rows: int, seed: int, hidden: int = 3) -> list[dict[str, str]]:
    """The bank's files in `root`: its network trained on `n_rows` rows (net.pt, a torch state dict)
    and its schema (schema.json); returns the rows."""
    import json

    import torch

    rows = raw_rows(n_rows, seed=seed)
    bank_schema = schema()
    X = np.array([bank_schema.encode({a: r[a] for a in bank_schema.attributes}) for r in rows])
    y = np.array([bank_schema.label.values.index(r["default"]) for r in rows])
    torch.save(train_bank_network(X, y, hidden=hidden).state_dict(), root / "net.pt")
    (root / "schema.json").write_text(json.dumps(SCHEMA))
    return rows


def write_csv(path: Path, rows: list[dict[str, str]], decisions: list[str] | None = None,
              columns: list[str] | None = None) -> Path:
    """The bank's export: its own column order (deliberately not the schema's), plus its decisions."""
    columns = columns or ["default", "region", "duration", "sex", "income", "housing", "purpose", "age"]
    with path.open("w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(columns + (["prediction"] if decisions is not None else []))
        for i, r in enumerate(rows):
            w.writerow([r[c] for c in columns] + ([decisions[i]] if decisions is not None else []))
    return path
