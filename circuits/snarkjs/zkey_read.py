"""Reading snarkjs Groth16 proving keys (`.zkey`) into our ProvingKey.

A .zkey from a snarkjs ceremony (`zkey new`, then `zkey contribute` by third
parties) holds the same queries as our ProvingKey, with the H query in the
odd-coset Lagrange basis (keys.ODD_COSET_LAGRANGE); the layout is described in
zkey.py, which writes such files from known secrets.

The file is parsed by zkey_file.parse_zkey (the one .zkey parser): container,
protocol (Groth16), field sizes and primes, every section's length against
the header, the header's and the contributions' points (verifying-key G2
points in the order-R subgroup), the coefficient entries' ranges. The points
of sections 3 and 5-9 are then checked as they are loaded through the backend
(every coordinate below q, every point on its curve: one vectorised pass per
section). On top of that: the verifying key is not degenerate
(verify.check_verifying_key: so a key straight from `zkey new`, before any
phase-2 contribution, where delta = gamma = 1 and anyone can forge, is
refused), and the coefficient section (the A and B matrices, with the
public-input binding rows) is exactly the one snarkjs derives from `r1cs`, so
the key belongs to this relation. What is not checked: the C matrix (only
inside the points, not recoverable without the secrets: a key for another C
gives proofs that fail verification), the contribution transcript (section
10: zkey_mpc.verify_contributions or `snarkjs zkey verify`), and, unless
asked, the subgroup of the B2 points (as in keys.load_proving_key: a bad one
only makes our own proofs fail).
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

from ..errors import MalformedArtifact
from ..groth16.keys import ODD_COSET_LAGRANGE, ProvingKey, check_shape
from ..groth16.qap import domain_size, r1cs_digest
from ..groth16.types import VerifyingKey
from ..groth16.verify import check_verifying_key
from ..relation import R1CS
from .binfile import read_file_bytes
from .zkey_file import parse_zkey
from .zkey_new import coefficient_section

WHAT = "zkey"
SECTION_IC, SECTION_A, SECTION_B1, SECTION_B2, SECTION_C, SECTION_H = 3, 5, 6, 7, 8, 9

# Section 4 as snarkjs's `zkey new` writes it for a relation (zkey_new builds it).
expected_coefficients = coefficient_section


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
    # Section points are checked below, as the backend loads them (same checks, one pass).
    zkey = parse_zkey(data, backend, WHAT, check_sections=False)
    header = zkey.header
    n_vars, n_public, n = header.n_vars, header.n_public, header.domain_size
    if (n_vars, n_public) != (r1cs.n_wires, r1cs.n_public):
        raise MalformedArtifact(f"{WHAT}: key is for {n_vars} wires / {n_public} public inputs, "
                                f"the relation has {r1cs.n_wires} / {r1cs.n_public}")
    if n != domain_size(r1cs):
        raise MalformedArtifact(f"{WHAT}: domain size {n}, the relation needs {domain_size(r1cs)}")
    if zkey.coefficients != expected_coefficients(r1cs):
        raise MalformedArtifact(f"{WHAT}: the A/B coefficient section is not the relation's (a key for another circuit)")

    def g1(section: int, payload: bytes) -> Any:
        try:
            return backend.g1_vector_from_montgomery(payload)
        except MalformedArtifact as exc:
            raise MalformedArtifact(f"{WHAT}: section {section}: {exc}") from None

    ic = backend.g1_vector_to_canonical(g1(SECTION_IC, zkey.ic))
    try:
        b_g2 = backend.g2_vector_from_montgomery(zkey.b2, check_subgroup=g2_subgroup_check)
    except MalformedArtifact as exc:
        raise MalformedArtifact(f"{WHAT}: section {SECTION_B2}: {exc}") from None
    vk = VerifyingKey(alpha_g1=header.alpha_1, beta_g2=header.beta_2, gamma_g2=header.gamma_2,
                      delta_g2=header.delta_2, ic=tuple(ic))
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
        beta_g1=header.beta_1,
        delta_g1=header.delta_1,
        a_query=g1(SECTION_A, zkey.a),
        b_g1_query=g1(SECTION_B1, zkey.b1),
        b_g2_query=b_g2,
        l_query=g1(SECTION_C, zkey.c),
        h_query=g1(SECTION_H, zkey.h),
        h_basis=ODD_COSET_LAGRANGE,
    )
    check_shape(pk, backend)
    return pk, vk
