"""Poseidon gadget: the same permutation as `circuits.poseidon`, in R1CS.

Cost per permutation of width t: 3 constraints per S-box (x^2, x^4, x^5), so
3 * (R_F * t + R_P), e.g. 243 at t = 3 and 612 at t = 17. Round constants and
MDS multiplications are linear, hence free.

Partial rounds: only cell 0 goes through the S-box, so the other cells are
affine forms in the wires made so far. Those forms depend on the constants
only, so they are precomputed once per width (`_partial_forms`) over the basis
(1, w_0..w_{t-1}, p_0..p_{R_P-1}) where w are the S-box outputs of the last
full round before the partial rounds and p the partial S-box outputs. This
keeps circuit building linear in the size of the forms instead of re-mixing
t growing linear combinations every round.
"""
from __future__ import annotations

from functools import lru_cache
from operator import mul
from typing import Sequence

from ..lc import LC
from ..errors import CircuitError
from ..field import R
from ..poseidon import CHAIN_RATE, MAX_INPUTS, chain_chunks
from ..poseidon_constants import N_ROUNDS_F, n_rounds_partial, poseidon_parameters


@lru_cache(maxsize=None)
def _partial_forms(t: int):
    """(sbox_forms, final_forms) for the partial rounds of width t.

    Positions: 0 = constant, 1..t = w_j, t+1+k = p_k. sbox_forms[k] is the
    S-box input of partial round k (length t+1+k); final_forms[i] is cell i
    after the last partial round's MDS (length t+1+R_P)."""
    constants, mds = poseidon_parameters(t)
    r_p = n_rounds_partial(t)
    half = N_ROUNDS_F // 2

    def step(v):
        # One partial round's linear part on a source's coefficient vector:
        # cell 0 is overwritten by the new S-box output, then the MDS mixes.
        return [sum(row[j] * v[j] for j in range(1, t)) % R for row in mds]

    # Every source's coefficient vector (one coefficient per cell) evolves by
    # `step`. The S-box outputs p_j all start from column 0 of the MDS, so they
    # share one sequence u[n] = step^n(M e_0).
    col = [[mds[i][j] for i in range(t)] for j in range(t)]
    u = [col[0]]
    for _ in range(r_p - 1):
        u.append(step(u[-1]))
    vw = [list(c) for c in col]  # sources w_j
    vc = [0] * t  # the constant
    sbox_forms = []
    for k in range(r_p):
        base = (half + k) * t
        vc = [(vc[i] + constants[base + i]) % R for i in range(t)]
        form = [vc[0]] + [v[0] for v in vw] + [u[k - 1 - j][0] for j in range(k)]
        sbox_forms.append(tuple(form))
        vw = [step(v) for v in vw]
        vc = step(vc)
    final = tuple(
        tuple([vc[i]] + [v[i] for v in vw] + [u[r_p - 1 - j][i] for j in range(r_p)]) for i in range(t)
    )
    return tuple(sbox_forms), final


def _sbox(cs, x: LC) -> LC:
    """x^5 in three constraints: x*x = x2, x2*x2 = x4, x4*x = x5."""
    if x.is_constant():
        return cs.constant(pow(x.terms.get(0, 0), 5, R))
    v = x.value
    if v is None:
        v2 = v4 = v5 = None
    else:
        v2 = v * v % R
        v4 = v2 * v2 % R
        v5 = v4 * v % R
    x2 = cs._alloc(v2, "x2")
    cs._emit(x, x, x2)
    x4 = cs._alloc(v4, "x4")
    cs._emit(x2, x2, x4)
    x5 = cs._alloc(v5, "x5")
    cs._emit(x4, x, x5)
    return x5


def _mds_lcs(cs, mds, w: list[LC]) -> list[LC]:
    """MDS times a vector of single-wire values (the S-box outputs of a full round)."""
    wires = [x.single_wire() for x in w]
    if any(x is None for x in wires):
        return [cs.lin_comb(zip(row, w)) for row in mds]
    values = [x.value for x in w]
    known = values[0] is not None
    return [
        LC(cs, dict(zip(wires, row)), sum(map(mul, row, values)) % R if known else None)
        for row in mds
    ]


def _form_lc(cs, form: Sequence[int], basis: list[int], basis_values: list[int] | None) -> LC:
    n = len(form) - 1
    terms = dict(zip(basis[:n], form[1:]))
    if 0 in form[1:]:
        terms = {w: c for w, c in terms.items() if c}
    c0 = form[0]
    if c0:
        terms[0] = c0
    value = None
    if basis_values is not None:
        value = (c0 + sum(map(mul, form[1:], basis_values[:n]))) % R
    return LC(cs, terms, value)


def permutation(cs, state: Sequence) -> list[LC]:
    """Poseidon permutation of width len(state) (2..17) on circuit values."""
    t = len(state)
    constants, mds = poseidon_parameters(t)
    r_p = n_rounds_partial(t)
    half = N_ROUNDS_F // 2
    s = [cs.lc(x) for x in state]
    with cs.scope(f"poseidon_t{t}"):
        # First full rounds; the last one's MDS is folded into the partial forms.
        w: list[LC] = []
        for r in range(half):
            with cs.scope(f"full[{r}]"):
                w = [_sbox(cs, cs._add_const(x, constants[r * t + i])) for i, x in enumerate(s)]
            if r < half - 1:
                s = _mds_lcs(cs, mds, w)
        basis = [x.single_wire() for x in w]
        if any(b is None for b in basis):
            # Only possible when every input is a constant; `poseidon` folds that case.
            raise CircuitError("poseidon permutation of constants: compute it natively")
        with_values = cs.with_values
        basis_values = [x.value for x in w] if with_values else None
        sbox_forms, final_forms = _partial_forms(t)
        for k in range(r_p):
            with cs.scope(f"partial[{k}]"):
                x = _form_lc(cs, sbox_forms[k], basis, basis_values)
                p = _sbox(cs, x)
            basis.append(p.single_wire())
            if with_values:
                basis_values.append(p.value)
        s = [_form_lc(cs, form, basis, basis_values) for form in final_forms]
        for r in range(half + r_p, N_ROUNDS_F + r_p):
            with cs.scope(f"full[{r - r_p}]"):
                w = [_sbox(cs, cs._add_const(x, constants[r * t + i])) for i, x in enumerate(s)]
            s = _mds_lcs(cs, mds, w)
    return s


def poseidon(cs, xs: Sequence) -> LC:
    """circomlib's Poseidon(len(xs)) of 1..16 circuit values; equals poseidon_hash."""
    if not 1 <= len(xs) <= MAX_INPUTS:
        raise CircuitError(f"poseidon takes 1 to {MAX_INPUTS} inputs, got {len(xs)}")
    lcs = [cs.lc(x) for x in xs]
    if all(x.is_constant() for x in lcs):
        from ..poseidon import poseidon_hash

        return cs.constant(poseidon_hash([x.constant_value() for x in lcs]))
    return permutation(cs, [0, *lcs])[0]


def poseidon_chain(cs, xs: Sequence) -> LC:
    """The chain hash of `circuits.poseidon.poseidon_chain` on circuit values."""
    if len(xs) == 0:
        raise CircuitError("poseidon_chain needs at least one element")
    h = cs.constant(len(xs))
    with cs.scope("poseidon_chain"):
        for a, b in chain_chunks(len(xs)):
            h = poseidon(cs, [h, *xs[a:b]])
    return h


__all__ = ["CHAIN_RATE", "permutation", "poseidon", "poseidon_chain"]
