"""Public inputs and private witness of the fairness statement: plain ints and cover kinds.

Public inputs, in this order (the bundle and the verifier rely on it):

    0 commitment   Poseidon commitment to (shape model digest, salt, weights)
    1 decision y   0 <= y < n_classes
    2 E            eps numerator at 2^eps_bits, 0 <= E <= eps_cap
    3 status       0 = certified radius, 1 = counterfactual flip
    4 flip slice   index of the flipping slice (0 when status is 0)
    5.. query x*   n_inputs signed integers at 2^s, as field elements (v mod R)
    then, with the spread lens (shapes with spread_width > 0):
        one decision per slice (the argmax at the query with that slice's values),
        the number of distinct margin buckets over the slices
    then, with the persistence lens (shapes with persistence columns):
        delta d (at 2^s), then LB, UB per (attribute, value) of `shape.persistence_pairs`
        (signed ints at the logit scale, as field elements)
    last part slice the slice a per-slice statement covers (per-slice shapes only)

Private witness: weights and biases (signed ints), the salt (a field
element), and per slice (the one slice of a per-slice statement) the K region codes (bits; slot 0 MUST be the start
region, padding repeats the first code), a cover kind per (slot, row) (the
certificate's `fairness.covers.CoverKind`), the Farkas pool (F entries,
None = unused), and the minimality designation.
A FLIP certificate needs nothing but weights and salt: `StatementWitness.flip`
fills the rest with the trivially valid assignment the circuit accepts under
status 1 (every slot = the start code, every row DISTANCE, no Farkas entry,
no designation).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from circuits.errors import CircuitError
from circuits.field import R
from fairness.covers import CoverKind

# The circuit tells four covers of a row apart: DISTANCE, NEIGHBOR, FAR_REGION
# (neuron rows: the neighbouring region's pool entry, row = n_rows, separates
# it from u*), and a pool entry keyed by the row's own (code, row), whichever
# of these kinds the certificate names (the entry's constraints decide which
# claim it proves).
FARKAS_KINDS = frozenset({CoverKind.EMPTY_FACET, CoverKind.FAR_FACET, CoverKind.NO_CLASS})
NEURON_KINDS = frozenset({CoverKind.DISTANCE, CoverKind.NEIGHBOR, CoverKind.FAR_REGION}) | FARKAS_KINDS
DECISION_KINDS = frozenset({CoverKind.DISTANCE}) | FARKAS_KINDS

STATUS_CERTIFIED = 0
STATUS_FLIP = 1


class StatementWitnessError(CircuitError):
    """A statement witness or public input that does not fit its shape."""


Bits = tuple[int, ...]


@dataclass(frozen=True)
class StatementPublic:
    commitment: int
    decision: int
    eps: int
    status: int
    flip_slice: int
    query: tuple[int, ...]
    part_slice: int | None = None  # per-slice statements: the slice this proof covers
    # The spread lens: each slice's decision and the number of distinct margin buckets (None: no lens).
    spread_decisions: tuple[int, ...] | None = None
    spread_buckets: int | None = None
    # The persistence lens: delta, and (LB, UB) per (attribute, value) pair (None: no lens).
    persistence_delta: int | None = None
    persistence_bounds: tuple[tuple[int, int], ...] | None = None

    def field_elements(self) -> list[int]:
        """The public inputs as field elements, in circuit order."""
        head = [self.commitment, self.decision, self.eps, self.status, self.flip_slice]
        lens = [] if self.spread_decisions is None else [*self.spread_decisions, self.spread_buckets]
        if self.persistence_bounds is not None:
            lens += [self.persistence_delta, *(v for pair in self.persistence_bounds for v in pair)]
        tail = [] if self.part_slice is None else [self.part_slice]
        return [v % R for v in head] + [v % R for v in self.query] + [v % R for v in lens + tail]


@dataclass(frozen=True)
class FarkasEntry:
    """A residual-form Farkas certificate for (code, row) of one slice:
    lambdas (one per hidden neuron, >= 0) on the region rows, mu on the extra
    row (row < H: z_row = 0, any sign; row = H + o: d_o <= 0, mu >= 0;
    row = n_rows: no extra row, the whole region, mu = 0), and for a
    separation certificate box multipliers (neuron rows and regions only)."""

    code: Bits
    row: int
    lambdas: tuple[int, ...]
    mu: int
    # Box multipliers nu (one per free input): a separation certificate (the
    # facet lies at distance >= eps). None: an emptiness certificate, for which
    # the circuit uses nu = -r (the residual form).
    box: tuple[int, ...] | None = None


@dataclass(frozen=True)
class SliceWitness:
    codes: tuple[Bits, ...]  # K codes, flat bits; codes[0] is the start region
    kinds: tuple[tuple[CoverKind, ...], ...]  # K x n_rows: NEURON_KINDS, then DECISION_KINDS
    farkas: tuple[FarkasEntry | None, ...]  # F entries


@dataclass(frozen=True)
class Designation:
    """The attaining row: slot `slot` of slice `slice_index`, row `row`
    (neuron index, or H + o for a decision row), and for a decision row the
    boundary point P / D (D > 0) on its hyperplane inside the region and box."""

    slice_index: int
    slot: int
    row: int
    point: tuple[int, ...]  # numerators, one per free column
    denominator: int


@dataclass(frozen=True)
class Counterexample:
    """Minimality of an exact statement: a rational point P / D (free
    coordinates, 1 <= D <= 2^boundary_bits) of slice `slice_index` in the
    box, closer than (E+1)/2^t, at which the o-th class other than y
    (`other_class`) at least ties y in the committed model's forward pass."""

    slice_index: int
    other_class: int
    point: tuple[int, ...]
    denominator: int


