"""ctypes binding of native/ntt.c: Fr NTTs and elementwise operations.

`load()` returns an `FrKernels` or None (FAIRPROOF_NATIVE_NTT=0, no compiler,
compile error, or a failed self-check); the reason is logged once and callers
use the numpy path. With FAIRPROOF_NATIVE_NTT=required (the production image)
a missing kernel is an error instead: proving several times slower without
anyone noticing is worse than not starting. ctypes releases the GIL during each call, so kernels on
independent arrays run on separate cores from Python threads.

Arrays are 1-D C-contiguous zk_dtypes.bn254_sf_mont arrays, passed by pointer:
the self-check confirms that the dtype's limbs are the Montgomery form the C
code assumes (1 is stored as 2^256 mod R) and that a native product equals
zk_dtypes' one on sample values.
"""
from __future__ import annotations

import ctypes
import logging

import numpy as np
import zk_dtypes

from ...field import R
from .build import ENV_SWITCH, NativeBuildError, NativeLibrary, enabled_by_env, required_by_env  # noqa: F401

log = logging.getLogger(__name__)

FR = np.dtype(zk_dtypes.bn254_sf_mont)
_P = ctypes.c_void_p
_N = ctypes.c_size_t


def _check_vector(arr: np.ndarray, what: str) -> None:
    if not isinstance(arr, np.ndarray) or arr.dtype != FR or arr.ndim != 1 or not arr.flags.c_contiguous:
        raise ValueError(f"{what}: expected a 1-D C-contiguous Fr array")


