"""Keys the bank cannot have forged: a phase-2 ceremony for a real bucket, end to end.

A small committed German Credit model (20 -> 2 -> 2) needs one circuit bucket
for its first customer. Phase 1 is a prepared .ptau (a development file made
by our writer and accepted by `snarkjs powersoftau verify` in
tests/test_ptau_dev.py); the bank starts the ceremony, the bank and an auditor
contribute in separate processes, a third party contributes with snarkjs
itself, a beacon closes it; the bank installs it, proves a certificate, and:

- `fairproof-verify --trust-contributor AUDITOR` accepts; a customer who
  trusts only someone who did not take part refuses;
- `fairproof audit-keys` accepts the card, and refuses cards that lie about
  the contributors, the circuit or the key;
- `snarkjs zkey verify` accepts the bucket's key.

Every acceptance has its rejection twin, including a tampered contribution
that `ceremony verify`, `contribute` and `install` all refuse.
"""
from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from circuits.backends import get_backend
from circuits.snarkjs.node import find_snarkjs, missing_reason, run_snarkjs
from commitments.card import ModelCard
from prover_service.cli import main as fairproof
from verifier_client.cli import main as verify_main

REPO = Path(__file__).resolve().parents[1]
BEACON = "0102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f20"


def _cli(*args: str) -> subprocess.CompletedProcess:
    """`fairproof ARGS` in its own process, as a contributor on another machine would run it."""
    return subprocess.run([sys.executable, "-m", "prover_service.cli", *args], cwd=REPO, capture_output=True,
                          text=True, timeout=600)


@pytest.fixture(scope="module")
def bank(tmp_path_factory):
    """A committed small German model, precomputed, and the bucket its first customer needs."""
    from fairness.datasets import load_dataset
    from fairness.errors import DataError
    from fairness.model import FloatMLP, artifact_from_dataset, save_artifact
    from offline_precompute.certify import query_from_index
    from offline_precompute.db import open_database, resolve_store_url
    from offline_precompute.enumerate import precompute
    from prover_service.proving import Prover
    from prover_service.publishing import commit_model
    from prover_service.workspace import ModelWorkspace
    from statement.adapter import bucket_sizes

    try:
        german = load_dataset("german", sensitive=["foreign_worker"], seed=0)
    except DataError as exc:  # pragma: no cover - depends on the machine
        pytest.skip(f"German Credit dataset not available: {exc}")
    rng = np.random.default_rng(5)
    sizes = [german.n_features, 2, 2]
    ws = [rng.normal(0, 0.6, (sizes[i + 1], sizes[i])) for i in range(2)]
    bs = [rng.normal(0, 0.3, sizes[i + 1]) for i in range(2)]
    ws[0][:, german.sensitive[0].column] *= 4  # strongly group-dependent: some decisions flip (smallest circuit)
    root = tmp_path_factory.mktemp("ceremony-bank")
    save_artifact(artifact_from_dataset(FloatMLP(ws, bs), german), root / "model")
    workspace = ModelWorkspace.open(root / "model")
    commit_model(workspace, model_id="german-small")
    db = open_database(resolve_store_url(None, workspace.root))
    prover = Prover(workspace, db, get_backend())
    precompute(db, prover.model)
    # The customer with the smallest circuit among the first few keeps the ceremony quick.
    candidates = []
    for index in range(8):
        query = query_from_index(workspace.artifact, prover.model, index)
        k, f = bucket_sizes(prover.certify(query))
        candidates.append((k * f, index, query, f"k{k}-f{f}"))
    _, index, query, bucket = min(candidates)
    db.dispose()
    return {"root": root, "model": root / "model", "bucket": bucket, "query": query,
            "record": dict(german.records_test[index])}


@pytest.fixture(scope="module")
def ptau(bank, tmp_path_factory):
    from circuits.snarkjs.ptau_dev import write_dev_ptau
    from circuits.snarkjs.zkey_new import circuit_power
    from prover_service.bucket_keys import parse_bucket_name
    from prover_service.workspace import ModelWorkspace
    from statement import statement_relation
    from statement.adapter import statement_shape

    workspace = ModelWorkspace.open(bank["model"])
    k, f = parse_bucket_name(bank["bucket"])
    shape = statement_shape(workspace.fixed_point(), region_slots=k, farkas_slots=f,
                            eps_bits=workspace.card().eps_scale_bits)
    power = circuit_power(statement_relation(shape))
    path = tmp_path_factory.mktemp("phase1") / f"dev_{power}.ptau"
    write_dev_ptau(path, power, get_backend(), name="phase-1 test contributor")
    return path


