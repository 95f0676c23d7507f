"""How many constraints a statement shape has, before anyone builds or sets it up.

A region statement's size is affine in its region slots K and pool entries F, up to the bits its lookup
arguments grow by when K or F doubles: its fixed part (weights, commitment, the query, one forward pass
per slice) plus a cost per slot and per entry (see this package's cost model). `estimated_constraints`
counts three small value-free builds of the same statement and extends that line to the shape's K and F; a
shape small enough is counted outright. The hybrid radius uses it to decide, before proving, whether an exact
certificate's bucket is within the deployment's online size (`prover_service.bucket_choice`).
"""
from __future__ import annotations

import dataclasses
import functools

from .shape import StatementShape

# Shapes with at most this many region slots and pool entries are counted, not extrapolated.
COUNTED_SLOTS = 8


@functools.lru_cache(maxsize=128)
def counted_constraints(shape: StatementShape) -> int:
    """The constraints of `shape`'s statement, counted by building it without values."""
    from circuits.builder import ConstraintSystem

    from .circuit import build_statement

    cs = ConstraintSystem(with_values=False)
    build_statement(cs, shape)
    return cs.n_constraints


def estimated_constraints(shape: StatementShape) -> int:
    """The constraints of `shape`'s statement: counted when K and F are at most `COUNTED_SLOTS`, else the line
    through the counts at (4, 4), (8, 4) and (4, 8) evaluated at (K, F). The lookups' bits grow as log(K F), so
    the line lies slightly above the count (under 1% on the test shapes): a limit it is compared with errs on
    the side of the smaller statement."""
    k, f = shape.region_slots, shape.farkas_slots
    if k <= COUNTED_SLOTS and f <= COUNTED_SLOTS:
        return counted_constraints(shape)
    base = counted_constraints(dataclasses.replace(shape, region_slots=4, farkas_slots=4))
    per_slot = (counted_constraints(dataclasses.replace(shape, region_slots=8, farkas_slots=4)) - base) / 4
    per_entry = (counted_constraints(dataclasses.replace(shape, region_slots=4, farkas_slots=8)) - base) / 4
    return round(base + per_slot * (k - 4) + per_entry * (f - 4))
