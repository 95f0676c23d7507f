"""Command-line options that say where a new bucket's keys come from (prover_service/bucket_keys.py)."""
from __future__ import annotations

import argparse
import os

PTAU_ENV = "FAIRPROOF_PTAU"


def add_key_setup_arguments(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("keys of circuit buckets nobody has set up yet")
    group.add_argument("--ptau", metavar="FILE", default=None,
                       help=f"phase-1 powers-of-tau file (snarkjs .ptau, prepared for phase 2; default ${PTAU_ENV}): "
                            "the bank sets the bucket up as a one-contribution ceremony")
    group.add_argument("--contributor", default="bank", metavar="NAME",
                       help="the bank's name in that ceremony's transcript (default 'bank')")
    group.add_argument("--single-party-setup", action="store_true",
                       help="draw every secret here instead (the card then says so; whoever ran it can forge "
                            "proofs: for tests and experiments only)")


def ptau_from_args(args: argparse.Namespace) -> str | None:
    """The phase-1 file the options name: --ptau, else $FAIRPROOF_PTAU unless --single-party-setup (the flag
    wins over the environment's default, not over an explicit --ptau)."""
    if args.ptau is not None:
        return args.ptau
    return None if args.single_party_setup else (os.environ.get(PTAU_ENV) or None)


def key_setup_from_args(args: argparse.Namespace):
    from prover_service.bucket_keys import key_setup_for

    return key_setup_for(ptau_from_args(args), args.single_party_setup, args.contributor)
