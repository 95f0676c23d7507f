"""Exact fairness radii against an independent reference, and the FairProof paper's Figure 6 redone.

Per model (dataset, hidden sizes, fair/unfair, training seed), for the first N test rows that quantise into
the model's box: the fast certificate (GeoCert with projection distances, refined), the exact certificate
(E = floor(true radius * 2^t) with a counterexample), the exact checker on both, the independent exact
reference radius (tests/exact_reference.py) and the paper's projection bound recomputed independently
(tests/projection_reference.py). Reported per model:

- exact E / 2^t over the reference radius (median, min) on certified queries with a finite reference, and
  every mismatch: a query whose exact E is not floor(reference radius * 2^t) (exact when the reference
  verified its squared radius);
- exact fallbacks (an exact certification that returned a certificate that is neither a counterexample nor
  the cap) and refusals (exceptions from certify or the checker);
- fast certificates below the projection bound: fast E < floor(projection radius * 2^t) - 1;
- median fast / reference ratio, median times and covering-set sizes (regions over all slices).

Figure 6 of the paper: per dataset and shape, the median exact and fast eps of the fair and the unfair
model on the same queries (flips count as 0; also over certified queries only), the counterfactual-flip
rate, and histograms of exact eps and fast eps, fair against unfair, saved as
benchmarks/results/exact_radius_<dataset>.png (seed 0; other seeds _seed<k>).

    .venv/bin/python benchmarks/exact_radius.py [--models german:4,2,credit:8,2] [--variants unfair,fair]
                                                [--seeds 0] [--queries 100] [--jobs 1] [--fresh]

Results are merged into benchmarks/results/exact_radius.json by model key (--fresh starts it anew).
"""
from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
import time
import traceback
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from fairness.radius import REGION_RADII, Radius

RESULTS = Path(__file__).resolve().parent / "results"
JSON_PATH = RESULTS / "exact_radius.json"
DEFAULT_MODELS = "german:4,2,german:2,4,german:8,2,credit:4,2,credit:2,4,credit:8,2,adult:4,2,adult:2,4,adult:8,2"
EXAMPLES = 10  # examples kept per anomaly kind and model


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def parse_models(text: str) -> list[tuple[str, tuple[int, ...]]]:
    """'german:4,2,credit:8,2' (or 'german:4x2,credit:8x2') -> [('german', (4, 2)), ('credit', (8, 2))]."""
    out: list[tuple[str, list[int]]] = []
    for token in text.replace("x", ",").split(","):
        token = token.strip()
        if not token:
            continue
        if ":" in token:
            name, first = token.split(":", 1)
            out.append((name.strip(), [int(first)] if first.strip() else []))
        elif out:
            out[-1][1].append(int(token))
        else:
            raise SystemExit(f"--models: {token!r} before any dataset name")
    for name, hidden in out:
        if not hidden:
            raise SystemExit(f"--models: {name} has no hidden sizes")
    return [(name, tuple(h)) for name, h in out]


def model_key(dataset: str, hidden: tuple[int, ...], variant: str, seed: int) -> str:
    return f"{dataset}-{'x'.join(map(str, hidden))}-{variant}-seed{seed}"


def median(values):
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def test_queries(model, X, n):
    """The first n test rows that quantise into the box, with their row indices."""
    from fairness.errors import DataError
    from fairness.fixed_point import quantise_query

    out = []
    for i, row in enumerate(X):
        if len(out) == n:
            break
        try:
            out.append((i, quantise_query(model, row)))
        except DataError:
            continue
    return out


# --------------------------------------------------------------------------- one model


