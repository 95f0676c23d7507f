"""Idempotent decision requests: a retry after a lost answer is the same job, never a second one.

The real app in process (TestClient, SQLite, no workers: jobs stay queued), the bank's German model
registered. With an Idempotency-Key, the same request again answers the same job and token and appends
nothing to the log; the same key with another record is 409; without a key, each request is a job of its
own. The customer's client sends a key and asks again when an answer is lost.
"""
from __future__ import annotations

import json

import httpx
import pytest
from fastapi.testclient import TestClient

from bank_fixtures import MODEL
from commitments.log import parse_leaf
from service_fixtures import bank_app
from verifier_client.service_client import ServiceClient, new_idempotency_key

ADMIN = {"X-API-Key": "idempotency-test-admin-key"}
PATH = f"/v1/models/{MODEL}/decisions"


@pytest.fixture
def client(bank, tmp_path):
    with bank_app(bank, tmp_path, ADMIN["X-API-Key"], rate_limit_per_minute=0) as client:
        yield client


def _decisions_logged(client: TestClient) -> int:
    size = int(client.get("/v1/log/checkpoint").json()["checkpoint"].split("\n")[1])
    entries = client.get("/v1/log/entries", params={"start": 0, "end": size}).json()["entries"]
    return sum(parse_leaf(e["data"].encode()).kind == "decision_requested" for e in entries if e.get("data"))


def test_a_retry_with_the_same_key_is_the_same_job(bank, client):
    key = {"Idempotency-Key": new_idempotency_key()}
    first = client.post(PATH, json={"record": bank.records[0]}, headers=key)
    again = client.post(PATH, json={"record": bank.records[0]}, headers=key)
    assert first.status_code == again.status_code == 202
    assert (first.json()["job_id"], first.json()["job_token"]) == (again.json()["job_id"], again.json()["job_token"])
    assert _decisions_logged(client) == 1
    job = client.get(f"/v1/jobs/{first.json()['job_id']}", headers={"X-Job-Token": again.json()["job_token"]})
    assert job.status_code == 200
    # The twin: without a key, the same record twice is two jobs.
    a, b = (client.post(PATH, json={"record": bank.records[0]}) for _ in range(2))
    assert a.json()["job_id"] != b.json()["job_id"] and _decisions_logged(client) == 3


def test_a_key_reused_for_another_record_or_model_is_refused_or_apart(bank, client):
    key = {"Idempotency-Key": new_idempotency_key()}
    assert client.post(PATH, json={"record": bank.records[0]}, headers=key).status_code == 202
    other = client.post(PATH, json={"record": bank.records[1]}, headers=key)
    assert other.status_code == 409 and "Idempotency-Key" in other.json()["detail"]
    box = client.post(PATH, json={"record": bank.records[0], "delta": 0.5}, headers=key)
    assert box.status_code == 409
    assert _decisions_logged(client) == 1


@pytest.mark.parametrize("key", ["short", "x" * 129, "spaces are not allowed here", "slash/in/the/key-0123456"])
def test_a_malformed_key_is_a_clear_4xx(bank, client, key):
    answer = client.post(PATH, json={"record": bank.records[0]}, headers={"Idempotency-Key": key})
    assert answer.status_code in (400, 422) and _decisions_logged(client) == 0


def test_the_client_asks_again_with_the_same_key_when_an_answer_is_lost(bank, client):
    """The first answer is lost after the service made the job; the client's retry gets that very job."""
    sent: list[str] = []

    def handler(request: httpx.Request) -> httpx.Response:
        answer = client.request(request.method, request.url.path, content=request.content,
                                headers={k: v for k, v in request.headers.items() if k.lower() != "host"},
                                params=request.url.params)
        if request.method == "POST":
            sent.append(request.headers.get("Idempotency-Key", ""))
            if len(sent) == 1:
                raise httpx.ReadTimeout("the answer was lost", request=request)
        return httpx.Response(answer.status_code, content=answer.content, headers=answer.headers)

    with ServiceClient("http://bank.test", transport=httpx.MockTransport(handler), sleep=lambda _s: None) as svc:
        accepted = svc.submit(MODEL, bank.records[0], idempotency_key=new_idempotency_key())
    assert len(sent) == 2 and sent[0] == sent[1]
    assert _decisions_logged(client) == 1
    job = client.get(f"/v1/jobs/{accepted.job_id}", headers={"X-Job-Token": accepted.job_token})
    assert job.status_code == 200 and json.loads(job.content)["job_id"] == accepted.job_id
    # The twin: without a key, a lost answer is not asked again (it would make a second job).
    sent.clear()
    with ServiceClient("http://bank.test", transport=httpx.MockTransport(handler), sleep=lambda _s: None) as svc:
        with pytest.raises(Exception):
            svc.submit(MODEL, bank.records[0])
    assert len(sent) == 1
