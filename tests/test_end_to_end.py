"""The product end to end on a small real model: German Credit (4,2).

Train, commit, precompute, prove certificates for test customers, and check
them as a customer does (card + bundle only) and with snarkjs. Every
acceptance has its refusal: a bundle whose decision, radius, query, model or
proof was changed is rejected by `fairproof-verify`.
"""
from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest

from bank_fixtures import spread_following
from circuits.errors import UnsatisfiedConstraint
from circuits.field import R
from commitments.bundle import CertificateBundle, Radius, SnarkjsProof
from commitments.card import ModelCard
from commitments.claims import signals_for
from verifier_client.cli import main as verify_main
from verifier_client.verify import verify_bundle

SNARKJS = Path(__file__).resolve().parents[1] / "node_modules" / ".bin" / "snarkjs"


def _workspace(tmp_path_factory, variant: str):
    from fairness.errors import DataError
    from fairness.model import save_artifact
    from fairness.training import load_or_train
    from prover_service.publishing import commit_model
    from prover_service.workspace import ModelWorkspace

    root = tmp_path_factory.mktemp(f"german-4x2-{variant}")
    try:
        artifact = load_or_train("german", (4, 2), variant, cache_dir=root / "cache")
    except DataError as exc:  # pragma: no cover - depends on the machine
        pytest.skip(f"German Credit dataset not available: {exc}")
    save_artifact(artifact, root / "model")
    workspace = ModelWorkspace.open(root / "model")
    commit_model(workspace, model_id=f"german-4x2-{variant}")
    return workspace


def _prover(workspace):
    from circuits.backends import get_backend
    from offline_precompute.db import open_database, resolve_store_url
    from offline_precompute.enumerate import precompute
    from prover_service.bucket_keys import SinglePartyKeySetup
    from prover_service.proving import Prover

    db = open_database(resolve_store_url(None, workspace.root))
    prover = Prover(workspace, db, get_backend(), key_setup=SinglePartyKeySetup())
    precompute(db, prover.model)
    return prover


@pytest.fixture(scope="module")
def fair(tmp_path_factory):
    prover = _prover(_workspace(tmp_path_factory, "fair"))
    yield prover
    prover.db.dispose()


@pytest.fixture(scope="module")
def proved(fair):
    """Certificates with proofs for the first test customers."""
    from offline_precompute.certify import query_from_index

    return [fair.prove(query_from_index(fair.workspace.artifact, fair.model, i)) for i in range(3)]


def _files(tmp_path, bundle: CertificateBundle, card: ModelCard) -> tuple[str, str]:
    b, c = tmp_path / "bundle.json", tmp_path / "card.json"
    b.write_text(bundle.model_dump_json())
    c.write_text(card.canonical_json())
    return str(b), str(c)


def _altered(bundle: CertificateBundle, **fields) -> CertificateBundle:
    """The bundle with some fields changed and its public signals recomputed to match,
    as a forger would: only the Groth16 proof can then catch it."""
    data = bundle.model_dump()
    data.update(spread_following(bundle, fields))
    forged = CertificateBundle.model_validate(data)
    commitment = int(bundle.public_signals[0])
    return forged.model_copy(update={"public_signals": signals_for(forged, commitment)})


def test_proved_radius_equals_plaintext_and_bundles_verify(fair, proved, tmp_path, capsys):
    for result in proved:
        bundle, cert = result.bundle, result.certificate
        assert bundle.eps.numerator == cert.eps and bundle.decision == cert.decision
        assert len(bytes.fromhex(bundle.proof_hex)) == 128
        assert verify_bundle(bundle, fair.card)
    bundle_path, card_path = _files(tmp_path, proved[0].bundle, fair.card)
    assert verify_main([bundle_path, "--card", card_path]) == 0
    assert "VALID certificate" in capsys.readouterr().out


