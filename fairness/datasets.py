"""Loaders for the four fairness benchmark datasets, and the preprocessing that
turns a raw customer record into a model input vector.

Preprocessing follows the FairProof authors: categorical attributes are
label-encoded, every non-sensitive feature is standardised with the mean and
standard deviation of the training split only, and each sensitive feature is
kept as its raw code 0..m-1 (0/1 when binary) so that its domain is a small set
of exact integers.

Category vocabularies are part of the schema, not statistics of the data: they
come from the dataset documentation (German Credit) or from the union of both
files (Adult, COMPAS), sorted, so that a code's index never depends on the split.

Data directory resolution: the explicit argument, else `$FAIRPROOF_DATA_DIR`,
else `./data`, else `../shared/datasets` (relative to the working directory).
Every file read is first checked against the `SHA256SUMS` file of that
directory; a missing, unlisted or corrupt file raises `DataError` naming it.

The preprocessing itself (`Preprocessor`, `SensitiveFeature`, `Dataset`, `dataset_schema`) is
`fairness.preprocessing`; its names are offered here too.
"""
from __future__ import annotations

import csv
import hashlib
import math
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from fairness.errors import DataError
from fairness.preprocessing import (CATEGORICAL, DEFAULT_BOX_MARGIN, NUMERIC, Dataset, Preprocessor,  # noqa: F401
                                    SensitiveFeature, _raw_key, dataset_schema)

DATASET_NAMES: tuple[str, ...] = ("german", "adult", "credit", "compas")

# Default sensitive feature per dataset (the one the FairProof paper certifies).
DEFAULT_SENSITIVE: dict[str, tuple[str, ...]] = {
    "german": ("foreign_worker",),
    "adult": ("sex",),
    "credit": ("SEX",),
    "compas": ("sex",),
}


# --------------------------------------------------------------------------- data directory


def resolve_data_dir(data_dir: str | os.PathLike[str] | None = None) -> Path:
    """The dataset directory: argument, else $FAIRPROOF_DATA_DIR, else ./data, else ../shared/datasets."""
    if data_dir is not None:
        path = Path(data_dir)
        if not path.is_dir():
            raise DataError(f"data directory {path} does not exist")
        return path
    env = os.environ.get("FAIRPROOF_DATA_DIR")
    if env:
        path = Path(env)
        if not path.is_dir():
            raise DataError(f"FAIRPROOF_DATA_DIR={env} is not a directory")
        return path
    # ./data wins whenever it exists (a missing SHA256SUMS there is then reported, not skipped).
    for candidate in (Path("data"), Path("..") / "shared" / "datasets"):
        if candidate.is_dir():
            return candidate
    raise DataError("no dataset directory: pass --data-dir, set FAIRPROOF_DATA_DIR, or provide ./data or ../shared/datasets")


def read_checksums(data_dir: Path) -> dict[str, str]:
    sums_path = data_dir / "SHA256SUMS"
    if not sums_path.is_file():
        raise DataError(f"{sums_path} is missing: cannot verify the dataset files")
    sums: dict[str, str] = {}
    for line_no, line in enumerate(sums_path.read_text().splitlines(), 1):
        if not line.strip():
            continue
        parts = line.split(maxsplit=1)
        if len(parts) != 2 or len(parts[0]) != 64:
            raise DataError(f"{sums_path}:{line_no}: malformed checksum line")
        sums[parts[1].strip().lstrip("*")] = parts[0].lower()
    return sums


def verified_bytes(data_dir: Path, relative: str) -> bytes:
    """The content of `relative` (e.g. 'german/german.data'), after checking its SHA-256."""
    path = data_dir / relative
    expected = read_checksums(data_dir).get(relative)
    if expected is None:
        raise DataError(f"{path}: not listed in {data_dir / 'SHA256SUMS'}")
    if not path.is_file():
        raise DataError(f"{path}: dataset file is missing")
    content = path.read_bytes()
    actual = hashlib.sha256(content).hexdigest()
    if actual != expected:
        raise DataError(f"{path}: SHA-256 mismatch (expected {expected}, got {actual}); the file is corrupt or modified")
    return content


