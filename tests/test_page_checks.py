"""The page's checks one by one, each against its Python twin in node: point encodings and key digests
(circuits.groth16.encoding), the subgroup check, the strict shapes (commitments.canonical.parse_strict),
the card's consistency (ModelCard's validators), and Python's number formatting in the report."""
from __future__ import annotations

import json
import random
from decimal import Decimal, localcontext

import pytest

from node_runner import run_node

from circuits.backends import get_backend
from circuits.curve import g2_curve_rhs, g2_in_subgroup
from circuits.field import Q, R
from circuits.groth16 import proof_to_bytes, vk_digest
from circuits.groth16.encoding import fq2_sqrt
from circuits.groth16.types import Proof
from circuits.snarkjs.json_formats import verifying_key_from_json
from commitments.bundle import CertificateBundle, radius_decimal
from commitments.canonical import NonCanonical
from commitments.card import ModelCard
from verifier_client.page import PAGE_DIR, page_schemas

RUNNER = """
const lib = {};
for (const m of ['canonical', 'schema', 'curve', 'explain', 'verify']) lib[m] = require(process.argv[1] + '/' + m + '.js');
const big = (v) => typeof v === 'string' ? BigInt(v) : Array.isArray(v) ? v.map(big) : v;
let input = ''; process.stdin.on('data', d => input += d).on('end', async () => {
  const job = JSON.parse(input);
  const out = [];
  for (const [op, arg] of job) {
    try {
      if (op === 'proofHex') out.push(lib.curve.proofHex({ a: big(arg[0]), b: big(arg[1]), c: big(arg[2]) }));
      else if (op === 'g2InSubgroup') out.push(lib.curve.g2InSubgroup(big(arg)));
      else if (op === 'vkDigest') out.push(await lib.curve.verifyingKeyDigest(lib.curve.verifyingKeyFromJson(lib.canonical.parseJson(arg), 'vk')));
      else if (op === 'formatG') out.push(lib.explain.formatG(arg[0], arg[1], arg[2]));
      else if (op === 'radiusDecimal') out.push(lib.explain.radiusDecimal(BigInt(arg[0]), arg[1]));
      else if (op === 'shape') {
        const schemas = lib.canonical.parseJson(arg[0]);
        if (arg[1] === 'card') {
          lib.verify.readCard(arg[2], schemas.card);  // as verifyBundle reads a card
          out.push(null);
        } else {
          lib.schema.checkShape(schemas[arg[1]], lib.canonical.parseJson(arg[2], 80), arg[1]);
          out.push(null);
        }
      } else if (op === 'report') {
        const card = lib.canonical.parseJson(arg[0]);
        const claims = lib.verify.derivedClaims(arg[1], card, arg[2], 0);
        claims.eps_scale_bits = BigInt(card.eps_scale_bits);
        claims.part_buckets = [];
        out.push(lib.explain.validReport(claims, card));
      } else throw new Error('unknown op ' + op);
    } catch (e) { out.push({ refused: e.message }); }
  }
  process.stdout.write(JSON.stringify(out));
});
"""


def run_js(jobs: list) -> list:
    return run_node(RUNNER, jobs, str(PAGE_DIR))


def _s(v):
    return str(v) if isinstance(v, int) else [_s(x) for x in v]


# ------------------------------------------------------------------------------------------ curve


def test_compressed_proofs_are_the_python_encoding(bank):
    backend = get_backend()
    rng = random.Random(7)
    proofs = []
    for _ in range(12):
        a = backend.g1_mul(backend.g1_generator(), rng.randrange(1, R))
        b = backend.g2_mul(backend.g2_generator(), rng.randrange(1, R))
        c = backend.g1_mul(backend.g1_generator(), rng.randrange(1, R))
        proofs.append(Proof(a=a, b=b, c=c))
    got = run_js([["proofHex", [_s(p.a), _s(p.b), _s(p.c)]] for p in proofs])
    assert got == [proof_to_bytes(p).hex() for p in proofs]
    # y and -y give different flags, so the encoding names the point, not only its x.
    p = proofs[0]
    negated = Proof(a=(p.a[0], Q - p.a[1]), b=p.b, c=p.c)
    assert run_js([["proofHex", [_s(negated.a), _s(negated.b), _s(negated.c)]]])[0] == proof_to_bytes(negated).hex()
    assert proof_to_bytes(negated) != proof_to_bytes(p)


def test_the_subgroup_check_refuses_twist_points_of_other_orders():
    backend = get_backend()
    inside = [backend.g2_mul(backend.g2_generator(), k) for k in (1, 2, 12345)]
    outside = []
    for k in range(1, 60):
        y = fq2_sqrt(g2_curve_rhs((k, 1)))
        if y is not None and not g2_in_subgroup(((k, 1), y)):
            outside.append(((k, 1), y))
        if len(outside) == 3:
            break
    assert len(outside) == 3
    assert run_js([["g2InSubgroup", _s(p)] for p in inside + outside]) == [True] * 3 + [False] * 3


