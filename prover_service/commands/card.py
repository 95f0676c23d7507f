"""`fairproof card migrate`: re-publish a version-2 card as version 3, the same card under its RFC 8785 digest."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("card", help="model card maintenance (migrate a version-2 card)")
    commands = p.add_subparsers(dest="card_command", metavar="ACTION", required=True)
    migrate = commands.add_parser(
        "migrate", help="re-publish a version-2 card as version 3 (its RFC 8785 digest); nothing else changes",
        description="Version 3 hashes the card as published with RFC 8785 (JSON Canonicalization Scheme), so "
                    "the page, Python and the registry compute one digest. The card's fields stay the same: a "
                    "customer's verifier that pinned the version-2 card recognises the re-publication by its old "
                    "digest and re-pins it with one line; a service publishes it in its log at start. "
                    "Certificates issued under the version-2 card name its old digest and are refused: the "
                    "customers ask for them again.")
    migrate.add_argument("--model", required=True, metavar="DIR", help="the model directory whose card.json to migrate")
    migrate.set_defaults(handler=run_migrate)


def run_migrate(args: argparse.Namespace) -> int:
    from commitments.canonical import NonCanonical
    from commitments.card_migration import is_legacy, legacy_digest, migrate
    from fairness.errors import ModelError
    from prover_service.workspace import write_atomically

    path = Path(args.model) / "card.json"
    try:
        text = path.read_bytes()
    except OSError as exc:
        raise ModelError(f"cannot read the card {path}: {exc.strerror or exc}") from None
    if not is_legacy(text):
        raise ModelError(f"{path} is not a version-2 card: nothing to migrate")
    try:
        card = migrate(text)
    except NonCanonical as exc:
        raise ModelError(f"{path} cannot be migrated: {exc}") from None
    write_atomically(path, card.published_json())
    print(f"migrated {path} to card version 3 (model {card.model_id}, the same fields)")
    print(f"  digest was {legacy_digest(card)} (version 2)")
    print(f"  digest now {card.digest()} (RFC 8785)")
    print("  customers' verifiers re-pin it by its old digest; a running service publishes it at its next start",
          file=sys.stderr)
    return 0
