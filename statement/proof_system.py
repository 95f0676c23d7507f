"""The seam between a statement and the proof system that proves it.

`ProofSystem` is the interface in the spirit of arkworks' `SNARK` trait: a
relation-specific setup gives a proving and a verifying key; the verifying
key is prepared once and then checks any number of proofs:

    proving_key, verifying_key = system.setup(relation)
    prepared = system.prepare(verifying_key)
    proof = system.prove(proving_key, public, witness)
    assert system.verify(prepared, public, proof)

`Groth16` implements it with `circuits.groth16` over R1CS relations. Its
proving key carries the relation it was made for (`RelationKey`): the
prover evaluates the relation's rows on the witness, where arkworks'
Groth16 key holds them as query vectors. `public` is the statement's public
inputs as field elements (`StatementPublic.field_elements()`), `witness` the
full R1CS assignment (`ConstraintSystem.witness()`), whose wires 1..n_public
must be those public inputs.

This module is not imported by `statement/__init__.py`: the statement's
shape needs no proof system.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol, Sequence, runtime_checkable

from circuits import groth16
from circuits.backends import get_backend
from circuits.errors import CircuitError
from circuits.field import R
from circuits.groth16 import Proof, ProvingKey, VerifyingKey
from circuits.groth16.verify import PreparedVerifyingKey, check_prepared_proof, prepare_verifying_key
from circuits.relation import R1CS
from circuits.relation_arrays import ArrayR1CS


@runtime_checkable
class ProofSystem(Protocol):
    """A proof system for one kind of relation (e.g. R1CS)."""

    def setup(self, relation: Any, **options: Any) -> tuple[Any, Any]:
        """(proving key, verifying key) for `relation` (a relation-specific setup)."""
        ...

    def prepare(self, verifying_key: Any) -> Any:
        """The verifying key checked and made ready for repeated verification."""
        ...

    def prove(self, proving_key: Any, public: Sequence[int], witness: Any) -> Any:
        """A proof that `witness` satisfies the key's relation for the public inputs `public`."""
        ...

    def verify(self, prepared: Any, public_inputs: Sequence[int], proof: Any) -> bool:
        """True iff `proof` is valid for `public_inputs` under the prepared verifying key."""
        ...


@dataclass(frozen=True)
class RelationKey:
    """A Groth16 proving key together with the R1CS it was set up for (either form;
    the array form proves faster)."""

    relation: R1CS | ArrayR1CS
    key: ProvingKey


class Groth16:
    """`ProofSystem` over R1CS, delegating to `circuits.groth16` on one curve backend.

    backend: a `circuits.backends` backend; None chooses as `get_backend()`
    does (for proving, the backend the proving key was made on).
    """

    def __init__(self, backend: Any = None):
        self.backend = backend

    def _backend(self) -> Any:
        return self.backend if self.backend is not None else get_backend()

    def setup(self, relation: R1CS, **options: Any) -> tuple[RelationKey, VerifyingKey]:
        """`circuits.groth16.setup` (options: seed, toxic, progress, workers, h_basis)."""
        pk, vk = groth16.setup(relation, self._backend(), **options)
        return RelationKey(relation, pk), vk

    def prepare(self, verifying_key: VerifyingKey) -> PreparedVerifyingKey:
        """Check the key once and keep what every proof needs (raises MalformedArtifact for a degenerate
        or invalid key): `circuits.groth16`'s prepared verifying key."""
        return prepare_verifying_key(verifying_key, self._backend())

    def prove(self, proving_key: RelationKey, public: Sequence[int], witness: Sequence[int], **options: Any) -> Proof:
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
        return groth16.prove(proving_key.key, relation, witness, self.backend, **options)

    def verify(self, prepared: PreparedVerifyingKey, public_inputs: Sequence[int], proof: Proof) -> bool:
        return check_prepared_proof(prepared, public_inputs, proof, self._backend()).ok
