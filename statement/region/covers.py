"""One slice's covering: K region slots, a cover kind per (slot, row), and the memberships.

Slot 0 is the forward pass at (u*, slice): its activation bits come from exact comparisons, so its
code IS the start code, and under status 0 its decision rows are strict. Slots 1..K-1 take private
codes. Every (slot, row) takes one cover kind (one-hot): DISTANCE (the row's hyperplane lies at
distance >= E; layer-0 rows reuse the slice's shared test), NEIGHBOR (the flipped code is a slot's),
FAR_REGION (the neighbouring region is a used pool entry) or a Farkas cover (the row's own (code, row)
is a used pool entry). The two memberships are log-derivative lookups (`statement.membership`).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

from fairness.covers import CoverKind

from ..affine import Form, derive_region, norm_sq
from ..checks import assert_nonnegative, assert_product_zero, bool_inputs
from ..distance import assert_distance_if, distance_at_least
from ..farkas import farkas_key
from ..membership import assert_lookup, challenge, multiplicities
from .context import RegionContext
from .pool import farkas_pool, layer_offsets


@dataclass
class SliceCovering:
    """What the rest of the statement reads of one slice's covering."""

    ids: list  # each slot's code id
    distance_kinds: list  # [slot][row]: the DISTANCE bit
    decision_values: list  # slot 0's decision values d_o at u*


@dataclass
class _Lookups:
    transcript: list = field(default_factory=list)
    neighbours: list = field(default_factory=list)  # (NEIGHBOR bit, flipped code id)
    keys: list = field(default_factory=list)  # (FARKAS or FAR_REGION bit, pool key)


def cover_slices(ctx: RegionContext, base: list, report: Callable[[str], None]) -> list[SliceCovering]:
    """Every slice witness's covering, on its layer-0 forms base[si] (scope slice{si})."""
    cs, n = ctx.cs, ctx.shape.witness_slices
    out = []
    for si in range(n):
        with cs.scope(f"slice{si}"):
            out.append(cover_slice(ctx, si, base[si]))
        report(f"slice {si + 1}/{n}: {cs.n_constraints} constraints")
    return out


def cover_slice(ctx: RegionContext, si: int, base: list[Form]) -> SliceCovering:
    """Declare and check slice witness si's covering, on the layer-0 forms `base`."""
    cs = ctx.cs
    with cs.scope("layer0_distance"):  # one test per slice, shared by every slot
        ok0 = [cs.and_(distance_at_least(cs, f.value, ctx.nsq0[i], ctx.e_sq, ctx.shape.eps_bits, ctx.wd.distance[0]),
                       ctx.nonzero0[i]) for i, f in enumerate(base)]
    slots, decision_values = _slots(ctx, si, base)
    ids = [cs.lin_comb([(1 << i, b) for i, b in enumerate(code)]) for _, _, code in slots]
    pool_keys, pool_transcript = farkas_pool(ctx, si, base)
    lookups = _Lookups([(b, 1) for _, _, code in slots for b in code])
    kinds = []
    for k, slot in enumerate(slots):
        with cs.scope(f"covers{k}"):
            kinds.append(_slot_covers(ctx, si, k, slot, ids[k], ok0, lookups))
    with cs.scope("membership"):
        lookups.transcript += pool_transcript
        _memberships(ctx, lookups, ids, pool_keys)
    return SliceCovering(ids, kinds, decision_values)


def _slots(ctx: RegionContext, si: int, base: list[Form]) -> tuple[list, list]:
    """The K slots' (neuron forms, decision forms, code bits), and slot 0's decision values."""
    cs, shape, wd = ctx.cs, ctx.shape, ctx.wd

    def activation_bits(l, forms):
        return [cs.is_less(0, f.value, max(wd.layers[l].value.bit_length(), 1)) for f in forms]

    slots = []
    with cs.scope("slot0"):
        neurons, decisions, code = derive_region(cs, ctx.weights, ctx.biases, ctx.dec_rows, base, activation_bits,
                                                 True)
        slots.append((neurons, decisions, code))
        for d in decisions:  # status 0: strict decision y on this slice
            assert_nonnegative(cs, cs.mul(ctx.not_status, d.value - 1), wd.decision.value + 1)
    offsets = layer_offsets(shape.hidden_sizes)
    for k in range(1, shape.region_slots):
        with cs.scope(f"slot{k}"):
            bits = bool_inputs(cs, "code", ctx.val(lambda x, k=k: x.slices[si].codes[k]), shape.n_hidden)
            neurons, decisions, _ = derive_region(
                cs, ctx.weights, ctx.biases, ctx.dec_rows, base,
                lambda l, forms, bits=bits: bits[offsets[l]:offsets[l + 1]], True)
            slots.append((neurons, decisions, bits))
    return slots, [d.value for d in slots[0][1]]


