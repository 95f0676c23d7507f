"""Auditing the log's leaves: cards fetched and checked, and every event held to the card it names."""
from __future__ import annotations

import hashlib
from dataclasses import dataclass, field

from commitments.canonical import NonCanonical
from commitments.card import EXACT_RADIUS, ModelCard
from commitments.card_migration import is_legacy, legacy_digest, migrate
from commitments.claims import ClaimError, Claims, claims_from_signals
from commitments.log import (REDACTED_KINDS, CardAttested, CardPublished, CertificateCommitted, CertificateIssued,
                             DecisionRequested, LogInclusion, card_order_problem, leaf_bytes, parse_leaf)
from transparency import merkle, note

from ..service_client import ServiceClient, ServiceError
from .checkpoints import SignedTree, check_consistent, open_checkpoint
from .state import CardEvent, CardSeen, ModelStats, MonitorState, Recommit, StateDir, describe_recommit


class CardSource:
    """Cards the log published: fetched once, checked against the log, kept in the state directory."""

    def __init__(self, client: ServiceClient, files: StateDir, verifier: note.Verifier, tree: SignedTree):
        self.client = client
        self.files = files
        self.verifier = verifier
        self.tree = tree  # the checkpoint this run follows
        self._parsed: dict[str, ModelCard] = {}
        self._consistent: set[tuple[int, bytes]] = {(tree.size, tree.root)}

    def get(self, digest: str) -> ModelCard:
        card = self._parsed.get(digest)
        if card is None:
            card = self._parsed[digest] = self.files.load_card(digest)
        return card

    def fetch(self, leaf: CardPublished, index: int) -> str | None:
        """Fetch and check the card of a card_published leaf; the reason it fails, or None."""
        digest = leaf.card_digest
        try:
            published = self.client.published_card(digest)
        except ServiceError as exc:
            if exc.status == 404:
                return f"leaf {index} publishes card {digest}, which the log does not serve"
            raise
        text = published.card_json
        if hashlib.sha256(text.encode("utf-8")).hexdigest() != digest:
            return f"the card served for digest {digest} (leaf {index}) does not hash to it"
        legacy = is_legacy(text)  # a version-2 card, published before card version 3: its old digest
        try:
            card = migrate(text) if legacy else ModelCard.from_json(text)
        except NonCanonical as exc:
            return f"the card of leaf {index} is not a canonical model card: {exc}"
        if (legacy_digest(card) if legacy else card.digest()) != digest:
            return f"the card of leaf {index} is not in canonical form"
        if (card.model_id, card.commitment) != (leaf.model_id, leaf.commitment):
            return (f"leaf {index} publishes model {leaf.model_id!r} with commitment {leaf.commitment[:16]}..., "
                    f"its card names {card.model_id!r} with {card.commitment[:16]}...")
        reason = self._check_inclusion(leaf, index, published.checkpoint, published.inclusion)
        if reason:
            return reason
        self.files.save_card(digest, text)
        self._parsed[digest] = card
        return None

    def _check_inclusion(self, leaf: CardPublished, index: int, signed: str, inclusion: LogInclusion) -> str | None:
        """The card's leaf must be at `index` of a signed tree consistent with the one this run follows."""
        served = open_checkpoint(signed, self.verifier, f"the checkpoint served with card {leaf.card_digest}")
        if inclusion.tree_size != served.size:
            return (f"the inclusion of card {leaf.card_digest} is for {inclusion.tree_size} leaves, its checkpoint "
                    f"has {served.size}")
        if inclusion.leaf_index != index:
            return (f"the log shows card {leaf.card_digest} at leaf {inclusion.leaf_index}, it was published at "
                    f"leaf {index}")
        try:
            merkle.verify_inclusion(merkle.leaf_hash(leaf_bytes(leaf)), inclusion.leaf_index, inclusion.tree_size,
                                    [bytes.fromhex(h) for h in inclusion.proof], served.root_hash)
        except merkle.InvalidProof as exc:
            return f"card {leaf.card_digest} is not in the checkpoint served with it: {exc}"
        if (served.size, served.root_hash) not in self._consistent:
            check_consistent(self.tree, SignedTree.of(served, signed), self.client, self.verifier.name)
            self._consistent.add((served.size, served.root_hash))
        return None


