"""Banks that never saw FairProof's code: their own pipelines on the public credit data sets.

Each bank here builds its credit model the way its own data scientists would, with scikit-learn and torch
alone, and hands `fairproof import-model` what it has: the fitted file (a joblib Pipeline, a skl2onnx graph
with one input per column, a torch state dict, TorchScript or a torch.onnx export behind the fitted
ColumnTransformer it reads after), a facts file, and its scored CSV with its own decision of every row.

The pipelines are deliberately not the obvious ones: columns in the bank's own order (not the data set's),
`OneHotEncoder(drop="if_binary", handle_unknown="ignore")`, `MinMaxScaler` beside `StandardScaler`, an
`OrdinalEncoder` for an ordered categorical, a nested Pipeline inside the ColumnTransformer, string and
integer categories, two sensitive attributes at once (sex, one-hot with two values, and marital status,
one-hot with three; or foreign worker and sex, each a single dropped-binary column).

The broken banks ship something that does not decide as their CSV says: two numeric columns swapped in
the CSV, a preprocessor whose one-hot categories are reversed, a preprocessor with another scaler than the
network was trained with, a CSV without a sensitive column, a facts file naming a sensitive column the
model does not read. Each knows, from the bank's own runtime, which CSV lines must be named.

Data comes from the shared data sets (never copied into the repository): German Credit and Default of
Credit Card Clients, a few hundred rows each, so that everything builds in seconds.
"""
from __future__ import annotations

import dataclasses
import warnings
from collections.abc import Sequence
from pathlib import Path

import joblib
import numpy as np
import pandas as pd
import yaml
from sklearn.compose import ColumnTransformer
from sklearn.exceptions import ConvergenceWarning
from sklearn.neural_network import MLPClassifier
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import MinMaxScaler, OneHotEncoder, OrdinalEncoder, StandardScaler

from fairness.datasets import resolve_data_dir

# German Credit's twenty attributes and its label, under the names this bank gives them (german.names).
GERMAN_ATTRIBUTES = (
    "checking_status", "duration", "credit_history", "purpose", "credit_amount", "savings", "employment_since",
    "installment_rate", "personal_status", "other_debtors", "residence_since", "property", "age",
    "other_plans", "housing", "existing_credits", "job", "dependents", "telephone", "foreign_worker", "risk")
# The bank's own column order in its scored CSV (and so in its pipeline's input).
GERMAN_ORDER = ("age", "foreign_worker", "credit_amount", "personal_status", "housing", "sex", "duration",
                "employment_since", "checking_status", "installment_rate", "residence_since", "purpose", "risk")
GERMAN_EMPLOYMENT = ("A71", "A72", "A73", "A74", "A75")  # unemployed < 1 year < 4 years < 7 years < longer

# Default of Credit Card Clients: the bank's subset and order; MARRIAGE as the bank's words.
CREDIT_ORDER = ("PAY_AMT1", "MARRIAGE", "AGE", "EDUCATION", "LIMIT_BAL", "SEX", "PAY_0", "BILL_AMT1",
                "defaulted")
MARRIAGE_WORDS = {1: "married", 2: "single", 3: "others"}
MARRIAGE_CATEGORIES = ("married", "single", "others")
CREDIT_EDUCATION = (1, 2, 3)  # graduate school < university < high school (the data set's codes)
CREDIT_SENSITIVE = ("SEX", "MARRIAGE")
SEX_LABELS = {"1": "male", "2": "female"}  # the data set's codes, as the bank's facts name them

DECISION = "decision"  # the column of every scored CSV holding the bank's own decision


@dataclasses.dataclass(frozen=True)
class BankFiles:
    """What one bank hands to `fairproof import-model`, and the decisions its CSV records."""

    name: str
    model: Path
    facts: Path
    data: Path
    decisions: tuple[str, ...]
    preprocessor: Path | None = None
    options: tuple[str, ...] = ()

    def import_args(self, out: Path) -> list[str]:
        """The bank's command line: `import-model FILE [--preprocessor P] --facts F --check CSV --out DIR`."""
        args = ["import-model", str(self.model), "--facts", str(self.facts), "--check", str(self.data)]
        if self.preprocessor is not None:
            args += ["--preprocessor", str(self.preprocessor)]
        return [*args, *self.options, "--out", str(out)]


