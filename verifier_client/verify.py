"""Check a certificate bundle against a model card: the customer's side.

Only the card and the bundle are needed: no weights, no database, no torch or
scipy. The Groth16 check runs on the fast backend when the native library
loads, otherwise on the pure-Python reference backend.

What a valid verdict rests on: the pinned card (its digest covers every
circuit bucket, so no key outside it is used), an auditor the customer
trusts having attested that card (commitments.attestation: the auditor
rebuilt every bucket's statement and verified its key's ceremony), when the
customer names one, and the Groth16 proof over the public signals. A trusted
contributor (`trusted_contributors`) is checked against the card's own list
of contributions: the bank's word, unless a trusted auditor attested the card,
whose audit ties that list to the key. Everything the verdict reports (`Verdict.claims`) is
derived from those signals and the card (commitments/claims.py); the
bundle's readable fields are only compared with them, never shown. Whether
eps is exact (`Verdict.radius`, `Claims.radius`) is the radius of the bucket
whose verifying key accepted the proof, as the pinned card states it.
"""
from __future__ import annotations

import threading
from dataclasses import dataclass, field
from fractions import Fraction
from typing import ClassVar, Iterable, Sequence, TypeVar

import pydantic_core
from pydantic import BaseModel

from circuits.backends import CurveBackend, get_backend
from circuits.errors import MalformedArtifact
from circuits.groth16 import PreparedVerifyingKey, Proof, VerifyingKey, proof_to_bytes, vk_digest
from circuits.groth16.system import Groth16
from circuits.snarkjs.json_formats import proof_from_json, verifying_key_from_json
from commitments.attestation import Attestation, AttestationError, check_attestations
from commitments.bundle import CertificateBundle, SnarkjsProof
from commitments.card import BOUND_RADIUS, AuditCircuit, CircuitBucket, ModelCard, RadiusKind
from commitments.claims import BOUND_EXPLAINED, COMMITTED, ClaimError, Claims, bundle_claims, part_signals

from .pins import PinCheck


@dataclass(frozen=True)
class Verdict:
    valid: bool
    reasons: tuple[str, ...] = field(default_factory=tuple)
    claims: Claims | None = None  # set on a valid verdict only: what the proof establishes
    auditors: tuple[str, ...] = ()  # trusted auditors whose attestation covers the card (valid verdicts)
    code: str | None = None  # an invalid verdict's stable reason code (docs/VERIFYING.md)

    def __bool__(self) -> bool:
        return self.valid

    @property
    def radius(self) -> RadiusKind | None:
        """On a valid verdict, "exact" (eps is the true radius rounded down to 2^-t), "fast" or "bound"
        (lower bounds): the statement of the bucket whose key verified the proof. None on an invalid one."""
        return None if self.claims is None else self.claims.radius


def _refuse(reason: str, code: str) -> Verdict:
    return Verdict(False, (reason,), code=code)


