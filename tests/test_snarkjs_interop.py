"""Interoperability with snarkjs 0.7.6 (node), and the `fairproof groth16` command line.

The snarkjs-marked tests run the real snarkjs command line on files we write,
and our verifier on files snarkjs writes; each accepting check has a
tampered twin that both verifiers must refuse.
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from circuits.backends import get_backend
from circuits.field import R
from circuits.groth16 import prove, setup, verify
from circuits.relation import R1CS, Constraint
from circuits.snarkjs import (
    sample_toxic_waste,
    find_snarkjs,
    read_proof,
    read_public,
    read_verifying_key,
    run_snarkjs,
    write_proof,
    write_public,
    write_r1cs,
    write_verifying_key,
    write_wtns,
    write_zkey,
)
from circuits.snarkjs.node import missing_reason
from prover_service.cli import main as fairproof
from groth16_circuits import random_system

needs_snarkjs = pytest.mark.skipif(find_snarkjs() is None, reason=missing_reason())
TIMEOUT = 120


def interop_circuit(x: int = 7, v: int = 0b10110101) -> tuple[R1CS, list[int]]:
    """y = x^(2^6) + v with v range-checked to 8 bits.

    Wires: 0 one, 1 y (public output), 2 x (public input), 3..8 x^2 .. x^64,
    9..16 bits of v, 17 v. 16 constraints: 6 squarings, 8 booleanity, 1 packing, 1 sum.
    """
    chain = [x % R]
    for _ in range(6):
        chain.append(chain[-1] * chain[-1] % R)
    bits = [(v >> k) & 1 for k in range(8)]
    y = (chain[-1] + v) % R
    witness = [1, y, *chain, *bits, v]
    constraints = [Constraint(((2 + k, 1),), ((2 + k, 1),), ((3 + k, 1),)) for k in range(6)]
    constraints += [Constraint(((9 + k, 1),), ((9 + k, 1),), ((9 + k, 1),)) for k in range(8)]
    constraints.append(Constraint(tuple((9 + k, 1 << k) for k in range(8)), ((0, 1),), ((17, 1),)))
    constraints.append(Constraint(((8, 1), (17, 1)), ((0, 1),), ((1, 1),)))
    r1cs = R1CS(n_wires=18, n_public=2, constraints=tuple(constraints), n_public_outputs=1)
    assert r1cs.is_satisfied(witness)
    return r1cs, witness


@pytest.fixture(scope="module")
def backend():
    return get_backend(None)


@pytest.fixture(scope="module")
def circuit_files(tmp_path_factory):
    directory = tmp_path_factory.mktemp("interop")
    r1cs, witness = interop_circuit()
    write_r1cs(directory / "circuit.r1cs", r1cs, n_private_inputs=0)
    write_wtns(directory / "witness.wtns", witness)
    return directory, r1cs, witness


def snarkjs_verify(vk: Path, public: Path, proof: Path) -> bool:
    done = run_snarkjs(["groth16", "verify", vk, public, proof], timeout=TIMEOUT, check=False)
    ok = done.returncode == 0 and "OK" in done.stdout
    # Guard against reading a crash as a rejection: a refusal says so.
    assert ok or "Invalid proof" in done.stdout + done.stderr, done.stdout + done.stderr
    return ok


def tampered_proof_doc(path: Path) -> dict:
    doc = json.loads(path.read_text())
    doc["pi_a"], doc["pi_c"] = doc["pi_c"], doc["pi_a"]  # still valid points, wrong relation
    return doc


@pytest.mark.snarkjs
@needs_snarkjs
def test_snarkjs_reads_our_r1cs_and_checks_our_witness(circuit_files, tmp_path):
    directory, r1cs, witness = circuit_files
    info = run_snarkjs(["r1cs", "info", directory / "circuit.r1cs"], timeout=TIMEOUT).stdout
    assert "# of Wires: 18" in info and "# of Constraints: 16" in info
    assert "# of Outputs: 1" in info and "# of Public Inputs: 1" in info
    good = run_snarkjs(["wtns", "check", directory / "circuit.r1cs", directory / "witness.wtns"], timeout=TIMEOUT, check=False)
    assert good.returncode == 0 and "WITNESS IS CORRECT" in good.stdout
    bad = list(witness)
    bad[9] = 2  # a "bit" that is not 0/1: violates booleanity
    write_wtns(tmp_path / "bad.wtns", bad)
    refused = run_snarkjs(["wtns", "check", directory / "circuit.r1cs", tmp_path / "bad.wtns"], timeout=TIMEOUT, check=False)
    assert refused.returncode != 0 and "WITNESS IS NOT CORRECT" in refused.stdout


@pytest.mark.snarkjs
@needs_snarkjs
def test_snarkjs_verifies_our_proof_and_both_refuse_tampering(circuit_files, backend, tmp_path):
    _, r1cs, witness = circuit_files
    pk, vk = setup(r1cs, backend, seed="interop")
    proof = prove(pk, r1cs, witness, backend)
    public = r1cs.public_inputs(witness)
    write_verifying_key(tmp_path / "vk.json", vk)
    write_proof(tmp_path / "proof.json", proof)
    write_public(tmp_path / "public.json", public)
    assert verify(vk, public, proof, backend)
    assert snarkjs_verify(tmp_path / "vk.json", tmp_path / "public.json", tmp_path / "proof.json")

    write_public(tmp_path / "bad_public.json", [public[0], (public[1] + 1) % R])
    assert not snarkjs_verify(tmp_path / "vk.json", tmp_path / "bad_public.json", tmp_path / "proof.json")
    assert not verify(vk, read_public(tmp_path / "bad_public.json"), proof, backend)

    (tmp_path / "bad_proof.json").write_text(json.dumps(tampered_proof_doc(tmp_path / "proof.json")))
    assert not snarkjs_verify(tmp_path / "vk.json", tmp_path / "public.json", tmp_path / "bad_proof.json")
    assert not verify(vk, public, read_proof(tmp_path / "bad_proof.json"), backend)


@pytest.mark.snarkjs
@needs_snarkjs
def test_we_verify_snarkjs_proofs_made_with_our_zkey(circuit_files, backend, tmp_path):
    directory, r1cs, witness = circuit_files
    toxic = sample_toxic_waste("interop-zkey")
    write_zkey(tmp_path / "circuit.zkey", r1cs, toxic, backend)
    run_snarkjs(["zkey", "export", "verificationkey", tmp_path / "circuit.zkey", tmp_path / "vk.json"], timeout=TIMEOUT)
    run_snarkjs(
        ["groth16", "prove", tmp_path / "circuit.zkey", directory / "witness.wtns", tmp_path / "proof.json", tmp_path / "public.json"],
        timeout=TIMEOUT,
    )
    vk = read_verifying_key(tmp_path / "vk.json")
    # snarkjs read our zkey header as we meant it.
    assert vk.alpha_g1 == backend.g1_mul(backend.g1_generator(), toxic.alpha)
    assert vk.delta_g2 == backend.g2_mul(backend.g2_generator(), toxic.delta)
    proof = read_proof(tmp_path / "proof.json")
    public = read_public(tmp_path / "public.json")
    assert public == r1cs.public_inputs(witness)
    assert snarkjs_verify(tmp_path / "vk.json", tmp_path / "public.json", tmp_path / "proof.json")
    assert verify(vk, public, proof, backend)

    tampered_public = [public[0], (public[1] + 1) % R]
    write_public(tmp_path / "bad_public.json", tampered_public)
    assert not verify(vk, tampered_public, proof, backend)
    assert not snarkjs_verify(tmp_path / "vk.json", tmp_path / "bad_public.json", tmp_path / "proof.json")
    (tmp_path / "bad_proof.json").write_text(json.dumps(tampered_proof_doc(tmp_path / "proof.json")))
    assert not verify(vk, public, read_proof(tmp_path / "bad_proof.json"), backend)
    assert not snarkjs_verify(tmp_path / "vk.json", tmp_path / "public.json", tmp_path / "bad_proof.json")


# --- the command line ----------------------------------------------------------------

@pytest.fixture(scope="module")
def cli_keys(circuit_files, backend, tmp_path_factory):
    directory, _, _ = circuit_files
    keydir = tmp_path_factory.mktemp("cli") / "keys"
    assert fairproof(["groth16", "setup", str(directory / "circuit.r1cs"), str(keydir), "--seed", "cli", "--backend", backend.name]) == 0
    assert fairproof(["groth16", "contribute", str(keydir), "--name", "auditor"]) == 0
    out = keydir.parent / "out"
    assert fairproof(["groth16", "prove", str(keydir), str(directory / "witness.wtns"), str(out)]) == 0
    return keydir, out


def test_cli_setup_contribute_prove_verify(cli_keys, capsys, circuit_files):
    keydir, out = cli_keys
    for name in ("circuit.r1cs", "proving_key", "initial_proving_key", "verification_key.json", "transcript.json"):
        assert (keydir / name).exists(), name
    capsys.readouterr()
    assert fairproof(["groth16", "verify-contributions", str(keydir)]) == 0
    assert "OK: 1 contribution(s) verified (auditor)" in capsys.readouterr().out
    assert fairproof(["groth16", "verify", str(keydir / "verification_key.json"), str(out / "proof.json"), str(out / "public.json")]) == 0
    assert capsys.readouterr().out.strip() == "OK"
    _, r1cs, witness = circuit_files
    assert read_public(out / "public.json") == r1cs.public_inputs(witness)


def test_cli_refuses_tampered_and_malformed_inputs(cli_keys, capsys, tmp_path):
    keydir, out = cli_keys
    vk = str(keydir / "verification_key.json")
    public = read_public(out / "public.json")
    write_public(tmp_path / "bad_public.json", [(public[0] + 1) % R, public[1]])
    capsys.readouterr()
    assert fairproof(["groth16", "verify", vk, str(out / "proof.json"), str(tmp_path / "bad_public.json")]) == 1
    assert "INVALID" in capsys.readouterr().err

    write_public(tmp_path / "short_public.json", public[:1])
    assert fairproof(["groth16", "verify", vk, str(out / "proof.json"), str(tmp_path / "short_public.json")]) == 1
    assert "expected 2 public inputs" in capsys.readouterr().err

    (tmp_path / "garbage.json").write_text("{\"pi_a\": [1, 2")
    assert fairproof(["groth16", "verify", vk, str(tmp_path / "garbage.json"), str(out / "public.json")]) == 1
    assert "not valid JSON" in capsys.readouterr().err

    doc = json.loads((out / "proof.json").read_text())
    doc["pi_a"][1] = str((int(doc["pi_a"][1]) + 1) % R)
    (tmp_path / "off_curve.json").write_text(json.dumps(doc))
    assert fairproof(["groth16", "verify", vk, str(tmp_path / "off_curve.json"), str(out / "public.json")]) == 1
    assert "not on the BN254 G1 curve" in capsys.readouterr().err

    # A directory that is not a key directory.
    (tmp_path / "r1cs.bin").write_bytes(b"r1cs" + bytes(4))
    assert fairproof(["groth16", "prove", str(tmp_path), str(tmp_path / "r1cs.bin"), str(tmp_path / "o")]) == 1
    assert "no circuit.r1cs" in capsys.readouterr().err


def test_the_saved_rows_serve_only_the_circuit_they_were_decoded_from(cli_keys, capsys, tmp_path, circuit_files):
    import shutil

    import numpy as np

    from circuits.groth16 import key_seal, relation_files
    from circuits.relation_arrays import ArrayR1CS
    from prover_service.commands.groth16 import ROWS_DIR, load_relation_arrays

    keydir, _ = cli_keys
    directory, r1cs, witness = circuit_files
    keys = tmp_path / "keys"
    shutil.copytree(keydir, keys)
    rows = keys / ROWS_DIR
    assert (rows / relation_files.HEADER_FILE).is_file()  # written by setup
    assert load_relation_arrays(keys).relation == r1cs

    def prove_and_verify(name: str) -> int:
        out = tmp_path / name
        code = fairproof(["groth16", "prove", str(keys), str(directory / "witness.wtns"), str(out)])
        if code == 0:
            code = fairproof(["groth16", "verify", str(keys / "verification_key.json"), str(out / "proof.json"),
                              str(out / "public.json")])
        return code

    # Sealed: mapped as they are, nothing hashed.
    assert key_seal.seal_holds(keys, ["circuit.r1cs", *(f"{ROWS_DIR}/{n}" for n in relation_files.ARRAY_FILES)],
                               {f"{ROWS_DIR}/{relation_files.HEADER_FILE}":
                                key_seal.sha256_hex((rows / relation_files.HEADER_FILE).read_bytes())})
    assert isinstance(load_relation_arrays(keys).a.wire, np.memmap)

    # Garbage where an array was: the seal no longer holds, the arrays are decoded from circuit.r1cs
    # again, saved, sealed, proved.
    (rows / "a_wire.npy").write_bytes(b"not an array")
    assert prove_and_verify("after_garbage") == 0
    assert load_relation_arrays(keys).relation == r1cs

    # Arrays saved for another circuit (another source digest) are not used.
    other, _ = random_system(20, 2, seed=4)
    relation_files.save_relation(rows, ArrayR1CS.from_r1cs(other), "00" * 32)
    assert load_relation_arrays(keys).relation == r1cs

    # Arrays that name circuit.r1cs's digest but hold a coefficient >= r are refused on load.
    digest = key_seal.sha256_hex((keys / "circuit.r1cs").read_bytes())
    bad = ArrayR1CS.from_r1cs(r1cs)
    coefficient = bad.a.coefficient.copy()
    coefficient[0] = np.frombuffer(((1 << 256) - 1).to_bytes(32, "little"), dtype=np.uint8)
    from dataclasses import replace

    header = relation_files.save_relation(rows, replace(bad, a=replace(bad.a, coefficient=coefficient)), digest)
    assert relation_files.map_relation(rows, header, digest) is None
    assert load_relation_arrays(keys).relation == r1cs

    # Arrays that name the digest but describe another valid relation: the prover finds the
    # witness does not satisfy it and proves nothing (a wrong cache never yields a proof).
    coefficient = bad.c.coefficient.copy()
    coefficient[0] = np.frombuffer((2).to_bytes(32, "little"), dtype=np.uint8)
    relation_files.save_relation(rows, replace(bad, c=replace(bad.c, coefficient=coefficient)), digest)
    capsys.readouterr()
    assert prove_and_verify("after_forgery") == 1
    assert "violates constraint 0" in capsys.readouterr().err


def _flip_byte_in_place(path: Path, offset: int) -> None:
    """One bit of the file changed where it lies (same inode), as a damaged disk or an editor would."""
    with path.open("r+b") as handle:
        handle.seek(offset)
        byte = handle.read(1)
        handle.seek(offset)
        handle.write(bytes([byte[0] ^ 1]))


def test_cli_key_flipped_after_install_is_refused_and_the_intact_key_proves(cli_keys, capsys, tmp_path, circuit_files):
    """The prover maps its key and, while the key's seal holds, hashes nothing: a byte changed after
    the key was installed breaks the seal (the file's change time moves), so the files are hashed
    again and the command refuses in one plain line, writing no proof. Its twin: the intact key proves."""
    import os
    import shutil

    from circuits.groth16 import key_seal

    keydir, _ = cli_keys
    directory, _, _ = circuit_files
    keys = tmp_path / "keys"
    shutil.copytree(keydir, keys)
    wtns = str(directory / "witness.wtns")
    capsys.readouterr()
    assert fairproof(["groth16", "prove", keys.as_posix(), wtns, str(tmp_path / "ok")]) == 0
    assert fairproof(["groth16", "verify", str(keys / "verification_key.json"), str(tmp_path / "ok" / "proof.json"),
                      str(tmp_path / "ok" / "public.json")]) == 0
    assert (keys / "proving_key" / "seal.json").is_file()

    for name in ("h.bin", "a.bin"):
        damaged = tmp_path / f"damaged_{name}"
        shutil.copytree(keys, damaged)  # new files: checked in full once, and sealed, by this proof
        assert fairproof(["groth16", "prove", str(damaged), wtns, str(tmp_path / f"sealed_{name}")]) == 0
        header = (damaged / "proving_key" / "header.json").read_bytes()
        files = [f"{q}.bin" for q in ("a", "b_g1", "b_g2", "l", "h")]
        assert key_seal.seal_holds(damaged / "proving_key", files, {"header.json": key_seal.sha256_hex(header)})
        target = damaged / "proving_key" / name
        before = target.stat()
        _flip_byte_in_place(target, 100)
        os.utime(target, ns=(before.st_atime_ns, before.st_mtime_ns))  # even with its mtime put back
        assert not key_seal.seal_holds(damaged / "proving_key", files, {"header.json": key_seal.sha256_hex(header)})
        capsys.readouterr()
        assert fairproof(["groth16", "prove", str(damaged), wtns, str(tmp_path / f"out_{name}")]) == 1
        err = capsys.readouterr().err
        assert err.splitlines()[-1] == f"fairproof: error: proving key: {name} does not match its SHA-256 in the header"
        assert not (tmp_path / f"out_{name}" / "proof.json").exists()


def test_cli_key_changed_while_in_use_yields_no_proof(cli_keys, tmp_path, circuit_files, backend):
    """A key file changed after its seal was checked (while mapped) is caught by the proof's check
    against the key's own verifying key: no proof leaves the prover. Twin: unchanged, it proves."""
    import shutil

    from circuits.errors import MalformedArtifact
    from circuits.snarkjs.wtns import read_wtns_limbs
    from prover_service.commands.groth16 import _load_key, load_relation_arrays

    keydir, _ = cli_keys
    directory, _, _ = circuit_files
    keys = tmp_path / "keys"
    shutil.copytree(keydir, keys)
    relation = load_relation_arrays(keys)
    pk, mapped_backend = _load_key(keys, None, check_points=False)
    witness = mapped_backend.scalar_vector_from_limbs(read_wtns_limbs(directory / "witness.wtns"))
    assert verify(pk.vk, relation.public_inputs([1, *mapped_backend.scalar_vector_to_ints(witness)[1:3]]),
                  prove(pk, relation, witness, mapped_backend, self_check=True), mapped_backend)
    if not isinstance(pk.h_query, __import__("numpy").memmap):
        pytest.skip("this backend reads keys into memory: nothing changes under it")
    h = keys / "proving_key" / "h.bin"
    record = len(h.read_bytes()) // mapped_backend.vector_len(pk.h_query)
    with h.open("r+b") as handle:  # H[0] and H[1] swapped in place: valid points, seen through the map
        first, second = handle.read(record), handle.read(record)
        handle.seek(0)
        handle.write(second + first)
    with pytest.raises(MalformedArtifact, match="does not verify against the proving key's own verifying key"):
        prove(pk, relation, witness, mapped_backend, self_check=True)
    _flip_byte_in_place(h, 40)  # now a coordinate off the curve: refused as well
    with pytest.raises(MalformedArtifact):
        prove(pk, relation, witness, mapped_backend, self_check=True)


def test_cli_verify_contributions_detects_a_swapped_key(cli_keys, capsys, tmp_path, circuit_files, backend):
    import shutil

    keydir, _ = cli_keys
    forged = tmp_path / "keys"
    shutil.copytree(keydir, forged)
    directory, _, _ = circuit_files
    # Replace the current key by a fresh setup's key: not derived from the initial one.
    other = tmp_path / "other"
    assert fairproof(["groth16", "setup", str(directory / "circuit.r1cs"), str(other), "--seed", "other", "--backend", backend.name]) == 0
    shutil.rmtree(forged / "proving_key")
    shutil.copytree(other / "proving_key", forged / "proving_key")
    shutil.copyfile(other / "verification_key.json", forged / "verification_key.json")
    capsys.readouterr()
    assert fairproof(["groth16", "verify-contributions", str(forged)]) == 1
    err = capsys.readouterr().err
    assert "phase 2" in err, err


@pytest.mark.snarkjs
@needs_snarkjs
def test_snarkjs_verifies_cli_output(cli_keys, tmp_path):
    keydir, out = cli_keys
    assert snarkjs_verify(keydir / "verification_key.json", out / "public.json", out / "proof.json")
    # The key as setup left it must refuse the post-contribution proof.
    from circuits.groth16 import load_proving_key

    initial = load_proving_key(keydir / "initial_proving_key")
    write_verifying_key(tmp_path / "old_vk.json", initial.vk)
    assert not snarkjs_verify(tmp_path / "old_vk.json", out / "public.json", out / "proof.json")
