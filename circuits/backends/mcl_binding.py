"""The mcl library of the `mclbn256` wheel, bound through ctypes, switched to alt_bn128 and self-checked.

`load_library` loads the wheel's library once per process (from the per-wheel
cache of circuits/backends/mcl_library.py), declares the C signatures the
backend calls, re-initialises mcl for alt_bn128 (`mclBn_init(4, 44)`) and,
before first use, checks the curve order, the base field, the generators, the
scalar layout and one doubling against `circuits.field` and py_ecc, and that
zk_dtypes' Jacobian points share mcl's struct layout.
"""
from __future__ import annotations

import ctypes
import threading
from typing import Callable

import numpy as np

from ..errors import CircuitError
from ..field import Q, R
from . import ntt
from .mcl_library import load_wheel_library
from .mcl_points import (_G2_ETH, FP_LIMBS, G1_LIMBS, G2_LIMBS, _g1_from_canonical, _g1_to_canonical,
                         _g2_from_canonical, _jacobian_dtype, _normalised)

MCL_BN_SNARK1 = 4  # alt_bn128
MCLBN_COMPILED_TIME_VAR = 44  # MCLBN_FP_UNIT_SIZE + 10 * MCLBN_FR_UNIT_SIZE, both 4 in the wheel
IO_DEC = 10

_MONT_ONE_Q = (1 << 256) % Q
# 2 * G1 (py_ecc), an arithmetic self-check at load time
_G1_DOUBLE = (
    1368015179489954701390400359078579693043519447331113978918064868415326638035,
    9918110051302171585080402603319702774565515993150576347155970296011118125764,
)

_lib = None
_lib_lock = threading.Lock()

_P = ctypes.c_void_p


def _bind(lib: ctypes.CDLL) -> None:
    sigs: dict[str, tuple[list, object]] = {
        "mclBn_init": ([ctypes.c_int, ctypes.c_int], ctypes.c_int),
        "mclBn_getCurveOrder": ([ctypes.c_char_p, ctypes.c_size_t], ctypes.c_size_t),
        "mclBn_getFieldOrder": ([ctypes.c_char_p, ctypes.c_size_t], ctypes.c_size_t),
        "mclBn_verifyOrderG1": ([ctypes.c_int], None),
        "mclBn_verifyOrderG2": ([ctypes.c_int], None),
        "mclBnFr_setStr": ([_P, ctypes.c_char_p, ctypes.c_size_t, ctypes.c_int], ctypes.c_int),
        "mclBnFp_mul": ([_P, _P, _P], None),
        "mclBnFp_sqr": ([_P, _P], None),
        "mclBnFp2_mul": ([_P, _P, _P], None),
        "mclBnFp2_sqr": ([_P, _P], None),
        "mclBn_millerLoopVec": ([_P, _P, _P, ctypes.c_size_t], None),
        "mclBn_finalExp": ([_P, _P], None),
        "mclBnGT_isOne": ([_P], ctypes.c_int),
        "mclBnGT_isEqual": ([_P, _P], ctypes.c_int),
        "mclBnGT_setInt": ([_P, ctypes.c_int64], None),
    }
    for g in ("G1", "G2"):
        sigs.update(
            {
                f"mclBn{g}_setStr": ([_P, ctypes.c_char_p, ctypes.c_size_t, ctypes.c_int], ctypes.c_int),
                f"mclBn{g}_getStr": ([ctypes.c_char_p, ctypes.c_size_t, _P, ctypes.c_int], ctypes.c_size_t),
                f"mclBn{g}_add": ([_P, _P, _P], None),
                f"mclBn{g}_dbl": ([_P, _P], None),
                f"mclBn{g}_sub": ([_P, _P, _P], None),
                f"mclBn{g}_mul": ([_P, _P, _P], None),
                f"mclBn{g}_mulVec": ([_P, _P, _P, ctypes.c_size_t], None),
                f"mclBn{g}_normalize": ([_P, _P], None),
                f"mclBn{g}_isValid": ([_P], ctypes.c_int),
                f"mclBn{g}_isZero": ([_P], ctypes.c_int),
                f"mclBn{g}_clear": ([_P], None),
            }
        )
    for name, (argtypes, restype) in sigs.items():
        fn = getattr(lib, name)
        fn.argtypes = argtypes
        fn.restype = restype


