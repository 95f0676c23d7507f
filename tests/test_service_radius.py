"""The service's radius: hybrid by default (FAIRPROOF_RADIUS), and a decision request may name its own mode.

The real service (one proving thread, SQLite) serves the German (4,2) model keyed for its default radius
(tests/service_fixtures.py: the exact buckets of its first customers and the bound bucket). A request that
names no mode gets the hybrid radius, which on this model is the exact one (a `-exact` bucket, a verified
"exact" claim equal to the plaintext exact radius); a request naming `bound` gets the bound statement's bucket
and its lower bound; a word that is no mode is refused with 400 naming the modes, before any job is made;
the same Idempotency-Key with another mode is another request (409).
"""
from __future__ import annotations

import httpx
import pytest

from commitments.api import RADIUS_MODES
from commitments.bundle import CertificateBundle
from commitments.card import ModelCard
from commitments.claims import bundle_claims
from tests.service_fixtures import (MODEL_DIRECTORY, copy_models_dir, customer_records, job_headers, running, serve,
                                    wait_for_job)
from verifier_client.verify import verify_bundle

DECISIONS = f"/v1/models/{MODEL_DIRECTORY}/decisions"


@pytest.fixture(scope="module")
def live(service_models, tmp_path_factory):
    root = tmp_path_factory.mktemp("radius-service")
    models = copy_models_dir(service_models, root)
    # No FAIRPROOF_RADIUS: the service's own default is under test.
    with running(serve(models, f"sqlite:///{root / 'service.sqlite'}", root / "serve.log",
                       FAIRPROOF_WORKERS="1")) as service:
        yield service


def _certificate(url: str, body: dict, headers: dict | None = None) -> tuple[CertificateBundle, ModelCard]:
    r = httpx.post(f"{url}{DECISIONS}", json=body, headers=headers or {}, timeout=30)
    assert r.status_code == 202, r.text
    accepted = r.json()
    job = wait_for_job(url, accepted["job_id"], timeout=300, token=accepted["job_token"])
    assert job["status"] == "succeeded", job
    bundle = httpx.get(f"{url}{job['certificate_url']}", headers=job_headers(accepted["job_token"]), timeout=30)
    card = httpx.get(f"{url}/v1/models/{MODEL_DIRECTORY}/card", timeout=30)
    return CertificateBundle.model_validate_json(bundle.content), ModelCard.from_json(card.content)


def _plaintext_exact_eps(models_dir, record: dict) -> int:
    """The exact radius of the record, certified here in plaintext from the model's store."""
    from offline_precompute.certify import certify, query_from_record
    from offline_precompute.db import open_database, resolve_store_url
    from prover_service.workspace import ModelWorkspace

    workspace = ModelWorkspace.open(models_dir / MODEL_DIRECTORY)
    model = workspace.fixed_point()
    db = open_database(resolve_store_url(None, workspace.root))
    try:
        query = query_from_record(workspace.artifact, model, record)
        return certify(db, model, query, eps_bits=workspace.card().eps_scale_bits, radius="exact").certificate.eps
    finally:
        db.dispose()


def test_a_request_naming_no_mode_gets_the_hybrid_radius_here_exact(live, service_models):
    record = customer_records(1)[0]
    bundle, card = _certificate(live.url, {"record": record})
    assert bundle.bucket.endswith("-exact") and card.bucket(bundle.bucket).shape.radius == "exact"
    verdict = verify_bundle(bundle, card)
    assert verdict.valid, verdict.reasons
    claims = bundle_claims(bundle, card)
    assert claims.eps_exact and bundle.eps.numerator == _plaintext_exact_eps(service_models, record)


def test_a_request_naming_bound_gets_the_bound_radius(live):
    bundle, card = _certificate(live.url, {"record": customer_records(1)[0], "radius": "bound"})
    assert bundle.bucket == "k1-f1-bound" and card.bucket(bundle.bucket).shape.radius == "bound"
    assert verify_bundle(bundle, card).valid
    assert not bundle_claims(bundle, card).eps_exact  # a lower bound, and said to be one


@pytest.mark.parametrize("word", ["exactly", "FAST", "", "hybrid " * 40])
def test_a_word_that_is_no_mode_is_refused_with_the_modes_named(live, word):
    before = httpx.get(f"{live.url}/v1/log/checkpoint", timeout=30).text
    r = httpx.post(f"{live.url}{DECISIONS}", json={"record": customer_records(1)[0], "radius": word}, timeout=30)
    assert r.status_code == 400, r.text
    detail = r.json()["detail"]
    assert "radius" in detail and all(mode in detail for mode in RADIUS_MODES) and len(detail) < 300
    assert httpx.get(f"{live.url}/v1/log/checkpoint", timeout=30).text == before  # no job, no log leaf


def test_a_radius_that_is_not_text_is_refused_as_a_schema_violation(live):
    r = httpx.post(f"{live.url}{DECISIONS}", json={"record": customer_records(1)[0], "radius": 3}, timeout=30)
    assert r.status_code == 422 and "radius" in r.json()["detail"]


def test_every_mode_is_accepted_and_the_key_binds_the_mode(live):
    record = customer_records(2)[1]
    for mode in RADIUS_MODES:
        r = httpx.post(f"{live.url}{DECISIONS}", json={"record": record, "radius": mode}, timeout=30)
        assert r.status_code == 202, (mode, r.text)
    key = {"Idempotency-Key": "radius-binding-key-0001"}
    first = httpx.post(f"{live.url}{DECISIONS}", json={"record": record, "radius": "exact"}, headers=key, timeout=30)
    again = httpx.post(f"{live.url}{DECISIONS}", json={"record": record, "radius": "exact"}, headers=key, timeout=30)
    other = httpx.post(f"{live.url}{DECISIONS}", json={"record": record, "radius": "fast"}, headers=key, timeout=30)
    assert first.status_code == again.status_code == 202 and first.json()["job_id"] == again.json()["job_id"]
    assert other.status_code == 409, other.text


def test_the_description_names_the_modes(live):
    doc = httpx.get(f"{live.url}/openapi.json", timeout=30).json()
    request = doc["components"]["schemas"][f"DecisionRequest_{MODEL_DIRECTORY}"]
    assert request["properties"]["radius"]["enum"] == [*RADIUS_MODES, None]
    assert "400" in doc["paths"]["/v1/models/{model_id}/decisions"]["post"]["responses"]
