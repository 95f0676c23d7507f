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


# -- the lines a prover keeps beside its keys (prover_service/statement_sizes.py) ------------------------------


def _no_builds(monkeypatch):
    import prover_service.statement_sizes as sizes

    def refuse(shape):
        raise AssertionError("a statement was built")

    monkeypatch.setattr(sizes, "size_line", refuse)


def test_a_line_learnt_once_is_read_by_the_next_process_without_a_build(tmp_path, monkeypatch):
    from prover_service.statement_sizes import StatementSizes

    shape = dataclasses.replace(case("two_layer").shape, region_slots=64, farkas_slots=16)
    path = tmp_path / "keys" / "sizes.json"
    learnt = StatementSizes(path).constraints(shape)
    assert learnt == estimated_constraints(shape) and path.is_file()
    _no_builds(monkeypatch)
    assert StatementSizes(path).constraints(shape) == learnt
    assert StatementSizes(path).constraints(dataclasses.replace(shape, region_slots=16)) < learnt  # same family


def test_another_family_is_not_read_off_a_kept_line(tmp_path, monkeypatch):
    from prover_service.statement_sizes import StatementSizes

    path = tmp_path / "sizes.json"
    StatementSizes(path).constraints(case("two_layer").shape)
    _no_builds(monkeypatch)
    with pytest.raises(AssertionError, match="a statement was built"):
        StatementSizes(path).constraints(exact_case("far_class").shape)


@pytest.mark.parametrize("content", ["not json", '{"format": "other/9", "lines": {}}', '{"format": 3}',
                                     '{"format": "fairproof-statement-sizes/1", "lines": {"x": "abc"}}'])
def test_a_damaged_or_foreign_file_is_recomputed_and_rewritten(tmp_path, content):
    from prover_service.statement_sizes import SIZES_FORMAT, StatementSizes

    shape = dataclasses.replace(case("two_layer").shape, region_slots=32, farkas_slots=32)
    path = tmp_path / "sizes.json"
    path.write_text(content)
    assert StatementSizes(path).constraints(shape) == estimated_constraints(shape)
    import json
    assert json.loads(path.read_text())["format"] == SIZES_FORMAT


def test_a_directory_that_cannot_be_written_costs_only_the_memory(tmp_path):
    import os

    from prover_service.statement_sizes import StatementSizes

    shape = dataclasses.replace(case("two_layer").shape, region_slots=32, farkas_slots=8)
    locked = tmp_path / "locked"
    locked.mkdir()
    os.chmod(locked, 0o500)
    try:
        sizes = StatementSizes(locked / "sizes.json")
        assert sizes.constraints(shape) == estimated_constraints(shape)
        assert not (locked / "sizes.json").exists() or os.geteuid() == 0  # root writes anyway
    finally:
        os.chmod(locked, 0o700)
