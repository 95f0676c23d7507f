"""A circuit's initial Groth16 key from a public .ptau, byte for byte as `snarkjs zkey new`.

No secret is involved: every point is a combination of phase-1 points
(`circuits.groth16.phase1.derive_keys_from_phase1` computes them), gamma and
delta are the generators, and a phase-2 contribution must follow before the
key is used. The layout is zkey.py's (see its docstring) with these
differences, all taken from snarkjs 0.7 zkey_new.js:
- sections appear in the order snarkjs writes them: 1, 2, 4, 3, 9, 8, 5, 6, 7, 10;
- alpha_1, beta_1, beta_2 are the ptau's alphaTauG1[0], betaTauG1[0], betaG2;
  gamma_2 = delta_2 = [1]_2, delta_1 = [1]_1;
- H (section 9) is the ptau's Lagrange tauG1 points of the 2n domain at odd
  indices, copied: [L'_{2j+1}(tau)]_1 for j < n;
- the domain is 2^cirPower, cirPower = floor(log2(nConstraints + nPublic)) + 1;
- section 10 holds csHash, the blake2b-512 digest snarkjs computes while
  writing, which `snarkjs zkey verify` and every contribution print and check.
  It hashes points in "uncompressed" form (coordinates big-endian, standard
  form; G2 as x.c1, x.c0, y.c1, y.c0; infinity all zeros), in this order:
  alpha_1, beta_1, beta_2, gamma_2, delta_1, delta_2; then u32 big-endian
  count and the points of IC; u32 (n - 1) and tauG1[n + i] - tauG1[i] for
  i < n - 1 (the H points of a proving key built from powers of tau, which
  zkey new never writes); then count and points of C, A, B1, B2.
  snarkjs hashes the H differences in chunks of 2^14 and sizes the last chunk
  as a full one, so for n >= 2^15 it hashes one more difference, i = n - 1:
  tauG1[2n - 1] - tauG1[n - 1]. When the ptau has power log2(n), tauG1 has
  only 2n - 1 points and snarkjs reads the 64 bytes that follow the section
  (section 3's header and the start of tauG2[0]) as if they were a point, in
  words not reduced mod q, on which wasmcurves' additions are not arithmetic
  mod q; this module reads the same bytes and replays those operations
  (checked against snarkjs at 2^15, and against node on random words).
"""
from __future__ import annotations

import hashlib
import struct
from pathlib import Path
from typing import Callable

import numpy as np

from ..backends.base import CurveBackend, first_invalid_montgomery, fq_dtype
from ..errors import CircuitError, MalformedArtifact
from ..field import Q, R, R_TWO_ADICITY
from ..groth16.phase1 import derive_keys_from_phase1
from ..groth16.qap import domain_size
from ..groth16.types import G1Affine, G2Affine
from ..relation import R1CS
from .binfile import decode_binfile, encode_binfile
from .ptau import G1_SIZE, LAGRANGE_TAU_G1, TAU_G1, Ptau, phase1_points, read_ptau
from .zkey import N8, g1_to_zkey, g2_to_zkey

Progress = Callable[[str], None]

_R2_R = pow(1 << 256, 2, R)  # coefficients are stored as c * 2^512 mod r (zkey.py, section 4)
_MONT_INV = pow(1 << 256, -1, Q)
_H_HASH_CHUNK = 1 << 14  # zkey_new.js hashHPoints' CHUNK_SIZE


def circuit_power(r1cs: R1CS) -> int:
    """zkey_new.js's cirPower: log2(nConstraints + nPublic) + 1, with log2(0) = 0."""
    rows = r1cs.n_constraints + r1cs.n_public
    return max(rows.bit_length(), 1)


def g1_uncompressed(p: G1Affine) -> bytes:
    if p is None:
        return bytes(2 * N8)
    return p[0].to_bytes(N8, "big") + p[1].to_bytes(N8, "big")


