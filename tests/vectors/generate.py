"""Write the conformance corpus (tests/vectors/README.md) from the project's forgery builders.

    python tests/vectors/generate.py [--out tests/vectors/v1] [--cache DIR]
    python tests/vectors/generate.py --onehot [--out tests/vectors/v1-onehot]
    python tests/vectors/generate.py --trees [--out tests/vectors/v1-trees]

(from the repository root, where the tests find the German Credit data; about 90 s on two cores)

Builds a German Credit (4,2) bank as the tests do (the fast radius, the spread and persistence lenses), proves
its customers' certificates again under the exact and the bound radius and slice by slice, commits the same
model with no lens and a key ceremony, and proves group counts on an audit dataset. Every case of
tests/page_cases.py, the registry's claim forgeries (tests/test_registry_claims.py), the forgeries of the
per-slice, log, trust-root and key tests, and the customer's requirements become vectors; `fairproof-verify`
judges each, the judgement must be the builder's expectation, and the corpus is written with an index.

With --onehot it writes instead the one-hot family (tests/vectors/v1-onehot, the same format): a synthetic bank
whose sensitive attribute spans three inputs (tests/onehot_bank.py), its honest certificates, queries between
the attribute's points, own-value persistence bounds excluding 0, forgeries and cards listing other points.

With --trees it writes the tree-ensemble family (tests/vectors/v1-trees): a bank's XGBoost pipeline on German
credit imported, committed and proved (tests/tree_bank.py), its honest certificates, forged signals, a bundle
under a card the bank set up again with keys of its own, and cards mixing kinds.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import re
import shutil
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
sys.path[:0] = [str(HERE.parent), str(REPO)]

from conformance import IMPLEMENTATIONS, Vector, python_verdict  # noqa: E402


def text(document) -> str:
    """A document's text: a card as published (its canonical JSON, what its digest hashes), others as written."""
    if isinstance(document, str):
        return document
    return document.canonical_json() if hasattr(document, "canonical_json") else document.model_dump_json()


def vector(description: str, card, bundle, options=None, verdict: str = "INVALID", rule: str = "") -> Vector:
    """A vector the builders expect `verdict` of; `rule` names the D rule of an UNUSABLE one (a refusal's rule
    follows from its code)."""
    options = {k: v for k, v in (options or {}).items() if v not in (None, "", [], ())}
    return Vector("", description, text(card), text(bundle), options, verdict, None, rule)


def respelled(document: str, old: str, new: str) -> str:
    assert old in document, old
    return document.replace(old, new, 1)


def edited(document, edit) -> str:
    data = json.loads(text(document))
    edit(data)
    return json.dumps(data)


# ------------------------------------------------------------------------ the page's cases

def unusable_rule(description: str) -> str:
    """The D rule of an unusable page or attestation case (docs/VERIFYING.md)."""
    if "duplicate key" in description:
        return "D1"
    if "trusted key" in description:
        return "D3"
    return "D2"


def vectors_from_cases(cases) -> list[Vector]:
    out = []
    for case in cases:
        expected = case.extra.get("page", case.expected) if case.pinned else case.expected
        options = {"record": case.record, "trusted_contributors": list(case.trusted),
                   "trusted_auditors": list(case.auditors), "attestations": list(case.attestations),
                   "pinned_digest": case.pinned}
        rule = unusable_rule(case.name) if expected == "UNUSABLE" else ""
        out.append(vector(case.name, case.card, case.bundle, options, expected, rule))
    return out


# ------------------------------------------------------------------------ documents (D)

def document_vectors(bank) -> list[Vector]:
    """Documents that cannot be read (D1), other spellings (D2) and inconsistent cards or customer inputs (D3),
    and D refused before any other rule."""
    from circuits.field import R

    card, genuine = bank.card, bank.bundles[0]
    card_text, bundle = text(card), text(genuine)
    record = json.dumps(bank.records[0])
    signals = genuine.public_signals

    def signal(i, spelled):
        return edited(genuine, lambda d: d["public_signals"].__setitem__(i, spelled))

    out = [
        vector("D1: a byte-order mark before the bundle", card_text, "\ufeff" + bundle, verdict="UNUSABLE", rule="D1"),
        vector("D1: a byte-order mark before the card", "\ufeff" + card_text, bundle, verdict="UNUSABLE", rule="D1"),
        vector("D1: NaN for a number of the bundle", card_text,
               respelled(bundle, f'"decision":{genuine.decision}', '"decision":NaN'), verdict="UNUSABLE", rule="D1"),
        vector("D1: Infinity for a number of the card", respelled(card_text, f'"eps_scale_bits":{card.eps_scale_bits}',
                                                                  '"eps_scale_bits":Infinity'),
               bundle, verdict="UNUSABLE", rule="D1"),
        vector("D1: a number of 81 digits", card_text, edited(genuine, lambda d: d.__setitem__("decision", 10 ** 80)),
               verdict="UNUSABLE", rule="D1"),
        vector("D1: a lone surrogate in the card", respelled(card_text, '"description":""', '"description":"\\ud800"'),
               bundle, verdict="UNUSABLE", rule="D1"),
        vector("D1: a bundle that is not JSON", card_text, bundle[:-1], verdict="UNUSABLE", rule="D1"),
        vector("D1: a record that is not a JSON object", card_text, bundle, {"record": "[1, 2]"}, "UNUSABLE", "D1"),
        vector("D1: a record with a duplicate key", card_text, bundle,
               {"record": record[:-1] + f', "duration": {json.dumps(bank.records[0]["duration"])}}}'}, "UNUSABLE", "D1"),
        vector("D2: a signal as a JSON number", card_text, edited(genuine, lambda d: d["public_signals"].__setitem__(
            3, int(d["public_signals"][3]))), verdict="UNUSABLE", rule="D2"),
        vector("D2: a signal with a plus sign", card_text, signal(3, "+" + signals[3]), verdict="UNUSABLE", rule="D2"),
        vector("D2: a signal in hex", card_text, signal(1, hex(int(signals[1]))), verdict="UNUSABLE", rule="D2"),
        vector("D2: a signal equal to r", card_text, signal(4, str(R)), verdict="UNUSABLE", rule="D2"),
        vector("D2: a negative signal", card_text, signal(4, "-1"), verdict="UNUSABLE", rule="D2"),
        vector("D2: proof_hex of odd length", card_text, edited(
            genuine, lambda d: d.__setitem__("proof_hex", d["proof_hex"][:-1])), verdict="UNUSABLE", rule="D2"),
        vector("D2: a G2 point of the proof with z = (2, 0)", card_text, edited(
            genuine, lambda d: d["proof"]["pi_b"].__setitem__(2, ["2", "0"])), verdict="UNUSABLE", rule="D2"),
        vector("D2: a float for the card's eps bits", edited(card, lambda d: d.__setitem__(
            "eps_scale_bits", float(d["eps_scale_bits"]))), bundle, verdict="UNUSABLE", rule="D2"),
        vector("a record's number written as a string (the same value)", card_text, bundle,
               {"record": json.dumps({**bank.records[0], "duration": str(bank.records[0]["duration"])})}, "VALID"),
        vector("D3: a record naming a category the card does not know", card_text, bundle,
               {"record": json.dumps({**bank.records[0], "purpose": "a category of its own"})}, "UNUSABLE", "D3"),
        vector("D3: a record missing a feature", card_text, bundle,
               {"record": json.dumps({k: v for k, v in bank.records[0].items() if k != "duration"})}, "UNUSABLE", "D3"),
        vector("D3: a malformed trusted contributor hash", card_text, bundle, {"trusted_contributors": ["ab" * 10]},
               "UNUSABLE", "D3"),
        vector("D3: an unknown lens required", card_text, bundle, {"require_lens": ["fairness"]}, "UNUSABLE", "D3"),
        # D before every other rule
        vector("D before P: a malformed bundle under a pinned other card", card_text, bundle[:-1],
               {"pinned_digest": "0" * 64}, "UNUSABLE", "D1"),
        vector("D before C: a record that cannot be used, with another model's bundle", card_text,
               genuine.model_copy(update={"model_id": "another-model"}).model_dump_json(),
               {"record": json.dumps({**bank.records[0], "purpose": "a category of its own"})}, "UNUSABLE", "D3"),
        vector("D before C: a malformed trusted contributor, with another model's bundle", card_text,
               genuine.model_copy(update={"model_id": "another-model"}).model_dump_json(),
               {"trusted_contributors": ["xyz"]}, "UNUSABLE", "D3"),
    ]
    inconsistent = {
        "a class label too many": lambda d: d["architecture"]["class_labels"].append("maybe"),
        "a box lower bound above its upper bound": lambda d: d["box_lower"].__setitem__(0, d["box_upper"][0] + 1),
        "a sensitive column outside the inputs": lambda d: d["sensitive"][0].__setitem__(
            "column", d["architecture"]["n_inputs"]),
        "a bucket name that does not name its shape": lambda d: d["circuits"][0].__setitem__("bucket", "k9-f9"),
        "a bucket listed twice": lambda d: d["circuits"].append(d["circuits"][0]),
        "the persistence lens moving a sensitive column": lambda d: d["persistence"].__setitem__(
            "columns", [d["sensitive"][0]["column"]]),
    }
    for name, edit in inconsistent.items():
        out.append(vector(f"D3: a card with {name}", edited(card, edit), bundle, verdict="UNUSABLE", rule="D3"))
    out.append(vector("D4: the card as version 2 (before RFC 8785 digests)", edited(
        card, lambda d: d.__setitem__("card_version", 2)), bundle, verdict="UNUSABLE", rule="D4"))
    out.append(vector("D4: an integer beyond 2^53 - 1 in the card", edited(
        card, lambda d: d["box_upper"].__setitem__(0, 2 ** 53)), bundle, verdict="UNUSABLE", rule="D4"))
    return out


