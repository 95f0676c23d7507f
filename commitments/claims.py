"""What a certificate says, derived from the proof's public signals and the card alone.

The Groth16 proof speaks only of its public signals. Everything a customer is
shown (decision and its label, radius, "whole domain", status, flipping slice
and its labels, the query) must therefore be a function of those signals and
of the pinned card, computed here exactly: every signal is a canonical
decimal below R, never reduced; a value that could only be reached by
wrapping around the field is refused. A bundle's own readable fields are then
compared with the derived ones, and any disagreement is refused rather than
printed.

Signals, in order (docs/STATEMENT.md):
    commitment, decision, E, status, flip slice index, query[0..n-1]
then, when the card proves the spread lens, one decision per slice and the
number of distinct margin buckets, when it proves the persistence lens,
delta and (lower, upper) per value of every sensitive feature (signed), and,
under a per-slice bucket, the slice the proof covers. A per-slice
certificate is one proof per slice (the bundle's own is slice 0's, `parts`
the others, in order), every one under a per-slice exact bucket of the card,
all with the same signals but the last: its claims are those of slice 0's
proof, and a bundle missing a slice, repeating one, or mixing in a whole
statement is refused.

Whether eps is exact is not a signal: it is what the statement the proof
verified under proves, i.e. the `radius` of the bucket whose verifying key
accepted the proof, read from the pinned card (the card binds each bucket's
shape to its R1CS digest and verifying key; `fairproof audit-keys` and the
ceremony's contributors check that binding). No other field says it.

Depends on pydantic only: the verifier client imports it.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from fractions import Fraction
from typing import Sequence

from circuits.field import R

from .bundle import (STATUS_CERTIFIED, STATUS_FLIP, STATUS_NAMES, CertificateBundle, CounterfactualSpread, FlipSlice,
                     PersistenceBound, PersistenceStatus, PersistentBias, radius_decimal)
from .canonical import NonCanonical, parse_decimal
from .card import (BOUND_RADIUS, EXACT_RADIUS, RELU_NETWORK, TREE_ENSEMBLE, CircuitBucket, ModelCard, ModelKind,
                   PersistenceLensCard, RadiusKind, SpreadLensCard)

HEAD_SIGNALS = 5  # commitment, decision, E, status, flip index
# How a bound radius is reached, by model kind (the words every verifier prints).
BOUND_METHOD: dict[str, str] = {RELU_NETWORK: "linear bound propagation",
                                TREE_ENSEMBLE: "the worst reachable leaf of each tree"}
BOUND_EXPLAINED: dict[str, str] = {RELU_NETWORK: "linear bound propagation through the network",
                                   TREE_ENSEMBLE: "the worst leaf each tree can reach within eps, summed"}
COMMITTED: dict[str, str] = {RELU_NETWORK: "the weights", TREE_ENSEMBLE: "the trees"}
_HALF_R = (R - 1) // 2


class ClaimError(ValueError):
    """Public signals that no honest certificate under this card can have (the message names the signal).

    `code` is the rule's stable reason code (docs/VERIFYING.md), the same in every verifier."""

    def __init__(self, message: str, code: str):
        super().__init__(message)
        self.code = code


@dataclass(frozen=True)
class SpreadClaims:
    """The spread lens's claims: each slice's decision at the query, and how many distinct margin
    buckets (of `bucket_width` / 2^logit_scale_bits logits, for the favourable class) they fall in."""

    decisions: tuple[int, ...]
    decision_labels: tuple[str, ...]
    slice_labels: tuple[tuple[str, ...], ...]
    score_buckets: int
    favourable_class: int
    bucket_width: int
    logit_scale_bits: int

    @property
    def distinct_decisions(self) -> int:
        return len(set(self.decisions))

    @property
    def bucket_width_decimal(self) -> str:
        return radius_decimal(self.bucket_width, self.logit_scale_bits)

    def readable(self) -> CounterfactualSpread:
        """The bundle field these claims stand for."""
        return CounterfactualSpread(decisions=self.decisions, decision_labels=self.decision_labels,
                                    distinct_decisions=self.distinct_decisions, score_buckets=self.score_buckets)


# A persistence bound is a signed integer the circuit range-checks far below this (statement.persistence):
# a signal standing for anything larger could only be reached by wrapping around the field.
PERSISTENCE_BOUND_LIMIT = 1 << 250


