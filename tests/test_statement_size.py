"""A statement's size before it is built (statement/size.py): counted for small shapes, extrapolated for large ones,
and the extrapolation checked against builds of the large shapes themselves."""
from __future__ import annotations

import dataclasses

import pytest

from statement.size import COUNTED_SLOTS, counted_constraints, estimated_constraints
from statement_cases import case, exact_case


@pytest.mark.parametrize("which", ["fast", "exact"])
@pytest.mark.parametrize("k, f", [(16, 4), (4, 32), (32, 16)])
def test_the_estimate_of_a_large_shape_is_within_one_percent_above_its_count(which, k, f):
    base = (case("two_layer") if which == "fast" else exact_case("far_class")).shape
    shape = dataclasses.replace(base, region_slots=k, farkas_slots=f)
    counted, estimated = counted_constraints(shape), estimated_constraints(shape)
    assert counted <= estimated <= 1.01 * counted, (estimated, counted)  # the lookups' bits grow as log(K F)
    # and the estimate is of this shape, not of a neighbour: one slot more is visibly more
    bigger = estimated_constraints(dataclasses.replace(shape, region_slots=k + 1))
    assert bigger - estimated > 50


def test_a_small_shape_is_counted_not_estimated():
    shape = dataclasses.replace(case("two_layer").shape, region_slots=COUNTED_SLOTS, farkas_slots=2)
    assert estimated_constraints(shape) == counted_constraints(shape)
    assert counted_constraints(shape) != counted_constraints(dataclasses.replace(shape, farkas_slots=3))
