"""The development phase-1 writer (circuits.snarkjs.ptau_dev).

A power-8 file must pass our verify_ptau and `snarkjs powersoftau verify`,
give the same `zkey new` bytes from snarkjs and from us, and reproduce
snarkjs's hash chain; every accepting check has a refusing twin (one point
or one hash byte changed).
"""
from __future__ import annotations

import hashlib
import random
import re
import struct
import sys
from pathlib import Path

import pytest

from circuits.backends import get_backend
from circuits.errors import MalformedArtifact
from circuits.snarkjs import find_snarkjs, run_snarkjs, write_r1cs
from circuits.snarkjs import ptau_dev
from circuits.snarkjs.node import missing_reason
from circuits.snarkjs.ptau import (
    ALPHA_TAU_G1, BETA_G2, BETA_TAU_G1, CONTRIBUTIONS, G1_SIZE, G2_SIZE, LAGRANGE_ALPHA_TAU_G1, LAGRANGE_BETA_TAU_G1,
    LAGRANGE_TAU_G1, LAGRANGE_TAU_G2, TAU_G1, TAU_G2, read_ptau, verify_ptau,
)
from circuits.snarkjs.ptau_dev import (
    NobleBlake2b, PtauSummary, contribute_partial_hash, first_challenge_hash, hash_encodings_g1, hash_encodings_g2,
    write_dev_ptau,
)
from circuits.snarkjs.zkey_new import new_zkey
from prover_service.cli import main as fairproof

sys.path.insert(0, str(Path(__file__).parent))
from groth16_circuits import random_system  # noqa: E402

POWER = 8
TIMEOUT = 120
needs_snarkjs = pytest.mark.skipif(find_snarkjs() is None, reason=missing_reason())
G2_SECTIONS = (TAU_G2, BETA_G2, LAGRANGE_TAU_G2)
# Offset of the partial hash in section 7: the count, the five points after the contribution, the public key.
PARTIAL_HASH_AT = 4 + 3 * G1_SIZE + 2 * G2_SIZE + 6 * G1_SIZE + 3 * G2_SIZE


@pytest.fixture(scope="module")
def backend():
    return get_backend(None)


@pytest.fixture(scope="module")
def dev(tmp_path_factory, backend) -> PtauSummary:
    lines: list[str] = []
    summary = write_dev_ptau(tmp_path_factory.mktemp("dev") / "dev.ptau", POWER, backend, progress=lines.append)
    assert len(lines) == 11 and lines[-1].startswith("dev-ptau: section 7")  # the table line, then one per section
    return summary


def section_bytes(path: Path, section: int) -> bytes:
    offset, length = read_ptau(path).sections[section]
    with path.open("rb") as fh:
        fh.seek(offset)
        return fh.read(length)


def with_point_replaced(source: Path, target: Path, section: int, index: int) -> Path:
    """A copy with point `index` of `section` replaced by the point after it (still on the curve)."""
    size = G2_SIZE if section in G2_SECTIONS else G1_SIZE
    offset = read_ptau(source).sections[section][0] + index * size
    data = bytearray(source.read_bytes())
    data[offset:offset + size] = data[offset + size:offset + 2 * size]
    target.write_bytes(bytes(data))
    return target


def snarkjs_hash(output: str, title: str) -> bytes:
    """The 64-byte hash snarkjs printed after `title` (four lines of four 8-digit words)."""
    words = re.findall(r"\b[0-9a-f]{8}\b", output.split(title, 1)[1])[:16]
    return bytes.fromhex("".join(words))


# --- the hash machinery ------------------------------------------------------------------


def test_noble_blake2b_is_blake2b_and_its_state_round_trips():
    rng = random.Random(5)
    for _ in range(30):
        ours, reference = NobleBlake2b(), hashlib.blake2b(digest_size=64)
        for _ in range(rng.randint(0, 5)):
            chunk = rng.randbytes(4 * rng.randint(0, 80))
            ours.update(chunk)
            reference.update(chunk)
        resumed = NobleBlake2b.from_partial_state(ours.partial_state())
        assert ours.digest() == resumed.digest() == reference.digest()


def test_partial_hash_child_process_gives_the_same_bytes(dev):
    compressed = [("G1", hash_encodings_g1(section_bytes(dev.path, TAU_G1))[0]),
                  ("G2", hash_encodings_g2(section_bytes(dev.path, TAU_G2))[0])]
    challenge = first_challenge_hash(POWER)
    child = ptau_dev._start_partial_hash(challenge, compressed)
    assert child is not None
    assert ptau_dev._finish_partial_hash(child, challenge, compressed) == contribute_partial_hash(challenge, compressed)
    assert child.returncode == 0  # the child's answer, not the fallback's


