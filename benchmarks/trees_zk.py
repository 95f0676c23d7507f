"""Tree-ensemble fairness certificates on the paper's datasets: accuracy, tightness, constraints, key setup,
proving time and memory.

For each dataset (German, Credit, Adult, the paper's preprocessing and sensitive attribute) and library
(XGBoost, LightGBM), a classifier of `--trees` trees of depth `--depth` is trained here on the training
split and read with `fairness.trees.loaders` into exact fixed point (inputs at 2^16, leaf values at 2^20).
Then, on the first `--queries` test customers:

- accuracy on the test split: the library's own prediction, and the fixed-point ensemble's (leaf values at
  2^-`--value-bits`); the rows
  where the two disagree are counted (the checked import refuses a model on any such row);
- the bound radius (`fairness.trees.radius.certify_trees`, exact integers) and its plaintext time; the
  exact radius where the ensemble is small enough to enumerate (`fairness.trees.exact`, within
  `--exact-max-nodes`); and an attack's
  counterexample: random directions over the free columns, every slice, the distance grown geometrically
  until the decision changes, then bisected: the nearest changed point found is an upper bound on the
  true radius (a bound above it would be a soundness failure, and is counted);
- the zero-knowledge statement (`statement.trees`, the trees padded to depth `--depth`): constraints and
  the build time without values, Groth16 key setup from the shape alone, then per customer the witness
  (a build with values) and the proof, each proof verified with the public inputs; p50 / p95 of witness +
  proof ("online", the plaintext certificate excluded: it is reported apart) and the process's peak RSS.

Usage: .venv/bin/python benchmarks/trees_zk.py [--datasets german,credit,adult] [--libraries xgboost,lightgbm]
           [--trees 100] [--depth 4] [--queries 20] [--prove 20] [--out FILE]
Prints a table and writes benchmarks/results/trees_zk.json.
"""
from __future__ import annotations

import argparse
import json
import math
import random
import statistics
import sys
import time
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import Sequence

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _measures import p95, peak_rss_mib  # noqa: E402

from circuits.backends import get_backend  # noqa: E402
from circuits.builder import ConstraintSystem  # noqa: E402
from circuits.groth16 import check_proof, prove, setup  # noqa: E402
from fairness.certificate_data import DEFAULT_EPS_BITS  # noqa: E402
from fairness.datasets import load_dataset  # noqa: E402
from fairness.fixed_point import SensitiveDomain, quantise_ceil, quantise_floor  # noqa: E402
from fairness.errors import CertificationError  # noqa: E402
from fairness.trees.ensemble import TreeEnsemble, TreeModel  # noqa: E402
from fairness.trees.exact import exact_radius  # noqa: E402
from fairness.trees.loaders import DEFAULT_SCALE_BITS, DEFAULT_VALUE_BITS, from_lightgbm, from_xgboost  # noqa: E402
from fairness.trees.radius import CERTIFIED, certify_trees  # noqa: E402
from statement.trees import build_tree_statement, tree_shape, tree_statement_inputs  # noqa: E402

RESULTS = ROOT / "benchmarks" / "results" / "trees_zk.json"
SALT = 0x5A17
ATTACK_DIRECTIONS = 64


# --------------------------------------------------------------------------- models


def train(library: str, X: np.ndarray, y: np.ndarray, trees: int, depth: int,
          value_bits: int) -> tuple[object, TreeEnsemble]:
    """(the library's fitted classifier, its ensemble read exactly, leaf values at 2^value_bits)."""
    n = X.shape[1]
    if library == "xgboost":
        import xgboost as xgb

        clf = xgb.XGBClassifier(n_estimators=trees, max_depth=depth, n_jobs=2, random_state=0)
        clf.fit(X, y)
        return clf, from_xgboost(clf.get_booster().save_raw("json"), n_inputs=n, value_bits=value_bits)
    if library == "lightgbm":
        import lightgbm as lgb

        clf = lgb.LGBMClassifier(n_estimators=trees, max_depth=depth, num_leaves=1 << depth, n_jobs=2, verbose=-1,
                                 random_state=0)
        clf.fit(X, y)
        return clf, from_lightgbm(clf.booster_.dump_model(), n_inputs=n, value_bits=value_bits)
    raise SystemExit(f"unknown library {library!r}: xgboost or lightgbm")


def tree_model_of(dataset, ensemble: TreeEnsemble) -> TreeModel:
    """The ensemble with the dataset's domain box (rounded outward) and its sensitive attributes' points."""
    s = ensemble.scale_bits
    lower, upper = dataset.domain_box()
    sensitive = tuple(SensitiveDomain(f.name, tuple(f.columns), tuple(tuple(int(v) << s for v in p) for p in f.points),
                                      tuple(f.labels)) for f in dataset.sensitive)
    return TreeModel(ensemble, tuple(quantise_floor(v, s) for v in lower), tuple(quantise_ceil(v, s) for v in upper),
                     sensitive)


