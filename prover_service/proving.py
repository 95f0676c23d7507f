"""From a customer's query to a certificate bundle, one way down:

    certify (plain arithmetic, `fairness`, `offline_precompute`)
      -> statement (`bucket_choice`: which statement and bucket; `statement`: shape and witness)
      -> proof system (`key_store`: the bucket's keys, loaded, cached or set up and installed on the card;
         `statement.proof_system.Groth16`: the proof)
      -> bundle (`bundling`: the proofs with their readable, self-checked claims).

`Prover` is the composition of those for one committed model, with one radius mode (`Prover.radius`, the
deployment's choice for the model; see `bucket_choice` for what each mode proves with). Offline (per model and
bucket) the key store sets keys up once and caches them under the model directory; online (per query) the
plaintext certificate, the checker's approval, the statement witness, one Groth16 proof per part, the bundle.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Sequence

from circuits.backends import get_backend
from circuits.builder import ConstraintSystem
from circuits.snarkjs.ceremony import Ceremony
from commitments.card import ModelCard
from fairness.bound_radius import bound_certificate, remember_search, searched_radius
from fairness.certificate import CERTIFIED, Certificate
from fairness.checker import check_certificate
from fairness.errors import CertificationError, ModelError
from fairness.fixed_point import FixedPointModel, IntVector
from fairness.radius import RADIUS_MODES
from fairness.radius import Radius as RadiusMode
from commitments.bundle import CertificateBundle
from offline_precompute.certify import Certifier, ForkedCall, exact_within
from offline_precompute.db import Database
from statement import StatementShape, build_statement
from statement.adapter import BUCKET_GROWTHS, DEFAULT_BUCKET_GROWTH, statement_inputs
from statement.proof_system import Groth16, RelationKey

from .bucket_choice import BucketChoice, ExactRadiusUnavailable, needs_fast_statement
from .bucket_keys import KeySetup, NoKeySetup, ceremony_shape
from .bundling import ProvedPart, certificate_bundle
from .commands.radius_option import DEFAULT_EXACT_BUDGET, DEFAULT_EXACT_MAX_CONSTRAINTS
from .statement_sizes import SIZES_FILE, StatementSizes
from .key_store import DEFAULT_MAX_HOT_KEYS, RELATION_FILE, BucketKeys, KeyStore, exclusive_lock
from .workspace import ModelWorkspace

__all__ = ["BucketKeys", "DEFAULT_MAX_HOT_KEYS", "ExactRadiusUnavailable", "ProvedCertificate", "Prover",
           "RELATION_FILE", "Timings", "exclusive_lock", "needs_fast_statement"]

# How long a hybrid prover waits for its bound-search child (seconds on two cores: 0.2 to 5 on the paper
# models) before it searches itself: only a child that died or hung waits that long.
BOUND_SEARCH_SECONDS = 120.0
# How long the bound-search child sleeps before it searches: a customer whose exact radius enumeration gives
# sooner costs no search at all; one who gets the bound waits at most this much longer.
BOUND_SEARCH_GRACE = 1.0

Progress = Callable[[str], None]
StageCallback = Callable[[str, float], None]


def _quiet(_: str) -> None:
    pass


def _no_stage(_: str, __: float) -> None:
    pass


@dataclass(frozen=True)
class Timings:
    certify: float
    witness: float
    prove: float

    @property
    def online(self) -> float:
        return self.certify + self.witness + self.prove


@dataclass(frozen=True)
class ProvedCertificate:
    bundle: CertificateBundle
    certificate: Certificate
    timings: Timings
    n_constraints: int


@dataclass
class Prover:
    """Certificates with proofs for one committed model: certify, choose the statement, fetch its keys,
    prove, bundle."""

    workspace: ModelWorkspace
    db: Database
    backend: object = None
    progress: Progress = _quiet
    key_setup: KeySetup = field(default_factory=NoKeySetup)  # for buckets nobody has set up yet
    # "fast", "exact" or "bound": how this model's certificates are certified and proved; "hybrid": exact when
    # region enumeration finishes within `exact_budget` seconds and its statement has at most
    # `exact_max_constraints` constraints, else bound.
    radius: str = RadiusMode.FAST
    exact_budget: float = DEFAULT_EXACT_BUDGET
    exact_max_constraints: int = DEFAULT_EXACT_MAX_CONSTRAINTS
    # Bucket keys kept in memory, least recently used dropped first: the largest keys take gigabytes.
    max_hot_keys: int = DEFAULT_MAX_HOT_KEYS
    # Each bucket size is this many times the last (2 or 4) for buckets the card does not publish yet.
    bucket_growth: int = DEFAULT_BUCKET_GROWTH
    # Exact certificates proved slice by slice (one proof per slice, each in its own slice's bucket):
    # the largest circuit is the largest slice's, not all slices' together.
    per_slice: bool = False
    _model: FixedPointModel | None = field(default=None, init=False)
    _certifier: Certifier | None = field(default=None, init=False)

    def __post_init__(self) -> None:
        if self.radius not in RADIUS_MODES:
            raise ModelError(f"radius must be one of {', '.join(RADIUS_MODES)}, not {self.radius!r}")
        self.radius = RadiusMode(self.radius)
        if not self.exact_budget > 0:
            raise ModelError("the exact radius's budget must be a positive number of seconds")
        if isinstance(self.exact_max_constraints, bool) or not isinstance(self.exact_max_constraints, int) \
                or self.exact_max_constraints < 1:
            raise ModelError("the exact radius's largest statement must be a positive number of constraints")
        if self.per_slice is not False and (self.per_slice is not True or self.radius != RadiusMode.EXACT):
            raise ModelError("per-slice proofs need the exact radius (--radius exact)")
        if self.bucket_growth not in BUCKET_GROWTHS:
            raise ModelError(f"bucket growth must be one of {BUCKET_GROWTHS}, not {self.bucket_growth!r}")
        if self.backend is None:
            self.backend = get_backend()
        self.proof_system = Groth16(self.backend)
        self.salt = self.workspace.salt()
        self.statement_sizes = StatementSizes(self.workspace.root / "keys" / SIZES_FILE)
        self.key_store = KeyStore(self.workspace, self.backend, self.key_setup, progress=self.progress,
                                  max_hot_keys=self.max_hot_keys, missing_note=lambda shape: self.buckets.missing_keys_note(shape))

    @property
    def card(self) -> ModelCard:
        """The model's card as the key store last installed it."""
        return self.key_store.card

    @card.setter
    def card(self, card: ModelCard) -> None:
        self.key_store.card = card

    @property
    def model(self) -> FixedPointModel:
        if self._model is None:
            self._model = self.workspace.fixed_point()
        return self._model

    @property
    def certifier(self) -> Certifier:
        if self._certifier is None:
            self._certifier = Certifier(self.db, self.model, eps_bits=self.card.eps_scale_bits, keep_memo=True,
                                        radius=self.radius)
        return self._certifier

    @property
    def buckets(self) -> BucketChoice:
        """Which statement and bucket prove a certificate, on the current card."""
        return BucketChoice(lambda: self.card, self.model, RadiusMode(self.radius), self.per_slice,
                            self.bucket_growth, self.exact_max_constraints, self.statement_sizes.constraints)

    # ------------------------------------------------------ statement and keys
    def shape_for(self, region_slots: int, farkas_slots: int, radius: str | None = None,
                  per_slice: bool = False) -> StatementShape:
        return self.buckets.shape_for(region_slots, farkas_slots, radius, per_slice)

    def standing_shapes(self) -> list[StatementShape]:
        return self.buckets.standing_shapes()

    def shapes_for_certificate(self, certificate: Certificate) -> list[StatementShape]:
        return self.buckets.shapes_for_certificate(certificate)

    def shape_for_certificate(self, certificate: Certificate) -> StatementShape:
        return self.buckets.shape_for_certificate(certificate)

    def keys(self, shape: StatementShape) -> BucketKeys:
        return self.key_store.keys(shape)

    def bucket_dir(self, shape: StatementShape) -> Path:
        return self.key_store.bucket_dir(shape)

    def install_ceremony(self, ceremony: Ceremony, *, ptau: Path | None = None) -> BucketKeys:
        """Verify a finished ceremony for one of this model's buckets and use its final key."""
        shape = ceremony_shape(ceremony)
        if shape != self.shape_for(shape.region_slots, shape.farkas_slots, shape.radius):
            raise ModelError(f"{ceremony.directory} is for another circuit than bucket {shape.bucket} of this model")
        return self.key_store.install_ceremony(shape, ceremony, ptau=ptau)

    # ----------------------------------------------------------------- online
    def certify(self, query: Sequence[int]) -> Certificate:
        """The plaintext certificate of `query` in the prover's radius mode, approved by the checker."""
        if self.radius == RadiusMode.HYBRID:
            return self._certify_hybrid(query)
        if self.radius == RadiusMode.BOUND:
            return self._bound_certificate(query)
        certificate = self.certifier.certify(query).certificate
        try:
            check_certificate(self.model, certificate)
        except CertificationError as exc:  # never prove what the plaintext checker refuses
            raise CertificationError(f"internal: produced certificate fails its own check: {exc}") from exc
        return certificate

    def _certify_hybrid(self, query: Sequence[int]) -> Certificate:
        """The exact certificate when enumeration gives one within the budget and its statement is within the
        size, else the bound radius. The bound radius is searched for in a child process of its own while the
        enumeration runs in another (after a grace of BOUND_SEARCH_GRACE), and stopped as soon as the exact
        certificate is kept: a customer who gets the bound waits for the longer of the two (the search's
        share delayed by the grace), not for both; one whose exact radius comes within the grace costs no
        search at all."""
        alpha_bits = self.buckets.bound_shape().alpha_bits
        eps_bits = self.card.eps_scale_bits
        with ForkedCall(searched_radius, self.model, tuple(query), eps_bits, alpha_bits,
                        delay=BOUND_SEARCH_GRACE) as search:
            exact = exact_within(self.db.url, self.model, query, self.exact_budget, eps_bits=eps_bits)
            if exact is not None and exact.certificate.status == CERTIFIED:
                check_certificate(self.model, exact.certificate)
                if self.buckets.exact_fits(exact.certificate):
                    return exact.certificate
                self.progress(f"the exact radius's statement has more than {self.exact_max_constraints:,} "
                              "constraints: the bound radius instead")
            elif exact is None:
                self.progress(f"region enumeration did not give the exact radius within {self.exact_budget:g} s: "
                              "the bound radius instead")
            # a flip (eps 0) is proved by the bound statement, which needs no regions
            arrived, found = search.answer(search.started + BOUND_SEARCH_GRACE + BOUND_SEARCH_SECONDS)
        if arrived:  # else (the child died or hung) the search runs here
            remember_search(self.model, query, eps_bits, alpha_bits, found)
        return self._bound_certificate(query)

    def _bound_certificate(self, query: Sequence[int]) -> Certificate:
        """No regions: the bound radius, its eps confirmed in exact integers, with the slopes the card's bound
        statement takes."""
        alpha_bits = self.buckets.bound_shape().alpha_bits
        return bound_certificate(self.model, query, eps_bits=self.card.eps_scale_bits,
                                 alpha_bits=alpha_bits).certificate(self.model)

    def persistence_delta(self, delta: int | None) -> int | None:
        """The persistence lens's delta for a request (an int at the input scale; None: the card's default),
        None when the card has no such lens; ModelError when it cannot be proved."""
        try:
            return self.card.persistence_scaled_box(delta)
        except ValueError as exc:
            raise ModelError(str(exc)) from None

    def prove(self, query: IntVector, on_stage: StageCallback = _no_stage,
              persistence_delta: int | None = None) -> ProvedCertificate:
        """Certify `query` and prove it; `on_stage(words, fraction)` hears each step as it starts.
        `persistence_delta`: the persistence lens's box half-width at the input scale (the card's default
        when None)."""
        delta = self.persistence_delta(persistence_delta)
        t0 = time.perf_counter()
        on_stage("certifying (plaintext, from the precompute store)", 0.05)
        certificate = self.certify(query)
        t1 = time.perf_counter()
        shapes = self.shapes_for_certificate(certificate)
        on_stage(f"loading the keys of bucket {', '.join(dict.fromkeys(s.bucket for s in shapes))}", 0.2)
        keys = [self.keys(shape) for shape in shapes]  # loading (or setting up) keys is offline work
        per_slice = len(keys) > 1 or keys[0].shape.per_slice
        witness_s = prove_s = 0.0
        parts = []
        for part, bucket_keys in enumerate(keys):
            which = f" of slice {part + 1}/{len(keys)}" if per_slice else ""
            on_stage(f"building the statement witness{which}", 0.35 + 0.6 * part / len(keys))
            t_w = time.perf_counter()
            public, values = self._witness(certificate, bucket_keys.shape, part if per_slice else None, delta)
            t_p = time.perf_counter()
            on_stage(f"proving{which} ({bucket_keys.r1cs.n_constraints} constraints)",
                     0.35 + 0.6 * (part + 0.5) / len(keys))
            proof = self.proof_system.prove(RelationKey(bucket_keys.r1cs, bucket_keys.proving_key), public, values)
            witness_s += t_p - t_w
            prove_s += time.perf_counter() - t_p
            parts.append(ProvedPart(bucket_keys.shape, public, proof))
            del values
        bundle = certificate_bundle(self.card, self.model, certificate, parts)
        constraints = sum(k.r1cs.n_constraints for k in keys)
        return ProvedCertificate(bundle, certificate, Timings(t1 - t0, witness_s, prove_s), constraints)

    def _witness(self, certificate: Certificate, shape: StatementShape, part: int | None,
                 delta: int | None) -> tuple[list[int], list[int]]:
        """(public inputs, full assignment) of the statement of `shape` for `certificate` (slice `part`)."""
        public, witness = statement_inputs(self.model, self.salt, certificate, shape, part, persistence_delta=delta)
        cs = ConstraintSystem(with_values=True, keep_constraints=False)  # the relation is the bucket's own
        build_statement(cs, shape, public, witness)
        return public.field_elements(), cs.witness()