def g2_uncompressed(p: G2Affine) -> bytes:
    if p is None:
        return bytes(4 * N8)
    (x0, x1), (y0, y1) = p
    return x1.to_bytes(N8, "big") + x0.to_bytes(N8, "big") + y1.to_bytes(N8, "big") + y0.to_bytes(N8, "big")


def coefficient_section(r1cs: R1CS) -> bytes:
    """Section 4: A and B coefficients per constraint, then the public binding rows."""
    pack = struct.Struct("<III").pack
    entries = []
    for row, c in enumerate(r1cs.constraints):
        for matrix, terms in ((0, c.a), (1, c.b)):
            for wire, k in terms:
                entries.append(pack(matrix, row, wire) + (k % R * _R2_R % R).to_bytes(N8, "little"))
    one = _R2_R.to_bytes(N8, "little")
    for s in range(r1cs.n_public + 1):
        entries.append(pack(0, r1cs.n_constraints + s, s) + one)
    return struct.pack("<I", len(entries)) + b"".join(entries)


_WORD = 1 << 256
_Q_NEG_INV = -pow(Q, -1, _WORD) % _WORD


# wasmcurves' Fq operations on 256-bit Montgomery words, exactly, including on
# words >= q, for which add and sub are not correct mod q (f1m_add subtracts q
# once after a 256-bit carry; f1m_sub adds q once after a borrow).
def _wasm_add(x: int, y: int) -> int:
    s = x + y
    if s >= _WORD:
        return (s - Q) % _WORD
    return s - Q if s >= Q else s


def _wasm_sub(x: int, y: int) -> int:
    d = x - y
    return (d + Q) % _WORD if d < 0 else d


def _wasm_mul(x: int, y: int) -> int:
    """Montgomery product (x y + m q) / 2^256, then f1m_mul's single conditional subtraction."""
    t = x * y
    t = (t + (t * _Q_NEG_INV % _WORD) * Q) >> 256
    return t - Q if t >= Q else t


def _wasm_sub_affine(p: tuple[int, int], q: tuple[int, int]) -> G1Affine:
    """g1m_subAffine(p, q) then g1m_batchToAffine, on Montgomery words: p - q as
    wasmcurves computes it (its _addAffine formulas, operation by operation),
    for a p whose words need not be reduced or on the curve."""
    x1, y1 = p
    x2, y2 = q[0], _wasm_sub(0, q[1])
    if x1 == x2:
        raise CircuitError("zkey new: the bytes after tauG1 share tauG1[n-1]'s x; not reproduced")
    h = _wasm_sub(x2, x1)
    y2_minus_y1 = _wasm_sub(y2, y1)
    hh = _wasm_mul(h, h)
    i = _wasm_add(hh, hh)
    i = _wasm_add(i, i)
    j = _wasm_mul(h, i)
    r = _wasm_add(y2_minus_y1, y2_minus_y1)
    v = _wasm_mul(x1, i)
    r2 = _wasm_mul(r, r)
    v2 = _wasm_add(v, v)
    x3 = _wasm_sub(_wasm_sub(r2, j), v2)
    y1_j2 = _wasm_mul(y1, j)
    y1_j2 = _wasm_add(y1_j2, y1_j2)
    y3 = _wasm_sub(_wasm_mul(_wasm_sub(v, x3), r), y1_j2)
    z3 = _wasm_add(h, h)
    # From here on only multiplications and one inversion: correct mod q whatever the words.
    x, y, z = (w * _MONT_INV % Q for w in (x3, y3, z3))
    if z == 0:
        return None
    z_inv = pow(z, -1, Q)
    return (x * z_inv * z_inv % Q, y * z_inv * z_inv * z_inv % Q)


