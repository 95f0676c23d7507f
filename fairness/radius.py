"""The radius vocabulary: how a certificate states its radius, defined once for every layer.

A request, a command or the service names a *mode* (`Radius`): "hybrid" (the exact radius when region
enumeration finishes within a budget, else the bound radius), "exact" (the true radius rounded down to 2^-t,
proved minimal by a counterexample), "bound" (linear bound propagation: a lower bound, no regions) or "fast"
(GeoCert's projection-distance radius, a lower bound that can lie far below the true one).

A circuit bucket's statement proves one of the three *proved* radii (`ProvedRadius`): hybrid is a choice made
per certificate, never a statement, so no bucket, card or verified claim says "hybrid". Region enumeration
(`fairness.certificate.certify`) computes two of them (`REGION_RADII`); the bound radius comes from
`fairness.bound_radius` instead.

`Radius` is a `str` enum whose str() and format() are its value, so JSON, cards, bucket names, settings and
the wire format spell a mode exactly as the plain word did.
"""
from __future__ import annotations

import enum
from typing import Callable, Literal, TypeAlias


class Radius(enum.StrEnum):
    """A radius mode, the default first (the order of every listing of the modes)."""

    HYBRID = "hybrid"
    EXACT = "exact"
    BOUND = "bound"
    FAST = "fast"


# Every mode, in order; and as plain `str` words where a schema or argparse lists them (their repr is the word's).
RADIUS_MODES: tuple[Radius, ...] = tuple(Radius)
RADIUS_WORDS: tuple[str, ...] = tuple(mode.value for mode in Radius)
DEFAULT_RADIUS = Radius.HYBRID

# What a bucket's statement proves, in the order cards and schemas have always listed them.
ProvedRadius: TypeAlias = Literal[Radius.FAST, Radius.EXACT, Radius.BOUND]
PROVED_RADII: tuple[ProvedRadius, ...] = (Radius.FAST, Radius.EXACT, Radius.BOUND)

# The radii region enumeration certifies (fairness.certificate.certify).
REGION_RADII: tuple[Radius, ...] = (Radius.FAST, Radius.EXACT)


def parse_radius(word: str, allowed: tuple[Radius, ...] = RADIUS_MODES) -> Radius:
    """The mode `word` names, if it is one of `allowed`; else a ValueError naming them."""
    if word in allowed:
        return Radius(word)
    shown = word if len(word) <= 32 else word[:32] + "..."
    raise ValueError(f"{shown!r} is not a radius mode here; the modes are {', '.join(allowed)}")


def largest_passing(passes: Callable[[int], bool], low: int, high: int) -> int:
    """The largest numerator E in [low, high] with passes(E), given passes(low) and passes monotone (true up to
    some E, false above): the bisection every bound-style radius (networks' and tree ensembles') ends with."""
    while low < high:
        mid = (low + high + 1) // 2
        if passes(mid):
            low = mid
        else:
            high = mid - 1
    return low
