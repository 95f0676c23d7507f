"""The prover's H term in both key bases: quotient scalars plus the H MSM.

MONOMIAL_Z keys (our setup's default) take the quotient's n - 1 coefficients
(`qap_quotient`: six NTTs, the division by Z, a bit-reversal gather);
ODD_COSET_LAGRANGE keys (snarkjs's .zkey) take the n values of A*B - C at the
odd 2n-th roots (`qap_odd_coset`: six NTTs, no division). Both run here on the
same rows (a mix of bits, small and full-width values, c = a*b) and the same
random H points, with the native NTT kernels and with numpy, in this one
process. Wall seconds, best of --repeat. Prints a table and writes
benchmarks/results/h_basis.json with the load average.

    python benchmarks/h_basis.py [--logs 16] [--repeat 3]
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from pathlib import Path
from typing import Callable

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from circuits.backends import get_backend, ntt  # noqa: E402
from circuits.backends.native import kernels as native_kernels  # noqa: E402
from circuits.field import R  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results" / "h_basis.json"


def _rows(n: int, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    kind = rng.integers(0, 3, n)
    a = [int(x) for x in rng.integers(0, 2, n)]  # bits, as in range checks
    b = [int.from_bytes(rng.bytes(32), "little") % R if k == 2 else int(rng.integers(0, 1 << 20)) for k in kind]
    fa, fb = ntt.fr_array(a), ntt.fr_array(b)
    return fa, fb, fa * fb


def _best(fn: Callable[[], object], repeat: int) -> tuple[float, object]:
    best, out = float("inf"), None
    for _ in range(repeat):
        t = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t)
    return best, out


def run(logs: list[int], repeat: int) -> dict:
    mcl = get_backend("mcl")
    if native_kernels.load() is None:
        print("native kernels unavailable: the native rows repeat the numpy path", file=sys.stderr)
    load_before = os.getloadavg()
    rows = []
    for log_n in logs:
        n = 1 << log_n
        a, b, c = _rows(n, log_n)
        rng = np.random.default_rng(100 + log_n)
        points = mcl.g1_fixed_base(mcl.g1_generator(), [int.from_bytes(rng.bytes(32), "little") % R for _ in range(n)])
        bases = {"monomial_z": (ntt.qap_quotient, points[: n - 1]), "odd_coset_lagrange": (ntt.qap_odd_coset, points)}
        for ntt_path in ("native", "numpy"):
            os.environ[native_kernels.ENV_SWITCH] = "1" if ntt_path == "native" else "0"
            for basis, (scalars_of, h_points) in bases.items():
                scalars_of(a, b, c)  # warm the cached twiddles and factors, as in a running prover
                t_scalars, h = _best(lambda: scalars_of(a, b, c), repeat)
                t_msm, _ = _best(lambda: mcl.g1_msm(h_points, h), repeat)
                t_both, _ = _best(lambda: mcl.g1_msm(h_points, scalars_of(a, b, c)), repeat)
                rows.append({"log_n": log_n, "ntt": ntt_path, "basis": basis, "scalars": t_scalars,
                             "h_msm": t_msm, "scalars_and_msm": t_both, "h_points": int(h_points.shape[0])})
        os.environ[native_kernels.ENV_SWITCH] = "1"
    return {"rows": rows, "repeat": repeat, "load_average_before": load_before,
            "load_average_after": os.getloadavg(), "cpus": os.cpu_count(), "machine": platform.processor()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--logs", type=int, nargs="+", default=[16])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    result = run(args.logs, args.repeat)
    print(f"load average before {result['load_average_before']}, after {result['load_average_after']}, "
          f"{result['cpus']} CPUs")
    print("| 2^k | NTTs | H basis | H points | scalars (s) | H MSM (s) | scalars + MSM (s) |")
    print("|---|---|---|---|---|---|---|")
    for r in result["rows"]:
        print(f"| {r['log_n']} | {r['ntt']} | {r['basis']} | {r['h_points']} | {r['scalars']:.4f} | "
              f"{r['h_msm']:.4f} | {r['scalars_and_msm']:.4f} |")
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(result, indent=2))
    print(f"wrote {RESULTS}")


if __name__ == "__main__":
    main()
