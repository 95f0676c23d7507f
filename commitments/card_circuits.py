"""The circuits' side of the model card: buckets, audit circuits, verifying keys and key setups.

The parts of a `commitments.card.ModelCard` that name its circuits: which
radius a bucket's statement proves and the bucket names (`bucket_name`), a
bucket's shape (with the fields left unwritten when they have their original
values, so older cards keep their digests), snarkjs's verifying key, the
record of where a key came from (ceremony contributions or a single party),
and the group-counts audit circuits. Pydantic only, as the card: the verifier
client imports it.
"""
from __future__ import annotations

from typing import Annotated, Any, Final, Literal, TypeAlias

from pydantic import Field, SerializerFunctionWrapHandler, model_serializer, model_validator

from fairness.radius import ProvedRadius, Radius

from .bundle import G1Json, G2Json
from .canonical import Sha256Hex, hex_validator
from .card_model import _Frozen

__all__ = ["AuditCircuit", "BOUND_RADIUS", "Blake2bHex", "BucketShape", "CircuitBucket", "ContributionRecord",
           "EXACT_RADIUS", "FAST_RADIUS", "RadiusKind", "SetupRecord", "TreeBucketShape", "VerifyingKeyJson",
           "audit_circuit_name", "bucket_name", "tree_bucket_name"]

Blake2bHex: TypeAlias = Annotated[str, hex_validator(128, "BLAKE2b-512 hash")]

# Which radius a bucket's statement proves (fairness.radius.ProvedRadius), by the names cards and claims use.
RadiusKind: TypeAlias = ProvedRadius
FAST_RADIUS: Final = Radius.FAST
EXACT_RADIUS: Final = Radius.EXACT
BOUND_RADIUS: Final = Radius.BOUND  # linear bound propagation: a lower bound, no regions (K = F = 1)


def bucket_name(region_slots: int, farkas_slots: int, radius: RadiusKind = FAST_RADIUS, per_slice: bool = False) -> str:
    """A bucket's name: k<K>-f<F>, with -exact for an exact-radius statement and -slice for a per-slice
    one (as statement.StatementShape.bucket)."""
    return (f"k{region_slots}-f{farkas_slots}" + ("-exact" if radius == EXACT_RADIUS else "")
            + ("-bound" if radius == BOUND_RADIUS else "") + ("-slice" if per_slice else ""))

class VerifyingKeyJson(_Frozen):
    """snarkjs's verification_key.json, affine (z = 1): the point at infinity cannot be written."""

    protocol: Literal["groth16"]
    curve: Literal["bn128"]
    nPublic: int = Field(ge=0)
    vk_alpha_1: G1Json
    vk_beta_2: G2Json
    vk_gamma_2: G2Json
    vk_delta_2: G2Json
    IC: tuple[G1Json, ...]

    @model_validator(mode="after")
    def _ic_length(self) -> "VerifyingKeyJson":
        if len(self.IC) != self.nPublic + 1:
            raise ValueError(f"IC has {len(self.IC)} points, nPublic + 1 = {self.nPublic + 1} expected")
        return self


