"""Reading snarkjs Groth16 proving keys (`.zkey`) into our ProvingKey.

A .zkey from a snarkjs ceremony (`zkey new`, then `zkey contribute` by third
parties) holds the same queries as our ProvingKey, with the H query in the
odd-coset Lagrange basis (keys.ODD_COSET_LAGRANGE); the layout is described in
zkey.py, which writes such files from known secrets.

What is checked: the container, the protocol (Groth16), the field sizes and
primes, every section's length against the header, every coordinate below q,
every point on its curve (and the verifying key's G2 points in the order-R
subgroup), that the verifying key is not degenerate (verify.check_verifying_key:
so a key straight from `zkey new`, before any phase-2 contribution, where
delta = gamma = 1 and anyone can forge, is refused), and that the coefficient section (the A and B matrices, with the
public-input binding rows) is exactly the one snarkjs derives from `r1cs`, so
the key belongs to this relation. What is not: the C matrix (only inside the
points, not recoverable without the secrets: a key for another C gives proofs
that fail verification), the contribution transcript (section 10: check it
with `snarkjs zkey verify`), and, unless asked, the subgroup of the B2 points
(as in keys.load_proving_key: a bad one only makes our own proofs fail).
"""
from __future__ import annotations

import struct
from pathlib import Path
from typing import Any

from ..errors import MalformedArtifact
from ..field import Q, R
from ..groth16.keys import ODD_COSET_LAGRANGE, ProvingKey, check_shape
from ..groth16.qap import domain_size, r1cs_digest
from ..groth16.types import G1Affine, G2Affine, VerifyingKey
from ..groth16.verify import check_verifying_key
from ..relation import R1CS
from .binfile import Reader, decode_binfile, read_file_bytes

WHAT = "zkey"
N8 = 32
G1_SIZE = 2 * N8
G2_SIZE = 4 * N8
PROTOCOL_GROTH16 = 1
HEADER_SIZE = 4 + N8 + 4 + N8 + 3 * 4 + 3 * G1_SIZE + 3 * G2_SIZE
_R2 = pow(1 << 256, 2, R)  # coefficients are stored as k * 2^512 mod r
_MONT_Q_INV = pow(1 << 256, -1, Q)

SECTION_HEADER, SECTION_GROTH16, SECTION_IC, SECTION_COEFFS = 1, 2, 3, 4
SECTION_A, SECTION_B1, SECTION_B2, SECTION_C, SECTION_H = 5, 6, 7, 8, 9


def read_zkey(path: str | Path, r1cs: R1CS, backend: Any = None, *,
              g2_subgroup_check: bool = False) -> tuple[ProvingKey, VerifyingKey]:
    """(proving key, verifying key) from the .zkey at `path`, made for `r1cs`."""
    return decode_zkey(read_file_bytes(path, WHAT), r1cs, backend, g2_subgroup_check=g2_subgroup_check)


def decode_zkey(data: bytes, r1cs: R1CS, backend: Any = None, *,
                g2_subgroup_check: bool = False) -> tuple[ProvingKey, VerifyingKey]:
    """As read_zkey, from the file's bytes. Raises MalformedArtifact with a one-line reason."""
    if backend is None:
        from ..backends import get_backend

        backend = get_backend(None)
    container = decode_binfile(data, b"zkey", (1,), WHAT)
    protocol = Reader(container.section(SECTION_HEADER, WHAT), f"{WHAT} section 1")
    if protocol.u32() != PROTOCOL_GROTH16:
        raise MalformedArtifact(f"{WHAT}: not a Groth16 key (protocol id in section 1)")
    header = _read_groth16_header(container.section(SECTION_GROTH16, WHAT), backend)
    n_vars, n_public, n = header["n_vars"], header["n_public"], header["domain_size"]
    if (n_vars, n_public) != (r1cs.n_wires, r1cs.n_public):
        raise MalformedArtifact(f"{WHAT}: key is for {n_vars} wires / {n_public} public inputs, "
                                f"the relation has {r1cs.n_wires} / {r1cs.n_public}")
    if n != domain_size(r1cs):
        raise MalformedArtifact(f"{WHAT}: domain size {n}, the relation needs {domain_size(r1cs)}")
    if container.section(SECTION_COEFFS, WHAT) != expected_coefficients(r1cs):
        raise MalformedArtifact(f"{WHAT}: the A/B coefficient section is not the relation's (a key for another circuit)")

    def points(section: int, count: int, size: int) -> bytes:
        payload = container.section(section, WHAT)
        if len(payload) != count * size:
            raise MalformedArtifact(f"{WHAT}: section {section} has {len(payload)} bytes, expected {count} points "
                                    f"of {size} ({count * size})")
        return payload

    def g1(section: int, count: int) -> Any:
        try:
            return backend.g1_vector_from_montgomery(points(section, count, G1_SIZE))
        except MalformedArtifact as exc:
            raise MalformedArtifact(f"{WHAT}: section {section}: {exc}") from None

    ic = [_g1(points(SECTION_IC, n_public + 1, G1_SIZE), i * G1_SIZE, backend, f"IC[{i}]") for i in range(n_public + 1)]
    try:
        b_g2 = backend.g2_vector_from_montgomery(points(SECTION_B2, n_vars, G2_SIZE), check_subgroup=g2_subgroup_check)
    except MalformedArtifact as exc:
        raise MalformedArtifact(f"{WHAT}: section {SECTION_B2}: {exc}") from None
    vk = VerifyingKey(alpha_g1=header["alpha_1"], beta_g2=header["beta_2"], gamma_g2=header["gamma_2"],
                      delta_g2=header["delta_2"], ic=tuple(ic))
    try:
        check_verifying_key(vk, backend)
    except MalformedArtifact as exc:
        raise MalformedArtifact(f"{WHAT}: {exc}") from None
    pk = ProvingKey(
        backend_name=backend.name,
        n_wires=n_vars,
        n_public=n_public,
        domain_size=n,
        r1cs_digest=r1cs_digest(r1cs),
        vk=vk,
        beta_g1=header["beta_1"],
        delta_g1=header["delta_1"],
        a_query=g1(SECTION_A, n_vars),
        b_g1_query=g1(SECTION_B1, n_vars),
        b_g2_query=b_g2,
        l_query=g1(SECTION_C, n_vars - n_public - 1),
        h_query=g1(SECTION_H, n),
        h_basis=ODD_COSET_LAGRANGE,
    )
    check_shape(pk, backend)
    return pk, vk


