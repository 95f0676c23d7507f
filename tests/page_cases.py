"""The verification page's corpus: the honest certificates and the forgeries of the verifier's tamper tests
(tests/test_forgeries.py, built the same way), plus proof tampering, as the documents a customer would
hand the page. Each case says what `fairproof-verify` answers for it (tests/test_page_verify.py checks
that too, so the page is compared with the verifier, never with an expectation written by hand alone)."""
from __future__ import annotations

import json
import shutil
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from bank_fixtures import forged
from node_runner import run_node
from circuits.backends import get_backend
from circuits.curve import g2_curve_rhs, g2_in_subgroup
from circuits.field import Q, R
from circuits.groth16 import Proof, prove, r1cs_digest
from circuits.groth16.encoding import fq2_sqrt
from circuits.snarkjs.json_formats import proof_from_json
from commitments.bundle import CertificateBundle, FlipSlice, Radius
from commitments.card import ModelCard
from test_forgeries import (LIES, SPELLINGS, WRAPS, _card_with_key, _delta_is_gamma_forgery, _edited, _forged_claim,
                            _public, _trivial_circuit_key)
from test_parity_schema import sensitive_entries
from verifier_client.page import PAGE_DIR, page_schemas
from verifier_client.verify import read_proof

REPO = Path(__file__).resolve().parents[1]


@dataclass(frozen=True)
class PageCase:
    name: str
    bundle: str
    card: str
    record: str = ""
    expected: str = "INVALID"  # what fairproof-verify answers: VALID (exit 0), INVALID (1) or UNUSABLE (2)
    trusted: tuple[str, ...] = ()
    pinned: str = ""  # a card digest the customer pinned (the page's field; the command line pins by file)
    reason: str = ""  # a word the refusal names
    extra: dict = field(default_factory=dict)
    auditors: tuple[str, ...] = ()  # auditors' verifier keys the customer trusts (--trust-auditor)
    attestations: tuple[str, ...] = ()  # attestation documents the customer gives (--attestation files)
    code: str | None = None  # an INVALID verdict's reason code (docs/VERIFYING.md), where the case states it


def _with_proof(bundle: CertificateBundle, proof: Proof) -> CertificateBundle:
    from circuits.groth16 import proof_to_bytes
    from circuits.snarkjs.json_formats import proof_to_json
    from commitments.bundle import SnarkjsProof

    return bundle.model_copy(update={"proof": SnarkjsProof.model_validate(proof_to_json(proof)),
                                     "proof_hex": proof_to_bytes(proof).hex()})


def _twist_point_outside_the_subgroup():
    """A point on the BN254 twist whose order is not r (the twist's cofactor is large)."""
    for k in range(1, 100):
        x = (k, 1)
        y = fq2_sqrt(g2_curve_rhs(x))
        if y is not None and not g2_in_subgroup((x, y)):
            return (x, y)
    raise AssertionError("no such point among the first x tried")