class BucketShape(_Frozen):
    """What a bucket's circuit adds to the model's public shape (statement/shape.py)."""

    region_slots: int = Field(ge=1)  # K
    farkas_slots: int = Field(ge=1)  # F
    eps_cap: int = Field(ge=0)  # E never exceeds it; E == cap means "the whole box"
    farkas_bits: int = Field(ge=1, le=128)
    boundary_bits: int = Field(ge=1, le=250)
    weight_bits: tuple[int, ...]
    bias_bits: tuple[int, ...]
    radius: RadiusKind = FAST_RADIUS  # the minimality the statement proves: what eps is (see the module docstring)
    # The statement covers one slice, named by its last public input; a certificate is one proof per slice.
    per_slice: bool = False
    # Optimised lower relaxation slopes a / 2^alpha_bits (statement.relaxation) in the bound radius and the
    # persistence lens; 0: the fixed ones.
    alpha_bits: int = Field(default=0, ge=0, le=16)

    @model_validator(mode="after")
    def _per_slice_exact(self) -> "BucketShape":
        if self.per_slice and self.radius != EXACT_RADIUS:
            raise ValueError("per-slice statements prove the exact radius only")
        return self

    @model_serializer(mode="wrap")
    def _fast_unwritten(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        data: dict[str, Any] = handler(self)
        if self.radius == FAST_RADIUS:
            data.pop("radius", None)  # fast shapes keep the spelling (and digests) they had before exact ones
        if not self.per_slice:
            data.pop("per_slice", None)  # and whole ones the spelling they had before per-slice ones
        if not self.alpha_bits:
            data.pop("alpha_bits", None)  # and fixed slopes the spelling they had before optimised ones
        return data


class TreeBucketShape(_Frozen):
    """What a tree-ensemble bucket's statement adds to the model's public shape (statement/trees/shape.py):
    the trees padded to one depth, the leaf-value scale and the widths its committed values are checked
    against. Its statement proves the bound radius (the worst reachable leaf of each tree), whole."""

    kind: Literal["tree-ensemble"]
    n_trees: int = Field(ge=1, le=1 << 16)
    depth: int = Field(ge=1, le=16)
    value_bits: int = Field(ge=0, le=64)  # leaf values and the base at 2^value_bits
    threshold_bits: int = Field(ge=0, le=128)
    value_range_bits: int = Field(ge=0, le=128)
    eps_cap: int = Field(ge=1)
    radius: Literal[Radius.BOUND] = BOUND_RADIUS

    @property
    def per_slice(self) -> bool:
        return False


def tree_bucket_name(n_trees: int, depth: int) -> str:
    """A tree-ensemble bucket's name: t<trees>-d<depth>-bound."""
    return f"t{n_trees}-d{depth}-bound"


class ContributionRecord(_Frozen):
    """One phase-2 contribution to a bucket's key, as the ceremony transcript records it."""

    name: str = Field(max_length=256)
    hash: Blake2bHex  # the contribution hash printed to its contributor
    kind: Literal["contribution", "beacon"] = "contribution"


class SetupRecord(_Frozen):
    """Where a bucket's key came from.

    "ceremony": phase 1 from a powers-of-tau file, phase 2 from the listed
    contributions (a key whose transcript holds one honest contributor hides
    its toxic waste from everyone). "single-party": the bank drew every
    secret itself; whoever ran it can forge proofs, so customers who name a
    trusted contributor refuse such keys.
    """

    method: Literal["ceremony", "single-party"]
    phase1_digest: Sha256Hex | None = None  # SHA-256 of the .ptau file
    phase1_power: int | None = Field(default=None, ge=1, le=28)
    circuit_hash: Blake2bHex | None = None  # snarkjs's csHash of the initial key
    contributions: tuple[ContributionRecord, ...] = ()
    transcript_digest: Sha256Hex | None = None  # SHA-256 of the final key's contribution section

    @model_validator(mode="after")
    def _complete(self) -> "SetupRecord":
        if self.method == "ceremony":
            missing = [n for n in ("phase1_digest", "phase1_power", "circuit_hash", "transcript_digest")
                       if getattr(self, n) is None]
            if missing or not self.contributions:
                raise ValueError("a ceremony setup names its phase 1, circuit hash, transcript and contributions")
        elif self.contributions or self.circuit_hash is not None:
            raise ValueError("a single-party setup has no contributions")
        return self


class CircuitBucket(_Frozen):
    """One circuit shape, its constraint system's digest, its verifying key and where the key came from."""

    # k<K>-f<F>[-exact[-slice]|-bound] for a network, t<trees>-d<depth>-bound for a tree ensemble
    bucket: str = Field(pattern=r"^(k[0-9]{1,6}-f[0-9]{1,6}(-exact(-slice)?|-bound)?|t[0-9]{1,5}-d[0-9]{1,2}-bound)$")
    shape: BucketShape | TreeBucketShape
    n_constraints: int = Field(ge=0)
    n_public: int = Field(ge=0)
    r1cs_digest: Sha256Hex  # circuits.groth16.r1cs_digest of the statement for this shape
    verifying_key_digest: Sha256Hex
    verifying_key: VerifyingKeyJson
    setup: SetupRecord

    @model_validator(mode="after")
    def _named_by_shape(self) -> "CircuitBucket":
        shape = self.shape
        named = (tree_bucket_name(shape.n_trees, shape.depth) if isinstance(shape, TreeBucketShape)
                 else bucket_name(shape.region_slots, shape.farkas_slots, shape.radius, shape.per_slice))
        if self.bucket != named:
            raise ValueError(f"bucket {self.bucket!r} does not name its shape ({named})")
        if self.verifying_key.nPublic != self.n_public:
            raise ValueError("the verifying key's nPublic differs from the bucket's n_public")
        return self


class AuditCircuit(_Frozen):
    """The keys of the group-counts statement (statement.group_counts) over audit datasets of `n_rows`
    rows: the committed model's decision counts per slice, with `favourable_class` as the selected one.
    One circuit serves every dataset of that many rows; its shape is the card's model part and the fields
    here (`ModelCard.group_counts_shape_json`)."""

    name: str = Field(pattern=r"^groups-n[0-9]{1,7}-c[0-9]{1,4}$")  # "groups-n<N>-c<favourable class>"
    n_rows: int = Field(ge=1, le=1 << 20)
    favourable_class: int = Field(ge=0)
    weight_bits: tuple[int, ...]
    bias_bits: tuple[int, ...]
    n_constraints: int = Field(ge=0)
    n_public: int = Field(ge=0)
    r1cs_digest: Sha256Hex
    verifying_key_digest: Sha256Hex
    verifying_key: VerifyingKeyJson
    setup: SetupRecord

    @model_validator(mode="after")
    def _named_by_shape(self) -> "AuditCircuit":
        if self.name != audit_circuit_name(self.n_rows, self.favourable_class):
            raise ValueError(f"audit circuit {self.name!r} does not name its rows and favourable class")
        if self.verifying_key.nPublic != self.n_public:
            raise ValueError("the verifying key's nPublic differs from the audit circuit's n_public")
        return self


def audit_circuit_name(n_rows: int, favourable_class: int) -> str:
    return f"groups-n{n_rows}-c{favourable_class}"