def quantised(model: TreeModel, x: np.ndarray) -> tuple[int, ...]:
    s = model.scale_bits
    q = [int(math.floor(float(v) * (1 << s) + 0.5)) for v in x]
    for f in model.sensitive:  # sensitive columns hold their points exactly
        for c in f.columns:
            q[c] = int(round(float(x[c]))) << s
    return tuple(min(max(v, lo), hi) for v, lo, hi in zip(q, model.box_lower, model.box_upper))


# --------------------------------------------------------------------------- the attack


def attack_distance(model: TreeModel, q: tuple[int, ...], decision: int, rng: random.Random) -> Fraction | None:
    """The distance (model units) of the nearest point found, in the box and at some slice, whose decision
    is not `decision`; None if no such point was found."""
    free = model.free_columns
    s = model.scale_bits
    span = max(model.box_upper[c] - model.box_lower[c] for c in free)
    best: Fraction | None = None

    def point(direction: Sequence[float], r: float, slice_values) -> tuple[int, ...]:
        x = list(model.with_slice(q, slice_values))
        for c, d in zip(free, direction):
            x[c] = min(max(int(round(q[c] + d * r)), model.box_lower[c]), model.box_upper[c])
        return tuple(x)

    def changed(x: tuple[int, ...]) -> bool:
        return model.ensemble.decision(x) != decision

    for _ in range(ATTACK_DIRECTIONS):
        g = [rng.gauss(0, 1) for _ in free]
        norm = math.sqrt(sum(v * v for v in g)) or 1.0
        direction = [v / norm for v in g]
        for slice_values in model.slices():
            r, hit = float(1 << (s - 8)), None
            while r <= 2 * span and hit is None:
                if changed(point(direction, r, slice_values)):
                    hit = r
                r *= 1.5
            if hit is None:
                continue
            lo, hi = 0.0, hit
            for _ in range(20):
                mid = (lo + hi) / 2
                lo, hi = (lo, mid) if changed(point(direction, mid, slice_values)) else (mid, hi)
            x = point(direction, hi, slice_values)
            if not changed(x):
                continue
            d = Fraction(math.isqrt(sum((x[c] - q[c]) ** 2 for c in free)), 1 << s)  # floor: a point at least this near
            best = d if best is None else min(best, d)
    return best


# --------------------------------------------------------------------------- one model


@dataclass
class Row:
    dataset: str
    library: str
    trees: int
    depth: int
    inputs: int
    accuracy_library: float
    accuracy_fixed_point: float
    disagreeing_rows: int
    certified: int
    flips: int
    eps_median: float
    bound_over_attack_median: float | None
    bound_above_attack: int
    bound_over_exact_median: float | None
    plaintext_median_s: float
    constraints: int
    build_s: float
    setup_s: float
    witness_median_s: float
    prove_median_s: float
    online_median_s: float
    online_p95_s: float
    verified: str
    peak_rss_mib: float


