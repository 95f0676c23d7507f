"""A development phase-1 .ptau: our writer against snarkjs's three commands.

Times `write_dev_ptau` (sections 2-7 and the prepared Lagrange sections 12-15)
at each power of --powers, and `snarkjs powersoftau new`, `contribute` and
`prepare phase2` at --snarkjs-power (the same file contents, made by snarkjs).
For the design choice it also times the backend's own fixed-base
multiplication (`g1_fixed_base` / `g2_fixed_base`) on --sample points per
group and scales it to the points a file of each power needs (12 * 2^power in
G1, 3 * 2^power in G2): the writer's windowed tables replace it. Wall
seconds, one run each. Prints a table and writes
benchmarks/results/dev_ptau.json with the load average.

    python benchmarks/dev_ptau.py [--powers 12 14 16] [--snarkjs-power 12] [--backend mcl]
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import secrets
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from circuits.backends import get_backend  # noqa: E402
from circuits.field import R  # noqa: E402
from circuits.snarkjs import find_snarkjs, run_snarkjs  # noqa: E402
from circuits.snarkjs.ptau_dev import write_dev_ptau  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results" / "dev_ptau.json"
SNARKJS_TIMEOUT = 3600


def _backend_fixed_base_per_point(backend, sample: int) -> tuple[float, float]:
    scalars = [secrets.randbelow(R) for _ in range(sample)]
    t = time.perf_counter()
    backend.g1_fixed_base(backend.g1_generator(), scalars)
    g1 = (time.perf_counter() - t) / sample
    t = time.perf_counter()
    backend.g2_fixed_base(backend.g2_generator(), scalars)
    return g1, (time.perf_counter() - t) / sample


def run(powers: list[int], snarkjs_power: int | None, backend_name: str | None, sample: int) -> dict:
    backend = get_backend(backend_name)
    load_before = os.getloadavg()
    rows = []
    g1_point, g2_point = _backend_fixed_base_per_point(backend, sample)
    with tempfile.TemporaryDirectory() as directory:
        for power in powers:
            summary = write_dev_ptau(Path(directory) / f"dev{power}.ptau", power, backend)
            estimate = 12 * (1 << power) * g1_point + 3 * (1 << power) * g2_point
            rows.append({"tool": "write_dev_ptau", "power": power, "seconds": summary.seconds, "bytes": summary.size,
                         "backend_fixed_base_estimate": estimate})
            os.unlink(summary.path)
            print(f"write_dev_ptau power {power}: {summary.seconds:.1f} s", file=sys.stderr)
        if snarkjs_power is not None:
            if find_snarkjs() is None:
                print("snarkjs not found: no snarkjs row", file=sys.stderr)
            else:
                files = [Path(directory) / name for name in ("pot0.ptau", "pot1.ptau", "final.ptau")]
                t = time.perf_counter()
                run_snarkjs(["powersoftau", "new", "bn128", snarkjs_power, files[0]], timeout=SNARKJS_TIMEOUT)
                run_snarkjs(["powersoftau", "contribute", files[0], files[1], "-e=benchmark", "-name=bench"],
                            timeout=SNARKJS_TIMEOUT)
                run_snarkjs(["powersoftau", "prepare", "phase2", files[1], files[2]], timeout=SNARKJS_TIMEOUT)
                rows.append({"tool": "snarkjs new + contribute + prepare phase2", "power": snarkjs_power,
                             "seconds": time.perf_counter() - t, "bytes": files[2].stat().st_size,
                             "backend_fixed_base_estimate": None})
    return {"rows": rows, "backend": backend.name,
            "backend_fixed_base_seconds_per_point": {"G1": g1_point, "G2": g2_point},
            "fixed_base_sample": sample, "load_average_before": load_before, "load_average_after": os.getloadavg(),
            "cpus": os.cpu_count(), "machine": platform.processor()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--powers", type=int, nargs="+", default=[12, 14, 16])
    parser.add_argument("--snarkjs-power", type=int, default=12, help="0 to skip snarkjs")
    parser.add_argument("--backend", choices=("mcl", "reference"))
    parser.add_argument("--sample", type=int, default=4096, help="points per group for the backend fixed-base timing")
    args = parser.parse_args()
    result = run(args.powers, args.snarkjs_power or None, args.backend, args.sample)
    print(f"load average before {result['load_average_before']}, after {result['load_average_after']}, "
          f"{result['cpus']} CPUs, backend {result['backend']}")
    print("| tool | power | seconds | MB | backend fixed-base alone (s, est.) |")
    print("|---|---|---|---|---|")
    for r in result["rows"]:
        estimate = "" if r["backend_fixed_base_estimate"] is None else f"{r['backend_fixed_base_estimate']:.1f}"
        print(f"| {r['tool']} | {r['power']} | {r['seconds']:.1f} | {r['bytes'] / 1e6:.1f} | {estimate} |")
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(result, indent=2) + "\n")
    print(f"wrote {RESULTS}")


if __name__ == "__main__":
    main()
