"""An auditor's check that a model card's keys are the keys of the fairness statement, from public data only.

For every circuit bucket and audit circuit of a card, from the card, the public phase-1 file and
the bucket's final .zkey (proving keys are public):

1. rebuild the statement's constraint system from the card's public shape and
   compare its digest, size and public inputs with the card's;
2. the phase-1 file is the one the card names (SHA-256, power) and is a
   consistent powers of tau at the powers this circuit uses;
3. regenerate the initial key (`zkey new`, no secret involved) and compare its
   circuit hash with the card's;
4. verify the phase-2 chain from that initial key to the final key, and
   compare its contributors (name, hash, kind) and transcript digest with
   the card's;
5. the final key's verifying key is the card's.

This is what `snarkjs zkey verify` does for one key, plus the binding to the
card. A bucket set up by the bank alone cannot pass: there is nothing to
audit but the bank's word.

When every bucket passes, `CardAudit.statement` is what the auditor may sign
(commitments.attestation): the card, the phase-1 file, and per bucket the
R1CS digest it rebuilt, the key digest and the contributions it verified.
"""
from __future__ import annotations

import re
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from circuits.errors import MalformedArtifact
from circuits.groth16 import r1cs_digest, vk_digest
from circuits.snarkjs.ceremony import file_sha256, transcript_digest
from circuits.snarkjs.ptau import Ptau, read_ptau, verify_ptau
from circuits.snarkjs.zkey_file import parse_zkey, vk_from_zkey
from circuits.snarkjs.zkey_mpc import verify_contributions
from circuits.snarkjs.zkey_new import new_zkey
from commitments.attestation import AttestationStatement, AttestedCircuit
from commitments.card import AuditCircuit, CircuitBucket, ContributionRecord, ModelCard, TreeBucketShape
from statement import statement_relation
from statement.group_counts import GroupCountsError, GroupCountsShape, group_counts_relation

from .bucket_keys import ZKEY_FILE, shape_from_card

Progress = Callable[[str], None]


@dataclass(frozen=True)
class BucketAudit:
    bucket: str
    n_constraints: int
    ok: bool
    reason: str  # "ok", or the first check that failed
    contributors: tuple[ContributionRecord, ...]
    seconds: float


class AuditFailure(Exception):
    pass


@dataclass(frozen=True)
class CardAudit:
    """Every bucket's audit of one card, against the phase-1 file of this SHA-256."""

    card: ModelCard
    phase1_sha256: str
    buckets: tuple[BucketAudit, ...]

    @property
    def ok(self) -> bool:
        return bool(self.buckets) and all(b.ok for b in self.buckets)

    def statement(self, date: str) -> AttestationStatement:
        """What an auditor signs for this audit (only when it passed); `date` is YYYY-MM-DD (UTC)."""
        if not self.ok:
            raise AuditFailure("only a card whose every key passed the audit can be attested")
        entries = {circuit_name(e): e for e in (*self.card.circuits, *self.card.audit_circuits)}
        circuits = tuple(AttestedCircuit(name=b.bucket, r1cs_digest=entries[b.bucket].r1cs_digest,
                                         verifying_key_digest=entries[b.bucket].verifying_key_digest,
                                         contributions=tuple(c.hash for c in b.contributors))
                         for b in self.buckets)
        return AttestationStatement(model_id=self.card.model_id, card_digest=self.card.digest(),
                                    commitment=self.card.commitment, phase1_digest=self.phase1_sha256,
                                    circuits=circuits, lenses=self.card.lenses, date=date)


def find_bucket_key(keys_dir: Path, bucket: str) -> Path:
    """`<bucket>.zkey` in `keys_dir`, or the model directory layout `<bucket>-<shape digest>/bucket.zkey`."""
    direct = keys_dir / f"{bucket}.zkey"
    if direct.is_file():
        return direct
    # <bucket>-<12 hex digits of the shape digest>: "k4-f4" never matches k4-f4-exact's directory.
    candidates = sorted(p for p in keys_dir.glob(f"{bucket}-*/{ZKEY_FILE}")
                        if re.fullmatch(re.escape(bucket) + "-[0-9a-f]{12}", p.parent.name))
    if len(candidates) == 1:
        return candidates[0]
    raise AuditFailure(f"no final key for bucket {bucket} in {keys_dir} (expected {bucket}.zkey)"
                       if not candidates else f"several keys for bucket {bucket} in {keys_dir}")


def circuit_name(entry: CircuitBucket | AuditCircuit) -> str:
    return entry.bucket if isinstance(entry, CircuitBucket) else entry.name


def rebuild_relation(card: ModelCard, entry: CircuitBucket | AuditCircuit):
    """The constraint system the card's public shape for `entry` describes."""
    if isinstance(entry, CircuitBucket) and isinstance(entry.shape, TreeBucketShape):
        from .tree_keys import shape_from_card as tree_shape_from_card, tree_relation

        return tree_relation(tree_shape_from_card(card, entry))
    if isinstance(entry, CircuitBucket):
        return statement_relation(shape_from_card(card, entry))
    try:
        return group_counts_relation(GroupCountsShape.from_json(card.group_counts_shape_json(entry)))
    except GroupCountsError as exc:
        raise AuditFailure(f"the card's audit circuit has no valid shape: {exc}") from None


