"""Phase-2 (circuit-specific) contributions to a Groth16 key.

A contributor draws a secret d, replaces delta by d * delta (in G1 and G2) and
divides every L and H query point by d. Proofs made with the new key verify
against the new verifying key and not the old one; whoever knows every d in
the chain (or the setup's delta and every d) knows the final delta, so one
honest contributor who forgets d suffices to hide it.

Transcript. Each contribution appends a record
    (delta_g1 after, s_g1, sd_g1 = d * s_g1, rd_g2 = d * r_g2, name)
where s_g1 = [s]_1 for a random s and r_g2 = hash_to_g2(state || s_g1 || sd_g1)
is a G2 point of unknown discrete logarithm derived from the running
transcript hash `state` (BGM17, "Scalable multi-party computation for
zk-SNARK parameters", section 7, as in snarkjs's zkey contributions). The
verifier checks, with pairings:
    e(s_g1, rd_g2) = e(sd_g1, r_g2)            the contributor knows d (knowledge
                                                of exponent, r_g2 a random oracle)
    e(delta_prev, rd_g2) = e(delta_new, r_g2)  delta_new = d * delta_prev
and at the end that the key's delta_g1 / delta_g2 are the last delta, that
the L and H queries moved by exactly delta_initial / delta_final (random
linear combinations, one pairing equation per query) and that nothing else in
the key changed. Because r_g2 hashes the whole preceding transcript (which
starts from the initial key's canonical digest), records cannot be replayed
or reordered.

hash_to_g2 is try-and-increment: x = (H(seed, i, 0), H(seed, i, 1)) mod Q for
the first counter i with x^3 + b' a square in Fq2, the root with the "smaller"
sign (encoding.py), then multiplied by the twist cofactor 2Q - R. Its discrete
logarithm is unknown to everyone; its running time leaks nothing secret (all
inputs are public).

PHASE-1 CAVEAT. Phase 2 protects delta only. Whoever knows tau (and alpha,
beta) can still forge: from h_query[0] = [Z(tau) / delta]_1 and Z(tau) they get
[1 / delta]_1, and then any [(beta u_i + alpha v_i + w_i)(tau) / delta]_1 they
like. `setup` samples tau, alpha, beta itself, so with it the party that ran
setup stays able to forge whatever the contributions. A real deployment must
take tau, alpha, beta from a multi-party powers-of-tau ceremony, derive the
initial key from its points with phase1.derive_keys_from_phase1 (no secret
involved; delta = gamma = 1) and then run these contributions.
"""
from __future__ import annotations

import hashlib
import json
import os
import secrets
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Callable

from ..curve import g2_curve_rhs
from ..errors import CircuitError, MalformedArtifact
from ..field import Q, R
from .encoding import (
    fq2_is_larger,
    fq2_sqrt,
    decode_g1_compressed,
    decode_g2_compressed,
    encode_g1_compressed,
    encode_g2_compressed,
)
from .keys import ProvingKey, component_digests, digest_from_components, proving_key_digest
from .types import G1Affine, G2Affine

TRANSCRIPT_FORMAT = "fairproof-groth16-phase2"
TRANSCRIPT_VERSION = 1
_DOMAIN = b"fairproof-groth16-phase2-v1"
G2_COFACTOR = 2 * Q - R

Progress = Callable[[str, int, int], None]


@dataclass(frozen=True)
class Contribution:
    delta_g1: G1Affine  # delta after this contribution
    s_g1: G1Affine
    sd_g1: G1Affine
    rd_g2: G2Affine
    name: str = ""

    def to_bytes(self) -> bytes:
        label = self.name.encode()
        return (
            encode_g1_compressed(self.delta_g1)
            + encode_g1_compressed(self.s_g1)
            + encode_g1_compressed(self.sd_g1)
            + encode_g2_compressed(self.rd_g2)
            + len(label).to_bytes(4, "big")
            + label
        )


