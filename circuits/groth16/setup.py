"""Groth16 key generation (Groth 2016, section 3.2) for an R1CS over BN254.

Toxic values tau, alpha, beta, gamma, delta are sampled with `secrets` (or
derived from a seed, for tests only), used, and dropped: neither key holds
them, and the returned keys reveal them only through discrete logarithms.

Trust: whoever ran this function can forge proofs unless the key then goes
through phase-2 contributions (phase2.py) *and* tau, alpha, beta came from a
multi-party powers-of-tau; see phase2.py for the caveat. For that case
phase1.derive_keys_from_phase1 builds the same key (with gamma = delta = 1)
from phase-1 points instead of secrets.
"""
from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass, field
from typing import Any, Callable

from ..errors import CircuitError
from ..field import R
from ..relation import R1CS
from .keys import H_BASES, MONOMIAL_Z, ODD_COSET_LAGRANGE, HBasis, ProvingKey
from .qap import domain_size, lagrange_at, r1cs_digest, vanishing_at, wire_polynomials_at
from .tasks import run_concurrently
from .types import VerifyingKey

# progress(stage, done, total): called as each stage finishes.
Progress = Callable[[str, int, int], None]


@dataclass(frozen=True)
class ToxicWaste:
    """The setup's secrets. Anyone who knows them can forge proofs."""

    tau: int
    alpha: int
    beta: int
    gamma: int
    delta: int = field(repr=False)

    def __repr__(self) -> str:  # never print secrets into logs
        return "ToxicWaste(<hidden>)"

    def validate(self) -> None:
        for name in ("tau", "alpha", "beta", "gamma", "delta"):
            value = getattr(self, name)
            if not isinstance(value, int) or not 0 < value < R:
                raise CircuitError(f"toxic value {name} must be an int in [1, R)")


def sample_toxic_waste(seed: int | bytes | str | None = None) -> ToxicWaste:
    """Fresh secrets from `secrets`; with a seed, deterministic (tests only:
    a seeded key is forgeable by anyone who knows the seed)."""
    draw: Callable[[str], int]
    if seed is None:
        draw = lambda label: secrets.randbelow(R - 1) + 1  # noqa: E731
    else:
        seed_bytes = seed if isinstance(seed, bytes) else str(seed).encode()

        def draw(label: str) -> int:
            counter = 0
            while True:
                digest = hashlib.sha512(b"fairproof-toxic|" + seed_bytes + b"|" + label.encode() + counter.to_bytes(4, "big")).digest()
                value = int.from_bytes(digest, "big") % R
                if value:
                    return value
                counter += 1

    return ToxicWaste(tau=draw("tau"), alpha=draw("alpha"), beta=draw("beta"), gamma=draw("gamma"), delta=draw("delta"))


def setup(
    r1cs: R1CS,
    backend: Any,
    *,
    seed: int | bytes | str | None = None,
    toxic: ToxicWaste | None = None,
    progress: Progress | None = None,
    workers: int = 1,
    h_basis: HBasis = MONOMIAL_Z,
) -> tuple[ProvingKey, VerifyingKey]:
    """Generate (proving key, verifying key) for `r1cs` on `backend`.

    Secrets: `toxic` if given (tests), else derived from `seed` if given
    (tests), else fresh from `secrets`. A tau inside the evaluation domain
    (probability n/R; 2n/R for ODD_COSET_LAGRANGE, whose basis lives on the
    2n-th roots) is re-drawn when sampled and refused when given.
    `workers` > 1 computes the queries on that many threads (see prove()).
    `h_basis` chooses the H query's basis (keys.py): ODD_COSET_LAGRANGE makes
    the key snarkjs's .zkey would hold for the same secrets.
    """
    if toxic is None:
        toxic = sample_toxic_waste(seed)
        n = domain_size(r1cs)
        attempt = 0
        while not _tau_usable(toxic.tau, n, h_basis):  # negligible, but such a key is broken
            attempt += 1
            toxic = sample_toxic_waste(None if seed is None else f"{seed!s}/{attempt}")
    toxic.validate()
    return derive_keys(r1cs, backend, toxic, progress, workers, h_basis=h_basis)


