"""Key audit and phase-2 contribution: our Python tools against snarkjs on the same files.

For each power k of --powers: a random R1CS with 2^k - 3 constraints and 2
public inputs (tests/groth16_circuits.random_system; snarkjs's domain is then
2^k), a development .ptau of power k (ptau_dev.write_dev_ptau, cached in
--ptau-dir), the initial key (`new_zkey`), two contributions and a beacon made
by our tools. Then, timed:

- audit: what `fairproof audit-keys` does per bucket once the statement is
  rebuilt: `new_zkey` from the ptau, parse the initial and final keys,
  `verify_contributions` initial -> final; beside `snarkjs zkey verify
  circuit.r1cs pot.ptau final.zkey` on the same files;
- contribute: our `contribute` (parse, scale C and H, encode) on the initial
  key beside `snarkjs zkey contribute` on the same key;
- also, ours only: `verify_ptau` at the two powers the circuit uses (done once
  per card by the audit) and `decode_zkey` of the final key (the prover's load).

Wall seconds, one run each (they are long); the load average is recorded.
Prints a table and writes benchmarks/results/audit_keys.json.

    python benchmarks/audit_keys.py [--powers 16] [--with-2-18] [--ptau-dir DIR] [--no-snarkjs]

2^18 is only run with --with-2-18 (the ptau alone takes minutes to write).
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

from circuits.backends import get_backend  # noqa: E402
from circuits.snarkjs import find_snarkjs, run_snarkjs  # noqa: E402
from circuits.snarkjs.ptau import read_ptau, verify_ptau  # noqa: E402
from circuits.snarkjs.ptau_dev import write_dev_ptau  # noqa: E402
from circuits.snarkjs.r1cs import write_r1cs  # noqa: E402
from circuits.snarkjs.zkey_file import parse_zkey  # noqa: E402
from circuits.snarkjs.zkey_mpc import beacon, contribute, verify_contributions  # noqa: E402
from circuits.snarkjs.zkey_new import new_zkey  # noqa: E402
from circuits.snarkjs.zkey_read import decode_zkey  # noqa: E402
from groth16_circuits import random_system  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results" / "audit_keys.json"
BEACON_HEX = "0102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f20"
SNARKJS_TIMEOUT = 7200
N_PUBLIC = 2


def timed(fn: Callable[[], object]) -> tuple[float, object]:
    start = time.perf_counter()
    out = fn()
    return time.perf_counter() - start, out


def say(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def ptau_file(directory: Path, power: int, backend) -> Path:
    path = directory / f"dev{power}.ptau"
    if not path.is_file():
        say(f"writing a development ptau of power {power} to {path}")
        write_dev_ptau(path, power, backend, name="audit benchmark")
    return path


def run_power(power: int, ptau_dir: Path, backend, with_snarkjs: bool) -> dict:
    r1cs, _ = random_system((1 << power) - 1 - N_PUBLIC, N_PUBLIC, seed=power)
    ptau_path = ptau_file(ptau_dir, power, backend)
    ptau = read_ptau(ptau_path)
    row: dict = {"power": power, "constraints": r1cs.n_constraints, "wires": r1cs.n_wires}
    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp)
        write_r1cs(d / "circuit.r1cs", r1cs)
        say(f"2^{power}: zkey new")
        row["new_zkey_s"], initial = timed(lambda: new_zkey(r1cs, ptau, backend))
        (d / "k0.zkey").write_bytes(initial)
        say(f"2^{power}: contributions")
        row["contribute_s"], (k1, _) = timed(lambda: contribute(initial, "first", "benchmark entropy one", backend))
        k2, _ = contribute(k1, "second", "benchmark entropy two", backend)
        final, _ = beacon(k2, BEACON_HEX, 10, "closing beacon", backend)
        (d / "final.zkey").write_bytes(final)

        say(f"2^{power}: audit (zkey new + verify_contributions)")
        start = time.perf_counter()
        regenerated = new_zkey(r1cs, ptau, backend)
        row["audit_new_zkey_s"] = time.perf_counter() - start
        t = time.perf_counter()
        initial_key = parse_zkey(regenerated, backend, what="initial key")
        final_key = parse_zkey(final, backend, what="final key")
        row["audit_parse_s"] = time.perf_counter() - t
        t = time.perf_counter()
        report = verify_contributions(initial_key, final_key, backend)
        row["audit_verify_contributions_s"] = time.perf_counter() - t
        row["audit_s"] = time.perf_counter() - start
        assert regenerated == initial and len(report.contributions) == 3
        say(f"2^{power}: ptau check at powers {power}, {power + 1}; final key into a ProvingKey")
        row["verify_ptau_s"], _ = timed(lambda: verify_ptau(ptau, backend, lagrange_powers=[power, power + 1]))
        row["read_zkey_s"], _ = timed(lambda: decode_zkey(final, r1cs, backend))

        if with_snarkjs:
            say(f"2^{power}: snarkjs zkey verify")
            row["snarkjs_verify_s"], done = timed(lambda: run_snarkjs(
                ["zkey", "verify", d / "circuit.r1cs", ptau_path, d / "final.zkey"], timeout=SNARKJS_TIMEOUT))
            assert "ZKey Ok!" in done.stdout + done.stderr, (done.stdout + done.stderr)[-2000:]
            say(f"2^{power}: snarkjs zkey contribute")
            row["snarkjs_contribute_s"], _ = timed(lambda: run_snarkjs(
                ["zkey", "contribute", d / "k0.zkey", d / "s1.zkey", "-name=snarkjs", "-e=benchmark entropy"],
                timeout=SNARKJS_TIMEOUT))
    return row


def table(rows: list[dict]) -> str:
    lines = [f"{'power':>5} {'constraints':>11} | {'audit (ours)':>12} {'of which zkey new':>17} "
             f"{'snarkjs verify':>14} {'ratio':>6} | {'contribute (ours)':>17} {'snarkjs':>8} {'ratio':>6}"]
    for r in rows:
        sv, sc = r.get("snarkjs_verify_s"), r.get("snarkjs_contribute_s")
        audit, ours_c = r["audit_s"], r["contribute_s"]
        sv_text = f"{sv:.1f}s" if sv else "-"
        sv_ratio = f"{sv / audit:.2f}" if sv else "-"
        sc_text = f"{sc:.1f}s" if sc else "-"
        sc_ratio = f"{sc / ours_c:.2f}" if sc else "-"
        lines.append(f"{r['power']:>5} {r['constraints']:>11} | {audit:>11.1f}s {r['audit_new_zkey_s']:>16.1f}s "
                     f"{sv_text:>14} {sv_ratio:>6} | {ours_c:>16.1f}s {sc_text:>8} {sc_ratio:>6}")
    lines.append("ratio = snarkjs seconds / our seconds (above 1: ours is faster)")
    lines.append(f"{'power':>5} | {'zkey new':>9} {'parse both':>10} {'verify chain':>12} | "
                 f"{'verify_ptau (2 powers)':>22} {'decode_zkey':>11}")
    for r in rows:
        lines.append(f"{r['power']:>5} | {r['audit_new_zkey_s']:>8.1f}s {r['audit_parse_s']:>9.1f}s "
                     f"{r['audit_verify_contributions_s']:>11.1f}s | {r['verify_ptau_s']:>21.1f}s {r['read_zkey_s']:>10.1f}s")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--powers", type=int, nargs="+", default=[16])
    parser.add_argument("--with-2-18", action="store_true", help="also run power 18")
    parser.add_argument("--ptau-dir", type=Path, default=Path(tempfile.gettempdir()) / "fairproof-bench-ptau")
    parser.add_argument("--backend", default="mcl")
    parser.add_argument("--no-snarkjs", action="store_true")
    args = parser.parse_args()
    powers = sorted(set(args.powers) | ({18} if args.with_2_18 else set()))
    args.ptau_dir.mkdir(parents=True, exist_ok=True)
    backend = get_backend(args.backend)
    with_snarkjs = not args.no_snarkjs and find_snarkjs() is not None
    if not args.no_snarkjs and not with_snarkjs:
        say("snarkjs not found: no snarkjs columns")
    load_before = os.getloadavg()
    rows = [run_power(p, args.ptau_dir, backend, with_snarkjs) for p in powers]
    result = {"rows": rows, "backend": backend.name, "load_average_before": load_before,
              "load_average_after": os.getloadavg(), "cpus": os.cpu_count(), "machine": platform.processor()}
    print(table(rows))
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(result, indent=2) + "\n")
    print(f"wrote {RESULTS}")


if __name__ == "__main__":
    main()
