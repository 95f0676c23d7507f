"""The service's first schema: models, jobs, certificates, append-only audit log.

Revision ID: 0001
Revises:
Create Date: 2026-11-22
"""
from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None

AUDIT = "service_audit_log"
APPEND_ONLY = "the audit log is append-only"


def _when() -> sa.Column:
    return sa.DateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        "service_models",
        sa.Column("model_id", sa.String(128), nullable=False),
        sa.Column("directory", sa.String(255), nullable=False),
        sa.Column("commitment", sa.String(100), nullable=False),
        sa.Column("card_digest", sa.String(64), nullable=False),
        sa.Column("registered_at", _when(), nullable=False),
        sa.PrimaryKeyConstraint("model_id", name="pk_service_models"),
    )
    op.create_table(
        "service_jobs",
        sa.Column("id", sa.String(36), nullable=False),
        sa.Column("kind", sa.String(16), nullable=False),
        sa.Column("model_id", sa.String(128), nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("stage", sa.String(200), nullable=False),
        sa.Column("progress", sa.Float(), nullable=False),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("request_json", sa.Text(), nullable=False),
        sa.Column("decision", sa.Integer(), nullable=True),
        sa.Column("error", sa.Text(), nullable=True),
        sa.Column("result_json", sa.Text(), nullable=True),
        sa.Column("lease_owner", sa.String(100), nullable=True),
        sa.Column("lease_expires_at", _when(), nullable=True),
        sa.Column("created_at", _when(), nullable=False),
        sa.Column("updated_at", _when(), nullable=False),
        sa.ForeignKeyConstraint(["model_id"], ["service_models.model_id"],
                                name="fk_service_jobs_model_id_service_models"),
        sa.PrimaryKeyConstraint("id", name="pk_service_jobs"),
    )
    op.create_index("ix_service_jobs_model_id", "service_jobs", ["model_id"])
    op.create_index("ix_service_jobs_status", "service_jobs", ["status"])
    op.create_table(
        "service_certificates",
        sa.Column("id", sa.String(36), nullable=False),
        sa.Column("job_id", sa.String(36), nullable=False),
        sa.Column("model_id", sa.String(128), nullable=False),
        sa.Column("bundle_json", sa.Text(), nullable=False),
        sa.Column("bundle_sha256", sa.String(64), nullable=False),
        sa.Column("created_at", _when(), nullable=False),
        sa.ForeignKeyConstraint(["job_id"], ["service_jobs.id"], name="fk_service_certificates_job_id_service_jobs"),
        sa.ForeignKeyConstraint(["model_id"], ["service_models.model_id"],
                                name="fk_service_certificates_model_id_service_models"),
        sa.PrimaryKeyConstraint("id", name="pk_service_certificates"),
        sa.UniqueConstraint("job_id", name="uq_service_certificates_job_id"),
    )
    op.create_index("ix_service_certificates_model_id", "service_certificates", ["model_id"])
    op.create_table(
        AUDIT,
        sa.Column("seq", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("at", _when(), nullable=False),
        sa.Column("event", sa.String(32), nullable=False),
        sa.Column("model_id", sa.String(128), nullable=False),
        sa.Column("commitment", sa.String(100), nullable=False),
        sa.Column("card_digest", sa.String(64), nullable=False),
        sa.Column("job_id", sa.String(36), nullable=False),
        sa.Column("certificate_id", sa.String(36), nullable=False),
        sa.Column("decision", sa.Integer(), nullable=False),
        sa.Column("status", sa.String(32), nullable=False),
        sa.Column("eps_numerator", sa.String(40), nullable=False),
        sa.Column("eps_scale_bits", sa.Integer(), nullable=False),
        sa.Column("bundle_sha256", sa.String(64), nullable=False),
        sa.PrimaryKeyConstraint("seq", name=f"pk_{AUDIT}"),
    )
    _make_append_only()


def _make_append_only() -> None:
    dialect = op.get_bind().dialect.name
    if dialect == "sqlite":
        for action in ("UPDATE", "DELETE"):
            op.execute(f"CREATE TRIGGER {AUDIT}_no_{action.lower()} BEFORE {action} ON {AUDIT} "
                       f"BEGIN SELECT RAISE(ABORT, '{APPEND_ONLY}'); END")
    elif dialect == "postgresql":
        op.execute(f"CREATE FUNCTION {AUDIT}_append_only() RETURNS trigger LANGUAGE plpgsql AS "
                   f"$$ BEGIN RAISE EXCEPTION '{APPEND_ONLY}'; END $$")
        op.execute(f"CREATE TRIGGER {AUDIT}_no_change BEFORE UPDATE OR DELETE ON {AUDIT} "
                   f"FOR EACH ROW EXECUTE FUNCTION {AUDIT}_append_only()")
        op.execute(f"CREATE TRIGGER {AUDIT}_no_truncate BEFORE TRUNCATE ON {AUDIT} "
                   f"FOR EACH STATEMENT EXECUTE FUNCTION {AUDIT}_append_only()")


def downgrade() -> None:
    dialect = op.get_bind().dialect.name
    op.drop_table(AUDIT)  # drops its triggers too
    if dialect == "postgresql":
        op.execute(f"DROP FUNCTION IF EXISTS {AUDIT}_append_only()")
    op.drop_table("service_certificates")
    op.drop_index("ix_service_jobs_status", table_name="service_jobs")
    op.drop_index("ix_service_jobs_model_id", table_name="service_jobs")
    op.drop_table("service_jobs")
    op.drop_table("service_models")
