"""Running the real service for tests: a committed German model, a fresh PostgreSQL
database, and `fairproof serve` / `fairproof worker` as child processes on loopback.

PostgreSQL databases are created per use (and dropped with FORCE afterwards),
so tests never see each other's jobs. The server comes from
FAIRPROOF_TEST_PG_URL (default: the local CI server).
"""
from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator

import httpx
import pytest

from tests.store_fixtures import PG_URL

REPO = Path(__file__).resolve().parents[1]
ADMIN_KEY = "test-admin-key-" + uuid.uuid4().hex
MODEL_DIRECTORY = "german-4x2-fair"


# ------------------------------------------------------------------ databases
@contextlib.contextmanager
def fresh_pg_database() -> Iterator[str]:
    """The URL of a new, empty PostgreSQL database, dropped on exit."""
    from sqlalchemy import create_engine, text
    from sqlalchemy.engine import make_url
    from sqlalchemy.exc import OperationalError

    name = f"fp_svc_{uuid.uuid4().hex[:12]}"
    admin = create_engine(PG_URL, isolation_level="AUTOCOMMIT")
    try:
        with admin.connect() as conn:
            conn.execute(text(f'CREATE DATABASE "{name}"'))
    except OperationalError as exc:  # pragma: no cover - depends on the machine
        admin.dispose()
        pytest.skip(f"PostgreSQL at {PG_URL} unreachable: {exc.orig}")
    try:
        yield make_url(PG_URL).set(database=name).render_as_string(hide_password=False)
    finally:
        with admin.connect() as conn:
            conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()


# ------------------------------------------------------------------ the model
def build_models_dir(root: Path, *, key_customers: int = 4) -> Path:
    """A models directory holding a committed, precomputed German (4,2) model with keys set up for the
    service's default radius (hybrid: the exact buckets its first customers need and the bound bucket)."""
    from fairness.errors import DataError
    from fairness.model import save_artifact
    from fairness.training import load_or_train
    from offline_precompute.db import open_database, resolve_store_url
    from offline_precompute.enumerate import precompute
    from prover_service.key_setup import setup_keys_for_test_customers
    from prover_service.bucket_keys import SinglePartyKeySetup
    from prover_service.commands.radius_option import DEFAULT_RADIUS
    from prover_service.proving import Prover
    from prover_service.publishing import commit_model
    from prover_service.workspace import ModelWorkspace

    try:
        artifact = load_or_train("german", (4, 2), "fair", cache_dir=root / "cache")
    except DataError as exc:  # pragma: no cover - depends on the machine
        pytest.skip(f"German Credit dataset not available: {exc}")
    models = root / "models"
    save_artifact(artifact, models / MODEL_DIRECTORY)
    workspace = ModelWorkspace.open(models / MODEL_DIRECTORY)
    commit_model(workspace, model_id=MODEL_DIRECTORY)
    db = open_database(resolve_store_url(None, workspace.root))
    try:
        # The service is under test, not the setup: keys of the buckets the service's default radius needs.
        prover = Prover(workspace, db, key_setup=SinglePartyKeySetup(), radius=DEFAULT_RADIUS)
        precompute(db, prover.model)
        setup_keys_for_test_customers(prover, key_customers)
    finally:
        db.dispose()
    return models


def copy_models_dir(template: Path, root: Path) -> Path:
    """A private copy of a built models directory (model, store, keys): tests that recommit or add
    buckets never touch another test's model."""
    import shutil

    models = root / "models"
    shutil.copytree(template, models)
    return models


def customer_records(n: int) -> list[dict]:
    from fairness.datasets import load_dataset

    ds = load_dataset("german", sensitive=["foreign_worker"], seed=0)
    return [dict(r) for r in ds.records_test[:n]]


# ------------------------------------------------------------------ processes
def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class ServiceProcess:
    """`fairproof serve` (or `fairproof worker`) as a child process with its own environment."""

    args: list[str]
    env: dict[str, str]
    log_path: Path
    port: int | None = None
    process: subprocess.Popen | None = field(default=None, init=False)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self, *, wait_ready: bool = True, timeout: float = 60.0) -> "ServiceProcess":
        log = open(self.log_path, "ab")
        self.process = subprocess.Popen([sys.executable, "-m", "prover_service.cli", *self.args], cwd=REPO,
                                        env=self.env, stdout=log, stderr=subprocess.STDOUT)
        log.close()
        if wait_ready and self.port is not None:
            self.wait_ready(timeout)
        return self

    def wait_ready(self, timeout: float = 60.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process and self.process.poll() is not None:
                raise RuntimeError(f"service exited with {self.process.returncode}:\n{self.log_tail()}")
            try:
                if httpx.get(f"{self.url}/v1/ready", timeout=2).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.2)
        raise RuntimeError(f"service not ready after {timeout} s:\n{self.log_tail()}")

    def kill(self) -> None:
        """SIGKILL: no shutdown handler runs, as when a machine dies."""
        if self.process and self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
            self.process.wait(timeout=30)

    def stop(self) -> None:
        if self.process and self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=60)
            except subprocess.TimeoutExpired:  # pragma: no cover - a hung shutdown
                self.kill()

    def log_tail(self, lines: int = 40) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no log)"