# --------------------------------------------------------------------------- raw tables


@dataclass(frozen=True)
class _Schema:
    features: tuple[str, ...]
    kinds: tuple[str, ...]
    categories: dict[str, tuple[str, ...]]
    category_labels: dict[str, tuple[str, ...]]
    class_labels: tuple[str, ...]


GERMAN_FEATURES: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    ("checking_status", CATEGORICAL, ("A11", "A12", "A13", "A14")),
    ("duration", NUMERIC, ()),
    ("credit_history", CATEGORICAL, ("A30", "A31", "A32", "A33", "A34")),
    ("purpose", CATEGORICAL, ("A40", "A41", "A410", "A42", "A43", "A44", "A45", "A46", "A47", "A48", "A49")),
    ("credit_amount", NUMERIC, ()),
    ("savings_status", CATEGORICAL, ("A61", "A62", "A63", "A64", "A65")),
    ("employment", CATEGORICAL, ("A71", "A72", "A73", "A74", "A75")),
    ("installment_commitment", NUMERIC, ()),
    ("personal_status", CATEGORICAL, ("A91", "A92", "A93", "A94", "A95")),
    ("other_parties", CATEGORICAL, ("A101", "A102", "A103")),
    ("residence_since", NUMERIC, ()),
    ("property_magnitude", CATEGORICAL, ("A121", "A122", "A123", "A124")),
    ("age", NUMERIC, ()),
    ("other_payment_plans", CATEGORICAL, ("A141", "A142", "A143")),
    ("housing", CATEGORICAL, ("A151", "A152", "A153")),
    ("existing_credits", NUMERIC, ()),
    ("job", CATEGORICAL, ("A171", "A172", "A173", "A174")),
    ("num_dependents", NUMERIC, ()),
    ("own_telephone", CATEGORICAL, ("A191", "A192")),
    ("foreign_worker", CATEGORICAL, ("A201", "A202")),
)
GERMAN_LABELS = {
    "foreign_worker": ("foreign worker: yes", "foreign worker: no"),
    "personal_status": ("male divorced/separated", "female divorced/separated/married", "male single",
                        "male married/widowed", "female single"),
}

ADULT_FEATURES: tuple[tuple[str, str], ...] = (
    ("age", NUMERIC), ("workclass", CATEGORICAL), ("fnlwgt", NUMERIC), ("education", CATEGORICAL),
    ("education_num", NUMERIC), ("marital_status", CATEGORICAL), ("occupation", CATEGORICAL),
    ("relationship", CATEGORICAL), ("race", CATEGORICAL), ("sex", CATEGORICAL), ("capital_gain", NUMERIC),
    ("capital_loss", NUMERIC), ("hours_per_week", NUMERIC), ("native_country", CATEGORICAL),
)

CREDIT_FEATURES: tuple[str, ...] = (
    "LIMIT_BAL", "SEX", "EDUCATION", "MARRIAGE", "AGE", "PAY_0", "PAY_2", "PAY_3", "PAY_4", "PAY_5", "PAY_6",
    "BILL_AMT1", "BILL_AMT2", "BILL_AMT3", "BILL_AMT4", "BILL_AMT5", "BILL_AMT6",
    "PAY_AMT1", "PAY_AMT2", "PAY_AMT3", "PAY_AMT4", "PAY_AMT5", "PAY_AMT6",
)
CREDIT_LABEL = "default.payment.next.month"

COMPAS_FEATURES: tuple[tuple[str, str], ...] = (
    ("age", NUMERIC), ("juv_fel_count", NUMERIC), ("juv_misd_count", NUMERIC), ("juv_other_count", NUMERIC),
    ("priors_count", NUMERIC), ("c_charge_degree", CATEGORICAL), ("sex", CATEGORICAL), ("race", CATEGORICAL),
)


def _decode(content: bytes, relative: str) -> str:
    try:
        return content.decode("utf-8")
    except UnicodeDecodeError:
        raise DataError(f"{relative}: not UTF-8 text") from None