@dataclasses.dataclass(frozen=True)
class BrokenBank:
    """A bank whose files do not decide as its CSV says, and what the refusal must name.

    `mismatched_rows`: 0-based CSV rows whose recorded decision the shipped files do not reproduce, as the
    bank's own runtime (scikit-learn or torch) finds them; empty when the refusal is about a column.
    `names`: words the refusal must contain (columns, inputs)."""

    files: BankFiles
    mismatched_rows: tuple[int, ...]
    names: tuple[str, ...]

    @property
    def mismatched_lines(self) -> tuple[int, ...]:
        """CSV line numbers of the mismatched rows: the header is line 1."""
        return tuple(i + 2 for i in self.mismatched_rows)


# -- the data, as each bank reads it ------------------------------------------------------------------------


def german_frame(rows: int = 300, seed: int = 4, data_dir: str | Path | None = None) -> pd.DataFrame:
    """`rows` German Credit applicants under the bank's column names and order, with a derived `sex`
    column (personal status A92 and A95 are women) and the outcome as `risk` good/bad."""
    path = resolve_data_dir(data_dir) / "german" / "german.data"
    frame = pd.read_csv(path, sep=" ", header=None, names=list(GERMAN_ATTRIBUTES))
    frame["risk"] = frame["risk"].map({1: "good", 2: "bad"})
    frame["sex"] = np.where(frame["personal_status"].isin(["A92", "A95"]), "female", "male")
    sample = frame.sample(rows, random_state=seed).reset_index(drop=True)
    return sample[list(GERMAN_ORDER)]


def credit_frame(per_group: int = 14, seed: int = 7, education: Sequence[int] = CREDIT_EDUCATION,
                 data_dir: str | Path | None = None) -> pd.DataFrame:
    """Credit card clients, `per_group` of each (marital status, education, outcome) triple, EDUCATION
    restricted to `education`, the outcome as `defaulted` yes/no, in the bank's column order. The bank
    balances its sample: marital status "others" is rare in the data, and so are defaults."""
    path = resolve_data_dir(data_dir) / "default_credit" / "default_credit_card_clients.csv"
    frame = pd.read_csv(path).rename(columns={"default.payment.next.month": "defaulted"})
    frame = frame[frame["MARRIAGE"].isin(list(MARRIAGE_WORDS)) & frame["EDUCATION"].isin(list(education))]
    groups = [group.sample(min(len(group), per_group), random_state=seed)
              for _, group in frame.groupby(["MARRIAGE", "EDUCATION", "defaulted"])]
    sample = pd.concat(groups).sample(frac=1, random_state=seed + 1).reset_index(drop=True)
    sample["MARRIAGE"] = sample["MARRIAGE"].map(MARRIAGE_WORDS)
    sample["defaulted"] = sample["defaulted"].map({0: "no", 1: "yes"})
    return sample[list(CREDIT_ORDER)]


def features(frame: pd.DataFrame, outcome: str) -> pd.DataFrame:
    """The frame without its outcome and decision columns: what the bank's pipeline reads."""
    return frame.drop(columns=[c for c in (outcome, DECISION) if c in frame.columns])


# -- the banks' preprocessing -------------------------------------------------------------------------------


def german_preprocessor() -> ColumnTransformer:
    """Amounts min-max scaled inside a nested Pipeline, people standardised, employment ordinal (its
    categories are ordered), the rest one-hot with binary columns dropped to one and unknown values
    ignored; foreign_worker and sex are binary, so each is one column. Columns the bank keeps in its CSV
    but the model does not read (personal_status, purpose) are dropped."""
    return ColumnTransformer([
        ("amounts", Pipeline([("minmax", MinMaxScaler())]), ["credit_amount", "duration"]),
        ("people", StandardScaler(), ["age", "installment_rate", "residence_since"]),
        ("employment", OrdinalEncoder(categories=[list(GERMAN_EMPLOYMENT)]), ["employment_since"]),
        ("categories", OneHotEncoder(drop="if_binary", handle_unknown="ignore"),
         ["checking_status", "housing", "foreign_worker", "sex"]),
    ])


