"""Arithmetic that emits constraints, for `circuits.builder.ConstraintSystem`.

The products, equalities, inverses, zero tests, selections and boolean algebra
of the builder (each a constraint or two over linear combinations), and the
thin methods over the gadget modules (gadgets/bits.py, compare.py, select.py,
poseidon.py) so that circuits read like gnark's API. `ConstraintOps` is a
mixin: the wire tables, `_lc`, `_emit`, `_alloc` and the free LC arithmetic it
calls are the builder's own (circuits/builder.py).
"""
from __future__ import annotations

from typing import Sequence

from .errors import CircuitError, UnsatisfiedConstraint
from .field import R, to_signed
from .gadgets import bits as _bits
from .gadgets import compare as _compare
from .gadgets import poseidon as _poseidon
from .gadgets import select as _select
from .lc import LC

__all__ = ["ConstraintOps"]


class ConstraintOps:
    """Constraint-emitting operations and gadget methods of a ConstraintSystem (mixin)."""

    def mul(self, a: "LC | int", b: "LC | int") -> LC:
        """a * b; one constraint unless a or b is constant (then free)."""
        a = self._lc(a)
        b = self._lc(b)
        if a.is_constant():
            return self._scale(b, a.terms.get(0, 0))
        if b.is_constant():
            return self._scale(a, b.terms.get(0, 0))
        va, vb = a.value, b.value
        out = self._alloc(None if va is None or vb is None else va * vb % R, "mul")
        self._emit(a, b, out)
        if a.boolean and b.boolean:
            out.boolean = True
        return out

    def square(self, a: "LC | int") -> LC:
        return self.mul(a, a)

    def mul_many(self, *xs: "LC | int") -> LC:
        acc = self._lc(xs[0]) if xs else self.one
        for x in xs[1:]:
            acc = self.mul(acc, x)
        return acc

    def inner_product(self, xs: Sequence["LC | int"], ys: Sequence["LC | int"]) -> LC:
        """sum_i xs[i] * ys[i]; one constraint per pair of non-constant terms."""
        if len(xs) != len(ys):
            raise CircuitError(f"inner_product: lengths differ ({len(xs)} vs {len(ys)})")
        pairs = []
        for x, y in zip(xs, ys):
            if isinstance(x, int):
                pairs.append((x, y))
            elif isinstance(y, int):
                pairs.append((y, x))
            else:
                pairs.append((1, self.mul(x, y)))
        return self.lin_comb(pairs)

    def assert_equal(self, a: "LC | int", b: "LC | int") -> None:
        """a == b: one constraint (a - b) * 1 = 0; none if both are constants."""
        a = self._lc(a)
        b = self._lc(b)
        d = self._add_lc(a, b, R - 1)
        if d.is_constant():
            if d.terms:
                raise UnsatisfiedConstraint(
                    f"assert_equal in {self._scope or '<top>'}: constants differ by {to_signed(d.terms[0])}"
                )
            return
        self._emit(d, self.one, self.zero)

    def assert_is_bool(self, a: "LC | int") -> None:
        """a in {0, 1}: one constraint a * a = a."""
        a = self._lc(a)
        if a.is_constant():
            if a.terms.get(0, 0) not in (0, 1):
                raise UnsatisfiedConstraint(f"assert_is_bool in {self._scope or '<top>'}: constant is not 0 or 1")
            return
        with self.scope("assert_is_bool"):
            self._emit(a, a, a)
        a.boolean = True

    def _ensure_bool(self, a: LC) -> None:
        if not a.boolean:
            self.assert_is_bool(a)

    def inverse(self, a: "LC | int") -> LC:
        """1 / a; one constraint a * inv = 1 (unsatisfiable for a = 0)."""
        a = self._lc(a)
        if a.is_constant():
            c = a.terms.get(0, 0)
            if c == 0:
                raise UnsatisfiedConstraint(f"inverse in {self._scope or '<top>'}: of constant 0")
            return self.constant(pow(c, R - 2, R))
        with self.scope("inverse"):
            v = a.value
            if self.strict and v == 0:
                raise UnsatisfiedConstraint(f"inverse in {self._scope}: value is 0")
            inv = self._alloc(None if v is None else (pow(v, R - 2, R) if v else 0), "inv")
            self._emit(a, inv, self.one)
        return inv

    def div(self, a: "LC | int", b: "LC | int") -> LC:
        """a / b with b != 0 enforced (a * inverse(b)); 1-2 constraints."""
        return self.mul(a, self.inverse(b))

    def assert_nonzero(self, a: "LC | int") -> None:
        self.inverse(a)

    def is_zero(self, a: "LC | int") -> LC:
        """1 if a == 0 else 0 (boolean). Two constraints:
        a * m = 1 - out and a * out = 0, with m = 1/a (or 0) a hint."""
        a = self._lc(a)
        if a.is_constant():
            return self.one if not a.terms else self.zero
        with self.scope("is_zero"):
            v = a.value
            m = self._alloc(None if v is None else (pow(v, R - 2, R) if v else 0), "inv")
            out = self._alloc(None if v is None else int(v == 0), "out")
            self._emit(a, m, 1 - out)
            self._emit(a, out, self.zero)
        out.boolean = True
        return out

    def is_equal(self, a: "LC | int", b: "LC | int") -> LC:
        return self.is_zero(self.sub(a, b))

    def select(self, cond: "LC | int", a: "LC | int", b: "LC | int") -> LC:
        """a if cond else b. cond is asserted boolean unless already known to be.
        One constraint cond * (a - b) = out - b; free if a - b is constant."""
        cond = self._lc(cond)
        a = self._lc(a)
        b = self._lc(b)
        if cond.is_constant():
            c = cond.terms.get(0, 0)
            if c not in (0, 1):
                raise UnsatisfiedConstraint(f"select in {self._scope or '<top>'}: constant condition is not 0 or 1")
            return a if c else b
        with self.scope("select"):
            self._ensure_bool(cond)
            d = self._add_lc(a, b, R - 1)
            if d.is_constant():
                out = self._add_lc(b, self._scale(cond, d.terms.get(0, 0)), 1)
            else:
                vc, vd, vb = cond.value, d.value, b.value
                known = vc is not None and vd is not None and vb is not None
                out = self._alloc((vb + vc * vd) % R if known else None, "out")
                self._emit(cond, d, self._add_lc(out, b, R - 1))
        out.boolean = a.boolean and b.boolean
        return out

    # boolean algebra on values known to be 0/1
    def not_(self, a: "LC | int") -> LC:
        a = self._lc(a)
        self._ensure_bool(a)
        out = self._add_const(self._scale(a, R - 1), 1)
        out.boolean = True
        return out

    def and_(self, a: "LC | int", b: "LC | int") -> LC:
        a, b = self._lc(a), self._lc(b)
        self._ensure_bool(a)
        self._ensure_bool(b)
        out = self.mul(a, b)
        out.boolean = True
        return out

    def or_(self, a: "LC | int", b: "LC | int") -> LC:
        a, b = self._lc(a), self._lc(b)
        self._ensure_bool(a)
        self._ensure_bool(b)
        out = a + b - self.mul(a, b)
        out.boolean = True
        return out

    def xor(self, a: "LC | int", b: "LC | int") -> LC:
        a, b = self._lc(a), self._lc(b)
        self._ensure_bool(a)
        self._ensure_bool(b)
        out = a + b - 2 * self.mul(a, b)
        out.boolean = True
        return out

    # ------------------------------------------------------------ gadgets
    # Thin methods over the gadget modules, so circuits read like gnark's API.
    def to_bits(self, x: "LC | int", n_bits: int) -> list[LC]:
        return _bits.to_bits(self, x, n_bits)

    def from_bits(self, bits: Sequence["LC | int"]) -> LC:
        return _bits.from_bits(self, bits)

    def assert_range(self, x: "LC | int", n_bits: int) -> None:
        _bits.assert_range(self, x, n_bits)

    def assert_signed_range(self, x: "LC | int", n_bits: int) -> None:
        _bits.assert_signed_range(self, x, n_bits)

    def pack(self, xs: Sequence["LC | int"], n_bits: int, signed: bool = True,
             already_range_checked: bool = False) -> list[LC]:
        return _bits.pack(self, xs, n_bits, signed, already_range_checked)

    def mux(self, index_bits: Sequence["LC | int"], values: Sequence["LC | int"]) -> LC:
        return _select.mux(self, index_bits, values)

    def assert_member(self, x: "LC | int", members: Sequence["LC | int"]) -> None:
        _select.assert_member(self, x, members)

    def is_member(self, x: "LC | int", members: Sequence["LC | int"]) -> LC:
        return _select.is_member(self, x, members)

    def is_negative(self, x: "LC | int", n_bits: int) -> LC:
        return _compare.is_negative(self, x, n_bits)

    def is_less(self, a: "LC | int", b: "LC | int", n_bits: int, check_inputs: bool = False) -> LC:
        return _compare.is_less(self, a, b, n_bits, check_inputs)

    def is_less_or_equal(self, a: "LC | int", b: "LC | int", n_bits: int, check_inputs: bool = False) -> LC:
        return _compare.is_less_or_equal(self, a, b, n_bits, check_inputs)

    def assert_less(self, a: "LC | int", b: "LC | int", n_bits: int, check_inputs: bool = False) -> None:
        _compare.assert_less(self, a, b, n_bits, check_inputs)

    def assert_less_or_equal(self, a: "LC | int", b: "LC | int", n_bits: int, check_inputs: bool = False) -> None:
        _compare.assert_less_or_equal(self, a, b, n_bits, check_inputs)

    def abs(self, x: "LC | int", n_bits: int) -> LC:
        return _compare.abs_value(self, x, n_bits)

    def min(self, a: "LC | int", b: "LC | int", n_bits: int, check_inputs: bool = False) -> LC:
        return _compare.minimum(self, a, b, n_bits, check_inputs)

    def max(self, a: "LC | int", b: "LC | int", n_bits: int, check_inputs: bool = False) -> LC:
        return _compare.maximum(self, a, b, n_bits, check_inputs)

    def poseidon(self, *xs: "LC | int") -> LC:
        return _poseidon.poseidon(self, list(xs))

    def poseidon_chain(self, xs: Sequence["LC | int"]) -> LC:
        return _poseidon.poseidon_chain(self, list(xs))
