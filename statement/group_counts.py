"""Group decision counts on a public audit dataset, proved against the committed weights.

A regulator publishes an audit dataset: N rows, each the model's inputs x_r
(integers at the card's scale 2^s, sensitive columns at domain values) and a
label bit l_r (1: the row's true class is the favourable class f). The bank
proves, without revealing a weight, what the committed model decides on it:

    public   C             the card's weight commitment (statement.commitment)
             D             dataset_digest(rows, labels)
             per slice g (every combination of sensitive values, card order):
               n_g = |{r in g}|                 p_g = |{r in g : l_r = 1}|
               a_g = |{r in g : dec(x_r) = f}|  t_g = |{r in g : l_r = 1, dec(x_r) = f}|
    private  weights, biases, salt, the rows and their labels

    dec(x) = argmax of the exact integer forward pass (lowest index on a tie),
    the decision every customer certificate states.

Selection rates a_g / n_g, true-positive rates t_g / p_g, and from them
disparate impact, statistical parity and equal opportunity follow exactly.

Constraints: the commitment as in the certificate statement; the digest
recomputed in the circuit (Poseidon chain over the rows packed `input_bits`
wide, each value range-checked so the packing is injective, then the labels
packed one bit wide); per row the forward pass (one product per weight, an
exact sign comparison per hidden neuron), a one-hot argmax, the slice
indicators (sum to one: every row lies in some slice) and 3 S + 1 products for
the counts. The widths below bound every pre-activation from the range-checked
inputs and the declared weight bounds, so no comparison can wrap, and the
statement is sound whatever the rows: the verifier's own checks on the
dataset (inside the box) only decide whether an honest proof exists.

The circuit's shape fixes N, the architecture, the weight bounds and f, never
the rows: one key serves every audit dataset of N rows.
"""
from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass
from typing import Sequence

from circuits.errors import CircuitError
from circuits.field import MAX_SIGNED_BITS
from circuits.relation import R1CS

from .commitment import committed_parameters
from .dataset import DATASET_TAG, GROUP_COUNT_FIELDS, DatasetError, DatasetLayout, GroupCount, input_bits
from .persistence import relu_of
from .shape import StatementShape, StatementShapeError, model_part_digest
from .spread import argmax
from .widths import bits

class GroupCountsError(CircuitError, DatasetError):
    """A group-counts shape, dataset or witness that cannot be proved."""


