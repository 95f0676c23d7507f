"""The bank's transparency log, kept in the service database.

An RFC 9162 Merkle tree whose leaves are FairProof events (`commitments.log`).
The database holds each leaf and the hash of every complete perfect subtree,
keyed (level, index), so the root of any size and any inclusion or
consistency proof is one indexed lookup of at most 2 log2(n) rows.

Appends happen inside the caller's transaction: a certificate and its leaf,
a decision and its leaf, a published card and its leaf commit together or not
at all, so a crash can leave neither a gap nor a duplicate. Every append
first bumps the single head row, which serialises appenders on SQLite and
PostgreSQL alike; the new leaves take the indices [old size, new size).

Checkpoints are C2SP signed notes, signed with the log key the deployment
keeps outside the models directory, one per tree size, and never rewritten.

Entries are served as their leaves' canonical JSON, except the old
`certificate_issued` leaves (`commitments.log.REDACTED_KINDS`), which hold a
customer's query in their public signals: those are served redacted, their
leaf hash and kind only, so anyone can still recompute the tree but nobody
reads the query. The leaf itself stays in the database (the tree is
append-only), and its customer, who holds the data, still checks its inclusion.
"""
from __future__ import annotations

import logging
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping, Sequence

from sqlalchemy import and_, insert, or_, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from commitments.log import (REDACTED_KINDS, ConsistencyProof, Leaf, LogEntry, LogEvidence, LogInclusion,
                             leaf_bytes)
from transparency import merkle, note
from transparency.checkpoint import Checkpoint
from transparency.cosignature import CosignatureVerifier

from .database import ServiceDatabase
from .errors import BadRequest, NotFound, ServiceError
from .schema import LogCheckpoint, LogCosignature, LogHead, LogLeaf, LogNode, PublishedCard

log = logging.getLogger("fairproof.log")

MAX_ENTRIES = 1000


class LogCorrupt(ServiceError):
    """The stored tree lacks a node it must have: stop rather than sign anything."""

    status_code = 500


@dataclass(frozen=True)
class StoredCheckpoint:
    size: int
    root_hash: bytes
    note: str  # signed by the log, with every cosignature received so far


def load_or_create_log_key(path: Path, origin: str) -> note.Signer:
    """The log's signing key from `path`; a new key is written there (mode 0600) on first start."""
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        signer_key, verifier_key = note.generate_key(origin)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as handle:
            handle.write(signer_key + "\n")
        log.warning("new transparency-log key created", extra={"path": str(path), "verifier_key": verifier_key})
    try:
        return note.Signer.from_key(path.read_text().strip())
    except (OSError, ValueError) as exc:
        raise ServiceError(f"the transparency-log key {path} cannot be used: {exc}") from None


def open_transparency_log(db: ServiceDatabase, settings, *, signing: bool = True) -> "TransparencyLog":
    """The log as `settings` configure it; workers append only and never hold the signing key."""
    signer = load_or_create_log_key(settings.resolved_log_key_file, settings.log_origin) if signing else None
    try:
        witnesses = [CosignatureVerifier.from_key(k) for k in settings.witness_keys]
    except ValueError as exc:
        raise ServiceError(f"FAIRPROOF_LOG_WITNESSES: {exc}") from None
    return TransparencyLog(db, signer, witnesses)


