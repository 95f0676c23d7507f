"""The real service on a loopback port with a real PostgreSQL database.

A German (4,2) model is registered over the admin API; several customers ask
for decisions at once and every bundle is verified as a customer verifies it
(card + bundle only). Bad requests of every kind get a clear 4xx and the
service keeps serving.
"""
from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest

from commitments.bundle import CertificateBundle
from commitments.card import ModelCard
from tests.service_fixtures import (ADMIN_KEY, MODEL_DIRECTORY, copy_models_dir, customer_records, fresh_pg_database,
                                    running, serve, wait_for_job)
from verifier_client.verify import verify_bundle

pytestmark = pytest.mark.postgres


@pytest.fixture(scope="module")
def models_dir(service_models, tmp_path_factory):
    # Every customer the tests submit finds its bucket on the card they pin: a bucket set up later makes
    # another card, which customers refuse unless they accept it (tests/test_forgeries.py).
    return copy_models_dir(service_models, tmp_path_factory.mktemp("service-models"))


@pytest.fixture(scope="module")
def live(models_dir, tmp_path_factory):
    with fresh_pg_database() as url:
        with running(serve(models_dir, url, tmp_path_factory.mktemp("logs") / "serve.log",
                           FAIRPROOF_WORKERS="2", FAIRPROOF_MAX_BODY_BYTES="16384")) as service:
            yield service


def _decide(url: str, record: dict) -> dict:
    r = httpx.post(f"{url}/v1/models/{MODEL_DIRECTORY}/decisions", json={"record": record}, timeout=30)
    assert r.status_code == 202, r.text
    return r.json()


def test_concurrent_customers_verify_their_certificates_with_the_client(live, tmp_path):
    from verifier_client.pins import PinStore
    from verifier_client.service_client import ServiceClient, request_certificate

    records = customer_records(6)

    def customer(i: int):
        with ServiceClient(live.url) as client:
            return request_certificate(client, PinStore(tmp_path / f"pins-{i}.json"), MODEL_DIRECTORY, records[i],
                                       poll_interval=0.1, timeout=180)

    with ThreadPoolExecutor(max_workers=len(records)) as pool:
        results = list(pool.map(customer, range(len(records))))
    for result in results:
        assert result.verdict.valid, result.verdict.reasons
        assert result.bundle.query == result.query  # about the customer's own record
    assert len({r.bundle.certificate_id for r in results}) == len(records)


def test_the_verify_command_against_the_service_and_its_pin(live, tmp_path, capsys):
    from verifier_client.cli import main as verify_main

    record, pins = tmp_path / "me.json", tmp_path / "pins.json"
    record.write_text(json.dumps(customer_records(3)[2]))
    args = ["--url", live.url, "--model", MODEL_DIRECTORY, "--record", str(record), "--pin-file", str(pins)]
    assert verify_main(args) == 0
    out = capsys.readouterr().out
    assert "VALID" in out and "eps" in out
    pinned = json.loads(pins.read_text())
    # Rejection twin: the service now presents another commitment for the same model id.
    text = pins.read_text()
    commitment = httpx.get(f"{live.url}/v1/models/{MODEL_DIRECTORY}/card").json()["commitment"]
    pins.write_text(text.replace(commitment, str(int(commitment) + 1)))
    assert pinned and verify_main(args) == 1
    assert "commitment" in capsys.readouterr().err.lower()


