"""Proving keys in snarkjs's H basis (odd-coset Lagrange) and snarkjs .zkey files.

The H query [L'_{2j+1}(tau) / delta]_1 (j < n, L' the Lagrange basis of the
2n-th roots) pairs with the values of A*B - C at the odd 2n-th roots; the
monomial basis [tau^i Z(tau) / delta]_1 with the quotient's coefficients. Both
sum to [(A*B - C)(tau) / delta]_1, so for the same secrets and blinding the two
keys give the same proof. The snarkjs-marked tests make keys with snarkjs's own
ceremony commands and check proofs with `snarkjs groth16 verify`; each accepting
check has a twin that must be refused.
"""
from __future__ import annotations

import random
import struct

import pytest

from backend_fixtures import mcl_or_skip
from circuits.backends import get_backend, ntt
from circuits.backends.native import kernels as native_kernels
from circuits.errors import CircuitError, MalformedArtifact, UnsatisfiedConstraint
from circuits.field import Q, R
from circuits.groth16 import prove, setup, verify
from circuits.groth16.keys import (
    MONOMIAL_Z,
    ODD_COSET_LAGRANGE,
    convert_proving_key,
    load_proving_key,
    proving_key_digest,
    read_key_header,
    save_proving_key,
)
from circuits.groth16.phase2 import contribute, start_transcript
from circuits.groth16.setup import sample_toxic_waste
from circuits.snarkjs.binfile import decode_binfile, encode_binfile
from circuits.snarkjs.json_formats import read_verifying_key, write_proof, write_public, write_verifying_key
from circuits.snarkjs.node import find_snarkjs, missing_reason, run_snarkjs
from circuits.snarkjs.r1cs import write_r1cs
from circuits.snarkjs.zkey import encode_zkey, g1_to_zkey
from circuits.snarkjs.zkey_read import decode_zkey, read_zkey
from groth16_circuits import cubic, cubic_witness, random_system

needs_snarkjs = pytest.mark.skipif(find_snarkjs() is None, reason=missing_reason())
TIMEOUT = 120
R_FIXED, S_FIXED = 0x1234567, 0x7654321


@pytest.fixture(scope="module")
def mcl():
    return mcl_or_skip()


@pytest.fixture(scope="module")
def system():
    return random_system(24, 3, seed=7)


@pytest.fixture(scope="module")
def coset_keys(mcl, system):
    r1cs, _ = system
    return setup(r1cs, mcl, seed="coset", h_basis=ODD_COSET_LAGRANGE)


def _rows(n: int, seed: int) -> tuple[list[int], list[int], list[int]]:
    rng = random.Random(seed)
    a = [rng.randrange(R) for _ in range(n)]
    b = [rng.choice([rng.randrange(R), rng.randrange(1 << 20), 0]) for _ in range(n)]
    return a, b, [x * y % R for x, y in zip(a, b)]


# --- the odd-coset scalars -----------------------------------------------------------


@pytest.mark.parametrize("n", [1, 2, 8, 64])
def test_odd_coset_values_are_a_times_b_minus_c_at_the_odd_roots(n):
    """Against the definition: interpolate each row vector, evaluate directly at w^(2j+1)."""
    ref = get_backend("reference")
    a, b, c = _rows(n, n)
    from circuits.backends.reference import intt, root_of_unity

    coeffs = [intt(v, root_of_unity(n)) for v in (a, b, c)]
    w = root_of_unity(2 * n)

    def at(poly: list[int], x: int) -> int:
        return sum(k * pow(x, i, R) for i, k in enumerate(poly)) % R

    expected = []
    for j in range(n):
        x = pow(w, 2 * j + 1, R)
        expected.append((at(coeffs[0], x) * at(coeffs[1], x) - at(coeffs[2], x)) % R)
    assert ref.qap_odd_coset(a, b, c) == expected
    assert any(expected) or n == 1


@pytest.mark.parametrize("n", [2, 16, 1 << 12])  # 2^12: the native two-thread route
def test_fast_odd_coset_equals_reference(mcl, n):
    ref = get_backend("reference")
    a, b, c = _rows(n, 3 * n)
    got = mcl.qap_odd_coset(*(mcl.scalar_vector(v) for v in (a, b, c)))
    assert mcl.scalar_vector_to_ints(got) == ref.qap_odd_coset(a, b, c)


