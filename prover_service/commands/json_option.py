"""The `--json` option every command offers, defined where registering a command needs no pydantic:
`fairproof --help` builds every command's parser, and importing the output models would cost it more
than all the rest (prover_service.outputs re-exports this function)."""
from __future__ import annotations


def add_json_argument(parser) -> None:
    parser.add_argument("--json", action="store_true",
                        help="print the result as one JSON document on stdout (schema in docs/schemas/)")
