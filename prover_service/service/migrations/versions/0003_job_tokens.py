"""Job capability tokens: the SHA-256 of the secret returned to whoever submitted a job.

A job (and its certificate, which holds the customer's encoded record) is read with that
token or the admin key; the UUID alone no longer suffices. Jobs from before have no token:
only an admin reads them.

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-24
"""
from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("service_jobs") as batch:
        batch.add_column(sa.Column("access_hash", sa.String(64), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("service_jobs") as batch:
        batch.drop_column("access_hash")
