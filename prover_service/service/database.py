"""The service's database: engine, sessions, and migrations to Alembic's head.

The service and every worker migrate on start. On PostgreSQL an advisory
lock serialises concurrent starts, so a service and its workers booting
together never race on the schema.
"""
from __future__ import annotations

import logging
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Callable, Iterator

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import Engine, text
from sqlalchemy.exc import OperationalError
from sqlalchemy.orm import Session, sessionmaker

from offline_precompute.db import Database, make_engine

from .errors import ConfigurationError

log = logging.getLogger("fairproof.database")

MIGRATIONS = Path(__file__).with_name("migrations")
VERSION_TABLE = "service_alembic_version"
_MIGRATION_LOCK_KEY = 0x46505356  # "FPSV": any fixed 64-bit key unique to this schema


def alembic_config() -> Config:
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    return config


def head_revision() -> str:
    head = ScriptDirectory.from_config(alembic_config()).get_current_head()
    assert head is not None, "the migrations directory has no revision"
    return head


def current_revision(engine: Engine) -> str | None:
    with engine.connect() as conn:
        return MigrationContext.configure(conn, opts={"version_table": VERSION_TABLE}).get_current_revision()


def migrate(engine: Engine, revision: str = "head") -> None:
    """Bring the schema to `revision` (default: the newest)."""
    config = alembic_config()
    with engine.begin() as conn:
        if conn.dialect.name == "postgresql":
            conn.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": _MIGRATION_LOCK_KEY})
        config.attributes["connection"] = conn
        command.upgrade(config, revision)


class ServiceDatabase(Database):
    """The service's database: the store's engine and sessions, plus transactions and the schema check."""

    @contextmanager
    def transaction(self) -> Iterator[Session]:
        """A session whose work commits on success and rolls back on any error."""
        with self.sessions.begin() as session:
            yield session

    def is_current(self) -> bool:
        return current_revision(self.engine) == head_revision()


def open_service_database(url: str, *, upgrade: bool = True, wait_seconds: float = 0.0,
                          sleep: Callable[[float], None] = time.sleep) -> ServiceDatabase:
    """Open (and migrate) the service database. A database that does not answer yet (a container started
    before PostgreSQL) is retried with backoff for up to `wait_seconds`, one log line per try; then a
    one-line ConfigurationError, never a traceback."""
    engine = make_engine(url)
    deadline = time.monotonic() + wait_seconds
    delay = 0.5
    while True:
        try:
            with engine.connect() as conn:
                conn.execute(text("SELECT 1"))
            break
        except OperationalError as exc:
            reason = str(exc.orig).strip().splitlines()[0] if exc.orig else type(exc).__name__
            if time.monotonic() + delay > deadline:
                engine.dispose()
                raise ConfigurationError(f"the service database does not answer: {reason}") from None
            log.warning("database unavailable (%s); retrying in %.1f s", reason, delay)
            sleep(delay)
            delay = min(delay * 2, 8.0)
    if upgrade:
        migrate(engine)
    return ServiceDatabase(url, engine, sessionmaker(engine, expire_on_commit=False))