@pytest.mark.parametrize("change", ["decision", "eps", "query", "status"])
def test_changed_claims_with_matching_public_inputs_are_refused_by_the_proof(fair, proved, change):
    bundle = proved[0].bundle
    if change == "decision":
        other = 1 - bundle.decision
        forged = _altered(bundle, decision=other, decision_label=fair.card.architecture.class_labels[other])
    elif change == "eps":
        forged = _altered(bundle, eps=Radius(numerator=bundle.eps.numerator + 1, scale_bits=bundle.eps.scale_bits))
    elif change == "query":
        query = list(bundle.query)
        free = next(i for i in range(len(query)) if i not in {f.column for f in fair.card.sensitive})
        query[free] += 1
        forged = _altered(bundle, query=tuple(query))
    else:
        values, labels = fair.card.slice_labels(0)  # the card's own labels: only the proof can refuse it
        forged = _altered(bundle, status="counterfactual_flip", eps=Radius(numerator=0, scale_bits=16),
                          flip_slice={"index": 0, "values": values, "labels": labels})
    verdict = verify_bundle(forged, fair.card)
    assert not verdict and "proof rejected" in verdict.reasons[0]


def test_changed_claims_without_matching_public_inputs_are_refused(fair, proved):
    bundle = proved[1].bundle
    eps = Radius(numerator=bundle.eps.numerator * 2 + 1, scale_bits=bundle.eps.scale_bits)
    verdict = verify_bundle(bundle.model_copy(update={"eps": eps}), fair.card)
    assert not verdict and "eps.numerator" in verdict.reasons[0] and "public signals" in verdict.reasons[0]


def test_proof_replayed_for_another_query_is_refused(fair, proved):
    a, b = proved[0].bundle, proved[1].bundle
    replay = a.model_copy(update={"proof": b.proof, "proof_hex": b.proof_hex})
    assert verify_bundle(replay, fair.card).valid is (a.public_signals == b.public_signals)
    assert not verify_bundle(replay, fair.card)


def test_tampered_proof_bytes_are_refused(fair, proved):
    bundle = proved[0].bundle
    proof = bundle.proof.model_dump(mode="json")
    proof["pi_a"] = [proof["pi_c"][0], proof["pi_c"][1], "1"]
    tampered = bundle.model_copy(update={"proof": SnarkjsProof.model_validate(proof)})
    verdict = verify_bundle(tampered, fair.card)
    assert not verdict and "differ" in verdict.reasons[0]  # the JSON proof no longer matches proof_hex


def test_proof_under_other_weights_is_refused_under_the_published_card(fair, proved):
    """A bank that proves with weights other than those it committed to, using the
    published keys, cannot pass the customer's check."""
    import dataclasses

    from circuits.builder import ConstraintSystem
    from circuits.groth16 import proof_to_bytes, prove
    from circuits.snarkjs.json_formats import proof_to_json, public_to_json
    from fairness.certificate import certify
    from statement import build_statement
    from statement.adapter import statement_inputs

    honest = proved[0]
    keys = fair.keys(fair.shape_for(*_bucket(honest.bundle.bucket)))
    net = fair.model.net
    biases = list(net.biases)
    biases[-1] = tuple(b + 1 for b in biases[-1])  # a barely different model
    other = dataclasses.replace(fair.model, net=dataclasses.replace(net, biases=tuple(biases)))
    cert = certify(other, honest.certificate.query)
    public, witness = statement_inputs(other, fair.salt, cert, keys.shape)
    assert public.commitment != int(fair.card.commitment)
    cs = ConstraintSystem(with_values=True)
    build_statement(cs, keys.shape, public, witness)
    proof = prove(keys.proving_key, keys.r1cs, cs.witness(), fair.backend)
    forged = honest.bundle.model_copy(update={
        "decision": cert.decision, "eps": Radius(numerator=cert.eps, scale_bits=cert.eps_bits),
        "proof": SnarkjsProof.model_validate(proof_to_json(proof)), "proof_hex": proof_to_bytes(proof).hex(),
        "public_signals": tuple(public_to_json(public.field_elements())),
    })
    verdict = verify_bundle(forged, fair.card)
    assert not verdict and "not the card's commitment" in verdict.reasons[0]
    # With the published commitment put in its public inputs, the proof fails.
    forced = forged.model_copy(update={
        "public_signals": signals_for(forged, int(fair.card.commitment))})
    verdict = verify_bundle(forced, fair.card)
    assert not verdict and "proof rejected" in verdict.reasons[0]


def _bucket(name: str) -> tuple[int, int]:
    k, f = re.fullmatch(r"k(\d+)-f(\d+)", name).groups()
    return int(k), int(f)


