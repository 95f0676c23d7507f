"""Fast curve backend: mcl (from the `mclbn256` wheel) through its C API, numpy NTTs.

The wheel bundles mcl built for BN254 and initialises it for the ISO curve
"Fp254BNb"; this module re-initialises it for alt_bn128 (`mclBn_init(4, 44)`:
MCL_BN_SNARK1, compile-time unit sizes 4 + 4*10) and, before use, checks the
curve order, the base field, the generators and the scalar layout against
`circuits.field` and py_ecc. The wheel's Python classes are never used (their
memoised pairing corrupts the heap after the curve switch).

Representations (all C-contiguous numpy arrays, handed to mcl without copies):
- ScalarVector: 1-D `zk_dtypes.bn254_sf_mont` array (= mclBnFr: four
  little-endian u64 limbs of x * 2^256 mod R).
- G1Vector: uint64 array of shape (n, 12) = mclBnG1 structs (Jacobian x, y, z
  in Montgomery form over Fq); G2Vector: shape (n, 24) = mclBnG2 structs.
  Vectors made here are normalised (z = 1, or z = 0 for the point at infinity).
- Raw bytes (`*_vector_to_bytes`): those structs as they lie in memory
  (96 bytes per G1 point, 192 per G2 point, little-endian limbs), so a proving
  key loads with numpy.frombuffer. Loading checks every limb is below Q and
  every point is on its curve (and, for G2, in the order-R subgroup).

MSMs of at least NATIVE_MSM_MIN scalars run in native/msm.c (batch-affine
bucket sums over mcl's own structs, multiplying with mcl's generated field
code; checked against mulVec once, see `_native_msm`): the points split in
contiguous ranges over the threads. Otherwise, or when the kernels cannot load
or a point is not normalised, mulVec: the scalars split by size (see
`_msm_jobs`), one thread per available core (ctypes releases the GIL) with
large stacks, in mulVec calls of at most 2^17 points (mulVec's stack use grows
with n; 2^18 overflows 8 MiB). A proving key mapped from its files
(`vector_from_own_file`) is read by either in place.
Fixed-base multiplication (key generation) is one mclBnG*_mul per scalar,
spread over the same threads, as is scaling a vector by one scalar (a
phase-2 contribution). zk_dtypes' Jacobian Montgomery points have the layout
of mcl's structs (checked at load), so sums per target of a sparse
combination are one np.add.reduceat, and normalising a whole vector is one
batched conversion to affine; curve checks of whole vectors run in
zk_dtypes' Montgomery Fq. Measured figures: benchmarks/backend_micro.py,
benchmarks/audit_keys.py.
"""
from __future__ import annotations

import ctypes
import hashlib
import os
import threading
from operator import index
from pathlib import Path
from typing import Callable, Sequence

import numpy as np
import zk_dtypes

from ..errors import CircuitError, MalformedArtifact
from ..field import Q, R
from ..groth16.types import G1Affine, G2Affine
from ..relation_arrays import ArrayR1CS
from . import ntt, sparse_rows
from .mcl_library import load_wheel_library
from .native import fixed_base as native_fixed_base
from .native import msm as native_msm
from .base import (B2, CurveBackend, G1Vector, G2Vector, GTElement, PreparedG2, ScalarVector, SparseTerms, fq_dtype,
                   limbs_below_q)

MCL_BN_SNARK1 = 4  # alt_bn128
MCLBN_COMPILED_TIME_VAR = 44  # MCLBN_FP_UNIT_SIZE + 10 * MCLBN_FR_UNIT_SIZE, both 4 in the wheel
IO_DEC = 10
IO_EC_AFFINE_SERIALIZE = 4096  # x || y, 32-byte little-endian standard-form coordinates

FP_LIMBS = 4
G1_LIMBS = 3 * FP_LIMBS
G2_LIMBS = 6 * FP_LIMBS
GT_LIMBS = 12 * FP_LIMBS
G1_BYTES = 8 * G1_LIMBS
G2_BYTES = 8 * G2_LIMBS

# ctypes releases the GIL, so MSM halves run on separate cores
THREADS = max(1, min(len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1), 8))
THREAD_STACK = 256 << 20
# Fixed-base multiplication: window bits of the table (2^w points per window, 26 windows: 2.6 MB
# for G1), the fewest scalars for which the table pays for itself, and points normalised per batch.
FIXED_BASE_WINDOW = 10
FIXED_BASE_MIN = 1 << 13
NORMALISE_CHUNK = 1 << 16
MSM_CHUNK = 1 << 17  # mulVec's recursion depth grows with n; stay inside the tested range
SPLIT_MIN = 1 << 10  # below this, one thread per class is cheaper than two
VALIDATE_SPLIT_MIN = 256  # points; below this raw vectors are checked on one thread
# MSMs of at most this many points run on the calling thread: starting threads
# (with large stacks) costs about a millisecond, more than the MSM itself, and
# mulVec's stack use at this size is a few KiB, which any thread has.
INLINE_MSM_MAX = 256
# MSMs of at least this many scalars go to the native batch-affine kernels (native/msm.c) when they
# load. Measured against mulVec on the same points (benchmarks/backend_micro.py): on full-width
# scalars G1 costs the same from 2^14 on (10% more at 2^12), G2 about 20% less; on 0/1 scalars G1
# is 4-5 times and G2 about 8 times faster, on 32-bit ones 1.4-2.5 times.
NATIVE_MSM_MIN = 1 << 10

_MONT_ONE_Q = (1 << 256) % Q
_G2_ETH = (
    (
        10857046999023057135944570762232829481370756359578518086990519993285655852781,
        11559732032986387107991004021392285783925812861821192530917403151452391805634,
    ),
    (
        8495653923123431417604973247489272438418190587263600148770280649306958101930,
        4082367875863433681332203403145435568316851327593401208105741076214120093531,
    ),
)
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


# --- single-point conversions -------------------------------------------------------


def _is_coord(v: object) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and 0 <= v < Q


def _le(v: int) -> bytes:
    return v.to_bytes(32, "little")


def _g1_shape_ok(p: object) -> bool:
    return isinstance(p, tuple) and len(p) == 2 and all(_is_coord(v) for v in p)


