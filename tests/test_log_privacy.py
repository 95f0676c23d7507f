"""What the service shows the public about its customers: nothing but each certificate's decision, status,
eps and lens summaries.

A live service (create_app on SQLite, in process, a copy of the session's committed German (4,2) model)
issues one certificate as the service did before salted leaves (an old `certificate_issued` leaf, its
public signals and so its query in the clear), then two as it does now (`certificate_committed`), and
leaves one decision request without a certificate. Then every GET endpoint the app has is called without
credentials, with every path and query parameter it can take here (each card digest, job, certificate,
leaf hash, consistency size), and everything served is decoded (JSON, JSON inside JSON strings, HTML):
no certificate's fixed-point query, as integers or field elements, and no customer record's values
appear. The twins: the same detector finds the query in the customer's own bundle (read with the job's
token) and in the old leaf as the database holds it, which the log serves redacted.

The old certificate's customer still checks its inclusion; the auditor's monitor follows the log,
recomputes its tree through the redacted entry, counts it as redacted and keeps its statistics from the
new leaves only.
"""
from __future__ import annotations

import hashlib
import json
import re
import shutil
import types
import uuid
import warnings
from typing import Any, Iterator, Sequence

import httpx
import pytest

from bank_fixtures import MODEL
from circuits.field import R
from commitments.bundle import CertificateBundle
from commitments.card import ModelCard
from commitments.log import CertificateCommitted, LogEntries, parse_leaf
from transparency import merkle
from verifier_client.log_check import LogRefused, check_log_evidence
from verifier_client.monitor import exact_decimal, monitor
from verifier_client.pins import PinStore
from verifier_client.service_client import ServiceClient
from verifier_client.verify import verify_bundle

with warnings.catch_warnings():  # starlette's note about its httpx dependency
    warnings.simplefilter("ignore")
    from fastapi.testclient import TestClient

URL = "http://bank.test"
ADMIN_KEY = "privacy-test-admin-" + uuid.uuid4().hex
DIRECTORY = "german"


class Bank:
    """The live service and what it issued: bundles by era, each job's token, the records asked about."""

    def __init__(self, client: TestClient, records: Sequence[dict]):
        self.client = client
        self.records = records
        self.old: list[CertificateBundle] = []  # issued before salted leaves
        self.new: list[CertificateBundle] = []
        self.tokens: dict[str, str] = {}  # job id -> token
        self.jobs: list[str] = []
        self.pending: list[str] = []

    @property
    def state(self):
        return self.client.app.state.service

    def decide(self, record: dict) -> str:
        r = self.client.post(f"/v1/models/{MODEL}/decisions", json={"record": record})
        assert r.status_code == 202, r.text
        job_id = r.json()["job_id"]
        self.tokens[job_id] = r.json()["job_token"]
        self.jobs.append(job_id)
        return job_id

    def issue(self, record: dict) -> CertificateBundle:
        from prover_service.service.runner import JobRunner

        job_id = self.decide(record)
        assert JobRunner(self.state.ledger, self.state.registry, "privacy-prover").run(job_id) == "succeeded"
        return self.bundle(job_id)

    def bundle(self, job_id: str) -> CertificateBundle:
        reader = {"X-Job-Token": self.tokens[job_id]}
        job = self.client.get(f"/v1/jobs/{job_id}", headers=reader).json()
        return CertificateBundle.from_json(self.client.get(job["certificate_url"], headers=reader).content)

    @property
    def issued(self) -> list[CertificateBundle]:
        return self.old + self.new

    def transport(self) -> httpx.MockTransport:
        def handle(request: httpx.Request) -> httpx.Response:
            answer = self.client.request(request.method, request.url.raw_path.decode("ascii"),
                                         content=request.content, headers={"content-type": "application/json"})
            return httpx.Response(answer.status_code, content=answer.content,
                                  headers={"content-type": answer.headers.get("content-type", "application/json")})
        return httpx.MockTransport(handle)


