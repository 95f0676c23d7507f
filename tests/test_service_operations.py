"""Operating the service: keys set up by admin jobs, backpressure, outages, what is echoed back.

Runs the real FastAPI app in process (TestClient) on a model imported under its own schema (the
synthetic credit book of tests/synthetic_credit.py), with the service's own SQLite database.
"""
from __future__ import annotations

import json

import pytest

import synthetic_credit as book
from prover_service.cli import main as fairproof

torch = pytest.importorskip("torch")


@pytest.fixture(scope="module")
def bank(tmp_path_factory):
    """The bank's schema, its torch network and a few customers' records."""
    root = tmp_path_factory.mktemp("service-bank")
    return {"root": root, "rows": book.write_bank(root, 120, seed=3)}


ADMIN = {"X-API-Key": "service-operations-admin-key"}


def _models(bank, tmp_path):
    """A models directory holding the bank's network, imported and committed as `synthetic`."""
    models = tmp_path / "models"
    assert _import(bank, models / "synthetic") == 0
    assert fairproof(["commit", "--model", str(models / "synthetic")]) == 0
    return models


def _first_record(bank) -> dict:
    return {a: bank["rows"][0][a] for a in book.schema().attributes}


def _serving(models, **settings):
    """The service on `models` with `synthetic` registered (TestClient context manager)."""
    from contextlib import contextmanager

    from fastapi.testclient import TestClient

    from prover_service.service.app import create_app
    from prover_service.service.settings import Settings

    @contextmanager
    def running():
        with TestClient(create_app(Settings(models_dir=models, admin_api_key=ADMIN["X-API-Key"], **settings))) as client:
            assert client.post("/v1/admin/models", json={"directory": "synthetic"}, headers=ADMIN).status_code in (200, 201)
            yield client

    return running()


def _import(bank, out):
    """Import the bank's torch network under its schema (the decision check is the import tests' subject)."""
    return fairproof(["import-model", str(bank["root"] / "net.pt"), "--format", "torch",
                      "--schema", str(bank["root"] / "schema.json"), "--no-check", "--out", str(out)])


def test_the_service_sets_up_a_missing_bucket_in_an_admin_job_never_in_the_customers(bank, tmp_path):
    """A customer whose bucket has no keys is told to retry later; an admin job sets the bucket up and
    publishes it; the customer's next submission is proved with those keys."""
    import time

    models = _models(bank, tmp_path)
    admin = ADMIN
    record = _first_record(bank)

    def finished(client, job_id, headers, timeout=300):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            job = client.get(f"/v1/jobs/{job_id}", headers=headers).json()
            assert "status" in job, job
            if job["status"] in ("succeeded", "failed"):
                return job
            time.sleep(0.2)
        raise AssertionError(f"job {job_id} did not finish")

    with _serving(models, workers=1, single_party_setup=True) as client:
        assert client.get("/v1/models/synthetic/card").json()["circuits"] == []
        first = client.post("/v1/models/synthetic/decisions", json={"record": record}).json()
        job = finished(client, first["job_id"], {"X-Job-Token": first["job_token"]})
        assert job["status"] == "failed" and job["error"].startswith("retry later")
        assert job["result"]["retry_after_seconds"] > 0
        # The setup job is the bank's: its operator reads it with the admin key, no customer token opens it.
        assert client.get(f"/v1/jobs/{job['result']['key_setup_job_id']}",
                          headers={"X-Job-Token": first["job_token"]}).status_code == 401
        setup = finished(client, job["result"]["key_setup_job_id"], admin)
        assert setup["kind"] == "key_setup" and setup["status"] == "succeeded", setup
        card = client.get("/v1/models/synthetic/card").json()
        assert [c["bucket"] for c in card["circuits"]] == [setup["result"]["bucket"]]
        again = client.post("/v1/models/synthetic/decisions", json={"record": record}).json()
        done = finished(client, again["job_id"], {"X-Job-Token": again["job_token"]})
        assert done["status"] == "succeeded" and done["certificate_url"], done


