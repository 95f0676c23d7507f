"""Phase-2 ceremonies on snarkjs .zkey keys: our contributions against snarkjs 0.7.6 and back.

The snarkjs-marked tests build one small circuit, a power-8 ptau and the
initial key with snarkjs once per session, then run ceremonies in every
combination of the two tools: each tool's verifier must accept the other's
chain and print the same contribution hashes. Every accepting check has
tampered twins our verifier (and, where it costs half a second, snarkjs)
must refuse. The tests above the snarkjs line need no node: they run
ceremonies on keys written from known toxic waste with delta = 1, which is
what `snarkjs zkey new` produces.
"""
from __future__ import annotations

import re
import time
from dataclasses import replace
from pathlib import Path

import pytest
from py_ecc import optimized_bn128 as ob

from circuits.backends import get_backend
from circuits.errors import MalformedArtifact
from circuits.field import Q
from circuits.groth16.encoding import fq2_sqrt
from circuits.snarkjs import encode_zkey, find_snarkjs, read_verifying_key, run_snarkjs, write_r1cs, write_wtns
from circuits.snarkjs.binfile import decode_binfile, encode_binfile
from circuits.snarkjs.node import missing_reason
from circuits.snarkjs.zkey import g2_to_zkey
from circuits.snarkjs.zkey_file import (
    contribution_params,
    g1_points,
    g1_section,
    parse_zkey,
    vk_from_zkey,
)
from circuits.snarkjs.zkey_mpc import (
    ChaCha,
    beacon,
    contribute,
    format_hash,
    hash_to_g2,
    verify_contributions,
)
from circuits.groth16.setup import ToxicWaste
from groth16_circuits import random_system

needs_snarkjs = pytest.mark.skipif(find_snarkjs() is None, reason=missing_reason())
TIMEOUT = 120
BEACON_HEX = "0102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f20"


@pytest.fixture(scope="module")
def backend():
    return get_backend(None)


@pytest.fixture(scope="module")
def fresh_key(backend) -> bytes:
    """An initial key as `zkey new` leaves it (delta = 1, no contributions), from known secrets."""
    r1cs, _ = random_system(40, 2, seed=3)
    toxic = ToxicWaste(tau=123456789, alpha=1111, beta=2222, gamma=3333, delta=1)
    return encode_zkey(r1cs, toxic, backend)


def expect_refusal(label: str, reason: str, fn, *args) -> None:
    """fn(*args) must raise MalformedArtifact whose message matches `reason`."""
    try:
        fn(*args)
    except MalformedArtifact as exc:
        assert re.search(reason, str(exc)), f"{label}: refused for another reason: {exc}"
    else:
        pytest.fail(f"{label}: accepted")


def with_point(section: bytes, index: int, backend) -> bytes:
    points = g1_points(section)
    points[index] = backend.g1_add(points[index], backend.g1_generator())
    return g1_section(points)


# --- no node needed ------------------------------------------------------------------------


def test_chacha_matches_the_chacha20_keystream():
    # RFC 7539 A.1 test vector #1: all-zero key, nonce and counter; ffjavascript
    # reads the keystream as little-endian words.
    rng = ChaCha([0] * 8)
    words = [rng.next_u32() for _ in range(4)]
    assert words == [0xADE0B876, 0x903DF1A0, 0xE56A5D40, 0x28BD8653]
    assert rng.next_u64() == (0xB819D2BD << 32) | 0x1AED8DA0  # nextU64 reads the high word first


def test_hash_to_g2_lands_in_the_subgroup(backend):
    p = hash_to_g2(bytes(range(64)))
    assert backend.g2_is_valid(p) and p is not None
    assert hash_to_g2(bytes(range(64))) == p and hash_to_g2(bytes(64)) != p


def test_parse_encode_round_trip_and_vk(fresh_key, backend):
    key = parse_zkey(fresh_key, backend)
    assert key.encode() == fresh_key
    assert key.contributions == () and key.header.delta_1 == backend.g1_generator()
    vk = vk_from_zkey(key)
    assert vk.n_public == 2 and vk.delta_g2 == backend.g2_generator()