def _extra_h_difference(ptau: Ptau, n: int, backend: CurveBackend) -> G1Affine:
    """tauG1[2n-1] - tauG1[n-1], or what snarkjs computes when 2n - 1 is past the section."""
    previous = ptau.g1_points(TAU_G1, n - 1, 1)[0]
    if 2 * n - 1 < ptau.section_points(TAU_G1):
        beyond = ptau.g1_points(TAU_G1, 2 * n - 1, 1)[0]
        return backend.g1_add(beyond, None if previous is None else (previous[0], (Q - previous[1]) % Q))
    offset = ptau.sections[TAU_G1][0] + (2 * n - 1) * G1_SIZE
    with ptau.path.open("rb") as fh:
        fh.seek(offset)
        raw = fh.read(G1_SIZE)
    if len(raw) != G1_SIZE:
        raise MalformedArtifact(f"ptau {ptau.path}: file ends right after tauG1 (snarkjs reads 64 bytes there)")
    x, y = (int.from_bytes(raw[:N8], "little"), int.from_bytes(raw[N8:], "little"))
    if previous is None:
        raise MalformedArtifact(f"ptau {ptau.path}: tauG1[{n - 1}] is the point at infinity")
    if x == 0 and y == 0:
        return (previous[0], (Q - previous[1]) % Q)
    # tauG1[n-1] back in Montgomery words, as snarkjs holds it.
    return _wasm_sub_affine((x, y), (previous[0] * (_WORD % Q) % Q, previous[1] * (_WORD % Q) % Q))