def test_nothing_a_client_sends_is_echoed_at_length(bank, tmp_path):
    """A 60 KB value is not echoed in the 422 detail; a long or odd request id is replaced, not echoed."""
    record = _first_record(bank)
    with _serving(_models(bank, tmp_path), workers=0) as client:
        r = client.post("/v1/models/synthetic/decisions", json={"record": {**record, "income": "9" * 60_000 + "x"}},
                        headers={"x-request-id": "r" * 10_000})
        assert r.status_code == 422 and "income = '99999" in r.json()["detail"]
        assert len(r.text) < 1_000 and "(60003 characters)" in r.json()["detail"]
        assert len(r.headers["x-request-id"]) == 32  # a fresh id, not the 10 KB one
        ok = client.get("/v1/health", headers={"x-request-id": "trace-42.a:b"})
        assert ok.headers["x-request-id"] == "trace-42.a:b"


def test_a_full_queue_answers_429_with_retry_after_and_accepted_jobs_still_complete(bank, tmp_path):
    import time

    models = _models(bank, tmp_path)
    records = [{a: row[a] for a in book.schema().attributes} for row in bank["rows"][:3]]
    for i, record in enumerate(records):  # the bank sets up the buckets these customers need ahead
        (tmp_path / f"r{i}.json").write_text(json.dumps(record))
        assert fairproof(["prove", "--model", str(models / "synthetic"), "--record", str(tmp_path / f"r{i}.json"),
                          "--out", str(tmp_path / f"b{i}.json"), "--single-party-setup"]) == 0
    with _serving(models, workers=0, max_queued_per_model=2) as client:  # nobody proves: the queue fills
        accepted = [client.post("/v1/models/synthetic/decisions", json={"record": r}) for r in records[:2]]
        assert [r.status_code for r in accepted] == [202, 202]
        full = client.post("/v1/models/synthetic/decisions", json={"record": records[2]})
        assert full.status_code == 429 and int(full.headers["retry-after"]) > 0
        assert "certificates waiting" in full.json()["detail"]
    with _serving(models, workers=1, max_queued_per_model=2) as client:  # a worker: the accepted jobs complete
        deadline = time.monotonic() + 300
        jobs = [(r.json()["job_id"], {"X-Job-Token": r.json()["job_token"]}) for r in accepted]
        while time.monotonic() < deadline:
            views = [client.get(f"/v1/jobs/{j}", headers=h).json() for j, h in jobs]
            if all(v["status"] in ("succeeded", "failed") for v in views):
                break
            time.sleep(0.2)
        assert [v["status"] for v in views] == ["succeeded", "succeeded"], views
        assert client.post("/v1/models/synthetic/decisions", json={"record": records[2]}).status_code == 202


def test_a_database_or_disk_outage_answers_503_with_retry_after(bank, tmp_path, monkeypatch):
    import errno

    from sqlalchemy.exc import OperationalError

    from prover_service.service import app as service_app
    from prover_service.service.jobs import JobLedger

    record = _first_record(bank)
    with _serving(_models(bank, tmp_path), workers=0) as client:
        assert client.get("/v1/ready").json()["checks"]["storage"] == "ok"

        def down(*args, **kwargs):
            raise OperationalError("SELECT 1", {}, ConnectionRefusedError("connection refused"))

        with monkeypatch.context() as m:
            m.setattr(JobLedger, "backlog", down)
            r = client.post("/v1/models/synthetic/decisions", json={"record": record})
            assert r.status_code == 503 and r.headers["retry-after"] == "5"
            assert r.json()["detail"] == "the service's database is unavailable; retry shortly"

        def full(*args, **kwargs):
            raise OSError(errno.ENOSPC, "No space left on device")

        with monkeypatch.context() as m:
            m.setattr(JobLedger, "submit", full)
            r = client.post("/v1/models/synthetic/decisions", json={"record": record})
            assert r.status_code == 503 and "storage is full or failing" in r.json()["detail"]
            m.setattr(service_app, "_probe_write", full)
            ready = client.get("/v1/ready")
            assert ready.status_code == 503 and ready.json()["checks"]["storage"] == "not writable: ENOSPC"
        # Recovered: nothing lost, the next request is accepted.
        assert client.post("/v1/models/synthetic/decisions", json={"record": record}).status_code == 202
        assert client.get("/v1/ready").json()["checks"]["storage"] == "ok"


