"""The card digest: SHA-256 of the RFC 8785 canonical form of the card exactly as published, the same in
Python (PyPI `rfc8785`, ModelCard.digest) and in the page (npm `canonicalize`, page/canonical.js in node).

Both canonicalisers pass the RFC's reference test vectors; every spelling of a card gets the digest of that
spelling on both sides; a changed field changes it; what JCS cannot write (an integer beyond 2^53) is
refused on both sides (version-2 cards: tests/test_card_migration.py)."""
from __future__ import annotations

import json
import random
import shutil
import subprocess
from pathlib import Path

import pytest
import rfc8785

from commitments.canonical import NonCanonical
from commitments.card import ModelCard

PAGE = Path(__file__).resolve().parents[1] / "verifier_client" / "page"
VECTORS = Path(__file__).resolve().parent / "rfc8785"
NAMES = sorted(p.name.removesuffix(".input.json") for p in VECTORS.glob("*.input.json"))


def node(program: str, payload) -> object:
    if shutil.which("node") is None:
        pytest.skip("node is not installed")
    done = subprocess.run(["node", "-e", f"const c = require({json.dumps(str(PAGE / 'canonical.js'))});\n{program}"],
                          input=json.dumps(payload), capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


DIGESTS = """
let input = ''; process.stdin.on('data', d => input += d).on('end', async () => {
  const out = [];
  for (const text of JSON.parse(input)) {
    try { out.push(await c.cardDigest(text)); } catch (e) { out.push('refused: ' + e.message); }
  }
  process.stdout.write(JSON.stringify(out));
});
"""

CANONICAL = """
let input = ''; process.stdin.on('data', d => input += d).on('end', () => {
  process.stdout.write(JSON.stringify(JSON.parse(input).map((t) => c.canonicalCard(c.parseJson(t)))));
});
"""


def python_digest(text: str) -> str:
    try:
        return ModelCard.from_json(text).digest()
    except NonCanonical as exc:
        return f"refused: {exc}"


# ------------------------------------------------------------------------------ the RFC's vectors
def test_the_rfc_vectors_are_all_here():
    assert NAMES == ["arrays", "french", "structures", "unicode", "values", "weird"]


@pytest.mark.parametrize("name", NAMES)
def test_python_canonicaliser_passes_the_rfc_vector(name):
    value = json.loads((VECTORS / f"{name}.input.json").read_text(encoding="utf-8"))
    assert rfc8785.dumps(value) == (VECTORS / f"{name}.output.json").read_bytes()


def test_page_canonicaliser_passes_the_rfc_vectors():
    inputs = [(VECTORS / f"{name}.input.json").read_text(encoding="utf-8") for name in NAMES]
    expected = [(VECTORS / f"{name}.output.json").read_bytes().decode("utf-8") for name in NAMES]
    assert node(CANONICAL, inputs) == expected


def test_a_vector_changed_is_not_its_output():  # the comparison above can fail
    value = json.loads((VECTORS / "values.input.json").read_text(encoding="utf-8"))
    value["extra"] = 1
    assert rfc8785.dumps(value) != (VECTORS / "values.output.json").read_bytes()
    assert node(CANONICAL, [json.dumps(value)]) != [(VECTORS / "values.output.json").read_text(encoding="utf-8")]


def test_numbers_are_written_alike():
    rng = random.Random(7)
    values = [0.1, 1e-05, 1.5e16, 123.0, -0.0, 1e21, 1e-7, 5e-324, 1.7976931348623157e308, 0.30000000000000004]
    values += [rng.uniform(-1, 1) * 10 ** rng.randint(-30, 30) for _ in range(300)]
    texts = [json.dumps({"n": v}) for v in values]
    assert node(CANONICAL, texts) == [rfc8785.dumps({"n": v}).decode() for v in values]


# ------------------------------------------------------------------------------------- cards
def spellings(card: ModelCard) -> list[str]:
    """One card published several ways: each is a card, with its own digest."""
    value = card.written_value()
    filled = json.loads(card.model_dump_json())  # every default written, optional parts as null
    no_description = {k: v for k, v in value.items() if k != "description"}
    worded = {**value, "description": "Prüfung \u2713 \U0001d53d \"quoted\"\ttab </script>"}
    spaced = json.dumps(value, indent=3, ensure_ascii=True)
    out = [card.canonical_json(), card.published_json(), json.dumps(filled), json.dumps(no_description),
           json.dumps(worded), spaced]
    if value.get("features"):
        as_int = json.loads(json.dumps(value))
        as_int["features"][0]["std"] = 1  # 1 and 1.0 are one number in JSON: the same digest
        out.append(json.dumps(as_int))
    return out


def test_every_spelling_has_one_digest_on_both_sides(bank):
    card = bank.card
    assert int(card.spread.bucket_width) > 2 ** 53  # written as a decimal string
    texts = spellings(card)
    python = [python_digest(t) for t in texts]
    assert node(DIGESTS, texts) == python
    assert python[0] == python[1] == card.digest()  # what the bank writes reads back as the card it built
    assert python[2] != card.digest()  # defaults filled in: another published card
    assert not any(d.startswith("refused") for d in python)


def test_a_changed_field_changes_the_digest(bank):
    value = bank.card.written_value()
    relabelled = {**value, "architecture": {**value["architecture"], "class_labels": ["x", "y"]}}
    digests = node(DIGESTS, [json.dumps(relabelled)])
    assert digests == [python_digest(json.dumps(relabelled))] and digests[0] != bank.card.digest()


def test_what_jcs_cannot_write_is_refused_on_both_sides(bank):
    value = bank.card.written_value()
    wide = {**value, "box_upper": [2 ** 53, *value["box_upper"][1:]]}
    as_number = {**value, "spread": {**value["spread"], "bucket_width": int(value["spread"]["bucket_width"])}}
    duplicate = bank.card.canonical_json().replace('{"architecture"', '{"model_id":"other","architecture"', 1)
    texts = [json.dumps(wide), json.dumps(as_number), duplicate]
    python = [python_digest(t) for t in texts]
    page = node(DIGESTS, texts)
    assert python[0].startswith("refused") and "beyond 2^53" in python[0] and "box_upper.0" in python[0]
    assert page[0].startswith("refused") and "beyond 2^53" in page[0] and "box_upper.0" in page[0]
    assert python[1].startswith("refused") and page[1].startswith("refused")  # the width is a string, never a number
    assert python[2].startswith("refused") and page[2].startswith("refused") and "duplicate key" in page[2]


def test_the_published_value_handed_out_cannot_change_the_card(bank):
    card = ModelCard.from_json(bank.card.canonical_json())
    value = card.published_value()
    value["description"] = "rewritten by a caller"
    assert card.canonical_json() == bank.card.canonical_json() and card.digest() == bank.card.digest()
    assert ModelCard.from_json(json.dumps(value)).digest() != card.digest()  # the edit is another card