def run_model(job: tuple[str, tuple[int, ...], str, int, int]) -> dict:
    dataset, hidden, variant, seed, n_queries = job
    from fairness.certificate import certify
    from fairness.checker import check_certificate
    from fairness.datasets import load_dataset
    from fairness.fixed_point import to_fixed_point
    from fairness.regions import LPRegionOracle
    from fairness.training import load_or_train
    from tests.exact_reference import reference_radius
    from tests.projection_reference import floor_scaled_sqrt, projection_search

    key = model_key(dataset, hidden, variant, seed)
    t0 = time.perf_counter()
    artifact = load_or_train(dataset, hidden, variant=variant, seed=seed,
                             progress=lambda e, loss, acc: log(f"[{key}] training epoch {e} loss {loss:.4f}"))
    model = to_fixed_point(artifact)
    t_train = time.perf_counter() - t0
    queries = test_queries(model, load_dataset(dataset).X_test, n_queries)
    oracle = LPRegionOracle(model)
    s = model.scale_bits
    records = []
    log(f"[{key}] {len(queries)} queries, {model.net.n_inputs} inputs, {len(model.slices())} slices "
        f"(model ready in {t_train:.1f} s)")
    for qi, (row, q) in enumerate(queries):
        rec: dict = {"index": qi, "test_row": row, "decision": model.net.decision(q)}
        certs = {}
        for mode in REGION_RADII:
            t = time.perf_counter()
            try:
                cert = certify(model, q, oracle, radius=mode)
            except Exception as exc:  # a refusal: recorded, not fatal
                rec[f"{mode}_error"] = f"{type(exc).__name__}: {exc}"
                rec[f"{mode}_s"] = time.perf_counter() - t
                continue
            rec[f"{mode}_s"] = time.perf_counter() - t
            certs[mode] = cert
            rec[f"{mode}_status"] = cert.status
            rec[f"{mode}_E"] = cert.eps
            rec[f"{mode}_kind"] = cert.attainment.kind if cert.attainment is not None else None
            rec[f"{mode}_regions"] = list(cert.regions_per_slice)
            rec[f"{mode}_farkas"] = cert.farkas_count
            t = time.perf_counter()
            try:
                check_certificate(model, cert)
                rec[f"{mode}_checked"] = True
            except Exception as exc:
                rec[f"{mode}_checked"] = False
                rec[f"{mode}_check_error"] = f"{type(exc).__name__}: {exc}"
            rec[f"{mode}_check_s"] = time.perf_counter() - t
        t_bits = (certs.get("exact") or certs.get("fast")).eps_bits if certs else 16
        rec["eps_bits"] = t_bits
        t = time.perf_counter()
        try:
            ref = reference_radius(model, q)
            rec["ref_radius"] = ref.radius if not math.isinf(ref.radius) else "inf"
            rec["ref_radius_sq"] = (None if ref.radius_sq is None
                                    else [ref.radius_sq.numerator, ref.radius_sq.denominator])
            rec["ref_regions"] = ref.regions
            rec["ref_unverified_qps"] = ref.unverified_qps
            rec["ref_slice"] = ref.slice_index
            rec["ref_class"] = ref.cls
            if math.isinf(ref.radius):
                rec["ref_floor"] = None
            elif ref.radius_sq is not None:
                rec["ref_floor"] = floor_scaled_sqrt(ref.radius_sq, t_bits)
            else:
                rec["ref_floor"] = math.floor(ref.radius * (1 << t_bits))
                rec["ref_floor_inexact"] = True
        except Exception as exc:
            rec["ref_error"] = f"{type(exc).__name__}: {exc}"
        rec["ref_s"] = time.perf_counter() - t
        t = time.perf_counter()
        try:
            proj = projection_search(model, q)
            rec["proj_radius"] = proj.radius
            rec["proj_E"] = proj.eps(t_bits)
            rec["proj_regions"] = [sl.regions for sl in proj.slices]
        except Exception as exc:
            rec["proj_error"] = f"{type(exc).__name__}: {exc}"
        rec["proj_s"] = time.perf_counter() - t
        rec["query"] = list(q)
        records.append(rec)
        note = anomalies_of(rec)
        if note:
            log(f"[{key}] query {qi} (test row {row}): {'; '.join(note)}")
        if (qi + 1) % 10 == 0 or qi + 1 == len(queries):
            log(f"[{key}] {qi + 1}/{len(queries)} done, {time.perf_counter() - t0:.1f} s")
    box_diag_sq = sum((model.box_upper[i] - model.box_lower[i]) ** 2 for i in model.free_columns)
    cap_E = math.isqrt((box_diag_sq << 32) >> (2 * s))
    return {"key": key, "dataset": dataset, "hidden": list(hidden), "variant": variant, "seed": seed,
            "n_inputs": model.net.n_inputs, "slices": len(model.slices()), "scale_bits": s,
            "cap_E_t16": cap_E, "seconds": time.perf_counter() - t0, "records": records,
            "summary": summarise(records)}


