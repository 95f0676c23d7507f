"""A witness: cosigns a log's checkpoints, each only if it extends the last one it cosigned.

A customer who trusts a witness need not keep every checkpoint: if the
witness cosigned it, the witness saw it, and never cosigns two views of one
log that are not consistent. So the witness

- opens the checkpoint with the log's key (pinned in its state file) and
  requires the log's own origin;
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
from pathlib import Path
from typing import Callable, Literal

from pydantic import BaseModel, ConfigDict, ValidationError

from commitments.log import ConsistencyProof, SignedCheckpoint
from transparency import merkle, note
from transparency.checkpoint import Checkpoint, CheckpointError
from transparency.cosignature import CosignatureSigner, CosignatureVerifier

from .monitor import write_atomically
from .service_client import ServiceClient

ConsistencySource = Callable[[int, int], ConsistencyProof]


class WitnessError(Exception):
    """The witness cannot work: unusable key, state or input (one line)."""


class WitnessRefused(WitnessError):
    """The checkpoint is not one an honest log could show after the last one cosigned."""


class CosignedCheckpoint(BaseModel):
    """What the witness keeps: the log it follows and the last checkpoint it cosigned."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    version: Literal[1] = 1
    origin: str
    log_key: str
    size: int
    root_hash: str  # base64, as the checkpoint writes it
    checkpoint: str  # the note as returned, with this witness's cosignature
    timestamp: int


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


class Witness:
    def __init__(self, signer: CosignatureSigner, log_verifier: note.Verifier, state_path: Path,
                 clock: Callable[[], float] = time.time):
        self.signer = signer
        self.log_verifier = log_verifier
        self.state_path = Path(state_path)
        self.clock = clock
        last = read_state(self.state_path)
        if last is not None and (last.origin, last.log_key) != (log_verifier.name, log_verifier.vkey()):
            raise WitnessError(f"the witness state {self.state_path} follows the log {last.origin!r} with key "
                               f"{last.log_key}, not {log_verifier.vkey()}")

    @property
    def verifier(self) -> CosignatureVerifier:
        return self.signer.verifier()

    def last(self) -> CosignedCheckpoint | None:
        return read_state(self.state_path)

    def cosign(self, signed_checkpoint: str, consistency: ConsistencySource) -> str:
        """`signed_checkpoint` with this witness's cosignature appended; WitnessRefused if it must not be."""
        text, checkpoint = self._open(signed_checkpoint)
        last = self.last()
        if last is not None:
            self._check_extends(last, checkpoint, consistency)
        timestamp = int(self.clock())
        cosigned = signed_checkpoint + self.signer.cosign(text, timestamp)
        write_atomically(self.state_path, CosignedCheckpoint(
            origin=checkpoint.origin, log_key=self.log_verifier.vkey(), size=checkpoint.size,
            root_hash=base64.b64encode(checkpoint.root_hash).decode("ascii"), checkpoint=cosigned,
            timestamp=timestamp).model_dump_json(indent=2) + "\n")
        return cosigned

    def _open(self, signed: str) -> tuple[str, Checkpoint]:
        """The note's text and checkpoint; refused unless the log's key signed it for its own origin."""
        try:
            opened = note.open(signed, [self.log_verifier])
            checkpoint = Checkpoint.parse(opened.text)
        except note.UnverifiedNote:
            raise WitnessRefused(f"the checkpoint is not signed by the log key {self.log_verifier.vkey()}") from None
        except (note.NoteError, CheckpointError) as exc:
            raise WitnessRefused(f"the checkpoint is malformed or mis-signed: {exc}") from None
        if checkpoint.origin != self.log_verifier.name:
            raise WitnessRefused(f"the checkpoint names origin {checkpoint.origin!r}, the log is "
                                 f"{self.log_verifier.name!r}")
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
