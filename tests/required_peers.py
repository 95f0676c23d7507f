"""Skips that must not pass silently in CI: a missing optional peer or missing data.

Tests that need an optional peer (the native mcl backend, snarkjs, solc, the local PostgreSQL server, Chromium,
the py-evm EVM) or the benchmark datasets (`fairness.datasets.resolve_data_dir`, in CI ../shared/datasets) skip
when it is absent on a developer's machine. CI provides every one of them, so there a skip for such a reason
would hide a broken install: with FAIRPROOF_REQUIRE_PEERS=1 those skips become failures. Every other skip (a
test that does not apply here by design) stays a skip.

A skip is for missing data when it was raised while handling a `DataError` (the loaders' error for a missing,
unlisted or corrupt file) or its reason names a dataset; for a missing peer when its reason names the peer.
"""
from __future__ import annotations

import os
from collections.abc import Generator

import pytest

from fairness.errors import DataError

REQUIRE_PEERS = "FAIRPROOF_REQUIRE_PEERS"

# Words that identify a skip caused by a missing peer rather than by design.
PEER_WORDS = ("mcl", "snarkjs", "node", "postgres", "PostgreSQL", "chromium", "selenium", "solc", "eth_tester", "tmux")

# Words that identify a skip caused by missing data.
DATA_WORDS = ("dataset",)


def peers_required() -> bool:
    """Whether FAIRPROOF_REQUIRE_PEERS is set (anything but empty, 0 or false)."""
    return os.environ.get(REQUIRE_PEERS, "") not in ("", "0", "false")


def raised_for_missing_data(exc: BaseException | None) -> bool:
    """Whether `exc` was raised while handling (or from) a `DataError`, directly or further down the chain."""
    seen: set[int] = set()
    while exc is not None and id(exc) not in seen:
        if isinstance(exc, DataError):
            return True
        seen.add(id(exc))
        exc = exc.__cause__ or exc.__context__
    return False


def missing_what(reason: str, exc: BaseException | None) -> str | None:
    """"data" or "peer" when a skip with this reason and exception is for something CI must have, else None."""
    if raised_for_missing_data(exc) or any(word in reason for word in DATA_WORDS):
        return "data"
    if any(word in reason for word in PEER_WORDS):
        return "peer"
    return None


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item,
                              call: pytest.CallInfo[None]) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    """Under FAIRPROOF_REQUIRE_PEERS=1, turns a skip for a missing peer or missing data into a failure."""
    report = yield
    if not (peers_required() and report.skipped and isinstance(report.longrepr, tuple)):
        return report
    reason = str(report.longrepr[2]).removeprefix("Skipped: ")
    what = missing_what(reason, call.excinfo.value if call.excinfo is not None else None)
    if what is not None:
        report.outcome = "failed"
        report.longrepr = f"required {what} missing ({REQUIRE_PEERS}=1): {reason}"
    return report