def _number(text: str, where: str) -> float:
    try:
        v = float(text)
    except ValueError:
        raise DataError(f"{where}: {text!r} is not a number") from None
    if not math.isfinite(v):
        raise DataError(f"{where}: {text!r} is not finite")
    return v


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def _split_indices(n: int, test_fraction: float, seed: int) -> tuple[np.ndarray, np.ndarray]:
    perm = np.random.default_rng(seed).permutation(n)
    n_test = int(round(n * test_fraction))
    return np.sort(perm[n_test:]), np.sort(perm[:n_test])


def _load_german(data_dir: Path) -> tuple[list[dict[str, Any]], list[int], None, _Schema]:
    rel = "german/german.data"
    text = _decode(verified_bytes(data_dir, rel), rel)
    records, labels = [], []
    for line_no, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        parts = line.split()
        if len(parts) != 21:
            raise DataError(f"{data_dir / rel}:{line_no}: expected 21 fields, got {len(parts)}")
        rec: dict[str, Any] = {}
        for (name, kind, _), raw in zip(GERMAN_FEATURES, parts):
            rec[name] = raw if kind == CATEGORICAL else _number(raw, f"{data_dir / rel}:{line_no}")
        records.append(rec)
        if parts[20] not in ("1", "2"):
            raise DataError(f"{data_dir / rel}:{line_no}: label must be 1 (good) or 2 (bad), got {parts[20]!r}")
        labels.append(1 if parts[20] == "1" else 0)  # class 1 = good credit risk
    schema = _Schema(
        features=tuple(f[0] for f in GERMAN_FEATURES),
        kinds=tuple(f[1] for f in GERMAN_FEATURES),
        categories={f[0]: f[2] for f in GERMAN_FEATURES if f[1] == CATEGORICAL},
        category_labels=dict(GERMAN_LABELS),
        class_labels=("bad credit risk", "good credit risk"),
    )
    return records, labels, None, schema


def _parse_adult(data_dir: Path, rel: str) -> tuple[list[dict[str, Any]], list[int]]:
    text = _decode(verified_bytes(data_dir, rel), rel)
    records, labels = [], []
    for line_no, line in enumerate(text.splitlines(), 1):
        line = line.strip()
        if not line or line.startswith("|"):
            continue
        parts = [p.strip() for p in line.split(",")]
        if len(parts) != 15:
            raise DataError(f"{data_dir / rel}:{line_no}: expected 15 fields, got {len(parts)}")
        if "?" in parts:
            continue  # rows with missing values are dropped (the usual treatment of Adult)
        label = parts[14].rstrip(".")
        if label not in ("<=50K", ">50K"):
            raise DataError(f"{data_dir / rel}:{line_no}: unexpected label {parts[14]!r}")
        where = f"{data_dir}/{rel}:{line_no}"
        records.append({name: (raw if kind == CATEGORICAL else _number(raw, where)) for (name, kind), raw in zip(ADULT_FEATURES, parts)})
        labels.append(1 if label == ">50K" else 0)
    return records, labels


def _vocabulary(records: Sequence[Mapping[str, Any]], features: Sequence[tuple[str, str]]) -> dict[str, tuple[str, ...]]:
    return {name: tuple(sorted({_raw_key(r[name]) for r in records})) for name, kind in features if kind == CATEGORICAL}


def _load_adult(data_dir: Path) -> tuple[list[dict[str, Any]], list[int], int, _Schema]:
    train, y_train = _parse_adult(data_dir, "adult/adult.data")
    test, y_test = _parse_adult(data_dir, "adult/adult.test")
    schema = _Schema(
        features=tuple(f[0] for f in ADULT_FEATURES),
        kinds=tuple(f[1] for f in ADULT_FEATURES),
        categories=_vocabulary(train + test, ADULT_FEATURES),
        category_labels={},
        class_labels=("<=50K", ">50K"),
    )
    return train + test, y_train + y_test, len(train), schema


