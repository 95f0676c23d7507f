"""The auditor's monitor and the witness, against the real service in process and the logs a bank would forge.

The service runs in process (create_app on SQLite, a copy of the session's
committed German (4,2) model) and issues real certificates through its own
job runner. The monitor follows it; then a dishonest bank, holding the real
log key, serves what it likes through `ForgedLog`: a second tree of the same
size, a rolled-back tree, entries that are not the signed tree, a checkpoint
under another key, a re-committed model, a certificate or attestation before
its card. And it restarts its service over the same URL with a fresh log of
another origin and key (`private`), which a witness or monitor that pinned
the service's log must refuse. Every acceptance has its refusal.
"""
from __future__ import annotations

import json
import os
import shutil
import socket
import stat
import subprocess
import sys
import textwrap
import uuid
import warnings
from pathlib import Path
from typing import Callable, Mapping, Sequence

import httpx
import pytest

from bank_fixtures import MODEL
from commitments.bundle import CertificateBundle
from commitments.card import ModelCard
from commitments.log import (CardAttested, CardPublished, CertificateCommitted, CertificateIssued, ConsistencyProof,
                             DecisionRequested, LogEntries, LogEntry, LogInclusion, LogKey, PublishedCard,
                             SignedCheckpoint, card_order_problem, certificate_leaf, leaf_bytes, parse_leaf)
from prover_service.cli import build_parser
from prover_service.commands import monitor as monitor_command
from prover_service.commands import witness as witness_command
from transparency import cosignature, merkle, note
from transparency.checkpoint import Checkpoint
from verifier_client.monitor import (REPORT_FILE, STATE_FILE, MonitorState, exact_decimal, monitor, plot_groups,
                                     render_report, variant_of)
from verifier_client.pins import normalise_service_url
from verifier_client.service_client import ServiceClient, ServiceError
from verifier_client.verify import verify_bundle
from verifier_client.witness import CosignedCheckpoint, Witness, WitnessClient, WitnessRefused

with warnings.catch_warnings():  # starlette's note about its httpx dependency
    warnings.simplefilter("ignore")
    from fastapi.testclient import TestClient

URL = "http://bank.test"
PRIVATE_ORIGIN = "private.bank.test/log"
ROOT = Path(__file__).resolve().parents[1]
ADMIN_KEY = "monitor-test-admin-" + uuid.uuid4().hex
DIRECTORY = "german"


# -- the bank, in process ----------------------------------------------------------------------


class LiveBank:
    """The service on a copy of the session's model; certificates proved by its own job runner on demand."""

    def __init__(self, client: TestClient, log_key_file: Path, records: Sequence[dict]):
        self.client = client
        self.log_key_file = log_key_file
        self.records = records
        self.issued: list[CertificateBundle] = []
        self.tokens: dict[str, str] = {}  # job id -> the job's capability token
        self.pending: list[str] = []  # decision requests whose job was never run
        self.requests: list[httpx.Request] = []

    @property
    def state(self):
        return self.client.app.state.service

    def signer(self) -> note.Signer:
        """The log's real signing key: the bank can sign anything with it."""
        return note.Signer.from_key(self.log_key_file.read_text().strip())

    def decide(self, record: dict) -> str:
        r = self.client.post(f"/v1/models/{MODEL}/decisions", json={"record": record})
        assert r.status_code == 202, r.text
        self.tokens[r.json()["job_id"]] = r.json()["job_token"]
        return r.json()["job_id"]

    def issue(self, record: dict) -> CertificateBundle:
        from prover_service.service.runner import JobRunner

        job_id = self.decide(record)
        assert JobRunner(self.state.ledger, self.state.registry, "test-prover").run(job_id) == "succeeded"
        reader = {"X-Job-Token": self.tokens[job_id]}
        job = self.client.get(f"/v1/jobs/{job_id}", headers=reader).json()
        bundle = CertificateBundle.model_validate_json(self.client.get(job["certificate_url"], headers=reader).content)
        self.issued.append(bundle)
        return bundle

    def ensure_history(self) -> None:
        """Two certificates and one decision request left without one."""
        while len(self.issued) < 2:
            self.issue(self.records[len(self.issued)])
        if not self.pending:
            self.pending.append(self.decide(self.records[0]))

    def transport(self, tamper: Callable[[httpx.Request, httpx.Response], httpx.Response] | None = None
                  ) -> httpx.MockTransport:
        """The service over httpx; `tamper` may rewrite any answer on its way to the client."""
        def handle(request: httpx.Request) -> httpx.Response:
            self.requests.append(request)
            answer = self.client.request(request.method, request.url.raw_path.decode("ascii"),
                                         content=request.content, headers={"content-type": "application/json"})
            response = httpx.Response(answer.status_code, content=answer.content,
                                      headers={"content-type": answer.headers.get("content-type", "application/json")})
            return tamper(request, response) if tamper else response
        return httpx.MockTransport(handle)

    def leaves(self) -> tuple[list[str], dict[str, str]]:
        """Every leaf of the log as served, and every card it published by digest."""
        with ServiceClient(URL, transport=self.transport()) as client:
            size = Checkpoint.parse(note.open(client.checkpoint().checkpoint, [self.signer().verifier()]).text).size
            pages = (client.entries(start, min(size, start + 1000)) for start in range(0, size, 1000))
            leaves = [e.data for page in pages for e in page.entries]
            digests = {parse_leaf(d.encode()).card_digest for d in leaves if '"card_published"' in d}
            return leaves, {d: client.published_card(d).card_json for d in digests}


@pytest.fixture(scope="module")
def witness_key() -> tuple[str, str]:
    return cosignature.generate_key("witness.test")


@pytest.fixture(scope="module")
def live(bank, tmp_path_factory, witness_key):
    from fairness.datasets import load_dataset
    from prover_service.service.app import create_app
    from prover_service.service.settings import Settings

    root = tmp_path_factory.mktemp("monitor-bank")
    shutil.copytree(bank.prover.workspace.root, root / "models" / DIRECTORY)
    settings = Settings(models_dir=root / "models", admin_api_key=ADMIN_KEY, workers=0,
                        log_origin="bank.test/log", log_witnesses=witness_key[1], radius="fast")
    records = [dict(r) for r in load_dataset("german").records_test[:2]]
    with TestClient(create_app(settings), base_url=URL) as client:
        r = client.post("/v1/admin/models", json={"directory": DIRECTORY}, headers={"X-API-Key": ADMIN_KEY})
        assert r.status_code == 201, r.text
        yield LiveBank(client, settings.resolved_log_key_file, records)


@pytest.fixture(scope="module")
def private(bank, live, tmp_path_factory, witness_key):
    """The same bank restarted over the same URL with a fresh log: another FAIRPROOF_LOG_ORIGIN, another log
    key file, and in it one customer's certificate (a private log). The witness is configured as before."""
    from prover_service.service.app import create_app
    from prover_service.service.settings import Settings

    root = tmp_path_factory.mktemp("private-bank")
    shutil.copytree(bank.prover.workspace.root, root / "models" / DIRECTORY)
    settings = Settings(models_dir=root / "models", admin_api_key=ADMIN_KEY, workers=0, log_origin=PRIVATE_ORIGIN,
                        log_key_file=root / "private-log-key" / "log.key", log_witnesses=witness_key[1], radius="fast")
    with TestClient(create_app(settings), base_url=URL) as client:
        r = client.post("/v1/admin/models", json={"directory": DIRECTORY}, headers={"X-API-Key": ADMIN_KEY})
        assert r.status_code == 201, r.text
        private = LiveBank(client, settings.resolved_log_key_file, live.records)
        private.issue(live.records[0])
        assert private.signer().name == PRIVATE_ORIGIN and private.signer().verifier() != live.signer().verifier()
        yield private


def _client(transport: httpx.BaseTransport) -> ServiceClient:
    return ServiceClient(URL, transport=transport)


def _run(transport: httpx.BaseTransport, state: Path, **kwargs):
    with _client(transport) as client:
        return monitor(client, state, **kwargs)


