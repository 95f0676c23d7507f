"""The browser's card digest (verifier_client/page/canonical.js, run in node) is ModelCard.digest() exactly:
Python's float repr, integers beyond 2^53, escaped non-ASCII, the card's own exclusions."""
from __future__ import annotations

import json
import random
import shutil
import subprocess
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[1] / "verifier_client" / "page" / "canonical.js"


def node(program: str, payload) -> object:
    if shutil.which("node") is None:
        pytest.skip("node is not installed")
    done = subprocess.run(["node", "-e", f"const c = require({json.dumps(str(SCRIPT))});\n{program}"],
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

REPRS = """
let input = ''; process.stdin.on('data', d => input += d).on('end', () => {
  process.stdout.write(JSON.stringify(JSON.parse(input).map(c.pyFloatRepr)));
});
"""


def test_float_repr_is_pythons():
    rng = random.Random(7)
    values = [0.1, 1e-05, 1.5e16, 123.0, -0.0, 0.0, 1e16, 9999999999999998.0, 1e-4, 5e-324, 1.7976931348623157e308,
              0.30000000000000004, -2.5e-7, 1e22, 123456789012345.6]
    values += [rng.uniform(-1, 1) * 10 ** rng.randint(-30, 30) for _ in range(300)]
    values += [float(rng.randint(-10 ** 17, 10 ** 17)) for _ in range(100)]
    assert node(REPRS, values) == [repr(v) for v in values]


def test_card_digests_are_the_cards(bank):
    card = bank.card
    assert int(card.spread.bucket_width) > 2 ** 53  # an integer JSON.parse would round
    texts = [card.canonical_json(), card.model_dump_json(), card.model_dump_json(indent=2)]
    assert node(DIGESTS, texts) == [card.digest()] * 3
    worded = card.model_copy(update={"description": "Prüfung \u2713 \U0001d53d \"quoted\"\ttab"})
    assert node(DIGESTS, [worded.model_dump_json()]) == [worded.digest()]


def test_other_spellings_give_other_digests_or_are_refused(bank):
    card = bank.card
    doc = json.loads(card.model_dump_json())
    std = doc["features"][1]["std"] if doc.get("features") else None
    altered = []
    if std is not None:
        with_int = json.loads(card.model_dump_json())
        with_int["features"][1]["std"] = 1  # an int where the card holds a float: another spelling
        altered.append(json.dumps(with_int))
    relabelled = json.loads(card.model_dump_json())
    relabelled["architecture"]["class_labels"] = ["x", "y"]
    altered.append(json.dumps(relabelled))
    duplicate = card.canonical_json().replace('{"architecture"', '{"model_id":"other","architecture"', 1)
    results = node(DIGESTS, [*altered, duplicate])
    assert all(r != card.digest() for r in results[:-1])
    assert results[-1].startswith("refused") and "duplicate key" in results[-1]
