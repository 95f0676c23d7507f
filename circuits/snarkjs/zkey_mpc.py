"""Phase-2 contributions to a snarkjs Groth16 key, and their verification.

A contribution draws a secret d, multiplies delta by d (in G1 and G2),
divides every C ("L") and H point by d and appends a public record to the
key's section 10 (format in `zkey_file`). One honest contributor who forgets
d is enough to keep the final delta unknown. Everything here reproduces
snarkjs 0.7.6 bit for bit, so that either tool can continue or check a
ceremony run by the other:

- `contribute`: zkey_contribute.js (secret from misc.getRandomRng: ChaCha
  seeded with blake2b-512(64 random bytes || entropy));
- `beacon`: zkey_beacon.js (secret from misc.rngFromBeaconParams: ChaCha
  seeded with sha256 iterated 2^numIterationsExp times on the beacon hash);
- `verify_contributions`: zkey_verify_frominit.js, with the initial key in
  place of the one snarkjs regenerates from the r1cs and the ptau;
- `hash_to_g2`: keypair.js hashToG2 (ffjavascript's ChaCha and G2.fromRng).

Transcript. Each record holds deltaAfter (= the new delta in G1),
g1_s = [s]_1 for a random s, g1_sx = d * g1_s, g2_spx = d * g2_sp and
transcript = blake2b-512(csHash || pubkey(record 1) || ... ||
pubkey(record k-1) || g1_s || g1_sx), where pubkey(r) is deltaAfter ||
g1_s || g1_sx || g2_spx || transcript, points in snarkjs's uncompressed form
(big-endian x || y; in G2 the imaginary halves first, EIP-197).
g2_sp = hash_to_g2(transcript) is a G2 point nobody knows the logarithm of.
The contribution hash shown to the contributor is blake2b-512(pubkey(record)).

Verification checks, per record, that the transcript is the hash above (so
records cannot be dropped, reordered or replayed), that
e(g1_s, g2_spx) = e(g1_sx, g2_sp) (the contributor knew d) and
e(delta_prev, g2_spx) = e(deltaAfter, g2_sp) (delta moved by exactly d),
and for a beacon that g1_s and g1_sx are the ones its public seed derives.
Then that the final key's delta is the last deltaAfter, and that its C and H
sections are the initial ones times delta_initial / delta_final: with random
128-bit r_i, e(sum r_i C_i, delta2_initial) = e(sum r_i C'_i, delta2_final),
one multi-scalar multiplication per section and key, one pairing equation
per section; every other section must be byte-identical.

Curve arithmetic on subgroup points goes through the backend. The one
exception is hash_to_g2's cofactor multiplication: its input lies on the
twist but not in the order-R subgroup, which backends refuse, so it runs on
py_ecc's Jacobian arithmetic.
"""
from __future__ import annotations

import hashlib
import os
import re
import secrets
from dataclasses import dataclass, replace
from typing import NoReturn, Sequence

from py_ecc import optimized_bn128 as ob

from ..backends.base import CurveBackend
from ..errors import MalformedArtifact
from ..field import Q, R, fr_inv
from ..groth16.encoding import encode_g1_uncompressed, encode_g2_uncompressed, fq2_sqrt
from ..groth16.types import G1Affine, G2Affine
from .zkey_file import (
    CONTRIBUTION_TYPE_BEACON,
    CONTRIBUTION_TYPE_RANDOM,
    G1_SIZE,
    SNARKJS_SECTION_ORDER,
    Contribution,
    Zkey,
    contribution_params,
    parse_contribution_params,
    parse_zkey,
)

HASH_SIZE = 64
BEACON_MIN_EXP, BEACON_MAX_EXP = 10, 63
SAME_RATIO_SCALAR_BITS = 128
# ffjavascript's bn128 G2 cofactor (2q - r), which G2.fromRng multiplies by
G2_COFACTOR = 0x30644E72E131A029B85045B68181585E06CEECDA572A2489345F2299C0F9FA8D
_B2 = ob.b2


