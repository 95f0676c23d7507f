"""snarkjs file formats in pure Python: round trips and refusal of malformed input."""
from __future__ import annotations

import json
import struct

import pytest
from py_ecc import bn128

from circuits.errors import MalformedArtifact
from circuits.field import Q, R
from circuits.groth16.types import Proof, VerifyingKey
from circuits.relation import R1CS, Constraint
from circuits.snarkjs import (
    decode_r1cs,
    decode_r1cs_arrays,
    decode_wtns,
    encode_r1cs,
    encode_wtns,
    proof_from_json,
    proof_to_json,
    public_from_json,
    public_to_json,
    read_proof,
    read_public,
    read_verifying_key,
    verifying_key_from_json,
    verifying_key_to_json,
    write_proof,
    write_verifying_key,
)
from circuits.snarkjs.binfile import encode_binfile
from circuits.snarkjs.zkey import lagrange_at, snarkjs_domain_size


def g1(k: int):
    p = bn128.multiply(bn128.G1, k)
    return (int(p[0]), int(p[1]))


def g2(k: int):
    p = bn128.multiply(bn128.G2, k)
    return ((int(p[0].coeffs[0]), int(p[0].coeffs[1])), (int(p[1].coeffs[0]), int(p[1].coeffs[1])))


def small_r1cs() -> tuple[R1CS, list[int]]:
    # wires: 0 one, 1 out = x^3 + x + 5, 2 in x, 3 x^2, 4 x^3, 5 bit
    constraints = (
        Constraint(((2, 1),), ((2, 1),), ((3, 1),)),
        Constraint(((3, 1),), ((2, 1),), ((4, 1),)),
        Constraint(((4, 1), (2, 1), (0, 5)), ((0, 1),), ((1, 1),)),
        Constraint(((5, 1),), ((5, 1), (0, R - 1)), ()),
    )
    r1cs = R1CS(n_wires=6, n_public=2, constraints=constraints, n_public_outputs=1)
    x = 3
    return r1cs, [1, x**3 + x + 5, x, x * x, x**3, 1]


# --- .r1cs -----------------------------------------------------------------------

def test_r1cs_round_trip_keeps_relation_and_header():
    r1cs, witness = small_r1cs()
    data = encode_r1cs(r1cs, n_private_inputs=1)
    assert data[:4] == b"r1cs" and struct.unpack_from("<II", data, 4) == (1, 3)
    back, info = decode_r1cs(data)
    assert back == r1cs
    assert (info.n_public_outputs, info.n_public_inputs, info.n_private_inputs) == (1, 1, 1)
    assert info.wire_to_label == tuple(range(6)) and info.n_constraints == 4
    assert back.is_satisfied(witness)
    assert back.first_unsatisfied([1, 0, 3, 9, 27, 1]) == 2


def _r1cs_header(prime: int = R, n_wires: int = 3, n_constraints: int = 1) -> bytes:
    return struct.pack("<I", 32) + prime.to_bytes(32, "little") + struct.pack("<IIIIQI", n_wires, 1, 0, 0, n_wires, n_constraints)


def _one_constraint(wire: int = 2, coeff: int = 1) -> bytes:
    term = struct.pack("<II", 1, wire) + coeff.to_bytes(32, "little")
    return term + term + term


@pytest.mark.parametrize(
    "data, message",
    [
        (b"r1c", "truncated"),
        (b"wtns" + bytes(8), "wrong magic"),
        (b"r1cs" + struct.pack("<II", 2, 0), "unsupported version"),
        (encode_binfile(b"r1cs", 1, [(1, _r1cs_header(prime=Q)), (2, _one_constraint())]), "not the BN254 scalar field"),
        (encode_binfile(b"r1cs", 1, [(1, _r1cs_header()), (2, _one_constraint(wire=7))]), "names wire 7"),
        (encode_binfile(b"r1cs", 1, [(1, _r1cs_header()), (2, _one_constraint(coeff=R))]), "not reduced"),
        (encode_binfile(b"r1cs", 1, [(1, _r1cs_header()), (2, _one_constraint()[:50])]), "truncated"),
        (encode_binfile(b"r1cs", 1, [(1, _r1cs_header(n_constraints=2)), (2, _one_constraint())]), "truncated"),
        (encode_binfile(b"r1cs", 1, [(1, _r1cs_header())]), "section 2 is missing"),
        (encode_binfile(b"r1cs", 1, [(1, _r1cs_header()), (2, _one_constraint() + b"x")]), "beyond"),
    ],
)
@pytest.mark.parametrize("decode", [decode_r1cs, decode_r1cs_arrays], ids=["tuples", "arrays"])
def test_r1cs_malformed_is_refused_with_a_reason(data, message, decode):
    with pytest.raises(MalformedArtifact, match=message):
        decode(data)