@pytest.fixture(scope="module")
def ceremony(bank, ptau, tmp_path_factory):
    """init (bank), bank and auditor in separate processes, a snarkjs contribution, a beacon; installed."""
    directory = tmp_path_factory.mktemp("ceremony") / "c"
    assert fairproof(["ceremony", "init", "--model", str(bank["model"]), "--bucket", bank["bucket"],
                      "--ptau", str(ptau), "--out", str(directory)]) == 0
    hashes = {}
    for name in ("bank", "auditor"):
        done = _cli("ceremony", "contribute", str(directory), "--name", name, "--entropy", f"{name} dice")
        assert done.returncode == 0, done.stderr
        hashes[name] = done.stdout.strip().splitlines()[-1]
        assert len(hashes[name]) == 128
    if find_snarkjs() is not None:
        state = json.loads((directory / "ceremony.json").read_text())
        outside = directory.parent / "snarkjs_contribution.zkey"
        run_snarkjs(["zkey", "contribute", directory / state["keys"][-1], outside, "--name=consumer association",
                     "-e=their own dice"])
        assert fairproof(["ceremony", "add", str(directory), str(outside)]) == 0
    assert fairproof(["ceremony", "finalize", str(directory), "--beacon", BEACON, "--iterations", "10"]) == 0
    assert fairproof(["ceremony", "install", str(directory), "--model", str(bank["model"])]) == 0
    return {"dir": directory, "hashes": hashes}


@pytest.fixture(scope="module")
def proved(bank, ceremony):
    from offline_precompute.db import open_database, resolve_store_url
    from prover_service.proving import Prover
    from prover_service.workspace import ModelWorkspace

    workspace = ModelWorkspace.open(bank["model"])
    db = open_database(resolve_store_url(None, workspace.root))
    try:  # the default key setup refuses: the keys must be the installed ceremony's
        result = Prover(workspace, db, get_backend()).prove(bank["query"])
    finally:
        db.dispose()
    card_path, bundle_path = bank["root"] / "card.json", bank["root"] / "bundle.json"
    card_path.write_text(workspace.card().canonical_json())
    bundle_path.write_text(result.bundle.model_dump_json())
    return {"card": card_path, "bundle": bundle_path, "card_model": workspace.card()}


def _verify(proved, tmp_path, *extra: str) -> int:
    return verify_main([str(proved["bundle"]), "--card", str(proved["card"]),
                        "--pin-file", str(tmp_path / "pins.json"), *extra])


# -- the customer --------------------------------------------------------------------------------------------


def test_a_customer_who_trusts_the_auditor_accepts(bank, ceremony, proved, tmp_path, capsys):
    card = proved["card_model"]
    bucket = card.bucket(bank["bucket"])
    assert bucket.setup.method == "ceremony" and bucket.setup.phase1_power is not None
    names = [c.name for c in bucket.setup.contributions]
    assert names[:2] == ["bank", "auditor"] and bucket.setup.contributions[-1].kind == "beacon"
    assert _verify(proved, tmp_path, "--trust-contributor", ceremony["hashes"]["auditor"]) == 0
    out = capsys.readouterr().out
    assert "VALID certificate" in out and "auditor" in out
    # ... also through the pin file's list of trusted contributors.
    (tmp_path / "pins.json").write_text(json.dumps({"version": 1, "pins": [],
                                                    "trusted_contributors": [ceremony["hashes"]["auditor"]]}))
    assert _verify(proved, tmp_path) == 0
    # ... and bound to the customer's own record.
    record = tmp_path / "record.json"
    record.write_text(json.dumps(bank["record"]))
    assert _verify(proved, tmp_path, "--record", str(record)) == 0
    assert "about your record" in capsys.readouterr().out


def test_a_customer_who_trusts_someone_absent_refuses(ceremony, proved, tmp_path, capsys):
    stranger = "5" * 128
    assert _verify(proved, tmp_path, "--trust-contributor", stranger) == 1
    assert "none of your trusted contributors" in capsys.readouterr().err
    (tmp_path / "pins.json").write_text(json.dumps({"version": 1, "pins": [], "trusted_contributors": [stranger]}))
    assert _verify(proved, tmp_path) == 1


