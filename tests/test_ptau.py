"""Phase 1 from a snarkjs powers-of-tau file, and `snarkjs zkey new` reproduced.

One small ceremony (power 8: new, one contribution, prepare phase2) is run
with snarkjs itself per session. Every accepting check has a refusing twin:
a tampered copy of the same file must be refused with a MalformedArtifact
that names what is wrong.
"""
from __future__ import annotations

import struct
import sys
from pathlib import Path

import pytest

from circuits.backends import get_backend
from circuits.errors import MalformedArtifact
from circuits.field import Q, R
from circuits.groth16 import check_proof, derive_keys_from_phase1, domain_size, phase2, prove
from circuits.snarkjs import find_snarkjs, run_snarkjs, write_r1cs
from circuits.snarkjs.node import missing_reason
from circuits.snarkjs.ptau import (
    ALPHA_TAU_G1,
    BETA_G2,
    CONTRIBUTIONS,
    G1_SIZE,
    G2_SIZE,
    LAGRANGE_TAU_G1,
    LAGRANGE_TAU_G2,
    TAU_G1,
    TAU_G2,
    phase1_points,
    read_ptau,
    verify_ptau,
)
from circuits.snarkjs.zkey import g1_to_zkey, g2_to_zkey
from circuits.snarkjs.zkey_new import _wasm_sub_affine, circuit_hash, format_hash, g1_uncompressed, new_zkey
from prover_service.cli import main as fairproof

sys.path.insert(0, str(Path(__file__).parent))
from groth16_circuits import cubic, cubic_witness, random_system  # noqa: E402

POWER = 8
TIMEOUT = 120


def needs_snarkjs(test):
    return pytest.mark.snarkjs(pytest.mark.skipif(find_snarkjs() is None, reason=missing_reason())(test))


@pytest.fixture(scope="module")
def backend():
    return get_backend(None)


@pytest.fixture(scope="session")
def ceremony(tmp_path_factory) -> dict[str, Path]:
    """pot0 (fresh), pot1 (one contribution), prepared (pot1 after prepare phase2)."""
    directory = tmp_path_factory.mktemp("ptau")
    files = {"pot0": directory / "pot0.ptau", "pot1": directory / "pot1.ptau", "prepared": directory / "prepared.ptau"}
    run_snarkjs(["powersoftau", "new", "bn128", POWER, files["pot0"]], timeout=TIMEOUT)
    run_snarkjs(["powersoftau", "contribute", files["pot0"], files["pot1"], "-e=entropy", "-name=x"], timeout=TIMEOUT)
    run_snarkjs(["powersoftau", "prepare", "phase2", files["pot1"], files["prepared"]], timeout=TIMEOUT)
    return files


def tampered(source: Path, target: Path, edits: list[tuple[int, bytes]]) -> Path:
    data = bytearray(source.read_bytes())
    for offset, replacement in edits:
        data[offset:offset + len(replacement)] = replacement
    target.write_bytes(bytes(data))
    return target


def point_offset(path: Path, section: int, index: int) -> int:
    size = G2_SIZE if section in (TAU_G2, BETA_G2, LAGRANGE_TAU_G2) else G1_SIZE
    return read_ptau(path).sections[section][0] + index * size


# --- accepting ------------------------------------------------------------------------


@needs_snarkjs
def test_honest_ptau_reads_and_verifies(ceremony, backend):
    ptau = verify_ptau(ceremony["prepared"], backend)
    assert (ptau.power, ptau.ceremony_power, ptau.prepared) == (POWER, POWER, True)
    assert [(c.name, c.is_beacon) for c in ptau.contributions] == [("x", False)]
    unprepared = verify_ptau(ceremony["pot1"], backend)
    assert not unprepared.prepared and unprepared.contributions == ptau.contributions


