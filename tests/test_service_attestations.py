"""Auditors' attestations of the model cards, as the service takes them in and serves them.

A configured auditor's attestation of a published card is accepted, listed,
and appended to the transparency log as one `card_attested` leaf, and a
customer who trusts that auditor accepts the card from what the service lists.
Every acceptance has its refusal beside it: a note that does not verify, an
auditor the deployment does not name (accepted only with the admin key),
another model's statement, a card the log never published, a statement of
other circuits, malformed bodies, an unknown model. A refusal appends nothing,
and a failure between the leaf and the row leaves neither.
"""
from __future__ import annotations

import errno
import hashlib
import json
import shutil

import pytest
from fastapi.testclient import TestClient
from pydantic import ValidationError

from commitments.attestation import (Attestation, AttestationStatement, AttestedCircuit, attested_circuits,
                                     check_attestations, sign_attestation)
from commitments.card import ModelCard
from commitments.log import CardAttested, CardPublished, Leaf, parse_leaf
from prover_service.service import attestation_routes
from prover_service.service.app import create_app
from prover_service.service.settings import Settings
from transparency import note

from bank_fixtures import MODEL

ADMIN = {"X-API-Key": "attestation-test-admin-key"}
PATH = f"/v1/models/{MODEL}/attestations"
PHASE1 = hashlib.sha256(b"the auditors' powers of tau").hexdigest()


# ------------------------------------------------------------------ the bank and its auditors
class Auditor:
    def __init__(self, name: str):
        skey, self.vkey = note.generate_key(name)
        self.signer = note.Signer.from_key(skey)
        self.name = name

    def attest(self, statement: AttestationStatement) -> Attestation:
        return sign_attestation(statement, self.signer)


@pytest.fixture(scope="module")
def auditor() -> Auditor:
    return Auditor("auditor.test")


@pytest.fixture(scope="module")
def stranger() -> Auditor:
    """An auditor the deployment does not name."""
    return Auditor("stranger.test")


@pytest.fixture
def models_dir(bank, tmp_path):
    models = tmp_path / "models"
    shutil.copytree(bank.prover.workspace.root, models / MODEL)
    return models


@pytest.fixture
def client(models_dir, auditor):
    """The service naming `auditor`, with the bank's model registered (its card published)."""
    with TestClient(create_app(_settings(models_dir, auditor.vkey))) as client:
        assert client.post("/v1/admin/models", json={"directory": MODEL}, headers=ADMIN).status_code == 201
        yield client


def _settings(models_dir, auditors: str = "", **extra) -> Settings:
    return Settings(models_dir=models_dir, admin_api_key=ADMIN["X-API-Key"], workers=0, auditors=auditors, **extra)


def _card(client: TestClient) -> ModelCard:
    r = client.get(f"/v1/models/{MODEL}/card")
    assert r.status_code == 200, r.text
    return ModelCard.model_validate_json(r.content)


def _contributions(card: ModelCard, name: str) -> tuple[str, ...]:
    """The contribution hashes of the circuit's setup; a stand-in for a single-party setup, which has none."""
    entry = next(e for e in (*card.circuits, *card.audit_circuits)
                 if (getattr(e, "bucket", None) or getattr(e, "name", None)) == name)
    hashes = tuple(c.hash for c in entry.setup.contributions)
    return hashes or (hashlib.blake2b(name.encode()).hexdigest(),)


def _statement(card: ModelCard, **changes) -> AttestationStatement:
    """What an auditor who checked every key of `card` signs; `changes` replace fields of it."""
    fields = dict(
        model_id=card.model_id, card_digest=card.digest(), commitment=card.commitment, phase1_digest=PHASE1,
        circuits=tuple(AttestedCircuit(name=name, r1cs_digest=r1cs, verifying_key_digest=vk,
                                       contributions=_contributions(card, name))
                       for name, r1cs, vk in attested_circuits(card)),
        lenses=card.lenses, date="2026-11-28")
    fields.update(changes)
    return AttestationStatement(**fields)