def test_the_interactive_api_pages_are_off_unless_asked_for(tmp_path):
    from fastapi.testclient import TestClient

    from prover_service.service.app import create_app
    from prover_service.service.settings import Settings

    (tmp_path / "models").mkdir()
    with TestClient(create_app(Settings(models_dir=tmp_path / "models", workers=0))) as client:
        assert client.get("/docs").status_code == 404 and client.get("/redoc").status_code == 404
        assert client.get("/openapi.json").status_code == 200
    with TestClient(create_app(Settings(models_dir=tmp_path / "models", workers=0, api_docs=True))) as client:
        assert client.get("/docs").status_code == 200


def test_serve_and_worker_wait_for_the_database_then_exit_with_one_line(tmp_path):
    """PostgreSQL not up yet: retried with backoff, then one line naming the problem, never a traceback."""
    import socket

    from prover_service.service.database import open_service_database
    from prover_service.service.errors import ConfigurationError

    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    url = f"postgresql+psycopg://nobody@127.0.0.1:{port}/none"
    slept = []
    with pytest.raises(ConfigurationError, match="the service database does not answer"):
        open_service_database(url, wait_seconds=3, sleep=slept.append)
    assert len(slept) >= 2 and slept == sorted(slept) and slept[1] == 2 * slept[0]  # backed off
    import os
    import subprocess
    import sys

    (tmp_path / "models").mkdir()
    env = {**os.environ, "FAIRPROOF_DATABASE_URL": url, "FAIRPROOF_DATABASE_WAIT_SECONDS": "1",
           "FAIRPROOF_MODELS_DIR": str(tmp_path / "models")}
    for command in (["worker"], ["serve", "--port", "0"]):
        done = subprocess.run([sys.executable, "-m", "prover_service.cli", *command], env=env, capture_output=True,
                              text=True, timeout=120)
        assert done.returncode == 1, (command, done.stderr[-2000:])
        assert "Traceback" not in done.stderr
        assert "fairproof: error: the service database does not answer" in done.stderr


def test_one_client_is_rate_limited_without_touching_the_others():
    from prover_service.service.limits import ClientRateLimit

    now = [0.0]
    limit = ClientRateLimit(per_minute=3, clock=lambda: now[0])
    assert [limit.take("10.0.0.1") for _ in range(3)] == [None, None, None]  # a burst of 3
    wait = limit.take("10.0.0.1")
    assert wait is not None and 19 < wait <= 20  # one token every 20 s
    assert limit.take("10.0.0.2") is None  # another client is not affected
    now[0] += 20.0
    assert limit.take("10.0.0.1") is None and limit.take("10.0.0.1") is not None


def test_the_service_answers_a_flooding_client_429_with_retry_after(bank, tmp_path):
    record = _first_record(bank)
    with _serving(_models(bank, tmp_path), workers=0, rate_limit_per_minute=2) as client:
        codes = [client.post("/v1/models/synthetic/decisions", json={"record": record}).status_code for _ in range(2)]
        assert codes == [202, 202]
        flooded = client.post("/v1/models/synthetic/decisions", json={"record": record})
        assert flooded.status_code == 429 and 0 < int(flooded.headers["retry-after"]) <= 30
        assert "too many decision requests from this client" in flooded.json()["detail"]


