"""Groth16: QAP, setup, prove, verify, encodings and key storage, on both backends."""
from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from circuits.backends import get_backend
from circuits.errors import CircuitError, MalformedArtifact, UnsatisfiedConstraint
from circuits.field import Q, R
from circuits.groth16 import (
    Proof,
    check_proof,
    convert_proving_key,
    load_proving_key,
    load_verifying_key,
    proof_from_bytes,
    proof_from_dict,
    proof_to_bytes,
    proof_to_dict,
    prove,
    proving_key_digest,
    save_proving_key,
    save_verifying_key,
    setup,
    verify,
    vk_digest,
    vk_from_bytes,
    vk_from_dict,
    vk_to_bytes,
    vk_to_dict,
)
from circuits.groth16 import encoding
from circuits.groth16.qap import domain_size, lagrange_at, root_of_unity, row_evaluations, wire_polynomials_at
from circuits.groth16.setup import ToxicWaste
from circuits.relation import R1CS, Constraint
from backend_fixtures import mcl_or_skip

from groth16_circuits import cubic, cubic_witness, random_system

R_BLIND, S_BLIND = 123456789, 987654321




@pytest.fixture(scope="module")
def ref():
    return get_backend("reference")


@pytest.fixture(scope="module", params=["reference", "mcl"])
def backend(request):
    return mcl_or_skip() if request.param == "mcl" else get_backend("reference")


# Pairing-heavy tests: pure-Python pairings take seconds, so their reference
# variants run only with the slow marker; test_reference_verifier_fallback
# keeps an accepting and a rejecting reference check in the default run.
@pytest.fixture(scope="module", params=["mcl", pytest.param("reference", marks=pytest.mark.slow)])
def fast(request):
    return mcl_or_skip() if request.param == "mcl" else get_backend("reference")


@pytest.fixture(scope="module")
def cubic_keys(backend):
    return setup(cubic(), backend, seed="cubic")


@pytest.fixture(scope="module")
def fast_keys(fast):
    return setup(cubic(), fast, seed="cubic")


def _g1_double(backend, p):
    return backend.g1_add(p, p)


# --- QAP ---------------------------------------------------------------------------------


def test_domain_counts_binding_rows():
    # 3 constraints + 1 public + wire 0 = 5 rows -> 8
    assert domain_size(cubic()) == 8
    r1cs, _ = random_system(250, 3, seed=1)
    assert domain_size(r1cs) == 256  # 254 rows
    r1cs, _ = random_system(253, 3, seed=1)
    assert domain_size(r1cs) == 512  # 257 rows


def test_lagrange_basis_interpolates():
    n, tau = 16, 1234567
    lag = lagrange_at(tau, n)
    assert sum(lag) % R == 1  # interpolates the constant 1
    omega = root_of_unity(n)
    # interpolates X: sum_j omega^j L_j(tau) = tau
    assert sum(pow(omega, j, R) * lj for j, lj in enumerate(lag)) % R == tau
    with pytest.raises(CircuitError):
        lagrange_at(omega, n)  # tau in the domain


def test_qap_identity_at_tau(ref):
    """(sum w_i u_i)(sum w_i v_i) - sum w_i w_i = h(tau) Z(tau), with h from the backend."""
    r1cs, witness = random_system(40, 2, seed=7)
    n = domain_size(r1cs)
    tau = 987654321987654321
    polys = wire_polynomials_at(r1cs, tau, n)
    a, b, c = row_evaluations(r1cs, witness, n)
    h = ref.scalar_vector_to_ints(ref.qap_quotient(*(ref.scalar_vector(x) for x in (a, b, c))))
    lhs = (sum(x * u for x, u in zip(witness, polys.u)) * sum(x * v for x, v in zip(witness, polys.v))
           - sum(x * w for x, w in zip(witness, polys.w))) % R
    rhs = sum(hk * pow(tau, k, R) for k, hk in enumerate(h)) * polys.z % R
    assert lhs == rhs
    # a wrong witness value breaks the identity (and row_evaluations refuses it)
    bad = list(witness)
    bad[-1] = (bad[-1] + 1) % R
    with pytest.raises(UnsatisfiedConstraint):
        row_evaluations(r1cs, bad, n)


