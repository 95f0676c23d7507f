"""The page and the verifier read a card's feature schema the same way: every rule of fairness/schema.py's
FeatureSchema (and its features' and label's validators) and of ModelCard._schema_binds_statement, run by
the page too (verifier_client/page/schema.js), so a card Python refuses is never VALID on the page, in
words the bank chose; and no number in a card is infinite or NaN on either side (the Python verifier
once printed a certificate with `+-inf`, or crashed after "VALID")."""
from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any, Callable

import pytest

import synthetic_credit as book
from commitments.canonical import NonCanonical
from commitments.card import ModelCard
from fairness.schema import FeatureSchema
from node_runner import run_node
from test_page_checks import _mutations
from verifier_client.page import PAGE_DIR, page_schemas

SCALE_BITS = 16


def schema_card(schema: dict[str, Any] | None = None, scale_bits: int = SCALE_BITS) -> dict[str, Any]:
    """A card of an imported model under `schema` (the synthetic book's by default), consistent with it:
    its inputs, box, sensitive attributes and classes are the schema's (as `fairproof commit` writes them).
    No weights or keys: the card's own reading is under test."""
    data = json.loads(json.dumps(schema or book.SCHEMA))
    fs = FeatureSchema.model_validate(data)
    lower, upper = fs.quantised_box(scale_bits)
    card = {"model_id": "synthetic", "dataset": "synthetic-credit", "feature_names": list(fs.feature_names),
            "feature_schema": data, "sensitive": sensitive_entries(data, scale_bits),
            "architecture": {"n_inputs": fs.n_inputs, "hidden_sizes": [3], "n_classes": 2,
                             "class_labels": list(fs.class_labels)},
            "scale_bits": scale_bits, "eps_scale_bits": 16, "box_lower": list(lower), "box_upper": list(upper),
            "commitment": "1", "commitment_scheme": "poseidon"}
    return json.loads(ModelCard.model_validate(card).model_dump_json())


def sensitive_entries(schema: dict, scale_bits: int = SCALE_BITS) -> list[dict]:
    """The card's sensitive attributes of `schema`, as a card publishes them: one input as `column` and an
    integer per value, several as `columns` and a point per value (the schema's points at the card's scale)."""
    out = []
    for f, first in FeatureSchema.model_validate(schema).sensitive_columns():
        points = [[v << scale_bits for v in p] for p in f.points]
        where = ({"column": first, "values": [p[0] for p in points]} if len(f.inputs) == 1 else
                 {"columns": list(range(first, first + len(f.inputs))), "values": points})
        out.append({"name": f.name, **where, "labels": list(f.value_labels)})
    return out


CARD_RUNNER = """
const lib = {};
for (const m of ['canonical', 'schema', 'verify']) lib[m] = require(process.argv[1] + '/' + m + '.js');
let input = ''; process.stdin.on('data', d => input += d).on('end', async () => {
  const job = JSON.parse(input);
  const schemas = lib.canonical.parseJson(job.schemas);
  const out = [];
  for (const text of job.cards) {
    const r = await lib.verify.verifyBundle({ bundleText: '{}', cardText: text }, { schemas });
    out.push({ verdict: r.valid ? 'VALID' : r.kind === 'unusable' ? 'UNUSABLE' : 'INVALID', reason: r.reason || '',
               card: r.cardDigest !== null });
  }
  process.stdout.write(JSON.stringify(out));
});
"""


def page_card_verdicts(texts: list[str]) -> list[dict]:
    """The page's verdict on each card (with an empty bundle): UNUSABLE naming the card's defect, or, for a
    card it reads, a refusal of the bundle that comes after the card (its digest computed)."""
    return run_node(CARD_RUNNER, {"schemas": json.dumps(page_schemas()), "cards": texts}, str(PAGE_DIR))


def python_refusal(text: str | bytes) -> str | None:
    try:
        ModelCard.from_json(text)
    except NonCanonical as exc:
        return str(exc)
    return None


def page_reads_card(result: dict) -> bool:
    return result["card"] and "malformed card" not in result["reason"]


