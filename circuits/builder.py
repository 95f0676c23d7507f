"""R1CS builder in the style of gnark's frontend: one circuit function builds
the constraints and, when input values are supplied, the witness.

    cs = ConstraintSystem(with_values=True)          # prover; False for setup
    x = cs.private_input("x", 3)
    y = cs.public_input("y")                         # bound later
    cs.bind(y, x * x + 1)
    r1cs, witness = cs.compile(), cs.witness()

Values are computed as each constraint is added, and every constraint is
checked against them on the spot (one multiplication), so a bad witness is
reported at the gadget that produced it (UnsatisfiedConstraint naming the
gadget scope) instead of as an opaque failure in the prover. Without values
the same code yields the identical R1CS (used for key setup).

Linear combinations (`LC`, defined in circuits/lc.py) are sparse dicts
wire -> coefficient in [1, R), wire 0 being the constant 1; adding them, or
scaling by a constant, is free. A product of two non-constant LCs emits one
constraint `a * b = out`.

Wire numbering of the compiled R1CS: 0 = constant 1, then public inputs in
declaration order, then every other wire in allocation order (inputs and
internal wires interleaved as they were created).

Costs (constraints): mul/square/inverse 1, div 2 (1 if the numerator is
constant), assert_equal 1, assert_is_bool 1, is_zero/is_equal 2, select 1
(+1 if cond is not known boolean; 0 if a - b is constant), to_bits/assert_range
n, assert_signed_range n+1, is_less/is_less_or_equal n+2, assert_less(_or_equal)
n+1, is_negative n+1, abs n+2, min/max n+3, poseidon 3*(8t + R_P) - 3.
Gadget modules: gadgets/bits.py (bits, ranges, packing), gadgets/compare.py
(signed comparisons; read its docstring for the operand precondition),
gadgets/select.py (mux, membership), gadgets/poseidon.py.

This module holds the wire tables, inputs, scopes, the free LC arithmetic and
the emission of constraints; `ConstraintSystem` adds to them the operations
that emit constraints and the gadget methods (circuits/builder_ops.py) and the
compiled R1CS, witness and checks (circuits/builder_output.py).
"""
from __future__ import annotations

import contextlib
from typing import Callable, Iterable, Iterator, Sequence

from .builder_ops import ConstraintOps
from .builder_output import R1CSOutput
from .errors import CircuitError, UnsatisfiedConstraint
from .field import R, to_signed
from .lc import LC
from .relation import R1CS

__all__ = ["API", "ConstraintSystem"]


