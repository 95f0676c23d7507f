"""`ConstraintSystem.lc`, the builder's public conversion to a linear combination: ints become
constants, circuit values stay as they are, nothing is allocated or constrained; a value of another
system or of another type is refused."""
from __future__ import annotations

import pytest

from circuits.builder import ConstraintSystem
from circuits.errors import CircuitError
from circuits.field import R


def test_ints_bools_and_circuit_values_become_linear_combinations_for_free():
    cs = ConstraintSystem(with_values=True)
    x = cs.private_input("x", 7)
    wires, constraints = cs.n_wires, cs.n_constraints
    assert cs.lc(x) is x
    assert cs.lc(5).is_constant() and cs.lc(5).value == 5
    assert cs.lc(-1).value == R - 1
    assert cs.lc(True).value == 1 and cs.lc(False).value == 0
    assert (cs.lc(3) + x).value == 10
    assert (cs.n_wires, cs.n_constraints) == (wires, constraints)


def test_values_of_another_system_or_type_are_refused():
    cs, other = ConstraintSystem(with_values=True), ConstraintSystem(with_values=True)
    y = other.private_input("y", 1)
    with pytest.raises(CircuitError, match="another constraint system"):
        cs.lc(y)
    with pytest.raises(CircuitError, match="expected a circuit value or int"):
        cs.lc(1.5)  # type: ignore[arg-type]
