"""A witness: cosigns a log's checkpoints, each only if it extends the last one it cosigned.

A customer who trusts a witness need not keep every checkpoint: if the
witness cosigned it, the witness saw it, and never cosigns two views of one
log that are not consistent.

The log belongs to the service. A bank holds its service and its log key, so
it could serve, from the same URL, a fresh log under a fresh origin and key
(a private log holding one customer's certificate); were logs pinned per
origin, that would be a log the witness had never seen, cosigned on first
use, and a customer trusting the witness would accept it. So the witness
keeps one state file per service URL (`service_state_path`: the
`verifier_client.pins.pin_origin` spelling, so localhost and 127.0.0.1 are
one service), which pins the log's origin and key on the first cosignature;
from then on a service presenting another origin or key, in /v1/log/key or
in its checkpoint, is refused (`pin_log`, `Witness`). A state file of the
old layout (one per origin, `legacy_state_path`) is adopted on the first run
for a service that serves exactly its origin: its key and last cosigned
checkpoint carry over, and the key must still match.

For each checkpoint the witness

- opens it with the log's key (pinned in its state file) and requires the
  log's own origin;
- compares it with the last checkpoint it cosigned: a smaller tree is a
  rollback and the same size with another root a fork, both refused; a larger
  tree needs an RFC 9162 consistency proof, which must verify;
- cosigns it (C2SP tlog-cosignature/v1, with the current time) and returns the
  note with its cosignature line appended;
- keeps the cosigned checkpoint in its state file only then, atomically.

No HTTP here: `consistency` fetches proofs, and the caller posts the result
(see `fairproof witness cosign`, or `WitnessClient.add_cosignature`).
"""
from __future__ import annotations

import base64
import time
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Callable, Literal

from pydantic import BaseModel, ConfigDict, ValidationError

from commitments.log import ConsistencyProof, LogKey, SignedCheckpoint
from transparency import merkle, note
from transparency.checkpoint import Checkpoint, CheckpointError
from transparency.cosignature import CosignatureSigner, CosignatureVerifier

from .monitor import (MonitorError, canonical_key, claimed_origin, log_identity_problem, log_key_verifier,
                      sanitise_origin, service_name, write_atomically)
from .pins import pin_origin
from .service_client import ServiceClient

ConsistencySource = Callable[[int, int], ConsistencyProof]


class WitnessError(Exception):
    """The witness cannot work: unusable key, state or input (one line)."""


class WitnessRefused(WitnessError):
    """The checkpoint is not one an honest log could show after the last one cosigned."""


class CosignedCheckpoint(BaseModel):
    """What the witness keeps: the service, the log it publishes and the last checkpoint it cosigned."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    version: Literal[1] = 1
    origin: str
    log_key: str
    size: int
    root_hash: str  # base64, as the checkpoint writes it
    checkpoint: str  # the note as returned, with this witness's cosignature
    timestamp: int
    # The service whose log this is (pin_origin spelling) and when its origin and key were pinned;
    # None in a state file of the old, per-origin layout.
    service: str | None = None
    key_pinned_at: str | None = None


def service_state_path(directory: Path, service_url: str) -> Path:
    """The state file of the log `service_url` publishes: DIR/<service>.json (`monitor.service_name`)."""
    try:
        return Path(directory) / f"{service_name(service_url)}.json"
    except MonitorError as exc:
        raise WitnessError(str(exc)) from None


def legacy_state_path(directory: Path, origin: str) -> Path:
    """The state file of the old layout, one per log origin: DIR/<origin>.json."""
    return Path(directory) / f"{sanitise_origin(origin)}.json"


def read_state(path: Path) -> CosignedCheckpoint | None:
    """The witness's state file, or None before its first cosignature."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as exc:
        raise WitnessError(f"cannot read the witness state {path}: {getattr(exc, 'strerror', None) or exc}") from None
    try:
        state = CosignedCheckpoint.model_validate_json(text)
        if len(note.b64decode_strict(state.root_hash)) != merkle.HASH_SIZE:
            raise WitnessError(f"the witness state {path} is corrupt: its root hash is not 32 bytes")
        return state
    except ValidationError as exc:
        raise WitnessError(f"the witness state {path} is corrupt: {exc.errors()[0].get('msg')}") from None
    except note.NoteError as exc:
        raise WitnessError(f"the witness state {path} is corrupt: {exc}") from None


