"""Selection and set membership (select and is_zero themselves are builder primitives)."""
from __future__ import annotations

from typing import Sequence

from ..errors import CircuitError, UnsatisfiedConstraint


def mux(cs, index_bits: Sequence, values: Sequence):
    """values[index] with index = sum 2^i index_bits[i] (little-endian bits,
    asserted boolean unless known); len(values) must be 2^len(index_bits).
    A binary tree of selects: len(values) - 1 constraints at most."""
    if len(values) != 1 << len(index_bits):
        raise CircuitError(f"mux: {len(values)} values for {len(index_bits)} index bits (need {1 << len(index_bits)})")
    layer = [cs.lc(v) for v in values]
    with cs.scope("mux"):
        for bit in index_bits:
            layer = [cs.select(bit, layer[j + 1], layer[j]) for j in range(0, len(layer), 2)]
    return layer[0]


def _vanishing_product(cs, x, members: Sequence):
    """prod_i (x - members[i]): zero exactly when x is one of the members."""
    if not members:
        raise CircuitError("membership in an empty set")
    x = cs.lc(x)
    acc = x - members[0]
    for m in members[1:]:
        acc = cs.mul(acc, x - m)
    return acc


def assert_member(cs, x, members: Sequence) -> None:
    """x is one of members (circuit values or constants): len(members) constraints
    (len - 1 products and the final equality)."""
    with cs.scope("assert_member"):
        x_lc = cs.lc(x)
        if cs.strict and x_lc.value is not None:
            vals = [cs.lc(m).value for m in members]
            if x_lc.value not in vals:
                raise UnsatisfiedConstraint(f"assert_member in {cs.current_scope}: value is not in the set")
        cs.assert_equal(_vanishing_product(cs, x_lc, members), 0)


def is_member(cs, x, members: Sequence):
    """1 if x is one of members else 0 (boolean); len(members) + 1 constraints."""
    with cs.scope("is_member"):
        return cs.is_zero(_vanishing_product(cs, x, members))
