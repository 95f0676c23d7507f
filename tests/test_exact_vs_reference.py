"""Exact certificates against the independent exact reference (tests/exact_reference.py).

For every query: both certificates pass the exact checker; an exact certificate made maximal by a
counterexample has E = floor(reference radius * 2^t) (from the exact squared radius when the reference
verified it); a cap certificate has no reference point closer than the cap; fast E <= exact E and the
fast eps is at most the reference radius; and the fast E is not below the paper's projection bound
(tests/projection_reference.py) by more than one unit. An exact certification that falls back to a fast
certificate (neither a counterexample nor the cap) is counted, and there must be none on these models.
"""
from __future__ import annotations

import math
import random
from dataclasses import dataclass, field

import pytest

from fairness.certificate import certify
from fairness.checker import check_certificate
from fairness.regions import LPRegionOracle
from tests.exact_reference import reference_radius
from tests.fairness_toy_models import random_model, random_query
from tests.projection_reference import floor_scaled_sqrt, projection_search

# (seed, n_inputs, n_classes): models whose queries reach other classes inside the box (many random
# models never change their decision on the box, which would only exercise the cap).
TOY_CASES = [(4, 4, 2), (5, 5, 2), (2, 4, 2)]
THREE_CLASS_CASE = (7, 5, 3)
QUERIES = 6


def reference_floor(ref, eps_bits: int) -> tuple[int | None, bool]:
    """(floor(radius * 2^t), whether it is exact); None for an infinite radius.

    Exact from radius_sq when the reference verified it; otherwise from the float radius, flagged inexact
    when radius * 2^t lies within 1e-6 of an integer."""
    if math.isinf(ref.radius):
        return None, True
    if ref.radius_sq is not None:
        return floor_scaled_sqrt(ref.radius_sq, eps_bits), True
    scaled = ref.radius * (1 << eps_bits)
    return math.floor(scaled), abs(scaled - round(scaled)) > 1e-6


@dataclass
class Tally:
    queries: int = 0
    flips: int = 0
    counterexamples: int = 0
    caps: int = 0
    fallbacks: list = field(default_factory=list)


def compare_query(model, query, oracle, tally: Tally, where: str) -> None:
    fast = certify(model, query, oracle, radius="fast")
    exact = certify(model, query, oracle, radius="exact")
    check_certificate(model, fast)
    check_certificate(model, exact)
    ref = reference_radius(model, query)
    proj = projection_search(model, query)
    t = exact.eps_bits
    assert fast.eps_bits == t
    tally.queries += 1
    what = f"{where}: query {query}"
    if exact.status == "flip":
        tally.flips += 1
        assert fast.status == "flip" and fast.eps == exact.eps == 0, what
        assert ref.radius == 0.0 and proj.radius == 0.0, what
        return
    assert fast.status == "certified", what
    floor_ref, sure = reference_floor(ref, t)
    kind = exact.attainment.kind
    if kind == "counterexample":
        tally.counterexamples += 1
        assert exact.radius_is_exact, what
        assert floor_ref is not None, f"{what}: a counterexample but the reference finds no other class"
        if sure:
            assert exact.eps == floor_ref, f"{what}: exact E {exact.eps} != reference floor {floor_ref}"
        else:
            assert abs(exact.eps - floor_ref) <= 1, what
    elif kind == "cap":
        tally.caps += 1
        assert floor_ref is None or floor_ref >= exact.eps, f"{what}: cap {exact.eps} above reference {floor_ref}"
    else:
        tally.fallbacks.append((where, query, kind, fast.eps, exact.eps, floor_ref))
    assert fast.eps <= exact.eps, f"{what}: fast E {fast.eps} > exact E {exact.eps}"
    if not math.isinf(ref.radius):
        if ref.radius_sq is not None:
            assert fast.eps_value ** 2 <= ref.radius_sq, f"{what}: fast eps above the reference radius"
        else:
            assert float(fast.eps_value) <= ref.radius * (1 + 1e-9), what
    assert fast.eps >= proj.eps(t) - 1, f"{what}: fast E {fast.eps} below the projection bound {proj.eps(t)}"


def run_model(model, queries, where: str) -> Tally:
    oracle = LPRegionOracle(model)
    tally = Tally()
    for i, q in enumerate(queries):
        compare_query(model, q, oracle, tally, f"{where} #{i}")
    return tally


@pytest.mark.parametrize("case", TOY_CASES + [THREE_CLASS_CASE], ids=lambda c: f"seed{c[0]}-in{c[1]}-cls{c[2]}")
def test_exact_certificates_match_the_reference_on_toy_models(case):
    seed, n_inputs, n_classes = case
    model = random_model(seed, n_inputs=n_inputs, hidden=(4, 2), n_classes=n_classes)
    rng = random.Random(seed)
    queries = [random_query(model, rng) for _ in range(QUERIES)]
    tally = run_model(model, queries, f"toy {case}")
    assert tally.queries == QUERIES
    assert tally.fallbacks == []
    # The cases are chosen so that the counterexample path is exercised.
    assert tally.counterexamples >= 3


@pytest.mark.slow
def test_exact_certificates_match_the_reference_on_german():
    from fairness.datasets import load_dataset
    from fairness.fixed_point import queries_in_box, to_fixed_point
    from fairness.training import load_or_train

    model = to_fixed_point(load_or_train("german", (4, 2), variant="unfair", seed=0))
    queries = queries_in_box(model, load_dataset("german").X_test, 20)
    assert len(queries) == 20
    tally = run_model(model, queries, "german (4,2) unfair")
    assert tally.fallbacks == []
    assert tally.counterexamples + tally.flips + tally.caps == 20
