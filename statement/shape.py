"""The public shape of a fairness statement: every constant baked into its keys.

A `StatementShape` fixes the architecture, the sensitive slices, the domain
box, the scales, the declared weight/bias bounds and the bucket sizes (K
region slots and F Farkas slots per slice). Two proofs share keys iff their
shapes are equal; `digest()` names the shape, `model_digest()` names only its
model part (what the weight commitment binds, independent of the bucket).

Conventions (all ints):
- inputs and weights at scale 2^scale_bits, layer l's biases at 2^(s(l+2));
- eps = E / 2^eps_bits, 0 <= E <= eps_cap;
- |W_l[i][j]| <= 2^weight_bits[l], |b_l[i]| <= 2^bias_bits[l] (the circuit
  range-checks every private parameter against these: [-2^b, 2^b));
- Farkas multipliers 0 <= lambda < 2^farkas_bits, |mu| < 2^(farkas_bits+1)
  (mu >= 0 on decision rows);
- the minimality point P/D (a boundary point in fast statements, a
  counterexample in exact ones) has 1 <= D <= 2^boundary_bits;
- `radius` is "fast" (minimality by a projection-distance row: GeoCert's
  lower bound) or "exact" (minimality by a counterexample: E is the floor of
  the true radius); exact statements also accept far-class covers; "bound"
  proves eps by linear bound propagation instead of regions (a lower bound, no
  minimality; statement.bound_radius), its K and F are 1 and unused;
- `per_slice` (exact statements only): the statement covers ONE slice, named
  by one more public input, and K, F size that slice alone; a certificate is
  then proved by one such proof per slice, each in the bucket its slice needs,
  which together state what the whole statement states (docs/STATEMENT.md,
  "Per-slice proofs"). The parts' largest circuit is its largest slice's;
- `spread_width` > 0 adds the counterfactual spread lens (fairness.spread):
  every slice's decision and the number of distinct margin buckets of width
  spread_width (logit scale) for `favourable_class` become public inputs;
- `persistence_columns` non-empty adds the persistent-bias lens
  (fairness.persistence, statement.persistence): delta (at 2^s) and, per
  (sensitive attribute, value), bounds LB <= min g, UB >= max g at the logit
  scale become public inputs; `favourable_class` names the margin's class;
- `sensitive_widths`: how many of the sensitive columns each attribute spans,
  in order (a one-hot attribute spans one per kept value); empty means one
  each. A slice is the attributes' points concatenated; the grouping matters
  to the persistence lens alone (it changes one attribute, all its columns);
- `alpha_bits` > 0 (bound radius or persistence lens only): every lower
  relaxation slope of bound propagation is a private a / 2^alpha_bits in
  [0, 1] the prover chooses (statement.relaxation); 0: the fixed slopes;
- hidden layer l's multipliers have s (L - l) more bits than farkas_bits
  (`lambda_bits`), except on fast statements' neuron-row entries;
- hidden neurons are numbered flat, layer by layer; an activation code is
  one bit per hidden neuron, packed little-endian into id = sum bit_i 2^i;
- rows of a region: index 0..H-1 the hidden neurons, H+o the decision row
  against the o-th class other than y (class o if o < y, else o + 1).
"""
from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, field

from circuits.errors import CircuitError
from circuits.field import R
from fairness.multipliers import RELAXATION_SLOPE_BITS, exact_multiplier_bits
from fairness.radius import PROVED_RADII, Radius

# The radii a statement proves (fairness.radius), by the names the statement modules use.
FAST_RADIUS = Radius.FAST
EXACT_RADIUS = Radius.EXACT
BOUND_RADIUS = Radius.BOUND  # linear bound propagation (statement.bound_radius): no regions, K = F = 1


class StatementShapeError(CircuitError):
    """A statement shape that is malformed or could wrap around the field."""


def _ints(name: str, values, *, nonneg: bool = False) -> tuple[int, ...]:
    out = tuple(values)
    if not all(type(v) is int for v in out):
        raise StatementShapeError(f"{name} must be integers")
    if nonneg and any(v < 0 for v in out):
        raise StatementShapeError(f"{name} must be non-negative")
    return out


