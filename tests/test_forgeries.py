"""What a dishonest bank can build, and the customer's side refusing each of it.

The bank controls the card, the keys, the bundles and the service. Each test
here builds a forgery the way such a bank would (its own keys, its own card,
fields outside the proof's signals, other spellings of the same numbers) from
the genuine artefacts of a committed German Credit (4,2) model, shows where
the forgery is real (the bare pairing equation holds for it), and checks that
it is refused in file mode (`fairproof-verify BUNDLE --card CARD`), in service
mode (`fairproof-verify --url`, with a pinned card) and through the Python API,
with the documented exit status (1 invalid, 2 unusable) and a one-line reason.
"""
from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest

from bank_fixtures import FakeService, forged, run_cli
from circuits.backends import get_backend
from circuits.errors import MalformedArtifact
from circuits.field import Q, R
from circuits.groth16 import Proof, VerifyingKey, check_proof, proof_to_bytes, prove, r1cs_digest, setup, vk_digest
from circuits.groth16.verify import check_verifying_key
from circuits.relation import R1CS, Constraint
from circuits.snarkjs.json_formats import proof_to_json, verifying_key_from_json, verifying_key_to_json
from commitments.bundle import CertificateBundle, FlipSlice, Radius, SnarkjsProof
from commitments.canonical import NonCanonical
from commitments.card import ModelCard, VerifyingKeyJson
from commitments.claims import ClaimError, claims_from_signals, signals_for
from verifier_client.cli import main as verify_main
from verifier_client.pins import PinMismatch, PinStore
from verifier_client.verify import verify_bundle

# -- helpers ---------------------------------------------------------------------------------------


def _cli_files(tmp_path: Path, capsys, bundle_text: str, card_text: str, *extra: str) -> tuple[int, str]:
    b, c = tmp_path / "bundle.json", tmp_path / "card.json"
    b.write_text(bundle_text)
    c.write_text(card_text)
    code = verify_main([str(b), "--card", str(c), "--pin-file", str(tmp_path / "pins.json"), *extra])
    err = capsys.readouterr().err
    return code, err


def _one_line(err: str) -> str:
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


def _edited(model, edit) -> str:
    """The JSON of `model` after `edit(dict)`: a document no honest code would write."""
    data = json.loads(model.model_dump_json())
    edit(data)
    return json.dumps(data)


def _raw_pairing_holds(vk: VerifyingKey, public: list[int], proof: Proof, backend) -> bool:
    """The Groth16 equation alone, with none of the key checks: what a naive verifier would accept."""
    def neg(p):
        return None if p is None else (p[0], (Q - p[1]) % Q)
    ic = [p for p in vk.ic]
    acc = ic[0]
    for x, p in zip(public, ic[1:]):
        if p is not None:
            acc = backend.g1_add(acc, backend.g1_mul(p, x))
    return backend.pairing_product_is_one([(proof.a, proof.b), (neg(vk.alpha_g1), vk.beta_g2),
                                           (neg(acc), vk.gamma_g2), (neg(proof.c), vk.delta_g2)])


def _card_with_key(card: ModelCard, bucket_name: str, vk: VerifyingKey, **bucket_fields) -> ModelCard:
    """The bank's own card: the genuine one with `bucket_name`'s key replaced (or a bucket added)."""
    template = card.circuits[0]
    bucket = template.model_copy(update={
        "bucket": bucket_name,
        "verifying_key": VerifyingKeyJson.model_validate(verifying_key_to_json(vk)),
        "verifying_key_digest": vk_digest(vk), **bucket_fields})
    others = tuple(b for b in card.circuits if b.bucket != bucket_name)
    return card.model_copy(update={"circuits": (*others, bucket)})


def _forged_claim(bank, card: ModelCard, bucket: str, proof: Proof | None) -> CertificateBundle:
    """Decision flipped and a large radius, every readable field matching the forged signals
    (with `proof` None, the genuine proof stays: a draft to read the forged signals from)."""
    genuine = bank.bundles[0]
    other = 1 - genuine.decision
    cap = card.bucket(bucket).shape.eps_cap
    eps = min(cap, round(15.26 * (1 << card.eps_scale_bits)))
    bundle = forged(genuine, decision=other, decision_label=card.architecture.class_labels[other],
                    eps=Radius(numerator=eps, scale_bits=card.eps_scale_bits, capped=eps == cap), bucket=bucket)
    if proof is None:
        return bundle.model_copy(update={"card_digest": card.digest()})
    return bundle.model_copy(update={"card_digest": card.digest(),
                                     "proof": SnarkjsProof.model_validate(proof_to_json(proof)),
                                     "proof_hex": proof_to_bytes(proof).hex()})