def test_key_digests_are_the_cards(bank):
    docs = [b.verifying_key.model_dump_json() for b in bank.card.circuits]
    expected = [vk_digest(verifying_key_from_json(json.loads(d))) for d in docs]
    assert run_js([["vkDigest", d] for d in docs]) == expected == [b.verifying_key_digest for b in bank.card.circuits]
    data = json.loads(docs[0])
    data["vk_delta_2"] = data["vk_gamma_2"]
    assert "delta equals" in run_js([["vkDigest", json.dumps(data)]])[0]["refused"]
    data = json.loads(docs[0])
    data["IC"] = data["IC"][:-1]
    assert "IC has" in run_js([["vkDigest", json.dumps(data)]])[0]["refused"]


# ------------------------------------------------------------------------------------------ shapes


def _mutations(doc: dict, rng: random.Random, n: int) -> list[dict]:
    """Random one-place changes of a document: each leaf replaced by a value of another type or spelling,
    a key added or removed."""
    paths: list[tuple] = []

    def walk(v, path):
        paths.append(path)
        if isinstance(v, dict):
            for k, x in v.items():
                walk(x, (*path, k))
        elif isinstance(v, list):
            for i, x in enumerate(v):
                walk(x, (*path, i))
    walk(doc, ())
    replacements = [None, True, 0, -1, 1.0, 1.5, "", "1", "01", " 1", "x" * 300, [], {}, R, str(R), str(Q),
                    str(R - 1), 2**64, "\u0661"]
    out = []
    for _ in range(n):
        d = json.loads(json.dumps(doc))
        path = rng.choice(paths[1:])
        parent = d
        for k in path[:-1]:
            parent = parent[k]
        choice = rng.random()
        if choice < 0.08 and isinstance(parent, dict):
            del parent[path[-1]]
        elif choice < 0.14 and isinstance(parent, dict):
            parent["unexpected"] = 1
        else:
            parent[path[-1]] = rng.choice(replacements)
        out.append(d)
    return out


def _python_accepts(model, text: str, kind: str) -> bool:
    try:
        model.from_json(text) if kind == "card" else CertificateBundle.from_json(text)
    except (NonCanonical, ValueError):
        return False
    return True


@pytest.mark.parametrize("kind", ["bundle", "card"])
def test_the_page_reads_documents_exactly_as_strictly_as_the_verifier(bank, kind):
    original = json.loads(bank.bundles[0].model_dump_json() if kind == "bundle" else bank.card.canonical_json())
    docs = [original, *_mutations(original, random.Random(11 if kind == "bundle" else 12), 400)]
    texts = [json.dumps(d) for d in docs]
    schemas = json.dumps(page_schemas())
    got = run_js([["shape", [schemas, kind, t]] for t in texts])
    model = ModelCard if kind == "card" else CertificateBundle
    disagreements = []
    for text, js in zip(texts, got):
        js_accepts = js is None
        if _python_accepts(model, text, kind) != js_accepts:
            disagreements.append((text[:200], js))
    refused = sum(js is not None for js in got)
    assert got[0] is None and refused > 150  # the honest document passes; most changes are refused
    assert not disagreements, disagreements[:3]


def test_the_page_reads_attestations_exactly_as_strictly_as_the_verifier():
    """An attestation document (commitments.attestation.Attestation.from_json, as `--attestation` reads it):
    unknown fields, wrong types, empty or overlong strings and repeated keys are refused, by the page too."""
    from commitments.attestation import Attestation
    from transparency import note

    skey, vkey = note.generate_key("auditor.example")
    original = {"auditor_key": vkey, "note": note.sign("fairproof-card-attestation/v1\n{}\n", [note.Signer.from_key(skey)])}
    docs = [original, *_mutations(original, random.Random(13), 200)]
    texts = [json.dumps(d) for d in docs]
    text = texts[0]
    texts += [text[:-1] + ', "note": "x"}', text[:-1] + ', "auditor_key": "x"}', text.replace('"note"', '"Note"'),
              json.dumps({**original, "note": "x" * (256 * 1024 + 1)}), json.dumps({**original, "auditor_key": "k" * 513}),
              json.dumps({**original, "note": "\u00e9" * (256 * 1024)}), "[]", "null", '{"auditor_key": "a", "note": "b"} x',
              text.replace(": ", ":  "), text.replace("{", "{\n", 1)]
    schemas = json.dumps(page_schemas())
    got = run_js([["shape", [schemas, "attestation", t]] for t in texts])
    disagreements = []
    for t, js in zip(texts, got):
        try:
            Attestation.from_json(t)
            python_accepts = True
        except (NonCanonical, ValueError):
            python_accepts = False
        if python_accepts != (js is None):
            disagreements.append((t[:200], js))
    assert got[0] is None and sum(js is not None for js in got) > 100
    assert not disagreements, disagreements[:3]