@dataclass(frozen=True)
class StatementShape:
    n_inputs: int
    hidden_sizes: tuple[int, ...]
    n_classes: int
    sensitive_columns: tuple[int, ...]
    slices: tuple[tuple[int, ...], ...]  # every combination of sensitive values, in order
    box_lower: tuple[int, ...]
    box_upper: tuple[int, ...]
    scale_bits: int
    eps_bits: int
    eps_cap: int
    weight_bits: tuple[int, ...]  # one per layer (hidden layers and the logit layer)
    bias_bits: tuple[int, ...]
    region_slots: int  # K
    farkas_slots: int  # F
    farkas_bits: int
    boundary_bits: int
    radius: str = Radius.FAST  # one of PROVED_RADII (a shape read from JSON holds the plain word)
    per_slice: bool = False
    # The spread lens (fairness.spread): 0 = off; else the bucket width W at the logit scale, and the
    # class whose logit margin is bucketed. Adds the per-slice decisions and the bucket count as inputs.
    spread_width: int = 0
    favourable_class: int = 0
    # The persistence lens (fairness.persistence): the numeric columns a customer's box moves (empty = off).
    # Adds delta and one (LB, UB) pair per (sensitive attribute, value) as public inputs; two classes only.
    persistence_columns: tuple[int, ...] = ()
    # How many sensitive columns each attribute spans, in order (empty: one each; all ones are stored empty).
    sensitive_widths: tuple[int, ...] = ()
    # Optimised lower relaxation slopes (statement.relaxation): 0 = the fixed ones (CROWN's in the bound radius,
    # [u + l >= 0] in the persistence lens); t > 0 = a private slope a / 2^t in [0, 1] per bounded quantity and
    # neuron, for the bound radius and the persistence lens (the statements that propagate bounds).
    alpha_bits: int = 0
    free_columns: tuple[int, ...] = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "hidden_sizes", _ints("hidden_sizes", self.hidden_sizes))
        object.__setattr__(self, "sensitive_columns", _ints("sensitive_columns", self.sensitive_columns))
        object.__setattr__(self, "slices", tuple(_ints("slice", s) for s in self.slices))
        object.__setattr__(self, "box_lower", _ints("box_lower", self.box_lower))
        object.__setattr__(self, "box_upper", _ints("box_upper", self.box_upper))
        object.__setattr__(self, "weight_bits", _ints("weight_bits", self.weight_bits, nonneg=True))
        object.__setattr__(self, "bias_bits", _ints("bias_bits", self.bias_bits, nonneg=True))
        for name in ("n_inputs", "n_classes", "scale_bits", "eps_bits", "eps_cap", "region_slots",
                     "farkas_slots", "farkas_bits", "boundary_bits"):
            v = getattr(self, name)
            if type(v) is not int or v < 0:
                raise StatementShapeError(f"{name} must be a non-negative int, got {v!r}")
        n = self.n_inputs
        if n < 1 or self.n_classes < 2:
            raise StatementShapeError("need at least one input and two classes")
        if not self.hidden_sizes or any(h < 1 for h in self.hidden_sizes):
            raise StatementShapeError("need at least one hidden layer, each with at least one neuron")
        if self.n_hidden > 240:
            raise StatementShapeError("at most 240 hidden neurons (codes are packed into one field element)")
        if len(self.weight_bits) != self.n_layers or len(self.bias_bits) != self.n_layers:
            raise StatementShapeError(f"weight_bits and bias_bits need one entry per layer ({self.n_layers})")
        if len(self.box_lower) != n or len(self.box_upper) != n:
            raise StatementShapeError("the box needs one bound per input")
        if any(lo > hi for lo, hi in zip(self.box_lower, self.box_upper)):
            raise StatementShapeError("box has a lower bound above its upper bound")
        cols = self.sensitive_columns
        if not cols or len(set(cols)) != len(cols) or any(not 0 <= c < n for c in cols):
            raise StatementShapeError("sensitive columns must be distinct input indices (at least one)")
        if len(cols) == n:
            raise StatementShapeError("at least one input must be non-sensitive")
        object.__setattr__(self, "sensitive_widths", _widths(self.sensitive_widths, len(cols)))
        if not self.slices or len(set(self.slices)) != len(self.slices):
            raise StatementShapeError("slices must be distinct and non-empty")
        for s in self.slices:
            if len(s) != len(cols):
                raise StatementShapeError("each slice needs one value per sensitive column")
            for c, v in zip(cols, s):
                if not self.box_lower[c] <= v <= self.box_upper[c]:
                    raise StatementShapeError(f"slice value {v} of column {c} lies outside the box")
        if self.region_slots < 1 or self.farkas_slots < 1:
            raise StatementShapeError("need at least one region slot and one Farkas slot")
        if self.boundary_bits < 1:
            raise StatementShapeError("boundary_bits must be at least 1")
        if self.radius not in PROVED_RADII:
            raise StatementShapeError(f"radius must be one of {', '.join(PROVED_RADII)}, not {self.radius!r}")
        if type(self.per_slice) is not bool:
            raise StatementShapeError("per_slice must be a bool")
        if self.per_slice and not self.exact:
            # A fast statement's minimality designates a row of one slice's covering: splitting it
            # would reveal which slice attains eps. The counterexample of an exact one is slice-free.
            raise StatementShapeError("per-slice statements prove the exact radius only")
        if type(self.spread_width) is not int or self.spread_width < 0:
            raise StatementShapeError("spread_width must be a non-negative int (0: no spread lens)")
        if self.spread_width >= 1 << 200:
            raise StatementShapeError("spread_width must be below 2^200 (its comparisons must not wrap)")
        if type(self.favourable_class) is not int or not 0 <= self.favourable_class < self.n_classes:
            raise StatementShapeError("favourable_class must be a class index")
        object.__setattr__(self, "persistence_columns", _ints("persistence_columns", self.persistence_columns))
        moved = self.persistence_columns
        if moved:
            if self.n_classes != 2:
                raise StatementShapeError("the persistence lens needs a two-class model (its margin is linear)")
            if list(moved) != sorted(set(moved)) or any(not 0 <= j < n or j in cols for j in moved):
                raise StatementShapeError("persistence columns must be distinct non-sensitive inputs, in order")
            if all(self.box_lower[j] == self.box_upper[j] for j in moved):
                raise StatementShapeError("the persistence lens needs a column the domain box lets move")
        if not self.spread and not moved and self.favourable_class != 0:
            raise StatementShapeError("a favourable class is a parameter of a lens only")
        if type(self.alpha_bits) is not int or not 0 <= self.alpha_bits <= RELAXATION_SLOPE_BITS:
            raise StatementShapeError(f"alpha_bits must be an int in [0, {RELAXATION_SLOPE_BITS}], "
                                      f"not {self.alpha_bits!r}")
        if self.alpha_bits and self.radius != BOUND_RADIUS and not moved:
            # Only bound propagation has slopes: anywhere else the field would name one circuit twice.
            raise StatementShapeError("alpha_bits is a parameter of the bound radius and the persistence lens only")
        object.__setattr__(self, "free_columns", tuple(i for i in range(n) if i not in set(cols)))

    # ----------------------------------------------------------------- sizes
    @property
    def n_layers(self) -> int:
        return len(self.hidden_sizes) + 1

    @property
    def n_hidden(self) -> int:
        return sum(self.hidden_sizes)

    @property
    def n_free(self) -> int:
        return len(self.free_columns)

    @property
    def n_slices(self) -> int:
        return len(self.slices)

    @property
    def n_rows(self) -> int:
        """Rows per region: H neuron rows and n_classes - 1 decision rows."""
        return self.n_hidden + self.n_classes - 1

    @property
    def layer_sizes(self) -> tuple[int, ...]:
        return (self.n_inputs, *self.hidden_sizes, self.n_classes)

    @property
    def exact(self) -> bool:
        """Whether the statement proves the exact radius (a counterexample) rather than the fast one."""
        return self.radius == EXACT_RADIUS

    @property
    def lambda_bits(self) -> tuple[int, ...]:
        """Bits of each hidden neuron's Farkas multiplier (flat order): 0 <= lambda < 2^bits.

        Layer l gets s (L - l) bits more than farkas_bits (`exact_multiplier_bits`):
        its rows are at a scale that much below the decision rows'."""
        return exact_multiplier_bits(self.hidden_sizes, self.scale_bits, self.farkas_bits)

    @property
    def neuron_entry_lambda_bits(self) -> tuple[int, ...]:
        """The same for pool entries of neuron rows and regions. Fast statements square
        those entries' separation values whole, so their multipliers stay below 2^farkas_bits;
        exact statements compare truncated values and allow `lambda_bits`."""
        return self.lambda_bits if self.exact else (self.farkas_bits,) * self.n_hidden

    @property
    def bucket(self) -> str:
        return (f"k{self.region_slots}-f{self.farkas_slots}" + ("-exact" if self.exact else "")
                + ("-bound" if self.radius == BOUND_RADIUS else "") + ("-slice" if self.per_slice else ""))

    @property
    def spread(self) -> bool:
        """Whether the statement proves the counterfactual spread (fairness.spread)."""
        return self.spread_width > 0

    @property
    def n_spread_public(self) -> int:
        """Public inputs of the spread lens: one decision per slice, then the bucket count."""
        return self.n_slices + 1 if self.spread else 0

    @property
    def persistence(self) -> bool:
        """Whether the statement proves persistent-bias bounds (fairness.persistence)."""
        return bool(self.persistence_columns)

    @property
    def attribute_widths(self) -> tuple[int, ...]:
        """How many sensitive columns each attribute spans (one each unless `sensitive_widths` says)."""
        return self.sensitive_widths or (1,) * len(self.sensitive_columns)

    def attribute_columns(self, attribute: int) -> tuple[int, ...]:
        """The sensitive columns of one attribute."""
        at = sum(self.attribute_widths[:attribute])
        return self.sensitive_columns[at:at + self.attribute_widths[attribute]]

    @property
    def persistence_pairs(self) -> tuple[tuple[int, tuple[int, ...]], ...]:
        """(sensitive attribute index, value's point) for every value of every sensitive attribute,
        points in lexicographic order: the counterfactual copies whose bounds the lens proves (the
        query's own value gives g = 0)."""
        if not self.persistence:
            return ()
        out = []
        at = 0
        for a, w in enumerate(self.attribute_widths):
            out += [(a, p) for p in sorted({s[at:at + w] for s in self.slices})]
            at += w
        return tuple(out)

    @property
    def n_persistence_public(self) -> int:
        """Public inputs of the persistence lens: delta, then (LB, UB) per pair."""
        return 1 + 2 * len(self.persistence_pairs) if self.persistence else 0

    @property
    def n_public(self) -> int:
        return 5 + self.n_inputs + self.n_spread_public + self.n_persistence_public + (1 if self.per_slice else 0)

    @property
    def witness_slices(self) -> int:
        """Slice witnesses the statement takes: every slice, or the one it covers."""
        return 1 if self.per_slice else self.n_slices

    # ----------------------------------------------------------------- digests
    def to_json(self) -> dict:
        d = asdict(self)
        d.pop("free_columns")
        if self.radius == FAST_RADIUS:
            d.pop("radius")  # fast shapes keep the digests they had before exact statements existed
        if not self.per_slice:
            d.pop("per_slice")  # and whole statements the digests they had before per-slice ones
        if not self.spread:
            d.pop("spread_width")  # and statements without lenses the digests they had before lenses
        if not self.spread and not self.persistence:
            d.pop("favourable_class")
        if not self.persistence:
            d.pop("persistence_columns")
        if not self.sensitive_widths:
            d.pop("sensitive_widths")  # one column per attribute: the digests shapes had before wider ones
        if not self.alpha_bits:
            d.pop("alpha_bits")  # fixed slopes: the digests shapes had before optimised ones
        return d

    @classmethod
    def from_json(cls, data: dict) -> "StatementShape":
        try:
            return cls(**{k: (tuple(tuple(x) for x in v) if k == "slices" else
                              tuple(v) if isinstance(v, list) else v) for k, v in data.items()})
        except TypeError as exc:
            raise StatementShapeError(f"malformed shape: {exc}") from None

    def digest(self) -> str:
        """SHA-256 (hex) of the canonical JSON of the whole shape (names the keys)."""
        return hashlib.sha256(json.dumps(self.to_json(), sort_keys=True, separators=(",", ":")).encode()).hexdigest()

    def model_part(self) -> dict:
        """The fields that describe the model, not the circuit bucket or eps scale."""
        return {"n_inputs": self.n_inputs, "hidden_sizes": list(self.hidden_sizes), "n_classes": self.n_classes,
                "scale_bits": self.scale_bits, "sensitive_columns": list(self.sensitive_columns),
                "slices": [list(s) for s in self.slices], "box_lower": list(self.box_lower),
                "box_upper": list(self.box_upper)}

    def model_digest(self) -> int:
        """SHA-256 of the canonical JSON of `model_part()`, as a field element
        (the big-endian integer of the digest, reduced mod R)."""
        return model_part_digest(self.model_part())


def _widths(widths, n_columns: int) -> tuple[int, ...]:
    """The attributes' widths, checked against the sensitive columns; () when every attribute has one."""
    out = _ints("sensitive_widths", widths)
    if out and (any(w < 1 for w in out) or sum(out) != n_columns):
        raise StatementShapeError(f"sensitive_widths must be positive and add up to the {n_columns} sensitive "
                                  f"columns, not {list(out)}")
    return () if all(w == 1 for w in out) else out


def model_part_digest(part: dict) -> int:
    """SHA-256 of the canonical JSON of a shape's model part, as a field element (reduced mod R)."""
    text = json.dumps(part, sort_keys=True, separators=(",", ":"))
    return int.from_bytes(hashlib.sha256(text.encode()).digest(), "big") % R
