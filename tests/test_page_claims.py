"""The browser's claims (verifier_client/page/claims.js, run in node) against commitments.claims: on the bank's
real signals and on every forgery below, both refuse, or both derive the same claims."""
from __future__ import annotations

from pathlib import Path


from node_runner import run_node

from circuits.field import R
from commitments.claims import ClaimError, claims_from_signals

PAGE = Path(__file__).resolve().parents[1] / "verifier_client" / "page"

RUNNER = """
const canonical = require(process.argv[1] + '/canonical.js');
const claims = require(process.argv[1] + '/claims.js');
let input = ''; process.stdin.on('data', d => input += d).on('end', () => {
  const job = JSON.parse(input);
  const card = canonical.parseJson(job.card);
  const plain = (v) => typeof v === 'bigint' ? v.toString() : Array.isArray(v) ? v.map(plain)
    : v && typeof v === 'object' ? Object.fromEntries(Object.entries(v).map(([k, x]) => [k, plain(x)])) : v;
  const out = job.cases.map(([signals, bucket]) => {
    try { return plain(claims.claimsFromSignals(signals, card, bucket)); }
    catch (e) { if (e instanceof claims.ClaimError) return null; throw e; }
  });
  process.stdout.write(JSON.stringify(out));
});
"""


def js_claims(card_text: str, cases: list) -> list:
    return run_node(RUNNER, {"card": card_text, "cases": cases}, str(PAGE), timeout=300)


def py_claims(signals, card, bucket):
    try:
        c = claims_from_signals(signals, card, card.bucket(bucket))
    except ClaimError:
        return None
    return {
        "decision": str(c.decision), "decision_label": c.decision_label, "status": c.status,
        "eps_numerator": str(c.eps_numerator), "capped": c.capped, "radius": c.radius,
        "flip": None if c.flip is None else [str(c.flip.index), [str(v) for v in c.flip.values], list(c.flip.labels)],
        "query": [str(v) for v in c.query],
        "spread": None if c.spread is None else [[str(d) for d in c.spread.decisions], str(c.spread.score_buckets)],
        "persistence": None if c.persistence is None else [str(c.persistence.delta),
                                                             [[str(a), str(b)] for a, b in c.persistence.bounds]],
    }


def comparable(js):
    if js is None:
        return None
    return {
        "decision": js["decision"], "decision_label": js["decision_label"], "status": js["status"],
        "eps_numerator": js["eps_numerator"], "capped": js["capped"], "radius": js["radius"],
        "flip": None if js["flip"] is None else [js["flip"]["index"], js["flip"]["values"], js["flip"]["labels"]],
        "query": js["query"],
        "spread": None if js["spread"] is None else [js["spread"]["decisions"], js["spread"]["score_buckets"]],
        "persistence": None if js["persistence"] is None else [js["persistence"]["delta"],
                                                               js["persistence"]["bounds"]],
    }


def forgeries(signals: list[str]) -> list[list[str]]:
    """Every signal changed every way a forger might try, and the vector cut or lengthened."""
    out = [signals, signals[:-1], [*signals, "0"]]
    for i, s in enumerate(signals):
        v = int(s)
        for w in (str((v + 1) % R), str((v - 1) % R), "0", "1", "2", str(R - 1), str(R), str(v + R),
                  "0" + s, s + " ", "-1", str((R - 1) // 2 + 1)):
            out.append([*signals[:i], w, *signals[i + 1:]])
    return out


def test_the_page_derives_what_the_verifier_derives(bank):
    card = bank.card
    text = card.canonical_json()
    cases, expected = [], []
    for bundle in bank.bundles:
        for signals in forgeries(list(bundle.public_signals)):
            cases.append([signals, bundle.bucket])
            expected.append(py_claims(signals, card, bundle.bucket))
    got = [comparable(c) for c in js_claims(text, cases)]
    accepted = sum(e is not None for e in expected)
    assert accepted >= len(bank.bundles) and accepted < len(expected) // 2  # both outcomes are exercised
    mismatches = [(case, e, g) for case, e, g in zip(cases, expected, got) if e != g]
    assert not mismatches, mismatches[:3]


def test_an_unknown_bucket_is_refused(bank):
    bundle = bank.bundles[0]
    assert js_claims(bank.card.canonical_json(), [[list(bundle.public_signals), "k9-f9"]]) == [None]
