"""Version-2 cards re-published once as version 3: the command, the customer's pin, the monitor's rule and
the service's log, each recognising the same card by its old digest and nothing else."""
from __future__ import annotations

import hashlib
import json
import shutil

import pytest

from commitments.canonical import NonCanonical
from commitments.card import ModelCard
from commitments.card_migration import is_legacy, legacy_digest, migrate
from verifier_client.pins import REPUBLISHED, PinMismatch, PinStore

URL = "https://bank.example"


def version_2(card: ModelCard) -> str:
    """`card` as a version-2 card file: every field written, version 2, the bucket width a number."""
    data = json.loads(card.model_dump_json(indent=2))
    data["card_version"] = 2
    if data.get("spread"):
        data["spread"]["bucket_width"] = int(data["spread"]["bucket_width"])
    return json.dumps(data, indent=2)


def version_2_canonical(card: ModelCard) -> str:
    """What version 2 hashed, as its code wrote it: the filled-in card without its absent optional parts,
    sorted and unspaced (written here from the model's own dump, not with commitments.card_migration)."""
    data = json.loads(version_2(card))
    absent = [k for k in ("feature_schema", "import_check", "spread", "persistence") if data.get(k) is None]
    absent += [] if data.get("audit_circuits") else ["audit_circuits"]
    return json.dumps({k: v for k, v in data.items() if k not in absent}, sort_keys=True, separators=(",", ":"))


def v2_pin(store: PinStore, card: ModelCard) -> None:
    """A pin file written by a verifier of version-2 cards: the old digest and the old canonical JSON."""
    old_json = version_2_canonical(card)
    store.path.parent.mkdir(parents=True, exist_ok=True)
    store.path.write_text(json.dumps({"pins": [{
        "service": URL, "model_id": card.model_id, "commitment": card.commitment,
        "card_digest": hashlib.sha256(old_json.encode()).hexdigest(), "first_seen": "2026-01-01T00:00:00+00:00",
        "card_json": old_json}]}))


def test_a_version_2_card_is_refused_with_its_migration(bank):
    text = version_2(bank.card)
    with pytest.raises(NonCanonical, match=r"card_version 2 .* \(`fairproof card migrate`\)"):
        ModelCard.from_json(text)
    migrated = migrate(text)
    assert migrated == bank.card and migrated.digest() == bank.card.digest()  # the same card, re-published


def test_the_legacy_digest_is_what_version_2_computed(bank):
    card = bank.card
    assert legacy_digest(card) == hashlib.sha256(version_2_canonical(card).encode()).hexdigest()
    assert legacy_digest(card.model_copy(update={"description": "another"})) != legacy_digest(card)


def test_migrate_gives_the_same_card_under_its_new_digest(bank):
    text = version_2(bank.card)
    assert is_legacy(text) and not is_legacy(bank.card.canonical_json())
    migrated = migrate(text)
    assert migrated == bank.card and migrated.card_version == 3
    assert migrated.digest() == bank.card.digest() != legacy_digest(bank.card)
    assert ModelCard.from_json(migrated.published_json()).digest() == migrated.digest()


def test_what_is_not_a_version_2_card_is_not_migrated(bank):
    with pytest.raises(NonCanonical, match="not a version-2 card"):
        migrate(bank.card.canonical_json())
    broken = json.loads(version_2(bank.card))
    broken["box_upper"] = broken["box_upper"][:-1]  # the card's own rules still hold
    with pytest.raises(NonCanonical):
        migrate(json.dumps(broken))


def test_the_command_migrates_a_model_directory(bank, tmp_path, capsys):
    from prover_service.cli import main
    from prover_service.workspace import ModelWorkspace

    directory = tmp_path / "model"
    directory.mkdir()
    shutil.copy(bank.prover.workspace.root / "model.json", directory / "model.json")
    (directory / "card.json").write_text(version_2(bank.card))
    with pytest.raises(Exception, match="fairproof card migrate"):
        ModelWorkspace.open(directory).card()
    assert main(["card", "migrate", "--model", str(directory)]) == 0
    out = capsys.readouterr().out
    assert legacy_digest(bank.card) in out and bank.card.digest() in out
    assert ModelCard.from_json((directory / "card.json").read_bytes()).digest() == bank.card.digest()
    assert main(["card", "migrate", "--model", str(directory)]) == 1  # twice: nothing to migrate
    assert "not a version-2 card" in capsys.readouterr().err