# -- a log the bank forges ------------------------------------------------------------------------


class ForgedLog:
    """Any leaves and cards, signed as the log with whatever key the bank holds; served like the service."""

    def __init__(self, signer: note.Signer, leaves: Sequence[str], cards: Mapping[str, str], *,
                 origin: str | None = None, served_leaves: Sequence[str] | None = None,
                 named: note.Verifier | None = None, redacted: Mapping[int, str] | None = None):
        self.signer, self.origin = signer, origin or signer.name
        self.redacted = dict(redacted or {})  # leaf index -> the kind it is served redacted as (hash only)
        self.named = named or signer.verifier()  # the key /v1/log/key names
        self.leaves, self.cards = list(leaves), dict(cards)
        self.served = list(served_leaves) if served_leaves is not None else self.leaves
        self.nodes: dict[merkle.NodeId, bytes] = {}
        accumulator = merkle.MerkleAccumulator()
        for data in self.leaves:
            self.nodes.update(accumulator.append(merkle.leaf_hash(data.encode())))
        self.root = accumulator.root()
        self.note = note.sign(Checkpoint(self.origin, len(self.leaves), self.root).body(), [signer])
        self.requests: list[httpx.Request] = []

    def _fetch(self, ids):
        return {i: self.nodes[i] for i in ids}

    def _entry(self, i: int) -> LogEntry:
        if i in self.redacted:
            return LogEntry(index=i, leaf_hash=merkle.leaf_hash(self.served[i].encode()).hex(),
                            redacted=self.redacted[i])
        return LogEntry(index=i, data=self.served[i])

    def transport(self) -> httpx.MockTransport:
        return httpx.MockTransport(self.handle)

    def handle(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        path, query = request.url.path, request.url.params
        if path == "/v1/log/key":
            return _json(LogKey(origin=self.named.name, verifier_key=self.named.vkey()))
        if path == "/v1/log/checkpoint":
            return _json(SignedCheckpoint(checkpoint=self.note))
        if path == "/v1/log/entries":
            start, end = int(query["start"]), min(int(query["end"]), int(query["start"]) + 1000)
            return _json(LogEntries(entries=tuple(self._entry(i) for i in range(start, end))))
        if path == "/v1/log/proof/consistency":
            old, new = int(query["old"]), int(query["new"])
            proof = merkle.consistency_proof(old, new, self._fetch)
            return _json(ConsistencyProof(old_size=old, new_size=new, proof=tuple(h.hex() for h in proof)))
        if path.startswith("/v1/log/cards/"):
            digest = path.rsplit("/", 1)[1]
            if digest not in self.cards:
                return httpx.Response(404, json={"detail": f"the log holds no card with digest {digest}"})
            index = next(i for i, d in enumerate(self.leaves) if json.loads(d).get("card_digest") == digest
                         and json.loads(d)["kind"] == "card_published")
            proof = merkle.inclusion_proof(index, len(self.leaves), self._fetch)
            inclusion = LogInclusion(leaf_index=index, tree_size=len(self.leaves), proof=tuple(h.hex() for h in proof))
            return _json(PublishedCard(card_json=self.cards[digest], checkpoint=self.note, inclusion=inclusion))
        return httpx.Response(404, json={"detail": f"no route {path}"})


def _json(model) -> httpx.Response:
    return httpx.Response(200, content=model.model_dump_json().encode(), headers={"content-type": "application/json"})


def _data(leaf) -> str:
    return leaf_bytes(leaf).decode("ascii")


def _is_certificate(data: str) -> bool:
    """A certificate's leaf, of the kind the service logs (certificate_committed) or the old one."""
    return '"certificate_committed"' in data or '"certificate_issued"' in data


def _altered(leaves: Sequence[str]) -> list[str]:
    """The log with its last certificate rewritten: another request id (a history the bank prefers)."""
    out = list(leaves)
    i = max(i for i, d in enumerate(out) if _is_certificate(d))
    leaf = parse_leaf(out[i].encode())
    out[i] = _data(leaf.model_copy(update={"request_id": str(uuid.uuid4())}))
    return out


def _kept(state: Path) -> MonitorState:
    return MonitorState.model_validate_json((state / STATE_FILE).read_text())


def _evidence(state: Path) -> list[dict]:
    return [json.loads(p.read_text()) for p in sorted((state / "evidence").glob("*.json"))]


@pytest.fixture
def followed(live, tmp_path) -> tuple[Path, MonitorState]:
    """A monitor that has followed the honest log once."""
    live.ensure_history()
    state = tmp_path / "auditor"
    assert _run(live.transport(), state).exit_status == 0
    return state, _kept(state)


# -- the honest log ----------------------------------------------------------------------------------


def test_a_run_reports_what_the_certificates_prove(live, tmp_path):
    live.ensure_history()
    result = _run(live.transport(), tmp_path / "auditor")
    assert result.exit_status == 0 and result.violations == [] and result.key_first_use
    assert result.state.log_key == live.signer().verifier().vkey()  # pinned on first use
    card = ModelCard.from_json(live.client.get(f"/v1/models/{MODEL}/card").content)
    claims = [verify_bundle(b, card).claims for b in live.issued]
    assert all(claims)
    m = result.report["models"][MODEL]
    assert m["certificates"] == len(live.issued) and m["decision_requests"] == len(live.issued) + len(live.pending)
    assert m["answered_requests"] == len(live.issued) and m["pending_requests"] == sorted(live.pending)
    assert m["flips"] == sum(c.status == "counterfactual_flip" for c in claims)
    assert m["capped"] == sum(c.capped for c in claims)
    assert m["radius"]["exact"] == sum(c.status == "certified" and c.eps_exact for c in claims)
    assert result.report["redacted_certificates"] == 0
    assert sorted(m["eps_values"]) == sorted(exact_decimal(c.eps) for c in claims)
    assert m["eps"]["min"] == exact_decimal(min(c.eps for c in claims))
    assert m["eps"]["max"] == exact_decimal(max(c.eps for c in claims))
    assert m["decisions"] == {label: sum(c.decision_label == label for c in claims) for label in
                              {c.decision_label for c in claims}}
    assert m["cards_published"] == 1 and m["commitment_changes"] == []
    assert json.loads((tmp_path / "auditor" / REPORT_FILE).read_text())["models"][MODEL] == m
    table = render_report(result.report)
    assert MODEL in table and m["eps"]["median"] in table and "VIOLATION" not in table and "FLAG" not in table
    assert f"{len(live.pending)} decision request(s) without a certificate: {live.pending[0]}" in table
    assert list((tmp_path / "auditor" / "cards").iterdir())[0].name == f"{card.digest()}.json"
    # The statistics come from the certificate_committed leaves, which hold no query.
    leaves, cards = live.leaves()
    assert sum('"certificate_committed"' in d for d in leaves) == len(live.issued)
    assert not any('"certificate_issued"' in d or "public_signals" in d or "query" in d for d in leaves)
    # Rejection twin: the same log with a certificate whose eps exceeds its bucket's cap.
    i = next(i for i, d in enumerate(leaves) if _is_certificate(d))
    leaf = parse_leaf(leaves[i].encode())
    cap = card.bucket(leaf.bucket).shape.eps_cap
    forged = ForgedLog(live.signer(), leaves[:i] + [_data(leaf.model_copy(update={"eps_numerator": cap + 1}))]
                       + leaves[i + 1:], cards)
    bad = _run(forged.transport(), tmp_path / "other")
    assert bad.exit_status == 1 and "cannot be honest under its card" in bad.violations[0]
    assert f"exceeds the cap {cap}" in bad.violations[0]


def test_a_second_run_downloads_only_the_new_entries(live, followed):
    state, before = followed
    live.issue(live.records[1])
    live.requests.clear()
    result = _run(live.transport(), state)
    assert result.exit_status == 0 and result.new_entries == 2  # the decision request and its certificate
    asked = [(r.url.path, dict(r.url.params)) for r in live.requests]
    assert ("/v1/log/proof/consistency", {"old": str(before.size), "new": str(before.size + 2)}) in asked
    assert [p for path, p in asked if path == "/v1/log/entries"] == [{"start": str(before.size),
                                                                      "end": str(before.size + 2)}]
    after = result.state.models[MODEL]
    assert after.certificates == before.models[MODEL].certificates + 1
    assert after.decision_requests == before.models[MODEL].decision_requests + 1
    assert _kept(state).size == before.size + 2
    assert not any(path.startswith("/v1/log/cards") for path, _ in asked)  # its card is known already
    # Rejection twin: a consistency proof that does not lead to the kept root is a fork.
    live.issue(live.records[0])

    def bad_proof(request: httpx.Request, response: httpx.Response) -> httpx.Response:
        if request.url.path != "/v1/log/proof/consistency":
            return response
        proof = json.loads(response.content)
        proof["proof"][0] = "00" * 32
        return httpx.Response(200, json=proof)

    kept = _kept(state)
    forked = _run(live.transport(bad_proof), state)
    assert forked.exit_status == 1 and forked.violations[0].startswith("FORK")
    assert _kept(state) == kept and _evidence(state)[-1]["checkpoints"]["kept"] == kept.checkpoint.checkpoint


# -- what a dishonest bank can serve --------------------------------------------------------------------


def test_another_tree_of_the_same_size_signed_with_the_real_key_is_a_fork(live, followed):
    state, kept = followed
    leaves, cards = live.leaves()
    forged = ForgedLog(live.signer(), _altered(leaves[:kept.size]), cards)
    assert note.open(forged.note, [live.signer().verifier()])  # the bank's key really signed it
    result = _run(forged.transport(), state)
    assert result.exit_status == 1 and result.violations[0].startswith("FORK: the log 'bank.test/log' signed two")
    assert _kept(state) == kept  # the kept checkpoint does not advance
    assert _evidence(state)[-1]["checkpoints"] == {"kept": kept.checkpoint.checkpoint, "served": forged.note}
    # A larger tree that rewrites the past fails its consistency proof.
    larger = ForgedLog(live.signer(), _altered(leaves[:kept.size]) + leaves[kept.size:] + [leaves[-1]], cards)
    result = _run(larger.transport(), state)
    assert result.exit_status == 1 and "is not an extension" in result.violations[0] and _kept(state) == kept
    # Rejection twin: the honest log, extended, is followed.
    honest = ForgedLog(live.signer(), leaves + [leaves[-1]], cards)
    assert _run(honest.transport(), state).exit_status == 0 and _kept(state).size == len(leaves) + 1


def test_a_smaller_tree_is_a_rollback(live, followed):
    state, kept = followed
    leaves, cards = live.leaves()
    older = ForgedLog(live.signer(), leaves[:kept.size - 1], cards)  # a tree the bank signed on the way
    result = _run(older.transport(), state)
    assert result.exit_status == 1 and result.violations[0].startswith("ROLLBACK") and _kept(state) == kept
    assert _evidence(state)[-1]["checkpoints"]["served"] == older.note
    # Rejection twin: the same size again is fine.
    assert _run(ForgedLog(live.signer(), leaves[:kept.size], cards).transport(), state).exit_status == 0


def test_entries_that_are_not_the_signed_tree_are_refused(live, tmp_path):
    live.ensure_history()
    leaves, cards = live.leaves()
    served = _altered(leaves)
    result = _run(ForgedLog(live.signer(), leaves, cards, served_leaves=served).transport(), tmp_path / "a")
    assert result.exit_status == 1 and "do not hash to its signed root" in result.violations[0]
    assert _kept(tmp_path / "a").checkpoint is None  # the key is pinned, nothing else is kept
    # A leaf in a non-canonical spelling is refused even when the bank signs the tree that holds it.
    spaced = list(leaves)
    spaced[-1] = json.dumps(json.loads(leaves[-1]), sort_keys=True)  # ", " and ": " between fields
    result = _run(ForgedLog(live.signer(), spaced, cards).transport(), tmp_path / "b")
    assert result.exit_status == 1 and "is not a canonical FairProof event" in result.violations[0]
    # Rejection twin: the honest entries under the honest tree.
    assert _run(ForgedLog(live.signer(), leaves, cards).transport(), tmp_path / "c").exit_status == 0


def test_a_checkpoint_under_another_key_or_origin_is_refused(live, followed):
    state, kept = followed
    leaves, cards = live.leaves()
    pinned = f"publishes its log as 'bank.test/log' (pinned since {kept.key_pinned_at} with key {kept.log_key})"
    impostor = note.Signer.from_key(note.generate_key(live.signer().name)[0])  # same origin, another key
    result = _run(ForgedLog(impostor, leaves, cards).transport(), state)
    assert result.exit_status == 1
    assert result.violations == [f"the service {URL} {pinned}, not 'bank.test/log' with key "
                                 f"{impostor.verifier().vkey()}"]
    # The service still names the pinned key, but its checkpoint is signed by another.
    result = _run(ForgedLog(impostor, leaves, cards, named=live.signer().verifier()).transport(), state)
    assert result.exit_status == 1 and "not signed by the pinned log key" in result.violations[0]
    elsewhere = ForgedLog(live.signer(), leaves, cards, origin="elsewhere.test/log")
    result = _run(elsewhere.transport(), state)
    assert result.exit_status == 1 and result.violations == [f"the service {URL} {pinned}, not 'elsewhere.test/log'"]
    assert _kept(state) == kept
    # Rejection twin: the pinned log, under the pinned key and origin.
    assert _run(ForgedLog(live.signer(), leaves, cards).transport(), state).exit_status == 0


def _recommitted(card_json: str, **changes) -> str:
    card = ModelCard.from_json(card_json)
    return card.model_copy(update=changes).canonical_json()


def test_a_recommitted_model_is_flagged_at_the_top_and_the_log_followed(live, followed):
    state, kept = followed
    leaves, cards = live.leaves()
    card_json = next(iter(cards.values()))
    card = ModelCard.from_json(card_json)
    new_json = _recommitted(card_json, commitment=str(int(card.commitment) + 1))
    new = ModelCard.from_json(new_json)
    extra = _data(CardPublished(model_id=MODEL, commitment=new.commitment, card_digest=new.digest()))
    forged = ForgedLog(live.signer(), leaves + [extra], {**cards, new.digest(): new_json})
    result = _run(forged.transport(), state)
    assert result.exit_status == 0 and result.violations == []
    assert len(result.new_flags) == 1 and f"model {MODEL} re-committed at leaf {len(leaves)}" in result.new_flags[0]
    text = render_report(result.report, result.new_flags)
    assert text.startswith(f"FLAG: model {MODEL} re-committed") and "(new)" in text.splitlines()[0]
    assert _kept(state).size == len(leaves) + 1
    assert result.report["models"][MODEL]["commitment_changes"][0]["new_commitment"] == new.commitment
    # The flag stays at the top of every later report.
    again = _run(forged.transport(), state)
    assert render_report(again.report, again.new_flags).startswith("FLAG:") and again.new_flags == []
    # Rejection twin: a new card under the same commitment is a note, not a flag.
    same_json = _recommitted(new_json, description="new circuit buckets")
    same = ModelCard.from_json(same_json)
    update = _data(CardPublished(model_id=MODEL, commitment=same.commitment, card_digest=same.digest()))
    result = _run(ForgedLog(live.signer(), leaves + [extra, update], {**cards, new.digest(): new_json,
                                                                       same.digest(): same_json}).transport(), state)
    assert result.new_flags == [] and "under the same commitment" in result.notes[0]


@pytest.mark.parametrize("serve, reason", [
    ("nothing", "which the log does not serve"),
    ("another card", "does not hash to it"),
    ("another commitment", "its card names"),
])
def test_a_published_card_the_log_cannot_show_is_a_violation(live, followed, serve, reason):
    state, kept = followed
    leaves, cards = live.leaves()
    card_json = next(iter(cards.values()))
    card = ModelCard.from_json(card_json)
    new_json = _recommitted(card_json, description="another card")
    new = ModelCard.from_json(new_json)
    leaf = CardPublished(model_id=MODEL, commitment=new.commitment, card_digest=new.digest())
    served = {"nothing": {}, "another card": {new.digest(): card_json}, "another commitment": {}}[serve]
    if serve == "another commitment":  # the leaf names another commitment than the card it publishes
        leaf = leaf.model_copy(update={"commitment": str(int(card.commitment) + 1)})
        served = {new.digest(): new_json}
    result = _run(ForgedLog(live.signer(), leaves + [_data(leaf)], {**cards, **served}).transport(), state)
    assert result.exit_status == 1 and reason in result.violations[0] and _kept(state) == kept
    # Rejection twin: the card served as published.
    honest = ForgedLog(live.signer(), leaves + [_data(leaf.model_copy(update={"commitment": new.commitment}))],
                       {**cards, new.digest(): new_json})
    assert _run(honest.transport(), state).exit_status == 0


def test_certificates_the_log_cannot_back_are_violations(live, followed):
    state, kept = followed
    leaves, cards = live.leaves()
    honest = next(parse_leaf(d.encode()) for d in leaves if _is_certificate(d))
    unpublished = _data(honest.model_copy(update={"card_digest": "ab" * 32}))
    result = _run(ForgedLog(live.signer(), leaves + [unpublished], cards).transport(), state)
    assert result.exit_status == 1 and "which the log had not published" in result.violations[0]
    assert _kept(state) == kept
    # A certificate proving another decision than its request announced.
    request = str(uuid.uuid4())
    card = ModelCard.from_json(cards[honest.card_digest])
    announced = 1 - honest.decision
    lie = [_data(DecisionRequested(model_id=MODEL, card_digest=honest.card_digest, request_id=request,
                                   decision=announced)),
           _data(honest.model_copy(update={"request_id": request}))]
    result = _run(ForgedLog(live.signer(), leaves + lie, cards).transport(), state)
    proven = card.architecture.class_labels[1 - announced]
    assert result.exit_status == 1 and f"proves {proven!r}" in result.violations[0]
    assert _kept(state) == kept
    # Rejection twin: the same certificate answering a request that announced its decision.
    truth = [lie[0].replace(f'"decision":{announced}', f'"decision":{1 - announced}'), lie[1]]
    assert _run(ForgedLog(live.signer(), leaves + truth, cards).transport(), state).exit_status == 0


def _attestation(card_digest: str, auditor: str, model_id: str = MODEL) -> str:
    return _data(CardAttested(model_id=model_id, card_digest=card_digest, auditor_key=note.generate_key(auditor)[1],
                              attestation_digest=uuid.uuid4().hex * 2))


def _committed(leaves: Sequence[str]) -> CertificateCommitted:
    leaf = parse_leaf(next(d for d in leaves if '"certificate_committed"' in d).encode())
    assert isinstance(leaf, CertificateCommitted)
    return leaf


def _impossible(leaf: CertificateCommitted, card: ModelCard, what: str) -> tuple[dict, str]:
    """Fields no honest certificate under `card` can state, and the words of the monitor's refusal."""
    cap = card.bucket(leaf.bucket).shape.eps_cap
    slices = len(card.slices())
    spread, persistence = leaf.spread, leaf.persistence
    assert spread is not None and persistence, "the session's card proves both lenses"
    first = persistence[0]
    return {
        "decision": ({"decision": len(card.architecture.class_labels)}, "is not a class of this model"),
        "eps above the cap": ({"eps_numerator": cap + 1, "capped": False}, f"exceeds the cap {cap}"),
        "eps at another scale": ({"eps_scale_bits": leaf.eps_scale_bits + 1}, "is stated at 2^-"),
        "a flip with a radius": ({"status": "counterfactual_flip", "eps_numerator": 1, "capped": False},
                                 "a counterfactual flip certifies radius 0"),
        "capped wrongly": ({"capped": not leaf.capped}, "capped is"),
        "a bucket the card lacks": ({"bucket": "k999-f999"}, "which its card"),
        "no spread": ({"spread": None}, "the card proves the spread lens"),
        "too many decisions": ({"spread": spread.model_copy(update={"distinct_decisions": slices + 1})},
                               "distinct decisions is not between 1 and"),
        "too many margin buckets": ({"spread": spread.model_copy(update={"score_buckets": slices + 1})},
                                    "margin buckets is not between 1 and"),
        "certified yet slices differ": ({"status": "certified", "eps_numerator": 1, "capped": cap == 1,
                                         "spread": spread.model_copy(update={"distinct_decisions": 2})},
                                        "every slice decides the same"),
        "no persistence": ({"persistence": None}, "the card proves the persistence lens"),
        "a value too many": ({"persistence": (first.model_copy(update={"favoured": first.favoured + 1}),
                                              *persistence[1:])}, f"the persistence summary of {first.attribute!r}"),
        "another attribute": ({"persistence": (first.model_copy(update={"attribute": "zodiac"}), *persistence[1:])},
                              "names attributes"),
    }[what]


@pytest.mark.parametrize("what", ["decision", "eps above the cap", "eps at another scale", "a flip with a radius",
                                  "capped wrongly", "a bucket the card lacks", "no spread", "too many decisions",
                                  "too many margin buckets", "certified yet slices differ", "no persistence",
                                  "a value too many", "another attribute"])
def test_certificate_leaf_fields_no_honest_certificate_can_have_are_violations(live, followed, what):
    state, kept = followed
    leaves, cards = live.leaves()
    leaf = _committed(leaves)
    card = ModelCard.from_json(cards[leaf.card_digest])
    fields, reason = _impossible(leaf, card, what)
    forged = leaf.model_copy(update={**fields, "request_id": str(uuid.uuid4())})
    result = _run(ForgedLog(live.signer(), leaves + [_data(forged)], cards).transport(), state)
    assert result.exit_status == 1 and _kept(state) == kept
    assert result.violations[0].startswith(f"the certificate at leaf {len(leaves)} cannot be honest under its card")
    assert reason in result.violations[0], result.violations
    # Refusal twin: the honest leaf's fields, for another request, are possible (a note: no request announced it).
    honest = leaf.model_copy(update={"request_id": str(uuid.uuid4())})
    result = _run(ForgedLog(live.signer(), leaves + [_data(honest)], cards).transport(), state)
    assert result.exit_status == 0 and "answers no pending decision request" in result.notes[0]
    assert result.state.models[MODEL].certificates == kept.models[MODEL].certificates + 1


def _old_era(live, leaves: Sequence[str]) -> tuple[list[str], int, CertificateIssued]:
    """The live log as it would be had one certificate been issued before salted leaves existed: a decision
    request and an old certificate_issued leaf (public signals in the clear) right after the card's leaf."""
    bundle = live.issued[0]
    request = str(uuid.uuid4())
    old = certificate_leaf(bundle.model_id, bundle.card_digest, bundle.bucket, bundle.public_signals, request)
    requested = DecisionRequested(model_id=MODEL, card_digest=bundle.card_digest, request_id=request,
                                  decision=bundle.decision)
    first = next(i for i, d in enumerate(leaves) if '"card_published"' in d) + 1
    return [*leaves[:first], _data(requested), _data(old), *leaves[first:]], first + 1, old


def test_old_certificate_leaves_served_redacted_are_counted_and_nothing_else_may_be_withheld(live, tmp_path):
    live.ensure_history()
    leaves, cards = live.leaves()
    logged, at, old = _old_era(live, leaves)
    honest = _run(ForgedLog(live.signer(), leaves, cards).transport(), tmp_path / "now")
    redacted = _run(ForgedLog(live.signer(), logged, cards, redacted={at: "certificate_issued"}).transport(),
                    tmp_path / "redacted")
    assert redacted.exit_status == 0 and redacted.violations == [], redacted.violations
    assert redacted.report["redacted_certificates"] == 1 and honest.report["redacted_certificates"] == 0
    now, then = honest.report["models"][MODEL], redacted.report["models"][MODEL]
    # No statistics from the redacted leaf; its request stays pending.
    assert {k: then[k] for k in ("certificates", "eps_values", "decisions", "flips", "capped", "radius")} == \
        {k: now[k] for k in ("certificates", "eps_values", "decisions", "flips", "capped", "radius")}
    assert then["decision_requests"] == now["decision_requests"] + 1 and old.request_id in then["pending_requests"]
    assert "served redacted" in render_report(redacted.report)
    # Twin: the same old leaf served in full is still parsed, and counted from its signals.
    full = _run(ForgedLog(live.signer(), logged, cards).transport(), tmp_path / "full")
    assert full.exit_status == 0 and full.report["redacted_certificates"] == 0
    assert full.report["models"][MODEL]["certificates"] == now["certificates"] + 1
    assert old.request_id not in full.report["models"][MODEL]["pending_requests"]
    # Refusals: another kind withheld, an old certificate after the first certificate_committed leaf, and a
    # redacted entry whose hash is not the leaf's.
    other = _run(ForgedLog(live.signer(), logged, cards, redacted={at - 1: "decision_requested"}).transport(),
                 tmp_path / "other-kind")
    assert other.exit_status == 1
    assert other.violations == [f"leaf {at - 1} is served redacted as 'decision_requested': only an old "
                                "certificate_issued leaf may be withheld"]
    late = [*leaves, _data(old)]
    after = _run(ForgedLog(live.signer(), late, cards, redacted={len(leaves): "certificate_issued"}).transport(),
                 tmp_path / "late")
    assert after.exit_status == 1 and "certificate_committed leaves since leaf" in after.violations[0]
    # The same late old leaf served in full is audited, and noted: it publishes its customer's signals.
    shown = _run(ForgedLog(live.signer(), late, cards).transport(), tmp_path / "late-in-full")
    assert shown.exit_status == 0 and any(f"leaf {len(leaves)} is an old certificate_issued leaf" in n
                                          and "publishes its customer's public signals" in n for n in shown.notes)
    lying = ForgedLog(live.signer(), logged, cards, redacted={at: "certificate_issued"})
    lying.served = [*logged[:at], logged[at].replace(old.request_id, str(uuid.uuid4())), *logged[at + 1:]]
    mismatch = _run(lying.transport(), tmp_path / "mismatch")
    assert mismatch.exit_status == 1 and "do not hash to its signed root" in mismatch.violations[0]


def test_attestations_are_counted_per_model_by_auditor(live, followed):
    state, kept = followed
    leaves, cards = live.leaves()
    digest = next(iter(cards))
    attested = [_attestation(digest, "audit.example"), _attestation(digest, "other.example"),
                _attestation(digest, "audit.example")]
    result = _run(ForgedLog(live.signer(), leaves + attested, cards).transport(), state)
    assert result.exit_status == 0 and result.violations == []
    m = result.report["models"][MODEL]
    assert m["attestations"] == 3 and m["attested_by"] == {"audit.example": 2, "other.example": 1}
    assert result.state.models[MODEL].auditors == {"audit.example": 2, "other.example": 1}
    assert "3 (audit.example x2, other.example)" in render_report(result.report)
    # A state.json written before attestations were counted is read, and counting goes on from it.
    document = json.loads((state / STATE_FILE).read_text())
    for stats in document["models"].values():
        del stats["attestations"], stats["auditors"]
    (state / STATE_FILE).write_text(json.dumps(document))
    more = ForgedLog(live.signer(), leaves + attested + [_attestation(digest, "third.example")], cards)
    result = _run(more.transport(), state)
    assert result.exit_status == 0 and result.report["models"][MODEL]["attested_by"] == {"third.example": 1}
    # Refusal twins: an attestation of a card the log never published, or of another model's card.
    size = len(more.leaves)
    for leaf, reason in [(_attestation("ab" * 32, "audit.example"),
                          f"an attestation at leaf {size} names card {'ab' * 32}, which the log had not published"),
                         (_attestation(digest, "audit.example", model_id="another-model"),
                          f"an attestation at leaf {size} is for model 'another-model' under card {digest}")]:
        result = _run(ForgedLog(live.signer(), more.leaves + [leaf], cards).transport(), state)
        assert result.exit_status == 1 and result.violations[0].startswith(reason)
        assert _kept(state).size == size


@pytest.mark.parametrize("what", ["certificate", "decision request", "attestation"])
def test_a_leaf_before_its_card_breaks_the_one_rule_of_order(live, followed, what):
    state, kept = followed
    leaves, cards = live.leaves()
    card_json = next(iter(cards.values()))
    new_json = _recommitted(card_json, description="a card published after what is issued under it")
    new = ModelCard.from_json(new_json)
    certificate = parse_leaf(next(d for d in leaves if _is_certificate(d)).encode())
    under_new = {
        "certificate": _data(certificate.model_copy(update={"card_digest": new.digest()})),
        "decision request": _data(DecisionRequested(model_id=MODEL, card_digest=new.digest(),
                                                    request_id=str(uuid.uuid4()), decision=1)),
        "attestation": _attestation(new.digest(), "audit.example"),
    }[what]
    published = _data(CardPublished(model_id=MODEL, commitment=new.commitment, card_digest=new.digest()))
    n = len(leaves)
    result = _run(ForgedLog(live.signer(), leaves + [under_new, published], {**cards, new.digest(): new_json})
                  .transport(), state)
    assert result.exit_status == 1 and _kept(state) == kept
    assert result.violations == [card_order_problem(n + 1, n, what)]  # the customer's words, from the same rule
    assert f"the {what} is leaf {n} of the log but its card is published only at leaf {n + 1}" in result.violations[0]
    # Rejection twin: the card first, then what is issued under it.
    honest = ForgedLog(live.signer(), leaves + [published, under_new], {**cards, new.digest(): new_json})
    assert _run(honest.transport(), state).exit_status == 0 and _kept(state).size == n + 2


# -- the command line ------------------------------------------------------------------------------------


def _cli(transport, *argv: str, url: str = URL) -> int:
    return monitor_command.run(build_parser().parse_args(["monitor", "--url", url, *argv]), transport=transport)


def test_the_command_pages_through_a_long_log_and_plots_fair_against_unfair(live, tmp_path, capsys):
    live.ensure_history()
    leaves, cards = live.leaves()
    card_json = next(iter(cards.values()))
    unfair_json = _recommitted(card_json, model_id="german-4x2-unfair")
    unfair = ModelCard.from_json(unfair_json)
    certificate = next(parse_leaf(d.encode()) for d in leaves if _is_certificate(d))
    more = [_data(CardPublished(model_id=unfair.model_id, commitment=unfair.commitment, card_digest=unfair.digest()))]
    more += [_data(certificate.model_copy(update={"model_id": unfair.model_id, "card_digest": unfair.digest(),
                                                  "request_id": None}))] * 3
    more += [_data(DecisionRequested(model_id=MODEL, card_digest=certificate.card_digest,
                                     request_id=str(uuid.UUID(int=i)), decision=1)) for i in range(1500)]
    forged = ForgedLog(live.signer(), leaves + more, {**cards, unfair.digest(): unfair_json})
    state = tmp_path / "auditor"
    assert _cli(forged.transport(), "--state", str(state), "--plots", str(tmp_path / "plots")) == 0
    out, err = capsys.readouterr()
    assert "downloaded 1000/" in err and f"downloaded {len(forged.leaves)}/{len(forged.leaves)}" in err
    assert "pinned the log key" in err and "german-4x2-unfair" in out
    report = json.loads((state / REPORT_FILE).read_text())
    assert report["models"][MODEL]["decision_requests"] == 1500 + len(live.issued) + len(live.pending)
    assert report["models"]["german-4x2-unfair"]["certificates"] == 3
    assert sorted(p.name for p in (tmp_path / "plots").iterdir()) == ["eps-german-4x2-fair-vs-unfair.png"]
    # Without matplotlib the run still succeeds and says why there is no plot.
    with pytest.MonkeyPatch.context() as mp:
        mp.setitem(sys.modules, "matplotlib.figure", None)
        assert _cli(forged.transport(), "--state", str(state)) == 0
    assert "matplotlib is not installed" in capsys.readouterr().err


def test_the_command_exits_1_on_a_violation_and_2_on_unusable_input(live, tmp_path, capsys):
    live.ensure_history()
    leaves, cards = live.leaves()
    state = tmp_path / "auditor"
    assert _cli(live.transport(), "--state", str(state)) == 0
    assert (state / "eps-german-4x2-fair.png").is_file()  # plots go to the state directory by default
    capsys.readouterr()
    assert _cli(ForgedLog(live.signer(), leaves[:-1], cards).transport(), "--state", str(state)) == 1
    out, err = capsys.readouterr()
    assert out.startswith("VIOLATION: ROLLBACK") and "evidence kept in" in err
    # Unusable: a malformed key, another key than the pinned one, a corrupt state, an unreachable service.
    assert _cli(live.transport(), "--state", str(tmp_path / "x"), "--log-key", "not-a-key") == 2
    other = note.generate_key(live.signer().name)[1]
    assert _cli(live.transport(), "--state", str(state), "--log-key", other) == 2
    assert "this state pins the log key" in capsys.readouterr().err
    (tmp_path / "corrupt").mkdir()
    (tmp_path / "corrupt" / STATE_FILE).write_text("{")
    assert _cli(live.transport(), "--state", str(tmp_path / "corrupt")) == 2
    shortened = _kept(state).model_copy(update={"compact_range": _kept(state).compact_range[1:]})
    (tmp_path / "corrupt" / STATE_FILE).write_text(shortened.model_dump_json())
    assert _cli(live.transport(), "--state", str(tmp_path / "corrupt")) == 2
    assert "compact range does not fit" in capsys.readouterr().err
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    args = build_parser().parse_args(["monitor", "--url", f"http://127.0.0.1:{port}", "--state", str(state)])
    assert monitor_command.run(args) == 2
    err = capsys.readouterr().err
    assert "service unreachable" in err and "Traceback" not in err


def _pinned_as(service: str, pinned: MonitorState | CosignedCheckpoint, origin: str, key: str | None = None) -> str:
    """The one line, monitor's and witness's, for a service presenting `origin` (and `key`) after `pinned`."""
    since = f"since {pinned.key_pinned_at} " if pinned.key_pinned_at else ""  # unknown in the old witness layout
    return (f"the service {normalise_service_url(service)} publishes its log as {pinned.origin!r} (pinned "
            f"{since}with key {pinned.log_key}), not {origin!r}" + (f" with key {key}" if key else ""))


def _naming(key: note.Verifier, origin: str = "bank.test/log") -> Callable[[httpx.Request, httpx.Response],
                                                                           httpx.Response]:
    """A tamper for LiveBank.transport: /v1/log/key answers `origin` with `key` (whatever the key's name)."""
    def tamper(request: httpx.Request, response: httpx.Response) -> httpx.Response:
        if request.url.path != "/v1/log/key":
            return response
        return _json(LogKey(origin=origin, verifier_key=key.vkey()))
    return tamper


def _violations(out: str) -> list[str]:
    return [line for line in out.splitlines() if line.startswith("VIOLATION:")]


def test_the_default_state_directory_is_per_service(live, private, tmp_path, monkeypatch, capsys):
    live.ensure_history()
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "xdg"))
    home = tmp_path / "xdg" / "fairproof" / "monitor"
    assert _cli(live.transport(), url="http://127.0.0.1:8000") == 0
    assert sorted(os.listdir(home)) == ["http+localhost_8000"]  # named after the service, not the log's origin
    state = home / "http+localhost_8000"
    pinned, kept = _kept(state), (state / STATE_FILE).read_bytes()
    assert (pinned.origin, pinned.log_key) == ("bank.test/log", live.signer().verifier().vkey())
    capsys.readouterr()
    # The bank restarts its service over the same URL (another spelling of it) with a fresh log of another
    # origin and key: a violation against the service's pin, not a first use in a directory of its own.
    assert _cli(private.transport(), url="http://localhost:8000/") == 1
    out, err = capsys.readouterr()
    assert _violations(out) == ["VIOLATION: " + _pinned_as("http://localhost:8000", pinned, PRIVATE_ORIGIN,
                                                           private.signer().verifier().vkey())]
    assert "pinned the log key" not in err and "evidence kept in" in err
    assert (state / STATE_FILE).read_bytes() == kept and sorted(os.listdir(home)) == ["http+localhost_8000"]
    evidence = _evidence(state)[-1]["checkpoints"]
    assert evidence["kept"] == pinned.checkpoint.checkpoint and evidence["served"].startswith(PRIVATE_ORIGIN + "\n")
    assert evidence["served_log_key"] == private.signer().verifier().vkey()
    # Rejection twin: the pinned log, grown, from the same service is followed.
    live.pending.append(live.decide(live.records[1]))
    assert _cli(live.transport(), url="http://localhost:8000") == 0
    assert _kept(state).size == pinned.size + 1 and _kept(state).key_pinned_at == pinned.key_pinned_at


