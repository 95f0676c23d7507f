"""A `fairness.regions.RegionOracle` served from the precompute store.

GeoCert asks per region `facet(region, k)` and `no_class(region, y, j)`. This
oracle answers from the store rows of the model's digest; a missing row is
computed with HiGHS (`RegionComputer`, the same code the offline precompute
runs) and cached: pending rows are written by `flush()` in one transaction
with insert-or-ignore, so concurrent readers only ever see committed rows and
concurrent writers never duplicate one.

Stored rows are re-checked before use, exactly, against the region derived
from the model's own weights: a Farkas certificate must verify
(`fairness.farkas.verify`), a facet point or tie point must lie on its
hyperplane, inside the region and the box. A row that fails is treated as
missing: recomputed and replaced. Rows of other models are never read (every
query is keyed by this model's digest). A non-empty facet only steers the
search (it never covers a row of the statement), so a non-empty row without a
point is used as is.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from fairness import farkas as fk
from fairness.farkas import FarkasCertificate
from fairness.fixed_point import FixedPointModel
from fairness.regions import ClassInfo, FacetInfo, RationalPoint, Region, class_system, facet_system, free_box
from offline_precompute import store as st
from offline_precompute.db import Database
from offline_precompute.enumerate import RegionComputer


@dataclass
class OracleStats:
    hits: int = 0  # answers served from the store
    misses: int = 0  # answers computed (then cached)
    rejected: int = 0  # stored rows that failed the exact re-check
    loads: int = 0  # store round trips

    def as_dict(self) -> dict[str, int]:
        return {"hits": self.hits, "misses": self.misses, "rejected": self.rejected, "loads": self.loads}


@dataclass
class _RegionRows:
    facets: dict[int, st.FacetEntry]
    claims: dict[tuple[int, int], st.ClassClaimEntry]


def _rational(data: Any) -> RationalPoint | None:
    try:
        return RationalPoint.from_json(data)
    except (KeyError, TypeError, ValueError):
        return None


def _farkas(data: Any) -> FarkasCertificate | None:
    try:
        return FarkasCertificate.from_json(data)
    except (KeyError, TypeError, ValueError):
        return None


class StoreRegionOracle:
    """RegionOracle over the store; computes and caches what is missing."""

    def __init__(self, db: Database, model: FixedPointModel, *, computer: RegionComputer | None = None,
                 cache_misses: bool = True, registered_digest: str | None = None):
        """`registered_digest`: the model's digest when the caller has already
        registered it (`store.ensure_model`) in this store; skips that round trip."""
        self.db = db
        self.model = model
        self.box = free_box(model)
        self.computer = computer or RegionComputer(model)
        self.cache_misses = cache_misses
        self.stats = OracleStats()
        self._slice_index = {tuple(v): i for i, v in enumerate(model.slices())}
        self._rows: dict[tuple[int, str], _RegionRows] = {}
        self._pending_facets: list[st.FacetEntry] = []
        self._pending_claims: list[st.ClassClaimEntry] = []
        self._replace_facets: list[st.FacetEntry] = []
        self._replace_claims: list[st.ClassClaimEntry] = []
        self._conn = None
        if registered_digest is not None:
            self.digest = registered_digest
        else:
            with db.sessions.begin() as s:
                self.digest = st.ensure_model(s, model)

    # ------------------------------------------------------------ RegionOracle

    def facet(self, region: Region, k: int) -> FacetInfo:
        si, rows = self._region_rows(region)
        entry = rows.facets.get(k)
        if entry is not None and self._facet_ok(region, entry):
            self.stats.hits += 1
        else:
            if entry is not None:
                self.stats.rejected += 1
            self.stats.misses += 1
            fresh = self.computer.facet_entry(si, region, k)
            (self._replace_facets if entry is not None else self._pending_facets).append(fresh)
            rows.facets[k] = entry = fresh
        return FacetInfo(entry.nonempty, None if entry.certificate is None else _farkas(entry.certificate))

    def no_class(self, region: Region, y: int, j: int) -> ClassInfo:
        si, rows = self._region_rows(region)
        entry = rows.claims.get((y, j))
        if entry is not None and self._claim_ok(region, entry):
            self.stats.hits += 1
        else:
            if entry is not None:
                self.stats.rejected += 1
            self.stats.misses += 1
            fresh = self.computer.claim_entry(si, region, y, j)
            (self._replace_claims if entry is not None else self._pending_claims).append(fresh)
            rows.claims[(y, j)] = entry = fresh
        return ClassInfo(
            entry.holds,
            None if entry.certificate is None else _farkas(entry.certificate),
            None if entry.point is None else _rational(entry.point),
        )

    # ------------------------------------------------------------ cache

    @property
    def pending(self) -> int:
        return len(self._pending_facets) + len(self._pending_claims) + len(self._replace_facets) + len(self._replace_claims)

    def flush(self) -> int:
        """Release the read connection, then write every computed answer in one
        transaction; returns the number of rows written."""
        self.close()
        n = self.pending
        if not n or not self.cache_misses:
            self._clear_pending()
            return 0
        with self.db.sessions.begin() as s:
            st.add_facets(s, self.digest, self._pending_facets)
            st.add_class_claims(s, self.digest, self._pending_claims)
            for e in self._replace_facets:
                st.replace_facet(s, self.digest, e)
            for c in self._replace_claims:
                st.replace_class_claim(s, self.digest, c)
        self._clear_pending()
        return n

    def _clear_pending(self) -> None:
        self._pending_facets, self._pending_claims = [], []
        self._replace_facets, self._replace_claims = [], []

    def _region_rows(self, region: Region) -> tuple[int, _RegionRows]:
        si = self._slice_index.get(tuple(region.slice_values))
        if si is None:
            raise ValueError(f"region of slice {region.slice_values} is not a slice of this model")
        key = (si, region.code.key)
        rows = self._rows.get(key)
        if rows is None:
            self.stats.loads += 1
            if self._conn is None:
                self._conn = self.db.engine.connect()  # kept until close()/flush(): no pool round trip per region
            try:
                facets, claims = st.region_rows(self._conn, self.digest, si, key[1])
            finally:
                # End the read transaction at once: an idle connection holds no locks
                # (PostgreSQL DDL, SQLite checkpoints are never blocked by a lingering oracle).
                self._conn.rollback()
            rows = _RegionRows({f.neuron: f for f in facets}, {(c.label, c.other): c for c in claims})
            self._rows[key] = rows
        return si, rows

    def __enter__(self) -> "StoreRegionOracle":
        return self

    def __exit__(self, *exc) -> None:
        self.flush()

    def close(self) -> None:
        """Return the read connection to the pool (flush() does this too)."""
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    # ------------------------------------------------------------ exact re-checks

    def _facet_ok(self, region: Region, entry: st.FacetEntry) -> bool:
        if not 0 <= entry.neuron < len(region.neurons):
            return False
        if entry.nonempty:
            if entry.point is None:
                return True
            p = _rational(entry.point)
            return (p is not None and p.in_box(self.box) and region.contains_rational(p)
                    and p.form_value(region.neurons[entry.neuron]) == 0)
        if entry.certificate is None:
            return True  # "empty, no certificate": the row stays uncovered, which is always sound
        cert = _farkas(entry.certificate)
        rows, extra, eq = facet_system(region, entry.neuron)
        return cert is not None and fk.verify(rows, extra, eq, self.box, cert)

    def _claim_ok(self, region: Region, entry: st.ClassClaimEntry) -> bool:
        n = len(region.logits)
        if not (0 <= entry.label < n and 0 <= entry.other < n) or entry.label == entry.other:
            return False
        if entry.holds:
            if entry.point is None:
                return True
            p = _rational(entry.point)
            return (p is not None and p.in_box(self.box) and region.contains_rational(p)
                    and p.form_value(region.decision_form(entry.label, entry.other)) == 0)
        if entry.certificate is None:
            return True
        cert = _farkas(entry.certificate)
        rows, extra, eq = class_system(region, entry.label, entry.other)
        return cert is not None and fk.verify(rows, extra, eq, self.box, cert)
