"""The precompute store: regions, facets and class claims of a fixed-point model.

Every row is keyed by the model digest (`model_digest`: SHA-256 of the
quantised network, the domain box, the sensitive domains and the scale), the
slice index (position in `FixedPointModel.slices()`) and the activation code,
so rows of another model, or of the same network quantised differently, can
never be read for this one. Unique constraints on those keys, together with
insert-or-ignore writes (`INSERT .. ON CONFLICT DO NOTHING` on both SQLite and
PostgreSQL), make every write idempotent: a resumed or concurrent precompute
never duplicates a row.

Tables (prefix ``fp_``; constraint names follow `NAMING_CONVENTION`, so
Alembic autogenerate can take over schema changes later):

- ``fp_models``: one row per digest, with the canonical description that was
  hashed (checked on every open; a mismatch means a corrupt store).
- ``fp_slices``: enumeration status and counters per slice.
- ``fp_regions``: one row per (digest, slice, code); ``expanded`` is false
  while the region is on the breadth-first frontier, so the frontier survives
  an interruption; ``point`` is a representative interior point.
- ``fp_facets``: one row per (digest, slice, code, neuron): whether the facet
  of that neuron's hyperplane is non-empty inside the box, a relative-interior
  point if so (with the neighbouring code: the adjacency), a Farkas
  certificate of emptiness if not.
- ``fp_class_claims``: one row per (digest, slice, code, label, other): whether
  the region holds a point where class `other` scores at least as high as
  `label` inside the box (a point if so), or a Farkas certificate that it
  holds none.

Activation codes are stored as text: one ``0``/``1`` per hidden neuron, layers
separated by ``.`` (`fairness.codes.ActivationCode.key`). Neurons are numbered flat
across hidden layers (layer 0 first). Points and certificates are JSON as
produced by the plaintext layer's serialisers; the store does not interpret
them.
"""
from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Iterable, Sequence

from sqlalchemy import (
    JSON,
    BigInteger,
    Connection,
    bindparam,
    Boolean,
    DateTime,
    Float,
    ForeignKey,
    Index,
    Integer,
    MetaData,
    String,
    UniqueConstraint,
    delete,
    func,
    select,
    update,
)
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.orm import DeclarativeBase, Mapped, Session, mapped_column

from fairness.codes import ActivationCode
from fairness.fixed_point import FixedPointModel, SensitiveDomain

from offline_precompute.errors import StoreError

DIGEST_FORMAT = "fairproof-fixed-point-model-v1"

NAMING_CONVENTION = {
    "ix": "ix_%(column_0_label)s",
    "uq": "uq_%(table_name)s_%(column_0_N_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}

# JSON on SQLite, JSONB on PostgreSQL; Python None is stored as SQL NULL (not JSON null).
JsonType = JSON(none_as_null=True).with_variant(postgresql.JSONB(none_as_null=True), "postgresql")
# Autoincrementing ids: BIGINT on PostgreSQL, INTEGER (rowid alias) on SQLite.
IdType = BigInteger().with_variant(Integer(), "sqlite")
DIGEST_LEN = 64
CODE_LEN = 2048


class Base(DeclarativeBase):
    metadata = MetaData(naming_convention=NAMING_CONVENTION)


class ModelRow(Base):
    __tablename__ = "fp_models"

    digest: Mapped[str] = mapped_column(String(DIGEST_LEN), primary_key=True)
    scale_bits: Mapped[int] = mapped_column(Integer)
    n_inputs: Mapped[int] = mapped_column(Integer)
    hidden_sizes: Mapped[list[int]] = mapped_column(JsonType)
    n_classes: Mapped[int] = mapped_column(Integer)
    n_slices: Mapped[int] = mapped_column(Integer)
    description: Mapped[dict[str, Any]] = mapped_column(JsonType)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), server_default=func.now())


