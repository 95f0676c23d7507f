"""One run of the monitor: the served checkpoint checked against the kept one, the new entries fetched,
hashed into the kept compact range and audited, and the state advanced only when everything holds."""
from __future__ import annotations

import base64
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterator

from commitments.log import MAX_ENTRIES_PER_PAGE, LogEntry, LogKey
from transparency import merkle, note

from ..pins import KeptCheckpoint
from ..service_client import ServiceClient
from .checkpoints import (SignedTree, canonical_key, check_against_kept, claimed_origin, log_identity_problem,
                          log_key_verifier, open_checkpoint, parse_log_key)
from .errors import MonitorError, Violation
from .leaves import Audit, CardSource
from .rendering import build_report
from .state import MonitorState, StateDir, now_iso

# Called after each page of entries with (entries downloaded, entries to download).
Progress = Callable[[int, int], None]


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")



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
        base = kept or MonitorState(origin=verifier.name, log_key=verifier.vkey(), key_pinned_at=now_iso(),
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


