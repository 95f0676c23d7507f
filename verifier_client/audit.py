"""Check a proof of group counts on a public audit dataset, and say what it means.

`verify_group_counts(bundle, card, dataset)` trusts only the pinned card, the
dataset the auditor holds and the proof. In order:

1. the bundle names this card (digest) and one of its audit circuits, whose
   layout (the card's box and slices, N rows) is what the dataset is checked against;
2. the dataset is the card's kind (input names, scale), has N rows inside
   the domain box with sensitive values forming slices, and its Poseidon
   digest is recomputed here;
3. the public signals must be exactly [card commitment, that digest, then per
   slice n_g, p_g (recomputed from the dataset), a_g, t_g] with
   0 <= t_g <= a_g <= n_g and t_g <= p_g; every readable field of the bundle
   must say the same (slice values and labels from the card);
4. the audit circuit's key passes the auditor's trust list, and the proof
   verifies under it.

Every rate and gap reported (`GroupMetrics`) is an exact fraction of those
verified counts.
"""
from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Iterable, Sequence

from circuits.backends import CurveBackend, get_backend
from circuits.errors import MalformedArtifact
from circuits.groth16 import vk_digest
from circuits.groth16.system import Groth16
from circuits.snarkjs.json_formats import verifying_key_from_json
from commitments.attestation import Attestation
from commitments.audit import AuditDataset, GroupCountsBundle
from commitments.card import ModelCard
from statement.dataset import GROUP_COUNT_FIELDS, DatasetError, DatasetLayout, GroupCount

from .verify import proof_code, card_attestation_problem, read_proof, setup_trust_problem


@dataclass(frozen=True)
class GroupRate:
    labels: tuple[str, ...]
    counts: GroupCount
    selection_rate: Fraction | None  # a / n (None: an empty group)
    true_positive_rate: Fraction | None  # t / p (None: no positives)
    false_positive_rate: Fraction | None  # (a - t) / (n - p) (None: no negatives)


@dataclass(frozen=True)
class GroupMetrics:
    """Disparate impact (lowest over highest selection rate), statistical parity and equal opportunity
    (highest minus lowest selection rate, true-positive rate), the false-positive-rate gap and equalized
    odds (the larger of the two rate gaps, as FVGM and Justicia define EO) over the non-empty groups."""

    groups: tuple[GroupRate, ...]
    disparate_impact: Fraction | None
    statistical_parity: Fraction | None
    equal_opportunity: Fraction | None
    false_positive_gap: Fraction | None
    equalized_odds: Fraction | None
    most_favoured: tuple[str, ...] | None
    least_favoured: tuple[str, ...] | None


@dataclass(frozen=True)
class AuditVerdict:
    ok: bool
    reason: str = ""
    metrics: GroupMetrics | None = None
    code: str | None = None  # an invalid verdict's stable reason code (docs/VERIFYING.md)

    def __bool__(self) -> bool:
        return self.ok


def _refuse(reason: str, code: str = "groups.signals") -> AuditVerdict:
    return AuditVerdict(False, reason, code=code)


def group_metrics(card: ModelCard, counts: Iterable[GroupCount]) -> GroupMetrics:
    """Exact rates and gaps from verified counts (slice order as on the card)."""
    rates = []
    for index, c in enumerate(counts):
        rates.append(GroupRate(card.slice_labels(index)[1], c,
                               Fraction(c.selected, c.rows) if c.rows else None,
                               Fraction(c.true_positives, c.positives) if c.positives else None,
                               Fraction(c.selected - c.true_positives, c.rows - c.positives)
                               if c.rows > c.positives else None))
    selection = [(r.selection_rate, r.labels) for r in rates if r.selection_rate is not None]
    tpr = [r.true_positive_rate for r in rates if r.true_positive_rate is not None]
    fpr = [r.false_positive_rate for r in rates if r.false_positive_rate is not None]
    tpr_gap = max(tpr) - min(tpr) if tpr else None
    fpr_gap = max(fpr) - min(fpr) if fpr else None
    top = max(selection, key=lambda x: x[0], default=None)
    low = min(selection, key=lambda x: x[0], default=None)
    return GroupMetrics(
        groups=tuple(rates),
        # top and low are None together (max and min of one list): testing both is for the type checker
        disparate_impact=low[0] / top[0] if top is not None and low is not None and top[0] > 0 else None,
        statistical_parity=top[0] - low[0] if top is not None and low is not None else None,
        equal_opportunity=tpr_gap, false_positive_gap=fpr_gap,
        equalized_odds=None if tpr_gap is None and fpr_gap is None else max(g for g in (tpr_gap, fpr_gap) if g is not None),
        most_favoured=top[1] if top is not None else None,
        least_favoured=low[1] if low is not None else None)