def anomalies_of(rec: dict) -> list[str]:
    out = []
    for mode in REGION_RADII:
        if f"{mode}_error" in rec:
            out.append(f"{mode} refused: {rec[mode + '_error']}")
        if rec.get(f"{mode}_checked") is False:
            out.append(f"{mode} certificate rejected by the checker: {rec[mode + '_check_error']}")
    if "ref_error" in rec:
        out.append(f"reference failed: {rec['ref_error']}")
    if is_fallback(rec):
        out.append(f"exact fallback (kind {rec['exact_kind']}, E {rec['exact_E']}, reference floor "
                   f"{rec.get('ref_floor')})")
    if is_mismatch(rec):
        out.append(f"exact E {rec['exact_E']} ({rec['exact_kind']}) != reference floor {rec.get('ref_floor')}")
    if is_below_projection(rec):
        out.append(f"fast E {rec['fast_E']} ({rec['fast_kind']}) below projection E {rec['proj_E']}")
    return out


def is_fallback(rec: dict) -> bool:
    return rec.get("exact_status") == "certified" and rec.get("exact_kind") not in ("counterexample", "cap")


def is_mismatch(rec: dict) -> bool:
    """exact E != floor(reference * 2^t); a cap certificate with an unreachable reference is no mismatch."""
    if "exact_E" not in rec or "ref_error" in rec:
        return False
    floor_ref = rec.get("ref_floor")
    if floor_ref is None:
        return rec.get("exact_kind") != "cap" or rec.get("exact_status") != "certified"
    if rec.get("ref_floor_inexact"):
        return abs(rec["exact_E"] - floor_ref) > 1
    return rec["exact_E"] != floor_ref


def is_below_projection(rec: dict) -> bool:
    return "fast_E" in rec and "proj_E" in rec and rec["fast_E"] < rec["proj_E"] - 1


def _eps(rec: dict, mode: str) -> float | None:
    if f"{mode}_E" not in rec:
        return None
    return rec[f"{mode}_E"] / (1 << rec["eps_bits"])


