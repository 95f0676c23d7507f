"""Groth16 over BN254 (alt_bn128): setup, prove, verify, encodings, keys, phase 2.

The proof system knows only R1CS relations (circuits/relation.py); curve
arithmetic goes through a CurveBackend (circuits/backends).
"""
from importlib import import_module
from typing import Any

# Functions named like the module they live in are bound now: importing the submodule (as the
# prover's command does) would otherwise leave the module, not the function, under that name.
from .prove import prove
from .setup import ToxicWaste, sample_toxic_waste, setup
from .verify import PreparedVerifyingKey, VerificationResult, check_prepared_proof, check_proof, prepare_verifying_key, verify

# Everything else is imported on first use (PEP 562), so that a command needing only the prover
# does not load the phase-1 and phase-2 machinery.
_LAZY = {
    **dict.fromkeys(("PROOF_BYTES", "proof_from_bytes", "proof_from_dict", "proof_to_bytes", "proof_to_dict",
                     "vk_digest", "vk_from_bytes", "vk_from_dict", "vk_to_bytes", "vk_to_dict"), "encoding"),
    **dict.fromkeys(("ProvingKey", "convert_proving_key", "load_proving_key", "load_verifying_key",
                     "proving_key_digest", "save_proving_key", "save_verifying_key"), "keys"),
    **dict.fromkeys(("Phase1Points", "derive_keys_from_phase1"), "phase1"),
    **dict.fromkeys(("ChainReport", "Contribution", "Transcript", "contribute", "start_transcript",
                     "verify_contribution_chain"), "phase2"),
    **dict.fromkeys(("domain_size", "r1cs_digest"), "qap"),
    **dict.fromkeys(("G1Affine", "G2Affine", "Proof", "VerifyingKey"), "types"),
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value


__all__ = [
    "ChainReport",
    "Contribution",
    "Phase1Points",
    "Transcript",
    "contribute",
    "derive_keys_from_phase1",
    "start_transcript",
    "verify_contribution_chain",
    "G1Affine",
    "G2Affine",
    "PROOF_BYTES",
    "Proof",
    "PreparedVerifyingKey",
    "ProvingKey",
    "ToxicWaste",
    "VerificationResult",
    "VerifyingKey",
    "check_prepared_proof",
    "check_proof",
    "convert_proving_key",
    "domain_size",
    "load_proving_key",
    "load_verifying_key",
    "prepare_verifying_key",
    "proof_from_bytes",
    "proof_from_dict",
    "proof_to_bytes",
    "proof_to_dict",
    "prove",
    "proving_key_digest",
    "r1cs_digest",
    "sample_toxic_waste",
    "save_proving_key",
    "save_verifying_key",
    "setup",
    "verify",
    "vk_digest",
    "vk_from_bytes",
    "vk_from_dict",
    "vk_to_bytes",
    "vk_to_dict",
]