# ------------------------------------------------------------------------ claims (C) on the signals

def signal_vectors(bank) -> list[Vector]:
    """The genuine bundle with one public signal (or the model id) changed: each claim rule's refusal."""
    from circuits.field import R
    from commitments.claims import HEAD_SIGNALS

    card, genuine = bank.card, bank.bundles[0]
    n = card.architecture.n_inputs
    spread_at = HEAD_SIGNALS + n
    persistence_at = spread_at + card.n_spread_signals
    sensitive = card.sensitive[0].column
    free = next(i for i in range(n) if i != sensitive)

    def signal(index: int, value: int):
        return lambda d: d["public_signals"].__setitem__(index, str(value % R))

    edits = {
        "the commitment signal + 1": signal(0, int(card.commitment) + 1),
        "a decision that is no class": signal(1, card.architecture.n_classes),
        "E above the bucket's cap": signal(2, card.bucket(genuine.bucket).shape.eps_cap + 1),
        "status 2": signal(3, 2),
        "a certified radius with flip index 1": signal(4, 1),
        "a query value above the box": signal(HEAD_SIGNALS + free, card.box_upper[free] + 1),
        "a query value below the box (negative, mod r)": signal(HEAD_SIGNALS + free, card.box_lower[free] - 1),
        "a sensitive value outside its domain": signal(HEAD_SIGNALS + sensitive, max(card.sensitive[0].values) + 1),
        "a spread decision that is no class": signal(spread_at, card.architecture.n_classes),
        "a spread bucket count of 0": signal(spread_at + len(card.slices()), 0),
        "a persistence delta above the card's cap": signal(persistence_at, card.persistence_delta_cap + 1),
        "persistence bounds with lower above upper": lambda d: d["public_signals"].__setitem__(
            persistence_at + 1, str(10 ** 30)),
        "one signal too few": lambda d: d["public_signals"].pop(),
        "another model's id": lambda d: d.__setitem__("model_id", "another-model"),
    }
    return [vector(f"signals: {name}", card, edited(genuine, edit)) for name, edit in edits.items()]


def following(bundle, card, signals):
    """`bundle` with `signals` and every readable field saying what they say (a careful forger's bundle)."""
    from commitments.bundle import Radius
    from commitments.claims import claims_from_signals

    c = claims_from_signals([str(v) for v in signals], card, card.bucket(bundle.bucket))
    return bundle.model_copy(update={
        "public_signals": tuple(str(v) for v in signals), "decision": c.decision, "decision_label": c.decision_label,
        "status": c.status, "flip_slice": c.flip, "query": c.query,
        "eps": Radius(numerator=c.eps_numerator, scale_bits=c.eps_scale_bits, capped=c.capped),
        "spread": c.spread.readable() if c.spread else None,
        "persistence": c.persistence.readable() if c.persistence else None})


def registry_claim_vectors(bank, modes) -> list[Vector]:
    """tests/test_registry_claims.py's forged signal vectors (every claim rule at its edges) as bundles: refused by
    their claim; its possible claims with every readable field following them: refused by the proof alone.
    A few of them again on the exact, bound and per-slice certificates."""
    from circuits.field import R
    from test_registry_claims import FORGERIES, POSSIBLE, Layout, _forge, _possible

    card, genuine = bank.card, bank.bundles[0]
    layout = Layout(card, genuine.bucket)
    out = []
    for name in FORGERIES:
        signals = [str(v) for v in _forge(name, layout, genuine.public_signals)]
        wrapped = any(int(v) >= R for v in signals)  # a signal given as itself plus r: not its canonical spelling
        out.append(vector(f"claims: {name}", card, edited(genuine, lambda d: d.__setitem__("public_signals", signals)),
                          verdict="UNUSABLE" if wrapped else "INVALID", rule="D2" if wrapped else ""))
    for name in POSSIBLE:
        signals = _possible(name, layout, genuine.public_signals)
        if signals == [int(v) for v in genuine.public_signals]:
            continue  # the honest signals (an honest certificate has these claims already)
        out.append(vector(f"possible claims, no proof of them: {name}", card,
                          following(genuine, card, signals).model_dump_json()))
    for mode in ("exact", "bound", "exact per-slice"):
        mode_card, bundles = modes[mode]
        own = bundles[0]
        mode_layout = Layout(mode_card, own.bucket)
        for name in ("status 2", "eps above the bucket's cap", "query below the box", "a sensitive value outside its domain",
                     "the own slice deciding otherwise", "own value's bounds excluding 0"):
            honest = own.public_signals[:-1] if own.parts else own.public_signals
            signals = [str(v) for v in _forge(name, mode_layout, honest)]
            signals += [own.public_signals[-1]] if own.parts else []  # the slice the proof stands for
            out.append(vector(f"{mode}: claims: {name}", mode_card,
                              own.model_copy(update={"public_signals": tuple(signals)}).model_dump_json()))
    return out


