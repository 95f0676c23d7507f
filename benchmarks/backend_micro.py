"""Micro-benchmarks of the curve backends: mcl against the py_ecc reference, and the native
batch-affine MSM kernels (native/msm.c) against mcl's mulVec.

Prints a table and writes benchmarks/results/backend_micro.json. Wall-clock
seconds; the reference backend only runs at small sizes. Ratios are taken
within this one run (the machine may be shared and noisy). The native-against-
mulVec rows time one thread each (CPU seconds of the calling thread, which
other load disturbs less), alternating, median of `--repeat`; they decide
which MSM the mcl backend uses at which size (mcl.NATIVE_MSM_MIN).

    python benchmarks/backend_micro.py [--max-log 18] [--min-log 12] [--native-max-log 20]
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from circuits.backends import get_backend  # noqa: E402
from circuits.field import R  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results" / "backend_micro.json"


def timed(fn, repeat: int = 1) -> float:
    """Best of `repeat` wall-clock runs, seconds."""
    best = float("inf")
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t)
    return best


def per_call(fn, calls: int) -> float:
    t = time.perf_counter()
    for _ in range(calls):
        fn()
    return (time.perf_counter() - t) / calls


def scalar_classes(rng: random.Random, n: int) -> dict[str, list[int]]:
    """Full-width, 0/1 bits, 32-bit, and a fixed-point witness mix
    (80% bits, 15% signed values below 2^40 in magnitude, 5% full width)."""

    def fixed_point() -> int:
        u = rng.random()
        if u < 0.8:
            return rng.randrange(2)
        if u < 0.95:
            return rng.randrange(-(2**40), 2**40) % R
        return rng.randrange(R)

    return {
        "full": [rng.randrange(R) for _ in range(n)],
        "bits": [rng.randrange(2) for _ in range(n)],
        "u32": [rng.randrange(2**32) for _ in range(n)],
        "fixed_point_mix": [fixed_point() for _ in range(n)],
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--min-log", type=int, default=12)
    ap.add_argument("--max-log", type=int, default=18)
    ap.add_argument("--g2-max-log", type=int, default=16)
    ap.add_argument("--ref-msm-log", type=int, default=8)
    ap.add_argument("--ref-qap-log", type=int, default=12)
    ap.add_argument("--native-min-log", type=int, default=12)
    ap.add_argument("--native-max-log", type=int, default=20)
    ap.add_argument("--g2-native-max-log", type=int, default=16)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--only-native", action="store_true", help="only the native-against-mulVec rows")
    ap.add_argument("--out", type=Path, default=RESULTS)
    args = ap.parse_args()

    rng = random.Random(7)
    mcl, ref = get_backend("mcl"), get_backend("reference")
    rows: list[dict] = []

    def record(op: str, size: int, mcl_s: float | None, ref_s: float | None, note: str = "") -> None:
        row = {"op": op, "size": size, "mcl_s": mcl_s, "reference_s": ref_s, "note": note}
        if mcl_s and ref_s:
            row["speedup"] = ref_s / mcl_s
        rows.append(row)
        ratio = f"{ref_s / mcl_s:10.0f}x" if mcl_s and ref_s else " " * 11
        fmt = lambda v: f"{v:12.6f}" if v is not None else " " * 12  # noqa: E731
        print(f"{op:34s} {size:>8} {fmt(mcl_s)} {fmt(ref_s)} {ratio}  {note}", flush=True)

    if args.only_native:
        native_rows(mcl, rng, args, rows)
        return write(args, rows)
    print(f"{'operation':34s} {'size':>8} {'mcl s':>12} {'reference s':>12} {'ratio':>11}", flush=True)
    g1, g2 = mcl.g1_generator(), mcl.g2_generator()
    k = rng.randrange(R)
    p1 = mcl.g1_mul(g1, rng.randrange(R))
    q2 = mcl.g2_mul(g2, rng.randrange(R))
    record("G1 scalar mul (canonical in/out)", 1, per_call(lambda: mcl.g1_mul(p1, k), 300),
           per_call(lambda: ref.g1_mul(p1, k), 5))
    record("G2 scalar mul (canonical in/out)", 1, per_call(lambda: mcl.g2_mul(q2, k), 300),
           per_call(lambda: ref.g2_mul(q2, k), 3))
    a, b = rng.randrange(1, R), rng.randrange(1, R)
    pairs = [(mcl.g1_mul(g1, a), mcl.g2_mul(g2, b)), (mcl.g1_mul(g1, (-a * b) % R), g2)]
    assert mcl.pairing_product_is_one(pairs)
    record("pairing product, 2 pairs", 2, per_call(lambda: mcl.pairing_product_is_one(pairs), 50),
           timed(lambda: ref.pairing_product_is_one(pairs)))
    pairs4 = pairs + [(g1, q2), (mcl.g1_mul(g1, R - 1), q2)]
    record("pairing product, 4 pairs (verify)", 4, per_call(lambda: mcl.pairing_product_is_one(pairs4), 50), None)

    n_max = 1 << args.max_log
    base_scalars = [rng.randrange(R) for _ in range(n_max)]
    t = time.perf_counter()
    g1_points = mcl.g1_fixed_base(g1, base_scalars)
    fb1 = time.perf_counter() - t
    ref_fb = per_call(lambda: ref.g1_fixed_base(g1, base_scalars[:4]), 2) / 4
    record("G1 fixed-base, per point", n_max, fb1 / n_max, ref_fb, f"total {fb1:.1f} s for 2^{args.max_log}")
    n_g2 = 1 << args.g2_max_log
    t = time.perf_counter()
    g2_points = mcl.g2_fixed_base(g2, base_scalars[:n_g2])
    fb2 = time.perf_counter() - t
    record("G2 fixed-base, per point", n_g2, fb2 / n_g2, None, f"total {fb2:.1f} s for 2^{args.g2_max_log}")

    raw1 = mcl.g1_vector_to_bytes(g1_points)
    record("G1 raw load+check (from_bytes)", n_max, timed(lambda: mcl.g1_vector_from_bytes(raw1)), None,
           "limb range + on-curve per point")
    raw2 = mcl.g2_vector_to_bytes(g2_points)
    record("G2 raw load, on-twist only", n_g2,
           timed(lambda: mcl.g2_vector_from_bytes(raw2, check_subgroup=False)), None)
    n_sub = min(n_g2, 1 << 12)
    raw2s = raw2[: n_sub * 192]
    t_sub = timed(lambda: mcl.g2_vector_from_bytes(raw2s))
    record("G2 raw load + subgroup check", n_sub, t_sub, None,
           f"~{t_sub / n_sub * 1e6:.0f} us/point on 2 threads")

    ints = scalar_classes(rng, n_max)["full"]
    record("scalar_vector (ints -> Montgomery)", n_max, timed(lambda: mcl.scalar_vector(ints)), None)
    sv = mcl.scalar_vector(ints)
    record("scalar_vector_to_ints", n_max, timed(lambda: mcl.scalar_vector_to_ints(sv)), None)

    ref_pts_g1 = mcl.g1_vector_to_canonical(g1_points[: 1 << args.ref_msm_log])
    for log in range(min(args.ref_msm_log, args.min_log), args.max_log + 1, 2 if args.min_log % 2 == 0 else 1):
        n = 1 << log
        classes = scalar_classes(rng, n)
        for cls, values in classes.items():
            s = mcl.scalar_vector(values)
            pts = g1_points[:n]
            tm = timed(lambda: mcl.g1_msm(pts, s), 2 if log <= 16 else 1)
            tr = None
            if log <= args.ref_msm_log and cls == "full":
                rs = ref.scalar_vector(values)
                rp = ref.g1_vector(ref_pts_g1[:n])
                tr = timed(lambda: ref.g1_msm(rp, rs))
                assert ref.g1_msm(rp, rs) == mcl.g1_msm(pts, s)
            record(f"G1 MSM {cls}", n, tm, tr)
            if log >= args.min_log and log % 2 == 0:
                tp = timed(lambda: mcl._g1.msm(pts, s, split_by_size=False), 2 if log <= 16 else 1)
                record(f"G1 MSM {cls}, unsplit", n, tp, None, f"size classes gain {tp / tm:.2f}x")
    for log in range(args.min_log, args.g2_max_log + 1, 2):
        n = 1 << log
        for cls in ("full", "fixed_point_mix"):
            s = mcl.scalar_vector(scalar_classes(rng, n)[cls])
            record(f"G2 MSM {cls}", n, timed(lambda: mcl.g2_msm(g2_points[:n], s)), None)

    for log in sorted({args.ref_qap_log - 2, *range(args.min_log, args.max_log + 1, 2)}):
        n = 1 << log
        av = [rng.randrange(R) for _ in range(n)]
        bv = [rng.randrange(R) for _ in range(n)]
        cv = [x * y % R for x, y in zip(av, bv)]
        ma, mb, mc = (mcl.scalar_vector(v) for v in (av, bv, cv))
        tm = timed(lambda: mcl.qap_quotient(ma, mb, mc), 2)
        tr = timed(lambda: ref.qap_quotient(av, bv, cv)) if log <= args.ref_qap_log else None
        if tr is not None:
            assert ref.qap_quotient(av, bv, cv) == mcl.scalar_vector_to_ints(mcl.qap_quotient(ma, mb, mc))
        record("qap_quotient", n, tm, tr)

    native_rows(mcl, rng, args, rows)
    return write(args, rows)


def native_rows(mcl, rng: random.Random, args: argparse.Namespace, rows: list[dict]) -> None:
    """native/msm.c against mulVec on the same points and scalars, one thread each."""
    import statistics

    import numpy as np

    from circuits.backends import mcl as mcl_module

    print(f"{'native MSM against mulVec':34s} {'size':>8} {'native s':>12} {'mulVec s':>12} {'ratio':>11}", flush=True)
    for tag, max_log in (("G1", args.native_max_log), ("G2", args.g2_native_max_log)):
        group = mcl._g1 if tag == "G1" else mcl._g2
        kernel = mcl_module._native_msm(group)
        if kernel is None:
            print(f"{tag}: native kernels unavailable", flush=True)
            continue
        fixed = mcl.g1_fixed_base if tag == "G1" else mcl.g2_fixed_base
        base = mcl.g1_generator() if tag == "G1" else mcl.g2_generator()
        points = fixed(base, [rng.randrange(1, R) for _ in range(1 << max_log)])
        for log in range(args.native_min_log, max_log + 1, 2):
            n = 1 << log
            pts = np.ascontiguousarray(points[:n])
            for cls, values in scalar_classes(rng, n).items():
                s = mcl.scalar_vector(values)
                native_t, mulvec_t = [], []
                out = group.zero()
                for _ in range(args.repeat):
                    t = time.thread_time()
                    kernel(out.ctypes.data, pts.ctypes.data, s.ctypes.data, n)
                    native_t.append(time.thread_time() - t)
                    t = time.thread_time()
                    expected = mulvec(group, pts, s)
                    mulvec_t.append(time.thread_time() - t)
                if not np.array_equal(out, expected):
                    raise AssertionError(f"native {tag} MSM disagrees with mulVec ({cls}, 2^{log})")
                tn, tv = statistics.median(native_t), statistics.median(mulvec_t)
                rows.append({"op": f"{tag} MSM {cls}, native vs mulVec (1 thread, cpu s)", "size": n,
                             "native_s": tn, "mulvec_s": tv, "native_over_mulvec": tn / tv})
                print(f"{tag + ' MSM ' + cls:34s} {n:>8} {tn:12.4f} {tv:12.4f} {tn / tv:10.2f}x", flush=True)


def mulvec(group, points, scalars):
    """mcl's mulVec over the whole vector on this thread, in calls of at most 2^16 points (its stack
    use grows with the length), summed and normalised."""
    total, part = group.zero(), group.zero()
    for lo in range(0, scalars.shape[0], 1 << 16):
        hi = min(scalars.shape[0], lo + (1 << 16))
        group.mul_vec(part.ctypes.data, points[lo:hi].ctypes.data, scalars[lo:hi].ctypes.data, hi - lo)
        group.add(total.ctypes.data, total.ctypes.data, part.ctypes.data)
    group.normalize(total.ctypes.data, total.ctypes.data)
    return total


def write(args: argparse.Namespace, rows: list[dict]) -> int:
    args.out.parent.mkdir(parents=True, exist_ok=True)
    meta = {
        "machine": platform.platform(),
        "cpus": os.cpu_count(),
        "load_average_1m": os.getloadavg()[0],
        "python": platform.python_version(),
        "when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    args.out.write_text(json.dumps({"meta": meta, "rows": rows}, indent=1))
    print(f"wrote {args.out} (load average {meta['load_average_1m']:.1f} on {meta['cpus']} cpus)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
