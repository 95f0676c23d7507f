"""A dishonest bank's stage: a committed German Credit (4,2) model with real certificates,
and the service's wire format served in process (httpx.MockTransport).

`Bank` is built once per test session (conftest's `bank` fixture); tests
forge from its genuine card and bundles, and `FakeService` serves whatever a
test wants the bank to answer.
"""
from __future__ import annotations

import json
from pathlib import Path

import httpx

from commitments.api import DecisionAccepted, JobView, ModelList, ModelSummary
from commitments.bundle import CertificateBundle
from commitments.card import ModelCard
from commitments.claims import signals_for
from commitments.log import LogKey
from verifier_client.cli import main as verify_main

from log_fixtures import MemoryLog

URL = "http://bank.test"
MODEL = "german-4x2-fair"
PERSISTENCE_DELTA = 0.25  # the card's default box half-width, standardised units


class Bank:
    """A committed German (4,2) model (radius, spread and persistence lenses) and certificates proved for
    two test customers."""

    def __init__(self, root: Path, cache: Path):
        from fairness.model import save_artifact
        from fairness.training import load_or_train
        from offline_precompute.certify import query_from_record
        from offline_precompute.db import open_database, resolve_store_url
        from offline_precompute.enumerate import precompute
        from prover_service.bucket_keys import SinglePartyKeySetup
        from prover_service.proving import Prover
        from prover_service.publishing import commit_model
        from prover_service.workspace import ModelWorkspace
        from circuits.backends import get_backend

        artifact = load_or_train("german", (4, 2), "fair", cache, seed=0)
        save_artifact(artifact, root / "model")
        workspace = ModelWorkspace.open(root / "model")
        commit_model(workspace, model_id=MODEL, persistence_delta=PERSISTENCE_DELTA)
        self.db = open_database(resolve_store_url(None, workspace.root))
        prover = Prover(workspace, self.db, get_backend(), key_setup=SinglePartyKeySetup())
        precompute(self.db, prover.model)
        from fairness.datasets import load_dataset

        records = load_dataset("german").records_test
        self.records = [dict(records[0]), dict(records[1])]
        self.bundles = [prover.prove(query_from_record(artifact, prover.model, r)).bundle for r in self.records]
        self.card = ModelCard.model_validate_json(prover.card.canonical_json())  # as served
        self.prover = prover