def verify_group_counts(bundle: GroupCountsBundle, card: ModelCard, dataset: AuditDataset,
                        backend: CurveBackend | None = None, *,
                        trusted_contributors: Iterable[str] = (), trusted_auditors: Sequence[str] = (),
                        attestations: Iterable[Attestation] = ()) -> AuditVerdict:
    """Every check an auditor needs, in order; the first failure is the reason."""
    if bundle.card_digest != card.digest():
        return _refuse("the bundle was issued under another model card than the one you hold", "claims.card-digest")
    if bundle.model_id != card.model_id:
        return _refuse("the bundle names another model than the card", "claims.model")
    try:
        circuit = card.audit_circuit(bundle.circuit)
    except KeyError as exc:
        return _refuse(str(exc.args[0]), "claims.bucket")
    layout = DatasetLayout(circuit.n_rows, tuple(card.box_lower), tuple(card.box_upper),
                           card.sensitive_columns, tuple(card.slices()))
    f = circuit.favourable_class
    if bundle.favourable_class != f or bundle.favourable_label != card.architecture.class_labels[f]:
        return _refuse("the bundle's favourable class is not its audit circuit's", "claims.contradiction")

    # The dataset: the card's inputs at the card's scale, and the favourable class as its label.
    if dataset.feature_names != card.feature_names or dataset.scale_bits != card.scale_bits:
        return _refuse("the audit dataset's inputs or scale are not the card's", "groups.dataset")
    if dataset.favourable_label != card.architecture.class_labels[f]:
        return _refuse(f"the audit dataset labels {dataset.favourable_label!r} as favourable, the circuit "
                       f"{card.architecture.class_labels[f]!r}", "groups.dataset")
    if bundle.dataset_sha256 != dataset.sha256():
        return _refuse("the bundle is about another audit dataset than the one you hold", "groups.dataset")
    rows, labels = [list(r) for r in dataset.rows], list(dataset.labels)
    try:
        digest = layout.digest(rows, labels)
    except DatasetError as exc:
        return _refuse(f"the audit dataset cannot be proved on: {exc}", "groups.dataset")
    if int(bundle.dataset_digest) != digest:
        return _refuse("the bundle's dataset digest is not the dataset's", "groups.dataset")

    # The signals: what the statement's public inputs must be, from the card, the dataset and the claimed
    # selections (which the proof then pins).
    signals = [int(s) for s in bundle.public_signals]
    if len(signals) != layout.n_public or circuit.n_public != layout.n_public:
        return _refuse(f"{layout.n_public} public signals expected, the bundle has {len(signals)}", "claims.signal-count")
    if signals[0] != int(card.commitment):
        return _refuse("the proof is not about the committed model (commitment signal differs from the card's)",
                       "claims.commitment")
    if signals[1] != digest:
        return _refuse("the proof is not about this dataset (digest signal differs)", "groups.dataset")
    k = len(GROUP_COUNT_FIELDS)
    counts = [GroupCount(*signals[2 + k * g: 2 + k * (g + 1)]) for g in range(len(layout.slices))]
    for g, (c, (n, p)) in enumerate(zip(counts, layout.counts(rows, labels))):
        if (c.rows, c.positives) != (n, p):
            return _refuse(f"slice {g}: the signals' row or positive count is not the dataset's", "groups.dataset")
        if not (0 <= c.true_positives <= c.selected <= c.rows and c.true_positives <= c.positives):
            return _refuse(f"slice {g}: the selected counts are impossible (no proof can have them)")
    if len(bundle.groups) != len(layout.slices):
        return _refuse("the bundle does not list every slice", "claims.contradiction")
    for g, (claimed, c) in enumerate(zip(bundle.groups, counts)):
        values, slice_labels = card.slice_labels(g)
        if (claimed.slice_index, claimed.values, claimed.labels) != (g, values, slice_labels):
            return _refuse(f"group {g} of the bundle is not slice {g} of the card", "claims.contradiction")
        if (claimed.rows, claimed.positives, claimed.selected, claimed.true_positives) != \
                (c.rows, c.positives, c.selected, c.true_positives):
            return _refuse(f"group {g}: the bundle's counts differ from what its proof's signals say", "claims.contradiction")

    attested = card_attestation_problem(card, card.digest(), attestations, trusted_auditors)
    if isinstance(attested, str):
        return _refuse(attested, "customer.auditor")
    trust = setup_trust_problem(circuit, trusted_contributors)
    if trust:
        return _refuse(trust, "customer.contributor")
    backend = backend or get_backend()
    try:
        what = f"verifying key of audit circuit {circuit.name}"
        vk = verifying_key_from_json(circuit.verifying_key.model_dump(mode="json"), what=what, backend=backend)
        if vk.n_public != circuit.n_public or vk_digest(vk) != circuit.verifying_key_digest:
            return _refuse(f"the {what} does not match its digest or size on the card", "key.invalid")
        prepared = Groth16(backend).prepare(vk)
    except MalformedArtifact as exc:
        return _refuse(str(exc), "key.invalid")
    try:
        proof = read_proof(bundle.proof, bundle.proof_hex)
    except MalformedArtifact as exc:
        return _refuse(str(exc), "proof.malformed")
    result = Groth16(backend).check(prepared, signals, proof)
    if not result.ok:
        return _refuse(f"proof rejected: {result.reason}", proof_code(result.reason))
    return AuditVerdict(True, metrics=group_metrics(card, counts))


