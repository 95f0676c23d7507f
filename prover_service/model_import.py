"""Importing a bank's own model as a BankModel, checked row by row.

The check answers one question: on the bank's data, does the model we would
commit to decide exactly as the bank's model does? Three decisions are compared
on every row of the bank's CSV:

- the bank's own decision, recorded in the CSV by its own pipeline (this is
  what catches a schema that orders, codes or scales a feature differently
  from the pipeline the network was trained with);
- the bank's own artifact run by its own runtime (its scikit-learn pipeline,
  torch behind its fitted preprocessor, onnxruntime) on the RAW records (this
  catches a network or an encoding read wrongly);
- the imported exact fixed-point network, as it will be committed and proved.

A row where they differ refuses the import, unless the float logits of the
imported network are within `tie_tolerance` of a tie there: then the
difference is rounding (float32 runtimes, fixed-point weights) and is reported
as a warning the bank may accept.
"""
from __future__ import annotations

import hashlib
import itertools
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from fairness.errors import DataError, ModelError
from fairness.fixed_point import DEFAULT_SCALE_BITS, quantise_mlp, quantise_vector
from fairness.model import FloatMLP
from fairness.schema import FeatureSchema, NumericFeature
from fairness.schema_csv import SchemaTable
from prover_service.importers import BankModel

DEFAULT_TIE_TOLERANCE = 1e-3


@dataclass(frozen=True)
class RowDisagreement:
    line: int  # CSV line of the row
    recorded: int
    runtime: int | None
    imported: int
    margin: float  # float logit gap between the imported network's two best classes

    def describe(self, labels: tuple[str, ...]) -> str:
        runtime = "" if self.runtime is None else f", bank's network here {labels[self.runtime]!r}"
        return (f"line {self.line}: recorded {labels[self.recorded]!r}{runtime}, imported {labels[self.imported]!r} "
                f"(logit margin {self.margin:.3g})")


@dataclass(frozen=True)
class ImportCheck:
    rows: int
    data_sha256: str
    runtime: str
    disagreements: tuple[RowDisagreement, ...]
    tie_tolerance: float
    hint: str = ""
    near_ties: tuple[RowDisagreement, ...] = field(init=False)
    refusals: tuple[RowDisagreement, ...] = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "near_ties", tuple(d for d in self.disagreements if d.margin <= self.tie_tolerance))
        object.__setattr__(self, "refusals", tuple(d for d in self.disagreements if d.margin > self.tie_tolerance))

    def summary(self) -> str:
        agree = self.rows - len(self.disagreements)
        text = f"decisions checked on {self.rows} rows of the bank's data (sha256 {self.data_sha256[:16]}...): {agree} agree"
        if self.near_ties:
            text += f", {len(self.near_ties)} differ only at a near tie (logit margin <= {self.tie_tolerance:g})"
        return text

    def record(self) -> dict:
        return {"rows": self.rows, "agree": self.rows - len(self.disagreements), "near_ties": len(self.near_ties),
                "data_sha256": self.data_sha256, "runtime": self.runtime, "tie_tolerance": self.tie_tolerance}


def check_import(bank: BankModel, table: SchemaTable, recorded: np.ndarray, data_path: str | Path, *,
                 scale_bits: int = DEFAULT_SCALE_BITS, tie_tolerance: float = DEFAULT_TIE_TOLERANCE) -> ImportCheck:
    """Compare recorded, runtime and imported fixed-point decisions on every row (see the module docstring).

    The runtime is the bank's own artifact on the RAW records of the table; the imported network is the
    exact fixed-point network on the schema's encoding of the same records.
    """
    net = quantise_mlp(bank.network.weights, bank.network.biases, scale_bits)
    imported = np.array([net.decision(quantise_vector([float(v) for v in x], scale_bits)) for x in table.X],
                        dtype=np.int64)
    run = _runtime_decisions(bank, table)
    if run.shape != imported.shape:
        raise ModelError(f"the bank's runtime ({bank.runtime.name}) gave {run.shape[0]} decisions for "
                         f"{len(table.records)} rows")
    margins = _margins(bank.network, table.X)
    bad = (imported != recorded) | (run != recorded)
    disagreements = tuple(
        RowDisagreement(line=table.lines[i], recorded=int(recorded[i]), imported=int(imported[i]),
                        runtime=int(run[i]), margin=float(margins[i]))
        for i in np.flatnonzero(bad))
    refused = any(d.margin > tie_tolerance for d in disagreements)
    hint = _swap_hint(bank.network, bank.schema, table, recorded) if refused else ""
    digest = hashlib.sha256(Path(data_path).read_bytes()).hexdigest()
    return ImportCheck(rows=len(table.X), data_sha256=digest, runtime=bank.runtime.name,
                       disagreements=disagreements, tie_tolerance=tie_tolerance, hint=hint)


