"""What importing a bank's own model costs, and what a one-hot sensitive attribute costs in the circuit.

1. Import time per format, for one bank (tests/independent_banks.py: Default of Credit Card clients, sex
   and marital status one-hot and sensitive, 251 customers): its scikit-learn Pipeline (joblib), the same
   Pipeline through skl2onnx (one graph input per column), its (6, 4) torch network with one output logit
   as a state dict and as TorchScript behind the fitted ColumnTransformer, and its (8,) torch network with
   one logit per class through torch.onnx. Each is `fairproof import-model FILE --facts --check CSV --out
   DIR` run in this process (reading the file, building the schema, the check on every row, writing the
   artifact): the first run apart, then the median of 5; and once as the bank types it, a fresh
   `.venv/bin/fairproof` process (Python's start and every library's import included).

2. Constraints of the same bank's statement when its sensitive attribute (EDUCATION restricted to 2, 3
   and 4 values) is one-hot (one input per value) against one integer code (OrdinalEncoder), the rest of
   the pipeline and the (6, 4) network's shape unchanged: each model imported, committed (spread lens, as
   `fairproof commit` defaults), and its statement built without values, as key setup builds it, for the
   fast radius (bucket k4-f4), the exact one (k4-f4-exact) and the bound one (k1-f1-bound).

Usage: .venv/bin/python benchmarks/import_model.py [--repeats 5] [--no-exact] [--no-bound]
Prints two tables and writes benchmarks/results/import_model.json.
"""
from __future__ import annotations

import argparse
import contextlib
import io
import json
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

import independent_banks as banks  # noqa: E402
from prover_service.cli import main as fairproof  # noqa: E402

FORMATS = ("credit-pipeline", "credit-pipeline-onnx", "credit-torch-state-dict", "credit-torchscript",
           "credit-torch-onnx")
EDUCATION_DOMAINS = ((1, 2), (1, 2, 3), (1, 2, 3, 4))
RESULTS = ROOT / "benchmarks" / "results" / "import_model.json"


def run_quietly(args: list[str]) -> tuple[int, str]:
    """`fairproof ARGS` in this process, its output captured (and returned) rather than printed."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
        code = fairproof(args)
    return code, out.getvalue()


def timed_import(files: banks.BankFiles, work: Path) -> tuple[float, float | None]:
    """(wall seconds, the importer's own reading time in seconds if it states one) of one import."""
    out_dir = work / "model"
    shutil.rmtree(out_dir, ignore_errors=True)
    start = time.perf_counter()
    code, text = run_quietly(files.import_args(out_dir))
    seconds = time.perf_counter() - start
    if code != 0:
        raise SystemExit(f"{files.name}: import refused:\n{text}")
    read = re.search(r" in (\d+) ms:", text)
    return seconds, int(read.group(1)) / 1000 if read else None


def command_line_seconds(files: banks.BankFiles, work: Path) -> float:
    """Wall seconds of the import as the bank types it: a new `fairproof` process."""
    out_dir = work / "model-cli"
    shutil.rmtree(out_dir, ignore_errors=True)
    start = time.perf_counter()
    done = subprocess.run([str(ROOT / ".venv" / "bin" / "fairproof"), *files.import_args(out_dir)],
                          capture_output=True, text=True, cwd=ROOT)
    seconds = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"{files.name}: import refused:\n{done.stdout}{done.stderr}")
    return seconds


def import_times(files: dict[str, banks.BankFiles], work: Path, repeats: int) -> list[dict]:
    rows = []
    print(f"{'format':26} {'network':>9} {'command s':>9} {'first s':>8} {'median s':>9} {'min s':>7} {'max s':>7} "
          f"{'read s':>7}")
    for name in FORMATS:
        first, _ = timed_import(files[name], work)
        runs = [timed_import(files[name], work) for _ in range(repeats)]
        cli = command_line_seconds(files[name], work)
        walls = [w for w, _ in runs]
        reads = [r for _, r in runs if r is not None]
        meta = json.loads((work / "model" / "model.json").read_text())
        network = "x".join(str(h) for h in meta["hidden_sizes"])
        row = {"format": name, "file": files[name].model.name, "rows_checked": len(files[name].decisions),
               "hidden_sizes": meta["hidden_sizes"], "n_inputs": meta["n_inputs"], "command_line_seconds": round(cli, 3),
               "first_seconds": round(first, 3),
               "median_seconds": round(statistics.median(walls), 3), "min_seconds": round(min(walls), 3),
               "max_seconds": round(max(walls), 3), "repeats": repeats,
               "median_read_seconds": round(statistics.median(reads), 3) if reads else None}
        rows.append(row)
        read = f"{row['median_read_seconds']:7.3f}" if reads else f"{'-':>7}"
        print(f"{name:26} {network:>9} {cli:9.3f} {first:8.3f} {row['median_seconds']:9.3f} {row['min_seconds']:7.3f} "
              f"{row['max_seconds']:7.3f} {read}", flush=True)
    return rows


