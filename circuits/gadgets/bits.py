"""Bit decomposition and range checks.

Soundness: for n_bits <= 253, sum_{i<n} 2^i b_i with boolean b_i is < 2^253 < R,
so it cannot wrap; the decomposition is unique and x = sum proves 0 <= x < 2^n
(x read as an integer in [0, R)).
"""
from __future__ import annotations

from typing import Sequence

from ..errors import CircuitError, UnsatisfiedConstraint
from ..lc import LC
from ..field import MAX_SIGNED_BITS, R, to_signed

MAX_BITS = 253  # 2^253 < R: a 253-bit decomposition cannot wrap

_NEG_POW2 = tuple((-(1 << i)) % R for i in range(MAX_BITS))
_INV2 = (R + 1) // 2
_INV_POW2 = tuple(pow(_INV2, i, R) for i in range(MAX_BITS))


def _check_width(name: str, n_bits: int, limit: int = MAX_BITS) -> None:
    if not isinstance(n_bits, int) or isinstance(n_bits, bool) or n_bits < 0 or n_bits > limit:
        raise CircuitError(f"{name}: bit width must be an int in [0, {limit}], got {n_bits!r}")


def to_bits(cs, x, n_bits: int) -> list:
    """Little-endian bits of x, asserting 0 <= x < 2^n_bits.

    n_bits constraints: n-1 hinted bit wires with b*b = b, and the top bit is
    the linear combination (x - sum_{i<n-1} 2^i b_i) / 2^(n-1), itself asserted
    boolean (this folds the recomposition check into the last bit's constraint).
    """
    _check_width("to_bits", n_bits)
    x = cs.lc(x)
    if x.is_constant():
        v = x.terms.get(0, 0)
        if v >> n_bits:
            raise UnsatisfiedConstraint(f"to_bits in {cs.current_scope or '<top>'}: constant {to_signed(v)} does not fit in {n_bits} bits")
        return [cs.one if (v >> i) & 1 else cs.zero for i in range(n_bits)]
    with cs.scope("to_bits"):
        v = x.value
        if n_bits == 0:
            cs.assert_equal(x, 0)
            return []
        if v is not None and cs.strict and v >> n_bits:
            raise UnsatisfiedConstraint(
                f"to_bits in {cs.current_scope}: value {to_signed(v)} is not in [0, 2^{n_bits})"
            )
        # Hot path (range checks dominate statement circuits): append to the
        # builder's tables directly. b*b = b holds for the hinted bits by
        # construction, so only the top bit's constraint is checked.
        values, scopes, locals_ = cs._values, cs._wire_scope, cs._wire_local
        A, B, C, labels = cs._a, cs._b, cs._c, cs._labels
        keep = cs.keep_constraints
        scope = cs._scope
        base = len(values)
        rest_terms = dict(x.terms)
        bits = []
        for i in range(n_bits - 1):
            w = base + i
            bv = None if v is None else (v >> i) & 1
            values.append(bv)
            scopes.append(scope)
            locals_.append(("bit", i))
            d = {w: 1}
            if keep:
                A.append(d)
                B.append(d)
                C.append(d)
                labels.append(scope)
            bits.append(LC(cs, d, bv, True))
            rest_terms[w] = _NEG_POW2[i]
        cs._n_constraints += n_bits - 1
        cs._compiled = None
        top = n_bits - 1
        scale = _INV_POW2[top]
        top_terms = {w: c * scale % R for w, c in rest_terms.items()} if top else rest_terms
        top_bit = LC(cs, top_terms, None if v is None else (v >> top) & 1, boolean=True)
        cs._emit(top_bit, top_bit, top_bit)
        bits.append(top_bit)
        return bits


