"""The Groth16 prover.

With witness w (w_0 = 1, public w_1..w_l), row evaluations giving the H
scalars h, and blinding scalars r, s:

    A  = alpha + sum_i w_i [u_i]_1 + r delta                 (G1)
    B  = beta  + sum_i w_i [v_i]_2 + s delta                 (G2)
    B1 = beta  + sum_i w_i [v_i]_1 + s delta                 (G1, for C)
    C  = sum_{i>l} w_i L_i + sum_k h_k H_k + s A + r B1 - r s delta

Either way sum_k h_k H_k = [(A*B - C)(tau) / delta]_1; the key's H basis
decides the scalars (keys.py): the coefficients of the quotient (A*B - C) / Z
for MONOMIAL_Z, the values of A*B - C at the odd 2n-th roots of unity for
ODD_COSET_LAGRANGE (snarkjs's basis, which needs no quotient).

The five MSMs are independent; they run side by side on `workers` threads. The witness stays a
list of Python ints so that the backend can see how small its entries are.
Given the same key, witness, r and s every backend returns the same proof.
"""
from __future__ import annotations

import operator
import secrets
import threading
from typing import Any, Callable, Sequence

from ..errors import CircuitError, MalformedArtifact, UnsatisfiedConstraint
from ..field import R
from ..relation import R1CS
from ..relation_arrays import ArrayR1CS
from .keys import ODD_COSET_LAGRANGE, ProvingKey
from .qap import check_witness_shape, domain_size, row_evaluations
from .tasks import run_concurrently
from .types import Proof

# progress(stage, done, total)
Progress = Callable[[str, int, int], None]


def random_blinding() -> int:
    """A uniformly random non-zero scalar from `secrets`."""
    return secrets.randbelow(R - 1) + 1


def _check_key_matches(pk: ProvingKey, r1cs: R1CS | ArrayR1CS) -> None:
    if (pk.n_wires, pk.n_public) != (r1cs.n_wires, r1cs.n_public):
        raise CircuitError(
            f"proving key is for {pk.n_wires} wires / {pk.n_public} public inputs, "
            f"the relation has {r1cs.n_wires} / {r1cs.n_public}"
        )
    if pk.domain_size != domain_size(r1cs):
        raise CircuitError(f"proving key domain {pk.domain_size} does not fit the relation (needs {domain_size(r1cs)})")


def _check_scalar(name: str, value: int | None) -> int:
    if value is None:
        return random_blinding()
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < R:
        raise CircuitError(f"blinding scalar {name} must be an int in [0, R)")
    return value


def _witness_vectors(backend: Any, r1cs: R1CS | ArrayR1CS, witness: Any, n_public: int) -> tuple[Any, Any, list[int] | None]:
    """(all wires, private wires) as scalar vectors, and the witness as ints where the relation needs
    them (an `R1CS`'s rows are evaluated in Python). A witness that is already a scalar vector of the
    backend (a .wtns file read into one) is used without a Python int per value."""
    if backend.is_scalar_vector(witness):
        n = backend.vector_len(witness)
        head = backend.scalar_vector_to_ints(backend.vector_slice(witness, 0, min(n, 1)))
        if n != r1cs.n_wires:
            raise UnsatisfiedConstraint(f"witness has {n} values, the system has {r1cs.n_wires} wires")
        if head[0] != 1:
            raise UnsatisfiedConstraint("wire 0 must carry the constant 1")
        as_ints = None if isinstance(r1cs, ArrayR1CS) else backend.scalar_vector_to_ints(witness)
        return witness, backend.vector_slice(witness, n_public + 1, n), as_ints
    values = _reduced(witness)
    check_witness_shape(r1cs, values)
    return backend.scalar_vector(values), backend.scalar_vector(values[n_public + 1:]), values


def _reduced(witness: Sequence[int]) -> list[int]:
    """Witness values reduced into [0, R); refuses non-integers (a float would truncate silently)."""
    try:
        return [operator.index(x) % R for x in witness]
    except TypeError as exc:
        raise CircuitError(f"witness values must be integers: {exc}") from None