def _twist_point_outside_subgroup(backend) -> tuple:
    x0 = 1
    while True:
        rhs = ob.FQ2([x0, 0]) ** 3 + ob.b2
        y = fq2_sqrt(tuple(int(c) for c in rhs.coeffs))
        if y is not None and not backend.g2_is_valid(((x0, 0), y)):
            return ((x0, 0), y)
        x0 += 1


def test_parse_refuses_malformed_keys(fresh_key, backend):
    sections = decode_binfile(fresh_key, b"zkey", (1,), "zkey").sections

    def rebuild(**new: bytes) -> bytes:
        merged = dict(sections)
        merged.update({int(k[1:]): v for k, v in new.items()})
        return encode_binfile(b"zkey", 1, list(merged.items()))

    header = sections[2]
    off_curve = bytearray(header)
    off_curve[4 + 32 + 4 + 32 + 12] ^= 1  # alpha_1.x
    q_limit = bytearray(header)
    q_limit[4 + 32 + 4 + 32 + 12:4 + 32 + 4 + 32 + 12 + 32] = Q.to_bytes(32, "little")
    vk_beta2 = 4 + 32 + 4 + 32 + 12 + 128
    bad_subgroup = bytearray(header)
    bad_subgroup[vk_beta2:vk_beta2 + 128] = g2_to_zkey(_twist_point_outside_subgroup(backend))
    bad_coef = bytearray(sections[4])
    bad_coef[4] = 2  # matrix C is never stored
    cases = {
        "wrong magic": (b"zkez" + fresh_key[4:], "magic"),
        "protocol": (rebuild(s1=(2).to_bytes(4, "little")), "not a Groth16 key"),
        "curve": (rebuild(s2=header[:4] + (Q + 2).to_bytes(32, "little") + header[36:]), "not BN254"),
        "H length": (rebuild(s9=sections[9][:-64]), "H section"),
        "IC length": (rebuild(s3=sections[3] + sections[3][:64]), "IC section"),
        "off curve": (rebuild(s2=bytes(off_curve)), "alpha_1"),
        "coordinate >= q": (rebuild(s2=bytes(q_limit)), ">= q"),
        "G2 subgroup": (rebuild(s2=bytes(bad_subgroup)), "subgroup"),
        "coefficient": (rebuild(s4=bytes(bad_coef)), "matrix"),
        "H point": (rebuild(s9=sections[9][:64] + bytes([sections[9][64] ^ 1]) + sections[9][65:]), "H section"),
    }
    for label, (data, reason) in cases.items():
        expect_refusal(label, re.escape(reason), parse_zkey, data, backend)


def test_contribution_name_is_cut_like_snarkjs():
    params = contribution_params("é" * 70)
    assert params[0] == 1 and params[2:].decode("utf-8") == "é" * 64
    assert contribution_params("") == b"" and contribution_params(None) == b""


def test_our_ceremony_verifies_and_tampered_twins_are_refused(fresh_key, backend):
    k1, h1 = contribute(fresh_key, "alice", "entropy one", backend)
    k2, h2 = contribute(k1, "bob", b"entropy two", backend)
    k3, h3 = beacon(k2, BEACON_HEX, 10, "beacon", backend)
    report = verify_contributions(fresh_key, k3, backend)
    assert [(r.index, r.name, r.contribution_hash, r.type) for r in report.contributions] == [
        (1, "alice", h1, 0), (2, "bob", h2, 0), (3, "beacon", h3, 1)
    ]
    assert report.contributions[2].beacon_hash.hex() == BEACON_HEX and report.contributions[2].num_iterations_exp == 10
    # two contributions with the same entropy still differ (os.urandom is mixed in)
    assert contribute(fresh_key, "alice", "entropy one", backend)[1] != h1
    # the beacon is deterministic
    assert beacon(k2, BEACON_HEX, 10, "beacon", backend) == (k3, h3)
    # an intermediate key verifies against the start, the end against the intermediate
    assert len(verify_contributions(fresh_key, k1, backend).contributions) == 1
    assert verify_contributions(k1, k3, backend).n_initial == 1

    for label, bad, reason in _twins(k3, backend):
        expect_refusal(label, reason, verify_contributions, fresh_key, bad, backend)


