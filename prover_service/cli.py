"""`fairproof`: the bank-side command line.

Each subcommand lives in its own module under `prover_service.commands` and
exposes `register(subparsers)`; the module is imported only when the command
line is built, and the heavy libraries it needs only when the command runs.
"""
from __future__ import annotations

import argparse
import importlib
import os
import sys

from circuits.errors import CircuitError
from fairness.errors import FairnessError
from offline_precompute.errors import StoreError
from prover_service.service.errors import ServiceError

# Failures caused by the user's input or environment: reported in one line, no traceback.
USER_ERRORS: tuple[type[Exception], ...] = (CircuitError, FairnessError, StoreError, ServiceError, FileNotFoundError,
                                            PermissionError)

# Order here is the order `fairproof --help` lists the commands in.
COMMAND_MODULES: tuple[str, ...] = (
    "prover_service.commands.train",
    "prover_service.commands.import_model",
    "prover_service.commands.schema",
    "prover_service.commands.commit",
    "prover_service.commands.card",
    "prover_service.commands.precompute",
    "prover_service.commands.certify",
    "prover_service.commands.prove",
    "prover_service.commands.export_snarkjs",
    "prover_service.commands.export_solidity",
    "prover_service.commands.export_page",
    "prover_service.commands.plot",
    "prover_service.commands.demo",
    "prover_service.commands.ceremony",
    "prover_service.commands.audit",
    "prover_service.commands.audit_keys",
    "prover_service.commands.attest",
    "prover_service.commands.groth16",
    "prover_service.commands.serve",
    "prover_service.commands.worker",
    "prover_service.commands.monitor",
    "prover_service.commands.witness",
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="fairproof",
        description="Zero-knowledge fairness certificates for a confidential credit model (bank side).",
    )
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for module_name in COMMAND_MODULES:
        importlib.import_module(module_name).register(subparsers)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "handler", None):
        parser.print_help()
        return 2
    try:
        return int(args.handler(args) or 0)
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return _reader_gone()
    except USER_ERRORS as exc:
        print(f"fairproof: error: {exc}", file=sys.stderr)
        return 1


def _reader_gone() -> int:
    """Whoever read our output went away (`| head`): stop quietly, with the status a
    program killed by SIGPIPE has."""
    try:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # the interpreter's final flush
    except (OSError, ValueError, AttributeError):
        pass
    return 141


if __name__ == "__main__":
    sys.exit(main())
