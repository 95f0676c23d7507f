"""The bank's facts file: what no model file says.

A fitted pipeline says how each column is encoded, but not which columns are
sensitive, what range a customer's numeric value may take, what the decision
column of the bank's CSV is called or which class a customer hopes for. The
bank states these in a small YAML or JSON file:

    name: german-credit                     # the model's name in its schema
    label_column: default                   # the outcome the model predicts (its classes; audits' truth)
    decision_column: decision               # optional: the bank's own decision of each row (default:
                                            #   label_column, for a CSV holding only the bank's decisions)
    sensitive: [foreign_worker]             # raw columns (at least one)
    domains:                                # raw numeric column -> [min, max] in raw units
      duration: [4, 72]
      credit_amount: {min: 250, max: 18424, unit: DM}
    units: {duration: months}
    class_values: ["0", "1"]                # optional: raw class values in model output order
    class_labels: [bad risk, good risk]     # optional: readable labels, same order
    value_labels: {foreign_worker: {A201: "yes", A202: "no"}}
    favourable: "1"                         # optional: the class the lenses call favourable
    columns: [...]                          # optional: raw column order of a pipeline fitted on an unnamed array

Options complete or override the file: `--sensitive a,b`, `--label-column`,
`--favourable`, and `--domain-from DATA.csv --margin F`, which takes each numeric
column's [min, max] over the bank's data, widened by F times its range on each
side, for every numeric column the file gives no domain. Reading is strict: an
unknown key, a wrong type or an empty range is refused with a sentence naming it.
"""
from __future__ import annotations

import csv
import hashlib
import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Sequence

from fairness.errors import DataError
from fairness.schema import category_key

from . import BankFacts

FACTS_KEYS = ("name", "label_column", "decision_column", "sensitive", "domains", "units", "class_values", "class_labels",
              "value_labels", "favourable", "columns")
DOMAIN_KEYS = ("min", "max", "unit")


@dataclass(frozen=True)
class LoadedFacts:
    """The facts, with where each came from: what the import records and what it must find in the model."""

    facts: BankFacts
    columns: tuple[str, ...] | None = None       # raw column order, for a pipeline fitted on an unnamed array
    decision_column: str | None = None           # the bank's own decisions in its CSV (None: the label column)
    stated: frozenset[str] = frozenset()         # columns the bank named itself (file or --sensitive)
    data_domains: Mapping[str, tuple[float, float]] = field(default_factory=dict)  # taken from --domain-from
    margin: float | None = None                  # --margin, when domains were taken from data
    data_file: str | None = None
    data_sha256: str | None = None
    facts_file: str | None = None

    def record(self, attributes: Sequence[str] | None = None) -> dict[str, Any]:
        """The facts as the artifact records them (JSON-ready); with `attributes`, only the domains the model uses."""
        f = self.facts
        used = (lambda c: True) if attributes is None else (lambda c: c in attributes)
        out: dict[str, Any] = {
            "name": f.name, "label_column": f.label_column, "decision_column": self.decision_column or f.label_column,
            "sensitive": list(f.sensitive),
            "domains": {c: list(d) for c, d in f.domains.items() if used(c)}, "units": dict(f.units),
            "class_values": None if f.class_values is None else list(f.class_values),
            "class_labels": None if f.class_labels is None else list(f.class_labels),
            "value_labels": {c: dict(v) for c, v in f.value_labels.items()}, "favourable": f.favourable,
        }
        if self.facts_file:
            out["facts_file"] = self.facts_file
        if self.data_file:
            out["domains_from"] = {"data": self.data_file, "sha256": self.data_sha256, "margin": self.margin,
                                   "columns": sorted(c for c in self.data_domains if used(c))}
        return out

    def describe_domains(self, attributes: Sequence[str] | None = None) -> str:
        """One line on where the numeric domains came from (printed by the import)."""
        taken = [c for c in self.data_domains if attributes is None or c in attributes]
        if not self.data_file or not taken:
            return "numeric domains from the facts file"
        return (f"numeric domains of {', '.join(taken)} from {self.data_file}: each column's [min, max] widened "
                f"by margin {self.margin:g} times its range on each side")


