"""Linear combinations of circuit wires, the values gadgets compute with.

An `LC` is a sparse dict wire -> coefficient in [1, R) of one constraint
system, wire 0 being the constant 1. Adding LCs or scaling one by a constant
is free; the product of two non-constant LCs asks the owning system for one
constraint (`circuits.builder.ConstraintSystem` is that system). Gadgets
create and combine LCs through this module alone, so they never depend on the
builder that calls them.
"""
from __future__ import annotations

from typing import Protocol

from .errors import CircuitError
from .field import R, to_signed


class LinearSystem(Protocol):
    """What an LC asks of the constraint system that owns its wires."""

    def _add_lc(self, a: "LC", b: "LC", k: int) -> "LC": ...

    def _add_const(self, a: "LC", k: int) -> "LC": ...

    def _scale(self, a: "LC", k: int) -> "LC": ...

    def mul(self, a: "LC | int", b: "LC | int") -> "LC": ...


Operand = "LC | int"


class LC:
    """A linear combination sum_w coeff_w * wire_w of one ConstraintSystem.

    `value` is the evaluation under the witness (None while building without
    values). `boolean` is set by gadgets whose output is constrained to {0, 1},
    so that `select` etc. need not re-assert it.
    """

    __slots__ = ("cs", "terms", "value", "boolean")

    def __init__(self, cs: "LinearSystem", terms: dict[int, int], value: int | None, boolean: bool = False):
        self.cs = cs
        self.terms = terms
        self.value = value
        self.boolean = boolean

    # --- inspection -------------------------------------------------------
    def is_constant(self) -> bool:
        t = self.terms
        return not t or (len(t) == 1 and 0 in t)

    def constant_value(self) -> int:
        """The value of a constant LC (raises if it is not constant)."""
        if not self.is_constant():
            raise CircuitError("linear combination is not a constant")
        return self.terms.get(0, 0)

    def single_wire(self) -> int | None:
        """The wire index if this LC is exactly 1 * wire, else None."""
        t = self.terms
        if len(t) == 1:
            for w, k in t.items():
                if k == 1 and w != 0:
                    return w
        return None

    def __repr__(self) -> str:
        shown = ", ".join(f"{to_signed(k)}*w{w}" for w, k in list(self.terms.items())[:6])
        more = "..." if len(self.terms) > 6 else ""
        return f"LC({shown}{more}; value={self.value})"

    # --- linear arithmetic (free) ------------------------------------------
    def __add__(self, other):
        cs = self.cs
        if isinstance(other, LC):
            return cs._add_lc(self, other, 1)
        if isinstance(other, int):
            return cs._add_const(self, other)
        return NotImplemented

    __radd__ = __add__

    def __sub__(self, other):
        cs = self.cs
        if isinstance(other, LC):
            return cs._add_lc(self, other, R - 1)
        if isinstance(other, int):
            return cs._add_const(self, -other)
        return NotImplemented

    def __rsub__(self, other):
        if isinstance(other, int):
            out = self.cs._add_const(self.cs._scale(self, R - 1), other)
            if other == 1 and self.boolean:
                out.boolean = True  # 1 - b of a boolean b is boolean
            return out
        return NotImplemented

    def __neg__(self):
        return self.cs._scale(self, R - 1)

    def __mul__(self, other):
        if isinstance(other, int):
            return self.cs._scale(self, other)
        if isinstance(other, LC):
            return self.cs.mul(self, other)
        return NotImplemented

    __rmul__ = __mul__

    # LCs are not hashable values; forbid accidental truthiness / equality use.
    def __bool__(self):
        raise CircuitError("a circuit value has no truth value while building; use cs.is_zero / cs.select")

    def __eq__(self, other):  # pragma: no cover - guard
        raise CircuitError("use cs.assert_equal or cs.is_equal to compare circuit values")

    __hash__ = None  # type: ignore[assignment]


Variable = LC  # a single-wire LC; gnark calls these Variables
