"""Trust on first use for model commitments: one model per service and model id.

A fairness certificate only means something if every customer is judged by
the same model. The first time a customer sees a model card from a service,
its commitment is pinned in a local file; from then on a card for the same
(service, model id) with another commitment is refused, so a bank cannot
quietly serve different weights to different customers or swap the model
between two decisions. A card whose commitment is unchanged but whose digest
differs (other preprocessing, box or scale under the same weights, or other
circuit keys) is refused too: it would change what the certificate means for
the same record, or which keys its proofs are checked with. Only the user can
accept such a card (`accept_update`).

The file also lists the phase-2 contribution hashes the customer trusts, and
for each transparency log the customer has checked: its pinned verifier key
and the newest checkpoint seen (kept only once proven consistent with the one
before, so a fork is detected on the next check).

The pin file is JSON, written atomically (a temporary file renamed over the
old one) with mode 0600; a pin is never overwritten. Unreadable or corrupt
files are reported, never replaced.
"""
from __future__ import annotations

import contextlib
import json
import os
import tempfile
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Final, Iterator, Literal
from urllib.parse import urlsplit, urlunsplit

from pydantic import BaseModel, ConfigDict, ValidationError

from commitments.card import ModelCard

PIN_FILE_ENV = "FAIRPROOF_PIN_FILE"
PIN_FILE_VERSION: Final = 1  # Final: its type is Literal[1], the version field's
_DEFAULT_PORTS = {"http": 80, "https": 443}


class PinError(Exception):
    """Base of the pin store's errors."""


class PinFileError(PinError):
    """The pin file cannot be read or written."""


class PinMismatch(PinError):
    """The service presents a model other than the one pinned for it."""