class ConstraintSystem(ConstraintOps, R1CSOutput):
    """Builds an R1CS, and its witness when `with_values` is True.

    strict: check each constraint against the witness as it is emitted
    (cheap: the LC values are carried along), and have gadgets refuse values
    outside their preconditions. On by default. strict=False skips both and
    completes the witness with the honest hints regardless (e.g. the low bits
    of an out-of-range value): the resulting witness is then unsatisfying,
    which is how the tests show that the constraints, not the builder's
    checks, reject bad values.
    """

    def __init__(self, with_values: bool = True, strict: bool = True, keep_constraints: bool = True):
        self.with_values = with_values
        self.strict = strict and with_values
        # keep_constraints=False (with values only): count and check each constraint as it is emitted,
        # then let it go; for a prover whose relation is already at hand, the witness is all it
        # needs, and on circuits of millions of constraints their terms are most of the memory.
        self.keep_constraints = keep_constraints or not with_values
        self._n_constraints = 0
        # Internal wire tables (index 0 = constant one).
        self._values: list[int | None] = [1]
        self._wire_scope: list[str] = [""]
        self._wire_local: list[object] = ["one"]
        self._public: list[int] = []
        self._is_public: set[int] = set()
        self._unbound: dict[int, str] = {}
        self._input_names: set[str] = set()
        # Constraints as parallel lists of term dicts (never mutated after emission).
        self._a: list[dict[int, int]] = []
        self._b: list[dict[int, int]] = []
        self._c: list[dict[int, int]] = []
        self._labels: list[str] = []
        self._scope_stack: list[str] = []
        self._scope = ""
        self._compiled: R1CS | None = None
        self._one_terms = {0: 1}
        self.one = LC(self, self._one_terms, 1, boolean=True)
        self.zero = LC(self, {}, 0, boolean=True)

    # ------------------------------------------------------------------ naming
    @contextlib.contextmanager
    def scope(self, name: str) -> Iterator[None]:
        """Label constraints and wires made inside with `outer/name` (debugging)."""
        self._scope_stack.append(name)
        prev = self._scope
        self._scope = f"{prev}/{name}" if prev else name
        try:
            yield
        finally:
            self._scope_stack.pop()
            self._scope = prev

    @property
    def current_scope(self) -> str:
        return self._scope

    def wire_name(self, wire: int) -> str:
        """Name of an internal wire: `scope/local` (inputs keep their given name)."""
        local = self._wire_local[wire]
        if isinstance(local, tuple):
            local = f"{local[0]}[{local[1]}]"
        scope = self._wire_scope[wire]
        return f"{scope}/{local}" if scope else str(local)

    # ------------------------------------------------------------------ sizes
    @property
    def n_constraints(self) -> int:
        return self._n_constraints

    def _require_constraints(self) -> None:
        if not self.keep_constraints:
            raise CircuitError("this constraint system kept only its witness (keep_constraints=False)")

    @property
    def n_wires(self) -> int:
        return len(self._values)

    @property
    def n_public(self) -> int:
        return len(self._public)

    # ------------------------------------------------------------------ inputs
    def _new_wire(self, value: int | None, local: object) -> int:
        self._values.append(value)
        self._wire_scope.append(self._scope)
        self._wire_local.append(local)
        self._compiled = None
        return len(self._values) - 1

    def _input_value(self, name: str, value: int | None) -> int | None:
        if name in self._input_names:
            raise CircuitError(f"input {name!r} is declared twice")
        self._input_names.add(name)
        if not self.with_values:
            return None
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, int):
            raise CircuitError(f"input {name!r}: value must be an int, got {type(value).__name__}")
        return value % R

    def public_input(self, name: str, value: int | None = None) -> LC:
        """Declare a public input. Public wires come first in the compiled R1CS,
        in declaration order. With values but `value=None` the input is bound
        later with `bind` (e.g. a decision the circuit computes)."""
        v = self._input_value(name, value)
        w = self._new_wire(v, name)
        self._public.append(w)
        self._is_public.add(w)
        if self.with_values and v is None:
            self._unbound[w] = name
        return LC(self, {w: 1}, v)

    def private_input(self, name: str, value: int | None = None) -> LC:
        """Declare a private input (witness). Needs a value when building with values."""
        v = self._input_value(name, value)
        if self.with_values and v is None:
            raise CircuitError(f"private input {name!r} needs a value when building the witness")
        w = self._new_wire(v, name)
        return LC(self, {w: 1}, v)

    def public_inputs(self, name: str, n: int, values: Sequence[int] | None = None) -> list[LC]:
        """A vector of public inputs named name[i]."""
        vals = self._vector_values(name, n, values)
        return [self.public_input(f"{name}[{i}]", vals[i]) for i in range(n)]

    def private_inputs(self, name: str, n: int, values: Sequence[int] | None = None) -> list[LC]:
        """A vector of private inputs named name[i]."""
        vals = self._vector_values(name, n, values)
        return [self.private_input(f"{name}[{i}]", vals[i]) for i in range(n)]

    def _vector_values(self, name, n, values):
        if values is None or not self.with_values:
            return [None] * n
        if len(values) != n:
            raise CircuitError(f"input vector {name!r}: expected {n} values, got {len(values)}")
        return list(values)

    def bind(self, public: LC, value: "LC | int") -> None:
        """Bind a public input declared without value to a circuit value:
        sets its witness value and asserts equality (one constraint)."""
        w = public.single_wire()
        if w is None or w not in self._is_public:
            raise CircuitError("bind: first argument must be a public input variable")
        value = self._lc(value)
        if self.with_values:
            if w not in self._unbound:
                raise CircuitError(f"bind: public input {self.wire_name(w)!r} already has a value")
            if value.value is None:
                raise CircuitError(f"bind: value for {self.wire_name(w)!r} is unknown")
            self._values[w] = value.value
            public.value = value.value
            del self._unbound[w]
        with self.scope(f"bind:{self.wire_name(w)}"):
            self.assert_equal(public, value)

    # ------------------------------------------------------------ constants/LC
    def constant(self, value: int) -> LC:
        v = value % R
        return LC(self, {0: v} if v else {}, v)

    def _lc(self, x: "LC | int") -> LC:
        if isinstance(x, LC):
            if x.cs is not self:
                raise CircuitError("value belongs to another constraint system")
            return x
        if isinstance(x, bool):
            return self.one if x else self.zero
        if isinstance(x, int):
            return self.constant(x)
        raise CircuitError(f"expected a circuit value or int, got {type(x).__name__}")

    def lc(self, x: "LC | int") -> LC:
        """x as a linear combination of this system: an LC of this system as it is, a bool as one or zero,
        an int as a constant (reduced mod R). Adds no wire and no constraint.

        The one way for code outside the builder (gadgets, statements) to treat ints and circuit
        values alike, e.g. to read `.terms` or `.is_constant()` of either. Raises CircuitError for an
        LC of another system or a value of any other type."""
        return self._lc(x)

    def assert_mul(self, a: "LC | int", b: "LC | int", c: "LC | int") -> None:
        """a * b == c as exactly one constraint (none if all three are constants)."""
        a, b, c = self._lc(a), self._lc(b), self._lc(c)
        if a.is_constant() and b.is_constant() and c.is_constant():
            if (a.terms.get(0, 0) * b.terms.get(0, 0) - c.terms.get(0, 0)) % R:
                raise UnsatisfiedConstraint(f"assert_mul in {self._scope or '<top>'}: constants do not match")
            return
        self._emit(a, b, c)

    def value_of(self, x: "LC | int") -> int | None:
        """Witness value of x in [0, R) (None when building without values)."""
        return self._lc(x).value

    def signed_value_of(self, x: "LC | int") -> int | None:
        v = self._lc(x).value
        return None if v is None else to_signed(v)

    def _add_const(self, a: LC, k: int) -> LC:
        k %= R
        if k == 0:
            return a
        t = dict(a.terms)
        c = (t.get(0, 0) + k) % R
        if c:
            t[0] = c
        else:
            del t[0]
        v = a.value
        return LC(self, t, None if v is None else (v + k) % R)

    def _scale(self, a: LC, k: int) -> LC:
        k %= R
        if k == 0:
            return self.zero
        if k == 1:
            return a
        t = {w: c * k % R for w, c in a.terms.items()}
        v = a.value
        return LC(self, t, None if v is None else v * k % R)

    def _add_lc(self, a: LC, b: LC, k: int) -> LC:
        """a + k*b."""
        if b.cs is not self:
            raise CircuitError("value belongs to another constraint system")
        if len(a.terms) < len(b.terms) and k == 1:
            a, b = b, a
        t = dict(a.terms)
        get = t.get
        for w, c in b.terms.items():
            if k != 1:
                c = c * k % R
            old = get(w)
            if old is None:
                t[w] = c
            else:
                s = (old + c) % R
                if s:
                    t[w] = s
                else:
                    del t[w]
        va, vb = a.value, b.value
        v = None if va is None or vb is None else (va + k * vb) % R
        return LC(self, t, v)

    def add(self, *xs: "LC | int") -> LC:
        return self.sum(xs)

    def sub(self, a: "LC | int", b: "LC | int") -> LC:
        return self._add_lc(self._lc(a), self._lc(b), R - 1)

    def neg(self, a: "LC | int") -> LC:
        return self._scale(self._lc(a), R - 1)

    def sum(self, xs: Iterable["LC | int"]) -> LC:
        """Sum of many values in one pass (linear in the total number of terms)."""
        return self.lin_comb([(1, x) for x in xs])

    def lin_comb(self, pairs: Iterable[tuple[int, "LC | int"]]) -> LC:
        """sum_i k_i * x_i for integer k_i; free (no constraint)."""
        t: dict[int, int] = {}
        get = t.get
        value = 0
        known = True
        const = 0
        for k, x in pairs:
            k %= R
            if not k:
                continue
            if isinstance(x, int):
                const += k * x
                continue
            x = self._lc(x)
            xv = x.value
            if xv is None:
                known = False
            else:
                value += k * xv
            for w, c in x.terms.items():
                old = get(w)
                t[w] = c * k if old is None else old + c * k
        if const:
            t[0] = t.get(0, 0) + const
        t = {w: c % R for w, c in t.items() if c % R}
        if known:
            v = (value + const) % R
        else:
            v = None
        return LC(self, t, v)

    # ------------------------------------------------------------ constraints
    def _emit(self, a: LC, b: LC, c: LC) -> None:
        """Add the constraint a * b = c."""
        if self.with_values:
            va, vb, vc = a.value, b.value, c.value
            if va is None or vb is None or vc is None:
                raise CircuitError(
                    f"constraint in {self._scope or '<top>'} uses a value that is not known yet "
                    f"(a public input used before `bind`?)"
                )
            if self.strict and (va * vb - vc) % R:
                raise UnsatisfiedConstraint(
                    f"constraint #{self._n_constraints} in {self._scope or '<top>'} is not satisfied by the witness: "
                    f"{to_signed(va)} * {to_signed(vb)} != {to_signed(vc)}"
                )
        self._n_constraints += 1
        if self.keep_constraints:
            self._a.append(a.terms)
            self._b.append(b.terms)
            self._c.append(c.terms)
            self._labels.append(self._scope)
        self._compiled = None

    def _alloc(self, value: int | None, local: object) -> LC:
        """A new internal wire (its value from a hint); the caller constrains it."""
        w = self._new_wire(value, local)
        return LC(self, {w: 1}, value)

    def hint(self, name: str, fn: Callable[..., Sequence[int]], inputs: Sequence["LC | int"], n_outputs: int) -> list[LC]:
        """Allocate n_outputs wires whose values are fn(*input values) (ints, any sign).

        The outputs are UNCONSTRAINED: the caller must constrain them. Without
        values, fn is not called.
        """
        ins = [self._lc(x) for x in inputs]
        if self.with_values:
            vals = [x.value for x in ins]
            if any(v is None for v in vals):
                raise CircuitError(f"hint {name!r}: an input value is not known yet")
            outs = list(fn(*vals))
            if len(outs) != n_outputs:
                raise CircuitError(f"hint {name!r} returned {len(outs)} values, expected {n_outputs}")
            outs = [int(o) % R for o in outs]
        else:
            outs = [None] * n_outputs
        with self.scope(name):
            return [self._alloc(outs[i], ("out", i)) for i in range(n_outputs)]


API = ConstraintSystem
