"""The fairness statement circuit (docs/STATEMENT.md), one builder for setup and proving.

`build_statement(cs, shape, public=None, witness=None)` declares the public
inputs (order in `witness.py`), the private witness, and every constraint.
Without values (key setup) it emits the identical R1CS. It dispatches on the
shape's variant: the whole region statement (`statement.region.whole`), the
per-slice one (`statement.region.per_slice`) or the bound radius
(`statement.bound_radius`); the lenses are parts of their own
(`statement.lenses`). What the region statements enforce:

What is enforced, per slice s (slot 0 is the start region; K slots, F pool entries):

- Parameters: every weight/bias in its declared signed range; commitment
  Poseidon-chain(tag, model digest, salt, weights) equals the public input.
- Query: free columns inside the box, sensitive columns one of the slices
  (q_s = [query's sensitive values == slice s], sum q_s = 1); y one-hot;
  0 <= E <= E_cap; status boolean; flip index = sum s fs_s with fs one-hot
  over slices summing to status; status * E = 0.
- Forward pass on (u*, s) = slot 0's derivation with activation bits
  [z > 0] from exact comparisons (slot 0's code IS the start code).
  status 0: every decision row value d_o > 0 (strict decision y).
  Always: at the query's own slice, d_o >= 1 for classes j(o) < y and
  d_o >= 0 for j(o) > y (argmax, lowest index on a tie).
  status 1: the flip slice has some d_o <= 0 (one-hot choice of o).
- For every slot and row one cover kind (one-hot): DISTANCE (distance >= E,
  and ||a|| != 0 unless status 1), NEIGHBOR (flipped code id is a slot id),
  FAR_REGION (neuron rows: (flipped code id, row Rr) is the key of a used
  pool entry, which separates that whole neighbouring region from u*),
  or a Farkas cover (EMPTY_FACET, FAR_FACET, NO_CLASS: (code id, row) key
  is the key of a used pool entry whose separation certificate is valid
  against E: an empty facet or class region, or a facet at distance >= eps,
  `farkas`); the two memberships are log-derivative lookups per slice
  (`membership`).
  Layer-0 rows are code-independent: their distance test is computed once
  per slice and each slot only asserts kind_DISTANCE * (1 - ok) = 0.
- Minimality unless E = E_cap or status 1 (gate g): a designated (slice,
  slot) one-hot and row one-hot; its code (own bits) equals that slot's
  code, its row is DISTANCE-covered there, distance < (E+1)/2^t, and for a
  decision row a boundary point P/D on the hyperplane inside region and box.

Spread lens (shapes with spread_width > 0; `spread`): every slice's decision at
the query and the number of distinct buckets of the favourable margin, as
public inputs, from slot 0's exact forward pass (per-slice shapes: a forward
pass of every slice of their own).

Persistence lens (shapes with persistence columns; `persistence`): for the
public delta and every (sensitive attribute, value), the CROWN bounds on the
margin gap between the query and that counterfactual over the shared box of
moved columns, computed from the committed weights, as public inputs.

Per-slice shapes (exact only) cover one slice, named by one more public input
and chosen by one-hot bits: its base forms, covers and pool; the argmax and
flip checks are gated on it being the query's own or the flip slice; the
counterexample is checked in full. One proof per slice states the whole
statement (docs/STATEMENT.md, "Per-slice proofs").

FLIP witnesses set every slot to the start code and every row to DISTANCE;
with E = 0 the distance tests hold and the zero-normal rule and the strict
decisions are switched off by status (they are what status 1 relaxes).

Soundness: the constraints are exactly the rules of `fairness.checker`
(see its docstring for why acceptance implies the fairness claim), with
every hyperplane recomputed from the committed weights; no value can wrap
(`widths`), and every comparison is an exact range check; memberships hold
except with probability ~ (queries + table) / 2^254 per Poseidon evaluation
(`membership`). Cover kinds,
codes, pool entries and designations are private choices the constraints
verify, so a prover can only pick among valid certificates; slot padding
by repetition and unused pool entries (key -1) add no claims.
"""
from __future__ import annotations

from typing import Callable

from circuits.relation import R1CS

from .region.context import StatementHandles
from .region.per_slice import build_per_slice_statement
from .region.whole import build_whole_statement
from .shape import BOUND_RADIUS, StatementShape
from .widths import widths as shape_widths
from .witness import StatementPublic, StatementWitness

__all__ = ["StatementHandles", "build_statement", "statement_relation"]


def build_statement(cs, shape: StatementShape, public: StatementPublic | None = None,
                    witness: StatementWitness | None = None,
                    progress: Callable[[str], None] | None = None) -> StatementHandles:
    """Declare the statement's inputs and constraints on `cs` (values when cs.with_values).

    progress, if given, is called with a short message after each stage (slices take the time).
    A bound-radius shape's statement is statement.bound_radius's (same public inputs, no regions)."""
    if shape.radius == BOUND_RADIUS:
        from .bound_radius import build_bound_statement

        build_bound_statement(cs, shape, public, witness)
        return StatementHandles([], shape_widths(shape))
    build = build_per_slice_statement if shape.per_slice else build_whole_statement
    return build(cs, shape, public, witness, progress or (lambda message: None))


def statement_relation(shape: StatementShape) -> R1CS:
    """The constraint system of `shape`'s statement, built without values.

    Anyone holding the public shape can rebuild it: the bank to set up keys,
    a ceremony contributor or an auditor to check that a key is for this
    circuit and no other."""
    from circuits.builder import ConstraintSystem

    cs = ConstraintSystem(with_values=False)
    build_statement(cs, shape)
    return cs.compile(wire_names=False)