def verify_bundle(bundle: CertificateBundle, card: ModelCard, backend: CurveBackend | None = None, *,
                  query: Sequence[int] | None = None, trusted_contributors: Iterable[str] = (),
                  required_lenses: Iterable[str] = (), trusted_auditors: Sequence[str] = (),
                  attestations: Iterable[Attestation] = ()) -> Verdict:
    """Every check a customer needs, in order; the first failure is the reason.

    `query`: the customer's own encoding of their record (commitments.record);
    a certificate about any other query is refused. `trusted_contributors`:
    phase-2 contribution hashes the customer trusts; when any is given, the
    bucket's key must come from a ceremony whose transcript holds one of them.
    `required_lenses`: lenses the customer requires the proof to cover ("radius", "spread", "persistence").
    `trusted_auditors`: auditors' verifier keys; when any is given, one of `attestations` must be theirs and
    cover this very card (card_attestation_problem).
    """
    digest = card.digest()
    try:
        claims = bundle_claims(bundle, card, digest)
    except ClaimError as exc:
        return _refuse(str(exc), exc.code)
    missing = lens_problem(claims, required_lenses)
    if missing:
        return _refuse(missing, "customer.lens")
    if query is not None and claims.query != tuple(query):
        differing = [card.feature_names[i] for i, (a, b) in enumerate(zip(claims.query, query)) if a != b]
        which = ", ".join(differing[:5]) + ("..." if len(differing) > 5 else "") if differing else "length"
        return _refuse(f"the certificate is about another customer's record, not yours (query differs in: {which})",
                       "customer.record")

    # A per-slice certificate is one proof per slice (claims checked that every slice has one): all must hold.
    proofs: list[tuple[CircuitBucket, SnarkjsProof, str, tuple[str, ...], int | None]] = [
        (card.bucket(claims.bucket), bundle.proof, bundle.proof_hex, bundle.public_signals, None)]
    proofs += [(card.bucket(p.bucket), p.proof, p.proof_hex, part_signals(bundle, p.slice_index), p.slice_index)
               for p in bundle.parts]
    attested = card_attestation_problem(card, digest, attestations, trusted_auditors)
    if isinstance(attested, str):
        return _refuse(attested, "customer.auditor")
    for bucket, *_ in proofs:
        trust_problem = setup_trust_problem(bucket, trusted_contributors)
        if trust_problem:
            return _refuse(trust_problem, "customer.contributor")

    backend = backend or get_backend()
    for bucket, proof_json, proof_hex, signals, slice_index in proofs:
        whose = "" if slice_index is None else f" (slice {slice_index})"
        try:
            pvk = bucket_prepared_key(bucket, backend)
        except MalformedArtifact as exc:
            return _refuse(f"{exc}{whose}", "key.invalid")
        try:
            proof = read_proof(proof_json, proof_hex)
        except MalformedArtifact as exc:
            return _refuse(f"{exc}{whose}", "proof.malformed")
        result = Groth16(backend).check(pvk, [int(s) for s in signals], proof)
        if not result.ok:  # a point outside its group is a malformed proof (K2); only the equation is K3
            return _refuse(f"proof rejected{whose}: {result.reason}", proof_code(result.reason))
    return Verdict(True, claims=claims, auditors=attested)


PAIRING_FAILED = "pairing check failed"  # circuits.groth16's reason when only the equation fails


def proof_code(reason: str) -> str:
    return "proof.rejected" if reason == PAIRING_FAILED else "proof.malformed"


def card_attestation_problem(card: ModelCard, digest: str, attestations: Iterable[Attestation],
                             trusted_auditors: Sequence[str]) -> str | tuple[str, ...]:
    """Why no trusted auditor attested `card` (a str), or the names of those who did (empty: none required)."""
    try:
        check = check_attestations(card, digest, attestations, trusted_auditors)
    except AttestationError as exc:
        return str(exc)
    return check.problem if check.problem is not None else check.auditors


LENSES = ("radius", "spread", "persistence")


def lens_problem(claims: Claims, required: Iterable[str]) -> str | None:
    """Why a certificate with these claims lacks a lens the customer requires, or None."""
    for lens in required:
        if lens not in LENSES:
            return f"unknown lens {lens!r} (this verifier knows {', '.join(LENSES)})"
        if lens == "spread" and claims.spread is None:
            return "the certificate does not prove the counterfactual spread, which you require"
        if lens == "persistence" and claims.persistence is None:
            return "the certificate does not prove persistent bias, which you require"
    return None


def bundle_proof(bundle: CertificateBundle) -> Proof:
    """The bundle's own proof (slice 0's, for a per-slice certificate), read as `read_proof` does."""
    return read_proof(bundle.proof, bundle.proof_hex)