def load_facts(path: str | Path | None = None, *, name: str | None = None, sensitive: str | Sequence[str] | None = None,
               label_column: str | None = None, favourable: str | None = None,
               domain_from: str | Path | None = None, margin: float | None = None) -> LoadedFacts:
    """Read the facts file (if any) and apply the options: the BankFacts an importer takes."""
    data = _read_file(path) if path is not None else {}
    where = str(path) if path is not None else "the options"
    unknown = [k for k in data if k not in FACTS_KEYS]
    if unknown:
        raise DataError(f"{where}: unknown key(s) {', '.join(map(str, unknown))}; a facts file may give "
                        f"{', '.join(FACTS_KEYS)}")
    model_name = _text(data.get("name", name), "name", where) if data.get("name", name) is not None else None
    if model_name is None:
        raise DataError(f"{where}: the model needs a name (key 'name')")
    label = label_column if label_column is not None else data.get("label_column")
    if label is None:
        raise DataError(f"{where}: the outcome column the model predicts is not named (key 'label_column' or "
                        "--label-column; 'decision_column' names the bank's own decisions if they are elsewhere)")
    label = _text(label, "label_column", where)
    decision = _text(data["decision_column"], "decision_column", where) if data.get("decision_column") is not None else None
    sens = _sensitive(sensitive, where) if sensitive is not None else _text_list(data.get("sensitive"), "sensitive", where)
    if not sens:
        raise DataError(f"{where}: no sensitive column named (key 'sensitive' or --sensitive)")
    domains, units = _domains(data.get("domains") or {}, where)
    for column, unit in _text_map(data.get("units") or {}, "units", where).items():
        if column in units and units[column] != unit:
            raise DataError(f"{where}: unit of {column!r} given twice ({units[column]!r} and {unit!r})")
        units[column] = unit
    class_values = _optional_keys(data.get("class_values"), "class_values", where)
    class_labels = _optional_texts(data.get("class_labels"), "class_labels", where)
    if class_labels is not None and class_values is not None and len(class_labels) != len(class_values):
        raise DataError(f"{where}: {len(class_labels)} class_labels for {len(class_values)} class_values")
    value_labels = _value_labels(data.get("value_labels") or {}, where)
    fav = favourable if favourable is not None else data.get("favourable")
    fav = None if fav is None else category_key("favourable", fav)
    if fav is not None and class_values is not None and fav not in class_values:
        raise DataError(f"{where}: favourable class {fav!r} is not one of the class_values {', '.join(class_values)}")
    columns = _optional_texts(data.get("columns"), "columns", where)
    if columns is not None and len(set(columns)) != len(columns):
        raise DataError(f"{where}: 'columns' names a column twice")
    stated = frozenset([*sens, *domains, *units, *value_labels])
    data_domains: dict[str, tuple[float, float]] = {}
    sha = None
    if domain_from is not None:
        if margin is None:
            margin = 0.0
        if not (isinstance(margin, (int, float)) and math.isfinite(margin) and margin >= 0):
            raise DataError(f"--margin must be a non-negative number, not {margin!r}")
        found, sha = numeric_ranges(domain_from, exclude={label, *sens, *([decision] if decision else [])})
        data_domains = {c: widened(lo, hi, margin) for c, (lo, hi) in found.items() if c not in domains}
    elif margin is not None:
        raise DataError("--margin widens the domains taken from data: give --domain-from DATA.csv with it")
    facts = BankFacts(name=model_name, sensitive=tuple(sens), domains={**data_domains, **domains},
                      units=units, label_column=label, class_values=class_values, class_labels=class_labels,
                      value_labels=value_labels, favourable=fav)
    return LoadedFacts(facts=facts, columns=columns, decision_column=decision, stated=stated, data_domains=data_domains,
                       margin=margin if domain_from is not None else None,
                       data_file=str(domain_from) if domain_from is not None else None, data_sha256=sha,
                       facts_file=str(path) if path is not None else None)


