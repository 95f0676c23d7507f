"""`--radius fast|exact` and `--bucket-growth 2|4`: how a model's certificates are stated and which circuit
buckets prove them, on every command that certifies or proves."""
from __future__ import annotations

import argparse

RADIUS_CHOICES = ("fast", "exact")
RADIUS_HELP = ("fast: GeoCert's projection-distance radius, a lower bound on the true one; exact: the true radius "
               "rounded down to 2^-t, proved minimal by a counterexample (its own circuit buckets, k<K>-f<F>-exact, "
               "about twice the constraints)")


EXTRA_RADIUS_HELP = {
    "bound": "; bound: linear bound propagation (CROWN) of the l2 ball through the network, no region enumeration: "
             "polynomial in the network's size, a lower bound usually below the exact radius (its own circuit "
             "bucket, k1-f1-bound)",
    "hybrid": "; hybrid: the exact radius when enumeration finishes within --exact-budget seconds, else bound",
}


def add_radius_argument(parser: argparse.ArgumentParser, *, default: str | None = "fast", env: str | None = None,
                        extra: tuple[str, ...] = ()) -> None:
    """`extra`: the modes the command offers beyond fast and exact ("bound", "hybrid")."""
    where = f"default ${env}, else fast" if env else f"default {default}"
    parser.add_argument("--radius", choices=RADIUS_CHOICES + extra, default=default,
                        help=RADIUS_HELP + "".join(EXTRA_RADIUS_HELP[m] for m in extra) + f" ({where})")


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
