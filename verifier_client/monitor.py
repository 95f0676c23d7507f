"""An auditor following the bank's transparency log, run after run.

The log belongs to the service. A bank holds its service and its log key, so
it could serve, from the same URL, a fresh log under a fresh origin and key
(a private log holding one customer's certificate) and hope to be taken as a
new log seen for the first time. So the monitor pins, per service URL (its
`verifier_client.pins.pin_origin` spelling: localhost and 127.0.0.1 are one
service), the log's origin and key: the default state directory is named
after the service, not after the origin the service names, and the state
records the origin and key. A service presenting another origin or key than
its state pins, in /v1/log/key or in its checkpoint, is a VIOLATION, never a
first use.

Each run takes the log's newest checkpoint, checks it against the one kept
from the run before, downloads only the entries added since, and proves that
they are exactly the signed tree:

1. The log's origin and key as the service names them (/v1/log/key) must be
   the pinned ones (pinned on first use from /v1/log/key, or named with
   `log_key`), and the checkpoint must be signed by that key for that origin.
2. Against the kept checkpoint: a smaller tree is a ROLLBACK, the same size
   with another root is a FORK, a larger tree needs an RFC 9162 consistency
   proof from the kept size (a proof that fails is a FORK).
3. Entries [kept size, new size) are fetched page by page, each parsed as a
   canonical FairProof leaf, and their leaf hashes appended to the compact
   range kept from the last run; the resulting root must be the checkpoint's.
   An old `certificate_issued` leaf (it holds a customer's query) is served
   redacted, as its leaf hash alone: it takes its place in the tree, is
   counted as redacted, and adds nothing to the statistics. A redacted entry
   of any other kind is a violation: nothing else may be withheld; so is a
   redacted entry after the log's first `certificate_committed` leaf (the
   service stopped writing old leaves then, so nothing later is old). What a
   redacted entry is cannot be checked otherwise: its kind is the log's word.
4. Every leaf is audited: a published card is fetched, must hash to its
   digest, parse strictly, name the leaf's model and commitment, and be
   included in a checkpoint consistent with this one; a decision request, a
   certificate and an auditor's attestation (card_attested) must name a card
   the log published for their model, at an earlier leaf (the one rule for
   the order of leaves, `commitments.log.card_order_problem`, which the
   customer applies too). A certificate leaf (`certificate_committed`) states
   its decision, status, radius eps = E / 2^t, cap and lens summaries, and
   commits to its public signals under a salt the public never sees: the
   monitor checks that every stated field is possible under the card it
   names (`certificate_leaf_problem`: the rules of commitments.claims,
   restricted to what the leaf carries; the customer, who holds the salt,
   checks that the fields are its proof's), and that its decision is the one
   its request announced. An old certificate leaf served in full
   (`certificate_issued`) has its claims derived from its public signals and
   the card, as before.

Statistics per model: cards published and commitment changes, decision
requests, certificates and the share of requests answered by one (matched by
request id), flips, eps min/median/max as exact rationals, and the auditors'
attestations logged for its cards (how many, by which auditor: the name of
the auditor's key), and old certificate leaves served redacted. A
counterfactual flip certifies radius 0 and counts as eps = 0. Each certified radius is counted as exact or fast (a lower bound) by
the radius of the bucket its leaf names on its card, as a customer's verifier
labels it.

What counts as what:

- VIOLATION (exit status 1): the log contradicts itself or its signatures:
  the service presenting another log origin or key than the state pins,
  rollback, fork, a checkpoint not signed by the pinned key or for another
  origin, entries that do not hash to the signed root, a leaf that is not a
  canonical FairProof event, a published card the log cannot show as
  published, a decision, certificate or attestation under a card the log had
  not published (or published only at a later leaf), public signals or
  certificate fields no honest certificate under the card can have, a
  certificate proving another decision than its request announced, a
  redacted entry of another kind than an old certificate. A violation never advances the kept
  checkpoint: the state stays as it was, and the signed checkpoints involved
  are written under `evidence/`.
- FLAG (exit status 0): a model re-committed, i.e. a card published for a
  model id under another commitment than its previous card. The service lets
  an admin do this on purpose, so it is not an integrity failure; but every
  customer's verdicts about "the model" change with it, so each one is listed
  at the top of every report, for good.
- NOTE: a card replaced under the same commitment (new circuit buckets),
  certificates not matched to a logged decision request.

The state directory (default $XDG_STATE_HOME/fairproof/monitor/<service>,
see `default_state_dir`) holds `state.json` (service, pinned origin and key,
kept checkpoint and its compact range, per-model statistics),
`cards/<digest>.json` (every card the log published, checked against its
digest on every read), `report.json` and `evidence/`. Every file is written
atomically; one run at a time holds the directory's lock. A default
directory of the old layout (named after the log's origin) is copied to the
service's directory on its first run (`adopt_legacy_state_dir`), so nothing
kept there is lost.

Depends on pydantic and httpx only (matplotlib for plots, imported lazily):
the auditor installs the verifier client, never the bank's side.
"""
from __future__ import annotations

