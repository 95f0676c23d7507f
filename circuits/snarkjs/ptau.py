"""snarkjs powers-of-tau files (`.ptau`): reading, checking, and phase-1 points.

A .ptau is the output of a public phase-1 ceremony. Layout (iden3 binfile,
magic "ptau", version 1, as snarkjs 0.7 powersoftau_utils.js writes it):
 1 header: u32 n8 (32), q (n8 bytes LE), u32 power, u32 ceremonyPower
 2 tauG1:      [tau^i]_1          i < 2^(power+1) - 1
 3 tauG2:      [tau^i]_2          i < 2^power
 4 alphaTauG1: [alpha tau^i]_1    i < 2^power
 5 betaTauG1:  [beta tau^i]_1     i < 2^power
 6 betaG2:     [beta]_2
 7 contributions: u32 count, then per contribution the five points above
   after it (tauG1[1], tauG2[1], alphaG1, betaG1, betaG2), its public key
   (6 G1 + 3 G2), a 216-byte partial hash, the 64-byte next challenge, u32
   type (0 contribution, 1 beacon), u32 length and the parameters (1 name,
   2 beacon iterations exponent, 3 beacon hash)
after `powersoftau prepare phase2`, for every p = 0..power (and p = power+1
for section 12 only) the Lagrange basis of the 2^p-element domain <omega_p>,
omega_p = 5^((r-1)/2^p), stored back to back (power p starts at point 2^p - 1):
 12 [L_j(tau)]_1   13 [L_j(tau)]_2   14 [alpha L_j(tau)]_1   15 [beta L_j(tau)]_1
(preparePhase2 computes them as the inverse FFT, in the exponent, of the
first 2^p points of sections 2-5; at p = power+1 the missing last tau power
is taken as the point at infinity).

Points are affine, each coordinate 32 bytes little-endian in Montgomery form
(x * 2^256 mod q); G2 coordinates are x.c0, x.c1, y.c0, y.c1. The point at
infinity is all zeros, which is not on either curve, so it is unambiguous.

Files reach hundreds of MB (2^18), so `read_ptau` reads only the header, the
section table and the contributions; points are read on demand, one range of
one section at a time.
"""
from __future__ import annotations

import os
import re
import secrets
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterable, Mapping

import numpy as np

from ..backends.base import CurveBackend, first_invalid_montgomery
from ..errors import CircuitError, MalformedArtifact
from ..field import Q, R, R_TWO_ADICITY
from ..groth16.phase1 import Phase1Points
from ..groth16.qap import batch_inverse, root_of_unity
from ..groth16.types import G1Affine, G2Affine
from .binfile import Reader

N8 = 32
G1_SIZE = 2 * N8
G2_SIZE = 4 * N8

SECTION_HEADER = 1
TAU_G1 = 2
TAU_G2 = 3
ALPHA_TAU_G1 = 4
BETA_TAU_G1 = 5
BETA_G2 = 6
CONTRIBUTIONS = 7
LAGRANGE_TAU_G1 = 12
LAGRANGE_TAU_G2 = 13
LAGRANGE_ALPHA_TAU_G1 = 14
LAGRANGE_BETA_TAU_G1 = 15

SECTION_NAMES = {
    TAU_G1: "tauG1", TAU_G2: "tauG2", ALPHA_TAU_G1: "alphaTauG1", BETA_TAU_G1: "betaTauG1", BETA_G2: "betaG2",
    LAGRANGE_TAU_G1: "Lagrange tauG1", LAGRANGE_TAU_G2: "Lagrange tauG2",
    LAGRANGE_ALPHA_TAU_G1: "Lagrange alphaTauG1", LAGRANGE_BETA_TAU_G1: "Lagrange betaTauG1",
}
G2_SECTIONS = (TAU_G2, BETA_G2, LAGRANGE_TAU_G2)
LAGRANGE_SECTIONS = (LAGRANGE_TAU_G1, LAGRANGE_TAU_G2, LAGRANGE_ALPHA_TAU_G1, LAGRANGE_BETA_TAU_G1)
# Lagrange section -> the tau-power section it is the inverse FFT of.
LAGRANGE_OF = {LAGRANGE_TAU_G1: TAU_G1, LAGRANGE_TAU_G2: TAU_G2,
               LAGRANGE_ALPHA_TAU_G1: ALPHA_TAU_G1, LAGRANGE_BETA_TAU_G1: BETA_TAU_G1}

