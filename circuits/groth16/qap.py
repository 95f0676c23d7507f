"""From an R1CS to a quadratic arithmetic program (QAP) on a power-of-two domain.

Rows of the QAP, on the multiplicative subgroup H = <omega_n> of size n:
- row j < m (m = number of constraints): constraint j, as given;
- row m + i for i = 0..n_public: the public-input binding row A = wire i,
  B = 0, C = 0 (snarkjs adds the same rows). Without them a public wire that
  occurs in no A or B could have u_i = v_i = 0, and the prover could shift its
  contribution through the private L terms; with them u_0..u_l are linearly
  independent of each other and of every other wire's polynomial, which the
  Groth16 soundness proof needs.
- rows m + n_public + 1 .. n - 1: empty.

So n = next power of two >= m + n_public + 1. For wire i, u_i(X) (v_i, w_i
likewise) is the polynomial with u_i(omega^j) = coefficient of wire i in A of
row j. The prover only needs the row evaluations A_j(w) = sum_i w_i u_i(omega^j);
the setup needs u_i(tau), computed from the Lagrange basis at tau in O(n) with
one batch inversion, then one pass over the sparse matrices.
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from ..errors import CircuitError, UnsatisfiedConstraint
from ..field import R, R_GENERATOR, R_TWO_ADICITY
from ..relation import R1CS
from ..relation_arrays import ArrayR1CS


def domain_size(r1cs: R1CS | ArrayR1CS) -> int:
    """n = next power of two >= n_constraints + n_public + 1."""
    rows = r1cs.n_constraints + r1cs.n_public + 1
    n = 1
    while n < rows:
        n *= 2
    if n.bit_length() - 1 > R_TWO_ADICITY:
        raise CircuitError(f"{rows} QAP rows exceed the largest power-of-two domain 2^{R_TWO_ADICITY}")
    return n


def root_of_unity(n: int) -> int:
    """omega_n = 5^((R-1)/n), the generator of H the backends use."""
    if n < 1 or n & (n - 1) or n.bit_length() - 1 > R_TWO_ADICITY:
        raise CircuitError(f"domain size {n} is not a power of two <= 2^{R_TWO_ADICITY}")
    return pow(R_GENERATOR, (R - 1) // n, R)


def batch_inverse(values: Sequence[int]) -> list[int]:
    """Inverses mod R of non-zero values with one exponentiation (Montgomery's trick)."""
    prefix = [1] * (len(values) + 1)
    for i, v in enumerate(values):
        if v % R == 0:
            raise ZeroDivisionError(f"batch_inverse: value {i} is 0 mod R")
        prefix[i + 1] = prefix[i] * v % R
    inv = pow(prefix[-1], R - 2, R)
    out = [0] * len(values)
    for i in range(len(values) - 1, -1, -1):
        out[i] = prefix[i] * inv % R
        inv = inv * values[i] % R
    return out


def vanishing_at(tau: int, n: int) -> int:
    """Z_H(tau) = tau^n - 1."""
    return (pow(tau, n, R) - 1) % R


def lagrange_at(tau: int, n: int) -> list[int]:
    """[L_j(tau) for j < n] on H = <omega_n>: L_j(tau) = Z(tau) omega^j / (n (tau - omega^j)).

    Requires tau outside H (Z(tau) != 0)."""
    z = vanishing_at(tau, n)
    if z == 0:
        raise CircuitError("tau lies in the evaluation domain; choose another")
    omega = root_of_unity(n)
    powers = [1] * n
    for j in range(1, n):
        powers[j] = powers[j - 1] * omega % R
    inverses = batch_inverse([(tau - w) % R for w in powers])
    factor = z * pow(n, R - 2, R) % R
    return [factor * w % R * d % R for w, d in zip(powers, inverses)]


@dataclass(frozen=True)
class WirePolynomialsAtTau:
    """u_i(tau), v_i(tau), w_i(tau) for every wire i, and Z(tau)."""

    u: list[int]
    v: list[int]
    w: list[int]
    z: int


def wire_polynomials_at(r1cs: R1CS, tau: int, n: int | None = None) -> WirePolynomialsAtTau:
    """Evaluate every wire's QAP polynomials at tau (binding rows included)."""
    n = domain_size(r1cs) if n is None else n
    if n < r1cs.n_constraints + r1cs.n_public + 1:
        raise CircuitError(f"domain {n} is smaller than the {r1cs.n_constraints + r1cs.n_public + 1} QAP rows")
    lag = lagrange_at(tau, n)
    u = [0] * r1cs.n_wires
    v = [0] * r1cs.n_wires
    w = [0] * r1cs.n_wires
    for j, constraint in enumerate(r1cs.constraints):
        lj = lag[j]
        for wire, k in constraint.a:
            u[wire] += k * lj
        for wire, k in constraint.b:
            v[wire] += k * lj
        for wire, k in constraint.c:
            w[wire] += k * lj
    m = r1cs.n_constraints
    for i in range(r1cs.n_public + 1):
        u[i] += lag[m + i]
    return WirePolynomialsAtTau(
        u=[x % R for x in u], v=[x % R for x in v], w=[x % R for x in w], z=vanishing_at(tau, n)
    )


def check_witness_shape(r1cs: R1CS | ArrayR1CS, witness: Sequence[int]) -> None:
    if len(witness) != r1cs.n_wires:
        raise UnsatisfiedConstraint(f"witness has {len(witness)} values, the system has {r1cs.n_wires} wires")
    if witness[0] % R != 1:
        raise UnsatisfiedConstraint("wire 0 must carry the constant 1")


def row_evaluations(r1cs: R1CS, witness: Sequence[int], n: int) -> tuple[list[int], list[int], list[int]]:
    """(A_j(w), B_j(w), C_j(w)) for j < n, each in [0, R), padded with zeros.

    Checks A_j * B_j = C_j on every constraint row as it goes and raises
    UnsatisfiedConstraint naming the first violated constraint; a satisfied
    system makes A*B - C vanish on all of H (the binding rows have B = C = 0).
    """
    check_witness_shape(r1cs, witness)
    m = r1cs.n_constraints
    a = [0] * n
    b = [0] * n
    c = [0] * n
    w = [x % R for x in witness]

    # Most sides are a single term, often with coefficient 1: skip the generic sum.
    def side(terms: tuple[tuple[int, int], ...]) -> int:
        if len(terms) == 1:
            i, k = terms[0]
            return w[i] if k == 1 else w[i] * k % R
        return sum([w[i] * k for i, k in terms]) % R

    for j, constraint in enumerate(r1cs.constraints):
        aj = side(constraint.a)
        bj = side(constraint.b)
        cj = side(constraint.c)
        if aj * bj % R != cj:
            raise UnsatisfiedConstraint.at(j)
        a[j] = aj
        b[j] = bj
        c[j] = cj
    for i in range(r1cs.n_public + 1):
        a[m + i] = w[i]
    return a, b, c


def _digest_prefix(r1cs: R1CS | ArrayR1CS) -> "hashlib._Hash":
    h = hashlib.sha256()
    h.update(b"fairproof-r1cs-v1")
    for value in (r1cs.n_wires, r1cs.n_public, r1cs.n_public_outputs, r1cs.n_constraints):
        h.update(value.to_bytes(8, "big"))
    return h


def r1cs_digest(r1cs: R1CS | ArrayR1CS) -> str:
    """Hex SHA-256 over the relation's shape and every (wire, coefficient) term:
    per constraint, for A, B, C in turn, the term count (4 bytes) and each
    term's wire (4 bytes) and coefficient (32 bytes), big-endian.

    Binds a proving key to the exact constraint system it was made for. The
    same relation in either form has the same digest."""
    if isinstance(r1cs, ArrayR1CS):
        return _array_r1cs_digest(r1cs)
    h = _digest_prefix(r1cs)
    for constraint in r1cs.constraints:
        for side in (constraint.a, constraint.b, constraint.c):
            h.update(len(side).to_bytes(4, "big"))
            h.update(b"".join(wire.to_bytes(4, "big") + (k % R).to_bytes(32, "big") for wire, k in side))
    return h.hexdigest()


def _array_r1cs_digest(relation: ArrayR1CS) -> str:
    """`r1cs_digest` of the array form, with the hashed bytes laid out in bulk:
    36-byte term records (wire, coefficient), put in constraint-then-side
    order, around the 4-byte counts that open each side."""
    m = relation.n_constraints
    sides = (relation.a, relation.b, relation.c)
    counts = np.stack([np.diff(side.start) for side in sides], axis=1).reshape(-1)  # section 3j + s
    records = np.concatenate([
        np.concatenate([side.wire.astype(">u4").view(np.uint8).reshape(-1, 4), side.coefficient[:, ::-1]], axis=1)
        for side in sides]) if m else np.zeros((0, 36), dtype=np.uint8)
    section = np.concatenate([3 * np.repeat(np.arange(m), np.diff(side.start)) + s for s, side in enumerate(sides)])
    records = records[np.argsort(section, kind="stable")]
    stream = np.empty(4 * len(counts) + 36 * len(records), dtype=np.uint8)
    is_count = np.zeros(len(stream), dtype=bool)
    count_at = np.zeros(len(counts), dtype=np.int64)
    np.cumsum(4 + 36 * counts[:-1], out=count_at[1:])
    for k in range(4):
        is_count[count_at + k] = True
    stream[is_count] = counts.astype(">u4").view(np.uint8)
    stream[~is_count] = records.reshape(-1)
    h = _digest_prefix(relation)
    h.update(stream.tobytes())
    return h.hexdigest()