class FrKernels:
    """Thin checked wrappers: shapes are validated here, since C trusts its pointers."""

    def __init__(self, lib: ctypes.CDLL):
        self._lib = lib
        for name, args in (
            ("fr_ntt_dif", [_P, _N, _P]),
            ("fr_ntt_dit", [_P, _N, _P]),
            ("fr_mul_vec", [_P, _P, _P, _N]),
            ("fr_mul_scalar", [_P, _P, _P, _N]),
            ("fr_sub_vec", [_P, _P, _P, _N]),
            ("fr_dif_butterflies", [_P, _P, _P, _N]),
            ("fr_dit_butterflies", [_P, _P, _P, _N]),
        ):
            fn = getattr(lib, name)
            fn.argtypes, fn.restype = args, None
        lib.fr_sparse_rows.argtypes = [_P, _P, _P, _P, _P, _N, _N, _N]
        lib.fr_sparse_rows.restype = ctypes.c_int

    def sparse_rows(self, out: np.ndarray, start: np.ndarray, wire: np.ndarray, coefficient: np.ndarray,
                    w: np.ndarray) -> np.ndarray:
        """out[j] = sum of coefficient * w[wire] over row j's terms, j < len(start) - 1 (see ntt.c's
        fr_sparse_rows): the arrays of one side of a `SparseRows`, whose partition of the terms
        (`SparseRows.check`) the caller has established; bounds are checked in C all the same. Raises
        ValueError for a wire or a row start out of range."""
        _check_vector(out, "out")
        _check_vector(w, "w")
        n_rows = start.shape[0] - 1
        if not out.flags.writeable or out.shape[0] < n_rows:
            raise ValueError(f"out has {out.shape[0]} entries for {n_rows} rows")
        for arr, dtype, what in ((start, np.int64, "start"), (wire, np.int64, "wire"), (coefficient, np.uint8, "coefficient")):
            if arr.dtype != dtype or not arr.flags.c_contiguous:
                raise ValueError(f"{what}: expected a C-contiguous {dtype.__name__} array")
        if coefficient.shape != (wire.shape[0], 32) or start.ndim != 1 or start.shape[0] < 1:
            raise ValueError("sparse rows: starts, wires and coefficients do not fit together")
        if self._lib.fr_sparse_rows(out.ctypes.data, start.ctypes.data, wire.ctypes.data, coefficient.ctypes.data,
                                    w.ctypes.data, n_rows, w.shape[0], wire.shape[0]) != 0:
            raise ValueError("sparse rows: a term names a wire outside the witness, or a row starts outside the terms")
        return out

    def _ntt(self, fn, a: np.ndarray, twiddles: np.ndarray) -> np.ndarray:
        _check_vector(a, "ntt input")
        _check_vector(twiddles, "twiddles")
        n = a.shape[0]
        if n & (n - 1) or n == 0:
            raise ValueError(f"ntt size {n} is not a power of two")
        if not a.flags.writeable:
            raise ValueError("ntt input is read-only")
        if twiddles.shape[0] < n - 1:
            raise ValueError(f"{twiddles.shape[0]} twiddles for size {n} (needs {n - 1})")
        fn(a.ctypes.data, n, twiddles.ctypes.data)
        return a

    def dif(self, a: np.ndarray, twiddles: np.ndarray) -> np.ndarray:
        """In place, natural -> bit-reversed; twiddles as `flat_twiddles`."""
        return self._ntt(self._lib.fr_ntt_dif, a, twiddles)

    def dit(self, a: np.ndarray, twiddles: np.ndarray) -> np.ndarray:
        """In place, bit-reversed -> natural."""
        return self._ntt(self._lib.fr_ntt_dit, a, twiddles)

    def _binary(self, fn, out: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        for arr, what in ((out, "out"), (a, "a"), (b, "b")):
            _check_vector(arr, what)
        if not out.flags.writeable:
            raise ValueError("out is read-only")
        if not out.shape == a.shape == b.shape:
            raise ValueError(f"shapes differ: {out.shape}, {a.shape}, {b.shape}")
        fn(out.ctypes.data, a.ctypes.data, b.ctypes.data, a.shape[0])
        return out

    def mul(self, out: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        return self._binary(self._lib.fr_mul_vec, out, a, b)

    def sub(self, out: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        return self._binary(self._lib.fr_sub_vec, out, a, b)

    def _butterflies(self, fn, u: np.ndarray, v: np.ndarray, twiddles: np.ndarray) -> None:
        for arr, what in ((u, "u"), (v, "v"), (twiddles, "twiddles")):
            _check_vector(arr, what)
        if not u.flags.writeable or not v.flags.writeable:
            raise ValueError("butterfly inputs are read-only")
        if not u.shape == v.shape == twiddles.shape:
            raise ValueError(f"shapes differ: {u.shape}, {v.shape}, {twiddles.shape}")
        fn(u.ctypes.data, v.ctypes.data, twiddles.ctypes.data, u.shape[0])

    def dif_butterflies(self, u: np.ndarray, v: np.ndarray, twiddles: np.ndarray) -> None:
        """In place: u, v = u + v, (u - v) * twiddles (one DIF stage, or a range of it)."""
        self._butterflies(self._lib.fr_dif_butterflies, u, v, twiddles)

    def dit_butterflies(self, u: np.ndarray, v: np.ndarray, twiddles: np.ndarray) -> None:
        """In place: u, v = u + v * twiddles, u - v * twiddles (one DIT stage, or a range of it)."""
        self._butterflies(self._lib.fr_dit_butterflies, u, v, twiddles)

    def mul_scalar(self, out: np.ndarray, a: np.ndarray, scalar: np.ndarray) -> np.ndarray:
        for arr, what in ((out, "out"), (a, "a"), (scalar, "scalar")):
            _check_vector(arr, what)
        if not out.flags.writeable or out.shape != a.shape or scalar.shape != (1,):
            raise ValueError(f"shapes: out {out.shape}, a {a.shape}, scalar {scalar.shape}")
        self._lib.fr_mul_scalar(out.ctypes.data, a.ctypes.data, scalar.ctypes.data, a.shape[0])
        return out


def _self_check(kernels: FrKernels) -> None:
    one = np.array([1], dtype=FR).view(np.uint64)
    expected = [((1 << 256) % R >> (64 * i)) & (2**64 - 1) for i in range(4)]
    if one.tolist() != expected:
        raise NativeBuildError("zk_dtypes Fr layout is not little-endian Montgomery limbs of x * 2^256 mod R")
    rng = np.random.default_rng(1)
    values = [int.from_bytes(rng.bytes(32), "little") % R for _ in range(61)] + [0, 1, R - 1]
    a = np.array(values, dtype=FR)
    b = a[::-1].copy()
    product = kernels.mul(np.empty_like(a), a, b)
    difference = kernels.sub(np.empty_like(a), a, b)
    if product.tobytes() != (a * b).tobytes() or difference.tobytes() != (a - b).tobytes():
        raise NativeBuildError("native Fr arithmetic disagrees with zk_dtypes")


def _bind(lib: ctypes.CDLL) -> FrKernels:
    kernels = FrKernels(lib)
    _self_check(kernels)
    return kernels


library = NativeLibrary("ntt.c", _bind, "native Fr NTT", "using numpy NTTs", log)


def load() -> FrKernels | None:
    """The kernels, compiled and checked once per process; None means: use numpy."""
    return library.load()
