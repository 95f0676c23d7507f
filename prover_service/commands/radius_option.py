"""`--radius fast|exact` and `--bucket-growth 2|4`: how a model's certificates are stated and which circuit
buckets prove them, on every command that certifies or proves."""
from __future__ import annotations

import argparse

RADIUS_CHOICES = ("fast", "exact")
RADIUS_HELP = ("fast: GeoCert's projection-distance radius, a lower bound on the true one; exact: the true radius "
               "rounded down to 2^-t, proved minimal by a counterexample (its own circuit buckets, k<K>-f<F>-exact, "
               "about twice the constraints)")


BOUND_RADIUS_HELP = ("; bound: linear bound propagation (CROWN) of the l2 ball through the network, no region "
                     "enumeration: polynomial in the network's size, a lower bound usually below the exact radius; "
                     "hybrid: the exact radius when enumeration finishes within --exact-budget seconds, else bound")


def add_radius_argument(parser: argparse.ArgumentParser, *, default: str | None = "fast", env: str | None = None,
                        bound: bool = False) -> None:
    """`bound`: the command also offers the bound radius (plaintext certification)."""
    where = f"default ${env}, else fast" if env else f"default {default}"
    choices = RADIUS_CHOICES + (("bound", "hybrid") if bound else ())
    parser.add_argument("--radius", choices=choices, default=default,
                        help=f"{RADIUS_HELP}{BOUND_RADIUS_HELP if bound else ''} ({where})")


BUCKET_GROWTH_CHOICES = (2, 4)
BUCKET_GROWTH_HELP = ("each circuit bucket holds this many times the regions and pool entries of the next smaller "
                      "one: 4 pads a statement up to 4x and reveals its covering-set sizes within a factor of 4; 2 "
                      "pads up to 2x, reveals them within a factor of 2, and needs about twice as many keys. "
                      "Buckets the card already publishes are used first")


def add_bucket_growth_argument(parser: argparse.ArgumentParser, *, default: int | None = 4,
                               env: str | None = None) -> None:
    where = f"default ${env}, else 4" if env else f"default {default}"
    parser.add_argument("--bucket-growth", type=int, choices=BUCKET_GROWTH_CHOICES, default=default,
                        help=f"{BUCKET_GROWTH_HELP} ({where})")


PER_SLICE_HELP = ("prove exact certificates slice by slice: one proof per sensitive slice, each in the bucket its "
                  "own slice needs (-exact-slice), so the largest circuit is the largest slice's (needs --radius exact)")


def add_per_slice_argument(parser: argparse.ArgumentParser, *, env: str | None = None) -> None:
    where = f" (default ${env}, else off)" if env else ""
    parser.add_argument("--per-slice", action="store_true", default=None if env else False,
                        help=PER_SLICE_HELP + where)