import base64
import contextlib
import hashlib
import json
import os
import re
import shutil
import tempfile
from dataclasses import dataclass, field
from datetime import datetime, timezone
from fractions import Fraction
from pathlib import Path
from typing import Any, Callable, Final, Iterator, Literal, Sequence

from pydantic import BaseModel, ConfigDict, ValidationError

from commitments.canonical import NonCanonical
from commitments.card import EXACT_RADIUS, ModelCard
from commitments.card_migration import is_legacy, legacy_digest, migrate
from commitments.claims import ClaimError, Claims, claims_from_signals
from commitments.log import (MAX_ENTRIES_PER_PAGE, REDACTED_KINDS, CardAttested, CardPublished, CertificateCommitted,
                             CertificateIssued, DecisionRequested, LogEntry, LogInclusion, LogKey, card_order_problem,
                             leaf_bytes, parse_leaf)
from transparency import merkle, note
from transparency.checkpoint import Checkpoint, CheckpointError

from .pins import KeptCheckpoint, pin_origin
from .service_client import ServiceClient, ServiceError

STATE_VERSION: Final = 1  # Final: its type is Literal[1], the version field's
STATE_FILE = "state.json"
REPORT_FILE = "report.json"
CARDS_DIR = "cards"
EVIDENCE_DIR = "evidence"
LOCK_FILE = ".lock"

# Called after each page of entries with (entries downloaded, entries to download).
Progress = Callable[[int, int], None]


class MonitorError(Exception):
    """The run cannot proceed: unusable input, state or answer (exit status 2). One line."""


class Violation(Exception):
    """The log contradicts itself or its key; `evidence` names the signed notes that show it."""

    def __init__(self, lines: Sequence[str], evidence: dict[str, str] | None = None):
        super().__init__(lines[0])
        self.lines = list(lines)
        self.evidence = dict(evidence or {})


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


def _now() -> str:
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
        document = {"detected_at": _now(), "violations": violation.lines, "checkpoints": violation.evidence}
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


# -- the log key and checkpoints ---------------------------------------------------


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


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


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


# -- entries ----------------------------------------------------------------------


def fetch_entries(client: ServiceClient, start: int, end: int,
                  progress: Progress | None = None) -> Iterator[LogEntry]:
    """Entries [start, end), page by page, each exactly at the index asked for."""
    total, index = end - start, start
    while index < end:
        page = client.entries(index, min(end, index + MAX_ENTRIES_PER_PAGE)).entries
        if not page:
            raise MonitorError(f"the log answered no entries from index {index} (its checkpoint has {end})")
        for entry in page:
            if entry.index != index or index >= end:
                raise MonitorError(f"the log answered entry {entry.index} where entry {index} of [{start}, {end}) "
                                   "was expected")
            yield entry
            index += 1
        if progress is not None:
            progress(index - start, total)


# -- auditing leaves ----------------------------------------------------------------


