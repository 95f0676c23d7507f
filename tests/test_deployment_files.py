"""docker-compose.yml, the Dockerfile and the operator's guide agree with the service's Settings.

Docker may not run where the tests run, so the compose file is checked as
data: every FAIRPROOF_* variable it sets must be a Settings field, the values
it gives (with compose's ${VAR:-default} resolved) must make valid Settings,
and every Settings field must be documented in the "Settings" section of
docs/guides/operations.md. The README keeps its first commands.
"""
from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from prover_service.service.settings import ENV_PREFIX, Settings

REPO = Path(__file__).resolve().parents[1]
# ${NAME}, ${NAME:-default}, ${NAME-default}, ${NAME:?message}, ${NAME?message}
INTERPOLATION = re.compile(r"\$\{(?P<name>[A-Za-z_][A-Za-z0-9_]*)(?:(?P<op>:?[-?])(?P<arg>[^}]*))?\}")
SETTINGS_VARIABLES = {ENV_PREFIX + name.upper() for name in Settings.model_fields}


def load_compose() -> dict:
    return yaml.safe_load((REPO / "docker-compose.yml").read_text())


OPERATIONS = REPO / "docs" / "guides" / "operations.md"


def guide_section(title: str) -> str:
    text = OPERATIONS.read_text()
    match = re.search(rf"^## {re.escape(title)}\n(.*?)(?=^## |\Z)", text, flags=re.M | re.S)
    assert match, f"{OPERATIONS.name} has no section '## {title}'"
    return match.group(1)


def service_environment(compose: dict, service: str) -> dict[str, str]:
    env = compose["services"][service].get("environment") or {}
    if isinstance(env, list):  # the KEY=VALUE list form
        env = dict(item.split("=", 1) for item in env)
    return {k: str(v) for k, v in env.items()}


def resolve(value: str, host: dict[str, str]) -> str:
    """Compose's interpolation of one value, for a host environment `host`."""
    def one(m: re.Match) -> str:
        name, op, arg = m.group("name"), m.group("op"), m.group("arg")
        present = host.get(name)
        if op and op.endswith("?"):
            if present is None or (op == ":?" and present == ""):
                raise LookupError(f"{name} is required: {arg}")
            return present
        if op == ":-" and not present:
            return arg
        if op == "-" and present is None:
            return arg
        return present or ""

    return INTERPOLATION.sub(one, value)


def unknown_variables(compose: dict) -> dict[str, set[str]]:
    """Per service, the FAIRPROOF_* variables it sets that no Settings field reads."""
    unknown = {}
    for service in compose["services"]:
        names = {k for k in service_environment(compose, service) if k.startswith(ENV_PREFIX)}
        if names - SETTINGS_VARIABLES:
            unknown[service] = names - SETTINGS_VARIABLES
    return unknown


def host_variables(compose_text: str) -> set[str]:
    return {m.group("name") for m in INTERPOLATION.finditer(compose_text) if m.group("name").startswith(ENV_PREFIX)}


# ------------------------------------------------------------------ compose vs Settings
def test_compose_sets_only_settings_variables():
    compose = load_compose()
    assert {"postgres", "prover", "worker"} <= set(compose["services"])
    assert unknown_variables(compose) == {}


def test_a_misspelt_variable_is_caught():
    compose = load_compose()
    compose["services"]["worker"]["environment"] = {**compose["services"]["worker"]["environment"],
                                                    "FAIRPROOF_MODEL_DIR": "/models"}
    assert unknown_variables(compose) == {"worker": {"FAIRPROOF_MODEL_DIR"}}


@pytest.mark.parametrize("service", ["prover", "worker"])
def test_compose_values_make_valid_settings(service):
    compose = load_compose()
    host = {"FAIRPROOF_ADMIN_API_KEY": "k" * 32}
    env = {k: resolve(v, host) for k, v in service_environment(compose, service).items()}
    settings = Settings.from_env(env)
    assert settings.queue == "procrastinate"
    assert settings.resolved_database_url.startswith("postgresql+psycopg://")
    assert str(settings.models_dir) == "/models"
    # The defaults compose falls back to are the service's own defaults.
    defaults = Settings()
    for field in ("max_body_bytes", "lease_seconds", "max_attempts", "log_level"):
        assert getattr(settings, field) == getattr(defaults, field), field


