"""Precompute jobs are capped: an admin client cannot queue them without bound, and a typed contract
refuses what is not an integer where one is asked for."""
from __future__ import annotations

import pytest

from bank_fixtures import MODEL
from service_fixtures import bank_app

ADMIN = {"X-API-Key": "precompute-cap-test-admin-key"}
PATH = f"/v1/admin/models/{MODEL}/precompute"


@pytest.fixture
def client(bank, tmp_path):
    with bank_app(bank, tmp_path, ADMIN["X-API-Key"], max_queued_precompute=2) as client:
        yield client


def test_precompute_jobs_beyond_the_cap_are_429_and_a_repeat_is_the_same_job(client):
    first = client.post(PATH, json={"key_queries": 0}, headers=ADMIN)
    second = client.post(PATH, json={"key_queries": 1}, headers=ADMIN)
    assert first.status_code == second.status_code == 202 and first.json()["job_id"] != second.json()["job_id"]
    third = client.post(PATH, json={"key_queries": 2}, headers=ADMIN)
    assert third.status_code == 429 and third.headers["retry-after"] == "30"
    again = client.post(PATH, json={"key_queries": 1}, headers=ADMIN)  # the same request: the job waiting
    assert again.status_code == 202 and again.json()["job_id"] == second.json()["job_id"]


@pytest.mark.parametrize("value", ["5", 5.5, True, -1, 1001, 1e300])
def test_key_queries_is_an_integer_in_range(client, value):
    answer = client.post(PATH, json={"key_queries": value}, headers=ADMIN)
    assert answer.status_code == 422, (value, answer.status_code)


def test_key_queries_is_an_integer_as_json_schema_counts_one(client):
    """5.0 is the JSON number 5, an integer to JSON Schema (and to the API's description): the same job as 5."""
    whole = client.post(PATH, json={"key_queries": 5}, headers=ADMIN)
    again = client.post(PATH, content=b'{"key_queries": 5.0}', headers={**ADMIN, "content-type": "application/json"})
    assert whole.status_code == again.status_code == 202 and whole.json()["job_id"] == again.json()["job_id"]
