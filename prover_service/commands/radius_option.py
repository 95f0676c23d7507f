"""`--radius hybrid|exact|bound|fast` and `--bucket-growth 2|4`: how a model's certificates are stated and which
circuit buckets prove them, on every command that certifies or proves."""
from __future__ import annotations

import argparse

from fairness.radius import DEFAULT_RADIUS, RADIUS_MODES, RADIUS_WORDS, Radius

# Every mode, the default first: the exact radius where it can be had, the bound radius where it cannot; the
# fast (projection) radius only when asked, as it can lie far below the true one.
RADIUS_CHOICES = RADIUS_MODES
# Region enumeration's share of a customer's online step under the hybrid radius: beyond it the bound radius
# (searched meanwhile) is proved. With the statement's size below, the whole step stays within about 10 s on
# two cores; measured on the paper models, enumerations that ran 10 to 16 s ended in answers the hybrid radius
# could not keep anyway (docs/BENCHMARKS.md, "The default radius online").
DEFAULT_EXACT_BUDGET = 5.0
# The hybrid radius's largest exact statement, in constraints: its domain stays at 2^19 (a statement of 564,300
# constraints, domain 2^20, took 2.1 s of witness and 6.9 s of proof on two cores), so that a customer's whole
# online step (enumeration, witness, proof) stays within 10 s and 4 GB.
DEFAULT_EXACT_MAX_CONSTRAINTS = 500_000
RADIUS_HELP = ("hybrid: the exact radius when region enumeration finishes within --exact-budget seconds and its "
               "statement has at most --exact-max-constraints constraints, else the bound radius (keys of both statements' buckets, k<K>-f<F>-exact and k1-f1-bound); "
               "exact: the true radius rounded down to 2^-t, proved minimal by a counterexample (its own circuit "
               "buckets, k<K>-f<F>-exact); "
               "bound: linear bound propagation (CROWN) of the l2 ball through the network, no region enumeration: "
               "polynomial in the network's size, a lower bound usually below the exact radius (its own circuit "
               "bucket, k1-f1-bound); "
               "fast: GeoCert's projection-distance radius, a lower bound that can lie far below the true one "
               "(buckets k<K>-f<F>)")


def add_radius_argument(parser: argparse.ArgumentParser, *, default: Radius | None = DEFAULT_RADIUS,
                        env: str | None = None) -> None:
    """`--radius` with every mode; `env`: the variable that gives the default instead (the service's)."""
    where = f"default ${env}, else {DEFAULT_RADIUS}" if env else f"default {default}"
    parser.add_argument("--radius", choices=RADIUS_WORDS, default=default,
                        help=f"{RADIUS_HELP} ({where})")


def add_exact_budget_argument(parser: argparse.ArgumentParser, *, default: float | None = DEFAULT_EXACT_BUDGET,
                              env: str | None = None) -> None:
    """`--exact-budget S`: how long the hybrid mode lets region enumeration run before it proves the bound
    radius instead (checked by `check_exact_budget` when the command runs)."""
    where = f"default ${env}, else {DEFAULT_EXACT_BUDGET:g}" if env else f"default {default:g}"
    parser.add_argument("--exact-budget", type=float, default=default, metavar="S",
                        help=f"with --radius hybrid: seconds region enumeration may take before the bound radius "
                             f"is used instead ({where})")


def _constraint_count(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"a whole number of constraints, not {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"a positive number of constraints, not {value}")
    return value


def add_exact_size_argument(parser: argparse.ArgumentParser, *, default: int | None = DEFAULT_EXACT_MAX_CONSTRAINTS,
                            env: str | None = None) -> None:
    """`--exact-max-constraints N`: the largest exact statement the hybrid mode proves online; an exact
    certificate whose bucket is larger gets the bound radius instead."""
    where = f"default ${env}, else {DEFAULT_EXACT_MAX_CONSTRAINTS:,}" if env else f"default {default:,}"
    parser.add_argument("--exact-max-constraints", type=_constraint_count, default=default, metavar="N",
                        help="with --radius hybrid: the most constraints an exact statement may have to be proved "
                             f"online; a larger one gets the bound radius instead ({where})")


def check_exact_budget(seconds: float) -> float:
    """A budget is a positive, finite number of seconds; anything else is refused in words (a ModelError:
    one line, exit status 1), before the command does any work."""
    from fairness.errors import ModelError

    if not 0 < seconds < float("inf"):
        raise ModelError(f"--exact-budget must be a positive number of seconds, not {seconds:g}")
    return seconds


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
