"""How one row of a region is covered: the cover kinds of a fairness certificate.

A row is a hidden neuron's hyperplane z_i = 0 (a facet of the region) or a
decision row d_j = z_y - z_j of a class j != y. The certificate names, for
every region of a covering set and every row, why no input within eps of the
query crosses that row out of the set (`fairness.checker` states each rule
exactly). The plaintext certificate, its checker and the statement witness
share this one vocabulary.

`CoverKind` is a str enum: a member equals, hashes and serialises (json) as
its string value, which is what the certificate's JSON form carries.
"""
from __future__ import annotations

import enum


class CoverKind(str, enum.Enum):
    """Why a row of a region needs no further region in the covering set."""

    DISTANCE = "distance"
    """The row's hyperplane lies at distance >= eps from the query (a nonzero normal, exact test)."""

    NEIGHBOR = "neighbor"
    """A neuron row whose neighbouring region (that activation bit flipped) is in the covering set."""

    EMPTY_FACET = "empty_facet"
    """A neuron row whose facet is empty inside the box: a Farkas certificate of emptiness."""

    FAR_FACET = "far_facet"
    """A neuron row whose facet lies at distance >= eps: a separation certificate (with box multipliers)."""

    FAR_REGION = "far_region"
    """A neuron row whose whole neighbouring region lies at distance >= eps: a separation certificate for it."""

    FAR_CLASS = "far_class"
    """A decision row whose points where class j at least ties y are at distance >= eps: a separation certificate."""

    NO_CLASS = "no_class"
    """A decision row with no point of the region and box where class j at least ties y: a Farkas certificate."""

    def __str__(self) -> str:
        return self.value

    def __format__(self, spec: str) -> str:
        return format(self.value, spec)