class CardSource:
    """Cards the log published: fetched once, checked against the log, kept in the state directory."""

    def __init__(self, client: ServiceClient, files: StateDir, verifier: note.Verifier, tree: SignedTree):
        self.client = client
        self.files = files
        self.verifier = verifier
        self.tree = tree  # the checkpoint this run follows
        self._parsed: dict[str, ModelCard] = {}
        self._consistent: set[tuple[int, bytes]] = {(tree.size, tree.root)}

    def get(self, digest: str) -> ModelCard:
        card = self._parsed.get(digest)
        if card is None:
            card = self._parsed[digest] = self.files.load_card(digest)
        return card

    def fetch(self, leaf: CardPublished, index: int) -> str | None:
        """Fetch and check the card of a card_published leaf; the reason it fails, or None."""
        digest = leaf.card_digest
        try:
            published = self.client.published_card(digest)
        except ServiceError as exc:
            if exc.status == 404:
                return f"leaf {index} publishes card {digest}, which the log does not serve"
            raise
        text = published.card_json
        if hashlib.sha256(text.encode("utf-8")).hexdigest() != digest:
            return f"the card served for digest {digest} (leaf {index}) does not hash to it"
        legacy = is_legacy(text)  # a version-2 card, published before card version 3: its old digest
        try:
            card = migrate(text) if legacy else ModelCard.from_json(text)
        except NonCanonical as exc:
            return f"the card of leaf {index} is not a canonical model card: {exc}"
        if (legacy_digest(card) if legacy else card.digest()) != digest:
            return f"the card of leaf {index} is not in canonical form"
        if (card.model_id, card.commitment) != (leaf.model_id, leaf.commitment):
            return (f"leaf {index} publishes model {leaf.model_id!r} with commitment {leaf.commitment[:16]}..., "
                    f"its card names {card.model_id!r} with {card.commitment[:16]}...")
        reason = self._check_inclusion(leaf, index, published.checkpoint, published.inclusion)
        if reason:
            return reason
        self.files.save_card(digest, text)
        self._parsed[digest] = card
        return None

    def _check_inclusion(self, leaf: CardPublished, index: int, signed: str, inclusion: LogInclusion) -> str | None:
        """The card's leaf must be at `index` of a signed tree consistent with the one this run follows."""
        served = open_checkpoint(signed, self.verifier, f"the checkpoint served with card {leaf.card_digest}")
        if inclusion.tree_size != served.size:
            return (f"the inclusion of card {leaf.card_digest} is for {inclusion.tree_size} leaves, its checkpoint "
                    f"has {served.size}")
        if inclusion.leaf_index != index:
            return (f"the log shows card {leaf.card_digest} at leaf {inclusion.leaf_index}, it was published at "
                    f"leaf {index}")
        try:
            merkle.verify_inclusion(merkle.leaf_hash(leaf_bytes(leaf)), inclusion.leaf_index, inclusion.tree_size,
                                    [bytes.fromhex(h) for h in inclusion.proof], served.root_hash)
        except merkle.InvalidProof as exc:
            return f"card {leaf.card_digest} is not in the checkpoint served with it: {exc}"
        if (served.size, served.root_hash) not in self._consistent:
            check_consistent(self.tree, SignedTree.of(served, signed), self.client, self.verifier.name)
            self._consistent.add((served.size, served.root_hash))
        return None