def _load_credit(data_dir: Path) -> tuple[list[dict[str, Any]], list[int], None, _Schema]:
    rel = "default_credit/default_credit_card_clients.csv"
    text = _decode(verified_bytes(data_dir, rel), rel)
    reader = csv.DictReader(text.splitlines())
    header = reader.fieldnames or []
    missing = [c for c in CREDIT_FEATURES + (CREDIT_LABEL,) if c not in header]
    if missing:
        raise DataError(f"{data_dir / rel}: missing column(s) {', '.join(missing)}")
    records, labels = [], []
    for line_no, row in enumerate(reader, 2):
        if None in row.values() or None in row:
            raise DataError(f"{data_dir / rel}:{line_no}: wrong number of fields")
        try:
            rec: dict[str, Any] = {c: float(row[c]) for c in CREDIT_FEATURES}
        except ValueError:
            bad = next(c for c in CREDIT_FEATURES if not _is_number(row[c]))
            raise DataError(f"{data_dir / rel}:{line_no}: {bad} = {row[bad]!r} is not a number") from None
        if row[CREDIT_LABEL] not in ("0", "1"):
            raise DataError(f"{data_dir / rel}:{line_no}: {CREDIT_LABEL} must be 0 or 1, got {row[CREDIT_LABEL]!r}")
        label = int(row[CREDIT_LABEL])
        rec["SEX"] = _raw_key(rec["SEX"])
        records.append(rec)
        labels.append(label)
    kinds = tuple(CATEGORICAL if c == "SEX" else NUMERIC for c in CREDIT_FEATURES)
    schema = _Schema(
        features=CREDIT_FEATURES,
        kinds=kinds,
        categories={"SEX": ("1", "2")},
        category_labels={"SEX": ("male", "female")},
        class_labels=("no default", "default"),
    )
    return records, labels, None, schema


def _load_compas(data_dir: Path) -> tuple[list[dict[str, Any]], list[int], None, _Schema]:
    rel = "compas/compas-scores-two-years.csv"
    text = _decode(verified_bytes(data_dir, rel), rel)
    rows = list(csv.reader(text.splitlines()))
    header = rows[0]
    # The file repeats some column names; the first occurrence is the one we want.
    idx = {}
    for i, h in enumerate(header):
        idx.setdefault(h, i)
    needed = [f[0] for f in COMPAS_FEATURES] + ["two_year_recid", "days_b_screening_arrest", "is_recid", "score_text"]
    missing = [c for c in needed if c not in idx]
    if missing:
        raise DataError(f"{data_dir / rel}: missing column(s) {', '.join(missing)}")
    records, labels = [], []
    for line_no, row in enumerate(rows[1:], 2):
        if not row:
            continue
        if len(row) != len(header):
            raise DataError(f"{data_dir / rel}:{line_no}: expected {len(header)} fields, got {len(row)}")
        where = f"{data_dir / rel}:{line_no}"
        get = lambda c: row[idx[c]]  # noqa: E731
        # ProPublica's filter: screening within 30 days of arrest, known recidivism,
        # no ordinary traffic offences, a risk score present.
        days = get("days_b_screening_arrest")
        if days == "" or not -30 <= _number(days, where) <= 30 or get("is_recid") == "-1" or get("c_charge_degree") == "O" or get("score_text") == "N/A":
            continue
        rec = {name: (get(name) if kind == CATEGORICAL else _number(get(name), where)) for name, kind in COMPAS_FEATURES}
        if get("two_year_recid") not in ("0", "1"):
            raise DataError(f"{where}: two_year_recid must be 0 or 1, got {get('two_year_recid')!r}")
        records.append(rec)
        labels.append(int(get("two_year_recid")))
    schema = _Schema(
        features=tuple(f[0] for f in COMPAS_FEATURES),
        kinds=tuple(f[1] for f in COMPAS_FEATURES),
        categories=_vocabulary(records, COMPAS_FEATURES),
        category_labels={},
        class_labels=("no recidivism within two years", "recidivism within two years"),
    )
    return records, labels, None, schema


def _encode_table(pre: Preprocessor, records: Sequence[Mapping[str, Any]]) -> np.ndarray:
    """Encode many raw records at once (same semantics as `Preprocessor.encode_value`)."""
    out = np.empty((len(records), pre.n_features), dtype=np.float64)
    for i, (name, kind) in enumerate(zip(pre.feature_names, pre.kinds)):
        if kind == CATEGORICAL:
            codes = {c: float(k) for k, c in enumerate(pre.categories[name])}
            column = []
            for r in records:
                code = codes.get(_raw_key(r[name]))
                column.append(pre.encode_value(name, r[name]) if code is None else code)  # raises the clear error
            out[:, i] = column
        else:
            out[:, i] = [r[name] for r in records]
    return out