def summarise(records: list[dict]) -> dict:
    certified = [r for r in records if r.get("exact_status") == "certified" or r.get("fast_status") == "certified"]
    flips = [r for r in records if r.get("exact_status") == "flip" or r.get("fast_status") == "flip"]
    finite = [r for r in records if r.get("exact_status") == "certified" and isinstance(r.get("ref_radius"), float)
              and r["ref_radius"] > 0]
    exact_ratio = [_eps(r, "exact") / r["ref_radius"] for r in finite]
    fast_ratio = [_eps(r, "fast") / r["ref_radius"] for r in finite if "fast_E" in r]
    proj_ratio = [r["proj_radius"] / r["ref_radius"] for r in finite if "proj_radius" in r]

    def examples(pred, fields):
        return [{k: r.get(k) for k in fields} for r in records if pred(r)][:EXAMPLES]

    def count(pred):
        return sum(1 for r in records if pred(r))

    def total_regions(r, mode):
        return sum(r[f"{mode}_regions"]) if f"{mode}_regions" in r else None

    base = ("index", "test_row", "query")
    return {
        "queries": len(records),
        "flips": len(flips),
        "certified": len(certified),
        "flip_rate": len(flips) / len(records) if records else None,
        "exact_caps": count(lambda r: r.get("exact_kind") == "cap"),
        "exact_counterexamples": count(lambda r: r.get("exact_kind") == "counterexample"),
        "reference_unreachable": count(lambda r: r.get("ref_radius") == "inf"),
        "reference_inexact": count(lambda r: r.get("ref_floor_inexact", False)),
        "exact_over_reference": {"n": len(exact_ratio), "median": median(exact_ratio),
                                 "min": min(exact_ratio) if exact_ratio else None,
                                 "max": max(exact_ratio) if exact_ratio else None},
        "fast_over_reference_median": median(fast_ratio),
        "projection_over_reference_median": median(proj_ratio),
        "mismatches": count(is_mismatch),
        "mismatch_examples": examples(is_mismatch, base + ("exact_E", "exact_kind", "ref_floor", "ref_radius",
                                                          "ref_radius_sq", "fast_E", "proj_E")),
        "fallbacks": count(is_fallback),
        "fallback_examples": examples(is_fallback, base + ("exact_E", "exact_kind", "fast_E", "ref_floor")),
        "refusals": {m: count(lambda r, m=m: f"{m}_error" in r) for m in REGION_RADII},
        "refusal_examples": examples(lambda r: "fast_error" in r or "exact_error" in r,
                                     base + ("fast_error", "exact_error")),
        "checker_rejections": {m: count(lambda r, m=m: r.get(f"{m}_checked") is False) for m in REGION_RADII},
        "checker_examples": examples(lambda r: r.get("fast_checked") is False or r.get("exact_checked") is False,
                                     base + ("fast_check_error", "exact_check_error")),
        "reference_errors": count(lambda r: "ref_error" in r),
        "projection_errors": count(lambda r: "proj_error" in r),
        "below_projection": count(is_below_projection),
        "below_projection_examples": examples(is_below_projection, base + ("fast_E", "fast_kind", "proj_E",
                                                                           "proj_radius", "exact_E", "ref_floor")),
        "fast_above_projection": count(lambda r: "fast_E" in r and "proj_E" in r and r["fast_E"] > r["proj_E"] + 1),
        "median_seconds": {m: median([r.get(f"{m}_s") for r in records])
                           for m in (*REGION_RADII, "ref", "proj")}
        | {f"{m}_check": median([r.get(f"{m}_check_s") for r in records]) for m in REGION_RADII},
        "median_regions": {"fast": median([total_regions(r, "fast") for r in certified]),
                           "exact": median([total_regions(r, "exact") for r in certified]),
                           "reference": median([r.get("ref_regions") for r in certified]),
                           "projection": median([sum(r["proj_regions"]) for r in certified if "proj_regions" in r])},
        "max_regions": {"fast": max([total_regions(r, "fast") or 0 for r in records], default=None),
                        "exact": max([total_regions(r, "exact") or 0 for r in records], default=None)},
        "median_farkas": {m: median([r.get(f"{m}_farkas") for r in certified]) for m in REGION_RADII},
        "eps": eps_medians(records),
    }


def eps_medians(records: list[dict]) -> dict:
    """Figure 6 numbers of one model: median eps with flips as 0, and over certified queries only."""
    out = {}
    for name, getter in (("exact", lambda r: _eps(r, "exact")), ("fast", lambda r: _eps(r, "fast")),
                         ("projection", lambda r: r.get("proj_radius"))):
        all_vals = [getter(r) for r in records]
        cert = [getter(r) for r in records if r.get("exact_status") == "certified"]
        out[name] = {"median_with_flips": median(all_vals), "median_certified": median(cert)}
    return out


# --------------------------------------------------------------------------- reports


def fmt(v, digits=3):
    if v is None:
        return "-"
    if isinstance(v, float):
        return f"{v:.{digits}f}"
    return str(v)