# --- ffjavascript's ChaCha and fromRng --------------------------------------------------


def _rotl(v: int, n: int) -> int:
    return ((v << n) | (v >> (32 - n))) & 0xFFFFFFFF


def _quarter_round(st: list[int], a: int, b: int, c: int, d: int) -> None:
    st[a] = (st[a] + st[b]) & 0xFFFFFFFF
    st[d] = _rotl(st[d] ^ st[a], 16)
    st[c] = (st[c] + st[d]) & 0xFFFFFFFF
    st[b] = _rotl(st[b] ^ st[c], 12)
    st[a] = (st[a] + st[b]) & 0xFFFFFFFF
    st[d] = _rotl(st[d] ^ st[a], 8)
    st[c] = (st[c] + st[d]) & 0xFFFFFFFF
    st[b] = _rotl(st[b] ^ st[c], 7)


class ChaCha:
    """ffjavascript chacha.js: ChaCha20 keyed by 8 words, a 128-bit block
    counter in words 12-15 and no nonce, read one 32-bit word at a time."""

    def __init__(self, seed: Sequence[int]):
        if len(seed) != 8:
            raise ValueError("ChaCha seed is 8 words")
        self._state = [0x61707865, 0x3320646E, 0x79622D32, 0x6B206574, *seed, 0, 0, 0, 0]
        self._block: list[int] = []
        self._index = 16

    def _update(self) -> None:
        st = list(self._state)
        for _ in range(10):
            _quarter_round(st, 0, 4, 8, 12)
            _quarter_round(st, 1, 5, 9, 13)
            _quarter_round(st, 2, 6, 10, 14)
            _quarter_round(st, 3, 7, 11, 15)
            _quarter_round(st, 0, 5, 10, 15)
            _quarter_round(st, 1, 6, 11, 12)
            _quarter_round(st, 2, 7, 8, 13)
            _quarter_round(st, 3, 4, 9, 14)
        self._block = [(x + y) & 0xFFFFFFFF for x, y in zip(st, self._state)]
        self._index = 0
        for i in range(12, 16):  # the counter carries across the four words
            self._state[i] = (self._state[i] + 1) & 0xFFFFFFFF
            if self._state[i]:
                break

    def next_u32(self) -> int:
        if self._index == 16:
            self._update()
        word = self._block[self._index]
        self._index += 1
        return word

    def next_u64(self) -> int:
        high = self.next_u32()
        return (high << 32) | self.next_u32()

    def next_bool(self) -> bool:
        return bool(self.next_u32() & 1)


def chacha_from_digest(digest: bytes) -> ChaCha:
    """snarkjs seeds its ChaCha with the first 32 bytes of a hash read as big-endian words."""
    return ChaCha([int.from_bytes(digest[4 * i:4 * i + 4], "big") for i in range(8)])


def _field_from_rng(rng: ChaCha, p: int) -> int:
    """wasm field fromRng: four u64 (lowest limb first), masked to p's bit
    length, rejected until below p, then taken as a Montgomery representation."""
    mask = (1 << p.bit_length()) - 1
    while True:
        v = 0
        for i in range(4):
            v += rng.next_u64() << (64 * i)
        v &= mask
        if v < p:
            return v * pow(1 << 256, -1, p) % p


def fr_from_rng(rng: ChaCha) -> int:
    return _field_from_rng(rng, R)


def _fq_is_negative(v: int) -> bool:
    return v > (Q - 1) // 2


def _fq2_is_negative(v: tuple[int, int]) -> bool:
    """wasmcurves f2m isNegative: the sign of the imaginary part, or of the real part if that is zero."""
    return _fq_is_negative(v[1]) if v[1] else _fq_is_negative(v[0])


