"""The log's identity and signed trees: the pinned key, checkpoints opened under it, and their consistency."""
from __future__ import annotations

import base64
from dataclasses import dataclass

from commitments.log import LogKey
from transparency import merkle, note
from transparency.checkpoint import Checkpoint, CheckpointError

from ..pins import KeptCheckpoint
from ..service_client import ServiceClient
from .errors import MonitorError, Violation


def log_identity_problem(service: str, pinned_origin: str, pinned_key: str, pinned_at: str | None,
                         origin: str, key: str | None = None) -> str | None:
    """Why a service presenting its log as `origin` (under `key`, when known) is not the log pinned for
    it, or None. The monitor and the witness say it in the same words."""
    if origin == pinned_origin and (key is None or key == pinned_key):
        return None
    since = f"since {pinned_at} " if pinned_at else ""
    presented = f"{origin!r} with key {key}" if key is not None else f"{origin!r}"
    return (f"the service {service} publishes its log as {pinned_origin!r} (pinned {since}with key {pinned_key}), "
            f"not {presented}")


def parse_log_key(vkey: str) -> note.Verifier:
    try:
        return note.Verifier.from_key(vkey.strip())
    except ValueError as exc:
        raise MonitorError(f"log key {vkey[:60]!r} is malformed: {exc}") from None


def fetch_log_key(client: ServiceClient) -> note.Verifier:
    """The key the service names for its log (trusted on first use only)."""
    return log_key_verifier(client.log_key())


def log_key_verifier(served: LogKey) -> note.Verifier:
    """The verifier of a /v1/log/key answer; MonitorError unless the key parses and is named after the origin."""
    verifier = parse_log_key(served.verifier_key)
    if verifier.name != served.origin:
        raise MonitorError(f"the service names origin {served.origin!r} but its key is named {verifier.name!r}")
    return verifier


def canonical_key(vkey: str) -> str:
    """A verifier key in its one spelling (as `note.Verifier.vkey` writes it), or as given if it does not parse."""
    try:
        return note.Verifier.from_key(vkey.strip()).vkey()
    except ValueError:
        return vkey.strip()


def claimed_origin(signed: str) -> str | None:
    """The origin a signed checkpoint names, read before (and whatever) its signatures verify; None when
    it is not a checkpoint at all."""
    try:
        opened = note.open(signed, [])
    except note.UnverifiedNote as unverified:
        text = unverified.note.text
    except note.NoteError:
        return None
    else:  # pragma: no cover - no verifier, nothing verifies
        text = opened.text
    try:
        return Checkpoint.parse(text).origin
    except CheckpointError:
        return None


def open_checkpoint(signed: str, verifier: note.Verifier, what: str = "the checkpoint") -> Checkpoint:
    """The checkpoint in `signed`, which the pinned key must have signed for its own origin."""
    try:
        opened = note.open(signed, [verifier])
        checkpoint = Checkpoint.parse(opened.text)
    except note.UnverifiedNote:
        origin = claimed_origin(signed)
        if origin is not None and origin != verifier.name:  # another log, under a key of its own
            raise Violation([f"{what} names origin {origin!r}, the pinned log is {verifier.name!r}"],
                            {"served": signed}) from None
        raise Violation([f"{what} is not signed by the pinned log key {verifier.vkey()}"],
                        {"served": signed}) from None
    except note.BadSignature as exc:
        raise Violation([f"{what} carries a bad signature under the pinned log key: {exc}"],
                        {"served": signed}) from None
    except (note.NoteError, CheckpointError) as exc:
        raise MonitorError(f"{what} is malformed: {exc}") from None
    if checkpoint.origin != verifier.name:
        raise Violation([f"{what} names origin {checkpoint.origin!r}, the pinned log is {verifier.name!r}"],
                        {"served": signed})
    return checkpoint


@dataclass(frozen=True)
class SignedTree:
    """A checkpoint opened under the pinned key, with the note that signs it (the evidence)."""

    size: int
    root: bytes
    note: str

    @classmethod
    def of(cls, checkpoint: Checkpoint, signed: str) -> SignedTree:
        return cls(checkpoint.size, checkpoint.root_hash, signed)

    @classmethod
    def kept(cls, kept: KeptCheckpoint) -> SignedTree:
        return cls(kept.size, base64.b64decode(kept.root_hash), kept.checkpoint)


def check_consistent(old: SignedTree, new: SignedTree, client: ServiceClient, origin: str) -> None:
    """Violation unless `old` and `new` are two views of one append-only log (either may be the larger)."""
    evidence = {"kept": old.note, "served": new.note}
    if new.size == old.size:
        if new.root != old.root:
            raise Violation([f"FORK: the log {origin!r} signed two different trees of {old.size} leaves"], evidence)
        return
    small, large = (old, new) if old.size < new.size else (new, old)
    if small.size == 0:
        if small.root != merkle.EMPTY_ROOT:
            raise Violation([f"FORK: the log {origin!r} signed an empty tree with a non-empty root"], evidence)
        return
    proof = client.consistency(small.size, large.size)
    if (proof.old_size, proof.new_size) != (small.size, large.size):
        raise MonitorError(f"asked for a consistency proof {small.size}->{large.size}, "
                           f"got {proof.old_size}->{proof.new_size}")
    try:
        merkle.verify_consistency(small.size, large.size, small.root, large.root,
                                  [bytes.fromhex(h) for h in proof.proof])
    except merkle.InvalidProof as exc:
        raise Violation([f"FORK: the log {origin!r} of {large.size} leaves is not an extension of its tree of "
                         f"{small.size} leaves: {exc}"], evidence) from None


def check_against_kept(kept: KeptCheckpoint | None, served: SignedTree, client: ServiceClient, origin: str) -> None:
    """Rollback, fork or consistency of the served checkpoint with the one kept from the last run."""
    if kept is None:
        return
    if served.size < kept.size:
        raise Violation([f"ROLLBACK: the log {origin!r} serves a tree of {served.size} leaves after signing one "
                         f"of {kept.size}"], {"kept": kept.checkpoint, "served": served.note})
    check_consistent(SignedTree.kept(kept), served, client, origin)