def lens_field_vectors(bank) -> list[Vector]:
    """The lenses' readable fields edited, their signals kept: C15."""
    card, genuine = bank.card, bank.bundles[0]
    spread, persistence = genuine.spread, genuine.persistence
    labels = card.architecture.class_labels
    bounds = persistence.bounds
    first = bounds[0]
    moved = first.model_copy(update={"status": "favoured" if first.status != "favoured" else "disfavoured"})
    edits = {
        "spread: one more distinct decision": {"spread": spread.model_copy(
            update={"distinct_decisions": spread.distinct_decisions + 1})},
        "spread: a slice's label changed": {"spread": spread.model_copy(update={"decision_labels": (
            labels[1 - spread.decisions[0]], *spread.decision_labels[1:])})},
        "spread: one more score bucket": {"spread": spread.model_copy(update={"score_buckets": spread.score_buckets + 1})},
        "persistence: a bound's status changed": {"persistence": persistence.model_copy(
            update={"bounds": (moved, *bounds[1:])})},
        "persistence: a lower bound lowered": {"persistence": persistence.model_copy(update={"bounds": (
            first.model_copy(update={"lower": first.lower - 1}), *bounds[1:])})},
        "persistence: another delta": {"persistence": persistence.model_copy(update={"delta": persistence.delta + 1})},
        "persistence: the lens dropped": {"persistence": None},
        "spread: the lens dropped": {"spread": None},
    }
    return [vector(f"lens fields: {name}", card, genuine.model_copy(update=update).model_dump_json())
            for name, update in edits.items()]


# ------------------------------------------------------------------------ keys (K1) and proofs (K2, K3)

def key_and_proof_vectors(bank) -> list[Vector]:
    from circuits.backends import get_backend
    from circuits.field import Q
    from circuits.groth16 import Proof
    from page_cases import _twist_point_outside_the_subgroup, _with_proof
    from test_registry_claims import _double_alpha, _negated, _with_key
    from verifier_client.verify import read_proof

    card, genuine, other = bank.card, bank.bundles[0], bank.bundles[1]
    vk = card.circuits[0].verifying_key
    out = []
    x, y = _twist_point_outside_the_subgroup()
    outside = ((str(x[0]), str(x[1])), (str(y[0]), str(y[1])), ("1", "0"))
    keys = {
        "delta = -gamma": {"vk_delta_2": _negated(vk.vk_gamma_2)},
        "alpha doubled (not the key its digest names)": {"vk_alpha_1": _double_alpha(card)},
        "gamma outside the order-r subgroup": {"vk_gamma_2": outside},
    }
    for name, points in keys.items():
        bad = _with_key(card, **points)
        out.append(vector(f"key: {name}", bad, genuine.model_copy(update={"card_digest": bad.digest()})))
    proof, theirs = read_proof(genuine.proof, genuine.proof_hex), read_proof(other.proof, other.proof_hex)
    proofs = {
        "another customer's proof": theirs,
        "C of another proof": Proof(a=proof.a, b=proof.b, c=theirs.c),
        "A doubled": Proof(a=get_backend().g1_mul(proof.a, 2), b=proof.b, c=proof.c),
    }
    for name, p in proofs.items():
        out.append(vector(f"proof: {name}", card, _with_proof(genuine, p).model_dump_json()))
    out.append(vector("proof: A off the curve", card, edited(genuine, lambda d: d["proof"]["pi_a"].__setitem__(
        1, str((int(d["proof"]["pi_a"][1]) + 1) % Q)))))
    out.append(vector("proof: another customer's bundle under this customer's signals", card,
                      other.model_copy(update={"public_signals": genuine.public_signals}).model_dump_json()))
    return out


# ------------------------------------------------------------------------ the customer (U) and pins (P)

def requirement_vectors(bank) -> list[Vector]:
    """The customer's requirements: lenses, the persistence box (the card's default when none is asked), pins."""
    from offline_precompute.certify import query_from_record

    card, genuine = text(bank.card), text(bank.bundles[0])
    zero = bank.prover.prove(query_from_record(bank.prover.workspace.artifact, bank.prover.model, bank.records[0]),
                             persistence_delta=0).bundle.model_dump_json()
    digest = bank.card.digest()
    return [
        vector("every lens required", card, genuine, {"require_lens": ["radius", "spread", "persistence"]}, "VALID"),
        vector("the default box asked for explicitly", card, genuine, {"delta": 0.25}, "VALID"),
        vector("another box asked for", card, genuine, {"delta": 0.5}),
        vector("a zero box, none asked for (the card's default applies)", card, zero),
        vector("a zero box, asked for", card, zero, {"delta": 0.0}, "VALID"),
        vector("a box wider than the card can prove asked for", card, genuine, {"delta": 50.0}),
        vector("D3: a box of more than 100 standard deviations asked for", card, genuine, {"delta": 1000.0},
               "UNUSABLE", "D3"),
        vector("D3: a negative box asked for", card, genuine, {"delta": -1.0}, "UNUSABLE", "D3"),
        vector("a zero box with every lens required", card, zero, {"require_lens": ["persistence"]}),
        vector("pins: the card's digest pinned", card, genuine, {"pinned_digest": digest}, "VALID"),
        vector("pins: the card's digest pinned in upper case", card, genuine, {"pinned_digest": digest.upper()}, "VALID"),
        vector("pins: another card's digest pinned", card, genuine, {"pinned_digest": "0" * 64}),
        vector("pins: a pinned card digest that is no digest", card, genuine, {"pinned_digest": "ab" * 10}),
        vector("pins: P before C: another model's bundle under a pinned other card", card,
               bank.bundles[0].model_copy(update={"model_id": "another-model"}).model_dump_json(),
               {"pinned_digest": "0" * 64}),
    ]