def credit_preprocessor(*, marriage_categories: Sequence[str] = MARRIAGE_CATEGORIES,
                        age_scaler: str = "minmax") -> ColumnTransformer:
    """Sex one-hot (integer codes 1 and 2: two columns), money standardised inside a nested Pipeline,
    marital status one-hot over the bank's words (three columns), age min-max scaled, education ordinal
    (ordered codes), the payment delay passed through as it is.

    `marriage_categories` and `age_scaler` exist for the broken banks: a preprocessor fitted with the
    one-hot categories in another order, or with a StandardScaler where the network saw a MinMaxScaler."""
    return ColumnTransformer([
        ("sex", OneHotEncoder(), ["SEX"]),
        ("money", Pipeline([("standard", StandardScaler())]), ["LIMIT_BAL", "BILL_AMT1", "PAY_AMT1"]),
        ("marriage", OneHotEncoder(categories=[list(marriage_categories)], handle_unknown="ignore"), ["MARRIAGE"]),
        ("age", MinMaxScaler() if age_scaler == "minmax" else StandardScaler(), ["AGE"]),
        ("education", OrdinalEncoder(categories=[list(CREDIT_EDUCATION)]), ["EDUCATION"]),
        ("delay", "passthrough", ["PAY_0"]),
    ])


def education_preprocessor(values: Sequence[int], encoding: str) -> ColumnTransformer:
    """The credit bank's preprocessing with EDUCATION as its only sensitive attribute over `values`:
    one-hot (one input per value) or one integer code (OrdinalEncoder); marital status is then an
    ordinary one-hot feature. Used to weigh what one-hot sensitive attributes cost in the circuit."""
    sensitive = (OneHotEncoder(categories=[list(values)]) if encoding == "one_hot"
                 else OrdinalEncoder(categories=[list(values)]))
    return ColumnTransformer([
        ("education", sensitive, ["EDUCATION"]),
        ("money", Pipeline([("standard", StandardScaler())]), ["LIMIT_BAL", "BILL_AMT1", "PAY_AMT1"]),
        ("marriage", OneHotEncoder(categories=[list(MARRIAGE_CATEGORIES)]), ["MARRIAGE"]),
        ("age", MinMaxScaler(), ["AGE"]),
        ("delay", "passthrough", ["PAY_0"]),
    ])


# -- the banks' networks ------------------------------------------------------------------------------------


def fit_pipeline(preprocessor: ColumnTransformer, frame: pd.DataFrame, outcome: str,
                 hidden: tuple[int, ...], seed: int = 0) -> Pipeline:
    """Pipeline(preprocessor, MLPClassifier(hidden)) fitted on the frame's outcome."""
    pipeline = Pipeline([("prep", preprocessor),
                         ("mlp", MLPClassifier(hidden, max_iter=800, random_state=seed))])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        return pipeline.fit(features(frame, outcome), frame[outcome])


def _sequential(n_inputs: int, hidden: tuple[int, ...], n_outputs: int):
    import torch

    layers: list = []
    width = n_inputs
    for h in hidden:
        layers += [torch.nn.Linear(width, h), torch.nn.ReLU()]
        width = h
    return torch.nn.Sequential(*layers, torch.nn.Linear(width, n_outputs))


def train_torch_net(inputs: np.ndarray, positive: np.ndarray, hidden: tuple[int, ...], *, one_logit: bool,
                    seed: int = 0, steps: int = 400):
    """An nn.Sequential of Linear and ReLU trained with Adam on the preprocessor's output: one output
    logit (binary cross-entropy, positive class when > 0) or one logit per class (cross-entropy)."""
    import torch

    torch.manual_seed(seed)
    net = _sequential(inputs.shape[1], hidden, 1 if one_logit else 2)
    x = torch.tensor(inputs, dtype=torch.float32)
    target = torch.tensor(positive, dtype=torch.float32 if one_logit else torch.long)
    optimiser = torch.optim.Adam(net.parameters(), lr=0.01)
    for _ in range(steps):
        optimiser.zero_grad()
        out = net(x)
        loss = (torch.nn.functional.binary_cross_entropy_with_logits(out[:, 0], target) if one_logit
                else torch.nn.functional.cross_entropy(out, target))
        loss.backward()
        optimiser.step()
    return net.eval()


def torch_decisions(net, inputs: np.ndarray) -> np.ndarray:
    """Class index per row, as the bank's torch runtime decides it (float32)."""
    import torch

    with torch.no_grad():
        out = net(torch.tensor(inputs, dtype=torch.float32)).numpy()
    return (out[:, 0] > 0).astype(int) if out.shape[1] == 1 else out.argmax(axis=1)


