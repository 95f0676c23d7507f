"""The schema an ONNX pipeline's network reads: one feature per raw column, from the encoding the graph
applies to it (numeric, codes or one-hot, sensitive or not), with an exact rewrite of the first layer
where the schema's encoding differs from the graph's; and the label column of its classes.
"""
from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Mapping, Sequence

import numpy as np

from fairness.errors import DataError, ModelError
from fairness.schema import CategoricalFeature, LabelColumn, NumericFeature, SensitiveAttribute, category_key

from . import BankFacts
from .sklearn_features import MAX_CODE_VALUES
from .onnx_values import Column, Network


@dataclass(frozen=True)
class FirstLayer:
    """The first affine layer, rewritten as the schema's inputs need it."""

    w: np.ndarray
    b: np.ndarray
    notes: tuple[str, ...]


def _blocks(cols: Sequence[Column], names: Mapping[tuple[str, int], str], source: str) -> list[tuple[str, list[int]]]:
    """Consecutive network inputs from the same raw column; a raw column in two places is refused."""
    blocks: list[tuple[str, list[int]]] = []
    for i, c in enumerate(cols):
        name = names[c.source]
        if blocks and blocks[-1][0] == name:
            blocks[-1][1].append(i)
        elif any(n == name for n, _ in blocks):
            raise ModelError(f"{source}: column {name!r} reaches the network in two places (inputs "
                             f"{blocks[[n for n, _ in blocks].index(name)][1][0]} and {i}); a schema encodes each "
                             "raw column once")
        else:
            blocks.append((name, [i]))
    return blocks


def _fold(layer: FirstLayer, i: int, a: Fraction, b: Fraction) -> FirstLayer:
    """Input i of the graph's first layer held a * v + b; the schema's input holds v: W'[:, i] = W[:, i] * a,
    b' = b + W[:, i] * b."""
    w = layer.w.copy()
    w[:, i] = layer.w[:, i] * float(a)
    return FirstLayer(w, layer.b + layer.w[:, i] * float(b), layer.notes)


def _with_note(layer: FirstLayer, note: str) -> FirstLayer:
    return FirstLayer(layer.w, layer.b, layer.notes + (note,))


def _feature(name: str, cols: list[Column], first: list[int], layer: FirstLayer, facts: BankFacts,
             source: str) -> tuple[Any, FirstLayer]:
    """The schema feature of one raw column and the first layer rewritten for its encoding."""
    kinds = {c.basis for c in cols}
    if len(kinds) > 1 or (kinds != {"indicator"} and len(cols) > 1):
        raise ModelError(f"{source}: column {name!r} reaches the network {len(cols)} times "
                         f"({', '.join(sorted(kinds))}); a schema encodes each raw column once")
    sensitive = name in facts.sensitive
    kind = kinds.pop()
    if kind == "indicator":
        return _one_hot_feature(name, cols, first, layer, facts, sensitive, source)
    c, i = cols[0], first[0]
    if kind == "code":
        return _code_feature(name, c, i, layer, facts, sensitive, source)
    if sensitive:
        return _sensitive_number(name, c, i, layer, facts, source)
    return _numeric_feature(name, c, i, layer, facts, source)


def _numeric_feature(name: str, c: Column, i: int, layer: FirstLayer, facts: BankFacts,
                     source: str) -> tuple[NumericFeature, FirstLayer]:
    """a * x + b = (x - mean) / std with mean = -b / a, std = 1 / a; a negative a is folded as a sign."""
    if c.a == 0:
        raise ModelError(f"{source}: column {name!r} is multiplied by 0 ({c.scaled_by}): the network ignores it")
    if name not in facts.domains:
        raise DataError(f"{source}: numeric column {name!r} has no domain: give its [min, max] in raw units in the "
                        "facts' domains, or take it from data with --domain-from DATA.csv")
    lo, hi = facts.domains[name]
    if c.a < 0:
        layer = _with_note(_fold(layer, i, Fraction(-1), Fraction(0)),
                           f"{name}: the graph scales it by a negative factor; the sign is folded into the first layer")
    feature = NumericFeature(kind="numeric", name=name, min=lo, max=hi, mean=float(-c.b / c.a),
                             std=float(1 / abs(c.a)), unit=facts.units.get(name, ""))
    return feature, layer


def _sensitive_number(name: str, c: Column, i: int, layer: FirstLayer, facts: BankFacts,
                      source: str) -> tuple[SensitiveAttribute, FirstLayer]:
    """A sensitive column the graph reads as a number: its values must be integer codes (from the facts)."""
    values, codes = _sensitive_codes(name, c, facts, source)
    feature = SensitiveAttribute(kind="sensitive", name=name, values=values, codes=codes,
                                 labels=_value_labels(name, values, facts, source))
    if not c.identity:
        layer = _with_note(_fold(layer, i, c.a, c.b),
                           f"{name}: the bank scales this sensitive column ({c.scaled_by}: {_affine_text(c)}); the "
                           "scaling is folded into the first layer so that its input holds the integer code")
    return feature, layer