def education_bank(values: tuple[int, ...], encoding: str, work: Path) -> Path:
    """The credit bank with EDUCATION over `values` as its sensitive attribute, one-hot or one integer
    code: fitted, scored, imported with its check, committed. Its model directory."""
    root = work / f"education-{len(values)}-{encoding}"
    root.mkdir(parents=True, exist_ok=True)
    frame = banks.credit_frame(education=values)
    pipeline = banks.fit_pipeline(banks.education_preprocessor(values, encoding), frame, "defaulted", (6, 4))
    decisions = [str(d) for d in pipeline.predict(banks.features(frame, "defaulted"))]
    data = banks.scored_csv(frame, decisions, root / "scored.csv")
    import joblib

    joblib.dump(pipeline, root / "pipeline.joblib")
    facts = banks.facts_file(root / "facts.yaml", banks.credit_facts(("EDUCATION",)))
    model = root / "model"
    for args in (["import-model", str(root / "pipeline.joblib"), "--facts", str(facts), "--check", str(data),
                  "--out", str(model)], ["commit", "--model", str(model)]):
        code, text = run_quietly(args)
        if code != 0:
            raise SystemExit(f"EDUCATION {values} {encoding}: {args[0]} failed:\n{text}")
    return model


def statement_size(model_dir: Path, region_slots: int, farkas_slots: int, radius: str) -> tuple[int, int, float]:
    """(constraints, wires, build seconds) of the committed model's statement of bucket (K, F, radius),
    built without values as key setup builds it."""
    from circuits.builder import ConstraintSystem
    from prover_service.bucket_keys import card_shape
    from prover_service.workspace import ModelWorkspace
    from statement import build_statement

    workspace = ModelWorkspace.open(model_dir)
    shape = card_shape(workspace.card(), workspace.fixed_point(), region_slots, farkas_slots, radius)
    start = time.perf_counter()
    cs = ConstraintSystem(with_values=False)
    build_statement(cs, shape)
    seconds = time.perf_counter() - start
    r1cs = cs.compile(wire_names=False)
    return r1cs.n_constraints, r1cs.n_wires, seconds


def one_hot_costs(work: Path, radii: list[tuple[str, int, int]]) -> list[dict]:
    rows = []
    print(f"\n{'values':>6} {'radius':7} {'bucket':12} {'one-hot in':>10} {'code in':>7} {'one-hot':>9} "
          f"{'code':>9} {'ratio':>6} {'build s':>8}")
    for values in EDUCATION_DOMAINS:
        models = {encoding: education_bank(values, encoding, work) for encoding in ("one_hot", "ordinal")}
        inputs = {e: json.loads((m / "model.json").read_text())["n_inputs"] for e, m in models.items()}
        for radius, k, f in radii:
            sizes = {e: statement_size(m, k, f, radius) for e, m in models.items()}
            bucket = f"k{k}-f{f}" + ("" if radius == "fast" else f"-{radius}")
            one_hot, code = sizes["one_hot"][0], sizes["ordinal"][0]
            row = {"values": len(values), "radius": radius, "bucket": bucket, "one_hot_inputs": inputs["one_hot"],
                   "code_inputs": inputs["ordinal"], "one_hot_constraints": one_hot, "code_constraints": code,
                   "one_hot_wires": sizes["one_hot"][1], "code_wires": sizes["ordinal"][1],
                   "ratio": round(one_hot / code, 4),
                   "build_seconds": round(sizes["one_hot"][2] + sizes["ordinal"][2], 2)}
            rows.append(row)
            print(f"{len(values):6d} {radius:7} {bucket:12} {inputs['one_hot']:10d} {inputs['ordinal']:7d} "
                  f"{one_hot:9d} {code:9d} {row['ratio']:6.3f} {row['build_seconds']:8.2f}", flush=True)
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=5, help="timed imports per format (default 5)")
    parser.add_argument("--no-exact", action="store_true", help="skip the exact-radius statement")
    parser.add_argument("--no-bound", action="store_true", help="skip the bound-radius statement")
    args = parser.parse_args()
    radii = [("fast", 4, 4)] + ([] if args.no_exact else [("exact", 4, 4)]) + ([] if args.no_bound else [("bound", 1, 1)])
    with tempfile.TemporaryDirectory(prefix="import-bench-") as tmp:
        work = Path(tmp)
        credit = banks.fit_credit_bank(banks.credit_frame())
        files = banks.credit_files(credit, work / "credit")
        imports = import_times(files, work / "imports", args.repeats)
        costs = one_hot_costs(work / "one-hot", radii)
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps({"bank": "default_credit, sex + marital status one-hot sensitive",
                                   "imports": imports, "one_hot_sensitive": costs}, indent=2) + "\n")
    print(f"wrote {RESULTS}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