@pytest.mark.parametrize("n", [64, 1 << 13])
def test_native_odd_coset_equals_numpy(n):
    kernels = native_kernels.load()
    if kernels is None:
        pytest.skip("native NTT kernels unavailable")
    a, b, c = (ntt.fr_array(v) for v in _rows(n, 5 * n))
    numpy_values = ntt._odd_coset_numpy(a, b, c, ntt.odd_coset_factors(n))
    assert ntt._odd_coset_native(kernels, a, b, c, ntt.odd_coset_factors(n)).tobytes() == numpy_values.tobytes()


def test_butterfly_kernels_refuse_mismatched_arrays():
    kernels = native_kernels.load()
    if kernels is None:
        pytest.skip("native NTT kernels unavailable")
    x = ntt.fr_array(list(range(8)))
    with pytest.raises(ValueError, match="shapes differ"):
        kernels.dif_butterflies(x[:4], x[4:], x[:3])
    frozen = x.copy()
    frozen.flags.writeable = False
    with pytest.raises(ValueError, match="read-only"):
        kernels.dit_butterflies(frozen[:4], x[4:], x[:4])


def test_odd_coset_refuses_a_violated_row(mcl):
    a, b, c = _rows(32, 9)
    c[5] = (c[5] + 1) % R
    for backend in (mcl, get_backend("reference")):
        with pytest.raises(UnsatisfiedConstraint, match="constraint 5"):
            backend.qap_odd_coset(*(backend.scalar_vector(v) for v in (a, b, c)))


# --- keys in the odd-coset basis -------------------------------------------------------------


def test_setup_in_odd_coset_basis_is_the_zkey_writers_key(mcl, system):
    """Our setup and zkey.py (snarkjs's formulas) give the same key for the same secrets."""
    r1cs, _ = system
    toxic = sample_toxic_waste("same-secrets")
    pk, vk = setup(r1cs, mcl, toxic=toxic, h_basis=ODD_COSET_LAGRANGE)
    zpk, zvk = decode_zkey(encode_zkey(r1cs, toxic, mcl), r1cs, mcl)
    assert zpk.h_basis == ODD_COSET_LAGRANGE and mcl.vector_len(pk.h_query) == pk.domain_size
    assert zvk == vk
    assert proving_key_digest(zpk, mcl) == proving_key_digest(pk, mcl)


def test_both_bases_give_the_same_proof_and_it_verifies(mcl, system):
    r1cs, witness = system
    toxic = sample_toxic_waste("both-bases")
    pk_z, vk_z = setup(r1cs, mcl, toxic=toxic, h_basis=MONOMIAL_Z)
    pk_c, vk_c = setup(r1cs, mcl, toxic=toxic, h_basis=ODD_COSET_LAGRANGE)
    assert vk_z == vk_c
    assert proving_key_digest(pk_z, mcl) != proving_key_digest(pk_c, mcl)
    proof = prove(pk_c, r1cs, witness, mcl, r=R_FIXED, s=S_FIXED)
    assert proof == prove(pk_z, r1cs, witness, mcl, r=R_FIXED, s=S_FIXED)
    public = r1cs.public_inputs(witness)
    assert verify(vk_c, public, proof, mcl)
    assert not verify(vk_c, [public[0], (public[1] + 1) % R, *public[2:]], proof, mcl)


def test_mcl_and_reference_proofs_are_byte_identical(mcl):
    ref = get_backend("reference")
    r1cs, witness = random_system(10, 2, seed=3)
    pk, vk = setup(r1cs, mcl, seed="identical", h_basis=ODD_COSET_LAGRANGE)
    pk_ref = convert_proving_key(pk, mcl, ref)
    assert pk_ref.h_basis == ODD_COSET_LAGRANGE
    assert proving_key_digest(pk_ref, ref) == proving_key_digest(pk, mcl)
    fast = prove(pk, r1cs, witness, mcl, r=R_FIXED, s=S_FIXED)
    assert prove(pk_ref, r1cs, witness, ref, r=R_FIXED, s=S_FIXED) == fast
    assert verify(vk, r1cs.public_inputs(witness), fast, ref)


