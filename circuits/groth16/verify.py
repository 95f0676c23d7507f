"""The Groth16 verifier: one pairing-product check.

    e(A, B) = e(alpha, beta) * e(IC(x), gamma) * e(C, delta),
    IC(x) = ic[0] + sum_i x_i ic[i + 1],

checked as e(A, B) e(-alpha, beta) e(-IC(x), gamma) e(-C, delta) = 1 with
one final exponentiation (`check_proof`). A verifier that checks many proofs
under one key prepares it once (`prepare_verifying_key`, as ark-groth16's
PreparedVerifyingKey): the key checks run then, e(alpha, beta) is kept in GT
and -gamma, -delta in the backend's checked form, so each proof costs three
Miller loops and one final exponentiation compared with e(alpha, beta)
(`check_prepared_proof`), with the same refusals as `check_proof`.

Error policy:
- Anything the prover or the network controls is answered with False (and a
  reason from `check_proof`), never an exception: a proof point off the curve,
  outside the order-R subgroup or at infinity; a public input that is not an
  int, is outside [0, R) (no silent reduction: x and x + R would otherwise
  both verify), or a wrong number of public inputs.
- An invalid verifying key (the verifier's own pinned artifact) raises
  MalformedArtifact.

Works on the reference backend alone (the verifier client's fallback).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

from ..errors import CircuitError, MalformedArtifact
from ..field import Q, R
from .types import G1Affine, Proof, VerifyingKey


@dataclass(frozen=True)
class VerificationResult:
    ok: bool
    reason: str

    def __bool__(self) -> bool:
        return self.ok


def _g1_neg(p: G1Affine) -> G1Affine:
    return None if p is None else (p[0], (Q - p[1]) % Q)


def _g2_neg(p: Any) -> Any:
    return None if p is None else (p[0], ((Q - p[1][0]) % Q, (Q - p[1][1]) % Q))


def check_verifying_key(vk: VerifyingKey, backend: Any) -> None:
    """Raise MalformedArtifact unless every vk point is a valid group element and the key is not degenerate.

    Degenerate keys let whoever made them prove anything: with a point at
    infinity among alpha, beta, gamma, delta a term of the pairing equation
    vanishes, with ic[i] at infinity public input i drops out, and with
    delta = +-gamma the prover cancels IC(x) through C. (Any known relation
    delta = k gamma is as bad; only the setup transcript can rule that out.)
    """
    if not isinstance(vk, VerifyingKey):
        raise MalformedArtifact(f"verifying key: expected VerifyingKey, got {type(vk).__name__}")
    if not vk.ic:
        raise MalformedArtifact("verifying key: ic is empty")
    for name in ("alpha_g1", "beta_g2", "gamma_g2", "delta_g2"):
        if getattr(vk, name) is None:
            raise MalformedArtifact(f"verifying key: {name} is the point at infinity (degenerate key)")
    for i, p in enumerate(vk.ic):
        if p is None:
            raise MalformedArtifact(f"verifying key: ic[{i}] is the point at infinity (degenerate key)")
    if vk.delta_g2 in (vk.gamma_g2, _g2_neg(vk.gamma_g2)):
        raise MalformedArtifact("verifying key: delta equals +-gamma (degenerate key: proofs of anything verify)")
    if not backend.g1_is_valid(vk.alpha_g1):
        raise MalformedArtifact("verifying key: alpha_g1 is not a valid G1 point")
    for name in ("beta_g2", "gamma_g2", "delta_g2"):
        if not backend.g2_is_valid(getattr(vk, name)):
            raise MalformedArtifact(f"verifying key: {name} is not in the order-R subgroup of G2")
    for i, p in enumerate(vk.ic):
        if not backend.g1_is_valid(p):
            raise MalformedArtifact(f"verifying key: ic[{i}] is not a valid G1 point")


def _point_shape_ok(p: Any, depth: int) -> bool:
    """Tuples of ints of the canonical shape (depth 1: G1, depth 2: G2)."""
    if not isinstance(p, tuple) or len(p) != 2:
        return False
    if depth == 1:
        return all(isinstance(v, int) and not isinstance(v, bool) for v in p)
    return all(_point_shape_ok(v, 1) for v in p)


def _input_problem(n_public: int, inputs: Sequence[int], proof: Proof) -> str | None:
    """Why the inputs or the proof's shape are refused (before any curve check), or None."""
    if not isinstance(proof, Proof):
        return f"proof must be a Proof, got {type(proof).__name__}"
    if len(inputs) != n_public:
        return f"expected {n_public} public inputs, got {len(inputs)}"
    for i, x in enumerate(inputs):
        if isinstance(x, bool) or not isinstance(x, int):
            return f"public input {i} is not an int"
        if not 0 <= x < R:
            return f"public input {i} is outside [0, R)"
    for name, depth in (("a", 1), ("b", 2), ("c", 1)):
        point = getattr(proof, name)
        if point is None:
            return f"proof.{name.upper()} is the point at infinity"
        if not _point_shape_ok(point, depth):
            return f"proof.{name.upper()} is not a canonical point"
    return None


