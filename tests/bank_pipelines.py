"""Banks' own pipelines on the real credit datasets, as a bank would hand them over.

Per dataset (German credit, Default of Credit Card Clients), from a small
subset of its rows read from the shared data directory (never copied into the
repository), the bank

- fits a scikit-learn Pipeline(ColumnTransformer(StandardScaler / MinMaxScaler
  on numeric columns, OneHotEncoder on categorical ones, the sensitive ones
  included; the other columns dropped), MLPClassifier) and saves it with joblib;
- fits the same ColumnTransformer on its own (saved separately) and trains torch
  networks on its output: one with ONE output logit, saved as a state dict,
  TorchScript and the whole nn.Sequential (with a final Sigmoid), and one with a
  logit per class (a state dict);
- exports the Pipeline with skl2onnx and the torch networks with torch.onnx;
- writes its facts file and CSVs of raw rows with its own decision per model.

And the broken variants a bank could hand over by mistake, each of which the
checked import must refuse: two numeric columns' names exchanged in the CSV
header, a one-hot attribute's categories reversed in a schema, a preprocessor
with another scaler than the one the network was trained with, and the pipeline
refitted on other rows than those its decisions were recorded with.

German: foreign_worker is sensitive, one-hot with 2 values. Default credit:
SEX (one-hot, the binary column dropped to one input) and MARRIAGE restricted
to its 3 documented values (married, single, others), one-hot.
"""
from __future__ import annotations

import csv
import json
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from fairness.datasets import GERMAN_FEATURES, resolve_data_dir, verified_bytes

DECISION = "decision"


@dataclass(frozen=True)
class Spec:
    """What one bank does with one dataset."""

    name: str
    numeric: tuple[str, ...]       # StandardScaler
    minmax: tuple[str, ...]        # MinMaxScaler
    categorical: tuple[str, ...]   # OneHotEncoder
    sensitive: tuple[str, ...]
    if_binary: tuple[str, ...]     # OneHotEncoder(drop="if_binary")
    label: str                     # the dataset's true label column
    hidden: tuple[int, ...]
    swap: tuple[str, str]          # two numeric columns whose header names a broken CSV exchanges
    facts: dict[str, Any] = field(default_factory=dict)


GERMAN = Spec(
    name="german",
    numeric=("duration", "credit_amount", "age", "installment_commitment", "residence_since"),
    minmax=(),
    categorical=("checking_status", "credit_history", "savings_status", "housing", "foreign_worker"),
    sensitive=("foreign_worker",),
    if_binary=(),
    label="class",
    hidden=(8,),
    swap=("installment_commitment", "residence_since"),  # both 1..4: every exchanged row stays in the domain
    facts={
        "name": "german-bank",
        "label_column": DECISION,
        "sensitive": ["foreign_worker"],
        "domains": {"duration": {"min": 4, "max": 72, "unit": "months"},
                    "credit_amount": {"min": 250, "max": 18424, "unit": "DM"},
                    "age": {"min": 19, "max": 75, "unit": "years"},
                    "installment_commitment": [1, 4], "residence_since": [1, 4]},
        "class_values": ["bad", "good"],
        "class_labels": ["bad credit risk", "good credit risk"],
        "value_labels": {"foreign_worker": {"A201": "foreign worker", "A202": "not a foreign worker"}},
        "favourable": "good",
    },
)

CREDIT = Spec(
    name="default_credit",
    numeric=("LIMIT_BAL", "AGE", "PAY_0"),
    minmax=("BILL_AMT1", "PAY_AMT1"),
    categorical=("EDUCATION", "SEX", "MARRIAGE"),
    sensitive=("SEX", "MARRIAGE"),
    if_binary=("SEX",),
    label="default.payment.next.month",
    hidden=(6, 4),
    swap=("LIMIT_BAL", "AGE"),  # numeric domains taken from the (swapped) data itself
    facts={
        "name": "credit-card-bank",
        "label_column": DECISION,
        "sensitive": ["SEX", "MARRIAGE"],
        "units": {"LIMIT_BAL": "NT$", "AGE": "years"},
        "class_values": [0, 1],
        "class_labels": ["pays", "defaults"],
        "value_labels": {"SEX": {1: "male", 2: "female"}, "MARRIAGE": {1: "married", 2: "single", 3: "others"}},
        "favourable": 0,
    },
)