_MONT_INV = pow(1 << 256, -1, Q)
# Random scalars for the same-ratio checks: a wrong section passes with
# probability about 2^-128 (snarkjs uses 32-bit scalars).
_CHALLENGE_BITS = 128

Progress = Callable[[str], None]


@dataclass(frozen=True)
class PtauContribution:
    """One entry of section 7: the points after it, and who made it."""

    index: int  # 1-based, as snarkjs prints it
    name: str
    is_beacon: bool
    tau_g1: G1Affine  # tauG1[1] after this contribution
    tau_g2: G2Affine  # tauG2[1]
    alpha_g1: G1Affine
    beta_g1: G1Affine
    beta_g2: G2Affine
    next_challenge: bytes


@dataclass(frozen=True)
class Ptau:
    """A .ptau file's header and section table; points are read on demand."""

    path: Path
    power: int
    ceremony_power: int
    sections: Mapping[int, tuple[int, int]]  # section type -> (file offset, byte length)
    contributions: tuple[PtauContribution, ...]

    @property
    def prepared(self) -> bool:
        """True when the Lagrange sections 12-15 (`prepare phase2`) are present."""
        return LAGRANGE_TAU_G1 in self.sections

    def section_points(self, section: int) -> int:
        offset_size = self.sections[section]
        return offset_size[1] // (G2_SIZE if section in G2_SECTIONS else G1_SIZE)

    def raw_points(self, section: int, start: int, count: int) -> bytes:
        """The bytes of points start .. start+count-1 of a point section."""
        what = f"ptau {self.path} section {section} ({SECTION_NAMES.get(section, '?')})"
        if section not in self.sections:
            raise MalformedArtifact(f"{what} is missing")
        size = G2_SIZE if section in G2_SECTIONS else G1_SIZE
        offset, length = self.sections[section]
        if start < 0 or count < 0 or (start + count) * size > length:
            raise MalformedArtifact(f"{what}: points {start}..{start + count - 1} lie beyond its {length // size} points")
        with self.path.open("rb") as fh:
            fh.seek(offset + start * size)
            data = fh.read(count * size)
        if len(data) != count * size:
            raise MalformedArtifact(f"{what}: file is truncated")
        return data

    def g1_points(self, section: int, start: int, count: int) -> list[G1Affine]:
        return decode_g1_points(self.raw_points(section, start, count), f"{SECTION_NAMES[section]}", start)

    def g2_points(self, section: int, start: int, count: int) -> list[G2Affine]:
        return decode_g2_points(self.raw_points(section, start, count), f"{SECTION_NAMES[section]}", start)

    def lagrange_g1(self, section: int, power: int) -> list[G1Affine]:
        """The 2^power Lagrange points of one G1 Lagrange section (12, 14, 15)."""
        return self.g1_points(section, (1 << power) - 1, 1 << power)

    def lagrange_g2(self, power: int) -> list[G2Affine]:
        return self.g2_points(LAGRANGE_TAU_G2, (1 << power) - 1, 1 << power)

    def g1_vector(self, backend: CurveBackend, section: int, start: int, count: int):
        """Points start .. start+count-1 of a G1 section as a backend vector, checked
        as decode_g1_points checks them (one vectorised pass, no Python per point)."""
        return load_g1_vector(backend, self.raw_points(section, start, count), SECTION_NAMES[section], start)

    def g2_vector(self, backend: CurveBackend, section: int, start: int, count: int):
        """As g1_vector, and every point in the order-R subgroup (the backend's
        check: mcl's isValid on every core)."""
        return load_g2_vector(backend, self.raw_points(section, start, count), SECTION_NAMES[section], start)


