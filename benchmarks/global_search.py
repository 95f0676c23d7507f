"""HyFair's global discrimination search on the paper models, and how well it is corroborated.

Per model (dataset, hidden sizes, fair/unfair; favourable class the dataset's, categorical features
held to their categories): `audits.global_search` on every ordered pair of sensitive combinations
(status, t*, seconds). For every pair, whatever its status:

- random: N points of the box (numeric features uniform on the input grid, categorical ones a random
  category), decided by the exact integer model with both combinations: how many flip in the pair's
  direction;
- adversarial: M starts, each climbed by projected gradient ascent of t = min(m_s, -m_s') on the
  float copy of the model, then snapped to the grid and decided exactly: how many flip.

A pair the MILP calls fair must show no flip in either column; a counterexample is already re-checked.

    .venv/bin/python benchmarks/global_search.py [--models german:4x2,...] [--random 100000] [--adversarial 1000]

Writes benchmarks/results/global_search.json and prints a table.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from audits.global_search import COUNTEREXAMPLE, FAIR, categorical_choices, global_search  # noqa: E402
from fairness.fixed_point import integer_logits, to_fixed_point  # noqa: E402
from fairness.spread import default_favourable_class  # noqa: E402
from fairness.training import load_or_train  # noqa: E402

DEFAULT_MODELS = "german:4x2,german:8x2,credit:4x2,credit:8x2,adult:4x2,adult:8x2"


def _say(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def _grid_points(model, choices, rng, n: int) -> np.ndarray:
    lo, hi = np.array(model.box_lower, dtype=np.int64), np.array(model.box_upper, dtype=np.int64)
    x = rng.integers(lo, hi + 1, size=(n, len(lo)))
    for j, values in choices.items():
        x[:, j] = rng.choice(np.array(values, dtype=np.int64), size=n)
    return x


def _flips(model, favourable: int, x: np.ndarray, source: int, target: int) -> int:
    """How many grid points are decided favourably with `source` and not with `target` (exact)."""
    decided = []
    for index in (source, target):
        points = x.copy()
        for c, v in zip(model.sensitive_columns, model.slices()[index]):
            points[:, c] = v
        z = integer_logits(model.net, points.astype(object))
        diff = z[:, favourable] - z[:, 1 - favourable]
        wins = diff > 0 if favourable == 1 else diff >= 0  # argmax, lowest index on a tie
        decided.append(np.asarray(wins, dtype=bool))
    return int(np.sum(decided[0] & ~decided[1]))


def _float_net(model):
    s = model.scale_bits
    ws = [np.array(w, dtype=float) / (1 << s) for w in model.net.weights]
    bs = [np.array(b, dtype=float) / (1 << (s * (l + 2))) for l, b in enumerate(model.net.biases)]
    return ws, bs


def _margin_and_grad(ws, bs, x: np.ndarray, favourable: int):
    """Float margins of a batch and their gradients with respect to the inputs (ReLU almost everywhere)."""
    h, masks = x, []
    for w, b in zip(ws[:-1], bs[:-1]):
        z = h @ w.T + b
        masks.append(z > 0)
        h = np.where(z > 0, z, 0.0)
    row = ws[-1][favourable] - ws[-1][1 - favourable]
    margin = h @ row + (bs[-1][favourable] - bs[-1][1 - favourable])
    g = np.tile(row, (len(x), 1))
    for w, mask in zip(reversed(ws[:-1]), reversed(masks)):
        g = (g * mask) @ w
    return margin, g


def _adversarial(model, favourable, choices, rng, n: int, source: int, target: int, steps: int = 60) -> int:
    one = 1 << model.scale_bits
    ws, bs = _float_net(model)
    lo = np.array(model.box_lower, dtype=float) / one
    hi = np.array(model.box_upper, dtype=float) / one
    x = _grid_points(model, choices, rng, n).astype(float) / one
    copies = []
    for index in (source, target):
        fixed = {c: v / one for c, v in zip(model.sensitive_columns, model.slices()[index])}
        copies.append(fixed)
    step = 0.05 * (hi - lo)
    for _ in range(steps):
        xs = []
        for fixed in copies:
            y = x.copy()
            for c, v in fixed.items():
                y[:, c] = v
            xs.append(y)
        m0, g0 = _margin_and_grad(ws, bs, xs[0], favourable)
        m1, g1 = _margin_and_grad(ws, bs, xs[1], favourable)
        grad = np.where((m0 < -m1)[:, None], g0, -g1)  # ascent on min(m0, -m1)
        for c in model.sensitive_columns:
            grad[:, c] = 0.0
        x = np.clip(x + step * np.sign(grad), lo, hi)
        step = step * 0.95
    grid = np.clip(np.rint(x * one), model.box_lower, model.box_upper).astype(np.int64)
    for j, values in choices.items():  # snap to the nearest category
        vals = np.array(values, dtype=np.int64)
        grid[:, j] = vals[np.abs(grid[:, j][:, None] - vals[None, :]).argmin(axis=1)]
    return _flips(model, favourable, grid, source, target)


def measure(dataset: str, hidden: tuple[int, ...], variant: str, args) -> dict:
    art = load_or_train(dataset, hidden, variant, args.cache)
    model = to_fixed_point(art, 16)
    favourable = default_favourable_class(tuple(art.class_labels))
    choices = categorical_choices(art.preprocessor, model)
    name = f"{dataset}-{'x'.join(map(str, hidden))}-{variant}"
    _say(f"{name}: global search ({len(choices)} categorical features held to their categories)")
    rng = np.random.default_rng(0)
    pairs = []
    for r in global_search(model, favourable, args.time_limit, choices=choices):
        t0 = time.perf_counter()
        random_flips = _flips(model, favourable, _grid_points(model, choices, rng, args.random), r.source, r.target)
        adversarial_flips = _adversarial(model, favourable, choices, rng, args.adversarial, r.source, r.target)
        check_s = time.perf_counter() - t0
        labels = [", ".join(model.slice_labels(model.slices()[i])) for i in (r.source, r.target)]
        pairs.append({"source": labels[0], "target": labels[1], "status": r.status, "objective": r.objective,
                      "bound": r.bound, "seconds": r.seconds, "message": r.message,
                      "grid_counterexample": bool(r.counterexample and r.counterexample.grid_point is not None),
                      "random": args.random, "random_flips": random_flips,
                      "adversarial": args.adversarial, "adversarial_flips": adversarial_flips, "check_s": check_s})
        _say(f"  {labels[0]} -> {labels[1]}: {r.status} t* {r.objective} in {r.seconds:.2f} s; flips: random "
             f"{random_flips}/{args.random}, adversarial {adversarial_flips}/{args.adversarial}")
    consistent = all(p["random_flips"] == 0 and p["adversarial_flips"] == 0 for p in pairs if p["status"] == FAIR)
    return {"model": name, "favourable_class": art.class_labels[favourable], "pairs": pairs,
            "verdict": ("discriminates" if any(p["status"] == COUNTEREXAMPLE for p in pairs) else
                        "2-fair" if all(p["status"] == FAIR for p in pairs) else "unknown"),
            "fair_pairs_corroborated": consistent}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--models", default=DEFAULT_MODELS)
    ap.add_argument("--variants", default="fair,unfair")
    ap.add_argument("--time-limit", type=float, default=100.0)
    ap.add_argument("--random", type=int, default=100_000)
    ap.add_argument("--adversarial", type=int, default=1000)
    ap.add_argument("--cache", default=None, help="trained-model cache (default ~/.cache/fairproof/models)")
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "global_search.json"))
    args = ap.parse_args()
    rows = []
    for spec in args.models.split(","):
        dataset, shape = spec.split(":")
        hidden = tuple(int(h) for h in shape.split("x"))
        for variant in args.variants.split(","):
            rows.append(measure(dataset, hidden, variant, args))
    print(f"{'model':<20} {'pair':<44} {'status':<16} {'t* (logits)':>12} {'MILP s':>7} {'random flips':>13} "
          f"{'adversarial flips':>17}")
    for row in rows:
        for p in row["pairs"]:
            pair = f"{p['source'][:20]} -> {p['target'][:20]}"
            value = "-" if p["objective"] is None else f"{p['objective']:+.4g}"
            print(f"{row['model']:<20} {pair:<44} {p['status']:<16} {value:>12} {p['seconds']:>7.2f} "
                  f"{p['random_flips']:>6}/{p['random']:<6} {p['adversarial_flips']:>8}/{p['adversarial']:<8}")
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps({"rows": rows}, indent=2) + "\n")
    print(f"wrote {args.out}")
    return 0 if all(r["fair_pairs_corroborated"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