def model_table(results: list[dict]) -> str:
    head = ("| model | queries | flips | exact/ref median | exact/ref min | mismatches | fallbacks | refusals "
            "(fast/exact) | below projection | fast/ref median | proj/ref median | time fast / exact / ref (s) "
            "| regions fast / exact |")
    lines = [head, "|" + "---|" * (head.count("|") - 1)]
    for res in results:
        sm = res["summary"]
        er = sm["exact_over_reference"]
        ms = sm["median_seconds"]
        rg = sm["median_regions"]
        lines.append(
            f"| {res['key']} | {sm['queries']} | {sm['flips']} | {fmt(er['median'], 6)} | {fmt(er['min'], 6)} "
            f"| {sm['mismatches']} | {sm['fallbacks']} | {sm['refusals']['fast']}/{sm['refusals']['exact']} "
            f"| {sm['below_projection']} | {fmt(sm['fast_over_reference_median'])} "
            f"| {fmt(sm['projection_over_reference_median'])} "
            f"| {fmt(ms['fast'], 3)} / {fmt(ms['exact'], 3)} / {fmt(ms['ref'], 3)} "
            f"| {fmt(rg['fast'], 1)} / {fmt(rg['exact'], 1)} |")
    return "\n".join(lines)


def figure6_pairs(results: list[dict]) -> list[tuple[str, tuple[int, ...], int, dict | None, dict | None]]:
    by = {}
    for res in results:
        by.setdefault((res["dataset"], tuple(res["hidden"]), res["seed"]), {})[res["variant"]] = res
    return [(d, h, s, v.get("fair"), v.get("unfair")) for (d, h, s), v in sorted(by.items())]


def figure6_table(results: list[dict]) -> str:
    head = ("| dataset | hidden | seed | exact eps fair / unfair | fast eps fair / unfair | projection eps fair / "
            "unfair | certified only: exact fair / unfair | certified only: fast fair / unfair | flip rate fair "
            "/ unfair |")
    lines = [head, "|" + "---|" * (head.count("|") - 1)]
    for d, h, s, fair, unfair in figure6_pairs(results):
        def get(res, mode, which):
            return None if res is None else res["summary"]["eps"][mode][which]

        def rate(res):
            return None if res is None else res["summary"]["flip_rate"]

        lines.append(
            f"| {d} | {'x'.join(map(str, h))} | {s} "
            f"| {fmt(get(fair, 'exact', 'median_with_flips'))} / {fmt(get(unfair, 'exact', 'median_with_flips'))} "
            f"| {fmt(get(fair, 'fast', 'median_with_flips'))} / {fmt(get(unfair, 'fast', 'median_with_flips'))} "
            f"| {fmt(get(fair, 'projection', 'median_with_flips'))} / "
            f"{fmt(get(unfair, 'projection', 'median_with_flips'))} "
            f"| {fmt(get(fair, 'exact', 'median_certified'))} / {fmt(get(unfair, 'exact', 'median_certified'))} "
            f"| {fmt(get(fair, 'fast', 'median_certified'))} / {fmt(get(unfair, 'fast', 'median_certified'))} "
            f"| {fmt(rate(fair), 2)} / {fmt(rate(unfair), 2)} |")
    return "\n".join(lines)


def same_queries(fair: dict | None, unfair: dict | None) -> bool | None:
    if fair is None or unfair is None:
        return None
    return [r["test_row"] for r in fair["records"]] == [r["test_row"] for r in unfair["records"]]