def test_an_explicit_state_pinning_another_log_is_a_violation(live, private, tmp_path, capsys):
    live.ensure_history()
    public, secret = tmp_path / "public", tmp_path / "secret"
    assert _cli(live.transport(), "--state", str(public)) == 0
    kept = (public / STATE_FILE).read_bytes()
    capsys.readouterr()
    assert _cli(private.transport(), "--state", str(public)) == 1
    assert _violations(capsys.readouterr().out) == [
        "VIOLATION: " + _pinned_as(URL, _kept(public), PRIVATE_ORIGIN, private.signer().verifier().vkey())]
    assert (public / STATE_FILE).read_bytes() == kept
    # /v1/log/key naming the pinned origin with the private log's key is that key presented, not unusable input.
    assert _cli(live.transport(_naming(private.signer().verifier())), "--state", str(public)) == 1
    assert _violations(capsys.readouterr().out) == [
        "VIOLATION: " + _pinned_as(URL, _kept(public), "bank.test/log", private.signer().verifier().vkey())]
    assert (public / STATE_FILE).read_bytes() == kept
    # Rejection twin: the private log is a log of its own, followed in a state that pins it ...
    assert _cli(private.transport(), "--state", str(secret)) == 0 and _kept(secret).origin == PRIVATE_ORIGIN
    capsys.readouterr()
    # ... where the public one is the other log.
    assert _cli(live.transport(), "--state", str(secret)) == 1
    assert _violations(capsys.readouterr().out) == [
        "VIOLATION: " + _pinned_as(URL, _kept(secret), "bank.test/log", live.signer().verifier().vkey())]