def test_r1cs_section_length_beyond_file_is_refused():
    r1cs, _ = small_r1cs()
    data = encode_r1cs(r1cs)
    with pytest.raises(MalformedArtifact, match="truncated"):
        decode_r1cs(data[:-5])
    with pytest.raises(MalformedArtifact, match="truncated"):
        decode_r1cs_arrays(data[:-5])


# --- .wtns -------------------------------------------------------------------------

def test_wtns_round_trip_and_layout():
    _, witness = small_r1cs()
    witness = [*witness, R - 1]
    data = encode_wtns(witness)
    assert data[:4] == b"wtns" and struct.unpack_from("<I", data, 4)[0] == 2
    # header: n8, prime, count; values 32-byte LE standard form at the end
    assert data[-32:] == (R - 1).to_bytes(32, "little")
    assert decode_wtns(data) == witness


@pytest.mark.parametrize(
    "mutate, message",
    [
        (lambda d: b"zkey" + d[4:], "wrong magic"),
        (lambda d: d[:-1], "truncated"),
        (lambda d: d[:4] + struct.pack("<I", 1) + d[8:], "unsupported version"),
        (lambda d: d.replace(R.to_bytes(32, "little"), Q.to_bytes(32, "little"), 1), "not the BN254 scalar field"),
        (lambda d: d[:-32] + R.to_bytes(32, "little"), "not reduced"),
    ],
)
def test_wtns_malformed_is_refused(mutate, message):
    data = encode_wtns([1, 2, 3])
    with pytest.raises(MalformedArtifact, match=message):
        decode_wtns(mutate(data))


def test_wtns_count_mismatch_and_missing_one_are_refused():
    header = struct.pack("<I", 32) + R.to_bytes(32, "little") + struct.pack("<I", 3)
    body = b"".join(v.to_bytes(32, "little") for v in (1, 2))
    with pytest.raises(MalformedArtifact, match="announces 3 values"):
        decode_wtns(encode_binfile(b"wtns", 2, [(1, header), (2, body)]))
    with pytest.raises(MalformedArtifact, match="constant 1"):
        decode_wtns(encode_wtns([5, 1]))


def test_wtns_limbs_hold_the_same_values_and_refuse_the_same_files():
    """The prover's array reading of a .wtns (no Python int per value) agrees with decode_wtns, and
    refuses what it refuses."""
    import numpy as np

    from circuits.snarkjs.wtns import decode_wtns_limbs

    witness = [1, 0, 5, R - 1, (1 << 200) + 7]
    limbs = decode_wtns_limbs(encode_wtns(witness))
    raw = np.ascontiguousarray(limbs).tobytes()
    assert [int.from_bytes(raw[i:i + 32], "little") for i in range(0, len(raw), 32)] == witness
    data = encode_wtns([1, 2, 3])
    with pytest.raises(MalformedArtifact, match="value 2 is not reduced"):
        decode_wtns_limbs(data[:-32] + R.to_bytes(32, "little"))
    with pytest.raises(MalformedArtifact, match="constant 1"):
        decode_wtns_limbs(encode_wtns([5, 1]))
    with pytest.raises(MalformedArtifact, match="truncated"):
        decode_wtns_limbs(data[:-1])


# --- JSON ----------------------------------------------------------------------------

def sample_vk() -> VerifyingKey:
    return VerifyingKey(alpha_g1=g1(3), beta_g2=g2(5), gamma_g2=g2(7), delta_g2=g2(11), ic=(g1(13), g1(17), None))


def test_verifying_key_json_matches_snarkjs_layout_and_round_trips(tmp_path):
    vk = sample_vk()
    doc = verifying_key_to_json(vk)
    assert doc["protocol"] == "groth16" and doc["curve"] == "bn128" and doc["nPublic"] == 2
    assert doc["vk_alpha_1"] == [str(vk.alpha_g1[0]), str(vk.alpha_g1[1]), "1"]
    assert doc["vk_beta_2"][2] == ["1", "0"] and doc["vk_beta_2"][0] == [str(c) for c in vk.beta_g2[0]]
    assert doc["IC"][2] == ["0", "1", "0"]
    write_verifying_key(tmp_path / "vk.json", vk)
    assert read_verifying_key(tmp_path / "vk.json") == vk