def test_admin_key_comes_from_the_host_and_is_required():
    compose = load_compose()
    value = service_environment(compose, "prover")["FAIRPROOF_ADMIN_API_KEY"]
    with pytest.raises(LookupError, match="FAIRPROOF_ADMIN_API_KEY is required"):
        resolve(value, {})
    with pytest.raises(LookupError):
        resolve(value, {"FAIRPROOF_ADMIN_API_KEY": ""})
    assert resolve(value, {"FAIRPROOF_ADMIN_API_KEY": "s3cret"}) == "s3cret"
    # Workers never need the admin key.
    assert "FAIRPROOF_ADMIN_API_KEY" not in service_environment(compose, "worker")


def test_prover_and_workers_are_wired_for_scale_out():
    compose = load_compose()
    prover, worker = compose["services"]["prover"], compose["services"]["worker"]
    command = prover["command"]
    assert command[0] == "serve"
    assert command[command.index("--host") + 1] == "0.0.0.0"
    assert command[command.index("--queue") + 1] == "procrastinate"
    assert any(str(p).split(":")[-1] == "8000" for p in prover["ports"])
    check = " ".join(prover["healthcheck"]["test"])
    assert "/v1/ready" in check and "python" in check and "curl" not in check  # the image has no curl
    assert worker["command"][0] == "worker"
    # `--scale worker=N` needs workers without a fixed host port or container name.
    assert "ports" not in worker and "container_name" not in worker
    for name in ("postgres", "prover", "worker"):
        assert compose["services"][name].get("restart") in ("always", "unless-stopped", "on-failure"), name
    for name in ("prover", "worker"):
        assert compose["services"][name]["depends_on"]["postgres"]["condition"] == "service_healthy"


# ------------------------------------------------------------------ the operator's guide, the README
def undocumented(section: str) -> list[str]:
    return sorted(v for v in SETTINGS_VARIABLES if f"`{v}`" not in section)


def test_every_settings_field_is_documented():
    assert undocumented(guide_section("Settings")) == []


def test_an_undocumented_field_is_caught():
    section = guide_section("Settings").replace("`FAIRPROOF_LEASE_SECONDS`", "lease seconds")
    assert undocumented(section) == ["FAIRPROOF_LEASE_SECONDS"]


def test_every_host_variable_of_compose_is_documented():
    guide = OPERATIONS.read_text()
    names = host_variables((REPO / "docker-compose.yml").read_text())
    assert "FAIRPROOF_ADMIN_API_KEY" in names
    assert sorted(n for n in names if f"`{n}`" not in guide) == []


def test_readme_keeps_its_first_commands():
    lines = (REPO / "README.md").read_text().splitlines()
    assert lines[0] == "# FairProof"
    assert lines[2].strip().startswith("bash scripts/setup.sh && .venv/bin/fairproof demo")
    assert lines[3].strip().startswith(".venv/bin/python -m pytest")


# ------------------------------------------------------------------ image
def test_image_installs_the_service_and_its_queue():
    dockerfile = (REPO / "Dockerfile").read_text()
    assert re.search(r'pip install [^\n]*"\.\[prover\]"', dockerfile)
    assert "--require-hashes -r requirements/prover.lock.txt" in dockerfile
    assert "EXPOSE 8000" in dockerfile
    pyproject = (REPO / "pyproject.toml").read_text()
    prover_extra = re.search(r"^prover = \[(.*?)^\]", pyproject, flags=re.M | re.S).group(1)
    for package in ("procrastinate", "fastapi", "uvicorn", "psycopg", "alembic"):
        assert package in prover_extra, package