# --- point decoding ---------------------------------------------------------------


def _check_points(raw: bytes, what: str, first: int, per_point: int) -> None:
    """Every coordinate < q and every point on its curve (G2: the twist), one vectorised pass."""
    found = first_invalid_montgomery(raw, per_point)
    if found is None:
        return
    index, kind = found
    if kind == "coordinate":
        raise MalformedArtifact(f"ptau {what}: point {first + index} has a coordinate >= q")
    curve = "BN254 G1 curve" if per_point == 2 else "BN254 G2 twist"
    raise MalformedArtifact(f"ptau {what}: point {first + index} is not on the {curve}")


def _standard(raw: bytes) -> list[int]:
    view = memoryview(raw)
    return [int.from_bytes(view[i:i + N8], "little") * _MONT_INV % Q for i in range(0, len(raw), N8)]


def decode_g1_points(raw: bytes, what: str, first: int = 0) -> list[G1Affine]:
    """G1 points in snarkjs's LEM form -> canonical form, each checked on the curve."""
    _check_points(raw, what, first, 2)
    c = _standard(raw)
    return [None if c[k] == 0 and c[k + 1] == 0 else (c[k], c[k + 1]) for k in range(0, len(c), 2)]


def decode_g2_points(raw: bytes, what: str, first: int = 0) -> list[G2Affine]:
    """G2 points in LEM form -> canonical form, each checked on the twist.

    Subgroup membership is the backend's check (`load_g2_vector`), made where
    the points are used: it costs a scalar multiplication per point."""
    _check_points(raw, what, first, 4)
    c = _standard(raw)
    return [None if not any(c[k:k + 4]) else ((c[k], c[k + 1]), (c[k + 2], c[k + 3])) for k in range(0, len(c), 4)]


def load_g1_vector(backend: CurveBackend, raw: bytes, what: str, first: int = 0):
    """LEM G1 points as a backend vector, checked as decode_g1_points checks them."""
    _check_points(raw, what, first, 2)
    return backend.g1_vector_from_montgomery(raw)


def load_g2_vector(backend: CurveBackend, raw: bytes, what: str, first: int = 0):
    """LEM G2 points as a backend vector: on the twist, then in the order-R subgroup."""
    _check_points(raw, what, first, 4)
    try:
        return backend.g2_vector_from_montgomery(raw, check_subgroup=True)
    except MalformedArtifact as exc:
        bad = re.search(r"point (\d+)", str(exc))  # both backends name the first failing point
        index = first + int(bad.group(1)) if bad else first
        raise MalformedArtifact(f"ptau {what}: point {index} is not in the order-R subgroup") from None


def _infinity_at(raw: bytes, per_point: int) -> int | None:
    """Index of the first all-zero point (infinity) of a LEM vector, or None."""
    words = np.frombuffer(raw, dtype="<u8").reshape(-1, 4 * per_point)
    zero = np.flatnonzero(~words.any(axis=1))
    return int(zero[0]) if zero.size else None


# --- reading the file's structure ---------------------------------------------------


def _expected_points(section: int, power: int) -> int:
    n = 1 << power
    return {
        TAU_G1: 2 * n - 1, TAU_G2: n, ALPHA_TAU_G1: n, BETA_TAU_G1: n, BETA_G2: 1,
        LAGRANGE_TAU_G1: 4 * n - 1, LAGRANGE_TAU_G2: 2 * n - 1, LAGRANGE_ALPHA_TAU_G1: 2 * n - 1,
        LAGRANGE_BETA_TAU_G1: 2 * n - 1,
    }[section]