def test_hash_chain_is_recorded(dev):
    """Section 7's next challenge is blake2b(response hash || uncompressed sections 2-6), the response
    hash being the recorded partial hash finished with the public key (what snarkjs verify recomputes)."""
    record = section_bytes(dev.path, CONTRIBUTIONS)
    partial = record[PARTIAL_HASH_AT:PARTIAL_HASH_AT + 216]
    public_key = b"".join(
        hash_encodings_g1(record[4 + 448 + 64 * i:4 + 448 + 64 * (i + 1)])[1] for i in range(6)
    ) + hash_encodings_g2(record[4 + 448 + 384:4 + 448 + 768])[1]
    assert NobleBlake2b.from_partial_state(partial).update(public_key).digest() == dev.response_hash
    hasher = hashlib.blake2b(dev.response_hash, digest_size=64)
    for section in (TAU_G1, TAU_G2, ALPHA_TAU_G1, BETA_TAU_G1, BETA_G2):
        encode = hash_encodings_g2 if section in G2_SECTIONS else hash_encodings_g1
        hasher.update(encode(section_bytes(dev.path, section))[1])
    assert hasher.digest() == dev.next_challenge == read_ptau(dev.path).contributions[0].next_challenge
    compressed = [("G2" if s in G2_SECTIONS else "G1",
                   (hash_encodings_g2 if s in G2_SECTIONS else hash_encodings_g1)(section_bytes(dev.path, s))[0])
                  for s in (TAU_G1, TAU_G2, ALPHA_TAU_G1, BETA_TAU_G1, BETA_G2)]
    assert contribute_partial_hash(first_challenge_hash(POWER), compressed) == partial


# --- accepting ---------------------------------------------------------------------------


def test_dev_ptau_verifies(dev, backend):
    ptau = verify_ptau(dev.path, backend)
    assert (ptau.power, ptau.ceremony_power, ptau.prepared) == (POWER, POWER, True)
    assert [(c.name, c.is_beacon) for c in ptau.contributions] == [("development phase 1", False)]
    assert dev.size == dev.path.stat().st_size
    assert [p.name for p in dev.path.parent.iterdir()] == ["dev.ptau"]  # no temporary file left


def test_each_file_has_its_own_secrets(tmp_path, backend):
    first = write_dev_ptau(tmp_path / "a.ptau", 2, backend, name="")
    second = write_dev_ptau(tmp_path / "b.ptau", 2, backend, name="")
    assert read_ptau(first.path).contributions[0].tau_g1 != read_ptau(second.path).contributions[0].tau_g1
    assert read_ptau(first.path).contributions[0].name == ""
    verify_ptau(first.path, backend)


@pytest.mark.snarkjs
@needs_snarkjs
def test_snarkjs_verifies_dev_ptau(dev):
    done = run_snarkjs(["powersoftau", "verify", dev.path], timeout=TIMEOUT)
    assert "Powers of Tau Ok!" in done.stdout
    assert snarkjs_hash(done.stdout, "Next challenge hash:") == dev.next_challenge
    assert snarkjs_hash(done.stdout, "Response Hash:") == dev.response_hash


@pytest.mark.snarkjs
@needs_snarkjs
def test_partial_hash_matches_a_snarkjs_contribution(tmp_path):
    """Our hashing of a contribution snarkjs made gives the bytes snarkjs stored."""
    fresh, contributed = tmp_path / "pot0.ptau", tmp_path / "pot1.ptau"
    run_snarkjs(["powersoftau", "new", "bn128", 5, fresh], timeout=TIMEOUT)
    run_snarkjs(["powersoftau", "contribute", fresh, contributed, "-e=entropy", "-name=x"], timeout=TIMEOUT)
    compressed = [("G2" if s in G2_SECTIONS else "G1",
                   (hash_encodings_g2 if s in G2_SECTIONS else hash_encodings_g1)(section_bytes(contributed, s))[0])
                  for s in (TAU_G1, TAU_G2, ALPHA_TAU_G1, BETA_TAU_G1, BETA_G2)]
    stored = section_bytes(contributed, CONTRIBUTIONS)[PARTIAL_HASH_AT:PARTIAL_HASH_AT + 216]
    assert contribute_partial_hash(first_challenge_hash(5), compressed) == stored


