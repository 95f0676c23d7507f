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

Modules: this one holds the G1 and G2 groups' bulk arithmetic (MSMs, fixed
base, sparse combinations, raw-vector checks), the native kernels' check
against mulVec, and `MclBackend`; the library's loading and self-check are in
mcl_binding.py (the wheel's file cache in mcl_library.py), the struct layout
and point conversions in mcl_points.py, the MSM scalar classes in
mcl_scalars.py, and the backend's scalar, single-point, pairing and vector
conversions in mcl_operations.py. The names tests and benchmarks use are
re-exported here.
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

from ..errors import CircuitError, MalformedArtifact
from ..field import R
from ..groth16.types import G1Affine, G2Affine
from . import ntt
from .base import CurveBackend, G1Vector, G2Vector, ScalarVector, SparseTerms, limbs_below_q
from .mcl_binding import (IO_DEC, MCL_BN_SNARK1, MCLBN_COMPILED_TIME_VAR, curve_order, field_order,
                          load_library)
from .mcl_operations import MclOperations
from .mcl_points import (_G2_ETH, FP_LIMBS, G1_BYTES, G1_LIMBS, G2_BYTES, G2_LIMBS, GT_LIMBS, IO_EC_AFFINE_SERIALIZE,
                         _check_vector, _first_off_curve, _g1_from_canonical, _g1_to_canonical, _g1_try,
                         _g2_from_canonical, _g2_to_canonical, _g2_try, _jacobian_dtype, _negate_rows, _normalised)
from .mcl_scalars import _msm_jobs, _standard_limbs
from .native import fixed_base as native_fixed_base
from .native import msm as native_msm

__all__ = [
    "FIXED_BASE_MIN", "FIXED_BASE_WINDOW", "FP_LIMBS", "G1_BYTES", "G1_LIMBS", "G2_BYTES", "G2_LIMBS", "GT_LIMBS",
    "INLINE_MSM_MAX", "IO_DEC", "IO_EC_AFFINE_SERIALIZE", "MCLBN_COMPILED_TIME_VAR", "MCL_BN_SNARK1", "MSM_CHUNK",
    "MclBackend", "NATIVE_MSM_MIN", "NORMALISE_CHUNK", "SPLIT_MIN", "THREADS", "THREAD_STACK", "VALIDATE_SPLIT_MIN",
    "curve_order", "field_order", "load_library",
    # module-private helpers that tests and benchmarks reach through this module
    "_g1_from_canonical", "_g1_to_canonical", "_g1_try", "_g2_from_canonical", "_g2_to_canonical", "_g2_try",
    "_native_msm", "_negate_rows", "_normalised", "_standard_limbs",
]

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


class MclBackend(MclOperations, CurveBackend):
    """mcl + numpy/zk_dtypes backend; see the module docstring for representations.

    Its scalar, single-point, pairing and vector conversions are `MclOperations`
    (circuits/backends/mcl_operations.py); the bulk group arithmetic is here."""

    name = "mcl"

    def __init__(self) -> None:
        self._lib = load_library()
        self._g1 = _Group(self._lib, "G1", G1_LIMBS)
        self._g2 = _Group(self._lib, "G2", G2_LIMBS)

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