def g1_from_rng(rng: ChaCha) -> G1Affine:
    """wasm_curve fromRng on G1: x, then a sign bit, until x^3 + 3 is a square;
    the root whose sign is that bit. G1 has cofactor 1."""
    while True:
        x = _field_from_rng(rng, Q)
        want_negative = rng.next_bool()
        rhs = (x * x * x + 3) % Q
        y = pow(rhs, (Q + 1) // 4, Q)  # Q = 3 mod 4
        if y * y % Q == rhs:
            break
    if y and _fq_is_negative(y) != want_negative:
        y = Q - y
    return (x, y)


def g2_from_rng(rng: ChaCha) -> G2Affine:
    """wasm_curve fromRng on G2: as on G1 over Fq2 (x.c0 drawn first), then the cofactor."""
    while True:
        x = (_field_from_rng(rng, Q), _field_from_rng(rng, Q))
        want_negative = rng.next_bool()
        x_fq2 = ob.FQ2(list(x))
        rhs = x_fq2 * x_fq2 * x_fq2 + _B2
        y = fq2_sqrt(tuple(int(c) for c in rhs.coeffs))
        if y is not None:
            break
    if any(y) and _fq2_is_negative(y) != want_negative:
        y = ((Q - y[0]) % Q, (Q - y[1]) % Q)
    # on the twist but outside the order-R subgroup: py_ecc, not the backend (see the module docstring)
    point = ob.normalize(ob.multiply((x_fq2, ob.FQ2(list(y)), ob.FQ2.one()), G2_COFACTOR))
    (x0, x1), (y0, y1) = (tuple(int(c) for c in point[0].coeffs), tuple(int(c) for c in point[1].coeffs))
    return ((x0, x1), (y0, y1))


def hash_to_g2(digest: bytes) -> G2Affine:
    """keypair.js hashToG2: G2.fromRng of a ChaCha seeded with the digest."""
    return g2_from_rng(chacha_from_digest(digest))


def beacon_seed(beacon_hash: bytes, num_iterations_exp: int) -> bytes:
    """misc.rngFromBeaconParams: sha256 applied 2^num_iterations_exp times."""
    if not BEACON_MIN_EXP <= num_iterations_exp <= BEACON_MAX_EXP:
        raise ValueError(f"beacon iterations exponent must be {BEACON_MIN_EXP}..{BEACON_MAX_EXP}")
    digest = beacon_hash
    for _ in range(1 << num_iterations_exp):
        digest = hashlib.sha256(digest).digest()
    return digest


# --- transcript --------------------------------------------------------------------------


def _hash_pubkey(hasher: "hashlib._Hash", c: Contribution) -> None:
    """zkey_utils.hashPubKey."""
    hasher.update(encode_g1_uncompressed(c.delta_after))
    hasher.update(encode_g1_uncompressed(c.g1_s))
    hasher.update(encode_g1_uncompressed(c.g1_sx))
    hasher.update(encode_g2_uncompressed(c.g2_spx))
    hasher.update(c.transcript)


def contribution_hash(c: Contribution) -> bytes:
    """The "Contribution Hash" snarkjs prints: blake2b-512 of the record's public key."""
    hasher = hashlib.blake2b(digest_size=HASH_SIZE)
    _hash_pubkey(hasher, c)
    return hasher.digest()


def _accumulated_hasher(cs_hash: bytes, contributions: Sequence[Contribution]) -> "hashlib._Hash":
    hasher = hashlib.blake2b(cs_hash, digest_size=HASH_SIZE)
    for c in contributions:
        _hash_pubkey(hasher, c)
    return hasher


def _transcript(accumulated: "hashlib._Hash", g1_s: G1Affine, g1_sx: G1Affine) -> bytes:
    hasher = accumulated.copy()
    hasher.update(encode_g1_uncompressed(g1_s))
    hasher.update(encode_g1_uncompressed(g1_sx))
    return hasher.digest()


def format_hash(digest: bytes, title: str | None = None) -> str:
    """misc.formatHash: four lines of four 8-digit hex words, as snarkjs prints hashes."""
    lines = ["\t\t" + " ".join(digest[16 * i + 4 * j:16 * i + 4 * j + 4].hex() for j in range(4)) for i in range(4)]
    return "\n".join(([title] if title else []) + lines)


# --- contributing ------------------------------------------------------------------------


def _as_zkey(key: bytes | Zkey, backend: CurveBackend, what: str) -> Zkey:
    return key if isinstance(key, Zkey) else parse_zkey(key, backend, what)


def _scale_g1_section(section: bytes, k: int, backend: CurveBackend) -> bytes:
    """Every point times k (mpc_applykey.applyKeyToSection with inc = 1): the
    backend's vector operation, from and back to the file's layout."""
    return backend.g1_vector_to_montgomery(backend.g1_vector_scale(backend.g1_vector_from_montgomery(section), k))


def _apply_contribution(zkey: Zkey, rng: ChaCha, backend: CurveBackend, kind: int, params: bytes) -> tuple[Zkey, bytes]:
    """The body shared by zkey_contribute.js and zkey_beacon.js: draw the key
    from `rng` in snarkjs's order (prvKey, then g1_s), record it, move delta."""
    prv_key = fr_from_rng(rng)
    if prv_key == 0:
        raise ValueError("the contribution's secret is zero; draw again")
    g1_s = g1_from_rng(rng)
    g1_sx = backend.g1_mul(g1_s, prv_key)
    transcript = _transcript(_accumulated_hasher(zkey.cs_hash, zkey.contributions), g1_s, g1_sx)
    g2_spx = backend.g2_mul(hash_to_g2(transcript), prv_key)
    delta_1 = backend.g1_mul(zkey.header.delta_1, prv_key)
    delta_2 = backend.g2_mul(zkey.header.delta_2, prv_key)
    name, exponent, beacon_hash = parse_contribution_params(params)
    record = Contribution(delta_1, g1_s, g1_sx, g2_spx, transcript, kind, params, name, exponent, beacon_hash)
    inverse = fr_inv(prv_key)
    new_key = replace(
        zkey,
        header=replace(zkey.header, delta_1=delta_1, delta_2=delta_2),
        c=_scale_g1_section(zkey.c, inverse, backend),
        h=_scale_g1_section(zkey.h, inverse, backend),
        contributions=zkey.contributions + (record,),
        section_order=SNARKJS_SECTION_ORDER,  # snarkjs writes a new file in section order
    )
    return new_key, contribution_hash(record)


def contribute(zkey_bytes: bytes | Zkey, name: str | None, entropy: str | bytes, backend: CurveBackend) -> tuple[bytes, bytes]:
    """A new key with one more random contribution; (key bytes, contribution hash).

    The secret comes from ChaCha seeded with blake2b-512(os.urandom(64) ||
    entropy), as snarkjs does; it lives only in this call's locals and is
    neither returned, logged nor written.
    """
    zkey = _as_zkey(zkey_bytes, backend, "zkey")
    entropy_bytes = entropy.encode("utf-8") if isinstance(entropy, str) else bytes(entropy)
    rng = chacha_from_digest(hashlib.blake2b(os.urandom(64) + entropy_bytes, digest_size=HASH_SIZE).digest())
    new_key, digest = _apply_contribution(zkey, rng, backend, CONTRIBUTION_TYPE_RANDOM, contribution_params(name))
    return new_key.encode(), digest


def beacon(zkey_bytes: bytes | Zkey, beacon_hash_hex: str, num_iterations_exp: int, name: str | None, backend: CurveBackend) -> tuple[bytes, bytes]:
    """A new key with a beacon contribution (deterministic: anyone can redo it); (key bytes, contribution hash)."""
    if not re.fullmatch(r"(?:[0-9a-fA-F]{2}){1,255}", beacon_hash_hex):
        raise ValueError("beacon hash must be 1 to 255 bytes of hexadecimal, without 0x")
    beacon_hash = bytes.fromhex(beacon_hash_hex)
    zkey = _as_zkey(zkey_bytes, backend, "zkey")
    rng = chacha_from_digest(beacon_seed(beacon_hash, num_iterations_exp))
    params = contribution_params(name, (num_iterations_exp, beacon_hash))
    new_key, digest = _apply_contribution(zkey, rng, backend, CONTRIBUTION_TYPE_BEACON, params)
    return new_key.encode(), digest


# --- verifying ---------------------------------------------------------------------------


@dataclass(frozen=True)
class ContributionRecord:
    """One verified contribution, as `snarkjs zkey verify` lists it."""

    index: int  # 1-based, snarkjs's "contribution #index"
    name: str | None
    contribution_hash: bytes
    type: int  # 0 random, 1 beacon
    beacon_hash: bytes | None = None
    num_iterations_exp: int | None = None

    @property
    def hash_hex(self) -> str:
        return self.contribution_hash.hex()


@dataclass(frozen=True)
class Phase2Report:
    cs_hash: bytes
    contributions: tuple[ContributionRecord, ...]
    n_initial: int  # records already in the initial key (checked as a chain, not against a circuit)


def _g1_neg(p: G1Affine) -> G1Affine:
    return None if p is None else (p[0], (Q - p[1]) % Q)


def same_ratio(backend: CurveBackend, g1_s: G1Affine, g1_sx: G1Affine, g2_s: G2Affine, g2_sx: G2Affine) -> bool:
    """misc.sameRatio: e(g1_s, g2_sx) = e(g1_sx, g2_s), false if any point is infinity."""
    if g1_s is None or g1_sx is None or g2_s is None or g2_sx is None:
        return False
    return backend.pairing_product_is_one([(g1_s, g2_sx), (_g1_neg(g1_sx), g2_s)])


def _fail(message: str) -> NoReturn:
    raise MalformedArtifact(f"phase-2 verification: {message}")


def _verify_chain(zkey: Zkey, backend: CurveBackend) -> tuple[list[ContributionRecord], G1Affine]:
    """The per-record checks of zkey_verify_frominit.js; returns the records and the last delta."""
    accumulated = hashlib.blake2b(zkey.cs_hash, digest_size=HASH_SIZE)
    current_delta = backend.g1_generator()
    records = []
    for i, c in enumerate(zkey.contributions, start=1):
        where = f"contribution #{i}" + (f" ({c.name})" if c.name else "")
        if c.type not in (CONTRIBUTION_TYPE_RANDOM, CONTRIBUTION_TYPE_BEACON):
            _fail(f"{where}: unknown contribution type {c.type}")
        if _transcript(accumulated, c.g1_s, c.g1_sx) != c.transcript:
            _fail(f"{where}: transcript does not hash the records before it and its key (dropped, reordered or altered record)")
        g2_sp = hash_to_g2(c.transcript)
        if not same_ratio(backend, c.g1_s, c.g1_sx, g2_sp, c.g2_spx):
            _fail(f"{where}: g1_sx and g2_spx are not the same multiple of g1_s and g2_sp (knowledge-of-exponent check)")
        if not same_ratio(backend, current_delta, c.delta_after, g2_sp, c.g2_spx):
            _fail(f"{where}: deltaAfter is not the previous delta times the contribution's secret")
        if c.type == CONTRIBUTION_TYPE_BEACON:
            if c.beacon_hash is None or c.num_iterations_exp is None:
                _fail(f"{where}: beacon record without its hash or iterations")
            if not BEACON_MIN_EXP <= c.num_iterations_exp <= BEACON_MAX_EXP:
                _fail(f"{where}: beacon iterations exponent {c.num_iterations_exp} outside {BEACON_MIN_EXP}..{BEACON_MAX_EXP}")
            rng = chacha_from_digest(beacon_seed(c.beacon_hash, c.num_iterations_exp))
            prv_key = fr_from_rng(rng)
            g1_s = g1_from_rng(rng)
            if g1_s != c.g1_s or backend.g1_mul(g1_s, prv_key) != c.g1_sx:
                _fail(f"{where}: the key is not the one the beacon hash {c.beacon_hash.hex()} derives")
        _hash_pubkey(accumulated, c)
        records.append(ContributionRecord(i, c.name, contribution_hash(c), c.type, c.beacon_hash, c.num_iterations_exp))
        current_delta = c.delta_after
    return records, current_delta


def _random_combination(section: bytes, scalars: object, backend: CurveBackend) -> G1Affine:
    return backend.g1_msm(backend.g1_vector_from_montgomery(section), scalars)


def _section_moved_by_delta(initial: Zkey, final: Zkey, section: str, backend: CurveBackend) -> bool:
    """sectionHasSameRatio: final = initial * delta_initial / delta_final, on a random combination."""
    before, after = getattr(initial, section), getattr(final, section)
    n = len(before) // G1_SIZE
    if n == 0:
        return True
    scalars = backend.scalar_vector([secrets.randbits(SAME_RATIO_SCALAR_BITS) for _ in range(n)])
    r_before = _random_combination(before, scalars, backend)
    r_after = _random_combination(after, scalars, backend)
    if r_before is None or r_after is None:
        return r_before is None and r_after is None and not any(after)
    return same_ratio(backend, r_before, r_after, final.header.delta_2, initial.header.delta_2)


def verify_contributions(initial_zkey: bytes | Zkey, final_zkey: bytes | Zkey, backend: CurveBackend) -> Phase2Report:
    """Check that `final_zkey` is `initial_zkey` plus valid contributions.

    Returns the report (every record's name, contribution hash and type);
    raises MalformedArtifact naming the first check that failed. The initial
    key itself is taken as given: `snarkjs zkey verify` instead regenerates
    it from the r1cs and the ptau (`zkey new` is deterministic, so comparing
    the initial key's bytes with a regenerated one amounts to the same).
    """
    initial = _as_zkey(initial_zkey, backend, "initial zkey")
    final = _as_zkey(final_zkey, backend, "final zkey")
    hi, hf = initial.header, final.header
    if (hi.n_vars, hi.n_public, hi.domain_size) != (hf.n_vars, hf.n_public, hf.domain_size):
        _fail("the keys have different circuit parameters (nVars, nPublic, domainSize)")
    if initial.cs_hash != final.cs_hash:
        _fail("the circuit hash (csHash) differs from the initial key's")
    n_initial = len(initial.contributions)
    if final.contributions[:n_initial] != initial.contributions:
        _fail("the final key's contributions do not begin with the initial key's")

    records, last_delta = _verify_chain(final, backend)
    initial_delta = initial.contributions[-1].delta_after if n_initial else backend.g1_generator()
    if hi.delta_1 != initial_delta or not same_ratio(backend, backend.g1_generator(), hi.delta_1, backend.g2_generator(), hi.delta_2):
        _fail("the initial key's delta is neither 1 (a fresh `zkey new` key) nor its last contribution's deltaAfter")
    if hf.delta_1 != last_delta:
        _fail("delta_1 of the final key is not the last contribution's deltaAfter")
    if not same_ratio(backend, backend.g1_generator(), hf.delta_1, backend.g2_generator(), hf.delta_2):
        _fail("delta_2 of the final key does not match its delta_1")
    for what, before, after in (
        ("alpha_1", hi.alpha_1, hf.alpha_1),
        ("beta_1", hi.beta_1, hf.beta_1),
        ("beta_2", hi.beta_2, hf.beta_2),
        ("gamma_2", hi.gamma_2, hf.gamma_2),
    ):
        if before != after:
            _fail(f"{what} differs from the initial key's")
    for what, section in (("IC", "ic"), ("coefficients", "coefficients"), ("A", "a"), ("B1", "b1"), ("B2", "b2")):
        if getattr(initial, section) != getattr(final, section):
            _fail(f"the {what} section differs from the initial key's")
    for what, section in (("C (L)", "c"), ("H", "h")):
        if not _section_moved_by_delta(initial, final, section, backend):
            _fail(f"the {what} section is not the initial one scaled by delta_initial / delta_final")
    return Phase2Report(cs_hash=final.cs_hash, contributions=tuple(records), n_initial=n_initial)
