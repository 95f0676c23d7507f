"""Which statement, and which bucket of it, proves a certificate.

A prover certifies with one radius mode (`fairness.radius.Radius`): "fast"
proves GeoCert's projection radius with the fast statement; "exact" the true
radius rounded down to 2^-t with the exact statement (its own buckets,
"k4-f4-exact"); "bound" the bound radius (linear bound propagation, bucket
"k1-f1-bound"); "hybrid" the exact radius where region enumeration gives it
within budget and its bucket is within the deployment's online size
(`exact_fits`: at most `exact_max_constraints` constraints, so that proving
it keeps to the online time and memory), else the bound radius, so it needs
the buckets of both statements (`standing_shapes`). When exact certification falls back to a fast
certificate (no counterexample could be exhibited), the fast statement proves
it only if the card publishes fast buckets, i.e. the bank has chosen to issue
lower bounds for this model; otherwise `ExactRadiusUnavailable`.

Within a statement, the published bucket with the fewest constraints that
holds the certificate is chosen, else the smallest bucket of the prover's
ladder (`statement.adapter.bucket_sizes`) that does, set up when first needed:
published buckets come first so that a card keeps serving every customer it
has keys for, whichever ladder made them.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from commitments.card import CircuitBucket, ModelCard
from fairness.certificate import CAP, CERTIFIED, COUNTEREXAMPLE, Certificate
from fairness.errors import CertificationError
from fairness.fixed_point import FixedPointModel
from fairness.radius import Radius
from statement import StatementShape
from statement.adapter import bucket_level, bucket_sizes, required_slots, slice_slots
from statement.size import estimated_constraints

from .bucket_keys import card_shape
from .commands.radius_option import DEFAULT_EXACT_MAX_CONSTRAINTS


class ExactRadiusUnavailable(CertificationError):
    """An exact-radius prover got a fast certificate (no counterexample could be exhibited for the
    query) and the model's card publishes no fast bucket to prove a lower bound with."""


def needs_fast_statement(certificate: Certificate) -> bool:
    """Whether only the fast statement can prove `certificate`: its minimality is a projection-distance
    row (a fast certificate), not a counterexample, the cap or a flip."""
    return (certificate.status == CERTIFIED and certificate.attainment is not None
            and certificate.attainment.kind not in (CAP, COUNTEREXAMPLE))


def _fewest_constraints(fitting: list[CircuitBucket]) -> CircuitBucket:
    return min(fitting, key=lambda b: (b.n_constraints, b.bucket))