def changed_card_vectors(bank) -> list[Vector]:
    """P1's clauses: the genuine card pinned, then a card that only adds a bucket (tests/page_cases.py's
    trivial-circuit bucket), accepted when the customer accepts updates, or attested by a trusted auditor."""
    from commitments.attestation import sign_attestation
    from page_cases import AUDITOR, attested_statement
    from test_forgeries import _card_with_key, _trivial_circuit_key
    from circuits.groth16 import r1cs_digest
    from transparency import note

    card, genuine = bank.card, bank.bundles[0]
    r1cs, _, vk = _trivial_circuit_key(card.circuits[0].n_public)
    shape = card.circuits[0].shape.model_copy(update={"region_slots": 1, "farkas_slots": 1})
    grown = _card_with_key(card, "k1-f1", vk, shape=shape, r1cs_digest=r1cs_digest(r1cs))
    bundle = genuine.model_copy(update={"card_digest": grown.digest()}).model_dump_json()
    skey, vkey = note.generate_key(AUDITOR)
    rogue = note.Signer.from_key(note.generate_key(AUDITOR)[0])
    attested = sign_attestation(attested_statement(grown), note.Signer.from_key(skey)).model_dump_json()
    by_rogue = sign_attestation(attested_statement(grown), rogue).model_dump_json()
    pinned = {"pinned_digest": card.digest(), "pinned_card": text(card)}
    return [
        vector("pins: a card that adds a bucket, the genuine card pinned", grown, bundle, pinned),
        vector("pins: a card that adds a bucket, update accepted", grown, bundle,
               {**pinned, "accept_card_update": True}, "VALID"),
        vector("pins: a card that adds a bucket, attested by a trusted auditor", grown, bundle,
               {**pinned, "trusted_auditors": [vkey], "attestations": [attested]}, "VALID"),
        vector("pins: a card that adds a bucket, attested under the auditor's name by another key", grown, bundle,
               {**pinned, "trusted_auditors": [vkey], "attestations": [by_rogue]}),
        vector("pins: a card that adds a bucket, update accepted, the pin holding the digest alone", grown, bundle,
               {"pinned_digest": card.digest(), "accept_card_update": True}),
        vector("pins: a card that adds a bucket, no pin", grown, bundle, {}, "VALID"),
    ]


# ------------------------------------------------------------------------ other models: modes, no lens, a ceremony

def prove_modes(bank, workdir: Path) -> dict:
    """The bank's model (a copy) proved again for both customers under the exact radius, the bound and slice by
    slice (exact), one bucket added each time; then a proof of group counts. Each mode's bundles are re-issued
    under the final card (an added bucket changes the card, not the statement). {mode: (card, bundles)}."""
    from circuits.backends import get_backend
    from commitments.card import ModelCard
    from offline_precompute.certify import query_from_record
    from offline_precompute.db import open_database, resolve_store_url
    from prover_service.audit_proving import GroupCountsProver, audit_dataset
    from prover_service.bucket_keys import SinglePartyKeySetup
    from prover_service.proving import Prover
    from prover_service.workspace import ModelWorkspace

    root = workdir / "modes"
    shutil.copytree(bank.prover.workspace.root, root)
    workspace = ModelWorkspace.open(root)
    db = open_database(resolve_store_url(None, root))
    proved = {}
    for name, radius, per_slice in (("exact", "exact", False), ("bound", "bound", False),
                                    ("exact per-slice", "exact", True)):
        print(f"proving {name} certificates...", file=sys.stderr, flush=True)
        prover = Prover(workspace, db, get_backend(), key_setup=SinglePartyKeySetup(), radius=radius,
                        per_slice=per_slice)
        proved[name] = [prover.prove(query_from_record(workspace.artifact, prover.model, r)).bundle
                        for r in bank.records]
    db.dispose()
    print("proving group counts...", file=sys.stderr, flush=True)
    dataset, _ = audit_dataset(workspace, rows=12)
    groups = GroupCountsProver(workspace, single_party=True).prove(dataset)
    card = ModelCard.from_json(workspace.card_path.read_bytes())
    out = {name: (card, [b.model_copy(update={"card_digest": card.digest()}) for b in bundles])
           for name, bundles in proved.items()}
    out["groups"] = (card, groups.model_copy(update={"card_digest": card.digest()}), dataset)
    return out


def mode_vectors(bank, modes) -> list[Vector]:
    """Honest certificates of every radius mode and the per-slice shape under the card they were issued with,
    and their forgeries: eps + 1 in fields and signals, a field outside the signals, another customer's
    record, and a per-slice certificate's parts missing, repeated, misnumbered, borrowed or mis-bucketed."""
    from bank_fixtures import forged
    from circuits.field import Q
    from circuits.groth16 import Proof
    from commitments.attestation import sign_attestation
    from commitments.bundle import Radius
    from page_cases import AUDITOR, _with_proof, attested_statement
    from transparency import note
    from verifier_client.verify import read_proof

    record0 = json.dumps(bank.records[0])
    out: list[Vector] = []
    for name in ("exact", "bound", "exact per-slice"):
        card, (genuine, second) = modes[name]
        out.append(vector(f"{name}: honest", card, genuine, {"record": record0}, "VALID"))
        out.append(vector(f"{name}: honest, second customer", card, second, {}, "VALID"))
        out.append(vector(f"{name}: another customer's record", card, second, {"record": record0}))
        bigger = forged(genuine, eps=Radius(numerator=genuine.eps.numerator + 1, scale_bits=genuine.eps.scale_bits))
        out.append(vector(f"{name}: eps + 1 in fields and signals", card, bigger))
        out.append(vector(f"{name}: a label the signals do not say", card,
                          genuine.model_copy(update={"decision_label": "a label the bank chose"})))
        out.append(vector(f"{name}: every lens required, the card's box asked for", card, genuine,
                          {"require_lens": ["radius", "spread", "persistence"], "delta": 0.25}, "VALID"))
        proof = read_proof(genuine.proof, genuine.proof_hex)
        out.append(vector(f"{name}: proof with -A", card, _with_proof(genuine, Proof(
            a=(proof.a[0], Q - proof.a[1]), b=proof.b, c=proof.c))))
    card, (genuine, second) = modes["exact per-slice"]
    parts, part = genuine.parts, genuine.parts[0]
    whole = next(b.bucket for b in card.circuits if not b.shape.per_slice)

    def with_part(**changes):
        return genuine.model_copy(update={"parts": (part.model_copy(update=changes),)})

    sliced = {
        "a slice's proof missing": genuine.model_copy(update={"parts": parts[:-1]}),
        "a slice repeated": genuine.model_copy(update={"parts": (*parts, parts[-1])}),
        "a part numbered for slice 2": with_part(slice_index=2),
        "a part under a whole-statement bucket": with_part(bucket=whole),
        "a part under a bucket the card does not have": with_part(bucket=part.bucket + "-missing"),
        "another customer's part": genuine.model_copy(update={"parts": second.parts}),
        "slice 0's proof passed off as slice 1's": with_part(proof=genuine.proof, proof_hex=genuine.proof_hex),
        "a part's proof_hex not its JSON proof": with_part(proof_hex=second.parts[0].proof_hex),
        "the bundle's own proof standing for slice 1": genuine.model_copy(
            update={"public_signals": (*genuine.public_signals[:-1], "1")}),
        "the bundle's own proof without its slice index": genuine.model_copy(
            update={"public_signals": genuine.public_signals[:-1]}),
        "a whole certificate under the per-slice bucket": genuine.model_copy(update={"parts": ()}),
    }
    for name in ("exact", "bound", "exact per-slice"):
        own = modes[name][1][0]
        sliced_or_not = {"another model's id": own.model_copy(update={"model_id": "another-model"}),
                         "a bucket the card does not have": own.model_copy(update={"bucket": own.bucket + "-missing"})}
        for what, bundle in sliced_or_not.items():
            out.append(vector(f"{name}: {what}", card, bundle))
    for what, bundle in sliced.items():
        out.append(vector(f"exact per-slice: {what}", card, bundle))
    out.append(vector("exact per-slice: a part numbered for slice 0", card, edited(
        genuine, lambda d: d["parts"][0].__setitem__("slice_index", 0)), verdict="UNUSABLE", rule="D2"))
    out.append(vector("exact per-slice: a contributor required of single-party keys", card, genuine,
                      {"trusted_contributors": ["ab" * 64]}))
    whole_bundle = bank.bundles[0].model_copy(update={"card_digest": card.digest()})
    out.append(vector("fast: honest under the card with every mode", card, whole_bundle, {"record": record0}, "VALID"))
    out.append(vector("fast: a whole-statement certificate with slice parts", card,
                      whole_bundle.model_copy(update={"parts": parts})))
    skey, vkey = note.generate_key(AUDITOR)
    signer = note.Signer.from_key(skey)
    good = sign_attestation(attested_statement(card), signer).model_dump_json()
    stale = sign_attestation(attested_statement(bank.card), signer).model_dump_json()  # of the card before the buckets
    out.append(vector("exact per-slice: attested card", card, genuine,
                      {"trusted_auditors": [vkey], "attestations": [good], "record": record0}, "VALID"))
    out.append(vector("exact per-slice: attestation of the card before its buckets were added", card, genuine,
                      {"trusted_auditors": [vkey], "attestations": [stale]}))
    return out


