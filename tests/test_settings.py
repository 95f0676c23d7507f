"""Service settings from the environment (pydantic-settings): prefix, empty values, overrides, refusals."""
from __future__ import annotations

import pytest
from pydantic import ValidationError

from prover_service.service.settings import Settings


def test_the_process_environment_is_read(monkeypatch, tmp_path):
    monkeypatch.setenv("FAIRPROOF_WORKERS", "3")
    monkeypatch.setenv("FAIRPROOF_RADIUS", "exact")
    monkeypatch.setenv("FAIRPROOF_STORE_URL", "")  # empty: the default
    monkeypatch.setenv("FAIRPROOF_MODELS_DIR", str(tmp_path / "models"))
    settings = Settings.from_env()
    assert (settings.workers, settings.radius, settings.store_url) == (3, "exact", "")
    assert Settings.from_env(workers=5).workers == 5  # a command-line option wins
    assert Settings.from_env(workers=None).workers == 3  # an option not given does not


def test_an_explicit_environment_replaces_the_process_one(monkeypatch, tmp_path):
    monkeypatch.setenv("FAIRPROOF_WORKERS", "7")
    settings = Settings.from_env({"FAIRPROOF_MODELS_DIR": str(tmp_path), "FAIRPROOF_BUCKET_GROWTH": " 2 "})
    assert settings.workers == 1 and settings.bucket_growth == 2


@pytest.mark.parametrize("name,value", [("FAIRPROOF_WORKERS", "-1"), ("FAIRPROOF_RADIUS", "wide"),
                                        ("FAIRPROOF_ADMIN_API_KEY", "short"), ("FAIRPROOF_BUCKET_GROWTH", "3")])
def test_bad_values_are_refused(monkeypatch, tmp_path, name, value):
    monkeypatch.setenv("FAIRPROOF_MODELS_DIR", str(tmp_path / "models"))
    monkeypatch.setenv(name, value)
    with pytest.raises(ValidationError):
        Settings.from_env()
    assert Settings.from_env({"FAIRPROOF_MODELS_DIR": str(tmp_path)}).workers == 1  # the mapping, not the process


def test_settings_are_frozen(tmp_path):
    settings = Settings.from_env({"FAIRPROOF_MODELS_DIR": str(tmp_path)})
    with pytest.raises(ValidationError):
        settings.workers = 4
