"""The service's tables (SQLAlchemy 2.0 typed ORM).

    service_models        models the service serves, pinned by commitment at registration
    service_jobs          the job ledger: one row per accepted request, never deleted
    service_certificates  issued bundles; at most one per job (no duplicates on retry)
    service_audit_log     append-only: one row per issued certificate (triggers refuse
                          UPDATE and DELETE on both SQLite and PostgreSQL)
    service_log_head      the transparency log's size: one row, the appenders' lock
    service_log_leaves    the log's leaves (canonical JSON), append-only
    service_log_nodes     the hash of every complete perfect subtree, (level, index), append-only
    service_log_checkpoints  every checkpoint the log signed, append-only
    service_log_cosignatures witnesses' cosignatures of those checkpoints
    service_published_cards  every card the log published, by digest
    service_card_attestations  auditors' attestations of published cards, by the SHA-256 of their note

Alembic owns the schema (migrations/); these classes must match its head.
"""
from __future__ import annotations

from datetime import datetime, timezone

from sqlalchemy import (BigInteger, DateTime, Float, ForeignKey, Integer, LargeBinary, MetaData, SmallInteger, String,
                        Text, UniqueConstraint)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

NAMING = {
    "ix": "ix_%(column_0_label)s",
    "uq": "uq_%(table_name)s_%(column_0_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}


def utcnow() -> datetime:
    return datetime.now(timezone.utc)


def as_utc(value: datetime) -> datetime:
    """SQLite hands datetimes back without a zone; every stored time is UTC."""
    return value if value.tzinfo else value.replace(tzinfo=timezone.utc)


class Base(DeclarativeBase):
    metadata = MetaData(naming_convention=NAMING)


class ServedModel(Base):
    __tablename__ = "service_models"

    model_id: Mapped[str] = mapped_column(String(128), primary_key=True)
    directory: Mapped[str] = mapped_column(String(255))
    commitment: Mapped[str] = mapped_column(String(100))
    card_digest: Mapped[str] = mapped_column(String(64))
    registered_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)


class Job(Base):
    __tablename__ = "service_jobs"

    id: Mapped[str] = mapped_column(String(36), primary_key=True)
    kind: Mapped[str] = mapped_column(String(16))  # certificate | precompute | key_setup
    model_id: Mapped[str] = mapped_column(ForeignKey("service_models.model_id"), index=True)
    status: Mapped[str] = mapped_column(String(16), index=True)  # queued | running | succeeded | failed
    stage: Mapped[str] = mapped_column(String(200), default="queued")
    progress: Mapped[float] = mapped_column(Float, default=0.0)
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    request_json: Mapped[str] = mapped_column(Text)  # the query (certificate) or parameters (precompute)
    decision: Mapped[int | None] = mapped_column(Integer, nullable=True)
    error: Mapped[str | None] = mapped_column(Text, nullable=True)
    result_json: Mapped[str | None] = mapped_column(Text, nullable=True)
    # SHA-256 (hex) of the job's capability token, returned once to the submitter; None: admin only.
    access_hash: Mapped[str | None] = mapped_column(String(64), nullable=True)
    # SHA-256 (hex) of the model id and the client's Idempotency-Key: one job per key and model.
    idempotency_hash: Mapped[str | None] = mapped_column(String(64), nullable=True, unique=True)
    lease_owner: Mapped[str | None] = mapped_column(String(100), nullable=True)
    lease_expires_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)


class IssuedCertificate(Base):
    __tablename__ = "service_certificates"
    __table_args__ = (UniqueConstraint("job_id"),)

    id: Mapped[str] = mapped_column(String(36), primary_key=True)
    job_id: Mapped[str] = mapped_column(ForeignKey("service_jobs.id"))
    model_id: Mapped[str] = mapped_column(ForeignKey("service_models.model_id"), index=True)
    bundle_json: Mapped[str] = mapped_column(Text)
    bundle_sha256: Mapped[str] = mapped_column(String(64))
    leaf_index: Mapped[int | None] = mapped_column(BigInteger, nullable=True)  # its transparency-log leaf
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)