def _section_table(fh, file_size: int, what: str) -> dict[int, tuple[int, int]]:
    """Section type -> (offset, length), with the checks of binfile.decode_binfile."""
    head = fh.read(12)
    if len(head) < 12:
        raise MalformedArtifact(f"{what}: file is truncated ({len(head)} bytes, the header alone needs 12)")
    if head[:4] != b"ptau":
        raise MalformedArtifact(f"{what}: wrong magic {head[:4]!r}, expected b'ptau'")
    version, n_sections = struct.unpack_from("<II", head, 4)
    if version != 1:
        raise MalformedArtifact(f"{what}: unsupported version {version} (supported: 1)")
    sections: dict[int, tuple[int, int]] = {}
    pos = 12
    for index in range(n_sections):
        fh.seek(pos)
        entry = fh.read(12)
        if len(entry) < 12:
            raise MalformedArtifact(f"{what}: truncated in the header of section {index + 1} of {n_sections}")
        section_type, size = struct.unpack("<IQ", entry)
        pos += 12
        if pos + size > file_size:
            raise MalformedArtifact(
                f"{what}: section {section_type} claims {size} bytes but only {file_size - pos} remain (truncated file)"
            )
        if section_type in sections:
            raise MalformedArtifact(f"{what}: section {section_type} appears twice")
        sections[section_type] = (pos, size)
        pos += size
    if pos != file_size:
        raise MalformedArtifact(f"{what}: {file_size - pos} trailing bytes after the last section")
    return sections


def _read_header(data: bytes, what: str) -> tuple[int, int]:
    head = Reader(data, f"{what} header")
    n8 = head.u32()
    if n8 != N8:
        raise MalformedArtifact(f"{what}: field element size {n8}, expected {N8} (BN254)")
    q = head.int_le(n8)
    if q != Q:
        raise MalformedArtifact(f"{what}: header prime q = {q} is not the BN254 base field (not a bn128 ceremony)")
    power, ceremony_power = head.u32(), head.u32()
    if not head.at_end():
        raise MalformedArtifact(f"{what}: header has {len(data) - head.pos} extra bytes")
    if not 1 <= power <= R_TWO_ADICITY - 1:
        raise MalformedArtifact(f"{what}: power {power} outside 1..{R_TWO_ADICITY - 1}")
    if ceremony_power < power:
        raise MalformedArtifact(f"{what}: ceremony power {ceremony_power} is below the file's power {power}")
    return power, ceremony_power


def _read_contributions(data: bytes, what: str) -> tuple[PtauContribution, ...]:
    body = Reader(data, f"{what} contributions")
    count = body.u32()
    out = []
    for index in range(1, count + 1):
        where = f"contribution {index}"
        tau_g1 = decode_g1_points(body.take(G1_SIZE), where)[0]
        tau_g2 = decode_g2_points(body.take(G2_SIZE), where)[0]
        alpha_g1, beta_g1 = decode_g1_points(body.take(2 * G1_SIZE), where)
        beta_g2 = decode_g2_points(body.take(G2_SIZE), where)[0]
        body.take(6 * G1_SIZE + 3 * G2_SIZE + 216)  # public key and partial hash (not checked, see verify_ptau)
        next_challenge = body.take(64)
        kind = body.u32()
        params = Reader(body.take(body.u32()), f"{what} {where} parameters")
        name, last = "", 0
        while not params.at_end():
            tag = params.take(1)[0]
            if tag <= last or tag > 3:
                raise MalformedArtifact(f"{what}: {where} has unknown or unsorted parameter {tag}")
            last = tag
            if tag == 1:
                name = params.take(params.take(1)[0]).decode("utf-8", errors="replace")
            elif tag == 2:
                params.take(1)
            else:
                params.take(params.take(1)[0])
        out.append(PtauContribution(index, name, kind == 1, tau_g1, tau_g2, alpha_g1, beta_g1, beta_g2, next_challenge))
    if not body.at_end():
        raise MalformedArtifact(f"{what}: contributions section has {len(data) - body.pos} bytes beyond {count} contributions")
    return tuple(out)