def page_cases(bank) -> list[PageCase]:
    card, genuine, other = bank.card, bank.bundles[0], bank.bundles[1]
    card_text = card.canonical_json()
    record0, record1 = json.dumps(bank.records[0]), json.dumps(bank.records[1])
    cases = [PageCase("honest", genuine.model_dump_json(), card_text, record0, "VALID"),
             PageCase("honest, second customer", other.model_dump_json(), card_text, record1, "VALID"),
             PageCase("honest, no record", genuine.model_dump_json(), card_text, "", "VALID")]

    for name, (index, edit_field) in WRAPS.items():
        def edit(d, index=index, edit_field=edit_field):
            edit_field(d)
            d["public_signals"][index] = str(int(d["public_signals"][index]) + R)
        cases.append(PageCase(f"wrapped by r: {name}", _edited(genuine, edit), card_text, expected="UNUSABLE"))
    for name, lie in LIES.items():
        cases.append(PageCase(f"field outside the signals: {name}", lie(genuine, card).model_dump_json(), card_text))
    sensitive = card.sensitive[0]
    liar = forged(genuine, status="counterfactual_flip", eps=Radius(numerator=0, scale_bits=card.eps_scale_bits),
                  flip_slice=FlipSlice(index=1, values=(sensitive.values[1],), labels=("a label the bank chose",)))
    cases.append(PageCase("flip labels the bank chose", liar.model_dump_json(), card_text, reason="flip_slice"))

    bad_card, _, bad_bundle, _ = _delta_is_gamma_forgery(bank)
    cases.append(PageCase("bank's card, key with delta = gamma", bad_bundle.model_dump_json(),
                          bad_card.canonical_json(), reason="degenerate"))
    cases.append(PageCase("delta = gamma bundle, genuine card", bad_bundle.model_dump_json(), card_text,
                          reason="another model card"))

    r1cs, pk, vk = _trivial_circuit_key(card.circuits[0].n_public)
    shape = card.circuits[0].shape.model_copy(update={"region_slots": 1, "farkas_slots": 1})
    trivial_card = _card_with_key(card, "k1-f1", vk, shape=shape, r1cs_digest=r1cs_digest(r1cs))
    draft = _forged_claim(bank, trivial_card, "k1-f1", None)
    trivial = _forged_claim(bank, trivial_card, "k1-f1", prove(pk, r1cs, [1, *_public(draft), 1], get_backend()))
    cases.append(PageCase("trivial-circuit key, genuine card", trivial.model_dump_json(), card_text,
                          reason="another model card"))
    cases.append(PageCase("trivial-circuit key on the bank's card, contributor required", trivial.model_dump_json(),
                          trivial_card.canonical_json(), trusted=("ab" * 64,), reason="bank alone"))
    cases.append(PageCase("trivial-circuit key on the bank's card, genuine card pinned", trivial.model_dump_json(),
                          trivial_card.canonical_json(), pinned=card.digest(), expected="VALID",
                          extra={"page": "INVALID"}, reason="pinned"))

    swapped = _card_with_key(card, card.circuits[0].bucket, vk)
    lying = swapped.model_copy(update={"circuits": tuple(
        b.model_copy(update={"verifying_key_digest": card.circuits[0].verifying_key_digest}) for b in swapped.circuits)})
    cases.append(PageCase("key swapped under its digest", genuine.model_copy(update={"card_digest": lying.digest()})
                          .model_dump_json(), lying.canonical_json(), reason="does not match its digest"))

    for name, edit in SPELLINGS.items():
        cases.append(PageCase(f"spelling: {name}", _edited(genuine, edit), card_text, expected="UNUSABLE"))
    text = genuine.model_dump_json()
    cases.append(PageCase("duplicate key in the bundle", text[:-1] + f', "decision": {1 - genuine.decision}}}',
                          card_text, expected="UNUSABLE", reason="duplicate"))
    cases.append(PageCase("duplicate key in the card", text, card_text[:-1] + ', "model_id": "other"}',
                          expected="UNUSABLE", reason="duplicate"))
    for commitment in ("\u00b2", "9" * 5000, "01", "-1", str(R)):
        cases.append(PageCase(f"card commitment {commitment[:12]!r}", text,
                              _edited(card, lambda d, c=commitment: d.__setitem__("commitment", c)), expected="UNUSABLE"))
    cases.append(PageCase("another customer's record", other.model_dump_json(), card_text, record0,
                          reason="another customer"))

    # The proof itself.
    proof = read_proof(genuine.proof, genuine.proof_hex)
    flipped = genuine.proof_hex[:70] + ("0" if genuine.proof_hex[70] != "0" else "1") + genuine.proof_hex[71:]
    cases.append(PageCase("proof_hex is not the JSON proof", genuine.model_copy(update={"proof_hex": flipped})
                          .model_dump_json(), card_text, reason="differ"))
    minus_a = Proof(a=(proof.a[0], Q - proof.a[1]), b=proof.b, c=proof.c)
    cases.append(PageCase("proof with -A", _with_proof(genuine, minus_a).model_dump_json(), card_text,
                          reason="proof rejected"))
    theirs = read_proof(other.proof, other.proof_hex)
    cases.append(PageCase("B and C of another proof", _with_proof(genuine, Proof(a=proof.a, b=theirs.b, c=theirs.c))
                          .model_dump_json(), card_text, reason="proof rejected"))
    cases.append(PageCase("B outside the order-r subgroup", _with_proof(genuine, Proof(
        a=proof.a, b=_twist_point_outside_the_subgroup(), c=proof.c)).model_dump_json(), card_text, reason="subgroup"))
    cases.append(PageCase("coordinate + q", _edited(genuine, lambda d: d["proof"]["pi_a"].__setitem__(
        0, str(int(d["proof"]["pi_a"][0]) + Q))), card_text, expected="UNUSABLE"))
    other_decision = 1 - genuine.decision
    flipped_claim = forged(genuine, decision=other_decision, decision_label=card.architecture.class_labels[other_decision])
    cases.append(PageCase("decision flipped in fields and signals", flipped_claim.model_dump_json(), card_text,
                          reason="proof rejected"))
    bigger = forged(genuine, eps=Radius(numerator=genuine.eps.numerator + 1, scale_bits=genuine.eps.scale_bits))
    cases.append(PageCase("eps + 1 in fields and signals", bigger.model_dump_json(), card_text, reason="proof rejected"))
    assert proof_from_json(genuine.proof.model_dump(mode="json")) == proof  # the honest proof reads back
    return cases