@dataclass
class Audit:
    """What the leaves of one run showed: statistics go into `state`, the rest is listed here."""

    state: MonitorState
    cards: CardSource
    violations: list[str] = field(default_factory=list)
    flags: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    # Leaves naming a card not (yet) published: (place in `violations`, leaf index, what, card digest),
    # judged by `finish` once every leaf of the run is seen.
    _unpublished: list[tuple[int, int, str, str]] = field(default_factory=list)

    def leaf(self, index: int, data: bytes) -> None:
        try:
            leaf = parse_leaf(data)
        except NonCanonical as exc:
            self.violations.append(f"leaf {index} is not a canonical FairProof event: {exc}")
            return
        if isinstance(leaf, CardPublished):
            self.card_published(index, leaf)
        elif isinstance(leaf, DecisionRequested):
            self.decision_requested(index, leaf)
        elif isinstance(leaf, CertificateCommitted):
            if self.state.committed_since is None:
                self.state.committed_since = index
            self.certificate_committed(index, leaf)
        elif isinstance(leaf, CertificateIssued):
            if self.state.committed_since is not None:
                self.notes.append(f"leaf {index} is an old certificate_issued leaf, logged after the log switched to "
                                  f"certificate_committed at leaf {self.state.committed_since}: it publishes its "
                                  "customer's public signals (the query among them)")
            self.certificate_issued(index, leaf)
        else:
            self.card_attested(index, leaf)

    def redacted(self, index: int, kind: str) -> None:
        """An entry served as its leaf hash only: an old certificate leaf may be (it holds a query), and
        is counted; any other kind withheld is a violation."""
        if kind not in REDACTED_KINDS:
            self.violations.append(f"leaf {index} is served redacted as {kind[:64]!r}: only an old "
                                   f"{' or '.join(REDACTED_KINDS)} leaf may be withheld")
            return
        if self.state.committed_since is not None:
            self.violations.append(f"leaf {index} is served redacted as an old certificate, but the log logs "
                                   f"certificate_committed leaves since leaf {self.state.committed_since}")
            return
        self.state.redacted_certificates += 1

    def finish(self) -> None:
        """After the run's last leaf: a leaf that named a card the log had not published is a violation,
        in the words of `card_order_problem` when the card is published at a later leaf."""
        for position, index, what, digest in reversed(self._unpublished):
            seen = self.state.cards.get(digest)
            reason = card_order_problem(seen.leaf_index, index, what) if seen is not None else None
            self.violations.insert(position, reason or f"{_a(what)} at leaf {index} names card {digest}, which "
                                                       "the log had not published")
        self._unpublished.clear()

    def stats(self, model_id: str) -> ModelStats:
        return self.state.models.setdefault(model_id, ModelStats())

    def card_published(self, index: int, leaf: CardPublished) -> None:
        seen = self.state.cards.get(leaf.card_digest)
        if seen is None:
            reason = self.cards.fetch(leaf, index)
            if reason:
                self.violations.append(reason)
                return
            self.state.cards[leaf.card_digest] = CardSeen(model_id=leaf.model_id, commitment=leaf.commitment,
                                                          leaf_index=index)
        elif (seen.model_id, seen.commitment) != (leaf.model_id, leaf.commitment):
            self.violations.append(f"leaf {index} republishes card {leaf.card_digest} for another model or commitment")
            return
        stats = self.stats(leaf.model_id)
        previous = stats.cards[-1] if stats.cards else None
        stats.cards.append(CardEvent(leaf_index=index, card_digest=leaf.card_digest, commitment=leaf.commitment))
        if previous is None or previous.card_digest == leaf.card_digest:
            return
        if previous.commitment != leaf.commitment:
            recommit = Recommit(leaf_index=index, card_digest=leaf.card_digest,
                                old_commitment=previous.commitment, new_commitment=leaf.commitment)
            stats.recommits.append(recommit)
            self.flags.append(describe_recommit(leaf.model_id, recommit))
        else:
            stats.card_updates += 1
            self.notes.append(f"model {leaf.model_id}: card {leaf.card_digest[:16]}... replaces "
                              f"{previous.card_digest[:16]}... under the same commitment (leaf {index})")

    def _published_card(self, index: int, what: str, model_id: str, digest: str) -> bool:
        """Whether the `what` at leaf `index` names a card the log published before it, for its model."""
        seen = self.state.cards.get(digest)
        if seen is None:  # maybe published at a later leaf: `finish` says which
            self._unpublished.append((len(self.violations), index, what, digest))
            return False
        problem = card_order_problem(seen.leaf_index, index, what)
        if problem:
            self.violations.append(problem)
            return False
        if seen.model_id != model_id:
            self.violations.append(f"{_a(what)} at leaf {index} is for model {model_id!r} under card {digest} "
                                   f"of model {seen.model_id!r}")
            return False
        return True

    def decision_requested(self, index: int, leaf: DecisionRequested) -> None:
        if not self._published_card(index, "decision request", leaf.model_id, leaf.card_digest):
            return
        stats = self.stats(leaf.model_id)
        stats.decision_requests += 1
        if leaf.request_id in stats.pending_requests:
            self.notes.append(f"model {leaf.model_id}: request {leaf.request_id} logged twice (leaf {index})")
        stats.pending_requests[leaf.request_id] = leaf.decision

    def certificate_issued(self, index: int, leaf: CertificateIssued) -> None:
        if not self._published_card(index, "certificate", leaf.model_id, leaf.card_digest):
            return
        card = self.cards.get(leaf.card_digest)
        try:
            claims = claims_from_signals(leaf.public_signals, card, card.bucket(leaf.bucket))
        except KeyError:
            self.violations.append(f"the certificate at leaf {index} names bucket {leaf.bucket!r}, "
                                   f"which its card {leaf.card_digest[:16]}... does not have")
            return
        except ClaimError as exc:
            self.violations.append(f"the certificate at leaf {index} cannot be honest under its card: {exc}")
            return
        stats = self.stats(leaf.model_id)
        count_certificate(stats, claims)
        self._answer(index, leaf.model_id, leaf.request_id, claims.decision, card)

    def certificate_committed(self, index: int, leaf: CertificateCommitted) -> None:
        if not self._published_card(index, "certificate", leaf.model_id, leaf.card_digest):
            return
        card = self.cards.get(leaf.card_digest)
        problem = certificate_leaf_problem(leaf, card)
        if problem:
            self.violations.append(f"the certificate at leaf {index} cannot be honest under its card: {problem}")
            return
        stats = self.stats(leaf.model_id)
        _count(stats, card.architecture.class_labels[leaf.decision], leaf.status, leaf.capped,
               card.bucket(leaf.bucket).shape.radius == EXACT_RADIUS, leaf.eps_numerator, leaf.eps_scale_bits)
        self._answer(index, leaf.model_id, leaf.request_id, leaf.decision, card)

    def _answer(self, index: int, model_id: str, request_id: str | None, decision: int, card: ModelCard) -> None:
        """Match the certificate at leaf `index` (proving `decision`) to its pending decision request."""
        stats = self.stats(model_id)
        if request_id is None or request_id not in stats.pending_requests:
            stats.certificates_without_request += 1
            self.notes.append(f"model {model_id}: the certificate at leaf {index} answers no pending "
                              f"decision request ({request_id or 'none named'})")
            return
        announced = stats.pending_requests.pop(request_id)
        stats.answered_requests += 1
        if announced != decision:
            labels = card.architecture.class_labels
            said = labels[announced] if announced < len(labels) else str(announced)
            self.violations.append(f"request {request_id} was logged with decision {said!r}, its certificate "
                                   f"at leaf {index} proves {labels[decision]!r}")

    def card_attested(self, index: int, leaf: CardAttested) -> None:
        if not self._published_card(index, "attestation", leaf.model_id, leaf.card_digest):
            return
        stats = self.stats(leaf.model_id)
        stats.attestations += 1
        name = auditor_name(leaf.auditor_key)
        stats.auditors[name] = stats.auditors.get(name, 0) + 1