class Pin(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    service: str  # normalised base URL
    model_id: str
    commitment: str
    card_digest: str
    first_seen: str  # ISO 8601, UTC


class KeptCheckpoint(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    size: int
    root_hash: str  # base64, as the checkpoint writes it
    checkpoint: str  # the signed note, kept as evidence


class PinnedLog(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    origin: str
    verifier_key: str
    first_seen: str
    checkpoint: KeptCheckpoint | None = None


class _PinFile(BaseModel):
    model_config = ConfigDict(extra="forbid")

    version: Literal[1] = PIN_FILE_VERSION
    pins: list[Pin] = []
    # Phase-2 contribution hashes the customer trusts (see fairproof-verify --trust-contributor).
    trusted_contributors: list[str] = []
    # Transparency logs: pinned key and newest consistent checkpoint, per origin.
    logs: list[PinnedLog] = []


@dataclass(frozen=True)
class PinCheck:
    pin: Pin
    first_use: bool  # True when this call pinned the model
    updated: bool = False  # True when this call accepted a new card for the pinned commitment


def default_pin_file() -> Path:
    env = os.environ.get(PIN_FILE_ENV)
    if env:
        return Path(env).expanduser()
    return Path.home() / ".config" / "fairproof" / "pins.json"


LOOPBACK_HOSTS = ("localhost", "127.0.0.1", "::1")


def pin_origin(url: str) -> str:
    """The service a pin is about: its normalised URL, with this machine's loopback spellings
    (localhost, 127.0.0.1, ::1) as one, so that they are not two first uses of one service."""
    parts = urlsplit(normalise_service_url(url))
    host = parts.hostname or ""
    if host in LOOPBACK_HOSTS:
        host = "localhost"
    elif ":" in host:
        host = f"[{host}]"
    netloc = host if parts.port is None else f"{host}:{parts.port}"
    return urlunsplit((parts.scheme, netloc, parts.path, "", ""))


def normalise_service_url(url: str) -> str:
    """One spelling per service: lower-case scheme and host, no default port, no trailing slash,
    no query or fragment."""
    parts = urlsplit(url.strip())
    scheme = parts.scheme.lower()
    if scheme not in _DEFAULT_PORTS or not parts.hostname:
        raise ValueError(f"service URL {url!r} must be an http:// or https:// URL with a host")
    host = parts.hostname.lower()
    if ":" in host:
        host = f"[{host}]"  # IPv6 literal
    try:
        port = parts.port
    except ValueError:
        raise ValueError(f"service URL {url!r} has an invalid port") from None
    netloc = host if port in (None, _DEFAULT_PORTS[scheme]) else f"{host}:{port}"
    return urlunsplit((scheme, netloc, parts.path.rstrip("/"), "", ""))


class PinStore:
    """Pins of (service URL, model id) -> commitment, in one JSON file."""

    def __init__(self, path: str | os.PathLike[str] | None = None):
        self.path = Path(path).expanduser() if path is not None else default_pin_file()

    def pins(self) -> list[Pin]:
        return list(self._read().pins)

    def get(self, service_url: str, model_id: str) -> Pin | None:
        service = pin_origin(service_url)
        return next((p for p in self._read().pins if (pin_origin(p.service), p.model_id) == (service, model_id)),
                    None)

    def trusted_contributors(self) -> list[str]:
        """The contribution hashes this file trusts (none if the file does not exist)."""
        return [h.lower() for h in self._read().trusted_contributors]

    def check(self, service_url: str, card: ModelCard, *, accept_update: bool = False) -> PinCheck:
        """Pin `card` on first use; refuse a card that differs from the pinned one (PinMismatch).

        With `accept_update`, a card with the pinned commitment but another
        digest (for instance a new circuit bucket) replaces the pinned digest;
        a different commitment is never accepted this way.
        """
        service = pin_origin(service_url)
        with self._locked():
            data = self._read()
            pinned = next((p for p in data.pins if (pin_origin(p.service), p.model_id) == (service, card.model_id)),
                          None)
            if pinned is not None:
                if accept_update and card.commitment == pinned.commitment and card.digest() != pinned.card_digest:
                    updated = pinned.model_copy(update={"card_digest": card.digest()})
                    data.pins[data.pins.index(pinned)] = updated
                    self._write(data)
                    return PinCheck(updated, first_use=False, updated=True)
                _check_against(pinned, card, self.path)
                return PinCheck(pinned, first_use=False)
            pin = Pin(service=service, model_id=card.model_id, commitment=card.commitment,
                      card_digest=card.digest(), first_seen=datetime.now(timezone.utc).isoformat(timespec="seconds"))
            data.pins.append(pin)
            self._write(data)
            return PinCheck(pin, first_use=True)

    def log(self, origin: str) -> PinnedLog | None:
        return next((log for log in self._read().logs if log.origin == origin), None)

    def keep_checkpoint(self, origin: str, verifier_key: str, checkpoint: KeptCheckpoint | None) -> PinnedLog:
        """Pin the log's key on first use, and keep `checkpoint` as its newest (callers check consistency).

        A pinned key is never replaced; a kept checkpoint is replaced only by a larger one.
        """
        with self._locked():
            data = self._read()
            pinned = next((log for log in data.logs if log.origin == origin), None)
            if pinned is not None and pinned.verifier_key != verifier_key:
                raise PinMismatch(f"the log {origin!r} is pinned with key {pinned.verifier_key}, not {verifier_key}")
            if pinned is None:
                pinned = PinnedLog(origin=origin, verifier_key=verifier_key,
                                   first_seen=datetime.now(timezone.utc).isoformat(timespec="seconds"))
                data.logs.append(pinned)
            kept = pinned.checkpoint
            if checkpoint is not None and (kept is None or checkpoint.size > kept.size):
                updated = pinned.model_copy(update={"checkpoint": checkpoint})
                data.logs[data.logs.index(pinned)] = updated
                pinned = updated
            self._write(data)
            return pinned

    # -- file handling ----------------------------------------------------------------

    def _read(self) -> _PinFile:
        try:
            text = self.path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return _PinFile()
        except (OSError, UnicodeDecodeError) as exc:
            raise PinFileError(f"cannot read pin file {self.path}: {getattr(exc, 'strerror', None) or exc}") from None
        try:
            data = _PinFile.model_validate_json(text)
        except ValidationError as exc:
            err = exc.errors()[0]
            where = ".".join(str(p) for p in err.get("loc", ())) or "document"
            raise PinFileError(f"pin file {self.path} is corrupt ({where}: {err.get('msg')}); "
                               "repair or remove it (removing it forgets every pinned model)") from None
        keys = [(p.service, p.model_id) for p in data.pins]
        if len(set(keys)) != len(keys):
            raise PinFileError(f"pin file {self.path} is corrupt (a model is pinned twice); repair or remove it")
        origins = [log.origin for log in data.logs]
        if len(set(origins)) != len(origins):
            raise PinFileError(f"pin file {self.path} is corrupt (a log is pinned twice); repair or remove it")
        return data

    def _write(self, data: _PinFile) -> None:
        text = json.dumps(data.model_dump(mode="json"), indent=2, sort_keys=True) + "\n"
        try:
            self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(prefix=f".{self.path.name}.", suffix=".tmp", dir=self.path.parent)
            try:
                with os.fdopen(fd, "w", encoding="utf-8") as f:  # mkstemp creates it 0600
                    f.write(text)
                    f.flush()
                    os.fsync(f.fileno())
                os.chmod(tmp, 0o600)
                os.replace(tmp, self.path)
            except BaseException:
                with contextlib.suppress(OSError):
                    os.unlink(tmp)
                raise
        except OSError as exc:
            raise PinFileError(f"cannot write pin file {self.path}: {exc.strerror or exc}") from None

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        """Serialise read-modify-write between processes (POSIX advisory lock; elsewhere, none)."""
        try:
            import fcntl
        except ImportError:  # pragma: no cover - not POSIX
            yield
            return
        try:
            self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            fd = os.open(self.path.with_name(self.path.name + ".lock"), os.O_RDWR | os.O_CREAT, 0o600)
        except OSError as exc:
            raise PinFileError(f"cannot lock pin file {self.path}: {exc.strerror or exc}") from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)  # releases the lock


def _check_against(pinned: Pin, card: ModelCard, path: Path) -> None:
    where = f"model {card.model_id!r} at {pinned.service}"
    if card.commitment != pinned.commitment:
        raise PinMismatch(
            f"{where} now presents commitment {card.commitment}, but commitment {pinned.commitment} was pinned "
            f"on {pinned.first_seen}: the bank is serving a different model than before. If the bank announced "
            f"a new model, remove its entry from {path} to trust the new one."
        )
    if card.digest() != pinned.card_digest:
        raise PinMismatch(
            f"{where} keeps commitment {pinned.commitment[:16]}... but its card changed (digest "
            f"{card.digest()} instead of {pinned.card_digest}, pinned on {pinned.first_seen}): preprocessing, "
            f"input box, scale, sensitive domains or circuit keys differ. If the bank announced this, rerun with "
            f"--accept-card-update (or remove its entry from {path})."
        )