def test_proof_and_public_json_round_trip(tmp_path):
    proof = Proof(a=g1(2), b=g2(3), c=g1(4))
    write_proof(tmp_path / "proof.json", proof)
    assert read_proof(tmp_path / "proof.json") == proof
    assert json.loads((tmp_path / "proof.json").read_text())["pi_b"][2] == ["1", "0"]
    assert proof_from_json(proof_to_json(proof)) == proof
    assert public_from_json(public_to_json([0, 5, R - 1])) == [0, 5, R - 1]
    (tmp_path / "public.json").write_text('["7", "8"]')
    assert read_public(tmp_path / "public.json") == [7, 8]


@pytest.mark.parametrize("text", ['["7", 8]', '["07"]', '[" 7"]', '["\u0667"]', '["+7"]', '["7.0"]', '[true]',
                                  '["' + "9" * 5000 + '"]', "[" + "9" * 5000 + "]", '["NaN"]', "[NaN]"])
def test_public_json_accepts_only_canonical_decimals(tmp_path, text):
    (tmp_path / "public.json").write_text(text)
    with pytest.raises(MalformedArtifact):
        read_public(tmp_path / "public.json")


def test_duplicate_keys_are_refused(tmp_path):
    proof = proof_to_json(Proof(a=g1(2), b=g2(3), c=g1(4)))
    text = json.dumps(proof)[:-1] + ', "pi_a": ' + json.dumps(proof_to_json(Proof(a=g1(5), b=g2(3), c=g1(4)))["pi_a"]) + "}"
    (tmp_path / "proof.json").write_text(text)
    with pytest.raises(MalformedArtifact, match="duplicate key"):
        read_proof(tmp_path / "proof.json")


def test_jacobian_coordinates_are_refused():
    """One spelling per point: a projective representative with z != 1 is not snarkjs's output."""
    x, y = g1(9)
    z = 123456789
    doc = [str(x * z * z % Q), str(y * z**3 % Q), str(z)]
    with pytest.raises(MalformedArtifact, match="z must be 1"):
        proof_from_json({"pi_a": doc, "pi_b": proof_to_json(Proof(None, g2(2), None))["pi_b"], "pi_c": ["0", "1", "0"]})
    with pytest.raises(MalformedArtifact, match="infinity"):
        proof_from_json({"pi_a": ["5", "1", "0"], "pi_b": proof_to_json(Proof(None, g2(2), None))["pi_b"],
                         "pi_c": ["0", "1", "0"]})


def _proof_doc():
    return proof_to_json(Proof(a=g1(2), b=g2(3), c=g1(4)))


@pytest.mark.parametrize(
    "edit, message",
    [
        (lambda d: d["pi_a"].__setitem__(1, str(int(d["pi_a"][1]) + 1)), "not on the BN254 G1 curve"),
        (lambda d: d["pi_b"][1].__setitem__(0, str((int(d["pi_b"][1][0]) + 1) % Q)), "not on the BN254 G2 twist"),
        (lambda d: d["pi_c"].__setitem__(0, str(Q)), "not below the field modulus"),
        (lambda d: d["pi_c"].__setitem__(0, "0x12"), "not a canonical decimal"),
        (lambda d: d.pop("pi_b"), "missing field 'pi_b'"),
        (lambda d: d.__setitem__("protocol", "plonk"), "only 'groth16'"),
        (lambda d: d.__setitem__("curve", "bls12381"), "only bn128"),
        (lambda d: d.__setitem__("pi_a", ["1", "2"] * 3), "list of 3 entries"),
    ],
)
def test_malformed_proof_json_is_refused(edit, message):
    doc = _proof_doc()
    edit(doc)
    with pytest.raises(MalformedArtifact, match=message):
        proof_from_json(doc)