SPECS = {"german": GERMAN, "default_credit": CREDIT}
MARGIN = 0.1  # default credit's numeric domains: the data's range widened by 10% each side


# --------------------------------------------------------------------------- raw rows


def german_rows(n: int = 300) -> list[dict[str, str]]:
    """The first n rows of german.data as raw text, the label as good/bad."""
    data_dir = resolve_data_dir()
    text = verified_bytes(data_dir, "german/german.data").decode("ascii")
    names = [f[0] for f in GERMAN_FEATURES]
    rows = []
    for line in text.splitlines()[:n]:
        parts = line.split()
        row = dict(zip(names, parts[:20]))
        row["class"] = "good" if parts[20] == "1" else "bad"
        rows.append(row)
    return rows


def credit_rows(per_status: tuple[int, int, int] = (140, 140, 70), seed: int = 0) -> list[dict[str, str]]:
    """A seeded subset with MARRIAGE in {1, 2, 3} (its documented values; 3 is rare, so it is sampled
    apart) and EDUCATION in {1, 2, 3} (graduate school, university, high school), every column as text."""
    data_dir = resolve_data_dir()
    text = verified_bytes(data_dir, "default_credit/default_credit_card_clients.csv").decode("utf-8")
    rows = [r for r in csv.DictReader(text.splitlines()) if r["EDUCATION"] in ("1", "2", "3")]
    rng = np.random.default_rng(seed)
    chosen = []
    for status, count in zip(("1", "2", "3"), per_status):
        group = [r for r in rows if r["MARRIAGE"] == status]
        chosen.extend(group[i] for i in sorted(rng.choice(len(group), size=count, replace=False)))
    return sorted(chosen, key=lambda r: int(r["ID"]))


def frame(spec: Spec, rows: list[dict[str, str]]):
    """The bank's DataFrame of every raw column but the label: numbers as numbers, the encoded categories as the
    bank stores them (German: text codes; default credit: integer codes). The pipeline drops the columns it
    does not use."""
    import pandas as pd

    columns = {}
    for c in rows[0]:
        values = [r[c] for r in rows]
        if c == spec.label:
            continue
        if c in spec.categorical:
            columns[c] = pd.Series([int(v) for v in values], dtype="int64") if spec is CREDIT else \
                pd.Series(values, dtype=object)
        elif all(_is_number(v) for v in values):
            columns[c] = pd.Series([float(v) for v in values], dtype="float64")
        else:
            columns[c] = pd.Series(values, dtype=object)
    return pd.DataFrame(columns)


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def labels(spec: Spec, rows: list[dict[str, str]]) -> np.ndarray:
    if spec is CREDIT:
        return np.array([int(r[spec.label]) for r in rows])
    return np.array([r[spec.label] for r in rows], dtype=object)


# --------------------------------------------------------------------------- the bank's models


def column_transformer(spec: Spec, scaler: str = "standard"):
    """The bank's ColumnTransformer (`scaler`: "minmax" puts MinMaxScaler on every numeric column: the wrong
    preprocessor of a broken variant)."""
    from sklearn.compose import ColumnTransformer
    from sklearn.preprocessing import MinMaxScaler, OneHotEncoder, StandardScaler

    first = StandardScaler() if scaler == "standard" else MinMaxScaler()
    steps = [("num", first, list(spec.numeric))]
    if spec.minmax:
        steps.append(("range", MinMaxScaler(), list(spec.minmax)))
    plain = [c for c in spec.categorical if c not in spec.if_binary]
    steps.append(("cat", OneHotEncoder(handle_unknown="error", sparse_output=False), plain))
    if spec.if_binary:
        steps.append(("binary", OneHotEncoder(drop="if_binary", sparse_output=False), list(spec.if_binary)))
    return ColumnTransformer(steps, remainder="drop")


