"""The fairness statement circuit (docs/STATEMENT.md), one builder for setup and proving.

`build_statement(cs, shape, public=None, witness=None)` declares the public
inputs (order in `witness.py`), the private witness, and every constraint.
Without values (key setup) it emits the identical R1CS.

What is enforced, per slice s (slot 0 is the start region; K slots, F pool entries):

- Parameters: every weight/bias in its declared signed range; commitment
  Poseidon-chain(tag, model digest, salt, weights) equals the public input.
- Query: free columns inside the box, sensitive columns one of the slices
  (q_s = [query's sensitive values == slice s], sum q_s = 1); y one-hot;
  0 <= E <= E_cap; status boolean; flip index = sum s fs_s with fs one-hot
  over slices summing to status; status * E = 0.
- Forward pass on (u*, s) = slot 0's derivation with activation bits
  [z > 0] from exact comparisons (slot 0's code IS the start code).
  status 0: every decision row value d_o > 0 (strict decision y).
  Always: at the query's own slice, d_o >= 1 for classes j(o) < y and
  d_o >= 0 for j(o) > y (argmax, lowest index on a tie).
  status 1: the flip slice has some d_o <= 0 (one-hot choice of o).
- For every slot and row one cover kind (one-hot): DISTANCE (distance >= E,
  and ||a|| != 0 unless status 1), NEIGHBOR (flipped code id is a slot id),
  FAR_REGION (neuron rows: (flipped code id, row Rr) is the key of a used
  pool entry, which separates that whole neighbouring region from u*),
  or a Farkas cover (EMPTY_FACET, FAR_FACET, NO_CLASS: (code id, row) key
  is the key of a used pool entry whose separation certificate is valid
  against E: an empty facet or class region, or a facet at distance >= eps,
  `farkas`); the two memberships are log-derivative lookups per slice
  (`membership`).
  Layer-0 rows are code-independent: their distance test is computed once
  per slice and each slot only asserts kind_DISTANCE * (1 - ok) = 0.
- Minimality unless E = E_cap or status 1 (gate g): a designated (slice,
  slot) one-hot and row one-hot; its code (own bits) equals that slot's
  code, its row is DISTANCE-covered there, distance < (E+1)/2^t, and for a
  decision row a boundary point P/D on the hyperplane inside region and box.

Spread lens (shapes with spread_width > 0; `spread`): every slice's decision at
the query and the number of distinct buckets of the favourable margin, as
public inputs, from slot 0's exact forward pass (per-slice shapes: a forward
pass of every slice of their own).

Persistence lens (shapes with persistence columns; `persistence`): for the
public delta and every (sensitive attribute, value), the CROWN bounds on the
margin gap between the query and that counterfactual over the shared box of
moved columns, computed from the committed weights, as public inputs.

Per-slice shapes (exact only) cover one slice, named by one more public input
and chosen by one-hot bits: its base forms, covers and pool; the argmax and
flip checks are gated on it being the query's own or the flip slice; the
counterexample is checked in full. One proof per slice states the whole
statement (docs/STATEMENT.md, "Per-slice proofs").

FLIP witnesses set every slot to the start code and every row to DISTANCE;
with E = 0 the distance tests hold and the zero-normal rule and the strict
decisions are switched off by status (they are what status 1 relaxes).

Soundness: the constraints are exactly the rules of `fairness.checker`
(see its docstring for why acceptance implies the fairness claim), with
every hyperplane recomputed from the committed weights; no value can wrap
(`widths`), and every comparison is an exact range check; memberships hold
except with probability ~ (queries + table) / 2^254 per Poseidon evaluation
(`membership`). Cover kinds,
codes, pool entries and designations are private choices the constraints
verify, so a prover can only pick among valid certificates; slot padding
by repetition and unused pool entries (key -1) add no claims.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from circuits.errors import CircuitError
from circuits.relation import R1CS
from fairness.covers import CoverKind

from .affine import Form, decision_rows, derive_region, norm_sq
from .boundary import check_boundary
from .checks import assert_nonnegative, assert_product_zero, bool_inputs, scoped
from .commitment import committed_parameters
from .distance import assert_below_next_if, assert_distance_if, distance_at_least
from .farkas import check_farkas_entry, farkas_key
from .membership import assert_lookup, challenge, multiplicities
from .shape import BOUND_RADIUS, StatementShape
from .persistence import persistence_lens
from .public_inputs import declare_public_inputs, query_in_domain
from .spread import spread_lens
from .widths import StatementWidths, bits, widths as shape_widths
from .witness import StatementPublic, StatementWitness, validate


@dataclass
class StatementHandles:
    """Circuit values of interest (for tests and debugging)."""

    public: list
    widths: StatementWidths


class _Values:
    """Witness accessors that return None when building without values."""

    def __init__(self, witness: StatementWitness | None):
        self.w = witness

    def __call__(self, fn):
        return None if self.w is None else fn(self.w)


def build_statement(cs, shape: StatementShape, public: StatementPublic | None = None,
                    witness: StatementWitness | None = None,
                    progress: Callable[[str], None] | None = None) -> StatementHandles:
    """Declare the statement's inputs and constraints on `cs` (values when cs.with_values).

    progress, if given, is called with a short message after each stage (slices take the time).
    A bound-radius shape's statement is statement.bound_radius's (same public inputs, no regions)."""
    if shape.radius == BOUND_RADIUS:
        from .bound_radius import build_bound_statement

        build_bound_statement(cs, shape, public, witness)
        return StatementHandles([], shape_widths(shape))
    report = progress or (lambda message: None)
    wd = shape_widths(shape)
    if cs.with_values:
        if public is None or witness is None:
            raise CircuitError("building with values needs both the public inputs and the witness")
        validate(shape, public, witness)
    else:
        public = witness = None
    val = _Values(witness)
    pub_vals = public.field_elements() if public is not None else [None] * shape.n_public
    H, S, C = shape.n_hidden, shape.n_slices, shape.n_classes
    s_bits = shape.scale_bits
    free = shape.free_columns
    box_lo_free = [shape.box_lower[j] for j in free]
    box_hi_free = [shape.box_upper[j] for j in free]

    # ------------------------------------------------------------ public inputs
    inputs = declare_public_inputs(cs, shape, pub_vals)
    commitment, y, eps, status, flip_index, query = (inputs.commitment, inputs.decision, inputs.eps, inputs.status,
                                                     inputs.flip_index, inputs.query)
    spread_decisions, spread_buckets = inputs.spread_decisions, inputs.spread_buckets
    delta, persistence_bounds, part = inputs.delta, inputs.persistence_bounds, inputs.part

    # ------------------------------------------------------------ parameters
    weights, biases = committed_parameters(cs, shape, commitment, val(lambda x: x.weights), val(lambda x: x.biases),
                                           val(lambda x: x.salt))

    # ------------------------------------------------------------ query, decision, eps, status
    with cs.scope("query"):
        q_slice = query_in_domain(cs, shape, query)
    with cs.scope("decision"):
        y_bits = bool_inputs(cs, "y_bits", val(lambda x: [int(public.decision == c) for c in range(C)]), C)
        cs.assert_equal(cs.sum(y_bits), 1)
        cs.assert_equal(cs.lin_comb([(c, b) for c, b in enumerate(y_bits)]), y)
        ge = [cs.sum(y_bits[: o + 1]) for o in range(C - 1)]  # [y <= o]
    with cs.scope("eps"):
        cs.assert_is_bool(status)
        not_status = 1 - status
        assert_nonnegative(cs, eps, shape.eps_cap)
        assert_nonnegative(cs, shape.eps_cap - eps, shape.eps_cap)
        assert_product_zero(cs, status, eps)
        is_cap = cs.is_equal(eps, shape.eps_cap)
        gate_min = cs.mul(not_status, 1 - is_cap)  # minimality applies
        e_sq = cs.square(eps) * (1 << (2 * s_bits))
        e1_sq = cs.square(eps + 1) * (1 << (2 * s_bits))
        fs = bool_inputs(cs, "flip_bits", val(lambda x: [int(public.status == 1 and public.flip_slice == s)
                                                          for s in range(S)]), S)
        cs.assert_equal(cs.sum(fs), status)
        cs.assert_equal(cs.lin_comb([(s, b) for s, b in enumerate(fs)]), flip_index)

    # ------------------------------------------------------------ the slice of a per-slice statement
    part_bits = None
    if shape.per_slice:
        with cs.scope("part"):
            part_bits = bool_inputs(cs, "slice", val(lambda x: [int(public.part_slice == s) for s in range(S)]), S)
            cs.assert_equal(cs.sum(part_bits), 1)
            cs.assert_equal(cs.lin_comb([(s, b) for s, b in enumerate(part_bits)]), part)

    # ------------------------------------------------------------ code-independent forms
    with cs.scope("layer0"):
        w0 = weights[0]
        h0 = shape.hidden_sizes[0]
        free_dot = [cs.sum([cs.mul(w0[i][j], query[j]) for j in free]) for i in range(h0)]
        nsq0 = [cs.sum([cs.square(w0[i][j]) for j in free]) for i in range(h0)]
        nonzero0 = [cs.or_(1 - cs.is_zero(n), status) for n in nsq0]  # zero-normal rule, off under status 1
        base = []
        if shape.per_slice:  # the part's sensitive values, chosen by its one-hot bits
            values = [cs.lin_comb([(sv[ci], b) for sv, b in zip(shape.slices, part_bits)])
                      for ci in range(len(shape.sensitive_columns))]
            forms = []
            for i in range(h0):
                off = cs.sum([cs.mul(w0[i][c], v) for c, v in zip(shape.sensitive_columns, values)]) + biases[0][i]
                forms.append(Form([w0[i][j] for j in free], off, free_dot[i] + off))
            base.append(forms)
        for sv in ([] if shape.per_slice else shape.slices):
            forms = []
            for i in range(h0):
                off = cs.lin_comb([(v, w0[i][c]) for c, v in zip(shape.sensitive_columns, sv)]) + biases[0][i]
                forms.append(Form([w0[i][j] for j in free], off, free_dot[i] + off))
            base.append(forms)
    dec_rows = decision_rows(cs, y_bits, weights[-1], biases[-1])
    layer_of = [l for l, h in enumerate(shape.hidden_sizes) for _ in range(h)]

    def row_bound(r: int) -> int:
        return wd.distance[layer_of[r]] if r < H else wd.distance_decision

    # ------------------------------------------------------------ slices
    all_ids, all_kd, decision_values = [], [], []
    for si in range(shape.witness_slices):
        with cs.scope(f"slice{si}"):
            ids, kd_slice = _slice(cs, shape, wd, si, base[si], weights, biases, dec_rows, val, e_sq,
                                   not_status, nsq0, nonzero0, row_bound, decision_values,
                                   box_lo_free, box_hi_free, [query[j] for j in free])
            all_ids.append(ids)
            all_kd.append(kd_slice)
        report(f"slice {si + 1}/{shape.witness_slices}: {cs.n_constraints} constraints")

    # ------------------------------------------------------------ decisions across slices
    with cs.scope("decisions"):
        # A per-slice statement holds its own slice's decisions: argmax y if it is the query's own
        # slice, the flip if it is the flip slice (the verifier asks for every slice's proof).
        if shape.per_slice:
            own = cs.sum([cs.mul(b, q) for b, q in zip(part_bits, q_slice)])
            flip_here = cs.sum([cs.mul(b, f) for b, f in zip(part_bits, fs)])
        for o in range(C - 1):
            if shape.per_slice:
                dq = cs.mul(own, decision_values[0][o] - 1 + ge[o])
            else:
                dq = cs.sum([cs.mul(q, d[o]) for q, d in zip(q_slice, decision_values)]) - 1 + ge[o]
            assert_nonnegative(cs, dq, wd.decision.value + 1)
        o_bits = bool_inputs(cs, "flip_class", val(lambda x: _flip_class_bits(public, x, shape)), C - 1)
        cs.assert_equal(cs.sum(o_bits), status)
        if shape.per_slice:
            chosen = cs.mul(flip_here, cs.sum([cs.mul(ob, decision_values[0][o]) for o, ob in enumerate(o_bits)]))
        else:
            chosen = cs.sum([cs.mul(ob, cs.sum([cs.mul(f, d[o]) for f, d in zip(fs, decision_values)]))
                             for o, ob in enumerate(o_bits)])
        assert_nonnegative(cs, -chosen, wd.decision.value)

    # ------------------------------------------------------------ the spread lens
    if shape.spread:
        with cs.scope("spread"):
            if shape.per_slice:  # the part holds one slice's forms: every slice's logits afresh
                logits = [_forward_logits(cs, shape, wd, weights, biases, free_dot, sv) for sv in shape.slices]
            else:  # slot 0's decision values d_o = z_y - z_j(o), as logits relative to z_y
                logits = [_relative_logits(cs, ge, d) for d in decision_values]
            spread_lens(cs, logits, spread_decisions, spread_buckets, favourable_class=shape.favourable_class,
                        width=shape.spread_width, bound=wd.decision.value)

    # ------------------------------------------------------------ the persistence lens
    if shape.persistence:
        with cs.scope("persistence"):
            persistence_lens(cs, shape, wd, weights, biases, query, delta, persistence_bounds,
                             slopes=val(lambda x: x.persistence_slopes))
        report(f"persistence lens: {cs.n_constraints} constraints")

    # ------------------------------------------------------------ minimality and boundary
    with cs.scope("minimality"):
        query_vals = None if public is None else public.query
        if shape.exact:
            _counterexample(cs, shape, wd, val, query_vals, gate_min, [query[j] for j in free], weights, biases,
                            dec_rows, e1_sq, box_lo_free, box_hi_free)
        else:
            _minimality(cs, shape, wd, val, query_vals, gate_min, all_ids, all_kd, base, weights, biases, dec_rows,
                        nsq0, e1_sq, box_lo_free, box_hi_free)
    return StatementHandles([commitment, y, eps, status, flip_index, *query, *spread_decisions,
                             *([spread_buckets] if spread_buckets is not None else []),
                             *([delta, *persistence_bounds] if delta is not None else []),
                             *([part] if part is not None else [])], wd)


def _relative_logits(cs, ge, d):
    """z_j - z_y for every class j, from the decision values d_o = z_y - z_j(o), where
    j(o) = o for o < y and o + 1 otherwise, and ge[o] = [y <= o]."""
    C = len(d) + 1
    out = []
    for j in range(C):
        below = cs.mul(1 - ge[j], d[j]) if j < C - 1 else 0  # j < y: o = j
        above = cs.mul(ge[j - 1], d[j - 1]) if j > 0 else 0  # j > y: o = j - 1
        out.append(-(cs.lc(below) + cs.lc(above)))
    return out


def _forward_logits(cs, shape, wd, weights, biases, free_dot, slice_values):
    """The committed model's logits at the query with its sensitive columns set to `slice_values`
    (exact: each ReLU by an exact comparison at the layer's width)."""
    z = [free_dot[i] + cs.lin_comb([(v, weights[0][i][c]) for c, v in zip(shape.sensitive_columns, slice_values)])
         + biases[0][i] for i in range(shape.hidden_sizes[0])]
    for l in range(1, shape.n_layers):
        width = max(wd.layers[l - 1].value.bit_length(), 1)
        h = [cs.mul(cs.is_less(0, zi, width), zi) for zi in z]
        z = [cs.sum([cs.mul(w, v) for w, v in zip(weights[l][i], h)]) + biases[l][i] for i in range(len(weights[l]))]
    return z


def _flip_class_bits(public: StatementPublic, witness: StatementWitness, shape) -> list[int]:
    """One-hot o with d_o <= 0 at the flip slice (all zero for status 0); computed natively."""
    C = shape.n_classes
    if public.status != 1 or not 0 <= public.flip_slice < shape.n_slices:
        return [0] * (C - 1)
    x = list(public.query)
    for c, v in zip(shape.sensitive_columns, shape.slices[public.flip_slice]):
        x[c] = v
    h = x
    for l, (w, b) in enumerate(zip(witness.weights, witness.biases)):
        z = [sum(wi * hi for wi, hi in zip(row, h)) + bi for row, bi in zip(w, b)]
        h = z if l == len(witness.weights) - 1 else [max(v, 0) for v in z]
    y = public.decision
    others = [j for j in range(C) if j != y]
    for o, j in enumerate(others):
        if h[j] >= h[y]:
            return [int(k == o) for k in range(C - 1)]
    return [1] + [0] * (C - 2)  # no flipping class: the constraints will refuse


def _slice(cs, shape, wd, si, base, weights, biases, dec_rows, val, e_sq, not_status, nsq0, nonzero0,
           row_bound, decision_values, box_lo, box_hi, query_free):
    H, K, F, Rr = shape.n_hidden, shape.region_slots, shape.farkas_slots, shape.n_rows
    t_bits = shape.eps_bits
    h0 = shape.hidden_sizes[0]

    # Layer-0 distance tests: one per slice, shared by every slot.
    with cs.scope("layer0_distance"):
        ok0 = [cs.and_(distance_at_least(cs, f.value, nsq0[i], e_sq, t_bits, wd.distance[0]), nonzero0[i])
               for i, f in enumerate(base)]

    # Slot 0: the forward pass; its code is the activation code of (u*, s).
    def activation_bits(l, forms):
        return [cs.is_less(0, f.value, max(wd.layers[l].value.bit_length(), 1)) for f in forms]

    slots = []
    with cs.scope("slot0"):
        neurons, decisions, code = derive_region(cs, weights, biases, dec_rows, base, activation_bits, True)
        slots.append((neurons, decisions, code))
        # status 0: strict decision y on this slice
        for o, d in enumerate(decisions):
            assert_nonnegative(cs, cs.mul(not_status, d.value - 1), wd.decision.value + 1)
        decision_values.append([d.value for d in decisions])
    offsets = [0]
    for h in shape.hidden_sizes:
        offsets.append(offsets[-1] + h)
    for k in range(1, K):
        with cs.scope(f"slot{k}"):
            bits = bool_inputs(cs, "code", val(lambda x, k=k: x.slices[si].codes[k]), H)
            neurons, decisions, _ = derive_region(
                cs, weights, biases, dec_rows, base,
                lambda l, forms, bits=bits: bits[offsets[l]:offsets[l + 1]], True)
            slots.append((neurons, decisions, bits))
    ids = [cs.lin_comb([(1 << i, b) for i, b in enumerate(code)]) for _, _, code in slots]

    # Farkas pool: keys of used entries (-1 for unused), each verified when used.
    pool_keys, pool_transcript = [], []
    for f in range(F):
        with cs.scope(f"farkas{f}"):
            entry = val(lambda x, f=f: x.slices[si].farkas[f])
            used = bool_inputs(cs, "used", None if not cs.with_values else [int(entry is not None)], 1)[0]
            ebits = bool_inputs(cs, "code", None if not cs.with_values else
                                (list(entry.code) if entry else [0] * H), H)
            # Row one-hot over the Rr rows and one more position, Rr: the whole region (FAR_REGION entries).
            rbits = bool_inputs(cs, "row", None if not cs.with_values else
                                [int(entry is not None and entry.row == r) for r in range(Rr + 1)], Rr + 1)
            cs.assert_equal(cs.sum(rbits), used)
            lams = cs.private_inputs(scoped(cs, "lambda"), H, None if not cs.with_values else
                                     (list(entry.lambdas) if entry else [0] * H))
            lam_bits = shape.lambda_bits
            mu = cs.private_input(scoped(cs, "mu"), None if not cs.with_values else (entry.mu if entry else 0))
            is_dec = cs.sum(rbits[H:Rr])
            if shape.exact:
                for lam, lb in zip(lams, lam_bits):
                    cs.assert_range(lam, lb)
            else:
                # Decision entries (emptiness only): lambda < 2^lb. Neuron and region entries,
                # whose separation values are squared whole: lambda 2^(lb - fb) < 2^lb, i.e. < 2^fb.
                for lam, lb in zip(lams, lam_bits):
                    widen = (1 << (lb - shape.farkas_bits)) - 1
                    cs.assert_range(cs.mul(lam, 1 + widen - is_dec * widen), lb)
            assert_product_zero(cs, rbits[Rr], mu)  # a whole region takes no extra row
            fb = shape.farkas_bits
            if not shape.exact:
                # decision rows: 0 <= mu < 2^(fb+1); neuron rows: -2^fb <= mu < 2^fb
                cs.assert_range(mu + (1 - is_dec) * (1 << fb), fb + 1)
            else:
                # The same with neuron row r's own width b_r: mu 2^(top - b_r) + 2^top in [0, 2^(top+1))
                # iff -2^b_r <= mu < 2^b_r; decision rows scale by 2^(top - fb): 0 <= mu < 2^(fb+1).
                top = max(lam_bits)
                factor = cs.lin_comb([(1 << (top - lb), rbits[r]) for r, lb in enumerate(lam_bits)]
                                     + [(1 << (top - fb), rbits[r]) for r in range(H, Rr)])
                cs.assert_range(cs.mul(mu, factor) + (1 - is_dec) * (1 << top), top + 1)
            neurons, decisions, _ = derive_region(
                cs, weights, biases, dec_rows, [Form(b.normal, b.offset, None) for b in base],
                lambda l, forms: ebits[offsets[l]:offsets[l + 1]], False)
            check_farkas_entry(cs, used, rbits, lams, mu, neurons, decisions, ebits, box_lo, box_hi, wd,
                               query_free, e_sq, t_bits, None if entry is None else entry.box, shape.exact)
            eid = cs.lin_comb([(1 << i, b) for i, b in enumerate(ebits)])
            row_index = cs.lin_comb([(r, b) for r, b in enumerate(rbits)])
            pool_keys.append(cs.mul(used, farkas_key(cs, eid, row_index, H) + 1) - 1)
            pool_transcript += [(used, 1)] + [(b, 1) for b in ebits] + [(b, 1) for b in rbits]

    # Covers. Membership queries are collected and checked by two lookups at the end.
    kd_slice = []
    transcript = [(b, 1) for _, _, code in slots for b in code]
    nb_queries, fk_queries = [], []
    for k, (neurons, decisions, code) in enumerate(slots):
        with cs.scope(f"covers{k}"):
            kinds = val(lambda x, k=k: x.slices[si].kinds[k])
            kd_row = []
            for r in range(Rr):
                kind = None if kinds is None else kinds[r]
                with cs.scope(f"row{r}"):
                    kd = bool_inputs(cs, "dist", None if kind is None else [int(kind == CoverKind.DISTANCE)], 1)[0]
                    transcript.append((kd, 1))
                    if r < H:
                        kn = bool_inputs(cs, "nb", None if kind is None else [int(kind == CoverKind.NEIGHBOR)], 1)[0]
                        kr = bool_inputs(cs, "far", None if kind is None else [int(kind == CoverKind.FAR_REGION)], 1)[0]
                        transcript += [(kn, 1), (kr, 1)]
                        kf = 1 - kd - kn - kr
                        cs.assert_is_bool(kf)
                    else:
                        kf = 1 - kd
                    kd_row.append(kd)
                    form = neurons[r] if r < H else decisions[r - H]
                    if r < h0:
                        assert_product_zero(cs, kd, 1 - ok0[r])
                    else:
                        nonzero_gate = cs.mul(kd, not_status)
                        assert_distance_if(cs, kd, nonzero_gate, form.value, norm_sq(cs, form), e_sq, t_bits,
                                           row_bound(r))
                    if r < H:
                        flipped = ids[k] + (1 << r) - (1 << (r + 1)) * code[r]
                        nb_queries.append((kn, flipped))
                        fk_queries.append((kr, farkas_key(cs, flipped, Rr, H)))  # the neighbour's region entry
                    fk_queries.append((kf, farkas_key(cs, ids[k], r, H)))
            kd_slice.append(kd_row)
    with cs.scope("membership"):
        transcript += pool_transcript
        nb_mults = multiplicities(cs, nb_queries, ids)
        fk_mults = multiplicities(cs, fk_queries, pool_keys)
        nb_bits, fk_bits = (K * H).bit_length(), (K * (Rr + H)).bit_length()
        for m in nb_mults:
            cs.assert_range(m, nb_bits)
        for m in fk_mults:
            cs.assert_range(m, fk_bits)
        transcript += [(m, nb_bits) for m in nb_mults] + [(m, fk_bits) for m in fk_mults]
        gamma = challenge(cs, transcript)
        assert_lookup(cs, gamma, nb_queries, ids, nb_mults)  # NEIGHBOR: flipped code is a slot code
        assert_lookup(cs, gamma, fk_queries, pool_keys, fk_mults)  # FARKAS: (code, row) is a used pool key
    return ids, kd_slice


def _minimality(cs, shape, wd, val, query_vals, gate, all_ids, all_kd, base, weights, biases, dec_rows, nsq0, e1_sq,
                box_lo, box_hi):
    H, K, S, Rr = shape.n_hidden, shape.region_slots, shape.n_slices, shape.n_rows
    h0 = shape.hidden_sizes[0]
    des = val(lambda x: x.designation)
    have = cs.with_values
    sel = bool_inputs(cs, "slot", None if not have else
                      [int(des is not None and des.slice_index == s and des.slot == k)
                       for s in range(S) for k in range(K)], S * K)
    cs.assert_equal(cs.sum(sel), gate)
    rbits = bool_inputs(cs, "row", None if not have else [int(des is not None and des.row == r) for r in range(Rr)], Rr)
    cs.assert_equal(cs.sum(rbits), gate)
    code_vals = None
    if have:
        code_vals = [0] * H if des is None else list(val(lambda x: x.slices[des.slice_index].codes[des.slot]))
    own = bool_inputs(cs, "code", code_vals, H)
    own_id = cs.lin_comb([(1 << i, b) for i, b in enumerate(own)])
    pairs = [(s, k) for s in range(S) for k in range(K)]
    cs.assert_equal(cs.sum([cs.mul(b, all_ids[s][k]) for b, (s, k) in zip(sel, pairs)]), own_id)
    kd_sel = cs.sum([cs.mul(rb, cs.sum([cs.mul(b, all_kd[s][k][r]) for b, (s, k) in zip(sel, pairs)]))
                     for r, rb in enumerate(rbits)])
    cs.assert_equal(kd_sel, gate)  # the designated row is DISTANCE-covered in its slot

    slice_bits = [cs.sum(sel[s * K:(s + 1) * K]) for s in range(S)]
    sel_base = []
    for i in range(h0):
        off = cs.sum([cs.mul(sb, base[s][i].offset) for s, sb in enumerate(slice_bits)])
        value = cs.sum([cs.mul(sb, base[s][i].value) for s, sb in enumerate(slice_bits)])
        sel_base.append(Form(base[0][i].normal, off, value))
    offsets = [0]
    for h in shape.hidden_sizes:
        offsets.append(offsets[-1] + h)
    neurons, decisions, _ = derive_region(cs, weights, biases, dec_rows, sel_base,
                                          lambda l, forms: own[offsets[l]:offsets[l + 1]], True)
    forms = list(neurons) + list(decisions)
    nsqs = [nsq0[r] if r < h0 else norm_sq(cs, forms[r]) for r in range(Rr)]
    v_sel = cs.sum([cs.mul(rb, f.value) for rb, f in zip(rbits, forms)])
    nsq_sel = cs.sum([cs.mul(rb, n) for rb, n in zip(rbits, nsqs)])
    bound = max(max(wd.distance), wd.distance_decision)
    assert_below_next_if(cs, gate, v_sel, nsq_sel, e1_sq, shape.eps_bits, bound)

    # Boundary point for a decision row (unused: P = u*, D = 1).
    if have:
        if des is not None and des.row >= H:
            p_vals, d_val = list(des.point), des.denominator
        else:
            p_vals, d_val = [query_vals[j] for j in shape.free_columns], 1
    else:
        p_vals, d_val = None, None
    point = cs.private_inputs(scoped(cs, "P"), shape.n_free, p_vals)
    den = cs.private_input(scoped(cs, "D"), d_val)
    dec_normal = [cs.sum([cs.mul(rbits[H + o], d.normal[j]) for o, d in enumerate(decisions)])
                  for j in range(shape.n_free)]
    dec_offset = cs.sum([cs.mul(rbits[H + o], d.offset) for o, d in enumerate(decisions)])
    is_decision = cs.sum(rbits[H:])
    check_boundary(cs, point, den, Form(dec_normal, dec_offset, None), neurons, own, is_decision,
                   box_lo, box_hi, shape.boundary_bits, wd)


def _counterexample(cs, shape, wd, val, query_vals, gate, query_free, weights, biases, dec_rows, e1_sq,
                    box_lo, box_hi):
    """Exact minimality, when gated: a point P / D of a chosen slice, in the box, closer
    than (E+1)/2^t, where a chosen class o at least ties y in the committed model.

    The forward pass runs on the integers (P, D * slice) with every bias times D:
    ReLU is positively homogeneous, so it yields D times the pre-activations at
    the rational point (|D z| <= V D, `boundary_value`), and d_o = D (logit_y -
    logit_j(o)) <= 0 is the tie or the loss. Ungated: P = u*, D = 1 and no
    slice or class is chosen, which every constraint accepts."""
    S, C, nf = shape.n_slices, shape.n_classes, shape.n_free
    cx = val(lambda x: x.designation)
    have = cs.with_values
    sel = bool_inputs(cs, "slice", None if not have else
                      [int(cx is not None and cx.slice_index == s) for s in range(S)], S)
    cs.assert_equal(cs.sum(sel), gate)
    o_bits = bool_inputs(cs, "class", None if not have else
                         [int(cx is not None and cx.other_class == o) for o in range(C - 1)], C - 1)
    cs.assert_equal(cs.sum(o_bits), gate)
    if have:
        p_vals, d_val = ((list(cx.point), cx.denominator) if cx is not None
                         else ([query_vals[j] for j in shape.free_columns], 1))
    else:
        p_vals = d_val = None
    point = cs.private_inputs(scoped(cs, "P"), nf, p_vals)
    den = cs.private_input(scoped(cs, "D"), d_val)
    cs.assert_range(den - 1, shape.boundary_bits)  # 1 <= D <= 2^boundary_bits
    for p, lo, hi in zip(point, box_lo, box_hi):
        span = (hi - lo) * (1 << shape.boundary_bits) + 1
        assert_nonnegative(cs, p - den * lo, span)
        assert_nonnegative(cs, den * hi - p, span)
    # The input scaled by D: free columns P, sensitive columns D times the chosen slice's values.
    sel_den = [cs.mul(b, den) for b in sel]
    x: list = [None] * shape.n_inputs
    for j, p in zip(shape.free_columns, point):
        x[j] = p
    for ci, c in enumerate(shape.sensitive_columns):
        x[c] = cs.lin_comb([(sv[ci], sd) for sv, sd in zip(shape.slices, sel_den)])
    width = bits(wd.boundary_value)
    h = x
    for l in range(shape.n_layers - 1):
        with cs.scope(f"layer{l}"):
            z = [cs.sum([cs.mul(w, v) for w, v in zip(weights[l][i], h)]) + cs.mul(biases[l][i], den)
                 for i in range(len(weights[l]))]
            h = [cs.mul(cs.is_less(0, zi, width), zi) for zi in z]
    with cs.scope("class"):
        d = [cs.sum([cs.mul(w, v) for w, v in zip(delta, h)]) + cs.mul(delta0, den) for delta, delta0 in dec_rows]
        chosen = cs.sum([cs.mul(ob, do) for ob, do in zip(o_bits, d)])
        assert_nonnegative(cs, -chosen, wd.boundary_value)  # logit_j(o) >= logit_y at P / D
    with cs.scope("distance"):
        diffs = [p - cs.mul(den, q) for p, q in zip(point, query_free)]
        lhs = cs.sum([cs.square(v) for v in diffs]) * (1 << (2 * shape.eps_bits))
        rhs = cs.mul(e1_sq, cs.square(den))
        assert_nonnegative(cs, cs.mul(gate, rhs - lhs - 1), wd.counterexample_distance + 1)


def statement_relation(shape: StatementShape) -> R1CS:
    """The constraint system of `shape`'s statement, built without values.

    Anyone holding the public shape can rebuild it: the bank to set up keys,
    a ceremony contributor or an auditor to check that a key is for this
    circuit and no other."""
    from circuits.builder import ConstraintSystem

    cs = ConstraintSystem(with_values=False)
    build_statement(cs, shape)
    return cs.compile(wire_names=False)
