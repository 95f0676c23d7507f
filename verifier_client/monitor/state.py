"""What the monitor keeps between runs: its state directory, the state file and the cards it saw."""
from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import shutil
import tempfile
from datetime import datetime, timezone
from fractions import Fraction
from pathlib import Path
from typing import Any, Final, Iterator, Literal

from pydantic import BaseModel, ConfigDict, ValidationError

from commitments.canonical import NonCanonical
from commitments.card import ModelCard
from commitments.card_migration import is_legacy, migrate
from transparency import merkle, note

from ..pins import KeptCheckpoint, pin_origin
from .checkpoints import parse_log_key
from .errors import MonitorError, Violation

STATE_VERSION: Final = 1  # Final: its type is Literal[1], the version field's
STATE_FILE = "state.json"
REPORT_FILE = "report.json"
CARDS_DIR = "cards"
EVIDENCE_DIR = "evidence"
LOCK_FILE = ".lock"


# -- files -------------------------------------------------------------------


def write_atomically(path: Path, text: str, mode: int = 0o600) -> None:
    """Write `text` to a temporary file beside `path`, then rename it over `path`."""
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def sanitise_origin(origin: str) -> str:
    """A log origin as one safe path component: 'bank.example/log' -> 'bank.example_log'."""
    name = re.sub(r"[^A-Za-z0-9._-]", "_", origin).strip(".")
    return name or "log"


def service_name(service_url: str) -> str:
    """A service URL as one safe path component, the same for every spelling of the service
    (`pins.pin_origin`: lower case, no default port, every loopback host as localhost):
    'https://bank.example/fp' -> 'https+bank.example_fp', 'http://127.0.0.1:8000/' -> 'http+localhost_8000'.

    The '+' keeps these names apart from the old per-origin ones (`sanitise_origin` never writes one).
    Two URLs of one scheme and host that differ only in characters outside [A-Za-z0-9._-] share a
    name, so they share one pin: stricter, never looser."""
    try:
        url = pin_origin(service_url)
    except ValueError as exc:
        raise MonitorError(str(exc)) from None
    scheme, _, rest = url.partition("://")
    return f"{scheme}+{sanitise_origin(rest)}"


def _state_home() -> Path:
    base = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(base).expanduser() / "fairproof" / "monitor"


def default_state_dir(service_url: str) -> Path:
    """$XDG_STATE_HOME/fairproof/monitor/<service> (~/.local/state when XDG_STATE_HOME is unset): one
    directory per service (`service_name`), whatever origin the service names for its log."""
    return _state_home() / service_name(service_url)


def legacy_state_dir(origin: str) -> Path:
    """The default state directory of the old layout: $XDG_STATE_HOME/fairproof/monitor/<origin>."""
    return _state_home() / sanitise_origin(origin)


def adopt_legacy_state_dir(service_url: str, origin: str) -> Path | None:
    """Before the first run for `service_url` with the default state directory: when that directory does
    not exist and the old per-origin one for `origin` (the origin the service names) pins exactly that
    origin, copy it to the service's directory (the old one is left as it was). The old directory, or
    None when nothing was adopted. Its pinned key carries over: a service serving another key is a
    violation on the run that follows."""
    target = default_state_dir(service_url)
    legacy = legacy_state_dir(origin)
    if target.exists() or not (legacy / STATE_FILE).is_file():
        return None
    old = StateDir(legacy)
    with old.locked():  # not while a run of the old layout writes it
        state = old.load()
        if state is None or state.origin != origin:
            return None
        target.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        copy = Path(tempfile.mkdtemp(prefix=f".{target.name}.", suffix=".adopting", dir=target.parent))
        try:
            shutil.copytree(legacy, copy, dirs_exist_ok=True, ignore=shutil.ignore_patterns(LOCK_FILE))
            os.rename(copy, target)
        except BaseException:
            shutil.rmtree(copy, ignore_errors=True)
            if target.exists():  # another run adopted it first
                return None
            raise
    return legacy


def now_iso() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


# -- state ---------------------------------------------------------------------


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class CardEvent(_Model):
    """One card_published leaf of a model."""

    leaf_index: int
    card_digest: str
    commitment: str


class Recommit(_Model):
    """A card published under another commitment than the model's previous card."""

    leaf_index: int
    card_digest: str
    old_commitment: str
    new_commitment: str


class ModelStats(_Model):
    cards: list[CardEvent] = []
    recommits: list[Recommit] = []
    card_updates: int = 0  # another card under the same commitment (new circuit buckets)
    decision_requests: int = 0
    pending_requests: dict[str, int] = {}  # request id -> announced decision, no certificate yet
    answered_requests: int = 0
    certificates: int = 0
    certificates_without_request: int = 0
    flips: int = 0
    capped: int = 0
    exact_radius: int = 0  # certified radii proved by an exact-radius bucket (the rest are fast: lower bounds)
    decisions: dict[str, int] = {}  # decision label proven -> certificates
    eps: list[tuple[int, int]] = []  # (E, t) of every certificate in log order: eps = E / 2^t
    attestations: int = 0  # card_attested leaves under the model's cards
    auditors: dict[str, int] = {}  # auditor name (its key's name) -> attestations

    def eps_values(self) -> list[Fraction]:
        return [Fraction(n, 1 << t) for n, t in self.eps]


