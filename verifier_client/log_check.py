"""Is this certificate, and its card, in the bank's public transparency log?

A bundle from the service carries `log`: the inclusion of its certificate and
of its card in the log, against one checkpoint signed by the log's key. The
customer rebuilds both leaves from what the proof and the pinned card
establish (never from the bundle's word), checks both audit paths to the
checkpoint's root, and checks the checkpoint.

The certificate's leaf (`commitments.log.CertificateCommitted`) is rebuilt from
the claims derived from the proof's public signals and the card
(`commitments.claims.bundle_claims`): decision, status, eps, cap and the
lenses' summaries, and the salted commitment to the signals under the
bundle's `log_salt`. A leaf whose public fields say anything else than the
proof, or that commits under another salt or to another certificate, is
another leaf, and its audit path fails. A bundle without `log_salt` was
logged before salts existed: its leaf is the old `certificate_issued`, rebuilt
from the signals as before.

The checkpoint must be:

- signed by the log key the customer pinned (or named with --log-key); a
  checkpoint under another key for the same origin is refused;
- the log the service (or, from files, the model) was pinned with: a log is
  the service's, so another origin or key from the same service or for the
  same model is refused, never taken as a first use;
- cosigned by every witness the customer trusts (--trust-witness);
- the card's leaf before the certificate's (`commitments.log.card_order_problem`,
  the monitor's rule too);
- consistent with the last checkpoint the customer kept for this log: same
  size means same root, and a larger or smaller tree needs an RFC 9162
  consistency proof, which is fetched from the log when it can be reached.

Two checkpoints of one log that are not consistent are a fork: the bank
shows different histories to different people. That is refused, named, and
the kept checkpoint is left as it was, as evidence.
"""
from __future__ import annotations

import base64
from dataclasses import dataclass
from typing import Callable, Iterable

from commitments.bundle import CertificateBundle
from commitments.card import ModelCard
from commitments.claims import ClaimError, Claims, bundle_claims
from commitments.log import (CardPublished, CertificateLeaf, ConsistencyProof, LogEvidence, LogInclusion,
                             card_order_problem, certificate_leaf, committed_certificate_leaf, leaf_bytes)
from transparency import merkle, note
from transparency.checkpoint import Checkpoint, CheckpointError
from transparency.cosignature import CosignatureVerifier

from .pins import KeptCheckpoint, PinStore

# Fetches the consistency proof between two sizes from the log (None: the log cannot be reached).
ConsistencySource = Callable[[int, int], ConsistencyProof]


class LogRefused(Exception):
    """The log evidence does not hold (the message is one line, naming what failed)."""


@dataclass(frozen=True)
class LogVerdict:
    origin: str
    tree_size: int
    certificate_index: int
    card_index: int
    witnesses: tuple[str, ...]  # trusted witnesses whose cosignatures verified
    key_first_use: bool  # this check pinned the log's key
    consistency: str  # in words: how this checkpoint relates to the one kept before
    leaf_kind: str = "certificate_committed"  # the certificate leaf's kind ("certificate_issued": the old one)

    def describe(self) -> str:
        cosigned = f", cosigned by {', '.join(self.witnesses)}" if self.witnesses else ""
        old = ("; the certificate's leaf is of the old kind, which holds its public signals (the log serves "
               "it redacted)") if self.leaf_kind == "certificate_issued" else ""
        return (f"Transparency log {self.origin}: certificate is leaf {self.certificate_index} and its card leaf "
                f"{self.card_index} of the signed checkpoint of {self.tree_size} leaves{cosigned}; "
                f"{self.consistency}{old}")


def expected_certificate_leaf(bundle: CertificateBundle, card: ModelCard,
                              card_digest: str | None = None) -> CertificateLeaf:
    """The certificate's leaf as the customer rebuilds it: from the claims derived from the public signals
    and `card` (never from the bundle's readable fields), the bundle's bucket and request id, and its
    `log_salt`; the old `certificate_issued` leaf for a bundle without a salt. LogRefused when the bundle's
    claims do not hold under the card, or its salt or signals cannot be committed to."""
    digest = card.digest() if card_digest is None else card_digest
    if bundle.log_salt is None:
        return certificate_leaf(card.model_id, digest, bundle.bucket, bundle.public_signals, bundle.request_id)
    try:
        claims = bundle_claims(bundle, card, digest)
    except ClaimError as exc:
        raise LogRefused(f"the certificate does not hold under its card: {exc}") from None
    try:
        return claims_leaf(claims, digest, bundle.request_id, bundle.public_signals, bundle.log_salt)
    except ValueError as exc:
        raise LogRefused(f"the certificate's leaf cannot be rebuilt: {exc}") from None