@dataclass
class Audit:
    """What the leaves of one run showed: statistics go into `state`, the rest is listed here."""

    state: MonitorState
    cards: CardSource
    violations: list[str] = field(default_factory=list)
    flags: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    # Leaves naming a card not (yet) published: (place in `violations`, leaf index, what, card digest),
    # judged by `finish` once every leaf of the run is seen.
    _unpublished: list[tuple[int, int, str, str]] = field(default_factory=list)

    def leaf(self, index: int, data: bytes) -> None:
        try:
            leaf = parse_leaf(data)
        except NonCanonical as exc:
            self.violations.append(f"leaf {index} is not a canonical FairProof event: {exc}")
            return
        if isinstance(leaf, CardPublished):
            self.card_published(index, leaf)
        elif isinstance(leaf, DecisionRequested):
            self.decision_requested(index, leaf)
        elif isinstance(leaf, CertificateCommitted):
            if self.state.committed_since is None:
                self.state.committed_since = index
            self.certificate_committed(index, leaf)
        elif isinstance(leaf, CertificateIssued):
            if self.state.committed_since is not None:
                self.notes.append(f"leaf {index} is an old certificate_issued leaf, logged after the log switched to "
                                  f"certificate_committed at leaf {self.state.committed_since}: it publishes its "
                                  "customer's public signals (the query among them)")
            self.certificate_issued(index, leaf)
        else:
            self.card_attested(index, leaf)

    def redacted(self, index: int, kind: str) -> None:
        """An entry served as its leaf hash only: an old certificate leaf may be (it holds a query), and
        is counted; any other kind withheld is a violation."""
        if kind not in REDACTED_KINDS:
            self.violations.append(f"leaf {index} is served redacted as {kind[:64]!r}: only an old "
                                   f"{' or '.join(REDACTED_KINDS)} leaf may be withheld")
            return
        if self.state.committed_since is not None:
            self.violations.append(f"leaf {index} is served redacted as an old certificate, but the log logs "
                                   f"certificate_committed leaves since leaf {self.state.committed_since}")
            return
        self.state.redacted_certificates += 1

    def finish(self) -> None:
        """After the run's last leaf: a leaf that named a card the log had not published is a violation,
        in the words of `card_order_problem` when the card is published at a later leaf."""
        for position, index, what, digest in reversed(self._unpublished):
            seen = self.state.cards.get(digest)
            reason = card_order_problem(seen.leaf_index, index, what) if seen is not None else None
            self.violations.insert(position, reason or f"{_a(what)} at leaf {index} names card {digest}, which "
                                                       "the log had not published")
        self._unpublished.clear()

    def stats(self, model_id: str) -> ModelStats:
        return self.state.models.setdefault(model_id, ModelStats())

    def card_published(self, index: int, leaf: CardPublished) -> None:
        seen = self.state.cards.get(leaf.card_digest)
        if seen is None:
            reason = self.cards.fetch(leaf, index)
            if reason:
                self.violations.append(reason)
                return
            self.state.cards[leaf.card_digest] = CardSeen(model_id=leaf.model_id, commitment=leaf.commitment,
                                                          leaf_index=index)
        elif (seen.model_id, seen.commitment) != (leaf.model_id, leaf.commitment):
            self.violations.append(f"leaf {index} republishes card {leaf.card_digest} for another model or commitment")
            return
        stats = self.stats(leaf.model_id)
        previous = stats.cards[-1] if stats.cards else None
        stats.cards.append(CardEvent(leaf_index=index, card_digest=leaf.card_digest, commitment=leaf.commitment))
        if previous is None or previous.card_digest == leaf.card_digest:
            return
        if previous.commitment != leaf.commitment:
            recommit = Recommit(leaf_index=index, card_digest=leaf.card_digest,
                                old_commitment=previous.commitment, new_commitment=leaf.commitment)
            stats.recommits.append(recommit)
            self.flags.append(describe_recommit(leaf.model_id, recommit))
        else:
            stats.card_updates += 1
            self.notes.append(f"model {leaf.model_id}: card {leaf.card_digest[:16]}... replaces "
                              f"{previous.card_digest[:16]}... under the same commitment (leaf {index})")

    def _published_card(self, index: int, what: str, model_id: str, digest: str) -> bool:
        """Whether the `what` at leaf `index` names a card the log published before it, for its model."""
        seen = self.state.cards.get(digest)
        if seen is None:  # maybe published at a later leaf: `finish` says which
            self._unpublished.append((len(self.violations), index, what, digest))
            return False
        problem = card_order_problem(seen.leaf_index, index, what)
        if problem:
            self.violations.append(problem)
            return False
        if seen.model_id != model_id:
            self.violations.append(f"{_a(what)} at leaf {index} is for model {model_id!r} under card {digest} "
                                   f"of model {seen.model_id!r}")
            return False
        return True

    def decision_requested(self, index: int, leaf: DecisionRequested) -> None:
        if not self._published_card(index, "decision request", leaf.model_id, leaf.card_digest):
            return
        stats = self.stats(leaf.model_id)
        stats.decision_requests += 1
        if leaf.request_id in stats.pending_requests:
            self.notes.append(f"model {leaf.model_id}: request {leaf.request_id} logged twice (leaf {index})")
        stats.pending_requests[leaf.request_id] = leaf.decision

    def certificate_issued(self, index: int, leaf: CertificateIssued) -> None:
        if not self._published_card(index, "certificate", leaf.model_id, leaf.card_digest):
            return
        card = self.cards.get(leaf.card_digest)
        try:
            claims = claims_from_signals(leaf.public_signals, card, card.bucket(leaf.bucket))
        except KeyError:
            self.violations.append(f"the certificate at leaf {index} names bucket {leaf.bucket!r}, "
                                   f"which its card {leaf.card_digest[:16]}... does not have")
            return
        except ClaimError as exc:
            self.violations.append(f"the certificate at leaf {index} cannot be honest under its card: {exc}")
            return
        stats = self.stats(leaf.model_id)
        count_certificate(stats, claims)
        self._answer(index, leaf.model_id, leaf.request_id, claims.decision, card)

    def certificate_committed(self, index: int, leaf: CertificateCommitted) -> None:
        if not self._published_card(index, "certificate", leaf.model_id, leaf.card_digest):
            return
        card = self.cards.get(leaf.card_digest)
        problem = certificate_leaf_problem(leaf, card)
        if problem:
            self.violations.append(f"the certificate at leaf {index} cannot be honest under its card: {problem}")
            return
        stats = self.stats(leaf.model_id)
        _count(stats, card.architecture.class_labels[leaf.decision], leaf.status, leaf.capped,
               card.bucket(leaf.bucket).shape.radius == EXACT_RADIUS, leaf.eps_numerator, leaf.eps_scale_bits)
        self._answer(index, leaf.model_id, leaf.request_id, leaf.decision, card)

    def _answer(self, index: int, model_id: str, request_id: str | None, decision: int, card: ModelCard) -> None:
        """Match the certificate at leaf `index` (proving `decision`) to its pending decision request."""
        stats = self.stats(model_id)
        if request_id is None or request_id not in stats.pending_requests:
            stats.certificates_without_request += 1
            self.notes.append(f"model {model_id}: the certificate at leaf {index} answers no pending "
                              f"decision request ({request_id or 'none named'})")
            return
        announced = stats.pending_requests.pop(request_id)
        stats.answered_requests += 1
        if announced != decision:
            labels = card.architecture.class_labels
            said = labels[announced] if announced < len(labels) else str(announced)
            self.violations.append(f"request {request_id} was logged with decision {said!r}, its certificate "
                                   f"at leaf {index} proves {labels[decision]!r}")

    def card_attested(self, index: int, leaf: CardAttested) -> None:
        if not self._published_card(index, "attestation", leaf.model_id, leaf.card_digest):
            return
        stats = self.stats(leaf.model_id)
        stats.attestations += 1
        name = auditor_name(leaf.auditor_key)
        stats.auditors[name] = stats.auditors.get(name, 0) + 1