def _leaves(client: TestClient) -> list[Leaf]:
    size = int(client.get("/v1/log/checkpoint").json()["checkpoint"].split("\n")[1])
    entries = client.get(f"/v1/log/entries?start=0&end={size}").json()["entries"]
    return [parse_leaf(e["data"].encode()) for e in entries]


def _listed(client: TestClient) -> list[Attestation]:
    r = client.get(PATH)
    assert r.status_code == 200, r.text
    return [Attestation.model_validate(a) for a in r.json()["attestations"]]


def _refused(client: TestClient, body, code: int, words: str, headers: dict | None = None) -> None:
    """Posting `body` is refused with `code`, in words, and leaves the log and the list as they were."""
    before = _leaves(client)
    listed = _listed(client)
    payload = body.model_dump() if isinstance(body, Attestation) else body
    r = client.post(PATH, json=payload, headers=headers or {})
    assert r.status_code == code, r.text
    assert words in r.json()["detail"], r.json()["detail"]
    assert _leaves(client) == before and _listed(client) == listed


# ------------------------------------------------------------------ accepted, listed, logged once
def test_an_auditors_attestation_is_accepted_listed_and_logged_once(client, auditor):
    card = _card(client)
    assert _listed(client) == []
    attestation = auditor.attest(_statement(card))
    r = client.post(PATH, json=attestation.model_dump())
    assert r.status_code == 201, r.text
    assert Attestation.model_validate(r.json()) == attestation
    assert _listed(client) == [attestation]
    leaves = _leaves(client)
    assert leaves[-1] == CardAttested(model_id=MODEL, card_digest=card.digest(), auditor_key=auditor.vkey,
                                      attestation_digest=attestation.digest())
    assert attestation.digest() == hashlib.sha256(attestation.note.encode()).hexdigest()
    card_leaf = leaves.index(CardPublished(model_id=MODEL, commitment=card.commitment, card_digest=card.digest()))
    assert card_leaf < len(leaves) - 1  # the card is in the log before its attestation
    # The customer's rule, from what the service lists: the trusted auditor attested this card.
    check = check_attestations(card, card.digest(), _listed(client), [auditor.vkey])
    assert check.problem is None and check.auditors == (auditor.name,)

    again = client.post(PATH, json=attestation.model_dump())  # a retry: the same answer, no second leaf
    assert again.status_code == 200, again.text
    assert Attestation.model_validate(again.json()) == attestation
    assert _leaves(client) == leaves and _listed(client) == [attestation]


def test_a_retry_racing_the_first_post_appends_no_second_leaf(client, auditor, monkeypatch):
    """The check before the transaction missed the row (another request was committing it): the
    transaction finds it once it holds the appenders' lock, and drops its own leaf."""
    attestation = auditor.attest(_statement(_card(client)))
    assert client.post(PATH, json=attestation.model_dump()).status_code == 201
    leaves = _leaves(client)
    real = attestation_routes._held
    calls: list[str] = []

    def missed_once(state, digest):
        calls.append(digest)
        return None if len(calls) == 1 else real(state, digest)

    monkeypatch.setattr(attestation_routes, "_held", missed_once)
    r = client.post(PATH, json=attestation.model_dump())
    assert r.status_code == 200 and len(calls) == 2, r.text
    assert _leaves(client) == leaves and _listed(client) == [attestation]


def test_a_model_holding_a_full_list_takes_no_more(client, auditor, monkeypatch):
    card = _card(client)
    monkeypatch.setattr(attestation_routes, "MAX_ATTESTATIONS_PER_MODEL", 1)
    first = auditor.attest(_statement(card))
    assert client.post(PATH, json=first.model_dump()).status_code == 201
    _refused(client, auditor.attest(_statement(card, date="2026-11-29")), 409, "holds 1 attestations already")
    assert client.post(PATH, json=first.model_dump()).status_code == 200  # the one held is still answered