def read_proof(proof_json: SnarkjsProof, proof_hex: str) -> Proof:
    """A proof read once, from its JSON (canonical numbers, points on their
    curves); `proof_hex` must be exactly its compressed form (raises
    MalformedArtifact otherwise).

    Compression is a bijection between points and valid encodings, so equal
    bytes mean that proof_hex decodes to these very points, without the square
    roots of decoding it. B's subgroup check is check_prepared_proof's, made once."""
    proof = proof_from_json(proof_json.model_dump(mode="json"), check_subgroup=False)
    if proof_to_bytes(proof) != bytes.fromhex(proof_hex):
        raise MalformedArtifact("the compressed proof and the JSON proof differ")
    return proof


_ContentKey = tuple[type[BaseModel], bytes]  # a model's type and its JSON


def _content_key(model: BaseModel) -> _ContentKey | None:
    """A cache key holding the whole content of a pydantic model, never its identity:
    the model as pydantic dumps it, written by pydantic-core with NaN and infinities
    spelled out (pydantic's own JSON writes them all as null), so two models with
    one key have the same canonical JSON. None if a value cannot be written so."""
    try:
        return type(model), pydantic_core.to_json(model.model_dump(), inf_nan_mode="constants")
    except pydantic_core.PydanticSerializationError:
        return None


def bucket_verifying_key(bucket: CircuitBucket, backend: CurveBackend | None = None) -> VerifyingKey:
    """The bucket's verifying key, checked: valid points, not degenerate, matching its digest."""
    return bucket_prepared_key(bucket, backend).vk


def bucket_prepared_key(bucket: CircuitBucket, backend: CurveBackend | None = None) -> PreparedVerifyingKey:
    """The bucket's verifying key, checked (as bucket_verifying_key) and prepared on `backend`.

    The prepared key is kept per backend and per (key document, declared
    public-input count, declared digest): those are all the checks read, so a
    second bundle of the same card gets the same answer without repeating
    them (the G2 subgroup checks and e(alpha, beta))."""
    backend = backend or get_backend()
    content = _content_key(bucket.verifying_key)
    key = (backend.name, content, bucket.n_public, bucket.verifying_key_digest, bucket.bucket)
    with _cache_lock:
        cached = _prepared.get(key) if content is not None else None
    if cached is not None:
        return cached
    what = f"verifying key of bucket {bucket.bucket}"
    vk = verifying_key_from_json(bucket.verifying_key.model_dump(mode="json"), what=what, backend=backend)
    prepared = Groth16(backend).prepare(vk)  # check_verifying_key's refusals (degenerate keys) raise here
    if vk.n_public != bucket.n_public:
        raise MalformedArtifact(f"{what}: {vk.n_public} public inputs, the bucket declares {bucket.n_public}")
    if vk_digest(vk) != bucket.verifying_key_digest:
        raise MalformedArtifact(f"{what} does not match its digest on the card")
    if content is not None:
        with _cache_lock:
            _remember(_prepared, key, prepared)
    return prepared


_CACHE_MAX = 64  # cards x buckets a verifier process sees; a bound, not a tuning
# (backend name, key document, declared public inputs, declared digest, bucket name)
_prepared: dict[tuple[str, _ContentKey | None, int, str, str], PreparedVerifyingKey] = {}
_cache_lock = threading.Lock()
_K = TypeVar("_K")
_V = TypeVar("_V")


def _remember(cache: dict[_K, _V], key: _K, value: _V) -> None:
    if key not in cache and len(cache) >= _CACHE_MAX:
        cache.pop(next(iter(cache)))  # the oldest entry
    cache[key] = value


def setup_trust_problem(bucket: CircuitBucket | AuditCircuit, trusted_contributors: Iterable[str]) -> str | None:
    """Why the bucket's (or audit circuit's) key setup fails the customer's trust list, or None."""
    trusted = {h.lower() for h in trusted_contributors}
    if not trusted:
        return None
    setup = bucket.setup
    name = f"bucket {bucket.bucket}" if isinstance(bucket, CircuitBucket) else f"audit circuit {bucket.name}"
    if setup.method != "ceremony":
        return (f"the keys of {name} were set up by the bank alone (no ceremony), "
                "and you require a trusted contributor")
    if not any(c.hash in trusted for c in setup.contributions):
        names = ", ".join(c.name or c.hash[:16] for c in setup.contributions)
        return (f"none of your trusted contributors took part in the key setup of {name} "
                f"(contributors: {names})")
    return None