def widened(lo: float, hi: float, margin: float) -> tuple[float, float]:
    """[lo, hi] widened by `margin` times its range on each side."""
    span = hi - lo
    return lo - margin * span, hi + margin * span


def numeric_ranges(path: str | Path, *, exclude: set[str] = frozenset()) -> tuple[dict[str, tuple[float, float]], str]:
    """Each column of the CSV whose every value is a finite number: its [min, max]; and the file's sha256."""
    p = Path(path)
    if not p.is_file():
        raise DataError(f"data file {p} does not exist")
    try:
        raw = p.read_bytes()
        text = raw.decode("utf-8-sig")
    except (OSError, UnicodeDecodeError) as exc:
        raise DataError(f"data file {p} is unreadable ({exc})") from None
    rows = csv.reader(text.splitlines())
    header = [h.strip() for h in next(rows, [])]
    if not header:
        raise DataError(f"{p}: empty file (a header row naming the columns is needed)")
    lows: dict[int, float] = {}
    highs: dict[int, float] = {}
    numeric = {i for i, h in enumerate(header) if h not in exclude}
    n = 0
    for line_no, row in enumerate(rows, 2):
        if not row or not any(cell.strip() for cell in row):
            continue
        if len(row) != len(header):
            raise DataError(f"{p}:{line_no}: expected {len(header)} fields, got {len(row)}")
        n += 1
        for i in list(numeric):
            v = _float_or_none(row[i])
            if v is None:
                numeric.discard(i)
                continue
            lows[i] = min(lows.get(i, v), v)
            highs[i] = max(highs.get(i, v), v)
    if not n:
        raise DataError(f"{p}: no data rows")
    return {header[i]: (lows[i], highs[i]) for i in sorted(numeric)}, hashlib.sha256(raw).hexdigest()


def unused_facts(loaded: LoadedFacts, attributes: Sequence[str]) -> list[str]:
    """Columns the bank named that the model does not use (most likely a misspelt column)."""
    return sorted(c for c in loaded.stated if c not in attributes)


# --------------------------------------------------------------------------- reading values


def _read_file(path: str | Path) -> dict[str, Any]:
    p = Path(path)
    if not p.is_file():
        raise DataError(f"facts file {p} does not exist")
    try:
        text = p.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise DataError(f"facts file {p} is unreadable ({exc})") from None
    try:
        if p.suffix.lower() == ".json":
            data = json.loads(text)
        else:
            import yaml

            data = yaml.safe_load(text)  # YAML also reads JSON
    except Exception as exc:  # the parsers raise many types for bad text
        raise DataError(f"facts file {p} is not valid {'JSON' if p.suffix.lower() == '.json' else 'YAML'}: "
                        f"{str(exc).splitlines()[0] if str(exc) else type(exc).__name__}") from None
    if not isinstance(data, dict):
        raise DataError(f"facts file {p}: expected a mapping of keys ({', '.join(FACTS_KEYS)}), "
                        f"got {type(data).__name__}")
    return data


def _text(value: Any, key: str, where: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise DataError(f"{where}: {key} must be non-empty text, not {value!r}")
    return value.strip()


def _text_list(value: Any, key: str, where: str) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list):
        raise DataError(f"{where}: {key} must be a list of column names, not {value!r}")
    out = [_text(v, key, where) for v in value]
    if len(set(out)) != len(out):
        raise DataError(f"{where}: {key} names a column twice")
    return out


def _sensitive(value: str | Sequence[str], where: str) -> list[str]:
    items = value.split(",") if isinstance(value, str) else list(value)
    out = [s.strip() for s in items if s.strip()]
    if len(set(out)) != len(out):
        raise DataError(f"{where}: --sensitive names a column twice")
    return out


def _optional_texts(value: Any, key: str, where: str) -> tuple[str, ...] | None:
    if value is None:
        return None
    if not isinstance(value, list) or not value:
        raise DataError(f"{where}: {key} must be a non-empty list, not {value!r}")
    out = tuple(_text(v, key, where) for v in value)
    if len(set(out)) != len(out):
        raise DataError(f"{where}: {key} repeats a value")
    return out