class SliceRow(Base):
    __tablename__ = "fp_slices"

    model_digest: Mapped[str] = mapped_column(
        String(DIGEST_LEN), ForeignKey("fp_models.digest", ondelete="CASCADE"), primary_key=True
    )
    slice_index: Mapped[int] = mapped_column(Integer, primary_key=True)
    slice_values: Mapped[list[int]] = mapped_column(JsonType)
    status: Mapped[str] = mapped_column(String(16), default="pending")  # pending | running | complete
    n_regions: Mapped[int] = mapped_column(Integer, default=0)
    n_lps: Mapped[int] = mapped_column(BigInteger, default=0)
    seconds: Mapped[float] = mapped_column(Float, default=0.0)
    updated_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), server_default=func.now(), onupdate=func.now())


class RegionRow(Base):
    __tablename__ = "fp_regions"
    __table_args__ = (
        UniqueConstraint("model_digest", "slice_index", "code"),
        Index("ix_fp_regions_frontier", "model_digest", "slice_index", "expanded", "id"),
    )

    id: Mapped[int] = mapped_column(IdType, primary_key=True, autoincrement=True)
    model_digest: Mapped[str] = mapped_column(String(DIGEST_LEN), ForeignKey("fp_models.digest", ondelete="CASCADE"))
    slice_index: Mapped[int] = mapped_column(Integer)
    code: Mapped[str] = mapped_column(String(CODE_LEN))
    depth: Mapped[int] = mapped_column(Integer, default=0)
    expanded: Mapped[bool] = mapped_column(Boolean, default=False)
    point: Mapped[Any | None] = mapped_column(JsonType, nullable=True)


class FacetRow(Base):
    __tablename__ = "fp_facets"
    __table_args__ = (UniqueConstraint("model_digest", "slice_index", "code", "neuron"),)

    id: Mapped[int] = mapped_column(IdType, primary_key=True, autoincrement=True)
    model_digest: Mapped[str] = mapped_column(String(DIGEST_LEN), ForeignKey("fp_models.digest", ondelete="CASCADE"))
    slice_index: Mapped[int] = mapped_column(Integer)
    code: Mapped[str] = mapped_column(String(CODE_LEN))
    neuron: Mapped[int] = mapped_column(Integer)
    nonempty: Mapped[bool] = mapped_column(Boolean)
    neighbor_code: Mapped[str | None] = mapped_column(String(CODE_LEN), nullable=True)
    point: Mapped[Any | None] = mapped_column(JsonType, nullable=True)
    certificate: Mapped[Any | None] = mapped_column(JsonType, nullable=True)


class ClassClaimRow(Base):
    __tablename__ = "fp_class_claims"
    __table_args__ = (UniqueConstraint("model_digest", "slice_index", "code", "label", "other"),)

    id: Mapped[int] = mapped_column(IdType, primary_key=True, autoincrement=True)
    model_digest: Mapped[str] = mapped_column(String(DIGEST_LEN), ForeignKey("fp_models.digest", ondelete="CASCADE"))
    slice_index: Mapped[int] = mapped_column(Integer)
    code: Mapped[str] = mapped_column(String(CODE_LEN))
    label: Mapped[int] = mapped_column(Integer)
    other: Mapped[int] = mapped_column(Integer)
    holds: Mapped[bool] = mapped_column(Boolean)
    point: Mapped[Any | None] = mapped_column(JsonType, nullable=True)
    certificate: Mapped[Any | None] = mapped_column(JsonType, nullable=True)


DATA_TABLES = (RegionRow, FacetRow, ClassClaimRow)


# ---------------------------------------------------------------- keys

def model_description(model: FixedPointModel) -> dict[str, Any]:
    """The canonical description that `model_digest` hashes (integers as decimal strings)."""
    net = model.net
    return {
        "format": DIGEST_FORMAT,
        "scale_bits": net.scale_bits,
        "weights": [[[str(v) for v in row] for row in w] for w in net.weights],
        "biases": [[str(v) for v in b] for b in net.biases],
        "box_lower": [str(v) for v in model.box_lower],
        "box_upper": [str(v) for v in model.box_upper],
        "sensitive": [_sensitive_description(f) for f in model.sensitive],
    }


def _sensitive_description(f: SensitiveDomain) -> dict[str, Any]:
    """One attribute as the digest names it: a one-column attribute as it always was, a wider one by its
    columns and points."""
    if f.width == 1:
        return {"name": f.name, "column": f.column, "values": [str(v) for v in f.values]}
    return {"name": f.name, "columns": list(f.columns), "points": [[str(v) for v in p] for p in f.points]}