class TransparencyLog:
    def __init__(self, db: ServiceDatabase, signer: note.Signer | None,
                 witnesses: Sequence[CosignatureVerifier] = ()):
        self.db = db
        self._signer = signer
        self.witnesses = {w.name: w for w in witnesses}

    @property
    def signer(self) -> note.Signer:
        if self._signer is None:
            raise ServiceError("this process appends to the log but does not hold its signing key")
        return self._signer

    @property
    def origin(self) -> str:
        return self.signer.name

    # ------------------------------------------------------------ appending
    def append(self, session: Session, leaves: Sequence[Leaf]) -> list[int]:
        """Append `leaves` in the caller's transaction; returns their indices."""
        if not leaves:
            return []
        session.execute(update(LogHead).where(LogHead.id == 1).values(size=LogHead.size + len(leaves))
                        .execution_options(synchronize_session=False))
        size = session.scalar(select(LogHead.size).where(LogHead.id == 1))
        start = size - len(leaves)
        frontier = merkle.root_nodes(start)
        stored = _fetch(session, frontier)
        accumulator = merkle.MerkleAccumulator.from_nodes(start, [stored[n] for n in frontier])
        leaf_rows, node_rows = [], []
        for index, leaf in enumerate(leaves, start):
            data = leaf_bytes(leaf)
            completed = accumulator.append(merkle.leaf_hash(data))
            leaf_rows.append({"idx": index, "leaf_hash": completed[0][1], "kind": leaf.kind,
                              "model_id": leaf.model_id, "data": data.decode("ascii")})
            node_rows.extend({"level": n.level, "idx": n.index, "hash": h} for n, h in completed)
        session.execute(insert(LogLeaf), leaf_rows)
        session.execute(insert(LogNode), node_rows)
        return list(range(start, size))

    # ------------------------------------------------------------ reading
    def size(self) -> int:
        with self.db.sessions() as session:
            return session.scalar(select(LogHead.size).where(LogHead.id == 1)) or 0

    def root(self, size: int) -> bytes:
        if size:
            self._check_size(size)
        with self.db.sessions() as session:
            return merkle.root(size, lambda ids: _fetch(session, ids))

    def entries(self, start: int, end: int) -> list[LogEntry]:
        """Leaves [start, end) (at most MAX_ENTRIES) as the public sees them: an old certificate leaf
        (REDACTED_KINDS) by its leaf hash and kind only, every other leaf as its canonical JSON."""
        size = self.size()
        if not 0 <= start < end <= size:
            raise BadRequest(f"entries [{start}, {end}) are not inside the log of {size} leaves")
        end = min(end, start + MAX_ENTRIES)
        with self.db.sessions() as session:
            rows = session.execute(select(LogLeaf.idx, LogLeaf.kind, LogLeaf.leaf_hash, LogLeaf.data)
                                   .where(LogLeaf.idx >= start, LogLeaf.idx < end).order_by(LogLeaf.idx)).all()
        if [r.idx for r in rows] != list(range(start, end)):
            raise LogCorrupt(f"the log is missing leaves in [{start}, {end})")
        return [LogEntry(index=r.idx, leaf_hash=bytes(r.leaf_hash).hex(), redacted=r.kind) if r.kind in REDACTED_KINDS
                else LogEntry(index=r.idx, data=r.data) for r in rows]

    def inclusion(self, index: int, tree_size: int) -> LogInclusion:
        self._check_size(tree_size)
        if not 0 <= index < tree_size:
            raise BadRequest(f"leaf {index} is not in a tree of {tree_size} leaves")
        with self.db.sessions() as session:
            path = merkle.inclusion_proof(index, tree_size, lambda ids: _fetch(session, ids))
        return LogInclusion(leaf_index=index, tree_size=tree_size, proof=tuple(h.hex() for h in path))

    def find(self, leaf_hash: bytes, tree_size: int) -> int:
        """The first index holding `leaf_hash` in the tree of `tree_size` leaves."""
        with self.db.sessions() as session:
            index = session.scalar(select(LogLeaf.idx).where(LogLeaf.leaf_hash == leaf_hash, LogLeaf.idx < tree_size)
                                   .order_by(LogLeaf.idx).limit(1))
        if index is None:
            raise NotFound(f"no leaf with hash {leaf_hash.hex()} in the first {tree_size} leaves")
        return index

    def consistency(self, old_size: int, new_size: int) -> ConsistencyProof:
        self._check_size(new_size)
        if not 0 <= old_size <= new_size:
            raise BadRequest(f"no consistency proof from {old_size} to {new_size} leaves")
        with self.db.sessions() as session:
            path = merkle.consistency_proof(old_size, new_size, lambda ids: _fetch(session, ids))
        return ConsistencyProof(old_size=old_size, new_size=new_size, proof=tuple(h.hex() for h in path))

    def _check_size(self, tree_size: int) -> None:
        size = self.size()
        if not 1 <= tree_size <= size:
            raise BadRequest(f"tree size {tree_size} is not between 1 and the log's size {size}")

    def card_leaf(self, card_digest: str) -> int:
        with self.db.sessions() as session:
            index = session.scalar(select(PublishedCard.leaf_index).where(PublishedCard.card_digest == card_digest))
        if index is None:
            raise NotFound(f"the log holds no card with digest {card_digest}")
        return index

    def evidence(self, certificate_leaf: int, card_digest: str) -> LogEvidence:
        """A certificate's and its card's inclusion against the newest checkpoint."""
        card_leaf = self.card_leaf(card_digest)
        checkpoint = self.checkpoint(at_least=max(certificate_leaf, card_leaf) + 1)
        return LogEvidence(checkpoint=checkpoint.note,
                           certificate=self.inclusion(certificate_leaf, checkpoint.size),
                           card=self.inclusion(card_leaf, checkpoint.size))

    # ------------------------------------------------------------ checkpoints
    def checkpoint(self, at_least: int = 0) -> StoredCheckpoint:
        """The newest checkpoint, signing one for the current size first if the tree has grown."""
        with self.db.sessions() as session:
            size = session.scalar(select(LogHead.size).where(LogHead.id == 1)) or 0
            latest = session.scalars(select(LogCheckpoint).order_by(LogCheckpoint.size.desc()).limit(1)).first()
            if latest is None or latest.size < size:
                root_hash = merkle.root(size, lambda ids: _fetch(session, ids))
            else:
                size, root_hash = latest.size, latest.root_hash
        if size < at_least:
            raise LogCorrupt(f"the log holds {size} leaves, fewer than the {at_least} it has appended")
        if latest is None or latest.size < size:
            body = Checkpoint(origin=self.origin, size=size, root_hash=root_hash).body()
            signed = note.sign(body, [self.signer])
            try:
                with self.db.transaction() as session:
                    session.add(LogCheckpoint(size=size, root_hash=root_hash, note=signed))
                log.info("checkpoint signed", extra={"size": size, "root": root_hash.hex()})
            except IntegrityError:
                pass  # another worker signed this size first: serve theirs (same root, same body)
        return self.stored_checkpoint(size)

    def stored_checkpoint(self, size: int) -> StoredCheckpoint:
        with self.db.sessions() as session:
            row = session.get(LogCheckpoint, size)
            if row is None:
                raise NotFound(f"the log signed no checkpoint of size {size}")
            lines = session.scalars(select(LogCosignature.line).where(LogCosignature.size == size)
                                    .order_by(LogCosignature.witness)).all()
            return StoredCheckpoint(row.size, row.root_hash, row.note + "".join(lines))

    def add_cosignature(self, signed: str) -> StoredCheckpoint:
        """Keep a witness's cosignature of a checkpoint this log signed (witnesses configured only)."""
        if not self.witnesses:
            raise BadRequest("this log accepts no cosignatures: no witness keys are configured")
        try:
            opened = note.open(signed, [self.signer.verifier(), *self.witnesses.values()])
            body = Checkpoint.parse(opened.text)
        except ValueError as exc:
            raise BadRequest(f"cosigned checkpoint refused: {exc}") from None
        with self.db.sessions() as session:
            row = session.get(LogCheckpoint, body.size)
            if row is None or row.root_hash != body.root_hash:
                raise BadRequest(f"this log signed no checkpoint of size {body.size} with that root hash")
        witnessed = [s for s in opened.verified if s.name in self.witnesses]
        if not witnessed:
            raise BadRequest("the checkpoint carries no cosignature by a configured witness")
        for signature in witnessed:
            try:
                with self.db.transaction() as session:
                    session.add(LogCosignature(size=body.size, witness=signature.name, line=signature.line()))
            except IntegrityError:
                pass  # this witness cosigned this size before
        return self.stored_checkpoint(body.size)


def _fetch(session: Session, ids: Sequence[merkle.NodeId]) -> Mapping[merkle.NodeId, bytes]:
    if not ids:
        return {}
    wanted = sorted(set(ids))
    by_level: dict[int, list[int]] = {}
    for node in wanted:
        by_level.setdefault(node.level, []).append(node.index)
    # One term per level: both databases search the primary key with it (SQLite scans the whole
    # table for a row-value IN), and the expression stays shallow however large the tree.
    rows = session.execute(select(LogNode.level, LogNode.idx, LogNode.hash)
                           .where(or_(*(and_(LogNode.level == level, LogNode.idx.in_(indices))
                                        for level, indices in by_level.items())))).all()
    found = {merkle.NodeId(r.level, r.idx): bytes(r.hash) for r in rows}
    if len(found) != len(wanted):
        missing = next(n for n in wanted if n not in found)
        raise LogCorrupt(f"the log's node store lacks subtree {tuple(missing)}")
    return found
