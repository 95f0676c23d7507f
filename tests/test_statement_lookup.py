"""The log-derivative membership lookup of the statement circuit, in isolation."""
from __future__ import annotations

from circuits.builder import ConstraintSystem
from circuits.field import R
from statement.membership import PACK_BITS, assert_lookup, challenge, multiplicities, pack

TABLE = [3, 5, 7, 5]


def _build(queries, gates, mults=None, hash_mults=True, strict=False):
    cs = ConstraintSystem(strict=strict)
    table = cs.private_inputs("t", len(TABLE), TABLE)
    qs = cs.private_inputs("q", len(queries), queries)
    gs = cs.private_inputs("g", len(gates), gates)
    for x in table + qs:
        cs.assert_range(x, 8)
    for g in gs:
        cs.assert_is_bool(g)
    pairs = list(zip(gs, qs))
    ms = multiplicities(cs, pairs, table) if mults is None else cs.private_inputs("m", len(TABLE), mults)
    for m in ms:
        cs.assert_range(m, 8)
    transcript = [(x, 8) for x in table + qs] + [(g, 1) for g in gs]
    if hash_mults:
        transcript += [(m, 8) for m in ms]
    gamma = challenge(cs, transcript)
    assert_lookup(cs, gamma, pairs, table, ms)
    return cs, cs.value_of(gamma)


def _ok(cs) -> bool:
    return cs.compile(wire_names=False).is_satisfied(cs.witness())


def test_members_and_ungated_non_members_pass():
    cs, _ = _build([5, 3, 5, 6], [1, 1, 1, 0], strict=True)
    assert _ok(cs)
    w = cs.witness()
    mults = [w[i] for i in cs.r1cs_wires_matching(lambda n: n.startswith("multiplicities/"))]
    assert mults == [1, 2, 0, 0]  # 3 once; 5 twice, credited to its first index; the ungated 6 not at all


def test_gated_non_member_fails():
    cs, _ = _build([5, 6], [1, 1])
    assert not _ok(cs)


def _identity_only(queries, gates, mults, hash_mults):
    """The lookup identity without range checks on m: only the hash protects it."""
    cs = ConstraintSystem(strict=False)
    t = cs.private_inputs("t", len(TABLE), TABLE)
    q = cs.private_inputs("q", len(queries), queries)
    g = cs.private_inputs("g", len(gates), gates)
    m = cs.private_inputs("m", len(TABLE), mults)
    transcript = [(x, 8) for x in t + q] + [(b, 1) for b in g] + ([(x, 253 // len(m)) for x in m] if hash_mults else [])
    gamma = challenge(cs, transcript)
    assert_lookup(cs, gamma, list(zip(g, q)), t, m)
    return cs, cs.value_of(gamma)


def test_forged_multiplicities_cannot_chase_the_challenge():
    queries, gates = [5, 6], [1, 1]  # 6 is not in the table
    _, gamma = _identity_only(queries, gates, [0, 1, 0, 0], hash_mults=False)

    inv = lambda x: pow((gamma - x) % R, R - 2, R)  # noqa: E731
    lhs = sum(inv(q) for q in queries) % R
    forged = [(lhs - inv(TABLE[1])) * (gamma - TABLE[0]) % R, 1, 0, 0]  # balances the identity at gamma
    # With a challenge that does not depend on the multiplicities the forgery passes ...
    cs, same = _identity_only(queries, gates, forged, hash_mults=False)
    assert same == gamma and _ok(cs)
    # ... hashing them (as the statement does) moves the challenge, and it fails.
    cs, moved = _identity_only(queries, gates, forged, hash_mults=True)
    assert moved != gamma and not _ok(cs)


def test_pack_is_injective_within_field():
    cs = ConstraintSystem()
    bits = cs.private_inputs("b", 600, [i % 2 for i in range(600)])
    packed = pack(cs, [(b, 1) for b in bits])
    assert len(packed) == 3 and all(cs.value_of(p) < (1 << PACK_BITS) for p in packed)
    assert cs.value_of(packed[0]) == sum(1 << i for i in range(PACK_BITS) if i % 2)