def test_prover_refuses_a_witness_the_statement_does_not_satisfy(fair, proved):
    """A dishonest witness (here an inflated radius) never reaches a proof."""
    import dataclasses

    from circuits.builder import ConstraintSystem
    from statement import build_statement
    from statement.adapter import bucket_sizes, statement_inputs

    cert = proved[0].certificate
    shape = fair.shape_for(*bucket_sizes(cert))
    public, witness = statement_inputs(fair.model, fair.salt, cert, shape)
    inflated = dataclasses.replace(public, eps=public.eps + 1)
    with pytest.raises(UnsatisfiedConstraint):
        build_statement(ConstraintSystem(with_values=True), shape, inflated, witness)


def test_a_published_bucket_loads_from_its_saved_relation_only_when_it_hashes_to_the_card(fair, proved, monkeypatch):
    from dataclasses import replace

    import numpy as np

    from circuits.groth16 import r1cs_digest
    from circuits.relation_arrays import ArrayR1CS
    from offline_precompute.certify import query_from_index
    from prover_service import key_store, proving
    from prover_service.bucket_keys import SinglePartyKeySetup

    shape = fair.shape_for_certificate(proved[0].certificate)
    saved = fair.bucket_dir(shape) / key_store.RELATION_FILE
    published = fair.card.bucket(shape.bucket)
    assert saved.is_file() and r1cs_digest(ArrayR1CS.load(saved, published.r1cs_digest)) == published.r1cs_digest
    rebuilt = []
    build = key_store.statement_relation
    monkeypatch.setattr(key_store, "statement_relation", lambda s: rebuilt.append(s) or build(s))
    query = query_from_index(fair.workspace.artifact, fair.model, 0)

    def fresh_proof():
        prover = proving.Prover(fair.workspace, fair.db, fair.backend, key_setup=SinglePartyKeySetup())
        result = prover.prove(query)
        assert verify_bundle(result.bundle, fair.card)
        return result

    fresh_proof()  # a new process: the saved relation, no circuit rebuilt
    assert rebuilt == []

    # Saved arrays that claim the card's digest but hold another relation (one coefficient
    # changed): the digest recomputed from them differs, so the circuit is rebuilt.
    honest = ArrayR1CS.load(saved, published.r1cs_digest)
    coefficient = honest.c.coefficient.copy()
    coefficient[0] = np.frombuffer((2).to_bytes(32, "little"), dtype=np.uint8)
    replace(honest, c=replace(honest.c, coefficient=coefficient)).save(saved, published.r1cs_digest)
    fresh_proof()
    assert rebuilt == [shape]
    assert r1cs_digest(ArrayR1CS.load(saved, published.r1cs_digest)) == published.r1cs_digest  # saved again

    saved.write_bytes(b"not arrays")
    fresh_proof()
    assert rebuilt == [shape, shape]
    assert ArrayR1CS.load(saved, published.r1cs_digest) is not None


def test_a_reader_that_goes_away_gets_no_traceback(fair, proved, tmp_path):
    """`fairproof-verify ... | head`: the verifier, and the prover's commands, stop quietly with
    SIGPIPE's status (141), never a traceback, and never a status a script would read as a verdict."""
    import sys

    bundle_path, card_path = _files(tmp_path, proved[0].bundle, fair.card)
    prove = [sys.executable, "-m", "prover_service.cli", "prove", "--model", str(fair.workspace.root), "--index", "0",
             "--out", str(tmp_path / "again.json"), "--radius", "fast"]  # the radius the fixture has keys for
    for command in ([sys.executable, "-m", "verifier_client.cli", bundle_path, "--card", card_path], prove):
        child = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        child.stdout.close()  # the reader is gone before the first line
        err = child.stderr.read().decode()
        child.stderr.close()
        code = child.wait(timeout=120)
        assert "Traceback" not in err, err
        assert code == 141, (code, err)


def _integers_in(node):
    """Every integer a JSON document states: numbers, and strings that are a whole decimal
    integer (field elements travel as strings). Digit runs inside hex digests and ids are
    not statements of a number, and matching them made the check fire by chance."""
    if isinstance(node, bool):
        return
    if isinstance(node, int):
        yield abs(node)
    elif isinstance(node, float) and node.is_integer():
        yield abs(int(node))
    elif isinstance(node, str) and re.fullmatch(r"-?\d+", node):
        yield abs(int(node))
    elif isinstance(node, dict):
        for value in node.values():
            yield from _integers_in(value)
    elif isinstance(node, list):
        for value in node:
            yield from _integers_in(value)