def _g2_shape_ok(p: object) -> bool:
    try:
        (x0, x1), (y0, y1) = p  # type: ignore[misc]
    except (TypeError, ValueError):
        return False
    return all(_is_coord(v) for v in (x0, x1, y0, y1))


_MONT_Q = 1 << 256  # Fq elements are stored as v * 2^256 mod Q
_MONT_Q_INV = pow(_MONT_Q, -1, Q)
_MONT_ONE_LE = (_MONT_Q % Q).to_bytes(32, "little")


def _g1_try(lib: ctypes.CDLL, p: G1Affine, out: np.ndarray | None = None) -> np.ndarray | None:
    """p as an mclBnG1 (written into `out` if given); None if p is not a valid G1 point.

    Built in Python (Montgomery limbs, z = 1) rather than by mclBnG1_setStr:
    this mcl build checks the order of every G1 point it parses, a full scalar
    multiplication, although G1 = E(Fq) has cofactor 1 so that on the curve
    already means order R.
    """
    out = np.zeros(G1_LIMBS, dtype=np.uint64) if out is None else out
    if p is None:
        out[:] = 0  # z = 0: infinity
        return out
    if not _g1_shape_ok(p):
        return None
    x, y = p
    if (y * y - x * x * x - 3) % Q:
        return None
    raw = ((x * _MONT_Q) % Q).to_bytes(32, "little") + ((y * _MONT_Q) % Q).to_bytes(32, "little") + _MONT_ONE_LE
    out[:] = np.frombuffer(raw, dtype="<u8")
    return out


def _g2_try(lib: ctypes.CDLL, p: G2Affine, out: np.ndarray | None = None) -> np.ndarray | None:
    out = np.zeros(G2_LIMBS, dtype=np.uint64) if out is None else out
    if p is None:
        lib.mclBnG2_clear(out.ctypes.data)
        return out
    if not _g2_shape_ok(p) or p == ((0, 0), (0, 0)):
        return None
    (x0, x1), (y0, y1) = p
    data = _le(x0) + _le(x1) + _le(y0) + _le(y1)
    # with verifyOrderG2 on, setStr also refuses points outside the order-R subgroup
    if lib.mclBnG2_setStr(out.ctypes.data, data, len(data), IO_EC_AFFINE_SERIALIZE) != 0:
        return None
    return out


def _g1_from_canonical(lib: ctypes.CDLL, p: G1Affine, what: str = "G1 point") -> np.ndarray:
    out = _g1_try(lib, p)
    if out is None:
        raise MalformedArtifact(f"{what} is not on the BN254 G1 curve: {p!r}")
    return out


def _g2_from_canonical(lib: ctypes.CDLL, p: G2Affine, what: str = "G2 point") -> np.ndarray:
    out = _g2_try(lib, p)
    if out is None:
        raise MalformedArtifact(f"{what} is not in the BN254 G2 order-R subgroup: {p!r}")
    return out


def _g1_to_canonical(lib: ctypes.CDLL, p: np.ndarray) -> G1Affine:
    if lib.mclBnG1_isZero(p.ctypes.data):
        return None
    buf = ctypes.create_string_buffer(1024)  # mcl may write a terminator past the data
    if lib.mclBnG1_getStr(buf, len(buf), p.ctypes.data, IO_EC_AFFINE_SERIALIZE) != 64:
        raise CircuitError("mclBnG1_getStr failed")
    raw = buf.raw[:64]
    return (int.from_bytes(raw[:32], "little"), int.from_bytes(raw[32:], "little"))


def _g2_to_canonical(lib: ctypes.CDLL, p: np.ndarray) -> G2Affine:
    if lib.mclBnG2_isZero(p.ctypes.data):
        return None
    buf = ctypes.create_string_buffer(1024)
    if lib.mclBnG2_getStr(buf, len(buf), p.ctypes.data, IO_EC_AFFINE_SERIALIZE) != 128:
        raise CircuitError("mclBnG2_getStr failed")
    v = [int.from_bytes(buf.raw[i : i + 32], "little") for i in range(0, 128, 32)]
    return ((v[0], v[1]), (v[2], v[3]))


# --- threads ---------------------------------------------------------------------------


def _run_parallel(tasks: Sequence[Callable[[], None]]) -> None:
    """Run callables on their own threads with large stacks; re-raise the first error.

    Always on fresh threads, even for one task: the caller's thread may have a
    small stack, and ctypes releases the GIL so two tasks use both cores."""
    errors: list[BaseException] = []

    def wrap(fn: Callable[[], None]) -> Callable[[], None]:
        def run() -> None:
            try:
                fn()
            except BaseException as exc:  # noqa: BLE001 - re-raised in the caller
                errors.append(exc)

        return run

    old = threading.stack_size(THREAD_STACK)
    try:
        threads = [threading.Thread(target=wrap(t), daemon=True) for t in tasks]
        for t in threads:
            t.start()
    finally:
        threading.stack_size(old)
    for t in threads:
        t.join()
    if errors:
        raise errors[0]


# --- scalar classification for MSMs ------------------------------------------------------

_RAW_ONE = np.array([1, 0, 0, 0], dtype=np.uint64).view(ntt.FR)  # Montgomery form of 2^-256


def _standard_limbs(scalars: np.ndarray) -> np.ndarray:
    """(n, 4) uint64 limbs of the standard (non-Montgomery) form: mont_mul(x*2^256, 1) = x."""
    return (scalars * _RAW_ONE).view(np.uint64).reshape(-1, FP_LIMBS)


