"""One grammar for a record's values (commitments/record.py's docstring), read alike by the verifier and
the page (record.js): a table of spellings of numbers and categories, through both, for a card that
publishes feature encodings and for a card under a feature schema, expecting identical verdicts and, when
accepted, identical queries."""
from __future__ import annotations

import json
from typing import Any, Callable

import pytest

import synthetic_credit as book
from commitments.canonical import NonCanonical, load_json
from commitments.card import ModelCard
from commitments.record import RecordError, check_spelling, encode_record
from node_runner import run_node
from test_parity_schema import schema_card
from verifier_client.page import PAGE_DIR

RUNNER = """
const canonical = require(process.argv[1] + '/canonical.js');
const record = require(process.argv[1] + '/record.js');
const verify = require(process.argv[1] + '/verify.js');
let input = ''; process.stdin.on('data', d => input += d).on('end', () => {
  const job = JSON.parse(input);
  const card = canonical.parseJson(job.card);
  const out = job.records.map((text) => {
    try { return record.encodeRecord(card, verify.parseStrictText(text, 'record')).map(String); }
    catch (e) { if (e instanceof record.RecordError || e instanceof SyntaxError) return { refused: e.message }; throw e; }
  });
  process.stdout.write(JSON.stringify(out));
});
"""


def page_queries(card_text: str, texts: list[str]) -> list:
    return run_node(RUNNER, {"card": card_text, "records": texts}, str(PAGE_DIR))


def python_query(card: ModelCard, text: str) -> list[str] | dict:
    """As fairproof-verify --record reads and encodes it."""
    try:
        return [str(v) for v in encode_record(card, load_json(text.encode("utf-8", "surrogatepass"), "record"))]
    except (RecordError, NonCanonical) as exc:
        return {"refused": str(exc)}


RAW = object()  # marks a spelling given as raw JSON text (not a value json.dumps can write)

def _digits(text: str, zero: str) -> str:
    return "".join(chr(ord(zero) + int(c)) for c in text)


# Numbers: (spelling of an integral value v of the field's domain, in the grammar?). A spelling in the
# grammar may still be refused for its value (outside the domain, not finite): both sides then refuse it.
NUMBERS: list[tuple[Callable[[int], Any], bool]] = [
    (lambda v: v, True), (lambda v: float(v), True), (lambda v: str(v), True), (lambda v: f"{v}.0", True),
    (lambda v: f"{v / 10}e1", True), (lambda v: f"{v}E+0", True), (lambda v: f"{v * 10}e-1", True),
    (lambda v: f"{v}.000000000000001", True), (lambda v: f"-{v}", True), (lambda v: "0", True),
    (lambda v: "-0", True), (lambda v: "1e400", True), (lambda v: "1e-400", True), (lambda v: f"{v}.25", True),
    (lambda v: f"{v // 10}_{v % 10}", False), (lambda v: _digits(str(v), "\u0660"), False),
    (lambda v: _digits(str(v), "\u06f0"), False), (lambda v: _digits(str(v), "\uff10"), False),
    (lambda v: _digits(str(v), "\u0966"), False),
    (lambda v: f" {v}", False), (lambda v: f"{v} ", False), (lambda v: f"\t{v}", False), (lambda v: f"{v}\n", False),
    (lambda v: f"\x00{v}", False), (lambda v: f"\x1f{v}", False), (lambda v: f"{v}\x7f", False),
    (lambda v: f"\ufeff{v}", False), (lambda v: f"\u00a0{v}", False), (lambda v: f"{v}\u200b", False),
    (lambda v: f"\u200e{v}", False), (lambda v: f"\u3000{v}", False), (lambda v: f"{v}\x85", False),
    (lambda v: f"+{v}", False), (lambda v: f"0{v}", False), (lambda v: "00", False), (lambda v: f"-0{v}", False),
    (lambda v: f".{v}", False), (lambda v: f"{v}.", False), (lambda v: f"{v}e", False), (lambda v: "e1", False),
    (lambda v: f"{v}e+", False), (lambda v: "0x10", False), (lambda v: "0b1", False), (lambda v: "inf", False),
    (lambda v: "-inf", False), (lambda v: "nan", False), (lambda v: "Infinity", False), (lambda v: "", False),
    (lambda v: " ", False), (lambda v: f"{v}abc", False), (lambda v: f"{v},5", False), (lambda v: f"{v}.2.3", False),
    (lambda v: f"\u2212{v}", False), (lambda v: f"--{v}", False), (lambda v: f"{v} 0", False),
    (lambda v: True, False), (lambda v: None, False), (lambda v: [v], False), (lambda v: {"a": v}, False),
    (lambda v: (RAW, "1e400"), False), (lambda v: (RAW, "-1e400"), False), (lambda v: (RAW, "1" * 81), False),
    (lambda v: (RAW, "NaN"), False), (lambda v: (RAW, f"0{v}"), False), (lambda v: (RAW, f"+{v}"), False),
    (lambda v: (RAW, f".{v}"), False), (lambda v: (RAW, f"{v}."), False),
]

CATEGORY_SPELLINGS: list[tuple[str, bool]] = [
    ("{v}", True), (" {v}", False), ("{v} ", False), ("\t{v}", False), ("{v}\n", False), ("\ufeff{v}", False),
    ("{v}\ufeff", False), ("{v}\u200b", False), ("\u00a0{v}", False), ("{v}\x1c", False), ("{v}\x85", False),
    ("\u3000{v}", False), ("{v}\x00", False), ("\u2028{v}", False),
]


