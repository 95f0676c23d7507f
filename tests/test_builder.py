"""The constraint-system builder: layout, witness generation, primitives."""
from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from circuits.builder import ConstraintSystem
from circuits.errors import CircuitError, UnsatisfiedConstraint
from circuits.field import R, to_signed

from circuit_helpers import assert_accepts_and_matches_setup, tampered


def test_public_wires_come_first_in_declaration_order():
    def circuit(cs, v):
        a = cs.private_input("a", 3 if v else None)
        p = cs.public_input("p", 5 if v else None)
        b = cs.private_input("b", 7 if v else None)
        q = cs.public_input("q", 35 if v else None)
        cs.assert_equal(cs.mul(p, b), q)
        cs.assert_equal(a + 2, p)

    cs, r1cs, w, _ = assert_accepts_and_matches_setup(circuit)
    assert r1cs.n_public == 2
    assert r1cs.wire_names[:5] == ("one", "p", "q", "a", "b")
    assert w[:5] == [1, 5, 35, 3, 7]
    assert r1cs.public_inputs(w) == [5, 35] == cs.public_values()
    assert cs.r1cs_wire("q") == 2
    assert not r1cs.is_satisfied(tampered(w, 2, 36))


def test_public_input_bound_later():
    def circuit(cs, v):
        y = cs.public_input("y")
        x = cs.private_input("x", 6 if v else None)
        cs.bind(y, x * x + 1)
        return y

    cs, r1cs, w, y = assert_accepts_and_matches_setup(circuit)
    assert w[1] == 37 and cs.value_of(y) == 37
    assert r1cs.n_constraints == 2  # x*x, and the binding equality
    assert not r1cs.is_satisfied(tampered(w, 1, 38))


def test_unbound_public_input_is_reported():
    cs = ConstraintSystem()
    cs.public_input("decision")
    with pytest.raises(CircuitError, match="decision"):
        cs.witness()


def test_using_unbound_public_input_is_reported():
    cs = ConstraintSystem()
    y = cs.public_input("y")
    x = cs.private_input("x", 2)
    with pytest.raises(CircuitError, match="not known yet"):
        cs.mul(x, y)


def test_bind_twice_is_refused():
    cs = ConstraintSystem()
    y = cs.public_input("y", 4)
    with pytest.raises(CircuitError, match="already has a value"):
        cs.bind(y, 4)
    with pytest.raises(CircuitError, match="public input"):
        cs.bind(cs.private_input("x", 1), 1)


def test_private_input_needs_value_when_building_witness():
    cs = ConstraintSystem()
    with pytest.raises(CircuitError, match="'w'"):
        cs.private_input("w")
    with pytest.raises(CircuitError, match="int"):
        cs.private_input("v", 1.5)


def test_duplicate_input_names_are_refused():
    cs = ConstraintSystem()
    cs.private_input("w", 1)
    with pytest.raises(CircuitError, match="declared twice"):
        cs.public_input("w", 1)


def test_input_vectors():
    cs = ConstraintSystem()
    xs = cs.private_inputs("x", 3, [1, 2, 3])
    assert [cs.value_of(x) for x in xs] == [1, 2, 3]
    assert cs.wire_name(xs[2].single_wire()) == "x[2]"
    with pytest.raises(CircuitError, match="expected 3 values"):
        cs.public_inputs("p", 3, [1, 2])


def test_linear_operations_are_free_and_fold_constants():
    cs = ConstraintSystem()
    a = cs.private_input("a", 10)
    b = cs.private_input("b", -4)
    e = 3 * a - b * 2 + 7 - (a + 1) - 6 + cs.neg(b) + cs.sub(a, 5) + cs.add(a, b, 1)
    assert cs.n_constraints == 0
    assert to_signed(e.value) == 3 * 10 + 8 + 7 - 11 - 6 + 4 + 5 + 7
    zero = a - a
    assert zero.is_constant() and zero.terms == {}
    k = cs.sum([a, 5, b, -5])
    assert k.terms.keys() == {a.single_wire(), b.single_wire()}
    assert cs.lin_comb([(2, a), (0, b), (3, 4)]).value == 32


