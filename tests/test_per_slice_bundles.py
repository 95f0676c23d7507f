"""Exact certificates proved slice by slice, through the bank's prover and the customer's verifier.

The bank's German Credit (4,2) model (two slices) is copied and proved by an
exact-radius prover with per-slice proofs: the bundle carries slice 0's proof
and a part for slice 1, each under a `-exact-slice` bucket of the card. The
customer accepts it only with every slice proved; the bank, as the adversary,
tries to drop a slice, repeat one, pass one slice's proof off as another's,
borrow another customer's part, mix in a whole-statement bucket, or publish a
card of its own whose per-slice bucket claims another radius or cap.
"""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from bank_fixtures import copy_of_bank_model
from commitments.bundle import CertificateBundle
from commitments.card import BucketShape, ModelCard
from commitments.claims import ClaimError, bundle_claims
from verifier_client.verify import verify_bundle


@pytest.fixture(scope="module")
def sliced(bank, tmp_path_factory):
    from circuits.backends import get_backend
    from fairness.certificate import EXACT
    from offline_precompute.certify import certify as certify_plaintext
    from offline_precompute.certify import query_from_record
    from prover_service.bucket_keys import SinglePartyKeySetup
    from prover_service.proving import Prover

    root, workspace, db = copy_of_bank_model(bank, tmp_path_factory, "per-slice-bank")
    prover = Prover(workspace, db, get_backend(), key_setup=SinglePartyKeySetup(), radius=EXACT, per_slice=True)
    queries = [query_from_record(workspace.artifact, prover.model, r) for r in bank.records]
    proved = [prover.prove(q) for q in queries]
    plaintext = certify_plaintext(db, prover.model, queries[0], eps_bits=prover.card.eps_scale_bits,
                                  radius=EXACT).certificate
    card = ModelCard.from_json(workspace.card_path.read_bytes())
    yield {"prover": prover, "bundles": [p.bundle for p in proved], "plaintext": plaintext, "card": card,
           "queries": queries, "root": root}
    db.dispose()


def _refused(bundle: CertificateBundle, card: ModelCard, fragment: str) -> None:
    verdict = verify_bundle(bundle, card)
    assert not verdict.valid and fragment in verdict.reasons[0], verdict.reasons


def _with_part(bundle: CertificateBundle, **changes) -> CertificateBundle:
    return bundle.model_copy(update={"parts": (bundle.parts[0].model_copy(update=changes),)})


def test_an_honest_per_slice_bundle_verifies_with_every_slice(sliced):
    card, bundle = sliced["card"], sliced["bundles"][0]
    assert bundle.bucket.endswith("-exact-slice") and [p.slice_index for p in bundle.parts] == [1]
    assert bundle.public_signals[-1] == "0"
    verdict = verify_bundle(bundle, card, query=sliced["queries"][0])
    assert verdict.valid, verdict.reasons
    claims = verdict.claims
    assert claims.radius == "exact" and claims.part_buckets == (bundle.parts[0].bucket,)
    assert claims.eps_numerator == sliced["plaintext"].eps  # the plaintext exact radius
    for name in (bundle.bucket, bundle.parts[0].bucket):
        shape = card.bucket(name).shape
        assert shape.per_slice and shape.radius == "exact"
        assert card.bucket(name).n_public == (5 + card.architecture.n_inputs + card.n_spread_signals
                                              + card.n_persistence_signals + 1)
    # the bundle round-trips through its JSON, parts included; a whole bundle's JSON has no parts key
    assert CertificateBundle.from_json(bundle.model_dump_json()) == bundle
    assert "parts" not in CertificateBundle.model_validate(
        {**bundle.model_dump(), "parts": ()}).model_dump_json()


def test_a_bundle_without_the_part_of_a_slice_is_refused(sliced):
    bundle = sliced["bundles"][0]
    _refused(bundle.model_copy(update={"parts": ()}), sliced["card"], "one proof per slice")


def test_a_repeated_or_misnumbered_slice_is_refused(sliced):
    bundle = sliced["bundles"][0]
    part = bundle.parts[0]
    _refused(bundle.model_copy(update={"parts": (part, part)}), sliced["card"], "one proof per slice")
    _refused(_with_part(bundle, slice_index=2), sliced["card"], "one proof per slice")


def test_slice_zeros_proof_passed_off_as_slice_ones_does_not_verify(sliced):
    bundle = sliced["bundles"][0]
    forged = _with_part(bundle, bucket=bundle.bucket, proof=bundle.proof, proof_hex=bundle.proof_hex)
    _refused(forged, sliced["card"], "proof rejected (slice 1)")


def test_another_customers_part_does_not_verify(sliced):
    mine, theirs = sliced["bundles"]
    forged = mine.model_copy(update={"parts": theirs.parts})
    assert bundle_claims(forged, sliced["card"])  # nothing readable gives it away
    _refused(forged, sliced["card"], "proof rejected (slice 1)")


