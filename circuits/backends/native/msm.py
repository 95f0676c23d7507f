"""ctypes binding of native/msm.c: BN254 G1 and G2 multi-scalar multiplication (batch-affine buckets).

`load()` returns a `NativeMsm`, or None (native kernels switched off, no
compiler, compile error); callers then use mcl's mulVec. The kernels read
mcl's normalised G1 / G2 structs and Montgomery scalars as they lie in
memory and multiply with the field code they are handed (`use_field`), so
whether their sums equal mcl's is checked by the caller, which has mcl at
hand (backends/mcl.py does, once per process, before first use).
"""
from __future__ import annotations

import ctypes
import logging
from dataclasses import dataclass
from typing import Callable

from .build import NativeLibrary

log = logging.getLogger(__name__)

OK, NOT_NORMALISED, NO_MEMORY = 0, -1, -2

_P, _N = ctypes.c_void_p, ctypes.c_size_t


@dataclass(frozen=True)
class NativeMsm:
    """g1(out, points, scalars, n) and g2(...) return OK, NOT_NORMALISED (a point whose z is neither 0
    nor 1: use mcl) or NO_MEMORY; use_field(fp_mul, fp_sqr, fp2_mul, fp2_sqr) sets the Fq and Fq2
    products by address (mcl's mclBnFp_mul, mclBnFp_sqr, mclBnFp2_mul, mclBnFp2_sqr; None: the C ones),
    once, before any MSM runs."""

    g1: Callable[..., int]
    g2: Callable[..., int]
    use_field: Callable[..., None]
    path: str  # the library file, which a record of a passed check names


def _bind(lib: ctypes.CDLL) -> NativeMsm:
    for name in ("g1_msm_affine", "g2_msm_affine"):
        fn = getattr(lib, name)
        fn.argtypes = [_P, _P, _P, _N]
        fn.restype = ctypes.c_int
    lib.msm_use_field.argtypes = [_P, _P, _P, _P]
    lib.msm_use_field.restype = None
    return NativeMsm(lib.g1_msm_affine, lib.g2_msm_affine, lib.msm_use_field, str(lib._name))


library = NativeLibrary("msm.c", _bind, "native MSM", "using mcl's mulVec", log)


def load() -> NativeMsm | None:
    """The kernels, or None."""
    return library.load()