def _set(path: str, value: Any) -> Callable[[dict], None]:
    def edit(card: dict) -> None:
        target: Any = card
        keys = path.split(".")
        for k in keys[:-1]:
            target = target[int(k)] if isinstance(target, list) else target[k]
        if isinstance(target, list):
            target[int(keys[-1])] = value
        else:
            target[keys[-1]] = value
    return edit


def _all(*edits: Callable[[dict], None]) -> Callable[[dict], None]:
    def edit(card: dict) -> None:
        for e in edits:
            e(card)
    return edit


def _without(path: str) -> Callable[[dict], None]:
    def edit(card: dict) -> None:
        target: Any = card
        keys = path.split(".")
        for k in keys[:-1]:
            target = target[int(k)] if isinstance(target, list) else target[k]
        del target[keys[-1]]
    return edit


FS = "feature_schema"
# Every way fairness/schema.py's validators and ModelCard._schema_binds_statement refuse a card, with the
# words Python says (the page must refuse, in those words).
REFUSED: dict[str, tuple[Callable[[dict], None], str]] = {
    # NumericFeature
    "numeric std 0": (_set(f"{FS}.features.0.std", 0.0), "numeric feature 'age': std must be positive"),
    "numeric std negative": (_set(f"{FS}.features.1.std", -30), "numeric feature 'income': std must be positive"),
    "numeric min above max": (_set(f"{FS}.features.0.min", 90), "numeric feature 'age': min 90.0 lies above max 80.0"),
    "numeric empty name": (_set(f"{FS}.features.0.name", ""), ""),
    "numeric extra field": (_set(f"{FS}.features.0.colour", "red"), ""),
    "numeric min as text": (_set(f"{FS}.features.0.min", "18"), ""),
    "numeric max boolean": (_set(f"{FS}.features.0.max", True), ""),
    # CategoricalFeature
    "one-hot with codes": (_set(f"{FS}.features.2.codes", [1, 2, 3]),
                           "categorical feature 'purpose': a one-hot encoding takes no codes, mean or std"),
    "one-hot with a mean": (_set(f"{FS}.features.2.mean", 0.5), "a one-hot encoding takes no codes, mean or std"),
    "one-hot with a std": (_set(f"{FS}.features.2.std", 2), "a one-hot encoding takes no codes, mean or std"),
    "ordinal codes count": (_set(f"{FS}.features.3.codes", [0, 1]), "categorical feature 'housing': 2 codes for 3 categories"),
    "ordinal std 0": (_set(f"{FS}.features.3.std", 0), "codes, mean and std must be finite, std positive"),
    "ordinal std negative": (_set(f"{FS}.features.3.std", -0.8), "codes, mean and std must be finite, std positive"),
    "categories repeated": (_set(f"{FS}.features.3.categories", ["rent", "own", "own"]), "'housing': values repeated"),
    "category with a space": (_set(f"{FS}.features.3.categories", ["rent", "own ", "free"]),
                              "'housing': values must be non-empty text without surrounding spaces"),
    "category with a Python-only space": (_set(f"{FS}.features.3.categories", ["rent", "\x1cown", "free"]),
                                          "values must be non-empty text without surrounding spaces"),
    "category with a next-line": (_set(f"{FS}.features.3.categories", ["rent", "own\x85", "free"]),
                                  "values must be non-empty text without surrounding spaces"),
    "category with an ideographic space": (_set(f"{FS}.features.3.categories", ["rent", "own\u3000", "free"]),
                                           "values must be non-empty text without surrounding spaces"),
    "empty category": (_set(f"{FS}.features.3.categories", ["rent", "", "free"]),
                       "values must be non-empty text without surrounding spaces"),
    "no categories": (_set(f"{FS}.features.3.categories", []), ""),
    "category labels count": (_set(f"{FS}.features.3.labels", ["rents"]), "'housing': 1 labels for 3 values"),
    "category labels repeated": (_set(f"{FS}.features.3.labels", ["a", "a", "b"]), "'housing': labels repeated"),
    "unknown encoding": (_set(f"{FS}.features.3.encoding", "binary"), ""),
    # SensitiveAttribute
    "sensitive values repeated": (_set(f"{FS}.features.5.values", ["F", "F"]), "'sex': values repeated"),
    "sensitive one value": (_set(f"{FS}.features.5.values", ["F"]), ""),
    "sensitive value padded": (_set(f"{FS}.features.5.values", ["F", "M\t"]), "without surrounding spaces"),
    "sensitive labels count": (_set(f"{FS}.features.5.labels", ["female"]), "'sex': 1 labels for 2 values"),
    "sensitive labels repeated": (_set(f"{FS}.features.5.labels", ["person", "person"]), "'sex': labels repeated"),
    "sensitive codes count": (_set(f"{FS}.features.6.codes", [0, 1]), "sensitive attribute 'region': 2 codes for 3 values"),
    "sensitive codes repeated": (_set(f"{FS}.features.6.codes", [0, 1, 1]), "sensitive attribute 'region': codes must be distinct"),
    "sensitive code fractional": (_set(f"{FS}.features.6.codes", [0, 1, 1.5]), ""),
    "sensitive code as text": (_set(f"{FS}.features.6.codes", [0, 1, "2"]), ""),
    # LabelColumn
    "label values repeated": (_set(f"{FS}.label.values", ["no", "no"]), "'default': values repeated"),
    "label labels repeated": (_set(f"{FS}.label.labels", ["repays", "repays"]), "'default': labels repeated"),
    "label labels count": (_set(f"{FS}.label.labels", ["repays"]), "'default': 1 labels for 2 values"),
    "label column empty": (_set(f"{FS}.label.column", ""), ""),
    # FeatureSchema
    "attribute named twice": (_set(f"{FS}.features.4.name", "age"), "attribute(s) named twice: age"),
    "label column is a feature": (_set(f"{FS}.label.column", "income"), "the label column 'income' is also a feature"),
    "no sensitive attribute": (_all(_set(f"{FS}.features.5", {"kind": "categorical", "name": "sex", "categories": ["F", "M"]}),
                                    _set(f"{FS}.features.6", {"kind": "categorical", "name": "region",
                                                              "categories": ["north", "south", "east"]})),
                               "a schema needs at least one sensitive attribute"),
    "one-hot input collides": (_set(f"{FS}.features.0.name", "purpose=car"),
                               "two model inputs have the same name (a one-hot input collides with an attribute)"),
    "no features": (_set(f"{FS}.features", []), ""),
    "other format": (_set(f"{FS}.format", "fairproof-schema/2"), ""),
    # ModelCard._schema_binds_statement
    "encodings and a schema": (lambda c: c.__setitem__("features", [{"name": n, "kind": "numeric"} for n in c["feature_names"]]),
                               "either as feature encodings or as a schema, not both"),
    "inputs in another order": (_all(_set("feature_names.0", "income"), _set("feature_names.1", "age")),
                                "the feature schema's model inputs differ from the card's feature names"),
    "classes relabelled in the schema": (_set(f"{FS}.label.labels", ["defaults", "repays"]),
                                         "the feature schema's classes differ from the card's class labels"),
    "classes relabelled on the card": (_set("architecture.class_labels", ["defaults", "repays"]), "classes differ"),
    "narrower domain": (_set(f"{FS}.features.0.max", 70.0), "the domain box differs from the feature schema's raw domain"),
    "wider box": (_set("box_upper.0", 10 ** 6), "domain box differs"),
    "lower box": (_set("box_lower.1", -(10 ** 6)), "domain box differs"),
    "mean moved by an ulp": (_set(f"{FS}.features.1.mean", 60.00000000000001), "domain box differs"),
    "std moved": (_set(f"{FS}.features.4.std", 12.5), "domain box differs"),
    "ordinal codes widen the box": (_set(f"{FS}.features.3.codes", [0, 1, 5]), "domain box differs"),
    "other scale": (_set("scale_bits", 15), "domain box differs"),
    "sensitive labels swapped in the schema": (_set(f"{FS}.features.5.labels", ["male", "female"]), "sensitive attributes differ"),
    "sensitive labels swapped on the card": (_set("sensitive.0.labels", ["male", "female"]), "sensitive attributes differ"),
    "sensitive code not the proof's": (_set(f"{FS}.features.6.codes", [0, 1, 3]), "differ"),
    "sensitive name on the card": (_set("sensitive.1.name", "area"), "sensitive attributes differ"),
    "sensitive column on the card": (_set("sensitive.1.column", 0), "sensitive attributes differ"),
    "sensitive dropped from the card": (lambda c: c["sensitive"].pop(), "sensitive attributes differ"),
    "sensitive values on the card": (_set("sensitive.1.values", [0, 65536, 131073]), "sensitive attributes differ"),
}