def _twins(final: bytes, backend) -> list[tuple[str, bytes, str]]:
    """Tampered versions of a valid 3-record chain (two random contributions, then a beacon)."""
    key = parse_zkey(final, backend)
    c = key.contributions
    g1 = backend.g1_generator()
    other_delta = backend.g1_add(c[0].delta_after, g1)
    wrong_beacon = replace(c[2], beacon_hash=bytes(32), params=contribution_params(c[2].name, (10, bytes(32))))
    flipped = bytes([c[1].transcript[0] ^ 1]) + c[1].transcript[1:]
    scaled_delta = replace(key.header, delta_1=backend.g1_mul(key.header.delta_1, 2), delta_2=backend.g2_mul(key.header.delta_2, 2))
    return [
        ("changed deltaAfter", replace(key, contributions=(replace(c[0], delta_after=other_delta), *c[1:])).encode(), "transcript|deltaAfter"),
        ("changed last deltaAfter", replace(key, contributions=(*c[:2], replace(c[2], delta_after=other_delta))).encode(), "deltaAfter"),
        ("changed key delta", replace(key, header=scaled_delta).encode(), "delta_1"),
        ("tampered transcript", replace(key, contributions=(c[0], replace(c[1], transcript=flipped), c[2])).encode(), "transcript"),
        ("reordered", replace(key, contributions=(c[1], c[0], c[2])).encode(), "transcript"),
        ("dropped", replace(key, contributions=(c[0], c[2])).encode(), "transcript"),
        ("dropped last", replace(key, contributions=c[:2]).encode(), "delta_1"),
        ("wrong beacon hash", replace(key, contributions=(*c[:2], wrong_beacon)).encode(), "beacon hash"),
        ("H point", replace(key, h=with_point(key.h, 5, backend)).encode(), "H section"),
        ("C point", replace(key, c=with_point(key.c, 3, backend)).encode(), r"C \(L\) section"),
        ("IC point", replace(key, ic=with_point(key.ic, 1, backend)).encode(), "IC section"),
        ("B2 point", replace(key, b2=key.b2[128:256] + key.b2[128:]).encode(), "B2 section"),
        ("other circuit", replace(key, cs_hash=bytes(64)).encode(), "csHash"),
    ]


def test_reference_backend_agrees(backend):
    """A ceremony step on the py_ecc backend verifies on the default one and back (tiny key)."""
    reference = get_backend("reference")
    r1cs, _ = random_system(3, 1, seed=5)
    initial = encode_zkey(r1cs, ToxicWaste(tau=99, alpha=5, beta=6, gamma=7, delta=1), backend)
    k1, h1 = contribute(initial, "ref", "x", reference)
    k2, h2 = beacon(k1, "ab" * 8, 10, None, backend)
    report = verify_contributions(initial, k2, reference)
    assert [r.contribution_hash for r in report.contributions] == [h1, h2]
    assert report.contributions[1].name is None


# --- against snarkjs -------------------------------------------------------------------------

_ANSI = re.compile(r"\x1b\[[0-9;]*m")
_HASH_LINES = r"((?:\s*(?:[0-9a-f]{8} ){3}[0-9a-f]{8}){4})"


def _hash_after(text: str, title: str) -> list[bytes]:
    text = _ANSI.sub("", text)
    return [bytes.fromhex(re.sub(r"\s", "", m)) for m in re.findall(re.escape(title) + r"[^\n]*\n" + _HASH_LINES, text)]


def snarkjs_contribution_hashes(verify_output: str) -> dict[int, bytes]:
    """`zkey verify` lists "contribution #i name:" then the hash, last first."""
    text = _ANSI.sub("", verify_output)
    found = re.findall(r"contribution #(\d+)[^\n]*\n" + _HASH_LINES, text)
    return {int(i): bytes.fromhex(re.sub(r"\s", "", h)) for i, h in found}