def load_library() -> ctypes.CDLL:
    """Load the wheel's library, switch it to alt_bn128 and self-check it (once)."""
    global _lib
    with _lib_lock:
        if _lib is not None:
            return _lib
        lib = load_wheel_library()  # the wheel's library, from a per-wheel cache after the first process
        _bind(lib)
        if lib.mclBn_init(MCL_BN_SNARK1, MCLBN_COMPILED_TIME_VAR) != 0:
            raise CircuitError("mclBn_init(MCL_BN_SNARK1) failed")
        # G1 = E(Fq) has cofactor 1: on the curve means order R, and mcl's extra
        # order check would cost a full scalar multiplication per point.
        lib.mclBn_verifyOrderG1(0)
        lib.mclBn_verifyOrderG2(1)  # setStr / isValid then also check the order-R subgroup
        _self_check(lib)
        _lib = lib
        return lib


def _read_str(fn: Callable[[ctypes.c_char_p, int], int]) -> bytes:
    buf = ctypes.create_string_buffer(1024)
    n = fn(buf, len(buf))
    if n == 0:
        raise CircuitError("mcl getStr failed")
    return buf.raw[:n]


def curve_order() -> int:
    lib = load_library()
    return int(_read_str(lib.mclBn_getCurveOrder))


def field_order() -> int:
    lib = load_library()
    return int(_read_str(lib.mclBn_getFieldOrder))


def _self_check(lib: ctypes.CDLL) -> None:
    order = int(_read_str(lib.mclBn_getCurveOrder))
    field = int(_read_str(lib.mclBn_getFieldOrder))
    if order != R or field != Q:
        raise CircuitError(f"mcl is not on alt_bn128: order {order}, field {field}")
    fr = (ctypes.c_uint64 * FP_LIMBS)()
    probe = 0x1234_5678_9ABC_DEF0_0FED_CBA9_8765_4321_1122_3344_5566_7788
    text = str(probe).encode()
    if lib.mclBnFr_setStr(ctypes.addressof(fr), text, len(text), IO_DEC) != 0:
        raise CircuitError("mcl rejected a scalar")
    if bytes(fr) != ntt.fr_array([probe]).tobytes():
        raise CircuitError("mclBnFr layout differs from zk_dtypes.bn254_sf_mont")
    g1 = _g1_from_canonical(lib, (1, 2))
    if not lib.mclBnG1_isValid(g1.ctypes.data):
        raise CircuitError("mcl rejects the alt_bn128 G1 generator")
    g2 = _g2_from_canonical(lib, _G2_ETH)
    if not lib.mclBnG2_isValid(g2.ctypes.data):
        raise CircuitError("mcl rejects the EIP-197 G2 generator")
    two = np.empty(G1_LIMBS, dtype=np.uint64)
    lib.mclBnG1_add(two.ctypes.data, g1.ctypes.data, g1.ctypes.data)
    if _g1_to_canonical(lib, two) != _G1_DOUBLE:
        raise CircuitError("mcl G1 doubling disagrees with py_ecc")
    # Sparse combinations and normalisation hand mcl's structs to zk_dtypes'
    # Jacobian points: the layouts must agree (a doubling, unnormalised, in both).
    for tag, point, limbs in (("G1", g1, G1_LIMBS), ("G2", g2, G2_LIMBS)):
        doubled = np.zeros(limbs, dtype=np.uint64)
        getattr(lib, f"mclBn{tag}_dbl")(doubled.ctypes.data, point.ctypes.data)
        mine = np.ascontiguousarray(point.reshape(1, -1)).view(_jacobian_dtype(tag))
        theirs = _normalised((mine + mine).view(np.uint64).reshape(1, limbs), tag)
        getattr(lib, f"mclBn{tag}_normalize")(doubled.ctypes.data, doubled.ctypes.data)
        if not np.array_equal(theirs[0], doubled):
            raise CircuitError(f"zk_dtypes' {tag} Jacobian points are not mcl's structs")

