"""A bank's CSV read through its feature schema: one column per attribute (by name), optionally the label,
every row encoded by `FeatureSchema.encode` (`fairness.schema`), any defect named by its line and attribute.

The bank reads its data this way (training, import, audits); the customer's verifier does not, so this
module stays out of the verifier's imports.
"""
from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable

import numpy as np

from fairness.errors import DataError
from fairness.schema import FeatureSchema, OutOfBoxError, RecordError, SensitiveAttribute


@dataclass(frozen=True)
class SchemaTable:
    """The rows of a CSV read through a schema: raw records, model inputs, labels (None without a label column)."""

    records: tuple[dict[str, Any], ...]
    X: np.ndarray
    y: np.ndarray | None
    lines: tuple[int, ...]  # the CSV line of each row (header is line 1)
    extra: dict[str, tuple[str, ...]]  # requested extra columns, raw text per row
    dropped: int = 0  # rows left out because a sensitive value lies outside its domain


def csv_header(path: str | Path) -> tuple[str, ...]:
    """The column names of a CSV file (empty if it has none)."""
    try:
        with Path(path).open(newline="", encoding="utf-8-sig") as fh:
            return tuple(h.strip() for h in next(csv.reader(fh), []))
    except (OSError, UnicodeDecodeError) as exc:
        raise DataError(f"data file {path} is unreadable ({exc})") from None


def read_csv(schema: FeatureSchema, path: str | Path, *, require_label: bool = False,
             extra_columns: Iterable[str] = (), drop_outside_sensitive_domain: bool = False) -> SchemaTable:
    """Read the bank's CSV: one column per attribute (by name; others ignored), optionally the label.

    Any defect names its line and attribute. With `drop_outside_sensitive_domain`,
    rows whose sensitive value is not in the schema's domain are left out and
    counted (e.g. a study restricted to two groups); other errors still refuse.
    """
    p = Path(path)
    if not p.is_file():
        raise DataError(f"data file {p} does not exist")
    try:
        text = p.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as exc:
        raise DataError(f"data file {p} is unreadable ({exc})") from None
    rows = csv.reader(text.splitlines())
    header = next(rows, None)
    if not header:
        raise DataError(f"{p}: empty file (a header row naming the columns is needed)")
    index: dict[str, int] = {}
    for i, h in enumerate(header):
        index.setdefault(h.strip(), i)  # a repeated column name: the first one counts
    extra_columns = tuple(extra_columns)
    wanted = list(schema.attributes) + list(extra_columns) + ([schema.label.column] if require_label else [])
    missing = [c for c in wanted if c not in index]
    if missing:
        raise DataError(f"{p}: missing column(s) {', '.join(missing)}")
    has_label = schema.label.column in index
    sensitive = {f.name for f in schema.features if isinstance(f, SensitiveAttribute)}
    records, encoded, labels, lines = [], [], [], []
    extra: dict[str, list[str]] = {c: [] for c in extra_columns}
    dropped = 0
    for line_no, row in enumerate(rows, 2):
        if not row or not any(cell.strip() for cell in row):
            continue
        if len(row) != len(header):
            raise DataError(f"{p}:{line_no}: expected {len(header)} fields, got {len(row)}")
        record = {a: row[index[a]] for a in schema.attributes}
        try:
            x = schema.encode(record)
        except RecordError as exc:
            if drop_outside_sensitive_domain and isinstance(exc, OutOfBoxError) and exc.field in sensitive:
                dropped += 1
                continue
            raise DataError(f"{p}:{line_no}: {exc}") from None
        records.append(record)
        encoded.append(x)
        lines.append(line_no)
        for c in extra_columns:
            extra[c].append(row[index[c]])
        if has_label:
            labels.append(schema.label.index(row[index[schema.label.column]], f"{p}:{line_no}"))
    if not records:
        raise DataError(f"{p}: no data rows")
    X = np.array(encoded, dtype=np.float64)
    return SchemaTable(records=tuple(records), X=X, y=np.array(labels, dtype=np.int64) if has_label else None,
                       lines=tuple(lines), extra={c: tuple(v) for c, v in extra.items()}, dropped=dropped)
