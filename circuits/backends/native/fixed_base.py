"""ctypes binding of native/fixed_base.c: fixed-base scalar multiplication by window tables.

`load()` returns the C function, or None (native kernels switched off, no
compiler, compile error), in which case callers multiply point by point. The
curve arithmetic is passed in by the caller (mcl's add), so checking the
results against a plain multiplication is the caller's job (tests/test_fixed_base.py).
"""
from __future__ import annotations

import ctypes
import logging

from .build import NativeLibrary

log = logging.getLogger(__name__)

_P, _N, _U = ctypes.c_void_p, ctypes.c_size_t, ctypes.c_uint


def _bind(lib: ctypes.CDLL):
    fn = lib.fixed_base_windowed  # (out, table, point_bytes, scalars, n, window, n_windows, add)
    fn.argtypes = [_P, _P, _N, _P, _N, _U, _U, _P]
    fn.restype = None
    return fn


library = NativeLibrary("fixed_base.c", _bind, "native fixed-base kernel", "multiplying point by point", log)


def load():
    """fixed_base_windowed(out, table, point_bytes, scalars, n, window, n_windows, add), or None."""
    return library.load()