def _lie(card: ModelCard, bucket_name: str, edit) -> ModelCard:
    return card.model_copy(update={"circuits": tuple(edit(b) if b.bucket == bucket_name else b
                                                      for b in card.circuits)})


def _audit(bank, ptau, ceremony, card: ModelCard):
    """audit_bucket with the initial key `ceremony verify --ptau` shows is `zkey new` of the circuit and
    phase 1 (test_the_ceremony_verifies_against_the_phase1_file...): regenerated once, not per card."""
    from circuits.snarkjs.ceremony import file_sha256
    from circuits.snarkjs.ptau import read_ptau
    from prover_service.key_audit import audit_bucket, find_bucket_key

    initial = (ceremony["dir"] / "key_0000.zkey").read_bytes()
    zkey = find_bucket_key(bank["model"] / "keys", bank["bucket"]).read_bytes()
    return audit_bucket(card, card.bucket(bank["bucket"]), read_ptau(ptau), file_sha256(ptau), zkey, get_backend(),
                        initial=initial)


def test_a_card_that_names_the_auditor_without_them_is_caught_by_the_audit(bank, ptau, ceremony, proved):
    """The customer's check reads the card; the audit checks the card against the key's transcript."""
    card = proved["card_model"]
    assert _audit(bank, ptau, ceremony, card).ok

    def fake_auditor(b):
        fake = tuple(c.model_copy(update={"hash": "7" * 128}) if c.name == "auditor" else c
                     for c in b.setup.contributions)
        return b.model_copy(update={"setup": b.setup.model_copy(update={"contributions": fake})})

    result = _audit(bank, ptau, ceremony, _lie(card, bank["bucket"], fake_auditor))
    assert not result.ok and "contributor list is not the key's transcript" in result.reason


@pytest.mark.parametrize("lie", ["r1cs_digest", "circuit_hash", "transcript_digest", "phase1_digest", "shape",
                                 "verifying_key_digest"])
def test_audit_refuses_a_card_that_lies(bank, ptau, ceremony, proved, lie):
    def edit(b):
        if lie in ("r1cs_digest", "verifying_key_digest"):
            return b.model_copy(update={lie: "0" * 64})
        if lie == "shape":  # another circuit: the rebuilt statement differs from the key's
            return b.model_copy(update={"shape": b.shape.model_copy(update={"farkas_bits": b.shape.farkas_bits + 1})})
        return b.model_copy(update={"setup": b.setup.model_copy(update={lie: "0" * len(getattr(b.setup, lie))})})

    result = _audit(bank, ptau, ceremony, _lie(proved["card_model"], bank["bucket"], edit))
    assert not result.ok, lie


@pytest.mark.parametrize("lie", ["radius", "radius and circuit"])
def test_audit_refuses_a_fast_key_relabelled_as_exact(bank, ptau, ceremony, proved, lie):
    """A customer labels eps exact from the bucket's shape on the card. A card that relabels the fast
    bucket as exact (name and shape; with its R1CS digest and size made the exact statement's too) is
    a well-formed card, but its key is not the exact statement's: the audit refuses it."""
    from circuits.groth16 import r1cs_digest
    from circuits.snarkjs.ceremony import file_sha256
    from circuits.snarkjs.ptau import read_ptau
    from prover_service.bucket_keys import shape_from_card
    from prover_service.key_audit import audit_bucket, find_bucket_key
    from statement import statement_relation

    card = proved["card_model"]
    fast = card.bucket(bank["bucket"])
    relabelled = fast.model_copy(update={"bucket": fast.bucket + "-exact",
                                         "shape": fast.shape.model_copy(update={"radius": "exact"})})
    if lie == "radius and circuit":
        exact = statement_relation(shape_from_card(card, relabelled))
        relabelled = relabelled.model_copy(update={"r1cs_digest": r1cs_digest(exact),
                                                   "n_constraints": exact.n_constraints})
    lying = ModelCard.from_json(card.model_copy(update={"circuits": (relabelled,)}).canonical_json())  # parses
    assert lying.bucket(relabelled.bucket).shape.radius == "exact"
    zkey = find_bucket_key(bank["model"] / "keys", bank["bucket"]).read_bytes()
    result = audit_bucket(lying, lying.bucket(relabelled.bucket), read_ptau(ptau), file_sha256(ptau), zkey,
                          get_backend())
    assert not result.ok
    if lie == "radius":
        assert "R1CS digest is not the digest of the statement" in result.reason
    else:  # the exact circuit's initial key: another circuit hash (or more powers than the fast one's phase 1)
        assert "circuit hash" in result.reason or "too small" in result.reason, result.reason


