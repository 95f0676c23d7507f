"""How many constraints a statement shape has, before anyone builds or sets it up.

A region statement's size is affine in its region slots K and pool entries F, up to the bits its lookup
arguments grow by when K or F doubles: its fixed part (weights, commitment, the query, one forward pass per
slice) plus a cost per slot and per entry (see this package's cost model). `size_line` counts three small
value-free builds of a statement family (every shape that differs from another in K and F only) and gives
the line through them; `estimated_constraints` counts a small shape outright and reads a large one off its
family's line. The hybrid radius uses them to decide, before proving, whether an exact certificate's bucket
is within the deployment's online size (`prover_service.bucket_choice`).
"""
from __future__ import annotations

import dataclasses
import functools

from .shape import StatementShape

# Shapes with at most this many region slots and pool entries are counted, not read off the line.
COUNTED_SLOTS = 8


@dataclasses.dataclass(frozen=True)
class SizeLine:
    """constraints(K, F) ~ at_4_4 + per_slot (K - 4) + per_entry (F - 4) for one statement family. The lookups'
    bits grow as log(K F), so beyond (8, 8) the line lies slightly above the count (under 1% on the test
    shapes): a limit it is compared with errs on the side of the smaller statement."""

    at_4_4: int
    per_slot: float
    per_entry: float

    def at(self, region_slots: int, farkas_slots: int) -> int:
        return round(self.at_4_4 + self.per_slot * (region_slots - 4) + self.per_entry * (farkas_slots - 4))


@functools.lru_cache(maxsize=128)
def counted_constraints(shape: StatementShape) -> int:
    """The constraints of `shape`'s statement, counted by building it without values."""
    from circuits.builder import ConstraintSystem

    from .circuit import build_statement

    cs = ConstraintSystem(with_values=False)
    build_statement(cs, shape)
    return cs.n_constraints


def family(shape: StatementShape) -> StatementShape:
    """The member of `shape`'s family at (4, 4): the family's name (its digest) and the line's anchor."""
    return dataclasses.replace(shape, region_slots=4, farkas_slots=4)


def size_line(shape: StatementShape) -> SizeLine:
    """The line through the counts at (4, 4), (8, 4) and (4, 8) of `shape`'s family."""
    base = counted_constraints(family(shape))
    per_slot = (counted_constraints(dataclasses.replace(shape, region_slots=8, farkas_slots=4)) - base) / 4
    per_entry = (counted_constraints(dataclasses.replace(shape, region_slots=4, farkas_slots=8)) - base) / 4
    return SizeLine(base, per_slot, per_entry)


def estimated_constraints(shape: StatementShape) -> int:
    """The constraints of `shape`'s statement: counted when K and F are at most `COUNTED_SLOTS`, else read off
    its family's line."""
    k, f = shape.region_slots, shape.farkas_slots
    if k <= COUNTED_SLOTS and f <= COUNTED_SLOTS:
        return counted_constraints(shape)
    return size_line(shape).at(k, f)