def test_the_image_runs_unprivileged_and_its_context_holds_no_secrets():
    dockerfile = (REPO / "Dockerfile").read_text()
    users = re.findall(r"^USER (\S+)", dockerfile, flags=re.M)
    assert users and users[-1] not in ("root", "0")
    ignored = {line.strip() for line in (REPO / ".dockerignore").read_text().splitlines()
               if line.strip() and not line.startswith("#")}
    for path in (".venv", "node_modules", "var", ".git", "**/secret"):
        assert path in ignored, path


def test_the_api_mounts_models_read_only_and_every_container_is_bounded():
    compose = yaml.safe_load((REPO / "docker-compose.yml").read_text())
    prover = compose["services"]["prover"]
    models = [v for v in prover["volumes"] if v.split(":")[1] == "/models"]
    assert models and all(v.endswith(":ro") for v in models)
    for name in ("prover", "worker"):
        limits = compose["services"][name]["deploy"]["resources"]["limits"]
        assert limits["memory"] and limits["cpus"]


def test_only_the_workers_mount_the_salts():
    compose = load_compose()
    prover, worker = compose["services"]["prover"], compose["services"]["worker"]
    assert not any(v.split(":")[1] == "/secrets" for v in prover["volumes"])
    assert "FAIRPROOF_SECRETS_DIR" not in service_environment(compose, "prover")
    secrets = [v for v in worker["volumes"] if v.split(":")[1] == "/secrets"]
    assert len(secrets) == 1 and secrets[0].split(":")[2].startswith("ro")
    assert service_environment(compose, "worker")["FAIRPROOF_SECRETS_DIR"] == "/secrets"
    host_models = next(v.split(":")[0] for v in prover["volumes"] if v.split(":")[1] == "/models")
    assert not secrets[0].split(":")[0].startswith(host_models + "/")  # the salts are not under the models


def test_the_image_builds_its_native_kernels_and_requires_them():
    dockerfile = (REPO / "Dockerfile").read_text()
    build = dockerfile.index("from circuits.backends.native import fixed_base, kernels; kernels.load(); fixed_base.load()")
    assert "get_backend('mcl')" in dockerfile[build:dockerfile.index("\n", build)]  # mcl's library cached too
    assert dockerfile.index('pip install --no-cache-dir --no-deps ".[prover]"') < build
    assert "ENV FAIRPROOF_NATIVE_NTT=required" in dockerfile[build:]
    assert "FAIRPROOF_NATIVE_DIR=/opt/fairproof/native" in dockerfile[:build]
    assert dockerfile.index("USER fairproof") > build  # built as root, run unprivileged


def test_the_lock_file_pins_every_dependency_of_the_image_with_hashes():
    import tomllib

    lock = (REPO / "requirements" / "prover.lock.txt").read_text()
    pinned = {m.group(1).lower().replace("_", "-") for m in re.finditer(r"^([A-Za-z0-9_.-]+)==", lock, flags=re.M)}
    pyproject = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    wanted = pyproject["dependencies"] + pyproject["optional-dependencies"]["prover"]
    names = {re.split(r"[<>=!\[ ;]", spec, maxsplit=1)[0].lower().replace("_", "-") for spec in wanted}
    assert sorted(names - pinned) == []
    entries = re.split(r"\n(?=[A-Za-z0-9])", lock)
    for entry in entries:
        if "==" in entry.splitlines()[0]:
            assert "--hash=sha256:" in entry, entry.splitlines()[0]


def test_workers_have_a_healthcheck_on_their_heartbeat(tmp_path, capsys):
    import os
    import time

    from prover_service.cli import main

    worker = yaml.safe_load((REPO / "docker-compose.yml").read_text())["services"]["worker"]
    beat = worker["command"][worker["command"].index("--heartbeat-file") + 1]
    assert worker["healthcheck"]["test"][1:4] == ["fairproof", "worker-alive", beat]
    path = tmp_path / "alive"
    assert main(["worker-alive", str(path)]) == 1 and "no heartbeat" in capsys.readouterr().err
    path.touch()
    assert main(["worker-alive", str(path)]) == 0
    old = time.time() - 120
    os.utime(path, (old, old))
    assert main(["worker-alive", str(path), "--max-age", "60"]) == 1
    assert "last heartbeat 120 s ago" in capsys.readouterr().err