def _public(bundle: CertificateBundle) -> list[int]:
    return [int(s) for s in bundle.public_signals]


def _pin_genuine(bank, tmp_path) -> None:
    """The customer's first, honest decision: the genuine card is pinned."""
    assert run_cli(FakeService(bank.card, bank.bundles[0]), bank.records[0], tmp_path) == 0


# -- 1. modular wrap: every numeric field and signal ----------------------------------------------------

WRAPS = {
    "decision": (1, lambda d: d.__setitem__("decision", d["decision"] + R)),
    "eps.numerator": (2, lambda d: d["eps"].__setitem__("numerator", d["eps"]["numerator"] + R)),
    "flip index": (4, lambda d: d.__setitem__("flip_slice", {"index": R, "values": [0], "labels": ["x"]})),
    "query[0]": (5, lambda d: d["query"].__setitem__(0, d["query"][0] + R)),
}


@pytest.mark.parametrize("field", list(WRAPS))
def test_a_field_and_its_signal_wrapped_by_r_are_refused(bank, tmp_path, capsys, field):
    index, edit_field = WRAPS[field]

    def edit(d):
        edit_field(d)
        d["public_signals"][index] = str(int(d["public_signals"][index]) + R)

    text = _edited(bank.bundles[0], edit)
    code, err = _cli_files(tmp_path, capsys, text, bank.card.canonical_json())
    assert code == 2 and "bundle" in _one_line(err)
    # Service mode: the service answers the wrapped bundle.
    service = FakeService(bank.card, bank.bundles[0], overrides={
        ("GET", f"/v1/certificates/{bank.bundles[0].certificate_id}"): httpx.Response(200, text=text)})
    assert run_cli(service, bank.records[0], tmp_path) == 2
    assert "malformed" in capsys.readouterr().err
    # Python API: a bundle object built around validation still cannot carry it.
    data = json.loads(text)
    sneaky = bank.bundles[0].model_copy(update={"public_signals": tuple(data["public_signals"])})
    verdict = verify_bundle(sneaky, bank.card)
    assert not verdict and "not below the field modulus" in verdict.reasons[0]


def test_a_wrapped_field_with_honest_signals_is_refused(bank, capsys, tmp_path):
    eps = bank.bundles[0].eps
    sneaky = bank.bundles[0].model_copy(update={"eps": Radius.model_construct(
        numerator=eps.numerator + R, scale_bits=eps.scale_bits, capped=False)})
    verdict = verify_bundle(sneaky, bank.card)
    assert not verdict and "eps.numerator" in verdict.reasons[0]
    with pytest.raises(NonCanonical, match="eps.numerator"):
        CertificateBundle.from_json(_edited(bank.bundles[0], lambda d: d["eps"].__setitem__("numerator",
                                                                                            eps.numerator + R)))


def test_signals_are_derived_exactly_and_a_wrapped_query_value_is_out_of_the_box(bank):
    bundle, card = bank.bundles[0], bank.card
    bucket = card.bucket(bundle.bucket)
    claims = claims_from_signals(bundle.public_signals, card, bucket)
    assert claims.query == bundle.query and claims.decision == bundle.decision
    signals = list(bundle.public_signals)
    signals[5] = str((bundle.query[0] + (1 << 200)) % R)  # a wrapped-looking value far outside the box
    with pytest.raises(ClaimError, match="outside the model's input domain box"):
        claims_from_signals(signals, card, bucket)
    signals = list(bundle.public_signals)
    signals[2] = str(bucket.shape.eps_cap + 1)
    with pytest.raises(ClaimError, match="exceeds the cap"):
        claims_from_signals(signals, card, bucket)


# -- 2. flags and labels not derived from the signals ------------------------------------------------------

