"""A development phase 1: a prepared .ptau made by ONE party from secrets it draws and forgets.

Whoever runs `write_dev_ptau` could keep tau, alpha and beta and forge proofs
for every key derived from the file; nothing in the file can show they were
forgotten. It exists so that demos and CI can derive keys where public
ceremony files cannot be downloaded. Production keys come from the public
Perpetual Powers of Tau files (checked with `fairproof groth16 import-ptau`).

The file is what `snarkjs powersoftau new`, one `powersoftau contribute` and
`powersoftau prepare phase2` write (layout in ptau.py), so `snarkjs
powersoftau verify` accepts it:
- sections 2-6: [tau^i]_1 (i < 2N - 1), [tau^i]_2, [alpha tau^i]_1,
  [beta tau^i]_1 (i < N), [beta]_2, with N = 2^power;
- section 7: one contribution record as powersoftau_contribute.js writes it:
  the points above it, its public key (per secret x of tau, alpha, beta:
  g1_s = [s]_1 for a random s, g1_sx = x g1_s, and g2_spx = x g2_sp with
  g2_sp = hashToG2(blake2b(personalization || challenge || g1_s || g1_sx)),
  the challenge being calculateFirstChallengeHash of a fresh file), the
  216-byte partial hash (the state of @noble/hashes' blake2b after the
  challenge and the compressed points of sections 2-6), the next challenge
  blake2b(response hash || the uncompressed points of sections 2-6), where
  the response hash finishes the partial hash with the uncompressed public key;
- sections 12-15: for every p = 0..power (and power + 1 for section 12) the
  Lagrange basis of the 2^p domain at tau: [L_j(tau)]_1, [L_j(tau)]_2,
  [alpha L_j(tau)]_1, [beta L_j(tau)]_1. preparePhase2 takes the missing
  tau^(2N - 1) as infinity at p = power + 1, so those scalars are
  L_j(tau) - tau^(M-1) omega^j / M (M = 2N): its inverse FFT of
  (1, tau, ..., tau^(M-2), 0).
Every point is k * generator for a scalar k computed from the secrets (no FFT
in the exponent), by `_FixedBase` (windowed tables in zk_dtypes' numpy loops:
fewer additions than one scalar multiplication per point through the
backend); a few points per section are recomputed through the backend as a
cross-check. The partial hash needs blake2b's internal state, which hashlib
does not expose, so it runs in Python (`NobleBlake2b`, circuits/snarkjs/ptau_hash.py),
from power 11 on in a child process while the Lagrange points are computed.
"""
from __future__ import annotations

import hashlib
import os
import secrets
import struct
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Sequence

import numpy as np
import zk_dtypes

from ..backends.base import CurveBackend
from ..errors import CircuitError
from ..field import Q, R, R_TWO_ADICITY
from ..groth16.encoding import encode_g1_uncompressed, encode_g2_uncompressed
from ..groth16.qap import lagrange_at, root_of_unity
from ..groth16.types import G1Affine, G2Affine
from .ptau import (
    ALPHA_TAU_G1, BETA_G2, BETA_TAU_G1, CONTRIBUTIONS, LAGRANGE_ALPHA_TAU_G1, LAGRANGE_BETA_TAU_G1, LAGRANGE_TAU_G1,
    LAGRANGE_TAU_G2, N8, SECTION_HEADER, SECTION_NAMES, TAU_G1, TAU_G2, decode_g1_points, decode_g2_points,
)
from .ptau_hash import (HASH_SIZE, PARTIAL_HASH_SIZE, NobleBlake2b, _finish_partial_hash, _start_partial_hash,
                        contribute_partial_hash)
from .zkey_mpc import hash_to_g2, same_ratio

__all__ = [
    "DEFAULT_NAME", "HASH_SIZE", "MAX_NAME_BYTES", "MAX_POWER", "PARTIAL_HASH_SIZE", "NobleBlake2b", "Progress",
    "PtauSummary", "check_arguments", "contribute_partial_hash", "first_challenge_hash", "hash_encodings_g1",
    "hash_encodings_g2", "write_dev_ptau",
    # module-private helpers that tests reach through this module
    "_finish_partial_hash", "_start_partial_hash",
]