# Changes Python accepts: the page must accept them too (the card reads, its digest is computed).
ACCEPTED: dict[str, Callable[[dict], None]] = {
    "as built": lambda c: None,
    "unit and description": _all(_set(f"{FS}.features.0.unit", "yrs"), _set(f"{FS}.description", "other")),
    "categorical labels": _set(f"{FS}.features.3.labels", ["renting", "owner", "free housing"]),
    "ordinal codes permuted (same box)": _set(f"{FS}.features.3.codes", [2, 0, 1]),
    "integral numbers written as integers": _all(_set(f"{FS}.features.0.mean", 45), _set(f"{FS}.features.0.std", 14)),
    "a BOM inside a category (not whitespace to Python)": _all(
        _set(f"{FS}.features.2.categories", ["\ufeffcar", "house", "education"]), _set("feature_names.2", "purpose=\ufeffcar")),
    "optional fields left out": _all(_without(f"{FS}.description"), _without(f"{FS}.features.0.unit")),
}


def _texts(edits: dict, base: dict | None = None) -> dict[str, str]:
    base = base or schema_card()
    out = {}
    for name, edit in edits.items():
        card = json.loads(json.dumps(base))
        (edit[0] if isinstance(edit, tuple) else edit)(card)
        out[name] = json.dumps(card)
    return out