LIES = {
    "eps.capped": lambda b, card: b.model_copy(update={"eps": b.eps.model_copy(update={"capped": True})}),
    "decision_label": lambda b, card: b.model_copy(update={"decision_label": card.architecture.class_labels[1 - b.decision]}),
    "status": lambda b, card: b.model_copy(update={"status": "counterfactual_flip"}),
    "flip_slice": lambda b, card: b.model_copy(update={"flip_slice": FlipSlice(index=0, values=(0,), labels=("x",))}),
    "bucket": lambda b, card: b.model_copy(update={"bucket": "k1-f1"}),
}


@pytest.mark.parametrize("lie", list(LIES))
def test_a_field_outside_the_signals_is_refused(bank, tmp_path, capsys, lie):
    bad = LIES[lie](bank.bundles[0], bank.card)
    verdict = verify_bundle(bad, bank.card)
    assert not verdict and (lie in verdict.reasons[0] or "no circuit bucket" in verdict.reasons[0])
    code, err = _cli_files(tmp_path, capsys, bad.model_dump_json(), bank.card.canonical_json())
    assert code == 1 and "INVALID" in _one_line(err)
    assert run_cli(FakeService(bank.card, bad), bank.records[0], tmp_path) == 1
    assert "INVALID" in capsys.readouterr().err


def test_flip_labels_come_from_the_card(bank):
    """A flip's slice values and labels are the card's for the proved index, never the bundle's."""
    bundle, card = bank.bundles[0], bank.card
    bucket = card.bucket(bundle.bucket)
    signals = list(bundle.public_signals)
    signals[2], signals[3], signals[4] = "0", "1", "1"
    claims = claims_from_signals(signals, card, bucket)
    sensitive = card.sensitive[0]
    assert claims.flip.values == (sensitive.values[1],) and claims.flip.labels == (sensitive.labels[1],)
    liar = forged(bundle, status="counterfactual_flip", eps=Radius(numerator=0, scale_bits=card.eps_scale_bits),
                  flip_slice={"index": 1, "values": (sensitive.values[1],), "labels": ("a label the bank chose",)})
    verdict = verify_bundle(liar, card)
    assert not verdict and "flip_slice" in verdict.reasons[0]
    honest_labels = forged(liar, flip_slice=claims.flip)  # right labels, but no proof of that statement
    verdict = verify_bundle(honest_labels, card)
    assert not verdict and "proof rejected" in verdict.reasons[0]
    signals[4] = str(len(card.slices()))
    with pytest.raises(ClaimError, match="not one of the"):
        claims_from_signals(signals, card, bucket)


# -- 3. verifying keys the bank made ------------------------------------------------------------------------


def _delta_is_gamma_forgery(bank):
    backend = get_backend()
    bucket = bank.card.circuits[0]
    vk = verifying_key_from_json(bucket.verifying_key.model_dump(mode="json"))
    bad_vk = VerifyingKey(alpha_g1=vk.alpha_g1, beta_g2=vk.beta_g2, gamma_g2=vk.gamma_g2, delta_g2=vk.gamma_g2,
                          ic=vk.ic)
    card = _card_with_key(bank.card, bucket.bucket, bad_vk)
    draft = _forged_claim(bank, card, bucket.bucket, None)
    public = _public(draft)
    ic_x = vk.ic[0]
    for x, p in zip(public, vk.ic[1:]):
        ic_x = backend.g1_add(ic_x, backend.g1_mul(p, x))
    proof = Proof(a=vk.alpha_g1, b=vk.beta_g2, c=(ic_x[0], (Q - ic_x[1]) % Q))  # C cancels IC(x) through gamma
    return card, bad_vk, _forged_claim(bank, card, bucket.bucket, proof), proof


def test_a_key_with_delta_equal_to_gamma_is_refused(bank, tmp_path, capsys):
    card, bad_vk, bundle, proof = _delta_is_gamma_forgery(bank)
    assert _raw_pairing_holds(bad_vk, _public(bundle), proof, get_backend())  # the forgery is real
    with pytest.raises(MalformedArtifact, match="delta equals"):
        check_verifying_key(bad_vk, get_backend())
    # API and file mode with the bank's own card: the key is refused.
    verdict = verify_bundle(bundle, card)
    assert not verdict and "degenerate" in verdict.reasons[0]
    code, err = _cli_files(tmp_path, capsys, bundle.model_dump_json(), card.canonical_json())
    assert code == 1 and "degenerate" in _one_line(err)
    # File mode with the genuine card: another card.
    code, err = _cli_files(tmp_path, capsys, bundle.model_dump_json(), bank.card.canonical_json())
    assert code == 1 and "another model card" in _one_line(err)
    # Service mode after the genuine card was pinned: the changed card is refused, and a customer who accepts
    # card updates accepts added buckets only, never a bucket's key changed.
    _pin_genuine(bank, tmp_path)
    service = FakeService(card, bundle)
    assert run_cli(service, bank.records[0], tmp_path) == 1
    assert "card changed" in capsys.readouterr().err
    assert run_cli(FakeService(card, bundle), bank.records[0], tmp_path, "--accept-card-update") == 1
    assert "accepts only added circuit buckets" in capsys.readouterr().err


