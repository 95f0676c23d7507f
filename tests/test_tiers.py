"""The suite's tiers (tests/tiers.py) and the skips CI must not take (tests/required_peers.py), each run on a
small suite of its own under pytest's pytester."""
from __future__ import annotations

from pathlib import Path

import pytest

import tiers
from required_peers import REQUIRE_PEERS, missing_what
from tiers import INTEGRATION_MODULES, INTEGRATION_TESTS, is_integration

pytest_plugins = ["pytester"]

# The inner suite's conftest: the same hooks as tests/conftest.py, and a stand-in for the trained bank.
CONFTEST = """
import pytest

from required_peers import pytest_runtest_makereport
from tiers import mark_integration


def pytest_collection_modifyitems(config, items):
    mark_integration(items)


@pytest.fixture(scope="session")
def bank():
    return "trained"


@pytest.fixture
def built_on_bank(bank):
    return bank
"""

INI = """
[pytest]
markers =
    integration: the integration tier
    postgres: needs PostgreSQL
"""

TIERED = """
import pytest


def test_plain():
    assert 1 + 1 == 2


def test_uses_bank(bank):
    assert bank == "trained"


def test_uses_a_fixture_built_on_bank(built_on_bank):
    assert built_on_bank == "trained"


@pytest.mark.postgres
def test_needs_postgres():
    assert True


@pytest.mark.parametrize("n", [1, 2])
def test_parametrized_plain(n):
    assert n in (1, 2)
"""

SKIPS = """
import pytest

from fairness.errors import DataError


def _load():
    raise DataError("german/german.data is not listed in SHA256SUMS")


def test_data_missing_while_handling_data_error():
    try:
        _load()
    except DataError as exc:
        pytest.skip(f"German Credit not available: {exc}")


@pytest.fixture(scope="module")
def german():
    try:
        _load()
    except DataError as exc:
        pytest.skip(f"German not available: {exc}")


def test_data_missing_in_a_shared_fixture(german):
    assert german


def test_data_missing_by_reason():
    pytest.skip("shared datasets not available: ../shared/datasets")


def test_peer_missing():
    pytest.skip("node is not installed")


def test_skip_by_design():
    pytest.skip("the one-hot card's key is a circuit's that constrains nothing")


@pytest.mark.skipif(True, reason="dropping to an unprivileged user needs root")
def test_skipif_by_design():
    assert False
"""


@pytest.fixture
def inner(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makeconftest(CONFTEST)
    pytester.makeini(INI)
    pytester.makepyfile(test_tiered=TIERED, test_skips=SKIPS)
    return pytester


def _selected(pytester: pytest.Pytester, expression: str) -> set[str]:
    result = pytester.runpytest("--collect-only", "-q", "-m", expression, "test_tiered.py")
    return {line.split("::", 1)[1] for line in result.outlines if "::" in line}


def test_integration_selects_the_bank_and_peer_tests(inner: pytest.Pytester) -> None:
    assert _selected(inner, "integration") == {
        "test_uses_bank", "test_uses_a_fixture_built_on_bank", "test_needs_postgres"}


def test_not_integration_selects_the_rest(inner: pytest.Pytester) -> None:
    assert _selected(inner, "not integration") == {
        "test_plain", "test_parametrized_plain[1]", "test_parametrized_plain[2]"}


def test_a_listed_test_is_integration_in_every_parametrization(inner: pytest.Pytester,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tiers, "INTEGRATION_TESTS", frozenset({"test_tiered.py::test_parametrized_plain"}))
    assert _selected(inner, "not integration") == {"test_plain"}


def test_a_listed_module_is_integration_whole(inner: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tiers, "INTEGRATION_MODULES", frozenset({"test_tiered.py"}))
    assert _selected(inner, "not integration") == set()


def test_the_tiers_partition_the_suite(inner: pytest.Pytester) -> None:
    everything = _selected(inner, "integration or not integration")
    fast, integration = _selected(inner, "not integration"), _selected(inner, "integration")
    assert len(everything) == 6 and fast | integration == everything and not fast & integration


def test_listed_modules_and_tests_are_integration_whatever_they_use() -> None:
    for module in INTEGRATION_MODULES:
        assert is_integration(f"{module}::test_anything", ["tmp_path"], [])
    for test in INTEGRATION_TESTS:
        assert is_integration(test, ["tmp_path"], [])
    assert not is_integration("test_not_listed.py::test_anything", ["tmp_path"], ["slow"])


def test_listed_modules_and_tests_exist() -> None:
    """A renamed or removed module or test must leave the lists too (else its successor joins the fast tier)."""
    here = Path(__file__).parent
    missing = [module for module in INTEGRATION_MODULES if not (here / module).is_file()]
    for test in INTEGRATION_TESTS:
        module, *path = test.split("::")
        source = (here / module).read_text() if (here / module).is_file() else ""
        if f"def {path[-1]}(" not in source:
            missing.append(test)
    assert sorted(missing) == []


def test_without_the_variable_missing_data_and_peers_skip(inner: pytest.Pytester,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(REQUIRE_PEERS, raising=False)
    inner.runpytest("test_skips.py").assert_outcomes(skipped=6)


def test_with_the_variable_missing_data_and_peers_fail(inner: pytest.Pytester,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(REQUIRE_PEERS, "1")
    result = inner.runpytest("-rfEs", "test_skips.py")
    # A fixture's skip turned failure is reported as an error at setup: the run fails all the same.
    result.assert_outcomes(failed=3, errors=1, skipped=2)
    result.stdout.fnmatch_lines_random([
        "FAILED test_skips.py::test_data_missing_while_handling_data_error*",
        "ERROR test_skips.py::test_data_missing_in_a_shared_fixture*",
        "FAILED test_skips.py::test_data_missing_by_reason*",
        "FAILED test_skips.py::test_peer_missing*",
        "SKIPPED * the one-hot card's key is a circuit's that constrains nothing",
        "SKIPPED * dropping to an unprivileged user needs root",
    ])
    assert result.ret != 0
    assert "required data missing (FAIRPROOF_REQUIRE_PEERS=1): German Credit not available" in result.stdout.str()


@pytest.mark.parametrize("value", ["", "0", "false"])
def test_the_variable_off_keeps_the_skips(inner: pytest.Pytester, monkeypatch: pytest.MonkeyPatch,
                                          value: str) -> None:
    monkeypatch.setenv(REQUIRE_PEERS, value)
    inner.runpytest("test_skips.py").assert_outcomes(skipped=6)


def test_what_is_missing() -> None:
    from fairness.errors import DataError

    try:
        try:
            raise DataError("no dataset directory")
        except DataError:
            raise RuntimeError("wrapped")
    except RuntimeError as wrapped:
        assert missing_what("German Credit not available", wrapped) == "data"
    assert missing_what("COMPAS not available", RuntimeError("no context")) is None
    assert missing_what("German Credit dataset not available: x", None) == "data"
    assert missing_what("PostgreSQL at 127.0.0.1 unreachable", None) == "peer"
    assert missing_what("no native kernel here", None) is None