def measure(name: str, library: str, args: argparse.Namespace) -> Row:
    dataset = load_dataset(name)
    clf, ensemble = train(library, dataset.X_train, dataset.y_train, args.trees, args.depth, args.value_bits)
    model = tree_model_of(dataset, ensemble)
    library_pred = np.asarray(clf.predict(dataset.X_test)).astype(int)
    queries = [quantised(model, x) for x in dataset.X_test]
    fixed_pred = np.array([ensemble.decision(q) for q in queries])
    row_accuracy = (float(np.mean(library_pred == dataset.y_test)), float(np.mean(fixed_pred == dataset.y_test)))
    disagreeing = int(np.sum(library_pred != fixed_pred))
    print(f"== {name} {library}: {len(ensemble.trees)} trees, accuracy {row_accuracy[0]:.3f} (library) / "
          f"{row_accuracy[1]:.3f} (fixed point), {disagreeing} test rows disagree", flush=True)

    rng = random.Random(0)
    certs, plain_s, over_attack, over_exact, above = [], [], [], [], 0
    for q in queries[:args.queries]:
        t0 = time.perf_counter()
        cert = certify_trees(model, q, eps_bits=DEFAULT_EPS_BITS)
        plain_s.append(time.perf_counter() - t0)
        certs.append(cert)
        if cert.status != CERTIFIED or cert.eps == 0:
            continue
        attack = attack_distance(model, q, cert.decision, rng)
        if attack is not None and attack > 0:
            over_attack.append(float(cert.eps_value / attack))
            above += cert.eps_value > attack
        try:
            exact = exact_radius(model, q, eps_bits=DEFAULT_EPS_BITS, max_nodes=args.exact_max_nodes)
            if exact.eps:
                over_exact.append(cert.eps / exact.eps)
        except CertificationError:
            pass  # too large to enumerate
    print(f"   plaintext: {sum(c.status == CERTIFIED for c in certs)} certified, "
          f"median {statistics.median(plain_s):.3f} s; bound / attack median "
          f"{statistics.median(over_attack) if over_attack else float('nan'):.3f}, {above} above", flush=True)

    shape = tree_shape(model, args.depth, eps_bits=DEFAULT_EPS_BITS)
    backend = get_backend()
    t0 = time.perf_counter()
    setup_cs = ConstraintSystem(with_values=False)
    build_tree_statement(setup_cs, shape)
    relation = setup_cs.compile(wire_names=False)
    build_s = time.perf_counter() - t0
    print(f"   statement: {relation.n_constraints:,} constraints, built in {build_s:.1f} s", flush=True)
    t0 = time.perf_counter()
    pk, vk = setup(relation, backend, workers=2)
    setup_s = time.perf_counter() - t0
    print(f"   key setup {setup_s:.1f} s, peak {peak_rss_mib():.0f} MiB", flush=True)

    witness_s, prove_s, online, ok = [], [], [], 0
    provable = [(q, c) for q, c in zip(queries, certs) if c.status != CERTIFIED or c.eps > 0][:args.prove]
    for q, cert in provable:
        t0 = time.perf_counter()
        public, witness = tree_statement_inputs(model, shape, q, cert.eps, SALT)
        cs = ConstraintSystem(with_values=True)
        build_tree_statement(cs, shape, public, witness)
        w = cs.witness()
        t1 = time.perf_counter()
        proof = prove(pk, relation, w, backend, workers=2)
        t2 = time.perf_counter()
        ok += check_proof(vk, public.signals(), proof, backend).ok
        witness_s.append(t1 - t0)
        prove_s.append(t2 - t1)
        online.append(t2 - t0)
    print(f"   proved {len(online)}: online median {statistics.median(online):.2f} s, p95 {p95(online):.2f} s, "
          f"verified {ok}/{len(online)}, peak {peak_rss_mib():.0f} MiB", flush=True)
    return Row(name, library, len(ensemble.trees), args.depth, ensemble.n_inputs, *row_accuracy, disagreeing,
               sum(c.status == CERTIFIED for c in certs), sum(c.status != CERTIFIED for c in certs),
               statistics.median(float(c.eps_value) for c in certs),
               statistics.median(over_attack) if over_attack else None, above,
               statistics.median(over_exact) if over_exact else None, statistics.median(plain_s),
               relation.n_constraints, build_s, setup_s, statistics.median(witness_s), statistics.median(prove_s),
               statistics.median(online), p95(online), f"{ok}/{len(online)}", peak_rss_mib())


def table(rows: Sequence[Row]) -> str:
    head = ("| model | trees x depth | inputs | accuracy lib / fixed | certified / flips | eps median | bound / attack | "
            "bound / exact | constraints | setup s | witness s | prove s | online p50 / p95 s | verified | peak MiB |")
    lines = [head, "|" + "---|" * (head.count("|") - 1)]

    def ratio(v: float | None) -> str:
        return "-" if v is None else f"{v:.2f}"

    for r in rows:
        lines.append(f"| {r.dataset} {r.library} | {r.trees} x {r.depth} | {r.inputs} | {r.accuracy_library:.3f} / "
                     f"{r.accuracy_fixed_point:.3f} | {r.certified} / {r.flips} | {r.eps_median:.3f} | "
                     f"{ratio(r.bound_over_attack_median)} | {ratio(r.bound_over_exact_median)} | {r.constraints:,} | "
                     f"{r.setup_s:.1f} | {r.witness_median_s:.2f} | {r.prove_median_s:.2f} | "
                     f"{r.online_median_s:.2f} / {r.online_p95_s:.2f} | {r.verified} | {r.peak_rss_mib:.0f} |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--datasets", default="german,credit,adult")
    parser.add_argument("--libraries", default="xgboost,lightgbm")
    parser.add_argument("--trees", type=int, default=100, help="trees per class score")
    parser.add_argument("--depth", type=int, default=4)
    parser.add_argument("--queries", type=int, default=20, help="test customers certified in plaintext")
    parser.add_argument("--prove", type=int, default=20, help="of those, how many are proved")
    parser.add_argument("--value-bits", type=int, default=DEFAULT_VALUE_BITS,
                        help=f"leaf values at 2^-V (default {DEFAULT_VALUE_BITS}, the loaders')")
    parser.add_argument("--exact-max-nodes", type=int, default=200_000,
                        help="search nodes the exact radius may visit before it is called not computable")
    parser.add_argument("--out", default=str(RESULTS))
    args = parser.parse_args()
    if DEFAULT_SCALE_BITS != 16:
        raise SystemExit("the table assumes inputs at 2^16")
    rows = [measure(d, lib, args) for d in args.datasets.split(",") for lib in args.libraries.split(",")]
    print(table(rows))
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"args": vars(args), "rows": [r.__dict__ for r in rows]}, indent=2) + "\n")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