def test_lenses_are_advertised_and_a_lens_the_card_does_not_prove_is_refused(bank, tmp_path):
    """The model list says which lenses its certificates prove; a request for another one is a 422 naming
    them, and no job is created for it; a request within them is accepted."""
    record = _first_record(bank)
    with _serving(_models(bank, tmp_path), workers=0) as client:
        (summary,) = client.get("/v1/models").json()["models"]
        assert summary["lenses"] == ["radius", "spread"]
        r = client.post("/v1/models/synthetic/decisions", json={"record": record, "lenses": ["persistence"]})
        assert r.status_code == 422 and "does not prove persistence" in r.json()["detail"]
        assert client.post("/v1/models/synthetic/decisions",
                           json={"record": record, "lenses": ["no-such-lens"]}).status_code == 422
        ok = client.post("/v1/models/synthetic/decisions", json={"record": record, "lenses": ["radius", "spread"]})
        assert ok.status_code == 202


def test_a_card_without_the_spread_lens_refuses_it(bank, tmp_path):
    models = tmp_path / "models"
    assert _import(bank, models / "synthetic") == 0
    assert fairproof(["commit", "--model", str(models / "synthetic"), "--no-spread"]) == 0
    with _serving(models, workers=0) as client:
        (summary,) = client.get("/v1/models").json()["models"]
        assert summary["lenses"] == ["radius"]
        r = client.post("/v1/models/synthetic/decisions", json={"record": _first_record(bank), "lenses": ["spread"]})
        assert r.status_code == 422 and "does not prove spread" in r.json()["detail"]


def test_a_request_names_the_persistence_box_and_the_certificate_proves_it(bank, tmp_path):
    """A card with the persistence lens: the customer's delta reaches the proof (rounded up to the card's
    scale), a box the card cannot prove is a 422 with no job, and the certificate verifies under the card."""
    import math
    import time

    from commitments.bundle import CertificateBundle
    from commitments.card import ModelCard
    from verifier_client.verify import verify_bundle

    models = tmp_path / "models"
    assert _import(bank, models / "synthetic") == 0
    assert fairproof(["commit", "--model", str(models / "synthetic"), "--persistence", "0.5"]) == 0
    record = _first_record(bank)
    (tmp_path / "r.json").write_text(json.dumps(record))
    assert fairproof(["prove", "--model", str(models / "synthetic"), "--record", str(tmp_path / "r.json"),
                      "--out", str(tmp_path / "b.json"), "--single-party-setup"]) == 0  # the bank keys its bucket
    with _serving(models, workers=1) as client:
        (summary,) = client.get("/v1/models").json()["models"]
        assert summary["lenses"] == ["radius", "spread", "persistence"]
        card = ModelCard.model_validate_json(client.get("/v1/models/synthetic/card").text)
        cap = card.persistence_delta_cap / (1 << card.scale_bits)
        for delta, words in ((cap * 2, "exceeds"), (-1, "delta"), ("wide", "delta"), (1e9, "delta")):
            r = client.post("/v1/models/synthetic/decisions", json={"record": record, "delta": delta})
            assert r.status_code == 422 and words in r.json()["detail"], (delta, r.text)
        accepted = client.post("/v1/models/synthetic/decisions", json={"record": record, "delta": 0.1}).json()
        token = {"X-Job-Token": accepted["job_token"]}
        deadline = time.monotonic() + 300
        while (job := client.get(f"/v1/jobs/{accepted['job_id']}", headers=token).json())["status"] not in (
                "succeeded", "failed") and time.monotonic() < deadline:
            time.sleep(0.2)
        assert job["status"] == "succeeded", job
        bundle = CertificateBundle.model_validate_json(client.get(job["certificate_url"], headers=token).text)
    assert bundle.persistence.delta == math.ceil(0.1 * (1 << card.scale_bits))
    assert verify_bundle(bundle, card).valid
    default = CertificateBundle.model_validate_json((tmp_path / "b.json").read_text())
    assert default.persistence.delta == card.persistence.default_delta == 1 << (card.scale_bits - 1)


def test_a_card_without_the_persistence_lens_refuses_a_delta(bank, tmp_path):
    with _serving(_models(bank, tmp_path), workers=0) as client:
        r = client.post("/v1/models/synthetic/decisions", json={"record": _first_record(bank), "delta": 0.25})
        assert r.status_code == 422 and "does not prove persistent bias" in r.json()["detail"]
