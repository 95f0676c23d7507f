"""The job queue's tables (procrastinate, in PostgreSQL) are created once, with the version that made
them recorded; tables of another procrastinate version stop serve and worker with one line."""
from __future__ import annotations

import importlib.metadata
import os
import subprocess
import sys

import pytest

from service_fixtures import fresh_pg_database

pytest.importorskip("procrastinate")


def _recorded(url: str) -> list[str]:
    from sqlalchemy import create_engine, text

    engine = create_engine(url)
    try:
        with engine.connect() as conn:
            return [r[0] for r in conn.execute(text("SELECT procrastinate_version FROM fairproof_queue_schema"))]
    finally:
        engine.dispose()


def _set_recorded(url: str, version: str) -> None:
    from sqlalchemy import create_engine, text

    engine = create_engine(url)
    try:
        with engine.begin() as conn:
            conn.execute(text("UPDATE fairproof_queue_schema SET procrastinate_version = :v"), {"v": version})
    finally:
        engine.dispose()


def test_the_queue_schema_is_created_once_and_another_version_stops_serve_and_worker(tmp_path):
    from prover_service.service.errors import ConfigurationError
    from prover_service.service.queue_procrastinate import check_queue_schema

    installed = importlib.metadata.version("procrastinate")
    with fresh_pg_database() as url:
        check_queue_schema(url)
        check_queue_schema(url)  # a second start finds its own tables
        assert _recorded(url) == [installed]

        _set_recorded(url, "0.0.1")
        with pytest.raises(ConfigurationError, match=f"made by procrastinate 0.0.1, this is {installed}"):
            check_queue_schema(url)
        env = {**os.environ, "FAIRPROOF_DATABASE_URL": url, "FAIRPROOF_MODELS_DIR": str(tmp_path / "models"),
               "FAIRPROOF_QUEUE": "procrastinate", "FAIRPROOF_DATABASE_WAIT_SECONDS": "5"}
        (tmp_path / "models").mkdir()
        for command in (["serve", "--port", "0"], ["worker"]):
            done = subprocess.run([sys.executable, "-m", "prover_service.cli", *command], env=env, capture_output=True,
                                  text=True, timeout=120)
            assert done.returncode == 1, (command, done.stdout, done.stderr)
            assert "Traceback" not in done.stderr and "made by procrastinate 0.0.1" in done.stderr, done.stderr
        assert _recorded(url) == ["0.0.1"]  # nothing was applied over the old tables

        _set_recorded(url, installed)  # the operator applied the migrations and recorded it
        check_queue_schema(url)