@dataclass(frozen=True)
class PersistenceClaims:
    """The persistence lens's claims: delta (at the input scale) and, per value of every sensitive
    feature (`ModelCard.persistence_pairs`), lower <= min g and upper >= max g at the logit scale,
    g = margin(customer) - margin(customer with that value), the same moved inputs in both."""

    delta: int
    pairs: tuple[tuple[int, tuple[int, ...]], ...]  # (sensitive feature index, value's point)
    bounds: tuple[tuple[int, int], ...]  # (lower, upper)
    own: tuple[bool, ...]  # the customer's own value (g = 0)
    attributes: tuple[str, ...]
    labels: tuple[str, ...]
    columns: tuple[int, ...]
    favourable_class: int
    scale_bits: int
    logit_scale_bits: int
    # Each pair's value as the bundle writes it: an integer for a one-column feature, a list otherwise.
    values: tuple[int | tuple[int, ...], ...]

    def status(self, i: int) -> PersistenceStatus:
        lower, upper = self.bounds[i]
        if self.own[i]:
            return "own"
        return "favoured" if lower > 0 else "disfavoured" if upper < 0 else "inconclusive"

    def readable(self) -> PersistentBias:
        """The bundle field these claims stand for."""
        return PersistentBias(delta=self.delta, bounds=tuple(
            PersistenceBound(attribute=self.attributes[i], value=self.values[i], label=self.labels[i],
                             lower=lo, upper=hi, status=self.status(i))
            for i, (lo, hi) in enumerate(self.bounds)))


@dataclass(frozen=True)
class Claims:
    """A certificate's meaning, every field derived from the signals and the card."""

    model_id: str
    bucket: str
    commitment: int
    decision: int
    decision_label: str
    status: str  # "certified" or "counterfactual_flip"
    eps_numerator: int
    eps_scale_bits: int
    capped: bool  # E equals the bucket's cap: no decision boundary inside the box within it
    flip: FlipSlice | None
    query: tuple[int, ...]
    # The bucket's statement: "exact" proves eps = floor(true radius * 2^t) / 2^t (a counterexample
    # makes it minimal), "fast" proves eps <= the true radius (GeoCert's projection radius).
    radius: RadiusKind
    # A per-slice certificate: the buckets of slices 1, 2, ... (slice 0's is `bucket`); () otherwise.
    part_buckets: tuple[str, ...] = ()
    # The spread lens, when the card proves it.
    spread: SpreadClaims | None = None
    # The persistence lens, when the card proves it.
    persistence: PersistenceClaims | None = None
    # What the commitment is to (the card's architecture): a bound radius is reached differently for each.
    model_kind: ModelKind = RELU_NETWORK

    @property
    def eps(self) -> Fraction:
        return Fraction(self.eps_numerator, 1 << self.eps_scale_bits)

    @property
    def eps_exact(self) -> bool:
        """eps is the true radius rounded down to 2^-t (below the cap), not only a lower bound."""
        return self.radius == EXACT_RADIUS

    @property
    def eps_statement(self) -> str:
        """What eps is, in words, for a certified radius (e.g. "eps = 0.5 (exact: ...)")."""
        t = self.eps_scale_bits
        if self.capped:
            return f"eps >= {self.eps_decimal}, the whole input domain (the cap; {self.radius} statement)"
        if self.eps_exact:
            return f"eps = {self.eps_decimal} (exact: the true radius rounded down to 2^-{t})"
        if self.radius == BOUND_RADIUS:
            return f"eps >= {self.eps_decimal} is a lower bound (bound: {BOUND_METHOD[self.model_kind]}; the true radius may be larger)"
        return f"eps >= {self.eps_decimal} is a lower bound (fast: the true radius may be larger)"

    @property
    def eps_decimal(self) -> str:
        return radius_decimal(self.eps_numerator, self.eps_scale_bits)


def signed(value: int) -> int:
    """The signed integer a field element stands for (values above R/2 are negative)."""
    return value if value <= _HALF_R else value - R


