"""Groth16 proving: FairProof (mcl backend) against snarkjs and arkworks (groth16py).

All provers work on the same .r1cs + .wtns per (shape, size); each prover runs
in its own child process so its peak memory (ru_maxrss of that process) is
its own. Shapes (benchmarks/circuits_for_bench.py): `mul_chain` (full-width
witness values) and `range_check` (bit decompositions: mostly 0/1 values).
Sizes are log2 of the evaluation domain; the circuits have 2^k - 2
constraints and one public output, so every prover uses a 2^k domain.

snarkjs and groth16py prove with a .zkey written by circuits.snarkjs.zkey from
seeded, KNOWN toxic waste: a benchmark-only key (anyone can forge proofs
with it), used because snarkjs's own powers-of-tau preparation takes hours at
2^18. Our key comes from circuits.groth16.setup (also seeded here).

Timings are wall-clock seconds: "prove" is the prover call alone for ours and
groth16py (key already loaded); for snarkjs it is the whole
`snarkjs groth16 prove` command (node start and key reading included, as a
user would run it), and so is "ours cmd", the whole `fairproof groth16 prove`
command (Python start, .r1cs, .wtns and key read included), proving the same
files. Ratios ours/peer < 1 mean ours is faster. Measure peers
side by side in one run on a quiet machine; the load average at the start of
each measurement is recorded.

  python benchmarks/groth16_vs_peers.py [--sizes 12 14 16 18] [--shapes mul_chain range_check]
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(HERE))

RESULTS = HERE / "results" / "groth16_vs_peers.json"
TOXIC_SEED = "benchmark-only-known-toxic-waste"
# The command a user runs, in this interpreter's environment. Its bytecode is cached as an
# installed package's is (a PYTHONDONTWRITEBYTECODE inherited from the shell would have the
# interpreter compile every module on every run, which no installed command does).
FAIRPROOF = [sys.executable, "-m", "prover_service.cli"]
COMMAND_ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def dir_size(path: Path) -> int:
    if path.is_file():
        return path.stat().st_size
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


# --- child processes ------------------------------------------------------------------

def run_child(argv: list[str], timeout: float, env: dict[str, str] | None = None) -> tuple[float, int, str, str, int]:
    """Run a process; returns (wall seconds, exit code, stdout, stderr, peak RSS bytes of that process)."""
    start = time.perf_counter()
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        proc = subprocess.Popen(argv, stdout=out, stderr=err, env=env)
        deadline = start + timeout
        while True:
            pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                break
            if time.perf_counter() > deadline:
                proc.kill()
                pid, status, usage = os.wait4(proc.pid, 0)
                raise TimeoutError(f"{' '.join(argv[:3])} ... timed out after {timeout} s")
            time.sleep(0.02)
        wall = time.perf_counter() - start
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        return wall, proc.returncode, out.read().decode(), err.read().decode(), usage.ru_maxrss * 1024


def worker(args: list[str], timeout: float) -> tuple[dict, int]:
    wall, code, out, err, rss = run_child([sys.executable, __file__, "--worker", *args], timeout)
    if code != 0:
        raise RuntimeError(f"worker {args[0]} failed (exit {code}): {err[-3000:]}")
    return json.loads(out.strip().splitlines()[-1]), rss


def _emit(doc: dict) -> None:
    print(json.dumps(doc), flush=True)


def worker_main(argv: list[str]) -> None:
    kind = argv[0]
    if kind == "ours-setup":
        r1cs_path, keydir, backend_name = argv[1:4]
        from circuits.backends import get_backend
        from circuits.groth16 import save_proving_key, setup
        from circuits.snarkjs import read_r1cs, write_verifying_key
        from prover_service.commands.groth16 import load_relation_arrays

        backend = get_backend(backend_name)
        r1cs = read_r1cs(r1cs_path)
        t0 = time.perf_counter()
        pk, vk = setup(r1cs, backend, seed=TOXIC_SEED)
        t_setup = time.perf_counter() - t0
        save_proving_key(pk, Path(keydir) / "proving_key", backend)
        write_verifying_key(Path(keydir) / "verification_key.json", vk)
        shutil.copyfile(r1cs_path, Path(keydir) / "circuit.r1cs")  # a `fairproof groth16` key directory,
        load_relation_arrays(Path(keydir))  # as `fairproof groth16 setup` leaves it
        _emit({"setup_s": t_setup})
    elif kind == "ours-prove":
        r1cs_path, wtns_path, keydir, backend_name, outdir = argv[1:6]
        from circuits.backends import get_backend
        from circuits.groth16 import load_proving_key, prove, verify
        from circuits.snarkjs import read_r1cs, read_verifying_key, read_wtns, write_proof, write_public

        backend = get_backend(backend_name)
        r1cs, witness = read_r1cs(r1cs_path), read_wtns(wtns_path)
        t0 = time.perf_counter()
        pk = load_proving_key(Path(keydir) / "proving_key", backend)
        t_load = time.perf_counter() - t0
        t0 = time.perf_counter()
        proof = prove(pk, r1cs, witness, backend)
        t_prove = time.perf_counter() - t0
        vk = read_verifying_key(Path(keydir) / "verification_key.json")
        public = r1cs.public_inputs(witness)
        t0 = time.perf_counter()
        ok = verify(vk, public, proof, backend)
        t_verify = time.perf_counter() - t0
        write_proof(Path(outdir) / "proof.json", proof)
        write_public(Path(outdir) / "public.json", public)
        _emit({"load_s": t_load, "prove_s": t_prove, "verify_s": t_verify, "verified": ok})
    elif kind == "zkey":
        r1cs_path, zkey_path, backend_name = argv[1:4]
        from circuits.backends import get_backend
        from circuits.snarkjs import read_r1cs, sample_toxic_waste, write_zkey

        r1cs = read_r1cs(r1cs_path)
        t0 = time.perf_counter()
        write_zkey(zkey_path, r1cs, sample_toxic_waste(TOXIC_SEED), get_backend(backend_name))
        _emit({"zkey_s": time.perf_counter() - t0})
    elif kind == "groth16py":
        zkey_path, wtns_path, vk_path, public_path = argv[1:5]
        import groth16py

        t0 = time.perf_counter()
        pk, _ = groth16py.import_zkey(zkey_path)
        t_import = time.perf_counter() - t0
        t0 = time.perf_counter()
        proof = groth16py.prove_wtns(pk, wtns_path)
        t_prove = time.perf_counter() - t0
        verifier = groth16py.Verifier(groth16py.VerifyingKey.from_snarkjs_file(vk_path))
        public = [int(x) for x in json.loads(Path(public_path).read_text())]
        t0 = time.perf_counter()
        ok = verifier.verify(proof, public)
        t_verify = time.perf_counter() - t0
        _emit({"import_s": t_import, "prove_s": t_prove, "verify_s": t_verify, "verified": ok})
    else:
        raise SystemExit(f"unknown worker {kind}")


# --- one measurement ---------------------------------------------------------------------

def measure(shape: str, log_size: int, workdir: Path, args: argparse.Namespace) -> dict:
    from circuits_for_bench import build, constraints_for_domain
    from circuits.groth16.qap import domain_size
    from circuits.snarkjs import find_snarkjs, write_r1cs, write_wtns

    row: dict = {"shape": shape, "log_size": log_size, "load_avg_start": os.getloadavg()[0]}
    n_constraints = constraints_for_domain(log_size)
    log(f"{shape} 2^{log_size}: building {n_constraints} constraints")
    r1cs, witness = build(shape, n_constraints)
    row.update(n_constraints=r1cs.n_constraints, n_wires=r1cs.n_wires, domain=domain_size(r1cs))
    small = sum(1 for v in witness if v < (1 << 32))
    row["witness_small_fraction"] = round(small / len(witness), 4)
    d = workdir / f"{shape}_{log_size}"
    d.mkdir(parents=True, exist_ok=True)
    r1cs_path, wtns_path = d / "circuit.r1cs", d / "witness.wtns"
    write_r1cs(r1cs_path, r1cs)
    write_wtns(wtns_path, witness)
    del r1cs, witness
    timeout = args.timeout

    log(f"{shape} 2^{log_size}: ours setup ({args.backend})")
    keydir = d / "ours"
    keydir.mkdir(exist_ok=True)
    res, rss = worker(["ours-setup", str(r1cs_path), str(keydir), args.backend], timeout)
    row["ours_setup_s"] = res["setup_s"]
    row["ours_setup_peak_rss_mb"] = rss / 2**20
    row["ours_pk_bytes"] = dir_size(keydir / "proving_key")
    log(f"{shape} 2^{log_size}: ours prove")
    ours_out = d / "ours_out"
    ours_out.mkdir(exist_ok=True)
    best = None
    for _ in range(args.repeat):
        res, rss = worker(["ours-prove", str(r1cs_path), str(wtns_path), str(keydir), args.backend, str(ours_out)], timeout)
        if not res["verified"]:
            raise RuntimeError(f"our proof did not verify at {shape} 2^{log_size}")
        if best is None or res["prove_s"] < best[0]["prove_s"]:
            best = (res, rss)
    res, rss = best
    row.update(ours_prove_s=res["prove_s"], ours_verify_s=res["verify_s"], ours_key_load_s=res["load_s"], ours_prove_peak_rss_mb=rss / 2**20)
    log(f"{shape} 2^{log_size}: ours prove {res['prove_s']:.2f} s, verify {res['verify_s'] * 1000:.1f} ms")

    log(f"{shape} 2^{log_size}: ours whole command (`fairproof groth16 prove`)")
    command_out = d / "ours_command_out"
    best = None
    for _ in range(args.repeat):
        wall, code, out, err, rss = run_child([*FAIRPROOF, "groth16", "prove", str(keydir), str(wtns_path), str(command_out)],
                                              timeout, env=COMMAND_ENV)
        if code != 0:
            raise RuntimeError(f"`fairproof groth16 prove` failed: {err[-2000:]}")
        if best is None or wall < best[0]:
            best = (wall, rss)
    wall, code, out, err, _ = run_child([*FAIRPROOF, "groth16", "verify", str(keydir / "verification_key.json"),
                                         str(command_out / "proof.json"), str(command_out / "public.json")], timeout)
    if code != 0:
        raise RuntimeError(f"the whole command's proof did not verify: {out}{err}")
    row["ours_command_s"], row["ours_command_peak_rss_mb"] = best[0], best[1] / 2**20
    log(f"{shape} 2^{log_size}: ours whole command {best[0]:.2f} s")

    snarkjs = None if args.skip_snarkjs else find_snarkjs()
    want_groth16py = not args.skip_groth16py and _groth16py_available()
    if snarkjs or want_groth16py:
        log(f"{shape} 2^{log_size}: writing the benchmark-only zkey (known toxic waste)")
        zkey = d / "circuit.zkey"
        res, rss = worker(["zkey", str(r1cs_path), str(zkey), args.backend], timeout)
        row["zkey_write_s"] = res["zkey_s"]
        row["zkey_bytes"] = zkey.stat().st_size
        vk_json = d / "snarkjs_vk.json"
        wall, code, out, err, _ = run_child([snarkjs or _snarkjs_or_fail(), "zkey", "export", "verificationkey", str(zkey), str(vk_json)], timeout) if snarkjs else (0, 0, "", "", 0)
        if snarkjs and code != 0:
            raise RuntimeError(f"snarkjs zkey export failed: {out}{err}")
    if snarkjs:
        log(f"{shape} 2^{log_size}: snarkjs prove")
        proof, public = d / "snarkjs_proof.json", d / "snarkjs_public.json"
        best = None
        for _ in range(args.repeat):
            wall, code, out, err, rss = run_child([snarkjs, "groth16", "prove", str(zkey), str(wtns_path), str(proof), str(public)], timeout)
            if code != 0:
                raise RuntimeError(f"snarkjs prove failed: {out[-2000:]}{err[-2000:]}")
            if best is None or wall < best[0]:
                best = (wall, rss)
        row["snarkjs_prove_s"], row["snarkjs_prove_peak_rss_mb"] = best[0], best[1] / 2**20
        wall, code, out, err, _ = run_child([snarkjs, "groth16", "verify", str(vk_json), str(public), str(proof)], timeout)
        if code != 0 or "OK" not in out:
            raise RuntimeError(f"snarkjs could not verify its own proof: {out[-2000:]}")
        row["snarkjs_verify_s"] = wall
        row["ours_over_snarkjs"] = row["ours_prove_s"] / row["snarkjs_prove_s"]
        row["snarkjs_over_ours_command"] = row["snarkjs_prove_s"] / row["ours_command_s"]
        log(f"{shape} 2^{log_size}: snarkjs prove {row['snarkjs_prove_s']:.2f} s")
    if want_groth16py:
        if not snarkjs:
            raise RuntimeError("groth16py here verifies against snarkjs's exported verification key: snarkjs is needed")
        log(f"{shape} 2^{log_size}: groth16py (arkworks) prove")
        best = None
        for _ in range(args.repeat):
            res, rss = worker(["groth16py", str(zkey), str(wtns_path), str(vk_json), str(d / "snarkjs_public.json")], timeout)
            if not res["verified"]:
                raise RuntimeError("groth16py's proof did not verify")
            if best is None or res["prove_s"] < best[0]["prove_s"]:
                best = (res, rss)
        res, rss = best
        row.update(groth16py_prove_s=res["prove_s"], groth16py_verify_s=res["verify_s"], groth16py_import_s=res["import_s"], groth16py_peak_rss_mb=rss / 2**20)
        row["ours_over_groth16py"] = row["ours_prove_s"] / row["groth16py_prove_s"]
        log(f"{shape} 2^{log_size}: groth16py prove {res['prove_s']:.2f} s")
    if not args.keep:
        for p in (keydir / "proving_key", d / "circuit.zkey"):
            if p.exists():
                subprocess.run(["rm", "-rf", str(p)], check=False)
    return row


def _snarkjs_or_fail() -> str:
    raise RuntimeError("snarkjs not found")


def _groth16py_available() -> bool:
    try:
        import groth16py  # noqa: F401
    except ImportError:
        return False
    return True


# --- report -----------------------------------------------------------------------------------

def fmt(value, spec: str) -> str:
    return "-" if value is None else format(value, spec)


def print_table(rows: list[dict]) -> None:
    header = (
        f"{'shape':<12} {'log2':>4} {'ours prove':>10} {'ours cmd':>8} {'snarkjs':>8} {'snarkjs/cmd':>11} {'arkworks':>8} {'ours/snarkjs':>12} {'ours/ark':>8} "
        f"{'setup':>7} {'pk MB':>7} {'zkey MB':>7} {'verify ms':>9} {'peak MB':>8} {'snarkjs MB':>10} {'ark MB':>7}"
    )
    print("ours cmd = whole `fairproof groth16 prove` command, as snarkjs is timed; snarkjs/cmd > 1: ours faster")
    print("prove/setup in seconds; verify in ms; peak = peak RSS of the proving process in MiB; pk/zkey sizes in MiB")
    print(header)
    print("-" * len(header))
    for r in rows:
        print(
            f"{r['shape']:<12} {r['log_size']:>4} {fmt(r.get('ours_prove_s'), '10.2f')} {fmt(r.get('ours_command_s'), '8.2f')} "
            f"{fmt(r.get('snarkjs_prove_s'), '8.2f')} {fmt(r.get('snarkjs_over_ours_command'), '11.2f')} "
            f"{fmt(r.get('groth16py_prove_s'), '8.2f')} {fmt(r.get('ours_over_snarkjs'), '12.2f')} {fmt(r.get('ours_over_groth16py'), '8.2f')} "
            f"{fmt(r.get('ours_setup_s'), '7.1f')} {fmt(r.get('ours_pk_bytes', 0) / 2**20, '7.1f')} {fmt(r.get('zkey_bytes', 0) / 2**20, '7.1f')} "
            f"{fmt(r.get('ours_verify_s', 0) * 1000, '9.1f')} "
            f"{fmt(r.get('ours_prove_peak_rss_mb'), '8.0f')} {fmt(r.get('snarkjs_prove_peak_rss_mb'), '10.0f')} {fmt(r.get('groth16py_peak_rss_mb'), '7.0f')}"
        )
    by = {(r["shape"], r["log_size"]): r for r in rows}
    for (shape, k), r in sorted(by.items()):
        if shape == "range_check" and ("mul_chain", k) in by:
            ratio = r["ours_prove_s"] / by[("mul_chain", k)]["ours_prove_s"]
            print(f"range_check / mul_chain prove time at 2^{k} (ours): {ratio:.2f}")


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] == "--worker":
        worker_main(argv[1:])
        return 0
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[12, 14, 16, 18], help="log2 domain sizes")
    parser.add_argument("--shapes", nargs="+", default=["mul_chain", "range_check"], choices=["mul_chain", "range_check"])
    parser.add_argument("--backend", default="mcl", choices=["mcl", "reference"])
    parser.add_argument("--repeat", type=int, default=1, help="prove runs per prover (best is kept)")
    parser.add_argument("--skip-snarkjs", action="store_true")
    parser.add_argument("--skip-groth16py", action="store_true")
    parser.add_argument("--timeout", type=float, default=1800, help="seconds per child process")
    parser.add_argument("--workdir", type=Path, help="where circuits and keys go (default: a temporary directory)")
    parser.add_argument("--keep", action="store_true", help="keep proving keys and zkeys")
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args(argv)

    rows: list[dict] = []
    meta = {
        "machine": platform.platform(),
        "cpus": os.cpu_count(),
        "python": platform.python_version(),
        "backend": args.backend,
        "zkey_note": "snarkjs/groth16py keys written from known, seeded toxic waste (benchmark only, forgeable)",
        "snarkjs_timing": "whole `snarkjs groth16 prove` command (node start + key read included)",
        "ours_timing": "circuits.groth16.prove call, key preloaded; 2 worker threads",
        "ours_command_timing": "whole `fairproof groth16 prove` command (Python start, .r1cs, .wtns and key read included)",
        "groth16py_timing": "groth16py.prove_wtns call, key preloaded",
    }
    try:
        import groth16py

        meta["groth16py_version"] = getattr(groth16py, "__version__", "?")
    except ImportError:
        meta["groth16py_version"] = None
    with tempfile.TemporaryDirectory(prefix="fairproof-bench-") as tmp:
        workdir = args.workdir or Path(tmp)
        for log_size in args.sizes:
            for shape in args.shapes:
                try:
                    rows.append(measure(shape, log_size, workdir, args))
                except (RuntimeError, TimeoutError) as exc:
                    log(f"{shape} 2^{log_size}: FAILED: {exc}")
                    rows.append({"shape": shape, "log_size": log_size, "error": str(exc)})
                args.out.parent.mkdir(parents=True, exist_ok=True)
                args.out.write_text(json.dumps({"meta": meta, "rows": rows}, indent=1) + "\n")
    print_table([r for r in rows if "error" not in r])
    failed = [r for r in rows if "error" in r]
    for r in failed:
        print(f"FAILED {r['shape']} 2^{r['log_size']}: {r['error'][:300]}")
    print(f"results written to {args.out}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
