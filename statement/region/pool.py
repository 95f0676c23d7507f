"""One slice's Farkas pool: F entries, each a (code, row) key with multipliers, verified when used.

An entry's row is one-hot over the n_rows rows and one more position, n_rows: the whole region (a
FAR_REGION entry). Unused entries have key -1 and prove nothing; a used one's separation (or
emptiness) certificate is checked against E by `statement.farkas`. The keys are the table the
covers' FARKAS and FAR_REGION queries look up (`statement.region.covers`).
"""
from __future__ import annotations

from typing import Any

from ..affine import Form, derive_region
from ..checks import assert_product_zero, bool_inputs, scoped
from ..farkas import check_farkas_entry, farkas_key
from .context import RegionContext


def layer_offsets(hidden_sizes) -> list[int]:
    """Where each hidden layer starts in the flat neuron order (and, last, the total)."""
    offsets = [0]
    for h in hidden_sizes:
        offsets.append(offsets[-1] + h)
    return offsets


def farkas_pool(ctx: RegionContext, si: int, base: list[Form]) -> tuple[list, list]:
    """Declare and verify slice witness si's pool; returns (each entry's key, -1 when unused; the
    entries' bits for the membership challenge's transcript)."""
    keys: list = []
    transcript: list = []
    for f in range(ctx.shape.farkas_slots):
        with ctx.cs.scope(f"farkas{f}"):
            key, bits = _pool_entry(ctx, si, f, base)
            keys.append(key)
            transcript += bits
    return keys, transcript


def _pool_entry(ctx: RegionContext, si: int, f: int, base: list[Form]) -> tuple[Any, list]:
    cs, shape = ctx.cs, ctx.shape
    H, Rr = shape.n_hidden, shape.n_rows
    have = cs.with_values
    entry = ctx.val(lambda x: x.slices[si].farkas[f])
    used = bool_inputs(cs, "used", None if not have else [int(entry is not None)], 1)[0]
    ebits = bool_inputs(cs, "code", None if not have else (list(entry.code) if entry else [0] * H), H)
    rbits = bool_inputs(cs, "row", None if not have else
                        [int(entry is not None and entry.row == r) for r in range(Rr + 1)], Rr + 1)
    cs.assert_equal(cs.sum(rbits), used)
    lams = cs.private_inputs(scoped(cs, "lambda"), H, None if not have else
                             (list(entry.lambdas) if entry else [0] * H))
    mu = cs.private_input(scoped(cs, "mu"), None if not have else (entry.mu if entry else 0))
    _multiplier_ranges(ctx, rbits, lams, mu)
    offsets = layer_offsets(shape.hidden_sizes)
    neurons, decisions, _ = derive_region(
        cs, ctx.weights, ctx.biases, ctx.dec_rows, [Form(b.normal, b.offset, None) for b in base],
        lambda l, forms: ebits[offsets[l]:offsets[l + 1]], False)
    check_farkas_entry(cs, used, rbits, lams, mu, neurons, decisions, ebits, ctx.box_lo_free, ctx.box_hi_free,
                       ctx.wd, ctx.query_free, ctx.e_sq, shape.eps_bits, None if entry is None else entry.box,
                       shape.exact)
    eid = cs.lin_comb([(1 << i, b) for i, b in enumerate(ebits)])
    row_index = cs.lin_comb([(r, b) for r, b in enumerate(rbits)])
    key = cs.mul(used, farkas_key(cs, eid, row_index, H) + 1) - 1
    return key, [(used, 1)] + [(b, 1) for b in ebits] + [(b, 1) for b in rbits]


def _multiplier_ranges(ctx: RegionContext, rbits: list, lams: list, mu) -> None:
    """Each multiplier within the shape's bits for the entry's row (`StatementShape.lambda_bits`)."""
    cs, shape = ctx.cs, ctx.shape
    H, Rr, fb = shape.n_hidden, shape.n_rows, shape.farkas_bits
    lam_bits = shape.lambda_bits
    is_dec = cs.sum(rbits[H:Rr])
    if shape.exact:
        for lam, lb in zip(lams, lam_bits):
            cs.assert_range(lam, lb)
    else:
        # Decision entries (emptiness only): lambda < 2^lb. Neuron and region entries,
        # whose separation values are squared whole: lambda 2^(lb - fb) < 2^lb, i.e. < 2^fb.
        for lam, lb in zip(lams, lam_bits):
            widen = (1 << (lb - fb)) - 1
            cs.assert_range(cs.mul(lam, 1 + widen - is_dec * widen), lb)
    assert_product_zero(cs, rbits[Rr], mu)  # a whole region takes no extra row
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