def from_bits(cs, bits: Sequence) -> "object":
    """sum_i 2^i bits[i]; asserts each bit boolean unless a gadget already did."""
    if len(bits) > MAX_BITS:
        raise CircuitError(f"from_bits: at most {MAX_BITS} bits, got {len(bits)}")
    lcs = [cs.lc(b) for b in bits]
    with cs.scope("from_bits"):
        for b in lcs:
            cs._ensure_bool(b)
    return cs.lin_comb([(1 << i, b) for i, b in enumerate(lcs)])


def assert_range(cs, x, n_bits: int) -> None:
    """0 <= x < 2^n_bits (x as an integer in [0, R)); n_bits constraints."""
    with cs.scope("assert_range"):
        to_bits(cs, x, n_bits)


def assert_signed_range(cs, x, n_bits: int) -> None:
    """-2^n_bits <= x < 2^n_bits, x read as a signed residue (to_signed).

    n_bits + 1 constraints: x + 2^n_bits is decomposed into n_bits + 1 bits.
    """
    _check_width("assert_signed_range", n_bits, MAX_SIGNED_BITS)
    with cs.scope("assert_signed_range"):
        x = cs.lc(x)
        v = x.value
        if v is not None and cs.strict and not -(1 << n_bits) <= to_signed(v) < (1 << n_bits):
            raise UnsatisfiedConstraint(
                f"assert_signed_range in {cs.current_scope}: value {to_signed(v)} is not in [-2^{n_bits}, 2^{n_bits})"
            )
        to_bits(cs, x + (1 << n_bits), n_bits + 1)


def pack_capacity(n_bits: int) -> int:
    """How many n_bits-wide values `pack` puts in one field element (<= 252 bits used)."""
    _check_width("pack", n_bits, 252)
    if n_bits == 0:
        raise CircuitError("pack: bit width must be positive")
    return 252 // n_bits


def pack_native(xs: Sequence[int], n_bits: int, signed: bool = True) -> list[int]:
    """The field elements `pack` produces, computed outside the circuit.

    Value i of a group goes to bits [i*n, (i+1)*n) of its element as
    x_i + 2^(n-1) when signed (x_i in [-2^(n-1), 2^(n-1))), else x_i (in
    [0, 2^n)). Groups are consecutive runs of pack_capacity(n) values, the
    last one possibly shorter."""
    k = pack_capacity(n_bits)
    offset = 1 << (n_bits - 1) if signed else 0
    out = []
    for start in range(0, len(xs), k):
        e = 0
        for i, x in enumerate(xs[start : start + k]):
            u = x + offset
            if not 0 <= u < (1 << n_bits):
                kind = "signed" if signed else "unsigned"
                raise CircuitError(f"pack: value {x} at index {start + i} does not fit in {n_bits} bits ({kind})")
            e |= u << (n_bits * i)
        out.append(e)
    return out


def pack(cs, xs: Sequence, n_bits: int, signed: bool = True, already_range_checked: bool = False) -> list:
    """Pack many small values into few field elements (e.g. before hashing).

    Each value is range-checked (n_bits constraints each), which makes the
    packing injective: a group of k = pack_capacity(n) values occupies
    k*n <= 252 bits, so the sum cannot wrap. Layout as in `pack_native`.

    already_range_checked=True skips those checks (packing is then free); it
    is sound ONLY if the circuit already constrains every value to the same
    range: [-2^(n-1), 2^(n-1)) when signed (that is what
    assert_signed_range(x, n_bits - 1) enforces), [0, 2^n) otherwise."""
    k = pack_capacity(n_bits)
    offset = 1 << (n_bits - 1) if signed else 0
    out = []
    with cs.scope("pack"):
        for start in range(0, len(xs), k):
            group = [cs.lc(x) + offset for x in xs[start : start + k]]
            for u in group:
                if already_range_checked:
                    if cs.strict and u.value is not None and u.value >> n_bits:
                        raise UnsatisfiedConstraint(f"pack in {cs.current_scope}: a value does not fit in {n_bits} bits")
                else:
                    assert_range(cs, u, n_bits)
            out.append(cs.lin_comb([(1 << (n_bits * i), u) for i, u in enumerate(group)]))
    return out