def service_env(models_dir: Path, database_url: str, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("FAIRPROOF_")}
    env.update({
        "PYTHONPATH": str(REPO),
        "FAIRPROOF_MODELS_DIR": str(models_dir),
        "FAIRPROOF_DATABASE_URL": database_url,
        "FAIRPROOF_ADMIN_API_KEY": ADMIN_KEY,
        "FAIRPROOF_LOG_LEVEL": "INFO",
        "FAIRPROOF_SINGLE_PARTY_SETUP": "true",  # buckets the tests' customers need beyond the prepared ones
        # Every test customer comes from 127.0.0.1: per-client rate limits are tested on their own.
        "FAIRPROOF_RATE_LIMIT_PER_MINUTE": "0",
    })
    if os.environ.get("FAIRPROOF_DATA_DIR"):
        env["FAIRPROOF_DATA_DIR"] = os.environ["FAIRPROOF_DATA_DIR"]
    env.update(extra)
    return env


def serve(models_dir: Path, database_url: str, log_path: Path, **extra: str) -> ServiceProcess:
    port = free_port()
    return ServiceProcess(["serve", "--port", str(port)], service_env(models_dir, database_url, **extra), log_path,
                          port)


def worker(models_dir: Path, database_url: str, log_path: Path, **extra: str) -> ServiceProcess:
    return ServiceProcess(["worker"], service_env(models_dir, database_url, **extra), log_path)


@contextlib.contextmanager
def running(service: ServiceProcess) -> Iterator[ServiceProcess]:
    """The service started, its German model registered, and stopped on exit."""
    service.start()
    try:
        register_model(service.url)
        yield service
    finally:
        service.stop()


def register_model(url: str) -> dict:
    r = httpx.post(f"{url}/v1/admin/models", json={"directory": MODEL_DIRECTORY}, headers={"X-API-Key": ADMIN_KEY},
                   timeout=30)
    assert r.status_code == 201, r.text
    return r.json()


def job_headers(token: str | None = None) -> dict:
    """Who reads a job: its submitter with the job's token, else the bank's operator with the admin key."""
    return {"X-Job-Token": token} if token is not None else {"X-API-Key": ADMIN_KEY}


def wait_for_job(url: str, job_id: str, timeout: float = 120.0, *, until=("succeeded", "failed"),
                 token: str | None = None) -> dict:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        job = httpx.get(f"{url}/v1/jobs/{job_id}", headers=job_headers(token), timeout=10).json()
        if job["status"] in until:
            return job
        time.sleep(0.1)
    raise AssertionError(f"job {job_id} not {until} after {timeout} s: {job}")


# ------------------------------------------------------------------ a private PostgreSQL server
@dataclass
class PrivatePostgres:
    """A throwaway PostgreSQL server of this test's own (initdb into a temporary directory, a free port),
    which a test may stop, start or starve of disk without touching the machine's shared server."""

    bin_dir: Path
    data_dir: Path
    wal_dir: Path
    socket_dir: Path
    log_path: Path
    port: int
    run_as: list[str]  # ["runuser", "-u", "postgres", "--"] when the tests run as root (initdb refuses root)

    @property
    def admin_url(self) -> str:
        return f"postgresql+psycopg://postgres@127.0.0.1:{self.port}/postgres"

    def _ctl(self, *args: str, timeout: float = 60.0) -> None:
        done = subprocess.run([*self.run_as, str(self.bin_dir / "pg_ctl"), "-D", str(self.data_dir), *args],
                              capture_output=True, text=True, timeout=timeout)
        if done.returncode != 0:
            raise RuntimeError(f"pg_ctl {' '.join(args)}: {done.stdout[-500:]}{done.stderr[-500:]}\n"
                               f"{self.log_path.read_text(errors='replace')[-2000:] if self.log_path.exists() else ''}")

    def start(self) -> None:
        options = (f"-p {self.port} -k {self.socket_dir} -c listen_addresses=127.0.0.1 -c fsync=off "
                   "-c synchronous_commit=off -c full_page_writes=off -c max_connections=50")
        self._ctl("-o", options, "-l", str(self.log_path), "-w", "-t", "60", "start")

    def stop(self, mode: str = "fast") -> None:
        self._ctl("-m", mode, "-w", "-t", "60", "stop")

    def running(self) -> bool:
        return subprocess.run([*self.run_as, str(self.bin_dir / "pg_ctl"), "-D", str(self.data_dir), "status"],
                              capture_output=True).returncode == 0

    def create_database(self, name: str) -> str:
        from sqlalchemy import create_engine, text
        from sqlalchemy.engine import make_url

        engine = create_engine(self.admin_url, isolation_level="AUTOCOMMIT")
        try:
            with engine.connect() as conn:
                conn.execute(text(f'CREATE DATABASE "{name}"'))
        finally:
            engine.dispose()
        return make_url(self.admin_url).set(database=name).render_as_string(hide_password=False)


