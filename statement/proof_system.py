"""The seam between the statement and the proof system that proves it: `circuits.groth16.system`.

The statement's circuits are R1CS relations; `Groth16` proves and verifies them
behind the `ProofSystem` protocol (arkworks' `SNARK` trait), and `RelationKey`
is its proving key with the relation it was made for. Named here so that the
statement's users find the seam beside the statement; the implementation lives
with the proof system, where the customer's verifier uses it too.

This module is not imported by `statement/__init__.py`: the statement's shape
needs no proof system.
"""
from __future__ import annotations

from circuits.groth16.system import Groth16, ProofSystem, RelationKey

__all__ = ["Groth16", "ProofSystem", "RelationKey"]