class FakeService:
    """The service's endpoints over MockTransport; each test breaks one thing."""

    def __init__(self, card: ModelCard, bundle: CertificateBundle, *, decision: int | None = None,
                 states=("queued", "running", "succeeded"), overrides=None, log: MemoryLog | None = None,
                 attestations=()):
        self.card = card
        self.attestations = tuple(attestations)  # auditors' attestations the service serves for the model
        self.log = log or MemoryLog()  # the bank's transparency log: every bundle is served with its evidence
        self.bundle = bundle if bundle.log is not None else self.log.issue(bundle, card)
        self.decision = bundle.decision if decision is None else decision
        self.states = list(states)
        self.overrides = overrides or {}  # (method, path) -> httpx.Response or exception
        self.requests: list[httpx.Request] = []

    def transport(self) -> httpx.MockTransport:
        return httpx.MockTransport(self.handle)

    def posted_records(self) -> list[dict]:
        return [json.loads(r.content)["record"] for r in self.requests if r.method == "POST"]

    def handle(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        key = (request.method, request.url.path)
        if key in self.overrides:
            answer = self.overrides[key]
            if isinstance(answer, Exception):
                raise answer
            return answer
        path = request.url.path
        if key == ("GET", "/v1/models"):
            card = self.card
            summary = ModelSummary(model_id=MODEL, dataset=card.dataset, commitment=card.commitment,
                                   card_digest=card.digest(), n_inputs=card.architecture.n_inputs,
                                   hidden_sizes=card.architecture.hidden_sizes,
                                   sensitive_features=tuple(f.name for f in card.sensitive),
                                   card_url=f"/v1/models/{MODEL}/card")
            return httpx.Response(200, text=ModelList(models=(summary,)).model_dump_json())
        if key == ("GET", f"/v1/models/{MODEL}/card"):
            return httpx.Response(200, text=self.card.canonical_json())
        if key == ("GET", f"/v1/models/{MODEL}/attestations"):
            from commitments.attestation import AttestationList

            return httpx.Response(200, text=AttestationList(attestations=self.attestations).model_dump_json())
        if key == ("POST", f"/v1/models/{MODEL}/decisions"):
            labels = self.card.architecture.class_labels
            accepted = DecisionAccepted(job_id="job-1", model_id=MODEL, decision=self.decision,
                                        decision_label=labels[self.decision], status="queued", job_url="/v1/jobs/job-1",
                                        job_token="token-1")
            return httpx.Response(202, text=accepted.model_dump_json())
        if key[0] == "GET" and key[1].startswith(("/v1/jobs/", "/v1/certificates/")) \
                and request.headers.get("x-job-token") != "token-1":
            return httpx.Response(404, json={"detail": "unknown job"})  # the job's token is needed
        if key == ("GET", "/v1/jobs/job-1"):
            status = self.states.pop(0) if len(self.states) > 1 else self.states[0]
            done = status == "succeeded"
            view = JobView(job_id="job-1", model_id=MODEL, kind="certificate", status=status,
                           stage={"queued": "waiting for a worker", "running": "proving",
                                  "succeeded": "done", "failed": "proving"}[status],
                           progress=1.0 if done else 0.5 if status == "running" else 0.0, attempts=1,
                           created_at="2025-01-01T00:00:00Z", updated_at="2025-01-01T00:00:02Z",
                           error="worker ran out of memory" if status == "failed" else None,
                           certificate_id=self.bundle.certificate_id if done else None)
            return httpx.Response(200, text=view.model_dump_json())
        if key == ("GET", f"/v1/certificates/{self.bundle.certificate_id}"):
            return httpx.Response(200, text=self.bundle.model_dump_json())
        if key == ("GET", "/v1/log/key"):
            return httpx.Response(200, text=LogKey(origin=self.log.origin,
                                                   verifier_key=self.log.verifier_key).model_dump_json())
        if key == ("GET", "/v1/log/proof/consistency"):
            old, new = int(request.url.params["old"]), int(request.url.params["new"])
            if not 0 <= old <= new <= self.log.size:
                return httpx.Response(400, json={"detail": f"no consistency proof from {old} to {new}"})
            return httpx.Response(200, text=self.log.consistency(old, new).model_dump_json())
        return httpx.Response(404, json={"detail": f"no route {request.method} {path}"})


def run_cli(service: FakeService, record: dict, tmp_path: Path, *extra: str) -> int:
    record_path = tmp_path / "customer.json"
    record_path.write_text(json.dumps(record))
    argv = ["--url", URL, "--model", MODEL, "--record", str(record_path), "--pin-file", str(tmp_path / "pins.json"),
            *extra]
    return verify_main(argv, transport=service.transport())


def build_bank(tmp_path_factory) -> Bank:
    """The session's bank (skips where the German Credit data is missing)."""
    import pytest

    from fairness.errors import DataError

    try:
        return Bank(tmp_path_factory.mktemp("bank"), tmp_path_factory.getbasetemp() / "fairproof-models")
    except DataError as exc:  # pragma: no cover - depends on the machine
        pytest.skip(f"German Credit dataset not available: {exc}")


def copy_of_bank_model(bank: Bank, tmp_path_factory, name: str):
    """(root, workspace, store) of a copy of the bank's committed model directory (dispose the store)."""
    import shutil

    from offline_precompute.db import open_database, resolve_store_url
    from prover_service.workspace import ModelWorkspace

    root = tmp_path_factory.mktemp(name) / "model"
    shutil.copytree(bank.prover.workspace.root, root)
    return root, ModelWorkspace.open(root), open_database(resolve_store_url(None, root))


def spread_following(bundle: CertificateBundle, fields: dict) -> dict:
    """A forged decision with the spread lens's signals following it, as a careful forger would write
    them (every slice "decides" the forged decision), unless the forgery sets the spread itself."""
    if "decision" not in fields or "spread" in fields or bundle.spread is None:
        return fields
    n = len(bundle.spread.decisions)
    label = fields.get("decision_label", bundle.decision_label)
    spread = bundle.spread.model_copy(update={"decisions": (fields["decision"],) * n,
                                              "decision_labels": (label,) * n, "distinct_decisions": 1})
    return {**fields, "spread": spread.model_dump()}


def forged(bundle: CertificateBundle, **fields) -> CertificateBundle:
    """Fields changed and public signals recomputed to match, as a forger would."""
    data = bundle.model_dump()
    data.update(spread_following(bundle, fields))
    out = CertificateBundle.model_validate(data)
    commitment = int(bundle.public_signals[0])
    return out.model_copy(update={"public_signals": signals_for(out, commitment)})