def _runtime_decisions(bank: BankModel, table: SchemaTable) -> np.ndarray:
    """The bank's runtime on the raw records; its failure on records the schema accepted is a mismatch to report."""
    try:
        return np.asarray(bank.runtime.decide(table.records), dtype=np.int64)
    except (DataError, ModelError):
        raise
    except Exception as exc:  # the bank's runtime raises its own types
        first = str(exc).splitlines()[0] if str(exc) else ""
        raise ModelError(f"the bank's own runtime ({bank.runtime.name}) fails on rows the schema read from its files "
                         f"accepts ({type(exc).__name__}: {first}): the schema and the model do not fit") from None


def _margins(model: FloatMLP, X: np.ndarray) -> np.ndarray:
    logits = np.sort(model.forward(X), axis=1)
    return logits[:, -1] - logits[:, -2]


def _swap_hint(model: FloatMLP, schema: FeatureSchema, table: SchemaTable, recorded: np.ndarray) -> str:
    """If exchanging two columns makes (nearly) every decision agree, say which: the likeliest mistake."""
    return _column_swap_hint(model, schema, table.X, recorded) or _input_swap_hint(model, schema, table.X, recorded)


def _column_swap_hint(model: FloatMLP, schema: FeatureSchema, X: np.ndarray, recorded: np.ndarray) -> str:
    """Two numeric columns of the CSV whose values, exchanged, give the bank's decisions: a swapped header."""
    numeric = [(f, c) for f, c in schema.columns() if isinstance(f, NumericFeature)]
    raw = {f.name: X[:, c] * f.std + f.mean for f, c in numeric}
    best = (np.mean(model.predict(X) == recorded), None)
    for (f, i), (g, j) in itertools.combinations(numeric, 2):
        swapped = X.copy()
        swapped[:, i] = (raw[g.name] - f.mean) / f.std
        swapped[:, j] = (raw[f.name] - g.mean) / g.std
        agreement = np.mean(model.predict(swapped) == recorded)
        if agreement > best[0]:
            best = (agreement, (f.name, g.name))
    if best[1] is None or best[0] < 0.99:
        return ""
    a, b = best[1]
    return (f"with the values of the columns {a!r} and {b!r} exchanged, {best[0]:.1%} of the decisions agree: "
            "the data's header probably names these two columns the wrong way round")


def _input_swap_hint(model: FloatMLP, schema: FeatureSchema, X: np.ndarray, recorded: np.ndarray) -> str:
    """Two model inputs which, exchanged, give the bank's decisions: a schema listing them in the wrong order."""
    names = schema.feature_names
    best = (np.mean(model.predict(X) == recorded), None)
    for i, j in itertools.combinations(range(X.shape[1]), 2):
        swapped = X.copy()
        swapped[:, [i, j]] = swapped[:, [j, i]]
        agreement = np.mean(model.predict(swapped) == recorded)
        if agreement > best[0]:
            best = (agreement, (i, j))
    if best[1] is None or best[0] < 0.99:
        return ""
    i, j = best[1]
    return (f"with the model inputs {names[i]!r} and {names[j]!r} exchanged, {best[0]:.1%} of the decisions agree: "
            "the schema probably lists them in the wrong order")


def recorded_decisions(schema: FeatureSchema, table: SchemaTable, column: str, data_path: str | Path) -> np.ndarray:
    """The bank's own decisions, read from `column` as raw class values of the schema's label."""
    values = table.extra.get(column)
    if values is None:
        raise DataError(f"{data_path}: the check needs the bank's own decision of every row in a column {column!r}")
    return np.array([schema.label.index(v, f"{data_path}:{line}") for v, line in zip(values, table.lines)])
