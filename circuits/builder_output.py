"""The output side of `circuits.builder.ConstraintSystem`: the compiled R1CS and its witness.

Wire renumbering (public inputs first), compilation to `relation.R1CS`, the
witness in R1CS wire order, and the checks and lookups tests and debugging use
(re-evaluating every constraint, unconstrained wires, wire and constraint
names). `R1CSOutput` is a mixin over the builder's wire and constraint tables
(circuits/builder.py).
"""
from __future__ import annotations

import gc
from typing import Callable

from .errors import CircuitError, UnsatisfiedConstraint
from .field import R
from .relation import R1CS, Constraint

__all__ = ["R1CSOutput"]


class R1CSOutput:
    """Compilation, witness and inspection of a ConstraintSystem (mixin)."""

    # ------------------------------------------------------------ output
    def _permutation(self) -> list[int] | None:
        """internal wire -> R1CS wire, or None if already public-first."""
        n_pub = len(self._public)
        if self._public == list(range(1, n_pub + 1)):
            return None
        perm = [0] * len(self._values)
        for i, w in enumerate(self._public):
            perm[w] = i + 1
        nxt = n_pub + 1
        is_pub = self._is_public
        for w in range(1, len(self._values)):
            if w not in is_pub:
                perm[w] = nxt
                nxt += 1
        return perm

    def compile(self, wire_names: bool = True) -> R1CS:
        """The R1CS (public wires first). Cached until more constraints are added."""
        self._require_constraints()
        if self._compiled is not None and (bool(self._compiled.wire_names) == wire_names):
            return self._compiled
        perm = self._permutation()
        if perm is None:
            def conv(d):
                return tuple(d.items())
        else:
            def conv(d):
                return tuple((perm[w], k) for w, k in d.items())
        # The same term dict often appears several times (a*a = a, x^5 reusing x);
        # the dicts stay alive in self._a/_b/_c, so their ids are stable keys.
        cache: dict[int, tuple] = {}
        get = cache.get

        def conv_cached(d):
            r = get(id(d))
            if r is None:
                r = cache[id(d)] = conv(d)  # noqa: F821 (bound above; deleted only after the last call)
            return r

        # Millions of small tuples: the cyclic GC would rescan them repeatedly
        # (3-4x slower) although none of them can form a cycle.
        gc_was_enabled = gc.isenabled()
        gc.disable()
        try:
            constraints = [
                Constraint(conv_cached(a), conv_cached(b), conv_cached(c))
                for a, b, c in zip(self._a, self._b, self._c)
            ]
        finally:
            if gc_was_enabled:
                gc.enable()
        del cache
        names: tuple[str, ...] = ()
        if wire_names:
            order = list(range(len(self._values)))
            if perm is not None:
                order = [0] * len(perm)
                for w, p in enumerate(perm):
                    order[p] = w
            names = tuple(self.wire_name(w) for w in order)
        self._compiled = R1CS(
            n_wires=len(self._values),
            n_public=len(self._public),
            constraints=tuple(constraints),
            wire_names=names,
        )
        return self._compiled

    def witness(self) -> list[int]:
        """Full assignment in R1CS wire order (requires values)."""
        if not self.with_values:
            raise CircuitError("this constraint system was built without values")
        if self._unbound:
            names = ", ".join(sorted(self._unbound.values()))
            raise CircuitError(f"public inputs never bound: {names}")
        perm = self._permutation()
        if perm is None:
            return list(self._values)  # type: ignore[arg-type]
        out = [0] * len(self._values)
        for w, v in enumerate(self._values):
            out[perm[w]] = v
        return out

    def public_values(self) -> list[int]:
        """Values of the public inputs, in declaration order."""
        return [self._values[w] for w in self._public]  # type: ignore[misc]

    def r1cs_wire(self, name: str) -> int:
        """R1CS index of the wire with this name (as in `wire_name`)."""
        perm = self._permutation()
        for w in range(len(self._values)):
            if self.wire_name(w) == name:
                return w if perm is None else perm[w]
        raise KeyError(name)

    def r1cs_wires_matching(self, predicate: Callable[[str], bool]) -> list[int]:
        """R1CS indices of the wires whose names satisfy predicate (for tests/debugging)."""
        perm = self._permutation()
        return [w if perm is None else perm[w] for w in range(len(self._values)) if predicate(self.wire_name(w))]

    def check_witness(self) -> None:
        """Re-evaluate every constraint on the wire values (all of them, also
        after a non-strict build); raise UnsatisfiedConstraint naming the first
        failing constraint's gadget scope."""
        if not self.with_values:
            raise CircuitError("this constraint system was built without values")
        self._require_constraints()
        if self._unbound:
            raise CircuitError(f"public inputs never bound: {', '.join(sorted(self._unbound.values()))}")
        vals = self._values
        for i, (a, b, c) in enumerate(zip(self._a, self._b, self._c)):
            va = sum(vals[w] * k for w, k in a.items())
            vb = sum(vals[w] * k for w, k in b.items())
            vc = sum(vals[w] * k for w, k in c.items())
            if (va * vb - vc) % R:
                raise UnsatisfiedConstraint(f"constraint #{i} in {self._labels[i] or '<top>'} is not satisfied")

    def unconstrained_wires(self) -> list[str]:
        """Names of wires that appear in no constraint (a forgotten hint output
        or an unused input): each is a value the proof says nothing about."""
        self._require_constraints()
        used = bytearray(len(self._values))
        used[0] = 1
        for side in (self._a, self._b, self._c):
            for d in side:
                for w in d:
                    used[w] = 1
        return [self.wire_name(w) for w in range(len(used)) if not used[w]]

    def constraint_label(self, index: int) -> str:
        """Gadget scope that emitted constraint `index`."""
        self._require_constraints()
        return self._labels[index]