# ------------------------------------------------------------------------ auditors' attestations of the card

AUDITOR = "auditor.example"


def attested_statement(card, **changes):
    """What an auditor signs for `card` (commitments.attestation), with `changes` made to it."""
    from commitments.attestation import AttestationStatement, AttestedCircuit, attested_circuits

    circuits = tuple(AttestedCircuit(name=name, r1cs_digest=r1cs, verifying_key_digest=vk, contributions=("a1" * 64,))
                     for name, r1cs, vk in attested_circuits(card))
    fields = dict(model_id=card.model_id, card_digest=card.digest(), commitment=card.commitment,
                  phase1_digest="0" * 64, circuits=circuits, lenses=card.lenses, date="2026-11-28")
    return AttestationStatement(**{**fields, **changes})


def attestation_cases(bank) -> list[PageCase]:
    """A customer who trusts an auditor: the card must carry that auditor's attestation of exactly this card.
    Each case says what `fairproof-verify --trust-auditor ... --attestation ...` answers
    (tests/test_page_attestations.py checks that, and that the page agrees)."""
    from commitments.attestation import Attestation, sign_attestation
    from transparency import note

    card, genuine = bank.card, bank.bundles[0]
    bundle, card_text, record = genuine.model_dump_json(), card.canonical_json(), json.dumps(bank.records[0])
    skey, vkey = note.generate_key(AUDITOR)
    auditor = note.Signer.from_key(skey)
    impostor = note.Signer.from_key(note.generate_key(AUDITOR)[0])  # another key under the same name
    other_skey, other_vkey = note.generate_key("second-auditor.example")
    second = note.Signer.from_key(other_skey)

    def signed(statement, signer=auditor) -> str:
        return sign_attestation(statement, signer).model_dump_json()

    def case(name, attestations, expected="INVALID", reason="", auditors=(vkey,), record=record) -> PageCase:
        return PageCase(f"attestation: {name}", bundle, card_text, record, expected, reason=reason,
                        auditors=tuple(auditors), attestations=tuple(attestations))

    good = signed(attested_statement(card))
    circuits = attested_statement(card).circuits
    other_key_circuits = (circuits[0].model_copy(update={"verifying_key_digest": "cd" * 32}), *circuits[1:])
    good_note = Attestation.model_validate_json(good).note
    tampered = good_note.replace('"date":"2026-11-28"', '"date":"2026-11-29"')
    assert tampered != good_note
    text, _, signature = good_note.rpartition("\n\n")
    # The signature line's base64 with one character too many: malformed, before any signature is checked.
    mangled = f"{text}\n\n{signature[:-1]}A\n"
    spaced = attested_statement(card).text().replace('{"card_digest"', '{ "card_digest"')
    assert spaced != attested_statement(card).text()
    key_id = vkey.split("+")[1]
    wrong_id = vkey.replace(f"+{key_id}+", f"+{'0' if key_id[0] != '0' else '1'}{key_id[1:]}+")
    return [
        case("attested honest card", [good], "VALID"),
        case("attested honest card, no record", [good], "VALID", record=""),
        case("two trusted auditors, one attested", [good], "VALID", auditors=(other_vkey, vkey)),
        case("two attestations, one good", [signed(attested_statement(card, card_digest="ab" * 32)), good], "VALID"),
        case("none given", [], reason="no auditor you trust"),
        case("another key under the auditor's name", [signed(attested_statement(card), impostor)],
             reason="no auditor you trust"),
        case("an auditor the customer does not trust", [signed(attested_statement(card), second)],
             reason="no auditor you trust"),
        case("of another card digest", [signed(attested_statement(card, card_digest="ab" * 32))],
             reason="it attests card abababab"),
        case("of another model", [signed(attested_statement(card, model_id="another-model"))],
             reason="of model 'another-model'"),
        case("of another commitment", [signed(attested_statement(card, commitment="12345"))],
             reason="another commitment"),
        case("of another key digest", [signed(attested_statement(card, circuits=other_key_circuits))],
             reason="circuits it lists"),
        case("of other lenses", [signed(attested_statement(card, lenses=("radius",)))], reason="lenses it lists"),
        case("tampered note text", [Attestation.model_validate_json(good).model_copy(update={"note": tampered})
                                    .model_dump_json()], reason="invalid signature by known key"),
        case("malformed signature line", [Attestation(auditor_key=vkey, note=mangled).model_dump_json()],
             reason="mis-signed"),
        case("statement not in canonical form", [Attestation(auditor_key=vkey, note=note.sign(spaced, [auditor]))
                                                 .model_dump_json()], reason="canonical form"),
        case("malformed document: unknown field", [good[:-1] + ', "date": "2026-11-28"}'], "UNUSABLE",
             reason="malformed"),
        case("malformed document: wrong type", [json.dumps({"auditor_key": vkey, "note": 7})], "UNUSABLE",
             reason="malformed"),
        case("malformed document: duplicate key", [good[:-1] + f', "auditor_key": {json.dumps(vkey)}}}'], "UNUSABLE",
             reason="duplicate"),
        case("attestation given, no auditor trusted", [signed(attested_statement(card, model_id="another-model"))],
             "VALID", auditors=()),
        case("malformed document, no auditor trusted", [good[:-1] + ', "x": 1}'], "UNUSABLE", reason="malformed",
             auditors=()),
        case("malformed trusted key: key ID", [good], "UNUSABLE", reason="does not match its key",
             auditors=(wrong_id,)),
        case("malformed trusted key: not a key", [good], "UNUSABLE", reason="is malformed",
             auditors=("auditor.example",)),
    ]