@dataclass(frozen=True)
class PinnedLog:
    """The log a witness follows for one service (see `pin_log`)."""

    verifier: note.Verifier  # the log's key, named after its origin
    state_path: Path  # the service's state file (written on the next cosignature)
    adopted_from: Path | None  # the old-layout file the state is taken from, until then
    first_use: bool  # the key is the one the service names, seen for the first time


def _identity(pinned: CosignedCheckpoint) -> tuple[str, str, str | None]:
    return pinned.origin, pinned.log_key, pinned.key_pinned_at


def pin_log(directory: Path, service_url: str, served: LogKey, named: note.Verifier | None = None) -> PinnedLog:
    """The log this witness follows for `service_url`, whose /v1/log/key answers `served`.

    The service's state file pins an origin and key; before its first cosignature, an old-layout state
    file pinning exactly the served origin is adopted. With neither, the log is the one `named` (the
    witness's --log-key) or, on first use, the one the service names. WitnessRefused when the service
    names another origin or key than the pinned ones (or than `named`); WitnessError when `named` is
    not the pinned key, or on first use when the service's answer is not a key named after its origin.
    """
    served_key = canonical_key(served.verifier_key)
    state_path = service_state_path(directory, service_url)
    last = read_state(state_path)
    adopted_from = None
    if last is None:
        origin = named.name if named is not None else served.origin
        legacy = legacy_state_path(directory, origin)
        old = read_state(legacy)
        if old is not None and old.origin == origin:
            last, adopted_from = old, legacy
    if last is None:
        if named is None:
            try:
                return PinnedLog(log_key_verifier(served), state_path, None, True)
            except MonitorError as exc:
                raise WitnessError(str(exc)) from None
        problem = log_identity_problem(service_url, named.name, named.vkey(), None, served.origin, served_key)
        if problem:
            raise WitnessRefused(problem)
        return PinnedLog(named, state_path, None, False)
    where = adopted_from or state_path
    try:
        pinned = note.Verifier.from_key(last.log_key)
    except ValueError as exc:
        raise WitnessError(f"the witness state {where} is corrupt: its log key: {exc}") from None
    if pinned.name != last.origin:
        raise WitnessError(f"the witness state {where} is corrupt: its log key is not named after its origin")
    if named is not None and named.vkey() != pinned.vkey():
        raise WitnessError(f"{where} pins the log key {pinned.vkey()}, not {named.vkey()}")
    problem = log_identity_problem(service_url, *_identity(last), served.origin, served_key)
    if problem:
        raise WitnessRefused(problem)
    return PinnedLog(pinned, state_path, adopted_from, False)


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


