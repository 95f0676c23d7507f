"""Pinning model commitments on first use: one model per (service, model id), never silently replaced."""
from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from commitments.card import ArchitectureCard, FeatureEncoding, ModelCard, SensitiveFeatureCard
from verifier_client.pins import PinFileError, PinMismatch, PinStore, default_pin_file, normalise_service_url

URL = "https://bank.example"


def card(model_id: str = "german-4x2", commitment: str = "1234567890123456789", upper: int = 2) -> ModelCard:
    return ModelCard(
        model_id=model_id, dataset="german", feature_names=("duration", "foreign_worker"),
        features=(FeatureEncoding(name="duration", kind="numeric", mean=20.0, std=12.0),
                  FeatureEncoding(name="foreign_worker", kind="sensitive", categories=("A201", "A202"))),
        sensitive=(SensitiveFeatureCard(name="foreign_worker", column=1, values=(0, 1), labels=("yes", "no")),),
        architecture=ArchitectureCard(n_inputs=2, hidden_sizes=(2,), n_classes=2, class_labels=("bad", "good")),
        scale_bits=0, eps_scale_bits=16, box_lower=(-2, 0), box_upper=(upper, 1),
        commitment=commitment, commitment_scheme="poseidon-test",
    )


def test_first_use_pins_and_later_uses_match(tmp_path):
    store = PinStore(tmp_path / "cfg" / "pins.json")
    first = store.check(URL, card())
    assert first.first_use and first.pin.commitment == card().commitment and first.pin.card_digest == card().digest()
    assert first.pin.service == URL and first.pin.first_seen.endswith("+00:00")
    assert stat.S_IMODE(os.stat(store.path).st_mode) == 0o600
    before = store.path.read_bytes()
    again = store.check(URL + "/", card())
    assert not again.first_use and again.pin == first.pin
    assert store.path.read_bytes() == before
    assert json.loads(before)["pins"][0]["model_id"] == "german-4x2"


def test_another_commitment_for_a_pinned_model_is_refused_and_the_pin_kept(tmp_path):
    store = PinStore(tmp_path / "pins.json")
    store.check(URL, card(commitment="111"))
    before = store.path.read_bytes()
    with pytest.raises(PinMismatch) as info:
        store.check(URL, card(commitment="222"))
    message = str(info.value)
    assert "222" in message and "111" in message and "german-4x2" in message and str(store.path) in message
    assert store.path.read_bytes() == before
    assert store.get(URL, "german-4x2").commitment == "111"


def test_a_changed_card_under_the_same_commitment_is_refused(tmp_path):
    store = PinStore(tmp_path / "pins.json")
    store.check(URL, card(upper=2))
    with pytest.raises(PinMismatch, match="card changed") as info:
        store.check(URL, card(upper=3))  # a wider input box: other queries become certifiable
    assert card(upper=3).digest() in str(info.value) and card(upper=2).digest() in str(info.value)


def test_pins_are_per_service_and_model(tmp_path):
    store = PinStore(tmp_path / "pins.json")
    store.check(URL, card(commitment="111"))
    assert store.check("https://other.example", card(commitment="222")).first_use
    assert store.check(URL, card(model_id="adult-8x2", commitment="333")).first_use
    assert store.check("http://bank.example:8080", card(commitment="444")).first_use
    assert len(store.pins()) == 4
    with pytest.raises(PinMismatch):
        store.check("HTTPS://Bank.Example:443/", card(commitment="999"))


def test_url_normalisation():
    assert normalise_service_url("HTTPS://Bank.Example:443/") == "https://bank.example"
    assert normalise_service_url("http://bank.example:80/api/") == "http://bank.example/api"
    assert normalise_service_url("http://[::1]:8000/?x=1#f") == "http://[::1]:8000"
    for bad in ("bank.example", "ftp://bank.example", "http://", "http://bank.example:99999"):
        with pytest.raises(ValueError):
            normalise_service_url(bad)


@pytest.mark.parametrize("content", ["{not json", '{"version": 1, "pins": [{"service": 1}]}', '{"version": 9}', "\xff"])
def test_a_corrupt_pin_file_is_a_clear_error_and_is_left_alone(tmp_path, content):
    path = tmp_path / "pins.json"
    path.write_bytes(content.encode("latin-1"))
    with pytest.raises(PinFileError, match="pins.json") as info:
        PinStore(path).check(URL, card())
    assert "corrupt" in str(info.value) or "cannot read" in str(info.value)
    assert path.read_bytes() == content.encode("latin-1")


def test_a_model_pinned_twice_in_the_file_is_corrupt(tmp_path):
    store = PinStore(tmp_path / "pins.json")
    store.check(URL, card())
    data = json.loads(store.path.read_text())
    data["pins"].append({**data["pins"][0], "commitment": "5"})
    store.path.write_text(json.dumps(data))
    with pytest.raises(PinFileError, match="pinned twice"):
        store.check(URL, card())


def test_a_failed_write_keeps_the_old_file_and_leaves_no_temporary(tmp_path, monkeypatch):
    store = PinStore(tmp_path / "pins.json")
    store.check(URL, card())
    before = store.path.read_bytes()

    def broken_replace(src, dst):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", broken_replace)
    with pytest.raises(PinFileError, match="No space left"):
        store.check(URL, card(model_id="adult-8x2"))
    monkeypatch.undo()
    assert store.path.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["pins.json", "pins.json.lock"]


def test_default_pin_file_follows_the_environment(monkeypatch, tmp_path):
    monkeypatch.setenv("FAIRPROOF_PIN_FILE", str(tmp_path / "mine.json"))
    assert default_pin_file() == tmp_path / "mine.json" and PinStore().path == tmp_path / "mine.json"
    monkeypatch.delenv("FAIRPROOF_PIN_FILE")
    assert default_pin_file() == Path.home() / ".config" / "fairproof" / "pins.json"


def test_concurrent_customers_lose_no_pin(tmp_path):
    """Four processes pin five models each at once: read-modify-write is serialised."""
    path = tmp_path / "pins.json"
    script = (
        "import sys; sys.path[:0] = [{root!r}, {tests!r}]\n"
        "from test_pins import card, URL\n"
        "from verifier_client.pins import PinStore\n"
        "store = PinStore({path!r})\n"
        "for i in range(5):\n"
        "    store.check(URL, card(model_id=f'm{{sys.argv[1]}}-{{i}}'))\n"
    ).format(root=str(Path(__file__).resolve().parents[1]), tests=str(Path(__file__).resolve().parent), path=str(path))
    procs = [subprocess.Popen([sys.executable, "-c", script, str(k)]) for k in range(4)]
    assert [p.wait(timeout=120) for p in procs] == [0, 0, 0, 0]
    assert sorted(p.model_id for p in PinStore(path).pins()) == sorted(f"m{k}-{i}" for k in range(4) for i in range(5))


def test_this_machines_loopback_spellings_are_one_service(tmp_path):
    store = PinStore(tmp_path / "pins.json")
    assert store.check("http://127.0.0.1:8000", card(commitment="111")).first_use
    for spelling in ("http://localhost:8000/", "http://LOCALHOST:8000", "http://[::1]:8000"):
        assert not store.check(spelling, card(commitment="111")).first_use
        with pytest.raises(PinMismatch):
            store.check(spelling, card(commitment="222"))
    # Another port, scheme or host is another service.
    assert store.check("http://localhost:8001", card(commitment="222")).first_use
    assert store.check("http://127.0.0.2:8000", card(commitment="333")).first_use
    assert len(store.pins()) == 3