def _fraction(x: Fraction | None) -> str:
    return "-" if x is None else f"{float(x):.4f} ({x.numerator}/{x.denominator})"


def describe(metrics: GroupMetrics, card: ModelCard, circuit: str) -> list[str]:
    """The verified counts and metrics, in plain words."""
    lines = [f"{'group':<36} {'rows':>6} {'selected':>9} {'rate':>22} {'positives':>9} {'TPR':>22} {'FPR':>22}"]
    for g in metrics.groups:
        c = g.counts
        lines.append(f"{', '.join(g.labels)[:36]:<36} {c.rows:>6} {c.selected:>9} {_fraction(g.selection_rate):>22} "
                     f"{c.positives:>9} {_fraction(g.true_positive_rate):>22} {_fraction(g.false_positive_rate):>22}")
    lines += [f"disparate impact (lowest / highest selection rate): {_fraction(metrics.disparate_impact)}",
              f"statistical parity difference: {_fraction(metrics.statistical_parity)}",
              f"equal opportunity difference (true-positive rates): {_fraction(metrics.equal_opportunity)}",
              f"false-positive rate difference: {_fraction(metrics.false_positive_gap)}",
              f"equalized odds (the larger of the two, FVGM's EO): {_fraction(metrics.equalized_odds)}"]
    if metrics.most_favoured is not None:
        lines.append(f"most favoured: {', '.join(metrics.most_favoured)}; "
                     f"least favoured: {', '.join(metrics.least_favoured or ())}")
    return lines
