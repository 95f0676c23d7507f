"""`fairproof precompute`: enumerate a model's regions into the precompute store."""
from __future__ import annotations

import argparse
import sys
import time

from .key_options import add_key_setup_arguments, key_setup_from_args
from .radius_option import (add_bucket_growth_argument, add_exact_budget_argument, add_exact_size_argument,
                           add_per_slice_argument, add_radius_argument, check_exact_budget)

STORE_HELP = ("store URL: sqlite:///PATH or postgresql+psycopg://USER@HOST:PORT/DB "
              "(default: $FAIRPROOF_STORE_URL, else sqlite:///MODEL_DIR/precompute.sqlite)")


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "precompute",
        help="enumerate the activation regions of every slice into the store (resumable)",
        description="Enumerate the activation regions of every slice of a model (sensitive features fixed "
                    "to each value combination) inside its domain box, with facet points, adjacency and "
                    "Farkas certificates, into the precompute store. An interrupted run resumes.",
    )
    p.add_argument("--model", required=True, metavar="DIR", help="model artifact directory (model.json + weights.npz)")
    p.add_argument("--store", metavar="URL", help=STORE_HELP)
    p.add_argument("--scale-bits", type=int, default=None, metavar="N",
                   help="fixed-point scale exponent (default: the model's default, 16)")
    p.add_argument("--batch", type=int, default=16, metavar="N", help="regions per committed transaction (default 16)")
    p.add_argument("--key-queries", type=int, default=20, metavar="N",
                   help="for a committed model: certify the first N test customers (with --radius) and set up the "
                        "Groth16 keys of every circuit bucket they need, with the bound radius's bucket for --radius "
                        "hybrid or bound (default 20; 0 skips key setup)")
    p.add_argument("--data-dir", metavar="DIR", help="dataset directory (for --key-queries)")
    p.add_argument("--data", metavar="FILE.csv", dest="data_dir",
                   help="an imported model's data (rows read through its schema): its first rows are the test "
                        "customers of --key-queries")
    p.add_argument("--quiet", action="store_true", help="no progress lines")
    add_radius_argument(p)
    add_exact_budget_argument(p)
    add_exact_size_argument(p)
    add_bucket_growth_argument(p)
    add_per_slice_argument(p)
    add_key_setup_arguments(p)
    p.set_defaults(handler=run)


class ProgressPrinter:
    """One stderr line at most every `interval` seconds."""

    def __init__(self, interval: float = 1.0, stream=None):
        self.interval = interval
        self.stream = stream  # None: whatever sys.stderr is when a line is printed (not when this was made)
        self._last = -1e9
        self._slice = -1

    def __call__(self, p) -> None:
        now = time.monotonic()
        if p.slice_index == self._slice and now - self._last < self.interval:
            return
        self._slice, self._last = p.slice_index, now
        print(f"  slice {p.slice_index + 1}/{p.n_slices}: {p.regions_found} regions found, "
              f"{p.regions_expanded} expanded, {p.lps} LPs solved, {p.rate:.0f} LP/s, {p.elapsed:.1f} s",
              file=self.stream or sys.stderr, flush=True)


def run(args: argparse.Namespace) -> int:
    from fairness.fixed_point import DEFAULT_SCALE_BITS
    from offline_precompute.certify import load_fixed_point
    from offline_precompute.db import open_database, resolve_store_url, store_bytes
    from offline_precompute.enumerate import precompute
    from offline_precompute.errors import StoreError

    if args.batch < 1:
        raise StoreError("--batch must be at least 1")
    check_exact_budget(args.exact_budget)
    from pathlib import Path

    committed = (Path(args.model) / "card.json").is_file()
    if args.key_queries < 0:
        raise StoreError("--key-queries must be non-negative")
    if committed:
        from prover_service.workspace import ModelWorkspace

        card_scale = ModelWorkspace.open(args.model).card().scale_bits
        if args.scale_bits is not None and args.scale_bits != card_scale:
            raise StoreError(f"the model is committed at scale 2^{card_scale}; --scale-bits {args.scale_bits} differs")
        scale = card_scale
    else:
        scale = DEFAULT_SCALE_BITS if args.scale_bits is None else args.scale_bits
    artifact, model = load_fixed_point(args.model, scale)
    db = open_database(resolve_store_url(args.store, args.model))
    try:
        print(f"precompute: {artifact.dataset} model {model.net.n_inputs}->{model.net.hidden_sizes}->"
              f"{model.net.n_classes}, scale 2^{scale}, {len(model.slices())} slices, store {db.display_url}",
              file=sys.stderr)
        summary = precompute(db, model, batch_size=args.batch, progress=None if args.quiet else ProgressPrinter())
        size = store_bytes(db)
        buckets = _setup_keys(args, db) if committed and args.key_queries else []
    finally:
        db.dispose()
    print(f"model digest {summary.digest}")
    print(f"slices {summary.n_slices} ({summary.slices_skipped} already complete), regions {summary.regions}, "
          f"facets {summary.facets} ({summary.nonempty_facets} non-empty), class claims {summary.class_claims}")
    rate = summary.lps / summary.seconds if summary.seconds > 0 else 0.0
    print(f"LPs solved {summary.lps} in {summary.seconds:.1f} s ({rate:.0f} LP/s)"
          + (f", store size {size} bytes" if size is not None else ""))
    for bucket, constraints, seconds, status in buckets:
        state = (f"set up in {seconds:.1f} s" if seconds else "already set up") if status == "ready" else status
        print(f"keys for bucket {bucket}: {constraints} constraints, {state}")
    return 0


def _setup_keys(args: argparse.Namespace, db) -> list[tuple[str, int, float]]:
    """Set up the keys of every bucket the first test customers need (offline work)."""
    from prover_service.key_setup import setup_keys_for_test_customers
    from prover_service.proving import Prover
    from prover_service.workspace import ModelWorkspace

    say = (lambda m: None) if args.quiet else (lambda m: print(m, file=sys.stderr, flush=True))
    prover = Prover(ModelWorkspace.open(args.model), db, progress=say, key_setup=key_setup_from_args(args),
                    radius=args.radius, bucket_growth=args.bucket_growth,
                    per_slice=args.per_slice, exact_budget=args.exact_budget,
                        exact_max_constraints=args.exact_max_constraints)
    done = setup_keys_for_test_customers(prover, args.key_queries, args.data_dir, say)
    return [(d.bucket, d.n_constraints, d.seconds, d.status) for d in done]
