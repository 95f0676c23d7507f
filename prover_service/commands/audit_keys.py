"""`fairproof audit-keys`: check from public data that every key on a card is the fairness statement's.

    fairproof audit-keys --card CARD.json --ptau PHASE1.ptau --keys DIR

DIR holds each bucket's final key as `<bucket>.zkey` (or is a model's keys/
directory). For every bucket the statement is rebuilt from the card's public
shape, the initial key regenerated from the phase-1 file, and the phase-2
chain checked up to the card's verifying key (prover_service/key_audit.py).
Prints one line per bucket; exit 0 if every bucket passes, 1 if any fails, 2
on unusable input. May take minutes for large buckets.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "audit-keys",
        help="audit a model card's keys against the statement, the phase-1 file and the ceremony transcripts",
        description="For every circuit bucket of the card: rebuild the statement from its public shape, "
                    "regenerate the initial key from the phase-1 file, verify the phase-2 contributions up to "
                    "the card's verifying key, and compare the card's digests and contributor list.",
    )
    p.add_argument("--card", required=True, type=Path, metavar="CARD.json")
    p.add_argument("--ptau", required=True, type=Path, metavar="FILE", help="the phase-1 file the card names")
    p.add_argument("--keys", required=True, type=Path, metavar="DIR",
                   help="directory of the buckets' final keys (<bucket>.zkey), or a model's keys/ directory")
    p.add_argument("--backend", choices=("mcl", "reference"), help="curve backend (default: mcl if it loads)")
    p.add_argument("--quiet", action="store_true", help="no progress lines")
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from circuits.backends import get_backend
    from circuits.errors import MalformedArtifact
    from commitments.canonical import NonCanonical
    from commitments.card import ModelCard
    from prover_service.key_audit import audit_card

    try:
        card = ModelCard.from_json(args.card.read_bytes())
    except OSError as exc:
        print(f"fairproof audit-keys: cannot read {args.card}: {exc.strerror or exc}", file=sys.stderr)
        return 2
    except NonCanonical as exc:
        print(f"fairproof audit-keys: {args.card} is not a model card: {exc}", file=sys.stderr)
        return 2
    if not args.keys.is_dir():
        print(f"fairproof audit-keys: {args.keys} is not a directory", file=sys.stderr)
        return 2
    say = (lambda _m: None) if args.quiet else (lambda m: print(f"  {m}", file=sys.stderr, flush=True))
    try:
        results = audit_card(card, args.ptau, args.keys, get_backend(args.backend), progress=say)
    except MalformedArtifact as exc:
        print(f"fairproof audit-keys: unusable phase-1 file: {exc}", file=sys.stderr)
        return 2
    print(f"model {card.model_id}, card digest {card.digest()}, {len(results)} bucket(s)")
    for r in results:
        who = ", ".join(f"{c.name or 'anonymous'} ({c.hash[:16]}...)" for c in r.contributors)
        verdict = f"OK  {who}" if r.ok else f"FAILED: {r.reason}"
        print(f"  {r.bucket:<16} {r.n_constraints:>9} constraints  {r.seconds:7.1f} s  {verdict}")
    failed = [r for r in results if not r.ok]
    print("every bucket's key is the statement's" if not failed else f"{len(failed)} bucket(s) FAILED")
    return 1 if failed else 0