def test_binding_rows_make_public_polynomials_independent():
    # Public wire 1 occurs in no constraint at all; its u must still be non-zero.
    r1cs = R1CS(n_wires=4, n_public=1, constraints=(Constraint(a=((2, 1),), b=((2, 1),), c=((3, 1),)),))
    polys = wire_polynomials_at(r1cs, 5555, domain_size(r1cs))
    assert polys.u[1] != 0 and polys.u[0] != 0 and polys.u[1] != polys.u[0]


# --- prove / verify ----------------------------------------------------------------------------


def test_reference_verifier_fallback(ref):
    pk, vk = setup(cubic(), ref, seed="fallback")
    proof = prove(pk, cubic(), cubic_witness(2), ref)
    assert verify(vk, [15], proof, ref)
    assert not verify(vk, [16], proof, ref)


def test_cubic_accepts_and_rejects(fast, fast_keys):
    backend, (pk, vk) = fast, fast_keys
    r1cs = cubic()
    proof = prove(pk, r1cs, cubic_witness(3), backend)
    assert verify(vk, [35], proof, backend)
    # rejecting twins
    assert not verify(vk, [36], proof, backend)
    assert check_proof(vk, [36], proof, backend).reason == "pairing check failed"
    g1 = backend.g1_generator()
    assert not verify(vk, [35], Proof(a=backend.g1_add(proof.a, g1), b=proof.b, c=proof.c), backend)
    assert not verify(vk, [35], Proof(a=proof.a, b=backend.g2_add(proof.b, backend.g2_generator()), c=proof.c), backend)
    assert not verify(vk, [35], Proof(a=proof.a, b=proof.b, c=backend.g1_add(proof.c, g1)), backend)
    _, other_vk = setup(r1cs, backend, seed="another")
    assert not verify(other_vk, [35], proof, backend)


def test_proof_for_other_statement(fast, fast_keys):
    backend, (pk, vk) = fast, fast_keys
    proof = prove(pk, cubic(), cubic_witness(5), backend)
    assert verify(vk, [135], proof, backend)
    assert not verify(vk, [35], proof, backend)


def test_public_input_policy(backend, cubic_keys):
    pk, vk = cubic_keys
    proof = prove(pk, cubic(), cubic_witness(3), backend, r=R_BLIND, s=S_BLIND)
    for inputs, reason in (
        ([], "expected 1 public inputs, got 0"),
        ([35, 0], "expected 1 public inputs, got 2"),
        ([35 + R], "public input 0 is outside [0, R)"),
        ([-1], "public input 0 is outside [0, R)"),
        ([True], "public input 0 is not an int"),
        (["35"], "public input 0 is not an int"),
    ):
        result = check_proof(vk, inputs, proof, backend)
        assert not result.ok and result.reason == reason


def test_invalid_proof_points_refused(backend, cubic_keys):
    pk, vk = cubic_keys
    proof = prove(pk, cubic(), cubic_witness(3), backend)
    off_curve = (proof.a[0], (proof.a[1] + 1) % Q)
    assert check_proof(vk, [35], Proof(a=off_curve, b=proof.b, c=proof.c), backend).reason == "proof.A is not on the G1 curve"
    assert not verify(vk, [35], Proof(a=proof.a, b=proof.b, c=off_curve), backend)
    assert not verify(vk, [35], Proof(a=None, b=proof.b, c=proof.c), backend)
    twist_point = _twist_point_outside_subgroup()
    result = check_proof(vk, [35], Proof(a=proof.a, b=twist_point, c=proof.c), backend)
    assert result.reason == "proof.B is not in the order-R subgroup of G2"


def test_unsatisfying_witness_refused(backend, cubic_keys):
    pk, _ = cubic_keys
    witness = cubic_witness(3)
    witness[4] += 1  # x^3 wrong: constraint 1 fails first
    with pytest.raises(UnsatisfiedConstraint) as info:
        prove(pk, cubic(), witness, backend)
    assert info.value.constraint_index == 1
    witness = cubic_witness(3)
    witness[1] = 36  # claimed output wrong: constraint 2
    with pytest.raises(UnsatisfiedConstraint) as info:
        prove(pk, cubic(), witness, backend)
    assert info.value.constraint_index == 2
    with pytest.raises(UnsatisfiedConstraint):
        prove(pk, cubic(), cubic_witness(3)[:4], backend)
    with pytest.raises(CircuitError, match="integers"):
        prove(pk, cubic(), [1, 35.0, 3, 9, 27], backend)


