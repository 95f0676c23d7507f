"""A Groth16 proving key in snarkjs's `.zkey` format: parse, validate, write back.

Mirrors snarkjs 0.7 `zkey_utils.js` (readHeader / readMPCParams /
writeHeader / writeMPCParams); the layout of sections 1-9 is described in
`zkey.py`, which writes such keys from known toxic waste. Section 10
("mpcParams") is the phase-2 record:

    csHash (64 bytes, the circuit hash `zkey new` derives from r1cs + ptau)
    u32 number of contributions, then per contribution:
        deltaAfter G1, delta.g1_s G1, delta.g1_sx G1, delta.g2_spx G2
        transcript (64 bytes), u32 type (0 contribution, 1 beacon)
        u32 parameter length, parameters: a sorted list of
            1 name: u8 length, UTF-8 bytes (snarkjs keeps the first 64 characters)
            2 beacon numIterationsExp: u8
            3 beacon hash: u8 length, bytes
Points are affine, coordinates little-endian in Montgomery form, infinity all
zeros (snarkjs's "LEM" form).

`parse_zkey` validates what a key's consumer relies on: magic, version,
protocol, the curve (q, r), section sizes against nVars / nPublic /
domainSize, every coordinate < q and every point on its curve (one
vectorised pass per section, backends.base.first_invalid_montgomery), the
verifying-key G2 points and the contributions' G2 points in the order-R
subgroup. B2's points are only checked on the twist (a subgroup check per
point costs a scalar multiplication; phase-2 verification compares B2
byte for byte with the initial key instead). `Zkey.encode` writes the file
back byte for byte, sections in their original order.

Big sections stay `bytes`; `g1_points` / `g2_points` turn one into canonical
points when a caller needs curve arithmetic on it.
"""
from __future__ import annotations

import struct
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

import numpy as np

from ..backends import get_backend
from ..backends.base import CurveBackend, first_invalid_montgomery
from ..errors import MalformedArtifact
from ..field import Q, R
from ..groth16.types import G1Affine, G2Affine, VerifyingKey
from .binfile import decode_binfile, encode_binfile, read_file_bytes
from .zkey import g1_to_zkey, g2_to_zkey

N8 = 32
G1_SIZE = 2 * N8
G2_SIZE = 4 * N8
HASH_SIZE = 64
GROTH16_PROTOCOL = 1
ZKEY_VERSION = 1
# snarkjs's own contribute / beacon writes sections in this order
SNARKJS_SECTION_ORDER = (1, 2, 3, 4, 5, 6, 7, 8, 9, 10)

CONTRIBUTION_TYPE_RANDOM = 0
CONTRIBUTION_TYPE_BEACON = 1
PARAM_NAME, PARAM_ITERATIONS, PARAM_BEACON_HASH = 1, 2, 3
NAME_MAX_CHARS = 64

_MONT = (1 << 256) % Q
_MONT_INV = pow(_MONT, -1, Q)
_COEF_DTYPE = np.dtype([("matrix", "<u4"), ("constraint", "<u4"), ("signal", "<u4"), ("value", "<u8", (4,))])


# --- points in LEM form ---------------------------------------------------------------


def _fq(data: bytes, offset: int) -> int:
    return int.from_bytes(data[offset:offset + N8], "little") * _MONT_INV % Q


def g1_from_zkey(data: bytes, offset: int = 0) -> G1Affine:
    """The canonical point stored at data[offset:offset + 64] (no validation)."""
    if not any(data[offset:offset + G1_SIZE]):
        return None
    return (_fq(data, offset), _fq(data, offset + N8))


def g2_from_zkey(data: bytes, offset: int = 0) -> G2Affine:
    if not any(data[offset:offset + G2_SIZE]):
        return None
    return ((_fq(data, offset), _fq(data, offset + N8)), (_fq(data, offset + 2 * N8), _fq(data, offset + 3 * N8)))


def g1_points(section: bytes) -> list[G1Affine]:
    """Every point of a G1 section in canonical form."""
    return [g1_from_zkey(section, i) for i in range(0, len(section), G1_SIZE)]


def g2_points(section: bytes) -> list[G2Affine]:
    return [g2_from_zkey(section, i) for i in range(0, len(section), G2_SIZE)]


def g1_section(points: Sequence[G1Affine]) -> bytes:
    return b"".join(g1_to_zkey(p) for p in points)