class CardSeen(_Model):
    """A card the log published: its model, commitment and first leaf (what `card_order_problem` compares)."""

    model_id: str
    commitment: str
    leaf_index: int


class MonitorState(_Model):
    version: Literal[1] = STATE_VERSION
    origin: str
    log_key: str
    key_pinned_at: str
    service: str
    checkpoint: KeptCheckpoint | None = None
    compact_range: list[str] = []  # hex hashes of merkle.root_nodes(checkpoint size)
    cards: dict[str, CardSeen] = {}  # by card digest
    models: dict[str, ModelStats] = {}
    redacted_certificates: int = 0  # old certificate_issued leaves served redacted (their model is not shown)
    committed_since: int | None = None  # the first certificate_committed leaf: no old certificate leaf after it

    @property
    def size(self) -> int:
        return self.checkpoint.size if self.checkpoint else 0

    def accumulator(self) -> merkle.MerkleAccumulator:
        """The compact range kept with the checkpoint, ready to append the next leaves."""
        try:
            return merkle.MerkleAccumulator.from_nodes(self.size, [bytes.fromhex(h) for h in self.compact_range])
        except ValueError as exc:
            raise MonitorError(f"the compact range does not fit the kept checkpoint: {exc}") from None


def _state_problem(state: MonitorState) -> str | None:
    """What makes a parsed state unusable, or None."""
    try:
        if parse_log_key(state.log_key).name != state.origin:
            return "its log key is not named after its origin"
        if state.checkpoint is not None:
            root = note.b64decode_strict(state.checkpoint.root_hash)
            if len(root) != merkle.HASH_SIZE:
                return "its kept root hash is not 32 bytes"
        state.accumulator()
    except (MonitorError, note.NoteError) as exc:
        return str(exc)
    return None


class StateDir:
    """The monitor's directory: state, cards by digest, report and evidence."""

    def __init__(self, path: Path):
        self.path = Path(path).expanduser()

    def load(self) -> MonitorState | None:
        try:
            text = (self.path / STATE_FILE).read_text(encoding="utf-8")
        except FileNotFoundError:
            return None
        except (OSError, UnicodeDecodeError) as exc:
            raise MonitorError(f"cannot read {self.path / STATE_FILE}: {getattr(exc, 'strerror', None) or exc}")
        try:
            state = MonitorState.model_validate_json(text)
        except ValidationError as exc:
            err = exc.errors()[0]
            where = ".".join(str(p) for p in err.get("loc", ())) or "document"
            raise MonitorError(f"{self.path / STATE_FILE} is corrupt ({where}: {err.get('msg')})") from None
        problem = _state_problem(state)
        if problem:
            raise MonitorError(f"{self.path / STATE_FILE} is corrupt ({problem})")
        return state

    def save(self, state: MonitorState) -> None:
        write_atomically(self.path / STATE_FILE, state.model_dump_json(indent=2) + "\n")

    def save_report(self, report: dict[str, Any]) -> Path:
        path = self.path / REPORT_FILE
        write_atomically(path, json.dumps(report, indent=2, sort_keys=True) + "\n", mode=0o644)
        return path

    def save_card(self, digest: str, card_json: str) -> None:
        path = self.path / CARDS_DIR / f"{digest}.json"
        if not path.exists():
            write_atomically(path, card_json, mode=0o644)

    def load_card(self, digest: str) -> ModelCard:
        path = self.path / CARDS_DIR / f"{digest}.json"
        try:
            data = path.read_bytes()
        except OSError as exc:
            raise MonitorError(f"the state lacks card {digest} ({exc.strerror or exc})") from None
        if hashlib.sha256(data).hexdigest() != digest:
            raise MonitorError(f"{path} does not hash to its digest: the state directory was altered")
        try:
            return migrate(data) if is_legacy(data) else ModelCard.from_json(data)
        except NonCanonical as exc:
            raise MonitorError(f"{path} is not a model card: {exc}") from None

    def save_evidence(self, violation: Violation) -> Path:
        stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ")
        directory = self.path / EVIDENCE_DIR
        directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        path = directory / f"{stamp}.json"
        n = 1
        while path.exists():
            n += 1
            path = directory / f"{stamp}-{n}.json"
        document = {"detected_at": now_iso(), "violations": violation.lines, "checkpoints": violation.evidence}
        write_atomically(path, json.dumps(document, indent=2, sort_keys=True) + "\n", mode=0o644)
        return path

    @contextlib.contextmanager
    def locked(self) -> Iterator[None]:
        """One run at a time (POSIX advisory lock; elsewhere, none)."""
        try:
            import fcntl
        except ImportError:  # pragma: no cover - not POSIX
            yield
            return
        try:
            self.path.mkdir(mode=0o700, parents=True, exist_ok=True)
            fd = os.open(self.path / LOCK_FILE, os.O_RDWR | os.O_CREAT, 0o600)
        except OSError as exc:
            raise MonitorError(f"cannot use the state directory {self.path}: {exc.strerror or exc}") from None
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                raise MonitorError(f"another monitor run is using {self.path}") from None
            yield
        finally:
            os.close(fd)



def describe_recommit(model_id: str, recommit: Recommit) -> str:
    return (f"model {model_id} re-committed at leaf {recommit.leaf_index}: commitment "
            f"{recommit.old_commitment[:16]}... -> {recommit.new_commitment[:16]}... "
            f"(card {recommit.card_digest[:16]}...)")