def test_bundles_fetched_over_http_verify_and_tampering_is_refused(live):
    records = customer_records(5)[3:5]
    with ThreadPoolExecutor(max_workers=2) as pool:
        accepted = list(pool.map(lambda rec: _decide(live.url, rec), records))
    assert len({a["job_id"] for a in accepted}) == len(records)
    bundles = []
    for a in accepted:
        job = wait_for_job(live.url, a["job_id"], token=a["job_token"])
        assert job["status"] == "succeeded", job
        assert job["progress"] == 1.0 and job["certificate_id"]
        r = httpx.get(f"{live.url}{job['certificate_url']}", headers={"X-Job-Token": a["job_token"]})
        assert r.status_code == 200
        # The job and its bundle (which holds the customer's encoded record) need the job's token:
        # without it, with another job's, or with a guess, they are 401, as a job that does not exist is.
        other = accepted[1 - accepted.index(a)]["job_token"]
        for headers in ({}, {"X-Job-Token": other}, {"X-Job-Token": "x" * 43}):
            assert httpx.get(f"{live.url}/v1/jobs/{a['job_id']}", headers=headers).status_code == 401
            assert httpx.get(f"{live.url}{job['certificate_url']}", headers=headers).status_code == 401
        bundle = CertificateBundle.model_validate_json(r.text)
        assert bundle.decision == a["decision"]  # the decision announced is the one proved
        bundles.append(bundle)
    card = ModelCard.model_validate_json(httpx.get(f"{live.url}/v1/models/{MODEL_DIRECTORY}/card").text)
    for bundle in bundles:
        verdict = verify_bundle(bundle, card)
        assert verdict.valid, verdict.reasons
    # Rejection twin: the same bundle with another radius is refused.
    forged = bundles[0].model_copy(update={"eps": bundles[0].eps.model_copy(update={"numerator":
                                                                                       bundles[0].eps.numerator + 1})})
    assert not verify_bundle(forged, card).valid

    audit = httpx.get(f"{live.url}/v1/admin/audit", headers={"X-API-Key": ADMIN_KEY}).json()["entries"]
    issued = [e for e in audit if e["certificate_id"] in {b.certificate_id for b in bundles}]
    assert len(issued) == len(bundles)  # one audit entry per certificate, none duplicated


def test_cards_and_listing_reveal_no_secret(live, models_dir):
    listing = httpx.get(f"{live.url}/v1/models").json()["models"]
    assert [m["model_id"] for m in listing] == [MODEL_DIRECTORY]
    card_text = httpx.get(f"{live.url}/v1/models/{MODEL_DIRECTORY}/card").text
    salt = (models_dir / MODEL_DIRECTORY / "secret" / "salt").read_text().strip()
    assert salt not in card_text and salt not in json.dumps(listing)
    assert "weights" not in card_text
    assert httpx.get(f"{live.url}/v1/models/{MODEL_DIRECTORY}/store").status_code == 404


def test_wait_returns_the_certificate_in_the_same_request(live):
    record = customer_records(8)[7]
    r = httpx.post(f"{live.url}/v1/models/{MODEL_DIRECTORY}/decisions?wait=60", json={"record": record}, timeout=90)
    assert r.status_code == 200, r.text
    assert r.json()["certificate_url"]


def _assert_clear_4xx(response: httpx.Response, status: int, words: str) -> None:
    assert response.status_code == status, (response.status_code, response.text)
    detail = response.json()["detail"]
    assert words.lower() in detail.lower(), detail


@pytest.mark.parametrize("mutate, words", [
    (lambda r: {k: v for k, v in r.items() if k != "duration"}, "missing feature"),
    (lambda r: {**r, "colour": "blue"}, "unknown field"),
    (lambda r: {**r, "purpose": "A4711"}, "unknown category"),
    (lambda r: {**r, "duration": "twelve"}, "not a number"),
    (lambda r: {**r, "duration": 1e9}, "duration = 1000000000.0 is outside the model's domain ["),
    (lambda r: {**r, "foreign_worker": "A299"}, "unknown category"),
    (lambda r: {**r, "duration": 10**400}, "not finite"),
], ids=["missing-feature", "extra-feature", "unknown-category", "not-a-number", "out-of-domain", "bad-sensitive",
        "beyond-float"])
def test_bad_records_are_refused_clearly(live, mutate, words):
    record = mutate(customer_records(1)[0])
    r = httpx.post(f"{live.url}/v1/models/{MODEL_DIRECTORY}/decisions", json={"record": record})
    _assert_clear_4xx(r, 422, words)
    assert httpx.get(f"{live.url}/v1/health").status_code == 200


def test_nan_is_refused(live):
    record = customer_records(1)[0]
    body = json.dumps({"record": record}).replace('"duration": 12.0', '"duration": NaN')
    assert "NaN" in body
    r = httpx.post(f"{live.url}/v1/models/{MODEL_DIRECTORY}/decisions", content=body,
                   headers={"content-type": "application/json"})
    assert r.status_code == 422, r.text
    assert "finite" in r.json()["detail"] or "nan" in r.json()["detail"].lower()


