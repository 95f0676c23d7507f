"""What the lenses cost beside the radius, per paper model, and PBA's group scores.

Per model (dataset, hidden sizes, fair/unfair), for the first N test customers:

- spread (zero knowledge): the statement of the bucket each customer's radius
  certificate needs, built with and without the spread lens: constraints
  (both, and the ratio); for the most common bucket, keys set up for both and
  the customers of that bucket proved with both in the same process
  (mcl backend, in-process Groth16), median prove time and the ratio; every
  proof verified, and the proved spread (public inputs) equal to the
  plaintext `fairness.spread`;
- persistence (zero knowledge): the same buckets with the persistence lens as
  well (delta --zk-delta, default 0.25 standardised units), twice: with CROWN's
  fixed slopes (the statement of cards made before optimised slopes) and with
  the optimised ones (`alpha_bits`, the LP's slopes): constraints, and prove
  time against the radius alone on the most common bucket; every proof
  verified and its bounds equal to the plaintext `proved_bounds` of its
  slopes; the status of every proved counterfactual, for both;
- spread (plaintext): k and distinct decisions per customer, time per query;
- persistence (plaintext): sound LP bounds per single-attribute flip at
  delta 1 and at the proofs' delta, time per flip, status counts; linear bound
  propagation beside it, with CROWN's slopes and with the optimised ones (what
  the proofs state; `fairness.persistence.optimised_bounds`): time, interval
  width over the LP's, the largest distance of an optimised bound from the
  LP's (logits) and the pairs whose status (favoured, disfavoured) the LP
  gives and the optimised bounds do not; the exact MILP optimum and the gap
  (LP bound to attained optimum) when --exact.

With --pba, PBA's group tables (`audits.persistence`) for the first
--pba-individuals test individuals of each model at --pba-deltas.

    .venv/bin/python benchmarks/lenses.py [--models german:4x2,adult:4x2] [--variants fair,unfair]
                                          [--queries 10] [--no-prove] [--exact]

Writes benchmarks/results/lenses.json and prints a table.
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import statistics
import sys
import time
from collections import Counter
from fractions import Fraction
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from audits.persistence import audit_persistence  # noqa: E402
from circuits.backends import get_backend  # noqa: E402
from circuits.builder import ConstraintSystem  # noqa: E402
from fairness.certificate import certify  # noqa: E402
from fairness.datasets import load_dataset  # noqa: E402
from fairness.fixed_point import to_fixed_point  # noqa: E402
from fairness.slope_plans import DEFAULT_ALPHA_BITS  # noqa: E402
from fairness.persistence import (INCONCLUSIVE, crown_bounds, exact_bounds, lp_bounds,  # noqa: E402
                                  optimised_bounds, perturbation_box, proved_bounds, single_attribute_flips)
from fairness.spread import (DEFAULT_BUCKET_WIDTH, SpreadLens, bucket_width_at, default_favourable_class,  # noqa: E402
                             spread)
from fairness.training import load_or_train  # noqa: E402
from offline_precompute.certify import query_from_record  # noqa: E402
from statement import build_statement, statement_relation  # noqa: E402
from statement.adapter import bucket_sizes, statement_inputs, statement_shape  # noqa: E402
from statement.proof_system import Groth16  # noqa: E402

EPS_BITS = 16
SALT = 0x5EED
OPTIMISED = "radius+spread+persistence (optimised slopes)"


def _say(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def constraints(shape) -> int:
    cs = ConstraintSystem(with_values=False, keep_constraints=False)
    build_statement(cs, shape)
    return cs.n_constraints


def measure(dataset: str, hidden: tuple[int, ...], variant: str, args) -> dict:
    art = load_or_train(dataset, hidden, variant, args.cache)
    model = to_fixed_point(art, 16)
    labels = tuple(art.class_labels)
    lens = SpreadLens(default_favourable_class(labels), bucket_width_at(model, DEFAULT_BUCKET_WIDTH))
    records = load_dataset(dataset).records_test
    queries = []
    for r in records:
        try:
            queries.append(query_from_record(art, model, dict(r)))
        except Exception:  # outside the domain box: no certificate either
            continue
        if len(queries) == args.queries:
            break
    name = f"{dataset}-{'x'.join(map(str, hidden))}-{variant}"
    _say(f"{name}: certifying {len(queries)} customers")
    certs = [certify(model, q, eps_bits=EPS_BITS) for q in queries]

    # plaintext spread
    t = time.perf_counter()
    spreads = [spread(model, q, lens) for q in queries]
    spread_ms = (time.perf_counter() - t) * 1000 / len(queries)

    # constraints per bucket: the radius alone, with the spread, with both lenses
    numeric = [j for j in art.numeric_columns if model.box_lower[j] < model.box_upper[j]]
    zk_delta = -(-int(Fraction(args.zk_delta) * (1 << model.scale_bits)))
    persistent = model.net.n_classes == 2 and bool(numeric)

    def shapes(k: int, f: int) -> dict:
        bare = statement_shape(model, region_slots=k, farkas_slots=f, eps_bits=EPS_BITS)
        with_spread = dataclasses.replace(bare, spread_width=lens.bucket_width, favourable_class=lens.favourable_class)
        out = {"radius": bare, "radius+spread": with_spread}
        if persistent:
            out["radius+spread+persistence"] = dataclasses.replace(with_spread, persistence_columns=tuple(numeric))
            out[OPTIMISED] = dataclasses.replace(out["radius+spread+persistence"], alpha_bits=DEFAULT_ALPHA_BITS)
        return out

    buckets = Counter(bucket_sizes(c) for c in certs)
    sizes = {}
    for (k, f) in sorted(buckets):
        sizes[(k, f)] = {label: constraints(shape) for label, shape in shapes(k, f).items()}
        _say(f"  k{k}-f{f}: " + " -> ".join(f"{n} ({label})" for label, n in sizes[(k, f)].items()))
    per_customer = [sizes[bucket_sizes(c)] for c in certs]
    ratio_constraints = statistics.median(s["radius+spread"] / s["radius"] for s in per_customer)
    ratio_persistence = (statistics.median(s["radius+spread+persistence"] / s["radius"] for s in per_customer)
                         if persistent else None)
    ratio_optimised = (statistics.median(s[OPTIMISED] / s["radius+spread+persistence"] for s in per_customer)
                       if persistent else None)

    # proving, on the most common bucket
    prove = None
    proved_status: dict[str, Counter] = {"crown": Counter(), "optimised": Counter()}
    if not args.no_prove:
        (k, f), _ = buckets.most_common(1)[0]
        system = Groth16(get_backend())
        times: dict[str, list[float]] = {}
        agree = Counter()
        for label, shape in shapes(k, f).items():
            _say(f"  setting up k{k}-f{f} ({label})")
            relation = statement_relation(shape)
            pk, vk = system.setup(relation)
            prepared = system.prepare(vk)
            times[label] = []
            for cert in certs:
                if bucket_sizes(cert) != (k, f):
                    continue
                public, witness = statement_inputs(model, SALT, cert, shape,
                                                   persistence_delta=zk_delta if shape.persistence else None)
                cs = ConstraintSystem(with_values=True, keep_constraints=False)
                build_statement(cs, shape, public, witness)
                t = time.perf_counter()
                proof = system.prove(pk, public.field_elements(), cs.witness())
                times[label].append(time.perf_counter() - t)
                assert system.verify(prepared, public.field_elements(), proof)
                if shape.spread:
                    sp = spread(model, cert.query, lens)
                    agree[label + " spread"] += (public.spread_decisions == sp.decisions
                                                 and public.spread_buckets == sp.distinct_buckets)
                if shape.persistence:
                    plain = proved_bounds(model, cert.query, lens.favourable_class, numeric, zk_delta,
                                          alpha_bits=shape.alpha_bits)
                    agree[label + " persistence"] += list(public.persistence_bounds) == plain
                    own = model.slice_points(model.query_slice(cert.query))  # one point per attribute
                    counts = proved_status["optimised" if shape.alpha_bits else "crown"]
                    for (a, v), (lo, hi) in zip(shape.persistence_pairs, public.persistence_bounds):
                        if v != own[a]:
                            counts["favoured" if lo > 0 else "disfavoured" if hi < 0 else "inconclusive"] += 1
        base = statistics.median(times["radius"])
        prove = {"bucket": f"k{k}-f{f}", "customers": len(times["radius"]),
                 "median_s": {label: statistics.median(v) for label, v in times.items()},
                 "ratio": {label: statistics.median(v) / base for label, v in times.items()},
                 "proved_equals_plaintext": dict(agree)}

    # persistence, plaintext: at delta 1 (the table's) and at the proofs' delta
    plain_persistence = {str(d): plaintext_persistence(model, lens, queries, numeric, Fraction(d), args.exact)
                         for d in ("1", args.zk_delta)}
    pba = None
    if args.pba:
        more = []
        for r in records:
            try:
                more.append(query_from_record(art, model, dict(r)))
            except Exception:
                continue
            if len(more) == args.pba_individuals:
                break
        deltas = [Fraction(d) for d in args.pba_deltas.split(",")]
        _say(f"  PBA group scores over {len(more)} individuals")
        t = time.perf_counter()
        scores = audit_persistence(model, more, lens.favourable_class, numeric, deltas)
        pba = {"individuals": len(more), "seconds": time.perf_counter() - t,
               "rows": [{"attribute": g.attribute, "group": g.group, "setting": g.setting, "delta": str(g.delta),
                         "pairs": g.pairs, "favoured": g.favoured, "disfavoured": g.disfavoured,
                         "inconclusive": g.inconclusive} for g in scores]}
        for g in scores:
            print(f"    {name:<20} {g.group[:24]:<24} {g.setting:<9} delta {float(g.delta):<5g} pairs {g.pairs:>4} "
                  f"favoured {g.share(g.favoured):6.1%} disfavoured {g.share(g.disfavoured):6.1%} "
                  f"inconclusive {g.share(g.inconclusive):6.1%}", flush=True)
    return {
        "pba": pba,
        "persistence_plaintext": plain_persistence,
        "model": name, "customers": len(queries),
        "k_distribution": dict(Counter(s.distinct_buckets for s in spreads)),
        "decision_changes": sum(s.distinct_decisions > 1 for s in spreads),
        "spread_ms_per_query": spread_ms,
        "buckets": {f"k{k}-f{f}": {"customers": n, "constraints": sizes[(k, f)]} for (k, f), n in buckets.items()},
        "constraint_ratio_median": ratio_constraints,
        "added_constraints_median": statistics.median(s["radius+spread"] - s["radius"] for s in per_customer),
        "persistence_constraint_ratio_median": ratio_persistence,
        "persistence_added_constraints_median": (statistics.median(
            s["radius+spread+persistence"] - s["radius+spread"] for s in per_customer) if persistent else None),
        "optimised_over_crown_lens_constraints_median": ratio_optimised,
        "optimised_added_constraints_median": (statistics.median(
            s[OPTIMISED] - s["radius+spread+persistence"] for s in per_customer) if persistent else None),
        "zk_delta": args.zk_delta, "proved_persistence_status": {k: dict(v) for k, v in proved_status.items()},
        "prove": prove,
        "persistence": plain_persistence["1"],
    }


def plaintext_persistence(model, lens, queries, numeric, delta: Fraction, exact: bool) -> dict:
    """LP, CROWN and optimised bounds of every single-attribute flip of the customers at delta."""
    statuses, gaps, lp_times, crown_times, opt_times, widths, opt_widths = Counter(), [], [], [], [], [], []
    off_lp, missed = [], 0
    for q in queries:
        box = perturbation_box(model, q, numeric, delta)
        for flip in single_attribute_flips(model, q):
            t = time.perf_counter()
            b = lp_bounds(model, lens.favourable_class, flip, box)
            lp_times.append(time.perf_counter() - t)
            statuses[b.status] += 1
            t = time.perf_counter()
            c = crown_bounds(model, lens.favourable_class, flip, box)
            crown_times.append(time.perf_counter() - t)
            t = time.perf_counter()
            o, _, _ = optimised_bounds(model, lens.favourable_class, flip, box, DEFAULT_ALPHA_BITS)
            opt_times.append(time.perf_counter() - t)
            off_lp.append(float(max(b.lower - o.lower, o.upper - b.upper)))
            missed += b.status != INCONCLUSIVE and o.status != b.status
            if b.upper > b.lower:
                widths.append(float((c.upper - c.lower) / (b.upper - b.lower)))
                opt_widths.append(float((o.upper - o.lower) / (b.upper - b.lower)))
            if exact:
                low, high = exact_bounds(model, lens.favourable_class, flip, box)
                gaps.append(float(low - b.lower) + float(b.upper - high))
    return {"delta": str(delta), "flips": sum(statuses.values()), "status": dict(statuses),
            "lp_ms_median": statistics.median(lp_times) * 1000 if lp_times else None,
            "gap_median": statistics.median(gaps) if gaps else None,
            "crown_ms_median": statistics.median(crown_times) * 1000 if crown_times else None,
            "crown_over_lp_width_median": statistics.median(widths) if widths else None,
            "optimised_ms_median": statistics.median(opt_times) * 1000 if opt_times else None,
            "optimised_over_lp_width_median": statistics.median(opt_widths) if opt_widths else None,
            "optimised_off_lp_max": max(off_lp) if off_lp else None,
            "status_missed_by_optimised": missed}


def _print_row(r: dict) -> None:
    p = r["prove"] or {}
    times = " -> ".join(f"{s:.2f}s" for s in p.get("median_s", {}).values())
    ratios = ", ".join(f"{label} x{v:.3f}" for label, v in p.get("ratio", {}).items() if label != "radius")
    for d, pp in r["persistence_plaintext"].items():
        print(f"{r['model']:<20} persistence at delta {d}: {pp['flips']} flips, LP {pp['status']}; width over the "
              f"LP's: CROWN {pp['crown_over_lp_width_median'] or float('nan'):.3f}, optimised "
              f"{pp['optimised_over_lp_width_median'] or float('nan'):.5f}; optimised at most "
              f"{pp['optimised_off_lp_max'] or 0:.2e} logits from the LP, statuses missed "
              f"{pp['status_missed_by_optimised']}; ms LP {pp['lp_ms_median'] or 0:.1f} CROWN "
              f"{pp['crown_ms_median'] or 0:.1f} optimised {pp['optimised_ms_median'] or 0:.1f}", flush=True)
    if r["optimised_over_crown_lens_constraints_median"] is not None:
        print(f"{r['model']:<20} optimised slopes: x{r['optimised_over_crown_lens_constraints_median']:.4f} constraints "
              f"(+{r['optimised_added_constraints_median']:.0f}) over CROWN's lens", flush=True)
    pers = r["persistence"]
    text = (f"{r['model']:<20} constraints spread x{r['constraint_ratio_median']:.4f} "
            f"(+{r['added_constraints_median']:.0f})")
    if r["persistence_constraint_ratio_median"] is not None:
        text += (f", spread+persistence x{r['persistence_constraint_ratio_median']:.4f} "
                 f"(+{r['persistence_added_constraints_median']:.0f} for persistence)")
    text += (f" | prove {times or '-'} ({ratios or '-'}; {p.get('customers', 0)} in {p.get('bucket', '-')}; "
             f"proved = plaintext {p.get('proved_equals_plaintext', '-')}) | proved persistence at "
             f"{r['zk_delta']} {r['proved_persistence_status']} | k {r['k_distribution']} | LP at d=1 {pers['status']} "
             f"{pers['lp_ms_median'] or 0:.1f} ms" + (f" gap {pers['gap_median']:.3f}" if pers['gap_median'] is not None
                                                     else "")
            + f" crown {pers['crown_ms_median'] or 0:.1f} ms width/lp {pers['crown_over_lp_width_median'] or float('nan'):.2f}")
    print(text, flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--models", default="german:4x2,german:2x4,credit:4x2,credit:2x4,adult:4x2,adult:8x2")
    ap.add_argument("--variants", default="fair,unfair")
    ap.add_argument("--queries", type=int, default=10)
    ap.add_argument("--no-prove", action="store_true", help="constraints only, no key setup or proofs")
    ap.add_argument("--exact", action="store_true", help="also the exact MILP optimum of persistence (the gap)")
    ap.add_argument("--zk-delta", default="0.25", help="the persistence lens's delta in the proofs (standardised)")
    ap.add_argument("--pba", action="store_true", help="PBA's group tables per model")
    ap.add_argument("--pba-individuals", type=int, default=200)
    ap.add_argument("--pba-deltas", default="0.25,0.5,1")
    ap.add_argument("--cache", default=None, help="trained-model cache (default ~/.cache/fairproof/models)")
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "lenses.json"))
    args = ap.parse_args()
    rows = []
    for spec in args.models.split(","):
        dataset, shape = spec.split(":")
        hidden = tuple(int(h) for h in shape.split("x"))
        for variant in args.variants.split(","):
            rows.append(measure(dataset, hidden, variant, args))
            _print_row(rows[-1])
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps({"rows": rows}, indent=2) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