def test_a_note_that_does_not_verify_is_refused(client, auditor, stranger):
    card = _card(client)
    attestation = auditor.attest(_statement(card))
    altered = attestation.note.replace('"date":"2026-11-28"', '"date":"2026-11-29"')
    assert altered != attestation.note
    _refused(client, Attestation(auditor_key=auditor.vkey, note=altered), 422, "mis-signed")
    # Signed by another key but naming the configured auditor's.
    forged = Attestation(auditor_key=auditor.vkey, note=stranger.attest(_statement(card)).note)
    _refused(client, forged, 422, f"not signed by {auditor.name}")
    assert client.post(PATH, json=attestation.model_dump()).status_code == 201  # the note as signed


def test_an_auditor_the_deployment_does_not_name_needs_the_admin_key(client, auditor, stranger):
    card = _card(client)
    attestation = stranger.attest(_statement(card))
    _refused(client, attestation, 403, "FAIRPROOF_AUDITORS")
    _refused(client, attestation, 401, "wrong admin API key", headers={"X-API-Key": "not-the-admin-key-at-all"})
    r = client.post(PATH, json=attestation.model_dump(), headers=ADMIN)
    assert r.status_code == 201, r.text
    assert _listed(client) == [attestation]
    assert _leaves(client)[-1] == CardAttested(model_id=MODEL, card_digest=card.digest(), auditor_key=stranger.vkey,
                                               attestation_digest=attestation.digest())
    # Listed, but a customer who trusts only the configured auditor finds no attestation of theirs.
    check = check_attestations(card, card.digest(), _listed(client), [auditor.vkey])
    assert check.auditors == () and check.problem is not None


def test_a_deployment_without_auditors_takes_attestations_from_its_admin_only(models_dir, auditor):
    with TestClient(create_app(_settings(models_dir))) as client:
        assert client.post("/v1/admin/models", json={"directory": MODEL}, headers=ADMIN).status_code == 201
        attestation = auditor.attest(_statement(_card(client)))
        _refused(client, attestation, 403, "is not one this service accepts")
        assert client.post(PATH, json=attestation.model_dump(), headers=ADMIN).status_code == 201


def test_another_models_statement_is_refused(client, auditor):
    card = _card(client)
    _refused(client, auditor.attest(_statement(card, model_id="another-model")), 422, "of model 'another-model'")
    assert client.post(PATH, json=auditor.attest(_statement(card)).model_dump()).status_code == 201


def test_a_card_the_log_never_published_is_refused_until_it_is(client, models_dir, auditor):
    from prover_service.workspace import ModelWorkspace

    published = _card(client)
    first = auditor.attest(_statement(published))
    assert client.post(PATH, json=first.model_dump()).status_code == 201
    unknown = hashlib.sha256(b"no card").hexdigest()
    _refused(client, auditor.attest(_statement(published, card_digest=unknown)), 404, "published no card")
    # Another card of the model on disk (same keys, another description): not in the log until an admin
    # publishes it.
    workspace = ModelWorkspace.open(models_dir / MODEL)
    changed = ModelCard.model_validate_json(published.model_copy(update={"description": "re-described"})
                                            .model_dump_json())
    workspace.save_card(changed)
    assert changed.digest() != published.digest()
    second = auditor.attest(_statement(changed))
    _refused(client, second, 404, "published no card")
    assert client.post(f"/v1/admin/models/{MODEL}/card", headers=ADMIN).status_code == 201
    assert _card(client).digest() == changed.digest()
    r = client.post(PATH, json=second.model_dump())
    assert r.status_code == 201, r.text
    # The older card's attestation stays listed (it attests a card the log published), oldest first.
    assert _listed(client) == [first, second]
    attested = [leaf for leaf in _leaves(client) if isinstance(leaf, CardAttested)]
    assert [leaf.card_digest for leaf in attested] == [published.digest(), changed.digest()]
    # A card of another model, published or not, is no card of this one.
    _refused(client, auditor.attest(_statement(changed, model_id="another-model")), 422, "of model")