def test_mul_emits_one_constraint_unless_constant():
    def circuit(cs, v):
        a = cs.private_input("a", 12 if v else None)
        b = cs.private_input("b", 5 if v else None)
        c = cs.mul(a, 3)
        d = a * b
        e = cs.square(b)
        return c, d, e

    cs, r1cs, w, (c, d, e) = assert_accepts_and_matches_setup(circuit)
    assert r1cs.n_constraints == 2
    assert (c.value, d.value, e.value) == (36, 60, 25)
    assert not r1cs.is_satisfied(tampered(w, d.single_wire(), 61))
    assert not r1cs.is_satisfied(tampered(w, e.single_wire(), 24))


def test_inner_product_and_mul_many():
    def circuit(cs, v):
        xs = cs.private_inputs("x", 4, [1, 2, 3, 4] if v else None)
        ys = cs.private_inputs("y", 4, [5, -6, 7, 8] if v else None)
        ip = cs.inner_product(xs, ys)
        mixed = cs.inner_product(xs, [1, 1, 2, 0])
        return ip, mixed, cs.mul_many(*xs)

    cs, r1cs, w, (ip, mixed, prod) = assert_accepts_and_matches_setup(circuit)
    assert to_signed(ip.value) == 5 - 12 + 21 + 32
    assert mixed.value == 9 and prod.value == 24
    assert r1cs.n_constraints == 4 + 3
    with pytest.raises(CircuitError, match="lengths differ"):
        cs.inner_product([1], [1, 2])


def test_assert_equal_one_constraint_and_rejections():
    def circuit(cs, v):
        a = cs.private_input("a", 2 if v else None)
        b = cs.private_input("b", 3 if v else None)
        cs.assert_equal(a * b + a, 4 * a)
        cs.assert_equal(5, 5)  # constants: no constraint

    cs, r1cs, w, _ = assert_accepts_and_matches_setup(circuit)
    assert r1cs.n_constraints == 2
    assert not r1cs.is_satisfied(tampered(w, cs.r1cs_wire("a"), 3))
    with pytest.raises(UnsatisfiedConstraint):
        ConstraintSystem(with_values=False).assert_equal(1, 2)


def test_assert_mul():
    def circuit(cs, v):
        a = cs.private_input("a", 3 if v else None)
        b = cs.private_input("b", 4 if v else None)
        cs.assert_mul(a + 1, b, 16)
        cs.assert_mul(a, 2, a + a)  # linear, still one constraint
        cs.assert_mul(2, 3, 6)  # constants: none

    cs, r1cs, w, _ = assert_accepts_and_matches_setup(circuit)
    assert r1cs.n_constraints == 2
    assert not r1cs.is_satisfied(tampered(w, cs.r1cs_wire("b"), 5))
    with pytest.raises(UnsatisfiedConstraint):
        cs.assert_mul(2, 3, 7)
    with pytest.raises(UnsatisfiedConstraint):
        cs.assert_mul(cs.lc(5) + cs.private_input("c", 1), 2, 11)


def test_strict_mode_names_the_gadget():
    cs = ConstraintSystem()
    a = cs.private_input("a", 2)
    with cs.scope("model"), cs.scope("layer[0]"):
        with pytest.raises(UnsatisfiedConstraint, match="model/layer\\[0\\]"):
            cs.assert_equal(a, 3)


def test_non_strict_build_yields_unsatisfying_witness():
    cs = ConstraintSystem(strict=False)
    a = cs.private_input("a", 2)
    with cs.scope("check"):
        cs.assert_equal(a, 3)
    r1cs = cs.compile()
    bad = r1cs.first_unsatisfied(cs.witness())
    assert bad == 0 and cs.constraint_label(bad) == "check"