@needs_snarkjs
def test_phase1_from_ptau_gives_keys_that_prove(ceremony, backend):
    r1cs = cubic()
    phase1 = phase1_points(ceremony["prepared"], domain_size(r1cs), backend)
    initial, _ = derive_keys_from_phase1(r1cs, backend, phase1)
    # gamma = delta = 1 until a phase-2 contribution; the verifier refuses such a key.
    pk, _ = phase2.contribute(initial, phase2.start_transcript(initial, backend), backend, name="test")
    witness = cubic_witness(3)
    proof = prove(pk, r1cs, witness, backend)
    public = r1cs.public_inputs(witness)
    assert check_proof(pk.vk, public, proof, backend).ok
    assert not check_proof(pk.vk, [(public[0] + 1) % R], proof, backend).ok


@needs_snarkjs
def test_new_zkey_is_byte_identical_to_snarkjs(ceremony, backend, tmp_path):
    r1cs, _ = random_system(40, 3, seed=11)
    write_r1cs(tmp_path / "circuit.r1cs", r1cs)
    done = run_snarkjs(["zkey", "new", tmp_path / "circuit.r1cs", ceremony["prepared"], tmp_path / "snarkjs.zkey"], timeout=TIMEOUT)
    ours = new_zkey(r1cs, ceremony["prepared"], backend)
    assert ours == (tmp_path / "snarkjs.zkey").read_bytes()
    # The circuit hash is the one snarkjs printed (four lines of four words after "Circuit hash:").
    printed = done.stdout.split("Circuit hash:")[1].split()[:16]
    assert " ".join(printed) == format_hash(circuit_hash(ours)).replace("\n", " ")


@needs_snarkjs
def test_new_zkey_refuses_what_snarkjs_refuses(ceremony, backend):
    with pytest.raises(MalformedArtifact, match="not prepared for phase 2"):
        new_zkey(cubic(), ceremony["pot1"], backend)
    too_big, _ = random_system(300, 1, seed=3)  # 2^9 rows on a 2^8 ceremony
    with pytest.raises(MalformedArtifact, match="power 8 is too small"):
        new_zkey(too_big, ceremony["prepared"], backend)


@needs_snarkjs
def test_cli_import_ptau(ceremony, capsys):
    assert fairproof(["groth16", "import-ptau", str(ceremony["prepared"]), "--check-power", "4"]) == 0
    out = capsys.readouterr().out
    assert "power: 8" in out and "ceremony power: 8" in out and "contributions: 1 (x)" in out
    assert "prepared for phase 2: yes" in out
    assert fairproof(["groth16", "import-ptau", str(ceremony["pot1"])]) == 0
    assert "prepared for phase 2: no" in capsys.readouterr().out


# --- refusing -------------------------------------------------------------------------


@needs_snarkjs
def test_cli_import_ptau_refuses_unusable_files(ceremony, capsys, tmp_path):
    for args, reason in (
        ([str(ceremony["prepared"]), "--check-power", "9"], "has power 8, cannot serve a 2^9 domain"),
        ([str(ceremony["pot1"]), "--check-power", "4"], "not prepared for phase 2"),
        ([str(ceremony["pot0"])], "has no contributions"),
        ([str(tmp_path / "absent.ptau")], "does not exist"),
    ):
        assert fairproof(["groth16", "import-ptau", *args]) == 2
        err = capsys.readouterr().err
        assert reason in err and "Traceback" not in err and len(err.strip().splitlines()) == 1, err


@needs_snarkjs
def test_tampered_tau_powers_are_refused(ceremony, backend, tmp_path):
    source = ceremony["prepared"]
    ptau = read_ptau(source)
    g1_point = ptau.g1_points(TAU_G1, 5, 1)[0]
    doubled = g1_to_zkey(backend.g1_add(g1_point, g1_point))
    bad = tampered(source, tmp_path / "tau_g1.ptau", [(point_offset(source, TAU_G1, 5), doubled)])
    with pytest.raises(MalformedArtifact, match="tauG1: the points are not consecutive powers of tau"):
        verify_ptau(bad, backend)
    g2_point = ptau.g2_points(TAU_G2, 3, 1)[0]
    doubled2 = g2_to_zkey(backend.g2_add(g2_point, g2_point))
    bad = tampered(source, tmp_path / "tau_g2.ptau", [(point_offset(source, TAU_G2, 3), doubled2)])
    with pytest.raises(MalformedArtifact, match="tauG2: the points are not consecutive powers of tau"):
        verify_ptau(bad, backend)