def test_keys_with_points_at_infinity_are_refused(bank, tmp_path, capsys):
    backend = get_backend()
    bucket = bank.card.circuits[0]
    vk = verifying_key_from_json(bucket.verifying_key.model_dump(mode="json"))
    # alpha = gamma = infinity: the public inputs drop out and e(A, B) = e(C, delta) is all that is left.
    bad_vk = VerifyingKey(alpha_g1=None, beta_g2=vk.beta_g2, gamma_g2=None, delta_g2=vk.delta_g2, ic=vk.ic)
    g1 = backend.g1_generator()
    proof = Proof(a=g1, b=vk.delta_g2, c=g1)
    assert _raw_pairing_holds(bad_vk, [5] * vk.n_public, proof, backend)
    with pytest.raises(MalformedArtifact, match="infinity"):
        check_verifying_key(bad_vk, backend)
    for ic_hole in range(len(vk.ic)):
        holed = VerifyingKey(vk.alpha_g1, vk.beta_g2, vk.gamma_g2, vk.delta_g2,
                             tuple(None if i == ic_hole else p for i, p in enumerate(vk.ic)))
        with pytest.raises(MalformedArtifact, match=f"ic\\[{ic_hole}\\]"):
            check_verifying_key(holed, backend)
    # A card cannot even write such a key: infinity is [0, 1, 0], and a card's points have z = 1.
    text = _edited(bank.card, lambda d: d["circuits"][0]["verifying_key"].__setitem__("vk_alpha_1", ["0", "1", "0"]))
    code, err = _cli_files(tmp_path, capsys, bank.bundles[0].model_dump_json(), text)
    assert code == 2 and "vk_alpha_1" in _one_line(err)
    with pytest.raises(NonCanonical):
        ModelCard.from_json(text)


def _trivial_circuit_key(n_public: int):
    """An honest Groth16 key for a circuit that constrains nothing about its public inputs."""
    one_private = n_public + 1
    r1cs = R1CS(n_wires=n_public + 2, n_public=n_public,
                constraints=(Constraint(a=((one_private, 1),), b=((one_private, 1),), c=((one_private, 1),)),))
    pk, vk = setup(r1cs, get_backend())
    return r1cs, pk, vk


def test_an_honest_key_for_a_trivial_circuit_added_after_pinning_is_refused(bank, tmp_path, capsys):
    backend = get_backend()
    n_public = bank.card.circuits[0].n_public
    r1cs, pk, vk = _trivial_circuit_key(n_public)
    shape = bank.card.circuits[0].shape.model_copy(update={"region_slots": 1, "farkas_slots": 1})
    card = _card_with_key(bank.card, "k1-f1", vk, shape=shape, r1cs_digest=r1cs_digest(r1cs))
    draft = _forged_claim(bank, card, "k1-f1", None)
    public = _public(draft)
    proof = prove(pk, r1cs, [1, *public, 1], backend)
    bundle = _forged_claim(bank, card, "k1-f1", proof)
    assert check_proof(vk, public, proof, backend).ok  # a real, non-degenerate key accepts the forgery
    # File mode with the genuine card, and through the API: no such bucket on the card the customer holds.
    code, err = _cli_files(tmp_path, capsys, bundle.model_dump_json(), bank.card.canonical_json())
    assert code == 1 and "another model card" in _one_line(err)
    assert not verify_bundle(bundle, bank.card)
    # Service mode: the genuine card is pinned; a card with an extra bucket is another card.
    _pin_genuine(bank, tmp_path)
    assert run_cli(FakeService(card, bundle), bank.records[0], tmp_path) == 1
    assert "card changed" in capsys.readouterr().err
    with pytest.raises(PinMismatch):
        PinStore(tmp_path / "pins.json").check("http://bank.test", card)
    # A customer who requires a trusted contributor refuses keys the bank set up alone.
    trusted = "ab" * 64
    assert run_cli(FakeService(card, bundle), bank.records[0], tmp_path, "--accept-card-update",
                   "--trust-contributor", trusted) == 1
    assert "set up by the bank alone" in capsys.readouterr().err
    code, err = _cli_files(tmp_path, capsys, bundle.model_dump_json(), card.canonical_json(),
                           "--trust-contributor", trusted)
    assert code == 1 and "bank alone" in _one_line(err)