def _refusal_problems(refused: dict, base: dict | None = None) -> list[tuple[str, str]]:
    """The cards of `refused` (name -> (edit, words)) on which the page and Python do not refuse alike, in
    Python's words."""
    texts = _texts(refused, base)
    got = page_card_verdicts(list(texts.values()))
    problems = []
    for (name, text), page in zip(texts.items(), got):
        python = python_refusal(text)
        words = refused[name][1]
        if python is None:
            problems.append((name, "Python accepts it"))
        elif words and words not in python:
            problems.append((name, f"Python says {python!r}"))
        elif page["verdict"] != "UNUSABLE" or "malformed card" not in page["reason"]:
            problems.append((name, f"the page: {page}"))
        elif words and words not in page["reason"]:
            problems.append((name, f"the page says {page['reason']!r}, Python {python!r}"))
    return problems


def test_every_refusal_of_the_schema_validators_is_the_pages():
    problems = _refusal_problems(REFUSED)
    assert not problems, problems


def _acceptance_problems(accepted: dict, base: dict | None = None) -> list[tuple[str, Any]]:
    texts = _texts(accepted, base)
    got = page_card_verdicts(list(texts.values()))
    return [(name, python_refusal(text) or page) for (name, text), page in zip(texts.items(), got)
            if python_refusal(text) is not None or not page_reads_card(page)]


def test_what_the_validators_accept_the_page_accepts():
    problems = _acceptance_problems(ACCEPTED)
    assert not problems, problems


def _mutation_disagreements(base: dict, seed: int) -> tuple[list, int]:
    """(cards the page and the verifier judge differently, how many the page refuses) of 400 random one-place
    changes inside `base`'s feature schema."""
    rng = random.Random(seed)
    texts = [json.dumps({**base, FS: m}) for m in _mutations(base[FS], rng, 400)]
    got = page_card_verdicts(texts)
    disagreements = [(t[:300], page) for t, page in zip(texts, got) if (python_refusal(t) is None) != page_reads_card(page)]
    return disagreements, sum(not page_reads_card(p) for p in got)


def test_random_changes_of_a_schema_are_judged_alike():
    """Random one-place changes inside the card's feature schema (a value of another type or spelling, a
    key added or removed): the page reads exactly the cards the verifier reads."""
    disagreements, refused = _mutation_disagreements(schema_card(), 21)
    assert not disagreements, disagreements[:3]
    assert refused > 100