def test_card_and_bundle_reveal_no_weight_nor_salt(fair, proved):
    net = fair.model.net
    secrets = {abs(v) for w in net.weights for row in w for v in row} | {abs(v) for b in net.biases for v in b}
    secrets = {v for v in secrets if v >= 1 << 10}  # small integers occur everywhere by chance
    secrets.add(fair.salt)
    card_text = fair.card.model_dump_json()  # every field, those the published card leaves out too
    assert set(json.loads(card_text)) == set(ModelCard.model_fields)
    for text in [card_text, *(p.bundle.model_dump_json() for p in proved)]:
        numbers = set(_integers_in(json.loads(text)))
        assert len(numbers) > 10  # the walk reaches the proof and key numbers
        assert not numbers & secrets
        assert not {(R - n) % R for n in numbers} & secrets  # nor as negated field elements


@pytest.mark.snarkjs
def test_snarkjs_verifies_exported_bundles_and_refuses_a_tampered_one(fair, proved, tmp_path):
    if not SNARKJS.exists():
        pytest.skip("snarkjs not installed (npm install)")
    from prover_service.cli import main as fairproof

    bundle_path, card_path = _files(tmp_path, proved[2].bundle, fair.card)
    out = tmp_path / "snarkjs"
    assert fairproof(["export-snarkjs", bundle_path, str(out), "--card", card_path]) == 0
    args = [str(SNARKJS), "groth16", "verify", str(out / "verification_key.json"), str(out / "public.json"),
            str(out / "proof.json")]
    ok = subprocess.run(args, capture_output=True, text=True, timeout=120)
    assert ok.returncode == 0 and "OK" in ok.stdout
    public = json.loads((out / "public.json").read_text())
    public[2] = str(int(public[2]) + 1)  # inflate eps
    (out / "public.json").write_text(json.dumps(public))
    bad = subprocess.run(args, capture_output=True, text=True, timeout=120)
    assert bad.returncode != 0 or "OK" not in bad.stdout


# --- the command lines on the same model: clear refusals, exit codes ----------


def test_commit_refuses_to_replace_a_commitment(fair, capsys):
    from prover_service.cli import main as fairproof

    assert fairproof(["commit", "--model", str(fair.workspace.root)]) == 1
    assert "already committed" in capsys.readouterr().err


def test_prove_refuses_an_uncommitted_model(fair, tmp_path, capsys):
    import shutil

    from prover_service.cli import main as fairproof

    bare = tmp_path / "bare"
    bare.mkdir()
    for name in ("model.json", "weights.npz"):
        shutil.copy(fair.workspace.root / name, bare / name)
    assert fairproof(["prove", "--model", str(bare), "--index", "0", "--out", str(tmp_path / "b.json")]) == 1
    assert "fairproof commit" in capsys.readouterr().err
    assert not (tmp_path / "b.json").exists()


def test_verify_command_exit_codes(fair, proved, tmp_path, capsys):
    bundle_path, card_path = _files(tmp_path, proved[0].bundle, fair.card)
    forged = _altered(proved[0].bundle, eps=Radius(numerator=proved[0].bundle.eps.numerator + 7, scale_bits=16))
    forged_path = tmp_path / "forged.json"
    forged_path.write_text(forged.model_dump_json())
    assert verify_main([str(forged_path), "--card", card_path]) == 1
    assert "INVALID" in capsys.readouterr().err
    assert verify_main([str(tmp_path / "missing.json"), "--card", card_path]) == 2
    (tmp_path / "half.json").write_text(proved[0].bundle.model_dump_json()[:100])
    assert verify_main([str(tmp_path / "half.json"), "--card", card_path]) == 2
    assert verify_main([bundle_path, "--card", card_path, "--backend", "reference"]) == 0


def test_export_refuses_a_bundle_of_another_card(fair, proved, tmp_path, capsys):
    from prover_service.cli import main as fairproof

    other_card = fair.card.model_copy(update={"commitment": "1"})
    bundle_path, card_path = _files(tmp_path, proved[0].bundle, other_card)
    assert fairproof(["export-snarkjs", bundle_path, str(tmp_path / "out"), "--card", card_path]) == 1
    assert "another model card" in capsys.readouterr().err
