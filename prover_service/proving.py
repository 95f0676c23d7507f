"""From a customer's query to a certificate bundle: certify, witness, prove.

Offline (per model and bucket): the statement circuit of the bucket's shape
is built without values, its Groth16 keys are set up once and cached under
the model directory, and the bucket's verifying key is added to the card.
Online (per query): plaintext certification from the precompute store, the
checker's approval, the statement witness, one Groth16 proof, the bundle.

A prover certifies with one radius (`Prover.radius`, the deployment's choice
for the model): "fast" proves GeoCert's projection radius with the fast
statement; "exact" proves the true radius rounded down to 2^-t with the
exact statement (its own buckets, "k4-f4-exact", keys and card entries); "bound"
proves the bound radius (linear bound propagation, bucket "k1-f1-bound");
"hybrid" (the commands' and the service's default) proves the exact radius
when region enumeration gives it within `exact_budget` seconds, else the
bound radius, so it needs the buckets of both statements (`standing_shapes`).
When exact certification falls back to a fast certificate (no counterexample
could be exhibited), the fast statement proves it only if the card publishes
fast buckets, i.e. the bank has chosen to issue lower bounds for this model;
otherwise `ExactRadiusUnavailable`.
"""
from __future__ import annotations

import fcntl
import json
import shutil
import time
import uuid
from collections import OrderedDict
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Callable, Iterator, Sequence

from circuits.backends import get_backend
from circuits.builder import ConstraintSystem
from circuits.groth16 import ProvingKey, VerifyingKey, proof_to_bytes, r1cs_digest, vk_digest
from circuits.relation import R1CS
from circuits.relation_arrays import ArrayR1CS
from circuits.snarkjs.json_formats import proof_to_json, public_to_json, verifying_key_to_json
from circuits.snarkjs.ceremony import Ceremony
from circuits.field import to_signed
from commitments.bundle import (CertificateBundle, CounterfactualSpread, FlipSlice, PersistenceBound, PersistentBias,
                                Radius, SlicePart)
from commitments.claims import ClaimError, bundle_claims
from commitments.card import BucketShape, CircuitBucket, SetupRecord
from fairness.certificate import CAP, CERTIFIED, COUNTEREXAMPLE, FLIP, Certificate
from fairness.bound_radius import bound_certificate
from fairness.checker import check_certificate
from fairness.errors import CertificationError, ModelError
from fairness.fixed_point import FixedPointModel, IntVector
from fairness.radius import RADIUS_MODES
from fairness.radius import Radius as RadiusMode  # commitments.bundle.Radius is eps's value
from offline_precompute.certify import Certifier, exact_within
from offline_precompute.db import Database
from statement import StatementShape, build_statement, statement_relation
from statement.adapter import (BUCKET_GROWTHS, DEFAULT_BUCKET_GROWTH, bucket_level, bucket_sizes, required_slots,
                               slice_slots, statement_inputs)
from statement.proof_system import Groth16, RelationKey

from .bucket_keys import (ZKEY_FILE, InstalledKeys, KeySetup, KeysNotReady, NoKeySetup, card_shape, ceremony_shape,
                          keys_from_ceremony, load_keys, save_keys)
from .commands.radius_option import DEFAULT_EXACT_BUDGET
from .workspace import ModelWorkspace


Progress = Callable[[str], None]
StageCallback = Callable[[str, float], None]


def _quiet(_: str) -> None:
    pass


def _no_stage(_: str, __: float) -> None:
    pass


DEFAULT_MAX_HOT_KEYS = 4


class ExactRadiusUnavailable(CertificationError):
    """An exact-radius prover got a fast certificate (no counterexample could be exhibited for the
    query) and the model's card publishes no fast bucket to prove a lower bound with."""


def needs_fast_statement(certificate: Certificate) -> bool:
    """Whether only the fast statement can prove `certificate`: its minimality is a projection-distance
    row (a fast certificate), not a counterexample, the cap or a flip."""
    return (certificate.status == CERTIFIED and certificate.attainment is not None
            and certificate.attainment.kind not in (CAP, COUNTEREXAMPLE))


# A bucket's circuit in the prover's arrays, saved under its `r1cs_digest` (see Prover.keys).
RELATION_FILE = "relation.npz"