def postgres_bin_dir() -> Path | None:
    """The newest installed PostgreSQL server binaries (Debian layout), if any."""
    found = sorted(Path("/usr/lib/postgresql").glob("*/bin/initdb"), key=lambda p: int(p.parts[-3])
                   if p.parts[-3].isdigit() else 0)
    return found[-1].parent if found else None


def fill_disk(path: Path) -> int:
    """Write `path` until its filesystem has no byte left (ENOSPC); the bytes written."""
    import errno

    written = 0
    fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o600)
    try:
        for size in (1 << 20, 1 << 12, 1):
            block = b"\0" * size
            while True:
                try:
                    written += os.write(fd, block)
                except OSError as exc:
                    if exc.errno != errno.ENOSPC:
                        raise
                    break
    finally:
        os.close(fd)
    return written


@contextlib.contextmanager
def private_postgres(*, disk_mb: int | None = None) -> Iterator[PrivatePostgres]:
    """initdb a server in a new directory, start it on a free port, and remove it all on exit. With
    `disk_mb`, its data files live on a tmpfs of that size (`server.disk`, where a test may also put files
    of its own and fill the disk); the write-ahead log stays outside it. Skips if the server binaries are
    missing, if as root there is no `postgres` user to run them as, or if the tmpfs cannot be mounted."""
    import pwd
    import shutil
    import tempfile

    bin_dir = postgres_bin_dir()
    if bin_dir is None:
        pytest.skip("no PostgreSQL server binaries under /usr/lib/postgresql/*/bin for a private server")
    run_as: list[str] = []
    owner = None
    if os.geteuid() == 0:  # initdb and postgres refuse to run as root
        try:
            owner = pwd.getpwnam("postgres")
        except KeyError:
            pytest.skip("running as root and no `postgres` user to run a private PostgreSQL server as")
        if shutil.which("runuser") is None:
            pytest.skip("running as root without runuser to start a private PostgreSQL server as `postgres`")
        run_as = ["runuser", "-u", "postgres", "--"]
    root = Path(tempfile.mkdtemp(prefix="fairproof-pg-"))  # in /tmp, which the postgres user can reach
    mounted = False
    try:
        disk = root / "disk"
        disk.mkdir()
        if disk_mb is not None:
            mount = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={disk_mb}m,mode=0755", "tmpfs", str(disk)],
                                   capture_output=True, text=True)
            if mount.returncode != 0:
                pytest.skip(f"cannot mount a {disk_mb} MB tmpfs to fill (needs root with CAP_SYS_ADMIN): "
                            f"{mount.stderr.strip()[:200]}")
            mounted = True
        socket_dir = root / "socket"
        socket_dir.mkdir()
        for path in (root, disk, socket_dir):
            if owner is not None:
                os.chown(path, owner.pw_uid, owner.pw_gid)
        server = PrivatePostgres(bin_dir, disk / "pgdata", root / "pgwal", socket_dir, root / "postgres.log",
                                 free_port(), run_as)
        server.disk = disk  # type: ignore[attr-defined]
        done = subprocess.run([*run_as, str(bin_dir / "initdb"), "-D", str(server.data_dir), "-X", str(server.wal_dir),
                               "-U", "postgres", "--auth=trust", "-E", "UTF8", "--no-sync", "--no-instructions"],
                              capture_output=True, text=True, timeout=180)
        if done.returncode != 0:
            pytest.skip(f"initdb of a private PostgreSQL server failed: {done.stderr.strip()[-500:]}")
        server.start()
        try:
            yield server
        finally:
            if server.running():
                server.stop("immediate")
    finally:
        if mounted:
            subprocess.run(["umount", "-l", str(root / "disk")], capture_output=True)
        shutil.rmtree(root, ignore_errors=True)


@contextlib.contextmanager
def bank_app(bank, directory: Path, admin_key: str, **settings) -> Iterator:
    """The real app in process (TestClient, SQLite, no workers unless given: jobs stay queued) with the
    bank's German model copied under `directory` and registered."""
    import shutil

    from fastapi.testclient import TestClient

    from bank_fixtures import MODEL
    from prover_service.service.app import create_app
    from prover_service.service.settings import Settings

    shutil.copytree(bank.prover.workspace.root, directory / "models" / MODEL)
    config = Settings(**{"models_dir": directory / "models", "admin_api_key": admin_key, "workers": 0, **settings})
    with TestClient(create_app(config)) as client:
        answer = client.post("/v1/admin/models", json={"directory": MODEL}, headers={"X-API-Key": admin_key})
        assert answer.status_code == 201, answer.text
        yield client


def connector_error(inner: Exception):
    """`inner` as procrastinate raises it: wrapped in a ConnectorException (`__cause__`), as the queue sees it."""
    from procrastinate.exceptions import ConnectorException

    try:
        try:
            raise inner
        except Exception as exc:
            raise ConnectorException() from exc
    except ConnectorException as outer:
        return outer