# -- what the bank writes -----------------------------------------------------------------------------------


def scored_csv(frame: pd.DataFrame, decisions: Sequence[str], path: Path) -> Path:
    """The bank's CSV: its rows as they are, with its own decision of each in the `decision` column."""
    if len(set(decisions)) < 2:
        raise ValueError(f"{path.name}: the bank's model decides every row alike; pick another seed")
    scored = frame.copy()
    scored[DECISION] = list(decisions)
    scored.to_csv(path, index=False)
    return path


def facts_file(path: Path, facts: dict) -> Path:
    """The bank's facts file, as YAML."""
    path.write_text(yaml.safe_dump(facts, sort_keys=False))
    return path


def onnx_input_types(frame: pd.DataFrame, integer_columns: Sequence[str] = ()) -> list:
    """One skl2onnx input per column: text columns as strings, `integer_columns` as int64, others float."""
    from skl2onnx.common.data_types import FloatTensorType, Int64TensorType, StringTensorType

    def kind(column: str):
        if not pd.api.types.is_numeric_dtype(frame[column]):
            return StringTensorType([None, 1])
        return Int64TensorType([None, 1]) if column in integer_columns else FloatTensorType([None, 1])

    return [(column, kind(column)) for column in frame.columns]


def export_pipeline_onnx(pipeline: Pipeline, frame: pd.DataFrame, path: Path, *, zipmap: bool,
                         integer_columns: Sequence[str] = ()) -> Path:
    """The fitted pipeline as skl2onnx writes it, with one graph input per raw column."""
    from skl2onnx import convert_sklearn

    options = {} if zipmap else {id(pipeline.steps[-1][1]): {"zipmap": False}}
    graph = convert_sklearn(pipeline, initial_types=onnx_input_types(frame, integer_columns), options=options,
                            target_opset=17)
    path.write_bytes(graph.SerializeToString())
    return path


def export_torch_onnx(net, n_inputs: int, path: Path) -> Path:
    """torch.onnx.export of the network (its TorchScript-based exporter: the default one needs onnxscript)."""
    import torch

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        torch.onnx.export(net, torch.zeros(1, n_inputs), str(path), input_names=["features"],
                          output_names=["logits"], dynamic_axes={"features": {0: "rows"}}, dynamo=False)
    return path


# -- the banks ----------------------------------------------------------------------------------------------


def german_facts(sensitive: Sequence[str] = ("foreign_worker", "sex")) -> dict:
    return {
        "name": "german-independent",
        "label_column": DECISION,
        "sensitive": list(sensitive),
        "domains": {"age": [18, 80], "credit_amount": {"min": 250, "max": 20000, "unit": "DM"},
                    "duration": {"min": 4, "max": 72, "unit": "months"}, "installment_rate": [1, 4],
                    "residence_since": [1, 4]},
        "class_labels": ["bad credit risk", "good credit risk"],
        "value_labels": {"foreign_worker": {"A201": "foreign worker", "A202": "not a foreign worker"}},
        "favourable": "good",
    }


def credit_facts(sensitive: Sequence[str] = CREDIT_SENSITIVE, *, label_column: str = DECISION) -> dict:
    """Domains wide enough for the whole data set (LIMIT_BAL and PAY_AMT1 share [0, 10^6]); SEX's codes
    named when it is sensitive (the facts may name only columns the model reads)."""
    return {
        "name": "credit-independent",
        "label_column": label_column,
        "sensitive": list(sensitive),
        "domains": {"AGE": {"min": 21, "max": 79, "unit": "years"}, "LIMIT_BAL": [0, 1_000_000],
                    "BILL_AMT1": [-400_000, 1_000_000], "PAY_AMT1": [0, 1_000_000], "PAY_0": [-2, 8]},
        "class_values": ["no", "yes"],
        "class_labels": ["repays", "defaults"],
        "value_labels": {"SEX": SEX_LABELS} if "SEX" in sensitive else {},
        "favourable": "no",
    }