def _record_text(record: dict, name: str, value: Any) -> str:
    if isinstance(value, tuple) and value[0] is RAW:
        marker = "FAIRPROOF-RAW-VALUE"
        return json.dumps({**record, name: marker}).replace(f'"{marker}"', value[1])
    return json.dumps({**record, name: value})


def _compare(card: ModelCard, texts: list[str]) -> list[tuple[str, Any, Any]]:
    got = page_queries(card.canonical_json(), texts)
    expected = [python_query(card, t) for t in texts]
    def disagree(e: Any, g: Any) -> bool:
        return isinstance(e, dict) != isinstance(g, dict) or (not isinstance(e, dict) and e != g)
    return [(t, e, g) for t, e, g in zip(texts, expected, got) if disagree(e, g)]


def _cases(card: ModelCard, record: dict, numeric: list[str], categorical: list[str]) -> tuple[list[str], list[bool]]:
    texts, spelled = [], []
    for name in numeric:
        for spell, ok in NUMBERS:
            texts.append(_record_text(record, name, spell(int(float(record[name])))))
            spelled.append(ok)
    for name in categorical:
        for pattern, ok in CATEGORY_SPELLINGS:
            texts.append(_record_text(record, name, pattern.format(v=record[name])))
            spelled.append(ok)
    return texts, spelled


@pytest.fixture(scope="module")
def schema_card_model() -> ModelCard:
    return ModelCard.model_validate(schema_card())


GOOD = {"age": 30, "income": "45.5", "purpose": "car", "housing": "own", "duration": 12, "sex": "F", "region": "east"}


def test_spellings_under_a_schema_are_judged_alike(schema_card_model):
    texts, spelled = _cases(schema_card_model, GOOD, ["age", "income", "duration"], ["purpose", "housing", "sex", "region"])
    wrong = _compare(schema_card_model, texts)
    assert not wrong, wrong[:5]
    results = [python_query(schema_card_model, t) for t in texts]
    assert not isinstance(results[0], dict)  # the honest record encodes
    for text, ok, result in zip(texts, spelled, results):
        if not ok:
            assert isinstance(result, dict), text  # outside the grammar: refused (and by the page, above)


def test_spellings_under_feature_encodings_are_judged_alike(bank):
    card = bank.card
    record = dict(bank.records[0])
    numeric = [f.name for f in card.features if f.kind == "numeric"][:3]
    categorical = [f.name for f in card.features if f.kind != "numeric"][:3]
    texts, spelled = _cases(card, record, numeric, categorical)
    wrong = _compare(card, texts)
    assert not wrong, wrong[:5]
    results = [python_query(card, t) for t in texts]
    assert not isinstance(results[0], dict)
    assert all(isinstance(r, dict) for r, ok in zip(results, spelled) if not ok)


def test_numbers_naming_categories_are_judged_alike():
    """Integral numbers name a category by its decimal text (1 and 1.0 name "1"); fractions name none."""
    schema = json.loads(json.dumps(book.SCHEMA))
    schema["features"][5].update(values=["0", "1"], labels=["female", "male"])
    card = ModelCard.model_validate(schema_card(schema))
    record = {**GOOD, "sex": "1"}
    values: list[Any] = [1, 1.0, "1", 0, -0.0, 0.0, "0", 1.5, 1e-300, 10 ** 30, 2, True, False, None, "01", "1.0",
                         (RAW, "1e0"), (RAW, "-0"), (RAW, "1.00"), (RAW, "1E+0")]
    texts = [_record_text(record, "sex", v) for v in values]
    assert not _compare(card, texts)
    results = dict(zip(map(repr, values), (python_query(card, t) for t in texts)))
    assert results["1"] == results["1.0"] == results["'1'"] and not isinstance(results["1"], dict)
    assert isinstance(results["1.5"], dict) and isinstance(results["'1.0'"], dict) and isinstance(results["'01'"], dict)


def test_the_grammar_is_the_docstrings():
    """check_spelling refuses exactly what the module docstring says (both encoders call it first)."""
    for spell, ok in NUMBERS:
        value = spell(12)
        if isinstance(value, str) and value:
            refused = False
            try:
                check_spelling("x", True, value)
            except RecordError:
                refused = True
            assert refused != ok, value


def test_one_hot_sensitive_attributes_and_dropped_categories_are_encoded_alike():
    """A schema as a bank's OneHotEncoder writes it (purpose without its car input, sex one input for male,
    region over three inputs): every value of every one-hot attribute (each dropped one all zeros) and every
    spelling of one, through both encoders, to the same query or the same refusal."""
    from test_parity_schema import one_hot_schema

    card = ModelCard.model_validate(schema_card(one_hot_schema()))
    texts = [json.dumps({**GOOD, "purpose": p, "sex": s, "region": r})
             for p in ("car", "house", "education") for s in ("F", "M") for r in ("north", "south", "east")]
    spelled, _ = _cases(card, GOOD, [], ["purpose", "sex", "region"])
    others = [_record_text(GOOD, name, v) for name in ("purpose", "sex", "region")
              for v in ("boat", "f", 0, 1, None, True, "north" if name != "region" else "F")]
    wrong = _compare(card, [*texts, *spelled, *others])
    assert not wrong, wrong[:5]
    queries = [python_query(card, t) for t in texts]
    assert all(not isinstance(q, dict) for q in queries) and len({tuple(q) for q in queries}) == len(texts)
    assert all(isinstance(python_query(card, t), dict) for t in others)
    car_female_north = queries[0]  # every dropped or first value: purpose=house, purpose=education, sex=M all 0
    assert [car_female_north[j] for j in (2, 3, 6, 7, 8, 9)] == ["0", "0", "0", "65536", "0", "0"]
