"""The schema features of a fitted transformer's column encodings: one attribute per raw column, its
inputs exactly the transformer's, with the bank's facts for what no fitted object says (sensitive
columns, numeric domains, labels); a per-input affine map the schema cannot hold is folded into the
network's first layer and reported.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from fairness.errors import ModelError
from fairness.model import FloatMLP
from fairness.schema import CategoricalFeature, NumericFeature, SensitiveAttribute, category_key

from . import BankFacts
from .bank_facts import facts_not_used
from .rewrites import InputScaling, fold_input_scaling
from .sklearn_columns import ColumnEncoding, describe, record_frame


MAX_CODE_VALUES = 64  # a numeric sensitive column's integer values, when only its domain gives them


@dataclass(frozen=True)
class Preprocessing:
    """A fitted transformer read as schema features: what a network after it reads, and how to run it."""

    features: tuple[Any, ...]           # schema features (raw columns) in model-input order
    scalings: tuple[InputScaling, ...]  # per model input, to fold into the network's first layer
    notes: tuple[str, ...]
    source: str                         # e.g. "ColumnTransformer(StandardScaler, OneHotEncoder)"
    transformer: Any                    # the fitted object (None when only encodings were read)
    frame: Callable[[Sequence[Mapping[str, Any]]], Any]  # raw records -> the input the transformer was fitted on

    @property
    def n_inputs(self) -> int:
        return sum(len(f.inputs) for f in self.features)

    def fold(self, network: FloatMLP) -> FloatMLP:
        """The network reading the schema's inputs (every non-schema scaling folded into layer 0)."""
        return fold_input_scaling(network, self.scalings) if self.scalings else network

    def transform(self, records: Sequence[Mapping[str, Any]]) -> np.ndarray:
        """The bank's own transformer on raw records (dense float64)."""
        out = self.transformer.transform(self.frame(records))
        out = out.toarray() if hasattr(out, "toarray") else out
        return np.asarray(out, dtype=np.float64)


def preprocessing_from(encodings: Sequence[ColumnEncoding], facts: BankFacts, *, transformer: Any,
                       raw_columns: Sequence[str], source: str,
                       named: bool | None = None) -> Preprocessing:
    """Schema features, folds and notes from the encodings; refuses a sensitive column the model does not use."""
    present = [e.column for e in encodings]
    for name in facts.sensitive:
        if name not in present:
            where = "is dropped by the pipeline" if name in raw_columns else \
                f"is not a column of the pipeline (its columns: {', '.join(raw_columns)})"
            raise ModelError(f"sensitive column {name!r} {where}: the model must read every sensitive column")
    unused = facts_not_used(facts, present)
    if unused:
        raise ModelError(f"the facts name column(s) {', '.join(map(repr, unused))}, which the model does not use "
                         f"(it reads {', '.join(present)})")
    features, scalings, notes = [], [], []
    column = 0
    for e in encodings:
        feature, folded, note = _feature(e, facts, column)
        features.append(feature)
        scalings.extend(folded)
        notes.extend(note)
        column += e.width
    named = bool(getattr(transformer, "feature_names_in_", None) is not None) if named is None else named
    frame = record_frame(encodings, raw_columns, named=named)
    return Preprocessing(features=tuple(features), scalings=tuple(scalings), notes=tuple(notes),
                         source=f"{source} {describe(transformer)}".strip(), transformer=transformer, frame=frame)


def _feature(e: ColumnEncoding, facts: BankFacts, first: int) -> tuple[Any, list[InputScaling], list[str]]:
    """One encoding as a schema feature, plus the scalings to fold (model input columns from `first`)."""
    scaled = [(first + i, m, s) for i, (m, s) in enumerate(e.scalings) if (m, s) != (0.0, 1.0)]
    by = " then ".join(e.scaled_by) or "its scaling"
    if e.column in facts.sensitive:
        feature = _sensitive(e, facts)
        folds = [InputScaling(c, m, s) for c, m, s in scaled]
        return feature, folds, _fold_notes(f"sensitive column {e.column!r}", by, scaled)
    if e.kind == "numeric":
        mean, std = e.scalings[0]
        lo, hi = _domain(e, facts)
        return NumericFeature(kind="numeric", name=e.column, min=lo, max=hi, mean=mean, std=std,
                              unit=facts.units.get(e.column, "")), [], []
    categories = _category_texts(e)
    labels = _labels(e.column, categories, facts)
    if e.kind == "ordinal":
        mean, std = e.scalings[0]
        return CategoricalFeature(kind="categorical", name=e.column, categories=categories, labels=labels,
                                  encoding="ordinal", mean=mean, std=std), [], []
    drop = None if e.drop is None else category_key(e.column, e.drop)
    feature = CategoricalFeature(kind="categorical", name=e.column, categories=categories, labels=labels,
                                 encoding="one_hot", drop=drop)
    notes = _fold_notes(f"one-hot column {e.column!r}", by, scaled)
    return feature, [InputScaling(c, m, s) for c, m, s in scaled], notes