def german_banks(root: Path, data_dir: str | Path | None = None) -> tuple[dict[str, BankFiles], list[BrokenBank]]:
    """The German bank: its sklearn Pipeline as joblib and as skl2onnx, and a facts file that names a
    sensitive column the model does not read (personal_status: the model reads the derived sex)."""
    root.mkdir(parents=True, exist_ok=True)
    frame = german_frame(data_dir=data_dir)
    pipeline = fit_pipeline(german_preprocessor(), frame, "risk", (8,), seed=0)
    decisions = tuple(str(d) for d in pipeline.predict(features(frame, "risk")))
    data = scored_csv(frame, decisions, root / "german.csv")
    facts = facts_file(root / "german.yaml", german_facts())
    joblib.dump(pipeline, root / "german-pipeline.joblib")
    onnx = export_pipeline_onnx(pipeline, features(frame, "risk"), root / "german-pipeline.onnx", zipmap=False)
    good = {
        "german-pipeline": BankFiles("german-pipeline", root / "german-pipeline.joblib", facts, data, decisions),
        "german-pipeline-onnx": BankFiles("german-pipeline-onnx", onnx, facts, data, decisions),
    }
    unread = facts_file(root / "german-unread.yaml", german_facts(("foreign_worker", "sex", "personal_status")))
    broken = [BrokenBank(dataclasses.replace(good["german-pipeline"], name="german-sensitive-unread", facts=unread),
                         (), ("personal_status",))]
    return good, broken


@dataclasses.dataclass(frozen=True)
class CreditBank:
    """The credit bank's fitted objects, for the benchmark and the end-to-end run."""

    frame: pd.DataFrame
    pipeline: Pipeline
    preprocessor: ColumnTransformer
    logit_net: object
    class_net: object


def fit_credit_bank(frame: pd.DataFrame, *, pipeline_hidden: tuple[int, ...] = (6, 4),
                    logit_hidden: tuple[int, ...] = (6, 4), class_hidden: tuple[int, ...] = (8,)) -> CreditBank:
    """The credit bank's sklearn Pipeline, and its two torch networks on the same fitted preprocessor."""
    pipeline = fit_pipeline(credit_preprocessor(), frame, "defaulted", pipeline_hidden, seed=0)
    preprocessor = credit_preprocessor().fit(features(frame, "defaulted"))
    inputs = preprocessor.transform(features(frame, "defaulted"))
    positive = (frame["defaulted"] == "yes").to_numpy()
    return CreditBank(frame, pipeline, preprocessor,
                      train_torch_net(inputs, positive, logit_hidden, one_logit=True, seed=0),
                      train_torch_net(inputs, positive, class_hidden, one_logit=False, seed=1))


def credit_files(bank: CreditBank, root: Path) -> dict[str, BankFiles]:
    """Every format of the credit bank: sklearn Pipeline (joblib), skl2onnx (one input per column, ZipMap
    kept), torch state dict and TorchScript of the one-logit net, torch.onnx of the per-class net; each
    with its own scored CSV (every model decides a little differently)."""
    import torch

    root.mkdir(parents=True, exist_ok=True)
    frame, x = bank.frame, features(bank.frame, "defaulted")
    facts = facts_file(root / "credit.yaml", credit_facts())
    inputs = bank.preprocessor.transform(x)
    joblib.dump(bank.preprocessor, root / "credit-prep.joblib")
    classes = np.array(["no", "yes"])
    pipeline_decisions = tuple(str(d) for d in bank.pipeline.predict(x))
    logit_decisions = tuple(str(d) for d in classes[torch_decisions(bank.logit_net, inputs)])
    class_decisions = tuple(str(d) for d in classes[torch_decisions(bank.class_net, inputs)])
    joblib.dump(bank.pipeline, root / "credit-pipeline.joblib")
    export_pipeline_onnx(bank.pipeline, x, root / "credit-pipeline.onnx", zipmap=True,
                         integer_columns=("SEX", "EDUCATION"))
    torch.save(bank.logit_net.state_dict(), root / "credit-net.pt")
    with warnings.catch_warnings():  # torch 2.13 deprecates TorchScript; banks still ship it
        warnings.simplefilter("ignore", DeprecationWarning)
        torch.jit.script(bank.logit_net).save(str(root / "credit-net.torchscript"))
    export_torch_onnx(bank.class_net, inputs.shape[1], root / "credit-classes.onnx")
    pipeline_csv = scored_csv(frame, pipeline_decisions, root / "credit-pipeline.csv")
    logit_csv = scored_csv(frame, logit_decisions, root / "credit-net.csv")
    class_csv = scored_csv(frame, class_decisions, root / "credit-classes.csv")
    prep = root / "credit-prep.joblib"
    return {
        "credit-pipeline": BankFiles("credit-pipeline", root / "credit-pipeline.joblib", facts, pipeline_csv,
                                     pipeline_decisions),
        "credit-pipeline-onnx": BankFiles("credit-pipeline-onnx", root / "credit-pipeline.onnx", facts,
                                          pipeline_csv, pipeline_decisions),
        "credit-torch-state-dict": BankFiles("credit-torch-state-dict", root / "credit-net.pt", facts, logit_csv,
                                             logit_decisions, prep),
        "credit-torchscript": BankFiles("credit-torchscript", root / "credit-net.torchscript", facts, logit_csv,
                                        logit_decisions, prep),
        "credit-torch-onnx": BankFiles("credit-torch-onnx", root / "credit-classes.onnx", facts, class_csv,
                                       class_decisions, prep),
    }


