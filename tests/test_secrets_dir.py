"""Salts kept apart from the models (FAIRPROOF_SECRETS_DIR): an API that never proves never reads
one; processes that prove find it there; a misplaced salt is named, never silently replaced."""
from __future__ import annotations

import json

import pytest

import synthetic_credit as book
from prover_service.cli import main as fairproof

torch = pytest.importorskip("torch")

ADMIN = {"X-API-Key": "secrets-dir-admin-key-0123456789"}


@pytest.fixture(scope="module")
def committed(tmp_path_factory):
    """A model committed with its salt in a secrets directory: (models dir, secrets dir, salt)."""
    from prover_service.workspace import SECRETS_DIR_ENV

    root = tmp_path_factory.mktemp("secrets-bank")
    book.write_bank(root, 80, seed=5)
    models, secrets = root / "models", root / "secrets"
    assert fairproof(["import-model", str(root / "net.pt"), "--format", "torch", "--schema", str(root / "schema.json"),
                      "--no-check", "--out", str(models / "synthetic")]) == 0
    with pytest.MonkeyPatch.context() as env:
        env.setenv(SECRETS_DIR_ENV, str(secrets))
        assert fairproof(["commit", "--model", str(models / "synthetic")]) == 0
    salt = int((secrets / "synthetic" / "salt").read_text())
    return models, secrets, salt


def _service(models, **settings):
    from fastapi.testclient import TestClient

    from prover_service.service.app import create_app
    from prover_service.service.settings import Settings

    return TestClient(create_app(Settings(models_dir=models, admin_api_key=ADMIN["X-API-Key"], **settings)))


def test_commit_writes_the_salt_to_the_secrets_directory_only(committed):
    models, secrets, salt = committed
    assert not (models / "synthetic" / "secret").exists()
    assert (secrets / "synthetic" / "salt").stat().st_mode & 0o077 == 0
    card = json.loads((models / "synthetic" / "card.json").read_text())
    assert str(salt) not in json.dumps(card)


def test_an_api_that_never_proves_serves_the_model_without_any_salt(committed, monkeypatch):
    from prover_service.workspace import SECRETS_DIR_ENV

    models, _, _ = committed
    monkeypatch.delenv(SECRETS_DIR_ENV, raising=False)
    with _service(models, workers=0) as client:
        assert client.post("/v1/admin/models", json={"directory": "synthetic"}, headers=ADMIN).status_code in (200, 201)
        assert client.get("/v1/models/synthetic/card").status_code == 200


def test_a_service_that_proves_needs_the_salt_and_finds_it_only_where_it_is(committed, monkeypatch):
    from prover_service.workspace import SECRETS_DIR_ENV

    models, secrets, salt = committed
    monkeypatch.delenv(SECRETS_DIR_ENV, raising=False)
    with _service(models, workers=1) as client:  # no secrets directory: the model cannot be proved
        refused = client.post("/v1/admin/models", json={"directory": "synthetic"}, headers=ADMIN)
        assert refused.status_code == 422 and "no salt" in json.dumps(refused.json())
    with _service(models, workers=1, secrets_dir=secrets) as client:
        assert client.post("/v1/admin/models", json={"directory": "synthetic"}, headers=ADMIN).status_code in (200, 201)
        assert client.app.state.service.registry.get("synthetic").workspace.salt() == salt


def test_a_salt_left_in_the_model_directory_is_named_not_used(committed, tmp_path):
    import shutil

    from fairness.errors import ModelError
    from prover_service.workspace import ModelWorkspace

    models, secrets, salt = committed
    moved = tmp_path / "models" / "synthetic"
    shutil.copytree(models / "synthetic", moved)
    (moved / "secret").mkdir()
    (moved / "secret" / "salt").write_text(f"{salt}\n")
    empty = tmp_path / "secrets"
    with pytest.raises(ModelError, match="still in .*secret/salt; move it to the secrets directory"):
        ModelWorkspace.open(moved, secrets_dir=empty).salt()
    assert ModelWorkspace.open(moved, secrets_dir=secrets).salt() == salt  # keyed by the directory's name


def test_the_secrets_directory_must_lie_outside_the_models(tmp_path):
    from pydantic import ValidationError

    from prover_service.service.settings import Settings

    with pytest.raises(ValidationError, match="outside the models directory"):
        Settings(models_dir=tmp_path / "models", secrets_dir=tmp_path / "models" / "secrets")
    assert Settings(models_dir=tmp_path / "models", secrets_dir=tmp_path / "secrets").secrets_dir == tmp_path / "secrets"
