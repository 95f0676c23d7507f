"""The transparency log of the real service (uvicorn + PostgreSQL), checked as customers and auditors do.

Certificates are issued in five rounds (ten in the default run, fifty in the
slow one); every bundle's certificate and card are in the log against a
signed checkpoint (a certificate_committed leaf, under the salt only the
bundle holds), and a customer and an auditor following the log across the
checkpoints find each consistent with the one before. A model recommitted
under the running service changes nothing customers see until an admin
publishes the new card, and both cards are in the log.
"""
from __future__ import annotations

import hashlib
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest

from commitments.bundle import CertificateBundle
from commitments.card import ModelCard
from commitments.log import parse_leaf
from tests.service_fixtures import (ADMIN_KEY, MODEL_DIRECTORY, copy_models_dir, customer_records, fresh_pg_database,
                                    running, serve, wait_for_job)
from transparency import merkle, note
from transparency.checkpoint import Checkpoint
from verifier_client.log_check import LogRefused, check_log_evidence
from verifier_client.monitor import monitor
from verifier_client.pins import PinMismatch, PinStore
from verifier_client.service_client import ServiceClient, check_certificate, request_certificate

pytestmark = pytest.mark.postgres

ROUNDS = 5  # a checkpoint per round


@pytest.fixture(scope="module")
def models_dir(service_models, tmp_path_factory):
    return copy_models_dir(service_models, tmp_path_factory.mktemp("log-models"))


@pytest.fixture(scope="module")
def auditor(tmp_path_factory):
    """The monitor's state directory, shared by the tests in their order: one auditor follows the log."""
    return tmp_path_factory.mktemp("auditor")


@pytest.fixture(scope="module")
def live(models_dir, tmp_path_factory):
    with fresh_pg_database() as url:
        with running(serve(models_dir, url, tmp_path_factory.mktemp("log-logs") / "serve.log",
                           FAIRPROOF_WORKERS="2")) as service:
            yield service


def _issue(url: str, record: dict) -> CertificateBundle:
    r = httpx.post(f"{url}/v1/models/{MODEL_DIRECTORY}/decisions", json={"record": record}, timeout=30)
    assert r.status_code == 202, r.text
    token = r.json()["job_token"]
    job = wait_for_job(url, r.json()["job_id"], timeout=300, token=token)
    assert job["status"] == "succeeded", job
    return CertificateBundle.from_json(httpx.get(f"{url}{job['certificate_url']}", headers={"X-Job-Token": token},
                                                 timeout=30).content)


def _card(client: ServiceClient, digest: str) -> ModelCard:
    """The card a bundle names, from the log itself (any card the model ever had)."""
    published = client.published_card(digest)
    assert hashlib.sha256(published.card_json.encode()).hexdigest() == digest
    return ModelCard.model_validate_json(published.card_json)


def test_ten_certificates_are_each_in_the_log_and_the_log_stays_consistent(live, auditor, tmp_path):
    _certificates_in_the_log(live, auditor, tmp_path, 10)


@pytest.mark.slow
def test_fifty_certificates_are_each_in_the_log_and_the_log_stays_consistent(live, auditor, tmp_path):
    _certificates_in_the_log(live, auditor, tmp_path, 50)


def _certificates_in_the_log(live, auditor, tmp_path, certificates: int) -> None:
    pins = PinStore(tmp_path / "pins.json")
    records = customer_records(certificates)
    checkpoints = []
    with ServiceClient(live.url) as client, ThreadPoolExecutor(max_workers=4) as pool:
        log_key = client.log_key()
        before = monitor(client, auditor)  # what the log held before this test (other tests share the service)
        start_size = before.state.checkpoint.size
        counted = ("certificates", "decision_requests", "answered_requests")
        base = {k: before.report["models"].get(MODEL_DIRECTORY, {}).get(k, 0) for k in counted}
        for round_records in (records[i::ROUNDS] for i in range(ROUNDS)):
            for bundle in pool.map(lambda r: _issue(live.url, r), round_records):
                card = _card(client, bundle.card_digest)
                assert check_certificate(bundle, card, bundle.query), bundle.certificate_id
                verdict = check_log_evidence(bundle, card, bundle.log, pins, log_key=log_key.verifier_key,
                                             consistency=client.consistency)
                assert verdict.origin == log_key.origin and "FORK" not in verdict.consistency
                assert bundle.request_id is not None and bundle.log_salt is not None
                assert verdict.leaf_kind == "certificate_committed"
            checkpoints.append(client.checkpoint().checkpoint)
            run = monitor(client, auditor)  # the auditor follows each round: consistency, recomputed tree
            assert run.exit_status == 0 and run.violations == [] and run.new_entries > 0, run.violations
        # Every checkpoint of the run is consistent with the newest one, and the log holds exactly what happened.
        verifier = note.Verifier.from_key(log_key.verifier_key)
        parsed = [Checkpoint.parse(note.open(c, [verifier]).text) for c in checkpoints]
        newest = parsed[-1]
        for older in parsed[:-1]:
            proof = client.consistency(older.size, newest.size)
            merkle.verify_consistency(older.size, newest.size, older.root_hash, newest.root_hash,
                                      [bytes.fromhex(h) for h in proof.proof])
        leaves = []
        for start in range(start_size, newest.size, 1000):
            leaves += [parse_leaf(e.data.encode()) for e in client.entries(start, min(newest.size, start + 1000)).entries]
    kinds = [leaf.kind for leaf in leaves]
    assert kinds.count("decision_requested") == kinds.count("certificate_committed") == certificates
    assert "certificate_issued" not in kinds  # the old leaf, with the query in its signals, is never appended
    requests = {leaf.request_id for leaf in leaves if leaf.kind == "decision_requested"}
    assert {leaf.request_id for leaf in leaves if leaf.kind == "certificate_committed"} == requests
    assert pins.log(log_key.origin).checkpoint.size == newest.size
    stats = run.report["models"][MODEL_DIRECTORY]
    assert all(stats[k] - base[k] == certificates for k in counted), (stats, base)
    assert len(stats["eps_values"]) == base["certificates"] + certificates and stats["commitment_changes"] == []