def model_digest(model: FixedPointModel) -> str:
    """SHA-256 (hex) of the canonical JSON of `model_description`."""
    blob = json.dumps(model_description(model), sort_keys=True, separators=(",", ":")).encode()
    return hashlib.sha256(blob).hexdigest()


# ---------------------------------------------------------------- records

@dataclass(frozen=True)
class RegionEntry:
    slice_index: int
    code: str
    depth: int = 0
    expanded: bool = False
    point: Any = None


@dataclass(frozen=True)
class FacetEntry:
    slice_index: int
    code: str
    neuron: int
    nonempty: bool
    point: Any = None
    certificate: Any = None

    @property
    def neighbor_code(self) -> str | None:
        if not self.nonempty:
            return None
        sizes = tuple(len(layer) for layer in self.code.split("."))
        return ActivationCode.parse(self.code, sizes).flip(self.neuron).key


@dataclass(frozen=True)
class ClassClaimEntry:
    slice_index: int
    code: str
    label: int
    other: int
    holds: bool
    point: Any = None
    certificate: Any = None


@dataclass(frozen=True)
class StoreCounts:
    models: int
    slices: int
    regions: int
    facets: int
    class_claims: int

    @property
    def rows(self) -> int:
        return self.models + self.slices + self.regions + self.facets + self.class_claims


# ---------------------------------------------------------------- writes

_CHUNK = 400  # rows per INSERT: well under SQLite's bound-parameter limit


def insert_ignore(session: Session, model: type[Base], rows: Sequence[dict[str, Any]], keys: Sequence[str]) -> None:
    """INSERT the rows, silently skipping any whose unique key already exists.

    This is what makes precompute idempotent: a resumed run, or two workers
    caching the same LP result, write the same key at most once.
    """
    if not rows:
        return
    dialect = session.get_bind().dialect.name
    if dialect == "postgresql":
        insert = postgresql.insert
    elif dialect == "sqlite":
        insert = sqlite.insert
    else:  # pragma: no cover - parse_store_url admits only the two
        raise StoreError(f"unsupported store backend {dialect!r}")
    table = model.__table__
    for start in range(0, len(rows), _CHUNK):
        stmt = insert(table).values(list(rows[start:start + _CHUNK])).on_conflict_do_nothing(index_elements=list(keys))
        session.execute(stmt)


def ensure_model(session: Session, model: FixedPointModel) -> str:
    """Register the model (idempotent) and return its digest.

    Raises `StoreError` if a row with this digest holds a different
    description: the store is corrupt and must not be used for this model.
    """
    digest = model_digest(model)
    description = model_description(model)
    insert_ignore(
        session,
        ModelRow,
        [
            {
                "digest": digest,
                "scale_bits": model.scale_bits,
                "n_inputs": model.net.n_inputs,
                "hidden_sizes": list(model.net.hidden_sizes),
                "n_classes": model.net.n_classes,
                "n_slices": len(model.slices()),
                "description": description,
            }
        ],
        ["digest"],
    )
    stored = session.scalar(select(ModelRow.description).where(ModelRow.digest == digest))
    if stored != description:
        raise StoreError(f"store row for model {digest[:12]} does not match the model it is keyed by (corrupt store)")
    insert_ignore(
        session,
        SliceRow,
        [
            {"model_digest": digest, "slice_index": i, "slice_values": [int(v) for v in values], "status": "pending",
             "n_regions": 0, "n_lps": 0, "seconds": 0.0}
            for i, values in enumerate(model.slices())
        ],
        ["model_digest", "slice_index"],
    )
    return digest


def add_regions(session: Session, digest: str, entries: Iterable[RegionEntry]) -> None:
    insert_ignore(
        session,
        RegionRow,
        [
            {"model_digest": digest, "slice_index": e.slice_index, "code": e.code, "depth": e.depth,
             "expanded": e.expanded, "point": e.point}
            for e in entries
        ],
        ["model_digest", "slice_index", "code"],
    )