# -- the auditor ---------------------------------------------------------------------------------------------


def test_audit_keys_accepts_the_card(bank, ptau, proved, capsys, initial_keys_made_once):
    keys = bank["model"] / "keys"
    assert fairproof(["audit-keys", "--card", str(proved["card"]), "--ptau", str(ptau), "--keys", str(keys),
                      "--quiet"]) == 0
    out = capsys.readouterr().out
    assert f"{bank['bucket']}" in out and "OK" in out and "every bucket's key is the statement's" in out
    assert initial_keys_made_once  # the audit regenerated the initial key (once per circuit, conftest.py)


def test_audit_refuses_single_party_keys_and_a_missing_key(bank, ptau, ceremony, proved, tmp_path):
    from commitments.card import SetupRecord
    from prover_service.key_audit import AuditFailure, find_bucket_key

    alone = _lie(proved["card_model"], bank["bucket"],
                 lambda b: b.model_copy(update={"setup": SetupRecord(method="single-party")}))
    result = _audit(bank, ptau, ceremony, alone)
    assert not result.ok and "bank alone" in result.reason
    with pytest.raises(AuditFailure, match="no final key"):
        find_bucket_key(tmp_path, bank["bucket"])


@pytest.mark.snarkjs
@pytest.mark.slow  # two minutes; tests/test_zkey_mpc.py runs snarkjs zkey verify on a small ceremony by default
def test_snarkjs_zkey_verify_accepts_the_buckets_key(bank, ptau, ceremony, proved):
    if find_snarkjs() is None:
        pytest.skip(missing_reason())
    (zkey,) = (bank["model"] / "keys").glob(f"{bank['bucket']}-*/bucket.zkey")
    done = run_snarkjs(["zkey", "verify", ceremony["dir"] / "circuit.r1cs", ptau, zkey], check=False)
    assert done.returncode == 0 and "ZKey Ok!" in done.stdout, done.stdout[-2000:]
    assert "consumer association" in done.stdout  # the contribution made with snarkjs itself


# -- the ceremony's own refusals ------------------------------------------------------------------------------


def test_a_tampered_contribution_is_refused_everywhere(bank, ptau, ceremony, tmp_path):
    from circuits.snarkjs.zkey_file import g1_points, g1_section, parse_zkey

    copy = tmp_path / "c"
    shutil.copytree(ceremony["dir"], copy)
    state = json.loads((copy / "ceremony.json").read_text())
    state["finalized"] = False
    state["keys"], state["contributors"] = state["keys"][:3], state["contributors"][:2]
    (copy / "ceremony.json").write_text(json.dumps(state))
    assert fairproof(["ceremony", "verify", str(copy)]) == 0  # the honest prefix verifies
    backend = get_backend()
    last = copy / state["keys"][-1]
    key = parse_zkey(last.read_bytes(), backend)
    h = g1_points(key.h)
    h[0] = backend.g1_add(h[0], backend.g1_generator())
    from dataclasses import replace

    last.write_bytes(replace(key, h=g1_section(h)).encode())
    assert fairproof(["ceremony", "verify", str(copy)]) == 1
    done = _cli("ceremony", "contribute", str(copy), "--name", "late")
    assert done.returncode == 1 and "H" in done.stderr and "Traceback" not in done.stderr
    assert fairproof(["ceremony", "install", str(copy), "--model", str(bank["model"])]) == 1


def test_a_ceremony_for_another_circuit_is_refused(bank, ptau, ceremony, tmp_path):
    copy = tmp_path / "c"
    shutil.copytree(ceremony["dir"], copy)
    state = json.loads((copy / "ceremony.json").read_text())
    state["metadata"]["statement_shape"]["farkas_bits"] += 1  # claims another shape than its circuit
    (copy / "ceremony.json").write_text(json.dumps(state))
    assert fairproof(["ceremony", "verify", str(copy)]) == 1
    done = _cli("ceremony", "contribute", str(copy), "--name", "careful auditor")
    assert done.returncode == 1 and "not the fairness statement" in done.stderr


