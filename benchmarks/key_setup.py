"""Key setup: fixed-base window tables against one multiplication per point, measured side by side.

Two parts, both with the mcl backend in this process:
1. the point vectors alone: k_i * G for n random scalars, G1 and G2, by the
   native window-table kernel and by one mcl multiplication per point (the
   method it replaced);
2. whole key setups (`circuits.groth16.setup`, seeded) of the benchmark
   circuits (a multiplication chain and range checks filling a 2^k domain),
   with the kernel and without it, each checked to produce the same key.

Usage: python benchmarks/key_setup.py [--sizes 14,16,18] [--setup-sizes 14,16]
Prints a table and writes benchmarks/results/key_setup.json.
"""
from __future__ import annotations

import argparse
import json
import random
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from circuits.backends import get_backend  # noqa: E402
from circuits.backends import mcl as mcl_module  # noqa: E402
from circuits.backends.native import fixed_base as native_fixed_base  # noqa: E402
from circuits.field import R  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results"


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def timed(fn):
    t0 = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - t0


def point_vectors(backend, log_size: int) -> list[dict]:
    rng = random.Random(log_size)
    scalars = [rng.randrange(R) for _ in range(1 << log_size)]
    rows = []
    for tag in ("G1", "G2"):
        if tag == "G1":
            table = lambda: backend.g1_fixed_base(backend.g1_generator(), scalars)  # noqa: E731
            group, base = backend._g1, mcl_module._g1_from_canonical(backend._lib, backend.g1_generator(), "G")
        else:
            table = lambda: backend.g2_fixed_base(backend.g2_generator(), scalars)  # noqa: E731
            group, base = backend._g2, mcl_module._g2_from_canonical(backend._lib, backend.g2_generator(), "G")
        fast, t_table = timed(table)
        slow, t_ladder = timed(lambda: group.fixed_base(base, backend.scalar_vector(scalars)))
        if not np.array_equal(fast, slow):
            raise SystemExit(f"{tag} 2^{log_size}: the window table and the multiplications disagree")
        rows.append({"part": "points", "group": tag, "log_size": log_size, "n": len(scalars),
                     "table_s": t_table, "ladder_s": t_ladder, "ratio": t_ladder / t_table})
        log(f"{tag} 2^{log_size}: table {t_table:.2f} s, one multiplication each {t_ladder:.2f} s "
            f"({t_ladder / t_table:.2f}x)")
    return rows


def whole_setups(backend, shape: str, log_size: int) -> dict:
    from circuits_for_bench import build, constraints_for_domain

    from circuits.groth16 import setup

    r1cs, _ = build(shape, constraints_for_domain(log_size))
    (pk_table, vk_table), t_table = timed(lambda: setup(r1cs, backend, seed=7, workers=2))
    load = native_fixed_base.load
    native_fixed_base.load = lambda: None
    try:
        (pk_ladder, vk_ladder), t_ladder = timed(lambda: setup(r1cs, backend, seed=7, workers=2))
    finally:
        native_fixed_base.load = load
    same = vk_table == vk_ladder and all(
        np.array_equal(getattr(pk_table, q), getattr(pk_ladder, q))
        for q in ("a_query", "b_g1_query", "b_g2_query", "l_query", "h_query"))
    if not same:
        raise SystemExit(f"{shape} 2^{log_size}: the two setups made different keys")
    log(f"setup {shape} 2^{log_size} ({r1cs.n_constraints} constraints): table {t_table:.1f} s, "
        f"one multiplication each {t_ladder:.1f} s ({t_ladder / t_table:.2f}x)")
    return {"part": "setup", "shape": shape, "log_size": log_size, "constraints": r1cs.n_constraints,
            "table_s": t_table, "ladder_s": t_ladder, "ratio": t_ladder / t_table}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="14,16,18", help="log2 of the point-vector lengths")
    ap.add_argument("--setup-sizes", default="14,16", help="log2 of the domains of the whole setups")
    ap.add_argument("--out", default=str(RESULTS / "key_setup.json"))
    args = ap.parse_args()
    backend = get_backend("mcl")
    if native_fixed_base.load() is None:
        raise SystemExit("the native fixed-base kernel is not available here: nothing to compare")
    rows = []
    for k in (int(x) for x in args.sizes.split(",") if x):
        rows += point_vectors(backend, k)
    for k in (int(x) for x in args.setup_sizes.split(",") if x):
        for shape in ("mul_chain", "range_check"):
            rows.append(whole_setups(backend, shape, k))
    print(f"{'what':<22} {'n':>9} {'window table s':>15} {'one mul each s':>15} {'ratio':>6}")
    for r in rows:
        what = f"{r['group']} points" if r["part"] == "points" else f"setup {r['shape']}"
        n = r.get("n", r.get("constraints"))
        print(f"{what:<22} {n:>9} {r['table_s']:>15.2f} {r['ladder_s']:>15.2f} {r['ratio']:>5.2f}x")
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"rows": rows}, indent=1))
    log(f"results: {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