@needs_snarkjs
def test_tampered_alpha_and_beta_are_refused(ceremony, backend, tmp_path):
    source = ceremony["prepared"]
    ptau = read_ptau(source)
    g1 = backend.g1_generator()
    alpha7 = ptau.g1_points(ALPHA_TAU_G1, 7, 1)[0]
    bad = tampered(source, tmp_path / "alpha.ptau", [(point_offset(source, ALPHA_TAU_G1, 7), g1_to_zkey(backend.g1_add(alpha7, g1)))])
    with pytest.raises(MalformedArtifact, match="alphaTauG1: the points are not consecutive powers of tau"):
        verify_ptau(bad, backend)

    # alpha[0] alone: the last contribution no longer records the section's value.
    bad = tampered(source, tmp_path / "alpha0.ptau", [(point_offset(source, ALPHA_TAU_G1, 0), g1_to_zkey(g1))])
    with pytest.raises(MalformedArtifact, match="last contribution's alphaTauG1\\[0\\] differs"):
        verify_ptau(bad, backend)

    # betaG2 replaced in the section and in the contribution record: the pairing check catches it.
    beta_g2 = ptau.g2_points(BETA_G2, 0, 1)[0]
    other = g2_to_zkey(backend.g2_add(beta_g2, backend.g2_generator()))
    record = ptau.sections[CONTRIBUTIONS][0] + 4 + G1_SIZE + G2_SIZE + 2 * G1_SIZE
    bad = tampered(source, tmp_path / "beta.ptau", [(point_offset(source, BETA_G2, 0), other), (record, other)])
    with pytest.raises(MalformedArtifact, match="betaG2: is not beta of betaTauG1"):
        verify_ptau(bad, backend)


@pytest.mark.parametrize("section", [LAGRANGE_TAU_G1, LAGRANGE_TAU_G2])
@needs_snarkjs
def test_swapped_lagrange_points_are_refused(ceremony, backend, tmp_path, section):
    source = ceremony["prepared"]
    first = (1 << 4) - 1  # power 4 starts at point 15
    size = G2_SIZE if section == LAGRANGE_TAU_G2 else G1_SIZE
    a, b = point_offset(source, section, first + 2), point_offset(source, section, first + 9)
    data = source.read_bytes()
    bad = tampered(source, tmp_path / "swapped.ptau", [(a, data[b:b + size]), (b, data[a:a + size])])
    with pytest.raises(MalformedArtifact, match="power 4 is not the Lagrange basis"):
        verify_ptau(bad, backend)
    # A check restricted to other powers does not read power 4: say so by passing.
    verify_ptau(bad, backend, lagrange_powers=[3, 5])
    # ... and the CLI names the failure when asked for that power.
    assert fairproof(["groth16", "import-ptau", str(bad), "--check-power", "4"]) == 2


@needs_snarkjs
def test_wrong_header_and_truncation_are_refused(ceremony, backend, tmp_path):
    source = ceremony["prepared"]
    q_offset = read_ptau(source).sections[1][0] + 4
    bad = tampered(source, tmp_path / "q.ptau", [(q_offset, (Q + 2).to_bytes(32, "little"))])
    with pytest.raises(MalformedArtifact, match="header prime q = .* is not the BN254 base field"):
        read_ptau(bad)
    bad = tampered(source, tmp_path / "magic.ptau", [(0, b"zkey")])
    with pytest.raises(MalformedArtifact, match="wrong magic"):
        read_ptau(bad)
    (tmp_path / "short.ptau").write_bytes(source.read_bytes()[:-100])
    with pytest.raises(MalformedArtifact, match="truncated"):
        read_ptau(tmp_path / "short.ptau")
    (tmp_path / "stub.ptau").write_bytes(b"ptau")
    with pytest.raises(MalformedArtifact, match="truncated"):
        read_ptau(tmp_path / "stub.ptau")
    with pytest.raises(MalformedArtifact, match="has no contributions"):
        verify_ptau(ceremony["pot0"], backend)


