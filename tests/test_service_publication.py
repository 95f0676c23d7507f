"""Which card the service serves: always the published one, never the file that happens to be on disk.

A bank operator recommits a model directory under a running service (or
before a restart). Customers keep getting the published card, decisions are
never taken under an unpublished commitment, and only the admin's explicit
publication changes the card, appending it to the transparency log.
"""
from __future__ import annotations

import shutil

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import text

from commitments.card import ModelCard
from commitments.log import parse_leaf
from prover_service.service.app import create_app
from prover_service.service.database import migrate, open_service_database
from prover_service.service.settings import Settings

from bank_fixtures import MODEL

ADMIN = {"X-API-Key": "publication-test-admin-key"}


@pytest.fixture
def models_dir(bank, tmp_path):
    models = tmp_path / "models"
    shutil.copytree(bank.prover.workspace.root, models / MODEL)
    return models


def _settings(models_dir) -> Settings:
    return Settings(models_dir=models_dir, admin_api_key=ADMIN["X-API-Key"], workers=0)


def _leaves(client: TestClient) -> list:
    size = int(client.get("/v1/log/checkpoint").json()["checkpoint"].split("\n")[1])
    if size == 0:
        return []
    return [parse_leaf(e["data"].encode()) for e in client.get(f"/v1/log/entries?start=0&end={size}").json()["entries"]]


def _card(client: TestClient) -> ModelCard:
    r = client.get(f"/v1/models/{MODEL}/card")
    assert r.status_code == 200, r.text
    return ModelCard.model_validate_json(r.content)


def _recommit(models_dir) -> ModelCard:
    from prover_service.publishing import commit_model
    from prover_service.workspace import ModelWorkspace

    return commit_model(ModelWorkspace.open(models_dir / MODEL), model_id=MODEL, force=True)


def test_a_recommitted_card_is_served_only_once_an_admin_publishes_it(bank, models_dir):
    with TestClient(create_app(_settings(models_dir))) as client:
        assert client.post("/v1/admin/models", json={"directory": MODEL}, headers=ADMIN).status_code == 201
        published = _card(client)
        assert published.digest() == bank.card.digest()
        recommitted = _recommit(models_dir)
        assert recommitted.commitment != published.commitment
        for _ in range(3):
            assert _card(client).digest() == published.digest()
    # After a restart nothing is cached: the card is still the published one, and no decision is taken
    # with weights the published card does not commit to.
    with TestClient(create_app(_settings(models_dir))) as client:
        assert _card(client).digest() == published.digest()
        refused = client.post(f"/v1/models/{MODEL}/decisions", json={"record": bank.records[0]})
        assert refused.status_code == 503 and "an admin must publish" in refused.json()["detail"]
        assert client.post(f"/v1/admin/models/{MODEL}/card").status_code == 401
        assert client.post(f"/v1/admin/models/{MODEL}/card", headers=ADMIN).status_code == 201
        assert _card(client).digest() == recommitted.digest()
        assert client.post(f"/v1/admin/models/{MODEL}/card", headers=ADMIN).status_code == 200  # nothing new
        accepted = client.post(f"/v1/models/{MODEL}/decisions", json={"record": bank.records[0]})
        assert accepted.status_code == 202, accepted.text
        leaves = _leaves(client)
    assert [(leaf.kind, getattr(leaf, "commitment", None)) for leaf in leaves] == [
        ("card_published", published.commitment), ("card_published", recommitted.commitment),
        ("decision_requested", None)]
    assert leaves[2].card_digest == recommitted.digest() and leaves[2].request_id == accepted.json()["job_id"]


def _registered_before_the_log(models_dir, card: ModelCard) -> Settings:
    """A service database at the schema before the log, with the model registered as it was then."""
    settings = _settings(models_dir)
    db = open_service_database(settings.resolved_database_url, upgrade=False)
    migrate(db.engine, "0001")
    with db.engine.begin() as conn:
        conn.execute(text("INSERT INTO service_models (model_id, directory, commitment, card_digest, registered_at) "
                          "VALUES (:m, :m, :c, :d, CURRENT_TIMESTAMP)"),
                     {"m": MODEL, "c": card.commitment, "d": card.digest()})
    db.dispose()
    return settings


def test_a_model_registered_before_the_log_existed_is_logged_on_first_read(bank, models_dir):
    settings = _registered_before_the_log(models_dir, bank.card)
    with TestClient(create_app(settings)) as client:
        assert _card(client).digest() == bank.card.digest()
        assert [leaf.kind for leaf in _leaves(client)] == ["card_published"]
        assert _card(client).digest() == bank.card.digest()  # logged once, not at every read
        assert len(_leaves(client)) == 1


def test_a_registered_card_changed_on_disk_before_the_log_existed_is_not_logged_silently(bank, models_dir):
    settings = _registered_before_the_log(models_dir, bank.card)
    _recommit(models_dir)
    with TestClient(create_app(settings)) as client:
        assert client.get(f"/v1/models/{MODEL}/card").status_code == 503
        assert _leaves(client) == []
