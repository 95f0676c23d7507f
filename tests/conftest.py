"""Suite-wide settings: the integration tier (tests/tiers.py), skips that must fail in CI
(tests/required_peers.py) and the fixtures every module shares."""
from __future__ import annotations

import pytest

from required_peers import pytest_runtest_makereport  # noqa: F401  (the hook, registered from here)
from tiers import mark_integration


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Marks the integration tier (tests/tiers.py) before `-m` selects."""
    mark_integration(items)


@pytest.fixture(autouse=True)
def _own_pin_file(tmp_path, monkeypatch):
    """Every test's verifier pins into a file of its own (file mode pins cards too), never the user's."""
    monkeypatch.setenv("FAIRPROOF_PIN_FILE", str(tmp_path / "default-pins.json"))


@pytest.fixture(scope="session", autouse=True)
def initial_keys_made_once():
    """`zkey new` (a ceremony's initial key, no secret involved) is a deterministic function of the circuit and
    the phase-1 file: starting a ceremony, `ceremony verify --ptau`, installing it and every `audit-keys`
    regenerate the same bytes for the same bucket, so in this process they are made once per (circuit, phase-1
    file). What each command checks against that key is unchanged; tests of `new_zkey` itself call it directly."""
    from pathlib import Path

    from circuits.groth16 import r1cs_digest
    from circuits.snarkjs import ceremony as ceremony_module
    from circuits.snarkjs import zkey_new
    from prover_service import key_audit

    made: dict = {}
    original = zkey_new.new_zkey

    def new_zkey(r1cs, ptau, backend, progress=None):
        path = Path(getattr(ptau, "path", ptau)).resolve()
        stat = path.stat()
        key = (r1cs_digest(r1cs), str(path), stat.st_size, stat.st_mtime_ns)
        if key not in made:
            made[key] = original(r1cs, ptau, backend, progress)
        return made[key]

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(ceremony_module, "new_zkey", new_zkey)
        patch.setattr(key_audit, "new_zkey", new_zkey)
        yield made


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
