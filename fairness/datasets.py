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
"""
from __future__ import annotations

import csv
import hashlib
import math
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from fairness.errors import DataError

DATASET_NAMES: tuple[str, ...] = ("german", "adult", "credit", "compas")

# Default sensitive feature per dataset (the one the FairProof paper certifies).
DEFAULT_SENSITIVE: dict[str, tuple[str, ...]] = {
    "german": ("foreign_worker",),
    "adult": ("sex",),
    "credit": ("SEX",),
    "compas": ("sex",),
}

# Domain box margin, in training standard deviations (features are standardised,
# so this is also the margin in model input units). Half a standard deviation
# beyond the training range admits customers slightly outside what was seen.
DEFAULT_BOX_MARGIN = 0.5

NUMERIC = "numeric"
CATEGORICAL = "categorical"


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


# --------------------------------------------------------------------------- schema and preprocessing


@dataclass(frozen=True)
class SensitiveFeature:
    """A sensitive attribute: the input columns it occupies and, per value, the integer point (raw,
    unscaled) its columns hold, with the value's label.

    An attribute kept as one code (the shipped datasets) is one column and 1-tuples (`scalar`); a
    one-hot attribute is one column per kept value and unit points (a dropped value all zeros)."""

    name: str
    columns: tuple[int, ...]
    points: tuple[tuple[int, ...], ...]
    labels: tuple[str, ...]

    def __post_init__(self) -> None:
        object.__setattr__(self, "columns", tuple(int(c) for c in self.columns))
        object.__setattr__(self, "points", tuple(tuple(int(v) for v in p) for p in self.points))
        object.__setattr__(self, "labels", tuple(str(v) for v in self.labels))
        if not self.columns or len(set(self.columns)) != len(self.columns):
            raise DataError(f"sensitive feature {self.name!r}: needs distinct input columns (at least one)")
        if not self.points or len(self.points) != len(self.labels):
            raise DataError(f"sensitive feature {self.name!r}: one label per value")
        for label, point in zip(self.labels, self.points):
            if len(point) != len(self.columns):
                raise DataError(f"sensitive feature {self.name!r}: value {label!r} has {len(point)} integers, "
                                f"one per column {list(self.columns)} expected")
        if len(set(self.points)) != len(self.points):
            raise DataError(f"sensitive feature {self.name!r}: two values have the same point")

    @classmethod
    def scalar(cls, name: str, column: int, values: Sequence[int], labels: Sequence[str]) -> "SensitiveFeature":
        """An attribute held in one input column as one integer code per value."""
        return cls(name, (column,), tuple((v,) for v in values), tuple(labels))

    @property
    def width(self) -> int:
        return len(self.columns)

    @property
    def column(self) -> int:
        """The input column of a one-column attribute."""
        return self._single("column")[0]

    @property
    def values(self) -> tuple[int, ...]:
        """The integer codes of a one-column attribute."""
        self._single("values")
        return tuple(p[0] for p in self.points)

    def _single(self, what: str) -> tuple[int, ...]:
        if self.width != 1:
            raise DataError(f"sensitive feature {self.name!r} spans {self.width} input columns "
                            f"{list(self.columns)}: it has no single {what}; use its columns and points")
        return self.columns

    def to_dict(self) -> dict[str, Any]:
        """A one-column attribute in the form model.json always had; a wider one by its columns and points."""
        if self.width == 1:
            return {"name": self.name, "column": self.column, "values": list(self.values), "labels": list(self.labels)}
        return {"name": self.name, "columns": list(self.columns), "points": [list(p) for p in self.points],
                "labels": list(self.labels)}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "SensitiveFeature":
        labels = tuple(str(v) for v in d["labels"])
        if "columns" in d:
            return cls(str(d["name"]), tuple(int(c) for c in d["columns"]),
                       tuple(tuple(int(v) for v in p) for p in d["points"]), labels)
        return cls.scalar(str(d["name"]), int(d["column"]), tuple(int(v) for v in d["values"]), labels)


def _raw_key(value: Any) -> str:
    """Canonical string of a raw categorical value (1, 1.0 and '1' are the same code)."""
    if type(value) is str:  # the common case, first
        return value.strip()
    if isinstance(value, (bool, np.bool_)):
        raise DataError(f"boolean {value!r} is not a category value")
    if isinstance(value, (int, np.integer)):
        return str(int(value))
    if isinstance(value, (float, np.floating)):
        if not math.isfinite(value):
            raise DataError(f"category value {value!r} is not finite")
        if float(value).is_integer():
            return str(int(value))
        return repr(float(value))
    if isinstance(value, str):
        return value.strip()
    raise DataError(f"category value {value!r} has unsupported type {type(value).__name__}")


@dataclass(frozen=True)
class Preprocessor:
    """Raw record -> model input vector.

    Feature i is numeric (its value as a float) or categorical (the index of its
    raw value in `categories[name]`); then, unless it is sensitive, it is
    standardised: (v - means[i]) / stds[i]. Sensitive features keep their code.
    """

    feature_names: tuple[str, ...]
    kinds: tuple[str, ...]
    categories: Mapping[str, tuple[str, ...]]
    means: tuple[float, ...]
    stds: tuple[float, ...]
    sensitive: tuple[str, ...]
    # Human-readable label of each category (for sensitive features shown on certificates).
    category_labels: Mapping[str, tuple[str, ...]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        n = len(self.feature_names)
        if not (len(self.kinds) == len(self.means) == len(self.stds) == n):
            raise DataError("preprocessor: feature names, kinds, means and stds differ in length")
        for name, kind in zip(self.feature_names, self.kinds):
            if kind not in (NUMERIC, CATEGORICAL):
                raise DataError(f"preprocessor: feature {name!r} has unknown kind {kind!r}")
            if kind == CATEGORICAL and not self.categories.get(name):
                raise DataError(f"preprocessor: categorical feature {name!r} has no categories")
        for name in self.sensitive:
            if name not in self.feature_names:
                raise DataError(f"preprocessor: sensitive feature {name!r} is not a feature")
            if self.kinds[self.feature_names.index(name)] != CATEGORICAL:
                raise DataError(f"preprocessor: sensitive feature {name!r} must be categorical")
        if any(not (s > 0 and math.isfinite(s)) for s in self.stds):
            raise DataError("preprocessor: standard deviations must be positive and finite")

    @property
    def n_features(self) -> int:
        return len(self.feature_names)

    def column(self, name: str) -> int:
        try:
            return self.feature_names.index(name)
        except ValueError:
            raise DataError(f"unknown feature {name!r}; features are {', '.join(self.feature_names)}") from None

    def encode_value(self, name: str, raw: Any) -> float:
        """The unscaled value of one feature: its number, or its category code."""
        i = self.column(name)
        if raw is None:
            raise DataError(f"feature {name!r}: value is missing")
        if self.kinds[i] == CATEGORICAL:
            key = _raw_key(raw)
            cats = self.categories[name]
            if key not in cats:
                raise DataError(f"feature {name!r}: unknown category {raw!r}; expected one of {', '.join(cats)}")
            return float(cats.index(key))
        if isinstance(raw, (bool, np.bool_)):
            raise DataError(f"feature {name!r}: boolean {raw!r} is not a number")
        try:
            v = float(raw)
        except (TypeError, ValueError):
            raise DataError(f"feature {name!r}: {raw!r} is not a number") from None
        except OverflowError:  # an integer beyond any float
            raise DataError(f"feature {name!r}: value is not finite (too large for a number)") from None
        if not math.isfinite(v):
            raise DataError(f"feature {name!r}: value {raw!r} is not finite")
        return v

    def transform_record(self, record: Mapping[str, Any]) -> np.ndarray:
        """One raw record (feature name -> raw value) -> model input vector (float64)."""
        if not isinstance(record, Mapping):
            raise DataError(f"a record must be a mapping of feature name to value, got {type(record).__name__}")
        missing = [n for n in self.feature_names if n not in record]
        if missing:
            raise DataError(f"record is missing feature(s): {', '.join(missing)}")
        extra = [k for k in record if k not in self.feature_names]
        if extra:
            raise DataError(f"record has unknown field(s): {', '.join(map(str, extra))}")
        raw = np.array([self.encode_value(n, record[n]) for n in self.feature_names], dtype=np.float64)
        return self.scale(raw[None, :])[0]

    def transform_records(self, records: Sequence[Mapping[str, Any]]) -> np.ndarray:
        return np.stack([self.transform_record(r) for r in records]) if records else np.zeros((0, self.n_features))

    def scale(self, encoded: np.ndarray) -> np.ndarray:
        """Standardise encoded rows (sensitive columns pass through unchanged)."""
        return (np.asarray(encoded, dtype=np.float64) - np.asarray(self.means)) / np.asarray(self.stds)

    def to_dict(self) -> dict[str, Any]:
        return {
            "feature_names": list(self.feature_names),
            "kinds": list(self.kinds),
            "categories": {k: list(v) for k, v in self.categories.items()},
            "category_labels": {k: list(v) for k, v in self.category_labels.items()},
            "means": list(self.means),
            "stds": list(self.stds),
            "sensitive": list(self.sensitive),
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "Preprocessor":
        try:
            return cls(
                feature_names=tuple(str(x) for x in d["feature_names"]),
                kinds=tuple(str(x) for x in d["kinds"]),
                categories={str(k): tuple(str(x) for x in v) for k, v in d["categories"].items()},
                means=tuple(float(x) for x in d["means"]),
                stds=tuple(float(x) for x in d["stds"]),
                sensitive=tuple(str(x) for x in d["sensitive"]),
                category_labels={str(k): tuple(str(x) for x in v) for k, v in d.get("category_labels", {}).items()},
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise DataError(f"malformed preprocessing parameters: {exc}") from None

    def sensitive_features(self) -> tuple[SensitiveFeature, ...]:
        out = []
        for name in self.sensitive:
            cats = self.categories[name]
            labels = self.category_labels.get(name) or cats
            out.append(SensitiveFeature.scalar(name, self.column(name), tuple(range(len(cats))), tuple(labels)))
        return tuple(out)


@dataclass(frozen=True)
class Dataset:
    """A preprocessed dataset: float64 features, integer class labels."""

    name: str
    feature_names: tuple[str, ...]
    X_train: np.ndarray
    y_train: np.ndarray
    X_test: np.ndarray
    y_test: np.ndarray
    n_classes: int
    class_labels: tuple[str, ...]
    preprocessor: Preprocessor
    sensitive: tuple[SensitiveFeature, ...]
    split_seed: int
    records_test: tuple[Mapping[str, Any], ...] = ()

    @property
    def n_features(self) -> int:
        return len(self.feature_names)

    @property
    def sensitive_columns(self) -> tuple[int, ...]:
        return tuple(c for f in self.sensitive for c in f.columns)

    def domain_box(self, margin: float = DEFAULT_BOX_MARGIN) -> tuple[np.ndarray, np.ndarray]:
        """Public input domain box (model input units).

        Non-sensitive feature i: [min_i - margin, max_i + margin] over the
        training split (margin in standard deviations of the raw feature, since
        inputs are standardised). Sensitive features: exactly the range of their
        points at each of their columns ([0, m-1] for a code).
        """
        if not (margin >= 0 and math.isfinite(margin)):
            raise DataError(f"box margin must be a non-negative finite number, got {margin}")
        lower = self.X_train.min(axis=0) - margin
        upper = self.X_train.max(axis=0) + margin
        for f in self.sensitive:
            for i, c in enumerate(f.columns):
                lower[c] = min(p[i] for p in f.points)
                upper[c] = max(p[i] for p in f.points)
        return lower, upper


def dataset_schema(dataset: Dataset, margin: float = DEFAULT_BOX_MARGIN) -> Any:
    """The shipped preprocessing of `dataset` as a feature schema (`fairness.schema.FeatureSchema`).

    Encodings are the loader's exactly (label codes, the training split's means
    and standard deviations, sensitive codes kept), so a record encodes to the
    same doubles either way. The numeric domain is the training range widened
    by `margin` standard deviations, as the shipped box; categories range over
    their codes (the shipped box also widens those, though no record reaches
    the widening).
    """
    from fairness.schema import FeatureSchema

    pre = dataset.preprocessor
    raw_min = np.asarray(pre.means) + np.asarray(pre.stds) * dataset.X_train.min(axis=0)
    raw_max = np.asarray(pre.means) + np.asarray(pre.stds) * dataset.X_train.max(axis=0)
    features: list[dict[str, Any]] = []
    for i, (name, kind) in enumerate(zip(pre.feature_names, pre.kinds)):
        if name in pre.sensitive:
            labels = pre.category_labels.get(name)
            features.append({"name": name, "kind": "sensitive", "values": list(pre.categories[name]),
                             **({"labels": list(labels)} if labels else {})})
        elif kind == CATEGORICAL:
            labels = pre.category_labels.get(name)
            features.append({"name": name, "kind": "categorical", "encoding": "ordinal",
                             "categories": list(pre.categories[name]), "mean": pre.means[i], "std": pre.stds[i],
                             **({"labels": list(labels)} if labels else {})})
        else:
            features.append({"name": name, "kind": "numeric", "mean": pre.means[i], "std": pre.stds[i],
                             "min": float(raw_min[i] - margin * pre.stds[i]),
                             "max": float(raw_max[i] + margin * pre.stds[i])})
    label_values = [str(k) for k in range(dataset.n_classes)]
    return FeatureSchema.model_validate({
        "name": dataset.name,
        "description": f"the shipped {dataset.name} preprocessing (split seed {dataset.split_seed})",
        "features": features,
        "label": {"column": "label", "values": label_values, "labels": list(dataset.class_labels)},
    })


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
