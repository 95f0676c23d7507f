"""Verification of one Farkas pool entry (separation form, docs/STATEMENT.md).

The entry names a region code R (its own bits) and a row: a neuron row i
(extra row z_i(u) = 0, mu of any sign) or a decision row o (extra row
d_o(u) <= 0, i.e. class j(o) at least ties y; mu >= 0). Its forms are derived
in-circuit from the committed weights. With sigma_k = 1 - 2 R_k,

    g(u) = sum_k lambda_k sigma_k z_k(u) + mu e(u) = r.u + g0,

every point of {u in box : P_R, extra row} has g(u) <= 0. The entry also
carries box multipliers nu (one signed integer per free input; nu.u <=
support(nu) = sum_j max(nu_j lo_j, nu_j hi_j) on the box), so

    h(u) = g(u) + nu.u - support(nu) = r'.u + g0 - support(nu),  r' = r + nu,

is <= 0 on every point of the set. The entry is valid iff h(u*) > 0 and

    h(u*)^2 2^(2t) >= E^2 2^(2s) ||r'||^2

(the set lies at distance >= eps from u*; with r' = 0 it is empty, the
residual form of an emptiness certificate being nu = -r). Decision-row
entries must have r' = 0 (emptiness only: NO_CLASS), which also keeps their
wide values out of the squared comparison. Neuron-row entries have |nu_j| <
2^nu_neuron (`widths`), so that comparison cannot wrap. Validity is enforced
when the entry's `used` bit is set; only used entries expose a key (unused
ones expose -1, which no (code, row) key equals). An entry for row n_rows
separates the whole region P_R (no extra row, mu = 0: FAR_REGION covers).
"""
from __future__ import annotations

from .checks import assert_nonnegative, assert_product_zero, bool_inputs, scoped
from .widths import bits


def farkas_key(cs, code_id, row_index, n_hidden: int):
    """key = code id + 2^H * row (row 0..H-1 neurons, H+o decision rows)."""
    return code_id + row_index * (1 << n_hidden)


def _box_multipliers(cs, nu_values, r, widths):
    """nu_j = (1 - 2 sign_j) mag_j with mag_j < 2^nu_bits; returns (nu, sign bits, high parts).

    The high part of mag_j (bits at and above nu_neuron_bits) is returned so
    the caller can force it to zero on neuron rows. Without explicit values
    (an emptiness certificate) nu = -r is filled in from r's values."""
    dim = len(r)
    if cs.with_values:
        vals = nu_values if nu_values is not None else [-cs.signed_value_of(x) for x in r]
        signs, mags = [int(v < 0) for v in vals], [abs(v) for v in vals]
    else:
        signs = mags = None
    sign = bool_inputs(cs, "nu_sign", signs, dim)
    mag = cs.private_inputs(scoped(cs, "nu_mag"), dim, mags)
    nu, high = [], []
    for j in range(dim):
        mbits = cs.to_bits(mag[j], widths.nu_bits)
        high.append(cs.from_bits(mbits[widths.nu_neuron_bits:]) if widths.nu_bits > widths.nu_neuron_bits else 0)
        nu.append(mag[j] - 2 * cs.mul(sign[j], mag[j]))
    return nu, sign, high


