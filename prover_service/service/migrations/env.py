"""Alembic environment of the service's schema.

Run through `prover_service.service.database.migrate` (the service and its
workers migrate on start), which hands over an open connection; with the
`alembic` command line, pass the URL as `-x url=...`.
"""
from __future__ import annotations

from alembic import context
from sqlalchemy import create_engine

from prover_service.service.schema import Base

VERSION_TABLE = "service_alembic_version"


def _run(connection) -> None:
    context.configure(
        connection=connection,
        target_metadata=Base.metadata,
        version_table=VERSION_TABLE,
        render_as_batch=connection.dialect.name == "sqlite",  # SQLite alters tables by copy
    )
    with context.begin_transaction():
        context.run_migrations()


connection = context.config.attributes.get("connection")
if connection is not None:
    _run(connection)
else:
    url = context.get_x_argument(as_dictionary=True).get("url") or context.config.get_main_option("sqlalchemy.url")
    with create_engine(url).connect() as conn:
        _run(conn)