@dataclass(frozen=True)
class BucketChoice:
    """The statement shapes a prover of `radius` proves with, read from the current card (`card()`: the key
    store installs buckets on it as they are set up)."""

    card: Callable[[], ModelCard]
    model: FixedPointModel
    radius: Radius
    per_slice: bool
    bucket_growth: int
    exact_max_constraints: int = DEFAULT_EXACT_MAX_CONSTRAINTS
    # The constraints of a bucket the card does not publish (the prover's: read off lines kept beside the keys)
    estimate: Callable[[StatementShape], int] = estimated_constraints

    def shape_for(self, region_slots: int, farkas_slots: int, radius: str | None = None,
                  per_slice: bool = False) -> StatementShape:
        """The statement shape of bucket (K, F) of `radius` (default: the prover's), whole or per slice."""
        return card_shape(self.card(), self.model, region_slots, farkas_slots, radius or self.radius, per_slice)

    def bound_shape(self) -> StatementShape:
        """The bound statement's single bucket."""
        return self.shape_for(1, 1, Radius.BOUND)

    def standing_shapes(self) -> list[StatementShape]:
        """The buckets this prover needs whatever its customers: the bound radius's single bucket for the bound
        and hybrid modes (hybrid proves with it whenever enumeration overruns its budget, and every flip). The
        exact buckets a hybrid prover also needs depend on its customers' covering sets."""
        return [self.bound_shape()] if self.radius in (Radius.BOUND, Radius.HYBRID) else []

    def sized_families(self) -> list[StatementShape]:
        """The statement families whose sizes this prover reads before proving (hybrid: the exact statement's,
        for `exact_fits`); learnt offline, with the keys, so that no customer waits for them."""
        return [self.shape_for(4, 4, Radius.EXACT)] if self.radius == Radius.HYBRID else []

    def missing_keys_note(self, shape: StatementShape) -> str:
        """What the bank must set up, said beside a bucket nobody has set up: a hybrid model needs the keys of
        both statements, which one certificate alone does not show."""
        if self.radius != Radius.HYBRID:
            return ""
        return (" (radius hybrid proves exact radii in the exact statement's buckets, k<K>-f<F>-exact, and falls "
                f"back to the bound statement's bucket {self.bound_shape().bucket}: set up both)")

    def statement_radius(self, certificate: Certificate) -> Radius:
        """The statement that proves `certificate`: the prover's radius, except a fast certificate from exact
        certification (its fallback), which the fast statement proves if the card publishes fast buckets;
        ExactRadiusUnavailable otherwise. Hybrid provers prove the exact certificates they keep with the
        exact statement."""
        if self.radius == Radius.HYBRID:
            return Radius.EXACT
        if self.radius == Radius.FAST or not needs_fast_statement(certificate):
            return self.radius
        card = self.card()
        if any(b.shape.radius == Radius.FAST for b in card.circuits):
            return Radius.FAST
        raise ExactRadiusUnavailable(
            f"model {card.model_id} proves exact radii only (its card publishes no fast bucket), and no "
            "counterexample could be exhibited for this query, so its radius is only known as a lower bound")

    def constraints_of(self, shape: StatementShape) -> int:
        """The constraints of `shape`'s statement: the card's count for a published bucket, else the estimate."""
        published = [b for b in self.card().circuits if b.bucket == shape.bucket]
        return published[0].n_constraints if published else self.estimate(shape)

    def exact_fits(self, certificate: Certificate) -> bool:
        """Whether a hybrid prover keeps the exact `certificate`: every statement proving it has at most
        `exact_max_constraints` constraints (else the bound radius is proved instead)."""
        return all(self.constraints_of(shape) <= self.exact_max_constraints
                   for shape in self.shapes_for_certificate(certificate))

    def proves_per_slice(self, certificate: Certificate) -> bool:
        """Whether `certificate` is proved slice by slice: per-slice provers do so for every exact one."""
        return self.per_slice and self.statement_radius(certificate) == Radius.EXACT

    def shapes_for_certificate(self, certificate: Certificate) -> list[StatementShape]:
        """Every shape that proves `certificate`: one per slice, or the one whole statement."""
        if self.radius == Radius.BOUND or (self.radius == Radius.HYBRID and not certificate.slices):
            return [self.bound_shape()]  # hybrid: the bound certificate, or a flip (no regions)
        if self.proves_per_slice(certificate):
            return [self.shape_for_slice(certificate, si) for si in range(len(self.model.slices()))]
        return [self.shape_for_certificate(certificate)]

    def shape_for_certificate(self, certificate: Certificate) -> StatementShape:
        """The shape that proves `certificate` whole: the published bucket of the right statement with the
        fewest constraints that holds it, else the smallest bucket of the ladder that does."""
        radius = self.statement_radius(certificate)
        regions, entries = required_slots(certificate)
        fitting = [b for b in self.card().circuits if b.shape.radius == radius
                   and b.shape.region_slots >= regions and b.shape.farkas_slots >= entries]
        if fitting:
            best = _fewest_constraints(fitting)
            return self.shape_for(best.shape.region_slots, best.shape.farkas_slots, radius)
        region_slots, farkas_slots = bucket_sizes(certificate, self.bucket_growth)
        return self.shape_for(region_slots, farkas_slots, radius)

    def shape_for_slice(self, certificate: Certificate, slice_index: int) -> StatementShape:
        """The per-slice shape that proves slice `slice_index` of `certificate`: the published per-slice
        bucket with the fewest constraints that holds that slice, else the smallest on the ladder."""
        regions, entries = slice_slots(certificate, slice_index)
        fitting = [b for b in self.card().circuits if b.shape.per_slice and b.shape.radius == Radius.EXACT
                   and b.shape.region_slots >= regions and b.shape.farkas_slots >= entries]
        if fitting:
            best = _fewest_constraints(fitting)
            return self.shape_for(best.shape.region_slots, best.shape.farkas_slots, Radius.EXACT, per_slice=True)
        return self.shape_for(bucket_level(regions, self.bucket_growth), bucket_level(entries, self.bucket_growth),
                              Radius.EXACT, per_slice=True)