def test_a_wrong_witness_is_refused_before_curve_work(mcl, system, coset_keys, monkeypatch):
    r1cs, witness = system
    pk, _ = coset_keys

    def no_curve_work(*args, **kwargs):
        raise AssertionError("curve or NTT work for an unsatisfied witness")

    for name in ("g1_msm", "g2_msm", "qap_odd_coset", "qap_quotient"):
        monkeypatch.setattr(mcl, name, no_curve_work)
    bad = list(witness)
    bad[-1] = (bad[-1] + 1) % R
    with pytest.raises(UnsatisfiedConstraint):
        prove(pk, r1cs, bad, mcl, r=R_FIXED, s=S_FIXED)


def test_a_changed_h_point_breaks_the_proofs(mcl, system, coset_keys):
    r1cs, witness = system
    pk, vk = coset_keys
    points = mcl.g1_vector_to_canonical(pk.h_query)
    points[0] = mcl.g1_add(points[0], mcl.g1_generator())
    bad_pk = pk.with_changes(h_query=mcl.g1_vector(points))
    public = r1cs.public_inputs(witness)
    assert verify(vk, public, prove(pk, r1cs, witness, mcl), mcl)
    assert not verify(vk, public, prove(bad_pk, r1cs, witness, mcl), mcl)


def test_coset_keys_save_load_and_take_phase2_contributions(mcl, system, coset_keys, tmp_path):
    r1cs, witness = system
    pk, _ = coset_keys
    digest = save_proving_key(pk, tmp_path / "raw", mcl)
    assert read_key_header(tmp_path / "raw")["h_basis"] == ODD_COSET_LAGRANGE
    loaded = load_proving_key(tmp_path / "raw", mcl, check_digest=True)
    assert loaded.h_basis == ODD_COSET_LAGRANGE and proving_key_digest(loaded, mcl) == digest
    save_proving_key(pk, tmp_path / "portable", mcl, portable=True)
    assert load_proving_key(tmp_path / "portable", mcl).h_basis == ODD_COSET_LAGRANGE
    # the basis is part of the key: the same points read as monomial are refused (length)
    with pytest.raises(MalformedArtifact, match="h_query has"):
        from circuits.groth16.keys import check_shape

        check_shape(pk.with_changes(h_basis=MONOMIAL_Z), mcl)
    updated, _ = contribute(pk, start_transcript(pk, mcl), mcl, name="auditor")
    assert updated.h_basis == ODD_COSET_LAGRANGE
    assert verify(updated.vk, r1cs.public_inputs(witness), prove(updated, r1cs, witness, mcl), mcl)


def test_unknown_basis_in_a_header_is_refused(mcl, coset_keys, tmp_path):
    import json

    pk, _ = coset_keys
    save_proving_key(pk, tmp_path, mcl)
    header = json.loads((tmp_path / "header.json").read_text())
    header["h_basis"] = "lagrange_on_h"
    (tmp_path / "header.json").write_text(json.dumps(header))
    with pytest.raises(MalformedArtifact, match="unknown H basis"):
        load_proving_key(tmp_path, mcl)


def test_setup_refuses_unknown_basis(mcl):
    with pytest.raises(CircuitError, match="unknown H basis"):
        setup(cubic(), mcl, seed=1, h_basis="lagrange_on_h")  # type: ignore[arg-type]


# --- reading .zkey files ------------------------------------------------------------------


@pytest.fixture(scope="module")
def zkey_bytes(mcl):
    r1cs = cubic()
    return r1cs, encode_zkey(r1cs, sample_toxic_waste("zkey-read"), mcl)


def _with_section(data: bytes, section: int, payload: bytes) -> bytes:
    container = decode_binfile(data, b"zkey", (1,), "zkey")
    sections = dict(container.sections)
    sections[section] = payload
    return encode_binfile(b"zkey", 1, sorted(sections.items()))


def _section(data: bytes, section: int) -> bytes:
    return decode_binfile(data, b"zkey", (1,), "zkey").sections[section]