def test_the_monitor_adopts_its_old_default_state_directory(live, tmp_path, monkeypatch, capsys):
    live.ensure_history()
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "xdg"))
    home = tmp_path / "xdg" / "fairproof" / "monitor"
    old = home / "bank.test_log"  # where the old layout kept the log of origin bank.test/log
    assert _run(live.transport(), old).exit_status == 0
    kept, before = _kept(old), (old / STATE_FILE).read_bytes()
    live.pending.append(live.decide(live.records[0]))
    capsys.readouterr()
    assert _cli(live.transport()) == 0
    out, err = capsys.readouterr()
    new = home / "http+bank.test"
    assert f"adopted the state of {old}" in err and "pinned the log key" not in err
    assert _kept(new).size == kept.size + 1 and _kept(new).key_pinned_at == kept.key_pinned_at
    assert json.loads((new / REPORT_FILE).read_text())["new_entries"] == 1  # only the entry added since
    assert sorted(p.name for p in (new / "cards").iterdir()) == sorted(p.name for p in (old / "cards").iterdir())
    assert (old / STATE_FILE).read_bytes() == before  # left as it was
    # Rejection twin: an old directory pinning another key for the origin is adopted, and the key the service
    # names is then a violation, not a first use.
    shutil.rmtree(new)
    other = note.generate_key("bank.test/log")[1]
    (old / STATE_FILE).write_text(kept.model_copy(update={"log_key": other}).model_dump_json())
    assert _cli(live.transport()) == 1
    out, err = capsys.readouterr()
    assert _violations(out) == ["VIOLATION: " + _pinned_as(URL, _kept(new), "bank.test/log",
                                                           live.signer().verifier().vkey())]
    assert _kept(new).log_key == other and "pinned the log key" not in err


