"""`fairproof export-page`: the verification page as one HTML file a customer opens from disk."""
from __future__ import annotations

import argparse
from pathlib import Path


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "export-page",
        help="write the verification page: one HTML file that checks certificates in the browser",
        description="A self-contained page (no network, no installation): the customer drops their bundle (and "
                    "optionally their record) on it and it runs every check fairproof-verify runs, the Groth16 "
                    "pairing with snarkjs's browser build inlined. With --card the page is bound to that card; "
                    "without, the customer gives the card too. The same inputs give the same bytes: publish the "
                    "printed SHA-256 so customers can check their copy.",
    )
    p.add_argument("--card", metavar="CARD.json", help="the model card the page checks against (embedded)")
    p.add_argument("--out", required=True, metavar="PAGE.html", help="the file to write")
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from fairness.errors import ModelError
    from prover_service.workspace import write_atomically
    from verifier_client.page import PageError, build_page

    from .card_file import read_card

    card = read_card(args.card) if args.card is not None else None
    try:
        page = build_page(card)
    except PageError as exc:
        raise ModelError(str(exc)) from None
    out = Path(args.out)
    write_atomically(out, page.html)  # an existing page is replaced whole or not at all
    bound = f"bound to model {card.model_id} (card {card.digest()})" if card else "for any card the customer gives"
    print(f"wrote {out}: the verification page, {bound}")
    print(f"SHA-256 {page.digest}  ({len(page.html.encode()):,} bytes)")
    return 0