# ------------------------------------------------------------------------ one-hot attributes and dropped values

def one_hot_schema() -> dict[str, Any]:
    """The synthetic book's schema as a bank's OneHotEncoder writes it: purpose one-hot without its first
    category (drop "car"), sex one-hot without female (one input, sex=M), region one-hot over three inputs."""
    schema = json.loads(json.dumps(book.SCHEMA))
    schema["features"][2]["drop"] = "car"
    schema["features"][5].update(encoding="one_hot", drop="F")
    schema["features"][6]["encoding"] = "one_hot"
    return schema


ONE_HOT_REFUSED: dict[str, tuple[Callable[[dict], None], str]] = {
    # The schema's new keys used wrongly (fairness/schema.py _drop_fits, SensitiveAttribute._check)
    "drop on an ordinal category": (_set(f"{FS}.features.3.drop", "own"), "'housing': only a one-hot encoding drops a value"),
    "dropped category not a category": (_set(f"{FS}.features.2.drop", "boat"),
                                        "'purpose': the dropped value 'boat' is not one of its values"),
    "drop on a coded sensitive attribute": (_all(_set(f"{FS}.features.6.encoding", "code"), _set(f"{FS}.features.6.drop", "north")),
                                            "'region': only a one-hot encoding drops a value"),
    "dropped sensitive value not a value": (_set(f"{FS}.features.5.drop", "X"), "'sex': the dropped value 'X' is not one of its values"),
    "dropped value padded": (_set(f"{FS}.features.5.drop", "F "), "the dropped value 'F ' is not one of its values"),
    "codes with a one-hot sensitive attribute": (_set(f"{FS}.features.6.codes", [0, 1, 2]),
                                                 "sensitive attribute 'region': a one-hot encoding takes no codes"),
    "unknown sensitive encoding": (_set(f"{FS}.features.6.encoding", "ordinal"), ""),
    "drop as a number": (_set(f"{FS}.features.5.drop", 1), ""),
    # ModelCard._schema_binds_statement: the card's columns and points are the schema's
    "a card point that is no one-hot point": (_set("sensitive.1.values.0", [65536, 65536, 0]), "sensitive attributes differ"),
    "card points unscaled": (_set("sensitive.1.values", [[1, 0, 0], [0, 1, 0], [0, 0, 1]]), "sensitive attributes differ"),
    "card points in another order": (_set("sensitive.1.values", [[0, 65536, 0], [65536, 0, 0], [0, 0, 65536]]),
                                     "sensitive attributes differ"),
    "card columns in another order": (_set("sensitive.1.columns", [8, 7, 9]), "sensitive attributes differ"),
    "card columns on numeric inputs": (_set("sensitive.1.columns", [0, 1, 4]), "sensitive attributes differ"),
    "card columns one to the left (over sex's)": (_set("sensitive.1.columns", [6, 7, 8]), "distinct input indices"),
    "the dropped sex value's point not zero": (_set("sensitive.0.values", [131072, 65536]), "sensitive attributes differ"),
    "region labelled otherwise on the card": (_set("sensitive.1.labels", ["n", "s", "e"]), "sensitive attributes differ"),
    "the dropped category's input kept": (_set(f"{FS}.features.2.drop", None), "model inputs differ from the card's"),
    "another sex value dropped": (_set(f"{FS}.features.5.drop", "M"), "model inputs differ from the card's"),
    "region coded in the schema": (_without(f"{FS}.features.6.encoding"), "model inputs differ from the card's"),
    # SensitiveFeatureCard's validators
    "region's value of two integers": (_set("sensitive.1.values.0", [65536, 0]), "must be a list of 3 integers"),
    "region with a column too": (_set("sensitive.1.column", 7), "give either column (one input) or columns"),
    "sex with lists in the column form": (_set("sensitive.0.values", [[0], [65536]]), "values are integers"),
    "region's columns repeated": (_set("sensitive.1.columns", [7, 7, 9]), "its columns must be distinct"),
    "region over sex's input": (_set("sensitive.1.columns", [7, 8, 6]), ""),
}