@dataclass(frozen=True)
class BucketKeys:
    shape: StatementShape
    r1cs: ArrayR1CS  # in arrays: every proof evaluates its rows in bulk
    proving_key: ProvingKey
    verifying_key: VerifyingKey


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
    """Certificates with proofs for one committed model."""

    workspace: ModelWorkspace
    db: Database
    backend: object = None
    progress: Progress = _quiet
    key_setup: KeySetup = field(default_factory=NoKeySetup)  # for buckets nobody has set up yet
    # "fast", "exact" or "bound": how this model's certificates are certified and proved; "hybrid": exact when
    # region enumeration finishes within `exact_budget` seconds, else bound.
    radius: str = RadiusMode.FAST
    exact_budget: float = DEFAULT_EXACT_BUDGET
    # Bucket keys kept in memory, least recently used dropped first: the largest keys take gigabytes.
    max_hot_keys: int = DEFAULT_MAX_HOT_KEYS
    # Each bucket size is this many times the last (2 or 4) for buckets the card does not publish yet.
    bucket_growth: int = DEFAULT_BUCKET_GROWTH
    # Exact certificates proved slice by slice (one proof per slice, each in its own slice's bucket):
    # the largest circuit is the largest slice's, not all slices' together.
    per_slice: bool = False
    _model: FixedPointModel | None = field(default=None, init=False)
    _certifier: Certifier | None = field(default=None, init=False)
    _keys: OrderedDict[str, BucketKeys] = field(default_factory=OrderedDict, init=False)

    def __post_init__(self) -> None:
        if self.max_hot_keys < 1:
            raise ModelError(f"max_hot_keys must be at least 1, not {self.max_hot_keys}")
        if self.radius not in RADIUS_MODES:
            raise ModelError(f"radius must be one of {', '.join(RADIUS_MODES)}, not {self.radius!r}")
        self.radius = RadiusMode(self.radius)
        if not self.exact_budget > 0:
            raise ModelError("the exact radius's budget must be a positive number of seconds")
        if self.per_slice is not False and (self.per_slice is not True or self.radius != RadiusMode.EXACT):
            raise ModelError("per-slice proofs need the exact radius (--radius exact)")
        if self.bucket_growth not in BUCKET_GROWTHS:
            raise ModelError(f"bucket growth must be one of {BUCKET_GROWTHS}, not {self.bucket_growth!r}")
        if self.backend is None:
            self.backend = get_backend()
        self.proof_system = Groth16(self.backend)
        self.card = self.workspace.card()
        self.salt = self.workspace.salt()

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

    # ------------------------------------------------------------------ keys
    def shape_for(self, region_slots: int, farkas_slots: int, radius: str | None = None,
                  per_slice: bool = False) -> StatementShape:
        """The statement shape of bucket (K, F) of `radius` (default: the prover's), whole or per slice."""
        return card_shape(self.card, self.model, region_slots, farkas_slots, radius or self.radius, per_slice)

    def proves_per_slice(self, certificate: Certificate) -> bool:
        """Whether `certificate` is proved slice by slice: per-slice provers do so for every exact one."""
        return self.per_slice and self.statement_radius(certificate) == RadiusMode.EXACT

    def shape_for_slice(self, certificate: Certificate, slice_index: int) -> StatementShape:
        """The per-slice shape that proves slice `slice_index` of `certificate`: the published per-slice
        bucket with the fewest constraints that holds that slice, else the smallest on the ladder."""
        regions, entries = slice_slots(certificate, slice_index)
        fitting = [b for b in self.card.circuits if b.shape.per_slice and b.shape.radius == RadiusMode.EXACT
                   and b.shape.region_slots >= regions and b.shape.farkas_slots >= entries]
        if fitting:
            best = min(fitting, key=lambda b: (b.n_constraints, b.bucket))
            return self.shape_for(best.shape.region_slots, best.shape.farkas_slots, RadiusMode.EXACT, per_slice=True)
        return self.shape_for(bucket_level(regions, self.bucket_growth), bucket_level(entries, self.bucket_growth),
                              RadiusMode.EXACT, per_slice=True)

    def standing_shapes(self) -> list[StatementShape]:
        """The buckets this prover needs whatever its customers: the bound radius's single bucket for the bound
        and hybrid modes (hybrid proves with it whenever enumeration overruns its budget, and every flip). The
        exact buckets a hybrid prover also needs depend on its customers' covering sets."""
        return [self.shape_for(1, 1, RadiusMode.BOUND)] if self.radius in (RadiusMode.BOUND, RadiusMode.HYBRID) else []

    def missing_keys_note(self, shape: StatementShape) -> str:
        """What the bank must set up, said beside a bucket nobody has set up: a hybrid model needs the keys of
        both statements, which one certificate alone does not show."""
        if self.radius != RadiusMode.HYBRID:
            return ""
        return (" (radius hybrid proves exact radii in the exact statement's buckets, k<K>-f<F>-exact, and falls "
                f"back to the bound statement's bucket {self.shape_for(1, 1, RadiusMode.BOUND).bucket}: set up both)")

    def shapes_for_certificate(self, certificate: Certificate) -> list[StatementShape]:
        """Every shape that proves `certificate`: one per slice, or the one whole statement."""
        if self.radius == RadiusMode.BOUND or (self.radius == RadiusMode.HYBRID and not certificate.slices):
            return [self.shape_for(1, 1, RadiusMode.BOUND)]  # hybrid: the bound certificate, or a flip (no regions)
        if self.proves_per_slice(certificate):
            return [self.shape_for_slice(certificate, si) for si in range(len(self.model.slices()))]
        return [self.shape_for_certificate(certificate)]

    def statement_radius(self, certificate: Certificate) -> str:
        """The statement that proves `certificate`: the prover's radius, except a fast certificate
        from exact certification (its fallback), which the fast statement proves if the card
        publishes fast buckets; ExactRadiusUnavailable otherwise. Hybrid provers prove the exact
        certificates they keep with the exact statement."""
        if self.radius == RadiusMode.HYBRID:
            return RadiusMode.EXACT
        if self.radius == RadiusMode.FAST or not needs_fast_statement(certificate):
            return self.radius
        if any(b.shape.radius == RadiusMode.FAST for b in self.card.circuits):
            return RadiusMode.FAST
        raise ExactRadiusUnavailable(
            f"model {self.card.model_id} proves exact radii only (its card publishes no fast bucket), and no "
            "counterexample could be exhibited for this query, so its radius is only known as a lower bound")

    def shape_for_certificate(self, certificate: Certificate) -> StatementShape:
        """The shape that proves `certificate`: the published bucket of the right statement with the
        fewest constraints that holds it, else the smallest bucket of the prover's ladder that does
        (set up when first needed). Published buckets come first so that a card keeps serving every
        customer it has keys for, whichever ladder made them."""
        radius = self.statement_radius(certificate)
        regions, entries = required_slots(certificate)
        fitting = [b for b in self.card.circuits if b.shape.radius == radius
                   and b.shape.region_slots >= regions and b.shape.farkas_slots >= entries]
        if fitting:
            best = min(fitting, key=lambda b: (b.n_constraints, b.bucket))
            return self.shape_for(best.shape.region_slots, best.shape.farkas_slots, radius)
        region_slots, farkas_slots = bucket_sizes(certificate, self.bucket_growth)
        return self.shape_for(region_slots, farkas_slots, radius)

    def keys(self, shape: StatementShape) -> BucketKeys:
        """The bucket's keys: from memory, from the model directory, or set up now by `key_setup`."""
        cached = self._keys.get(shape.bucket)
        if cached is not None:
            self._keys.move_to_end(shape.bucket)
            return cached
        directory = self.bucket_dir(shape)
        published = self._load_published(shape, directory)
        if published is not None:
            return self._remember(published)
        r1cs = statement_relation(shape)
        # Workers in other processes may need the same new bucket at once: one sets it up,
        # the others wait and load it; the card is rewritten under the same lock.
        with exclusive_lock(self.workspace.root / "keys" / ".setup.lock"):
            if (directory / "verification_key.json").is_file() and (directory / "proving_key").is_dir():
                pk, vk, record = self._load_keys(directory)
            else:
                if any(b.bucket == shape.bucket for b in self.card.circuits):
                    # The card already publishes this bucket's verifying key: new keys would not match it.
                    raise ModelError(f"the card publishes bucket {shape.bucket}, but its keys are missing from "
                                     f"{directory}: restore them from backup")
                self.progress(f"setting up keys for bucket {shape.bucket} ({r1cs.n_constraints} constraints)")
                installed = self._set_up(shape, r1cs, directory)
                pk, vk, record = installed.proving_key, installed.verifying_key, installed.setup
                self._save_keys(directory, shape, installed)
            self._publish_bucket(shape, r1cs, vk, record)
        relation = ArrayR1CS.from_r1cs(r1cs)
        try:
            relation.save(directory / RELATION_FILE, r1cs_digest(relation))
        except OSError as exc:  # a read-only model directory: the circuit is rebuilt on every load
            self.progress(f"could not save the circuit of bucket {shape.bucket} for faster loading: {exc}")
        return self._remember(BucketKeys(shape, relation, pk, vk))

    def _set_up(self, shape: StatementShape, r1cs: R1CS, directory: Path) -> InstalledKeys:
        """The bucket's keys from `key_setup`; a setup that refuses says which buckets this radius needs."""
        try:
            return self.key_setup(self.card, shape, r1cs, directory, self.backend, self.progress)
        except KeysNotReady:
            raise  # the service queues the bucket's setup itself
        except ModelError as exc:
            note = self.missing_keys_note(shape)
            if not note:
                raise
            raise ModelError(f"{exc}{note}") from None

    def _load_published(self, shape: StatementShape, directory: Path) -> BucketKeys | None:
        """A published bucket straight from disk, without rebuilding its circuit (the
        slow part of loading a bucket): only when the card publishes this very shape,
        the saved relation hashes to the card's `r1cs_digest` and the verifying key on
        disk is the card's. Anything else (None) takes the path that rebuilds and says why."""
        published = next((b for b in self.card.circuits if b.bucket == shape.bucket), None)
        if published is None or self.card.statement_shape_json(published) != json.loads(json.dumps(shape.to_json())):
            return None
        relation = ArrayR1CS.load(directory / RELATION_FILE, published.r1cs_digest)
        if relation is None or r1cs_digest(relation) != published.r1cs_digest:
            return None
        if not ((directory / "verification_key.json").is_file() and (directory / "proving_key").is_dir()):
            return None
        pk, vk, _ = self._load_keys(directory)
        if vk_digest(vk) != published.verifying_key_digest:
            return None
        return BucketKeys(shape, relation, pk, vk)

    def _remember(self, keys: BucketKeys) -> BucketKeys:
        self._keys[keys.shape.bucket] = keys
        self._keys.move_to_end(keys.shape.bucket)
        while len(self._keys) > self.max_hot_keys:
            self._keys.popitem(last=False)
        return keys

    def bucket_dir(self, shape: StatementShape) -> Path:
        # Keyed by the full shape digest: a recommitted model with other bounds gets new keys.
        return self.workspace.keys_dir(f"{shape.bucket}-{shape.digest()[:12]}")

    def install_ceremony(self, ceremony: Ceremony, *, ptau: Path | None = None) -> BucketKeys:
        """Verify a finished ceremony for one of this model's buckets and use its final key."""
        shape = ceremony_shape(ceremony)
        expected = self.shape_for(shape.region_slots, shape.farkas_slots, shape.radius)
        if shape != expected:
            raise ModelError(f"{ceremony.directory} is for another circuit than bucket {shape.bucket} of this model")
        r1cs = statement_relation(shape)
        installed = keys_from_ceremony(ceremony, shape, r1cs, self.backend, ptau=ptau, progress=self.progress)
        with exclusive_lock(self.workspace.root / "keys" / ".setup.lock"):
            published = next((b for b in self.card.circuits if b.bucket == shape.bucket), None)
            if published is not None:
                raise ModelError(f"the card already publishes bucket {shape.bucket}; installing other keys would "
                                 "change the card under issued certificates (recommit the model instead)")
            directory = self.bucket_dir(shape)
            if directory.exists():
                shutil.rmtree(directory)  # unpublished keys of an earlier attempt
            self._save_keys(directory, shape, installed)
            shutil.copyfile(ceremony.current_key_path, directory / ZKEY_FILE)
            self._publish_bucket(shape, r1cs, installed.verifying_key, installed.setup)
        self._keys.pop(shape.bucket, None)
        return self.keys(shape)

    def _save_keys(self, directory: Path, shape: StatementShape, installed: InstalledKeys) -> None:
        save_keys(directory, shape.to_json(), installed, self.backend)

    def _load_keys(self, directory: Path) -> tuple[ProvingKey, VerifyingKey, SetupRecord]:
        return load_keys(directory, self.backend)

    def _publish_bucket(self, shape: StatementShape, r1cs: R1CS, vk: VerifyingKey, setup: SetupRecord) -> None:
        bucket = CircuitBucket(
            bucket=shape.bucket,
            shape=BucketShape(region_slots=shape.region_slots, farkas_slots=shape.farkas_slots,
                              eps_cap=shape.eps_cap, farkas_bits=shape.farkas_bits,
                              boundary_bits=shape.boundary_bits, weight_bits=shape.weight_bits,
                              bias_bits=shape.bias_bits, radius=shape.radius, per_slice=shape.per_slice,
                              alpha_bits=shape.alpha_bits),
            n_constraints=r1cs.n_constraints,
            n_public=r1cs.n_public,
            r1cs_digest=r1cs_digest(r1cs),
            verifying_key_digest=vk_digest(vk),
            verifying_key=verifying_key_to_json(vk),
            setup=setup,
        )
        if self.card.statement_shape_json(bucket) != json.loads(json.dumps(shape.to_json())):
            # An auditor rebuilds the circuit from the card: the card must name this very shape.
            raise ModelError(f"bucket {shape.bucket}: the card's model fields do not describe the statement shape")
        published = next((b for b in self.card.circuits if b.bucket == bucket.bucket), None)
        if published is not None and published.verifying_key_digest != bucket.verifying_key_digest:
            raise ModelError(f"the keys of bucket {bucket.bucket} on disk do not match the verifying key the card "
                             "publishes: restore the published keys")
        card = self.workspace.card().with_bucket(bucket)
        if card != self.card or card.circuits != self.workspace.card().circuits:
            self.workspace.save_card(card)
        self.card = card

    # ----------------------------------------------------------------- online
    def certify(self, query: Sequence[int]) -> Certificate:
        if self.radius == RadiusMode.HYBRID:
            exact = exact_within(self.db.url, self.model, query, self.exact_budget, eps_bits=self.card.eps_scale_bits)
            if exact is not None and exact.certificate.status == CERTIFIED:
                check_certificate(self.model, exact.certificate)
                return exact.certificate
            if exact is None:
                self.progress(f"region enumeration did not give the exact radius within {self.exact_budget:g} s: "
                              "the bound radius instead")
            # a flip (eps 0) is proved by the bound statement, which needs no regions
        if self.radius in (RadiusMode.BOUND, RadiusMode.HYBRID):
            # no regions: the bound radius, its eps confirmed in exact integers, with the slopes the card's bound
            # statement takes
            alpha_bits = self.shape_for(1, 1, RadiusMode.BOUND).alpha_bits
            return bound_certificate(self.model, query, eps_bits=self.card.eps_scale_bits,
                                     alpha_bits=alpha_bits).certificate(self.model)
        certificate = self.certifier.certify(query).certificate
        try:
            check_certificate(self.model, certificate)
        except CertificationError as exc:  # never prove what the plaintext checker refuses
            raise CertificationError(f"internal: produced certificate fails its own check: {exc}") from exc
        return certificate

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
        names = ", ".join(dict.fromkeys(shape.bucket for shape in shapes))
        on_stage(f"loading the keys of bucket {names}", 0.2)
        keys = [self.keys(shape) for shape in shapes]
        # key loading (or setup) is offline work: not counted online
        witness_s = prove_s = 0.0
        proved = []
        per_slice = len(keys) > 1 or keys[0].shape.per_slice
        for part, bucket_keys in enumerate(keys):
            which = f" of slice {part + 1}/{len(keys)}" if per_slice else ""
            on_stage(f"building the statement witness{which}", 0.35 + 0.6 * part / len(keys))
            t_w = time.perf_counter()
            public, witness = statement_inputs(self.model, self.salt, certificate, bucket_keys.shape,
                                               part if per_slice else None, persistence_delta=delta)
            cs = ConstraintSystem(with_values=True, keep_constraints=False)  # the relation is bucket_keys.r1cs
            build_statement(cs, bucket_keys.shape, public, witness)
            values = cs.witness()
            t_p = time.perf_counter()
            on_stage(f"proving{which} ({bucket_keys.r1cs.n_constraints} constraints)",
                     0.35 + 0.6 * (part + 0.5) / len(keys))
            proof = self.proof_system.prove(RelationKey(bucket_keys.r1cs, bucket_keys.proving_key),
                                            public.field_elements(), values)
            witness_s += t_p - t_w
            prove_s += time.perf_counter() - t_p
            proved.append((bucket_keys, public.field_elements(), proof))
            del cs, values
        bundle = self._bundle(certificate, *proved[0])
        if per_slice:
            bundle = bundle.model_copy(update={"parts": tuple(
                SlicePart(slice_index=i, bucket=k.shape.bucket, proof=proof_to_json(p), proof_hex=proof_to_bytes(p).hex())
                for i, (k, _, p) in enumerate(proved) if i)})
        try:  # never hand out a bundle whose readable fields a customer would refuse
            bundle_claims(bundle, self.card)
        except ClaimError as exc:
            raise CertificationError(f"internal: bundle contradicts its own public signals: {exc}") from exc
        constraints = sum(k.r1cs.n_constraints for k, _, _ in proved)
        return ProvedCertificate(bundle, certificate, Timings(t1 - t0, witness_s, prove_s), constraints)

    def _bundle(self, certificate: Certificate, keys: BucketKeys, public: Sequence[int], proof) -> CertificateBundle:
        card = self.card
        flip = None
        if certificate.status == FLIP and certificate.flip is not None:
            index = certificate.flip.slice_index
            values = tuple(keys.shape.slices[index])
            flip = FlipSlice(index=index, values=values, labels=self.model.slice_labels(values))
        return CertificateBundle(
            certificate_id=str(uuid.uuid4()),
            issued_at=datetime.now(timezone.utc).isoformat(timespec="seconds"),
            model_id=card.model_id,
            card_digest=card.digest(),
            bucket=keys.shape.bucket,
            query=tuple(certificate.query),
            decision=certificate.decision,
            decision_label=card.architecture.class_labels[certificate.decision],
            status="counterfactual_flip" if certificate.status == FLIP else "certified",
            flip_slice=flip,
            eps=Radius(numerator=certificate.eps, scale_bits=certificate.eps_bits,
                       capped=certificate.status != FLIP and certificate.eps == keys.shape.eps_cap),
            proof=proof_to_json(proof),
            public_signals=tuple(public_to_json(public)),
            proof_hex=proof_to_bytes(proof).hex(),
            spread=self._spread(keys.shape, public),
            persistence=self._persistence(keys.shape, public),
        )

    def _spread(self, shape: StatementShape, public: Sequence[int]) -> CounterfactualSpread | None:
        """The bundle's readable spread: the statement's spread inputs, with their labels."""
        if not shape.spread:
            return None
        at = 5 + shape.n_inputs
        decisions = tuple(int(v) for v in public[at:at + shape.n_slices])
        labels = self.card.architecture.class_labels
        return CounterfactualSpread(decisions=decisions, decision_labels=tuple(labels[d] for d in decisions),
                                    distinct_decisions=len(set(decisions)),
                                    score_buckets=int(public[at + shape.n_slices]))

    def _persistence(self, shape: StatementShape, public: Sequence[int]) -> PersistentBias | None:
        """The bundle's readable persistence bounds: the statement's lens inputs, with their labels."""
        if not shape.persistence:
            return None
        at = 5 + shape.n_inputs + shape.n_spread_public
        values = [to_signed(int(v)) for v in public[at:at + shape.n_persistence_public]]
        query = [to_signed(int(v)) for v in public[5:5 + shape.n_inputs]]
        bounds = []
        for i, (a, point) in enumerate(shape.persistence_pairs):
            feature = self.model.sensitive[a]
            lower, upper = values[1 + 2 * i], values[2 + 2 * i]
            own = feature.point_of(query) == point
            status = ("own" if own else "favoured" if lower > 0 else "disfavoured" if upper < 0 else "inconclusive")
            bounds.append(PersistenceBound(attribute=feature.name, value=point[0] if feature.width == 1 else point,
                                           label=feature.label_of(point), lower=lower, upper=upper, status=status))
        return PersistentBias(delta=values[0], bounds=tuple(bounds))


@contextmanager
def exclusive_lock(path: Path) -> Iterator[None]:
    """An advisory lock on `path` across processes (POSIX flock), released on exit."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)