@dataclass(frozen=True)
class StatementWitness:
    weights: tuple[tuple[tuple[int, ...], ...], ...]  # weights[l][i][j]
    biases: tuple[tuple[int, ...], ...]
    salt: int
    slices: tuple[SliceWitness, ...]
    designation: Designation | Counterexample | None  # None: E is the cap, or status FLIP
    # Optimised lower relaxation slopes, a / 2^alpha_bits (shapes with alpha_bits; statement.relaxation): the
    # bound radius's, slice after slice, and the persistence lens's, pair after pair. Empty otherwise.
    radius_slopes: tuple[int, ...] = ()
    persistence_slopes: tuple[int, ...] = ()

    @classmethod
    def flip(cls, shape, weights, biases, salt: int, start_codes: Sequence[Bits]) -> "StatementWitness":
        """The witness of a FLIP statement (see the module docstring)."""
        slices = tuple(
            SliceWitness(codes=(tuple(code),) * shape.region_slots,
                         kinds=((CoverKind.DISTANCE,) * shape.n_rows,) * shape.region_slots,
                         farkas=(None,) * shape.farkas_slots)
            for code in start_codes)
        return cls(tuple(tuple(tuple(r) for r in w) for w in weights), tuple(tuple(b) for b in biases),
                   salt, slices, None)


def code_id(bits: Sequence[int]) -> int:
    return sum(int(b) << i for i, b in enumerate(bits))


