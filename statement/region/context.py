"""What every region statement declares before its slices: public inputs, committed parameters, the
query's domain, the one-hot decision, eps and status, and the code-independent layer-0 terms.

`RegionContext` carries these circuit values to the statement's later parts (covers, decisions,
lenses, minimality), so each part is a function of the context and its own arguments.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

from circuits.errors import CircuitError

from ..affine import Form
from ..checks import assert_nonnegative, assert_product_zero, bool_inputs
from ..commitment import committed_parameters
from ..public_inputs import PublicInputs, declare_public_inputs, query_in_domain
from ..shape import StatementShape
from ..widths import StatementWidths, widths as shape_widths
from ..witness import StatementPublic, StatementWitness, validate


@dataclass
class StatementHandles:
    """Circuit values of interest (for tests and debugging)."""

    public: list
    widths: StatementWidths


class Values:
    """Witness accessors that return None when building without values."""

    def __init__(self, witness: StatementWitness | None):
        self.w = witness

    def __call__(self, fn: Callable[[StatementWitness], Any]) -> Any:
        return None if self.w is None else fn(self.w)


@dataclass
class RegionContext:
    """The circuit values a region statement's parts share."""

    cs: Any
    shape: StatementShape
    wd: StatementWidths
    val: Values
    public: StatementPublic | None
    inputs: PublicInputs
    weights: list
    biases: list
    q_slice: list  # one-hot: the query's own slice
    y_bits: list  # one-hot: the decision
    ge: list  # ge[o] = [y <= o]
    not_status: Any
    gate_min: Any  # minimality applies: status 0 and E below its cap
    e_sq: Any  # E^2 2^(2s)
    e1_sq: Any  # (E+1)^2 2^(2s)
    flip_bits: list  # one-hot over slices: the flip slice (all zero unless status 1)
    free_dot: list = field(default_factory=list)  # layer 0: W_0[i, free] . u*
    nsq0: list = field(default_factory=list)  # layer 0: ||W_0[i, free]||^2
    nonzero0: list = field(default_factory=list)  # layer 0: the zero-normal rule, off under status 1
    dec_rows: list = field(default_factory=list)  # (Delta_o, delta_o) of the decision rows

    @property
    def box_lo_free(self) -> list[int]:
        return [self.shape.box_lower[j] for j in self.shape.free_columns]

    @property
    def box_hi_free(self) -> list[int]:
        return [self.shape.box_upper[j] for j in self.shape.free_columns]

    @property
    def query_free(self) -> list:
        return [self.inputs.query[j] for j in self.shape.free_columns]

    @property
    def layer_of(self) -> list[int]:
        """The hidden layer of every hidden neuron (flat order)."""
        return [l for l, h in enumerate(self.shape.hidden_sizes) for _ in range(h)]

    def row_bound(self, r: int) -> int:
        """The bound of both sides of row r's distance test."""
        return self.wd.distance[self.layer_of[r]] if r < self.shape.n_hidden else self.wd.distance_decision

    def handles(self) -> StatementHandles:
        i = self.inputs
        return StatementHandles([i.commitment, i.decision, i.eps, i.status, i.flip_index, *i.query,
                                 *i.spread_decisions, *([i.spread_buckets] if i.spread_buckets is not None else []),
                                 *([i.delta, *i.persistence_bounds] if i.delta is not None else []),
                                 *([i.part] if i.part is not None else [])], self.wd)


def region_preamble(cs, shape: StatementShape, public: StatementPublic | None,
                    witness: StatementWitness | None) -> RegionContext:
    """Declare the public inputs and parameters, and check the query, decision, eps and status."""
    wd = shape_widths(shape)
    if cs.with_values:
        if public is None or witness is None:
            raise CircuitError("building with values needs both the public inputs and the witness")
        validate(shape, public, witness)
    else:
        public = witness = None
    val = Values(witness)
    pub_vals = public.field_elements() if public is not None else [None] * shape.n_public
    inputs = declare_public_inputs(cs, shape, pub_vals)
    weights, biases = committed_parameters(cs, shape, inputs.commitment, val(lambda x: x.weights),
                                           val(lambda x: x.biases), val(lambda x: x.salt))
    with cs.scope("query"):
        q_slice = query_in_domain(cs, shape, inputs.query)
    with cs.scope("decision"):
        y_bits, ge = _decision(cs, shape, public, inputs.decision)
    with cs.scope("eps"):
        not_status, gate_min, e_sq, e1_sq, fs = _eps_and_status(cs, shape, public, inputs)
    return RegionContext(cs, shape, wd, val, public, inputs, weights, biases, q_slice, y_bits, ge, not_status,
                         gate_min, e_sq, e1_sq, fs)