def read_ptau(path: str | Path) -> Ptau:
    """Header, section table and contributions of a .ptau; checks every section's size."""
    path = Path(path)
    what = f"ptau {path}"
    if not path.is_file():
        raise MalformedArtifact(f"{what} does not exist or is not a file")
    with path.open("rb") as fh:
        sections = _section_table(fh, os.fstat(fh.fileno()).st_size, what)
        for required in range(SECTION_HEADER, CONTRIBUTIONS + 1):
            if required not in sections:
                raise MalformedArtifact(f"{what}: section {required} ({SECTION_NAMES.get(required, 'header')}) is missing")
        fh.seek(sections[SECTION_HEADER][0])
        power, ceremony_power = _read_header(fh.read(sections[SECTION_HEADER][1]), what)
        fh.seek(sections[CONTRIBUTIONS][0])
        contributions = _read_contributions(fh.read(sections[CONTRIBUTIONS][1]), what)
    present = [s for s in LAGRANGE_SECTIONS if s in sections]
    if present and len(present) != len(LAGRANGE_SECTIONS):
        raise MalformedArtifact(f"{what}: has Lagrange sections {present} but not all of 12-15 (incompletely prepared)")
    for section in (TAU_G1, TAU_G2, ALPHA_TAU_G1, BETA_TAU_G1, BETA_G2, *present):
        expected = _expected_points(section, power) * (G2_SIZE if section in G2_SECTIONS else G1_SIZE)
        if sections[section][1] != expected:
            raise MalformedArtifact(
                f"{what}: section {section} ({SECTION_NAMES[section]}) has {sections[section][1]} bytes, "
                f"expected {expected} for power {power}"
            )
    return Ptau(path, power, ceremony_power, sections, contributions)


# --- verification --------------------------------------------------------------------


def _neg_g1(p: G1Affine) -> G1Affine:
    return None if p is None else (p[0], (Q - p[1]) % Q)


def _random_scalars(count: int) -> list[int]:
    width = _CHALLENGE_BITS // 8
    raw = memoryview(os.urandom(width * count))
    return [int.from_bytes(raw[i:i + width], "little") for i in range(0, width * count, width)]


def _no_infinity(raw: bytes, per_point: int, name: str) -> None:
    at = _infinity_at(raw, per_point)
    if at is not None:
        raise MalformedArtifact(f"ptau {name}: point {at} is the point at infinity (a secret is 0)")


def _consecutive_g1(backend: CurveBackend, vector, count: int, tau_g2: G2Affine, name: str) -> None:
    """P_{i+1} = tau P_i for all i: e(sum r_i P_i, [tau]_2) = e(sum r_i P_{i+1}, [1]_2) (snarkjs sameRatio)."""
    r = _random_scalars(count - 1)
    low = backend.g1_msm(vector, backend.scalar_vector(r))
    high = backend.g1_msm(vector, backend.scalar_vector([0] + r))
    if low is None or high is None or not backend.pairing_product_is_one(
        [(low, tau_g2), (_neg_g1(high), backend.g2_generator())]
    ):
        raise MalformedArtifact(f"ptau {name}: the points are not consecutive powers of tau")


def _consecutive_g2(backend: CurveBackend, vector, count: int, tau_g1: G1Affine, name: str) -> None:
    r = _random_scalars(count - 1)
    low = backend.g2_msm(vector, backend.scalar_vector(r))
    high = backend.g2_msm(vector, backend.scalar_vector([0] + r))
    if low is None or high is None or not backend.pairing_product_is_one(
        [(tau_g1, low), (_neg_g1(backend.g1_generator()), high)]
    ):
        raise MalformedArtifact(f"ptau {name}: the points are not consecutive powers of tau")