def uncompressed_from_montgomery(data: bytes, per_point: int) -> bytes:
    """snarkjs's "uncompressed" form of a LEM vector (G1: per_point 2, G2: 4), for
    the whole vector at once: each coordinate out of Montgomery form
    (zk_dtypes' Fq), big-endian, and in G2 each Fq2 element's halves swapped
    (c1 first). Infinity (all zeros) stays all zeros, as g1_uncompressed writes it."""
    mont = np.frombuffer(data, dtype="<u8").view(fq_dtype())
    standard = mont.astype(fq_dtype("std")).view(np.uint8).reshape(-1, per_point // 2, 2, N8)
    if per_point == 4:
        standard = standard[:, :, ::-1, :]
    return np.ascontiguousarray(standard[..., ::-1]).tobytes()


def _points_block(data: bytes, per_point: int) -> tuple[bytes, bytes]:
    """(section payload, what csHash takes: u32 big-endian count then the uncompressed points)."""
    return data, struct.pack(">I", len(data) // (32 * per_point)) + uncompressed_from_montgomery(data, per_point)


def new_zkey(r1cs: R1CS, ptau: Ptau | str | Path, backend: CurveBackend, progress: Progress | None = None) -> bytes:
    """The bytes `snarkjs zkey new circuit.r1cs ptau out.zkey` writes for `r1cs` (as encode_r1cs writes it).

    The ptau's points are decoded and checked on their curves, not verified
    against each other: run `ptau.verify_ptau` on it first (with
    lagrange_powers covering circuit_power(r1cs) and the power above it).
    """
    say = progress or (lambda _msg: None)
    ptau = ptau if isinstance(ptau, Ptau) else read_ptau(ptau)
    power = circuit_power(r1cs)
    if not ptau.prepared:
        raise MalformedArtifact(f"ptau {ptau.path}: not prepared for phase 2 (run `snarkjs powersoftau prepare phase2`)")
    if power > ptau.power:
        raise MalformedArtifact(f"ptau {ptau.path}: power {ptau.power} is too small, the circuit needs 2^{power}")
    if power >= R_TWO_ADICITY:
        raise CircuitError(f"circuit needs a domain of 2^{power}; snarkjs handles at most 2^{R_TWO_ADICITY - 1} here")
    n = 1 << power
    if domain_size(r1cs) != n:
        raise CircuitError(f"snarkjs's domain 2^{power} differs from the QAP domain {domain_size(r1cs)} (empty circuit)")

    say(f"zkey new: phase-1 points for 2^{power}")
    phase1 = phase1_points(ptau, n, backend)
    pk, vk = derive_keys_from_phase1(
        r1cs, backend, phase1, lambda stage, done, total: say(f"zkey new: {stage} {done}/{total}")
    )
    say("zkey new: encoding")
    g1, g2 = backend.g1_generator(), backend.g2_generator()
    header = struct.pack("<I", N8) + Q.to_bytes(N8, "little") + struct.pack("<I", N8) + R.to_bytes(N8, "little")
    header += struct.pack("<III", r1cs.n_wires, r1cs.n_public, n)
    header += g1_to_zkey(phase1.alpha_g1) + g1_to_zkey(phase1.beta_g1) + g2_to_zkey(phase1.beta_g2)
    header += g2_to_zkey(g2) + g1_to_zkey(g1) + g2_to_zkey(g2)

    # H: odd-indexed Lagrange points of the 2n domain (section 12 at power + 1), copied as stored.
    lagrange_2n = ptau.raw_points(LAGRANGE_TAU_G1, 2 * n - 1, 2 * n)
    h_section = np.frombuffer(lagrange_2n, dtype=np.uint8).reshape(n, 2 * G1_SIZE)[:, G1_SIZE:].tobytes()
    bad = first_invalid_montgomery(h_section, 2)
    if bad is not None:
        raise MalformedArtifact(f"ptau Lagrange tauG1 (2n domain, odd points): point {bad[0]} is not a valid G1 point "
                                f"({'coordinate >= q' if bad[1] == 'coordinate' else 'not on the BN254 G1 curve'})")

    ic, ic_hash = _points_block(b"".join(g1_to_zkey(p) for p in vk.ic), 2)
    c_points, c_hash = _points_block(backend.g1_vector_to_montgomery(pk.l_query), 2)
    a_points, a_hash = _points_block(backend.g1_vector_to_montgomery(pk.a_query), 2)
    b1_points, b1_hash = _points_block(backend.g1_vector_to_montgomery(pk.b_g1_query), 2)
    b2_points, b2_hash = _points_block(backend.g2_vector_to_montgomery(pk.b_g2_query), 4)
    # tauG1[n + i] - tauG1[i], i < n - 1
    h_differences = uncompressed_from_montgomery(backend.g1_vector_to_montgomery(pk.h_query), 2)
    if n - 1 >= _H_HASH_CHUNK:
        h_differences += g1_uncompressed(_extra_h_difference(ptau, n, backend))

    hasher = hashlib.blake2b(digest_size=64)
    for p in (phase1.alpha_g1, phase1.beta_g1):
        hasher.update(g1_uncompressed(p))
    hasher.update(g2_uncompressed(phase1.beta_g2))
    hasher.update(g2_uncompressed(g2) + g1_uncompressed(g1) + g2_uncompressed(g2))
    hasher.update(ic_hash)
    hasher.update(struct.pack(">I", n - 1) + h_differences)
    for block in (c_hash, a_hash, b1_hash, b2_hash):
        hasher.update(block)
    cs_hash = hasher.digest()

    sections = [
        (1, struct.pack("<I", 1)),
        (2, header),
        (4, coefficient_section(r1cs)),
        (3, ic),
        (9, h_section),
        (8, c_points),
        (5, a_points),
        (6, b1_points),
        (7, b2_points),
        (10, cs_hash + struct.pack("<I", 0)),
    ]
    return encode_binfile(b"zkey", 1, sections)


def circuit_hash(zkey: bytes) -> bytes:
    """The 64-byte csHash of a .zkey (section 10), as `snarkjs zkey new` printed it."""
    container = decode_binfile(zkey, b"zkey", (1,), "zkey")
    contributions = container.section(10, "zkey")
    if len(contributions) < 68:
        raise MalformedArtifact("zkey: section 10 is shorter than the 64-byte circuit hash and count")
    return contributions[:64]


def format_hash(digest: bytes) -> str:
    """snarkjs's formatHash layout: four lines of four 8-hex-digit words."""
    words = [digest[i:i + 4].hex() for i in range(0, 64, 4)]
    return "\n".join(" ".join(words[i:i + 4]) for i in range(0, 16, 4))