def test_check_witness_names_first_failing_gadget():
    cs = ConstraintSystem(strict=False)
    x = cs.private_input("x", 300)
    cs.is_zero(x)
    with cs.scope("weights"):
        cs.assert_range(x, 8)
    with pytest.raises(UnsatisfiedConstraint, match="weights/assert_range/to_bits"):
        cs.check_witness()
    ok = ConstraintSystem()
    ok.assert_range(ok.private_input("x", 255), 8)
    ok.check_witness()
    assert ok.compile().is_satisfied(ok.witness())


def test_assert_is_bool():
    def circuit(cs, v):
        b = cs.private_input("b", 1 if v else None)
        cs.assert_is_bool(b)

    cs, r1cs, w, _ = assert_accepts_and_matches_setup(circuit)
    assert r1cs.is_satisfied(tampered(w, 1, 0))
    assert not r1cs.is_satisfied(tampered(w, 1, 2))
    assert not r1cs.is_satisfied(tampered(w, 1, -1))
    with pytest.raises(UnsatisfiedConstraint):
        c = ConstraintSystem()
        c.assert_is_bool(c.private_input("b", 2))


def test_inverse_and_div():
    def circuit(cs, v):
        a = cs.private_input("a", 7 if v else None)
        b = cs.private_input("b", 3 if v else None)
        return cs.inverse(a), cs.div(b, a)

    cs, r1cs, w, (inv, q) = assert_accepts_and_matches_setup(circuit)
    assert inv.value * 7 % R == 1 and q.value * 7 % R == 3
    assert not r1cs.is_satisfied(tampered(w, inv.single_wire(), inv.value + 1))
    assert not r1cs.is_satisfied(tampered(w, q.single_wire(), 1))
    # a = 0 has no inverse: refused when strict, unsatisfiable otherwise.
    with pytest.raises(UnsatisfiedConstraint, match="inverse"):
        c = ConstraintSystem()
        c.inverse(c.private_input("z", 0))
    c = ConstraintSystem(strict=False)
    c.div(c.private_input("x", 0), c.private_input("z", 0))
    assert not c.compile().is_satisfied(c.witness())


@pytest.mark.parametrize("x", [0, 1, 5, R - 1])
def test_is_zero_and_is_equal(x):
    def circuit(cs, v):
        a = cs.private_input("a", x if v else None)
        return cs.is_zero(a), cs.is_equal(a, 5)

    cs, r1cs, w, (z, e) = assert_accepts_and_matches_setup(circuit)
    assert z.value == int(x == 0) and e.value == int(x == 5)
    assert r1cs.n_constraints == 4
    out = cs.r1cs_wires_matching(lambda n: n == "is_zero/out")[0]
    inv = cs.r1cs_wires_matching(lambda n: n == "is_zero/inv")[0]
    assert not r1cs.is_satisfied(tampered(w, out, 1 - z.value))
    # Any value of the inverse hint together with a flipped output fails.
    for m in (0, 1, 2, pow(x or 1, R - 2, R)):
        assert not r1cs.is_satisfied(tampered(tampered(w, out, 1 - z.value), inv, m))
    if x != 0:
        assert not r1cs.is_satisfied(tampered(w, inv, 0))


@pytest.mark.parametrize("c", [0, 1])
def test_select(c):
    def circuit(cs, v):
        cond = cs.private_input("c", c if v else None)
        a = cs.private_input("a", 11 if v else None)
        b = cs.private_input("b", 22 if v else None)
        return cs.select(cond, a, b), cs.select(cond, a + 3, a)  # second: free

    cs, r1cs, w, (s, t) = assert_accepts_and_matches_setup(circuit)
    assert s.value == (11 if c else 22) and t.value == (14 if c else 11)
    assert r1cs.n_constraints == 2  # boolean check on c, and the first select
    assert not r1cs.is_satisfied(tampered(w, s.single_wire(), 33 - s.value))
    assert not r1cs.is_satisfied(tampered(w, cs.r1cs_wire("c"), 1 - c))