def test_a_statement_of_other_circuits_or_another_commitment_is_refused(client, auditor):
    card = _card(client)
    circuits = _statement(card).circuits
    other_key = circuits[0].model_copy(update={"verifying_key_digest": hashlib.sha256(b"another key").hexdigest()})
    _refused(client, auditor.attest(_statement(card, circuits=(other_key, *circuits[1:]))), 422,
             "the circuits it lists are not the card's")
    _refused(client, auditor.attest(_statement(card, circuits=circuits[:-1] or (other_key,))), 422,
             "the circuits it lists are not the card's")
    _refused(client, auditor.attest(_statement(card, commitment="12345")), 422, "another commitment")
    _refused(client, auditor.attest(_statement(card, lenses=())), 422, "lenses")
    assert client.post(PATH, json=auditor.attest(_statement(card)).model_dump()).status_code == 201


def test_malformed_bodies_are_refused(client, auditor, stranger):
    card = _card(client)
    attestation = auditor.attest(_statement(card))
    good = attestation.model_dump()
    before = _leaves(client)
    for content in (b"{not json", b"[]", json.dumps({**good, "extra": 1}).encode(),
                    json.dumps({"auditor_key": auditor.vkey}).encode(),
                    json.dumps({**good, "note": 42}).encode()):
        r = client.post(PATH, content=content, headers={"Content-Type": "application/json"})
        assert r.status_code == 422 and r.json()["detail"].startswith("invalid request"), (content[:40], r.text)
    _refused(client, {**good, "auditor_key": "not a key"}, 422, "malformed")
    _refused(client, {**good, "auditor_key": auditor.vkey + " "}, 422, "canonical form")
    _refused(client, {**good, "note": "fairproof-card-attestation/v1\n{}\n"}, 422, "mis-signed")
    # A note whose text is not a statement, signed for real.
    _refused(client, {**good, "note": note.sign("hello\n", [auditor.signer])}, 422, "not a card attestation")
    # The auditor's signature with another one beside it: the same statement, another note.
    cosigned = note.sign(_statement(card).text(), [auditor.signer, stranger.signer])
    _refused(client, {**good, "note": cosigned}, 422, "signature alone")
    assert _leaves(client) == before
    assert client.post(PATH, json=good).status_code == 201


def test_an_unknown_model_is_not_found(client, auditor):
    attestation = auditor.attest(_statement(_card(client)))
    unknown = "/v1/models/no-such-model/attestations"
    r = client.get(unknown)
    assert r.status_code == 404 and "unknown model" in r.json()["detail"], r.text
    r = client.post(unknown, json=attestation.model_dump())
    assert r.status_code == 404 and "unknown model" in r.json()["detail"], r.text
    assert client.get("/v1/models/..bad/attestations").status_code == 422  # not a model id at all
    assert client.post(PATH, json=attestation.model_dump()).status_code == 201


def test_a_failure_between_the_leaf_and_the_row_leaves_neither(client, auditor):
    from sqlalchemy import event

    from prover_service.service.schema import CardAttestation

    attestation = auditor.attest(_statement(_card(client)))
    before = _leaves(client)

    def disk_full(*_):  # the leaf is written in the transaction; the row's insert fails at commit
        raise OSError(errno.ENOSPC, "No space left on device")

    event.listen(CardAttestation, "before_insert", disk_full)
    try:
        r = client.post(PATH, json=attestation.model_dump())
    finally:
        event.remove(CardAttestation, "before_insert", disk_full)
    assert r.status_code == 503 and "storage" in r.json()["detail"], r.text
    assert _leaves(client) == before and _listed(client) == []
    assert client.post(PATH, json=attestation.model_dump()).status_code == 201
    assert len(_leaves(client)) == len(before) + 1 and _listed(client) == [attestation]


