"""Counterfactual spread: what the committed model says for every sensitive combination.

For a query x* and every slice s (every combination of sensitive values, in
the statement's order), the model is run on x* with its sensitive columns
set to s, in exact fixed point. Per slice:

    logits    z_s, integers at the logit scale 2^(s (L + 1))
    decision  c_s = argmax_j z_s[j], the lowest index on a tie (as everywhere)
    margin    m_s = z_s[f] - max_{j != f} z_s[j], f the favourable class
    bucket    b_s = floor(m_s / W), W > 0 the public bucket width (an integer
              at the logit scale)

and over all slices: the number of distinct decisions, the number of
distinct buckets k (HyFair's C_eps, 1 <= k <= number of slices) and the
largest margin gap max_s m_s - min_s m_s.

Buckets are uniform in the logit margin, not in probability (HyFair's
printed C_eps leaves the partition open). For two classes the margin is the
logit of the favourable class's probability, whose slope at p = 1/2 is 4: a
width of 0.2 there is HyFair's 0.05 in probability, and away from 1/2 a
logit bucket is narrower in probability than 0.05.
"""
from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Sequence

from .fixed_point import FixedPointModel, quantise_value

# The default bucket width in logits: HyFair's 0.05 in probability at p = 1/2 (slope 4).
DEFAULT_BUCKET_WIDTH = 0.2
# The favourable outcome of each shipped dataset (the class a customer hopes for).
FAVOURABLE_LABELS = ("good credit risk", ">50K", "no default", "no recidivism within two years")


def default_favourable_class(class_labels: Sequence[str]) -> int:
    """The class a customer hopes for: a shipped dataset's favourable label, else the last class."""
    for j, label in enumerate(class_labels):
        if label in FAVOURABLE_LABELS:
            return j
    return len(class_labels) - 1


@dataclass(frozen=True)
class SpreadLens:
    """The public parameters of the lens: the favourable class and the bucket width (logit scale)."""

    favourable_class: int
    bucket_width: int

    def __post_init__(self) -> None:
        if type(self.favourable_class) is not int or self.favourable_class < 0:
            raise ValueError("the favourable class must be a class index")
        if type(self.bucket_width) is not int or self.bucket_width < 1:
            raise ValueError("the bucket width must be a positive integer at the logit scale")


@dataclass(frozen=True)
class Spread:
    """The spread of one query over every slice (see the module docstring)."""

    logits: tuple[tuple[int, ...], ...]
    decisions: tuple[int, ...]
    margins: tuple[int, ...]
    buckets: tuple[int, ...]
    logit_scale_bits: int

    @property
    def distinct_decisions(self) -> int:
        return len(set(self.decisions))

    @property
    def distinct_buckets(self) -> int:
        return len(set(self.buckets))

    @property
    def largest_margin_gap(self) -> Fraction:
        """max_s m_s - min_s m_s, in logits."""
        return Fraction(max(self.margins) - min(self.margins), 1 << self.logit_scale_bits)


def bucket_width_at(model: FixedPointModel, width: float | Fraction) -> int:
    """A width in logits as the integer the lens uses (rounded to the logit scale, at least 1)."""
    if not width > 0:
        raise ValueError(f"the bucket width must be positive, not {width}")
    return max(1, quantise_value(float(width), model.net.logit_scale_bits))


def margin(logits: Sequence[int], favourable_class: int) -> int:
    """z[f] - max_{j != f} z[j]."""
    return logits[favourable_class] - max(v for j, v in enumerate(logits) if j != favourable_class)


def spread(model: FixedPointModel, query: Sequence[int], lens: SpreadLens) -> Spread:
    """The spread of `query` (ints at the input scale) under `lens`."""
    net = model.net
    if not 0 <= lens.favourable_class < net.n_classes:
        raise ValueError(f"favourable class {lens.favourable_class} is not a class of this model")
    all_logits, decisions, margins, buckets = [], [], [], []
    for values in model.slices():
        z = net.logits(model.with_slice(query, values))
        m = margin(z, lens.favourable_class)
        all_logits.append(tuple(z))
        decisions.append(max(range(len(z)), key=lambda j: (z[j], -j)))
        margins.append(m)
        buckets.append(m // lens.bucket_width)  # floor, also for negative margins
    return Spread(tuple(all_logits), tuple(decisions), tuple(margins), tuple(buckets), net.logit_scale_bits)
