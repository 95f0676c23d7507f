"""Fixed-base multiplication by window tables (native/fixed_base.c) against one multiplication per scalar."""
from __future__ import annotations

import random

import numpy as np
import pytest

from circuits.backends import get_backend
from circuits.backends.native import fixed_base as native_fixed_base
from circuits.errors import CircuitError
from circuits.field import R

mcl_mod = pytest.importorskip("circuits.backends.mcl")


@pytest.fixture(scope="module")
def mcl():
    return get_backend("mcl")


def _edge_scalars() -> list[int]:
    w = mcl_mod.FIXED_BASE_WINDOW
    edges = [0, 1, 2, R - 1, R - 2, (1 << 253) + 1, (1 << w) - 1, 1 << w, (1 << (2 * w)) - 1]
    edges += [(1 << b) | ((1 << b) - 1) for b in range(60, 70)]  # digits that straddle two 64-bit limbs
    edges += [((1 << 64) - 1) << 64, ((1 << 64) - 1) << 128, (1 << 192) - 1]
    return edges


def _ladder(mcl, group, base, scalars):
    return group.fixed_base(base, mcl.scalar_vector(scalars))


@pytest.mark.parametrize("tag", ["G1", "G2"])
def test_window_tables_agree_with_one_multiplication_per_scalar(mcl, tag):
    kernel = native_fixed_base.load()
    if kernel is None:
        pytest.skip("no native kernel here")
    rng = random.Random(tag)
    scalars = _edge_scalars() + [rng.randrange(R) for _ in range(300)]
    if tag == "G1":
        group, base = mcl._g1, mcl_mod._g1_from_canonical(mcl._lib, mcl.g1_generator(), "base")
    else:
        group, base = mcl._g2, mcl_mod._g2_from_canonical(mcl._lib, mcl.g2_generator(), "base")
    fast = group.fixed_base_windowed(kernel, base, mcl_mod._standard_limbs(mcl.scalar_vector(scalars)))
    assert np.array_equal(fast, _ladder(mcl, group, base, scalars))
    # and the public entry point, which takes the table path from FIXED_BASE_MIN scalars on
    many = scalars * (mcl_mod.FIXED_BASE_MIN // len(scalars) + 1)
    entry = mcl.g1_fixed_base(mcl.g1_generator(), many) if tag == "G1" else mcl.g2_fixed_base(mcl.g2_generator(), many)
    assert np.array_equal(entry[: len(scalars)], fast)
    assert np.array_equal(entry[len(scalars): 2 * len(scalars)], fast)


def test_a_base_other_than_the_generator_and_a_wrong_answer_is_noticed(mcl):
    """The table is built from the given base: a result for another base (or a perturbed point) differs."""
    kernel = native_fixed_base.load()
    if kernel is None:
        pytest.skip("no native kernel here")
    g1 = mcl.g1_generator()
    base_point = mcl.g1_mul(g1, 987654321)
    base = mcl_mod._g1_from_canonical(mcl._lib, base_point, "base")
    scalars = [random.Random(3).randrange(R) for _ in range(64)]
    fast = mcl._g1.fixed_base_windowed(kernel, base, mcl_mod._standard_limbs(mcl.scalar_vector(scalars)))
    assert np.array_equal(fast, _ladder(mcl, mcl._g1, base, scalars))
    from_generator = mcl._g1.fixed_base(mcl_mod._g1_from_canonical(mcl._lib, g1, "g"), mcl.scalar_vector(scalars))
    assert not np.array_equal(fast, from_generator)


def test_without_the_kernel_every_scalar_is_multiplied(mcl, monkeypatch):
    rng = random.Random(9)
    scalars = [rng.randrange(R) for _ in range(mcl_mod.FIXED_BASE_MIN)]
    with_table = mcl.g1_fixed_base(mcl.g1_generator(), scalars)
    monkeypatch.setattr(native_fixed_base, "load", lambda: None)
    assert np.array_equal(mcl.g1_fixed_base(mcl.g1_generator(), scalars), with_table)


@pytest.mark.parametrize("bad", [1.5, "7", None])
def test_scalars_that_are_not_integers_are_refused(mcl, bad):
    scalars = [1] * mcl_mod.FIXED_BASE_MIN + [bad]
    with pytest.raises(CircuitError, match="integers"):
        mcl.g1_fixed_base(mcl.g1_generator(), scalars)