def plot_histograms(results: list[dict]) -> list[Path]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    written = []
    pairs = figure6_pairs(results)
    for dataset in sorted({p[0] for p in pairs}):
        for seed in sorted({p[2] for p in pairs if p[0] == dataset}):
            rows = [p for p in pairs if p[0] == dataset and p[2] == seed]
            fig, axes = plt.subplots(len(rows), 2, figsize=(10, 3.2 * len(rows)), squeeze=False)
            for (d, h, s, fair, unfair), ax_row in zip(rows, axes):
                for ax, mode in zip(ax_row, (Radius.EXACT, Radius.FAST)):
                    vals = {}
                    for name, res in (("fair", fair), ("unfair", unfair)):
                        if res is not None:
                            vals[name] = [_eps(r, mode) for r in res["records"] if _eps(r, mode) is not None]
                    top = max([max(v) for v in vals.values() if v] + [1e-9])
                    bins = [top * i / 25 for i in range(26)]
                    for name, colour in (("unfair", "tab:red"), ("fair", "tab:blue")):
                        if name in vals:
                            med = statistics.median(vals[name]) if vals[name] else float("nan")
                            ax.hist(vals[name], bins=bins, alpha=0.55, color=colour,
                                    label=f"{name} (median {med:.3f})")
                    ax.set_title(f"{d} {'x'.join(map(str, h))}: {mode} eps (flips as 0)")
                    ax.set_xlabel("certified radius eps (l2, standardised units)")
                    ax.set_ylabel("queries")
                    ax.legend()
            fig.tight_layout()
            path = RESULTS / (f"exact_radius_{dataset}.png" if seed == 0 else f"exact_radius_{dataset}_seed{seed}.png")
            fig.savefig(path, dpi=110)
            plt.close(fig)
            written.append(path)
    return written


def anomaly_report(results: list[dict]) -> str:
    lines = []
    for res in results:
        for r in res["records"]:
            note = anomalies_of(r)
            if note:
                lines.append(f"{res['key']} query {r['index']} (test row {r['test_row']}): {'; '.join(note)}")
    return "\n".join(lines) if lines else "none"


# --------------------------------------------------------------------------- results file


def compact_record(rec: dict) -> dict:
    """A stored record: times rounded to 0.1 ms, radii to 10 significant digits (E and the reference floor
    are exact integers); the integer query and the exact squared reference radius only for a record with an
    anomaly (the others are reproduced from the model key and test_row)."""
    out = {}
    keep_all = bool(anomalies_of(rec))
    for k, v in rec.items():
        if k in ("query", "ref_radius_sq") and not keep_all:
            continue
        if isinstance(v, float):
            v = round(v, 4) if k.endswith("_s") else float(f"{v:.10g}")
        out[k] = v
    return out


def records_to_table(records: list[dict]) -> tuple[list[str], list[list]]:
    """Records as columns and one row per query (a field a record lacks is null)."""
    records = [compact_record(r) for r in records]
    columns: list[str] = []
    for r in records:
        columns.extend(k for k in r if k not in columns)
    return columns, [[r.get(k) for k in columns] for r in records]


def table_to_records(columns: list[str], rows: list[list]) -> list[dict]:
    return [{k: v for k, v in zip(columns, row) if v is not None} for row in rows]


def load_store(path: Path) -> tuple[dict, list[str]]:
    """The stored models (records rebuilt from their table) and the commands that produced them."""
    if not path.exists():
        return {}, []
    try:
        doc = json.loads(path.read_text())
    except ValueError:
        return {}, []
    models = doc.get("models", {})
    for res in models.values():
        if "rows" in res:
            res["records"] = table_to_records(res.pop("columns"), res.pop("rows"))
    commands = doc.get("commands") or ([doc["command"]] if doc.get("command") else [])
    return models, list(commands)


def write_json(path: Path, doc: dict) -> None:
    """Indented down to each model; one line per query."""
    lines = ["{"]
    for k, v in doc.items():
        if k != "models":
            lines.append(f" {json.dumps(k)}: {json.dumps(v, default=str)},")
    lines.append(' "models": {')
    keys = sorted(doc["models"])
    for mi, key in enumerate(keys):
        res = doc["models"][key]
        lines.append(f"  {json.dumps(key)}: {{")
        for k in res:
            if k != "records":
                lines.append(f"   {json.dumps(k)}: {json.dumps(res[k], default=str)},")
        columns, rows = records_to_table(res["records"])
        lines.append(f'   "columns": {json.dumps(columns)},')
        lines.append('   "rows": [')
        for ri, row in enumerate(rows):
            lines.append("    " + json.dumps(row, default=str) + ("," if ri + 1 < len(rows) else ""))
        lines.append("   ]")
        lines.append("  }" + ("," if mi + 1 < len(keys) else ""))
    lines.append(" }")
    lines.append("}")
    path.write_text("\n".join(lines) + "\n")