def mark_expanded(session: Session, digest: str, slice_index: int, code: str, point: Any) -> None:
    session.execute(
        update(RegionRow)
        .where(RegionRow.model_digest == digest, RegionRow.slice_index == slice_index, RegionRow.code == code)
        .values(expanded=True, point=point)
    )


def add_facets(session: Session, digest: str, entries: Iterable[FacetEntry]) -> None:
    insert_ignore(
        session,
        FacetRow,
        [
            {"model_digest": digest, "slice_index": e.slice_index, "code": e.code, "neuron": e.neuron,
             "nonempty": e.nonempty, "neighbor_code": e.neighbor_code, "point": e.point, "certificate": e.certificate}
            for e in entries
        ],
        ["model_digest", "slice_index", "code", "neuron"],
    )


def add_class_claims(session: Session, digest: str, entries: Iterable[ClassClaimEntry]) -> None:
    insert_ignore(
        session,
        ClassClaimRow,
        [
            {"model_digest": digest, "slice_index": e.slice_index, "code": e.code, "label": e.label, "other": e.other,
             "holds": e.holds, "point": e.point, "certificate": e.certificate}
            for e in entries
        ],
        ["model_digest", "slice_index", "code", "label", "other"],
    )


def replace_facet(session: Session, digest: str, entry: FacetEntry) -> None:
    """Overwrite a facet row that failed validation (a corrupt cache entry)."""
    session.execute(
        delete(FacetRow).where(
            FacetRow.model_digest == digest, FacetRow.slice_index == entry.slice_index,
            FacetRow.code == entry.code, FacetRow.neuron == entry.neuron,
        )
    )
    add_facets(session, digest, [entry])


def replace_class_claim(session: Session, digest: str, entry: ClassClaimEntry) -> None:
    session.execute(
        delete(ClassClaimRow).where(
            ClassClaimRow.model_digest == digest, ClassClaimRow.slice_index == entry.slice_index,
            ClassClaimRow.code == entry.code, ClassClaimRow.label == entry.label, ClassClaimRow.other == entry.other,
        )
    )
    add_class_claims(session, digest, [entry])


def update_slice(session: Session, digest: str, slice_index: int, *, status: str | None = None,
                 add_lps: int = 0, add_seconds: float = 0.0) -> None:
    n_regions = select(func.count()).select_from(RegionRow).where(
        RegionRow.model_digest == digest, RegionRow.slice_index == slice_index
    ).scalar_subquery()
    values: dict[str, Any] = {
        "n_regions": n_regions,
        "n_lps": SliceRow.n_lps + add_lps,
        "seconds": SliceRow.seconds + add_seconds,
    }
    if status is not None:
        values["status"] = status
    session.execute(
        update(SliceRow).where(SliceRow.model_digest == digest, SliceRow.slice_index == slice_index).values(**values)
    )


def delete_model(session: Session, digest: str) -> None:
    """Remove every row of one model (children first: works without FK cascades too)."""
    for table in (*DATA_TABLES, SliceRow):
        session.execute(delete(table).where(table.model_digest == digest))
    session.execute(delete(ModelRow).where(ModelRow.digest == digest))


# ---------------------------------------------------------------- reads

def _region(row: RegionRow) -> RegionEntry:
    return RegionEntry(row.slice_index, row.code, row.depth, row.expanded, row.point)


def _facet(row: FacetRow) -> FacetEntry:
    return FacetEntry(row.slice_index, row.code, row.neuron, row.nonempty, row.point, row.certificate)


def _claim(row: ClassClaimRow) -> ClassClaimEntry:
    return ClassClaimEntry(row.slice_index, row.code, row.label, row.other, row.holds, row.point, row.certificate)


def frontier(session: Session, digest: str, slice_index: int, limit: int | None = None) -> list[RegionEntry]:
    """Regions discovered but not yet expanded, in discovery order (breadth first)."""
    q = (
        select(RegionRow)
        .where(RegionRow.model_digest == digest, RegionRow.slice_index == slice_index, RegionRow.expanded.is_(False))
        .order_by(RegionRow.id)
    )
    if limit is not None:
        q = q.limit(limit)
    return [_region(r) for r in session.scalars(q)]


