"""The seam between a statement and the proof system that proves it.

`ProofSystem` is the interface in the spirit of arkworks' `SNARK` trait: a
relation-specific setup gives a proving and a verifying key; the verifying
key is prepared once (checked, and what every proof needs precomputed) and
then checks any number of proofs:

    proving_key, verifying_key = system.setup(relation)
    prepared = system.prepare(verifying_key)
    proof = system.prove(proving_key, public, witness)
    assert system.verify(prepared, public, proof)

`Groth16` implements it over R1CS relations on one curve backend. Its proving
key carries the relation it was made for (`RelationKey`): the prover
evaluates the relation's rows on the witness, where arkworks' Groth16 key
holds them as query vectors. `public` is the statement's public inputs as
field elements, `witness` the full R1CS assignment, whose wires
1..n_public must be those public inputs.

The bank proves through this seam (`prover_service`) and every Python
verifier checks through it (`verifier_client`): `check` is `verify` with the
reason of a refusal, which a verdict reports.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol, Sequence, TypeVar, runtime_checkable

from ..errors import CircuitError
from ..field import R
from ..relation import R1CS
from ..relation_arrays import ArrayR1CS
from .keys import ProvingKey
from .prove import prove
from .setup import setup
from .types import Proof, VerifyingKey
from .verify import PreparedVerifyingKey, VerificationResult, check_prepared_proof, prepare_verifying_key

RelationT = TypeVar("RelationT", contravariant=True)
ProvingKeyT = TypeVar("ProvingKeyT")
VerifyingKeyT = TypeVar("VerifyingKeyT")
PreparedT = TypeVar("PreparedT")
ProofT = TypeVar("ProofT")


@runtime_checkable
class ProofSystem(Protocol[RelationT, ProvingKeyT, VerifyingKeyT, PreparedT, ProofT]):
    """A proof system for one kind of relation (e.g. R1CS)."""

    def setup(self, relation: RelationT, **options: Any) -> tuple[ProvingKeyT, VerifyingKeyT]:
        """(proving key, verifying key) for `relation` (a relation-specific setup)."""
        ...

    def prepare(self, verifying_key: VerifyingKeyT) -> PreparedT:
        """The verifying key checked and made ready for repeated verification."""
        ...

    def prove(self, proving_key: ProvingKeyT, public: Sequence[int], witness: Sequence[int]) -> ProofT:
        """A proof that `witness` satisfies the key's relation for the public inputs `public`."""
        ...

    def verify(self, prepared: PreparedT, public_inputs: Sequence[int], proof: ProofT) -> bool:
        """True iff `proof` is valid for `public_inputs` under the prepared verifying key."""
        ...


@dataclass(frozen=True)
class RelationKey:
    """A Groth16 proving key together with the R1CS it was set up for (either form; the array form proves
    faster)."""

    relation: R1CS | ArrayR1CS
    key: ProvingKey


class Groth16:
    """`ProofSystem` over R1CS, delegating to `circuits.groth16` on one curve backend.

    backend: a `circuits.backends` backend; None chooses as `get_backend()` does (for proving, the backend
    the proving key was made on).
    """

    def __init__(self, backend: Any = None):
        self.backend = backend

    def _backend(self) -> Any:
        if self.backend is not None:
            return self.backend
        from ..backends import get_backend

        return get_backend()

    def setup(self, relation: R1CS, **options: Any) -> tuple[RelationKey, VerifyingKey]:
        """`circuits.groth16.setup` (options: seed, toxic, progress, workers, h_basis)."""
        pk, vk = setup(relation, self._backend(), **options)
        return RelationKey(relation, pk), vk

    def prepare(self, verifying_key: VerifyingKey) -> PreparedVerifyingKey:
        """Check the key once and keep what every proof needs (raises MalformedArtifact for a degenerate or
        invalid key)."""
        return prepare_verifying_key(verifying_key, self._backend())

    def prove(self, proving_key: RelationKey, public: Sequence[int], witness: Sequence[int],
              **options: Any) -> Proof:
        """`circuits.groth16.prove` on the key's relation (options: r, s, progress, workers).

        Raises CircuitError if the assignment's public wires are not `public`."""
        relation = proving_key.relation
        expected = [v % R for v in public]
        if len(expected) != relation.n_public:
            raise CircuitError(f"the relation has {relation.n_public} public inputs, got {len(expected)}")
        try:
            assigned = [v % R for v in witness[1:1 + relation.n_public]]
        except TypeError as exc:
            raise CircuitError(f"witness values must be integers: {exc}") from None
        if assigned != expected:
            raise CircuitError("the witness's public wires differ from the public inputs")
        result: Proof = prove(proving_key.key, relation, witness, self.backend, **options)
        return result

    def check(self, prepared: PreparedVerifyingKey, public_inputs: Sequence[int], proof: Proof) -> VerificationResult:
        """`verify`, with the reason when the proof is refused (malformed inputs or points, or the pairing)."""
        return check_prepared_proof(prepared, public_inputs, proof, self.backend)  # None: the key's own

    def verify(self, prepared: PreparedVerifyingKey, public_inputs: Sequence[int], proof: Proof) -> bool:
        return self.check(prepared, public_inputs, proof).ok