def explain(claims: Claims, card: ModelCard) -> str:
    """What a valid certificate means, in plain words (from its verified claims only)."""
    sensitive = ", ".join(f.name for f in card.sensitive) or "sensitive attributes"
    lines = [f"Decision: {claims.decision_label} (model {card.model_id}, commitment {card.commitment[:12]}...)"]
    if claims.status == "counterfactual_flip":
        labels = ", ".join(claims.flip.labels) if claims.flip else "another value"
        lines.append(
            f"Not certified fair: with {sensitive} set to {labels} and nothing else changed, "
            "the model would have decided differently."
        )
    else:
        bound = "at least the whole input domain" if claims.capped else f"eps = {claims.eps_decimal}"
        lines.append(
            f"Certified: whatever the value of {sensitive}, and with your other features moved by up to "
            f"{bound} (Euclidean distance in standardised units, inside the model's input domain), "
            "the decision would have been the same."
        )
        if claims.capped:
            pass
        elif claims.eps_exact:
            lines.append(f"This eps is exact (the true radius rounded down to 2^-{claims.eps_scale_bits}): the proof "
                         f"also exhibits a change of {sensitive} and of your other features by less than "
                         f"eps + 2^-{claims.eps_scale_bits} at which another decision at least ties yours.")
        elif claims.radius == BOUND_RADIUS:
            lines.append(f"This eps is a lower bound (bound radius: {BOUND_EXPLAINED[claims.model_kind]}): "
                         "the decision may stay the same for larger changes too.")
        else:
            lines.append("This eps is a lower bound (fast radius): the decision may stay the same for larger "
                         "changes too.")
    lines.append(f"The proof shows this was computed from {COMMITTED[claims.model_kind]} the bank committed to.")
    return "\n".join(lines)


def spread_summary(claims: Claims, card: ModelCard) -> str | None:
    """The spread lens in plain words (None when the card does not prove it)."""
    sp = claims.spread
    if sp is None:
        return None
    names = ", ".join(f.name for f in card.sensitive)
    favourable = card.architecture.class_labels[sp.favourable_class]
    lines = [f"Counterfactual spread: with every combination of {names} and nothing else changed, the model decides:"]
    for labels, decision in zip(sp.slice_labels, sp.decision_labels):
        lines.append(f"  {', '.join(labels)}: {decision}")
    lines.append(f"  {sp.distinct_decisions} distinct decision(s); the score for {favourable!r} (its logit margin) "
                 f"falls in {sp.score_buckets} distinct bucket(s) of width {float(sp.bucket_width_decimal):.6g} logits "
                 f"[{sp.bucket_width} / 2^{sp.logit_scale_bits}].")
    return "\n".join(lines)


def _column_std(card: ModelCard, column: int) -> tuple[str, float, str] | None:
    """(name, std, unit) of a numeric model input from the card's preprocessing, if it says."""
    if card.feature_schema is not None:
        for feature, first in card.feature_schema.columns():
            if first == column and getattr(feature, "kind", None) == "numeric":
                return feature.name, float(feature.std), feature.unit
    elif card.features and card.features[column].kind == "numeric":
        f = card.features[column]
        return f.name, f.std, ""
    return None