def test_protocol_errors_are_refused_clearly(live):
    url = f"{live.url}/v1/models/{MODEL_DIRECTORY}/decisions"
    _assert_clear_4xx(httpx.post(url, content=b"{not json", headers={"content-type": "application/json"}), 422,
                      "json")
    _assert_clear_4xx(httpx.post(url, json={"recrd": {}}), 422, "record")
    _assert_clear_4xx(httpx.post(url, json={"record": {"duration": [1, 2]}}), 422, "record")
    huge = {"record": {f"f{i}": "x" * 100 for i in range(400)}}
    _assert_clear_4xx(httpx.post(url, json=huge), 413, "larger than")
    _assert_clear_4xx(httpx.post(f"{live.url}/v1/models/no-such-model/decisions",
                                 json={"record": customer_records(1)[0]}), 404, "unknown model")
    _assert_clear_4xx(httpx.get(f"{live.url}/v1/jobs/00000000-0000-0000-0000-000000000000"), 401, "X-Job-Token")
    _assert_clear_4xx(httpx.get(f"{live.url}/v1/certificates/00000000-0000-0000-0000-000000000000"), 401,
                      "X-Job-Token")
    _assert_clear_4xx(httpx.get(f"{live.url}/v1/jobs/00000000-0000-0000-0000-000000000000",
                                headers={"X-API-Key": ADMIN_KEY}), 404, "unknown job")
    _assert_clear_4xx(httpx.get(f"{live.url}/v1/jobs/not-a-uuid"), 422, "job_id")
    assert httpx.get(f"{live.url}/v1/ready").status_code == 200


def test_admin_endpoints_need_the_key(live):
    url = f"{live.url}/v1/admin/models"
    _assert_clear_4xx(httpx.post(url, json={"directory": MODEL_DIRECTORY}), 401, "api key")
    _assert_clear_4xx(httpx.post(url, json={"directory": MODEL_DIRECTORY}, headers={"X-API-Key": ADMIN_KEY + "x"}),
                      401, "api key")
    _assert_clear_4xx(httpx.get(f"{live.url}/v1/admin/audit", headers={"X-API-Key": ""}), 401, "api key")
    _assert_clear_4xx(httpx.post(url, json={"directory": "../etc"}, headers={"X-API-Key": ADMIN_KEY}), 422,
                      "directory")
    _assert_clear_4xx(httpx.post(url, json={"directory": "absent-model"}, headers={"X-API-Key": ADMIN_KEY}), 404,
                      "no model directory")
    again = httpx.post(url, json={"directory": MODEL_DIRECTORY}, headers={"X-API-Key": ADMIN_KEY})
    assert again.status_code == 201  # registering the same model again is harmless


def test_the_served_verification_page_checks_a_certificate_in_the_browser(live):
    """GET /verify: the page, with its policy as a header too; in Chromium it fetches the card the bundle
    names from this service and accepts the certificate, and refuses it with one signal changed."""
    from browser_fixtures import chromium, verify_in_page
    from page_cases import PageCase

    page = httpx.get(f"{live.url}/verify", timeout=30)
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    csp = page.headers["content-security-policy"]
    assert "connect-src 'self'" in csp and f'content="{csp}"' in page.text and 'id="fairproof-card"' not in page.text
    assert "/verify" not in httpx.get(f"{live.url}/openapi.json", timeout=30).text  # a page, not the API
    record = customer_records(8)[0]
    r = httpx.post(f"{live.url}/v1/models/{MODEL_DIRECTORY}/decisions?wait=60", json={"record": record}, timeout=90)
    assert r.status_code == 200, r.text
    bundle = httpx.get(f"{live.url}{r.json()['certificate_url']}", headers={"X-Job-Token": r.json()["job_token"]},
                       timeout=30).text
    data = json.loads(bundle)
    data["public_signals"][2] = str(int(data["public_signals"][2]) + 1)
    data["eps"]["numerator"] += 1
    driver = chromium()
    try:
        driver.get(f"{live.url}/verify")
        honest = verify_in_page(driver, PageCase("served", bundle, "", json.dumps(record)))
        assert honest["verdict"] == "VALID", honest["text"]
        assert "The certificate is about your record." in honest["text"]
        tampered = verify_in_page(driver, PageCase("served, eps + 1", json.dumps(data), ""))
        assert tampered["verdict"] == "INVALID" and "proof rejected" in tampered["text"]
        assert not [e for e in driver.get_log("browser") if e.get("level") == "SEVERE"]
    finally:
        driver.quit()