_LOADERS: dict[str, Callable[[Path], tuple[list[dict[str, Any]], list[int], int | None, _Schema]]] = {
    "german": _load_german,
    "adult": _load_adult,
    "credit": _load_credit,
    "compas": _load_compas,
}
_ALIASES = {"default_credit": "credit", "default-credit": "credit", "german_credit": "german"}


def canonical_name(name: str) -> str:
    key = _ALIASES.get(name.lower(), name.lower())
    if key not in _LOADERS:
        raise DataError(f"unknown dataset {name!r}; choose one of {', '.join(DATASET_NAMES)}")
    return key


def load_dataset(
    name: str,
    data_dir: str | os.PathLike[str] | None = None,
    *,
    sensitive: Sequence[str] | None = None,
    seed: int = 0,
    test_fraction: float = 0.2,
) -> Dataset:
    """Load, verify and preprocess one dataset.

    `sensitive` names one or more categorical features (default: the one the
    FairProof paper uses). German, Credit and COMPAS are split train/test by a
    permutation drawn from `seed` (test_fraction held out); Adult uses its own
    adult.test file as test set.
    """
    key = canonical_name(name)
    if not 0 < test_fraction < 1:
        raise DataError(f"test_fraction must lie in (0, 1), got {test_fraction}")
    directory = resolve_data_dir(data_dir)
    records, labels, n_train_fixed, schema = _LOADERS[key](directory)
    sens = tuple(sensitive) if sensitive is not None else DEFAULT_SENSITIVE[key]
    if not sens:
        raise DataError("at least one sensitive feature is needed")
    if len(set(sens)) != len(sens):
        raise DataError(f"sensitive features repeated: {', '.join(sens)}")
    for s in sens:
        if s not in schema.features:
            raise DataError(f"{key}: unknown sensitive feature {s!r}; features are {', '.join(schema.features)}")
        if schema.kinds[schema.features.index(s)] != CATEGORICAL:
            raise DataError(f"{key}: sensitive feature {s!r} is numeric; only categorical features have a finite domain")

    if n_train_fixed is None:
        train_idx, test_idx = _split_indices(len(records), test_fraction, seed)
    else:
        train_idx, test_idx = np.arange(n_train_fixed), np.arange(n_train_fixed, len(records))

    provisional = Preprocessor(
        feature_names=schema.features, kinds=schema.kinds, categories=schema.categories,
        means=(0.0,) * len(schema.features), stds=(1.0,) * len(schema.features), sensitive=sens,
        category_labels=schema.category_labels,
    )
    encoded = _encode_table(provisional, records)
    if not np.all(np.isfinite(encoded)):
        row, col = np.argwhere(~np.isfinite(encoded))[0]
        raise DataError(f"{key}: record {row} has a non-finite {schema.features[col]}")
    means = encoded[train_idx].mean(axis=0)
    stds = encoded[train_idx].std(axis=0)
    stds[stds == 0] = 1.0  # a constant feature stays constant
    for s in sens:
        i = schema.features.index(s)
        means[i], stds[i] = 0.0, 1.0
    pre = Preprocessor(
        feature_names=schema.features, kinds=schema.kinds, categories=schema.categories,
        means=tuple(float(v) for v in means), stds=tuple(float(v) for v in stds), sensitive=sens,
        category_labels=schema.category_labels,
    )
    X = pre.scale(encoded)
    y = np.asarray(labels, dtype=np.int64)
    return Dataset(
        name=key,
        feature_names=schema.features,
        X_train=X[train_idx], y_train=y[train_idx], X_test=X[test_idx], y_test=y[test_idx],
        n_classes=len(schema.class_labels),
        class_labels=schema.class_labels,
        preprocessor=pre,
        sensitive=pre.sensitive_features(),
        split_seed=seed,
        records_test=tuple(records[i] for i in test_idx),
    )
