"""Curve backends: each against py_ecc / polynomial oracles, and mcl against reference."""
from __future__ import annotations

import random

import pytest
from py_ecc import bn128 as pyecc

from circuits import backends as backends_pkg
from circuits.backends import available_backends, get_backend
from circuits.errors import CircuitError, MalformedArtifact, UnsatisfiedConstraint
from circuits.field import Q, R
from backend_fixtures import mcl_or_skip

RNG_SEED = 20261122




@pytest.fixture(scope="module")
def ref():
    return get_backend("reference")


@pytest.fixture(scope="module")
def mcl():
    return mcl_or_skip()


@pytest.fixture(scope="module", params=["reference", "mcl"])
def backend(request):
    if request.param == "mcl":
        return mcl_or_skip()
    return get_backend("reference")


@pytest.fixture
def rng():
    return random.Random(RNG_SEED)


def _pyecc_g1(p):
    return None if p is None else (int(p[0]), int(p[1]))


def _pyecc_g2(p):
    if p is None:
        return None
    x, y = p
    return ((int(x.coeffs[0]), int(x.coeffs[1])), (int(y.coeffs[0]), int(y.coeffs[1])))


def _mixed_scalars(rng, n):
    """Zeros, ones, small (< 2^32, < 2^64) and full-width scalars, shuffled."""
    kinds = [0, 1, rng.randrange(2, 2**32), rng.randrange(2**32, 2**64), rng.randrange(R), R - 1]
    out = [kinds[i % len(kinds)] if i % 7 else rng.randrange(R) for i in range(n)]
    rng.shuffle(out)
    return out


# --- an off-subgroup point on the G2 twist (the twist's cofactor is large) -----