def claims_from_signals(signals: Sequence[str], card: ModelCard, bucket: CircuitBucket,
                        slice_index: int = 0) -> Claims:
    """Derive the certificate's claims; ClaimError names the first signal no honest proof can have.
    Under a per-slice bucket the last signal must be `slice_index`, the slice this proof stands for."""
    n = card.architecture.n_inputs
    n_spread = card.n_spread_signals
    n_persistence = card.n_persistence_signals
    expected = HEAD_SIGNALS + n + n_spread + n_persistence + (1 if bucket.shape.per_slice else 0)
    if bucket.n_public != expected:
        raise ClaimError(f"bucket {bucket.bucket} has {bucket.n_public} public inputs, "
                         f"this model's statement has {expected}", "claims.signal-count")
    if len(signals) != expected:
        raise ClaimError(f"the proof has {len(signals)} public signals, this model's statement has {expected}",
                         "claims.signal-count")
    try:
        values = [parse_decimal(s, R, f"public signal {i}") for i, s in enumerate(signals)]
    except NonCanonical as exc:
        raise ClaimError(str(exc), "claims.signal-encoding") from None
    if bucket.shape.per_slice:
        if values[-1] != slice_index:
            raise ClaimError(f"public signal {expected - 1} (the slice the proof covers) is {values[-1]}, "
                             f"this proof stands for slice {slice_index}", "claims.parts")
        values = values[:-1]
    commitment, decision, eps_numerator, status, flip_index = values[:HEAD_SIGNALS]

    if commitment != parse_decimal(card.commitment, R, "card commitment"):
        raise ClaimError("public signal 0 is not the card's commitment", "claims.commitment")
    labels = card.architecture.class_labels
    if decision >= len(labels):
        raise ClaimError(f"public signal 1 (decision {decision}) is not a class of this model", "claims.decision")
    if eps_numerator > bucket.shape.eps_cap:
        raise ClaimError(f"public signal 2 (E = {eps_numerator}) exceeds the cap {bucket.shape.eps_cap} "
                         f"of bucket {bucket.bucket}", "claims.eps-cap")
    if status not in STATUS_NAMES:
        raise ClaimError(f"public signal 3 (status {status}) is neither certified (0) nor flip (1)", "claims.status")

    flip = None
    if status == STATUS_CERTIFIED:
        if flip_index != 0:
            raise ClaimError("public signal 4 (flip slice) must be 0 on a certified radius", "claims.flip")
    else:
        if eps_numerator != 0:
            raise ClaimError("a counterfactual flip certifies radius 0, public signal 2 is not 0", "claims.flip")
        slices = card.slices()
        if flip_index >= len(slices):
            raise ClaimError(f"public signal 4 (flip slice {flip_index}) is not one of the "
                             f"{len(slices)} sensitive slices", "claims.flip")
        slice_values, slice_labels = card.slice_labels(flip_index)
        flip = FlipSlice(index=flip_index, values=slice_values, labels=slice_labels)

    query = tuple(signed(v) for v in values[HEAD_SIGNALS:HEAD_SIGNALS + n])
    for i, (v, lo, hi) in enumerate(zip(query, card.box_lower, card.box_upper)):
        if not lo <= v <= hi:
            raise ClaimError(f"public signal {HEAD_SIGNALS + i} (feature {card.feature_names[i]!r}) "
                             "lies outside the model's input domain box", "claims.query-box")
    for f in card.sensitive:
        if f.point_of(query) not in f.points:
            where = ", ".join(str(HEAD_SIGNALS + c) for c in f.input_columns)
            raise ClaimError(f"public signal{'s' if len(f.input_columns) > 1 else ''} {where} (sensitive feature "
                             f"{f.name!r}) {'are' if len(f.input_columns) > 1 else 'is'} not a value of its domain",
                             "claims.sensitive-value")

    spread = persistence = None
    if card.spread is not None:  # exactly when n_spread > 0
        spread = _spread_claims(values[HEAD_SIGNALS + n:], card, card.spread, query, decision, status)
    if card.persistence is not None:  # exactly when n_persistence > 0
        persistence = _persistence_claims(values[HEAD_SIGNALS + n + n_spread:], card, card.persistence, query)

    return Claims(model_id=card.model_id, bucket=bucket.bucket, commitment=commitment, decision=decision,
                  decision_label=labels[decision], status=STATUS_NAMES[status],
                  eps_numerator=eps_numerator, eps_scale_bits=card.eps_scale_bits,
                  capped=status == STATUS_CERTIFIED and eps_numerator == bucket.shape.eps_cap,
                  flip=flip, query=query, radius=bucket.shape.radius, spread=spread, persistence=persistence,
                  model_kind=card.architecture.kind)