def claims_leaf(claims: Claims, card_digest: str, request_id: str | None, public_signals: tuple[str, ...],
                salt: str) -> CertificateLeaf:
    """The `certificate_committed` leaf of verified `claims` (ValueError for a malformed salt)."""
    persistence = claims.persistence
    return committed_certificate_leaf(
        model_id=claims.model_id, card_digest=card_digest, bucket=claims.bucket, request_id=request_id,
        decision=claims.decision, status=claims.status, eps_numerator=claims.eps_numerator,
        eps_scale_bits=claims.eps_scale_bits, capped=claims.capped,
        spread=None if claims.spread is None else (claims.spread.distinct_decisions, claims.spread.score_buckets),
        persistence=None if persistence is None else [(persistence.attributes[i], persistence.status(i))
                                                      for i in range(len(persistence.bounds))],
        public_signals=public_signals, salt=salt)


def parse_witness_key(vkey: str) -> CosignatureVerifier:
    try:
        return CosignatureVerifier.from_key(vkey)
    except ValueError as exc:
        raise LogRefused(f"--trust-witness {vkey[:40]!r}: {exc}") from None


def check_log_evidence(bundle: CertificateBundle, card: ModelCard, evidence: LogEvidence | None, pins: PinStore, *,
                       log_key: str | None = None, fetch_log_key: Callable[[], str] | None = None,
                       witnesses: Iterable[CosignatureVerifier] = (),
                       consistency: ConsistencySource | None = None, newest: bool = False,
                       service_url: str | None = None, file_mode: bool = False) -> LogVerdict:
    """Check `evidence` for a bundle already verified under `card`; LogRefused with the reason if it fails.

    `log_key`: the log's verifier key as the customer names it (else the pinned
    one; else, on first use, `fetch_log_key()`, which is then pinned).
    `newest`: the evidence was just served against the log's newest checkpoint,
    so a tree smaller than the one kept means the log was rolled back.
    `service_url`: the service the certificate (or, with `file_mode`, its log) came from; `file_mode`: the
    bundle came as a file, so the log is also bound by every pin of the model, whatever the service.
    """
    if evidence is None:
        raise LogRefused("the certificate carries no transparency-log evidence")
    origin = _origin(evidence.checkpoint)
    verifier, first_use = _log_verifier(pins, origin, log_key, fetch_log_key)
    bindings = [service_url] if not file_mode else [None] + ([service_url] if service_url is not None else [])
    for service in bindings:
        bound = pins.log_binding_problem(service, card.model_id, origin, verifier.vkey())
        if bound:
            raise LogRefused(bound)
    witnesses = tuple(witnesses)
    try:
        opened = note.open(evidence.checkpoint, [verifier, *witnesses])
        checkpoint = Checkpoint.parse(opened.text)
    except note.UnverifiedNote:
        raise LogRefused(f"the checkpoint is not signed by the log key {verifier.vkey()}") from None
    except (note.NoteError, CheckpointError) as exc:
        raise LogRefused(f"the checkpoint is malformed or mis-signed: {exc}") from None
    signers = {(s.name, s.key_id) for s in opened.verified}
    if (verifier.name, verifier.key_id) not in signers:
        raise LogRefused(f"the checkpoint is not signed by the log key {verifier.vkey()}")
    if checkpoint.origin != origin:
        raise LogRefused(f"the checkpoint names origin {checkpoint.origin!r}, its signature {origin!r}")
    missing = [w.name for w in witnesses if (w.name, w.key_id) not in signers]
    if missing:
        raise LogRefused(f"the checkpoint lacks a cosignature by trusted witness {missing[0]}")

    card_digest = card.digest()
    leaf = expected_certificate_leaf(bundle, card, card_digest)
    _check_inclusion("certificate", leaf_bytes(leaf), evidence.certificate, checkpoint)
    card_leaf = leaf_bytes(CardPublished(model_id=card.model_id, commitment=card.commitment,
                                         card_digest=card_digest))
    _check_inclusion("card", card_leaf, evidence.card, checkpoint)
    order = card_order_problem(evidence.card.leaf_index, evidence.certificate.leaf_index)
    if order:
        raise LogRefused(order)

    kept = pins.log(origin)
    if newest and kept is not None and kept.checkpoint is not None and checkpoint.size < kept.checkpoint.size:
        raise LogRefused(f"ROLLBACK: the log {origin!r} now shows {checkpoint.size} leaves, but it signed "
                         f"{kept.checkpoint.size} before (kept since)")
    words = _check_consistency(pins, verifier, checkpoint, evidence.checkpoint, consistency)
    for service in bindings:
        pins.bind_log(service, card.model_id, origin, verifier.vkey())
    return LogVerdict(origin, checkpoint.size, evidence.certificate.leaf_index, evidence.card.leaf_index,
                      tuple(w.name for w in witnesses), first_use, words, leaf.kind)