def test_the_ceremony_verifies_against_the_phase1_file_and_refuses_another(bank, ptau, ceremony, tmp_path, capsys):
    assert fairproof(["ceremony", "verify", str(ceremony["dir"]), "--ptau", str(ptau)]) == 0
    out = capsys.readouterr().out
    assert "regenerated from the phase-1 file" in out and "(final)" in out
    other = tmp_path / "other.ptau"
    other.write_bytes(ptau.read_bytes()[:-1] + bytes([ptau.read_bytes()[-1] ^ 1]))
    assert fairproof(["ceremony", "verify", str(ceremony["dir"]), "--ptau", str(other)]) == 1
    assert "not the phase-1 file" in capsys.readouterr().err


def test_the_default_prover_refuses_a_bucket_nobody_set_up(bank, proved):
    from offline_precompute.db import open_database, resolve_store_url
    from fairness.errors import ModelError
    from prover_service.proving import Prover
    from prover_service.workspace import ModelWorkspace

    workspace = ModelWorkspace.open(bank["model"])
    db = open_database(resolve_store_url(None, workspace.root))
    try:
        prover = Prover(workspace, db, get_backend())
        with pytest.raises(ModelError, match="has no keys yet"):
            prover.keys(prover.shape_for(64, 64))
    finally:
        db.dispose()


def test_a_bucket_the_bank_sets_up_alone_names_only_the_bank(bank, ptau, ceremony, tmp_path):
    """`--ptau` / FAIRPROOF_PTAU: a one-contribution ceremony by the bank, recorded as such on the card."""
    from offline_precompute.db import open_database, resolve_store_url
    from prover_service.bucket_keys import CeremonyKeySetup
    from prover_service.proving import Prover
    from prover_service.workspace import ModelWorkspace
    from verifier_client.verify import verify_bundle

    copy = tmp_path / "model"
    shutil.copytree(bank["model"], copy, ignore=shutil.ignore_patterns("keys"))
    workspace = ModelWorkspace.open(copy)
    workspace.save_card(workspace.card().model_copy(update={"circuits": ()}))
    db = open_database(resolve_store_url(None, workspace.root))
    try:
        prover = Prover(workspace, db, get_backend(), key_setup=CeremonyKeySetup(ptau, "the bank"))
        bundle = prover.prove(bank["query"]).bundle
    finally:
        db.dispose()
    bucket = prover.card.bucket(bundle.bucket)
    assert bucket.setup.method == "ceremony" and [c.name for c in bucket.setup.contributions] == ["the bank"]
    assert (prover.bucket_dir(prover.shape_for(bucket.shape.region_slots, bucket.shape.farkas_slots))
            / "bucket.zkey").is_file()  # published for audit
    assert verify_bundle(bundle, prover.card)
    refused = verify_bundle(bundle, prover.card, trusted_contributors=[ceremony["hashes"]["auditor"]])
    assert not refused and "none of your trusted contributors" in refused.reasons[0]


@pytest.mark.parametrize("lie", ["bucket width", "favourable class", "lens dropped", "persistence added"])
def test_audit_refuses_a_card_whose_lenses_are_not_the_keys(bank, ptau, ceremony, proved, lie):
    """The verifier prints the spread's width and favourable class, and whether persistence is proved, from
    the card. A card re-published with another width, another favourable class, without the spread or
    claiming the persistence lens, over the same keys, is well formed; the audit rebuilds the statement
    from the card's lenses and refuses it."""
    from commitments.card import PersistenceLensCard

    card = proved["card_model"]
    assert card.spread is not None and card.persistence is None
    persistence = None
    if lie == "persistence added":
        sensitive = {f.column for f in card.sensitive}
        column = next(j for j, (lo, hi) in enumerate(zip(card.box_lower, card.box_upper))
                      if j not in sensitive and lo < hi)
        persistence = PersistenceLensCard(favourable_class=card.spread.favourable_class, columns=(column,),
                                          default_delta=1)
    if lie == "bucket width":
        spread = card.spread.model_copy(update={"bucket_width": card.spread.bucket_width * 2})
    elif lie == "favourable class":
        spread = card.spread.model_copy(update={"favourable_class": 1 - card.spread.favourable_class})
    elif lie == "lens dropped":
        spread = None
    else:
        spread = card.spread
    lying = ModelCard.from_json(card.model_copy(update={"spread": spread, "persistence": persistence}
                                                ).canonical_json())  # parses
    result = _audit(bank, ptau, ceremony, lying)
    assert not result.ok and "R1CS digest is not the digest of the statement" in result.reason, result.reason
    # (the honest card passes the same audit: test_audit_keys_accepts_the_card)