def test_select_refuses_non_boolean_condition():
    with pytest.raises(UnsatisfiedConstraint):
        cs = ConstraintSystem()
        cs.select(cs.private_input("c", 2), cs.private_input("a", 1), 0)
    cs = ConstraintSystem(strict=False)
    out = cs.select(cs.private_input("c", 2), cs.private_input("a", 1), 0)
    w = cs.witness()
    assert out.value == 2 and not cs.compile().is_satisfied(w)


@given(st.integers(0, 1), st.integers(0, 1))
def test_boolean_algebra(x, y):
    cs = ConstraintSystem()
    a = cs.private_input("a", x)
    b = cs.private_input("b", y)
    outs = cs.and_(a, b), cs.or_(a, b), cs.xor(a, b), cs.not_(a)
    assert [o.value for o in outs] == [x & y, x | y, x ^ y, 1 - x]
    assert all(o.boolean for o in outs)
    assert cs.compile().is_satisfied(cs.witness())


def test_booleanness_is_tracked_through_negation_and_products():
    cs = ConstraintSystem()
    a = cs.is_zero(cs.private_input("x", 0))
    b = cs.is_zero(cs.private_input("y", 4))
    n = cs.n_constraints
    assert (1 - a).boolean and cs.mul(a, b).boolean and not (2 - a).boolean and not (a + b).boolean
    cs.select(1 - a, 5, cs.private_input("z", 6))
    assert cs.n_constraints == n + 1 + 1  # the product above and the select; no boolean check
    cs.select(a + b, 5, 6)  # unknown booleanness: asserted (a + b = 1 here)
    assert cs.n_constraints == n + 3
    assert cs.compile().is_satisfied(cs.witness())


def test_hint_outputs_must_be_constrained_by_caller():
    cs = ConstraintSystem()
    x = cs.private_input("x", 17)
    q, r = cs.hint("divmod5", lambda v: divmod(v, 5), [x], 2)
    cs.assert_equal(q * 5 + r, x)
    cs.assert_range(r, 3)
    assert (q.value, r.value) == (3, 2)
    assert cs.compile().is_satisfied(cs.witness())
    with pytest.raises(CircuitError, match="returned 1 values"):
        cs.hint("bad", lambda v: [v], [x], 2)


def test_gadget_wires_are_all_constrained():
    cs = ConstraintSystem()
    x = cs.private_input("x", -7)
    y = cs.private_input("y", 3)
    cs.is_less(x, y, 8)
    cs.abs(x, 8)
    cs.is_zero(x)
    cs.select(cs.is_equal(x, y), x, y * y)
    cs.inverse(y)
    cs.poseidon(x, y)
    assert cs.unconstrained_wires() == []
    forgotten = cs.hint("forgotten", lambda v: [v + 1], [x], 1)
    assert cs.unconstrained_wires() == ["forgotten/out[0]"]
    cs.assert_equal(forgotten[0], x + 1)
    assert cs.unconstrained_wires() == []


def test_values_from_another_system_are_refused():
    a = ConstraintSystem().private_input("a", 1)
    cs = ConstraintSystem()
    with pytest.raises(CircuitError, match="another constraint system"):
        cs.mul(a, cs.private_input("b", 1))
    with pytest.raises(CircuitError, match="truth value"):
        bool(a)


def test_setup_build_has_no_values():
    cs = ConstraintSystem(with_values=False)
    x = cs.private_input("x", 5)  # ignored
    assert x.value is None and cs.value_of(cs.square(x)) is None
    with pytest.raises(CircuitError, match="without values"):
        cs.witness()