@dataclass(frozen=True)
class GroupCountsShape:
    """Every constant of a group-counts circuit: the model part of the certificate statements' shape
    (what the commitment binds), the declared weight bounds, the favourable class and N."""

    n_inputs: int
    hidden_sizes: tuple[int, ...]
    n_classes: int
    sensitive_columns: tuple[int, ...]
    slices: tuple[tuple[int, ...], ...]
    box_lower: tuple[int, ...]
    box_upper: tuple[int, ...]
    scale_bits: int
    weight_bits: tuple[int, ...]
    bias_bits: tuple[int, ...]
    favourable_class: int
    n_rows: int

    def __post_init__(self) -> None:
        if type(self.n_rows) is not int or not 1 <= self.n_rows <= 1 << 20:
            raise GroupCountsError("an audit dataset has 1 to 2^20 rows")
        if type(self.favourable_class) is not int or not 0 <= self.favourable_class < self.n_classes:
            raise GroupCountsError("the favourable class must be a class of the model")
        # The certificate statement's validation of the model part, bounds and slices.
        self.statement_shape()
        if self.input_bits > 64:
            raise GroupCountsError("the domain box is too wide to pack")
        self.value_bounds()

    @classmethod
    def of(cls, shape: StatementShape, n_rows: int, favourable_class: int) -> "GroupCountsShape":
        """The group-counts shape of the model a certificate shape is about."""
        return cls(n_inputs=shape.n_inputs, hidden_sizes=shape.hidden_sizes, n_classes=shape.n_classes,
                   sensitive_columns=shape.sensitive_columns, slices=shape.slices, box_lower=shape.box_lower,
                   box_upper=shape.box_upper, scale_bits=shape.scale_bits, weight_bits=shape.weight_bits,
                   bias_bits=shape.bias_bits, favourable_class=favourable_class, n_rows=n_rows)

    def statement_shape(self) -> StatementShape:
        """A certificate shape of the same model (one slot, no lenses): its validation and model digest."""
        try:
            return StatementShape(
                n_inputs=self.n_inputs, hidden_sizes=tuple(self.hidden_sizes), n_classes=self.n_classes,
                sensitive_columns=tuple(self.sensitive_columns), slices=tuple(tuple(s) for s in self.slices),
                box_lower=tuple(self.box_lower), box_upper=tuple(self.box_upper), scale_bits=self.scale_bits,
                eps_bits=0, eps_cap=0, weight_bits=tuple(self.weight_bits), bias_bits=tuple(self.bias_bits),
                region_slots=1, farkas_slots=1, farkas_bits=1, boundary_bits=1)
        except StatementShapeError as exc:
            raise GroupCountsError(str(exc)) from None

    # ----------------------------------------------------------------- sizes and names
    @property
    def name(self) -> str:
        """The audit circuit's name on the card (commitments.card.audit_circuit_name)."""
        return f"groups-n{self.n_rows}-c{self.favourable_class}"

    @property
    def n_slices(self) -> int:
        return len(self.slices)

    @property
    def n_public(self) -> int:
        return 2 + len(GROUP_COUNT_FIELDS) * self.n_slices

    @property
    def input_bits(self) -> int:
        """Packing width of an input: every box value v has -2^(b-1) <= v < 2^(b-1)."""
        return input_bits(self.box_lower, self.box_upper)

    def layout(self) -> DatasetLayout:
        return DatasetLayout(self.n_rows, tuple(self.box_lower), tuple(self.box_upper),
                             tuple(self.sensitive_columns), tuple(tuple(s) for s in self.slices))

    def value_bounds(self) -> tuple[tuple[int, ...], int]:
        """(bound on every pre-activation of each hidden layer, bound on every logit difference), from
        |x_j| <= 2^(input_bits - 1) (what the packing range-checks) and the declared weight bounds."""
        X = 1 << (self.input_bits - 1)
        WB = [1 << b for b in self.weight_bits]
        BB = [1 << b for b in self.bias_bits]
        v = self.n_inputs * WB[0] * X + BB[0]
        hidden = [v]
        for l in range(1, len(self.hidden_sizes)):
            v = self.hidden_sizes[l - 1] * WB[l] * v + BB[l]
            hidden.append(v)
        decision = self.hidden_sizes[-1] * 2 * WB[-1] * v + 2 * BB[-1]
        if bits(decision) >= MAX_SIGNED_BITS:
            raise GroupCountsError(f"logit differences could reach {bits(decision)} bits and wrap the field")
        return tuple(hidden), decision

    # ----------------------------------------------------------------- digests
    def model_part(self) -> dict:
        return self.statement_shape().model_part()

    def model_digest(self) -> int:
        return model_part_digest(self.model_part())

    def to_json(self) -> dict:
        return json.loads(json.dumps(asdict(self)))  # lists throughout, as the card writes it

    @classmethod
    def from_json(cls, data: dict) -> "GroupCountsShape":
        try:
            return cls(**{k: (tuple(tuple(x) for x in v) if k == "slices" else
                              tuple(v) if isinstance(v, list) else v) for k, v in data.items()})
        except TypeError as exc:
            raise GroupCountsError(f"malformed group-counts shape: {exc}") from None

    def digest(self) -> str:
        return hashlib.sha256(json.dumps(self.to_json(), sort_keys=True, separators=(",", ":")).encode()).hexdigest()


# ----------------------------------------------------------------------------- the dataset
def check_dataset(shape: GroupCountsShape, rows: Sequence[Sequence[int]], labels: Sequence[int]) -> None:
    """commitments.audit.DatasetLayout.check, as a GroupCountsError."""
    try:
        shape.layout().check(rows, labels)
    except GroupCountsError:
        raise
    except DatasetError as exc:
        raise GroupCountsError(str(exc)) from None


def dataset_digest(shape: GroupCountsShape, rows: Sequence[Sequence[int]], labels: Sequence[int]) -> int:
    """The public digest of an audit dataset (commitments.audit.DATASET_SCHEME), checked first."""
    check_dataset(shape, rows, labels)
    return shape.layout().digest(rows, labels)


# ----------------------------------------------------------------------------- public inputs and witness
@dataclass(frozen=True)
class GroupCountsPublic:
    commitment: int
    dataset_digest: int
    counts: tuple[GroupCount, ...]

    def field_elements(self) -> list[int]:
        return [self.commitment, self.dataset_digest,
                *(getattr(c, f) for c in self.counts for f in GROUP_COUNT_FIELDS)]

    @classmethod
    def from_signals(cls, shape: GroupCountsShape, signals: Sequence[int]) -> "GroupCountsPublic":
        if len(signals) != shape.n_public:
            raise GroupCountsError(f"{shape.n_public} public signals expected, got {len(signals)}")
        k = len(GROUP_COUNT_FIELDS)
        counts = tuple(GroupCount(*signals[2 + k * g: 2 + k * (g + 1)]) for g in range(shape.n_slices))
        return cls(signals[0], signals[1], counts)


@dataclass(frozen=True)
class GroupCountsWitness:
    weights: tuple  # per layer, rows of ints (statement.commitment's order)
    biases: tuple
    salt: int
    rows: tuple[tuple[int, ...], ...]
    labels: tuple[int, ...]


