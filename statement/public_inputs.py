"""The public inputs every certificate statement declares, in one order, and the query's domain check:
shared by the region statement (statement.circuit) and the bound statement (statement.bound_radius), so
a bundle's signals mean the same whichever statement its bucket proves."""
from __future__ import annotations

from dataclasses import dataclass

from .checks import assert_nonnegative
from .shape import StatementShape


@dataclass
class PublicInputs:
    """The statement's public inputs as circuit values, in the order every certificate statement declares them."""

    commitment: object
    decision: object
    eps: object
    status: object
    flip_index: object
    query: list
    spread_decisions: list
    spread_buckets: object
    delta: object
    persistence_bounds: list
    part: object


def declare_public_inputs(cs, shape: StatementShape, values: list) -> PublicInputs:
    """Declare the public inputs of `shape` (values: the field elements, or Nones without values)."""
    S = shape.n_slices
    commitment = cs.public_input("commitment", values[0])
    y = cs.public_input("decision", values[1])
    eps = cs.public_input("eps", values[2])
    status = cs.public_input("status", values[3])
    flip_index = cs.public_input("flip_slice", values[4])
    query = [cs.public_input(f"query[{i}]", values[5 + i]) for i in range(shape.n_inputs)]
    at = 5 + shape.n_inputs
    spread_decisions = [cs.public_input(f"spread_decision[{s}]", values[at + s]) for s in range(S)
                        ] if shape.spread else []
    spread_buckets = cs.public_input("spread_buckets", values[at + S]) if shape.spread else None
    at += shape.n_spread_public
    delta, persistence_bounds = None, []
    if shape.persistence:
        delta = cs.public_input("persistence_delta", values[at])
        persistence_bounds = [cs.public_input(f"persistence_bound[{i}]", values[at + 1 + i])
                              for i in range(2 * len(shape.persistence_pairs))]
    at += shape.n_persistence_public
    part = cs.public_input("part_slice", values[at]) if shape.per_slice else None
    return PublicInputs(commitment, y, eps, status, flip_index, query, spread_decisions, spread_buckets, delta,
                        persistence_bounds, part)


def query_in_domain(cs, shape: StatementShape, query) -> list:
    """Assert the query's free columns lie in the box and its sensitive values form a slice; return the
    slice indicators (one-hot: [the query's sensitive values are slice s])."""
    sens = set(shape.sensitive_columns)
    for j in range(shape.n_inputs):
        if j in sens:
            continue
        lo, hi = shape.box_lower[j], shape.box_upper[j]
        assert_nonnegative(cs, query[j] - lo, hi - lo)
        assert_nonnegative(cs, hi - query[j], hi - lo)
    q_slice = []
    for sv in shape.slices:
        ind = None
        for c, v in zip(shape.sensitive_columns, sv):
            e = cs.is_equal(query[c], v)
            ind = e if ind is None else cs.and_(ind, e)
        q_slice.append(ind)
    cs.assert_equal(cs.sum(q_slice), 1)
    return q_slice