def group_count_vectors(modes) -> list[Vector]:
    """A proof of group counts on the audit dataset (`fairproof-verify GROUPS --card --dataset`)."""
    from circuits.field import Q, R

    card, bundle, dataset = modes["groups"]
    data = {"dataset": dataset.model_dump_json()}
    relabelled = dataset.model_copy(update={"labels": (1 - dataset.labels[0], *dataset.labels[1:])})
    signals = bundle.public_signals

    def signal(i: int, value: int):
        return bundle.model_copy(update={"public_signals": (*signals[:i], str(value % R), *signals[i + 1:])})

    g = bundle.groups[0]
    return [
        vector("groups: honest", card, bundle, data, "VALID"),
        vector("groups: another label in the dataset", card, bundle, {"dataset": relabelled.model_dump_json()}),
        vector("groups: another model card's digest", card, bundle.model_copy(update={"card_digest": "ab" * 32}), data),
        vector("groups: another model's id", card, bundle.model_copy(update={"model_id": "another-model"}), data),
        vector("groups: an audit circuit the card does not have", card,
               bundle.model_copy(update={"circuit": "groups-n13-c1"}), data),
        vector("groups: a dataset with a row changed", card, bundle, {"dataset": dataset.model_copy(update={
            "rows": ((dataset.rows[0][0] + 1, *dataset.rows[0][1:]), *dataset.rows[1:])}).model_dump_json()}),
        vector("groups: another dataset digest named", card, bundle.model_copy(update={"dataset_sha256": "cd" * 32}),
               data),
        vector("groups: the commitment signal + 1", card, signal(0, int(signals[0]) + 1), data),
        vector("groups: one signal too few", card, bundle.model_copy(update={"public_signals": signals[:-1]}), data),
        vector("groups: more true positives than selected, fields and signals", card, signal(5, g.selected + 1)
               .model_copy(update={"groups": (g.model_copy(update={"true_positives": g.selected + 1}),
                                              *bundle.groups[1:])}), data),
        vector("groups: more selected than rows, fields and signals", card, signal(4, g.rows + 1)
               .model_copy(update={"groups": (g.model_copy(update={"selected": g.rows + 1}), *bundle.groups[1:])}),
               data),
        vector("groups: selected + 1 in fields and signals", card, signal(4, g.selected + 1)
               .model_copy(update={"groups": (g.model_copy(update={"selected": g.selected + 1}), *bundle.groups[1:])}),
               data),
        vector("groups: proof with -A", card, edited(bundle, lambda d: d["proof"]["pi_a"].__setitem__(
            1, str(Q - int(d["proof"]["pi_a"][1])))), data),
    ]


def bare_model(bank, workdir: Path, cache: Path):
    """The bank's German (4,2) model committed again with no lens (the radius only), its keys from a ceremony
    listing the auditor's contribution (tests/test_trust_roots.py `with_ceremony`); both customers proved."""
    from circuits.backends import get_backend
    from fairness.model import save_artifact
    from offline_precompute.certify import query_from_record
    from offline_precompute.db import open_database, resolve_store_url
    from offline_precompute.enumerate import precompute
    from prover_service.bucket_keys import SinglePartyKeySetup
    from prover_service.proving import Prover
    from prover_service.publishing import commit_model
    from prover_service.workspace import ModelWorkspace
    from test_trust_roots import with_ceremony

    print("committing the model with no lens...", file=sys.stderr, flush=True)
    save_artifact(bank.prover.workspace.artifact, workdir / "bare")
    workspace = ModelWorkspace.open(workdir / "bare")
    commit_model(workspace, model_id="german-4x2-radius", spread=False)
    db = open_database(resolve_store_url(None, workspace.root))
    prover = Prover(workspace, db, get_backend(), key_setup=SinglePartyKeySetup())
    precompute(db, prover.model)
    bundles = [prover.prove(query_from_record(workspace.artifact, prover.model, r)).bundle for r in bank.records]
    db.dispose()
    card = with_ceremony(prover.card)
    return card, [b.model_copy(update={"card_digest": card.digest()}) for b in bundles]


def bare_vectors(bank, bare) -> list[Vector]:
    """U1 (lenses), U4 (contributors) and U5 (no box to ask for) on the radius-only card with a ceremony."""
    from test_trust_roots import AUDITOR_HASH

    card, (genuine, second) = bare
    record = json.dumps(bank.records[0])
    return [
        vector("no lens: honest", card, genuine, {"record": record}, "VALID"),
        vector("no lens: honest, second customer", card, second, {}, "VALID"),
        vector("no lens: the radius required", card, genuine, {"require_lens": ["radius"]}, "VALID"),
        vector("no lens: the spread required", card, genuine, {"require_lens": ["spread"]}),
        vector("no lens: persistence required", card, genuine, {"require_lens": ["radius", "persistence"]}),
        vector("no lens: both lenses required", card, genuine, {"require_lens": ["persistence", "spread"]}),
        vector("no lens: another model's id", card, genuine.model_copy(update={"model_id": "another-model"})),
        vector("no lens: a box asked for", card, genuine, {"delta": 0.25}),
        vector("no lens: another customer's record", card, second, {"record": record}),
        vector("ceremony: a listed contributor trusted", card, genuine, {"trusted_contributors": [AUDITOR_HASH]},
               "VALID"),
        vector("ceremony: a listed contributor trusted, in upper case", card, genuine,
               {"trusted_contributors": [AUDITOR_HASH.upper()]}, "VALID"),
        vector("ceremony: another contributor trusted", card, genuine, {"trusted_contributors": ["ab" * 64]}),
        vector("ceremony: two contributors trusted, one listed", card, genuine,
               {"trusted_contributors": ["ab" * 64, AUDITOR_HASH]}, "VALID"),
        vector("no lens: a spread signal appended", card, genuine.model_copy(
            update={"public_signals": (*genuine.public_signals, "1")})),
    ]