# ------------------------------------------------------------------------ the page's verifier in node

NODE_RUNNER = """
const page = process.argv[1] + '/';
const verify = require(page + 'verify.js');
const canonical = require(page + 'canonical.js');
const snarkjs = require(process.argv[2]);
let input = ''; process.stdin.on('data', d => input += d).on('end', async () => {
  const job = JSON.parse(input);
  const env = { snarkjs, schemas: canonical.parseJson(job.schemas) };
  const out = [];
  for (const c of job.cases) {
    const started = performance.now();
    const r = await verify.verifyBundle({ bundleText: c.bundle, cardText: c.card, recordText: c.record,
      pinnedDigest: c.pinned, trusted: c.trusted, trustedAuditors: c.auditors, attestations: c.attestations }, env);
    out.push({ verdict: r.valid ? 'VALID' : r.kind === 'unusable' ? 'UNUSABLE' : 'INVALID',
               reason: r.reason || '', code: r.code || null, report: r.report || '', auditors: r.auditors || [],
               ms: performance.now() - started });
  }
  process.stdout.write(JSON.stringify(out));
  process.exit(0);
});
"""


def _snarkjs_node() -> Path:
    path = REPO / "node_modules" / "snarkjs"
    if shutil.which("node") is None or not path.is_dir():
        pytest.skip("node or snarkjs (npm ci) is not installed")
    return path


def node_verdicts(cases: list[PageCase]) -> list[dict]:
    snarkjs = _snarkjs_node()
    job = {"schemas": json.dumps(page_schemas()), "cases": [
        {"bundle": c.bundle, "card": c.card, "record": c.record, "pinned": c.pinned, "trusted": list(c.trusted),
         "auditors": list(c.auditors), "attestations": list(c.attestations)}
        for c in cases]}
    return run_node(NODE_RUNNER, job, str(PAGE_DIR), str(snarkjs))


# ------------------------------------------------------------------------ sensitive attributes over several inputs