def _read_groth16_header(payload: bytes, backend: Any) -> dict[str, Any]:
    what = f"{WHAT} section 2"
    if len(payload) != HEADER_SIZE:
        raise MalformedArtifact(f"{what}: {len(payload)} bytes, expected {HEADER_SIZE}")
    head = Reader(payload, what)
    for name, prime in (("base field", Q), ("scalar field", R)):
        size = head.u32()
        if size != N8 or head.int_le(N8) != prime:
            raise MalformedArtifact(f"{what}: {name} is not BN254's")
    n_vars, n_public, n = head.u32(), head.u32(), head.u32()
    if n < 1 or n & (n - 1):
        raise MalformedArtifact(f"{what}: domain size {n} is not a power of two")
    if n_public + 1 > n_vars:
        raise MalformedArtifact(f"{what}: {n_public} public inputs but only {n_vars} wires")
    out: dict[str, Any] = {"n_vars": n_vars, "n_public": n_public, "domain_size": n}
    for name, size in (("alpha_1", G1_SIZE), ("beta_1", G1_SIZE), ("beta_2", G2_SIZE), ("gamma_2", G2_SIZE),
                       ("delta_1", G1_SIZE), ("delta_2", G2_SIZE)):
        raw = head.take(size)
        out[name] = _g1(raw, 0, backend, name) if size == G1_SIZE else _g2(raw, backend, name)
    return out


def _coordinate(raw: bytes, offset: int, what: str) -> int:
    v = int.from_bytes(raw[offset : offset + N8], "little")
    if v >= Q:
        raise MalformedArtifact(f"{WHAT}: {what} has a coordinate >= q")
    return v * _MONT_Q_INV % Q


def _g1(raw: bytes, offset: int, backend: Any, what: str) -> G1Affine:
    if raw[offset : offset + G1_SIZE] == bytes(G1_SIZE):
        return None
    p = (_coordinate(raw, offset, what), _coordinate(raw, offset + N8, what))
    if not backend.g1_is_valid(p):
        raise MalformedArtifact(f"{WHAT}: {what} is not on the BN254 G1 curve")
    return p


def _g2(raw: bytes, backend: Any, what: str) -> G2Affine:
    if raw == bytes(G2_SIZE):
        return None
    c = [_coordinate(raw, i, what) for i in range(0, G2_SIZE, N8)]
    p = ((c[0], c[1]), (c[2], c[3]))
    if not backend.g2_is_valid(p):
        raise MalformedArtifact(f"{WHAT}: {what} is not in the BN254 G2 order-R subgroup")
    return p


def expected_coefficients(r1cs: R1CS) -> bytes:
    """Section 4 as snarkjs's `zkey new` writes it for `r1cs`: for each constraint
    its A terms then its B terms in order, then one A entry per public-input binding
    row; each entry u32 matrix (0 = A, 1 = B), u32 row, u32 wire, k * 2^512 mod r."""
    pack = struct.Struct("<III").pack
    entries = []
    for row, constraint in enumerate(r1cs.constraints):
        for matrix, terms in ((0, constraint.a), (1, constraint.b)):
            for wire, k in terms:
                entries.append(pack(matrix, row, wire) + (k * _R2 % R).to_bytes(N8, "little"))
    one = _R2.to_bytes(N8, "little")
    for s in range(r1cs.n_public + 1):
        entries.append(pack(0, r1cs.n_constraints + s, s) + one)
    return struct.pack("<I", len(entries)) + b"".join(entries)