# ------------------------------------------------------------------------ the transparency log (L)

def log_vectors(bank) -> list[Vector]:
    """tests/test_log_forgeries.py's logs: a bundle with evidence checked against the log key the customer names."""
    from log_fixtures import MemoryLog, salted, with_evidence
    from test_log_forgeries import _forged_leaf, _other_value
    from transparency import note
    from transparency.cosignature import CosignatureSigner
    from transparency.cosignature import generate_key as generate_witness_key

    card, genuine = bank.card, bank.bundles[0]
    log = MemoryLog()
    first = [log.issue(salted(b), card) for b in bank.bundles]
    logged, second = [log.issue(b, card) for b in first]  # both at the newest checkpoint
    key = {"log_key": log.verifier_key}
    forged_log, forged = _forged_leaf(bank, salted(genuine), **_other_value(bank, salted(genuine), "eps"))
    witness = CosignatureSigner.from_key(generate_witness_key("witness.test")[0])
    body = log.checkpoint().split("\n\n")[0] + "\n"
    cosigned = with_evidence(logged, logged.log.model_copy(update={
        "checkpoint": log.checkpoint() + witness.cosign(body, 1_700_000_000)}))
    witness_key = {"trusted_witnesses": [witness.verifier().vkey()]}
    return [
        vector("log: honest evidence, the log's key named", card, logged, key, "VALID"),
        vector("log: honest evidence of the second customer", card, second, key, "VALID"),
        vector("log: no evidence, the log required", card, genuine, {"require_log": True}),
        vector("log: no evidence, a log key named", card, genuine, key),
        vector("log: evidence, no key named or pinned", card, logged),
        vector("log: evidence under another key of the log's name", card, logged,
               {"log_key": note.generate_key(log.origin)[1]}),
        vector("log: a leaf whose eps is not the proof's", card, forged, {"log_key": forged_log.verifier_key}),
        vector("log: another customer's evidence", card, with_evidence(logged, second.log), key),
        vector("log: a trusted witness that did not cosign", card, logged, {**key, **witness_key}),
        vector("log: a trusted witness that cosigned", card, cosigned, {**key, **witness_key}, "VALID"),
    ]


# ------------------------------------------------------------------------ a one-hot sensitive attribute

def onehot_vectors(bank) -> list[Vector]:
    """A card whose sensitive attribute race spans three inputs (one-hot, tests/onehot_bank.py) beside a coded
    sex: honest certificates (one certified over the 3 x 2 combinations of points, one flipped by race alone),
    queries between race's points, own-value persistence bounds excluding 0, careful forgeries only the proof
    refuses, and cards whose race lists other points, overlapping or doubly spelled columns."""
    from commitments.claims import HEAD_SIGNALS
    from commitments.card import ModelCard
    from circuits.field import R

    card, (genuine, flipped) = bank.card, bank.bundles
    one = 1 << card.scale_bits
    n = card.architecture.n_inputs
    race = card.sensitive[0]
    assert race.input_columns == (1, 2, 3), "the bank's race columns"
    persistence_at = HEAD_SIGNALS + n + card.n_spread_signals + 1  # the first pair's lower bound
    pairs = card.persistence_pairs()
    record = json.dumps(bank.records[0])

    def signals(bundle, edit):
        values = [int(v) for v in bundle.public_signals]
        edit(values)
        return [v % R for v in values]

    def race_at(point):
        def edit(s):
            s[HEAD_SIGNALS + 1:HEAD_SIGNALS + 4] = [v * one for v in point]
        return edit

    def own_bound(attribute, lower, upper):
        own = next(i for i, b in enumerate(genuine.persistence.bounds)
                   if b.status == "own" and b.attribute == card.sensitive[attribute].name)

        def edit(s):
            s[persistence_at + 2 * own], s[persistence_at + 2 * own + 1] = lower, upper
        return edit

    def another_race(s):  # race a instead of b, the bounds of a (now the own value) (0, 0): any proof's claims
        race_at((1, 0, 0))(s)
        at = persistence_at + 2 * pairs.index((0, (one, 0, 0)))
        s[at], s[at + 1] = 0, 0

    def certified(s):  # the flipped customer claimed certified, every slice deciding alike
        s[2], s[3], s[4] = 1, 0, 0
        at = HEAD_SIGNALS + n
        s[at:at + len(card.slices())] = [s[1]] * len(card.slices())

    def lowered(s):
        at = persistence_at + 2 * pairs.index((0, (one, 0, 0)))
        s[at] -= 1

    out = [
        vector("one-hot: honest, certified over every combination of race's points and sex, its record", card,
               genuine, {"record": record}, "VALID"),
        vector("one-hot: honest, a decision race alone flips", card, flipped, {}, "VALID"),
        vector("one-hot: every lens required, the card's box asked for", card, genuine,
               {"require_lens": ["radius", "spread", "persistence"], "delta": 0.25}, "VALID"),
        vector("one-hot: another customer's record", card, flipped, {"record": record}),
        vector("one-hot: the query's race columns (1, 1, 0)", card,
               edited(genuine, lambda d: d.__setitem__("public_signals", [str(v) for v in signals(
                   genuine, race_at((1, 1, 0)))]))),
        vector("one-hot: the query's race columns (0, 0, 0), race dropping no value", card,
               edited(genuine, lambda d: d.__setitem__("public_signals", [str(v) for v in signals(
                   genuine, race_at((0, 0, 0)))]))),
        vector("one-hot: the persistence bounds at the customer's own race excluding 0", card,
               edited(genuine, lambda d: d.__setitem__("public_signals", [str(v) for v in signals(
                   genuine, own_bound(0, 1, 5))]))),
        vector("one-hot: the persistence bounds at the customer's own sex excluding 0", card,
               edited(genuine, lambda d: d.__setitem__("public_signals", [str(v) for v in signals(
                   genuine, own_bound(1, -5, -1))]))),
        vector("one-hot: race a instead of b, its bounds and every field following", card,
               following(genuine, card, signals(genuine, another_race))),
        vector("one-hot: the flipped customer claimed certified, every field following", card,
               following(flipped, card, signals(flipped, certified))),
        vector("one-hot: a lower bound of race a lowered by 1, every field following", card,
               following(genuine, card, signals(genuine, lowered))),
    ]
    defects = {
        "race listing a point that is not one of the schema's": lambda d: d["sensitive"][0]["values"].__setitem__(
            1, [0, one, one]),
        "race's points swapped": lambda d: d["sensitive"][0]["values"].reverse(),
        "race's columns overlapping sex's": lambda d: d["sensitive"][0].__setitem__("columns", [1, 2, 5]),
        "race spelled with both column and columns": lambda d: d["sensitive"][0].__setitem__("column", 1),
        "a race value of two integers": lambda d: d["sensitive"][0]["values"].__setitem__(0, [one, 0]),
    }
    for name, edit in defects.items():
        out.append(vector(f"one-hot: D3: a card with {name}", edited(card, edit), genuine, verdict="UNUSABLE",
                          rule="D3"))
    bare = json.loads(text(card))
    bare.pop("feature_schema")
    honest = ModelCard.from_json(json.dumps(bare))
    bare["sensitive"][0]["values"][1] = [0, one, one]  # the customer's own value, race b
    tampered = ModelCard.from_json(json.dumps(bare))
    out.append(vector("one-hot: a card without its schema, the bundle naming it", honest,
                      genuine.model_copy(update={"card_digest": honest.digest()}), {}, "VALID"))
    out.append(vector("one-hot: a card without its schema listing another point for the customer's race", tampered,
                      genuine.model_copy(update={"card_digest": tampered.digest()})))
    return out