def test_the_auditor_imports_nothing_of_the_bank_side():
    blocked = ("audits", "fairness", "offline_precompute", "prover_service", "sqlalchemy", "scipy", "torch",
               "matplotlib")
    # the one record encoder, read through cards, and the radius vocabulary cards speak (standard library only)
    shared = ("fairness", "fairness.schema", "fairness.errors", "fairness.radius")
    script = textwrap.dedent(f"""
        import sys
        BLOCKED = {blocked!r}
        SHARED = {shared!r}

        class Block:
            def find_spec(self, name, path=None, target=None):
                if name.split(".")[0] in BLOCKED and name not in SHARED:
                    raise ImportError(f"the auditor must not import {{name}}")
                return None

        sys.meta_path.insert(0, Block())
        import verifier_client.monitor, verifier_client.witness
        print(sorted(m for m in sys.modules if m.split(".")[0] in BLOCKED and m not in SHARED))
    """)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=ROOT, env=env,
                          timeout=120)
    assert done.returncode == 0 and done.stdout.strip() == "[]", done.stderr
    # The blocker itself works: the bank's side does not import through it.
    bad = subprocess.run([sys.executable, "-c", script.replace("verifier_client.witness", "prover_service.cli")],
                         capture_output=True, text=True, cwd=ROOT, env=env, timeout=120)
    assert bad.returncode != 0 and "must not import" in bad.stderr