def test_a_stale_or_forked_checkpoint_from_the_real_service_is_refused(live, models_dir, tmp_path):
    """The bank signs another tree of the kept size with its real key (read from its key file)."""
    pins = PinStore(tmp_path / "pins.json")
    bundle = _issue(live.url, customer_records(1)[0])
    with ServiceClient(live.url) as client:
        card = _card(client, bundle.card_digest)
        key = client.log_key().verifier_key
        check_log_evidence(bundle, card, bundle.log, pins, log_key=key, consistency=client.consistency)
        kept = pins.log(client.log_key().origin).checkpoint
        signer = note.Signer.from_key((models_dir.parent / "log-key" / "log.key").read_text().strip())
        forged_body = Checkpoint(signer.name, kept.size, hashlib.sha256(b"another history").digest()).body()
        forged = bundle.log.model_copy(update={"checkpoint": note.sign(forged_body, [signer])})
        with pytest.raises(LogRefused, match="not in the log"):  # the paths do not reach the forged root
            check_log_evidence(bundle, card, forged, pins, log_key=key, consistency=client.consistency)


def test_a_model_recommitted_under_the_running_service_needs_an_admin_to_publish(live, models_dir, auditor,
                                                                                 tmp_path):
    from prover_service.publishing import commit_model
    from prover_service.workspace import ModelWorkspace

    headers = {"X-API-Key": ADMIN_KEY}
    card_url = f"{live.url}/v1/models/{MODEL_DIRECTORY}/card"
    before = ModelCard.model_validate_json(httpx.get(card_url, timeout=30).content)
    customer_pins = PinStore(tmp_path / "customer-pins.json")
    customer_pins.check(live.url, before)  # a customer who was served before the recommit
    commit_model(ModelWorkspace.open(models_dir / MODEL_DIRECTORY), model_id=MODEL_DIRECTORY, force=True)
    for _ in range(3):  # the old card keeps being served, every time
        r = httpx.get(card_url, timeout=30)
        assert r.status_code == 200 and ModelCard.model_validate_json(r.content).digest() == before.digest()
    listed = httpx.get(f"{live.url}/v1/models", timeout=30).json()["models"]
    assert [m["commitment"] for m in listed] == [before.commitment]

    r = httpx.post(f"{live.url}/v1/admin/models/{MODEL_DIRECTORY}/card", timeout=30)
    assert r.status_code == 401  # publishing is an admin's decision
    r = httpx.post(f"{live.url}/v1/admin/models/{MODEL_DIRECTORY}/card", headers=headers, timeout=60)
    assert r.status_code == 201, r.text
    after = ModelCard.model_validate_json(httpx.get(card_url, timeout=30).content)
    assert after.commitment != before.commitment and r.json()["commitment"] == after.commitment
    again = httpx.post(f"{live.url}/v1/admin/models/{MODEL_DIRECTORY}/card", headers=headers, timeout=60)
    assert again.status_code == 200  # publishing the same card twice appends nothing

    with ServiceClient(live.url) as client:
        size = Checkpoint.parse(client.checkpoint().checkpoint.split("\n\n")[0] + "\n").size
        leaves = []
        for start in range(0, size, 1000):
            leaves += [parse_leaf(e.data.encode()) for e in client.entries(start, min(size, start + 1000)).entries]
    published = [leaf for leaf in leaves if leaf.kind == "card_published"]
    assert (published[0].commitment, published[-1].commitment) == (before.commitment, after.commitment)
    assert sum(leaf.card_digest == after.digest() for leaf in published) == 1
    # The customer who pinned the old commitment refuses the new model; the auditor flags the change.
    with ServiceClient(live.url) as client:
        with pytest.raises(PinMismatch, match="different model"):
            request_certificate(client, customer_pins, MODEL_DIRECTORY, customer_records(1)[0])
        run = monitor(client, auditor)
    assert run.exit_status == 0 and len(run.new_flags) == 1 and MODEL_DIRECTORY in run.new_flags[0]
    assert run.report["models"][MODEL_DIRECTORY]["commitment_changes"][0]["new_commitment"] == after.commitment