def _check_points(section: bytes, what: str, per_point: int) -> None:
    """Every coordinate < q and every point on its curve (G2: the twist, not the
    subgroup), in one vectorised pass over the section (backends.base)."""
    found = first_invalid_montgomery(section, per_point)
    if found is None:
        return
    index, kind = found
    if kind == "coordinate":
        raise MalformedArtifact(f"{what}: point {index} has a coordinate >= q")
    raise MalformedArtifact(f"{what}: point {index} is not on the BN254 {'G1 curve' if per_point == 2 else 'G2 twist'}")


def _check_g1_section(section: bytes, what: str) -> None:
    _check_points(section, what, 2)


def _check_g2_section(section: bytes, what: str) -> None:
    _check_points(section, what, 4)


# --- the typed container ---------------------------------------------------------------


@dataclass(frozen=True)
class Groth16Header:
    """Section 2 without the field description (always BN254 here)."""

    n_vars: int
    n_public: int
    domain_size: int
    alpha_1: G1Affine
    beta_1: G1Affine
    beta_2: G2Affine
    gamma_2: G2Affine
    delta_1: G1Affine
    delta_2: G2Affine

    def encode(self) -> bytes:
        out = struct.pack("<I", N8) + Q.to_bytes(N8, "little") + struct.pack("<I", N8) + R.to_bytes(N8, "little")
        out += struct.pack("<III", self.n_vars, self.n_public, self.domain_size)
        out += g1_to_zkey(self.alpha_1) + g1_to_zkey(self.beta_1)
        out += g2_to_zkey(self.beta_2) + g2_to_zkey(self.gamma_2)
        return out + g1_to_zkey(self.delta_1) + g2_to_zkey(self.delta_2)


@dataclass(frozen=True)
class Contribution:
    """One phase-2 record of section 10 (snarkjs readContribution).

    `params` is the raw parameter block; name, num_iterations_exp and
    beacon_hash are read from it, and writing reuses it so that a parsed key
    is written back byte for byte.
    """

    delta_after: G1Affine
    g1_s: G1Affine
    g1_sx: G1Affine
    g2_spx: G2Affine
    transcript: bytes
    type: int
    params: bytes = b""
    name: str | None = None
    num_iterations_exp: int | None = None
    beacon_hash: bytes | None = None

    def encode(self) -> bytes:
        out = g1_to_zkey(self.delta_after) + g1_to_zkey(self.g1_s) + g1_to_zkey(self.g1_sx) + g2_to_zkey(self.g2_spx)
        return out + self.transcript + struct.pack("<II", self.type, len(self.params)) + self.params


def contribution_params(name: str | None, beacon: tuple[int, bytes] | None = None) -> bytes:
    """The parameter block snarkjs writeContribution makes.

    Like snarkjs, the name is cut to its first 64 UTF-16 code units (JavaScript's
    substring) and written as UTF-8; a beacon adds its iterations exponent and hash.
    """
    out = bytearray()
    if name:
        units = name.encode("utf-16-le", "surrogatepass")[: 2 * NAME_MAX_CHARS]
        data = units.decode("utf-16-le", "replace").encode("utf-8")
        if len(data) > 255:
            raise ValueError("contribution name is longer than 255 UTF-8 bytes")
        out += bytes([PARAM_NAME, len(data)]) + data
    if beacon is not None:
        exponent, beacon_hash = beacon
        if not 0 < len(beacon_hash) < 256:
            raise ValueError("beacon hash must be 1 to 255 bytes")
        out += bytes([PARAM_ITERATIONS, exponent, PARAM_BEACON_HASH, len(beacon_hash)]) + beacon_hash
    return bytes(out)


def parse_contribution_params(data: bytes, what: str = "contribution") -> tuple[str | None, int | None, bytes | None]:
    """snarkjs readContribution's parameter loop: types strictly increasing, each known."""
    name, exponent, beacon_hash = None, None, None
    pos, last = 0, 0
    while pos < len(data):
        kind = data[pos]
        if kind <= last:
            raise MalformedArtifact(f"{what}: contribution parameters are not sorted")
        last = kind
        if kind == PARAM_ITERATIONS:
            if pos + 2 > len(data):
                raise MalformedArtifact(f"{what}: truncated contribution parameter {kind}")
            exponent = data[pos + 1]
            pos += 2
            continue
        if kind not in (PARAM_NAME, PARAM_BEACON_HASH) or pos + 2 > len(data):
            raise MalformedArtifact(f"{what}: unknown or truncated contribution parameter {kind}")
        size = data[pos + 1]
        value = data[pos + 2:pos + 2 + size]
        if len(value) != size:
            raise MalformedArtifact(f"{what}: truncated contribution parameter {kind}")
        if kind == PARAM_NAME:
            name = value.decode("utf-8", "replace")
        else:
            beacon_hash = bytes(value)
        pos += 2 + size
    return name, exponent, beacon_hash


