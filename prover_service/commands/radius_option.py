"""`--radius fast|exact`: which radius a model's certificates state, on every command that certifies or proves."""
from __future__ import annotations

import argparse

RADIUS_CHOICES = ("fast", "exact")
RADIUS_HELP = ("fast: GeoCert's projection-distance radius, a lower bound on the true one; exact: the true radius "
               "rounded down to 2^-t, proved minimal by a counterexample (its own circuit buckets, k<K>-f<F>-exact, "
               "about twice the constraints)")


def add_radius_argument(parser: argparse.ArgumentParser, *, default: str | None = "fast", env: str | None = None) -> None:
    where = f"default ${env}, else fast" if env else f"default {default}"
    parser.add_argument("--radius", choices=RADIUS_CHOICES, default=default, help=f"{RADIUS_HELP} ({where})")