def _a(what: str) -> str:
    return f"{'an' if what[:1] in 'aeiou' else 'a'} {what}"


def auditor_name(auditor_key: str) -> str:
    """The auditor's name: its verifier key's name, the part before the first '+'."""
    return auditor_key.split("+", 1)[0]


def count_certificate(stats: ModelStats, claims: Claims) -> None:
    """Add one certificate's derived claims to its model's statistics."""
    _count(stats, claims.decision_label, claims.status, claims.capped, claims.eps_exact, claims.eps_numerator,
           claims.eps_scale_bits)


def _count(stats: ModelStats, decision_label: str, status: str, capped: bool, exact: bool, eps_numerator: int,
           eps_scale_bits: int) -> None:
    stats.certificates += 1
    stats.decisions[decision_label] = stats.decisions.get(decision_label, 0) + 1
    stats.flips += status == "counterfactual_flip"
    stats.capped += capped
    stats.exact_radius += status == "certified" and exact
    stats.eps.append((eps_numerator, eps_scale_bits))


def certificate_leaf_problem(leaf: CertificateCommitted, card: ModelCard) -> str | None:
    """Why no honest certificate under `card` can have the fields `leaf` states, or None: the rules
    commitments.claims applies to public signals, restricted to what the leaf carries (its signals are
    hidden under the customer's salt)."""
    try:
        bucket = card.bucket(leaf.bucket)
    except KeyError:
        return f"it names bucket {leaf.bucket!r}, which its card {leaf.card_digest[:16]}... does not have"
    labels = card.architecture.class_labels
    if leaf.decision >= len(labels):
        return f"decision {leaf.decision} is not a class of this model"
    if leaf.eps_scale_bits != card.eps_scale_bits:
        return f"eps is stated at 2^-{leaf.eps_scale_bits}, the card's radii are at 2^-{card.eps_scale_bits}"
    cap = bucket.shape.eps_cap
    if leaf.eps_numerator > cap:
        return f"E = {leaf.eps_numerator} exceeds the cap {cap} of bucket {bucket.bucket}"
    if leaf.status == "counterfactual_flip" and leaf.eps_numerator != 0:
        return "a counterfactual flip certifies radius 0, E is not 0"
    if leaf.capped != (leaf.status == "certified" and leaf.eps_numerator == cap):
        return (f"capped is {str(leaf.capped).lower()}, but the status and E = {leaf.eps_numerator} "
                f"(cap {cap}) say {str(not leaf.capped).lower()}")
    slices = len(card.slices())
    if (leaf.spread is None) != (card.spread is None):
        return "the card proves the spread lens, the leaf has no spread" if card.spread is not None else \
            "the leaf states a spread, the card proves no spread lens"
    if leaf.spread is not None:
        if not 1 <= leaf.spread.distinct_decisions <= min(slices, len(labels)):
            return (f"{leaf.spread.distinct_decisions} distinct decisions is not between 1 and "
                    f"{min(slices, len(labels))} (the slices and the classes)")
        if not 1 <= leaf.spread.score_buckets <= slices:
            return f"{leaf.spread.score_buckets} margin buckets is not between 1 and the {slices} slices"
        if leaf.status == "certified" and leaf.spread.distinct_decisions != 1:
            return "a certified radius means every slice decides the same, the spread says otherwise"
    if (leaf.persistence is None) != (card.persistence is None):
        return "the card proves the persistence lens, the leaf has no persistence" if card.persistence is not None \
            else "the leaf states a persistence summary, the card proves no persistence lens"
    if leaf.persistence is not None:
        values: dict[str, int] = {}
        for a, _ in card.persistence_pairs():
            name = card.sensitive[a].name
            values[name] = values.get(name, 0) + 1
        stated = [s.attribute for s in leaf.persistence]
        if stated != list(values):
            return f"the persistence summary names attributes {stated}, the card's are {list(values)}"
        for s in leaf.persistence:
            if s.favoured + s.disfavoured + s.inconclusive != values[s.attribute] - 1:
                return (f"the persistence summary of {s.attribute!r} counts "
                        f"{s.favoured + s.disfavoured + s.inconclusive} values, it has "
                        f"{values[s.attribute] - 1} besides the customer's own")
    return None


def describe_recommit(model_id: str, recommit: Recommit) -> str:
    return (f"model {model_id} re-committed at leaf {recommit.leaf_index}: commitment "
            f"{recommit.old_commitment[:16]}... -> {recommit.new_commitment[:16]}... "
            f"(card {recommit.card_digest[:16]}...)")