ONE_HOT_ACCEPTED: dict[str, Callable[[dict], None]] = {
    "as built": lambda c: None,
    "sex's one input written as columns": _all(_without("sensitive.0.column"), _set("sensitive.0.columns", [6]),
                                               _set("sensitive.0.values", [[0], [65536]])),
    "a drop written as null": _set(f"{FS}.features.6.drop", None),
    "the code encoding written out": _all(_without(f"{FS}.features.5.encoding"), _without(f"{FS}.features.5.drop"),
                                          _set(f"{FS}.features.6.encoding", "one_hot"), _set("feature_names.6", "sex"),
                                          _set("sensitive.0.values", [0, 65536]),
                                          _set(f"{FS}.features.5.encoding", "code")),
}


def test_a_one_hot_card_is_built_as_the_schema_says():
    card = schema_card(one_hot_schema())
    assert card["feature_names"][2:4] == ["purpose=house", "purpose=education"]
    assert card["sensitive"] == [
        {"name": "sex", "column": 6, "values": [0, 65536], "labels": ["female", "male"]},
        {"name": "region", "columns": [7, 8, 9], "values": [[65536, 0, 0], [0, 65536, 0], [0, 0, 65536]],
         "labels": ["north", "south", "east"]}]


def test_every_refusal_of_a_one_hot_schema_and_its_binding_is_the_pages():
    problems = _refusal_problems(ONE_HOT_REFUSED, schema_card(one_hot_schema()))
    assert not problems, problems


def test_what_the_validators_accept_of_a_one_hot_schema_the_page_accepts():
    problems = _acceptance_problems(ONE_HOT_ACCEPTED, schema_card(one_hot_schema()))
    assert not problems, problems


def test_random_changes_of_a_one_hot_schema_are_judged_alike():
    disagreements, refused = _mutation_disagreements(schema_card(one_hot_schema()), 22)
    assert not disagreements, disagreements[:3]
    assert refused > 100


def test_a_card_built_at_every_scale_is_read_alike():
    """The box quantised outward (exact rational floor and ceiling of doubles) at small and large scales."""
    schema = json.loads(json.dumps(book.SCHEMA))
    schema["features"][1].update(mean=60.1, std=29.7)  # not dyadic: the rounding of the bounds matters
    schema["features"][3].update(codes=[0.3, 1.1, -2.7], mean=0.1, std=0.7)
    texts = [json.dumps(schema_card(schema, bits)) for bits in (0, 1, 7, 16, 31)]
    got = page_card_verdicts(texts)
    assert all(python_refusal(t) is None for t in texts)
    assert all(page_reads_card(p) for p in got), got


def test_a_box_beyond_what_json_holds_exactly_is_refused_alike():
    """An integer past 2^53 - 1 (a box at 2^52 or 2^64), which JSON cannot hold exactly (RFC 8785)."""
    texts = []
    for bound in (2 ** 53, -(2 ** 64)):
        card = schema_card(json.loads(json.dumps(book.SCHEMA)), 16)
        card["box_lower"][0] = bound
        texts.append(json.dumps(card))
    got = page_card_verdicts(texts)
    assert all("beyond 2^53" in (python_refusal(t) or "") for t in texts)
    assert not any(page_reads_card(p) for p in got) and all("beyond 2^53" in p["reason"] for p in got), got


# ------------------------------------------------------------------------ non-finite numbers

HUGE = ["1e400", "-1e400", "1E999999999", "-9.99e99999"]
CONSTANTS = ["NaN", "Infinity", "-Infinity"]  # not JSON: refused by both parsers, the field named by Python


def _float_fields(card: dict) -> list[str]:
    """Every number field of a card's preprocessing (encodings and schema), as dotted paths."""
    paths = []
    for i, f in enumerate(card.get("features") or []):
        paths += [f"features.{i}.mean", f"features.{i}.std"]
    for i, f in enumerate((card.get(FS) or {}).get("features", [])):
        for key in ("min", "max", "mean", "std"):
            if key in f or (key in ("mean", "std") and f["kind"] == "numeric"):
                paths.append(f"{FS}.features.{i}.{key}")
        for j, _ in enumerate(f.get("codes") or []):
            paths.append(f"{FS}.features.{i}.codes.{j}")
    return paths