def _a(what: str) -> str:
    return f"{'an' if what[:1] in 'aeiou' else 'a'} {what}"


def auditor_name(auditor_key: str) -> str:
    """The auditor's name: its verifier key's name, the part before the first '+'."""
    return auditor_key.split("+", 1)[0]


def count_certificate(stats: ModelStats, claims: Claims) -> None:
    """Add one certificate's derived claims to its model's statistics."""
    _count(stats, claims.decision_label, claims.status, claims.capped, claims.eps_exact, claims.eps_numerator,
           claims.eps_scale_bits)


def _count(stats: ModelStats, decision_label: str, status: str, capped: bool, exact: bool, eps_numerator: int,
           eps_scale_bits: int) -> None:
    stats.certificates += 1
    stats.decisions[decision_label] = stats.decisions.get(decision_label, 0) + 1
    stats.flips += status == "counterfactual_flip"
    stats.capped += capped
    stats.exact_radius += status == "certified" and exact
    stats.eps.append((eps_numerator, eps_scale_bits))


def certificate_leaf_problem(leaf: CertificateCommitted, card: ModelCard) -> str | None:
    """Why no honest certificate under `card` can have the fields `leaf` states, or None: the rules
    commitments.claims applies to public signals, restricted to what the leaf carries (its signals are
    hidden under the customer's salt)."""
    try:
        bucket = card.bucket(leaf.bucket)
    except KeyError:
        return f"it names bucket {leaf.bucket!r}, which its card {leaf.card_digest[:16]}... does not have"
    labels = card.architecture.class_labels
    if leaf.decision >= len(labels):
        return f"decision {leaf.decision} is not a class of this model"
    if leaf.eps_scale_bits != card.eps_scale_bits:
        return f"eps is stated at 2^-{leaf.eps_scale_bits}, the card's radii are at 2^-{card.eps_scale_bits}"
    cap = bucket.shape.eps_cap
    if leaf.eps_numerator > cap:
        return f"E = {leaf.eps_numerator} exceeds the cap {cap} of bucket {bucket.bucket}"
    if leaf.status == "counterfactual_flip" and leaf.eps_numerator != 0:
        return "a counterfactual flip certifies radius 0, E is not 0"
    if leaf.capped != (leaf.status == "certified" and leaf.eps_numerator == cap):
        return (f"capped is {str(leaf.capped).lower()}, but the status and E = {leaf.eps_numerator} "
                f"(cap {cap}) say {str(not leaf.capped).lower()}")
    slices = len(card.slices())
    if (leaf.spread is None) != (card.spread is None):
        return "the card proves the spread lens, the leaf has no spread" if card.spread is not None else \
            "the leaf states a spread, the card proves no spread lens"
    if leaf.spread is not None:
        if not 1 <= leaf.spread.distinct_decisions <= min(slices, len(labels)):
            return (f"{leaf.spread.distinct_decisions} distinct decisions is not between 1 and "
                    f"{min(slices, len(labels))} (the slices and the classes)")
        if not 1 <= leaf.spread.score_buckets <= slices:
            return f"{leaf.spread.score_buckets} margin buckets is not between 1 and the {slices} slices"
        if leaf.status == "certified" and leaf.spread.distinct_decisions != 1:
            return "a certified radius means every slice decides the same, the spread says otherwise"
    if (leaf.persistence is None) != (card.persistence is None):
        return "the card proves the persistence lens, the leaf has no persistence" if card.persistence is not None \
            else "the leaf states a persistence summary, the card proves no persistence lens"
    if leaf.persistence is not None:
        values: dict[str, int] = {}
        for a, _ in card.persistence_pairs():
            name = card.sensitive[a].name
            values[name] = values.get(name, 0) + 1
        stated = [s.attribute for s in leaf.persistence]
        if stated != list(values):
            return f"the persistence summary names attributes {stated}, the card's are {list(values)}"
        for s in leaf.persistence:
            if s.favoured + s.disfavoured + s.inconclusive != values[s.attribute] - 1:
                return (f"the persistence summary of {s.attribute!r} counts "
                        f"{s.favoured + s.disfavoured + s.inconclusive} values, it has "
                        f"{values[s.attribute] - 1} besides the customer's own")
    return None