class AuditEntry(Base):
    __tablename__ = "service_audit_log"

    seq: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    event: Mapped[str] = mapped_column(String(32))
    model_id: Mapped[str] = mapped_column(String(128))
    commitment: Mapped[str] = mapped_column(String(100))
    card_digest: Mapped[str] = mapped_column(String(64))
    job_id: Mapped[str] = mapped_column(String(36))
    certificate_id: Mapped[str] = mapped_column(String(36))
    decision: Mapped[int] = mapped_column(Integer)
    status: Mapped[str] = mapped_column(String(32))
    eps_numerator: Mapped[str] = mapped_column(String(40))  # exact, may exceed 64 bits
    eps_scale_bits: Mapped[int] = mapped_column(Integer)
    bundle_sha256: Mapped[str] = mapped_column(String(64))


class LogHead(Base):
    __tablename__ = "service_log_head"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)  # always 1
    size: Mapped[int] = mapped_column(BigInteger)


class LogLeaf(Base):
    __tablename__ = "service_log_leaves"

    idx: Mapped[int] = mapped_column(BigInteger, primary_key=True, autoincrement=False)
    leaf_hash: Mapped[bytes] = mapped_column(LargeBinary(32), index=True)
    kind: Mapped[str] = mapped_column(String(32))
    model_id: Mapped[str] = mapped_column(String(128), index=True)
    data: Mapped[str] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)


class LogNode(Base):
    __tablename__ = "service_log_nodes"

    level: Mapped[int] = mapped_column(SmallInteger, primary_key=True, autoincrement=False)
    idx: Mapped[int] = mapped_column(BigInteger, primary_key=True, autoincrement=False)
    hash: Mapped[bytes] = mapped_column(LargeBinary(32))


class LogCheckpoint(Base):
    __tablename__ = "service_log_checkpoints"

    size: Mapped[int] = mapped_column(BigInteger, primary_key=True, autoincrement=False)
    root_hash: Mapped[bytes] = mapped_column(LargeBinary(32))
    note: Mapped[str] = mapped_column(Text)  # the signed note, with the log's own signature only
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)


class LogCosignature(Base):
    __tablename__ = "service_log_cosignatures"

    size: Mapped[int] = mapped_column(ForeignKey("service_log_checkpoints.size"), primary_key=True,
                                      autoincrement=False)
    witness: Mapped[str] = mapped_column(String(255), primary_key=True)  # the witness's key name
    line: Mapped[str] = mapped_column(Text)  # the signature line, as a signed note carries it
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)


class PublishedCard(Base):
    __tablename__ = "service_published_cards"

    card_digest: Mapped[str] = mapped_column(String(64), primary_key=True)
    model_id: Mapped[str] = mapped_column(String(128), index=True)
    commitment: Mapped[str] = mapped_column(String(100))
    card_json: Mapped[str] = mapped_column(Text)
    leaf_index: Mapped[int] = mapped_column(BigInteger)
    published_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)


class CardAttestation(Base):
    """An auditor's attestation (commitments.attestation) of a published card, with its log leaf."""

    __tablename__ = "service_card_attestations"

    attestation_digest: Mapped[str] = mapped_column(String(64), primary_key=True)  # SHA-256 of the note
    model_id: Mapped[str] = mapped_column(String(128), index=True)
    # Named by hand: the naming convention's name exceeds PostgreSQL's 63 characters.
    card_digest: Mapped[str] = mapped_column(ForeignKey("service_published_cards.card_digest",
                                                        name="fk_service_card_attestations_card_digest"))
    auditor_key: Mapped[str] = mapped_column(String(512))  # the signer's verifier key, canonical
    note: Mapped[str] = mapped_column(Text)  # the signed note, as the auditor signed it
    leaf_index: Mapped[int] = mapped_column(BigInteger)  # its card_attested leaf
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