def test_fair_and_unfair_variants_are_paired():
    assert variant_of("german-4x2-fair") == ("german-4x2-*", "fair")
    assert variant_of("german-4x2-unfair") == ("german-4x2-*", "unfair")
    assert variant_of("fairness-4x2") is None and variant_of("fair-unfair") is None
    groups = plot_groups(["german-4x2-fair", "compas_unfair", "german-4x2-unfair", "adult"])
    assert groups == [("german-4x2-fair-vs-unfair", ["german-4x2-fair", "german-4x2-unfair"]),
                      ("adult", ["adult"]), ("compas_unfair", ["compas_unfair"])]


def test_exact_decimals():
    from fractions import Fraction

    assert exact_decimal(Fraction(3, 8)) == "0.375" and exact_decimal(Fraction(5)) == "5"
    assert exact_decimal(Fraction(1, 1 << 20)) == "0.00000095367431640625"
    with pytest.raises(ValueError):
        exact_decimal(Fraction(1, 3))


# -- the witness ----------------------------------------------------------------------------------------------


def _witness(live, witness_key, path: Path) -> Witness:
    return Witness(cosignature.CosignatureSigner.from_key(witness_key[0]), live.signer().verifier(), path)


def _cosignatures(signed: str, live, *witnesses: cosignature.CosignatureVerifier) -> set[str]:
    opened = note.open(signed, [live.signer().verifier(), *witnesses])
    return {s.name for s in opened.verified} - {live.signer().name}


