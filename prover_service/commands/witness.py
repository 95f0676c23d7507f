"""`fairproof witness`: cosign a bank's transparency log as an independent witness.

    fairproof witness keygen --name NAME --out FILE
    fairproof witness cosign --url URL --key FILE --state DIR [--log-key VKEY]

keygen writes a new cosigner private key to FILE (mode 0600, never over an
existing file) and prints its verifier key, which the bank lists in
FAIRPROOF_LOG_WITNESSES and customers pass to --trust-witness.

cosign fetches the log's newest checkpoint, checks it extends the last one
this witness cosigned for that service, cosigns it and posts the
cosignature to the log (verifier_client/witness.py says what is checked).

The log belongs to the service: the state is kept per service URL, in
DIR/<service>.json (e.g. DIR/https+bank.example.json; localhost and
127.0.0.1 are one service), which pins the log's origin and key on first
use. When the service later names another origin or key (in /v1/log/key or
in its checkpoint), as a bank serving a fresh private log from the same URL
would, cosign refuses:

    REFUSED: the service URL publishes its log as ORIGIN (pinned ...), not NEW

and writes nothing. A state file of the old layout (DIR/<origin>.json) is
adopted on the first run for a service serving that origin: its key and
last cosigned checkpoint carry over (the old file is left as it was).

Exit status 0 on success, 1 when the checkpoint is refused (another origin
or key than the pinned ones, fork, rollback, wrong key), 2 on unusable input,
an unreachable service or a service error.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

PROG = "fairproof witness"


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "witness",
        help="cosign a transparency log's checkpoints as a witness (keygen, cosign)",
        description="Keep a log honest from outside: cosign each checkpoint only if it extends the last one "
                    "this witness cosigned.",
    )
    actions = p.add_subparsers(dest="witness_action", metavar="ACTION", required=True)

    keygen = actions.add_parser("keygen", help="create a cosigner key (private key to a file, verifier key printed)")
    keygen.add_argument("--name", required=True, help="the witness's name, e.g. witness.example.org")
    keygen.add_argument("--out", required=True, type=Path, metavar="FILE", help="private key file (created 0600)")
    keygen.set_defaults(handler=run_keygen)

    cosign = actions.add_parser(
        "cosign", help="cosign the log's newest checkpoint and post the cosignature",
        description="Cosign the newest checkpoint of the log the service publishes, if it extends the last one "
                    "cosigned for that service. The service's log origin and key are pinned on first use; a "
                    "service naming another origin or key later is refused (exit status 1).")
    cosign.add_argument("--url", required=True, help="the bank's service, e.g. https://bank.example")
    cosign.add_argument("--key", required=True, type=Path, metavar="FILE", help="the witness's private key file")
    cosign.add_argument("--state", required=True, type=Path, metavar="DIR",
                        help="where each service's log (origin and key, pinned on first use) and the last "
                             "checkpoint cosigned for it are kept: DIR/<service>.json")
    cosign.add_argument("--log-key", metavar="VKEY",
                        help="the log's verifier key (default: the one pinned for the service; on first use, "
                             "the one the service names, which must be this one when given)")
    cosign.add_argument("--timeout", type=float, default=30.0, metavar="SECONDS", help="per HTTP request (default 30)")
    cosign.set_defaults(handler=run_cosign)


def _error(message: str) -> int:
    print(f"{PROG}: {message}", file=sys.stderr)
    return 2


def run_keygen(args: argparse.Namespace) -> int:
    from transparency.cosignature import generate_key
    from transparency.note import NoteError

    from .key_files import KeyFileError, write_new_key

    try:
        private_key, verifier_key = generate_key(args.name)
    except NoteError as exc:
        return _error(f"--name {args.name!r}: {exc}")
    try:
        write_new_key(args.out, private_key, "a witness key")
    except KeyFileError as exc:
        return _error(str(exc))
    print(verifier_key)
    return 0


class _Unusable(Exception):
    """Unusable input for the command (exit status 2)."""


def _signer(path: Path):
    from transparency.cosignature import CosignatureSigner

    from .key_files import KeyFileError, read_signer

    try:
        return read_signer(path, CosignatureSigner, "witness key")
    except KeyFileError as exc:
        raise _Unusable(str(exc)) from None


def _pinned_log(args: argparse.Namespace, client):
    """The log pinned for the service (verifier_client.witness.pin_log)."""
    from verifier_client.monitor import MonitorError, parse_log_key
    from verifier_client.witness import pin_log

    try:
        named = parse_log_key(args.log_key) if args.log_key else None
    except MonitorError as exc:
        raise _Unusable(str(exc)) from None
    return pin_log(args.state, client.base_url, client.log_key(), named)


def run_cosign(args: argparse.Namespace, transport=None) -> int:
    from transparency.cosignature import CosignatureVerifier
    from transparency.note import NoteError, open as open_note
    from verifier_client.service_client import ServiceError
    from verifier_client.witness import Witness, WitnessClient, WitnessError, WitnessRefused

    try:
        signer = _signer(args.key)
        with WitnessClient(args.url, timeout=args.timeout, transport=transport) as client:
            pinned = _pinned_log(args, client)
            log_verifier = pinned.verifier
            witness = Witness(signer, log_verifier, pinned.state_path, service=client.base_url,
                              adopted_from=pinned.adopted_from)
            cosigned = witness.cosign(client.checkpoint().checkpoint, client.consistency)
            served = client.add_cosignature(cosigned).checkpoint
    except WitnessRefused as exc:
        print(f"REFUSED: {exc}", file=sys.stderr)
        return 1
    except (WitnessError, _Unusable) as exc:
        return _error(str(exc))
    except ServiceError as exc:
        return _error(f"service error: {exc}")
    except OSError as exc:
        return _error(f"cannot write the witness state: {exc.strerror or exc}")

    if pinned.first_use:
        print(f"{PROG}: pinned the log key {log_verifier.vkey()} (origin {log_verifier.name!r}) for "
              f"{client.base_url} on first use", file=sys.stderr)
    if pinned.adopted_from is not None:
        print(f"{PROG}: adopted the state of {pinned.adopted_from} (old layout) in {pinned.state_path}",
              file=sys.stderr)
    last = witness.last()
    try:
        kept = open_note(served, [log_verifier, CosignatureVerifier(signer.name, signer.public_key)])
    except NoteError as exc:
        return _error(f"the log answered a checkpoint that does not verify: {exc}")
    if (signer.name, signer.key_id) not in {(s.name, s.key_id) for s in kept.verified}:
        return _error("the log accepted the cosignature but does not serve it")
    print(f"cosigned {last.origin} at {last.size} leaves, root {last.root_hash}; the log serves it with "
          f"{len(kept.verified) + len(kept.unverified) - 1} cosignature(s)")
    return 0