def _random_point_outside(n: int) -> int:
    while True:
        z = secrets.randbelow(R)
        if pow(z, n, R) != 1:
            return z


def _interpolation_weights(z: int, m: int) -> list[int]:
    """f(omega^j) = (z^m - 1) / (z omega^j - 1) for f(X) = sum_{i<m} z^i X^i, j < m."""
    omega = root_of_unity(m)
    points = [z] * m
    for j in range(1, m):
        points[j] = points[j - 1] * omega % R
    numerator = (pow(z, m, R) - 1) % R
    return [numerator * d % R for d in batch_inverse([(x - 1) % R for x in points])]


def _check_lagrange_section(
    ptau: Ptau, backend: CurveBackend, section: int, tau_vector, tau_count: int, powers: list[int], say: Progress
) -> None:
    """Section `section` at each power p is the inverse FFT of the first 2^p tau points.

    For a random z, f(X) = sum_{i<m} z^i X^i has degree < m, so
    f(tau) = sum_j f(omega^j) L_j(tau): with T_i = [tau^i] and Lag_j =
    [L_j(tau)], sum_i z^i T_i = sum_j s_j Lag_j where s_j = f(omega^j) =
    (z^m - 1) / (z omega^j - 1). For any other Lag the difference is
    sum_i z^i d_i with (d_i) the FFT of the error, a non-zero polynomial of
    degree < m in z, which a random z is a root of with probability
    < 2^-220. One z per power, all powers summed into one comparison; on
    failure each power is compared alone to name it.
    """
    is_g2 = section == LAGRANGE_TAU_G2
    msm = backend.g2_msm if is_g2 else backend.g1_msm
    add = backend.g2_add if is_g2 else backend.g1_add
    name = SECTION_NAMES[section]
    tau_scalars = [0] * tau_count
    per_power: list[tuple[int, list[int], object]] = []
    total = None
    say(f"ptau: {name}, powers {', '.join(map(str, powers))}")
    for p in powers:
        m = 1 << p
        first = m - 1
        vector = (ptau.g2_vector if is_g2 else ptau.g1_vector)(backend, section, first, m)
        z = _random_point_outside(m)
        rhs = msm(vector, backend.scalar_vector(_interpolation_weights(z, m)))
        z_powers = [1] * min(m, tau_count)  # beyond tau_count the tau point is taken as infinity
        for i in range(1, len(z_powers)):
            z_powers[i] = z_powers[i - 1] * z % R
        for i, zi in enumerate(z_powers):
            tau_scalars[i] += zi
        per_power.append((p, z_powers, rhs))
        total = add(total, rhs)
    if msm(tau_vector, backend.scalar_vector(tau_scalars)) == total:
        return
    for p, z_powers, rhs in per_power:
        if msm(tau_vector, backend.scalar_vector(z_powers)) != rhs:
            raise MalformedArtifact(
                f"ptau {name}: power {p} is not the Lagrange basis of {SECTION_NAMES[LAGRANGE_OF[section]]} "
                f"(not its inverse FFT)"
            )
    raise MalformedArtifact(f"ptau {name}: the Lagrange points do not match {SECTION_NAMES[LAGRANGE_OF[section]]}")