@dataclass(frozen=True)
class Zkey:
    """A Groth16 .zkey. Point sections are kept as the file's bytes (LEM form)."""

    header: Groth16Header
    ic: bytes
    coefficients: bytes  # section 4 as written: u32 count, then 44-byte entries
    a: bytes
    b1: bytes
    b2: bytes
    c: bytes
    h: bytes
    cs_hash: bytes
    contributions: tuple[Contribution, ...] = ()
    section_order: tuple[int, ...] = field(default=SNARKJS_SECTION_ORDER)

    def mpc_params(self) -> bytes:
        out = self.cs_hash + struct.pack("<I", len(self.contributions))
        return out + b"".join(c.encode() for c in self.contributions)

    def encode(self) -> bytes:
        payloads = {
            1: struct.pack("<I", GROTH16_PROTOCOL),
            2: self.header.encode(),
            3: self.ic,
            4: self.coefficients,
            5: self.a,
            6: self.b1,
            7: self.b2,
            8: self.c,
            9: self.h,
            10: self.mpc_params(),
        }
        return encode_binfile(b"zkey", ZKEY_VERSION, [(s, payloads[s]) for s in self.section_order])


def vk_from_zkey(zkey: Zkey) -> VerifyingKey:
    h = zkey.header
    return VerifyingKey(alpha_g1=h.alpha_1, beta_g2=h.beta_2, gamma_g2=h.gamma_2, delta_g2=h.delta_2, ic=tuple(g1_points(zkey.ic)))


# --- parsing -----------------------------------------------------------------------------


class _Cursor:
    def __init__(self, data: bytes, what: str):
        self.data, self.pos, self.what = data, 0, what

    def take(self, n: int) -> bytes:
        if self.pos + n > len(self.data):
            raise MalformedArtifact(f"{self.what}: truncated (needed {n} bytes at offset {self.pos})")
        out = self.data[self.pos:self.pos + n]
        self.pos += n
        return out

    def u32(self) -> int:
        return struct.unpack("<I", self.take(4))[0]

    def g1(self, what: str) -> G1Affine:
        raw = self.take(G1_SIZE)
        _check_g1_section(raw, what)
        return g1_from_zkey(raw)

    def g2(self, what: str, backend: CurveBackend) -> G2Affine:
        raw = self.take(G2_SIZE)
        _check_g2_section(raw, what)
        p = g2_from_zkey(raw)
        if not backend.g2_is_valid(p):
            raise MalformedArtifact(f"{what}: G2 point is not in the order-R subgroup")
        return p


def _parse_header(data: bytes, backend: CurveBackend, what: str) -> Groth16Header:
    cur = _Cursor(data, f"{what} header")
    n8q = cur.u32()
    q = int.from_bytes(cur.take(n8q), "little")
    n8r = cur.u32()
    r = int.from_bytes(cur.take(n8r), "little")
    if (n8q, q, n8r, r) != (N8, Q, N8, R):
        raise MalformedArtifact(f"{what}: the curve is not BN254 (its base field or scalar field differs)")
    n_vars, n_public, domain_size = cur.u32(), cur.u32(), cur.u32()
    if domain_size == 0 or domain_size & (domain_size - 1) or domain_size > 1 << 28:
        raise MalformedArtifact(f"{what}: domain size {domain_size} is not a power of two up to 2^28")
    if n_public + 1 > n_vars:
        raise MalformedArtifact(f"{what}: {n_public} public inputs but only {n_vars} variables")
    header = Groth16Header(
        n_vars=n_vars,
        n_public=n_public,
        domain_size=domain_size,
        alpha_1=cur.g1(f"{what} alpha_1"),
        beta_1=cur.g1(f"{what} beta_1"),
        beta_2=cur.g2(f"{what} beta_2", backend),
        gamma_2=cur.g2(f"{what} gamma_2", backend),
        delta_1=cur.g1(f"{what} delta_1"),
        delta_2=cur.g2(f"{what} delta_2", backend),
    )
    if cur.pos != len(data):
        raise MalformedArtifact(f"{what}: header section has {len(data) - cur.pos} extra bytes")
    return header


