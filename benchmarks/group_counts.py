"""Group counts on a public audit dataset, proved in zero knowledge: size, time, memory, and snarkjs beside it.

Per model (dataset, hidden sizes, fair/unfair) and row count N, in a child
process (its peak RSS is the figure reported):

- the audit dataset (the model's dataset, training then test rows, inside the
  domain box) and the plaintext counts (exact integer forward passes);
- the audit circuit (statement.group_counts): constraints, constraints per row,
  build time; single-party key setup (benchmark keys); witness and proof
  time; our verification (the whole auditor's check: digest, counts, pairing);
- the same circuit and witness written as .r1cs/.wtns with a benchmark zkey
  (known toxic waste): `snarkjs groth16 prove` and `verify` on them, the peer
  in the same run, and the ratio of prove times; our exported proof verified
  by snarkjs, and refused once a count is changed.

    .venv/bin/python benchmarks/group_counts.py [--models german:4x2:fair,adult:4x2:fair]
                                                [--rows 1000] [--skip-snarkjs]

Writes benchmarks/results/group_counts.json and prints a table.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

from groth16_vs_peers import run_child, worker  # noqa: E402

RESULTS = HERE / "results" / "group_counts.json"


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def one(dataset: str, hidden: tuple[int, ...], variant: str, rows: int, workdir: Path) -> dict:
    """Everything measured inside this (child) process."""
    from circuits.backends import get_backend
    from circuits.builder import ConstraintSystem
    from circuits.snarkjs import write_r1cs, write_wtns
    from circuits.snarkjs.json_formats import dump_json
    from fairness.model import save_artifact
    from fairness.training import load_or_train
    from prover_service.audit_proving import GroupCountsProver, audit_dataset
    from prover_service.publishing import commit_model
    from prover_service.workspace import ModelWorkspace
    from statement.group_counts import (GroupCountsPublic, GroupCountsWitness, build_group_counts,
                                        dataset_digest, plain_counts)
    from statement.adapter import model_commitment
    from verifier_client.audit import verify_group_counts

    backend = get_backend()
    art = load_or_train(dataset, hidden, variant, Path.home() / ".cache" / "fairproof" / "models")
    root = workdir / "model"
    save_artifact(art, root)
    workspace = ModelWorkspace.open(root)
    commit_model(workspace, model_id=f"{dataset}-{variant}")
    data, outside = audit_dataset(workspace, rows=rows)
    prover = GroupCountsProver(workspace, backend, progress=log, single_party=True)
    shape = prover.shape(rows)
    model = prover.model
    out: dict = {"model": f"{dataset} {'x'.join(map(str, hidden))} {variant}", "rows": rows, "outside_box": outside,
                 "n_inputs": shape.n_inputs, "slices": shape.n_slices}

    t0 = time.perf_counter()
    decisions = [model.net.decision(list(x)) for x in data.rows]
    counts = plain_counts(shape, decisions, data.rows, data.labels)
    out["plaintext_s"] = time.perf_counter() - t0

    t0 = time.perf_counter()
    relation, _, _ = prover.keys(shape)  # builds the circuit, then the keys
    out["build_and_setup_s"] = time.perf_counter() - t0
    out["constraints"] = relation.n_constraints
    out["constraints_per_row"] = relation.n_constraints / rows

    t0 = time.perf_counter()
    bundle = prover.prove(data)
    out["prove_total_s"] = time.perf_counter() - t0
    card = workspace.card()
    t0 = time.perf_counter()
    verdict = verify_group_counts(bundle, card, data, backend)
    out["verify_s"] = time.perf_counter() - t0
    if not verdict:
        raise RuntimeError(f"our proof did not verify: {verdict.reason}")
    if [(g.rows, g.positives, g.selected, g.true_positives) for g in bundle.groups] != \
            [(c.rows, c.positives, c.selected, c.true_positives) for c in counts]:
        raise RuntimeError("the proved counts differ from the plaintext counts")
    out["counts"] = [g.model_dump() for g in bundle.groups]
    metrics = verdict.metrics
    out["disparate_impact"] = None if metrics.disparate_impact is None else float(metrics.disparate_impact)
    out["statistical_parity"] = None if metrics.statistical_parity is None else float(metrics.statistical_parity)
    out["equal_opportunity"] = None if metrics.equal_opportunity is None else float(metrics.equal_opportunity)

    # The prove step alone, timed without the witness (the bundle above timed both).
    from statement.proof_system import Groth16, RelationKey

    relation, pk, vk = prover.keys(shape)
    public = GroupCountsPublic(model_commitment(model, prover.salt, shape), dataset_digest(shape, list(data.rows),
                                                                                             list(data.labels)), counts)
    witness = GroupCountsWitness(model.net.weights, model.net.biases, prover.salt, tuple(data.rows), tuple(data.labels))
    t0 = time.perf_counter()
    cs = ConstraintSystem(with_values=True, keep_constraints=False)
    build_group_counts(cs, shape, public, witness)
    values = cs.witness()
    out["witness_s"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    Groth16(backend).prove(RelationKey(relation, pk), public.field_elements(), values)
    out["prove_s"] = time.perf_counter() - t0

    # Files for the peer: the circuit, the witness, and our exported proof with its key.
    from statement.group_counts import group_counts_relation

    write_r1cs(workdir / "circuit.r1cs", group_counts_relation(shape))
    write_wtns(workdir / "witness.wtns", values)
    export = workdir / "export"
    export.mkdir()
    dump_json(export / "verification_key.json", card.audit_circuit(bundle.circuit).verifying_key.model_dump(mode="json"))
    dump_json(export / "proof.json", bundle.proof.model_dump(mode="json"))
    dump_json(export / "public.json", list(bundle.public_signals))
    return out


def measure(spec: str, rows: int, args) -> dict:
    dataset, hidden, variant = spec.split(":")
    with tempfile.TemporaryDirectory(prefix="group-counts-") as tmp:
        work = Path(tmp)
        log(f"{spec}, {rows} rows: proving (child process)")
        wall, code, out, err, rss = run_child([sys.executable, __file__, "--one", spec, str(rows), str(work)],
                                              args.timeout)
        if code != 0:
            raise RuntimeError(f"{spec}: the child failed: {err[-3000:]}")
        row = json.loads(out.strip().splitlines()[-1])
        row["peak_rss_mb"] = rss / 2**20
        from circuits.snarkjs import find_snarkjs

        snarkjs = None if args.skip_snarkjs else find_snarkjs()
        if snarkjs:
            ex = work / "export"
            wall, code, out, err, _ = run_child([snarkjs, "groth16", "verify", str(ex / "verification_key.json"),
                                                 str(ex / "public.json"), str(ex / "proof.json")], args.timeout)
            row["snarkjs_verifies_ours"] = code == 0 and "OK" in out
            row["snarkjs_verify_s"] = wall
            public = json.loads((ex / "public.json").read_text())
            public[4] = str(int(public[4]) + 1)
            (ex / "public.json").write_text(json.dumps(public))
            _, code, out, _, _ = run_child([snarkjs, "groth16", "verify", str(ex / "verification_key.json"),
                                            str(ex / "public.json"), str(ex / "proof.json")], args.timeout)
            row["snarkjs_refuses_tampered"] = not (code == 0 and "OK" in out)
            log(f"{spec}: snarkjs prove on the same circuit and witness (benchmark zkey)")
            zkey = work / "circuit.zkey"
            res, _ = worker(["zkey", str(work / "circuit.r1cs"), str(zkey), "mcl"], args.timeout)
            proof, pub = work / "snarkjs_proof.json", work / "snarkjs_public.json"
            wall, code, out, err, srss = run_child([snarkjs, "groth16", "prove", str(zkey), str(work / "witness.wtns"),
                                                    str(proof), str(pub)], args.timeout)
            if code != 0:
                raise RuntimeError(f"snarkjs prove failed: {err[-2000:]}")
            row["snarkjs_prove_s"], row["snarkjs_prove_peak_rss_mb"] = wall, srss / 2**20
            row["ours_over_snarkjs_prove"] = row["prove_s"] / wall
        return row


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--one":
        spec, rows, work = sys.argv[2], int(sys.argv[3]), Path(sys.argv[4])
        dataset, hidden, variant = spec.split(":")
        print(json.dumps(one(dataset, tuple(int(h) for h in hidden.split("x")), variant, rows, work)), flush=True)
        return
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--models", default="german:4x2:fair,german:4x2:unfair,adult:4x2:fair",
                   help="dataset:hidden:variant, comma-separated")
    p.add_argument("--rows", default="1000", help="row counts, comma-separated")
    p.add_argument("--skip-snarkjs", action="store_true")
    p.add_argument("--timeout", type=float, default=7200.0)
    args = p.parse_args()
    results = []
    for spec in args.models.split(","):
        for rows in (int(r) for r in args.rows.split(",")):
            results.append(measure(spec, rows, args))
            RESULTS.parent.mkdir(exist_ok=True)
            RESULTS.write_text(json.dumps({"load_avg": os.getloadavg(), "results": results}, indent=1))
    header = ("model", "rows", "constraints", "/row", "setup s", "witness s", "prove s", "verify s", "RSS MB",
              "snarkjs prove s", "ours/snarkjs", "snarkjs ok/tamper", "DI", "SP", "EO")
    print(" | ".join(header))
    for r in results:
        print(" | ".join(str(x) for x in (
            r["model"], r["rows"], r["constraints"], f"{r['constraints_per_row']:.0f}", f"{r['build_and_setup_s']:.1f}",
            f"{r['witness_s']:.1f}", f"{r['prove_s']:.1f}", f"{r['verify_s']:.2f}", f"{r['peak_rss_mb']:.0f}",
            f"{r.get('snarkjs_prove_s', float('nan')):.1f}", f"{r.get('ours_over_snarkjs_prove', float('nan')):.2f}",
            f"{r.get('snarkjs_verifies_ours')}/{r.get('snarkjs_refuses_tampered')}",
            *(f"{r[k]:.3f}" if r[k] is not None else "-" for k in ("disparate_impact", "statistical_parity",
                                                                      "equal_opportunity")))))
    print(f"wrote {RESULTS}")


if __name__ == "__main__":
    main()
