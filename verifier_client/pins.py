"""The customer's trust roots on disk: pinned cards, trusted auditors and contributors, and logs.

A fairness certificate only means something if every customer is judged by
the same model. The first time a customer sees a model card, from a service
or as a file, it is pinned in a local file, and the verifier says so; from
then on a card for the same model id (and, from a service, the same service)
that differs is refused:

- another commitment: the bank serves different weights;
- the same commitment, another digest: preprocessing, box, labels, a bucket's
  radius kind or cap, or the keys differ, which changes what a certificate
  says for the same record.

A differing card is accepted, and re-pinned, only when an auditor the
customer trusts attested it (commitments.attestation), or when the customer
accepts it (`accept_update`) and the only change is buckets ADDED to the
pinned card (verifier_client.card_update); the verifier says which.

The file also lists the auditors (verifier keys) and phase-2 contribution
hashes the customer trusts, and for the transparency logs: each log's
pinned verifier key and newest checkpoint seen (kept only once proven
consistent with the one before), and which log each service, and each
pinned model, publishes to. The log belongs to the service: a service (or
model) that later presents another log origin or key is refused, never
taken as a first use.

The pin file is JSON, written atomically (a temporary file renamed over the
old one) with mode 0600; a pin is never silently overwritten. Unreadable or
corrupt files are reported, never replaced.
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

from commitments.canonical import NonCanonical
from commitments.card import ModelCard
from commitments.card_migration import is_legacy, legacy_digest, migrate

from .card_update import CardChanges, card_changes

PIN_FILE_ENV = "FAIRPROOF_PIN_FILE"
FILE_MODE = "file"  # the service a card verified from files is pinned under
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
    card_json: str | None = None  # the pinned card itself (canonical JSON), to say what a new card changes
    pinned_by: str = "first use"  # "first use", "attested by NAME[, NAME]" or "accepted: added BUCKET..."
    updated: str | None = None  # ISO 8601, UTC: when the card was last re-pinned
    log_origin: str | None = None  # the log this model's certificates are in, once one was checked
    log_key: str | None = None

    def pinned_card(self) -> ModelCard | None:
        """The pinned card, if the pin keeps it (pins written before it did keep only the digest)."""
        if self.card_json is None:
            return None
        try:
            return migrate(self.card_json) if is_legacy(self.card_json) else ModelCard.from_json(self.card_json)
        except NonCanonical:
            return None


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


class ServiceLog(BaseModel):
    """The log a service publishes: pinned on the first log evidence checked from it."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    service: str
    origin: str
    verifier_key: str
    first_seen: str


class _PinFile(BaseModel):
    model_config = ConfigDict(extra="forbid")

    version: Literal[1] = PIN_FILE_VERSION
    pins: list[Pin] = []
    # Phase-2 contribution hashes the customer trusts (see fairproof-verify --trust-contributor).
    trusted_contributors: list[str] = []
    # Auditors' verifier keys (C2SP) the customer trusts (see fairproof-verify --trust-auditor).
    trusted_auditors: list[str] = []
    # Transparency logs: pinned key and newest consistent checkpoint, per origin.
    logs: list[PinnedLog] = []
    # Which log each service publishes (one per service, for good).
    services: list[ServiceLog] = []