def test_zkey_proofs_verify_on_both_backends(mcl, zkey_bytes):
    r1cs, data = zkey_bytes
    witness = cubic_witness(5)
    proofs = []
    for backend in (mcl, get_backend("reference")):
        pk, vk = decode_zkey(data, r1cs, backend)
        proofs.append(prove(pk, r1cs, witness, backend, r=R_FIXED, s=S_FIXED))
        assert verify(vk, r1cs.public_inputs(witness), proofs[-1], backend)
    assert proofs[0] == proofs[1]


def test_zkey_with_a_changed_h_point_gives_failing_proofs(mcl, zkey_bytes):
    r1cs, data = zkey_bytes
    h = bytearray(_section(data, 9))
    h[64:128] = g1_to_zkey((1, 2))  # H[1] replaced by the generator: a valid point, the wrong one
    pk, vk = decode_zkey(_with_section(data, 9, bytes(h)), r1cs, mcl)
    witness = cubic_witness(5)
    assert not verify(vk, r1cs.public_inputs(witness), prove(pk, r1cs, witness, mcl), mcl)


def _garbled_cases(r1cs, data: bytes) -> list[tuple[str, bytes, str]]:
    h = _section(data, 9)
    off_curve = h[:64] + (int.from_bytes(h[64:96], "little") ^ 1).to_bytes(32, "little") + h[96:]
    too_big = h[:64] + Q.to_bytes(32, "little") + h[96:]
    header = bytearray(_section(data, 2))
    header[4:36] = (Q + 2).to_bytes(32, "little")
    other_r1cs, _ = random_system(3, 1, seed=1)
    return [
        ("truncated", data[: len(data) - 100], "truncated"),
        ("empty", b"", "truncated"),
        ("magic", b"r1cs" + data[4:], "wrong magic"),
        ("off curve", _with_section(data, 9, off_curve), "section 9: .*not on the (BN254 G1 )?curve"),
        ("coordinate >= q", _with_section(data, 9, too_big), "section 9: .*coordinate >= Q"),
        ("short H", _with_section(data, 9, h[:-64]), "section 9 has"),
        ("no H", encode_binfile(b"zkey", 1, [(k, v) for k, v in sorted(decode_binfile(data, b"zkey", (1,), "z").sections.items()) if k != 9]),
         "section 9 is missing"),
        ("field", _with_section(data, 2, bytes(header)), "base field"),
        ("not groth16", _with_section(data, 1, struct.pack("<I", 2)), "not a Groth16 key"),
        ("same shape, other circuit", encode_zkey(other_r1cs, sample_toxic_waste("x"), get_backend("mcl")),
         "coefficient section"),
        ("other shape", encode_zkey(random_system(3, 2, seed=1)[0], sample_toxic_waste("x"), get_backend("mcl")),
         "public inputs"),
        ("other coefficients", _with_section(data, 4, _section(data, 4)[:-1] + b"\x01"), "coefficient section"),
    ]


def test_garbled_zkeys_are_refused_with_a_reason(mcl, zkey_bytes):
    r1cs, data = zkey_bytes
    for label, garbled, reason in _garbled_cases(r1cs, data):
        for backend in (mcl, get_backend("reference")):
            with pytest.raises(MalformedArtifact, match=reason) as info:
                decode_zkey(garbled, r1cs, backend)
            assert "\n" not in str(info.value), label


def test_read_zkey_names_a_missing_file(tmp_path):
    with pytest.raises(MalformedArtifact, match="does not exist"):
        read_zkey(tmp_path / "absent.zkey", cubic())


# --- with snarkjs -----------------------------------------------------------------------


def snarkjs_verify(vk, public, proof) -> bool:
    done = run_snarkjs(["groth16", "verify", vk, public, proof], timeout=TIMEOUT, check=False)
    ok = done.returncode == 0 and "OK" in done.stdout
    assert ok or "Invalid proof" in done.stdout + done.stderr, done.stdout + done.stderr
    return ok