class Witness:
    """Cosigns the checkpoints of one log, keeping the last one in `state_path`.

    With `service` (the URL the log is fetched from), the state records the service, and a checkpoint
    naming another origin than the pinned one is refused as the service presenting another log. With
    `adopted_from` (an old-layout state file, see `pin_log`), the last cosigned checkpoint is read from
    there until this witness's first cosignature writes `state_path`.
    """

    def __init__(self, signer: CosignatureSigner, log_verifier: note.Verifier, state_path: Path,
                 clock: Callable[[], float] = time.time, *, service: str | None = None,
                 adopted_from: Path | None = None):
        self.signer = signer
        self.log_verifier = log_verifier
        self.state_path = Path(state_path)
        self.adopted_from = Path(adopted_from) if adopted_from is not None else None
        if service is not None:
            try:
                pin_origin(service)
            except ValueError as exc:
                raise WitnessError(str(exc)) from None
        self.service = service
        self.clock = clock
        last = self.last()
        if last is not None and (last.origin, last.log_key) != (log_verifier.name, log_verifier.vkey()):
            raise WitnessError(f"the witness state {self._source()} follows the log {last.origin!r} with key "
                               f"{last.log_key}, not {log_verifier.vkey()}")

    @property
    def verifier(self) -> CosignatureVerifier:
        return self.signer.verifier()

    def _source(self) -> Path:
        if self.adopted_from is not None and not self.state_path.exists():
            return self.adopted_from
        return self.state_path

    def last(self) -> CosignedCheckpoint | None:
        last = read_state(self.state_path)
        if last is None and self.adopted_from is not None:
            return read_state(self.adopted_from)
        return last

    def cosign(self, signed_checkpoint: str, consistency: ConsistencySource) -> str:
        """`signed_checkpoint` with this witness's cosignature appended; WitnessRefused if it must not be."""
        last = self.last()
        text, checkpoint = self._open(signed_checkpoint, last)
        if last is not None:
            self._check_extends(last, checkpoint, consistency)
        timestamp = int(self.clock())
        cosigned = signed_checkpoint + self.signer.cosign(text, timestamp)
        service = pin_origin(self.service) if self.service is not None else (last.service if last else None)
        pinned_at = last.key_pinned_at if last is not None else _now()
        write_atomically(self.state_path, CosignedCheckpoint(
            origin=checkpoint.origin, log_key=self.log_verifier.vkey(), size=checkpoint.size,
            root_hash=base64.b64encode(checkpoint.root_hash).decode("ascii"), checkpoint=cosigned,
            timestamp=timestamp, service=service, key_pinned_at=pinned_at).model_dump_json(indent=2) + "\n")
        return cosigned

    def _another_log(self, origin: str, last: CosignedCheckpoint | None) -> WitnessRefused:
        """A checkpoint for `origin`, not the pinned log's."""
        if self.service is not None:
            pinned = _identity(last) if last is not None else (self.log_verifier.name, self.log_verifier.vkey(),
                                                                None)
            problem = log_identity_problem(self.service, *pinned, origin)
            if problem:
                return WitnessRefused(problem)
        return WitnessRefused(f"the checkpoint names origin {origin!r}, the log is {self.log_verifier.name!r}")

    def _open(self, signed: str, last: CosignedCheckpoint | None) -> tuple[str, Checkpoint]:
        """The note's text and checkpoint; refused unless the log's key signed it for its own origin."""
        try:
            opened = note.open(signed, [self.log_verifier])
            checkpoint = Checkpoint.parse(opened.text)
        except note.UnverifiedNote:
            origin = claimed_origin(signed)
            if origin is not None and origin != self.log_verifier.name:
                raise self._another_log(origin, last) from None
            raise WitnessRefused(f"the checkpoint is not signed by the log key {self.log_verifier.vkey()}") from None
        except (note.NoteError, CheckpointError) as exc:
            raise WitnessRefused(f"the checkpoint is malformed or mis-signed: {exc}") from None
        if checkpoint.origin != self.log_verifier.name:
            raise self._another_log(checkpoint.origin, last)
        return opened.text, checkpoint

    @staticmethod
    def _check_extends(last: CosignedCheckpoint, new: Checkpoint, consistency: ConsistencySource) -> None:
        old_root = base64.b64decode(last.root_hash)
        if new.size < last.size:
            raise WitnessRefused(f"ROLLBACK: the log shows {new.size} leaves after this witness cosigned {last.size}")
        if new.size == last.size:
            if new.root_hash != old_root:
                raise WitnessRefused(f"FORK: the log shows another tree of {new.size} leaves than the one "
                                     "this witness cosigned")
            return
        if last.size == 0:
            return
        proof = consistency(last.size, new.size)
        if (proof.old_size, proof.new_size) != (last.size, new.size):
            raise WitnessRefused(f"asked for a consistency proof {last.size}->{new.size}, "
                                 f"got {proof.old_size}->{proof.new_size}")
        try:
            merkle.verify_consistency(last.size, new.size, old_root, new.root_hash,
                                      [bytes.fromhex(h) for h in proof.proof])
        except merkle.InvalidProof as exc:
            raise WitnessRefused(f"FORK: the tree of {new.size} leaves does not extend the one of {last.size} "
                                 f"leaves this witness cosigned: {exc}") from None


class WitnessClient(ServiceClient):
    """The service client with the one call only witnesses make."""

    def add_cosignature(self, cosigned: str) -> SignedCheckpoint:
        """POST /v1/log/cosignatures: the log keeps and serves the cosignature (configured witnesses only)."""
        return self._call("POST", "/log/cosignatures", SignedCheckpoint, json={"checkpoint": cosigned})