@dataclass(frozen=True)
class Transcript:
    initial_key_digest: str
    initial_delta_g1: G1Affine
    contributions: tuple[Contribution, ...] = ()

    def states(self) -> list[bytes]:
        """Running hashes: states()[j] is the state before contribution j; the last is the digest."""
        state = hashlib.sha256(
            _DOMAIN + bytes.fromhex(self.initial_key_digest) + encode_g1_compressed(self.initial_delta_g1)
        ).digest()
        out = [state]
        for record in self.contributions:
            state = hashlib.sha256(state + record.to_bytes()).digest()
            out.append(state)
        return out

    def digest(self) -> str:
        return self.states()[-1].hex()

    def to_dict(self) -> dict[str, Any]:
        return {
            "format": TRANSCRIPT_FORMAT,
            "version": TRANSCRIPT_VERSION,
            "initial_key_digest": self.initial_key_digest,
            "initial_delta_g1": encode_g1_compressed(self.initial_delta_g1).hex(),
            "contributions": [
                {
                    "name": c.name,
                    "delta_g1": encode_g1_compressed(c.delta_g1).hex(),
                    "s_g1": encode_g1_compressed(c.s_g1).hex(),
                    "sd_g1": encode_g1_compressed(c.sd_g1).hex(),
                    "rd_g2": encode_g2_compressed(c.rd_g2).hex(),
                }
                for c in self.contributions
            ],
            "digest": self.digest(),
        }

    @classmethod
    def from_dict(cls, data: Any) -> "Transcript":
        if not isinstance(data, dict) or data.get("format") != TRANSCRIPT_FORMAT:
            raise MalformedArtifact(f"phase-2 transcript: not a {TRANSCRIPT_FORMAT} object")
        if data.get("version") != TRANSCRIPT_VERSION:
            raise MalformedArtifact(f"phase-2 transcript: unsupported version {data.get('version')!r}")
        try:
            records = []
            for i, c in enumerate(data["contributions"]):
                records.append(
                    Contribution(
                        delta_g1=decode_g1_compressed(_hex(c["delta_g1"]), f"contribution {i} delta_g1"),
                        s_g1=decode_g1_compressed(_hex(c["s_g1"]), f"contribution {i} s_g1"),
                        sd_g1=decode_g1_compressed(_hex(c["sd_g1"]), f"contribution {i} sd_g1"),
                        rd_g2=decode_g2_compressed(_hex(c["rd_g2"]), f"contribution {i} rd_g2"),
                        name=str(c.get("name", "")),
                    )
                )
            transcript = cls(
                initial_key_digest=_digest_hex(data["initial_key_digest"]),
                initial_delta_g1=decode_g1_compressed(_hex(data["initial_delta_g1"]), "initial_delta_g1"),
                contributions=tuple(records),
            )
        except (KeyError, TypeError) as exc:
            raise MalformedArtifact(f"phase-2 transcript: missing or malformed field ({exc})") from exc
        if "digest" in data and data["digest"] != transcript.digest():
            raise MalformedArtifact("phase-2 transcript: digest does not match its records")
        return transcript

    def save(self, path: str | os.PathLike[str]) -> None:
        Path(path).write_text(json.dumps(self.to_dict(), indent=1))

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> "Transcript":
        try:
            return cls.from_dict(json.loads(Path(path).read_text()))
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise MalformedArtifact(f"phase-2 transcript: {path} is not valid JSON") from exc


def _hex(value: Any) -> bytes:
    try:
        return bytes.fromhex(value)
    except (TypeError, ValueError) as exc:
        raise MalformedArtifact(f"phase-2 transcript: {value!r} is not hexadecimal") from exc


def _digest_hex(value: Any) -> str:
    raw = _hex(value)
    if len(raw) != 32:
        raise MalformedArtifact("phase-2 transcript: key digest must be 32 bytes")
    return raw.hex()


# --- hash to G2 ---------------------------------------------------------------------


def hash_to_g2(seed: bytes) -> G2Affine:
    """A G2 point of unknown discrete logarithm, deterministic in `seed` (see module doc)."""
    # The defining modules: py_ecc.optimized_bn128 re-exports these without declaring it.
    from py_ecc.fields import optimized_bn128_FQ2 as FQ2
    from py_ecc.optimized_bn128 import optimized_curve as ob

    counter = 0
    while True:
        block = seed + counter.to_bytes(4, "big")
        x0 = int.from_bytes(hashlib.sha512(block + b"\x00").digest(), "big") % Q
        x1 = int.from_bytes(hashlib.sha512(block + b"\x01").digest(), "big") % Q
        y = fq2_sqrt(g2_curve_rhs((x0, x1)))
        counter += 1
        if y is None:
            continue
        if fq2_is_larger(y):
            y = ((Q - y[0]) % Q, (Q - y[1]) % Q)
        point = (FQ2([x0, x1]), FQ2([y[0], y[1]]), FQ2.one())
        cleared = ob.multiply(point, G2_COFACTOR)
        if ob.is_inf(cleared):
            continue
        x, y2 = ob.normalize(cleared)
        return ((int(x.coeffs[0]), int(x.coeffs[1])), (int(y2.coeffs[0]), int(y2.coeffs[1])))


def _pok_base(state: bytes, s_g1: G1Affine, sd_g1: G1Affine) -> G2Affine:
    return hash_to_g2(state + encode_g1_compressed(s_g1) + encode_g1_compressed(sd_g1))