# -- the auditor's attestation --------------------------------------------------------------------------------


def test_the_auditor_attests_what_it_audited_and_the_customer_accepts_only_that_card(bank, ptau, proved, tmp_path,
                                                                                      capsys):
    keys, key = bank["model"] / "keys", tmp_path / "auditor.key"
    assert fairproof(["attest", "keygen", "--name", "audit.example", "--out", str(key)]) == 0
    vkey = capsys.readouterr().out.strip()
    assert vkey.startswith("audit.example+") and oct(key.stat().st_mode)[-3:] == "600"
    assert fairproof(["attest", "keygen", "--name", "audit.example", "--out", str(key)]) == 2  # never overwritten
    attestation = tmp_path / "attestation.json"
    assert fairproof(["audit-keys", "--card", str(proved["card"]), "--ptau", str(ptau), "--keys", str(keys),
                      "--quiet", "--attest", str(attestation), "--signing-key", str(key)]) == 0
    assert f"--trust-auditor {vkey}" in capsys.readouterr().out
    assert fairproof(["attest", "show", str(attestation), "--card", str(proved["card"])]) == 0
    shown = capsys.readouterr().out
    assert "attestation by audit.example" in shown and "covers" in shown and bank["bucket"] in shown
    # The customer who trusts that key accepts the card it attested ...
    trust = ["--trust-auditor", vkey, "--attestation", str(attestation)]
    assert _verify(proved, tmp_path, *trust) == 0
    assert "attested by audit.example" in capsys.readouterr().out
    # ... and refuses without the attestation, or with another auditor's key.
    assert _verify(proved, tmp_path / "x", "--trust-auditor", vkey) == 1
    assert "no auditor you trust" in capsys.readouterr().err
    other = subprocess.run([sys.executable, "-m", "prover_service.cli", "attest", "keygen", "--name", "audit.example",
                            "--out", str(tmp_path / "other.key")], cwd=REPO, capture_output=True, text=True)
    assert _verify(proved, tmp_path / "y", "--trust-auditor", other.stdout.strip(), "--attestation",
                   str(attestation)) == 1
    # `attest show` refuses a card the attestation does not cover, and a tampered attestation.
    lying = proved["card_model"].model_copy(update={"description": "another card"})
    (tmp_path / "lying.json").write_text(lying.canonical_json())
    assert fairproof(["attest", "show", str(attestation), "--card", str(tmp_path / "lying.json")]) == 1
    data = json.loads(attestation.read_text())
    data["note"] = data["note"].replace(proved["card_model"].model_id, "another-model")
    (tmp_path / "tampered.json").write_text(json.dumps(data))
    assert fairproof(["attest", "show", str(tmp_path / "tampered.json")]) == 1


def test_no_attestation_is_written_for_a_card_that_fails_the_audit(bank, ptau, proved, tmp_path, capsys):
    key = tmp_path / "auditor.key"
    assert fairproof(["attest", "keygen", "--name", "audit.example", "--out", str(key)]) == 0

    def fake_auditor(b):
        fake = tuple(c.model_copy(update={"hash": "7" * 128}) if c.name == "auditor" else c
                     for c in b.setup.contributions)
        return b.model_copy(update={"setup": b.setup.model_copy(update={"contributions": fake})})

    lying = _lie(proved["card_model"], bank["bucket"], fake_auditor)
    (tmp_path / "lying.json").write_text(lying.canonical_json())
    out = tmp_path / "attestation.json"
    assert fairproof(["audit-keys", "--card", str(tmp_path / "lying.json"), "--ptau", str(ptau), "--keys",
                      str(bank["model"] / "keys"), "--quiet", "--attest", str(out), "--signing-key", str(key)]) == 1
    assert "no attestation written" in capsys.readouterr().err and not out.exists()
    assert fairproof(["audit-keys", "--card", str(tmp_path / "lying.json"), "--ptau", str(ptau), "--keys",
                      str(bank["model"] / "keys"), "--attest", str(out)]) == 2  # --signing-key goes with it