def test_a_key_swapped_under_a_bucket_keeps_no_digest(bank):
    """Changing a bucket's key changes the card digest, so a bundle cannot name the pinned card with it."""
    _, pk, vk = _trivial_circuit_key(bank.card.circuits[0].n_public)
    swapped = _card_with_key(bank.card, bank.card.circuits[0].bucket, vk)
    assert swapped.digest() != bank.card.digest()
    lying = swapped.model_copy(update={"circuits": tuple(
        b.model_copy(update={"verifying_key_digest": bank.card.circuits[0].verifying_key_digest})
        for b in swapped.circuits)})
    verdict = verify_bundle(bank.bundles[0].model_copy(update={"card_digest": lying.digest()}), lying)
    assert not verdict and "does not match its digest" in verdict.reasons[0]


# -- 4. the wrong customer in file mode --------------------------------------------------------------------------


def test_file_mode_binds_the_customer(bank, tmp_path, capsys):
    record = tmp_path / "customer0.json"
    record.write_text(json.dumps(bank.records[0]))
    code, err = _cli_files(tmp_path, capsys, bank.bundles[1].model_dump_json(), bank.card.canonical_json(),
                           "--record", str(record))
    assert code == 1 and "another customer's record" in _one_line(err)
    code, _ = _cli_files(tmp_path, capsys, bank.bundles[0].model_dump_json(), bank.card.canonical_json(),
                         "--record", str(record))
    assert code == 0
    # Without --record the covered query is printed, feature by feature, in the customer's units.
    b, c = tmp_path / "b.json", tmp_path / "c.json"
    b.write_text(bank.bundles[1].model_dump_json())
    c.write_text(bank.card.canonical_json())
    assert verify_main([str(b), "--card", str(c), "--pin-file", str(tmp_path / "pins.json")]) == 0
    out = capsys.readouterr().out
    for name, value in bank.records[1].items():
        if isinstance(value, str):  # categories are printed exactly
            assert f"  {name} = {value}" in out
    assert "duration = " in out


# -- 5. other spellings of the same document ------------------------------------------------------------------------

SPELLINGS = {
    "arabic-indic digit": lambda d: d["public_signals"].__setitem__(3, "\u0660"),
    "leading zero": lambda d: d["public_signals"].__setitem__(3, "00"),
    "whitespace": lambda d: d["public_signals"].__setitem__(3, " 0"),
    "string for int": lambda d: d.__setitem__("decision", str(d["decision"])),
    "float for int": lambda d: d.__setitem__("decision", float(d["decision"])),
    "bool for int": lambda d: d.__setitem__("decision", bool(d["decision"])),
    "jacobian z": lambda d: d["proof"].__setitem__("pi_a", [d["proof"]["pi_a"][0], d["proof"]["pi_a"][1], "2"]),
    "upper-case hex": lambda d: d.__setitem__("proof_hex", d["proof_hex"].upper()),
    "extra field": lambda d: d.__setitem__("note", "trust me"),
}


@pytest.mark.parametrize("spelling", list(SPELLINGS))
def test_non_canonical_bundles_are_unusable(bank, tmp_path, capsys, spelling):
    text = _edited(bank.bundles[0], SPELLINGS[spelling])
    code, err = _cli_files(tmp_path, capsys, text, bank.card.canonical_json())
    assert code == 2 and "malformed" in _one_line(err)
    with pytest.raises(NonCanonical):
        CertificateBundle.from_json(text)
    service = FakeService(bank.card, bank.bundles[0], overrides={
        ("GET", f"/v1/certificates/{bank.bundles[0].certificate_id}"): httpx.Response(200, text=text)})
    assert run_cli(service, bank.records[0], tmp_path) == 2
    assert "malformed" in capsys.readouterr().err


