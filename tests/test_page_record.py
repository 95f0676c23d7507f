"""The browser's record encoder (verifier_client/page/record.js, run in node) against commitments.record: the
same query for real records, and no record accepted that the Python encoder refuses."""
from __future__ import annotations

import json
from pathlib import Path


from node_runner import run_node

from commitments.record import RecordError, encode_record

PAGE = Path(__file__).resolve().parents[1] / "verifier_client" / "page"

RUNNER = """
const canonical = require(process.argv[1] + '/canonical.js');
const record = require(process.argv[1] + '/record.js');
let input = ''; process.stdin.on('data', d => input += d).on('end', () => {
  const job = JSON.parse(input);
  const card = canonical.parseJson(job.card);
  const out = job.records.map((text) => {
    try { return record.encodeRecord(card, canonical.parseJson(text)).map(String); }
    catch (e) { if (e instanceof record.RecordError) return null; throw e; }
  });
  process.stdout.write(JSON.stringify(out));
});
"""


def js_queries(card_text: str, records: list[str]) -> list:
    return run_node(RUNNER, {"card": card_text, "records": records}, str(PAGE), timeout=300)


def py_query(card, text: str):
    try:
        return [str(v) for v in encode_record(card, json.loads(text))]
    except (RecordError, ValueError, TypeError):
        return None


def variants(record: dict, card) -> list[dict]:
    out = [record]
    names = list(record)
    numeric = [f.name for f in card.features if f.kind == "numeric"]
    categorical = [f.name for f in card.features if f.kind != "numeric"]
    out.append({k: v for k, v in record.items() if k != names[0]})  # a feature missing
    out.append({**record, "extra": 1})
    for name in numeric[:3]:
        v = record[name]
        for w in (str(v), f" {v} ", float(v) + 0.5, -float(v), 1e308, "1_000", "0x10", "nan", "inf", True, None, [v],
                  float(v) * 1.0000001, 10 ** 30, "1e3", ".5"):
            out.append({**record, name: w})
    for name in categorical[:3]:
        v = record[name]
        for w in (f" {v} ", "no such category", 1, 1.0, 1.5, True, None):
            out.append({**record, name: w})
    return out


def test_the_page_encodes_what_the_verifier_encodes(bank):
    from fairness.datasets import load_dataset

    card = bank.card
    records = [dict(r) for r in load_dataset("german").records_test[:40]]
    texts = [json.dumps(v) for r in records[:8] for v in variants(r, card)] + [json.dumps(r) for r in records]
    expected = [py_query(card, t) for t in texts]
    got = js_queries(card.canonical_json(), texts)
    # The page never encodes a record the Python encoder refuses, nor one differently; refusing a record
    # Python accepts would be safe, and here it does not happen for real records.
    wrong = [(t, e, g) for t, e, g in zip(texts, expected, got) if g is not None and g != e]
    assert not wrong, wrong[:3]
    real = [(e, g) for e, g in zip(expected[-len(records):], got[-len(records):])]
    assert all(e is not None for e, _ in real) and all(e == g for e, g in real)
    assert sum(g is None for g in got) > len(texts) // 4  # the forgeries do get refused