def _default_backend(backend: Any) -> Any:
    if backend is None:
        from ..backends import get_backend

        backend = get_backend(None)
    return backend


def check_proof(vk: VerifyingKey, public_inputs: Sequence[int], proof: Proof, backend: Any = None) -> VerificationResult:
    """Verify and say why a proof is refused (the key is checked on every call;
    `check_prepared_proof` checks it once)."""
    backend = _default_backend(backend)
    check_verifying_key(vk, backend)
    inputs = list(public_inputs)
    problem = _input_problem(vk.n_public, inputs, proof)
    if problem:
        return VerificationResult(False, problem)
    if not backend.g1_is_valid(proof.a):
        return VerificationResult(False, "proof.A is not on the G1 curve")
    if not backend.g2_is_valid(proof.b):
        return VerificationResult(False, "proof.B is not in the order-R subgroup of G2")
    if not backend.g1_is_valid(proof.c):
        return VerificationResult(False, "proof.C is not on the G1 curve")

    ic_x = backend.g1_msm(backend.g1_vector(list(vk.ic)), backend.scalar_vector([1, *inputs]))
    ok = backend.pairing_product_is_one(
        [
            (proof.a, proof.b),
            (_g1_neg(vk.alpha_g1), vk.beta_g2),
            (_g1_neg(ic_x), vk.gamma_g2),
            (_g1_neg(proof.c), vk.delta_g2),
        ]
    )
    return VerificationResult(True, "ok") if ok else VerificationResult(False, "pairing check failed")


@dataclass(frozen=True, eq=False)
class PreparedVerifyingKey:
    """A verifying key that passed `check_verifying_key`, with what every proof
    under it needs computed once on one backend (all in that backend's forms)."""

    vk: VerifyingKey
    backend: str  # the name of the backend the fields below belong to
    alpha_beta: Any  # e(alpha, beta), a GTElement
    gamma_g2_neg: Any  # -gamma, a PreparedG2
    delta_g2_neg: Any  # -delta, a PreparedG2
    ic: Any  # vk.ic as a G1 vector (the points of the public-input MSM); never modified


def prepare_verifying_key(vk: VerifyingKey, backend: Any = None) -> PreparedVerifyingKey:
    """Check `vk` (MalformedArtifact as `check_verifying_key`) and prepare it on `backend`."""
    backend = _default_backend(backend)
    check_verifying_key(vk, backend)
    gamma_neg, delta_neg = backend.g2_prepare(_g2_neg(vk.gamma_g2)), backend.g2_prepare(_g2_neg(vk.delta_g2))
    if gamma_neg is None or delta_neg is None:  # cannot happen after check_verifying_key
        raise MalformedArtifact("verifying key: gamma or delta is not in the order-R subgroup of G2")
    return PreparedVerifyingKey(
        vk=vk,
        backend=backend.name,
        alpha_beta=backend.pairing_product([(vk.alpha_g1, vk.beta_g2)]),
        gamma_g2_neg=gamma_neg,
        delta_g2_neg=delta_neg,
        ic=backend.g1_vector(list(vk.ic)),
    )


def check_prepared_proof(pvk: PreparedVerifyingKey, public_inputs: Sequence[int], proof: Proof,
                         backend: Any = None) -> VerificationResult:
    """`check_proof` under a prepared key: the same refusals, then
    e(A, B) e(IC(x), -gamma) e(C, -delta) == e(alpha, beta)."""
    if not isinstance(pvk, PreparedVerifyingKey):
        raise CircuitError(f"expected a PreparedVerifyingKey, got {type(pvk).__name__}")
    if backend is None:
        from ..backends import get_backend

        backend = get_backend(pvk.backend)
    if backend.name != pvk.backend:
        raise CircuitError(f"the key was prepared on the {pvk.backend} backend, not on {backend.name}")
    inputs = list(public_inputs)
    problem = _input_problem(pvk.vk.n_public, inputs, proof)
    if problem:
        return VerificationResult(False, problem)
    if not backend.g1_is_valid(proof.a):
        return VerificationResult(False, "proof.A is not on the G1 curve")
    b = backend.g2_prepare(proof.b)  # B's one subgroup check; the pairing takes the checked form
    if b is None:
        return VerificationResult(False, "proof.B is not in the order-R subgroup of G2")
    if not backend.g1_is_valid(proof.c):
        return VerificationResult(False, "proof.C is not on the G1 curve")

    ic_x = backend.g1_msm(pvk.ic, backend.scalar_vector([1, *inputs]))
    ok = backend.pairing_product_equals(
        [(proof.a, b), (ic_x, pvk.gamma_g2_neg), (proof.c, pvk.delta_g2_neg)], pvk.alpha_beta
    )
    return VerificationResult(True, "ok") if ok else VerificationResult(False, "pairing check failed")


def verify(vk: VerifyingKey, public_inputs: Sequence[int], proof: Proof, backend: Any = None) -> bool:
    """True iff `proof` is valid for `public_inputs` under `vk` (see module docstring for errors)."""
    return check_proof(vk, public_inputs, proof, backend).ok