Progress = Callable[[str], None]

DEFAULT_NAME = "development phase 1"
MAX_POWER = R_TWO_ADICITY - 1  # section 12 needs a 2^(power+1) domain
MAX_NAME_BYTES = 64  # snarkjs keeps the first 64 characters; one length byte in the file
# From this power on the hash (about a second at 12) costs more than starting a child process for it.
_HASH_PROCESS_MIN_POWER = 11

_MONT = (1 << 256) % Q
_MONT_INV = pow(1 << 256, -1, Q)
_HALF_Q = (Q - 1) // 2
_SCALAR_BITS = R.bit_length()


@dataclass(frozen=True)
class PtauSummary:
    """What `write_dev_ptau` wrote: public data only."""

    path: Path
    power: int
    name: str
    response_hash: bytes  # the contribution's "Response Hash", as snarkjs prints it
    next_challenge: bytes  # "Next Challenge Hash" (section 7), checked by `snarkjs powersoftau verify`
    size: int  # bytes
    seconds: float

# --- encodings -----------------------------------------------------------------------------


def _standard(raw: bytes) -> list[int]:
    """Standard-form ints of the 32-byte little-endian Montgomery coordinates in raw."""
    view = memoryview(raw)
    return [int.from_bytes(view[i:i + N8], "little") * _MONT_INV % Q for i in range(0, len(raw), N8)]


def hash_encodings_g1(raw: bytes) -> tuple[bytes, bytes]:
    """(compressed, uncompressed) forms of affine Montgomery G1 points, as wasmcurves'
    g1m_batchLEMtoC / batchLEMtoU: x big-endian with 0x80 set when y > (q-1)/2
    (0x40 alone for infinity); x || y big-endian (infinity all zeros)."""
    c = _standard(raw)
    compressed, uncompressed = [], []
    for x, y in zip(c[0::2], c[1::2]):
        if x == 0 and y == 0:
            compressed.append((1 << 254).to_bytes(32, "big"))
            uncompressed.append(bytes(64))
            continue
        compressed.append((x | (1 << 255 if y > _HALF_Q else 0)).to_bytes(32, "big"))
        uncompressed.append(x.to_bytes(32, "big") + y.to_bytes(32, "big"))
    return b"".join(compressed), b"".join(uncompressed)


def hash_encodings_g2(raw: bytes) -> tuple[bytes, bytes]:
    """As hash_encodings_g1 for G2: Fq2 elements as c1 || c0, the sign that of y.c1 (of y.c0 if y.c1 = 0)."""
    c = _standard(raw)
    compressed, uncompressed = [], []
    for k in range(0, len(c), 4):
        x0, x1, y0, y1 = c[k:k + 4]
        if x0 == x1 == y0 == y1 == 0:
            compressed.append((1 << 510).to_bytes(64, "big"))
            uncompressed.append(bytes(128))
            continue
        negative = y1 > _HALF_Q if y1 else y0 > _HALF_Q
        compressed.append(((x1 << 256) | x0 | (1 << 511 if negative else 0)).to_bytes(64, "big"))
        uncompressed.append(b"".join(v.to_bytes(32, "big") for v in (x1, x0, y1, y0)))
    return b"".join(compressed), b"".join(uncompressed)


def _lem_g1(p: G1Affine) -> bytes:
    if p is None:
        return bytes(2 * N8)
    return b"".join((v * _MONT % Q).to_bytes(N8, "little") for v in p)


def _lem_g2(p: G2Affine) -> bytes:
    if p is None:
        return bytes(4 * N8)
    (x0, x1), (y0, y1) = p
    return b"".join((v * _MONT % Q).to_bytes(N8, "little") for v in (x0, x1, y0, y1))


