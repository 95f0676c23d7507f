"""The persistence lens as a statement part: the public delta and, per (sensitive attribute, value),
the bounds on the margin gap between the query and that counterfactual, asserted from the committed
weights (`statement.persistence`, whose docstring states what is proved)."""
from __future__ import annotations

from typing import Sequence

from ..persistence import persistence_lens
from ..public_inputs import PublicInputs
from ..shape import StatementShape
from ..widths import StatementWidths


def add_persistence(cs, shape: StatementShape, wd: StatementWidths, weights, biases, inputs: PublicInputs,
                    slopes: Sequence[int] | None) -> None:
    """Assert the persistence inputs of `inputs` (in the "persistence" scope); `slopes`: the witness's
    optimised lower slopes (shapes with alpha_bits; None without values)."""
    with cs.scope("persistence"):
        persistence_lens(cs, shape, wd, weights, biases, inputs.query, inputs.delta, inputs.persistence_bounds,
                         slopes=slopes)