def _msm_jobs(scalars: np.ndarray) -> list[tuple[np.ndarray | None, np.ndarray, bool]]:
    """Partition scalar indices into (indices, scalars, negate) classes by size.

    Fixed-point witnesses are mostly tiny: bits, small magnitudes, and negative
    numbers (R - s with small s). mcl's mulVec cost grows with the widest scalar
    in the call, so each class gets its own call: zeros are dropped, and a
    scalar k with R - k < 2^64 is replaced by R - k on the negated sum. Classes:
    magnitude 1, [2, 2^32), [2^32, 2^64) (each positive or negated), and full
    width. indices None means "all of the first len(scalars) points" (no gather).
    """
    m = scalars.shape[0]
    std = _standard_limbs(scalars)
    high_zero = ~std[:, 1:].any(axis=1)
    low = std[:, 0]
    wide = np.flatnonzero(~high_zero)
    negated = -scalars[wide]
    neg_std = _standard_limbs(negated)
    neg_small = ~neg_std[:, 1:].any(axis=1)
    full = wide[~neg_small]
    if full.size == m:
        return [(None, scalars, False)]
    jobs: list[tuple[np.ndarray | None, np.ndarray, bool]] = []
    small_pos = np.flatnonzero(high_zero & (low != 0))
    small_neg = wide[neg_small]
    for idx, lows, values, negate in (
        (small_pos, low[small_pos], None, False),
        (small_neg, neg_std[neg_small, 0], negated[neg_small], True),
    ):
        for lo, hi in ((1, 2), (2, 1 << 32), (1 << 32, None)):
            mask = lows >= np.uint64(lo)
            if hi is not None:
                mask &= lows < np.uint64(hi)
            if mask.any():
                sel = idx[mask]
                jobs.append((sel, scalars[sel] if values is None else values[mask], negate))
    if full.size:
        jobs.append((full, scalars[full], False))
    if len(jobs) == 1 and jobs[0][0].size == m and not jobs[0][2]:
        return [(None, scalars, False)]  # one class holding every point: no gather
    return jobs