def parse_mpc_params(data: bytes, backend: CurveBackend, what: str = "zkey") -> tuple[bytes, tuple[Contribution, ...]]:
    """Section 10: (csHash, contributions), points validated (G2 in the subgroup)."""
    cur = _Cursor(data, f"{what} contributions")
    cs_hash = cur.take(HASH_SIZE)
    count = cur.u32()
    contributions = []
    for i in range(count):
        where = f"{what} contribution #{i + 1}"
        delta_after = cur.g1(f"{where} deltaAfter")
        g1_s = cur.g1(f"{where} g1_s")
        g1_sx = cur.g1(f"{where} g1_sx")
        g2_spx = cur.g2(f"{where} g2_spx", backend)
        transcript = cur.take(HASH_SIZE)
        kind = cur.u32()
        params = cur.take(cur.u32())
        name, exponent, beacon_hash = parse_contribution_params(params, where)
        contributions.append(
            Contribution(delta_after, g1_s, g1_sx, g2_spx, transcript, kind, params, name, exponent, beacon_hash)
        )
    if cur.pos != len(data):
        raise MalformedArtifact(f"{what}: contributions section has {len(data) - cur.pos} extra bytes")
    return cs_hash, tuple(contributions)


def _check_coefficients(data: bytes, header: Groth16Header, what: str) -> None:
    if len(data) < 4:
        raise MalformedArtifact(f"{what}: coefficients section is truncated")
    count = struct.unpack_from("<I", data)[0]
    if len(data) != 4 + count * _COEF_DTYPE.itemsize:
        raise MalformedArtifact(f"{what}: coefficients section is {len(data)} bytes, {count} coefficients need {4 + count * _COEF_DTYPE.itemsize}")
    coefs = np.frombuffer(data, dtype=_COEF_DTYPE, offset=4)
    if np.any(coefs["matrix"] > 1):
        raise MalformedArtifact(f"{what}: a coefficient names a matrix other than A (0) or B (1)")
    if np.any(coefs["constraint"] >= header.domain_size):
        raise MalformedArtifact(f"{what}: a coefficient's constraint lies outside the domain")
    if np.any(coefs["signal"] >= header.n_vars):
        raise MalformedArtifact(f"{what}: a coefficient's signal is not a variable of the key")


def parse_zkey(data: bytes, backend: CurveBackend | None = None, what: str = "zkey", *,
               check_sections: bool = True) -> Zkey:
    """A validated Zkey (see the module docstring); MalformedArtifact names the first problem.
    `backend` (default: get_backend()) checks the G2 subgroup memberships.
    check_sections=False leaves the points of sections 3 and 5-9 unchecked, for a
    caller that loads every one of them through a backend, which checks them
    (zkey_read); the header and the contributions are always checked."""
    backend = backend or get_backend()
    binfile = decode_binfile(data, b"zkey", (ZKEY_VERSION,), what)
    order = tuple(binfile.sections)
    missing = sorted(set(SNARKJS_SECTION_ORDER) - set(order))
    extra = sorted(set(order) - set(SNARKJS_SECTION_ORDER))
    if missing:
        raise MalformedArtifact(f"{what}: section {missing[0]} is missing (a Groth16 key has sections 1-10)")
    if extra:
        raise MalformedArtifact(f"{what}: sections {extra} unexpected for a Groth16 key")
    s = binfile.sections
    if len(s[1]) != 4 or struct.unpack("<I", s[1])[0] != GROTH16_PROTOCOL:
        raise MalformedArtifact(f"{what}: not a Groth16 key (protocol section {s[1].hex()})")
    header = _parse_header(s[2], backend, what)
    n_private = header.n_vars - header.n_public - 1
    sizes = {
        3: ("IC", (header.n_public + 1) * G1_SIZE),
        5: ("A", header.n_vars * G1_SIZE),
        6: ("B1", header.n_vars * G1_SIZE),
        7: ("B2", header.n_vars * G2_SIZE),
        8: ("C", n_private * G1_SIZE),
        9: ("H", header.domain_size * G1_SIZE),
    }
    for section, (name, size) in sizes.items():
        if len(s[section]) != size:
            raise MalformedArtifact(f"{what}: {name} section: section {section} has {len(s[section])} bytes, expected {size}")
    _check_coefficients(s[4], header, what)
    if check_sections:
        for section in (3, 5, 6, 8, 9):
            _check_g1_section(s[section], f"{what} {sizes[section][0]} section, section {section}")
        _check_g2_section(s[7], f"{what} B2 section, section 7")
    cs_hash, contributions = parse_mpc_params(s[10], backend, what)
    return Zkey(
        header=header,
        ic=s[3],
        coefficients=s[4],
        a=s[5],
        b1=s[6],
        b2=s[7],
        c=s[8],
        h=s[9],
        cs_hash=cs_hash,
        contributions=contributions,
        section_order=order,
    )


def read_zkey(path: str | Path, backend: CurveBackend | None = None) -> Zkey:
    return parse_zkey(read_file_bytes(path, "zkey"), backend, what=str(path))
