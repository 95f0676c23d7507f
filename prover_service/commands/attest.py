"""`fairproof attest`: an auditor's key, and the attestations it signs.

    fairproof attest keygen --name NAME --out FILE
    fairproof attest show ATTESTATION.json [--card CARD.json]
    fairproof attest publish ATTESTATION.json --url URL --model ID [--admin-key KEY]

keygen writes a new auditor private key to FILE (mode 0600, never over an
existing file) and prints its verifier key, which the auditor publishes and
customers pass to `fairproof-verify --trust-auditor`. The auditor signs
with `fairproof audit-keys ... --attest OUT.json --signing-key FILE`.

show prints what an attestation states, after checking its signature under
the key it names (and, with --card, that it covers exactly that card).
publish hands it to the bank's service, which checks it, appends it to the
transparency log and serves it to customers.

Exit status 0 on success, 1 when an attestation does not hold, 2 on unusable
input or an unreachable service.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

PROG = "fairproof attest"


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "attest",
        help="an auditor's key and the attestations it signs (keygen, show, publish)",
        description="Auditors attest cards whose keys they audited (fairproof audit-keys --attest); customers "
                    "who trust an auditor's key accept only cards it attested.",
    )
    actions = p.add_subparsers(dest="attest_action", metavar="ACTION", required=True)

    keygen = actions.add_parser("keygen", help="create an auditor key (private key to a file, verifier key printed)")
    keygen.add_argument("--name", required=True, help="the auditor's name, e.g. audit.example.org")
    keygen.add_argument("--out", required=True, type=Path, metavar="FILE", help="private key file (created 0600)")
    keygen.set_defaults(handler=run_keygen)

    show = actions.add_parser("show", help="check an attestation's signature and print what it states")
    show.add_argument("attestation", type=Path, metavar="ATTESTATION.json", help="the signed attestation file")
    show.add_argument("--card", type=Path, metavar="CARD.json", help="also check that it covers exactly this card")
    show.set_defaults(handler=run_show)

    publish = actions.add_parser("publish", help="hand an attestation to the bank's service (and its log)")
    publish.add_argument("attestation", type=Path, metavar="ATTESTATION.json",
                         help="the signed attestation file")
    publish.add_argument("--url", required=True, help="the bank's service, e.g. https://bank.example")
    publish.add_argument("--model", required=True, help="the model id whose card it attests")
    publish.add_argument("--admin-key", help="the service's admin key, if the auditor is not one it names")
    publish.add_argument("--timeout", type=float, default=30.0, metavar="SECONDS", help="per HTTP request (default 30)")
    publish.set_defaults(handler=run_publish)


def _error(message: str, code: int = 2) -> int:
    print(f"{PROG}: {message}", file=sys.stderr)
    return code


def run_keygen(args: argparse.Namespace) -> int:
    from transparency.note import NoteError, generate_key

    from .key_files import KeyFileError, write_new_key

    try:
        private_key, verifier_key = generate_key(args.name)
    except NoteError as exc:
        return _error(f"--name {args.name!r}: {exc}")
    try:
        write_new_key(args.out, private_key, "an auditor key")
    except KeyFileError as exc:
        return _error(str(exc))
    print(verifier_key)
    return 0


def _read(path: Path):
    from commitments.attestation import Attestation
    from commitments.canonical import NonCanonical

    try:
        return Attestation.from_json(path.read_bytes())
    except OSError as exc:
        raise ValueError(f"cannot read {path}: {exc.strerror or exc}") from None
    except NonCanonical as exc:
        raise ValueError(f"{path} is not an attestation: {exc}") from None


def run_show(args: argparse.Namespace) -> int:
    from commitments.attestation import AttestationError, statement_mismatch, verify_signature
    from commitments.canonical import NonCanonical
    from commitments.card import ModelCard

    try:
        attestation = _read(args.attestation)
        card = ModelCard.from_json(args.card.read_bytes()) if args.card is not None else None
    except (ValueError, OSError) as exc:
        return _error(str(exc) if not isinstance(exc, NonCanonical) else f"{args.card} is not a model card: {exc}")
    try:
        opened = verify_signature(attestation)
    except AttestationError as exc:
        return _error(f"the attestation does not hold: {exc}", 1)
    st = opened.statement
    print(f"attestation by {opened.auditor} ({opened.auditor_key}), audited on {st.date}")
    print(f"  model {st.model_id}, card {st.card_digest}, commitment {st.commitment[:16]}...")
    print(f"  phase 1 {st.phase1_digest}; lenses {', '.join(st.lenses)}")
    for c in st.circuits:
        print(f"  {c.name:<16} R1CS {c.r1cs_digest[:16]}... key {c.verifying_key_digest[:16]}... "
              f"{len(c.contributions)} contribution(s) verified")
    if card is not None:
        problem = statement_mismatch(st, card, card.digest())
        if problem:
            return _error(f"the attestation does not cover {args.card}: {problem}", 1)
        print(f"it covers {args.card} exactly")
    return 0


def run_publish(args: argparse.Namespace, transport=None) -> int:
    from verifier_client.service_client import ServiceClient, ServiceError

    try:
        attestation = _read(args.attestation)
    except ValueError as exc:
        return _error(str(exc))
    try:
        with ServiceClient(args.url, timeout=args.timeout, transport=transport) as client:
            client.publish_attestation(args.model, attestation, args.admin_key)
    except ServiceError as exc:
        return _error(f"service error: {exc}", 1 if exc.status is not None and 400 <= exc.status < 500 else 2)
    print(f"published: the service serves the attestation of model {args.model} and logged it")
    return 0
