"""Groth16 over BN254 (alt_bn128): setup, prove, verify, encodings, keys, phase 2.

The proof system knows only R1CS relations (circuits/relation.py); curve
arithmetic goes through a CurveBackend (circuits/backends).
"""
from .encoding import (
    PROOF_BYTES,
    proof_from_bytes,
    proof_from_dict,
    proof_to_bytes,
    proof_to_dict,
    vk_digest,
    vk_from_bytes,
    vk_from_dict,
    vk_to_bytes,
    vk_to_dict,
)
from .keys import (
    ProvingKey,
    convert_proving_key,
    load_proving_key,
    load_verifying_key,
    proving_key_digest,
    save_proving_key,
    save_verifying_key,
)
from .phase1 import Phase1Points, derive_keys_from_phase1
from .phase2 import ChainReport, Contribution, Transcript, contribute, start_transcript, verify_contribution_chain
from .prove import prove
from .qap import domain_size, r1cs_digest
from .setup import ToxicWaste, sample_toxic_waste, setup
from .types import G1Affine, G2Affine, Proof, VerifyingKey
from .verify import PreparedVerifyingKey, VerificationResult, check_prepared_proof, check_proof, prepare_verifying_key, verify

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