def regions(session: Session, digest: str, slice_index: int | None = None) -> list[RegionEntry]:
    q = select(RegionRow).where(RegionRow.model_digest == digest).order_by(RegionRow.slice_index, RegionRow.id)
    if slice_index is not None:
        q = q.where(RegionRow.slice_index == slice_index)
    return [_region(r) for r in session.scalars(q)]


def region(session: Session, digest: str, slice_index: int, code: str) -> RegionEntry | None:
    row = session.scalar(
        select(RegionRow).where(RegionRow.model_digest == digest, RegionRow.slice_index == slice_index, RegionRow.code == code)
    )
    return None if row is None else _region(row)


def facets(session: Session, digest: str, slice_index: int | None = None, code: str | None = None) -> list[FacetEntry]:
    q = select(FacetRow).where(FacetRow.model_digest == digest)
    if slice_index is not None:
        q = q.where(FacetRow.slice_index == slice_index)
    if code is not None:
        q = q.where(FacetRow.code == code)
    return [_facet(r) for r in session.scalars(q.order_by(FacetRow.slice_index, FacetRow.code, FacetRow.neuron))]


def class_claims(session: Session, digest: str, slice_index: int | None = None, code: str | None = None) -> list[ClassClaimEntry]:
    q = select(ClassClaimRow).where(ClassClaimRow.model_digest == digest)
    if slice_index is not None:
        q = q.where(ClassClaimRow.slice_index == slice_index)
    if code is not None:
        q = q.where(ClassClaimRow.code == code)
    order = (ClassClaimRow.slice_index, ClassClaimRow.code, ClassClaimRow.label, ClassClaimRow.other)
    return [_claim(r) for r in session.scalars(q.order_by(*order))]


def count_nonempty_facets(session: Session, digest: str) -> int:
    return int(session.scalar(select(func.count()).select_from(FacetRow).where(
        FacetRow.model_digest == digest, FacetRow.nonempty.is_(True))) or 0)


def slice_status(session: Session, digest: str) -> dict[int, SliceRow]:
    rows = session.scalars(select(SliceRow).where(SliceRow.model_digest == digest).order_by(SliceRow.slice_index))
    return {r.slice_index: r for r in rows}


def counts(session: Session, digest: str) -> StoreCounts:
    def n(model: type[Base], column) -> int:
        return int(session.scalar(select(func.count()).select_from(model).where(column == digest)) or 0)

    return StoreCounts(
        models=n(ModelRow, ModelRow.digest),
        slices=n(SliceRow, SliceRow.model_digest),
        regions=n(RegionRow, RegionRow.model_digest),
        facets=n(FacetRow, FacetRow.model_digest),
        class_claims=n(ClassClaimRow, ClassClaimRow.model_digest),
    )


# ---------------------------------------------------------------- fast per-region reads (online path)

# Prebuilt Core statements: compiled once and cached by SQLAlchemy, no ORM
# identity map. Each is one index lookup on the unique key's prefix.
_REGION_FACETS = select(FacetRow.neuron, FacetRow.nonempty, FacetRow.point, FacetRow.certificate).where(
    FacetRow.model_digest == bindparam("digest"), FacetRow.slice_index == bindparam("slice_index"),
    FacetRow.code == bindparam("code"),
)
_REGION_CLAIMS = select(ClassClaimRow.label, ClassClaimRow.other, ClassClaimRow.holds, ClassClaimRow.point,
                        ClassClaimRow.certificate).where(
    ClassClaimRow.model_digest == bindparam("digest"), ClassClaimRow.slice_index == bindparam("slice_index"),
    ClassClaimRow.code == bindparam("code"),
)


def region_rows(conn: Connection, digest: str, slice_index: int, code: str
                ) -> tuple[list[FacetEntry], list[ClassClaimEntry]]:
    """Every facet and class-claim row of one region, through a plain connection."""
    params = {"digest": digest, "slice_index": slice_index, "code": code}
    facets_ = [FacetEntry(slice_index, code, n, bool(ne), p, c) for n, ne, p, c in conn.execute(_REGION_FACETS, params)]
    claims_ = [ClassClaimEntry(slice_index, code, y, j, bool(h), p, c)
               for y, j, h, p, c in conn.execute(_REGION_CLAIMS, params)]
    return facets_, claims_
