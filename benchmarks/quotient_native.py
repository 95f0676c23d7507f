"""The QAP quotient stage by stage: numpy NTTs against the native (C) kernels.

Both paths run in this one process on the same range-check-like rows (bits),
so their ratio is taken under the same load. Stages (each timed on its own,
one thread): the pointwise check a*b == c, A and B to the coset (inverse DIF,
* g^i / n, DIT), A*B interpolated (product, inverse DIF, * g^-i / (n z)), C
interpolated (inverse DIF, * 1 / (n z)), finish (subtract, bit-reversal). Then
the whole `qap_quotient` as the prover calls it (native: two threads). Wall
and process-CPU seconds, best of --repeat. Prints a table and writes
benchmarks/results/quotient_native.json with the load average.

    python benchmarks/quotient_native.py [--logs 16 18] [--repeat 3]
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from circuits.backends import ntt  # noqa: E402
from circuits.backends.native import kernels as native_kernels  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results" / "quotient_native.json"
STAGES = ("check", "coset A", "coset B", "interpolate A*B", "interpolate C", "finish")


def _rows(n: int, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    bits = rng.integers(0, 2, n).tolist()
    a = ntt.fr_array(bits)
    return a, a.copy(), a * a


def _numpy_stages(a, b, c, into, leave, c_scale, perm):
    n = a.shape[0]
    state: dict = {}

    def check():
        ab = a * b
        state["ok"] = not np.any(ab.view(np.uint64).reshape(n, 4) != c.view(np.uint64).reshape(n, 4))

    def coset(key, x):
        def run():
            state[key] = ntt._coset_evaluations(x, into)
        return run

    def product():
        h = state["A"]
        h *= state["B"]
        ntt.dif_numpy(h, inverse=True)
        h *= leave

    def interp_c():
        cc = np.array(c, copy=True)
        ntt.dif_numpy(cc, inverse=True)
        cc *= c_scale
        state["C"] = cc

    def finish():
        h = state["A"]
        h -= state["C"]
        state["h"] = h[perm[: n - 1]]

    return [check, coset("A", a), coset("B", b), product, interp_c, finish]


def _native_stages(k, a, b, c, into, leave, c_scale, perm):
    n = a.shape[0]
    inv_tw, fwd_tw = ntt.flat_twiddles(n, True), ntt.flat_twiddles(n, False)
    state: dict = {}

    def check():
        ab = k.mul(np.empty_like(a), a, b)
        state["ok"] = not np.any(ab.view(np.uint64).reshape(n, 4) != c.view(np.uint64).reshape(n, 4))

    def coset(key, x):
        def run():
            w = np.array(x, copy=True)
            k.dif(w, inv_tw)
            k.mul(w, w, into)
            k.dit(w, fwd_tw)
            state[key] = w
        return run

    def product():
        h = state["A"]
        k.mul(h, h, state["B"])
        k.dif(h, inv_tw)
        k.mul(h, h, leave)

    def interp_c():
        cc = np.array(c, copy=True)
        k.dif(cc, inv_tw)
        k.mul_scalar(cc, cc, c_scale)
        state["C"] = cc

    def finish():
        h = state["A"]
        k.sub(h, h, state["C"])
        state["h"] = h[perm[: n - 1]]

    return [check, coset("A", a), coset("B", b), product, interp_c, finish], state


def _timed_sequence(stages, repeat: int) -> list[tuple[float, float]]:
    """Best (wall, cpu) per stage over `repeat` passes of the whole sequence."""
    best = [(float("inf"), float("inf"))] * len(stages)
    for _ in range(repeat):
        for i, stage in enumerate(stages):
            w, c = time.perf_counter(), time.process_time()
            stage()
            w, c = time.perf_counter() - w, time.process_time() - c
            best[i] = (min(best[i][0], w), min(best[i][1], c))
    return best


def _timed_call(fn, repeat: int) -> tuple[float, float]:
    best = (float("inf"), float("inf"))
    for _ in range(repeat):
        w, c = time.perf_counter(), time.process_time()
        fn()
        w, c = time.perf_counter() - w, time.process_time() - c
        best = (min(best[0], w), min(best[1], c))
    return best


def run(logs: list[int], repeat: int) -> dict:
    k = native_kernels.load()
    if k is None:
        raise SystemExit("native kernels unavailable (see the warning above); nothing to compare")
    load_before = os.getloadavg()
    rows = []
    for log_n in logs:
        n = 1 << log_n
        a, b, c = _rows(n, log_n)
        into, leave, c_scale = ntt.quotient_factors(n)
        perm = ntt.bit_reverse_permutation(n)
        ntt.flat_twiddles(n, True), ntt.flat_twiddles(n, False)  # cached, as in a warm prover
        before = _timed_sequence(_numpy_stages(a, b, c, into, leave, c_scale, perm), repeat)
        native_stages, state = _native_stages(k, a, b, c, into, leave, c_scale, perm)
        after = _timed_sequence(native_stages, repeat)
        expected = ntt._quotient_numpy(a, b, c)[perm[: n - 1]]
        if state["h"].tobytes() != expected.tobytes():
            raise SystemExit(f"2^{log_n}: native stages disagree with numpy")
        os.environ[native_kernels.ENV_SWITCH] = "0"
        total_before = _timed_call(lambda: ntt.qap_quotient(a, b, c), repeat)
        os.environ[native_kernels.ENV_SWITCH] = "1"
        total_after = _timed_call(lambda: ntt.qap_quotient(a, b, c), repeat)
        for name, (bw, bc), (aw, ac) in zip(STAGES, before, after):
            rows.append({"log_n": log_n, "stage": name, "numpy_wall": bw, "numpy_cpu": bc,
                         "native_wall": aw, "native_cpu": ac})
        rows.append({"log_n": log_n, "stage": "sum of stages", "numpy_wall": sum(x[0] for x in before),
                     "numpy_cpu": sum(x[1] for x in before), "native_wall": sum(x[0] for x in after),
                     "native_cpu": sum(x[1] for x in after)})
        rows.append({"log_n": log_n, "stage": "qap_quotient (native: 2 threads)", "numpy_wall": total_before[0],
                     "numpy_cpu": total_before[1], "native_wall": total_after[0], "native_cpu": total_after[1]})
    return {"rows": rows, "repeat": repeat, "load_average_before": load_before,
            "load_average_after": os.getloadavg(), "cpus": os.cpu_count(), "machine": platform.processor()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--logs", type=int, nargs="+", default=[16, 18])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    result = run(args.logs, args.repeat)
    print(f"load average before {result['load_average_before']}, after {result['load_average_after']}")
    print("| 2^k | stage | numpy wall | numpy CPU | native wall | native CPU | CPU ratio |")
    print("|---|---|---|---|---|---|---|")
    for r in result["rows"]:
        ratio = r["native_cpu"] / r["numpy_cpu"] if r["numpy_cpu"] else float("nan")
        print(f"| {r['log_n']} | {r['stage']} | {r['numpy_wall']:.4f} | {r['numpy_cpu']:.4f} | "
              f"{r['native_wall']:.4f} | {r['native_cpu']:.4f} | {ratio:.2f} |")
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(result, indent=2))
    print(f"wrote {RESULTS}")


if __name__ == "__main__":
    main()