def validate(shape, public: StatementPublic, witness: StatementWitness) -> None:
    """Shape checks (lengths, kinds, index ranges) with clear errors; the
    constraints decide everything else."""
    def need(cond: bool, msg: str) -> None:
        if not cond:
            raise StatementWitnessError(msg)

    need(len(public.query) == shape.n_inputs, f"query must have {shape.n_inputs} values")
    need(all(type(v) is int for v in public.query), "query values must be ints")
    sizes = shape.layer_sizes
    need(len(witness.weights) == shape.n_layers and len(witness.biases) == shape.n_layers,
         f"need {shape.n_layers} weight matrices and bias vectors")
    for l in range(shape.n_layers):
        w, b = witness.weights[l], witness.biases[l]
        need(len(w) == sizes[l + 1] and all(len(row) == sizes[l] for row in w),
             f"layer {l} weights must be {sizes[l + 1]} x {sizes[l]}")
        need(len(b) == sizes[l + 1], f"layer {l} bias must have {sizes[l + 1]} entries")
    need(0 <= witness.salt < R, "salt must be a field element")
    if shape.spread:
        need(public.spread_decisions is not None and len(public.spread_decisions) == shape.n_slices
             and all(type(v) is int for v in public.spread_decisions) and type(public.spread_buckets) is int,
             f"a statement with the spread lens takes {shape.n_slices} decisions and a bucket count")
    else:
        need(public.spread_decisions is None and public.spread_buckets is None,
             "a statement without the spread lens takes no spread inputs")
    if shape.persistence:
        pairs = public.persistence_bounds
        need(type(public.persistence_delta) is int and pairs is not None
             and len(pairs) == len(shape.persistence_pairs)
             and all(len(p) == 2 and all(type(v) is int for v in p) for p in pairs),
             f"a statement with the persistence lens takes delta and {len(shape.persistence_pairs)} bound pairs")
    else:
        need(public.persistence_delta is None and public.persistence_bounds is None,
             "a statement without the persistence lens takes no persistence inputs")
    if shape.per_slice:
        need(type(public.part_slice) is int and 0 <= public.part_slice < shape.n_slices,
             f"a per-slice statement names the slice it covers (0..{shape.n_slices - 1})")
        need(len(witness.slices) == 1, "a per-slice statement takes the witness of its one slice")
    else:
        need(public.part_slice is None, "a whole statement covers every slice: it names no part slice")
        need(len(witness.slices) == shape.n_slices, f"need one slice witness per slice ({shape.n_slices})")
    H, K, F = shape.n_hidden, shape.region_slots, shape.farkas_slots
    for si, sw in enumerate(witness.slices):
        need(len(sw.codes) == K and all(len(c) == H and set(c) <= {0, 1} for c in sw.codes),
             f"slice {si}: need {K} codes of {H} bits")
        need(len(sw.kinds) == K and all(len(k) == shape.n_rows for k in sw.kinds),
             f"slice {si}: need {K} x {shape.n_rows} cover kinds")
        decision_kinds = DECISION_KINDS | ({CoverKind.FAR_CLASS} if shape.exact else set())
        for kinds in sw.kinds:
            need(all(k in NEURON_KINDS for k in kinds[:H]), f"slice {si}: neuron cover kind out of range")
            need(all(k in decision_kinds for k in kinds[H:]),
                 f"slice {si}: decision rows take DISTANCE or a Farkas pool entry"
                 + (" (or a far-class separation)" if shape.exact else ""))
        need(len(sw.farkas) == F, f"slice {si}: need {F} Farkas entries (None for unused)")
        for e in sw.farkas:
            if e is not None:
                need(len(e.code) == H and set(e.code) <= {0, 1}, f"slice {si}: Farkas entry code must be {H} bits")
                need(0 <= e.row <= shape.n_rows, f"slice {si}: Farkas entry row out of range")
                need(e.row < shape.n_rows or e.box is not None, f"slice {si}: a region entry needs box multipliers")
                need(len(e.lambdas) == H, f"slice {si}: Farkas entry needs {H} multipliers")
                need(e.box is None or (len(e.box) == shape.n_free and all(type(v) is int for v in e.box)),
                     f"slice {si}: box multipliers must be {shape.n_free} ints")
    d = witness.designation
    if shape.exact:
        need(d is None or isinstance(d, Counterexample), "an exact statement's minimality is a counterexample")
        if d is not None:
            need(0 <= d.slice_index < shape.n_slices and 0 <= d.other_class < shape.n_classes - 1,
                 "counterexample index out of range")
            need(len(d.point) == shape.n_free and all(type(v) is int for v in d.point)
                 and type(d.denominator) is int, f"counterexample needs {shape.n_free} integer numerators")
        return
    need(d is None or isinstance(d, Designation), "a fast statement's minimality is a designated row")
    if d is not None:
        need(0 <= d.slice_index < shape.n_slices and 0 <= d.slot < K and 0 <= d.row < shape.n_rows,
             "designation index out of range")
        need(len(d.point) == shape.n_free, f"boundary point needs {shape.n_free} numerators")