def test_the_bundles_own_proof_must_stand_for_slice_zero(sliced):
    bundle = sliced["bundles"][0]
    forged = bundle.model_copy(update={"public_signals": (*bundle.public_signals[:-1], "1")})
    _refused(forged, sliced["card"], "stands for slice 0")


def test_a_part_under_a_whole_statement_bucket_is_refused(sliced):
    bundle, card = sliced["bundles"][0], sliced["card"]
    whole = next(b.bucket for b in card.circuits if not b.shape.per_slice)
    _refused(_with_part(bundle, bucket=whole), card, "not per-slice")
    _refused(_with_part(bundle, bucket="k4-f4-exact-slice-missing"), card, "no circuit bucket")


def test_a_whole_statement_bundle_with_parts_is_refused(sliced, bank):
    whole = bank.bundles[0]
    card = bank.card
    assert verify_bundle(whole, card).valid
    forged = whole.model_copy(update={"parts": sliced["bundles"][0].parts})
    _refused(forged, card, "no slice parts")


def test_the_banks_own_card_cannot_make_a_fast_bucket_per_slice(sliced):
    shape = sliced["card"].bucket(sliced["bundles"][0].bucket).shape
    with pytest.raises(ValueError, match="exact radius only"):
        BucketShape.model_validate({**shape.model_dump(), "radius": "fast"})


def test_the_banks_own_card_with_a_part_bucket_of_another_cap_is_refused(sliced):
    """The bank re-issues the bundle under a card of its own whose part bucket states a larger cap:
    slice 1 would then be "proved" against another statement than slice 0."""
    card, bundle = sliced["card"], sliced["bundles"][0]
    part_bucket = card.bucket(bundle.parts[0].bucket)
    k = part_bucket.shape.region_slots * 2
    other = part_bucket.model_copy(update={
        "bucket": f"k{k}-f{part_bucket.shape.farkas_slots}-exact-slice",
        "shape": part_bucket.shape.model_copy(update={"region_slots": k, "eps_cap": part_bucket.shape.eps_cap + 1})})
    own = card.model_copy(update={"circuits": (*card.circuits, other)})
    reissued = _with_part(bundle, bucket=other.bucket).model_copy(update={"card_digest": own.digest()})
    with pytest.raises(ClaimError, match="cap or radius"):
        bundle_claims(reissued, own)


def test_a_customer_requiring_a_contributor_refuses_every_single_party_part(sliced):
    verdict = verify_bundle(sliced["bundles"][0], sliced["card"], trusted_contributors=["ab" * 32])
    assert not verdict.valid and "set up by the bank alone" in verdict.reasons[0]


def test_a_per_slice_prover_needs_the_exact_radius(sliced):
    import dataclasses

    from fairness.errors import ModelError

    with pytest.raises(ModelError, match="exact radius"):
        dataclasses.replace(sliced["prover"], radius="fast")


@pytest.mark.snarkjs
def test_export_writes_one_snarkjs_proof_per_slice_and_snarkjs_checks_each(sliced, tmp_path, capsys):
    import json
    import os
    import subprocess

    from prover_service.cli import main as fairproof

    bundle_path, card_path = tmp_path / "bundle.json", tmp_path / "card.json"
    bundle_path.write_text(sliced["bundles"][0].model_dump_json())
    card_path.write_text(sliced["card"].canonical_json())
    assert fairproof(["export-snarkjs", str(bundle_path), str(tmp_path / "out"), "--card", str(card_path)]) == 0
    said = capsys.readouterr().out
    assert "one proof per slice" in said and said.count("verify with:") == 2
    for i in (0, 1):
        assert json.loads((tmp_path / "out" / f"slice-{i}" / "public.json").read_text())[-1] == str(i)
    snarkjs = str(Path(__file__).resolve().parents[1] / "node_modules" / ".bin" / "snarkjs")
    if not os.path.exists(snarkjs):
        pytest.skip("snarkjs is not installed here (required in CI: FAIRPROOF_REQUIRE_PEERS)")
    for i in (0, 1):
        d = tmp_path / "out" / f"slice-{i}"
        run = subprocess.run([snarkjs, "groth16", "verify", str(d / "verification_key.json"), str(d / "public.json"),
                              str(d / "proof.json")], capture_output=True, text=True, timeout=120)
        assert run.returncode == 0 and "OK" in run.stdout, run.stdout + run.stderr
    # slice 1's proof under slice 0's signals: snarkjs refuses it too
    d0, d1 = tmp_path / "out" / "slice-0", tmp_path / "out" / "slice-1"
    run = subprocess.run([snarkjs, "groth16", "verify", str(d1 / "verification_key.json"), str(d0 / "public.json"),
                          str(d1 / "proof.json")], capture_output=True, text=True, timeout=120)
    assert run.returncode != 0 or "OK" not in run.stdout