def test_card_inconsistencies_the_validators_refuse_the_page_refuses(bank):
    card = json.loads(bank.card.canonical_json())
    edits = {
        "class labels": lambda d: d["architecture"]["class_labels"].append("maybe"),
        "box": lambda d: d["box_lower"].__setitem__(0, d["box_upper"][0] + 1),
        "sensitive column": lambda d: d["sensitive"][0].__setitem__("column", d["architecture"]["n_inputs"]),
        "sensitive labels": lambda d: d["sensitive"][0]["labels"].append("other"),
        "feature names": lambda d: d["feature_names"].pop(),
        "bucket name": lambda d: d["circuits"][0].__setitem__("bucket", "k9-f9"),
        "nPublic": lambda d: d["circuits"][0].__setitem__("n_public", d["circuits"][0]["n_public"] + 1),
        "duplicate bucket": lambda d: d["circuits"].append(d["circuits"][0]),
        "single party with contributions": lambda d: d["circuits"][0]["setup"].__setitem__(
            "contributions", [{"name": "x", "hash": "ab" * 64}]),
        "spread class": lambda d: d["spread"].__setitem__("favourable_class", 2),
        "persistence columns": lambda d: d["persistence"].__setitem__("columns", [d["sensitive"][0]["column"]]),
    }
    schemas = json.dumps(page_schemas())
    texts = {}
    for name, edit in edits.items():
        d = json.loads(json.dumps(card))
        edit(d)
        texts[name] = json.dumps(d)
        assert not _python_accepts(ModelCard, texts[name], "card"), name
    got = run_js([["shape", [schemas, "card", t]] for t in texts.values()])
    for name, js in zip(texts, got):
        assert js is not None, f"the page accepts a card with {name}"


# ------------------------------------------------------------------------------------------ numbers


def test_numbers_are_formatted_as_python_formats_them():
    rng = random.Random(5)
    values = [0.0, -0.0, 1.0, 0.125, 0.0125, 2.5, 1e-5, 123456.5, 1e16, -3.03, 720.4375, 0.00012345, 5e-324]
    values += [rng.uniform(-1, 1) * 10 ** rng.randint(-8, 12) for _ in range(300)]
    values += [rng.randint(-2**20, 2**20) / 2**rng.randint(0, 30) for _ in range(300)]  # dyadic: exact ties
    jobs, expected = [], []
    for v in values:
        for p, sign in ((4, False), (4, True), (6, False), (1, False)):
            jobs.append(["formatG", [v, p, sign]])
            expected.append(format(v, f"{'+' if sign else ''}.{p}g"))
    got = run_js(jobs)
    assert [(j, g) for j, g, e in zip(jobs, got, expected) if g != e] == []


def test_radii_are_written_as_the_verifier_writes_them():
    rng = random.Random(6)
    cases = [(0, 16), (1, 16), (10, 0), (100, 0), (193819, 16), (3689348814741910528, 64), (1, 64), (7, 3)]
    cases += [(rng.randrange(0, 2**rng.randint(1, 120)), rng.randint(0, 64)) for _ in range(300)]
    got = run_js([["radiusDecimal", [str(n), t]] for n, t in cases])
    expected = [radius_decimal(n, t) for n, t in cases]
    assert [(c, g, e) for c, g, e in zip(cases, got, expected) if g != e] == []
    with localcontext() as ctx:  # the reference itself: 30 significant digits, normalised
        ctx.prec = 30
        assert radius_decimal(10, 0) == str(Decimal(10).normalize()) == "1E+1"


def test_the_report_says_what_the_verifier_says_for_flips_caps_and_radii(bank):
    """The plain-words report of claims the honest bundles do not reach (a flip, a capped radius, other
    radii), from the same signals and card, line for line with fairproof-verify's printing."""
    from commitments.claims import claims_from_signals
    from verifier_client.verify import explain, persistence_summary, radius_summary, setup_summary, spread_summary

    card, bundle = bank.card, bank.bundles[0]
    bucket = card.bucket(bundle.bucket)
    variants = {"honest": list(bundle.public_signals)}
    flip = list(bundle.public_signals)
    flip[2], flip[3], flip[4] = "0", "1", "1"  # radius 0, a counterfactual flip at slice 1
    variants["flip"] = flip
    capped = list(bundle.public_signals)
    capped[2] = str(bucket.shape.eps_cap)
    variants["capped"] = capped
    for eps in (1, 2**16, 10 * 2**16, 3):
        v = list(bundle.public_signals)
        v[2] = str(eps)
        variants[f"eps {eps}"] = v
    jobs, expected = [], []
    for name, signals in variants.items():
        claims = claims_from_signals(signals, card, bucket)
        lines = ["VALID certificate", radius_summary(claims), explain(claims, card)]
        lines += [s for s in (spread_summary(claims, card), persistence_summary(claims, card)) if s]
        lines.append(setup_summary(bucket))
        expected.append("\n".join(lines))
        jobs.append(["report", [card.canonical_json(), signals, bundle.bucket]])
    got = run_js(jobs)
    assert "Not certified fair" in expected[1] and "whole input domain" in expected[2]
    assert got == expected