def test_g2_point_on_twist_but_outside_subgroup_is_refused():
    # Search a twist point with small x; the twist's cofactor is huge, so it
    # is almost surely outside the order-r subgroup.
    from circuits.curve import TWIST_B, g2_in_subgroup, g2_on_curve
    from py_ecc.fields import bn128_FQ2 as FQ2

    for x0 in range(1, 50):
        rhs = FQ2([x0, 0]) ** 3 + FQ2(list(TWIST_B))
        # A square root up to a 2-power root of unity; try the candidates.
        candidate = rhs ** ((Q**2 + 15) // 32)
        for root in _fq2_sqrt_candidates(candidate):
            if root * root == rhs:
                point = ((x0, 0), (int(root.coeffs[0]), int(root.coeffs[1])))
                assert g2_on_curve(point)
                assert not g2_in_subgroup(point)
                doc = _proof_doc()
                doc["pi_b"] = [[str(x0), "0"], [str(point[1][0]), str(point[1][1])], ["1", "0"]]
                with pytest.raises(MalformedArtifact, match="subgroup"):
                    proof_from_json(doc)
                return
    pytest.fail("no twist point found")


def _fq2_sqrt_candidates(c):
    from py_ecc.fields import bn128_FQ2 as FQ2

    # c times the first 2^8 elements of the 2-Sylow subgroup of Fq2*.
    roots = []
    g = FQ2([1, 1])  # a non-square's power generates the 2-Sylow subgroup
    order2 = Q * Q - 1
    e = 0
    while order2 % 2 == 0:
        order2 //= 2
        e += 1
    z = g ** order2
    cur = FQ2.one()
    for _ in range(1 << min(e, 8)):
        roots.append(c * cur)
        cur = cur * z
    return roots


def test_vk_json_errors():
    doc = verifying_key_to_json(sample_vk())
    doc["nPublic"] = 5
    with pytest.raises(MalformedArtifact, match="nPublic"):
        verifying_key_from_json(doc)
    with pytest.raises(MalformedArtifact, match="JSON object"):
        verifying_key_from_json([1, 2])
    with pytest.raises(MalformedArtifact, match=r"public inputs\[1\]"):
        public_from_json(["1", str(R)])
    with pytest.raises(MalformedArtifact, match="list"):
        public_from_json({"a": 1})


def test_bad_json_file_is_a_malformed_artifact(tmp_path):
    path = tmp_path / "vk.json"
    path.write_text("{not json")
    with pytest.raises(MalformedArtifact, match="not valid JSON"):
        read_verifying_key(path)
    with pytest.raises(MalformedArtifact, match="does not exist"):
        read_proof(tmp_path / "missing.json")


# --- zkey helpers --------------------------------------------------------------------

def test_snarkjs_domain_counts_public_rows():
    r1cs, _ = small_r1cs()  # 4 constraints + 2 public + 1 -> 7 rows -> 8
    assert snarkjs_domain_size(r1cs) == 8
    bigger = R1CS(n_wires=6, n_public=2, constraints=r1cs.constraints * 2, n_public_outputs=1)
    assert snarkjs_domain_size(bigger) == 16


def test_lagrange_basis_interpolates():
    tau, n = 987654321, 8
    lag = lagrange_at(tau, n)
    omega = pow(5, (R - 1) // n, R)
    # Lagrange interpolation reproduces 1 and X exactly.
    assert sum(lag) % R == 1
    # x -> x: sum_k w^k L_k(tau) == tau
    assert sum(pow(omega, k, R) * l for k, l in enumerate(lag)) % R == tau
    assert lagrange_at(tau, 2 * n, range(1, 2 * n, 2)) == [lagrange_at(tau, 2 * n)[k] for k in range(1, 2 * n, 2)]


def test_zkey_layout_matches_snarkjs_reader_expectations():
    """Section sizes as snarkjs's zkey reader and prover expect them (the
    snarkjs-marked interop tests prove and verify with such a key)."""
    from circuits.backends import get_backend
    from circuits.snarkjs import ToxicWaste, encode_zkey
    from circuits.snarkjs.binfile import decode_binfile
    from circuits.snarkjs.zkey import g1_to_zkey

    backend = get_backend("reference")
    r1cs, _ = small_r1cs()
    toxic = ToxicWaste(tau=11, alpha=2, beta=3, gamma=5, delta=7)
    zkey = decode_binfile(encode_zkey(r1cs, toxic, backend), b"zkey", (1,), "zkey")
    n, n_vars, n_pub = 8, r1cs.n_wires, r1cs.n_public
    assert sorted(zkey.sections) == list(range(1, 11))
    assert zkey.sections[1] == struct.pack("<I", 1)
    header = zkey.sections[2]
    assert header[:4] == struct.pack("<I", 32) and int.from_bytes(header[4:36], "little") == Q
    assert int.from_bytes(header[40:72], "little") == R
    assert struct.unpack_from("<III", header, 72) == (n_vars, n_pub, n)
    assert header[84:148] == g1_to_zkey(backend.g1_mul(backend.g1_generator(), 2))  # alpha_1, Montgomery form
    sizes = {3: (n_pub + 1) * 64, 5: n_vars * 64, 6: n_vars * 64, 7: n_vars * 128, 8: (n_vars - n_pub - 1) * 64, 9: n * 64}
    for section, size in sizes.items():
        assert len(zkey.sections[section]) == size, section
    # A and B terms of every constraint plus one A row per public wire (and wire 0).
    n_coefs = sum(len(c.a) + len(c.b) for c in r1cs.constraints) + n_pub + 1
    assert struct.unpack_from("<I", zkey.sections[4])[0] == n_coefs
    assert len(zkey.sections[4]) == 4 + n_coefs * 44
    # Unused wire 1 in B: its B2 point is the point at infinity, stored as zeros.
    assert zkey.sections[7][128:256] == bytes(128)