# --- contributing -----------------------------------------------------------------------


def _backend_for(pk: ProvingKey, backend: Any) -> Any:
    if backend is None:
        from ..backends import get_backend

        backend = get_backend(pk.backend_name)
    if backend.name != pk.backend_name:
        raise CircuitError(f"proving key holds {pk.backend_name} vectors, backend is {backend.name}")
    return backend


def start_transcript(pk: ProvingKey, backend: Any = None) -> Transcript:
    """An empty transcript bound to the key as it leaves setup."""
    backend = _backend_for(pk, backend)
    return Transcript(initial_key_digest=proving_key_digest(pk, backend), initial_delta_g1=pk.delta_g1)


def scale_g1_vector(backend: Any, vector: Any, k: int) -> Any:
    """[k * P for P in vector]; a backend may provide `g1_vector_scale` to do it natively."""
    native = getattr(backend, "g1_vector_scale", None)
    if native is not None:
        return native(vector, k)
    return backend.g1_vector([backend.g1_mul(p, k) for p in backend.g1_vector_to_canonical(vector)])


def contribute(
    pk: ProvingKey,
    transcript: Transcript,
    backend: Any = None,
    *,
    secret: int | None = None,
    name: str = "",
    progress: Progress | None = None,
) -> tuple[ProvingKey, Transcript]:
    """Apply one contribution; returns the updated key (its vk inside) and transcript.

    `secret` (d) and the PoK scalar come from `secrets` unless d is given (tests).
    The contributor should check the incoming chain first (verify_contribution_chain)
    and must forget d afterwards.
    """
    report = progress or (lambda stage, done, total: None)
    backend = _backend_for(pk, backend)
    expected_delta = transcript.contributions[-1].delta_g1 if transcript.contributions else transcript.initial_delta_g1
    if pk.delta_g1 != expected_delta:
        raise CircuitError("proving key's delta_g1 is not the transcript's latest delta: wrong key or transcript")
    d = secrets.randbelow(R - 1) + 1 if secret is None else secret
    if isinstance(d, bool) or not isinstance(d, int) or not 0 < d < R:
        raise CircuitError("contribution secret must be an int in [1, R)")
    d_inv = pow(d, R - 2, R)

    l_query = scale_g1_vector(backend, pk.l_query, d_inv)
    report("l_query", 1, 3)
    h_query = scale_g1_vector(backend, pk.h_query, d_inv)
    report("h_query", 2, 3)
    delta_g1 = backend.g1_mul(pk.delta_g1, d)
    delta_g2 = backend.g2_mul(pk.delta_g2, d)

    s = secrets.randbelow(R - 1) + 1
    s_g1 = backend.g1_mul(backend.g1_generator(), s)
    sd_g1 = backend.g1_mul(s_g1, d)
    r_g2 = _pok_base(transcript.states()[-1], s_g1, sd_g1)
    rd_g2 = backend.g2_mul(r_g2, d)
    record = Contribution(delta_g1=delta_g1, s_g1=s_g1, sd_g1=sd_g1, rd_g2=rd_g2, name=name)

    new_vk = replace(pk.vk, delta_g2=delta_g2)
    new_pk = pk.with_changes(vk=new_vk, delta_g1=delta_g1, l_query=l_query, h_query=h_query)
    report("done", 3, 3)
    return new_pk, replace(transcript, contributions=transcript.contributions + (record,))


# --- verifying ----------------------------------------------------------------------------


@dataclass(frozen=True)
class ChainReport:
    contributions: int
    names: tuple[str, ...]
    transcript_digest: str
    initial_key_digest: str
    final_key_digest: str


def _neg(p: G1Affine) -> G1Affine:
    return None if p is None else (p[0], (Q - p[1]) % Q)


def _same_ratio(backend: Any, p1: G1Affine, q1: G1Affine, p2: G2Affine, q2: G2Affine) -> bool:
    """e(p1, q2) == e(q1, p2), i.e. q1 / p1 == q2 / p2 as discrete logs."""
    same: bool = backend.pairing_product_is_one([(p1, q2), (_neg(q1), p2)])
    return same