def _slot_covers(ctx: RegionContext, si: int, k: int, slot, slot_id, ok0: list, lookups: _Lookups) -> list:
    """One slot's cover kinds, row by row; returns the rows' DISTANCE bits."""
    cs, shape = ctx.cs, ctx.shape
    H = shape.n_hidden
    neurons, decisions, code = slot
    kinds = ctx.val(lambda x: x.slices[si].kinds[k])
    distance_bits = []
    for r in range(shape.n_rows):
        kind = None if kinds is None else kinds[r]
        with cs.scope(f"row{r}"):
            kd, kn, kr, kf = _kind_bits(cs, kind, r < H, lookups)
            distance_bits.append(kd)
            form = neurons[r] if r < H else decisions[r - H]
            if r < shape.hidden_sizes[0]:
                assert_product_zero(cs, kd, 1 - ok0[r])
            else:
                assert_distance_if(cs, kd, cs.mul(kd, ctx.not_status), form.value, norm_sq(cs, form), ctx.e_sq,
                                   shape.eps_bits, ctx.row_bound(r))
            if r < H:
                flipped = slot_id + (1 << r) - (1 << (r + 1)) * code[r]
                lookups.neighbours.append((kn, flipped))
                lookups.keys.append((kr, farkas_key(cs, flipped, shape.n_rows, H)))  # the neighbour's region entry
            lookups.keys.append((kf, farkas_key(cs, slot_id, r, H)))
    return distance_bits


def _kind_bits(cs, kind: CoverKind | None, neuron_row: bool, lookups: _Lookups) -> tuple[Any, Any, Any, Any]:
    """A row's one-hot cover kind: (DISTANCE, NEIGHBOR, FAR_REGION, Farkas); decision rows take the
    first and the last only (NEIGHBOR and FAR_REGION None)."""
    kd = bool_inputs(cs, "dist", None if kind is None else [int(kind == CoverKind.DISTANCE)], 1)[0]
    lookups.transcript.append((kd, 1))
    if not neuron_row:
        return kd, None, None, 1 - kd
    kn = bool_inputs(cs, "nb", None if kind is None else [int(kind == CoverKind.NEIGHBOR)], 1)[0]
    kr = bool_inputs(cs, "far", None if kind is None else [int(kind == CoverKind.FAR_REGION)], 1)[0]
    lookups.transcript += [(kn, 1), (kr, 1)]
    kf = 1 - kd - kn - kr
    cs.assert_is_bool(kf)
    return kd, kn, kr, kf


def _memberships(ctx: RegionContext, lookups: _Lookups, ids: list, pool_keys: list) -> None:
    """NEIGHBOR: every flipped code is a slot's code; FARKAS: every (code, row) key a used pool entry's."""
    cs, shape = ctx.cs, ctx.shape
    K, H = shape.region_slots, shape.n_hidden
    nb_mults = multiplicities(cs, lookups.neighbours, ids)
    fk_mults = multiplicities(cs, lookups.keys, pool_keys)
    nb_bits, fk_bits = (K * H).bit_length(), (K * (shape.n_rows + H)).bit_length()
    for m in nb_mults:
        cs.assert_range(m, nb_bits)
    for m in fk_mults:
        cs.assert_range(m, fk_bits)
    transcript = lookups.transcript + [(m, nb_bits) for m in nb_mults] + [(m, fk_bits) for m in fk_mults]
    gamma = challenge(cs, transcript)
    assert_lookup(cs, gamma, lookups.neighbours, ids, nb_mults)
    assert_lookup(cs, gamma, lookups.keys, pool_keys, fk_mults)
