"""The public model card: everything a customer needs to check a certificate.

The card names the architecture, the fixed-point scale, the input domain box,
the sensitive features and their domains, the public preprocessing (so a
customer can map their own record to the query vector), the commitment to the
weights, and for every circuit bucket its shape, the digest of its constraint
system, its verifying key and the record of its key setup. It never holds a
weight or the salt. Its digest (SHA-256 of the RFC 8785 canonical form of the
card exactly as published, every bucket included) is what bundles name and
customers pin; a version-2 card (digests over Python's JSON of the filled-in
card) is re-published once as version 3 (commitments.card_migration).

A bucket's shape says which radius its statement proves (`radius`): "fast",
GeoCert's projection radius, a lower bound on the true one; or "exact", the
true radius rounded down to 2^-t, made minimal by a counterexample
(docs/STATEMENT.md). The bucket's name carries it ("k4-f4" or
"k4-f4-exact"), its R1CS digest and verifying key are those of that
statement, and a verifier labels eps from it alone. Fast buckets are written
without the field, so cards made before exact statements keep their digests.

This module depends on pydantic only: the verifier client imports it.
The card's parts are defined beside it: the model's (sensitive features,
architecture, encodings, lenses) in commitments/card_model.py, the circuits'
(buckets, verifying keys, key setups, audit circuits) in
commitments/card_circuits.py; this module re-exports them.
"""
from __future__ import annotations

import copy
import hashlib
import itertools
import json
from collections.abc import Mapping
from typing import Any, Final, Literal

from pydantic import Field, PrivateAttr, model_validator

from fairness.schema import FeatureSchema

from .canonical import I_JSON_MAX, FrDecimal, NonCanonical, canonical_bytes
from .card_circuits import (BOUND_RADIUS, EXACT_RADIUS, FAST_RADIUS, AuditCircuit, Blake2bHex, BucketShape,
                            CircuitBucket, ContributionRecord, RadiusKind, SetupRecord, TreeBucketShape,
                            VerifyingKeyJson, audit_circuit_name, bucket_name, tree_bucket_name)
from .card_model import (RELU_NETWORK, TREE_ENSEMBLE, ArchitectureCard, FeatureEncoding, ModelKind,
                         PersistenceLensCard, SensitiveFeatureCard, SpreadLensCard, _Frozen, scaled_delta)

__all__ = [
    "ArchitectureCard", "AuditCircuit", "BOUND_RADIUS", "Blake2bHex", "BucketShape", "CARD_VERSION", "CircuitBucket",
    "ContributionRecord", "EXACT_RADIUS", "FAST_RADIUS", "FeatureEncoding", "LEGACY_CARD_MESSAGE",
    "LEGACY_CARD_VERSION", "ModelCard", "ModelKind", "PersistenceLensCard", "RELU_NETWORK", "RadiusKind",
    "SensitiveFeatureCard", "SetupRecord", "SpreadLensCard", "TREE_ENSEMBLE", "TreeBucketShape", "VerifyingKeyJson",
    "audit_circuit_name", "bucket_name", "scaled_delta", "tree_bucket_name",
]

CARD_VERSION: Final = 3  # Final: its type is Literal[3], the field's
LEGACY_CARD_VERSION: Final = 2  # digests over Python's JSON of the filled-in card (commitments.card_migration)
LEGACY_CARD_MESSAGE: Final = ("model card: card_version 2 is from before card digests were RFC 8785 canonical JSON; "
                              "the bank re-publishes the same card as version 3 (`fairproof card migrate`)")