def verify_contribution_chain(
    initial_pk: ProvingKey,
    final_pk: ProvingKey,
    transcript: Transcript,
    backend: Any = None,
    *,
    expected_initial_digest: str | None = None,
) -> ChainReport:
    """Check that `final_pk` is `initial_pk` after exactly the contributions in `transcript`.

    `initial_pk` is the key as setup produced it (pinned by its canonical digest,
    optionally also compared with `expected_initial_digest`). The final
    verifying key is final_pk.vk. Raises MalformedArtifact naming the first
    failed check; returns a summary otherwise.
    """
    backend = _backend_for(initial_pk, backend)
    if final_pk.backend_name != backend.name:
        raise CircuitError("initial and final keys must be held by the same backend")
    initial_components = component_digests(initial_pk, backend)
    initial_digest = digest_from_components(initial_pk, initial_components)
    if expected_initial_digest is not None and initial_digest != expected_initial_digest:
        raise MalformedArtifact("phase 2: the initial key is not the one pinned by the expected digest")
    if transcript.initial_key_digest != initial_digest:
        raise MalformedArtifact("phase 2: the transcript starts from a different key")
    if transcript.initial_delta_g1 != initial_pk.delta_g1:
        raise MalformedArtifact("phase 2: the transcript's initial delta is not the initial key's")

    states = transcript.states()
    g1 = backend.g1_generator()
    g2 = backend.g2_generator()
    previous = initial_pk.delta_g1
    for j, record in enumerate(transcript.contributions):
        for label, point in (("delta_g1", record.delta_g1), ("s_g1", record.s_g1), ("sd_g1", record.sd_g1)):
            if point is None or not backend.g1_is_valid(point):
                raise MalformedArtifact(f"phase 2: contribution {j}: {label} is not a non-trivial G1 point")
        if record.rd_g2 is None or not backend.g2_is_valid(record.rd_g2):
            raise MalformedArtifact(f"phase 2: contribution {j}: rd_g2 is not a non-trivial G2 point")
        r_g2 = _pok_base(states[j], record.s_g1, record.sd_g1)
        if not _same_ratio(backend, record.s_g1, record.sd_g1, r_g2, record.rd_g2):
            raise MalformedArtifact(f"phase 2: contribution {j}: proof of knowledge of the secret fails")
        if not _same_ratio(backend, previous, record.delta_g1, r_g2, record.rd_g2):
            raise MalformedArtifact(f"phase 2: contribution {j}: new delta is not the previous delta times the secret")
        previous = record.delta_g1

    if final_pk.delta_g1 != previous:
        raise MalformedArtifact("phase 2: the final key's delta_g1 is not the transcript's last delta")
    if final_pk.delta_g2 is None or not backend.g2_is_valid(final_pk.delta_g2) or not _same_ratio(
        backend, g1, final_pk.delta_g1, g2, final_pk.delta_g2
    ):
        raise MalformedArtifact("phase 2: the final key's delta_g2 does not match its delta_g1")

    # Everything but delta, L and H must be unchanged.
    final_components = component_digests(final_pk, backend)
    for name in ("a_query", "b_g1_query", "b_g2_query"):
        if final_components[name] != initial_components[name]:
            raise MalformedArtifact(f"phase 2: {name} changed; contributions may only touch delta, L and H")
    ivk, fvk = initial_pk.vk, final_pk.vk
    for label, before, after in (
        ("shape", (initial_pk.n_wires, initial_pk.n_public, initial_pk.domain_size, initial_pk.r1cs_digest),
         (final_pk.n_wires, final_pk.n_public, final_pk.domain_size, final_pk.r1cs_digest)),
        ("beta_g1", initial_pk.beta_g1, final_pk.beta_g1),
        ("alpha_g1", ivk.alpha_g1, fvk.alpha_g1),
        ("beta_g2", ivk.beta_g2, fvk.beta_g2),
        ("gamma_g2", ivk.gamma_g2, fvk.gamma_g2),
        ("ic", ivk.ic, fvk.ic),
    ):
        if before != after:
            raise MalformedArtifact(f"phase 2: {label} changed; contributions may only touch delta, L and H")

    # L and H: sum rho_i P'_i paired with delta_final must equal sum rho_i P_i with delta_initial.
    for name in ("l_query", "h_query"):
        before, after = getattr(initial_pk, name), getattr(final_pk, name)
        count = backend.vector_len(before)
        if backend.vector_len(after) != count:
            raise MalformedArtifact(f"phase 2: {name} changed length")
        if count == 0:
            continue
        rho = backend.scalar_vector([secrets.randbelow(R - 1) + 1 for _ in range(count)])
        old_sum = backend.g1_msm(before, rho)
        new_sum = backend.g1_msm(after, rho)
        if not backend.pairing_product_is_one([(new_sum, final_pk.delta_g2), (_neg(old_sum), initial_pk.delta_g2)]):
            raise MalformedArtifact(f"phase 2: {name} was not updated consistently with delta")

    return ChainReport(
        contributions=len(transcript.contributions),
        names=tuple(c.name for c in transcript.contributions),
        transcript_digest=transcript.digest(),
        initial_key_digest=initial_digest,
        final_key_digest=digest_from_components(final_pk, final_components),
    )