def prove(
    pk: ProvingKey,
    r1cs: R1CS | ArrayR1CS,
    witness: Sequence[int] | Any,
    backend: Any = None,
    *,
    r: int | None = None,
    s: int | None = None,
    progress: Progress | None = None,
    workers: int = 2,
    self_check: bool = False,
) -> Proof:
    """A proof that `witness` satisfies `r1cs`, for the statement witness[1..n_public].

    `r1cs` is an `R1CS` or the same relation as an `ArrayR1CS`, whose rows the
    backend evaluates in bulk (the faster form when proving many witnesses).
    `witness` is a sequence of ints or already a scalar vector of `backend`.

    Raises UnsatisfiedConstraint (with `.constraint_index`) before any curve
    work if the witness violates a constraint; CircuitError if the key does not
    belong to a relation of this shape. r, s default to fresh `secrets` values
    (pass them only for reproducibility tests: reusing them leaks the witness).

    With `workers` >= 2 (the default) the G2 MSM, the quotient with its MSM
    and the three other G1 MSMs are shared among `workers` threads, each MSM
    on one thread; `workers` = 1 does everything in turn, each MSM split
    across the cores by the mcl backend.

    With `self_check` the proof is verified against the key's own verifying
    key before it is returned (a few milliseconds with mcl), and MalformedArtifact
    is raised if it does not verify: a key whose files were changed or damaged
    after they were checked (a mapped key is read while proving) yields no proof.
    """
    report = progress or (lambda stage, done, total: None)
    if backend is None:
        from ..backends import get_backend

        backend = get_backend(pk.backend_name)
    if backend.name != pk.backend_name:
        raise CircuitError(f"proving key holds {pk.backend_name} vectors, backend is {backend.name}")
    _check_key_matches(pk, r1cs)
    r = _check_scalar("r", r)
    s = _check_scalar("s", s)
    w_all, w_private, witness_ints = _witness_vectors(backend, r1cs, witness, pk.n_public)
    n = pk.domain_size

    if isinstance(r1cs, ArrayR1CS):
        a_rows, b_rows, c_rows = backend.row_evaluations(r1cs, w_all, n)  # also checks the witness
    else:
        assert witness_ints is not None  # `_witness_vectors` gives ints for every relation not in arrays
        a_rows, b_rows, c_rows = (backend.scalar_vector(rows) for rows in row_evaluations(r1cs, witness_ints, n))
    report("witness", 1, 3)

    h_scalars = backend.qap_odd_coset if pk.h_basis == ODD_COSET_LAGRANGE else backend.qap_quotient

    # With two or more workers every MSM runs on ONE thread and the jobs are
    # shared greedily, longest first (the G2 MSM costs about two G1 MSMs of
    # the same length): the cores stay busy until the end, where splitting
    # each MSM across the cores loses to its thread start-up and merge. The
    # H MSM waits for the quotient, so it comes in two halves: the quotient's
    # thread takes the first, and the second is the last job, which a thread
    # free by then takes, however early the quotient was done (with 0/1
    # witnesses the other MSMs are cheap and the H MSM is most of the proof).
    msm_threads = 1 if workers > 1 else None
    n_h = backend.vector_len(pk.h_query)
    half = n_h // 2
    h_ready = threading.Event()
    h_found: list[Any] = []  # the quotient's scalar vector, once computed

    def h_part(start: int, stop: int) -> Any:
        return backend.g1_msm(backend.vector_slice(pk.h_query, start, stop),
                              backend.vector_slice(h_found[0], start, stop), threads=msm_threads)

    def quotient_and_first_half() -> Any:
        try:
            h_found.append(h_scalars(a_rows, b_rows, c_rows))  # noqa: F821 (deleted only after this thread joins)
        finally:
            h_ready.set()
        report("quotient", 2, 3)
        return h_part(0, half)

    def second_half() -> Any:
        h_ready.wait()
        return h_part(half, n_h) if h_found else None  # else the quotient failed: its error is raised

    def g1_msm(points: Any, scalars: Any) -> Callable[[], Any]:
        return lambda: backend.g1_msm(points, scalars, threads=msm_threads)

    b2_sum, h_first, a_sum, b1_sum, l_sum, h_second = run_concurrently(
        [lambda: backend.g2_msm(pk.b_g2_query, w_all, threads=msm_threads),
         quotient_and_first_half,
         g1_msm(pk.a_query, w_all),
         g1_msm(pk.b_g1_query, w_all),
         g1_msm(pk.l_query, w_private),
         second_half],
        workers=workers,
    )
    h_sum = backend.g1_add(h_first, h_second)
    del a_rows, b_rows, c_rows

    g1_add, g1_mul = backend.g1_add, backend.g1_mul
    delta1 = pk.delta_g1
    a = g1_add(g1_add(pk.alpha_g1, a_sum), g1_mul(delta1, r))
    b2 = backend.g2_add(backend.g2_add(pk.beta_g2, b2_sum), backend.g2_mul(pk.delta_g2, s))
    b1 = g1_add(g1_add(pk.beta_g1, b1_sum), g1_mul(delta1, s))
    c = g1_add(l_sum, h_sum)
    c = g1_add(c, g1_mul(a, s))
    c = g1_add(c, g1_mul(b1, r))
    c = g1_add(c, g1_mul(delta1, (-r * s) % R))
    report("msm", 3, 3)
    proof = Proof(a=a, b=b2, c=c)
    if self_check:
        _check_own_proof(pk, backend, proof, backend.scalar_vector_to_ints(backend.vector_slice(w_all, 1, pk.n_public + 1)))
    return proof


def _check_own_proof(pk: ProvingKey, backend: Any, proof: Proof, public: list[int]) -> None:
    from .verify import check_proof

    result = check_proof(pk.vk, public, proof, backend)
    if not result.ok:
        raise MalformedArtifact(
            "the proof just made does not verify against the proving key's own verifying key "
            f"({result.reason}): the key's files are damaged or were changed while it was in use; "
            "no proof was written")