SENTINEL = 123456.789012345


def _with_number(card: dict, path: str, literal: str) -> str:
    """The card's JSON with the number at `path` written as `literal` (json.dumps cannot write 1e400)."""
    edited = json.loads(json.dumps(card))
    _set(path, SENTINEL)(edited)
    text = json.dumps(edited)
    assert text.count(repr(SENTINEL)) == 1
    return text.replace(repr(SENTINEL), literal)


def _schema_card_with_codes() -> dict:
    schema = json.loads(json.dumps(book.SCHEMA))
    schema["features"][3]["codes"] = [0.0, 1.0, 2.0]
    schema["features"][6]["codes"] = [0, 1, 2]
    return schema_card(schema)


def _verify_files(tmp_path: Path, card_text: str, bundle_text: str, capsys) -> tuple[int, str, str]:
    from verifier_client.cli import main

    (tmp_path / "card.json").write_text(card_text)
    (tmp_path / "bundle.json").write_text(bundle_text)
    pins = tmp_path / "pins"
    pins.unlink(missing_ok=True)
    capsys.readouterr()
    code = main([str(tmp_path / "bundle.json"), "--card", str(tmp_path / "card.json"), "--pin-file", str(pins)])
    out, err = capsys.readouterr()
    return code, out, err


def test_infinite_numbers_in_a_card_are_refused_by_both_naming_the_field(bank, tmp_path, capsys):
    """1e400 reads as infinity in Python (the page's parser refuses it): in any mean, std, bound or code of
    a card's encodings or schema it is an unusable card on both sides, one line naming the field. So are
    NaN and Infinity written as such (not JSON)."""
    bundle = bank.bundles[0].model_dump_json()
    honest = bank.card.canonical_json()
    code, out, _ = _verify_files(tmp_path, honest, bundle, capsys)
    assert code == 0 and "VALID certificate" in out  # the card as issued
    cards = [json.loads(honest), schema_card(), _schema_card_with_codes()]
    cases = [(path, literal, _with_number(card, path, literal))
             for card in cards for path in _float_fields(card) for literal in HUGE + CONSTANTS]
    assert len({p for p, _, _ in cases}) >= 2 * len(bank.card.features) + 20
    for path, literal, text in cases:
        code, out, err = _verify_files(tmp_path, text, bundle, capsys)
        assert code == 2 and out == "", (path, literal, out)
        lines = err.strip().splitlines()
        assert len(lines) == 1 and f": {path}: " in lines[0], (path, literal, err)
        assert ("not finite" if literal in HUGE else f"{literal} is not a JSON number") in lines[0], (path, literal, err)
    got = page_card_verdicts([text for _, _, text in cases])
    wrong = [(p, lit, g) for (p, lit, _), g in zip(cases, got) if g["verdict"] != "UNUSABLE"
             or "malformed card" not in g["reason"] or (lit in HUGE and "out of range" not in g["reason"])]
    assert not wrong, wrong[:3]


def test_python_models_refuse_infinity_and_nan_given_as_values():
    """Not only from JSON: a card or schema built in Python (or read from YAML, which has .inf) refuses them."""
    from pydantic import ValidationError

    from commitments.card import FeatureEncoding

    for bad in (float("inf"), float("-inf"), float("nan")):
        with pytest.raises(ValidationError, match="mean"):
            FeatureEncoding(name="a", kind="numeric", mean=bad)
        with pytest.raises(ValidationError, match="std"):
            FeatureEncoding(name="a", kind="numeric", std=bad)
        for path in ("features.0.min", "features.0.std", "features.3.mean", "features.3.codes"):
            schema = json.loads(json.dumps(book.SCHEMA))
            target = schema["features"][int(path.split(".")[1])]
            target[path.split(".")[2]] = [0.0, bad, 2.0] if path.endswith("codes") else bad
            with pytest.raises(ValidationError, match="must be finite"):
                FeatureSchema.model_validate(schema)