def test_the_witness_cosigns_a_growing_log_and_the_service_serves_it(live, witness_key, tmp_path):
    witness = _witness(live, witness_key, tmp_path / "w.json")
    with WitnessClient(URL, transport=live.transport()) as client:
        first = witness.cosign(client.checkpoint().checkpoint, client.consistency)
        client.add_cosignature(first)
        live.pending.append(live.decide(live.records[1]))  # the log grows by one leaf
        live.requests.clear()
        second = witness.cosign(client.checkpoint().checkpoint, client.consistency)
        assert any(r.url.path == "/v1/log/proof/consistency" for r in live.requests)
        served = client.add_cosignature(second).checkpoint
        assert client.checkpoint().checkpoint == served
    assert _cosignatures(served, live, witness.verifier) == {"witness.test"}
    assert witness.last().size == Checkpoint.parse(note.open(served, [live.signer().verifier()]).text).size
    # Rejection twin: a witness the bank did not configure is refused by the service, and never served.
    stranger = Witness(cosignature.CosignatureSigner.from_key(cosignature.generate_key("stranger.test")[0]),
                       live.signer().verifier(), tmp_path / "s.json")
    with WitnessClient(URL, transport=live.transport()) as client:
        bare = _log_signature_only(client.checkpoint().checkpoint, live)
        with pytest.raises(ServiceError, match="the checkpoint carries no cosignature by a configured witness"):
            client.add_cosignature(stranger.cosign(bare, client.consistency))
        # Beside the configured witness's line the post is taken, but only that witness's line is kept.
        served = client.add_cosignature(stranger.cosign(client.checkpoint().checkpoint, client.consistency))
        assert _cosignatures(served.checkpoint, live, witness.verifier, stranger.verifier) == {"witness.test"}
        assert "stranger.test" not in client.checkpoint().checkpoint


def _log_signature_only(signed: str, live) -> str:
    """The checkpoint as the log signed it, without any cosignature."""
    text, _, lines = signed.partition("\n\n")
    own = [line for line in lines.splitlines() if line.startswith(f"\u2014 {live.signer().name} ")]
    return f"{text}\n\n{own[0]}\n"


def _proofs(log: ForgedLog) -> Callable[[int, int], ConsistencyProof]:
    """Consistency proofs as `log` serves them."""
    def fetch(old: int, new: int) -> ConsistencyProof:
        request = httpx.Request("GET", f"{URL}/v1/log/proof/consistency", params={"old": old, "new": new})
        return ConsistencyProof.model_validate_json(log.handle(request).content)
    return fetch


def test_the_witness_refuses_forks_rollbacks_and_other_keys(live, witness_key, tmp_path):
    live.ensure_history()
    leaves, cards = live.leaves()
    witness = _witness(live, witness_key, tmp_path / "w.json")
    with WitnessClient(URL, transport=live.transport()) as client:
        witness.cosign(client.checkpoint().checkpoint, client.consistency)
    kept = (tmp_path / "w.json").read_bytes()
    impostor = note.Signer.from_key(note.generate_key(live.signer().name)[0])
    cases = {
        "FORK: the log shows another tree": ForgedLog(live.signer(), _altered(leaves), cards),
        "does not extend": ForgedLog(live.signer(), _altered(leaves) + [leaves[-1]], cards),
        "ROLLBACK": ForgedLog(live.signer(), leaves[:-1], cards),
        "not signed by the log key": ForgedLog(impostor, leaves, cards),
    }
    for reason, forged in cases.items():
        with pytest.raises(WitnessRefused, match=reason):
            witness.cosign(forged.note, _proofs(forged))
        assert (tmp_path / "w.json").read_bytes() == kept  # nothing is kept from a refused checkpoint
    # Rejection twin: the honest log, grown by a leaf, is cosigned.
    grown = ForgedLog(live.signer(), leaves + [leaves[-1]], cards)
    cosigned = witness.cosign(grown.note, _proofs(grown))
    assert _cosignatures(cosigned, live, witness.verifier) == {"witness.test"}