# ------------------------------------------------------------------------ what each implementation judges

REGISTRY_CODES = {"key.invalid", "proof.malformed", "proof.rejected", "claims.bucket", "claims.signal-count",
                  "claims.signal-encoding", "claims.commitment", "claims.decision", "claims.eps-cap",
                  "claims.status", "claims.flip", "claims.query-box", "claims.sensitive-value", "claims.spread",
                  "claims.persistence", "claims.parts", "groups.signals"}
OFF_CHAIN = {
    "claims.model": "the registry is one card's: the model id a bundle names is not submitted (C1)",
    "claims.card-digest": "the registry is one card's: the card digest a bundle names is not submitted (C2)",
    "claims.contradiction": "the bundle's readable fields are not submitted: the registry sees the bucket, the "
                            "proofs and the signals (C15)",
    "card.pin-mismatch": "pins are the customer's; the registry is bound to its card when deployed (P1)",
    "customer": "the customer's own requirements (lenses, record, auditors, contributors, box) are checked "
                "off-chain (U)",
    "log.refused": "the transparency log is checked by fairproof-verify alone (L1)",
    "groups.dataset": "the registry does not see the audit dataset; its caller compares the dataset's digest (G1)",
}
PAGE_ONLY_DIGEST = "the page pins a card digest the customer types: a changed card is refused whatever attests or " \
                   "accepts it (P1's update and attestation clauses are fairproof-verify's)"


def not_applicable(v: Vector) -> dict[str, str]:
    out = {}
    o = v.options
    if o.get("dataset"):
        out["page"] = "the page verifies certificates, not proofs of group counts (G)"
    elif o.get("log_key") or o.get("require_log") or o.get("trusted_witnesses") or '"log":{' in v.bundle:
        out["page"] = "the page does not check the transparency log (L1)"
    elif o.get("accept_card_update") or (o.get("pinned_digest") and o.get("attestations") and v.verdict == "VALID"):
        out["page"] = PAGE_ONLY_DIGEST
    if v.verdict == "UNUSABLE":
        out["registry"] = "the registry takes ABI-encoded numbers, not documents: nothing unusable reaches it (D)"
    elif v.verdict == "INVALID" and "proof_hex" in v.description:
        out["registry"] = "the registry takes a proof's points, never proof_hex, their compressed form (K2)"
    elif v.verdict == "INVALID" and v.code not in REGISTRY_CODES:
        out["registry"] = OFF_CHAIN.get(v.code) or OFF_CHAIN[v.code.split(".")[0]]
    return out


def rules_by_code() -> dict[str, str]:
    """code -> rule, from docs/VERIFYING.md's tables (the first table naming a code: C before G)."""
    out: dict[str, str] = {}
    for line in (REPO / "docs" / "VERIFYING.md").read_text(encoding="utf-8").splitlines():
        m = re.match(r"\| ([A-Z]\d+) \|.*\| `([a-z]+\.[a-z-]+)` \|$", line)
        if m:
            out.setdefault(m.group(2), m.group(1))
    return out


def shape(v: Vector) -> dict:
    """The radius mode, shape and lenses of the bucket the vector's bundle names on its card (None where a
    document does not say)."""
    try:
        card, bundle = json.loads(v.card.lstrip("\ufeff")), json.loads(v.bundle.lstrip("\ufeff"))
        lenses = [lens for lens in ("spread", "persistence") if card.get(lens)]
        if v.options.get("dataset"):
            return {"mode": None, "shape": "group counts", "lenses": lenses}
        bucket = next(b for b in card["circuits"] if b["bucket"] == bundle["bucket"])
        return {"mode": bucket["shape"].get("radius", "fast"), "lenses": lenses,
                "shape": "per-slice" if bucket["shape"].get("per_slice") else "whole"}
    except (ValueError, KeyError, TypeError, StopIteration):
        return {"mode": None, "shape": None, "lenses": None}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=None,
                        help="the corpus directory (default tests/vectors/v1, or v1-onehot with --onehot)")
    parser.add_argument("--cache", type=Path, default=Path(tempfile.gettempdir()) / "fairproof-models")
    family = parser.add_mutually_exclusive_group()
    family.add_argument("--onehot", action="store_true",
                        help="write the one-hot family (a synthetic bank, no dataset) instead of the main corpus")
    family.add_argument("--trees", action="store_true",
                        help="write the tree-ensemble family (a bank's XGBoost pipeline) instead of the main corpus")
    args = parser.parse_args()
    version = "v1-onehot" if args.onehot else "v1-trees" if args.trees else "v1"
    out = args.out or HERE / version
    with tempfile.TemporaryDirectory() as tmp:
        vectors = (onehot_corpus(Path(tmp)) if args.onehot else trees_corpus(Path(tmp)) if args.trees
                   else main_corpus(Path(tmp), args.cache))
        lines, index, cards = judged(vectors, version, Path(tmp))
    if out.exists():
        shutil.rmtree(out)
    (out / "cards").mkdir(parents=True)
    for name, card in cards.items():
        (out / "cards" / name).write_text(card, encoding="utf-8")
    (out / "vectors.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    (out / "index.json").write_text(json.dumps({"version": version, "vectors": index}, indent=1) + "\n",
                                    encoding="utf-8")
    print(f"wrote {len(lines)} vectors to {out}", file=sys.stderr)


def main_corpus(tmp: Path, cache: Path) -> list[Vector]:
    """The German Credit (4,2) bank's vectors (tests/vectors/v1)."""
    from bank_fixtures import Bank
    from page_cases import attestation_cases, page_cases

    print("building the German (4,2) bank (train, commit, precompute, prove)...", file=sys.stderr, flush=True)
    bank = Bank(tmp / "bank", cache)
    modes = prove_modes(bank, tmp)
    bare = bare_model(bank, tmp, cache)
    vectors = (vectors_from_cases(page_cases(bank)) + vectors_from_cases(attestation_cases(bank))
               + document_vectors(bank) + requirement_vectors(bank) + changed_card_vectors(bank)
               + signal_vectors(bank) + registry_claim_vectors(bank, modes) + lens_field_vectors(bank)
               + key_and_proof_vectors(bank) + mode_vectors(bank, modes) + group_count_vectors(modes)
               + bare_vectors(bank, bare) + log_vectors(bank))
    bank.db.dispose()
    return vectors