def fit_pipeline(spec: Spec, df, y):
    from sklearn.neural_network import MLPClassifier
    from sklearn.pipeline import Pipeline

    clf = MLPClassifier(hidden_layer_sizes=spec.hidden, max_iter=800, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # convergence: a bank's small model need not converge fully
        return Pipeline([("prepare", column_transformer(spec)), ("classify", clf)]).fit(df, y)


def train_torch(X: np.ndarray, y01: np.ndarray, hidden: tuple[int, ...], outputs: int, seed: int = 0):
    """The bank's torch training: float32, full-batch Adam; one logit (BCE) or one per class (cross entropy)."""
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # tiny matrices: threads only add overhead on a shared machine
    try:
        return _train(X, y01, hidden, outputs, seed)
    finally:
        torch.set_num_threads(threads)


def _train(X: np.ndarray, y01: np.ndarray, hidden: tuple[int, ...], outputs: int, seed: int):
    import torch

    torch.manual_seed(seed)
    layers: list[Any] = []
    width = X.shape[1]
    for h in hidden:
        layers += [torch.nn.Linear(width, h), torch.nn.ReLU()]
        width = h
    layers.append(torch.nn.Linear(width, outputs))
    net = torch.nn.Sequential(*layers)
    opt = torch.optim.Adam(net.parameters(), lr=0.03)
    Xt = torch.tensor(X, dtype=torch.float32)
    for _ in range(200):
        opt.zero_grad()
        out = net(Xt)
        if outputs == 1:
            loss = torch.nn.functional.binary_cross_entropy_with_logits(out[:, 0], torch.tensor(y01, dtype=torch.float32))
        else:
            loss = torch.nn.functional.cross_entropy(out, torch.tensor(y01))
        loss.backward()
        opt.step()
    return net.eval()


def torch_decisions(net, X: np.ndarray) -> np.ndarray:
    import torch

    with torch.no_grad():
        out = net(torch.tensor(X, dtype=torch.float32)).numpy()
    return (out[:, 0] > 0).astype(int) if out.shape[1] == 1 else out.argmax(axis=1)


# --------------------------------------------------------------------------- files


def write_csv(path: Path, rows: list[dict[str, str]], decisions: list[str], *,
              rename: dict[str, str] | None = None) -> Path:
    """The bank's raw rows with its own decision per row; `rename` exchanges header names (a broken export)."""
    header = list(rows[0])
    shown = [(rename or {}).get(h, h) for h in header]
    with path.open("w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow([*shown, DECISION])
        for row, decision in zip(rows, decisions):
            w.writerow([row[h] for h in header] + [decision])
    return path


def export_sklearn_onnx(spec: Spec, pipeline, df, path: Path) -> None:
    """skl2onnx of the whole Pipeline: one graph input per raw column, typed as the bank's DataFrame."""
    from skl2onnx import to_onnx
    from skl2onnx.common.data_types import FloatTensorType, Int64TensorType, StringTensorType

    types = []
    for c in df.columns:
        if c in spec.categorical:
            types.append((c, Int64TensorType([None, 1]) if spec is CREDIT else StringTensorType([None, 1])))
        elif df[c].dtype == object:
            types.append((c, StringTensorType([None, 1])))
        else:
            types.append((c, FloatTensorType([None, 1])))
    model = to_onnx(pipeline, initial_types=types, options={id(pipeline.steps[-1][1]): {"zipmap": False}},
                    target_opset={"": 17, "ai.onnx.ml": 3})
    path.write_bytes(model.SerializeToString())


def export_torch_onnx(net, n_inputs: int, path: Path) -> None:
    import torch

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(net, (torch.zeros(1, n_inputs),), str(path), dynamo=False, input_names=["x"],
                          output_names=["logits"], dynamic_axes={"x": {0: "batch"}, "logits": {0: "batch"}})


def class_values(spec: Spec) -> list[str]:
    return [str(v) for v in spec.facts["class_values"]]


@dataclass(frozen=True)
class BankFiles:
    """Every file of one bank, and what the tests compare the imports with."""

    spec: Spec
    root: Path
    rows: list[dict[str, str]]
    pipeline: Any          # the fitted Pipeline (as saved in pipeline.joblib)
    transformer: Any       # the fitted ColumnTransformer the torch networks read after (preprocessor.joblib)

    def __getitem__(self, name: str) -> Path:
        return self.root / name


def build_bank(spec: Spec, root: Path) -> BankFiles:
    """Write every file of the bank into `root`."""
    import joblib
    import torch

    root.mkdir(parents=True, exist_ok=True)
    rows = german_rows() if spec is GERMAN else credit_rows()
    df, y = frame(spec, rows), labels(spec, rows)
    values = class_values(spec)

    pipeline = fit_pipeline(spec, df, y)
    joblib.dump(pipeline, root / "pipeline.joblib")
    sk_decisions = [str(v) for v in pipeline.predict(df)]
    write_csv(root / "pipeline.csv", rows, sk_decisions)
    export_sklearn_onnx(spec, pipeline, df, root / "pipeline.onnx")

    transformer = column_transformer(spec).fit(df)
    joblib.dump(transformer, root / "preprocessor.joblib")
    joblib.dump(column_transformer(spec, scaler="minmax").fit(df), root / "preprocessor_minmax.joblib")
    X = np.asarray(transformer.transform(df), dtype=np.float64)
    y01 = np.array([values.index(str(v)) for v in y])

    one = train_torch(X, y01, spec.hidden, outputs=1)
    torch.save(one.state_dict(), root / "one_logit_state.pt")
    torch.jit.save(torch.jit.script(one), str(root / "one_logit.torchscript"))
    torch.save(torch.nn.Sequential(*one, torch.nn.Sigmoid()), root / "one_logit_module.pt")
    export_torch_onnx(one, X.shape[1], root / "one_logit.onnx")
    write_csv(root / "one_logit.csv", rows, [values[d] for d in torch_decisions(one, X)])

    per_class = train_torch(X, y01, spec.hidden, outputs=2, seed=1)
    torch.save(per_class.state_dict(), root / "per_class_state.pt")
    export_torch_onnx(per_class, X.shape[1], root / "per_class.onnx")
    write_csv(root / "per_class.csv", rows, [values[d] for d in torch_decisions(per_class, X)])

    facts = dict(spec.facts)
    (root / "facts.yaml").write_text(_yaml(facts))
    (root / "facts.json").write_text(json.dumps(facts, indent=2))

    # Broken variants.
    a, b = spec.swap
    write_csv(root / "pipeline_swapped.csv", rows, sk_decisions, rename={a: b, b: a})
    write_csv(root / "one_logit_swapped.csv", rows, [values[d] for d in torch_decisions(one, X)], rename={a: b, b: a})
    other = german_rows(600)[300:] if spec is GERMAN else credit_rows(seed=1)
    refit = fit_pipeline(spec, frame(spec, other), labels(spec, other))
    joblib.dump(refit, root / "pipeline_refit.joblib")
    return BankFiles(spec=spec, root=root, rows=rows, pipeline=pipeline, transformer=transformer)


def _yaml(data: dict[str, Any]) -> str:
    import yaml

    return yaml.safe_dump(data, sort_keys=False, allow_unicode=True)


@pytest.fixture(scope="session")
def bank_pipelines(tmp_path_factory) -> dict[str, BankFiles]:
    """Both banks' files, built once per test session."""
    pytest.importorskip("torch")
    pytest.importorskip("skl2onnx")
    root = tmp_path_factory.mktemp("bank_pipelines")
    return {name: build_bank(spec, root / name) for name, spec in SPECS.items()}
