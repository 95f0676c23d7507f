"""Set membership: a log-derivative lookup with an in-circuit Fiat-Shamir challenge.

To show that every gated query q_i (gate g_i in {0, 1}) is an element of a
table t_1..t_n, the prover supplies multiplicities m_k (hints, range-checked)
and the circuit checks, at a challenge gamma,

    sum_i g_i / (gamma - q_i)  ==  sum_k m_k / (gamma - t_k)          (logUp)

with one inverse (1 constraint) and one product (1 constraint) per query and
per table entry, instead of n products per query for prod_k (q - t_k) = 0.

Soundness. Both sides are rational functions of gamma; if some gated query
value v is not in the table, the left side has a pole at v with residue
(number of gated queries equal to v) in [1, p), which no table term cancels,
so the difference is a non-zero rational function with at most
(#queries + #table) roots. gamma is the Poseidon hash of a transcript that
determines every query, gate, table entry and multiplicity (the bits they
are computed from, packed injectively), so a prover would have to find a
transcript whose hash hits one of those few roots: probability about
(#queries + #table) / 2^254 per hash evaluation (Poseidon as a random
oracle, the same assumption the commitment rests on). Duplicate table
entries and zero gates are harmless. If gamma equals a query or table value
the inverse does not exist and the honest prover fails (negligible).
"""
from __future__ import annotations

from typing import Sequence

from circuits.field import R

LOOKUP_TAG = int.from_bytes(b"fairproof.lookup.v1", "big")
PACK_BITS = 248  # < 253: a packed element never wraps


def pack(cs, items: Sequence[tuple[object, int]]) -> list:
    """Pack (value, width) pairs, each value constrained to [0, 2^width), into
    field elements of at most PACK_BITS bits (injective: no carries, no wrap)."""
    out, terms, used = [], [], 0
    for value, width in items:
        if used + width > PACK_BITS and terms:
            out.append(cs.lin_comb(terms))
            terms, used = [], 0
        terms.append((1 << used, value))
        used += width
    if terms:
        out.append(cs.lin_comb(terms))
    return out


def multiplicities(cs, queries: Sequence[tuple[object, object]], table: Sequence) -> list:
    """Hinted m_k: the number of gated queries equal to t_k, credited to the
    first table index holding that value (UNCONSTRAINED: range-check and hash them)."""
    n_q = len(queries)

    def count(*vals):
        gates, qs, ts = vals[:n_q], vals[n_q:2 * n_q], vals[2 * n_q:]
        first: dict[int, int] = {}
        for k, t in enumerate(ts):
            first.setdefault(t % R, k)
        m = [0] * len(ts)
        for g, q in zip(gates, qs):
            if g % R and (q % R) in first:
                m[first[q % R]] += 1
        return m

    inputs = [g for g, _ in queries] + [q for _, q in queries] + list(table)
    return cs.hint("multiplicities", count, inputs, len(table))


def challenge(cs, transcript: Sequence[tuple[object, int]]):
    """gamma = poseidon_chain([LOOKUP_TAG, *pack(transcript)])."""
    with cs.scope("challenge"):
        return cs.poseidon_chain([cs.constant(LOOKUP_TAG), *pack(cs, transcript)])


def assert_lookup(cs, gamma, queries: Sequence[tuple[object, object]], table: Sequence, mults: Sequence) -> None:
    """sum_i g_i / (gamma - q_i) == sum_k m_k / (gamma - t_k)."""
    with cs.scope("lookup"):
        lhs = [cs.mul(g, cs.inverse(gamma - q)) for g, q in queries]
        rhs = [cs.mul(m, cs.inverse(gamma - t)) for m, t in zip(mults, table)]
        cs.assert_equal(cs.sum(lhs), cs.sum(rhs))