def verify_ptau(
    ptau: Ptau | str | Path,
    backend: CurveBackend,
    progress: Progress | None = None,
    lagrange_powers: Iterable[int] | None = None,
) -> Ptau:
    """The point checks of `snarkjs powersoftau verify`; raises MalformedArtifact naming the first failure.

    Checked (every point read is checked reduced mod q and on its curve; every
    G2 point read, in the order-R subgroup, which snarkjs never checks and which
    is most of the time at large powers; sections 2-6 contain no infinity):
    - tauG1[0] and tauG2[0] are the generators;
    - sections 2-5 are each consecutive powers of the one tau of tauG2[1]
      (random linear combinations and one pairing check per section, as
      snarkjs's sameRatio, with 128-bit instead of 32-bit scalars); tauG2's
      tau is the one of tauG1[1];
    - alphaTauG1[0], betaTauG1[0] are non-zero and e(betaTauG1[0], [1]_2) =
      e([1]_1, betaG2);
    - the last contribution in section 7 records exactly tauG1[1], tauG2[1],
      alphaTauG1[0], betaTauG1[0] and betaG2, and there is at least one
      contribution (a fresh file's tau, alpha and beta are 1);
    - if the file is prepared for phase 2: sections 12-15 at every power in
      `lagrange_powers` (default: all, 0..power, and power+1 for section 12)
      are the inverse FFT of sections 2-5, checked at a random point
      (`lagrange_powers` is ignored for an unprepared file).
    Not checked: the contribution chain (each contribution's public key,
    proof of knowledge and hash-to-G2 points against the previous one, and the
    beacon), and the challenge and response hashes; so this says the file is
    a well-formed phase 1 for some tau, alpha, beta, not that a given
    participant's randomness went into it; for that, run `snarkjs powersoftau
    verify` too and compare its hashes with the ceremony's published ones.
    """
    ptau = ptau if isinstance(ptau, Ptau) else read_ptau(ptau)
    say = progress or (lambda _msg: None)
    if not ptau.contributions:
        raise MalformedArtifact(f"ptau {ptau.path}: has no contributions; its tau, alpha and beta are public (1)")
    n = 1 << ptau.power
    g1, g2 = backend.g1_generator(), backend.g2_generator()

    say(f"ptau: reading tauG1 ({2 * n - 1} points), tauG2, alphaTauG1, betaTauG1 ({n} each)")
    counts = {TAU_G1: 2 * n - 1, TAU_G2: n, ALPHA_TAU_G1: n, BETA_TAU_G1: n, BETA_G2: 1}
    for section, count in counts.items():
        _no_infinity(ptau.raw_points(section, 0, count), 4 if section in G2_SECTIONS else 2, SECTION_NAMES[section])
    tau_g1 = ptau.g1_points(TAU_G1, 0, 2)
    tau_g2 = ptau.g2_points(TAU_G2, 0, 2)
    alpha_0 = ptau.g1_points(ALPHA_TAU_G1, 0, 1)[0]
    beta_0 = ptau.g1_points(BETA_TAU_G1, 0, 1)[0]
    if tau_g1[0] != g1:
        raise MalformedArtifact("ptau tauG1: the first point is not the G1 generator")
    if tau_g2[0] != g2:
        raise MalformedArtifact("ptau tauG2: the first point is not the G2 generator")
    last = ptau.contributions[-1]
    say("ptau: tauG2 subgroup checks")
    tau_g2_vector = ptau.g2_vector(backend, TAU_G2, 0, n)
    beta_g2 = backend.g2_vector_to_canonical(ptau.g2_vector(backend, BETA_G2, 0, 1))[0]
    recorded = ((last.tau_g1, tau_g1[1], "tauG1[1]"), (last.tau_g2, tau_g2[1], "tauG2[1]"),
                (last.alpha_g1, alpha_0, "alphaTauG1[0]"), (last.beta_g1, beta_0, "betaTauG1[0]"),
                (last.beta_g2, beta_g2, "betaG2"))
    for in_record, in_section, label in recorded:
        if in_record != in_section:
            raise MalformedArtifact(f"ptau contributions: the last contribution's {label} differs from the section's")

    say("ptau: same-ratio checks of tauG1, tauG2, alphaTauG1, betaTauG1")
    tau_g1_vector = ptau.g1_vector(backend, TAU_G1, 0, 2 * n - 1)
    _consecutive_g1(backend, tau_g1_vector, 2 * n - 1, tau_g2[1], "tauG1")
    _consecutive_g2(backend, tau_g2_vector, n, tau_g1[1], "tauG2")
    alpha_vector = ptau.g1_vector(backend, ALPHA_TAU_G1, 0, n)
    beta_vector = ptau.g1_vector(backend, BETA_TAU_G1, 0, n)
    _consecutive_g1(backend, alpha_vector, n, tau_g2[1], "alphaTauG1")
    _consecutive_g1(backend, beta_vector, n, tau_g2[1], "betaTauG1")
    if not backend.pairing_product_is_one([(beta_0, g2), (_neg_g1(g1), beta_g2)]):
        raise MalformedArtifact("ptau betaG2: is not beta of betaTauG1[0] (e(beta_1, g2) != e(g1, beta_2))")

    if ptau.prepared:
        powers = sorted(set(range(ptau.power + 2) if lagrange_powers is None else lagrange_powers))
        if any(not 0 <= p <= ptau.power + 1 for p in powers):
            raise MalformedArtifact(f"ptau {ptau.path}: has powers 0..{ptau.power}; cannot check power(s) {powers}")
        below = [p for p in powers if p <= ptau.power]
        checks = ((LAGRANGE_TAU_G1, tau_g1_vector, 2 * n - 1, powers),
                  (LAGRANGE_TAU_G2, tau_g2_vector, n, below),
                  (LAGRANGE_ALPHA_TAU_G1, alpha_vector, n, below),
                  (LAGRANGE_BETA_TAU_G1, beta_vector, n, below))
        for section, vector, count, section_powers in checks:
            if section_powers:
                _check_lagrange_section(ptau, backend, section, vector, count, section_powers, say)
    say("ptau: OK")
    return ptau