def check_farkas_entry(cs, used, row_bits, lambdas, mu, neurons, decisions, code_bits, box_lo, box_hi, widths,
                       query_free, e_sq, t_bits: int, nu_values=None, exact: bool = False):
    """Enforce validity when used = 1. row_bits: one-hot over all rows (zero when unused).

    query_free: the query's free coordinates; e_sq: E^2 2^(2s); nu_values:
    the box multipliers (None: an emptiness certificate, nu = -r). `exact`
    statements accept separation on decision rows too (FAR_CLASS) and compare
    truncated values (`_truncated_comparison`)."""
    H = len(neurons)
    with cs.scope("farkas_check"):
        coef = []
        for k in range(H):
            lam = lambdas[k]
            # lambda_k sigma_k + mu [row = k]
            coef.append(lam - 2 * cs.mul(lam, code_bits[k]) + cs.mul(mu, row_bits[k]))
        for o in range(len(decisions)):
            coef.append(cs.mul(mu, row_bits[H + o]))
        forms = list(neurons) + list(decisions)
        dim = len(forms[0].normal)
        r = [cs.sum([cs.mul(c, f.normal[j]) for c, f in zip(coef, forms)]) for j in range(dim)]
        g0 = cs.sum([cs.mul(c, f.offset) for c, f in zip(coef, forms)])
        nu, sign, high = _box_multipliers(cs, nu_values, r, widths)
        is_dec = cs.sum(row_bits[H:H + len(decisions)])  # row_bits[-1]: the whole region (no extra row)
        r2 = [r[j] + nu[j] for j in range(dim)]
        # support(nu) = sum_j max(nu_j lo_j, nu_j hi_j): lo when nu_j < 0, hi otherwise.
        support = cs.sum([cs.select(sign[j], nu[j] * box_lo[j], nu[j] * box_hi[j]) for j in range(dim)])
        h = cs.sum([cs.mul(r2[j], query_free[j]) for j in range(dim)]) + g0 - support
        assert_nonnegative(cs, cs.mul(used, h - 1), widths.separation_value + 1)
        if exact:
            _truncated_comparison(cs, used, h, r2, e_sq, t_bits, widths)
            return
        neuron_gate = cs.mul(used, 1 - is_dec)
        for j in range(dim):
            assert_product_zero(cs, cs.mul(used, is_dec), r2[j])  # decision rows: emptiness only
            if not isinstance(high[j], int):
                assert_product_zero(cs, neuron_gate, high[j])  # neuron rows: |nu_j| < 2^nu_neuron_bits
        nsq = cs.sum([cs.square(x) for x in r2])
        slack = cs.square(h) * (1 << (2 * t_bits)) - cs.mul(e_sq, nsq)
        assert_nonnegative(cs, cs.mul(neuron_gate, slack), widths.separation_comparison)


def _truncated_comparison(cs, used, h, r2, e_sq, t_bits: int, widths) -> None:
    """used => h^2 2^(2t) >= E^2 2^(2s) ||r'||^2, on values truncated by k = separation_shift.

    The prover gives H = floor(h / 2^k) and N = ceil(||r'||^2 / 2^(2k)); the
    circuit checks 0 <= h - 2^k H < 2^k, 0 <= 2^(2k) N - ||r'||^2 < 2^(2k)
    and H^2 2^(2t) >= E^2 2^(2s) N. Then h^2 >= 2^(2k) H^2 and ||r'||^2 <=
    2^(2k) N, so the exact comparison follows; with h >= 1 (checked by the
    caller) the set lies at distance >= eps (r' = 0, N = 0: it is empty).
    ||r'||^2 itself fits the field (`widths`); only h^2 2^(2t) would not."""
    k = widths.separation_shift
    have = cs.with_values
    h_val = cs.signed_value_of(h) if have else None
    high = cs.private_input(scoped(cs, "h_high"), None if not have else max(h_val, 0) >> k)
    cs.assert_range(high, bits(widths.separation_high))
    if k:
        assert_nonnegative(cs, cs.mul(used, h - high * (1 << k)), (1 << k) - 1)  # 0 <= h - 2^k H < 2^k
    else:
        cs.assert_equal(cs.mul(used, h - high), 0)
    nsq = cs.sum([cs.square(x) for x in r2])
    nsq_val = cs.value_of(nsq) if have else None
    n_high = cs.private_input(scoped(cs, "norm_high"), None if not have else -(-nsq_val >> (2 * k)))
    cs.assert_range(n_high, bits(widths.separation_residual_high))
    if k:
        assert_nonnegative(cs, n_high * (1 << (2 * k)) - nsq, (1 << (2 * k)) - 1)  # 0 <= 2^(2k) N - ||r'||^2 < 2^(2k)
    else:
        cs.assert_equal(n_high, nsq)
    slack = cs.square(high) * (1 << (2 * t_bits)) - cs.mul(e_sq, n_high)
    assert_nonnegative(cs, cs.mul(used, slack), widths.separation_comparison)