# --------------------------------------------------------------------------- main


def source_description() -> str:
    """The commit measured, and any uncommitted change to the code it runs (the certifier and the references)."""
    import subprocess

    try:
        head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True,
                              check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--", "fairness", "tests/exact_reference.py",
                                "tests/projection_reference.py"], cwd=ROOT, capture_output=True, text=True,
                               check=True).stdout.split("\n")
    except (OSError, subprocess.CalledProcessError):
        return "unknown (not a git checkout; pass --source)"
    dirty = [line.strip() for line in dirty if line.strip()]
    return head + (f" with uncommitted changes: {', '.join(dirty)}" if dirty else "")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--models", default=DEFAULT_MODELS, help="dataset:h1,h2 list, e.g. german:4,2,credit:8,2")
    ap.add_argument("--variants", default="unfair,fair")
    ap.add_argument("--seeds", default="0")
    ap.add_argument("--queries", type=int, default=100)
    ap.add_argument("--jobs", type=int, default=1, help="models certified in parallel processes")
    ap.add_argument("--fresh", action="store_true", help="replace benchmarks/results/exact_radius.json")
    ap.add_argument("--report-only", action="store_true",
                    help="certify nothing: rebuild the tables, the JSON and the plots from the stored results")
    ap.add_argument("--source", default=None, help="what code is measured (default: the git commit, and any "
                                                     "uncommitted change to fairness/ and the references)")
    args = ap.parse_args(argv)
    models = parse_models(args.models)
    variants = [v.strip() for v in args.variants.split(",") if v.strip()]
    seeds = [int(s) for s in args.seeds.split(",") if s.strip()]
    jobs = [] if args.report_only else [(d, h, v, s, args.queries) for s in seeds for d, h in models
                                        for v in variants]
    source = args.source or source_description()
    log(f"{len(jobs)} models, {args.queries} queries each; code: {source}")
    t0 = time.perf_counter()
    RESULTS.mkdir(parents=True, exist_ok=True)
    store, commands = ({}, []) if args.fresh else load_store(JSON_PATH)
    if not args.report_only:
        commands.append("benchmarks/exact_radius.py " + " ".join(sys.argv[1:] if argv is None else argv))

    def document() -> dict:
        everything = [store[k] for k in sorted(store)]
        pairs_same = {f"{d}-{'x'.join(map(str, h))}-seed{s}": same_queries(f, u)
                      for d, h, s, f, u in figure6_pairs(everything)}
        return {"benchmark": "exact_radius", "eps_bits": 16, "commands": commands,
                "figure6_same_queries": pairs_same, "models": store}

    def finished(res: dict) -> None:
        """Store each model as soon as it is done, so an interrupted run keeps what it measured."""
        res["source"] = source
        store[res["key"]] = res
        write_json(JSON_PATH, document())

    if args.jobs > 1:
        with ProcessPoolExecutor(args.jobs) as pool:
            for res in pool.map(run_model, jobs):
                finished(res)
    else:
        for job in jobs:
            try:
                finished(run_model(job))
            except Exception:
                log(f"model {job[:4]} failed:\n{traceback.format_exc()}")
                raise
    everything = [store[k] for k in sorted(store)]
    doc = document()
    write_json(JSON_PATH, doc)
    pngs = plot_histograms(everything)
    print("## Exact radius against the reference\n")
    print(model_table(everything))
    print("\n## Figure 6 (median eps; flips as 0 unless 'certified only')\n")
    print(figure6_table(everything))
    print("\n## Anomalies\n")
    print(anomaly_report(everything))
    print(f"\nwrote {JSON_PATH.relative_to(ROOT)} and {', '.join(str(p.relative_to(ROOT)) for p in pngs)}; "
          f"{time.perf_counter() - t0:.0f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
