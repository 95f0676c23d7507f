"""Idempotent decision requests: the hash of a client's Idempotency-Key (with the model id) on its job.

A retry with the same key answers the same job and token; the unique index makes two concurrent
submissions of one key one job.

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-28
"""
from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("service_jobs") as batch:
        batch.add_column(sa.Column("idempotency_hash", sa.String(64), nullable=True))
        batch.create_unique_constraint("uq_service_jobs_idempotency_hash", ["idempotency_hash"])


def downgrade() -> None:
    with op.batch_alter_table("service_jobs") as batch:
        batch.drop_constraint("uq_service_jobs_idempotency_hash", type_="unique")
        batch.drop_column("idempotency_hash")
