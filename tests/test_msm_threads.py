"""MSMs capped to one thread (as the prover runs them beside its NTTs) give the
same points as the default split across the cores, and as the reference backend."""
from __future__ import annotations

import random

import pytest

from backend_fixtures import mcl_or_skip
from circuits.backends import get_backend
from circuits.field import R


@pytest.mark.parametrize("threads", [1, 2, 64])
def test_capped_msm_equals_default_split(threads):
    mcl = mcl_or_skip()
    rng = random.Random(threads)
    n = 3000  # above the size where the mcl backend splits a class across threads
    g1 = mcl.g1_generator()
    points = mcl.g1_fixed_base(g1, [rng.randrange(1, R) for _ in range(n)])
    scalars = [rng.getrandbits(1) for _ in range(n - 100)] + [rng.randrange(R) for _ in range(100)]
    vector = mcl.scalar_vector(scalars)
    expected = mcl.g1_msm(points, vector)
    assert mcl.g1_msm(points, vector, threads=threads) == expected
    tampered = list(scalars)
    tampered[-1] = (tampered[-1] + 1) % R
    assert mcl.g1_msm(points, mcl.scalar_vector(tampered), threads=threads) != expected

    g2_points = mcl.g2_fixed_base(mcl.g2_generator(), [rng.randrange(1, R) for _ in range(n)])
    assert mcl.g2_msm(g2_points, vector, threads=threads) == mcl.g2_msm(g2_points, vector)


def test_capped_msm_matches_reference():
    mcl = mcl_or_skip()
    ref = get_backend("reference")
    rng = random.Random(5)
    ks = [rng.randrange(1, R) for _ in range(12)]
    scalars = [rng.randrange(R) for _ in range(12)]
    got = mcl.g1_msm(mcl.g1_fixed_base(mcl.g1_generator(), ks), mcl.scalar_vector(scalars), threads=1)
    assert got == ref.g1_msm(ref.g1_fixed_base(ref.g1_generator(), ks), scalars, threads=1)
