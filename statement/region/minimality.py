"""Minimality of a fast statement's radius, unless E = E_cap or status 1 (the gate): a designated
(slice, slot) and row, DISTANCE-covered there, whose hyperplane lies closer than (E+1)/2^t, and for a
decision row a boundary point P/D on it inside the region and the box (`statement.boundary`)."""
from __future__ import annotations

from typing import Any

from ..affine import Form, derive_region, norm_sq
from ..boundary import check_boundary
from ..checks import bool_inputs, scoped
from ..distance import assert_below_next_if
from .context import RegionContext
from .pool import layer_offsets


def fast_minimality(ctx: RegionContext, all_ids: list, all_kd: list, base: list) -> None:
    """all_ids[s][k]: slot k's code id in slice s; all_kd[s][k][r]: its row r's DISTANCE bit; base[s]:
    slice s's layer-0 forms."""
    cs, shape = ctx.cs, ctx.shape
    H, K, S, Rr = shape.n_hidden, shape.region_slots, shape.n_slices, shape.n_rows
    gate = ctx.gate_min
    des = ctx.val(lambda x: x.designation)
    have = cs.with_values
    sel = bool_inputs(cs, "slot", None if not have else
                      [int(des is not None and des.slice_index == s and des.slot == k)
                       for s in range(S) for k in range(K)], S * K)
    cs.assert_equal(cs.sum(sel), gate)
    rbits = bool_inputs(cs, "row", None if not have else [int(des is not None and des.row == r) for r in range(Rr)], Rr)
    cs.assert_equal(cs.sum(rbits), gate)
    code_vals = None
    if have:
        code_vals = [0] * H if des is None else list(ctx.val(lambda x: x.slices[des.slice_index].codes[des.slot]))
    own = bool_inputs(cs, "code", code_vals, H)
    own_id = cs.lin_comb([(1 << i, b) for i, b in enumerate(own)])
    pairs = [(s, k) for s in range(S) for k in range(K)]
    cs.assert_equal(cs.sum([cs.mul(b, all_ids[s][k]) for b, (s, k) in zip(sel, pairs)]), own_id)
    kd_sel = cs.sum([cs.mul(rb, cs.sum([cs.mul(b, all_kd[s][k][r]) for b, (s, k) in zip(sel, pairs)]))
                     for r, rb in enumerate(rbits)])
    cs.assert_equal(kd_sel, gate)  # the designated row is DISTANCE-covered in its slot
    neurons, decisions = _designated_region(ctx, sel, own, base)
    forms = list(neurons) + list(decisions)
    nsqs = [ctx.nsq0[r] if r < shape.hidden_sizes[0] else norm_sq(cs, forms[r]) for r in range(Rr)]
    v_sel = cs.sum([cs.mul(rb, f.value) for rb, f in zip(rbits, forms)])
    nsq_sel = cs.sum([cs.mul(rb, n) for rb, n in zip(rbits, nsqs)])
    bound = max(max(ctx.wd.distance), ctx.wd.distance_decision)
    assert_below_next_if(cs, gate, v_sel, nsq_sel, ctx.e1_sq, shape.eps_bits, bound)
    _boundary_point(ctx, des, rbits, own, neurons, decisions)


def _designated_region(ctx: RegionContext, sel: list, own: list, base: list) -> tuple[list, list]:
    """The designated slot's region forms: its slice's layer-0 forms, derived through its code `own`."""
    cs, shape = ctx.cs, ctx.shape
    K = shape.region_slots
    slice_bits = [cs.sum(sel[s * K:(s + 1) * K]) for s in range(shape.n_slices)]
    sel_base = []
    for i in range(shape.hidden_sizes[0]):
        off = cs.sum([cs.mul(sb, base[s][i].offset) for s, sb in enumerate(slice_bits)])
        value = cs.sum([cs.mul(sb, base[s][i].value) for s, sb in enumerate(slice_bits)])
        sel_base.append(Form(base[0][i].normal, off, value))
    offsets = layer_offsets(shape.hidden_sizes)
    neurons, decisions, _ = derive_region(cs, ctx.weights, ctx.biases, ctx.dec_rows, sel_base,
                                          lambda l, forms: own[offsets[l]:offsets[l + 1]], True)
    return neurons, decisions


def _boundary_point(ctx: RegionContext, des: Any, rbits: list, own: list, neurons: list, decisions: list) -> None:
    """A decision row's boundary point P/D (unused: P = u*, D = 1)."""
    cs, shape = ctx.cs, ctx.shape
    H = shape.n_hidden
    if cs.with_values:
        if des is not None and des.row >= H:
            p_vals, d_val = list(des.point), des.denominator
        else:
            p_vals, d_val = [ctx.public.query[j] for j in shape.free_columns], 1
    else:
        p_vals, d_val = None, None
    point = cs.private_inputs(scoped(cs, "P"), shape.n_free, p_vals)
    den = cs.private_input(scoped(cs, "D"), d_val)
    dec_normal = [cs.sum([cs.mul(rbits[H + o], d.normal[j]) for o, d in enumerate(decisions)])
                  for j in range(shape.n_free)]
    dec_offset = cs.sum([cs.mul(rbits[H + o], d.offset) for o, d in enumerate(decisions)])
    is_decision = cs.sum(rbits[H:])
    check_boundary(cs, point, den, Form(dec_normal, dec_offset, None), neurons, own, is_decision,
                   ctx.box_lo_free, ctx.box_hi_free, shape.boundary_bits, ctx.wd)