@settings(max_examples=20, deadline=None)
@given(st.lists(st.integers(-(1 << 40), 1 << 40), min_size=3, max_size=3))
def test_composite_circuit_same_r1cs_with_and_without_values(vals):
    def circuit(cs, v):
        xs = cs.private_inputs("x", 3, vals if v else None)
        out = cs.public_input("out")
        m = cs.max(xs[0], xs[1], 41)
        a = cs.abs(xs[2], 41)
        z = cs.is_zero(xs[0] - xs[1])
        s = cs.select(z, a, m * a)
        cs.assert_less_or_equal(xs[2], a, 41)
        cs.bind(out, s + cs.poseidon(xs[0], s))
        return out

    cs, r1cs, w, out = assert_accepts_and_matches_setup(circuit)
    assert not r1cs.is_satisfied(tampered(w, 1, out.value + 1))


def test_compile_is_cached_and_invalidated():
    cs = ConstraintSystem()
    x = cs.private_input("x", 3)
    cs.square(x)
    first = cs.compile()
    assert cs.compile() is first
    cs.square(x)
    assert cs.compile().n_constraints == 2
    assert cs.compile(wire_names=False).wire_names == ()


def test_random_arithmetic_matches_python():
    rng = random.Random(5)
    cs = ConstraintSystem()
    xs = [rng.randrange(R) for _ in range(6)]
    v = cs.private_inputs("x", 6, xs)
    acc = cs.one
    expect = 1
    for i in range(6):
        acc = cs.mul(acc, v[i]) + xs[(i + 1) % 6] * v[i]
        expect = (expect * xs[i] + xs[(i + 1) % 6] * xs[i]) % R
    assert acc.value == expect
    assert cs.compile().is_satisfied(cs.witness())


def _mixed_circuit(cs: ConstraintSystem, xs: list[int]) -> None:
    """Range checks (the bits fast path), comparisons, products and a public output."""
    out = cs.public_input("out")
    inputs = [cs.private_input(f"x{i}", x) for i, x in enumerate(xs)]
    acc = cs.constant(0)
    for a, b in zip(inputs, inputs[1:]):
        cs.assert_range(a, 20)
        acc = cs.add(acc, cs.select(cs.is_less(a, b, 21), cs.mul(a, b), cs.square(b)))
    cs.bind(out, acc)


def test_a_witness_only_build_gives_the_same_witness_and_keeps_no_constraint():
    import tracemalloc

    xs = [random.Random(7).randrange(1 << 20) for _ in range(300)]
    full = ConstraintSystem(with_values=True)
    _mixed_circuit(full, xs)
    tracemalloc.start()
    lean = ConstraintSystem(with_values=True, keep_constraints=False)
    _mixed_circuit(lean, xs)
    _, lean_peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    tracemalloc.start()
    _mixed_circuit(ConstraintSystem(with_values=True), xs)
    _, full_peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert lean.witness() == full.witness() and lean.n_constraints == full.n_constraints > 0
    assert full.compile().is_satisfied(lean.witness())
    assert lean_peak < 0.8 * full_peak, (lean_peak, full_peak)
    for read in (lean.compile, lean.check_witness, lean.unconstrained_wires, lambda: lean.constraint_label(0)):
        with pytest.raises(CircuitError, match="kept only its witness"):
            read()
    # A setup build always keeps its constraints: they are all it makes.
    setup = ConstraintSystem(with_values=False, keep_constraints=False)
    _mixed_circuit(setup, [0] * len(xs))
    assert setup.compile() == full.compile()


def test_a_witness_only_build_still_refuses_a_bad_value_on_the_spot():
    cs = ConstraintSystem(with_values=True, keep_constraints=False)
    x = cs.private_input("x", 1 << 20)
    with pytest.raises(UnsatisfiedConstraint, match="not in"):
        cs.assert_range(x, 20)
    cs = ConstraintSystem(with_values=True, keep_constraints=False)
    a = cs.private_input("a", 3)
    with pytest.raises(UnsatisfiedConstraint, match="constraint #0 .* 3 \\* 3 != 10"):
        cs.assert_mul(a, a, 10)