def test_the_witness_commands(live, witness_key, tmp_path, capsys):
    key = tmp_path / "witness.key"
    keygen = build_parser().parse_args(["witness", "keygen", "--name", "w.test", "--out", str(key)])
    assert keygen.handler(keygen) == 0
    vkey = capsys.readouterr().out.strip()
    assert stat.S_IMODE(os.stat(key).st_mode) == 0o600
    assert cosignature.CosignatureSigner.from_key(key.read_text().strip()).verifier().vkey() == vkey
    assert keygen.handler(keygen) == 2 and "never overwritten" in capsys.readouterr().err

    configured = tmp_path / "configured.key"
    configured.write_text(witness_key[0] + "\n")

    def cosign(transport, *extra: str) -> int:
        args = build_parser().parse_args(["witness", "cosign", "--url", URL, "--key", str(configured),
                                          "--state", str(tmp_path / "state"), *extra])
        return witness_command.run_cosign(args, transport=transport)

    assert cosign(live.transport()) == 0
    out, err = capsys.readouterr()
    assert out.startswith("cosigned bank.test/log at ") and "pinned the log key" in err
    assert os.listdir(tmp_path / "state") == ["http+bank.test.json"]  # the state of the service's log
    # --log-key must be the pinned key (else unusable input); on first use, the key the service names.
    other = note.generate_key("bank.test/log")[1]
    assert cosign(live.transport(), "--log-key", other) == 2 and "pins the log key" in capsys.readouterr().err
    args = build_parser().parse_args(["witness", "cosign", "--url", URL, "--key", str(configured), "--state",
                                      str(tmp_path / "fresh"), "--log-key", other])
    assert witness_command.run_cosign(args, transport=live.transport()) == 1
    assert f"not 'bank.test/log' with key {live.signer().verifier().vkey()}" in capsys.readouterr().err
    assert not (tmp_path / "fresh").exists()
    assert cosign(live.transport(), "--log-key", live.signer().verifier().vkey()) == 0
    capsys.readouterr()
    leaves, cards = live.leaves()
    assert cosign(ForgedLog(live.signer(), leaves[:-1], cards).transport()) == 1
    assert "REFUSED: ROLLBACK" in capsys.readouterr().err
    configured.write_text("PRIVATE+KEY+nonsense\n")
    assert cosign(live.transport()) == 2 and "is not a witness key" in capsys.readouterr().err


def _cosign_command(key: Path, state: Path, capsys) -> Callable[..., tuple[int, str]]:
    """`fairproof witness cosign` with `key` and `state`: (exit status, stderr)."""
    def cosign(transport, url: str = URL, state_dir: Path = state) -> tuple[int, str]:
        args = build_parser().parse_args(["witness", "cosign", "--url", url, "--key", str(key),
                                          "--state", str(state_dir)])
        capsys.readouterr()
        status = witness_command.run_cosign(args, transport=transport)
        return status, capsys.readouterr().err
    return cosign


def test_the_witness_pins_the_log_per_service(live, private, witness_key, tmp_path, capsys):
    live.ensure_history()
    key = tmp_path / "witness.key"
    key.write_text(witness_key[0] + "\n")
    state = tmp_path / "state"
    cosign = _cosign_command(key, state, capsys)
    status, err = cosign(live.transport(), "http://127.0.0.1:8000")
    assert status == 0 and "pinned the log key" in err
    path = state / "http+localhost_8000.json"  # one file per service, whatever origin it names
    pinned = CosignedCheckpoint.model_validate_json(path.read_text())
    assert (pinned.service, pinned.origin, pinned.log_key) == ("http://localhost:8000", "bank.test/log",
                                                               live.signer().verifier().vkey())
    kept = path.read_bytes()
    # The bank restarts its service over the same URL with a fresh log (another origin, another key) holding one
    # customer's certificate: refused under every spelling of the URL, and nothing is written.
    for url in ("http://127.0.0.1:8000", "http://localhost:8000/"):
        status, err = cosign(private.transport(), url)
        assert status == 1
        assert err.splitlines() == ["REFUSED: " + _pinned_as(url, pinned, PRIVATE_ORIGIN,
                                                             private.signer().verifier().vkey())]
        assert path.read_bytes() == kept and os.listdir(state) == [path.name]
    assert "witness.test" not in private.client.get("/v1/log/checkpoint").json()["checkpoint"]  # never cosigned
    # The same origin under another key; the pinned key named, but the private log's checkpoint served.
    leaves, cards = live.leaves()
    rekeyed = note.Signer.from_key(note.generate_key("bank.test/log")[0])
    status, err = cosign(ForgedLog(rekeyed, leaves, cards).transport(), "http://127.0.0.1:8000")
    assert status == 1 and err.strip() == "REFUSED: " + _pinned_as("http://127.0.0.1:8000", pinned, "bank.test/log",
                                                                     rekeyed.verifier().vkey())

    def private_checkpoint(request: httpx.Request, response: httpx.Response) -> httpx.Response:
        if request.url.path != "/v1/log/checkpoint":
            return response
        return httpx.Response(200, content=private.client.get("/v1/log/checkpoint").content,
                              headers={"content-type": "application/json"})

    status, err = cosign(live.transport(private_checkpoint), "http://127.0.0.1:8000")
    assert status == 1 and err.strip() == "REFUSED: " + _pinned_as("http://127.0.0.1:8000", pinned, PRIVATE_ORIGIN)
    status, err = cosign(live.transport(_naming(private.signer().verifier())), "http://127.0.0.1:8000")
    assert status == 1 and err.strip() == "REFUSED: " + _pinned_as("http://127.0.0.1:8000", pinned, "bank.test/log",
                                                                     private.signer().verifier().vkey())
    assert path.read_bytes() == kept and os.listdir(state) == [path.name]
    # Rejection twin: the same service with the same origin and key, grown by a leaf, is cosigned.
    live.pending.append(live.decide(live.records[1]))
    status, err = cosign(live.transport(), "http://localhost:8000")
    assert status == 0 and err == ""
    after = CosignedCheckpoint.model_validate_json(path.read_text())
    assert after.size == pinned.size + 1 and after.key_pinned_at == pinned.key_pinned_at
    # And the private log is a log like any other for a witness that never pinned this service.
    status, _ = cosign(private.transport(), state_dir=tmp_path / "elsewhere")
    assert status == 0


def test_the_witness_adopts_its_old_layout_state_file(live, witness_key, tmp_path, capsys):
    live.ensure_history()
    key = tmp_path / "witness.key"
    key.write_text(witness_key[0] + "\n")
    state = tmp_path / "state"
    old = state / "bank.test_log.json"  # the old layout: one file per origin
    with WitnessClient(URL, transport=live.transport()) as client:
        _witness(live, witness_key, old).cosign(client.checkpoint().checkpoint, client.consistency)
    document = json.loads(old.read_text())
    del document["service"], document["key_pinned_at"]  # as the old layout wrote it
    old.write_text(json.dumps(document, indent=2) + "\n")
    before = old.read_bytes()
    live.pending.append(live.decide(live.records[1]))
    live.requests.clear()
    cosign = _cosign_command(key, state, capsys)
    status, err = cosign(live.transport())
    assert status == 0 and f"adopted the state of {old}" in err and "pinned the log key" not in err
    asked = [(r.url.path, dict(r.url.params)) for r in live.requests]
    assert ("/v1/log/proof/consistency", {"old": str(document["size"]), "new": str(document["size"] + 1)}) in asked
    adopted = CosignedCheckpoint.model_validate_json((state / "http+bank.test.json").read_text())
    assert (adopted.service, adopted.origin, adopted.log_key) == (URL, document["origin"], document["log_key"])
    assert adopted.size == document["size"] + 1
    assert old.read_bytes() == before  # left as it was
    # Refusal twins: an old file pinning another key for the origin, and one whose cosigned tree is larger
    # than the log's (its checkpoint carries over: a rollback). Nothing is written.
    other = note.generate_key("bank.test/log")[1]
    cases = {"key": ({"log_key": other}, "REFUSED: " + _pinned_as(URL, CosignedCheckpoint(
                 **{**document, "log_key": other}), "bank.test/log", live.signer().verifier().vkey())),
             "rollback": ({"size": document["size"] + 10}, "REFUSED: ROLLBACK")}
    for name, (change, reason) in cases.items():
        directory = tmp_path / name
        directory.mkdir()
        (directory / "bank.test_log.json").write_text(json.dumps({**document, **change}))
        status, err = cosign(live.transport(), state_dir=directory)
        assert status == 1 and err.strip().startswith(reason)
        assert os.listdir(directory) == ["bank.test_log.json"]