def test_file_mode_prints_the_setup_of_every_slices_bucket(sliced, tmp_path, capsys):
    from verifier_client.cli import main as verify_main

    bundle, card = sliced["bundles"][0], sliced["card"]
    bundle_path, card_path = tmp_path / "bundle.json", tmp_path / "card.json"
    bundle_path.write_text(bundle.model_dump_json())
    card_path.write_text(card.canonical_json())
    assert verify_main([str(bundle_path), "--card", str(card_path)]) == 0
    out = capsys.readouterr().out
    assert "VALID certificate" in out and "exact" in out
    for name in {bundle.bucket, bundle.parts[0].bucket}:
        assert f"Keys of bucket {name}" in out
    bundle_path.write_text(bundle.model_copy(update={"parts": ()}).model_dump_json())
    assert verify_main([str(bundle_path), "--card", str(card_path)]) != 0
    assert "one proof per slice" in capsys.readouterr().err


def test_bucket_names_say_per_slice_and_ceremonies_read_them(sliced):
    from commitments.card import bucket_name
    from fairness.errors import ModelError
    from prover_service.bucket_keys import is_per_slice_bucket, parse_bucket

    shape = sliced["prover"].shape_for(8, 16, "exact", per_slice=True)
    assert shape.bucket == "k8-f16-exact-slice" == bucket_name(8, 16, "exact", per_slice=True)
    assert parse_bucket(shape.bucket) == (8, 16, "exact") and is_per_slice_bucket(shape.bucket)
    assert not is_per_slice_bucket("k8-f16-exact") and not is_per_slice_bucket("k8-f16")
    for bad in ("k8-f16-slice", "k8-f16-slice-exact", "k8-f16-exact-slices"):
        with pytest.raises(ModelError, match="not a bucket name"):
            parse_bucket(bad)


def test_the_service_with_per_slice_proofs_issues_certificates_the_customer_verifies(sliced, bank, tmp_path, capsys):
    """`fairproof serve` with FAIRPROOF_RADIUS=exact and FAIRPROOF_PER_SLICE=true, keys set up ahead: the
    customer's `fairproof-verify --url` verifies every slice's proof and prints the plaintext exact eps."""
    import json

    from bank_fixtures import MODEL
    from commitments.bundle import radius_decimal
    from tests.service_fixtures import running, serve
    from verifier_client.cli import main as verify_main

    models = tmp_path / "models"
    shutil.copytree(sliced["root"], models / "german-4x2-fair")
    service = serve(models, f"sqlite:///{tmp_path / 'service.sqlite'}", tmp_path / "serve.log",
                    FAIRPROOF_RADIUS="exact", FAIRPROOF_PER_SLICE="true", FAIRPROOF_SINGLE_PARTY_SETUP="false",
                    FAIRPROOF_LOG_KEY_FILE=str(tmp_path / "log-key" / "log.key"))
    record = tmp_path / "record.json"
    record.write_text(json.dumps(bank.records[0]))
    with running(service):
        code = verify_main(["--url", service.url, "--model", MODEL, "--record", str(record),
                            "--pin-file", str(tmp_path / "pins.json")])
        out, err = capsys.readouterr()
    assert code == 0, err + service.log_tail()
    plaintext = sliced["plaintext"]
    assert f"Radius: eps = {radius_decimal(plaintext.eps, plaintext.eps_bits)} (exact:" in out
    bundle = sliced["bundles"][0]
    for name in {bundle.bucket, bundle.parts[0].bucket}:
        assert f"Keys of bucket {name}" in out


def test_auditors_rebuild_each_per_slice_circuit_from_the_card_and_catch_a_relabelled_key(sliced):
    """`fairproof audit-keys` and ceremony contributors rebuild a bucket's circuit from its shape on the card:
    a per-slice shape rebuilds the per-slice statement, and a per-slice bucket carrying another statement's
    constraint system (the bank relabelling a key) no longer matches its digest."""
    from circuits.groth16 import r1cs_digest
    from prover_service.bucket_keys import shape_from_card
    from statement import statement_relation

    card = sliced["card"]
    sliced_buckets = [b for b in card.circuits if b.shape.per_slice]
    other = next(b for b in card.circuits if not b.shape.per_slice)
    assert sliced_buckets
    for b in sliced_buckets:
        shape = shape_from_card(card, b)
        assert shape.per_slice and shape.bucket == b.bucket
        assert r1cs_digest(statement_relation(shape)) == b.r1cs_digest
        relabelled = b.model_copy(update={"r1cs_digest": other.r1cs_digest})
        assert r1cs_digest(statement_relation(shape_from_card(card, relabelled))) != relabelled.r1cs_digest