def _differing(recorded: Sequence[str], decided: Sequence[str]) -> tuple[int, ...]:
    rows = tuple(i for i, (a, b) in enumerate(zip(recorded, decided, strict=True)) if a != str(b))
    if not rows:
        raise ValueError("the broken variant decides every row as recorded: it would not be refused")
    return rows


def credit_broken(bank: CreditBank, good: dict[str, BankFiles], root: Path) -> list[BrokenBank]:
    """The credit bank's mistakes, each with the rows its own runtime says must be named."""
    x = features(bank.frame, "defaulted")
    classes = np.array(["no", "yes"])
    broken = []

    # LIMIT_BAL and PAY_AMT1 written under each other's header; the pipeline is right.
    pipeline = good["credit-pipeline"]
    swapped = bank.frame.copy()
    swapped[["LIMIT_BAL", "PAY_AMT1"]] = bank.frame[["PAY_AMT1", "LIMIT_BAL"]].to_numpy()
    data = scored_csv(swapped, pipeline.decisions, root / "credit-swapped.csv")
    rows = _differing(pipeline.decisions, bank.pipeline.predict(features(swapped, "defaulted")))
    broken.append(BrokenBank(dataclasses.replace(pipeline, name="credit-columns-swapped", data=data), rows,
                             ("LIMIT_BAL", "PAY_AMT1")))

    # The torch net shipped with preprocessors it was not trained behind.
    net = good["credit-torch-state-dict"]
    for name, prep, names in (
            ("credit-onehot-reversed", credit_preprocessor(marriage_categories=MARRIAGE_CATEGORIES[::-1]),
             ("MARRIAGE=",)),
            ("credit-other-scaler", credit_preprocessor(age_scaler="standard"), ())):
        prep.fit(x)
        path = root / f"{name}.joblib"
        joblib.dump(prep, path)
        rows = _differing(net.decisions, tuple(classes[torch_decisions(bank.logit_net, prep.transform(x))]))
        broken.append(BrokenBank(dataclasses.replace(net, name=name, preprocessor=path), rows, names))

    # The CSV without the SEX column, a sensitive column the model reads.
    data = root / "credit-no-sex.csv"
    pd.read_csv(pipeline.data).drop(columns=["SEX"]).to_csv(data, index=False)
    broken.append(BrokenBank(dataclasses.replace(pipeline, name="credit-sensitive-missing", data=data), (),
                             ("SEX",)))
    return broken


def build_banks(root: Path, data_dir: str | Path | None = None) -> tuple[dict[str, BankFiles], list[BrokenBank]]:
    """Every good bank (by name) and every broken one, written under `root`."""
    german, german_broken = german_banks(root / "german", data_dir)
    credit = fit_credit_bank(credit_frame(data_dir=data_dir))
    credit_good = credit_files(credit, root / "credit")
    return {**german, **credit_good}, [*german_broken, *credit_broken(credit, credit_good, root / "credit")]


def with_flipped_decision(files: BankFiles, row: int, root: Path) -> BankFiles:
    """The bank's CSV with the recorded decision of one row changed to the other class: the rejection twin
    of every good import."""
    scored = pd.read_csv(files.data, dtype=str, keep_default_na=False)
    values = sorted(set(files.decisions))
    flipped = [values[1 - values.index(d)] if i == row else d for i, d in enumerate(files.decisions)]
    scored[DECISION] = flipped
    path = root / f"{files.name}-flipped.csv"
    scored.to_csv(path, index=False)
    return dataclasses.replace(files, name=f"{files.name}-flipped", data=path, decisions=tuple(flipped))