def _spread_claims(values: Sequence[int], card: ModelCard, lens: SpreadLensCard, query: tuple[int, ...],
                   decision: int, status: int) -> SpreadClaims:
    """The spread lens's signals (each slice's decision, then the bucket count), checked against
    what the statement implies: the query's own slice decides `decision`, and a certified radius
    means every slice does."""
    slices = card.slices()
    first = HEAD_SIGNALS + card.architecture.n_inputs
    labels = card.architecture.class_labels
    decisions, count = tuple(values[:len(slices)]), values[len(slices)]
    for s, d in enumerate(decisions):
        if d >= len(labels):
            raise ClaimError(f"public signal {first + s} (the decision with slice {s}) is not a class of this model", "claims.spread")
    if not 1 <= count <= len(slices):
        raise ClaimError(f"public signal {first + len(slices)} ({count} margin buckets) is not between 1 and "
                         f"the {len(slices)} slices", "claims.spread")
    own = slices.index(card.query_slice(query))
    if decisions[own] != decision:
        raise ClaimError(f"public signal {first + own} (the decision with the query's own sensitive values) "
                         "differs from the decision", "claims.spread")
    if status == STATUS_CERTIFIED and any(d != decision for d in decisions):
        raise ClaimError("a certified radius means every slice decides the same, the spread signals say otherwise", "claims.spread")
    return SpreadClaims(decisions=decisions, decision_labels=tuple(labels[d] for d in decisions),
                        slice_labels=tuple(card.slice_labels(s)[1] for s in range(len(slices))),
                        score_buckets=count, favourable_class=lens.favourable_class,
                        bucket_width=lens.bucket_width, logit_scale_bits=card.logit_scale_bits)


def _persistence_claims(values: Sequence[int], card: ModelCard, lens: PersistenceLensCard,
                        query: tuple[int, ...]) -> PersistenceClaims:
    """The persistence lens's signals (delta, then lower and upper per pair), checked against what any
    valid proof implies: 0 <= delta <= the card's cap, bounds within the circuit's range, lower <= upper
    (they bound one function), and lower <= 0 <= upper at the customer's own value (where g = 0)."""
    first = HEAD_SIGNALS + card.architecture.n_inputs + card.n_spread_signals
    delta = values[0]
    if delta > card.persistence_delta_cap:
        raise ClaimError(f"public signal {first} (delta {delta}) exceeds {card.persistence_delta_cap}, "
                         "the widest moved column of the domain box", "claims.persistence")
    pairs = card.persistence_pairs()
    bounds = []
    for i, (a, point) in enumerate(pairs):
        at = first + 1 + 2 * i
        lower, upper = signed(values[1 + 2 * i]), signed(values[2 + 2 * i])
        for position, bound in ((at, lower), (at + 1, upper)):
            if abs(bound) >= PERSISTENCE_BOUND_LIMIT:
                raise ClaimError(f"public signal {position} (a persistence bound) is no integer a proof can state", "claims.persistence")
        if lower > upper:
            raise ClaimError(f"public signals {at} and {at + 1} (persistence bounds) have lower above upper", "claims.persistence")
        if card.sensitive[a].point_of(query) == point and not lower <= 0 <= upper:
            raise ClaimError(f"public signals {at} and {at + 1} (the customer's own value, where the gap is 0) "
                             "do not contain 0", "claims.persistence")
        bounds.append((lower, upper))
    own = tuple(card.sensitive[a].point_of(query) == point for a, point in pairs)
    return PersistenceClaims(
        delta=delta, pairs=tuple(pairs), bounds=tuple(bounds), own=own,
        attributes=tuple(card.sensitive[a].name for a, _ in pairs),
        labels=tuple(card.sensitive[a].label_of(point) for a, point in pairs),
        columns=lens.columns, favourable_class=lens.favourable_class, scale_bits=card.scale_bits,
        logit_scale_bits=card.logit_scale_bits,
        values=tuple(card.sensitive[a].written(point) for a, point in pairs))


def contradiction(bundle: CertificateBundle, claims: Claims) -> str | None:
    """The first readable field of `bundle` that says something else than its signals, or None."""
    checks = (
        ("bucket", bundle.bucket, claims.bucket),
        ("decision", bundle.decision, claims.decision),
        ("decision_label", bundle.decision_label, claims.decision_label),
        ("status", bundle.status, claims.status),
        ("eps.numerator", bundle.eps.numerator, claims.eps_numerator),
        ("eps.scale_bits", bundle.eps.scale_bits, claims.eps_scale_bits),
        ("eps.capped", bundle.eps.capped, claims.capped),
        ("flip_slice", bundle.flip_slice, claims.flip),
        ("query", tuple(bundle.query), claims.query),
        ("spread", bundle.spread, claims.spread.readable() if claims.spread else None),
        ("persistence", bundle.persistence, claims.persistence.readable() if claims.persistence else None),
    )
    for name, stated, derived in checks:
        if type(stated) is not type(derived) or stated != derived:
            return f"bundle field {name} says {_short(stated)}, its public signals and the card say {_short(derived)}"
    return None


