"""Errors the proof-system layer reports to its callers."""


class CircuitError(Exception):
    """Base class of every error raised by `circuits`."""


class MalformedArtifact(CircuitError):
    """A key, proof, witness or constraint file that cannot be parsed or fails validation."""


class UnsatisfiedConstraint(CircuitError):
    """A witness that violates the constraint system it was built for."""

    constraint_index: int | None = None

    @classmethod
    def at(cls, index: int) -> "UnsatisfiedConstraint":
        """The error for constraint `index` (A*B != C); the index is also on `.constraint_index`."""
        error = cls(f"witness violates constraint {index}: A*B != C")
        error.constraint_index = index
        return error