def _sensitive_codes(name: str, c: Column, facts: BankFacts, source: str) -> tuple[tuple[str, ...], tuple[int, ...]]:
    how = (f"list its codes in the facts file (value_labels: {{{name}: {{0: ..., 1: ...}}}}) or give it an integer "
           f"domain (domains: {{{name}: [0, 1]}})")
    if c.text:
        raise ModelError(f"{source}: sensitive column {name!r} reaches the network as text, not as a code")
    if name in facts.value_labels:
        keys = list(facts.value_labels[name])
        if not all(_is_int_text(k) for k in keys):
            raise DataError(f"{source}: sensitive column {name!r} enters the network as a number, so its values must "
                            f"be integer codes; the facts' value_labels give {', '.join(keys)}")
        codes = sorted(int(k) for k in keys)
    elif name in facts.domains:
        lo, hi = facts.domains[name]
        if not (float(lo).is_integer() and float(hi).is_integer()):
            raise DataError(f"{source}: sensitive column {name!r} enters the network as a number, so its values must "
                            f"be integer codes, but its domain [{lo:g}, {hi:g}] is not: {how}")
        codes = list(range(int(lo), int(hi) + 1))
        if len(codes) > MAX_CODE_VALUES:
            raise DataError(f"{source}: sensitive column {name!r} has {len(codes)} integer codes in [{lo:g}, {hi:g}]; "
                            f"at most {MAX_CODE_VALUES} values can be enumerated: {how}")
    else:
        raise DataError(f"{source}: sensitive column {name!r} enters the network as a number, so its values must be "
                        f"integer codes: {how}")
    if len(codes) < 2:
        raise DataError(f"{source}: sensitive column {name!r} takes a single value; it needs at least two")
    return tuple(str(v) for v in codes), tuple(codes)


def _is_int_text(text: str) -> bool:
    try:
        return float(text).is_integer() and str(int(float(text))) == text
    except ValueError:
        return False


def _affine_text(c: Column) -> str:
    return f"x * {float(c.a):.9g} + {float(c.b):.9g}"


def _code_feature(name: str, c: Column, i: int, layer: FirstLayer, facts: BankFacts, sensitive: bool,
                  source: str) -> tuple[Any, FirstLayer]:
    """A LabelEncoder's codes: ordinal categorical (scaling in mean/std), or a sensitive code (scaling folded)."""
    labels = _value_labels(name, c.categories, facts, source)
    if sensitive:
        if not all(v.denominator == 1 for v in c.codes):
            raise ModelError(f"{source}: sensitive column {name!r} is coded by {c.encoder} with codes that are not "
                             "integers")
        feature = SensitiveAttribute(kind="sensitive", name=name, values=c.categories,
                                     codes=tuple(int(v) for v in c.codes), labels=labels)
        if not c.identity:
            layer = _with_note(_fold(layer, i, c.a, c.b),
                               f"{name}: the bank scales this sensitive column's codes ({c.scaled_by}); the scaling "
                               "is folded into the first layer so that its input holds the integer code")
        return feature, layer
    if c.a == 0:
        raise ModelError(f"{source}: column {name!r} is multiplied by 0 ({c.scaled_by}): the network ignores it")
    if c.a < 0:
        layer = _with_note(_fold(layer, i, Fraction(-1), Fraction(0)),
                           f"{name}: the graph scales its codes by a negative factor; the sign is folded into the "
                           "first layer")
    ordinal = CategoricalFeature(kind="categorical", name=name, categories=c.categories, labels=labels,
                                 encoding="ordinal", codes=tuple(float(v) for v in c.codes), mean=float(-c.b / c.a),
                                 std=float(1 / abs(c.a)))
    return ordinal, layer


