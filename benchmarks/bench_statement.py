"""Statement circuit size and build time for a German-credit-sized model.

Trains the German (4, 2) network (19 free inputs, one binary sensitive
feature: 2 slices), quantises it at several scales s (eps at t = s), and for
each bucket (K region slots, F Farkas slots per slice) builds the statement
WITHOUT values (key-setup path) to count constraints, split into the fixed
part, per region slot, per Farkas entry and per slice. Then, at the smallest
scale, certifies real test queries and times building the circuit WITH the
witness (the prover's path) and checking satisfaction.

Usage: python benchmarks/bench_statement.py [--quick]
Prints a table and writes benchmarks/results/statement.json.
"""
from __future__ import annotations

import argparse
import collections
import json
import re
import sys
import time
from pathlib import Path

from circuits.builder import ConstraintSystem
from statement import build_statement
from statement.widths import widths


def breakdown(cs: ConstraintSystem, shape) -> dict:
    per = collections.Counter()
    for label in cs._labels:
        head, _, rest = label.partition("/")
        if re.fullmatch(r"slice\d+", head):
            sub = rest.split("/", 1)[0]
            m = re.fullmatch(r"(slot|covers|farkas)(\d+)", sub)
            per["slot" if m and m.group(1) in ("slot", "covers") else "farkas" if m else "slice_other"] += 1
        else:
            per["fixed"] += 1
    S = shape.n_slices
    return {
        "constraints": cs.n_constraints,
        "fixed": per["fixed"],
        "per_slot": round(per["slot"] / (S * shape.region_slots), 1),
        "per_farkas_entry": round(per["farkas"] / (S * shape.farkas_slots), 1),
        "per_slice": round((per["slot"] + per["farkas"] + per["slice_other"]) / S, 1),
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="s = 8 and 16, K = 16 and 64 only")
    ap.add_argument("--data-dir", default=None)
    args = ap.parse_args()
    from fairness.datasets import load_dataset
    from fairness.fixed_point import agreement_report, quantise_query, to_fixed_point
    from fairness.training import default_config, train_on_dataset
    from statement.adapter import bucket_sizes, statement_inputs, statement_shape

    ds = load_dataset("german", args.data_dir)
    art, res = train_on_dataset(ds, default_config("german", (4, 2), "unfair"))
    print(f"german (4, 2): test accuracy {res.test_accuracy:.3f}", file=sys.stderr)
    scales = (8, 16) if args.quick else (8, 10, 12, 16)
    ks = (16, 64) if args.quick else (16, 32, 64)
    rows = []
    print(f"{'s':>3} {'agree':>6} {'max|dz|':>8} {'K':>3} {'F':>3} {'widest':>6} {'constraints':>11} {'fixed':>6} "
          f"{'/slot':>6} {'/farkas':>7} {'/slice':>8} {'build s':>7}")
    for s in scales:
        fp = to_fixed_point(art, s)
        agree = agreement_report(art.model, fp, ds.X_test)
        for k in ks:
            for f in (8, 16):
                shape = statement_shape(fp, region_slots=k, farkas_slots=f, eps_bits=s)
                t0 = time.perf_counter()
                cs = ConstraintSystem(with_values=False)
                build_statement(cs, shape)
                build_s = time.perf_counter() - t0
                row = {"scale_bits": s, "eps_bits": s, "K": k, "F": f, "agreement_rate": agree.agreement_rate,
                       "max_logit_error": agree.max_logit_error, "max_width_bits": widths(shape).max_bits,
                       "setup_build_seconds": round(build_s, 2), **breakdown(cs, shape)}
                rows.append(row)
                print(f"{s:3d} {agree.agreement_rate:6.3f} {agree.max_logit_error:8.1e} {k:3d} {f:3d} "
                      f"{row['max_width_bits']:6d} {row['constraints']:11d} {row['fixed']:6d} {row['per_slot']:6.0f} "
                      f"{row['per_farkas_entry']:7.0f} {row['per_slice']:8.0f} {build_s:7.2f}", flush=True)

    from fairness.certificate import certify
    s = scales[0]
    fp = to_fixed_point(art, s)
    proving = []
    print(f"\nwitness path at s = {s} (real certificates, bucket = next powers of two):")
    for i in range(4 if args.quick else 8):
        q = quantise_query(fp, ds.X_test[i])
        t0 = time.perf_counter()
        cert = certify(fp, q, eps_bits=s)
        cert_s = time.perf_counter() - t0
        k, f = bucket_sizes(cert)
        shape = statement_shape(fp, region_slots=max(k, 2), farkas_slots=max(f, 2), eps_bits=s)
        t0 = time.perf_counter()
        public, witness = statement_inputs(fp, 1234567, cert, shape)
        cs = ConstraintSystem()
        build_statement(cs, shape, public, witness)
        r1cs = cs.compile(wire_names=False)
        w = cs.witness()
        wit_s = time.perf_counter() - t0
        ok = r1cs.is_satisfied(w)
        proving.append({"query": i, "status": cert.status, "E": cert.eps, "regions": list(cert.regions_per_slice),
                        "bucket": shape.bucket, "constraints": r1cs.n_constraints, "certify_seconds": round(cert_s, 2),
                        "witness_build_seconds": round(wit_s, 2), "satisfied": ok})
        print(f"  query {i}: {cert.status:9s} E={cert.eps:5d} regions {cert.regions_per_slice} bucket {shape.bucket:8s} "
              f"{r1cs.n_constraints:7d} constraints, certify {cert_s:5.2f}s, build+witness {wit_s:5.2f}s, "
              f"satisfied {ok}", flush=True)
    out = Path(__file__).parent / "results" / "statement.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"model": "german (4, 2) unfair", "sizes": rows, "proving": proving}, indent=2) + "\n")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