def bundle_claims(bundle: CertificateBundle, card: ModelCard, card_digest: str | None = None) -> Claims:
    """Claims of a bundle under `card`, refusing (ClaimError) any field that contradicts them.
    `card_digest`: card.digest(), for a caller that already has it (it is computed otherwise)."""
    if bundle.model_id != card.model_id:
        raise ClaimError(f"bundle is for model {bundle.model_id!r}, the card is for {card.model_id!r}", "claims.model")
    if bundle.card_digest != (card.digest() if card_digest is None else card_digest):
        raise ClaimError("bundle was issued under another model card (card digest differs from the card's)",
                         "claims.card-digest")
    try:
        bucket = card.bucket(bundle.bucket)
    except KeyError as exc:
        raise ClaimError(str(exc.args[0]), "claims.bucket") from None
    claims = claims_from_signals(bundle.public_signals, card, bucket)
    problem = contradiction(bundle, claims)
    if problem:
        raise ClaimError(problem, "claims.contradiction")
    if not bucket.shape.per_slice:
        if bundle.parts:
            raise ClaimError(f"bucket {bucket.bucket} proves every slice at once: the bundle has no slice parts",
                             "claims.parts")
        return claims
    return _with_parts(bundle, card, bucket, claims)


def _with_parts(bundle: CertificateBundle, card: ModelCard, bucket: CircuitBucket, claims: Claims) -> Claims:
    """A per-slice certificate: one part per further slice, in order, each under a per-slice exact
    bucket with the same cap, and each part's signals claiming exactly what slice 0's do."""
    n_slices = len(card.slices())
    indices = [p.slice_index for p in bundle.parts]
    if indices != list(range(1, n_slices)):
        raise ClaimError(f"a per-slice certificate has one proof per slice: parts for slices 1..{n_slices - 1} "
                         f"in order, not {indices}", "claims.parts")
    for p in bundle.parts:
        try:
            part_bucket = card.bucket(p.bucket)
        except KeyError as exc:
            raise ClaimError(str(exc.args[0]), "claims.parts") from None
        if not part_bucket.shape.per_slice:
            raise ClaimError(f"the proof of slice {p.slice_index} names bucket {p.bucket}, which is not per-slice",
                             "claims.parts")
        if part_bucket.shape.eps_cap != bucket.shape.eps_cap or part_bucket.shape.radius != bucket.shape.radius:
            raise ClaimError(f"the proof of slice {p.slice_index} names bucket {p.bucket}, whose cap or radius "
                             f"differs from bucket {bucket.bucket}'s", "claims.parts")
        part = claims_from_signals(part_signals(bundle, p.slice_index), card, part_bucket, p.slice_index)
        if part != replace(claims, bucket=part_bucket.bucket):
            raise ClaimError(f"the proof of slice {p.slice_index} claims something else than slice 0's", "claims.parts")
    return replace(claims, part_buckets=tuple(p.bucket for p in bundle.parts))


def part_signals(bundle: CertificateBundle, slice_index: int) -> tuple[str, ...]:
    """The public signals of a per-slice certificate's proof of `slice_index`: the bundle's, the last
    (the slice) replaced."""
    return (*bundle.public_signals[:-1], str(slice_index))


def signals_for(bundle: CertificateBundle, commitment: int) -> tuple[str, ...]:
    """The public signals a statement with `bundle`'s readable fields has (the prover's encoding:
    signed query values as v mod R). Refuses a head value outside [0, R) rather than reduce it."""
    flip_index = bundle.flip_slice.index if bundle.flip_slice else 0
    status = STATUS_FLIP if bundle.status == "counterfactual_flip" else STATUS_CERTIFIED
    head = [commitment, bundle.decision, bundle.eps.numerator, status, flip_index]
    for v in head:
        if not 0 <= v < R:
            raise ClaimError(f"{v} is not a field element", "claims.signal-encoding")
    part = ("0",) if bundle.parts else ()  # a per-slice certificate's own proof is slice 0's
    lens = () if bundle.spread is None else (*bundle.spread.decisions, bundle.spread.score_buckets)
    if bundle.persistence is not None:
        lens += (bundle.persistence.delta,)
    for v in lens:
        if not 0 <= v < R:
            raise ClaimError(f"{v} is not a field element", "claims.signal-encoding")
    bounds = () if bundle.persistence is None else tuple(
        v for b in bundle.persistence.bounds for v in (b.lower, b.upper))
    for v in bounds:
        if abs(v) >= PERSISTENCE_BOUND_LIMIT:
            raise ClaimError(f"{v} is no persistence bound a proof can state", "claims.persistence")
    return (tuple(str(v) for v in head) + tuple(str(v % R) for v in bundle.query) + tuple(str(v) for v in lens)
            + tuple(str(v % R) for v in bounds) + part)


def _short(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."
