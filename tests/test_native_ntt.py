"""The native (C) Fr kernels give the same bytes as the numpy NTTs.

Both paths keep every value as the reduced Montgomery representative, so the
comparison is exact (bytes), on random inputs of every size from 2 to 2^12,
forward and inverse, DIF and DIT, and for the coset steps of the quotient.
Rejection twins: a wrong twiddle or a changed input gives different bytes.
FAIRPROOF_NATIVE_NTT=0 and a missing compiler both leave the numpy path in use.
"""
from __future__ import annotations

import logging

import numpy as np
import pytest

from circuits.backends import ntt, reference
from circuits.backends.native import build, kernels
from circuits.field import R

SIZES = [1 << k for k in range(1, 13)]


@pytest.fixture
def native():
    loaded = kernels.load()
    if loaded is None:
        pytest.skip("native Fr kernels unavailable (no compiler, or FAIRPROOF_NATIVE_NTT=0)")
    return loaded


def _random_fr(n: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    values = [int.from_bytes(rng.bytes(32), "little") % R for _ in range(n)]
    values[: min(n, 3)] = [0, 1, R - 1][: min(n, 3)]  # the edges of the field
    return ntt.fr_array(values)


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("inverse", [False, True])
def test_native_dif_and_dit_equal_numpy(native, n, inverse):
    x = _random_fr(n, n + inverse)
    twiddles = ntt.flat_twiddles(n, inverse)
    assert native.dif(x.copy(), twiddles).tobytes() == ntt.dif_numpy(x.copy(), inverse).tobytes()
    assert native.dit(x.copy(), twiddles).tobytes() == ntt.dit_numpy(x.copy(), inverse).tobytes()
    # the module's dispatching entry points take the native route here
    assert ntt.dif(x.copy(), inverse).tobytes() == ntt.dif_numpy(x.copy(), inverse).tobytes()


@pytest.mark.parametrize("n", SIZES)
def test_native_coset_evaluations_equal_numpy(native, n):
    x = _random_fr(n, 3 * n)
    into = ntt.quotient_factors(n)[0]
    work = x.copy()
    native.dif(work, ntt.flat_twiddles(n, True))
    native.mul(work, work, into)
    native.dit(work, ntt.flat_twiddles(n, False))
    assert work.tobytes() == ntt._coset_evaluations(x, into).tobytes()


@pytest.mark.parametrize("n", [2, 64, 1 << 12, 1 << 13])  # 2^13: the two-thread route
def test_native_quotient_equals_numpy_quotient(native, n):
    a, b = _random_fr(n, 5 * n), _random_fr(n, 7 * n)
    c = a * b
    assert ntt._quotient_native(native, a, b, c).tobytes() == ntt._quotient_numpy(a, b, c).tobytes()


def test_native_ntt_matches_the_reference_transform(native):
    n = 16
    x = _random_fr(n, 11)
    omega = pow(ntt.R_GENERATOR, (R - 1) // n, R)
    assert [int(v) for v in ntt.ntt(x)] == reference.ntt([int(v) for v in x], omega)
    assert [int(v) for v in ntt.intt(ntt.ntt(x))] == [int(v) for v in x]


@pytest.mark.parametrize("n", [4, 1 << 10])
def test_wrong_twiddle_gives_different_output(native, n):
    x = _random_fr(n, 13)
    good = ntt.flat_twiddles(n, False)
    bad = good.copy()
    bad[-1] = bad[-1] * ntt.fr_const(2)[0]  # one twiddle of the widest stage
    expected = ntt.dif_numpy(x.copy())
    assert native.dif(x.copy(), good).tobytes() == expected.tobytes()
    assert native.dif(x.copy(), bad).tobytes() != expected.tobytes()
    assert native.dit(x.copy(), bad).tobytes() != ntt.dit_numpy(x.copy()).tobytes()


def test_changed_input_gives_different_output(native):
    x = _random_fr(256, 17)
    y = x.copy()
    y[100] = y[100] + ntt.fr_const(1)[0]
    tw = ntt.flat_twiddles(256, False)
    assert native.dif(y, tw).tobytes() != ntt.dif_numpy(x.copy()).tobytes()


def test_elementwise_kernels_equal_numpy(native):
    a, b = _random_fr(1000, 19), _random_fr(1000, 23)[::-1].copy()
    assert native.mul(np.empty_like(a), a, b).tobytes() == (a * b).tobytes()
    assert native.sub(np.empty_like(a), a, b).tobytes() == (a - b).tobytes()
    k = ntt.fr_const(R - 5)
    assert native.mul_scalar(np.empty_like(a), a, k).tobytes() == (a * k).tobytes()
    assert native.mul(np.empty_like(a), a, b).tobytes() != (a * a).tobytes()


def test_native_sparse_rows_equal_the_numpy_rows(native, monkeypatch):
    """One side of a constraint system times a witness: coefficients 1, r - 1 and others, empty rows,
    repeated wires; the C pass equals the vectorised numpy one. Twin: a wire out of range is refused."""
    from circuits.backends import sparse_rows
    from circuits.relation_arrays import SparseRows

    rng = np.random.default_rng(7)
    n_wires = 50
    w = _random_fr(n_wires, 31)
    rows = []
    for j in range(40):
        terms = []
        for _ in range(int(rng.integers(0, 6))):  # some rows empty
            k = [1, R - 1, int.from_bytes(rng.bytes(32), "little") % R][int(rng.integers(0, 3))]
            terms.append((int(rng.integers(0, n_wires)), k))
        rows.append(tuple(terms))
    side = SparseRows.from_rows(rows)
    got = sparse_rows.rows_times(side, w, 64)
    monkeypatch.setattr(kernels, "load", lambda: None)
    expected = sparse_rows.rows_times(side, w, 64)
    assert got.tobytes() == expected.tobytes()
    other = w.copy()
    other[int(side.wire[0])] = other[int(side.wire[0])] + ntt.fr_const(1)[0]
    assert native.sparse_rows(np.zeros(40, dtype=ntt.FR), side.start, side.wire, side.coefficient,
                              other).tobytes() != expected[:40].tobytes()
    bad = side.wire.copy()
    bad[0] = n_wires
    with pytest.raises(ValueError, match="outside the witness"):
        native.sparse_rows(np.zeros(40, dtype=ntt.FR), side.start, bad, side.coefficient, w)


def test_kernels_refuse_bad_arrays(native):
    x = _random_fr(8, 29)
    with pytest.raises(ValueError, match="twiddles"):
        native.dif(x, ntt.flat_twiddles(4, False))  # too few for size 8
    with pytest.raises(ValueError, match="power of two"):
        native.dif(x[:6].copy(), ntt.flat_twiddles(8, False))
    with pytest.raises(ValueError, match="contiguous"):
        native.dif(x[::2], ntt.flat_twiddles(4, False))


class _Spy:
    def __init__(self, fn):
        self.fn, self.calls = fn, 0

    def __call__(self, *args, **kwargs):
        self.calls += 1
        return self.fn(*args, **kwargs)


def _spy_numpy_paths(monkeypatch) -> tuple[_Spy, _Spy]:
    dif_spy, quotient_spy = _Spy(ntt.dif_numpy), _Spy(ntt._quotient_numpy)
    monkeypatch.setattr(ntt, "dif_numpy", dif_spy)
    monkeypatch.setattr(ntt, "_quotient_numpy", quotient_spy)
    return dif_spy, quotient_spy


def test_env_switch_selects_the_numpy_path(monkeypatch):
    monkeypatch.setenv("FAIRPROOF_NATIVE_NTT", "0")
    assert kernels.load() is None
    dif_spy, quotient_spy = _spy_numpy_paths(monkeypatch)
    x = _random_fr(64, 31)
    ntt.dif(x.copy())
    assert dif_spy.calls == 1
    a, b = _random_fr(64, 37), _random_fr(64, 41)
    ntt.qap_quotient(a, b, a * b)
    assert quotient_spy.calls == 1


def test_without_the_switch_the_native_path_is_used(native, monkeypatch):
    monkeypatch.delenv("FAIRPROOF_NATIVE_NTT", raising=False)
    dif_spy, quotient_spy = _spy_numpy_paths(monkeypatch)
    x = _random_fr(64, 31)
    ntt.dif(x.copy())
    a, b = _random_fr(64, 37), _random_fr(64, 41)
    ntt.qap_quotient(a, b, a * b)
    assert dif_spy.calls == 0 and quotient_spy.calls == 0


def test_missing_compiler_falls_back_with_one_warning(monkeypatch, tmp_path, caplog):
    monkeypatch.delenv("FAIRPROOF_NATIVE_NTT", raising=False)
    monkeypatch.setenv("FAIRPROOF_NATIVE_DIR", str(tmp_path))
    monkeypatch.setenv("CC", str(tmp_path / "no-such-compiler"))
    monkeypatch.setattr(kernels.library, "loaded", None)
    monkeypatch.setattr(kernels.library, "failed", False)
    with caplog.at_level(logging.WARNING, logger=kernels.__name__):
        assert kernels.load() is None
        assert kernels.load() is None
    assert len([r for r in caplog.records if "using numpy" in r.getMessage()]) == 1
    x = _random_fr(32, 43)
    assert ntt.dif(x.copy()).tobytes() == ntt.dif_numpy(x.copy()).tobytes()


def test_build_caches_by_content_hash_and_leaves_no_temporaries(monkeypatch, tmp_path):
    if kernels.load() is None:
        pytest.skip("no working C compiler")
    monkeypatch.setenv("FAIRPROOF_NATIVE_DIR", str(tmp_path))
    first = build.build("ntt.c")
    mtime = first.stat().st_mtime_ns
    assert build.build("ntt.c") == first and first.stat().st_mtime_ns == mtime  # reused, not rebuilt
    assert first.parent == tmp_path and sorted(p.name for p in tmp_path.iterdir()) == [first.name, "ntt.built"]


def test_a_machine_without_a_compiler_loads_the_library_built_for_the_same_source(monkeypatch, tmp_path):
    """The image builds its kernels when it is built, and carries no compiler at run time."""
    if kernels.load() is None:
        pytest.skip("no working C compiler")
    monkeypatch.setenv("FAIRPROOF_NATIVE_DIR", str(tmp_path))
    built = build.build("ntt.c")
    monkeypatch.setenv("CC", str(tmp_path / "no-such-compiler"))
    assert build.build("ntt.c") == built
    # A record for another source (the library is stale) is not used.
    record = tmp_path / "ntt.built"
    record.write_text("0" * 64 + " " + built.name + "\n")
    with pytest.raises(build.NativeBuildError, match="not found"):
        build.build("ntt.c")


def test_required_kernels_that_cannot_load_are_an_error_not_a_silent_fallback(monkeypatch, tmp_path):
    monkeypatch.setenv("FAIRPROOF_NATIVE_NTT", "required")
    monkeypatch.setenv("FAIRPROOF_NATIVE_DIR", str(tmp_path))
    monkeypatch.setenv("CC", str(tmp_path / "no-such-compiler"))
    monkeypatch.setattr(kernels.library, "loaded", None)
    monkeypatch.setattr(kernels.library, "failed", False)
    with pytest.raises(build.NativeBuildError, match="required .* but unavailable"):
        kernels.load()


def test_a_source_is_identified_with_the_files_it_includes(monkeypatch, tmp_path):
    """msm.c includes its group code (msm_group.h): editing that file must give a new library, editing a file
    the source does not include must not."""
    for name, text in {"main.c": '#include <stdint.h>\n#include "part.h"\nint f(void) { return PART; }\n',
                       "part.h": "#define PART 1\n", "other.h": "#define OTHER 1\n"}.items():
        (tmp_path / name).write_text(text)
    monkeypatch.setattr(build, "HERE", tmp_path)
    first = build.source_bytes("main.c")
    assert b"#define PART 1" in first and b"OTHER" not in first
    (tmp_path / "other.h").write_text("#define OTHER 2\n")
    assert build.source_bytes("main.c") == first
    (tmp_path / "part.h").write_text("#define PART 2\n")
    assert build.source_bytes("main.c") != first


def test_the_shipped_msm_source_includes_its_group_code():
    assert b"G(jac_dbl)" in build.source_bytes("msm.c")
