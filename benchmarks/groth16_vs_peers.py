"""Groth16 proving: FairProof (mcl backend) against rapidsnark, snarkjs and arkworks (groth16py).

All provers work on the same .r1cs + .wtns per (shape, size); each prover runs
in its own child process so its peak memory (ru_maxrss of that process) is
its own. Shapes (benchmarks/circuits_for_bench.py): `mul_chain` (full-width
witness values) and `range_check` (bit decompositions: mostly 0/1 values).
Sizes are log2 of the evaluation domain; the circuits have 2^k - 2
constraints and one public output, so every prover uses a 2^k domain.

rapidsnark (iden3's C++ prover with field assembly; `--rapidsnark` builds its
`prover` from source, see rapidsnark_peer.py), snarkjs and groth16py prove
with a .zkey written by circuits.snarkjs.zkey from seeded, KNOWN toxic
waste: a benchmark-only key (anyone can forge proofs with it), used because
snarkjs's own powers-of-tau preparation takes hours at 2^18. Our key comes
from circuits.groth16.setup (also seeded here), as `fairproof groth16 setup`
leaves it.

Whole commands, as a user runs them, are the headline: `fairproof groth16
prove` (Python start, relation, witness and key included), rapidsnark's
`prover` and `snarkjs groth16 prove`, run in alternating order `--repeat`
times (each repetition starts with the next prover), every proof verified
(by snarkjs when it is installed, else by `fairproof groth16 verify`); the
medians of wall time and of CPU time (user + system) are reported, and the
peak RSS. "prove" is the prover call alone with the key loaded, for ours and
groth16py (best of `--repeat`). Ratios ours/peer < 1 mean ours is faster.
The machine may be shared: the load average at the start of each row is
recorded, and CPU-time ratios are less disturbed by other load than wall
times.

  python benchmarks/groth16_vs_peers.py --sizes 16 18 --rapidsnark [--rapidsnark-source DIR] [--repeat 3]
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
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


def run_child_usage(argv: list[str], timeout: float, env: dict[str, str] | None = None
                    ) -> tuple[float, int, str, str, int, float]:
    """run_child, plus the child's CPU seconds (user + system): a measure the other load of a shared
    machine disturbs less than wall time."""
    start = time.perf_counter()
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        proc = subprocess.Popen(argv, stdout=out, stderr=err, env=env)
        while True:
            pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                break
            if time.perf_counter() > start + timeout:
                proc.kill()
                os.wait4(proc.pid, 0)
                raise TimeoutError(f"{' '.join(argv[:3])} ... timed out after {timeout} s")
            time.sleep(0.005)
        wall = time.perf_counter() - start
        out.seek(0)
        err.seek(0)
        return (wall, os.waitstatus_to_exitcode(status), out.read().decode(), err.read().decode(),
                usage.ru_maxrss * 1024, usage.ru_utime + usage.ru_stime)


def verify_proof_files(vk: Path, proof: Path, public: Path, snarkjs: str | None, timeout: float, what: str) -> None:
    """snarkjs's verdict on a proof (our own `fairproof groth16 verify` where snarkjs is missing)."""
    if snarkjs:
        wall, code, out, err, _ = run_child([snarkjs, "groth16", "verify", str(vk), str(public), str(proof)], timeout)
        ok = code == 0 and "OK" in out
    else:
        wall, code, out, err, _ = run_child([*FAIRPROOF, "groth16", "verify", str(vk), str(proof), str(public)], timeout)
        ok = code == 0
    if not ok:
        raise RuntimeError(f"{what} did not verify: {out[-1000:]}{err[-1000:]}")


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
        from circuits.snarkjs import read_verifying_key, read_wtns, write_proof, write_public
        from circuits.snarkjs.wtns import read_wtns_limbs
        from prover_service.commands.groth16 import load_relation_arrays

        backend = get_backend(backend_name)
        # As the command proves: the relation's arrays and the key mapped, the witness as a scalar vector.
        r1cs, witness = load_relation_arrays(Path(keydir)), read_wtns(wtns_path)
        witness_vector = backend.scalar_vector_from_limbs(read_wtns_limbs(wtns_path))
        t0 = time.perf_counter()
        pk = load_proving_key(Path(keydir) / "proving_key", backend, check_points=False)
        t_load = time.perf_counter() - t0
        t0 = time.perf_counter()
        proof = prove(pk, r1cs, witness_vector, backend)
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
        r1cs_path, zkey_path, backend_name, vk_path = argv[1:5]
        from circuits.backends import get_backend
        from circuits.snarkjs import read_r1cs, sample_toxic_waste, write_verifying_key, write_zkey
        from circuits.snarkjs.zkey_file import read_zkey, vk_from_zkey

        r1cs = read_r1cs(r1cs_path)
        backend = get_backend(backend_name)
        t0 = time.perf_counter()
        write_zkey(zkey_path, r1cs, sample_toxic_waste(TOXIC_SEED), backend)
        t_zkey = time.perf_counter() - t0
        write_verifying_key(vk_path, vk_from_zkey(read_zkey(zkey_path, backend)))  # the zkey's own, in snarkjs's JSON
        _emit({"zkey_s": t_zkey})
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
    if not (args.reuse and r1cs_path.is_file() and wtns_path.is_file()):
        write_r1cs(r1cs_path, r1cs)
        write_wtns(wtns_path, witness)
    del r1cs, witness
    timeout = args.timeout

    keydir = d / "ours"
    keydir.mkdir(exist_ok=True)
    if not (args.reuse and (keydir / "proving_key" / "header.json").is_file()):
        log(f"{shape} 2^{log_size}: ours setup ({args.backend})")
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

    snarkjs = None if args.skip_snarkjs else find_snarkjs()
    want_groth16py = not args.skip_groth16py and _groth16py_available()
    zkey, vk_json = d / "circuit.zkey", d / "zkey_vk.json"
    if snarkjs or want_groth16py or args.rapidsnark_prover:
        if not (args.reuse and zkey.is_file() and vk_json.is_file()):
            log(f"{shape} 2^{log_size}: writing the benchmark-only zkey (known toxic waste)")
            res, rss = worker(["zkey", str(r1cs_path), str(zkey), args.backend, str(vk_json)], timeout)
            row["zkey_write_s"] = res["zkey_s"]
        row["zkey_bytes"] = zkey.stat().st_size

    # Whole commands, as a user runs them, in alternating order (each repetition starts with the next
    # one), every proof verified: ours, rapidsnark, snarkjs.
    commands = {"ours": ([*FAIRPROOF, "groth16", "prove", str(keydir), str(wtns_path)], keydir / "verification_key.json",
                         COMMAND_ENV)}
    if args.rapidsnark_prover:
        commands["rapidsnark"] = ([str(args.rapidsnark_prover), str(zkey), str(wtns_path)], vk_json, None)
    if snarkjs:
        commands["snarkjs"] = ([snarkjs, "groth16", "prove", str(zkey), str(wtns_path)], vk_json, None)
    names = list(commands)
    runs: dict[str, list[tuple[float, float, int]]] = {name: [] for name in names}
    for rep in range(args.repeat):
        for name in names[rep % len(names):] + names[:rep % len(names)]:
            argv, vk, env = commands[name]
            out = d / f"{name}_command_out" / str(rep)
            out.mkdir(parents=True, exist_ok=True)
            proof, public = out / "proof.json", out / "public.json"
            argv = [*argv, str(out)] if name == "ours" else [*argv, str(proof), str(public)]
            wall, code, stdout, stderr, rss, cpu = run_child_usage(argv, timeout, env=env)
            if code != 0:
                raise RuntimeError(f"{name} prove failed: {stdout[-1000:]}{stderr[-2000:]}")
            verify_proof_files(vk, proof, public, snarkjs, timeout, what=f"{name}'s proof at {shape} 2^{log_size}")
            runs[name].append((wall, cpu, rss))
            log(f"{shape} 2^{log_size}: {name} whole command {wall:.2f} s (cpu {cpu:.2f} s, peak {rss / 2**20:.0f} MiB)")
    for name in names:
        walls, cpus, rsss = zip(*runs[name])
        prefix = "ours_command" if name == "ours" else f"{name}_prove" if name == "snarkjs" else name
        row[f"{prefix}_s"] = statistics.median(walls)
        row[f"{prefix}_cpu_s"] = statistics.median(cpus)
        row[f"{prefix}_peak_rss_mb"] = max(rsss) / 2**20
        row[f"{prefix}_runs_s"] = list(walls)
    if "rapidsnark" in runs:
        row["ours_over_rapidsnark"] = row["ours_command_s"] / row["rapidsnark_s"]
        row["ours_over_rapidsnark_cpu"] = row["ours_command_cpu_s"] / row["rapidsnark_cpu_s"]
        row["ours_over_rapidsnark_rss"] = row["ours_command_peak_rss_mb"] / row["rapidsnark_peak_rss_mb"]
    if snarkjs:
        row["ours_over_snarkjs"] = row["ours_command_s"] / row["snarkjs_prove_s"]
        row["snarkjs_over_ours_command"] = row["snarkjs_prove_s"] / row["ours_command_s"]
    if want_groth16py:
        log(f"{shape} 2^{log_size}: groth16py (arkworks) prove")
        best = None
        for _ in range(args.repeat):
            res, rss = worker(["groth16py", str(zkey), str(wtns_path), str(vk_json),
                               str(d / "ours_command_out" / "0" / "public.json")], timeout)
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
    print("whole commands (median of alternating runs, seconds): ours = `fairproof groth16 prove`, rapidsnark = its "
          "`prover`, snarkjs = `snarkjs groth16 prove`; ratios < 1: ours faster")
    print("prove = the prove call with the key loaded (ours, arkworks via groth16py); cpu = user + system seconds of "
          "the command; MB = peak RSS of the command in MiB")
    header = (f"{'shape':<12} {'log2':>4} {'ours':>6} {'rapidsn':>7} {'o/rs':>5} {'o/rs cpu':>8} {'snarkjs':>7} {'o/sjs':>5} "
              f"{'prove':>6} {'ark':>6} {'o/ark':>5} {'MB':>5} {'rs MB':>5} {'o/rs MB':>7} {'sjs MB':>6} {'ark MB':>6}")
    print(header)
    print("-" * len(header))
    for r in rows:
        print(
            f"{r['shape']:<12} {r['log_size']:>4} {fmt(r.get('ours_command_s'), '6.2f')} {fmt(r.get('rapidsnark_s'), '7.2f')} "
            f"{fmt(r.get('ours_over_rapidsnark'), '5.2f')} {fmt(r.get('ours_over_rapidsnark_cpu'), '8.2f')} "
            f"{fmt(r.get('snarkjs_prove_s'), '7.2f')} {fmt(r.get('ours_over_snarkjs'), '5.2f')} "
            f"{fmt(r.get('ours_prove_s'), '6.2f')} {fmt(r.get('groth16py_prove_s'), '6.2f')} {fmt(r.get('ours_over_groth16py'), '5.2f')} "
            f"{fmt(r.get('ours_command_peak_rss_mb'), '5.0f')} {fmt(r.get('rapidsnark_peak_rss_mb'), '5.0f')} "
            f"{fmt(r.get('ours_over_rapidsnark_rss'), '7.2f')} {fmt(r.get('snarkjs_prove_peak_rss_mb'), '6.0f')} "
            f"{fmt(r.get('groth16py_peak_rss_mb'), '6.0f')}"
        )
    print("load average at the start of each row: " + ", ".join(f"{r['shape']} 2^{r['log_size']}: {r['load_avg_start']:.1f}"
                                                               for r in rows))


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] == "--worker":
        worker_main(argv[1:])
        return 0
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[12, 14, 16, 18], help="log2 domain sizes")
    parser.add_argument("--shapes", nargs="+", default=["mul_chain", "range_check"], choices=["mul_chain", "range_check"])
    parser.add_argument("--backend", default="mcl", choices=["mcl", "reference"])
    parser.add_argument("--repeat", type=int, default=3,
                        help="runs per prover: whole commands alternate and report medians; prove calls keep the best")
    parser.add_argument("--rapidsnark", action="store_true",
                        help="build iden3's rapidsnark `prover` from source and time it beside ours (whole commands)")
    parser.add_argument("--rapidsnark-source", metavar="DIR|URL",
                        help="a rapidsnark checkout with its submodules, or a git URL to clone (default: GitHub)")
    parser.add_argument("--reuse", action="store_true",
                        help="with --workdir: reuse circuits, keys and zkeys left there by an earlier --keep run")
    parser.add_argument("--skip-snarkjs", action="store_true")
    parser.add_argument("--skip-groth16py", action="store_true")
    parser.add_argument("--timeout", type=float, default=1800, help="seconds per child process")
    parser.add_argument("--workdir", type=Path, help="where circuits and keys go (default: a temporary directory)")
    parser.add_argument("--keep", action="store_true", help="keep proving keys and zkeys")
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    args.rapidsnark_prover = None
    rapidsnark_revision = None
    if args.rapidsnark:
        from rapidsnark_peer import RapidsnarkUnavailable, build_prover

        try:
            args.rapidsnark_prover, rapidsnark_revision = build_prover(args.rapidsnark_source, log)
        except RapidsnarkUnavailable as exc:
            print(f"rapidsnark cannot be built here: {exc}", file=sys.stderr)
            return 2

    rows: list[dict] = []
    meta = {
        "machine": platform.platform(),
        "cpus": os.cpu_count(),
        "python": platform.python_version(),
        "backend": args.backend,
        "zkey_note": "snarkjs/groth16py keys written from known, seeded toxic waste (benchmark only, forgeable)",
        "snarkjs_timing": "whole `snarkjs groth16 prove` command (node start + key read included)",
        "ours_timing": "circuits.groth16.prove call, key preloaded; 2 worker threads",
        "ours_command_timing": "whole `fairproof groth16 prove` command (Python start, relation, .wtns and key "
                               "included); median of alternating repetitions, every proof verified",
        "rapidsnark_timing": "whole rapidsnark `prover` command on the benchmark zkey; median of the same alternation",
        "rapidsnark_revision": rapidsnark_revision,
        "repeat": args.repeat,
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