# -- one run -----------------------------------------------------------------------


@dataclass
class MonitorRun:
    """The outcome of one run; `state` is what was kept (unchanged when a violation was found)."""

    state: MonitorState
    violations: list[str]
    new_flags: list[str]
    notes: list[str]
    new_entries: int
    key_first_use: bool
    report: dict[str, Any]  # the JSON report (build_report)
    evidence: Path | None = None

    @property
    def exit_status(self) -> int:
        return 1 if self.violations else 0


def _pinned_verifier(kept: MonitorState | None, log_key: str | None, served: LogKey) -> tuple[note.Verifier, bool]:
    """The pinned log key; on first use the one named, else the one the service names (`served`)."""
    if kept is not None:
        verifier = parse_log_key(kept.log_key)
        if log_key is not None and parse_log_key(log_key).vkey() != verifier.vkey():
            raise MonitorError(f"this state pins the log key {verifier.vkey()}, not {log_key.strip()}")
        return verifier, False
    if log_key is not None:
        return parse_log_key(log_key), False
    return log_key_verifier(served), True


def monitor(client: ServiceClient, state_dir: Path, *, log_key: str | None = None,
            served_key: note.Verifier | None = None, progress: Progress | None = None) -> MonitorRun:
    """One run of the monitor over `client`'s log, keeping its state in `state_dir`.

    `served_key` is the key the service names for its log (default: fetched from /v1/log/key); it must
    be the pinned one (the state's; on first use the one `log_key` names, else `served_key` itself, which
    is then pinned). `log_key` names the log's key, which must be the pinned one. Raises MonitorError or
    ServiceError when the run cannot proceed; violations (among them a service presenting another origin
    or key than the pinned ones) are returned, with their evidence kept.
    """
    files = StateDir(state_dir)
    with files.locked():
        kept = files.load()
        served = (LogKey(origin=served_key.name, verifier_key=served_key.vkey()) if served_key is not None
                  else client.log_key())
        verifier, first_use = _pinned_verifier(kept, log_key, served)
        base = kept or MonitorState(origin=verifier.name, log_key=verifier.vkey(), key_pinned_at=_now(),
                                    service=client.base_url)
        try:
            state, audit, new_entries = _follow(client, files, verifier, base, served, progress)
        except Violation as violation:
            if kept is None:
                files.save(base)  # the key stays pinned; no checkpoint is kept
            evidence = files.save_evidence(violation)
            report = build_report(base, violations=violation.lines, notes=[], new_entries=0)
            files.save_report(report)
            return MonitorRun(base, violation.lines, [], [], 0, first_use, report, evidence)
        files.save(state)
        report = build_report(state, violations=[], notes=audit.notes, new_entries=new_entries)
        files.save_report(report)
        return MonitorRun(state, [], audit.flags, audit.notes, new_entries, first_use, report)


def check_log_identity(service: str, pinned: MonitorState, served: LogKey, signed: str) -> None:
    """Violation unless the service presents the pinned log: the origin and key it names (`served`, from
    /v1/log/key) and the origin its checkpoint `signed` names."""
    served_key = canonical_key(served.verifier_key)
    problem = log_identity_problem(service, pinned.origin, pinned.log_key, pinned.key_pinned_at, served.origin,
                                   served_key)
    origin = claimed_origin(signed)
    if problem is None and origin is not None:
        problem = log_identity_problem(service, pinned.origin, pinned.log_key, pinned.key_pinned_at, origin)
    if problem is not None:
        evidence = {"served": signed, "served_log_key": served_key}
        if pinned.checkpoint is not None:
            evidence["kept"] = pinned.checkpoint.checkpoint
        raise Violation([problem], evidence)


def _follow(client: ServiceClient, files: StateDir, verifier: note.Verifier, kept: MonitorState,
            served: LogKey, progress: Progress | None) -> tuple[MonitorState, Audit, int]:
    """The state advanced to the served checkpoint; Violation if anything fails to hold."""
    signed = client.checkpoint().checkpoint
    check_log_identity(client.base_url, kept, served, signed)
    tree = SignedTree.of(open_checkpoint(signed, verifier), signed)
    check_against_kept(kept.checkpoint, tree, client, verifier.name)

    state = kept.model_copy(deep=True)
    state.service = client.base_url
    accumulator = kept.accumulator()
    audit = Audit(state, CardSource(client, files, verifier, tree))
    for entry in fetch_entries(client, kept.size, tree.size, progress):
        if entry.data is None:  # redacted: its leaf hash stands in the tree, `audit` judges its kind
            assert entry.leaf_hash is not None and entry.redacted is not None  # LogEntry's validator
            accumulator.append(bytes.fromhex(entry.leaf_hash))
            audit.redacted(entry.index, entry.redacted)
            continue
        data = entry.data.encode("utf-8")
        accumulator.append(merkle.leaf_hash(data))
        audit.leaf(entry.index, data)
    audit.finish()
    if accumulator.root() != tree.root:
        raise Violation([f"the entries the log serves for [{kept.size}, {tree.size}) do not hash to its signed "
                         f"root {_b64(tree.root)}"], {"served": signed})
    if audit.violations:
        raise Violation(audit.violations, {"served": signed})
    state.checkpoint = KeptCheckpoint(size=tree.size, root_hash=_b64(tree.root), checkpoint=signed)
    state.compact_range = [h.hex() for _, h in accumulator.nodes()]
    return state, audit, tree.size - kept.size