class _Group:
    """The G1 or G2 half of the mcl API, so MSM and conversions are written once."""

    def __init__(self, lib: ctypes.CDLL, tag: str, limbs: int):
        self.lib = lib
        self.limbs = limbs
        self.tag = tag
        self.add = getattr(lib, f"mclBn{tag}_add")
        self.sub = getattr(lib, f"mclBn{tag}_sub")
        self.mul = getattr(lib, f"mclBn{tag}_mul")
        self.mul_vec = getattr(lib, f"mclBn{tag}_mulVec")
        self.normalize = getattr(lib, f"mclBn{tag}_normalize")
        self.is_valid = getattr(lib, f"mclBn{tag}_isValid")
        self.clear = getattr(lib, f"mclBn{tag}_clear")

    def zero(self) -> np.ndarray:
        return np.zeros(self.limbs, dtype=np.uint64)  # z = 0: the point at infinity

    def msm(
        self, points: np.ndarray, scalars: np.ndarray, split_by_size: bool = True, threads: int | None = None
    ) -> np.ndarray:
        """sum k_i P_i as an mcl struct; split_by_size=False (for benchmarks) makes
        one class of all scalars, only halved across the two threads. `threads`
        caps the threads of this call (default: one per core); the prover runs
        MSMs on one thread beside its single-threaded NTTs."""
        n_threads = THREADS if threads is None else max(1, min(int(threads), THREADS))
        if not isinstance(scalars, np.ndarray) or scalars.dtype != ntt.FR or scalars.ndim != 1:
            raise CircuitError("MSM scalars must be a scalar vector of the mcl backend")
        if not isinstance(points, np.ndarray) or points.ndim != 2 or points.shape[1] != self.limbs:
            raise CircuitError(f"MSM points must be a {self.tag} vector of the mcl backend")
        m = scalars.shape[0]
        if m > points.shape[0]:
            raise CircuitError(f"MSM: {m} scalars for {points.shape[0]} points")
        scalars = np.ascontiguousarray(scalars)
        if split_by_size and m >= NATIVE_MSM_MIN:
            kernel = _native_msm(self)
            if kernel is not None:
                total = self._native_msm(kernel, points, scalars, n_threads)
                if total is not None:
                    return total
        per_thread: list[list[tuple[np.ndarray, np.ndarray, bool]]] = [[] for _ in range(n_threads)]
        loads = [0] * n_threads
        jobs = _msm_jobs(scalars) if split_by_size else [(None, scalars, False)]
        for idx, ks, negate in jobs:
            pts = points[:m] if idx is None else points[idx]  # a view, or a gathered contiguous copy
            count = pts.shape[0]
            parts = n_threads if count >= SPLIT_MIN else 1
            bounds = np.linspace(0, count, parts + 1).astype(int)
            for i in range(parts):
                lo, hi = bounds[i], bounds[i + 1]
                for c in range(lo, hi, MSM_CHUNK):
                    e = min(c + MSM_CHUNK, hi)
                    t = int(np.argmin(loads))
                    per_thread[t].append((pts[c:e], np.ascontiguousarray(ks[c:e]), negate))
                    loads[t] += e - c
        partial = [self.zero() for _ in range(n_threads)]

        def worker(t: int) -> Callable[[], None]:
            def run() -> None:
                acc, tmp = partial[t], self.zero()
                for pts, ks, negate in per_thread[t]:
                    self.mul_vec(tmp.ctypes.data, pts.ctypes.data, ks.ctypes.data, pts.shape[0])
                    (self.sub if negate else self.add)(acc.ctypes.data, acc.ctypes.data, tmp.ctypes.data)

            return run

        busy = [t for t in range(n_threads) if per_thread[t]]
        if m <= INLINE_MSM_MAX:
            for t in busy:
                worker(t)()
        elif busy:
            _run_parallel([worker(t) for t in busy])
        total = self.zero()
        for p in partial:
            self.add(total.ctypes.data, total.ctypes.data, p.ctypes.data)
        self.normalize(total.ctypes.data, total.ctypes.data)
        return total

    def _native_msm(self, kernel, points: np.ndarray, scalars: np.ndarray, n_threads: int) -> np.ndarray | None:
        """sum k_i P_i by native/msm.c, the points split in contiguous ranges over `n_threads` threads (one
        range on the calling thread); None if the kernel refuses (a point not normalised, no memory), so
        that the caller uses mulVec."""
        m = scalars.shape[0]
        points = points[:m] if points.flags.c_contiguous else np.ascontiguousarray(points[:m])
        parts = n_threads if m >= SPLIT_MIN * n_threads else 1
        bounds = np.linspace(0, m, parts + 1).astype(int)
        partial = [self.zero() for _ in range(parts)]
        status = [native_msm.OK] * parts

        def part(i: int) -> Callable[[], None]:
            def run() -> None:
                lo, hi = int(bounds[i]), int(bounds[i + 1])
                status[i] = kernel(partial[i].ctypes.data, points[lo:hi].ctypes.data, scalars[lo:hi].ctypes.data,
                                   hi - lo)

            return run

        if parts == 1:
            part(0)()
        else:
            _run_parallel([part(i) for i in range(parts)])
        if any(code != native_msm.OK for code in status):
            return None
        total = self.zero()
        for p in partial:
            self.add(total.ctypes.data, total.ctypes.data, p.ctypes.data)
        self.normalize(total.ctypes.data, total.ctypes.data)
        return total

    def fixed_base_windowed(self, kernel, base: np.ndarray, scalars: np.ndarray) -> np.ndarray:
        """k_i * base for canonical (n, 4) scalar limbs, by a table of d 2^(w j) base (FIXED_BASE_WINDOW
        bits w): about 254 / w additions per scalar instead of a multiplication, on every core, then
        normalised in batches. `kernel` is native.fixed_base's C function; its curve is mcl's add."""
        n = scalars.shape[0]
        w, windows = FIXED_BASE_WINDOW, -(-R.bit_length() // FIXED_BASE_WINDOW)
        table = np.zeros((windows << w, self.limbs), dtype=np.uint64)
        step = np.array(base, dtype=np.uint64)  # 2^(w j) base
        add = self.add
        for j in range(windows):
            row = j << w
            table[row + 1] = step
            for d in range(2, 1 << w):
                add(table[row + d].ctypes.data, table[row + d - 1].ctypes.data, step.ctypes.data)
            add(step.ctypes.data, table[row + (1 << w) - 1].ctypes.data, step.ctypes.data)
        table = _normalised(table, self.tag)  # z = 1: mcl adds mixed
        out = np.zeros((n, self.limbs), dtype=np.uint64)
        scalars = np.ascontiguousarray(scalars, dtype=np.uint64)
        add_address = ctypes.cast(add, ctypes.c_void_p).value
        point_bytes = 8 * self.limbs

        def span(lo: int, hi: int) -> Callable[[], None]:
            def run() -> None:
                kernel(out[lo:hi].ctypes.data, table.ctypes.data, point_bytes, scalars[lo:hi].ctypes.data,
                       hi - lo, w, windows, add_address)
                for c in range(lo, hi, NORMALISE_CHUNK):  # batches bound the temporary copies
                    e = min(c + NORMALISE_CHUNK, hi)
                    out[c:e] = _normalised(out[c:e], self.tag)

            return run

        parts = THREADS if n >= 64 else 1
        bounds = np.linspace(0, n, parts + 1).astype(int)
        _run_parallel([span(int(bounds[i]), int(bounds[i + 1])) for i in range(parts)])
        return out

    def fixed_base(self, base: np.ndarray, scalars: np.ndarray) -> np.ndarray:
        """k_i * base, one mcl multiplication and normalisation per scalar (Montgomery Fr vector)."""
        n = scalars.shape[0]
        out = np.zeros((n, self.limbs), dtype=np.uint64)
        if n == 0:
            return out
        stride_p, stride_k = out.strides[0], scalars.strides[0]
        b = base.ctypes.data

        def span(lo: int, hi: int) -> Callable[[], None]:
            def run() -> None:
                p0, k0 = out.ctypes.data, scalars.ctypes.data
                mul, norm = self.mul, self.normalize
                for i in range(lo, hi):
                    p = p0 + i * stride_p
                    mul(p, b, k0 + i * stride_k)
                    norm(p, p)

            return run

        parts = THREADS if n >= 64 else 1
        bounds = np.linspace(0, n, parts + 1).astype(int)
        _run_parallel([span(int(bounds[i]), int(bounds[i + 1])) for i in range(parts)])
        return out

    def check_raw(self, data: bytes, unit: int, what: str, check_subgroup: bool = True) -> np.ndarray:
        if len(data) % unit:
            raise MalformedArtifact(f"{what} vector: {len(data)} bytes is not a multiple of {unit}")
        arr = np.frombuffer(data, dtype="<u8").reshape(-1, self.limbs).copy()
        coords = arr.reshape(-1, FP_LIMBS)
        bad = np.flatnonzero(~limbs_below_q(coords))
        if bad.size:
            raise MalformedArtifact(
                f"{what} vector: point {int(bad[0]) // (self.limbs // FP_LIMBS)} has a coordinate >= Q"
            )
        # Every point on its curve, in one vectorised pass; for G2 with
        # check_subgroup, mcl's isValid then also checks the order (a scalar
        # multiplication per point, spread over the cores).
        off = _first_off_curve(arr, self.tag)
        if off is not None:
            where = "the curve" if self.tag == "G1" else "the twist"
            raise MalformedArtifact(f"{what} vector: point {off} is not on {where}")
        if self.tag == "G2" and check_subgroup:
            self.validate_all(arr, what)
        return arr

    def mul_each(self, points: np.ndarray, scalars: np.ndarray) -> np.ndarray:
        """[k_i * P_i] as Jacobian structs, not normalised (see `_normalised`);
        a length-1 `scalars` multiplies every point. One mclBn*_mul per point,
        spread over the cores (ctypes releases the GIL)."""
        n = points.shape[0]
        out = np.zeros((n, self.limbs), dtype=np.uint64)
        if n == 0:
            return out
        points = np.ascontiguousarray(points)
        scalars = np.ascontiguousarray(scalars)
        stride_p = out.strides[0]
        stride_k = 0 if scalars.shape[0] == 1 else scalars.strides[0]

        def span(lo: int, hi: int) -> Callable[[], None]:
            def run() -> None:
                o0, p0, k0, mul = out.ctypes.data, points.ctypes.data, scalars.ctypes.data, self.mul
                for i in range(lo, hi):
                    mul(o0 + i * stride_p, p0 + i * stride_p, k0 + i * stride_k)

            return run

        parts = THREADS if n >= 64 else 1
        bounds = np.linspace(0, n, parts + 1).astype(int)
        _run_parallel([span(int(bounds[i]), int(bounds[i + 1])) for i in range(parts)])
        return out

    def sparse_combination(self, points: np.ndarray, terms: SparseTerms, size: int) -> np.ndarray:
        """out[t] = sum k * points[s] over the terms (t, s, k); see CurveBackend.g1_sparse_combination.

        Coefficients 1 and -1 (most of an R1CS) cost a gather and a negation,
        the others one mclBn*_mul each. The sums per target are one
        np.add.reduceat over zk_dtypes' Jacobian points (mcl's structs in
        zk_dtypes' layout, checked when the library loads), then one batched
        normalisation."""
        if not isinstance(points, np.ndarray) or points.ndim != 2 or points.shape[1] != self.limbs:
            raise CircuitError(f"sparse combination: points must be a {self.tag} vector of the mcl backend")
        target = np.asarray(terms.target, dtype=np.int64)
        source = np.asarray(terms.source, dtype=np.int64)
        if target.size and (int(target.min()) < 0 or int(target.max()) >= size or int(source.min()) < 0
                            or int(source.max()) >= points.shape[0]):
            raise CircuitError("sparse combination: a term's target or source is out of range")
        coefficient = [index(k) % R for k in terms.coefficient]
        keep = np.array([k != 0 for k in coefficient], dtype=bool)
        scaled = points[source[keep]]  # a gathered copy
        coefficient = [k for k in coefficient if k != 0]
        target = target[keep]
        minus_one = np.array([k == R - 1 for k in coefficient], dtype=bool)
        general = np.flatnonzero(np.array([k != 1 and k != R - 1 for k in coefficient], dtype=bool))
        if minus_one.any():
            _negate_rows(scaled, minus_one, self.tag)
        if general.size:
            scaled[general] = self.mul_each(scaled[general], ntt.fr_array([coefficient[i] for i in general]))
        out = np.zeros((size, self.limbs), dtype=np.uint64)
        if target.size:
            order = np.argsort(target, kind="stable")
            ordered = np.ascontiguousarray(scaled[order]).view(_jacobian_dtype(self.tag)).reshape(-1)
            targets, starts = np.unique(target[order], return_index=True)
            sums = np.add.reduceat(ordered, starts)
            out[targets] = np.ascontiguousarray(sums).view(np.uint64).reshape(-1, self.limbs)
        return _normalised(out, self.tag)

    def validate_all(self, arr: np.ndarray, what: str) -> None:
        n = arr.shape[0]
        failures: list[int] = []
        stride = arr.strides[0]

        def span(lo: int, hi: int) -> Callable[[], None]:
            def run() -> None:
                p0, valid = arr.ctypes.data, self.is_valid
                for i in range(lo, hi):
                    if not valid(p0 + i * stride):
                        failures.append(i)
                        return

            return run

        parts = THREADS if n >= VALIDATE_SPLIT_MIN else 1
        bounds = np.linspace(0, n, parts + 1).astype(int)
        if n:
            _run_parallel([span(int(bounds[i]), int(bounds[i + 1])) for i in range(parts)])
        if failures:
            raise MalformedArtifact(f"{what} vector: point {min(failures)} is not a valid {self.tag} point")


_native_state: dict[str, object] = {}
_native_lock = threading.Lock()
_FIELD_CODE = ("mclBnFp_mul", "mclBnFp_sqr", "mclBnFp2_mul", "mclBnFp2_sqr")


def _native_msm(group: "_Group"):
    """native/msm.c's MSM for `group` once it has agreed with mulVec on a sample (every scalar class:
    zero, one, minus one, small positive and negative, 64-bit, full width, a repeated point, its
    negation, infinity); None if unavailable or disagreeing (logged once, mulVec is used then).
    A passed check is recorded beside the compiled library, naming both libraries' files (path,
    size, modification time), so later processes with the same two libraries skip it: a few tens
    of milliseconds that every short proof would pay."""
    with _native_lock:
        if group.tag in _native_state:
            return _native_state[group.tag]
        kernels = native_msm.load()
        kernel = None
        if kernels is not None:
            if "field" not in _native_state:  # mcl's generated Fq and Fq2 code, of the same Montgomery form
                kernels.use_field(*(ctypes.cast(getattr(group.lib, name), ctypes.c_void_p).value
                                    for name in _FIELD_CODE))
                _native_state["field"] = True
            kernel = kernels.g1 if group.tag == "G1" else kernels.g2
            record = _agreement_record(kernels.path, group)
            if record is None or not record.is_file():
                if not _native_msm_agrees(group, kernel):
                    native_msm.log.warning("native %s MSM disagrees with mcl's mulVec; using mulVec", group.tag)
                    kernel = None
                elif record is not None:
                    try:
                        record.write_text("agrees with mulVec\n")
                    except OSError:
                        pass  # checked again next time
        _native_state[group.tag] = kernel
        return kernel


def _agreement_record(kernel_path: str, group: "_Group") -> Path | None:
    """Where a passed check of the kernel against this mcl library is recorded (None: nowhere)."""
    try:
        stamps = [f"{path}|{os.stat(path).st_size}|{os.stat(path).st_mtime_ns}" for path in (kernel_path, group.lib._name)]
    except (OSError, TypeError):
        return None
    key = hashlib.sha256("\n".join([*stamps, group.tag]).encode()).hexdigest()[:32]
    return Path(kernel_path).parent / f"msm-agrees-{key}"


def _native_msm_agrees(group: "_Group", kernel) -> bool:
    import random

    rng = random.Random(20240607)
    n = 128 if group.tag == "G1" else 64  # a few milliseconds: this runs in every process that proves
    multiples = [rng.randrange(1, R) for _ in range(n)]
    generator = _g1_from_canonical(group.lib, (1, 2)) if group.tag == "G1" else _g2_from_canonical(group.lib, _G2_ETH)
    points = group.fixed_base(generator, ntt.fr_array(multiples))
    points[1] = points[0]
    points[2] = points[0]
    points[3] = points[0]
    points[4] = points[0]
    _negate_rows(points, np.arange(n) == 4, group.tag)
    points[7] = 0  # the point at infinity
    classes = [0, 1, R - 1, 2, R - 2, 3, (1 << 31) + 5, R - (1 << 40), (1 << 64) - 1, 1 << 100]
    scalars = ntt.fr_array([rng.choice(classes) if i % 3 else rng.randrange(R) for i in range(n)])
    scalars[:5] = ntt.fr_array([1, 1, 2, R - 1, 1])
    out = group.zero()
    if kernel(out.ctypes.data, points.ctypes.data, scalars.ctypes.data, n) != native_msm.OK:
        return False
    expected = group.zero()  # n <= INLINE_MSM_MAX: mulVec needs a few KiB of stack, any thread has them
    group.mul_vec(expected.ctypes.data, points.ctypes.data, scalars.ctypes.data, n)
    group.normalize(expected.ctypes.data, expected.ctypes.data)
    return bool(np.array_equal(out, expected))


def _check_vector(vector: object, limbs: int, tag: str) -> None:
    if not isinstance(vector, np.ndarray) or vector.ndim != 2 or vector.shape[1] != limbs:
        raise CircuitError(f"expected a {tag} vector of the mcl backend")


def _jacobian_dtype(tag: str) -> np.dtype:
    return np.dtype(zk_dtypes.bn254_g1_jacobian_mont if tag == "G1" else zk_dtypes.bn254_g2_jacobian_mont)


def _affine_dtype(tag: str) -> np.dtype:
    return np.dtype(zk_dtypes.bn254_g1_affine_mont if tag == "G1" else zk_dtypes.bn254_g2_affine_mont)


def _normalised(arr: np.ndarray, tag: str) -> np.ndarray:
    """Jacobian structs -> the same points with z = 1 (all zeros for infinity):
    zk_dtypes' batched conversion to affine (one inversion for the whole
    array), then z appended. mcl's structs and zk_dtypes' Jacobian Montgomery
    points share one layout (checked when the library loads)."""
    limbs = arr.shape[1]
    if arr.shape[0] == 0:
        return arr
    affine = np.ascontiguousarray(arr).view(_jacobian_dtype(tag)).reshape(-1).astype(_affine_dtype(tag))
    return np.frombuffer(_structs_from_affine(affine.tobytes(), limbs), dtype=np.uint64).reshape(-1, limbs).copy()


def _negate_rows(arr: np.ndarray, rows: np.ndarray, tag: str) -> None:
    """y -> -y (each Fq component of y) on the rows selected by the boolean mask, in place."""
    third = arr.shape[1] // 3
    picked = np.flatnonzero(rows)
    y = np.ascontiguousarray(arr[picked, third:2 * third])
    arr[picked, third:2 * third] = (-y.view(fq_dtype())).view(np.uint64).reshape(y.shape)


def _first_off_curve(arr: np.ndarray, tag: str) -> int | None:
    """Index of the first Jacobian struct not on its curve, vectorised in
    zk_dtypes' Montgomery Fq: y^2 = x^3 + b z^6 (G1: b = 3; G2: b = b' on the
    twist over Fq2 = Fq[u]/(u^2 + 1)); z = 0 is the point at infinity, as in
    mcl. Coordinates must already be below Q."""
    if arr.shape[0] == 0:
        return None
    f = np.ascontiguousarray(arr).view(fq_dtype()).reshape(arr.shape[0], -1)
    if tag == "G1":
        x, y, z = f[:, 0], f[:, 1], f[:, 2]
        z2 = z * z
        off = y * y != x * x * x + _fq(3) * (z2 * z2 * z2)
        infinity = ~arr[:, 2 * FP_LIMBS:].any(axis=1)
    else:
        def mul(a: tuple, b: tuple) -> tuple:
            return a[0] * b[0] - a[1] * b[1], a[0] * b[1] + a[1] * b[0]

        x, y, z = (f[:, 0], f[:, 1]), (f[:, 2], f[:, 3]), (f[:, 4], f[:, 5])
        z2 = mul(z, z)
        bz6 = mul((_fq(B2[0]), _fq(B2[1])), mul(mul(z2, z2), z2))
        x3 = mul(mul(x, x), x)
        yy = mul(y, y)
        off = (yy[0] != x3[0] + bz6[0]) | (yy[1] != x3[1] + bz6[1])
        infinity = ~arr[:, 4 * FP_LIMBS:].any(axis=1)
    bad = np.flatnonzero(off & ~infinity)
    return int(bad[0]) if bad.size else None


def _fq(v: int) -> np.ndarray:
    return np.frombuffer((v * _MONT_Q % Q).to_bytes(32, "little"), dtype="<u8").view(fq_dtype())


def _structs_from_affine(data: bytes, limbs: int) -> bytes:
    """Affine Montgomery points (x || y) as mcl structs (x || y || z), bytes."""
    xy_limbs = limbs * 2 // 3
    if len(data) % (8 * xy_limbs):
        raise MalformedArtifact(f"affine point vector: {len(data)} bytes is not a multiple of {8 * xy_limbs}")
    xy = np.frombuffer(data, dtype="<u8").reshape(-1, xy_limbs)
    out = np.zeros((xy.shape[0], limbs), dtype=np.uint64)
    out[:, :xy_limbs] = xy
    finite = xy.any(axis=1)
    out[finite, xy_limbs] = np.frombuffer(_MONT_ONE_LE, dtype="<u8")[0]  # z = 1 (its c0 for G2)
    out[finite, xy_limbs + 1 : xy_limbs + FP_LIMBS] = np.frombuffer(_MONT_ONE_LE, dtype="<u8")[1:]
    return out.tobytes()


class MclBackend(CurveBackend):
    """mcl + numpy/zk_dtypes backend; see the module docstring for representations."""

    name = "mcl"

    def __init__(self) -> None:
        self._lib = load_library()
        self._g1 = _Group(self._lib, "G1", G1_LIMBS)
        self._g2 = _Group(self._lib, "G2", G2_LIMBS)

    # --- scalars -----------------------------------------------------------------
    def scalar_vector(self, values: Sequence[int]) -> ScalarVector:
        if isinstance(values, np.ndarray) and values.dtype == ntt.FR:
            return np.ascontiguousarray(values)
        try:
            reduced = [index(v) % R for v in values]  # index(): ints and numpy ints, never floats
        except TypeError as exc:
            raise CircuitError(f"scalars must be integers: {exc}") from None
        return ntt.fr_array(reduced) if reduced else np.zeros(0, dtype=ntt.FR)

    def scalar_vector_from_limbs(self, limbs: np.ndarray) -> ScalarVector:
        """One vectorised multiplication by 2^256: the limbs read as Montgomery words are x * 2^-256."""
        if limbs.shape[0] == 0:
            return np.zeros(0, dtype=ntt.FR)
        return np.ascontiguousarray(limbs, dtype=np.uint64).view(ntt.FR).reshape(-1) * ntt._TO_MONTGOMERY

    def is_scalar_vector(self, value: object) -> bool:
        return isinstance(value, np.ndarray) and value.dtype == ntt.FR and value.ndim == 1

    def scalar_vector_to_ints(self, vector: ScalarVector) -> list[int]:
        std = _standard_limbs(vector).tobytes()
        return [int.from_bytes(std[i : i + 32], "little") for i in range(0, len(std), 32)]

    def row_evaluations(self, relation: ArrayR1CS, witness: ScalarVector, n: int
                        ) -> tuple[ScalarVector, ScalarVector, ScalarVector]:
        return sparse_rows.row_evaluations(relation, self.scalar_vector(witness), n)

    # --- polynomials -----------------------------------------------------------------
    def qap_quotient(self, a: ScalarVector, b: ScalarVector, c: ScalarVector) -> ScalarVector:
        return ntt.qap_quotient(a, b, c)

    def qap_odd_coset(self, a: ScalarVector, b: ScalarVector, c: ScalarVector) -> ScalarVector:
        return ntt.qap_odd_coset(a, b, c)

    # --- single points -------------------------------------------------------------------
    def g1_generator(self) -> G1Affine:
        return (1, 2)

    def g2_generator(self) -> G2Affine:
        return _G2_ETH

    def g1_add(self, p: G1Affine, q: G1Affine) -> G1Affine:
        a, b = _g1_from_canonical(self._lib, p), _g1_from_canonical(self._lib, q)
        self._lib.mclBnG1_add(a.ctypes.data, a.ctypes.data, b.ctypes.data)
        return _g1_to_canonical(self._lib, a)

    def g1_mul(self, p: G1Affine, k: int) -> G1Affine:
        a = _g1_from_canonical(self._lib, p)
        s = self.scalar_vector([k])
        self._lib.mclBnG1_mul(a.ctypes.data, a.ctypes.data, s.ctypes.data)
        return _g1_to_canonical(self._lib, a)

    def g2_add(self, p: G2Affine, q: G2Affine) -> G2Affine:
        a, b = _g2_from_canonical(self._lib, p), _g2_from_canonical(self._lib, q)
        self._lib.mclBnG2_add(a.ctypes.data, a.ctypes.data, b.ctypes.data)
        return _g2_to_canonical(self._lib, a)

    def g2_mul(self, p: G2Affine, k: int) -> G2Affine:
        a = _g2_from_canonical(self._lib, p)
        s = self.scalar_vector([k])
        self._lib.mclBnG2_mul(a.ctypes.data, a.ctypes.data, s.ctypes.data)
        return _g2_to_canonical(self._lib, a)

    def g1_is_valid(self, p: G1Affine) -> bool:
        return _g1_try(self._lib, p) is not None

    def g2_is_valid(self, p: G2Affine) -> bool:
        return _g2_try(self._lib, p) is not None

    def pairing_product_is_one(self, pairs: Sequence[tuple[G1Affine, G2Affine]]) -> bool:
        """One multi-Miller loop (mclBn_millerLoopVec), one final exponentiation."""
        return bool(self._lib.mclBnGT_isOne(self._pairing(pairs).ctypes.data))

    def g2_prepare(self, q: G2Affine) -> PreparedG2 | None:
        """The checked mclBnG2 struct as bytes (immutable: a prepared key cannot be altered).
        mcl's line precomputation (mclBn_precomputeG2) is not used: measured, a
        precomputed loop is no faster than millerLoopVec over the three pairs of a
        verification (which shares the squarings), and it mishandles a G1 point at
        infinity."""
        struct = _g2_try(self._lib, q)
        return None if struct is None else PreparedG2(self.name, struct.tobytes())

    def pairing_product(self, pairs: Sequence[tuple[G1Affine, G2Affine | PreparedG2]]) -> GTElement:
        return GTElement(self.name, self._pairing(pairs).tobytes())

    def pairing_product_equals(self, pairs: Sequence[tuple[G1Affine, G2Affine | PreparedG2]],
                               target: GTElement) -> bool:
        if not isinstance(target, GTElement) or target.backend != self.name:
            raise CircuitError("pairing target must be a GT element of the mcl backend")
        expected = np.frombuffer(target.value, dtype=np.uint64)
        return bool(self._lib.mclBnGT_isEqual(self._pairing(pairs).ctypes.data, expected.ctypes.data))

    def _pairing(self, pairs: Sequence[tuple[G1Affine, G2Affine | PreparedG2]]) -> np.ndarray:
        """prod e(P_i, Q_i) as an mclBnGT: one millerLoopVec, one final exponentiation."""
        # Every input is validated once, including pairs skipped as trivial; the
        # structs made by the check are the Miller loop's inputs. A PreparedG2 was
        # checked when it was made.
        g1s = np.zeros((len(pairs), G1_LIMBS), dtype=np.uint64)
        g2s = np.zeros((len(pairs), G2_LIMBS), dtype=np.uint64)
        live = []
        for i, (p, q) in enumerate(pairs):
            if _g1_try(self._lib, p, g1s[i]) is None:
                raise MalformedArtifact(f"pairing G1 input is not on the curve: {p!r}")
            if isinstance(q, PreparedG2):
                if q.backend != self.name:
                    raise CircuitError(f"a G2 point prepared by the {q.backend} backend given to mcl")
                g2s[i] = np.frombuffer(q.value, dtype=np.uint64)
            elif _g2_try(self._lib, q, g2s[i]) is None:
                raise MalformedArtifact(f"pairing G2 input is not in the order-R subgroup: {q!r}")
            if p is not None and not self._lib.mclBnG2_isZero(g2s[i].ctypes.data):
                live.append(i)
        f = np.zeros(GT_LIMBS, dtype=np.uint64)
        if not live:
            self._lib.mclBnGT_setInt(f.ctypes.data, 1)
            return f
        g1s, g2s = np.ascontiguousarray(g1s[live]), np.ascontiguousarray(g2s[live])
        self._lib.mclBn_millerLoopVec(f.ctypes.data, g1s.ctypes.data, g2s.ctypes.data, len(live))
        self._lib.mclBn_finalExp(f.ctypes.data, f.ctypes.data)
        return f

    # --- bulk points ---------------------------------------------------------------------
    def g1_fixed_base(self, base: G1Affine, scalars: Sequence[int]) -> G1Vector:
        return self._fixed_base(self._g1, _g1_from_canonical(self._lib, base, "fixed base"), scalars)

    def g2_fixed_base(self, base: G2Affine, scalars: Sequence[int]) -> G2Vector:
        return self._fixed_base(self._g2, _g2_from_canonical(self._lib, base, "fixed base"), scalars)

    def _fixed_base(self, group: _Group, base: np.ndarray, scalars: Sequence[int]) -> np.ndarray:
        """Many scalars: a window table (native kernel); few, or no kernel: one multiplication each."""
        vector = self.scalar_vector(scalars)
        kernel = native_fixed_base.load() if vector.shape[0] >= FIXED_BASE_MIN else None
        if kernel is None:
            return group.fixed_base(base, vector)
        return group.fixed_base_windowed(kernel, base, _standard_limbs(vector))

    def g1_msm(self, points: G1Vector, scalars: ScalarVector, threads: int | None = None) -> G1Affine:
        return _g1_to_canonical(self._lib, self._g1.msm(points, scalars, threads=threads))

    def g2_msm(self, points: G2Vector, scalars: ScalarVector, threads: int | None = None) -> G2Affine:
        return _g2_to_canonical(self._lib, self._g2.msm(points, scalars, threads=threads))

    def g1_vector_scale(self, vector: G1Vector, k: int) -> G1Vector:
        """One mclBnG1_mul per point on every core, then one batched normalisation."""
        _check_vector(vector, G1_LIMBS, "G1")
        return _normalised(self._g1.mul_each(vector, self.scalar_vector([k])), "G1")

    def g1_sparse_combination(self, points: G1Vector, terms: SparseTerms, size: int) -> G1Vector:
        return self._g1.sparse_combination(points, terms, size)

    def g2_sparse_combination(self, points: G2Vector, terms: SparseTerms, size: int) -> G2Vector:
        return self._g2.sparse_combination(points, terms, size)

    def g1_vector(self, points: Sequence[G1Affine]) -> G1Vector:
        out = np.zeros((len(points), G1_LIMBS), dtype=np.uint64)
        for i, p in enumerate(points):
            if _g1_try(self._lib, p, out[i]) is None:
                raise MalformedArtifact(f"G1 point {i} is not on the BN254 G1 curve: {p!r}")
        return out

    def g2_vector(self, points: Sequence[G2Affine]) -> G2Vector:
        out = np.zeros((len(points), G2_LIMBS), dtype=np.uint64)
        for i, p in enumerate(points):
            if _g2_try(self._lib, p, out[i]) is None:
                raise MalformedArtifact(f"G2 point {i} is not in the BN254 G2 order-R subgroup: {p!r}")
        return out

    def g1_vector_to_canonical(self, vector: G1Vector) -> list[G1Affine]:
        return [_g1_to_canonical(self._lib, row) for row in vector]

    def g2_vector_to_canonical(self, vector: G2Vector) -> list[G2Affine]:
        return [_g2_to_canonical(self._lib, row) for row in vector]

    def g1_vector_to_bytes(self, vector: G1Vector) -> bytes:
        return np.ascontiguousarray(vector, dtype="<u8").tobytes()

    def g1_vector_from_bytes(self, data: bytes) -> G1Vector:
        return self._g1.check_raw(data, G1_BYTES, "G1")

    def vector_from_own_bytes(self, group: str, data: bytes) -> G1Vector | G2Vector:
        """The structs as written: one copy, no curve checks (see the base class for when that is right)."""
        unit, limbs = (G1_BYTES, G1_LIMBS) if group == "g1" else (G2_BYTES, G2_LIMBS)
        if len(data) % unit:
            raise MalformedArtifact(f"{group.upper()} vector: {len(data)} bytes is not a multiple of {unit}")
        return np.frombuffer(data, dtype="<u8").reshape(-1, limbs).copy()

    def vector_from_own_file(self, group: str, path: str | os.PathLike[str]) -> G1Vector | G2Vector:
        """The file's structs as a read-only memory map: nothing is read or copied until an MSM touches
        the points (mulVec and the native MSM take the mapped rows as they are)."""
        unit, limbs = (G1_BYTES, G1_LIMBS) if group == "g1" else (G2_BYTES, G2_LIMBS)
        size = os.path.getsize(path)
        if size % unit:
            raise MalformedArtifact(f"{group.upper()} vector: {size} bytes is not a multiple of {unit}")
        if size == 0:
            return np.zeros((0, limbs), dtype=np.uint64)
        return np.memmap(path, dtype="<u8", mode="r", shape=(size // unit, limbs))

    def g2_vector_to_bytes(self, vector: G2Vector) -> bytes:
        return np.ascontiguousarray(vector, dtype="<u8").tobytes()

    def g1_vector_from_montgomery(self, data: bytes) -> G1Vector:
        """mcl keeps Fq in the same Montgomery form (x * 2^256 mod Q), so affine
        points become mclBnG1 structs by appending z = 1 (z = 0 for the all-zero
        point at infinity), then the checks of g1_vector_from_bytes."""
        return self._g1.check_raw(_structs_from_affine(data, G1_LIMBS), G1_BYTES, "G1")

    def g2_vector_from_montgomery(self, data: bytes, check_subgroup: bool = True) -> G2Vector:
        return self._g2.check_raw(_structs_from_affine(data, G2_LIMBS), G2_BYTES, "G2", check_subgroup)

    def g1_vector_to_montgomery(self, vector: G1Vector) -> bytes:
        """x || y of each struct after a batched normalisation (any z accepted)."""
        _check_vector(vector, G1_LIMBS, "G1")
        return np.ascontiguousarray(_normalised(vector, "G1")[:, : 2 * FP_LIMBS]).tobytes()

    def g2_vector_to_montgomery(self, vector: G2Vector) -> bytes:
        _check_vector(vector, G2_LIMBS, "G2")
        return np.ascontiguousarray(_normalised(vector, "G2")[:, : 4 * FP_LIMBS]).tobytes()

    def g2_vector_from_bytes(self, data: bytes, check_subgroup: bool = True) -> G2Vector:
        """Loads raw G2 structs. Every point is checked on the twist; with
        check_subgroup (the default) also in the order-R subgroup, which costs
        about two G2 scalar multiplications per point (see the benchmark).
        Pass False only for data whose integrity is otherwise assured (for
        example a proving key this process wrote and checksummed)."""
        return self._g2.check_raw(data, G2_BYTES, "G2", check_subgroup)