# --- phase-1 points for one domain ------------------------------------------------------


def domain_power(n: int) -> int:
    if n < 1 or n & (n - 1):
        raise CircuitError(f"domain size {n} is not a power of two")
    return n.bit_length() - 1


def phase1_points(ptau: Ptau | str | Path, n: int, backend: CurveBackend) -> Phase1Points:
    """`Phase1Points` for the domain of size n from a prepared ptau (n <= 2^power).

    Only decodes (coordinates reduced, points on their curves, G2 points in
    the subgroup), into backend vectors; run `verify_ptau` with
    lagrange_powers including log2(n) to know the points are consistent.
    """
    ptau = ptau if isinstance(ptau, Ptau) else read_ptau(ptau)
    p = domain_power(n)
    if not ptau.prepared:
        raise MalformedArtifact(f"ptau {ptau.path}: not prepared for phase 2 (run `snarkjs powersoftau prepare phase2`)")
    if p > ptau.power:
        raise MalformedArtifact(f"ptau {ptau.path}: power {ptau.power} is too small for a domain of 2^{p}")
    first = n - 1  # power p's points start at 2^p - 1
    lagrange_g1 = b"".join(ptau.raw_points(s, first, n)
                           for s in (LAGRANGE_TAU_G1, LAGRANGE_ALPHA_TAU_G1, LAGRANGE_BETA_TAU_G1))
    for s, offset in ((LAGRANGE_TAU_G1, 0), (LAGRANGE_ALPHA_TAU_G1, n), (LAGRANGE_BETA_TAU_G1, 2 * n)):
        _check_points(lagrange_g1[offset * G1_SIZE:(offset + n) * G1_SIZE], SECTION_NAMES[s], first, 2)
    return Phase1Points(
        domain_size=n,
        lagrange_g1=backend.g1_vector_from_montgomery(lagrange_g1),
        lagrange_g2=ptau.g2_vector(backend, LAGRANGE_TAU_G2, first, n),
        tau_g1=ptau.g1_vector(backend, TAU_G1, 0, 2 * n - 1),
        alpha_g1=ptau.g1_points(ALPHA_TAU_G1, 0, 1)[0],
        beta_g1=ptau.g1_points(BETA_TAU_G1, 0, 1)[0],
        beta_g2=backend.g2_vector_to_canonical(ptau.g2_vector(backend, BETA_G2, 0, 1))[0],
    )