def _tau_usable(tau: int, n: int, h_basis: HBasis) -> bool:
    """tau outside the domain the key's polynomials are interpolated on."""
    return vanishing_at(tau, 2 * n if h_basis == ODD_COSET_LAGRANGE else n) != 0


def h_query_scalars(tau: int, delta_inv: int, n: int, h_basis: HBasis) -> list[int]:
    """The discrete logarithms of the H query (see ProvingKey) for domain size n."""
    if h_basis == ODD_COSET_LAGRANGE:
        if not _tau_usable(tau, n, h_basis):
            raise CircuitError("tau lies on the 2n-th roots of unity; choose another")
        return [x * delta_inv % R for x in lagrange_at(tau, 2 * n)[1::2]]
    scalars = []
    t = vanishing_at(tau, n) * delta_inv % R
    for _ in range(n - 1):
        scalars.append(t)
        t = t * tau % R
    return scalars


def derive_keys(
    r1cs: R1CS,
    backend: Any,
    toxic: ToxicWaste,
    progress: Progress | None = None,
    workers: int = 1,
    *,
    h_basis: HBasis = MONOMIAL_Z,
) -> tuple[ProvingKey, VerifyingKey]:
    """The circuit-specific key from the secrets (see ProvingKey for each query)."""
    if h_basis not in H_BASES:
        raise CircuitError(f"unknown H basis {h_basis!r}; choose one of {', '.join(H_BASES)}")
    report = progress or (lambda stage, done, total: None)
    n = domain_size(r1cs)
    n_public = r1cs.n_public
    if r1cs.n_wires < n_public + 1:
        raise CircuitError(f"R1CS has {r1cs.n_wires} wires but {n_public} public inputs")
    tau, alpha, beta, gamma, delta = toxic.tau, toxic.alpha, toxic.beta, toxic.gamma, toxic.delta
    stages = 4
    polys = wire_polynomials_at(r1cs, tau, n)
    if polys.z == 0:
        raise CircuitError("tau lies in the evaluation domain; choose another")
    report("qap", 1, stages)

    gamma_inv = pow(gamma, R - 2, R)
    delta_inv = pow(delta, R - 2, R)
    combined = [(beta * u + alpha * v + w) % R for u, v, w in zip(polys.u, polys.v, polys.w)]
    ic_scalars = [x * gamma_inv % R for x in combined[: n_public + 1]]
    l_scalars = [x * delta_inv % R for x in combined[n_public + 1 :]]
    h_scalars = h_query_scalars(tau, delta_inv, n, h_basis)
    del combined
    report("scalars", 2, stages)

    g1 = backend.g1_generator()
    g2 = backend.g2_generator()
    # Largest first: workers pick tasks greedily.
    a_query, b_g2_query, h_query, l_query, b_g1_query, ic = run_concurrently(
        [
            lambda: backend.g1_fixed_base(g1, polys.u),
            lambda: backend.g2_fixed_base(g2, polys.v),
            lambda: backend.g1_fixed_base(g1, h_scalars),
            lambda: backend.g1_fixed_base(g1, l_scalars),
            lambda: backend.g1_fixed_base(g1, polys.v),
            lambda: backend.g1_vector_to_canonical(backend.g1_fixed_base(g1, ic_scalars)),
        ],
        workers=workers,
    )
    report("queries", 3, stages)

    vk = VerifyingKey(
        alpha_g1=backend.g1_mul(g1, alpha),
        beta_g2=backend.g2_mul(g2, beta),
        gamma_g2=backend.g2_mul(g2, gamma),
        delta_g2=backend.g2_mul(g2, delta),
        ic=tuple(ic),
    )
    pk = ProvingKey(
        backend_name=backend.name,
        n_wires=r1cs.n_wires,
        n_public=n_public,
        domain_size=n,
        r1cs_digest=r1cs_digest(r1cs),
        vk=vk,
        beta_g1=backend.g1_mul(g1, beta),
        delta_g1=backend.g1_mul(g1, delta),
        a_query=a_query,
        b_g1_query=b_g1_query,
        b_g2_query=b_g2_query,
        l_query=l_query,
        h_query=h_query,
        h_basis=h_basis,
    )
    report("done", 4, stages)
    return pk, vk