@pytest.fixture(scope="module")
def live(bank, tmp_path_factory) -> Iterator[Bank]:
    from fairness.datasets import load_dataset
    from prover_service.service import jobs
    from prover_service.service.app import create_app
    from prover_service.service.settings import Settings

    root = tmp_path_factory.mktemp("privacy-bank")
    shutil.copytree(bank.prover.workspace.root, root / "models" / DIRECTORY)
    settings = Settings(models_dir=root / "models", admin_api_key=ADMIN_KEY, workers=0,
                        log_origin="bank.test/log", api_docs=True, radius="fast")
    records = [dict(r) for r in load_dataset("german").records_test[:2]]
    with TestClient(create_app(settings), base_url=URL) as client:
        r = client.post("/v1/admin/models", json={"directory": DIRECTORY}, headers={"X-API-Key": ADMIN_KEY})
        assert r.status_code == 201, r.text
        live = Bank(client, records)
        with pytest.MonkeyPatch.context() as mp:  # the service as it was before salts: no salt, the old leaf
            mp.setattr(jobs, "secrets", types.SimpleNamespace(token_hex=lambda n: None))
            live.old.append(live.issue(records[0]))
        live.new += [live.issue(records[0]), live.issue(records[1])]
        live.pending.append(live.decide(records[1]))
        assert live.old[0].log_salt is None and all(b.log_salt for b in live.new)
        yield live


# -- what is served, decoded -------------------------------------------------------------------------------


def _tokens(value: Any) -> Iterator[str]:
    """Every scalar of a document in order, as text: JSON is walked, a string that holds JSON is decoded and
    walked too, any other text is cut into words and numbers."""
    if isinstance(value, dict):
        for k, v in value.items():
            yield str(k)
            yield from _tokens(v)
    elif isinstance(value, list):
        for v in value:
            yield from _tokens(v)
    elif isinstance(value, str):
        stripped = value.strip()
        if stripped[:1] in ("{", "["):
            try:
                yield from _tokens(json.loads(stripped))
                return
            except ValueError:
                pass
        yield from re.findall(r"-?[0-9]+|[A-Za-z_][A-Za-z0-9_.]*", value)
    elif isinstance(value, bool) or value is None:
        yield str(value)
    else:
        yield str(value)


def _documents(value: Any) -> Iterator[dict]:
    """Every JSON object in a document, JSON inside strings included."""
    if isinstance(value, dict):
        yield value
        for v in value.values():
            yield from _documents(v)
    elif isinstance(value, list):
        for v in value:
            yield from _documents(v)
    elif isinstance(value, str) and value.strip()[:1] in ("{", "["):
        try:
            yield from _documents(json.loads(value))
        except ValueError:
            pass


def _decoded(body: bytes) -> Any:
    text = body.decode("utf-8", errors="replace")
    try:
        return json.loads(text)
    except ValueError:
        return text