@pytest.mark.postgres
def test_on_postgresql_the_row_and_its_leaf_commit_together(models_dir, auditor):
    from sqlalchemy import event

    from prover_service.service.schema import CardAttestation
    from tests.service_fixtures import fresh_pg_database

    def disk_full(*_):
        raise OSError(errno.ENOSPC, "No space left on device")

    with fresh_pg_database() as url:
        with TestClient(create_app(_settings(models_dir, auditor.vkey, database_url=url))) as client:
            assert client.post("/v1/admin/models", json={"directory": MODEL}, headers=ADMIN).status_code == 201
            attestation = auditor.attest(_statement(_card(client)))
            before = _leaves(client)
            event.listen(CardAttestation, "before_insert", disk_full)
            try:
                assert client.post(PATH, json=attestation.model_dump()).status_code == 503
            finally:
                event.remove(CardAttestation, "before_insert", disk_full)
            assert _leaves(client) == before and _listed(client) == []
            assert client.post(PATH, json=attestation.model_dump()).status_code == 201
            assert client.post(PATH, json=attestation.model_dump()).status_code == 200
            assert len(_leaves(client)) == len(before) + 1 and _listed(client) == [attestation]


# ------------------------------------------------------------------ body limits
def test_an_attestation_may_be_larger_than_other_bodies_but_not_without_bound(client, auditor):
    small = client.app.state.service.settings.max_body_bytes
    assert attestation_routes.ATTESTATION_BODY_BYTES > small
    big_note = "x" * (small + 1024)  # over the service's limit, within the attestations' one
    r = client.post(PATH, json={"auditor_key": auditor.vkey, "note": big_note})
    assert r.status_code == 422 and "note has no blank line" in r.json()["detail"], r.text
    r = client.post(f"/v1/models/{MODEL}/decisions", json={"record": {"padding": big_note}})
    assert r.status_code == 413, r.text  # other endpoints keep the service's limit
    huge = "x" * (attestation_routes.ATTESTATION_BODY_BYTES + 1)
    r = client.post(PATH, json={"auditor_key": auditor.vkey, "note": huge})
    assert r.status_code == 413, r.text


# ------------------------------------------------------------------ settings and schema
def test_the_auditors_setting_names_verifier_keys(tmp_path, auditor, stranger):
    models = str(tmp_path / "models")
    settings = Settings.from_env({"FAIRPROOF_MODELS_DIR": models, "FAIRPROOF_AUDITORS": f" {auditor.vkey} ,"
                                                                                           f"{stranger.vkey}"})
    assert settings.auditor_keys == (auditor.vkey, stranger.vkey)
    assert Settings.from_env({"FAIRPROOF_MODELS_DIR": models}).auditor_keys == ()
    for bad in ("not-a-key", auditor.signer.skey(), auditor.vkey[:-4]):
        with pytest.raises(ValidationError, match="FAIRPROOF_AUDITORS: auditor key .* is malformed"):
            Settings.from_env({"FAIRPROOF_MODELS_DIR": models, "FAIRPROOF_AUDITORS": bad})


@pytest.mark.parametrize("kind", ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def test_the_migrations_build_the_tables_the_service_declares(kind, tmp_path):
    import contextlib

    from alembic.autogenerate import compare_metadata
    from alembic.runtime.migration import MigrationContext

    from prover_service.service.database import VERSION_TABLE, open_service_database
    from prover_service.service.schema import Base
    from tests.service_fixtures import fresh_pg_database

    with (fresh_pg_database() if kind == "postgres" else
          contextlib.nullcontext(f"sqlite:///{tmp_path / 'service.sqlite'}")) as url:
        database = open_service_database(url)
        try:
            with database.engine.connect() as conn:
                context = MigrationContext.configure(conn, opts={"version_table": VERSION_TABLE})
                assert compare_metadata(context, Base.metadata) == []
        finally:
            database.dispose()