def test_key_for_other_relation_refused(backend, cubic_keys):
    pk, _ = cubic_keys
    r1cs, witness = random_system(10, 1, seed=3)
    with pytest.raises(CircuitError, match="proving key"):
        prove(pk, r1cs, witness, backend)


def test_random_system(fast):
    backend = fast
    size = 300 if backend.name == "mcl" else 40
    r1cs, witness = random_system(size, 3, seed=11)
    pk, vk = setup(r1cs, backend, seed=11)
    publics = r1cs.public_inputs(witness)
    proof = prove(pk, r1cs, witness, backend)
    assert verify(vk, publics, proof, backend)
    wrong = list(publics)
    wrong[2] = (wrong[2] + 1) % R
    assert not verify(vk, wrong, proof, backend)


def test_setup_progress_and_toxic_hidden(ref):
    events = []
    toxic = ToxicWaste(tau=11, alpha=12, beta=13, gamma=14, delta=15)
    setup(cubic(), ref, toxic=toxic, progress=lambda stage, done, total: events.append((stage, done, total)))
    assert events[-1] == ("done", 4, 4) and len(events) == 4
    assert "15" not in repr(toxic)
    with pytest.raises(CircuitError):
        setup(cubic(), ref, toxic=ToxicWaste(tau=1, alpha=12, beta=13, gamma=14, delta=15))  # tau in the domain
    with pytest.raises(CircuitError):
        setup(cubic(), ref, toxic=ToxicWaste(tau=11, alpha=0, beta=13, gamma=14, delta=15))


def test_keys_and_proofs_identical_across_backends(ref):
    mcl = mcl_or_skip()
    r1cs, witness = random_system(12, 2, seed=5)
    pk_ref, vk_ref = setup(r1cs, ref, seed="cross")
    pk_mcl, vk_mcl = setup(r1cs, mcl, seed="cross")
    assert vk_ref == vk_mcl and vk_to_bytes(vk_ref) == vk_to_bytes(vk_mcl)
    assert proving_key_digest(pk_ref, ref) == proving_key_digest(pk_mcl, mcl)
    proof_ref = prove(pk_ref, r1cs, witness, ref, r=R_BLIND, s=S_BLIND)
    proof_mcl = prove(pk_mcl, r1cs, witness, mcl, r=R_BLIND, s=S_BLIND)
    assert proof_to_bytes(proof_ref) == proof_to_bytes(proof_mcl)
    publics = r1cs.public_inputs(witness)
    assert verify(vk_ref, publics, proof_mcl, ref) and verify(vk_mcl, publics, proof_ref, mcl)
    other = prove(pk_mcl, r1cs, witness, mcl, r=R_BLIND + 1, s=S_BLIND)
    assert proof_to_bytes(other) != proof_to_bytes(proof_mcl)
    converted = convert_proving_key(pk_mcl, mcl, ref)
    assert proving_key_digest(converted, ref) == proving_key_digest(pk_ref, ref)


# --- encodings --------------------------------------------------------------------------------


def _twist_point_outside_subgroup():
    """A point on the BN254 twist that is not in the order-R subgroup."""
    x0 = 1
    while True:
        y = encoding.fq2_sqrt(encoding.g2_curve_rhs((x0, 1)))
        if y is not None:
            p = ((x0, 1), y)
            assert encoding.g2_on_curve(p) and not encoding.g2_in_subgroup(p)
            return p
        x0 += 1


def test_proof_bytes_round_trip(fast, fast_keys):
    backend, (pk, vk) = fast, fast_keys
    proof = prove(pk, cubic(), cubic_witness(3), backend)
    data = proof_to_bytes(proof)
    assert len(data) == 128
    assert proof_from_bytes(data) == proof == proof_from_bytes(data, backend)
    assert proof_from_dict(json.loads(json.dumps(proof_to_dict(proof)))) == proof
    assert verify(vk, [35], proof_from_bytes(data), backend)