def _decision(cs, shape: StatementShape, public: StatementPublic | None, y) -> tuple[list, list]:
    """The decision's one-hot bits, and ge[o] = [y <= o] for every decision row o."""
    C = shape.n_classes
    y_bits = bool_inputs(cs, "y_bits", None if public is None else [int(public.decision == c) for c in range(C)], C)
    cs.assert_equal(cs.sum(y_bits), 1)
    cs.assert_equal(cs.lin_comb([(c, b) for c, b in enumerate(y_bits)]), y)
    return y_bits, [cs.sum(y_bits[: o + 1]) for o in range(C - 1)]


def _eps_and_status(cs, shape: StatementShape, public: StatementPublic | None, inputs: PublicInputs):
    """0 <= E <= E_cap, status boolean, status E = 0, the flip slice's one-hot bits; returns
    (1 - status, the minimality gate, E^2 2^(2s), (E+1)^2 2^(2s), the flip bits)."""
    eps, status, S = inputs.eps, inputs.status, shape.n_slices
    cs.assert_is_bool(status)
    not_status = 1 - status
    assert_nonnegative(cs, eps, shape.eps_cap)
    assert_nonnegative(cs, shape.eps_cap - eps, shape.eps_cap)
    assert_product_zero(cs, status, eps)
    is_cap = cs.is_equal(eps, shape.eps_cap)
    gate_min = cs.mul(not_status, 1 - is_cap)  # minimality applies
    e_sq = cs.square(eps) * (1 << (2 * shape.scale_bits))
    e1_sq = cs.square(eps + 1) * (1 << (2 * shape.scale_bits))
    fs = bool_inputs(cs, "flip_bits", None if public is None else
                     [int(public.status == 1 and public.flip_slice == s) for s in range(S)], S)
    cs.assert_equal(cs.sum(fs), status)
    cs.assert_equal(cs.lin_comb([(s, b) for s, b in enumerate(fs)]), inputs.flip_index)
    return not_status, gate_min, e_sq, e1_sq, fs


def layer0_terms(ctx: RegionContext) -> None:
    """The code-independent layer-0 terms at the query's free columns: W_0[i, free] . u*, the normals'
    squared norms, and the zero-normal rule (a neuron row with a zero normal is no facet, unless status 1)."""
    cs, shape, w0 = ctx.cs, ctx.shape, ctx.weights[0]
    free, query, h0 = shape.free_columns, ctx.inputs.query, shape.hidden_sizes[0]
    ctx.free_dot = [cs.sum([cs.mul(w0[i][j], query[j]) for j in free]) for i in range(h0)]
    ctx.nsq0 = [cs.sum([cs.square(w0[i][j]) for j in free]) for i in range(h0)]
    ctx.nonzero0 = [cs.or_(1 - cs.is_zero(n), ctx.inputs.status) for n in ctx.nsq0]


def slice_forms(ctx: RegionContext, sensitive_part: Callable[[int], Any]) -> list[Form]:
    """Layer 0's forms on one slice, over the free columns; sensitive_part(i) is neuron i's
    W_0[i, sensitive] . slice (the bias is added here)."""
    w0, free = ctx.weights[0], ctx.shape.free_columns
    forms = []
    for i in range(ctx.shape.hidden_sizes[0]):
        off = sensitive_part(i) + ctx.biases[0][i]
        forms.append(Form([w0[i][j] for j in free], off, ctx.free_dot[i] + off))
    return forms