def _fold_notes(what: str, by: str, scaled: Sequence[tuple[int, float, float]]) -> list[str]:
    """The rewrite said in words: which scaling went into the first layer (the schema keeps exact points)."""
    if not scaled:
        return []
    if len(scaled) == 1:
        _, m, s = scaled[0]
        how = f"(x - {m:.6g}) / {s:.6g}"
    else:
        how = f"a centre and scale on each of its {len(scaled)} inputs"
    return [f"{what}: {by}, {how}, folded exactly into the first layer, which reads the unscaled inputs"]


def _sensitive(e: ColumnEncoding, facts: BankFacts) -> SensitiveAttribute:
    if e.kind == "one_hot":
        values = _category_texts(e)
        drop = None if e.drop is None else category_key(e.column, e.drop)
        return _sensitive_attribute(e.column, values, _labels(e.column, values, facts), encoding="one_hot", drop=drop)
    if e.kind == "ordinal":
        values = _category_texts(e)
        return _sensitive_attribute(e.column, values, _labels(e.column, values, facts),
                                    codes=tuple(range(len(values))))
    values, codes = _integer_values(e, facts)
    return _sensitive_attribute(e.column, values, _labels(e.column, values, facts), codes=codes)


def _sensitive_attribute(name: str, values: tuple[str, ...], labels: tuple[str, ...] | None, *,
                         encoding: str = "code", drop: str | None = None,
                         codes: tuple[int, ...] | None = None) -> SensitiveAttribute:
    if len(values) < 2:
        raise ModelError(f"sensitive column {name!r} has a single value ({', '.join(values)}) in the fitted "
                         "encoder: a certificate needs at least two")
    try:
        return SensitiveAttribute(kind="sensitive", name=name, values=values, labels=labels, encoding=encoding,
                                  drop=drop, codes=codes)
    except ValueError as exc:
        raise ModelError(f"sensitive column {name!r}: {first_error(exc)}") from None


def _integer_values(e: ColumnEncoding, facts: BankFacts) -> tuple[tuple[str, ...], tuple[int, ...]]:
    """A numeric sensitive column's values: the facts' value_labels (integers), else its integer domain."""
    if e.column in facts.value_labels:
        values = tuple(facts.value_labels[e.column])
        try:
            codes = tuple(int(v) for v in values)
        except ValueError:
            raise ModelError(f"sensitive column {e.column!r} is numeric in step {e.step!r}: its values must be "
                             f"integers, the facts' value_labels give {', '.join(values)}") from None
        order = sorted(range(len(codes)), key=codes.__getitem__)
        return tuple(str(codes[i]) for i in order), tuple(codes[i] for i in order)
    domain = facts.domains.get(e.column)
    if domain is not None and all(float(v).is_integer() for v in domain) and domain[1] - domain[0] < MAX_CODE_VALUES:
        codes = tuple(range(int(domain[0]), int(domain[1]) + 1))
        return tuple(str(c) for c in codes), codes
    raise ModelError(f"sensitive column {e.column!r} is numeric in step {e.step!r}: list its integer values in the "
                     f"facts' value_labels (e.g. {e.column}: {{1: ..., 2: ...}}) or give it an integer domain")


def _domain(e: ColumnEncoding, facts: BankFacts) -> tuple[float, float]:
    domain = facts.domains.get(e.column)
    if domain is None:
        raise ModelError(f"numeric column {e.column!r} (step {e.step!r}) has no domain: give its [min, max] in the "
                         "facts' domains, or take it from data with --domain-from DATA.csv")
    return float(domain[0]), float(domain[1])


def _category_texts(e: ColumnEncoding) -> tuple[str, ...]:
    try:
        texts = tuple(category_key(e.column, c) for c in e.categories)
    except ValueError as exc:
        raise ModelError(f"step {e.step!r}: column {e.column!r} has a category FairProof cannot name ({exc}); "
                         "refit the encoder without missing values") from None
    if len(set(texts)) != len(texts) or not all(texts):
        raise ModelError(f"step {e.step!r}: column {e.column!r} has categories that read alike as text: "
                         f"{', '.join(map(repr, e.categories))}")
    return texts


def _labels(column: str, values: tuple[str, ...], facts: BankFacts) -> tuple[str, ...] | None:
    given = facts.value_labels.get(column)
    if not given:
        return None
    unknown = [v for v in given if v not in values]
    if unknown:
        raise ModelError(f"the facts label value(s) {', '.join(map(repr, unknown))} of column {column!r}, which the "
                         f"fitted encoder does not know (its values: {', '.join(values)})")
    labels = tuple(given.get(v, v) for v in values)
    if len(set(labels)) != len(labels):
        raise ModelError(f"the facts' value_labels of column {column!r} give two values the same label")
    return labels


def first_error(exc: Exception) -> str:
    errors = getattr(exc, "errors", None)
    if callable(errors):
        return "; ".join(str(e.get("msg", e)) for e in errors())
    return str(exc)