def test_duplicate_keys_are_unusable(bank, tmp_path, capsys):
    genuine = bank.bundles[0].model_dump_json()
    text = genuine[:-1] + f', "decision": {1 - bank.bundles[0].decision}}}'
    code, err = _cli_files(tmp_path, capsys, text, bank.card.canonical_json())
    assert code == 2 and "duplicate key 'decision'" in _one_line(err)
    card_text = bank.card.canonical_json()
    code, err = _cli_files(tmp_path, capsys, genuine, card_text[:-1] + ', "model_id": "other"}')
    assert code == 2 and "duplicate key" in _one_line(err)


@pytest.mark.parametrize("commitment", ["\u00b2", "9" * 5000, "0" + "1", "-1", str(R)])
def test_malformed_card_commitments_are_unusable(bank, tmp_path, capsys, commitment):
    text = _edited(bank.card, lambda d: d.__setitem__("commitment", commitment))
    code, err = _cli_files(tmp_path, capsys, bank.bundles[0].model_dump_json(), text)
    assert code == 2 and "commitment" in _one_line(err)
    service = FakeService(bank.card, bank.bundles[0], overrides={
        ("GET", "/v1/models/german-4x2-fair/card"): httpx.Response(200, text=text)})
    assert run_cli(service, bank.records[0], tmp_path) == 2
    assert "malformed" in capsys.readouterr().err


@pytest.mark.parametrize("number", ["\u00b2", "9" * 5000, " 7", "07"])
def test_groth16_verify_refuses_non_canonical_public_json(tmp_path, capsys, number):
    from prover_service.cli import main as fairproof

    backend = get_backend()
    r1cs, pk, vk = _trivial_circuit_key(1)
    proof = prove(pk, r1cs, [1, 7, 1], backend)
    (tmp_path / "vk.json").write_text(json.dumps(verifying_key_to_json(vk)))
    (tmp_path / "proof.json").write_text(json.dumps(proof_to_json(proof)))
    (tmp_path / "public.json").write_text(json.dumps(["7"]))
    args = ["groth16", "verify", str(tmp_path / "vk.json"), str(tmp_path / "proof.json"), str(tmp_path / "public.json")]
    assert fairproof(args) == 0
    capsys.readouterr()
    (tmp_path / "public.json").write_text(f'["{number}"]')
    assert fairproof(args) != 0
    assert "public" in _one_line(capsys.readouterr().err)


# -- 6. exporting for snarkjs ------------------------------------------------------------------------------------------


def test_export_snarkjs_refuses_a_bundle_whose_fields_contradict_its_signals(bank, tmp_path, capsys):
    from prover_service.cli import main as fairproof

    card = tmp_path / "card.json"
    card.write_text(bank.card.canonical_json())
    for name, bundle in (("genuine", bank.bundles[0]),
                         ("liar", LIES["eps.capped"](bank.bundles[0], bank.card))):
        path = tmp_path / f"{name}.json"
        path.write_text(bundle.model_dump_json())
        code = fairproof(["export-snarkjs", str(path), str(tmp_path / name), "--card", str(card)])
        err = capsys.readouterr().err
        if name == "genuine":
            assert code == 0 and (tmp_path / name / "public.json").is_file()
        else:
            assert code != 0 and "eps.capped" in _one_line(err) and not (tmp_path / name).exists()
    card_bad, _, bundle_bad, _ = _delta_is_gamma_forgery(bank)
    card.write_text(card_bad.canonical_json())
    (tmp_path / "bad.json").write_text(bundle_bad.model_dump_json())
    assert fairproof(["export-snarkjs", str(tmp_path / "bad.json"), str(tmp_path / "bad"), "--card", str(card)]) != 0
    assert "degenerate" in _one_line(capsys.readouterr().err)


def test_the_honest_bundle_round_trips_through_the_strict_parsers(bank):
    """The rejection twins above are meaningful only if honest documents pass the same parsers."""
    for bundle in bank.bundles:
        again = CertificateBundle.from_json(bundle.model_dump_json())
        assert again == bundle and signals_for(again, int(bank.card.commitment)) == bundle.public_signals
        assert verify_bundle(again, ModelCard.from_json(bank.card.canonical_json()))
