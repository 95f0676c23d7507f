"""`fairproof audit-keys`: check from public data that every key on a card is the fairness statement's.

    fairproof audit-keys --card CARD.json --ptau PHASE1.ptau --keys DIR [--attest OUT.json --signing-key FILE]

DIR holds each bucket's final key as `<bucket>.zkey` (or is a model's keys/
directory). For every bucket the statement is rebuilt from the card's public
shape, the initial key regenerated from the phase-1 file, and the phase-2
chain checked up to the card's verifying key (prover_service/key_audit.py).
Prints one line per bucket; exit 0 if every bucket passes, 1 if any fails, 2
on unusable input. May take minutes for large buckets.

With --attest, an auditor whose audit passed signs what it checked
(commitments.attestation) with its key from `fairproof attest keygen`, and
writes the attestation to OUT.json: customers who trust the auditor's key
(`fairproof-verify --trust-auditor`) accept only cards so attested. No
attestation is written when any bucket fails.
"""
from __future__ import annotations

import argparse
import sys
from datetime import datetime, timezone
from pathlib import Path

PROG = "fairproof audit-keys"


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "audit-keys",
        help="audit a model card's keys against the statement, the phase-1 file and the ceremony transcripts",
        description="For every circuit bucket of the card: rebuild the statement from its public shape, "
                    "regenerate the initial key from the phase-1 file, verify the phase-2 contributions up to "
                    "the card's verifying key, and compare the card's digests and contributor list; with "
                    "--attest, sign what was checked.",
    )
    p.add_argument("--card", required=True, type=Path, metavar="CARD.json", help="the model card to audit")
    p.add_argument("--ptau", required=True, type=Path, metavar="FILE", help="the phase-1 file the card names")
    p.add_argument("--keys", required=True, type=Path, metavar="DIR",
                   help="directory of the buckets' final keys (<bucket>.zkey), or a model's keys/ directory")
    p.add_argument("--attest", type=Path, metavar="OUT.json",
                   help="when every bucket passes, write the auditor's signed attestation of this card here")
    p.add_argument("--signing-key", type=Path, metavar="FILE",
                   help="with --attest: the auditor's private key (fairproof attest keygen)")
    p.add_argument("--backend", choices=("mcl", "reference"), help="curve backend (default: mcl if it loads)")
    p.add_argument("--quiet", action="store_true", help="no progress lines")
    p.set_defaults(handler=run)


def _error(message: str) -> int:
    print(f"{PROG}: {message}", file=sys.stderr)
    return 2


def run(args: argparse.Namespace) -> int:
    from circuits.backends import get_backend
    from circuits.errors import MalformedArtifact
    from commitments.canonical import NonCanonical
    from commitments.card import ModelCard
    from prover_service.key_audit import audit_card

    from transparency.note import Signer

    from .key_files import KeyFileError, read_signer, write_new_file

    if (args.attest is None) != (args.signing_key is None):
        return _error("--attest and --signing-key go together")
    try:
        card = ModelCard.from_json(args.card.read_bytes())
        signer = read_signer(args.signing_key, Signer, "auditor key") if args.signing_key is not None else None
    except OSError as exc:
        return _error(f"cannot read {args.card}: {exc.strerror or exc}")
    except NonCanonical as exc:
        return _error(f"{args.card} is not a model card: {exc}")
    except KeyFileError as exc:
        return _error(str(exc))
    if not args.keys.is_dir():
        return _error(f"{args.keys} is not a directory")
    if args.attest is not None and args.attest.exists():
        return _error(f"{args.attest} exists; an attestation is never overwritten")
    say = (lambda _m: None) if args.quiet else (lambda m: print(f"  {m}", file=sys.stderr, flush=True))
    try:
        audit = audit_card(card, args.ptau, args.keys, get_backend(args.backend), progress=say)
    except MalformedArtifact as exc:
        return _error(f"unusable phase-1 file: {exc}")
    print(f"model {card.model_id}, card digest {card.digest()}, {len(audit.buckets)} bucket(s)")
    for r in audit.buckets:
        who = ", ".join(f"{c.name or 'anonymous'} ({c.hash[:16]}...)" for c in r.contributors)
        verdict = f"OK  {who}" if r.ok else f"FAILED: {r.reason}"
        print(f"  {r.bucket:<16} {r.n_constraints:>9} constraints  {r.seconds:7.1f} s  {verdict}")
    failed = [r for r in audit.buckets if not r.ok]
    print("every bucket's key is the statement's" if not failed else f"{len(failed)} bucket(s) FAILED")
    if failed or signer is None:
        if failed and signer is not None:
            print(f"{PROG}: no attestation written: the card failed the audit", file=sys.stderr)
        return 1 if failed else 0

    from commitments.attestation import sign_attestation

    attestation = sign_attestation(audit.statement(datetime.now(timezone.utc).date().isoformat()), signer)
    try:
        write_new_file(args.attest, attestation.model_dump_json(indent=1) + "\n", 0o644, "an attestation")
    except KeyFileError as exc:
        return _error(str(exc))
    print(f"attestation by {signer.name} of card {card.digest()[:16]}... written to {args.attest} "
          f"(customers pass --trust-auditor {signer.verifier().vkey()})")
    return 0