def plain_counts(shape: GroupCountsShape, decisions: Sequence[int], rows: Sequence[Sequence[int]],
                 labels: Sequence[int]) -> tuple[GroupCount, ...]:
    """The counts from each row's decision (the plaintext twin of the circuit's sums)."""
    f = shape.favourable_class
    index = {s: g for g, s in enumerate(shape.slices)}
    out = [[0, 0, 0, 0] for _ in shape.slices]
    for x, label, d in zip(rows, labels, decisions):
        c = out[index[tuple(x[c] for c in shape.sensitive_columns)]]
        chosen = int(d == f)
        c[0] += 1
        c[1] += label
        c[2] += chosen
        c[3] += chosen * label
    return tuple(GroupCount(*c) for c in out)


# ----------------------------------------------------------------------------- the circuit
def _forward(cs, shape: GroupCountsShape, weights, biases, x, hidden_bounds):
    """The logits of x: exact integer layers, ReLU by an exact sign comparison."""
    a = x
    for l in range(len(shape.hidden_sizes)):
        z = [cs.inner_product(w_row, a) + b for w_row, b in zip(weights[l], biases[l])]
        a = [relu_of(cs, v, hidden_bounds[l]) for v in z]
    return [cs.inner_product(w_row, a) + b for w_row, b in zip(weights[-1], biases[-1])]


def _slice_indicators(cs, shape: GroupCountsShape, x):
    """q_g = [x's sensitive values are slice g], one-hot (every row lies in exactly one slice)."""
    equal = {}
    for a, c in enumerate(shape.sensitive_columns):
        for v in sorted({s[a] for s in shape.slices}):
            equal[a, v] = cs.is_equal(x[c], v)
    q = []
    for s in shape.slices:
        ind = equal[0, s[0]]
        for a in range(1, len(s)):
            ind = cs.and_(ind, equal[a, s[a]])
        q.append(ind)
    cs.assert_equal(cs.sum(q), 1)
    return q


def build_group_counts(cs, shape: GroupCountsShape, public: GroupCountsPublic | None = None,
                       witness: GroupCountsWitness | None = None, progress=None) -> None:
    """Declare the statement's public inputs, witness and constraints (values when cs.with_values)."""
    report = progress or (lambda done, total: None)
    if cs.with_values and (public is None or witness is None):
        raise GroupCountsError("building with values needs both the public inputs and the witness")
    if not cs.with_values:
        public = witness = None
    pub = public.field_elements() if public is not None else [None] * shape.n_public
    hidden_bounds, decision_bound = shape.value_bounds()
    S, N, d = shape.n_slices, shape.n_rows, shape.n_inputs

    commitment = cs.public_input("commitment", pub[0])
    digest = cs.public_input("dataset_digest", pub[1])
    counts = [[cs.public_input(f"{field}[{g}]", pub[2 + len(GROUP_COUNT_FIELDS) * g + i])
               for i, field in enumerate(GROUP_COUNT_FIELDS)] for g in range(S)]

    weights, biases = committed_parameters(cs, shape, commitment, *(
        (None, None, None) if witness is None else (witness.weights, witness.biases, witness.salt)))

    with cs.scope("dataset"):
        rows = [cs.private_inputs(f"row[{r}]", d, None if witness is None else witness.rows[r]) for r in range(N)]
        labels = cs.private_inputs("label", N, None if witness is None else witness.labels)
        packed = cs.pack([v for x in rows for v in x], shape.input_bits, signed=True)
        packed += cs.pack(labels, 1, signed=False)  # range-checks each label to one bit
        preimage = [cs.constant(DATASET_TAG), cs.constant(N), cs.constant(d), cs.constant(shape.input_bits), *packed]
        cs.assert_equal(cs.poseidon_chain(preimage), digest)

    sums = [[[] for _ in GROUP_COUNT_FIELDS] for _ in range(S)]
    f = shape.favourable_class
    for r in range(N):
        with cs.scope(f"row{r}"):
            logits = _forward(cs, shape, weights, biases, rows[r], hidden_bounds)
            chosen, _ = argmax(cs, logits, decision_bound)
            selected = chosen[f]
            hit = cs.mul(selected, labels[r])
            for g, q in enumerate(_slice_indicators(cs, shape, rows[r])):
                sums[g][0].append(q)
                sums[g][1].append(cs.mul(q, labels[r]))
                sums[g][2].append(cs.mul(q, selected))
                sums[g][3].append(cs.mul(q, hit))
        if (r + 1) % 50 == 0 or r + 1 == N:
            report(r + 1, N)
    with cs.scope("counts"):
        for g in range(S):
            for i in range(len(GROUP_COUNT_FIELDS)):
                cs.assert_equal(cs.sum(sums[g][i]), counts[g][i])


def group_counts_relation(shape: GroupCountsShape) -> R1CS:
    """The constraint system of `shape`, built without values (for key setup and audits)."""
    from circuits.builder import ConstraintSystem

    cs = ConstraintSystem(with_values=False)
    build_group_counts(cs, shape)
    return cs.compile(wire_names=False)