def _fq2_sqrt(a):
    """Square root in Fq2 (q = 3 mod 4), Adj and Rodriguez-Henriquez algorithm 9; None if none."""
    FQ2 = pyecc.FQ2
    a1 = a ** ((Q - 3) // 4)
    alpha = a1 * a1 * a
    a0 = alpha**Q * alpha
    minus_one = FQ2([Q - 1, 0])
    if a0 == minus_one:
        return None
    x0 = a1 * a
    if alpha == minus_one:
        x = FQ2([0, 1]) * x0
    else:
        x = (FQ2.one() + alpha) ** ((Q - 1) // 2) * x0
    return x if x * x == a else None


def _twist_point_outside_subgroup(rng):
    from py_ecc import optimized_bn128 as ob

    while True:
        x = pyecc.FQ2([rng.randrange(Q), rng.randrange(Q)])
        y = _fq2_sqrt(x**3 + pyecc.b2)
        if y is not None:
            assert pyecc.is_on_curve((x, y), pyecc.b2)
            proj = (ob.FQ2(list(x.coeffs)), ob.FQ2(list(y.coeffs)), ob.FQ2.one())
            if not ob.is_inf(ob.multiply(proj, R)):
                return _pyecc_g2((x, y))


# --- selection -----------------------------------------------------------------


def test_get_backend_names_and_errors(monkeypatch):
    assert get_backend("reference").name == "reference"
    assert get_backend("reference") is get_backend("reference")
    assert "reference" in available_backends()
    with pytest.raises(CircuitError, match="unknown curve backend"):
        get_backend("arkworks")
    monkeypatch.setenv("FAIRPROOF_BACKEND", "reference")
    assert get_backend().name == "reference"


def test_get_backend_falls_back_when_mcl_cannot_load(monkeypatch):
    from circuits.backends import mcl as mcl_mod

    def no_library():
        raise OSError("failed to map segment from shared object (simulated noexec temp dir)")

    monkeypatch.delenv("FAIRPROOF_BACKEND", raising=False)
    monkeypatch.setattr(backends_pkg, "_instances", {})
    monkeypatch.setattr(backends_pkg, "_load_errors", {})
    monkeypatch.setattr(mcl_mod, "load_library", no_library)
    with pytest.warns(RuntimeWarning, match="simulated noexec"):
        chosen = get_backend()
    assert chosen.name == "reference"
    with pytest.raises(CircuitError, match="cannot load"):
        get_backend("mcl")
    assert available_backends() == ["reference"]


# --- single points -----------------------------------------------------------------


def test_generators_match_py_ecc(backend):
    assert backend.g1_generator() == _pyecc_g1(pyecc.G1) == (1, 2)
    assert backend.g2_generator() == _pyecc_g2(pyecc.G2)


def test_add_mul_match_py_ecc(backend, rng):
    g1, g2 = backend.g1_generator(), backend.g2_generator()
    a, b = rng.randrange(R), rng.randrange(R)
    assert backend.g1_mul(g1, a) == _pyecc_g1(pyecc.multiply(pyecc.G1, a))
    assert backend.g2_mul(g2, b) == _pyecc_g2(pyecc.multiply(pyecc.G2, b))
    assert backend.g1_add(backend.g1_mul(g1, a), backend.g1_mul(g1, b)) == backend.g1_mul(g1, (a + b) % R)
    assert backend.g2_add(backend.g2_mul(g2, a), backend.g2_mul(g2, b)) == backend.g2_mul(g2, (a + b) % R)
    # identities and inverses
    assert backend.g1_mul(g1, 0) is None and backend.g1_mul(g1, R) is None
    assert backend.g2_mul(g2, R) is None
    assert backend.g1_add(backend.g1_mul(g1, a), backend.g1_mul(g1, R - a)) is None
    assert backend.g1_add(None, g1) == g1 and backend.g2_add(g2, None) == g2
    assert backend.g1_mul(g1, -1) == backend.g1_mul(g1, R - 1)
    # rejecting twin: a wrong scalar gives a different point
    assert backend.g1_mul(g1, a) != backend.g1_mul(g1, a + 1)


def test_backends_agree_on_random_points(ref, mcl, rng):
    for _ in range(3):
        k1, k2, k3 = (rng.randrange(R) for _ in range(3))
        p, q = ref.g1_mul(ref.g1_generator(), k1), ref.g1_mul(ref.g1_generator(), k2)
        assert mcl.g1_add(p, q) == ref.g1_add(p, q)
        assert mcl.g1_mul(p, k3) == ref.g1_mul(p, k3)
        s = ref.g2_mul(ref.g2_generator(), k1)
        t = ref.g2_mul(ref.g2_generator(), k2)
        assert mcl.g2_add(s, t) == ref.g2_add(s, t)
        assert mcl.g2_mul(s, k3) == ref.g2_mul(s, k3)
        assert mcl.g1_add(p, p) == ref.g1_mul(p, 2)


def test_invalid_points_rejected(backend, rng):
    g1, g2 = backend.g1_generator(), backend.g2_generator()
    assert backend.g1_is_valid(g1) and backend.g1_is_valid(None)
    assert backend.g2_is_valid(g2) and backend.g2_is_valid(None)
    assert not backend.g1_is_valid((1, 3))
    assert not backend.g1_is_valid((1, 2 + Q))  # non-canonical coordinate
    assert not backend.g1_is_valid((0, 0))
    (x0, x1), (y0, y1) = g2
    assert not backend.g2_is_valid(((x0, x1), (y0, (y1 + 1) % Q)))
    assert not backend.g2_is_valid(_twist_point_outside_subgroup(rng))
    with pytest.raises(MalformedArtifact):
        backend.g1_add(g1, (1, 3))
    with pytest.raises(MalformedArtifact):
        backend.g1_mul((1, 3), 5)
    with pytest.raises(MalformedArtifact):
        backend.g2_mul(((x0, x1), (y0, (y1 + 1) % Q)), 5)
    with pytest.raises(MalformedArtifact):
        backend.g1_vector([g1, (1, 3)])


def test_pairing_bilinearity(backend, rng):
    g1, g2 = backend.g1_generator(), backend.g2_generator()
    a, b = rng.randrange(1, R), rng.randrange(1, R)
    ap, bq = backend.g1_mul(g1, a), backend.g2_mul(g2, b)
    # e(aP, bQ) * e(-(ab)P, Q) == 1  <=>  e(aP, bQ) == e(P, Q)^(ab)
    assert backend.pairing_product_is_one([(ap, bq), (backend.g1_mul(g1, (-a * b) % R), g2)])
    assert not backend.pairing_product_is_one([(ap, bq), (backend.g1_mul(g1, (-a * b + 1) % R), g2)])
    assert backend.pairing_product_is_one([])
    assert backend.pairing_product_is_one([(None, g2), (g1, None)])
    assert not backend.pairing_product_is_one([(g1, g2)])
    with pytest.raises(MalformedArtifact):
        backend.pairing_product_is_one([(g1, _twist_point_outside_subgroup(rng))])


# --- bulk points -----------------------------------------------------------------------


def test_fixed_base_and_msm(backend, ref, rng):
    g1, g2 = backend.g1_generator(), backend.g2_generator()
    n = 24
    bases = [rng.randrange(R) for _ in range(n)]
    vec1 = backend.g1_fixed_base(g1, bases)
    vec2 = backend.g2_fixed_base(g2, bases[:6])
    assert backend.vector_len(vec1) == n
    can1 = backend.g1_vector_to_canonical(vec1)
    assert can1[:2] == [_pyecc_g1(pyecc.multiply(pyecc.G1, k)) for k in bases[:2]]
    assert can1 == [ref.g1_mul(g1, k) for k in bases]
    assert backend.g2_vector_to_canonical(vec2)[:1] == [_pyecc_g2(pyecc.multiply(pyecc.G2, bases[0]))]
    assert backend.g2_vector_to_canonical(vec2) == [ref.g2_mul(g2, k) for k in bases[:6]]
    scalars = _mixed_scalars(rng, n - 5)  # shorter than the points: the rest count as 0
    expected = sum(k * t for k, t in zip(scalars, bases)) % R
    got = backend.g1_msm(vec1, backend.scalar_vector(scalars))
    assert got == ref.g1_mul(g1, expected)
    tampered = list(scalars)
    tampered[3] = (tampered[3] + 1) % R
    assert backend.g1_msm(vec1, backend.scalar_vector(tampered)) != got
    s2 = [0, 1, 2**40 + 3, rng.randrange(R), 1]
    got2 = backend.g2_msm(vec2, backend.scalar_vector(s2))
    assert got2 == ref.g2_mul(g2, sum(k * t for k, t in zip(s2, bases)) % R)
    assert backend.g1_msm(vec1, backend.scalar_vector([])) is None
    assert backend.g1_msm(vec1, backend.scalar_vector([0] * n)) is None
    with pytest.raises(CircuitError):
        backend.g1_msm(backend.g1_fixed_base(g1, [1, 2]), backend.scalar_vector([1, 2, 3]))


def test_msm_agrees_with_reference_on_random_points(ref, mcl, rng):
    n = 70
    # points from mcl's fixed-base path, checked against the reference on a few
    pts = mcl.g1_vector_to_canonical(mcl.g1_fixed_base(mcl.g1_generator(), [rng.randrange(R) for _ in range(n)]))
    pts.append(None)
    assert all(ref.g1_is_valid(p) for p in pts)
    scalars = _mixed_scalars(rng, n + 1)
    expected = ref.g1_msm(ref.g1_vector(pts), ref.scalar_vector(scalars))
    assert mcl.g1_msm(mcl.g1_vector(pts), mcl.scalar_vector(scalars)) == expected
    pts2 = mcl.g2_vector_to_canonical(mcl.g2_fixed_base(mcl.g2_generator(), [rng.randrange(R) for _ in range(8)]))
    s2 = _mixed_scalars(rng, 7)
    assert mcl.g2_msm(mcl.g2_vector(pts2), mcl.scalar_vector(s2)) == ref.g2_msm(ref.g2_vector(pts2), s2)


def test_scalar_vector_round_trip(backend, rng):
    values = [0, 1, R - 1, 2**64, 2**64 - 1, rng.randrange(R), R, R + 5, -1]
    assert backend.scalar_vector_to_ints(backend.scalar_vector(values)) == [v % R for v in values]
    with pytest.raises(CircuitError):
        backend.scalar_vector([1, "2"])
    with pytest.raises(CircuitError):
        backend.scalar_vector([1, 2.0])
    import numpy as np

    assert backend.scalar_vector_to_ints(backend.scalar_vector(np.array([3, -4], dtype=np.int64))) == [3, R - 4]


def test_vector_bytes_round_trip_and_tampering(backend, rng):
    g1, g2 = backend.g1_generator(), backend.g2_generator()
    pts1 = [backend.g1_mul(g1, rng.randrange(R)) for _ in range(5)] + [None]
    pts2 = [backend.g2_mul(g2, rng.randrange(R)) for _ in range(3)] + [None]
    raw1 = backend.g1_vector_to_bytes(backend.g1_vector(pts1))
    raw2 = backend.g2_vector_to_bytes(backend.g2_vector(pts2))
    assert backend.g1_vector_to_canonical(backend.g1_vector_from_bytes(raw1)) == pts1
    assert backend.g2_vector_to_canonical(backend.g2_vector_from_bytes(raw2)) == pts2
    for raw, loader, unit in ((raw1, backend.g1_vector_from_bytes, len(raw1) // 6),
                              (raw2, backend.g2_vector_from_bytes, len(raw2) // 4)):
        bad = bytearray(raw)
        bad[unit + 7] ^= 0x01  # a coordinate of the second point
        with pytest.raises(MalformedArtifact):
            loader(bytes(bad))
        with pytest.raises(MalformedArtifact):
            loader(raw[:-1])


def _raw_g2(backend, p):
    """Raw bytes of a twist point, bypassing the subgroup check of g2_vector."""
    if backend.name == "reference":
        from circuits.backends.reference import encode_g2

        return encode_g2(p)
    (x0, x1), (y0, y1) = p
    mont = [(v << 256) % Q for v in (x0, x1, y0, y1, 1, 0)]
    return b"".join(v.to_bytes(32, "little") for v in mont)


def test_g2_bytes_subgroup_check(backend, rng):
    g2 = backend.g2_generator()
    good = backend.g2_vector_to_bytes(backend.g2_vector([g2]))
    assert good[: len(_raw_g2(backend, g2))] == _raw_g2(backend, g2)
    off = _raw_g2(backend, _twist_point_outside_subgroup(rng))
    with pytest.raises(MalformedArtifact, match="point 1"):
        backend.g2_vector_from_bytes(good + off)
    # without the subgroup check the point loads (it is on the twist) ...
    assert len(backend.g2_vector_to_canonical(backend.g2_vector_from_bytes(good + off, check_subgroup=False))) == 2
    # ... but an off-curve point is still refused
    bad = bytearray(off)
    bad[40] ^= 1
    with pytest.raises(MalformedArtifact):
        backend.g2_vector_from_bytes(good + bytes(bad), check_subgroup=False)


# --- QAP quotient ------------------------------------------------------------------------


@pytest.fixture(scope="module")
def gf():
    galois = pytest.importorskip("galois")
    return galois.GF(R, primitive_element=5, verify=False)


def _divisible_instance(rng, n):
    a = [rng.randrange(R) for _ in range(n)]
    b = [rng.randrange(R) for _ in range(n)]
    # a few small and zero values, like a real witness
    a[0], b[-1] = 0, 1
    c = [x * y % R for x, y in zip(a, b)]
    return a, b, c


@pytest.mark.parametrize("n", [1, 2, 8, 32])
def test_qap_quotient_matches_polynomial_oracle(backend, gf, rng, n):
    import galois

    a, b, c = _divisible_instance(rng, n)
    h = backend.scalar_vector_to_ints(
        backend.qap_quotient(backend.scalar_vector(a), backend.scalar_vector(b), backend.scalar_vector(c))
    )
    assert len(h) == n - 1
    omega = pow(5, (R - 1) // n, R)
    xs = gf([pow(omega, i, R) for i in range(n)])
    A = galois.lagrange_poly(xs, gf(a)) if n > 1 else galois.Poly(gf(a))
    B = galois.lagrange_poly(xs, gf(b)) if n > 1 else galois.Poly(gf(b))
    C = galois.lagrange_poly(xs, gf(c)) if n > 1 else galois.Poly(gf(c))
    Z = galois.Poly.Degrees([n, 0], coeffs=[1, R - 1], field=gf)
    quotient, remainder = divmod(A * B - C, Z)
    assert remainder == galois.Poly.Zero(gf)
    expected = [int(v) for v in quotient.coefficients(order="asc")] if n > 1 else []
    expected += [0] * (n - 1 - len(expected))
    assert h == expected


def test_qap_quotient_rejects_non_divisible(backend, rng):
    a, b, c = _divisible_instance(rng, 16)
    c[5] = (c[5] + 1) % R
    with pytest.raises(UnsatisfiedConstraint, match="constraint 5"):
        backend.qap_quotient(backend.scalar_vector(a), backend.scalar_vector(b), backend.scalar_vector(c))
    with pytest.raises(CircuitError):
        backend.qap_quotient(*(backend.scalar_vector(v[:12]) for v in (a, b, c)))
    with pytest.raises(CircuitError):
        backend.qap_quotient(backend.scalar_vector(a), backend.scalar_vector(b), backend.scalar_vector(c[:8]))


def test_qap_quotient_backends_agree(ref, mcl, rng):
    a, b, c = _divisible_instance(rng, 256)
    expected = ref.qap_quotient(a, b, c)
    got = mcl.qap_quotient(mcl.scalar_vector(a), mcl.scalar_vector(b), mcl.scalar_vector(c))
    assert mcl.scalar_vector_to_ints(got) == expected


# --- the curve switch of the native library ------------------------------------------------


def test_mcl_curve_is_alt_bn128(mcl):
    from circuits.backends import mcl as mcl_mod

    assert mcl_mod.curve_order() == R
    assert mcl_mod.field_order() == Q
    assert mcl.g1_generator() == (1, 2)
    assert mcl.g2_generator() == _pyecc_g2(pyecc.G2)



def test_numpy_ntt_matches_python_ntt(rng):
    pytest.importorskip("zk_dtypes")
    from circuits.backends import ntt as fast
    from circuits.backends import reference as slow

    for n in (1, 2, 16, 128):
        values = [rng.randrange(R) for _ in range(n)]
        omega = slow.root_of_unity(n)
        assert [int(v) for v in fast.ntt(fast.fr_array(values))] == slow.ntt(values, omega)
        assert [int(v) for v in fast.intt(fast.fr_array(values))] == slow.intt(values, omega)
        assert slow.intt(slow.ntt(values, omega), omega) == values
    with pytest.raises(CircuitError):
        fast.ntt(fast.fr_array([1, 2, 3]))
    with pytest.raises(CircuitError, match="not a scalar vector"):
        fast.qap_quotient([1], [1], [1])


def test_mcl_msm_chunking_and_thread_split(ref, mcl, rng, monkeypatch):
    """The chunk / two-thread paths at small sizes, against sum(k_i t_i) * G."""
    from circuits.backends import mcl as mcl_mod

    monkeypatch.setattr(mcl_mod, "MSM_CHUNK", 8)
    monkeypatch.setattr(mcl_mod, "SPLIT_MIN", 4)
    monkeypatch.setattr(mcl_mod, "VALIDATE_SPLIT_MIN", 4)
    n = 61
    t = [rng.randrange(R) for _ in range(n)]
    pts = mcl.g1_fixed_base(mcl.g1_generator(), t)
    for scalars in (_mixed_scalars(rng, n), [rng.randrange(R) for _ in range(n)], [rng.randrange(2) for _ in range(n)]):
        expected = ref.g1_mul(ref.g1_generator(), sum(k * x for k, x in zip(scalars, t)) % R)
        assert mcl.g1_msm(pts, mcl.scalar_vector(scalars)) == expected
    g2pts = mcl.g2_fixed_base(mcl.g2_generator(), t[:20])
    s2 = _mixed_scalars(rng, 20)
    assert mcl.g2_msm(g2pts, mcl.scalar_vector(s2)) == ref.g2_mul(
        ref.g2_generator(), sum(k * x for k, x in zip(s2, t)) % R
    )
    raw = mcl.g2_vector_to_bytes(g2pts)
    assert mcl.g2_vector_to_canonical(mcl.g2_vector_from_bytes(raw)) == mcl.g2_vector_to_canonical(g2pts)
    bad = bytearray(raw)
    bad[192 * 17 + 3] ^= 4
    with pytest.raises(MalformedArtifact, match="point 17"):
        mcl.g2_vector_from_bytes(bytes(bad))


@pytest.mark.slow
def test_mcl_msm_large_against_fixed_base_identity(ref, mcl, rng):
    """2^17 + 3 points (past one mulVec chunk): sum k_i (t_i G) == (sum k_i t_i) G."""
    n = (1 << 17) + 3
    t = [rng.randrange(R) for _ in range(n)]
    pts = mcl.g1_fixed_base(mcl.g1_generator(), t)
    for scalars in (_mixed_scalars(rng, n), [rng.randrange(R) for _ in range(n)]):
        expected = ref.g1_mul(ref.g1_generator(), sum(k * x for k, x in zip(scalars, t)) % R)
        assert mcl.g1_msm(pts, mcl.scalar_vector(scalars)) == expected


# --- vector operations of phase 2 and key derivation -------------------------------------------


def test_vector_scale_matches_pointwise_multiplication(backend, rng):
    g1 = backend.g1_generator()
    pts = [backend.g1_mul(g1, rng.randrange(R)) for _ in range(70)] + [None]  # 70: the threaded split
    k = rng.randrange(R)
    scaled = backend.g1_vector_to_canonical(backend.g1_vector_scale(backend.g1_vector(pts), k))
    assert scaled == [None if p is None else backend.g1_mul(p, k) for p in pts]
    assert backend.g1_vector_to_canonical(backend.g1_vector_scale(backend.g1_vector(pts[:3]), 0)) == [None] * 3


def test_sparse_combination_agrees_with_the_reference(ref, mcl, rng):
    from circuits.backends.base import SparseTerms

    import numpy as np

    k = rng.randrange(R)
    pts1 = [ref.g1_mul(ref.g1_generator(), rng.randrange(R)) for _ in range(8)] + [None]
    pts2 = [ref.g2_mul(ref.g2_generator(), rng.randrange(R)) for _ in range(5)] + [None]
    # repeated pairs (a doubling), P - P and k P + (R - k) P (infinity), an empty target, coefficient 0
    terms1 = SparseTerms(np.array([0, 0, 1, 1, 2, 3, 3, 5, 5, 5, 6]), np.array([0, 0, 1, 1, 2, 3, 3, 4, 5, 8, 7]),
                         [1, 1, 1, R - 1, 2, k, R - k, R - 1, 7, 3, 0])
    terms2 = SparseTerms(np.array([0, 0, 1, 2, 2]), np.array([0, 1, 2, 3, 3]), [1, R - 1, 5, 1, 1])
    expected1 = ref.g1_sparse_combination(pts1, terms1, 7)
    assert expected1[1] is None and expected1[3] is None and expected1[4] is None and expected1[6] is None
    assert expected1[0] == ref.g1_add(pts1[0], pts1[0])
    assert mcl.g1_vector_to_canonical(mcl.g1_sparse_combination(mcl.g1_vector(pts1), terms1, 7)) == expected1
    expected2 = ref.g2_sparse_combination(pts2, terms2, 4)
    assert mcl.g2_vector_to_canonical(mcl.g2_sparse_combination(mcl.g2_vector(pts2), terms2, 4)) == expected2
    for backend in (ref, mcl):
        with pytest.raises(CircuitError, match="out of range"):
            backend.g1_sparse_combination(backend.g1_vector(pts1), SparseTerms(np.array([7]), np.array([0]), [1]), 7)


def test_montgomery_layout_round_trip_and_vectorised_checks(backend, rng):
    from circuits.backends.base import first_invalid_montgomery

    pts1 = [backend.g1_mul(backend.g1_generator(), rng.randrange(R)) for _ in range(5)] + [None]
    pts2 = [backend.g2_mul(backend.g2_generator(), rng.randrange(R)) for _ in range(3)] + [None]
    m1 = backend.g1_vector_to_montgomery(backend.g1_vector(pts1))
    m2 = backend.g2_vector_to_montgomery(backend.g2_vector(pts2))
    assert backend.g1_vector_to_canonical(backend.g1_vector_from_montgomery(m1)) == pts1
    assert backend.g2_vector_to_canonical(backend.g2_vector_from_montgomery(m2)) == pts2
    assert first_invalid_montgomery(m1, 2) is None and first_invalid_montgomery(m2, 4) is None
    for data, per_point, unit in ((m1, 2, 64), (m2, 4, 128)):
        off = bytearray(data)
        off[2 * unit + 5] ^= 1
        assert first_invalid_montgomery(bytes(off), per_point) == (2, "curve")
        big = bytearray(data)
        big[unit + 32:unit + 64] = Q.to_bytes(32, "little")
        assert first_invalid_montgomery(bytes(big), per_point) == (1, "coordinate")
    off = bytearray(m1)
    off[3 * 64 + 40] ^= 1
    with pytest.raises(MalformedArtifact, match="point 3 is not on the curve"):
        backend.g1_vector_from_montgomery(bytes(off))