@pytest.mark.snarkjs
@needs_snarkjs
def test_zkey_new_from_dev_ptau_matches_snarkjs(dev, backend, tmp_path):
    r1cs, _ = random_system(40, 3, seed=11)
    write_r1cs(tmp_path / "circuit.r1cs", r1cs)
    run_snarkjs(["zkey", "new", tmp_path / "circuit.r1cs", dev.path, tmp_path / "snarkjs.zkey"], timeout=TIMEOUT)
    assert new_zkey(r1cs, dev.path, backend) == (tmp_path / "snarkjs.zkey").read_bytes()


def test_cli_dev_ptau(tmp_path, capsys):
    out = tmp_path / "cli.ptau"
    assert fairproof(["groth16", "dev-ptau", "4", str(out), "--name", "ci"]) == 0
    captured = capsys.readouterr()
    warning = captured.err.splitlines()[0]
    assert "WARNING" in warning and "DEVELOPMENT phase 1" in warning and "Perpetual Powers of Tau" in warning
    assert read_ptau(out).contributions[0].name == "ci" and read_ptau(out).power == 4
    assert fairproof(["groth16", "import-ptau", str(out)]) == 0
    capsys.readouterr()


@pytest.mark.parametrize("argv, reason", [
    (["0", "{dir}/a.ptau"], "power must be an integer 1..27, got 0"),
    (["x", "{dir}/a.ptau"], "power must be an integer 1..27, got 'x'"),
    (["28", "{dir}/a.ptau"], "power must be an integer 1..27, got 28"),
    (["3", "{dir}/missing/a.ptau"], "does not exist"),
    (["3", "{dir}/exists.ptau"], "already exists"),
    (["3", "{dir}/a.ptau", "--name", "n" * 65], "snarkjs keeps at most 64"),
])
def test_cli_dev_ptau_refuses_bad_arguments(tmp_path, capsys, argv, reason):
    (tmp_path / "exists.ptau").write_bytes(b"")
    assert fairproof(["groth16", "dev-ptau", *(a.format(dir=tmp_path) for a in argv)]) == 2
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and reason in err
    assert not (tmp_path / "a.ptau").exists()


# --- refusing ----------------------------------------------------------------------------


@pytest.mark.parametrize("section, index, message", [
    (TAU_G1, 300, "tauG1: the points are not consecutive powers of tau"),
    (TAU_G2, 7, "tauG2: the points are not consecutive powers of tau"),
    (ALPHA_TAU_G1, 0, "differs from the section's"),
    (BETA_TAU_G1, 100, "betaTauG1: the points are not consecutive powers of tau"),
    (LAGRANGE_TAU_G1, 2 ** 9 - 1 + 5, "Lagrange tauG1: power 9 is not the Lagrange basis"),
    (LAGRANGE_TAU_G2, 2 ** 3 - 1 + 2, "Lagrange tauG2: power 3 is not the Lagrange basis"),
    (LAGRANGE_ALPHA_TAU_G1, 2 ** 8 - 1, "Lagrange alphaTauG1: power 8 is not the Lagrange basis"),
    (LAGRANGE_BETA_TAU_G1, 0, "Lagrange betaTauG1: power 0 is not the Lagrange basis"),
])
def test_verify_ptau_refuses_one_point_changed(dev, backend, tmp_path, section, index, message):
    changed = with_point_replaced(dev.path, tmp_path / "changed.ptau", section, index)
    with pytest.raises(MalformedArtifact, match=re.escape(message)):
        verify_ptau(changed, backend)


@pytest.mark.snarkjs
@needs_snarkjs
def test_snarkjs_refuses_a_changed_point_and_a_changed_hash(dev, tmp_path):
    changed = with_point_replaced(dev.path, tmp_path / "point.ptau", LAGRANGE_TAU_G2, 2 ** 4 - 1 + 3)
    done = run_snarkjs(["powersoftau", "verify", changed], timeout=TIMEOUT, check=False)
    assert done.returncode != 0 and "Phase2 caclutation does not match" in done.stdout + done.stderr
    data = bytearray(dev.path.read_bytes())
    data[read_ptau(dev.path).sections[CONTRIBUTIONS][0] + PARTIAL_HASH_AT + 130] ^= 1  # a chaining-value byte
    (tmp_path / "hash.ptau").write_bytes(bytes(data))
    done = run_snarkjs(["powersoftau", "verify", tmp_path / "hash.ptau"], timeout=TIMEOUT, check=False)
    assert done.returncode != 0 and "does not match the next challenge" in done.stdout + done.stderr


def test_header_is_snarkjs_prepared_layout(dev):
    data = dev.path.read_bytes()
    assert data[:12] == b"ptau" + struct.pack("<II", 1, 11)
    assert list(read_ptau(dev.path).sections) == [1, 2, 3, 4, 5, 6, 7, 12, 13, 14, 15]
