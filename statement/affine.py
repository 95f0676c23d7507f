"""In-circuit derivation of a region's affine forms from the committed weights.

For an activation code R (flat bits, layer by layer) on one slice:

    layer 0:   z_i(u) = W_0[i, free] . u + (W_0[i, sens] . slice + b_0[i])   (code-independent)
    layer l:   z_i(u) = sum_k (W_l[i, k] R_{l-1,k}) z_k(u) + b_l[i]
    decision:  d_o(u) = sum_k (Delta_o[k] R_{L-1,k}) z_k(u) + delta_o

with Delta_o = W_L[y] - W_L[j(o)], delta_o = b_L[y] - b_L[j(o)] (from the
one-hot decision bits; `decision_rows`). Each form carries its normal (over
the free columns), its offset and optionally its value at u* (composed the
same way from the layer-0 values, so value = normal.u* + offset exactly).
Cost per deeper layer: h_l h_{l-1} (1 + n_free + 2) multiplications.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Sequence


@dataclass
class Form:
    normal: list  # LCs, one per free column
    offset: object  # LC
    value: object | None  # LC: normal.u* + offset, or None when not needed


def decision_rows(cs, y_bits: Sequence, w_last: Sequence[Sequence], b_last: Sequence):
    """(Delta_o, delta_o) for o = 0..C-2: the rows of z_y - z_{j(o)} over the last hidden layer,
    j(o) = o if o < y else o + 1. ge_o = [y <= o] = sum_{c <= o} y_c."""
    C = len(w_last)
    cols = list(range(len(w_last[0]))) + [None]

    def entry(c, k):
        return b_last[c] if k is None else w_last[c][k]

    with cs.scope("decision_rows"):
        wy = {k: cs.sum([entry(0, k)] + [cs.mul(y_bits[c], entry(c, k) - entry(0, k)) for c in range(1, C)])
              for k in cols}
        rows = []
        for o in range(C - 1):
            ge = cs.sum(y_bits[: o + 1])
            wj = {k: entry(o, k) + cs.mul(ge, entry(o + 1, k) - entry(o, k)) for k in cols}
            rows.append(([wy[k] - wj[k] for k in cols[:-1]], wy[None] - wj[None]))
    return rows


def compose(cs, rows: Sequence[tuple[Sequence, object]], bits: Sequence, prev: Sequence[Form],
            with_values: bool) -> list[Form]:
    """Forms of sum_k (row[k] bits[k]) prev[k] + bias for each (row, bias)."""
    out = []
    dim = len(prev[0].normal)
    for row, bias in rows:
        masked = [cs.mul(w, b) for w, b in zip(row, bits)]
        normal = [cs.sum([cs.mul(m, f.normal[j]) for m, f in zip(masked, prev)]) for j in range(dim)]
        offset = cs.sum([cs.mul(m, f.offset) for m, f in zip(masked, prev)] + [bias])
        value = None
        if with_values:
            value = cs.sum([cs.mul(m, f.value) for m, f in zip(masked, prev)] + [bias])
        out.append(Form(normal, offset, value))
    return out


def derive_region(cs, weights, biases, dec_rows, base: Sequence[Form],
                  layer_bits: Callable[[int, list[Form]], list], with_values: bool):
    """(neuron forms flat, decision forms, code bits flat).

    layer_bits(l, forms_of_layer_l) returns the code bits of hidden layer l
    (private bits of a slot, or the activation bits computed from the values)."""
    n_hidden_layers = len(weights) - 1
    layer = list(base)
    neurons = list(base)
    code: list = []
    for l in range(1, n_hidden_layers + 1):
        with cs.scope(f"layer{l}"):
            b = layer_bits(l - 1, layer)
            code.extend(b)
            if l < n_hidden_layers:
                layer = compose(cs, list(zip(weights[l], biases[l])), b, layer, with_values)
                neurons.extend(layer)
            else:
                decision = compose(cs, dec_rows, b, layer, with_values)
    return neurons, decision, code


def norm_sq(cs, form: Form):
    return cs.sum([cs.square(a) for a in form.normal])