def _fq2_sqrt(a: tuple[int, int]) -> tuple[int, int] | None:
    """A square root in Fq2 = Fq[u]/(u^2+1) (q = 3 mod 4), or None."""
    def sqrt(v: int) -> int | None:
        s = pow(v, (Q + 1) // 4, Q)
        return s if s * s % Q == v % Q else None

    alpha = sqrt(a[0] * a[0] + a[1] * a[1])
    if alpha is None:
        return None
    for candidate in ((a[0] + alpha) * pow(2, -1, Q), (a[0] - alpha) * pow(2, -1, Q)):
        x0 = sqrt(candidate)
        if x0:
            return (x0, a[1] * pow(2 * x0, -1, Q) % Q)
    return None


@needs_snarkjs
def test_points_off_the_curve_or_subgroup_are_refused(ceremony, backend, tmp_path):
    source = ceremony["prepared"]
    offset = point_offset(source, TAU_G1, 3)
    y_word = int.from_bytes(source.read_bytes()[offset + 32:offset + 64], "little")
    bad = tampered(source, tmp_path / "off.ptau", [(offset + 32, ((y_word + 1) % Q).to_bytes(32, "little"))])
    with pytest.raises(MalformedArtifact, match="tauG1: point 3 is not on the BN254 G1 curve"):
        verify_ptau(bad, backend)
    bad = tampered(source, tmp_path / "big.ptau", [(offset, (Q + 1).to_bytes(32, "little"))])
    with pytest.raises(MalformedArtifact, match="tauG1: point 3 has a coordinate >= q"):
        verify_ptau(bad, backend)

    # A point on the twist outside the order-R subgroup (the cofactor is large, so any
    # point found from a random x is one).
    b2 = (27 * pow(82, -1, Q) % Q, -3 * pow(82, -1, Q) % Q)
    x = (5, 1)
    while True:
        x2 = ((x[0] * x[0] - x[1] * x[1]) % Q, 2 * x[0] * x[1] % Q)
        x3 = ((x2[0] * x[0] - x2[1] * x[1]) % Q, (x2[0] * x[1] + x2[1] * x[0]) % Q)
        y = _fq2_sqrt(((x3[0] + b2[0]) % Q, (x3[1] + b2[1]) % Q))
        if y is not None:
            break
        x = (x[0] + 1, x[1])
    assert not backend.g2_is_valid((x, y))
    bad = tampered(source, tmp_path / "subgroup.ptau", [(point_offset(source, TAU_G2, 3), g2_to_zkey((x, y)))])
    with pytest.raises(MalformedArtifact, match="tauG2: point 3 is not in the order-R subgroup"):
        verify_ptau(bad, backend)


def test_h_hash_reads_past_tau_g1_like_snarkjs(backend):
    """For n >= 2^15 on a ceremony of power log2(n), snarkjs hashes one H difference
    made from the 64 bytes after tauG1: section 3's header and the start of tauG2[0]
    (here for power 15), words that are not reduced mod q. Expected value recorded
    from wasmcurves (g1m_subAffine, batchToAffine, batchLEMtoU) under node."""
    garbage = (struct.pack("<IQ", 3, (1 << 15) * G2_SIZE) + g2_to_zkey(backend.g2_generator()))[:G1_SIZE]
    words = (int.from_bytes(garbage[:32], "little"), int.from_bytes(garbage[32:], "little"))
    assert min(words) >= Q  # the case where plain arithmetic mod q gives another point
    t = backend.g1_mul(backend.g1_generator(), 12345)
    mont = tuple(v * ((1 << 256) % Q) % Q for v in t)
    expected = bytes.fromhex(
        "0812ac6596553dbe54d2b9ac640ea3958b15e2318f732c04f181b9182716cd64"
        "22d2c8ededaac184dc3a56ad6a1403e0c67380b3961021d3d51a5af4a4a5be11"
    )
    assert g1_uncompressed(_wasm_sub_affine(words, mont)) == expected
