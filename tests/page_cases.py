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
from test_forgeries import (LIES, SPELLINGS, WRAPS, _card_with_key, _delta_is_gamma_forgery, _edited, _forged_claim,
                            _public, _trivial_circuit_key)
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
               reason: r.reason || '', report: r.report || '', auditors: r.auditors || [],
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