SCALE_BITS = 16
# A bank's schema with one-hot sensitive attributes: race over three inputs (no value dropped), sex over one
# (OneHotEncoder(drop="F"): F is all zeros) and region over two (north dropped), between numeric inputs.
ONE_HOT_SCHEMA = {
    "format": "fairproof-schema/1", "name": "one-hot-credit",
    "features": [
        {"name": "age", "kind": "numeric", "min": 18, "max": 80, "mean": 45.0, "std": 14.0, "unit": "years"},
        {"name": "income", "kind": "numeric", "min": 0, "max": 200, "mean": 60.0, "std": 30.0, "unit": "kEUR"},
        {"name": "race", "kind": "sensitive", "encoding": "one_hot", "values": ["a", "b", "c"],
         "labels": ["group a", "group b", "group c"]},
        {"name": "duration", "kind": "numeric", "min": 3, "max": 72, "mean": 24.0, "std": 12.0, "unit": "months"},
        {"name": "sex", "kind": "sensitive", "encoding": "one_hot", "values": ["F", "M"], "drop": "F",
         "labels": ["female", "male"]},
        {"name": "region", "kind": "sensitive", "encoding": "one_hot", "values": ["north", "south", "east"],
         "drop": "north"},
    ],
    "label": {"column": "default", "values": ["no", "yes"], "labels": ["repays", "defaults"]},
}
ONE_HOT_RECORD = {"age": 30, "income": "45.5", "race": "b", "duration": 12, "sex": "M", "region": "south"}


def one_hot_card_value(schema: dict | None = None, scale_bits: int = SCALE_BITS, lenses: bool = True) -> dict:
    """The JSON value of a card under `schema` (ONE_HOT_SCHEMA by default) as `fairproof commit` writes one: its
    inputs, box, sensitive attributes and classes are the schema's; with the spread and persistence lenses
    (persistence moving the numeric inputs) unless `lenses` is False. No circuits yet."""
    from fairness.schema import FeatureSchema

    data = json.loads(json.dumps(schema or ONE_HOT_SCHEMA))
    fs = FeatureSchema.model_validate(data)
    lower, upper = fs.quantised_box(scale_bits)
    numeric = [c for f, c in fs.columns() if f.kind == "numeric"]
    card = {"model_id": "one-hot-credit", "dataset": "one-hot-credit", "feature_names": list(fs.feature_names),
            "feature_schema": data, "sensitive": sensitive_entries(data, scale_bits),
            "architecture": {"n_inputs": fs.n_inputs, "hidden_sizes": [3], "n_classes": 2,
                             "class_labels": list(fs.class_labels)},
            "scale_bits": scale_bits, "eps_scale_bits": 16, "box_lower": list(lower), "box_upper": list(upper),
            "commitment": "1234567", "commitment_scheme": "poseidon"}
    if lenses:
        card["spread"] = {"favourable_class": 0, "bucket_width": str(1 << 40)}
        card["persistence"] = {"favourable_class": 0, "columns": numeric, "default_delta": 1 << (scale_bits - 2)}
    return card


@dataclass(frozen=True)
class OneHotBank:
    """A card with sensitive attributes over several inputs, its one bucket's key being an honest key of a
    circuit that constrains nothing (so any claims can be proved: the claims' checks are what is under
    test, as a dishonest bank would have it), and a customer's record under it."""

    card: ModelCard
    pk: object  # the bucket's proving key
    r1cs: object
    record: dict
    query: tuple[int, ...]

    @property
    def bucket(self) -> str:
        return self.card.circuits[0].bucket


def trivial_bucket(card: ModelCard, slots: int = 2, per_slice: bool = False):
    """(bucket, proving key, R1CS) of a circuit with the card's public inputs that constrains none of them,
    named as a bucket of `slots` regions and Farkas slots (exact and per slice with `per_slice`)."""
    from circuits.groth16 import r1cs_digest, setup, vk_digest
    from circuits.relation import R1CS, Constraint
    from circuits.snarkjs.json_formats import verifying_key_to_json
    from commitments.card import BucketShape, CircuitBucket, SetupRecord, VerifyingKeyJson, bucket_name
    from verifier_client.solidity import statement_signals

    n_public = statement_signals(card) + (1 if per_slice else 0)
    one = n_public + 1
    r1cs = R1CS(n_wires=n_public + 2, n_public=n_public, constraints=(Constraint(a=((one, 1),), b=((one, 1),),
                                                                                 c=((one, 1),)),))
    pk, vk = setup(r1cs, get_backend(), seed=f"one-hot {slots} {per_slice}")
    layers = len(card.architecture.hidden_sizes) + 1
    shape = BucketShape(region_slots=slots, farkas_slots=slots, eps_cap=20 << card.eps_scale_bits, farkas_bits=40,
                        boundary_bits=81, weight_bits=(16,) * layers, bias_bits=(48,) * layers,
                        **({"radius": "exact", "per_slice": True} if per_slice else {}))
    bucket = CircuitBucket(bucket=bucket_name(slots, slots, shape.radius, per_slice), shape=shape, n_constraints=1, n_public=n_public, r1cs_digest=r1cs_digest(r1cs),
                           verifying_key_digest=vk_digest(vk),
                           verifying_key=VerifyingKeyJson.model_validate(verifying_key_to_json(vk)),
                           setup=SetupRecord(method="single-party"))
    return bucket, pk, r1cs


