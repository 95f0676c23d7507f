"""The transparency log: leaves, perfect-subtree hashes, checkpoints, cosignatures, published cards.

Leaves, nodes, checkpoints and cosignatures are append-only (triggers refuse UPDATE and
DELETE, as for the audit log). The head row is the appenders' lock: every
append updates it first, so appends are serialised on both SQLite and
PostgreSQL and a leaf's index is the tree size it was appended at.

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-23
"""
from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None

APPEND_ONLY_TABLES = ("service_log_leaves", "service_log_nodes", "service_log_checkpoints",
                      "service_log_cosignatures")


def _when() -> sa.Column:
    return sa.DateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        "service_log_head",
        sa.Column("id", sa.Integer(), nullable=False, autoincrement=False),
        sa.Column("size", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_service_log_head"),
        sa.CheckConstraint("id = 1 AND size >= 0", name="ck_service_log_head_one_row"),
    )
    op.execute("INSERT INTO service_log_head (id, size) VALUES (1, 0)")
    op.create_table(
        "service_log_leaves",
        sa.Column("idx", sa.BigInteger(), nullable=False, autoincrement=False),
        sa.Column("leaf_hash", sa.LargeBinary(32), nullable=False),
        sa.Column("kind", sa.String(32), nullable=False),
        sa.Column("model_id", sa.String(128), nullable=False),
        sa.Column("data", sa.Text(), nullable=False),
        sa.Column("created_at", _when(), nullable=False),
        sa.PrimaryKeyConstraint("idx", name="pk_service_log_leaves"),
    )
    op.create_index("ix_service_log_leaves_leaf_hash", "service_log_leaves", ["leaf_hash"])
    op.create_index("ix_service_log_leaves_model_id", "service_log_leaves", ["model_id"])
    op.create_table(
        "service_log_nodes",
        sa.Column("level", sa.SmallInteger(), nullable=False, autoincrement=False),
        sa.Column("idx", sa.BigInteger(), nullable=False, autoincrement=False),
        sa.Column("hash", sa.LargeBinary(32), nullable=False),
        sa.PrimaryKeyConstraint("level", "idx", name="pk_service_log_nodes"),
    )
    op.create_table(
        "service_log_checkpoints",
        sa.Column("size", sa.BigInteger(), nullable=False, autoincrement=False),
        sa.Column("root_hash", sa.LargeBinary(32), nullable=False),
        sa.Column("note", sa.Text(), nullable=False),
        sa.Column("created_at", _when(), nullable=False),
        sa.PrimaryKeyConstraint("size", name="pk_service_log_checkpoints"),
    )
    op.create_table(
        "service_log_cosignatures",
        sa.Column("size", sa.BigInteger(), nullable=False, autoincrement=False),
        sa.Column("witness", sa.String(255), nullable=False),
        sa.Column("line", sa.Text(), nullable=False),
        sa.Column("created_at", _when(), nullable=False),
        sa.ForeignKeyConstraint(["size"], ["service_log_checkpoints.size"],
                                name="fk_service_log_cosignatures_size_service_log_checkpoints"),
        sa.PrimaryKeyConstraint("size", "witness", name="pk_service_log_cosignatures"),
    )
    op.create_table(
        "service_published_cards",
        sa.Column("card_digest", sa.String(64), nullable=False),
        sa.Column("model_id", sa.String(128), nullable=False),
        sa.Column("commitment", sa.String(100), nullable=False),
        sa.Column("card_json", sa.Text(), nullable=False),
        sa.Column("leaf_index", sa.BigInteger(), nullable=False),
        sa.Column("published_at", _when(), nullable=False),
        sa.PrimaryKeyConstraint("card_digest", name="pk_service_published_cards"),
    )
    op.create_index("ix_service_published_cards_model_id", "service_published_cards", ["model_id"])
    for table in APPEND_ONLY_TABLES:
        _make_append_only(table)
    with op.batch_alter_table("service_certificates") as batch:
        batch.add_column(sa.Column("leaf_index", sa.BigInteger(), nullable=True))


def _make_append_only(table: str) -> None:
    message = f"{table} is append-only"
    dialect = op.get_bind().dialect.name
    if dialect == "sqlite":
        for action in ("UPDATE", "DELETE"):
            op.execute(f"CREATE TRIGGER {table}_no_{action.lower()} BEFORE {action} ON {table} "
                       f"BEGIN SELECT RAISE(ABORT, '{message}'); END")
    elif dialect == "postgresql":
        op.execute(f"CREATE FUNCTION {table}_append_only() RETURNS trigger LANGUAGE plpgsql AS "
                   f"$$ BEGIN RAISE EXCEPTION '{message}'; END $$")
        op.execute(f"CREATE TRIGGER {table}_no_change BEFORE UPDATE OR DELETE ON {table} "
                   f"FOR EACH ROW EXECUTE FUNCTION {table}_append_only()")
        op.execute(f"CREATE TRIGGER {table}_no_truncate BEFORE TRUNCATE ON {table} "
                   f"FOR EACH STATEMENT EXECUTE FUNCTION {table}_append_only()")


def downgrade() -> None:
    dialect = op.get_bind().dialect.name
    with op.batch_alter_table("service_certificates") as batch:
        batch.drop_column("leaf_index")
    op.drop_index("ix_service_published_cards_model_id", table_name="service_published_cards")
    op.drop_table("service_published_cards")
    for table in reversed(APPEND_ONLY_TABLES):
        if table == "service_log_leaves":
            op.drop_index("ix_service_log_leaves_model_id", table_name=table)
            op.drop_index("ix_service_log_leaves_leaf_hash", table_name=table)
        op.drop_table(table)
        if dialect == "postgresql":
            op.execute(f"DROP FUNCTION IF EXISTS {table}_append_only()")
    op.drop_table("service_log_head")
