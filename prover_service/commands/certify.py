"""`fairproof certify`: decision and fairness certificate of one query, from the store."""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from fairness.radius import Radius
from prover_service.commands.precompute import STORE_HELP
from prover_service.commands.radius_option import add_exact_budget_argument, add_radius_argument, check_exact_budget
from prover_service.commands.json_option import add_json_argument


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "certify",
        help="certify one query (plaintext certificate, store-backed)",
        description="Compute the decision and the local individual-fairness certificate of one query, "
                    "reading precomputed LP answers from the store and caching any that are missing.",
    )
    p.add_argument("--model", required=True, metavar="DIR", help="model artifact directory (model.json + weights.npz)")
    which = p.add_mutually_exclusive_group(required=True)
    which.add_argument("--index", type=int, metavar="I", help="row I of the model's test split")
    which.add_argument("--record", metavar="FILE.json",
                       help="a JSON object of raw feature values (or a JSON list of model inputs)")
    p.add_argument("--store", metavar="URL", help=STORE_HELP)
    p.add_argument("--scale-bits", type=int, default=None, metavar="N",
                   help="fixed-point scale exponent (default 16; must match the precompute)")
    p.add_argument("--data-dir", metavar="DIR", help="dataset directory for --index (default: $FAIRPROOF_DATA_DIR)")
    p.add_argument("--data", metavar="FILE.csv", dest="data_dir",
                   help="an imported model's data (rows read through its schema), for --index")
    add_radius_argument(p)
    add_exact_budget_argument(p)
    p.add_argument("--out", metavar="CERT.json", help="write the certificate JSON here")
    add_json_argument(p)
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from fairness.checker import check_certificate
    from fairness.fixed_point import DEFAULT_SCALE_BITS
    from offline_precompute.certify import (Certifier, certificate_summary, load_fixed_point, query_from_index,
                                            query_from_record, read_record)
    from offline_precompute.db import open_database, resolve_store_url

    from prover_service.tree_proving import is_tree_model

    if is_tree_model(args.model):
        from .tree_commands import certify_tree_command

        return certify_tree_command(args)
    check_exact_budget(args.exact_budget)
    scale = DEFAULT_SCALE_BITS if args.scale_bits is None else args.scale_bits
    artifact, model = load_fixed_point(args.model, scale)
    if args.index is not None:
        query = query_from_index(artifact, model, args.index, args.data_dir)
        source = {"test_index": args.index}
    else:
        query = query_from_record(artifact, model, read_record(args.record))
        source = {"record": str(args.record)}
    if args.radius == Radius.BOUND:
        return _bound(args, artifact, model, query)
    if args.radius == Radius.HYBRID:
        from offline_precompute.certify import exact_within

        exact = exact_within(resolve_store_url(args.store, args.model), model, query, args.exact_budget)
        if exact is None:
            print(f"region enumeration gave no exact radius within {args.exact_budget:g} s: the bound radius "
                  "instead", file=sys.stderr)
            return _bound(args, artifact, model, query)
        print("region enumeration finished within the budget: the exact "
              + ("answer (a flip: eps 0)" if exact.certificate.status == "flip" else "radius"), file=sys.stderr)
        cert, seconds, cached, digest = exact.certificate, exact.seconds, exact.cached_rows, exact.model_digest
        hits, misses, rejected = exact.hits, exact.misses, exact.rejected
    else:
        db = open_database(resolve_store_url(args.store, args.model))
        try:
            certifier = Certifier(db, model, radius=args.radius)
            result = certifier.certify(query)
            digest = certifier.digest
        finally:
            db.dispose()
        cert, seconds, cached = result.certificate, result.seconds, result.cached_rows
        hits, misses, rejected = result.stats.hits, result.stats.misses, result.stats.rejected
    check_certificate(model, cert)  # never hand out a certificate the exact checker refuses
    human = sys.stderr if args.json else sys.stdout  # with --json, stdout is the one document
    for line in certificate_summary(cert, model, artifact.class_labels):
        print(line, file=human)
    print(f"certified in {seconds * 1000:.0f} ms: store answers {hits}, computed {misses} "
          f"(cached {cached}), rejected {rejected}", file=human)
    if args.out:
        out = Path(args.out)
        doc = {
            "model_digest": digest,
            "dataset": artifact.dataset,
            "scale_bits": model.scale_bits,
            "query_source": source,
            "certificate": cert.to_json(),
        }
        tmp = out.with_name(out.name + ".tmp")
        tmp.write_text(json.dumps(doc, indent=1) + "\n")
        tmp.replace(out)
        print(f"certificate written to {out}", file=sys.stderr)
    if args.json:
        from fairness.certificate import CAP, FLIP
        from prover_service.outputs import CertifyOutput, emit
        from prover_service.outputs import Radius as EpsOutput  # eps as --json reports it

        kind = ("flip" if cert.status == FLIP else "cap" if cert.attainment is not None and cert.attainment.kind == CAP
                else Radius.EXACT if cert.radius_is_exact else Radius.FAST)
        labels = artifact.class_labels
        emit(CertifyOutput(decision=cert.decision, decision_label=labels[cert.decision] if labels else str(cert.decision),
                           status=cert.status, query=list(cert.query), seconds=seconds,
                           radius=EpsOutput(numerator=cert.eps, scale_bits=cert.eps_bits,
                                         decimal=str(float(cert.eps_value)), kind=kind),
                           certificate_file=str(args.out) if args.out else None))
    return 0