def schema_query(card: ModelCard, record: dict) -> tuple[int, ...]:
    """The record's query: the schema's doubles at the card's scale, halves rounded up (commitments/record.py)."""
    from fractions import Fraction

    return tuple(int((Fraction(x) * (1 << card.scale_bits) + Fraction(1, 2)) // 1)
                 for x in card.feature_schema.encode(record))


def one_hot_bank(schema: dict | None = None, record: dict | None = None, per_slice: bool = False) -> OneHotBank:
    """The card of `schema` (ONE_HOT_SCHEMA by default) with one bucket (per slice with `per_slice`) and the
    customer with `record` (ONE_HOT_RECORD by default)."""
    value = one_hot_card_value(schema)
    bare = ModelCard.model_validate(value)
    bucket, pk, r1cs = trivial_bucket(bare, per_slice=per_slice)
    card = ModelCard.model_validate({**value, "circuits": [bucket.model_dump(mode="json")]})
    record = dict(record or ONE_HOT_RECORD)
    return OneHotBank(card, pk, r1cs, record, schema_query(card, record))


def one_hot_certificate(bank: OneHotBank, query: tuple[int, ...] | None = None, *, decision: int = 1,
                        flip: int | None = None, eps: int = 3 << 16, bounds: dict | None = None,
                        delta: int | None = None) -> CertificateBundle:
    """A certificate of `query` (the customer's by default) under the bank's card, every readable field
    following its public signals and the proof valid under the bucket's key: certified with radius `eps`
    and every slice deciding `decision`, or, with `flip`, a counterfactual flip at slice `flip` (radius 0,
    that slice deciding otherwise); persistence bounds per (attribute, point) from `bounds`, (-3, 5) for
    the query's own values and (7, 11) otherwise. Whatever the claims, only the verifiers' checks of them
    can refuse it (the key's circuit constrains nothing). Under a per-slice bucket, one proof per slice: the bundle's own (slice 0's), then a part per slice."""
    from commitments.bundle import CounterfactualSpread, PersistenceBound, PersistentBias, SlicePart, SnarkjsProof
    from commitments.claims import signals_for
    from circuits.groth16 import proof_to_bytes
    from circuits.snarkjs.json_formats import proof_to_json

    card = bank.card
    query = tuple(bank.query if query is None else query)
    labels = card.architecture.class_labels
    decisions = [decision] * len(card.slices())
    if flip is not None:
        decisions[flip] = 1 - decision
    spread = CounterfactualSpread(decisions=tuple(decisions), decision_labels=tuple(labels[d] for d in decisions),
                                  distinct_decisions=len(set(decisions)), score_buckets=len(set(decisions)))
    persistence = []
    for a, point in card.persistence_pairs():
        f = card.sensitive[a]
        own = tuple(query[c] for c in f.input_columns) == point
        lower, upper = (bounds or {}).get((f.name, f.label_of(point)), (-3, 5) if own else (7, 11))
        status = "own" if own else "favoured" if lower > 0 else "disfavoured" if upper < 0 else "inconclusive"
        persistence.append(PersistenceBound(attribute=f.name, value=f.written(point), label=f.label_of(point),
                                            lower=lower, upper=upper, status=status))
    flip_slice = None
    if flip is not None:
        values, flip_labels = card.slice_labels(flip)
        flip_slice = FlipSlice(index=flip, values=values, labels=flip_labels)
    unproved = SnarkjsProof(pi_a=("1", "2", "1"), pi_b=(("0", "0"), ("0", "0"), ("1", "0")), pi_c=("1", "2", "1"),
                            protocol="groth16", curve="bn128")
    slices = len(card.slices()) if card.bucket(bank.bucket).shape.per_slice else 1
    parts = tuple(SlicePart(slice_index=t, bucket=bank.bucket, proof=unproved, proof_hex="00" * 128)
                  for t in range(1, slices))
    draft = CertificateBundle(
        certificate_id="one-hot-1", issued_at="2026-11-28T00:00:00+00:00", model_id=card.model_id,
        card_digest=card.digest(), bucket=bank.bucket, query=query, decision=decision, decision_label=labels[decision],
        status="certified" if flip is None else "counterfactual_flip", flip_slice=flip_slice,
        eps=Radius(numerator=0 if flip is not None else eps, scale_bits=card.eps_scale_bits),
        proof=unproved, public_signals=("0",), proof_hex="00" * 128, spread=spread,
        persistence=PersistentBias(delta=card.persistence.default_delta if delta is None else delta,
                                   bounds=tuple(persistence)), parts=parts)
    signals = signals_for(draft, int(card.commitment))

    def proved(t: int) -> tuple[SnarkjsProof, str]:
        public = [*(int(v) for v in signals[:-1]), t] if parts else [int(v) for v in signals]
        proof = prove(bank.pk, bank.r1cs, [1, *public, 1], get_backend())
        return SnarkjsProof.model_validate(proof_to_json(proof)), proof_to_bytes(proof).hex()

    proof, proof_hex = proved(0)
    parts = tuple(part.model_copy(update=dict(zip(("proof", "proof_hex"), proved(part.slice_index)))) for part in parts)
    return draft.model_copy(update={"public_signals": signals, "proof": proof, "proof_hex": proof_hex, "parts": parts})


def one_hot_query(bank: OneHotBank, **points: tuple[int, ...]) -> tuple[int, ...]:
    """The customer's query with the inputs of the named sensitive attributes set to `points` (unscaled)."""
    query = list(bank.query)
    for f in bank.card.sensitive:
        for c, v in zip(f.input_columns, points.get(f.name, ())):
            query[c] = v << bank.card.scale_bits
    return tuple(query)


def _with_card(bank: OneHotBank, edit) -> OneHotBank:
    """The bank with its card's JSON value edited by `edit(dict)` (the card must still be one Python reads)."""
    import dataclasses

    value = bank.card.published_value()
    edit(value)
    return dataclasses.replace(bank, card=ModelCard.model_validate(value))


def one_hot_cases(bank: OneHotBank) -> list[PageCase]:
    """A card whose sensitive attributes are one-hot (race: three inputs; sex: one, female dropped; region: two,
    north dropped), every certificate under it proved (the key's circuit constrains nothing): the claims'
    checks and the card's reading alone decide. Each acceptance has its rejection twin. Each case says what
    `fairproof-verify` answers (tests/test_page_one_hot.py checks that, and that the page agrees)."""
    own_record = json.dumps(bank.record)  # the customer's own, given where a case says so

    def case(name, expected="VALID", code=None, reason="", *, on=bank, record="", **claims) -> PageCase:
        bundle = one_hot_certificate(on, **claims).model_dump_json()
        return PageCase(name, bundle, on.card.canonical_json(), record, expected, reason=reason, code=code)

    def at(**points):
        return one_hot_query(bank, **points)

    def card_case(name, edit, reason) -> PageCase:
        value = bank.card.published_value()
        edit(value)
        return PageCase(name, one_hot_certificate(bank).model_dump_json(), json.dumps(value), "", "UNUSABLE",
                        reason=reason)

    def sensitive(a, **fields):
        def edit(value):
            value["sensitive"][a].update(fields)
            for key in [k for k, v in fields.items() if v is None]:
                del value["sensitive"][a][key]
        return edit

    def without_schema(value):
        del value["feature_schema"]

    race, sex, region = (list(f.input_columns) for f in bank.card.sensitive)
    one = 1 << bank.card.scale_bits
    bare = _with_card(bank, without_schema)  # a card that publishes no preprocessing: only its own rules bind it
    sex_as_columns = _with_card(bank, sensitive(1, column=None, columns=sex, values=[[0], [one]]))
    other_record = json.dumps({**bank.record, "race": "a"})
    return [
        case("certified, race over three inputs", record=own_record),
        case("certified, no record"),
        case("counterfactual flip at group a, male, south", record=own_record, flip=4),
        case("query at race a, another of its points", query=at(race=(1, 0, 0))),
        case("query at race (1, 1, 0)", "INVALID", "claims.sensitive-value", "sensitive feature 'race'",
             query=at(race=(1, 1, 0))),
        case("query at race (0, 0, 0), no value dropped", "INVALID", "claims.sensitive-value",
             "sensitive feature 'race'", query=at(race=(0, 0, 0))),
        case("query at race (1, 0, 0) unscaled", "INVALID", "claims.sensitive-value", "sensitive feature 'race'",
             query=tuple(v // one if j in race else v for j, v in enumerate(at(race=(1, 0, 0))))),
        case("query at region (0, 0), its dropped value north", query=at(region=(0, 0))),
        case("query at region (1, 1)", "INVALID", "claims.sensitive-value", "sensitive feature 'region'",
             query=at(region=(1, 1))),
        case("query at sex 0, its dropped value female", query=at(sex=(0,))),
        case("query at sex 1/2 (inside the box)", "INVALID", "claims.sensitive-value", "sensitive feature 'sex'",
             query=tuple(one // 2 if j in sex else v for j, v in enumerate(at(sex=(0,))))),
        case("another race point's persistence bounds above 0", bounds={("race", "group c"): (1, 2)}),
        case("the own race point's persistence bounds excluding 0", "INVALID", "claims.persistence",
             "do not contain 0", bounds={("race", "group b"): (1, 2)}),
        case("the own region point's persistence bounds excluding 0", "INVALID", "claims.persistence",
             "do not contain 0", bounds={("region", "south"): (-2, -1)}),
        case("another customer's record (race a)", "INVALID", "customer.record", "another customer",
             record=other_record),
        case("a card without its schema, certified", on=bare),
        case("a card without its schema, query at race (0, 1, 1)", "INVALID", "claims.sensitive-value",
             "sensitive feature 'race'", on=bare, query=at(race=(0, 1, 1))),
        case("sex's one input written as columns", on=sex_as_columns, record=own_record),
        card_case("a race value that is no one-hot point of the schema",
                  sensitive(0, values=[[one, one, 0], [0, one, 0], [0, 0, one]]), "differ from the feature schema"),
        card_case("race's points unscaled", sensitive(0, values=[[1, 0, 0], [0, 1, 0], [0, 0, 1]]),
                  "differ from the feature schema"),
        card_case("race over the inputs before its own", sensitive(0, columns=[c - 1 for c in race]),
                  "differ from the feature schema"),
        card_case("race and region sharing an input (no schema)",
                  lambda v: (without_schema(v), sensitive(2, columns=[race[-1], region[-1]])(v)),
                  "distinct input indices"),
        card_case("race with both column and columns", sensitive(0, column=race[0]), "give either column"),
        card_case("race with neither column nor columns", sensitive(0, columns=None), "give either column"),
        card_case("a race value of two integers for three inputs",
                  sensitive(0, values=[[one, 0], [0, one, 0], [0, 0, one]]), "list of 3 integers"),
        card_case("race's values as integers", sensitive(0, values=[0, one, 2 * one]), "list of 3 integers"),
        card_case("race over one input twice", sensitive(0, columns=[race[0], *race[:-1]]), "columns must be distinct"),
        card_case("two race values the same (no schema)",
                  lambda v: (without_schema(v), sensitive(0, values=[[one, 0, 0], [one, 0, 0], [0, 0, one]])(v)),
                  "two values are the same"),
        card_case("sex's one column with lists as values", sensitive(1, values=[[0], [one]]), "values are integers"),
    ]


def one_hot_per_slice_cases(bank: OneHotBank) -> list[PageCase]:
    """Certificates proved slice by slice under a one-hot card (`one_hot_bank(per_slice=True)`): one proof for
    each of its 18 slices (3 races x 2 sexes x 3 regions, never a slice per pattern of inputs), and twins."""
    card_text = bank.card.canonical_json()
    honest = one_hot_certificate(bank)

    def case(name, bundle, expected="VALID", code=None, reason="") -> PageCase:
        return PageCase(name, bundle.model_dump_json(), card_text, "", expected, reason=reason, code=code)

    last, before = honest.parts[-1], honest.parts[-2]
    swapped = (*honest.parts[:-2], before.model_copy(update={"proof": last.proof, "proof_hex": last.proof_hex}),
               last.model_copy(update={"proof": before.proof, "proof_hex": before.proof_hex}))
    return [
        case("per slice: each of the 18 slices proved", honest),
        case("per slice: the last slice's proof missing", honest.model_copy(update={"parts": honest.parts[:-1]}),
             "INVALID", "claims.parts", "one proof per slice"),
        case("per slice: two slices' proofs swapped", honest.model_copy(update={"parts": swapped}),
             "INVALID", "proof.rejected", f"slice {before.slice_index}"),
        case("per slice: the query at race (1, 1, 0)", one_hot_certificate(bank, query=one_hot_query(bank, race=(1, 1, 0))),
             "INVALID", "claims.sensitive-value", "sensitive feature 'race'"),
    ]