def test_a_pinned_version_2_card_is_re_pinned_as_its_re_publication(bank, tmp_path):
    store = PinStore(tmp_path / "pins.json")
    v2_pin(store, bank.card)
    checked = store.check(URL, bank.card)
    assert checked.updated and checked.pin.pinned_by == REPUBLISHED
    assert checked.pin.card_digest == bank.card.digest() and "re-published as card version 3" in checked.describe()
    assert store.check(URL, bank.card).pin.card_digest == bank.card.digest()  # and pinned from now on


def test_a_changed_card_is_no_re_publication_of_the_pinned_one(bank, tmp_path):
    store = PinStore(tmp_path / "pins.json")
    v2_pin(store, bank.card)
    before = store.path.read_bytes()
    relabelled = bank.card.model_copy(update={"description": "the same model, honest, promise"})
    with pytest.raises(PinMismatch, match="card changed"):
        store.check(URL, relabelled)
    assert store.path.read_bytes() == before


def test_the_page_refuses_a_version_2_card_as_python_does(bank):
    from page_cases import PageCase, node_verdicts

    text = version_2(bank.card)
    with pytest.raises(NonCanonical, match="card_version 2"):
        ModelCard.from_json(text)
    bundle = bank.bundles[0].model_dump_json()
    old, new = node_verdicts([PageCase("version 2", bundle, text), PageCase("version 3", bundle, bank.card.canonical_json())])
    assert old["verdict"] == "UNUSABLE" and "card_version 2" in old["reason"] and "fairproof card migrate" in old["reason"]
    assert new["verdict"] == "VALID", new


def test_the_service_publishes_the_re_publication_of_its_version_2_card(bank, tmp_path):
    """A service whose log published the version-2 card: after `fairproof card migrate`, the next time it
    serves the card it appends the version-3 card's leaf, and serves it. Nothing else passes for one."""
    from bank_fixtures import MODEL
    from prover_service.service.publication import publish_card
    from prover_service.service.schema import ServedModel
    from service_fixtures import bank_app

    with bank_app(bank, tmp_path, "k" * 32) as client:
        state = client.app.state.service
        legacy = json.loads(version_2(bank.card))
        legacy["description"] = "as version 2 published it"
        old = migrate(json.dumps(legacy))

        class Legacy:  # the version-2 card as its log leaf and stored JSON had it
            model_id, commitment = old.model_id, old.commitment

            def digest(self) -> str:
                return legacy_digest(old)

            def canonical_json(self) -> str:
                return json.dumps(legacy, sort_keys=True, separators=(",", ":"))

        with state.db.transaction() as session:
            publish_card(session, state.registry.log, session.get(ServedModel, MODEL), Legacy())
        state.registry._forget(MODEL)
        # The card on disk is version 3 but says something else than the published card: not published.
        refused = client.get(f"/v1/models/{MODEL}/card")
        assert refused.status_code == 503 and "fairproof card migrate" in refused.json()["detail"]
        # The re-publication of the same card: published in the log, then served.
        workspace = state.registry.get(MODEL).workspace
        workspace.save_card(old)
        served = client.get(f"/v1/models/{MODEL}/card")
        assert served.status_code == 200 and ModelCard.from_json(served.content).digest() == old.digest()
        size = state.registry.log.size()
        entries = client.get("/v1/log/entries", params={"start": 0, "end": size}).json()["entries"]
        leaves = [json.loads(e["data"]) for e in entries if "data" in e]
        published = [leaf for leaf in leaves if leaf.get("kind") == "card_published" and leaf.get("model_id") == MODEL]
        assert [e["card_digest"] for e in published][-2:] == [legacy_digest(old), old.digest()]