def audit_bucket(card: ModelCard, bucket: CircuitBucket | AuditCircuit, ptau: Ptau, ptau_sha256: str, zkey_bytes: bytes,
                 backend: Any, progress: Progress | None = None, *, initial: bytes | None = None) -> BucketAudit:
    """Audit one bucket. `initial`: `zkey new` of this circuit and phase 1 if the caller has already
    regenerated it (it is compared by circuit hash; the chain from it is verified as usual)."""
    say = progress or (lambda _m: None)
    start = time.perf_counter()
    try:
        records = _audit(card, bucket, ptau, ptau_sha256, zkey_bytes, backend, say, initial)
        return BucketAudit(circuit_name(bucket), bucket.n_constraints, True, "ok", records, time.perf_counter() - start)
    except (AuditFailure, MalformedArtifact) as exc:
        return BucketAudit(circuit_name(bucket), bucket.n_constraints, False, str(exc), (),
                           time.perf_counter() - start)


def _audit(card, bucket, ptau, ptau_sha256, zkey_bytes, backend, say, initial_bytes) -> tuple[ContributionRecord, ...]:
    setup, name = bucket.setup, circuit_name(bucket)
    if setup.method != "ceremony":
        raise AuditFailure("set up by the bank alone: no ceremony to check, whoever ran it can forge proofs")
    say(f"{name}: rebuilding the statement from the card's shape")
    r1cs = rebuild_relation(card, bucket)
    if r1cs_digest(r1cs) != bucket.r1cs_digest:
        raise AuditFailure("the card's R1CS digest is not the digest of the statement its shape describes")
    if (r1cs.n_constraints, r1cs.n_public) != (bucket.n_constraints, bucket.n_public):
        raise AuditFailure("the card's constraint or public-input count differs from the rebuilt statement")
    if ptau_sha256 != setup.phase1_digest or ptau.power != setup.phase1_power:
        raise AuditFailure("the phase-1 file is not the one the card names (SHA-256 or power differ)")
    if initial_bytes is None:
        say(f"{name}: regenerating the initial key from the phase-1 file ({r1cs.n_constraints} constraints)")
        initial_bytes = new_zkey(r1cs, ptau, backend)
    initial = parse_zkey(initial_bytes, backend, what="initial key")
    if initial.cs_hash.hex() != setup.circuit_hash:
        raise AuditFailure("the card's circuit hash is not the hash of the initial key of this circuit")
    final = parse_zkey(zkey_bytes, backend, what=f"final key of {name}")
    say(f"{name}: verifying {len(final.contributions)} contribution(s)")
    report = verify_contributions(initial, final, backend)
    chain = tuple(ContributionRecord(name=r.name or "", hash=r.hash_hex,
                                     kind="beacon" if r.type == 1 else "contribution")
                  for r in report.contributions)
    if chain != setup.contributions:
        raise AuditFailure("the card's contributor list is not the key's transcript")
    if not chain:
        raise AuditFailure("the key has no contribution: its delta is the generator (degenerate)")
    if transcript_digest(final) != setup.transcript_digest:
        raise AuditFailure("the card's transcript digest is not the key's")
    if vk_digest(vk_from_zkey(final)) != bucket.verifying_key_digest:
        raise AuditFailure("the card's verifying key is not the final key's")
    return chain


def audit_card(card: ModelCard, ptau_path: Path, keys_dir: Path, backend: Any,
               progress: Progress | None = None) -> CardAudit:
    """Audit every bucket and audit circuit of `card` (see the module docstring)."""
    say = progress or (lambda _m: None)
    ptau = read_ptau(ptau_path)
    say(f"phase 1: {ptau_path} (power {ptau.power}), SHA-256")
    ptau_sha256 = file_sha256(ptau_path)
    entries = (*card.circuits, *card.audit_circuits)
    powers = sorted({p for b in entries for p in _powers(b)} & set(range(ptau.power + 2)))
    say(f"phase 1: checking the powers of tau and the Lagrange points at powers {powers}")
    verify_ptau(ptau, backend, lagrange_powers=powers)
    results = []
    for bucket in entries:
        try:
            zkey_bytes = find_bucket_key(keys_dir, circuit_name(bucket)).read_bytes()
        except AuditFailure as exc:
            results.append(BucketAudit(circuit_name(bucket), bucket.n_constraints, False, str(exc), (), 0.0))
            continue
        results.append(audit_bucket(card, bucket, ptau, ptau_sha256, zkey_bytes, backend, say))
    return CardAudit(card, ptau_sha256, tuple(results))


def _powers(bucket: CircuitBucket | AuditCircuit) -> tuple[int, int]:
    rows = bucket.n_constraints + bucket.n_public
    power = max(rows, 1).bit_length()  # snarkjs's cirPower: floor(log2(rows)) + 1
    return power, power + 1