@dataclass(frozen=True)
class PinCheck:
    pin: Pin
    first_use: bool  # True when this call pinned the model
    updated: bool = False  # True when this call re-pinned the model's card (attested, or accepted)
    changes: CardChanges | None = None  # what the re-pinned card changed

    def describe(self) -> str:
        """How the card the verdict rests on came to be trusted, in one line."""
        pin = self.pin
        if self.first_use:
            return (f"Card {pin.card_digest[:16]}... pinned now, on first use ({pin.pinned_by}); later cards for "
                    f"model {pin.model_id!r} must match it.")
        if self.updated:
            changes = self.changes.describe() if self.changes is not None else "a new card"
            return f"Card {pin.card_digest[:16]}... re-pinned now ({pin.pinned_by}): {changes}."
        return f"Card {pin.card_digest[:16]}... matches the card pinned on {pin.first_seen} ({pin.pinned_by})."


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
        return next((p for p in self._read().pins if (_service_of(p), p.model_id) == (service, model_id)),
                    None)

    def trusted_contributors(self) -> list[str]:
        """The contribution hashes this file trusts (none if the file does not exist)."""
        return [h.lower() for h in self._read().trusted_contributors]

    def trusted_auditors(self) -> list[str]:
        """The auditors' verifier keys this file trusts (none if the file does not exist)."""
        return list(self._read().trusted_auditors)

    def check(self, service_url: str | None, card: ModelCard, *, accept_update: bool = False,
              attested_by: tuple[str, ...] = (), record: bool = True) -> PinCheck:
        """Pin `card` on first use; refuse a card that differs from the pinned one (PinMismatch) unless
        `attested_by` names trusted auditors who attested it, or `accept_update` and it only adds buckets.

        `service_url` None is file mode: the card is checked against every pin of its model id, whatever
        the service, and pinned under FILE_MODE on first use. `record` False: refuse as usual, write nothing
        (the verdict is still to come; call again with `record` once it is valid).
        """
        service = FILE_MODE if service_url is None else pin_origin(service_url)
        digest = card.digest()
        with self._locked():
            data = self._read()
            pinned = [p for p in data.pins if p.model_id == card.model_id
                      and (service_url is None or _service_of(p) == service)]
            if not pinned:
                how = f"attested by {', '.join(attested_by)}" if attested_by else "first use"
                pin = Pin(service=service, model_id=card.model_id, commitment=card.commitment, card_digest=digest,
                          first_seen=_now(), card_json=card.canonical_json(), pinned_by=how)
                if record:
                    data.pins.append(pin)
                    self._write(data)
                return PinCheck(pin, first_use=True)
            stale = [p for p in pinned if (p.commitment, p.card_digest) != (card.commitment, digest)]
            if not stale:
                return PinCheck(pinned[0], first_use=False)
            if all(_republished(p, card) for p in stale):
                changes: list[CardChanges | None] = [None]
                how = REPUBLISHED
            else:
                changes = [_update_problem(p, card, self.path, accept_update, attested_by) for p in stale]
                how = (f"attested by {', '.join(attested_by)}" if attested_by
                       else f"accepted by you: {changes[0].describe() if changes[0] else 'a new card'}")
            repinned = []
            for p in stale:
                repinned.append(p.model_copy(update={
                    "commitment": card.commitment, "card_digest": digest, "card_json": card.canonical_json(),
                    "pinned_by": how, "updated": _now()}))
                data.pins[data.pins.index(p)] = repinned[-1]
            if record:
                self._write(data)
            return PinCheck(repinned[0], first_use=False, updated=True, changes=changes[0])

    # -- which log a service (and a model) publishes -------------------------------------

    def log_binding_problem(self, service_url: str | None, model_id: str, origin: str, verifier_key: str) -> str | None:
        """Why log `origin` (signed by `verifier_key`) is not the log pinned for this service or model, or None.

        Service mode (`service_url` given): the service's log and the model's pin under that service.
        File mode: every pin of the model id, whatever the service, and each such service's log."""
        data = self._read()
        service = None if service_url is None else pin_origin(service_url)
        pins = [p for p in data.pins if p.model_id == model_id and (service is None or _service_of(p) == service)]
        services = {service} if service is not None else {_service_of(p) for p in pins}
        for bound in data.services:
            if bound.service in services and (bound.origin, bound.verifier_key) != (origin, verifier_key):
                return (f"the service {bound.service} publishes its log as {bound.origin!r} (key pinned on "
                        f"{bound.first_seen}), not {origin!r} with key {verifier_key}: a service has one log")
        for pin in pins:
            if pin.log_origin is not None and (pin.log_origin, pin.log_key) != (origin, verifier_key):
                return (f"model {model_id!r} has its certificates in the log {pin.log_origin!r} (pinned with "
                        f"{pin.service}), not {origin!r} with key {verifier_key}: a model's log never changes")
        return None

    def bind_log(self, service_url: str | None, model_id: str, origin: str, verifier_key: str) -> None:
        """Record the log of this service and model where none is recorded yet (callers checked
        log_binding_problem first)."""
        with self._locked():
            data = self._read()
            service = None if service_url is None else pin_origin(service_url)
            changed = False
            if service is not None and not any(b.service == service for b in data.services):
                data.services.append(ServiceLog(service=service, origin=origin, verifier_key=verifier_key,
                                                first_seen=_now()))
                changed = True
            for i, pin in enumerate(data.pins):
                if pin.model_id == model_id and pin.log_origin is None and \
                        (service is None or _service_of(pin) == service):
                    data.pins[i] = pin.model_copy(update={"log_origin": origin, "log_key": verifier_key})
                    changed = True
            if changed:
                self._write(data)

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
                pinned = PinnedLog(origin=origin, verifier_key=verifier_key, first_seen=_now())
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


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def _service_of(pin: Pin) -> str:
    return pin.service if pin.service == FILE_MODE else pin_origin(pin.service)


REPUBLISHED = "re-published as card version 3 (its RFC 8785 digest): the same card as pinned"


def _republished(pinned: Pin, card: ModelCard) -> bool:
    """Whether `card` is the pinned version-2 card re-published as version 3: the same commitment, and the
    digest the pinned card had is the one `card`'s fields have as a version-2 card (so no field changed)."""
    return pinned.commitment == card.commitment and pinned.card_digest == legacy_digest(card)


def _update_problem(pinned: Pin, card: ModelCard, path: Path, accept_update: bool,
                    attested_by: tuple[str, ...]) -> CardChanges | None:
    """What `card` changes from the pinned one, if the customer's rules let it replace it; PinMismatch if not."""
    old = pinned.pinned_card()
    changes = card_changes(old, card) if old is not None else None
    if attested_by:
        return changes
    if not accept_update:
        _check_against(pinned, card, path)
    where = f"model {card.model_id!r} at {pinned.service}"
    if changes is None:
        raise PinMismatch(f"{where}: the pin (from {pinned.first_seen}) keeps only the card's digest, so what the "
                          "new card changes cannot be shown; an auditor you trust must attest the new card "
                          f"(--trust-auditor), or remove the entry from {path}")
    if not changes.only_added_buckets:
        raise PinMismatch(f"{where}: --accept-card-update accepts only added circuit buckets, and this card changes "
                          f"{'; '.join(changes.other)}; an auditor you trust must attest such a card")
    return changes


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
            f"input box, scale, labels, sensitive domains or circuit keys differ. If the bank only added circuit "
            f"buckets, rerun with --accept-card-update; any other change needs an auditor you trust to attest "
            f"the new card (--trust-auditor)."
        )
