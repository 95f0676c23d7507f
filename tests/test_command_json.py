"""`--json` on the bank's commands: one document on stdout, checked against its published schema (the
pydantic model in prover_service/outputs.py), with the values the command computed."""
from __future__ import annotations

import json

import pytest

from prover_service.cli import main as fairproof
from prover_service.outputs import (SCHEMA_DIR, SCHEMAS, CertifyOutput, DevPtauOutput, Groth16ContributeOutput,
                                    Groth16ContributionsOutput, Groth16ProveOutput, Groth16SetupOutput,
                                    Groth16VerifyOutput, ProveOutput, PtauOutput, schema_text)


def _document(capsys, model):
    return model.model_validate_json(capsys.readouterr().out, strict=True)


@pytest.mark.parametrize("name", sorted(SCHEMAS))
def test_the_published_schemas_are_the_models(name):
    assert (SCHEMA_DIR / name).read_text() == schema_text(SCHEMAS[name])


def test_certify_and_prove_as_json(bank, tmp_path_factory, tmp_path, capsys):
    from bank_fixtures import copy_of_bank_model

    root, _, store = copy_of_bank_model(bank, tmp_path_factory, "json")
    store.dispose()
    assert fairproof(["certify", "--model", str(root), "--index", "0", "--json"]) == 0
    cert = _document(capsys, CertifyOutput)
    assert cert.decision_label in bank.card.architecture.class_labels and cert.radius.scale_bits > 0
    assert fairproof(["prove", "--model", str(root), "--index", "0", "--out", str(tmp_path / "b.json"), "--json",
                      "--radius", "fast"]) == 0  # the bank's copy has the fast buckets' keys
    proved = _document(capsys, ProveOutput)
    bundle = json.loads((tmp_path / "b.json").read_text())
    assert (proved.decision, proved.bucket, proved.radius.numerator) == \
        (bundle["decision"], bundle["bucket"], bundle["eps"]["numerator"])
    assert proved.constraints > 0 and proved.prove_seconds > 0


def test_groth16_verbs_as_json(tmp_path, capsys):
    from circuits.snarkjs import write_r1cs, write_wtns
    from groth16_circuits import random_system

    r1cs, witness = random_system(12, n_public=2, seed=3)
    write_r1cs(tmp_path / "c.r1cs", r1cs)
    write_wtns(tmp_path / "w.wtns", witness)
    keys = tmp_path / "keys"
    assert fairproof(["groth16", "setup", str(tmp_path / "c.r1cs"), str(keys), "--seed", "t", "--json"]) == 0
    setup = _document(capsys, Groth16SetupOutput)
    assert (setup.constraints, setup.public, setup.seeded) == (r1cs.n_constraints, r1cs.n_public, True)
    assert fairproof(["groth16", "contribute", str(keys), "--name", "auditor", "--json"]) == 0
    assert _document(capsys, Groth16ContributeOutput).contributions == 1
    assert fairproof(["groth16", "verify-contributions", str(keys), "--json"]) == 0
    chain = _document(capsys, Groth16ContributionsOutput)
    assert chain.ok and chain.names == ["auditor"]
    out = tmp_path / "out"
    assert fairproof(["groth16", "prove", str(keys), str(tmp_path / "w.wtns"), str(out), "--json"]) == 0
    proved = _document(capsys, Groth16ProveOutput)
    assert proved.public_signals == json.loads((out / "public.json").read_text())
    assert fairproof(["groth16", "verify", str(keys / "verification_key.json"), str(out / "proof.json"),
                      str(out / "public.json"), "--json"]) == 0
    assert _document(capsys, Groth16VerifyOutput).valid
    public = json.loads((out / "public.json").read_text())
    public[0] = str(int(public[0]) + 1)
    (out / "public.json").write_text(json.dumps(public))
    assert fairproof(["groth16", "verify", str(keys / "verification_key.json"), str(out / "proof.json"),
                      str(out / "public.json"), "--json"]) == 1
    refused = _document(capsys, Groth16VerifyOutput)
    assert not refused.valid and refused.reason


def test_ptau_verbs_as_json(tmp_path, capsys):
    ptau = tmp_path / "dev.ptau"
    assert fairproof(["groth16", "dev-ptau", "4", str(ptau), "--json"]) == 0
    written = _document(capsys, DevPtauOutput)
    assert written.power == 4 and written.size == ptau.stat().st_size and len(written.next_challenge) == 128
    assert fairproof(["groth16", "import-ptau", str(ptau), "--json"]) == 0
    checked = _document(capsys, PtauOutput)
    assert checked.ok and checked.power == 4 and checked.prepared
    (tmp_path / "bad.ptau").write_bytes(b"not a ptau")
    assert fairproof(["groth16", "import-ptau", str(tmp_path / "bad.ptau"), "--json"]) == 2
    assert not _document(capsys, PtauOutput).ok