def _bound(args: argparse.Namespace, artifact, model, query) -> int:
    """The bound radius: no store, no regions."""
    import time

    from fairness.bound_radius import FLIP, bound_certificate

    started = time.perf_counter()
    cert = bound_certificate(model, query)  # its eps is one the exact (integer) bound proves
    seconds = time.perf_counter() - started
    labels = artifact.class_labels
    label = labels[cert.decision] if labels else str(cert.decision)
    human = sys.stderr if args.json else sys.stdout
    print(f"decision: class {cert.decision} ({label})", file=human)
    if cert.status == FLIP:
        values = model.slices()[cert.flip_slice]
        names = ", ".join(f"{f.name}={label}" for f, label in zip(model.sensitive, model.slice_labels(values)))
        print(f"counterfactual flip: with {names} the decision differs (eps 0)", file=human)
    else:
        print(f"eps: {cert.eps_value:.6g} (value {cert.eps}/2^{cert.eps_bits}; bound radius: linear bound propagation, "
              f"a lower bound){' [cap: the whole box]' if cert.capped else ''}", file=human)
    print(f"certified in {seconds * 1000:.0f} ms (bound propagation, every slice)", file=human)
    if args.out:
        out = Path(args.out)
        doc = {"dataset": artifact.dataset, "scale_bits": model.scale_bits, "radius": Radius.BOUND,
               "certificate": {"query": list(cert.query), "decision": cert.decision, "status": cert.status,
                               "eps": {"E": cert.eps, "t": cert.eps_bits}, "capped": cert.capped,
                               "flip_slice": cert.flip_slice}}
        tmp = out.with_name(out.name + ".tmp")
        tmp.write_text(json.dumps(doc, indent=1) + "\n")
        tmp.replace(out)
        print(f"certificate written to {out}", file=sys.stderr)
    if args.json:
        from prover_service.outputs import CertifyOutput, emit
        from prover_service.outputs import Radius as EpsOutput  # eps as --json reports it

        kind = "flip" if cert.status == FLIP else "cap" if cert.capped else Radius.BOUND
        emit(CertifyOutput(decision=cert.decision, decision_label=label,
                           status="flip" if cert.status == FLIP else "certified", query=list(cert.query),
                           seconds=seconds, radius=EpsOutput(numerator=cert.eps, scale_bits=cert.eps_bits,
                                                         decimal=str(cert.eps_value), kind=kind),
                           certificate_file=str(args.out) if args.out else None))
    return 0