def _one_hot_feature(name: str, cols: list[Column], first: list[int], layer: FirstLayer, facts: BankFacts,
                     sensitive: bool, source: str) -> tuple[Any, FirstLayer]:
    """A OneHotEncoder's indicators, in its category order, all of them or all but the dropped one."""
    encoders = {c.encoder for c in cols}
    if len(encoders) > 1:
        raise ModelError(f"{source}: column {name!r} is one-hot encoded twice ({', '.join(sorted(encoders))})")
    categories = cols[0].categories
    kept = [c.category for c in cols]
    if len(set(kept)) != len(kept):
        raise ModelError(f"{source}: column {name!r}: a category's indicator reaches the network twice")
    if kept != [v for v in categories if v in kept]:
        raise ModelError(f"{source}: column {name!r}: its indicators reach the network in an order "
                         f"({', '.join(kept)}) other than the encoder's ({', '.join(categories)})")
    missing = [v for v in categories if v not in kept]
    if len(missing) > 1:
        raise ModelError(f"{source}: column {name!r}: only {len(kept)} of its {len(categories)} categories reach the "
                         f"network ({', '.join(missing)} do not); a one-hot encoding may drop one category")
    drop = missing[0] if missing else None
    scaled = [(i, c) for i, c in zip(first, cols) if not c.identity]
    for i, c in scaled:
        layer = _fold(layer, i, c.a, c.b)
    if scaled:
        layer = _with_note(layer, f"{name}: the graph scales its one-hot indicators ({scaled[0][1].scaled_by}); the "
                                  "scaling is folded into the first layer so that its inputs are exactly 0 or 1")
    labels = _value_labels(name, categories, facts, source)
    if sensitive:
        return SensitiveAttribute(kind="sensitive", name=name, values=categories, labels=labels, encoding="one_hot",
                                  drop=drop), layer
    return CategoricalFeature(kind="categorical", name=name, categories=categories, labels=labels,
                              encoding="one_hot", drop=drop), layer


def _value_labels(name: str, values: Sequence[str], facts: BankFacts, source: str) -> tuple[str, ...] | None:
    given = facts.value_labels.get(name)
    if given is None:
        return None
    unknown = [v for v in given if v not in values]
    if unknown:
        raise DataError(f"{source}: the facts label value {unknown[0]!r} of column {name!r}, which the model does not "
                        f"know (its values: {', '.join(values)})")
    missing = [v for v in values if v not in given]
    if missing:
        raise DataError(f"{source}: the facts' value_labels of column {name!r} give no label for "
                        f"{', '.join(missing)}")
    return tuple(given[v] for v in values)


def schema_features(net: Network, names: Mapping[tuple[str, int], str], facts: BankFacts,
                     source: str) -> tuple[list[Any], FirstLayer]:
    layer = FirstLayer(net.weights[0].copy(), net.biases[0].copy(), ())
    features = []
    cols = net.features.cols
    for name, idx in _blocks(cols, names, source):
        feature, layer = _feature(name, [cols[i] for i in idx], idx, layer, facts, source)
        features.append(feature)
    return features, layer


def check_facts(features: Sequence[Any], facts: BankFacts, source: str) -> None:
    """Every column the facts single out (sensitive, labelled, given a unit) must be one the model reads."""
    from .bank_facts import facts_not_used

    names = [f.name for f in features]
    for name in facts.sensitive:
        if name not in names:
            raise DataError(f"{source}: sensitive column {name!r} is not an input of the model (its columns: "
                            f"{', '.join(names)}): the model must read every sensitive column")
    unused = facts_not_used(facts, names)
    if unused:
        raise DataError(f"{source}: the facts name column(s) {', '.join(map(repr, unused))}, which the model does "
                        f"not use (it reads {', '.join(names)})")
    if facts.label_column in names:
        raise DataError(f"{source}: the decision column {facts.label_column!r} is also a column the model reads")


def label_column_of(n_classes: int, model_classes: tuple[str, ...] | None, facts: BankFacts,
                  source: str) -> tuple[LabelColumn, tuple[str, ...]]:
    """The class values: the graph's own (skl2onnx's classes), else the facts', else 0..k-1 (said in a note)."""
    notes: tuple[str, ...] = ()
    if model_classes is not None:
        values = tuple(category_key("class", v) for v in model_classes)
        if len(values) != n_classes:
            raise ModelError(f"{source}: the graph names {len(values)} classes but its network has {n_classes} scores")
        if facts.class_values is not None and tuple(facts.class_values) != values:
            raise DataError(f"{source}: the facts' class_values ({', '.join(facts.class_values)}) differ from the "
                            f"model's classes ({', '.join(values)}), in that order")
    elif facts.class_values is not None:
        values = tuple(facts.class_values)
        if len(values) != n_classes:
            raise DataError(f"{source}: the facts give {len(values)} class_values but the network has {n_classes} "
                            "classes")
    else:
        values = tuple(str(i) for i in range(n_classes))
        notes = (f"the graph does not name its classes: they are taken as {', '.join(values)} in output order "
                 "(class_values in the facts file name them)",)
    if facts.class_labels is not None and len(facts.class_labels) != len(values):
        raise DataError(f"{source}: {len(facts.class_labels)} class_labels for {len(values)} classes")
    if facts.favourable is not None and facts.favourable not in values:
        raise DataError(f"{source}: the favourable class {facts.favourable!r} is not one of the model's classes "
                        f"({', '.join(values)})")
    return LabelColumn(column=facts.label_column, values=values, labels=facts.class_labels), notes
