"""`fairproof ceremony ...`: the phase-2 ceremony of one circuit bucket, passed between parties as a directory.

  init --model DIR --bucket kK-fF --ptau FILE --out CEREMONY   the bank: circuit + initial key from phase 1
  init --model DIR --audit-rows N --ptau FILE --out CEREMONY    the same for an audit circuit (group counts)
  contribute CEREMONY --name NAME [--entropy TEXT] [--ptau FILE] anyone: verify, add randomness, print the hash
  add CEREMONY KEY.zkey                                         a contribution made with `snarkjs zkey contribute`
  verify CEREMONY [--ptau FILE]                                 anyone: check everything, list contributors
  finalize CEREMONY --beacon HEX [--iterations N]               close with a public random beacon
  install CEREMONY --model DIR [--ptau FILE]                    the bank: verify and use the final key

A contributor needs only this package and the directory: `contribute`
rebuilds the statement (a certificate bucket's, or an audit circuit's: a
regulator who publishes audit datasets contributes to the latter) from the
shape the directory names, checks
that the circuit is that statement and that the key chain is valid, then
adds a contribution and prints its hash; the contributor keeps that hash and
gives it to customers, who require it with `fairproof-verify
--trust-contributor HASH`. Exit status 0 on success, 1 with a one-line
reason when a check fails or an input is unusable.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("ceremony", help="phase-2 key ceremony of a circuit bucket (init, contribute, "
                                                    "verify, finalize, install)")
    commands = parser.add_subparsers(dest="ceremony_command", metavar="SUBCOMMAND")
    parser.set_defaults(handler=lambda args: (parser.print_help(), 2)[1])

    p = commands.add_parser("init", help="start a ceremony for one bucket of a committed model (the bank)")
    p.add_argument("--model", required=True, type=Path, metavar="DIR", help="committed model directory")
    which = p.add_mutually_exclusive_group(required=True)
    which.add_argument("--bucket", help="bucket name, k<regions>-f<entries> (e.g. k4-f4), with -exact "
                                        "for the exact-radius statement (k4-f4-exact); a tree ensemble's one "
                                        "bucket, t<trees>-d<depth>-bound")
    which.add_argument("--audit-rows", type=int, metavar="N",
                       help="instead, the audit circuit proving group counts on audit datasets of N rows "
                            "(`fairproof audit prove-groups`)")
    p.add_argument("--favourable-class", metavar="LABEL",
                   help="with --audit-rows: the selected class (default: the card's lens)")
    p.add_argument("--ptau", required=True, type=Path, metavar="FILE", help="phase-1 file (snarkjs .ptau, prepared)")
    p.add_argument("--out", required=True, type=Path, metavar="CEREMONY", help="ceremony directory to create")
    _backend_option(p)
    p.set_defaults(handler=_init)

    p = commands.add_parser("contribute", help="verify the ceremony and add a contribution")
    _ceremony_argument(p)
    p.add_argument("--name", required=True, help="your name, recorded in the transcript")
    p.add_argument("--entropy", default="", help="extra text mixed into the system's randomness")
    p.add_argument("--ptau", type=Path, metavar="FILE", help="also regenerate the initial key from this phase-1 file")
    _backend_option(p)
    p.set_defaults(handler=_contribute)

    p = commands.add_parser("add", help="append a key made with `snarkjs zkey contribute` on the current key")
    _ceremony_argument(p)
    p.add_argument("key", type=Path, metavar="KEY.zkey", help="the contributed key (snarkjs .zkey)")
    _backend_option(p)
    p.set_defaults(handler=_add)

    p = commands.add_parser("verify", help="check the circuit, the initial key and every contribution")
    _ceremony_argument(p)
    p.add_argument("--ptau", type=Path, metavar="FILE", help="also regenerate the initial key from this phase-1 file")
    _backend_option(p)
    p.set_defaults(handler=_verify)

    p = commands.add_parser("finalize", help="close the ceremony with a public random beacon")
    _ceremony_argument(p)
    p.add_argument("--beacon", required=True, metavar="HEX", help="the beacon value (e.g. a future block hash), hex")
    p.add_argument("--iterations", type=int, default=10, metavar="N", help="2^N hash iterations (default 10)")
    p.add_argument("--name", default="final beacon", help="name of the beacon step in the transcript "
                                                             "(default: final beacon)")
    _backend_option(p)
    p.set_defaults(handler=_finalize)

    p = commands.add_parser("install", help="verify a ceremony and use its final key for the model (the bank)")
    _ceremony_argument(p)
    p.add_argument("--model", required=True, type=Path, metavar="DIR",
                   help="committed model directory whose card gets the final key")
    p.add_argument("--ptau", type=Path, metavar="FILE", help="also regenerate the initial key from this phase-1 file")
    p.add_argument("--store", metavar="URL", help="precompute store URL (default: the model's SQLite file)")
    _backend_option(p)
    p.set_defaults(handler=_install)


def _ceremony_argument(p: argparse.ArgumentParser) -> None:
    p.add_argument("ceremony", type=Path, metavar="CEREMONY", help="ceremony directory (from `ceremony init`)")


def _backend_option(p: argparse.ArgumentParser) -> None:
    p.add_argument("--backend", choices=("mcl", "reference"), help="curve backend (default: mcl if it loads)")


def _say(message: str) -> None:
    print(f"  {message}", file=sys.stderr, flush=True)


def _backend(args: argparse.Namespace):
    from circuits.backends import get_backend

    return get_backend(args.backend)


def _open(path: Path):
    from circuits.snarkjs.ceremony import Ceremony

    return Ceremony(path)


def _init(args: argparse.Namespace) -> int:
    from circuits.snarkjs.ceremony import Ceremony
    from prover_service.bucket_keys import card_shape, ceremony_metadata, is_per_slice_bucket, parse_bucket
    from prover_service.workspace import ModelWorkspace
    from statement import statement_relation

    workspace = ModelWorkspace.open(args.model)
    card = workspace.card()
    if args.audit_rows is not None:
        return _init_audit(args, workspace)
    if workspace.is_tree_ensemble:
        from prover_service.tree_keys import init_ceremony

        ceremony, bucket = init_ceremony(workspace, args.bucket, args.ptau, args.out, _backend(args), _say)
        print(f"ceremony for {card.model_id} bucket {bucket.bucket} ({bucket.n_constraints} constraints) in {args.out}")
        print(f"circuit hash {ceremony.state.circuit_hash}")
        print(f"next: send {args.out} to each contributor (`fairproof ceremony contribute {args.out} --name NAME`)")
        return 0
    k, f, radius = parse_bucket(args.bucket)
    shape = card_shape(card, workspace.fixed_point(), k, f, radius, is_per_slice_bucket(args.bucket))
    _say(f"building the statement of bucket {shape.bucket}")
    r1cs = statement_relation(shape)
    ceremony = Ceremony.init(args.out, r1cs, args.ptau, _backend(args), label=f"{card.model_id} {shape.bucket}",
                             metadata=ceremony_metadata(card, shape), progress=_say)
    print(f"ceremony for {card.model_id} bucket {shape.bucket} ({r1cs.n_constraints} constraints) in {args.out}")
    print(f"circuit hash {ceremony.state.circuit_hash}")
    print(f"next: send {args.out} to each contributor (`fairproof ceremony contribute {args.out} --name NAME`)")
    return 0


def _init_audit(args: argparse.Namespace, workspace) -> int:
    from circuits.snarkjs.ceremony import Ceremony
    from prover_service.audit_proving import GroupCountsProver
    from prover_service.bucket_keys import audit_ceremony_metadata
    from statement.group_counts import group_counts_relation

    from .audit import _favourable_index

    prover = GroupCountsProver(workspace, _backend(args), progress=_say)
    shape = prover.shape(args.audit_rows, _favourable_index(args, workspace))
    _say(f"building the audit circuit {shape.name}")
    r1cs = group_counts_relation(shape)
    ceremony = Ceremony.init(args.out, r1cs, args.ptau, _backend(args), label=f"{prover.card.model_id} {shape.name}",
                             metadata=audit_ceremony_metadata(prover.card, shape), progress=_say)
    print(f"ceremony for {prover.card.model_id} audit circuit {shape.name} ({r1cs.n_constraints} constraints) "
          f"in {args.out}")
    print(f"circuit hash {ceremony.state.circuit_hash}")
    print(f"next: send {args.out} to each contributor (`fairproof ceremony contribute {args.out} --name NAME`)")
    return 0


def _check_circuit(ceremony):
    from prover_service.bucket_keys import ceremony_relation
    from prover_service.tree_keys import TREE_SHAPE_KEY, ceremony_tree_relation

    _say("rebuilding the statement from the shape the ceremony names")
    if TREE_SHAPE_KEY in ceremony.state.metadata:
        return ceremony_tree_relation(ceremony)
    return ceremony_relation(ceremony)


def _contribute(args: argparse.Namespace) -> int:
    ceremony = _open(args.ceremony)
    backend = _backend(args)
    relation = _check_circuit(ceremony)
    if args.ptau is not None:
        ceremony.verify(backend, ptau_path=args.ptau, r1cs=relation, progress=_say)
    receipt = ceremony.contribute(args.name, args.entropy, backend, progress=_say)
    print(f"contribution #{len(ceremony.state.contributors)} by {receipt.name!r} written to "
          f"{ceremony.current_key_path}")
    print("Contribution Hash (keep it; customers who trust you pass it to fairproof-verify --trust-contributor):")
    print(receipt.hash)
    return 0


def _add(args: argparse.Namespace) -> int:
    ceremony = _open(args.ceremony)
    receipt = ceremony.adopt(args.key, _backend(args), progress=_say)
    print(f"added {receipt.kind} by {receipt.name!r}: {receipt.hash}")
    return 0


def _verify(args: argparse.Namespace) -> int:
    ceremony = _open(args.ceremony)
    relation = _check_circuit(ceremony)
    report = ceremony.verify(_backend(args), ptau_path=args.ptau, r1cs=relation, progress=_say)
    state = ceremony.state
    print(f"ceremony {state.label}: circuit of {state.n_constraints} constraints, phase 1 of 2^{state.ptau_power} "
          f"({'regenerated from the phase-1 file' if args.ptau else 'initial key taken as given: pass --ptau'})")
    for i, c in enumerate(state.contributors, 1):
        print(f"  #{i} {c.kind:<12} {c.name!r}: {c.hash}")
    print("OK" + (" (final)" if state.finalized else f" ({len(report.contributions)} contribution(s), not final)"))
    return 0


def _finalize(args: argparse.Namespace) -> int:
    ceremony = _open(args.ceremony)
    _check_circuit(ceremony)
    receipt = ceremony.finalize(args.beacon, args.iterations, _backend(args), name=args.name, progress=_say)
    print(f"final beacon written to {ceremony.current_key_path}; contribution hash {receipt.hash}")
    return 0


def _install(args: argparse.Namespace) -> int:
    from offline_precompute.db import open_database, resolve_store_url
    from prover_service.bucket_keys import AUDIT_SHAPE_KEY
    from prover_service.proving import Prover
    from prover_service.workspace import ModelWorkspace

    workspace = ModelWorkspace.open(args.model)
    ceremony = _open(args.ceremony)
    if workspace.is_tree_ensemble:
        from prover_service.tree_keys import install_ceremony

        card = install_ceremony(workspace, ceremony, _backend(args), ptau=args.ptau, progress=_say)
        (bucket,) = card.circuits
        print(f"bucket {bucket.bucket} installed: {bucket.n_constraints} constraints, "
              f"{len(bucket.setup.contributions)} contribution(s); card digest now {card.digest()}")
        for c in bucket.setup.contributions:
            print(f"  {c.kind:<12} {c.name!r}: {c.hash}")
        return 0
    if AUDIT_SHAPE_KEY in ceremony.state.metadata:
        from prover_service.audit_proving import GroupCountsProver

        circuit = GroupCountsProver(workspace, _backend(args), progress=_say).install_ceremony(ceremony, ptau=args.ptau)
        print(f"audit circuit {circuit.name} installed: {circuit.n_constraints} constraints, "
              f"{len(circuit.setup.contributions)} contribution(s); card digest now {workspace.card().digest()}")
        for c in circuit.setup.contributions:
            print(f"  {c.kind:<12} {c.name!r}: {c.hash}")
        return 0
    db = open_database(resolve_store_url(args.store, workspace.root))
    try:
        prover = Prover(workspace, db, _backend(args), progress=_say)
        keys = prover.install_ceremony(ceremony, ptau=args.ptau)
    finally:
        db.dispose()
    bucket = prover.card.bucket(keys.shape.bucket)
    print(f"bucket {bucket.bucket} installed: {bucket.n_constraints} constraints, "
          f"{len(bucket.setup.contributions)} contribution(s); card digest now {prover.card.digest()}")
    for c in bucket.setup.contributions:
        print(f"  {c.kind:<12} {c.name!r}: {c.hash}")
    return 0
