"""ctypes binding of native/fixed_base.c: fixed-base scalar multiplication by window tables.

`load()` returns the C function, or None (native kernels switched off, no
compiler, compile error), in which case callers multiply point by point. The
curve arithmetic is passed in by the caller (mcl's add), so checking the
results against a plain multiplication is the caller's job (`mcl._Group`).
"""
from __future__ import annotations

import ctypes
import logging
import threading

from .build import NativeBuildError, build
from .kernels import ENV_SWITCH, enabled_by_env, required_by_env

log = logging.getLogger(__name__)

_P, _N, _U = ctypes.c_void_p, ctypes.c_size_t, ctypes.c_uint

_lock = threading.Lock()
_loaded = None
_failed = False


def load():
    """fixed_base_windowed(out, table, point_bytes, scalars, n, window, n_windows, add), or None."""
    global _loaded, _failed
    if not enabled_by_env():
        return None
    with _lock:
        if _loaded is not None or _failed:
            return _loaded
        try:
            fn = ctypes.CDLL(str(build("fixed_base.c"))).fixed_base_windowed
        except (NativeBuildError, OSError, AttributeError) as exc:
            if required_by_env():
                raise NativeBuildError(f"native kernels are required ({ENV_SWITCH}=required) but the fixed-base "
                                       f"kernel is unavailable: {exc}") from None
            _failed = True
            log.warning("native fixed-base kernel unavailable, multiplying point by point: %s", exc)
            return None
        fn.argtypes = [_P, _P, _N, _P, _N, _U, _U, _P]
        fn.restype = None
        _loaded = fn
        return fn