@pytest.fixture(scope="session")
def ceremony(tmp_path_factory) -> Path:
    """circuit.r1cs, witness.wtns, a prepared power-8 ptau and snarkjs's initial key."""
    if find_snarkjs() is None:
        pytest.skip(missing_reason())
    d = tmp_path_factory.mktemp("zkey_mpc")
    r1cs, witness = random_system(100, 3, seed=11)
    write_r1cs(d / "circuit.r1cs", r1cs)
    write_wtns(d / "witness.wtns", witness)
    run_snarkjs(["powersoftau", "new", "bn128", 8, d / "pot0.ptau"], timeout=TIMEOUT)
    run_snarkjs(["powersoftau", "contribute", d / "pot0.ptau", d / "pot1.ptau", "-e=phase one", "-name=first"], timeout=TIMEOUT)
    run_snarkjs(["powersoftau", "prepare", "phase2", d / "pot1.ptau", d / "final.ptau"], timeout=TIMEOUT)
    run_snarkjs(["zkey", "new", d / "circuit.r1cs", d / "final.ptau", d / "k0.zkey"], timeout=TIMEOUT)
    return d


def snarkjs_verify(d: Path, zkey: Path) -> tuple[bool, dict[int, bytes]]:
    done = run_snarkjs(["zkey", "verify", d / "circuit.r1cs", d / "final.ptau", zkey], timeout=TIMEOUT, check=False)
    out = done.stdout + done.stderr
    ok = done.returncode == 0 and "ZKey Ok!" in out
    assert ok or "INVALID" in out or "does not match" in out or "not identical" in out, out[-2000:]
    return ok, snarkjs_contribution_hashes(out)


def snarkjs_contribute(src: Path, dst: Path, name: str, entropy: str) -> bytes:
    done = run_snarkjs(["zkey", "contribute", src, dst, f"-name={name}", f"-e={entropy}"], timeout=TIMEOUT)
    (digest,) = _hash_after(done.stdout, "Contribution Hash:")
    return digest


def snarkjs_beacon(src: Path, dst: Path, name: str) -> bytes:
    done = run_snarkjs(["zkey", "beacon", src, dst, BEACON_HEX, 10, f"-n={name}"], timeout=TIMEOUT)
    (digest,) = _hash_after(done.stdout, "Contribution Hash:")
    return digest


@pytest.mark.snarkjs
@needs_snarkjs
def test_our_ceremony_passes_snarkjs_verify(ceremony, backend):
    d = ceremony
    initial = (d / "k0.zkey").read_bytes()
    assert parse_zkey(initial, backend).encode() == initial
    t0 = time.perf_counter()
    k1, h1 = contribute(initial, "auditor one", "entropy from the keyboard", backend)
    t_contribute = time.perf_counter() - t0
    k2, h2 = beacon(k1, BEACON_HEX, 10, "closing beacon", backend)
    (d / "ours_final.zkey").write_bytes(k2)
    t0 = time.perf_counter()
    report = verify_contributions(initial, k2, backend)
    t_verify = time.perf_counter() - t0
    assert [r.contribution_hash for r in report.contributions] == [h1, h2]
    t0 = time.perf_counter()
    ok, hashes = snarkjs_verify(d, d / "ours_final.zkey")
    t_snarkjs = time.perf_counter() - t0
    assert ok
    assert hashes == {1: h1, 2: h2}
    print(f"contribute {t_contribute:.2f} s, our verify {t_verify:.2f} s, snarkjs verify {t_snarkjs:.2f} s")

    # the key proves: snarkjs proves with it and verifies against the vk we derive
    run_snarkjs(["groth16", "prove", d / "ours_final.zkey", d / "witness.wtns", d / "proof.json", d / "public.json"], timeout=TIMEOUT)
    run_snarkjs(["zkey", "export", "verificationkey", d / "ours_final.zkey", d / "vk.json"], timeout=TIMEOUT)
    assert read_verifying_key(d / "vk.json") == vk_from_zkey(parse_zkey(k2, backend))
    done = run_snarkjs(["groth16", "verify", d / "vk.json", d / "public.json", d / "proof.json"], timeout=TIMEOUT)
    assert "OK" in done.stdout


