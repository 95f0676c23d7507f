"""Circuit-specific keys from phase-1 points, without knowing tau, alpha or beta.

A multi-party powers-of-tau ceremony (snarkjs's .ptau after `prepare phase2`
holds exactly these, for a domain of size n) publishes:

    lagrange_g1[j]       = [L_j(tau)]_1          j < n
                           [alpha L_j(tau)]_1    j = n + i, i < n
                           [beta L_j(tau)]_1     j = 2n + i, i < n
    lagrange_g2[j]       = [L_j(tau)]_2          j < n
    tau_g1[i]            = [tau^i]_1             i < 2n - 1
    alpha_g1, beta_g1, beta_g2

with L_j the Lagrange basis of H = <omega_n> (qap.py). Every key element is a
linear combination of these with coefficients from the R1CS, so the key
follows with no secret at all; gamma and delta are 1 (the generators), as in
snarkjs's initial zkey, and phase2.contribute then randomises delta.
`ptau.phase1_points` reads them from a prepared .ptau; `phase1_from_secrets`
builds them from known secrets (tests, and local development).

The bulk points are backend vectors (the three G1 Lagrange families in one,
so that a single sparse combination mixes them), and each key query is one
backend sparse combination (CurveBackend.g1_sparse_combination): a sparse
matrix of R1CS coefficients times a vector of points. Python only lists the
terms (one entry per non-zero coefficient); the point arithmetic runs in the
backend.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from ..errors import CircuitError
from ..field import R
from ..relation import R1CS
from .keys import ProvingKey
from .qap import domain_size, lagrange_at, r1cs_digest
from .types import G1Affine, G2Affine, VerifyingKey

Progress = Callable[[str, int, int], None]
G1Vector = Any  # a backend's opaque vectors (backends.base, which imports this package)
G2Vector = Any


@dataclass(frozen=True)
class Phase1Points:
    """Phase-1 output for one domain size (see the module docstring); bulk
    points are vectors of the backend that made them."""

    domain_size: int
    lagrange_g1: G1Vector  # 3n points: [L_j]_1, [alpha L_j]_1, [beta L_j]_1
    lagrange_g2: G2Vector
    tau_g1: G1Vector
    alpha_g1: G1Affine
    beta_g1: G1Affine
    beta_g2: G2Affine

    def check_sizes(self, backend: Any) -> None:
        n = self.domain_size
        for name, expected in (("lagrange_g1", 3 * n), ("lagrange_g2", n)):
            got = backend.vector_len(getattr(self, name))
            if got != expected:
                raise CircuitError(f"phase-1 points: {name} has {got} points, expected {expected}")
        if backend.vector_len(self.tau_g1) < 2 * n - 1:
            raise CircuitError(f"phase-1 points: tau_g1 has {backend.vector_len(self.tau_g1)} points, expected {2 * n - 1}")


def phase1_from_secrets(n: int, tau: int, alpha: int, beta: int, backend: Any) -> Phase1Points:
    """Phase-1 points from known secrets (tests and local development only)."""
    lag = lagrange_at(tau, n)
    g1, g2 = backend.g1_generator(), backend.g2_generator()
    powers = [1] * (2 * n - 1)
    for i in range(1, len(powers)):
        powers[i] = powers[i - 1] * tau % R
    return Phase1Points(
        domain_size=n,
        lagrange_g1=backend.g1_fixed_base(g1, lag + [alpha * x % R for x in lag] + [beta * x % R for x in lag]),
        lagrange_g2=backend.g2_fixed_base(g2, lag),
        tau_g1=backend.g1_fixed_base(g1, powers),
        alpha_g1=backend.g1_mul(g1, alpha),
        beta_g1=backend.g1_mul(g1, beta),
        beta_g2=backend.g2_mul(g2, beta),
    )


class _Terms:
    """A sparse matrix being collected entry by entry (see backends.base.SparseTerms)."""

    def __init__(self) -> None:
        self.target: list[int] = []
        self.source: list[int] = []
        self.coefficient: list[int] = []

    def add(self, target: int, source: int, coefficient: int) -> None:
        self.target.append(target)
        self.source.append(source)
        self.coefficient.append(coefficient)

    def build(self, lo: int = 0, hi: int | None = None) -> Any:
        """The entries with lo <= target < hi, targets shifted down by lo, as backends.base.SparseTerms."""
        from ..backends.base import SparseTerms

        target = np.array(self.target, dtype=np.int64)
        keep = target >= lo if hi is None else (target >= lo) & (target < hi)
        picked = np.flatnonzero(keep)
        return SparseTerms(target[picked] - lo, np.array(self.source, dtype=np.int64)[picked],
                           [self.coefficient[i] for i in picked])


def derive_keys_from_phase1(
    r1cs: R1CS, backend: Any, phase1: Phase1Points, progress: Progress | None = None
) -> tuple[ProvingKey, VerifyingKey]:
    """The key `setup` would give with the phase-1 secrets and gamma = delta = 1."""
    report = progress or (lambda stage, done, total: None)
    n = domain_size(r1cs)
    if phase1.domain_size != n:
        raise CircuitError(f"phase-1 points are for domain {phase1.domain_size}, the relation needs {n}")
    phase1.check_sizes(backend)
    wires, l, m = r1cs.n_wires, r1cs.n_public, r1cs.n_constraints
    alpha_lag, beta_lag = n, 2 * n  # offsets of [alpha L_j]_1 and [beta L_j]_1 in lagrange_g1
    u, v, k = _Terms(), _Terms(), _Terms()  # A, B and (beta u + alpha v + w)(tau)
    for j, constraint in enumerate(r1cs.constraints):
        for wire, coefficient in constraint.a:
            u.add(wire, j, coefficient)
            k.add(wire, beta_lag + j, coefficient)
        for wire, coefficient in constraint.b:
            v.add(wire, j, coefficient)
            k.add(wire, alpha_lag + j, coefficient)
        for wire, coefficient in constraint.c:
            k.add(wire, j, coefficient)
    for i in range(l + 1):  # binding rows: A = wire i on row m + i
        u.add(i, m + i, 1)
        k.add(i, beta_lag + m + i, 1)
    report("combine", 0, 5)
    lag1, lag2 = phase1.lagrange_g1, phase1.lagrange_g2
    a_query = backend.g1_sparse_combination(lag1, u.build(), wires)
    report("combine", 1, 5)
    b_g1_query = backend.g1_sparse_combination(lag1, v.build(), wires)
    report("combine", 2, 5)
    b_g2_query = backend.g2_sparse_combination(lag2, v.build(), wires)
    report("combine", 3, 5)
    ic = backend.g1_sparse_combination(lag1, k.build(0, l + 1), l + 1)
    l_query = backend.g1_sparse_combination(lag1, k.build(l + 1), wires - l - 1)
    report("combine", 4, 5)
    # H: tau^(n+i) - tau^i, i < n - 1 (monomial basis times Z = X^n - 1)
    h = _Terms()
    for i in range(n - 1):
        h.add(i, n + i, 1)
        h.add(i, i, R - 1)
    h_query = backend.g1_sparse_combination(phase1.tau_g1, h.build(), n - 1)
    g1, g2 = backend.g1_generator(), backend.g2_generator()
    vk = VerifyingKey(
        alpha_g1=phase1.alpha_g1,
        beta_g2=phase1.beta_g2,
        gamma_g2=g2,
        delta_g2=g2,
        ic=tuple(backend.g1_vector_to_canonical(ic)),
    )
    pk = ProvingKey(
        backend_name=backend.name,
        n_wires=wires,
        n_public=l,
        domain_size=n,
        r1cs_digest=r1cs_digest(r1cs),
        vk=vk,
        beta_g1=phase1.beta_g1,
        delta_g1=g1,
        a_query=a_query,
        b_g1_query=b_g1_query,
        b_g2_query=b_g2_query,
        l_query=l_query,
        h_query=h_query,
    )
    report("done", 5, 5)
    return pk, vk
