"""Suite-wide settings.

Tests that need an optional peer (the native mcl backend, snarkjs, solc, the
local PostgreSQL server, Chromium, the py-evm EVM) skip when it is absent on a developer's machine. CI
installs every one of them, so there a skip for such a reason would hide a
broken install: with FAIRPROOF_REQUIRE_PEERS=1 those skips become failures.
"""
from __future__ import annotations

import os

import pytest

# Words that identify a skip caused by a missing peer rather than by design.
_PEER_SKIP_MARKERS = ("mcl", "snarkjs", "node", "postgres", "PostgreSQL", "chromium", "selenium", "solc", "eth_tester",
                      "tmux")


def _peers_required() -> bool:
    return os.environ.get("FAIRPROOF_REQUIRE_PEERS", "") not in ("", "0", "false")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if not (_peers_required() and report.skipped and isinstance(report.longrepr, tuple)):
        return
    reason = str(report.longrepr[2])
    if any(marker in reason for marker in _PEER_SKIP_MARKERS):
        report.outcome = "failed"
        report.longrepr = f"required peer missing (FAIRPROOF_REQUIRE_PEERS=1): {reason}"


@pytest.fixture(autouse=True)
def _own_pin_file(tmp_path, monkeypatch):
    """Every test's verifier pins into a file of its own (file mode pins cards too), never the user's."""
    monkeypatch.setenv("FAIRPROOF_PIN_FILE", str(tmp_path / "default-pins.json"))


@pytest.fixture(scope="session")
def bank(tmp_path_factory):
    """A committed German Credit (4,2) model and two customers' real certificates (tests/bank_fixtures.py)."""
    from bank_fixtures import build_bank

    bank = build_bank(tmp_path_factory)
    yield bank
    bank.db.dispose()


@pytest.fixture(scope="session")
def service_models(tmp_path_factory):
    """A models directory with the German (4,2) model committed, precomputed and keyed for ten test
    customers (the service's tests ask for certificates of the first ten), built once; each service test copies
    it (service_fixtures.copy_models_dir) and owns its copy."""
    from tests.service_fixtures import build_models_dir

    return build_models_dir(tmp_path_factory.mktemp("service-models-template"), key_customers=10)
