"""Card attestations: auditors' signed statements of the keys of a published card.

One row per attestation, keyed by the SHA-256 of its signed note, with the index
of its `card_attested` leaf in the transparency log (appended in the same
transaction). The card it attests is a published card of the same model.

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-25
"""
from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "service_card_attestations",
        sa.Column("attestation_digest", sa.String(64), nullable=False),
        sa.Column("model_id", sa.String(128), nullable=False),
        sa.Column("card_digest", sa.String(64), nullable=False),
        sa.Column("auditor_key", sa.String(512), nullable=False),
        sa.Column("note", sa.Text(), nullable=False),
        sa.Column("leaf_index", sa.BigInteger(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["card_digest"], ["service_published_cards.card_digest"],
                                name="fk_service_card_attestations_card_digest"),
        sa.PrimaryKeyConstraint("attestation_digest", name="pk_service_card_attestations"),
    )
    op.create_index("ix_service_card_attestations_model_id", "service_card_attestations", ["model_id"])


def downgrade() -> None:
    op.drop_index("ix_service_card_attestations_model_id", table_name="service_card_attestations")
    op.drop_table("service_card_attestations")
