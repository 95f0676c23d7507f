"""`fairproof commit`, `certify` and `prove` on a tree ensemble's model directory (prover_service.tree_proving).

A tree ensemble's certificate is the bound radius of `fairness.trees.radius` (the worst leaf each tree can
reach within eps, summed), proved whole by the one bucket its card lists; the options that choose a network's
radius, its lenses or its precompute store do not apply and are refused by name when given.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

# Options of the network commands a tree ensemble has no use for, with their defaults (given otherwise: refused).
NETWORK_ONLY = {"persistence": None, "favourable_class": None, "store": None, "delta": None, "per_slice": False,
                "scale_bits": None}


def refuse_network_options(args: argparse.Namespace) -> None:
    from fairness.errors import ModelError
    from fairness.radius import Radius

    given = [name for name, default in NETWORK_ONLY.items() if getattr(args, name, default) != default]
    if getattr(args, "radius", None) not in (None, Radius.HYBRID, Radius.BOUND):
        given.append("radius")
    if given:
        names = ", ".join("--" + n.replace("_", "-") for n in given)
        raise ModelError(f"{args.model} is a tree ensemble: {names} do(es) not apply (its certificates state the "
                         "bound radius, with no lens and no precompute store)")


def tree_query(card, args: argparse.Namespace) -> tuple[int, ...]:
    """The customer's query: their raw record (--record), or row --index of the bank's CSV (--data), encoded by
    the card's schema exactly as every verifier encodes a record."""
    from commitments.record import encode_record, read_record_file
    from fairness.errors import DataError
    from fairness.schema_csv import read_csv

    if args.index is None:
        return encode_record(card, read_record_file(str(args.record)))
    if not args.data_dir or not Path(args.data_dir).is_file():
        raise DataError("a tree ensemble's --index is a row of the bank's CSV: give it with --data FILE.csv")
    table = read_csv(card.feature_schema, args.data_dir)
    if not 0 <= args.index < len(table.records):
        raise DataError(f"row {args.index} is out of range: {args.data_dir} has {len(table.records)} rows (from 0)")
    return encode_record(card, table.records[args.index])


def commit_trees_command(args: argparse.Namespace) -> int:
    from circuits.backends import get_backend
    from fairness.certificate_data import DEFAULT_EPS_BITS
    from prover_service.tree_proving import TreeWorkspace, commit_trees

    refuse_network_options(args)
    workspace = TreeWorkspace.open(args.model)
    card = commit_trees(workspace, get_backend(), model_id=args.model_id,
                        eps_bits=DEFAULT_EPS_BITS if args.eps_bits is None else args.eps_bits,
                        description=args.description,
                        force=args.force, progress=lambda m: print(m, file=sys.stderr, flush=True))
    bucket = card.circuits[0]
    print(f"committed tree ensemble {card.model_id}: commitment {card.commitment}")
    print(f"  {bucket.shape.n_trees} trees padded to depth {bucket.shape.depth}, leaf values at "
          f"2^-{bucket.shape.value_bits}; scale 2^{card.scale_bits}, eps scale 2^{card.eps_scale_bits}, "
          f"card digest {card.digest()}")
    print(f"  bucket {bucket.bucket}: {bucket.n_constraints:,} constraints, key set up by the bank alone "
          "(single party)")
    print(f"  card: {workspace.files.card_path}   salt: {workspace.files.salt_path} (secret)", file=sys.stderr)
    return 0


def certify_tree_command(args: argparse.Namespace) -> int:
    from fairness.trees.radius import FLIP, certify_trees
    from prover_service.tree_proving import TreeWorkspace

    refuse_network_options(args)
    workspace = TreeWorkspace.open(args.model)
    card = workspace.files.card()
    cert = certify_trees(workspace.model(), tree_query(card, args), eps_bits=card.eps_scale_bits)
    out = {"decision": cert.decision, "decision_label": card.architecture.class_labels[cert.decision],
           "status": "counterfactual_flip" if cert.status == FLIP else "certified", "eps_numerator": cert.eps,
           "eps_scale_bits": cert.eps_bits, "eps": float(cert.eps_value), "capped": cert.capped,
           "flip_slice": cert.flip_slice, "radius": str(card.circuits[0].shape.radius)}
    if args.out:
        Path(args.out).write_text(json.dumps(out, indent=1) + "\n")
    if args.json:
        print(json.dumps(out))
        return 0
    print(f"decision: {out['decision_label']}")
    if cert.status == FLIP:
        _, labels = card.slice_labels(cert.flip_slice or 0)
        print(f"counterfactual flip: with {', '.join(labels)} and nothing else changed, the decision changes")
    else:
        print(f"eps: {float(cert.eps_value):.6g} (value {cert.eps}/2^{cert.eps_bits}; "
              "bound radius: the worst leaf each tree can reach within eps, summed"
              + (", the whole domain" if cert.capped else "") + ")")
    return 0


def prove_tree_command(args: argparse.Namespace) -> int:
    from circuits.backends import get_backend
    from prover_service.tree_proving import TreeProver, TreeWorkspace
    from prover_service.workspace import write_atomically

    from .prove import report

    refuse_network_options(args)
    prover = TreeProver(TreeWorkspace.open(args.model), get_backend(args.backend))
    print(f"proving with bucket {prover.bucket.bucket} ({prover.bucket.n_constraints:,} constraints) ...",
          file=sys.stderr, flush=True)
    result = prover.prove(tree_query(prover.card, args))
    write_atomically(Path(args.out), result.bundle.model_dump_json(indent=1) + "\n")
    return report(args, result, prover.bucket.shape.radius)