def first_challenge_hash(power: int) -> bytes:
    """powersoftau_utils.calculateFirstChallengeHash: the hash of a fresh file's points
    (every point a generator), after the hash of nothing."""
    g1 = encode_g1_uncompressed((1, 2))
    g2 = encode_g2_uncompressed(_G2_GENERATOR)
    hasher = hashlib.blake2b(hashlib.blake2b(digest_size=HASH_SIZE).digest(), digest_size=HASH_SIZE)
    n = 1 << power
    for point, count in ((g1, 2 * n - 1), (g2, n), (g1, n), (g1, n), (g2, 1)):
        block = 4096
        for done in range(0, count, block):
            hasher.update(point * min(block, count - done))
    return hasher.digest()


_G2_GENERATOR: G2Affine = (
    (10857046999023057135944570762232829481370756359578518086990519993285655852781,
     11559732032986387107991004021392285783925812861821192530917403151452391805634),
    (8495653923123431417604973247489272438418190587263600148770280649306958101930,
     4082367875863433681332203403145435568316851327593401208105741076214120093531),
)


# --- fixed-base multiplication ---------------------------------------------------------------


@dataclass(frozen=True)
class _Group:
    name: str
    jacobian: np.dtype
    affine: np.dtype  # affine, Montgomery form: the .ptau's point layout, (0, 0) for infinity
    point_size: int


_G1 = _Group("G1", np.dtype(zk_dtypes.bn254_g1_jacobian_mont), np.dtype(zk_dtypes.bn254_g1_affine_mont), 2 * N8)
_G2 = _Group("G2", np.dtype(zk_dtypes.bn254_g2_jacobian_mont), np.dtype(zk_dtypes.bn254_g2_affine_mont), 4 * N8)