def _origin(signed: str) -> str:
    """The checkpoint's first line, used only to find the pinned key (the signature is checked after)."""
    origin = signed.split("\n", 1)[0]
    if not origin:
        raise LogRefused("the checkpoint has no origin line")
    return origin


def _log_verifier(pins: PinStore, origin: str, log_key: str | None,
                  fetch_log_key: Callable[[], str] | None) -> tuple[note.Verifier, bool]:
    pinned = pins.log(origin)
    if log_key is None and pinned is not None:
        log_key = pinned.verifier_key
    first_use = False
    if log_key is None:
        if fetch_log_key is None:
            raise LogRefused(f"no key is pinned for the log {origin!r}: name it with --log-key (the bank "
                             "publishes it at /v1/log/key), or verify once through the service")
        log_key, first_use = fetch_log_key(), True
    try:
        verifier = note.Verifier.from_key(log_key)
    except ValueError as exc:
        raise LogRefused(f"the log key {log_key[:60]!r} is malformed: {exc}") from None
    if verifier.name != origin:
        raise LogRefused(f"the log key is named {verifier.name!r}, the checkpoint's origin is {origin!r}")
    if pinned is not None and pinned.verifier_key != verifier.vkey():
        raise LogRefused(f"the log {origin!r} was pinned with key {pinned.verifier_key} on {pinned.first_seen}, "
                         f"now {verifier.vkey()}: a log's key never changes")
    return verifier, first_use and pinned is None


def _check_inclusion(what: str, data: bytes, inclusion: LogInclusion, checkpoint: Checkpoint) -> None:
    if inclusion.tree_size != checkpoint.size:
        raise LogRefused(f"the {what}'s inclusion is for a tree of {inclusion.tree_size} leaves, the checkpoint "
                         f"has {checkpoint.size}")
    try:
        merkle.verify_inclusion(merkle.leaf_hash(data), inclusion.leaf_index, inclusion.tree_size,
                                [bytes.fromhex(h) for h in inclusion.proof], checkpoint.root_hash)
    except merkle.InvalidProof as exc:
        raise LogRefused(f"the {what} is not in the log: {exc}") from None


def _check_consistency(pins: PinStore, verifier: note.Verifier, checkpoint: Checkpoint, signed: str,
                       consistency: ConsistencySource | None) -> str:
    """How `checkpoint` relates to the one kept; keeps it when it is newer and proven consistent."""
    origin = checkpoint.origin
    kept = pins.log(origin)
    new = KeptCheckpoint(size=checkpoint.size, root_hash=_b64(checkpoint.root_hash), checkpoint=signed)
    if kept is None or kept.checkpoint is None:
        pins.keep_checkpoint(origin, verifier.vkey(), new)
        return "first checkpoint kept for this log"
    old = kept.checkpoint
    old_root = base64.b64decode(old.root_hash)
    if old.size == checkpoint.size:
        if old_root != checkpoint.root_hash:
            raise LogRefused(f"FORK: the log {origin!r} signed two different trees of {old.size} leaves (the one "
                             "kept and this one); keep both checkpoints as evidence")
        pins.keep_checkpoint(origin, verifier.vkey(), None)
        return "same checkpoint as the one kept"
    if consistency is None:
        pins.keep_checkpoint(origin, verifier.vkey(), None)
        return (f"consistency with the kept checkpoint of {old.size} leaves not checked (the log cannot be "
                "reached: pass --log-url)")
    small, large = sorted((old.size, checkpoint.size))
    small_root, large_root = ((old_root, checkpoint.root_hash) if old.size < checkpoint.size
                              else (checkpoint.root_hash, old_root))
    proof = consistency(small, large)
    if (proof.old_size, proof.new_size) != (small, large):
        raise LogRefused(f"the log answered a consistency proof for {proof.old_size}->{proof.new_size}, "
                         f"not {small}->{large}")
    try:
        merkle.verify_consistency(small, large, small_root, large_root, [bytes.fromhex(h) for h in proof.proof])
    except merkle.InvalidProof as exc:
        raise LogRefused(f"FORK: the log {origin!r} is not consistent with the checkpoint kept ({old.size} "
                         f"leaves): {exc}") from None
    pins.keep_checkpoint(origin, verifier.vkey(), new)  # keeps the larger of the two
    if checkpoint.size > old.size:
        return f"consistent with the kept checkpoint of {old.size} leaves (now keeping {checkpoint.size})"
    return f"consistent with the newer checkpoint kept ({old.size} leaves)"


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")