@pytest.mark.snarkjs
@needs_snarkjs
def test_snarkjs_ceremony_passes_our_verify(ceremony, backend):
    d = ceremony
    long_name = "ceremony participant with a rather long name, naïve café, and more words"
    h1 = snarkjs_contribute(d / "k0.zkey", d / "s1.zkey", long_name, "snarkjs entropy")
    h2 = snarkjs_contribute(d / "s1.zkey", d / "s2.zkey", "second", "more entropy")
    h3 = snarkjs_beacon(d / "s2.zkey", d / "s3.zkey", "beacon")
    final = (d / "s3.zkey").read_bytes()
    report = verify_contributions((d / "k0.zkey").read_bytes(), final, backend)
    assert [(r.contribution_hash, r.type) for r in report.contributions] == [(h1, 0), (h2, 0), (h3, 1)]
    key = parse_zkey(final, backend)
    assert key.encode() == final
    assert key.contributions[0].params == contribution_params(long_name)
    # our beacon on snarkjs's key is byte-identical to snarkjs's beacon
    assert beacon((d / "s2.zkey").read_bytes(), BEACON_HEX, 10, "beacon", backend) == (final, h3)
    # the hash we would print is the one snarkjs printed
    assert format_hash(h3) in _ANSI.sub("", run_snarkjs(["zkey", "verify", d / "circuit.r1cs", d / "final.ptau", d / "s3.zkey"], timeout=TIMEOUT).stdout)


@pytest.mark.snarkjs
@needs_snarkjs
@pytest.mark.parametrize("order", ["ours then snarkjs", "snarkjs then ours"])
def test_mixed_chains(ceremony, backend, order):
    d = ceremony
    initial = (d / "k0.zkey").read_bytes()
    tag = order.split()[0]
    if tag == "ours":
        k1, h1 = contribute(initial, "ours", "py entropy", backend)
        (d / f"{tag}1.zkey").write_bytes(k1)
        h2 = snarkjs_contribute(d / f"{tag}1.zkey", d / f"{tag}2.zkey", "theirs", "js entropy")
        k3, h3 = beacon((d / f"{tag}2.zkey").read_bytes(), BEACON_HEX, 10, "our beacon", backend)
        (d / f"{tag}3.zkey").write_bytes(k3)
    else:
        h1 = snarkjs_contribute(d / "k0.zkey", d / f"{tag}1.zkey", "theirs", "js entropy")
        k2, h2 = contribute((d / f"{tag}1.zkey").read_bytes(), "ours", "py entropy", backend)
        (d / f"{tag}2.zkey").write_bytes(k2)
        h3 = snarkjs_beacon(d / f"{tag}2.zkey", d / f"{tag}3.zkey", "their beacon")
    final = (d / f"{tag}3.zkey").read_bytes()
    report = verify_contributions(initial, final, backend)
    assert [r.contribution_hash for r in report.contributions] == [h1, h2, h3]
    ok, hashes = snarkjs_verify(d, d / f"{tag}3.zkey")
    assert ok and hashes == {1: h1, 2: h2, 3: h3}


@pytest.mark.snarkjs
@needs_snarkjs
def test_tampered_twins_refused_by_both(ceremony, backend):
    d = ceremony
    initial = (d / "k0.zkey").read_bytes()
    k1, _ = contribute(initial, "a", "1", backend)
    (d / "t1.zkey").write_bytes(k1)
    snarkjs_contribute(d / "t1.zkey", d / "t2.zkey", "b", "2")
    k3, _ = beacon((d / "t2.zkey").read_bytes(), BEACON_HEX, 10, "c", backend)
    assert verify_contributions(initial, k3, backend)
    for i, (label, bad, reason) in enumerate(_twins(k3, backend)):
        expect_refusal(label, reason, verify_contributions, initial, bad, backend)
        path = d / f"twin{i}.zkey"
        path.write_bytes(bad)
        ok, _ = snarkjs_verify(d, path)
        assert not ok, label
