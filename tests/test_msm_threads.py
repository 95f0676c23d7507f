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


# --- the native batch-affine kernels (native/msm.c) ------------------------------------------

def _native_or_skip(mcl, group):
    from circuits.backends import mcl as mcl_module

    kernel = mcl_module._native_msm(group)
    if kernel is None:
        pytest.skip("native MSM kernels unavailable (no compiler)")
    return kernel


def _mul_vec(group, points, scalars):
    """mcl's own mulVec on the whole vector, in pieces small enough for this thread's stack."""
    import numpy as np

    total = group.zero()
    for lo in range(0, scalars.shape[0], 256):
        part = group.zero()
        hi = min(scalars.shape[0], lo + 256)
        group.mul_vec(part.ctypes.data, np.ascontiguousarray(points[lo:hi]).ctypes.data,
                      np.ascontiguousarray(scalars[lo:hi]).ctypes.data, hi - lo)
        group.add(total.ctypes.data, total.ctypes.data, part.ctypes.data)
    group.normalize(total.ctypes.data, total.ctypes.data)
    return total


SCALAR_CLASSES = {
    "bits": lambda rng: rng.getrandbits(1),
    "small": lambda rng: rng.getrandbits(rng.choice((3, 8, 15, 31))),
    "negative small": lambda rng: (R - rng.getrandbits(20)) % R,
    "64-bit": lambda rng: rng.getrandbits(64),
    "full": lambda rng: rng.randrange(R),
    "mixed": lambda rng: rng.choice((0, 1, R - 1, 2, R - 2, rng.getrandbits(32), rng.randrange(R))),
}


@pytest.mark.parametrize("tag", ["G1", "G2"])
@pytest.mark.parametrize("kind", sorted(SCALAR_CLASSES))
def test_native_msm_equals_mcl_mulvec(tag, kind):
    """Every scalar class (0/1 sums, small windows, negated small values, full width), with repeated
    points, a point and its negation and the point at infinity among the points."""
    import numpy as np

    from circuits.backends import mcl as mcl_module

    mcl = mcl_or_skip()
    group = mcl._g1 if tag == "G1" else mcl._g2
    kernel = _native_or_skip(mcl, group)
    rng = random.Random(f"{tag} {kind}")
    n = 1500
    base = mcl.g1_generator() if tag == "G1" else mcl.g2_generator()
    fixed = mcl.g1_fixed_base if tag == "G1" else mcl.g2_fixed_base
    points = fixed(base, [rng.randrange(1, R) for _ in range(n)])
    points[10:20] = points[9]  # repeated: bucket sums that double
    mcl_module._negate_rows(points, np.arange(n) == 20, tag)
    points[20] = points[9].copy()
    mcl_module._negate_rows(points, np.arange(n) == 20, tag)  # -P beside P: sums that vanish
    points[30] = 0  # infinity
    scalars = mcl.scalar_vector([SCALAR_CLASSES[kind](rng) for _ in range(n)])
    out = group.zero()
    assert kernel(out.ctypes.data, points.ctypes.data, scalars.ctypes.data, n) == 0
    expected = _mul_vec(group, points, scalars)
    assert np.array_equal(out, expected)
    # the backend's MSM takes the native path at this size, and agrees too
    msm = mcl.g1_msm if tag == "G1" else mcl.g2_msm
    assert msm(points, scalars) == (mcl_module._g1_to_canonical if tag == "G1" else mcl_module._g2_to_canonical)(
        mcl._lib, expected)
    # rejection twin: one scalar changed, another sum
    changed = scalars.copy()
    changed[5] = mcl.scalar_vector([(mcl.scalar_vector_to_ints(scalars[5:6])[0] + 1) % R])[0]
    assert kernel(out.ctypes.data, points.ctypes.data, changed.ctypes.data, n) == 0
    assert not np.array_equal(out, expected)


def test_native_msm_refuses_unnormalised_points_and_the_backend_falls_back():
    """A point whose z is neither 0 nor 1 (a Jacobian sum) is refused by the kernel; the backend then
    uses mulVec, with the same result as for the normalised points."""
    import numpy as np

    mcl = mcl_or_skip()
    kernel = _native_or_skip(mcl, mcl._g1)
    rng = random.Random(3)
    n = 1200
    ks = [rng.randrange(1, R) for _ in range(n)]
    normalised = mcl.g1_fixed_base(mcl.g1_generator(), ks)
    jacobian = mcl._g1.mul_each(mcl.g1_fixed_base(mcl.g1_generator(), [1] * n), mcl.scalar_vector(ks))
    assert not np.array_equal(jacobian[:, 8:], normalised[:, 8:])  # not z = 1
    scalars = mcl.scalar_vector([rng.randrange(R) for _ in range(n)])
    out = mcl._g1.zero()
    assert kernel(out.ctypes.data, jacobian.ctypes.data, scalars.ctypes.data, n) == -1
    assert mcl.g1_msm(jacobian, scalars) == mcl.g1_msm(normalised, scalars)


def test_the_native_check_is_recorded_only_when_it_passes(monkeypatch, tmp_path):
    """A kernel that disagrees with mulVec is not used, and nothing is recorded; one that agrees is
    recorded, and a later process (here: cleared state) with the same libraries skips the check."""
    from circuits.backends import mcl as mcl_module
    from circuits.backends.native import msm as native_msm

    mcl = mcl_or_skip()
    real = native_msm.load()
    if real is None:
        pytest.skip("native MSM kernels unavailable (no compiler)")
    library = tmp_path / "msm-copy.so"
    library.write_bytes(b"stands for the compiled kernel")
    # The record names both libraries' files; a first process on a fresh machine runs mcl from the
    # wheel's temporary file (no record then), so the test names a stand-in file that stays.
    mcl_file = tmp_path / "libmclbn256-copy.so"
    mcl_file.write_bytes(b"stands for mcl")
    monkeypatch.setattr(mcl._g1.lib, "_name", str(mcl_file))

    def wrong_g1(out, points, scalars, n):
        status = real.g1(out, points, scalars, n)
        mcl._g1.add(out, out, out)  # twice the sum
        mcl._g1.normalize(out, out)
        return status

    monkeypatch.setattr(mcl_module, "_native_state", {})
    monkeypatch.setattr(native_msm, "load", lambda: native_msm.NativeMsm(wrong_g1, real.g2, real.use_field, str(library)))
    assert mcl_module._native_msm(mcl._g1) is None
    assert not list(tmp_path.glob("msm-agrees-*"))

    monkeypatch.setattr(mcl_module, "_native_state", {})
    monkeypatch.setattr(native_msm, "load", lambda: native_msm.NativeMsm(real.g1, real.g2, real.use_field, str(library)))
    assert mcl_module._native_msm(mcl._g1) is real.g1
    assert len(list(tmp_path.glob("msm-agrees-*"))) == 1

    def no_check(group, kernel):
        raise AssertionError("checked again")

    monkeypatch.setattr(mcl_module, "_native_state", {})
    monkeypatch.setattr(mcl_module, "_native_msm_agrees", no_check)
    assert mcl_module._native_msm(mcl._g1) is real.g1
    library.write_bytes(b"another kernel build")  # other size: another record, so checked again
    monkeypatch.setattr(mcl_module, "_native_state", {})
    with pytest.raises(AssertionError, match="checked again"):
        mcl_module._native_msm(mcl._g1)