def _window_bits(count: int) -> int:
    """The window width w that minimises additions for `count` points: count * (windows - 1)
    for the points, about 2^w per window for the tables."""
    def additions(w: int) -> int:
        windows = -(-_SCALAR_BITS // w)
        return count * (windows - 1) + windows * (1 << w)

    return min(range(4, 17), key=additions)


class _FixedBase:
    """[k]G for many scalars k and the group's generator G, in zk_dtypes' numpy loops.

    With w-bit windows, table[j][d] = d * 2^(w j) * G for every digit d, and
    [k]G = sum over j of table[j][digit j of k]: one mixed addition per window
    after the first, vectorised over the points. zk_dtypes' additions handle
    the point at infinity (digit 0) and equal points. Converting to affine
    inverts in batches.
    """

    CHUNK = 1 << 14

    def __init__(self, group: _Group, count: int):
        self.group = group
        self.w = _window_bits(count)
        self.mask = np.uint64((1 << self.w) - 1)
        windows = -(-_SCALAR_BITS // self.w)
        self.tables: list[np.ndarray] = []
        base = np.ones(1, dtype=group.jacobian)  # zk_dtypes' one is the generator
        for j in range(windows):
            size = 1 << min(self.w, _SCALAR_BITS - self.w * j)  # the top window's digits are shorter
            table = np.zeros(size, dtype=group.jacobian)  # zeros: the point at infinity
            step, filled = base, 1
            while filled < size:  # table[filled + i] = table[i] + filled * base
                table[filled:2 * filled] = table[:filled] + step
                step = step + step
                filled *= 2
            self.tables.append(table.astype(group.affine))
            base = step  # 2^w * base

    def _digits(self, limbs: np.ndarray, j: int) -> np.ndarray:
        """Digit j (bits w j .. w j + w - 1) of scalars given as 4 little-endian u64 limbs."""
        limb, shift = divmod(self.w * j, 64)
        digits = limbs[:, limb] >> np.uint64(shift)
        if shift + self.w > 64 and limb + 1 < 4:
            digits |= limbs[:, limb + 1] << np.uint64(64 - shift)
        return (digits & self.mask).astype(np.intp)

    def multiply(self, scalars: Sequence[int]) -> bytes:
        """The points [k]G in the .ptau layout (affine, little-endian Montgomery coordinates)."""
        out: list[bytes] = []
        for start in range(0, len(scalars), self.CHUNK):
            chunk = scalars[start:start + self.CHUNK]
            limbs = np.frombuffer(b"".join((k % R).to_bytes(32, "little") for k in chunk), dtype="<u8").reshape(-1, 4)
            acc = self.tables[0][self._digits(limbs, 0)].astype(self.group.jacobian)
            for j in range(1, len(self.tables)):
                acc = acc + self.tables[j][self._digits(limbs, j)]
            out.append(acc.astype(self.group.affine).tobytes())
        return b"".join(out)


def _spot_check(backend: CurveBackend, group: _Group, data: bytes, scalars: Sequence[int], what: str) -> None:
    """Recompute the first, the last and one random point through the backend."""
    size = group.point_size
    for i in sorted({0, len(scalars) - 1, secrets.randbelow(len(scalars))}):
        raw = data[i * size:(i + 1) * size]
        if group is _G1:
            ok = decode_g1_points(raw, what, i)[0] == backend.g1_mul(backend.g1_generator(), scalars[i] % R)
        else:
            ok = decode_g2_points(raw, what, i)[0] == backend.g2_mul(backend.g2_generator(), scalars[i] % R)
        if not ok:
            raise CircuitError(f"dev ptau: {what} point {i} differs from the backend's (arithmetic fault)")


# --- secrets and the contribution's public key ------------------------------------------------


def _draw_secrets(entropy: bytes) -> tuple[int, int, int]:
    """tau, alpha, beta from 64 bytes of `secrets` and the caller's entropy, none 0 and tau
    outside every domain up to 2^MAX_POWER+1 (where L_j(tau) would divide by 0)."""
    while True:
        seed = hashlib.blake2b(secrets.token_bytes(64) + entropy, digest_size=64).digest()
        drawn = [int.from_bytes(hashlib.blake2b(seed, digest_size=64, person=label).digest(), "little") % R
                 for label in (b"tau", b"alpha", b"beta")]
        del seed
        if all(drawn) and pow(drawn[0], 1 << R_TWO_ADICITY, R) != 1:
            return drawn[0], drawn[1], drawn[2]


@dataclass(frozen=True)
class _KeyPart:
    g1_s: G1Affine
    g1_sx: G1Affine
    g2_sp: G2Affine
    g2_spx: G2Affine


def _key_part(backend: CurveBackend, secret: int, personalization: int, challenge: bytes) -> _KeyPart:
    """keypair.js calculatePubKey: a proof of knowledge of `secret` bound to the challenge."""
    g1_s = backend.g1_mul(backend.g1_generator(), 1 + secrets.randbelow(R - 1))
    g1_sx = backend.g1_mul(g1_s, secret)
    digest = hashlib.blake2b(bytes([personalization]) + challenge + encode_g1_uncompressed(g1_s)
                             + encode_g1_uncompressed(g1_sx), digest_size=HASH_SIZE).digest()
    g2_sp = hash_to_g2(digest)
    return _KeyPart(g1_s, g1_sx, g2_sp, backend.g2_mul(g2_sp, secret))


def _public_key(parts: Sequence[_KeyPart], montgomery: bool) -> bytes:
    """powersoftau_utils.toPtauPubKeyRpr: the six G1 points, then the three g2_spx."""
    g1 = _lem_g1 if montgomery else encode_g1_uncompressed
    g2 = _lem_g2 if montgomery else encode_g2_uncompressed
    return (b"".join(g1(p.g1_s) + g1(p.g1_sx) for p in parts) + b"".join(g2(p.g2_spx) for p in parts))


def _contribution_section(points_after: bytes, parts: Sequence[_KeyPart], partial_hash: bytes,
                          next_challenge: bytes, name: str) -> bytes:
    """Section 7 with one contribution (powersoftau_utils.writeContribution), type 0."""
    name_bytes = name.encode("utf-8")
    params = bytes([1, len(name_bytes)]) + name_bytes if name_bytes else b""
    record = (points_after + _public_key(parts, montgomery=True) + partial_hash + next_challenge
              + struct.pack("<II", 0, len(params)) + params)
    return struct.pack("<I", 1) + record


# --- scalars ----------------------------------------------------------------------------------


def _powers(x: int, count: int, first: int = 1) -> list[int]:
    out = [first % R] * count
    for i in range(1, count):
        out[i] = out[i - 1] * x % R
    return out


def _lagrange_scalars(tau: int, power: int) -> list[list[int]]:
    """L_j(tau) of the 2^p domain for p = 0..power+1; the last truncated as preparePhase2 does."""
    out = [lagrange_at(tau, 1 << p) for p in range(power + 1)]
    m = 1 << (power + 1)
    full = lagrange_at(tau, m)
    # the inverse FFT of the tau powers without tau^(m-1): subtract tau^(m-1) omega^j / m
    missing = _powers(root_of_unity(m), m, pow(tau, m - 1, R) * pow(m, -1, R))
    out.append([(a - b) % R for a, b in zip(full, missing)])
    return out


# --- the writer ---------------------------------------------------------------------------------


def _section(section_type: int, payload: bytes) -> bytes:
    return struct.pack("<IQ", section_type, len(payload)) + payload


def _header(power: int) -> bytes:
    return struct.pack("<I", N8) + Q.to_bytes(N8, "little") + struct.pack("<II", power, power)


def check_arguments(power: int, name: str) -> None:
    """Raises ValueError, with a one-line reason, for a power or name snarkjs could not use."""
    if isinstance(power, bool) or not isinstance(power, int) or not 1 <= power <= MAX_POWER:
        raise ValueError(f"power must be an integer 1..{MAX_POWER}, got {power!r}")
    if len(name.encode("utf-8")) > MAX_NAME_BYTES:
        raise ValueError(f"name is {len(name.encode('utf-8'))} bytes in UTF-8; snarkjs keeps at most {MAX_NAME_BYTES}")


def write_dev_ptau(
    path: str | Path,
    power: int,
    backend: CurveBackend,
    *,
    name: str = DEFAULT_NAME,
    entropy: bytes = b"",
    progress: Progress | None = None,
) -> PtauSummary:
    """Write a prepared development .ptau of `power` (see the module docstring) to `path`.

    The secrets are drawn here, used, and deleted; neither they nor anything
    that reveals them (the scalars) is written or returned. The file appears
    at `path` only when complete (written beside it, then renamed).
    """
    check_arguments(power, name)
    path = Path(path)
    say = progress or (lambda _message: None)
    started = time.perf_counter()
    n = 1 << power
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")

    def done(label: str, what: str) -> None:
        say(f"dev-ptau: {label}: {what} ({time.perf_counter() - started:.1f} s)")

    tau, alpha, beta = _draw_secrets(entropy)
    challenge = first_challenge_hash(power)
    parts = [_key_part(backend, x, i, challenge) for i, x in enumerate((tau, alpha, beta))]
    for part in parts:
        if not same_ratio(backend, part.g1_s, part.g1_sx, part.g2_sp, part.g2_spx):
            raise CircuitError("dev ptau: a proof of knowledge does not verify (arithmetic fault)")

    g1 = _FixedBase(_G1, 12 * n)  # every G1 section together: (2n - 1) + 2n + (4n - 1) + 2 (2n - 1)
    g2 = _FixedBase(_G2, 3 * n)
    done(f"power {power}", f"window tables of {g1.w} bits in G1, {g2.w} in G2")

    tau_powers = _powers(tau, 2 * n - 1)
    phase1: list[tuple[int, _Group, list[int]]] = [
        (TAU_G1, _G1, tau_powers),
        (TAU_G2, _G2, tau_powers[:n]),
        (ALPHA_TAU_G1, _G1, [alpha * t % R for t in tau_powers[:n]]),
        (BETA_TAU_G1, _G1, [beta * t % R for t in tau_powers[:n]]),
        (BETA_G2, _G2, [beta]),
    ]
    child: subprocess.Popen | None = None
    try:
        with tmp.open("wb") as fh:
            fh.write(b"ptau" + struct.pack("<II", 1, 11))
            fh.write(_section(SECTION_HEADER, _header(power)))
            compressed: list[tuple[str, bytes]] = []  # for the partial hash
            uncompressed: list[bytes] = []  # for the next challenge
            first_points: dict[int, bytes] = {}
            while phase1:  # popped, so each list of scalars is dropped once used
                section_type, group, scalars = phase1.pop(0)
                data = (g1 if group is _G1 else g2).multiply(scalars)
                _spot_check(backend, group, data, scalars, SECTION_NAMES[section_type])
                fh.write(_section(section_type, data))
                small, large = (hash_encodings_g1 if group is _G1 else hash_encodings_g2)(data)
                compressed.append((group.name, small))
                uncompressed.append(large)
                first_points[section_type] = data[:2 * group.point_size]
                done(f"section {section_type} {SECTION_NAMES[section_type]}", f"{len(scalars)} points")
            del scalars

            # The partial hash runs in Python (noble's state is not in hashlib's API); from
            # power _HASH_PROCESS_MIN_POWER on, in a child process while the Lagrange points are computed.
            if power >= _HASH_PROCESS_MIN_POWER:
                child = _start_partial_hash(challenge, compressed)
            section7_offset = fh.tell()
            points_after = (first_points[TAU_G1][_G1.point_size:] + first_points[TAU_G2][_G2.point_size:]
                            + first_points[ALPHA_TAU_G1][:_G1.point_size] + first_points[BETA_TAU_G1][:_G1.point_size]
                            + first_points[BETA_G2][:_G2.point_size])
            placeholder = _contribution_section(points_after, parts, bytes(PARTIAL_HASH_SIZE), bytes(HASH_SIZE), name)
            fh.write(_section(CONTRIBUTIONS, placeholder))  # filled in below, once the hash is known

            lagrange = _lagrange_scalars(tau, power)
            del tau, tau_powers
            below = [k for p in range(power + 1) for k in lagrange[p]]
            prepared: list[tuple[int, _Group, list[int]]] = [
                (LAGRANGE_TAU_G1, _G1, below + lagrange[power + 1]),
                (LAGRANGE_TAU_G2, _G2, below),
                (LAGRANGE_ALPHA_TAU_G1, _G1, [alpha * k % R for k in below]),
                (LAGRANGE_BETA_TAU_G1, _G1, [beta * k % R for k in below]),
            ]
            del lagrange, below, alpha, beta
            while prepared:
                section_type, group, scalars = prepared.pop(0)
                data = (g1 if group is _G1 else g2).multiply(scalars)
                _spot_check(backend, group, data, scalars, SECTION_NAMES[section_type])
                fh.write(_section(section_type, data))
                done(f"section {section_type} {SECTION_NAMES[section_type]}", f"{len(scalars)} points")
            del scalars, data

            partial_hash = _finish_partial_hash(child, challenge, compressed)
            child = None
            del compressed
            # what `snarkjs powersoftau verify` computes from the stored partial hash
            response_hasher = NobleBlake2b.from_partial_state(partial_hash)
            response = response_hasher.update(_public_key(parts, montgomery=False)).digest()
            next_hasher = hashlib.blake2b(response, digest_size=HASH_SIZE)  # powersoftau_contribute.js hashSection
            for large in uncompressed:
                next_hasher.update(large)
            next_challenge = next_hasher.digest()
            fh.seek(section7_offset)
            record = _contribution_section(points_after, parts, partial_hash, next_challenge, name)
            fh.write(_section(CONTRIBUTIONS, record))
            done("section 7 contributions", f"1 contribution ({name or 'no name'})")
        os.replace(tmp, path)
    finally:
        if child is not None:  # failed before its result was read
            child.kill()
            child.wait()
        if tmp.exists():
            tmp.unlink()
    return PtauSummary(path, power, name, response, next_challenge, path.stat().st_size, time.perf_counter() - started)
