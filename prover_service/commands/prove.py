"""`fairproof prove`: a decision, its fairness certificate and the proof, as a bundle."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from .key_options import add_key_setup_arguments, key_setup_from_args
from .precompute import STORE_HELP
from .radius_option import (add_bucket_growth_argument, add_exact_budget_argument, add_exact_size_argument,
                           add_per_slice_argument, add_radius_argument, check_exact_budget)
from prover_service.commands.json_option import add_json_argument


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "prove",
        help="certify one query and prove it in zero knowledge; write the certificate bundle",
        description="Certify a query (plaintext, from the precompute store), build the statement witness, prove "
                    "it with the bucket's Groth16 key (set up on first use) and write the bundle a customer "
                    "verifies with `fairproof-verify BUNDLE --card CARD`.",
    )
    p.add_argument("--model", required=True, metavar="DIR", help="committed model directory")
    source = p.add_mutually_exclusive_group(required=True)
    source.add_argument("--index", type=int, metavar="I", help="row I of the dataset's test split")
    source.add_argument("--record", metavar="FILE", help="JSON customer record (raw attribute values)")
    p.add_argument("--out", required=True, metavar="BUNDLE.json", help="where to write the bundle")
    p.add_argument("--store", metavar="URL", help=STORE_HELP)
    p.add_argument("--data-dir", metavar="DIR", help="dataset directory (for --index)")
    p.add_argument("--data", metavar="FILE.csv", dest="data_dir",
                   help="an imported model's data (rows read through its schema), for --index")
    p.add_argument("--backend", choices=("mcl", "reference"), help="curve backend (default: fastest available)")
    p.add_argument("--delta", type=float, default=None, metavar="D",
                   help="the persistence lens's box: numeric features moved by up to D standard deviations "
                        "(default: the card's)")
    add_radius_argument(p)
    add_exact_budget_argument(p)
    add_exact_size_argument(p)
    add_bucket_growth_argument(p)
    add_per_slice_argument(p)
    add_key_setup_arguments(p)
    add_json_argument(p)
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from circuits.backends import get_backend
    from offline_precompute.certify import query_from_index, query_from_record, read_record
    from offline_precompute.db import open_database, resolve_store_url
    from fairness.errors import ModelError
    from prover_service.progress import StageBar
    from prover_service.proving import Prover
    from prover_service.workspace import ModelWorkspace, write_atomically

    from prover_service.tree_proving import is_tree_model

    if is_tree_model(args.model):
        from .tree_commands import prove_tree_command

        return prove_tree_command(args)
    check_exact_budget(args.exact_budget)
    workspace = ModelWorkspace.open(args.model)
    db = open_database(resolve_store_url(args.store, workspace.root))
    try:
        prover = Prover(workspace, db, get_backend(args.backend),
                        progress=lambda m: print(m, file=sys.stderr, flush=True), key_setup=key_setup_from_args(args),
                        radius=args.radius, bucket_growth=args.bucket_growth,
                        per_slice=args.per_slice, exact_budget=args.exact_budget,
                        exact_max_constraints=args.exact_max_constraints)
        model = prover.model
        if args.index is not None:
            query = query_from_index(workspace.artifact, model, args.index, args.data_dir)
        else:
            query = query_from_record(workspace.artifact, model, read_record(args.record))
        try:
            delta = prover.card.persistence_box(args.delta)
        except ValueError as exc:
            raise ModelError(str(exc)) from None
        with StageBar("proving") as bar:
            result = prover.prove(query, on_stage=bar.stage, persistence_delta=delta)
    finally:
        db.dispose()
    bundle = result.bundle
    write_atomically(Path(args.out), bundle.model_dump_json(indent=1) + "\n")
    return report(args, result, prover.card.bucket(bundle.bucket).shape.radius)


def report(args: argparse.Namespace, result, radius: str) -> int:
    """What `prove` prints of a proved certificate (its bundle already written to --out): a line each, or
    the JSON document with --json. `radius`: what the bucket's statement proves."""
    bundle, t = result.bundle, result.timings
    if args.json:
        from prover_service.outputs import ProveOutput, Radius, emit

        emit(ProveOutput(
            bundle_file=str(args.out), bucket=bundle.bucket, decision=bundle.decision,
            decision_label=bundle.decision_label, status=bundle.status, constraints=result.n_constraints,
            radius=Radius(numerator=bundle.eps.numerator, scale_bits=bundle.eps.scale_bits, decimal=bundle.eps.decimal,
                          kind="flip" if bundle.status != "certified" else "cap" if bundle.eps.capped else radius),
            online_seconds=t.online, certify_seconds=t.certify, witness_seconds=t.witness, prove_seconds=t.prove))
        return 0
    kind = "cap" if bundle.eps.capped else ("exact" if radius == "exact" else f"{radius}: a lower bound")
    print(f"decision: {bundle.decision_label}   status: {bundle.status}   eps: {bundle.eps.decimal}"
          + ("" if bundle.status != "certified" else f" ({kind})"))
    print(f"bucket {bundle.bucket}: {result.n_constraints} constraints; online {t.online:.2f} s "
          f"(certify {t.certify:.2f}, witness {t.witness:.2f}, prove {t.prove:.2f}); proof 128 bytes")
    print(f"bundle written to {args.out}")
    return 0