def persistence_summary(claims: Claims, card: ModelCard) -> str | None:
    """The persistence lens in plain words (None when the card does not prove it)."""
    ps = claims.persistence
    if ps is None:
        return None
    delta = Fraction(ps.delta, 1 << ps.scale_bits)
    favourable = card.architecture.class_labels[ps.favourable_class]
    moved = []
    for j in ps.columns:
        described = _column_std(card, j)
        if described is None:
            moved.append(f"{card.feature_names[j]} +-{float(delta):.4g}")
        else:
            name, std, unit = described
            moved.append(f"{name} +-{float(delta) * std:.4g}{' ' + unit if unit else ''}")
    lines = [f"Persistent bias: with the same changes to {', '.join(moved)} "
             f"(delta = {float(delta):.4g} standard deviations [{ps.delta} / 2^{ps.scale_bits}]) made to you and "
             f"to someone identical but for one sensitive attribute, the score for {favourable!r} "
             "(its logit margin) differs by:"]
    scale = 1 << ps.logit_scale_bits
    words = {"favoured": "you are favoured everywhere in the box", "disfavoured": "you are disfavoured everywhere "
             "in the box", "inconclusive": "no persistent direction proved"}
    for i, (lower, upper) in enumerate(ps.bounds):
        if ps.own[i]:
            continue
        lines.append(f"  {ps.attributes[i]} = {ps.labels[i]}: between {lower / scale:+.4g} and {upper / scale:+.4g} "
                     f"logits ({words[ps.status(i)]}) [{lower}, {upper}] / 2^{ps.logit_scale_bits}")
    return "\n".join(lines)


def radius_summary(claims: Claims) -> str:
    """The radius line of a valid certificate: its value and whether it is exact (from the verified bucket)."""
    fraction = f"{claims.eps_numerator} / 2^{claims.eps_scale_bits}"
    if claims.status == "counterfactual_flip":
        return f"Radius: eps = {claims.eps_decimal} (a counterfactual flip)"
    return f"Radius: {claims.eps_statement} [eps = {fraction}]"


@dataclass(frozen=True)
class CardTrust:
    """What a verdict's words rest on besides the proof: the card, how it came to be trusted, who attested it."""

    card_digest: str
    pin: str  # how the card was pinned (PinCheck.describe)
    attested_by: tuple[str, ...]  # trusted auditors whose attestation covers the card
    auditors_required: bool  # the customer named trusted auditors

    # What the proof itself establishes, from the public signals, whatever the card says.
    PROVED: ClassVar[tuple[str, ...]] = ("the decision (as a class index)", "the radius eps and its status", "the flip slice",
              "the query", "the spread and persistence signals", "that the weights are the committed ones")
    # What the verifier reads from the card alone: it rests on the pin and the attestations.
    STATED_BY_CARD: ClassVar[tuple[str, ...]] = ("class and sensitive labels", "feature names, units and standard deviations",
                      "each bucket's radius kind and cap", "the lenses' parameters", "who set up the keys")

    def text(self) -> str:
        if self.attested_by:
            attested = f"attested by {', '.join(self.attested_by)} (an auditor you trust checked every key on it)"
        elif self.auditors_required:
            attested = "attested by none of the auditors you trust"  # not reached: such a verdict is invalid
        else:
            attested = "attested by no auditor you named (pass --trust-auditor to require one)"
        return "\n".join([
            f"The proof shows: {', '.join(self.PROVED)}.",
            f"The card states (not proved; it rests on your pin and its attestations): "
            f"{', '.join(self.STATED_BY_CARD)}.",
            f"{self.pin} The card is {attested}.",
        ])


def card_trust_summary(card: ModelCard, pin: PinCheck, attested_by: tuple[str, ...],
                       auditors_required: bool) -> CardTrust:
    return CardTrust(card.digest(), pin.describe(), attested_by, auditors_required)


def setup_summary(bucket: CircuitBucket | AuditCircuit) -> str:
    """Who set up the bucket's (or audit circuit's) key, in one line."""
    setup = bucket.setup
    what = f"bucket {bucket.bucket}" if isinstance(bucket, CircuitBucket) else f"audit circuit {bucket.name}"
    if setup.method != "ceremony":
        return f"Keys of {what}: set up by the bank alone (no ceremony)."
    people = ", ".join(f"{c.name or 'anonymous'} ({c.hash[:16]}...)" for c in setup.contributions)
    return f"Keys of {what}: phase 1 of 2^{setup.phase1_power}, contributions by {people}."