def onehot_corpus(tmp: Path) -> list[Vector]:
    """The one-hot banks' vectors (tests/vectors/v1-onehot): race over three inputs, then race dropping a value."""
    from onehot_bank import DROPPED, OneHotBank

    print("building the one-hot banks (commit, precompute, prove)...", file=sys.stderr, flush=True)
    bank = OneHotBank(tmp / "onehot")
    dropped = OneHotBank(tmp / "dropped", drop="a", records=[DROPPED])
    try:
        return onehot_vectors(bank) + dropped_vectors(dropped)
    finally:
        bank.db.dispose()
        dropped.db.dispose()


def trees_corpus(tmp: Path) -> list[Vector]:
    """The tree-ensemble bank's vectors (tests/vectors/v1-trees)."""
    from tree_bank import TreeBank

    print("building the tree-ensemble bank (import, commit, prove)...", file=sys.stderr, flush=True)
    bank = TreeBank(tmp / "trees")
    twin = TreeBank(tmp / "twin")  # the same bank committing again: another salt, keys of its own
    return tree_vectors(bank, twin)


def tree_vectors(bank, twin) -> list[Vector]:
    """A tree ensemble's card (architecture kind tree-ensemble, bucket t<N>-d<D>-bound): honest certificates, the
    forgeries a bank can build from its own documents, and cards whose kind and buckets disagree."""
    from circuits.field import R

    card, genuine = bank.card, bank.bundles[0]
    record = json.dumps(bank.proved_records[0])
    cap = card.circuits[0].shape.eps_cap

    def signals(edit):
        values = [int(v) for v in genuine.public_signals]
        edit(values)
        return [v % R for v in values]

    def raised(s):
        s[2] = s[2] + 1 if s[2] < cap else s[2] - 1
    def decided(s):
        s[1] = 1 - s[1]
    def flipped(s):
        s[2], s[3] = 0, 1
    def certified(s):
        s[2], s[3], s[4] = max(s[2], 1), 0, 0

    forged_status = flipped if genuine.status == "certified" else certified
    twin_bundle = twin.bundles[0]
    out = [
        vector("trees: honest, its record", card, genuine, {"record": record}, "VALID"),
        vector("trees: honest, a second customer", card, bank.bundles[1], {}, "VALID"),
        vector("trees: E moved by one, every field following", card, following(genuine, card, signals(raised))),
        vector("trees: the other decision, every field following", card, following(genuine, card, signals(decided))),
        vector("trees: the status turned, every field following", card,
               following(genuine, card, signals(forged_status))),
        vector("trees: another customer's record", card, bank.bundles[1], {"record": record}),
        vector("trees: a bundle under the card the bank committed again with keys of its own", card, twin_bundle),
        vector("trees: that bundle re-pointed at the pinned card", card,
               twin_bundle.model_copy(update={"card_digest": card.digest()})),
        vector("trees: the other bank's card, its own bundle", twin.card, twin_bundle, {}, "VALID"),
        vector("trees: the card re-published as a network's (kind dropped)", edited(card, lambda d: d[
            "architecture"].pop("kind")), genuine, {}, "UNUSABLE", "D3"),
        vector("trees: the card with a hidden layer", edited(card, lambda d: d["architecture"].__setitem__(
            "hidden_sizes", [4])), genuine, {}, "UNUSABLE", "D3"),
        vector("trees: the bucket renamed for another tree count", card.canonical_json().replace(
            f'"{genuine.bucket}"', '"t999-d2-bound"'), genuine, {}, "UNUSABLE", "D3"),
        vector("trees: a tree bucket with a lens on the card", edited(card, lambda d: d.__setitem__(
            "spread", {"favourable_class": 0, "bucket_width": 1})), genuine, {}, "UNUSABLE", "D3"),
    ]
    return out


def dropped_vectors(bank) -> list[Vector]:
    """Race one-hot with value a dropped (two inputs, a all zeros): a customer of race a, and the point no value
    has (both inputs set)."""
    from commitments.claims import HEAD_SIGNALS
    from circuits.field import R

    card, (genuine,) = bank.card, bank.bundles
    assert card.sensitive[0].input_columns == (1, 2) and genuine.query[1:3] == (0, 0), "race a: all zeros"
    one = 1 << card.scale_bits

    def both_set(d):
        d["public_signals"][HEAD_SIGNALS + 1] = d["public_signals"][HEAD_SIGNALS + 2] = str(one % R)

    return [
        vector("one-hot dropping a value: honest, the customer's race the dropped one (all zeros), its record", card,
               genuine, {"record": json.dumps(bank.records[0])}, "VALID"),
        vector("one-hot dropping a value: the query's race columns (1, 1)", card, edited(genuine, both_set)),
    ]


def judged(vectors: list[Vector], version: str, tmp: Path) -> tuple[list[str], list[dict], dict[str, str]]:
    """(vectors.jsonl lines, index entries, cards by file name): each vector judged by `fairproof-verify`, which
    must give the builder's expectation, numbered `<version>-NNN`, with its rule and where it applies."""
    rules = rules_by_code()
    lines, index, cards, wrong = [], [], {}, []
    for number, v in enumerate(vectors, 1):
        verdict, code, reason = python_verdict(v, tmp / f"v{number}")
        if verdict != v.verdict:
            wrong.append(f"{v.description}: fairproof-verify says {verdict} ({reason[:200]}), "
                         f"the builder expects {v.verdict}")
        rule = {"UNUSABLE": v.rule, "INVALID": rules.get(code, "")}.get(verdict) or valid_rule(v)
        v = Vector(f"{version}-{number:03d}", v.description, v.card, v.bundle, v.options, verdict, code, rule)
        v = Vector(v.id, v.description, v.card, v.bundle, v.options, verdict, code, rule, not_applicable(v))
        if not v.rule:
            wrong.append(f"{v.description}: no rule of docs/VERIFYING.md for {verdict} [{code}]")
        name = hashlib.sha256(v.card.encode("utf-8")).hexdigest() + ".json"
        cards[name] = v.card
        entry = {"id": v.id, "description": v.description, "rule": v.rule, **shape(v),
                 "expected": {"verdict": verdict, "code": code},
                 "applies_to": [i for i in IMPLEMENTATIONS if v.applies_to(i)], "not_applicable": v.not_applicable}
        index.append(entry)
        lines.append(json.dumps({**entry, "card": f"cards/{name}", "bundle": v.bundle, "options": v.options},
                                sort_keys=True))
    if wrong:
        raise SystemExit("\n".join(wrong))
    return lines, index, cards


def valid_rule(v: Vector) -> str:
    """The rule a VALID vector shows holding: the customer input it exercises, else the whole chain (K3)."""
    o = v.options
    if o.get("dataset"):
        return "G1"
    if o.get("log_key") or o.get("trusted_witnesses"):
        return "L1"
    if o.get("pinned_digest") or o.get("accept_card_update"):
        return "P1"
    if o.get("trusted_auditors"):
        return "U3"
    if o.get("trusted_contributors"):
        return "U4"
    if o.get("delta") is not None:
        return "U5"
    if o.get("require_lens"):
        return "U1"
    if o.get("record"):
        return "U2"
    return "K3"


if __name__ == "__main__":
    main()