# -- the report ---------------------------------------------------------------------


def exact_decimal(x: Fraction) -> str:
    """A dyadic rational (denominator 2^k) in full: 3/8 -> '0.375'."""
    k = x.denominator.bit_length() - 1
    if x.denominator != 1 << k:
        raise ValueError(f"{x} is not a dyadic rational")
    digits = str(abs(x.numerator) * 5 ** k).rjust(k + 1, "0")
    whole, frac = digits[: len(digits) - k], digits[len(digits) - k:].rstrip("0")
    return ("-" if x < 0 else "") + whole + ("." + frac if frac else "")


def median(values: Sequence[Fraction]) -> Fraction:
    ordered = sorted(values)
    mid = len(ordered) // 2
    return ordered[mid] if len(ordered) % 2 else (ordered[mid - 1] + ordered[mid]) / 2


def eps_summary(values: Sequence[Fraction]) -> dict[str, int | str] | None:
    if not values:
        return None
    return {"count": len(values), "min": exact_decimal(min(values)), "median": exact_decimal(median(values)),
            "max": exact_decimal(max(values))}


def model_report(stats: ModelStats) -> dict[str, Any]:
    eps = stats.eps_values()
    return {
        "cards_published": len(stats.cards),
        "distinct_cards": len({c.card_digest for c in stats.cards}),
        "commitment_changes": [r.model_dump() for r in stats.recommits],
        "card_updates": stats.card_updates,
        "decision_requests": stats.decision_requests,
        "answered_requests": stats.answered_requests,
        "pending_requests": sorted(stats.pending_requests),
        "certificates": stats.certificates,
        "certificates_without_request": stats.certificates_without_request,
        "decisions": dict(sorted(stats.decisions.items())),
        "flips": stats.flips,
        "capped": stats.capped,
        # certified radii by what they are: exact (the true radius rounded down) or fast (a lower bound)
        "radius": {"exact": stats.exact_radius, "fast": stats.certificates - stats.flips - stats.exact_radius},
        "eps": eps_summary(eps),
        "eps_values": [exact_decimal(v) for v in eps],
        # auditors' attestations logged for the model's cards: how many, and by auditor name
        "attestations": stats.attestations,
        "attested_by": dict(sorted(stats.auditors.items())),
    }


def build_report(state: MonitorState, *, violations: Sequence[str], notes: Sequence[str], new_entries: int) -> dict[str, Any]:
    kept = state.checkpoint
    return {
        "origin": state.origin,
        "service": state.service,
        "log_key": state.log_key,
        "generated_at": _now(),
        "checkpoint": {"size": kept.size, "root_hash": kept.root_hash} if kept else None,
        "consistent": not violations,
        "violations": list(violations),
        "flags": [describe_recommit(m, r) for m, s in sorted(state.models.items()) for r in s.recommits],
        "notes": list(notes),
        "new_entries": new_entries,
        "models": {m: model_report(s) for m, s in sorted(state.models.items())},
        # old certificate_issued leaves served redacted: in the tree, in no model's statistics
        "redacted_certificates": state.redacted_certificates,
    }


def _share(answered: int, requests: int) -> str:
    if requests == 0:
        return "-"
    return f"{answered}/{requests} ({100 * answered / requests:.0f}%)"


def _attested(count: int, by: dict[str, int]) -> str:
    """'3 (audit.example x2, other.example)', or '-' without any attestation."""
    if not count:
        return "-"
    names = ", ".join(name if n == 1 else f"{name} x{n}" for name, n in sorted(by.items()))
    return f"{count} ({names})"