def _integers(tokens: Sequence[str]) -> list[int | None]:
    """Integer tokens as the signed values they stand for (a field element above R/2 is negative)."""
    out: list[int | None] = []
    for t in tokens:
        if re.fullmatch(r"-?[0-9]+", t):
            v = int(t)
            out.append(v - R if (R - 1) // 2 < v < R else v)
        else:
            out.append(None)
    return out


def _contains(sequence: Sequence[Any], needle: Sequence[Any]) -> bool:
    n = len(needle)
    return any(list(sequence[i:i + n]) == list(needle) for i in range(len(sequence) - n + 1))


def leaks(body: bytes, queries: Sequence[Sequence[int]], records: Sequence[dict]) -> list[str]:
    """What of the customers' data `body` shows: a query (its fixed-point integers in order, as numbers or
    field elements), a record's values in order, or an object holding most of a record's fields."""
    value = _decoded(body)
    tokens = list(_tokens(value))
    integers = _integers(tokens)
    found = [f"query {q[:4]}..." for q in queries if _contains(integers, list(q))]
    for record in records:
        values = [str(v) for v in record.values()]
        if _contains(tokens, values):
            found.append(f"the values of record {values[:4]}...")
        for document in _documents(value):
            same = sum(k in document and str(document[k]) == str(v) for k, v in record.items())
            if same > len(record) // 2:
                found.append(f"{same} of the {len(record)} fields of record {values[:4]}...")
    return found


# -- every public endpoint ---------------------------------------------------------------------------------


def _get_routes(app) -> set[str]:
    """The path of every GET route of the app, those of included routers too (FastAPI may keep an included
    router as one entry whose effective routes it computes)."""
    from starlette.routing import Route

    paths = set()
    for route in app.routes:
        if isinstance(route, Route):
            found = [(route.path, route.methods)]
        else:
            assert hasattr(route, "effective_route_contexts"), f"{route!r}: a route this test cannot list"
            found = [(c.path, c.methods) for c in route.effective_route_contexts()]
        paths |= {path for path, methods in found if "GET" in (methods or ())}
    return paths


def _crawl(live: Bank) -> tuple[dict[str, httpx.Response], set[str]]:
    """Every GET endpoint with every parameter it can take here, no credentials; (answers by URL, routes)."""
    client = live.client
    size = int(client.get("/v1/log/checkpoint").json()["checkpoint"].split("\n")[1])
    entries = LogEntries.model_validate_json(client.get("/v1/log/entries", params={"start": 0, "end": size}).content)
    hashes = [e.leaf_hash if e.data is None else merkle.leaf_hash(e.data.encode()).hex() for e in entries.entries]
    digests = sorted({json.loads(e.data)["card_digest"] for e in entries.entries
                      if e.data is not None and '"card_published"' in e.data})
    parameters = {"model_id": [MODEL, "no-such-model"], "card_digest": digests, "job_id": live.jobs,
                  "certificate_id": [b.certificate_id for b in live.issued]}
    queries: dict[str, list[dict[str, Any]]] = {
        "/v1/log/entries": [{"start": 0, "end": size}] + [{"start": i, "end": i + 1} for i in range(size)],
        "/v1/log/proof/inclusion": [{"leaf_hash": h, "tree_size": size} for h in hashes],
        "/v1/log/proof/consistency": [{"old": old, "new": size} for old in range(size + 1)],
        "/v1/admin/audit": [{}, {"limit": 1000}],
    }
    routes = _get_routes(client.app)
    answers: dict[str, httpx.Response] = {}
    covered = set()
    for path in sorted(routes):
        names = re.findall(r"{([a-z_]+)(?::[a-z]+)?}", path)
        unknown = [n for n in names if n not in parameters]
        assert not unknown, f"{path}: this test does not know what to pass as {unknown} (add it)"
        urls = [path]
        for name in names:
            urls = [re.sub(r"{%s(?::[a-z]+)?}" % name, str(v), u) for u in urls for v in parameters[name]]
        for url in urls:
            for params in queries.get(path, [{}]):
                response = client.get(url, params=params)
                answers[str(response.request.url)] = response
        covered.add(path)
    assert covered == routes
    return answers, routes


def test_no_public_endpoint_serves_a_customers_query_or_record(live):
    answers, routes = _crawl(live)
    # Every GET route was reached, the public ones answered: log, cards, models, the page, the API schema.
    for path in ("/v1/log/entries", "/v1/log/checkpoint", "/v1/log/key", "/v1/log/proof/inclusion",
                 "/v1/log/proof/consistency", "/v1/log/cards/{card_digest}", "/v1/models",
                 "/v1/models/{model_id}/card", "/v1/models/{model_id}/attestations", "/v1/health", "/v1/ready",
                 "/verify", "/openapi.json", "/docs", "/redoc"):
        assert path in routes, path
    ok = {url.split("?")[0].removeprefix(URL) for url, r in answers.items() if r.status_code == 200}
    assert {"/v1/log/entries", "/v1/log/checkpoint", "/v1/log/proof/inclusion", "/v1/models", "/verify",
            f"/v1/models/{MODEL}/card", "/openapi.json"} <= ok
    assert any(u.startswith("/v1/log/cards/") for u in ok)
    # Without credentials a job, a certificate and the audit log are not served.
    for url, r in answers.items():
        if re.search(r"/v1/(jobs|certificates|admin)/", url):
            assert r.status_code in (401, 403, 404), (url, r.status_code)
    queries = [b.query for b in live.issued]
    for url, r in answers.items():
        assert leaks(r.content, queries, live.records) == [], url
    # Twins: the detector finds each query in the customer's own bundle, read with the job's token, and a
    # record in what the customer sent.
    for job_id in live.jobs:
        if job_id in live.pending:
            continue
        bundle = live.bundle(job_id)
        assert leaks(bundle.model_dump_json().encode(), [bundle.query], []) == [f"query {bundle.query[:4]}..."]
    assert leaks(json.dumps({"record": live.records[0]}).encode(), [], live.records[:1])
    # And the log's own entries, were the old leaf not redacted, would show the old certificate's query.
    size = int(live.client.get("/v1/log/checkpoint").json()["checkpoint"].split("\n")[1])
    with pytest.MonkeyPatch.context() as mp:
        from prover_service.service import transparency_log

        mp.setattr(transparency_log, "REDACTED_KINDS", ())
        unredacted = live.client.get("/v1/log/entries", params={"start": 0, "end": size}).content
    assert set(leaks(unredacted, queries, live.records)) == {f"query {live.old[0].query[:4]}..."}


def test_old_certificate_leaves_are_served_redacted_and_still_prove_inclusion(live, tmp_path):
    from prover_service.service.schema import LogLeaf
    from sqlalchemy import select

    with live.state.db.sessions() as session:
        rows = session.execute(select(LogLeaf.idx, LogLeaf.kind, LogLeaf.data).order_by(LogLeaf.idx)).all()
    size = len(rows)
    entries = LogEntries.model_validate_json(live.client.get("/v1/log/entries",
                                                             params={"start": 0, "end": size}).content).entries
    old = [r for r in rows if r.kind == "certificate_issued"]
    assert len(old) == len(live.old) == 1
    for row, entry in zip(rows, entries):
        if row.kind == "certificate_issued":  # the hash, the kind, never the data
            assert entry.data is None and entry.redacted == "certificate_issued"
            assert entry.leaf_hash == hashlib.sha256(b"\x00" + row.data.encode()).hexdigest()
            # Twin: the database holds the query; the log does not serve it.
            assert leaks(row.data.encode(), [live.old[0].query], []) != []
        else:
            assert entry.data == row.data and entry.redacted is None and entry.leaf_hash is None
            assert leaks(row.data.encode(), [b.query for b in live.issued], live.records) == []
    committed = [parse_leaf(r.data.encode()) for r in rows if r.kind == "certificate_committed"]
    assert len(committed) == len(live.new) and all(isinstance(c, CertificateCommitted) for c in committed)
    # Each customer, old or new, checks its certificate's inclusion; the old one against its old leaf.
    card = ModelCard.from_json(live.client.get(f"/v1/models/{MODEL}/card").content)
    with ServiceClient(URL, transport=live.transport()) as client:
        key = client.log_key().verifier_key
        for bundle in live.issued:
            assert verify_bundle(bundle, card).valid
            pins = PinStore(tmp_path / f"{bundle.certificate_id}.json")
            verdict = check_log_evidence(bundle, card, bundle.log, pins, log_key=key, consistency=client.consistency)
            assert verdict.leaf_kind == ("certificate_committed" if bundle.log_salt else "certificate_issued")
        # Twin: the new customer's bundle with another salt is not in the log.
        other = live.new[0].model_copy(update={"log_salt": "00" * 32})
        with pytest.raises(LogRefused, match="certificate is not in the log"):
            check_log_evidence(other, card, other.log, PinStore(tmp_path / "other.json"), log_key=key,
                               consistency=client.consistency)


def test_the_monitor_follows_the_redacted_log_and_counts_only_what_the_leaves_show(live, tmp_path):
    card = ModelCard.from_json(live.client.get(f"/v1/models/{MODEL}/card").content)
    with ServiceClient(URL, transport=live.transport()) as client:
        run = monitor(client, tmp_path / "auditor")
    assert run.exit_status == 0 and run.violations == [], run.violations
    assert run.report["redacted_certificates"] == len(live.old) == 1
    m = run.report["models"][MODEL]
    claims = [verify_bundle(b, card).claims for b in live.new]
    assert m["certificates"] == len(live.new) and m["answered_requests"] == len(live.new)
    assert sorted(m["eps_values"]) == sorted(exact_decimal(c.eps) for c in claims)
    assert m["flips"] == sum(c.status == "counterfactual_flip" for c in claims)
    assert m["capped"] == sum(c.capped for c in claims)
    assert m["radius"]["exact"] == sum(c.status == "certified" and c.eps_exact for c in claims)
    assert m["decisions"] == {label: sum(c.decision_label == label for c in claims)
                              for label in {c.decision_label for c in claims}}
    # The old certificate's request and the request never proved stay pending: the monitor cannot see
    # which request a redacted leaf answers.
    assert m["decision_requests"] == len(live.issued) + len(live.pending)
    assert set(m["pending_requests"]) == {live.jobs[0], *live.pending}
    # Twin: the monitor's report holds no customer data either.
    report = json.dumps(run.report).encode()
    assert leaks(report, [b.query for b in live.issued], live.records) == []