def _optional_keys(value: Any, key: str, where: str) -> tuple[str, ...] | None:
    """Raw class values as their canonical text (1, 1.0 and "1" are one value)."""
    if value is None:
        return None
    if not isinstance(value, list) or len(value) < 2:
        raise DataError(f"{where}: {key} must list at least two values, not {value!r}")
    out = tuple(_key(v, key, where) for v in value)
    if len(set(out)) != len(out):
        raise DataError(f"{where}: {key} repeats a value")
    return out


def _key(value: Any, key: str, where: str) -> str:
    try:
        text = category_key(key, value)
    except ValueError as exc:
        raise DataError(f"{where}: {exc}") from None
    if not text:
        raise DataError(f"{where}: {key} holds an empty value")
    return text


def _text_map(value: Any, key: str, where: str) -> dict[str, str]:
    if not isinstance(value, dict):
        raise DataError(f"{where}: {key} must map column names to text, not {value!r}")
    out = {}
    for column, text in value.items():
        if not isinstance(text, str):
            raise DataError(f"{where}: {key} of {column!r} must be text, not {text!r}")
        out[_text(column, key, where)] = text.strip()
    return out


def _domains(value: Any, where: str) -> tuple[dict[str, tuple[float, float]], dict[str, str]]:
    if not isinstance(value, dict):
        raise DataError(f"{where}: domains must map column names to [min, max], not {value!r}")
    domains, units = {}, {}
    for column, spec in value.items():
        column = _text(column, "domains", where)
        if isinstance(spec, dict):
            extra = [k for k in spec if k not in DOMAIN_KEYS]
            if extra or "min" not in spec or "max" not in spec:
                raise DataError(f"{where}: domain of {column!r} must be [min, max] or {{min, max, unit}}, "
                                f"not {spec!r}")
            lo, hi = spec["min"], spec["max"]
            if "unit" in spec:
                if not isinstance(spec["unit"], str):
                    raise DataError(f"{where}: unit of {column!r} must be text, not {spec['unit']!r}")
                units[column] = spec["unit"].strip()
        elif isinstance(spec, list) and len(spec) == 2:
            lo, hi = spec
        else:
            raise DataError(f"{where}: domain of {column!r} must be [min, max], not {spec!r}")
        lo, hi = _bound(lo, column, "min", where), _bound(hi, column, "max", where)
        if lo > hi:
            raise DataError(f"{where}: domain of {column!r} is empty: min {lo:g} lies above max {hi:g}")
        domains[column] = (lo, hi)
    return domains, units


def _bound(value: Any, column: str, which: str, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise DataError(f"{where}: {which} of the domain of {column!r} must be a finite number, not {value!r}")
    return float(value)


def _value_labels(value: Any, where: str) -> dict[str, dict[str, str]]:
    if not isinstance(value, dict):
        raise DataError(f"{where}: value_labels must map each column to {{raw value: label}}, not {value!r}")
    out: dict[str, dict[str, str]] = {}
    for column, labels in value.items():
        column = _text(column, "value_labels", where)
        if not isinstance(labels, dict) or not labels:
            raise DataError(f"{where}: value_labels of {column!r} must map raw values to labels, not {labels!r}")
        out[column] = {_key(raw, f"value_labels of {column}", where): _text(text, f"value_labels of {column}", where)
                       for raw, text in labels.items()}
    return out


def _float_or_none(text: str) -> float | None:
    try:
        v = float(text)
    except ValueError:
        return None
    return v if math.isfinite(v) else None


def facts_not_used(facts: BankFacts, attributes: Sequence[str]) -> list[str]:
    """Columns whose sensitivity, labels or unit the facts give but the model does not read (a misspelt name)."""
    named = [*facts.sensitive, *facts.value_labels, *facts.units]
    return sorted({c for c in named if c not in attributes})