def render_report(report: dict[str, Any], new_flags: Sequence[str] = ()) -> str:
    """The report as plain text: violations and flags first, then one row per model."""
    lines = [f"VIOLATION: {v}" for v in report["violations"]]
    lines += [f"FLAG: {f}{' (new)' if f in new_flags else ''}" for f in report["flags"]]
    lines += [f"NOTE: {n}" for n in report["notes"]]
    kept = report["checkpoint"]
    where = f"{kept['size']} leaves, root {kept['root_hash']}" if kept else "no checkpoint kept yet"
    verdict = "consistent" if report["consistent"] else "NOT ADVANCED (violation)"
    lines.append(f"log {report['origin']} at {report['service']}: {where}; "
                 f"{report['new_entries']} new entries verified; {verdict}")
    header = ("model", "cards", "recommits", "attested", "requests", "certificates", "answered", "flips", "exact",
              "eps min", "eps median", "eps max")
    rows = [header]
    for model_id, m in report["models"].items():
        eps = m["eps"] or {"min": "-", "median": "-", "max": "-"}
        rows.append((model_id, str(m["cards_published"]), str(len(m["commitment_changes"])),
                     _attested(m.get("attestations", 0), m.get("attested_by", {})),
                     str(m["decision_requests"]), str(m["certificates"]),
                     _share(m["answered_requests"], m["decision_requests"]), str(m["flips"]),
                     str(m.get("radius", {}).get("exact", 0)), eps["min"], eps["median"], eps["max"]))
    if len(rows) > 1:
        widths = [max(len(r[i]) for r in rows) for i in range(len(header))]
        for row in rows:  # the model id left-aligned, numbers right-aligned
            cells = [row[0].ljust(widths[0])] + [c.rjust(w) for c, w in zip(row[1:], widths[1:])]
            lines.append("  ".join(cells))
    else:
        lines.append("no model events in the log yet")
    if report.get("redacted_certificates"):
        lines.append(f"{report['redacted_certificates']} old certificate leaf(s) served redacted (leaf hash only): "
                     "in the tree, not in the statistics")
    for model_id, m in report["models"].items():
        pending = m["pending_requests"]
        if pending:
            shown = ", ".join(pending[:5]) + (f", ... ({len(pending) - 5} more)" if len(pending) > 5 else "")
            lines.append(f"{model_id}: {len(pending)} decision request(s) without a certificate: {shown}")
    return "\n".join(lines) + "\n"


# -- plots --------------------------------------------------------------------------


class PlotsUnavailable(MonitorError):
    """matplotlib is not installed."""


_VARIANTS = ("fair", "unfair")


def variant_of(model_id: str) -> tuple[str, str] | None:
    """(model id with its fair/unfair token replaced by '*', the token), or None without exactly one such token."""
    parts = re.split(r"([-_.])", model_id)
    found = [i for i, p in enumerate(parts) if p.lower() in _VARIANTS]
    if len(found) != 1:
        return None
    i = found[0]
    return "".join(parts[:i] + ["*"] + parts[i + 1:]), parts[i].lower()


def plot_groups(model_ids: Sequence[str]) -> list[tuple[str, list[str]]]:
    """(figure name, model ids drawn side by side): fair/unfair pairs together, every other model alone."""
    by_base: dict[str, dict[str, str]] = {}
    for model_id in model_ids:
        found = variant_of(model_id)
        if found:
            by_base.setdefault(found[0], {})[found[1]] = model_id
    paired: set[str] = set()
    groups: list[tuple[str, list[str]]] = []
    for base, variants in sorted(by_base.items()):
        if set(variants) == set(_VARIANTS):
            pair = [variants["fair"], variants["unfair"]]
            paired.update(pair)
            groups.append((base.replace("*", "fair-vs-unfair"), pair))
    groups += [(m, [m]) for m in sorted(model_ids) if m not in paired]
    return groups


def write_plots(state: MonitorState, directory: Path) -> list[Path]:
    """A PNG histogram of eps per model (fair/unfair variants side by side); the files written."""
    try:
        from matplotlib.figure import Figure
        from matplotlib.ticker import MaxNLocator
    except ImportError:
        raise PlotsUnavailable("matplotlib is not installed (pip install 'fairproof[prover]'): "
                               "no plots written") from None
    directory.mkdir(parents=True, exist_ok=True)
    written = []
    with_eps = [m for m, s in state.models.items() if s.eps]
    for name, model_ids in plot_groups(with_eps):
        fig = Figure(figsize=(5.5 * len(model_ids), 4), layout="constrained")
        axes = fig.subplots(1, len(model_ids), sharex=True, squeeze=False)[0]
        for ax, model_id in zip(axes, model_ids):
            stats = state.models[model_id]
            values = [float(v) for v in stats.eps_values()]  # floats for drawing only
            ax.hist(values, bins=min(30, max(5, len(values) // 2)), color="#4c72b0", edgecolor="white")
            ax.set_title(f"{model_id}\n{stats.certificates} certificates, {stats.flips} flips")
            ax.set_xlabel("certified radius eps")
            ax.set_ylabel("certificates")
            ax.yaxis.set_major_locator(MaxNLocator(integer=True))
        path = directory / f"eps-{name}.png"
        fig.savefig(path, dpi=100)
        written.append(path)
    return written