def test_malformed_encodings_refused():
    g1 = (1, 2)
    good = encoding.encode_g1_compressed(g1)
    for bad, why in (
        (good[:31], "expected 32 bytes"),
        (bytes([good[0] & 0x3F]) + good[1:], "flag bits 00"),
        (bytes([0x40]) + bytes(30) + b"\x01", "infinity flag set"),
        (bytes([0x80 | (Q >> 248)]) + (Q % (1 << 248)).to_bytes(31, "big"), "not reduced"),
    ):
        with pytest.raises(MalformedArtifact, match=why):
            encoding.decode_g1_compressed(bad)
    # an x with no point above it
    x = 0
    while pow(encoding.g1_curve_rhs(x), (Q - 1) // 2, Q) != Q - 1:  # x^3 + 3 a non-square
        x += 1
    with pytest.raises(MalformedArtifact, match="abscissa"):
        encoding.decode_g1_compressed((0x80 << 248 | x).to_bytes(32, "big"))
    # G2 on the twist but outside the subgroup
    outside = _twist_point_outside_subgroup()
    with pytest.raises(MalformedArtifact, match="subgroup"):
        encoding.decode_g2_compressed(encoding.encode_g2_compressed(outside))
    with pytest.raises(MalformedArtifact, match="128 bytes"):
        proof_from_bytes(bytes(127))
    with pytest.raises(MalformedArtifact):
        proof_from_bytes(b"\xff" * 128)
    with pytest.raises(MalformedArtifact):
        proof_from_bytes("not bytes")  # type: ignore[arg-type]


def test_flipped_sign_bit_changes_point(ref):
    p = ref.g1_mul(ref.g1_generator(), 77)
    data = bytearray(encoding.encode_g1_compressed(p))
    data[0] ^= 0x40  # smaller <-> larger root
    q = encoding.decode_g1_compressed(bytes(data))
    assert q == (p[0], Q - p[1])


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(k=st.integers(min_value=0, max_value=R - 1))
def test_g1_encoding_round_trip_property(ref, k):
    p = ref.g1_mul(ref.g1_generator(), k)
    assert encoding.decode_g1_compressed(encoding.encode_g1_compressed(p)) == p
    assert encoding.decode_g1_uncompressed(encoding.encode_g1_uncompressed(p)) == p


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(k=st.integers(min_value=0, max_value=R - 1))
def test_g2_encoding_round_trip_property(ref, k):
    p = ref.g2_mul(ref.g2_generator(), k)
    assert encoding.decode_g2_compressed(encoding.encode_g2_compressed(p), backend=ref) == p
    assert encoding.decode_g2_uncompressed(encoding.encode_g2_uncompressed(p), check_subgroup=False) == p


@settings(max_examples=200, deadline=None)
@given(data=st.binary(min_size=32, max_size=32))
def test_g1_decoding_is_canonical(data):
    """Any 32 bytes either fail to decode or re-encode to exactly themselves."""
    try:
        p = encoding.decode_g1_compressed(data)
    except MalformedArtifact:
        return
    assert encoding.encode_g1_compressed(p) == data


def test_vk_encodings(ref, cubic_keys):
    _, vk = cubic_keys
    data = vk_to_bytes(vk)
    assert vk_from_bytes(data) == vk
    assert vk_from_dict(json.loads(json.dumps(vk_to_dict(vk)))) == vk
    digest = vk_digest(vk)
    assert len(digest) == 64
    tampered = vk_to_dict(vk)
    tampered["ic"][0] = vk_to_dict(vk)["ic"][1]
    with pytest.raises(MalformedArtifact, match="digest"):
        vk_from_dict(tampered)
    del tampered["digest"]
    assert vk_digest(vk_from_dict(tampered)) != digest
    with pytest.raises(MalformedArtifact):
        vk_from_bytes(data[:-1])
    with pytest.raises(MalformedArtifact):
        vk_from_bytes(b"XXXX" + data[4:])
    off = vk_to_dict(vk)
    off["alpha_g1"][1] = str((int(off["alpha_g1"][1]) + 1) % Q)
    del off["digest"]
    with pytest.raises(MalformedArtifact, match="alpha_g1"):
        vk_from_dict(off)


# --- key storage -----------------------------------------------------------------------------------


@pytest.mark.parametrize("portable", [False, True])
def test_proving_key_directory_round_trip(backend, cubic_keys, tmp_path, portable):
    pk, vk = cubic_keys
    digest = save_proving_key(pk, tmp_path / "pk", backend, portable=portable)
    assert digest == proving_key_digest(pk, backend)
    loaded = load_proving_key(tmp_path / "pk", backend, check_digest=True)
    assert loaded.vk == vk
    assert load_proving_key(tmp_path / "pk", backend, g2_subgroup_check=True).vk == vk
    a = prove(pk, cubic(), cubic_witness(3), backend, r=R_BLIND, s=S_BLIND)
    b = prove(loaded, cubic(), cubic_witness(3), backend, r=R_BLIND, s=S_BLIND)
    assert a == b
    save_verifying_key(vk, tmp_path / "vk.json")
    assert load_verifying_key(tmp_path / "vk.json") == vk


def test_tampered_key_directory_refused(backend, cubic_keys, tmp_path):
    pk, _ = cubic_keys
    save_proving_key(pk, tmp_path / "pk", backend)
    path = tmp_path / "pk" / "h.bin"
    data = bytearray(path.read_bytes())
    data[5] ^= 1
    path.write_bytes(bytes(data))
    with pytest.raises(MalformedArtifact, match="SHA-256"):
        load_proving_key(tmp_path / "pk", backend)
    # consistent hash but a header whose sizes disagree with the files
    save_proving_key(pk, tmp_path / "pk2", backend)
    header = json.loads((tmp_path / "pk2" / "header.json").read_text())
    header["n_wires"] += 1
    (tmp_path / "pk2" / "header.json").write_text(json.dumps(header))
    with pytest.raises(MalformedArtifact):
        load_proving_key(tmp_path / "pk2", backend)
    with pytest.raises(MalformedArtifact, match="not found"):
        load_proving_key(tmp_path / "missing", backend)


def test_own_key_loaded_without_point_checks_proves_the_same(backend, cubic_keys, tmp_path):
    pk, vk = cubic_keys
    save_proving_key(pk, tmp_path / "pk", backend)
    trusted = load_proving_key(tmp_path / "pk", backend, check_points=False)
    a = prove(pk, cubic(), cubic_witness(3), backend, r=R_BLIND, s=S_BLIND)
    assert prove(trusted, cubic(), cubic_witness(3), backend, r=R_BLIND, s=S_BLIND) == a
    assert verify(vk, [35], a, backend)
    # The files' digests are still checked: a flipped bit is refused before any proving.
    path = tmp_path / "pk" / "a.bin"
    data = bytearray(path.read_bytes())
    data[9] ^= 1
    path.write_bytes(bytes(data))
    with pytest.raises(MalformedArtifact, match="SHA-256"):
        load_proving_key(tmp_path / "pk", backend, check_points=False)


def test_own_key_is_mapped_and_sealed_and_a_later_change_is_hashed_again(fast, fast_keys, tmp_path, monkeypatch):
    """The prover's own key is mapped, not read; while its seal holds nothing is hashed. Twin: a file
    changed after the seal is hashed again, and refused."""
    import hashlib

    import numpy as np

    from circuits.groth16 import key_seal

    pk, vk = fast_keys
    save_proving_key(pk, tmp_path / "pk", fast)
    assert (tmp_path / "pk" / key_seal.SEAL_FILE).is_file()  # sealed when written
    hashed = []
    real_file_digest = hashlib.file_digest
    monkeypatch.setattr(hashlib, "file_digest", lambda *a, **k: hashed.append(a) or real_file_digest(*a, **k))
    mapped = load_proving_key(tmp_path / "pk", fast, check_points=False)
    assert hashed == []
    if fast.name == "mcl":
        assert isinstance(mapped.h_query, np.memmap)
    proof = prove(mapped, cubic(), cubic_witness(3), fast, r=R_BLIND, s=S_BLIND, self_check=True)
    assert proof == prove(pk, cubic(), cubic_witness(3), fast, r=R_BLIND, s=S_BLIND) and verify(vk, [35], proof, fast)

    path = tmp_path / "pk" / "l.bin"
    with path.open("r+b") as handle:
        byte = handle.read(4)[3]
        handle.seek(3)
        handle.write(bytes([byte ^ 1]))
    with pytest.raises(MalformedArtifact, match="l.bin does not match its SHA-256"):
        load_proving_key(tmp_path / "pk", fast, check_points=False)
    assert hashed  # the seal did not hold: the files were hashed


def test_a_key_rewritten_with_matching_digests_only_breaks_its_own_proofs(fast, fast_keys, tmp_path):
    """Whoever rewrites the prover's key files and header together passes the digest check, and gets
    proofs the verifier refuses: nothing about the statement can be forged this way."""
    import hashlib

    pk, vk = fast_keys
    save_proving_key(pk, tmp_path / "pk", fast)
    header = json.loads((tmp_path / "pk" / "header.json").read_text())
    path = tmp_path / "pk" / "l.bin"
    data = bytearray(path.read_bytes())
    data[40] ^= 1  # a coordinate of the first private-wire point: off the curve now
    path.write_bytes(bytes(data))
    header["queries"]["l_query"]["sha256"] = hashlib.sha256(bytes(data)).hexdigest()
    (tmp_path / "pk" / "header.json").write_text(json.dumps(header))
    with pytest.raises(MalformedArtifact):  # with point checks: refused at load
        load_proving_key(tmp_path / "pk", fast)
    tampered = load_proving_key(tmp_path / "pk", fast, check_points=False)
    try:
        proof = prove(tampered, cubic(), cubic_witness(3), fast, r=R_BLIND, s=S_BLIND)
    except (CircuitError, MalformedArtifact, ValueError):
        return  # the prover noticed: no proof at all
    assert not verify(vk, [35], proof, fast)


def test_portable_key_loads_into_other_backend(ref, tmp_path):
    mcl = mcl_or_skip()
    pk, vk = setup(cubic(), mcl, seed="portable")
    save_proving_key(pk, tmp_path / "raw", mcl)
    with pytest.raises(CircuitError, match="raw form"):
        load_proving_key(tmp_path / "raw", ref)
    save_proving_key(pk, tmp_path / "portable", mcl, portable=True)
    loaded = load_proving_key(tmp_path / "portable", ref, check_digest=True)
    proof = prove(loaded, cubic(), cubic_witness(3), ref, r=R_BLIND, s=S_BLIND)
    assert proof == prove(pk, cubic(), cubic_witness(3), mcl, r=R_BLIND, s=S_BLIND)
    assert verify(vk, [35], proof, ref)


def test_concurrent_msms_give_the_same_proof(fast, fast_keys):
    pk, vk = fast_keys
    one = prove(pk, cubic(), cubic_witness(3), fast, r=R_BLIND, s=S_BLIND, workers=1)
    two = prove(pk, cubic(), cubic_witness(3), fast, r=R_BLIND, s=S_BLIND, workers=2)
    assert one == two and verify(vk, [35], two, fast)


def test_portable_key_with_point_outside_subgroup_refused(backend, cubic_keys, tmp_path):
    import hashlib

    pk, _ = cubic_keys
    save_proving_key(pk, tmp_path / "pk", backend, portable=True)
    path = tmp_path / "pk" / "b_g2.bin"
    data = encoding.encode_g2_uncompressed(_twist_point_outside_subgroup()) + path.read_bytes()[128:]
    path.write_bytes(data)
    header = json.loads((tmp_path / "pk" / "header.json").read_text())
    header["queries"]["b_g2_query"]["sha256"] = hashlib.sha256(data).hexdigest()
    (tmp_path / "pk" / "header.json").write_text(json.dumps(header))
    with pytest.raises(MalformedArtifact, match="subgroup"):
        load_proving_key(tmp_path / "pk", backend)