@pytest.fixture(scope="module")
def ceremony(tmp_path_factory, system):
    """A key from snarkjs's own ceremony: powers of tau (2^8, one contribution),
    phase 2 with one contribution."""
    if find_snarkjs() is None:
        pytest.skip(missing_reason())
    r1cs, witness = system
    d = tmp_path_factory.mktemp("ceremony")
    write_r1cs(d / "circuit.r1cs", r1cs)
    steps = [
        ["powersoftau", "new", "bn128", "8", d / "pot0.ptau"],
        ["powersoftau", "contribute", d / "pot0.ptau", d / "pot1.ptau", "--name=first", "-e=phase one entropy"],
        ["powersoftau", "prepare", "phase2", d / "pot1.ptau", d / "pot.ptau"],
        ["zkey", "new", d / "circuit.r1cs", d / "pot.ptau", d / "c0.zkey"],
        ["zkey", "contribute", d / "c0.zkey", d / "c1.zkey", "--name=auditor", "-e=some entropy"],
        ["zkey", "export", "verificationkey", d / "c1.zkey", d / "snarkjs_vk.json"],
    ]
    for args in steps:
        run_snarkjs(args, timeout=TIMEOUT)
    return d, r1cs, witness


@pytest.mark.snarkjs
@needs_snarkjs
def test_snarkjs_ceremony_key_proves_and_both_verifiers_agree(mcl, ceremony, tmp_path):
    d, r1cs, witness = ceremony
    pk, vk = read_zkey(d / "c1.zkey", r1cs, mcl)
    assert vk == read_verifying_key(d / "snarkjs_vk.json")
    proof = prove(pk, r1cs, witness, mcl)
    public = r1cs.public_inputs(witness)
    write_proof(tmp_path / "proof.json", proof)
    write_public(tmp_path / "public.json", public)
    assert verify(vk, public, proof, mcl)
    assert snarkjs_verify(d / "snarkjs_vk.json", tmp_path / "public.json", tmp_path / "proof.json")

    other = [(public[0] + 1) % R, *public[1:]]
    write_public(tmp_path / "other.json", other)
    assert not verify(vk, other, proof, mcl)
    assert not snarkjs_verify(d / "snarkjs_vk.json", tmp_path / "other.json", tmp_path / "proof.json")


@pytest.mark.snarkjs
@needs_snarkjs
def test_snarkjs_ceremony_key_with_a_changed_h_point_fails(mcl, ceremony, tmp_path):
    d, r1cs, witness = ceremony
    data = (d / "c1.zkey").read_bytes()
    h = bytearray(_section(data, 9))
    h[:64] = g1_to_zkey((1, 2))
    pk, vk = decode_zkey(_with_section(data, 9, bytes(h)), r1cs, mcl)
    proof = prove(pk, r1cs, witness, mcl)
    write_proof(tmp_path / "proof.json", proof)
    write_public(tmp_path / "public.json", r1cs.public_inputs(witness))
    assert not verify(vk, r1cs.public_inputs(witness), proof, mcl)
    assert not snarkjs_verify(d / "snarkjs_vk.json", tmp_path / "public.json", tmp_path / "proof.json")


@pytest.mark.snarkjs
@needs_snarkjs
def test_uncontributed_and_truncated_ceremony_zkeys_are_refused(mcl, ceremony, tmp_path):
    d, r1cs, _ = ceremony
    # `zkey new` leaves delta = gamma = 1: anyone could forge with it
    with pytest.raises(MalformedArtifact, match="delta equals"):
        read_zkey(d / "c0.zkey", r1cs, mcl)
    data = (d / "c1.zkey").read_bytes()
    (tmp_path / "cut.zkey").write_bytes(data[: len(data) // 2])
    with pytest.raises(MalformedArtifact, match="truncated"):
        read_zkey(tmp_path / "cut.zkey", r1cs, mcl)


@pytest.mark.snarkjs
@needs_snarkjs
def test_snarkjs_verifies_proofs_from_our_odd_coset_setup(mcl, system, coset_keys, tmp_path):
    r1cs, witness = system
    pk, vk = coset_keys
    proof = prove(pk, r1cs, witness, mcl)
    public = r1cs.public_inputs(witness)
    write_verifying_key(tmp_path / "vk.json", vk)
    write_proof(tmp_path / "proof.json", proof)
    write_public(tmp_path / "public.json", public)
    assert snarkjs_verify(tmp_path / "vk.json", tmp_path / "public.json", tmp_path / "proof.json")
    write_public(tmp_path / "other.json", [public[0], public[1], (public[2] + 1) % R])
    assert not snarkjs_verify(tmp_path / "vk.json", tmp_path / "other.json", tmp_path / "proof.json")