class ModelCard(_Frozen):
    """The bank's public statement about its model (see the module docstring).

    A card's digest is SHA-256 over the RFC 8785 canonical form of the card exactly as published: a card
    read from JSON keeps the value it was read from (nothing filled in, nothing dropped), one built here
    is published as `published_value()` writes it."""

    card_version: Literal[3] = CARD_VERSION
    model_id: str
    description: str = ""
    dataset: str
    feature_names: tuple[str, ...]
    features: tuple[FeatureEncoding, ...] = ()
    # An imported model's own schema (then `features` is empty): the record format, the raw domain and the
    # labels a verifier prints, each bound below to the box, sensitive codes and classes the proof uses.
    feature_schema: FeatureSchema | None = None
    # How an imported network was checked against the bank's own decisions (the bank's statement, not proved).
    import_check: str | None = None
    sensitive: tuple[SensitiveFeatureCard, ...]
    architecture: ArchitectureCard
    scale_bits: int = Field(ge=0, le=64)
    eps_scale_bits: int = Field(ge=0, le=64)
    box_lower: tuple[int, ...]
    box_upper: tuple[int, ...]
    commitment: FrDecimal  # the Poseidon commitment, canonical decimal below R
    commitment_scheme: str
    circuits: tuple[CircuitBucket, ...] = ()
    # The lenses every bucket's statement proves beside the radius (None: the radius alone).
    spread: SpreadLensCard | None = None
    persistence: PersistenceLensCard | None = None
    # Group-counts statements over public audit datasets (statement.group_counts).
    audit_circuits: tuple[AuditCircuit, ...] = ()

    @model_validator(mode="after")
    def _consistent(self) -> "ModelCard":
        n = self.architecture.n_inputs
        if len(self.feature_names) != n or len(self.box_lower) != n or len(self.box_upper) != n:
            raise ValueError(f"feature names and domain box must have {n} entries")
        if self.features and len(self.features) != n:
            raise ValueError(f"feature encodings must have {n} entries")
        if any(lo > hi for lo, hi in zip(self.box_lower, self.box_upper)):
            raise ValueError("domain box has a lower bound above its upper bound")
        scaled = [*self.box_lower, *self.box_upper, *(v for f in self.sensitive for p in f.points for v in p),
                  *(c.shape.eps_cap for c in self.circuits)]
        if any(abs(v) > I_JSON_MAX for v in scaled):
            raise ValueError(f"the domain box, sensitive codes or eps caps at scale 2^{self.scale_bits} pass 2^53 - 1, "
                             "which a card cannot hold exactly (RFC 8785): choose a smaller scale")
        columns = list(self.sensitive_columns)
        if len(set(columns)) != len(columns) or any(c >= n for c in columns):
            raise ValueError("sensitive columns must be distinct input indices (no column in two attributes)")
        if self.feature_schema is not None:
            self._schema_binds_statement(self.feature_schema)
        if self.spread is not None and self.spread.favourable_class >= self.architecture.n_classes:
            raise ValueError("the spread lens's favourable class is not a class of the model")
        if self.persistence is not None:
            self._persistence_fits(self.persistence, columns)
        self._buckets_fit_kind()
        buckets = [c.bucket for c in self.circuits] + [c.name for c in self.audit_circuits]
        if len(set(buckets)) != len(buckets):
            raise ValueError("circuit bucket names must be unique")
        for audit in self.audit_circuits:
            if audit.favourable_class >= self.architecture.n_classes:
                raise ValueError(f"audit circuit {audit.name}: its favourable class is not a class of the model")
            if len(audit.weight_bits) != len(self.architecture.hidden_sizes) + 1 or \
                    len(audit.bias_bits) != len(audit.weight_bits):
                raise ValueError(f"audit circuit {audit.name}: one weight and bias bound per layer")
        # One circuit, one key: a verifying key (or constraint system, or initial key) listed under two
        # shapes is the key of at most one of them, e.g. a fast statement's key relabelled as exact.
        keyed: tuple[CircuitBucket | AuditCircuit, ...] = (*self.circuits, *self.audit_circuits)
        for what, values in (("verifying key", [c.verifying_key_digest for c in keyed]),
                             ("R1CS digest", [c.r1cs_digest for c in keyed]),
                             ("circuit hash", [c.setup.circuit_hash for c in keyed
                                               if c.setup.circuit_hash is not None])):
            if len(set(values)) != len(values):
                raise ValueError(f"two circuit buckets share one {what}: each bucket's statement has its own")
        return self

    def _buckets_fit_kind(self) -> None:
        """A network's buckets prove network statements, a tree ensemble's tree statements; a tree ensemble's
        certificates prove the radius alone (no lens, no group counts: no statement of theirs covers trees)."""
        trees = self.architecture.kind == TREE_ENSEMBLE
        for c in self.circuits:
            if isinstance(c.shape, TreeBucketShape) != trees:
                raise ValueError(f"bucket {c.bucket}: a {self.architecture.kind}'s card lists only "
                                 f"{'tree-ensemble' if trees else 'network'} statements")
        if trees and (self.spread is not None or self.persistence is not None or self.audit_circuits):
            raise ValueError("a tree ensemble's card proves the radius alone: no lens and no audit circuit")

    def _persistence_fits(self, lens: PersistenceLensCard, sensitive_columns: list[int]) -> None:
        if self.architecture.n_classes != 2:
            raise ValueError("the persistence lens needs a two-class model (its margin is linear)")
        if lens.favourable_class >= 2:
            raise ValueError("the persistence lens's favourable class is not a class of the model")
        if self.spread is not None and self.spread.favourable_class != lens.favourable_class:
            raise ValueError("the spread and persistence lenses must name the same favourable class")
        cols = lens.columns
        if list(cols) != sorted(set(cols)) or any(c >= self.architecture.n_inputs or c in sensitive_columns
                                                  for c in cols):
            raise ValueError("the persistence lens's columns must be distinct non-sensitive inputs, in order")
        if self.persistence_delta_cap == 0:
            raise ValueError("the persistence lens needs a column the domain box lets move")
        if lens.default_delta > self.persistence_delta_cap:
            raise ValueError(f"the persistence lens's default delta exceeds {self.persistence_delta_cap}, "
                             "the widest moved column of the domain box")

    def _schema_binds_statement(self, schema: FeatureSchema) -> None:
        """Everything the schema says must be what the proof is about: the same inputs, the domain box
        (rounded outward at the card's scale), the sensitive columns, codes and labels, and the classes."""
        if self.features:
            raise ValueError("a card publishes its preprocessing either as feature encodings or as a schema, not both")
        if schema.feature_names != self.feature_names:
            raise ValueError("the feature schema's model inputs differ from the card's feature names")
        if schema.class_labels != self.architecture.class_labels:
            raise ValueError("the feature schema's classes differ from the card's class labels")
        if schema.quantised_box(self.scale_bits) != (self.box_lower, self.box_upper):
            raise ValueError("the domain box differs from the feature schema's raw domain at the card's scale")
        expected = [(f.name, tuple(range(column, column + len(f.inputs))),
                     tuple(tuple(v << self.scale_bits for v in p) for p in f.points), f.value_labels)
                    for f, column in schema.sensitive_columns()]
        published = [(f.name, f.input_columns, f.points, f.labels) for f in self.sensitive]
        if expected != published:
            raise ValueError("the sensitive attributes differ from the feature schema's (name, columns, values, labels)")

    # -- publication: the card as published, its canonical form and digest ------------------------
    _published: Any = PrivateAttr(default=None)  # the JSON value read, for a card read from JSON
    _digest: str | None = PrivateAttr(default=None)

    def __eq__(self, other: object) -> bool:
        """Cards are equal when their fields are (however each was spelled when published)."""
        return isinstance(other, ModelCard) and self.__dict__ == other.__dict__


    def model_copy(self, *, update: Mapping[str, Any] | None = None, deep: bool = False) -> "ModelCard":
        copy = super().model_copy(update=update, deep=deep)
        if update:  # another card: published as this code writes it
            copy._published, copy._digest = None, None
        return copy

    def published_value(self) -> Any:
        """The card's JSON value as published: as read, or, for a card built here, its fields without the
        optional parts it lacks (what `published_json` writes). A copy: the card's digest rests on it."""
        return copy.deepcopy(self._published) if self._published is not None else self.written_value()

    def written_value(self) -> Any:
        """The JSON value this code writes for the card's fields: every field but the optional parts the card
        lacks (so cards without them keep the form they had before those parts existed)."""
        absent = {name for name in ("feature_schema", "import_check", "spread", "persistence") if getattr(self, name) is None}
        if not self.audit_circuits:
            absent.add("audit_circuits")
        return self.model_dump(mode="json", exclude=absent or None)

    def published_json(self, indent: int | None = 2) -> str:
        """The card's JSON as a file publishes it (reading it back gives the same digest)."""
        return json.dumps(self._as_published(), indent=indent, ensure_ascii=False) + "\n"

    def canonical_json(self) -> str:
        """RFC 8785 canonical form of the card as published: what the digest hashes, and what a service or
        a pin stores (it reads back as the same card with the same digest)."""
        return canonical_bytes(self._as_published(), "model card").decode("utf-8")

    def _as_published(self) -> Any:  # published_value without the copy, for reading only
        return self._published if self._published is not None else self.written_value()

    def digest(self) -> str:
        """SHA-256 of the RFC 8785 canonical form of the whole card as published, circuit buckets included.

        This is what a bundle names and a customer pins. It covers every
        bucket (shape, R1CS digest, verifying key, setup transcript), so a key
        cannot be slipped in beside a pinned card: a card with another bucket
        is another card. The page computes the same (page/canonical.js) with
        the npm `canonicalize` package.
        """
        if self._digest is None:
            self._digest = hashlib.sha256(self.canonical_json().encode("utf-8")).hexdigest()
        return self._digest

    @property
    def sensitive_columns(self) -> tuple[int, ...]:
        """Every sensitive attribute's columns, attribute after attribute: the order of a slice's values."""
        return tuple(c for f in self.sensitive for c in f.input_columns)

    @property
    def sensitive_widths(self) -> tuple[int, ...]:
        return tuple(len(f.input_columns) for f in self.sensitive)

    def slices(self) -> list[tuple[int, ...]]:
        """Every combination of sensitive values, in the statement's order (the flip index counts these):
        each the concatenation of one point per attribute, one value per sensitive column."""
        return [tuple(v for p in combo for v in p) for combo in itertools.product(*(f.points for f in self.sensitive))]

    def slice_points(self, values: tuple[int, ...]) -> tuple[tuple[int, ...], ...]:
        """A slice's values cut into one point per attribute."""
        out, at = [], 0
        for f in self.sensitive:
            out.append(tuple(values[at:at + len(f.input_columns)]))
            at += len(f.input_columns)
        return tuple(out)

    def query_slice(self, query: tuple[int, ...]) -> tuple[int, ...]:
        """The values of a query's sensitive columns."""
        return tuple(query[c] for c in self.sensitive_columns)

    def slice_labels(self, index: int) -> tuple[tuple[int, ...], tuple[str, ...]]:
        """The values and readable labels (one per attribute) of slice `index`."""
        values = self.slices()[index]
        return values, tuple(f.label_of(p) for f, p in zip(self.sensitive, self.slice_points(values)))

    def _model_shape_json(self) -> dict[str, Any]:
        """The model part every statement's shape shares: architecture, sensitive slices, box, scale."""
        a = self.architecture
        return {
            "n_inputs": a.n_inputs, "hidden_sizes": list(a.hidden_sizes), "n_classes": a.n_classes,
            "sensitive_columns": list(self.sensitive_columns),
            "slices": [list(s) for s in self.slices()],
            "box_lower": list(self.box_lower), "box_upper": list(self.box_upper), "scale_bits": self.scale_bits,
        }

    def tree_shape_json(self, bucket: CircuitBucket) -> dict[str, Any]:
        """The full public shape of a tree-ensemble bucket's statement (statement.trees.TreeShape's fields)."""
        shape = bucket.shape
        if not isinstance(shape, TreeBucketShape):
            raise ValueError(f"bucket {bucket.bucket} is not a tree-ensemble statement")
        a = self.architecture
        return {
            "n_trees": shape.n_trees, "depth": shape.depth, "n_inputs": a.n_inputs, "n_classes": a.n_classes,
            "scale_bits": self.scale_bits, "value_bits": shape.value_bits, "eps_bits": self.eps_scale_bits,
            "box_lower": list(self.box_lower), "box_upper": list(self.box_upper),
            "sensitive_columns": list(self.sensitive_columns), "slices": [list(s) for s in self.slices()],
            "threshold_bits": shape.threshold_bits, "value_range_bits": shape.value_range_bits,
            "eps_cap": shape.eps_cap,
        }

    def statement_shape_json(self, bucket: CircuitBucket) -> dict[str, Any]:
        """The full public shape of a network bucket's statement (statement.StatementShape.from_json)."""
        if isinstance(bucket.shape, TreeBucketShape):
            raise ValueError(f"bucket {bucket.bucket} is a tree-ensemble statement (tree_shape_json)")
        return {
            **self._model_shape_json(), "eps_bits": self.eps_scale_bits,
            "eps_cap": bucket.shape.eps_cap,
            "weight_bits": list(bucket.shape.weight_bits), "bias_bits": list(bucket.shape.bias_bits),
            "region_slots": bucket.shape.region_slots, "farkas_slots": bucket.shape.farkas_slots,
            "farkas_bits": bucket.shape.farkas_bits, "boundary_bits": bucket.shape.boundary_bits,
            **({"radius": bucket.shape.radius} if bucket.shape.radius != FAST_RADIUS else {}),
            **({"per_slice": True} if bucket.shape.per_slice else {}),
            **({"spread_width": self.spread.bucket_width} if self.spread is not None else {}),
            **({"favourable_class": self.favourable_class} if self.favourable_class is not None else {}),
            **({"persistence_columns": list(self.persistence.columns)} if self.persistence is not None else {}),
            **({"sensitive_widths": list(self.sensitive_widths)} if any(w > 1 for w in self.sensitive_widths) else {}),
            **({"alpha_bits": bucket.shape.alpha_bits} if bucket.shape.alpha_bits else {}),
        }

    @property
    def favourable_class(self) -> int | None:
        """The class whose logit margin the lenses speak of (None: a card with the radius alone)."""
        lens = self.spread or self.persistence
        return lens.favourable_class if lens is not None else None

    @property
    def logit_scale_bits(self) -> int:
        """The logits' fixed-point scale: inputs and weights at 2^s, one more 2^s per layer."""
        return self.scale_bits * (len(self.architecture.hidden_sizes) + 2)

    @property
    def lenses(self) -> tuple[str, ...]:
        """What every certificate under this card proves: the radius, and each lens the card has."""
        return (("radius",) + (("spread",) if self.spread is not None else ())
                + (("persistence",) if self.persistence is not None else ()))

    @property
    def n_spread_signals(self) -> int:
        """Public signals of the spread lens: one decision per slice and the bucket count (0 without it)."""
        return len(self.slices()) + 1 if self.spread is not None else 0

    def persistence_pairs(self) -> list[tuple[int, tuple[int, ...]]]:
        """(sensitive feature index, value's point) for every value of every sensitive feature, points in
        lexicographic order: the order the persistence lens's signals list their bounds (empty without it)."""
        if self.persistence is None:
            return []
        return [(a, p) for a, f in enumerate(self.sensitive) for p in sorted(f.points)]

    @property
    def n_persistence_signals(self) -> int:
        """Public signals of the persistence lens: delta, then (LB, UB) per pair (0 without it)."""
        return 1 + 2 * len(self.persistence_pairs()) if self.persistence is not None else 0

    @property
    def persistence_delta_cap(self) -> int:
        """The largest delta a persistence proof takes: the widest moved column of the domain box."""
        if self.persistence is None:
            return 0
        return max((self.box_upper[j] - self.box_lower[j] for j in self.persistence.columns
                    if j < len(self.box_lower)), default=0)

    def persistence_box(self, delta: float | None) -> int | None:
        """The delta a certificate under this card proves for a request naming `delta` (standard deviations;
        None: the card's default), at the input scale; None without the lens. ValueError when it cannot."""
        return self.persistence_scaled_box(None if delta is None else scaled_delta(delta, self.scale_bits))

    def persistence_scaled_box(self, scaled: int | None) -> int | None:
        """The same for a delta already at the input scale (an int)."""
        if self.persistence is None:
            if scaled is not None:
                raise ValueError(f"model {self.model_id} does not prove persistent bias: it takes no delta")
            return None
        if scaled is None:
            return self.persistence.default_delta
        one = 1 << self.scale_bits
        if type(scaled) is not int or scaled < 0:
            raise ValueError(f"delta must be a non-negative integer at the input scale 2^{self.scale_bits}")
        if scaled > self.persistence_delta_cap:
            raise ValueError(f"delta {scaled / one:g} exceeds {self.persistence_delta_cap / one:g} standard "
                             "deviations, the widest moved feature's domain")
        return scaled

    def with_bucket(self, bucket: "CircuitBucket") -> "ModelCard":
        """This card with `bucket` added (an existing bucket of that name must be identical)."""
        for existing in self.circuits:
            if existing.bucket == bucket.bucket:
                if existing != bucket:
                    raise ValueError(f"bucket {bucket.bucket!r} already has a different verifying key")
                return self
        return self.model_copy(update={"circuits": (*self.circuits, bucket)})

    def with_audit_circuit(self, circuit: AuditCircuit) -> "ModelCard":
        """This card with `circuit` added (an existing one of that name must be identical)."""
        for existing in self.audit_circuits:
            if existing.name == circuit.name:
                if existing != circuit:
                    raise ValueError(f"audit circuit {circuit.name!r} already has a different verifying key")
                return self
        return self.model_copy(update={"audit_circuits": (*self.audit_circuits, circuit)})

    def audit_circuit(self, name: str) -> AuditCircuit:
        for c in self.audit_circuits:
            if c.name == name:
                return c
        raise KeyError(f"model card {self.model_id!r} has no audit circuit {name!r}")

    def group_counts_shape_json(self, circuit: AuditCircuit) -> dict[str, Any]:
        """The full public shape of an audit circuit (statement.group_counts.GroupCountsShape.from_json)."""
        return {
            **self._model_shape_json(), "weight_bits": list(circuit.weight_bits),
            "bias_bits": list(circuit.bias_bits), "favourable_class": circuit.favourable_class,
            "n_rows": circuit.n_rows,
        }

    def bucket(self, name: str) -> CircuitBucket:
        for c in self.circuits:
            if c.bucket == name:
                return c
        raise KeyError(f"model card {self.model_id!r} has no circuit bucket {name!r}")

    @classmethod
    def from_json(cls, text: str | bytes) -> "ModelCard":
        """Strict parse (canonical JSON and values); raises commitments.canonical.NonCanonical.

        The card keeps the JSON value it was read from: its digest is that value's, exactly as published."""
        from .canonical import load_json, parse_strict

        value = load_json(text, "model card")
        version = value.get("card_version") if isinstance(value, dict) else None
        if version == LEGACY_CARD_VERSION:
            raise NonCanonical(LEGACY_CARD_MESSAGE)
        digest = hashlib.sha256(canonical_bytes(value, "model card")).hexdigest()
        card = parse_strict(cls, text, "model card")
        card._published, card._digest = value, digest
        return card
