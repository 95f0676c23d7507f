"""Groth16 verifiers for the EVM, written from the model card alone.

One contract per circuit bucket (and audit circuit): the card's verifying key
as constants and the BN254 precompiles (ecAdd 0x06, ecMul 0x07, pairing
0x08), checking

    e(-A, B) e(alpha, beta) e(vk_x, gamma) e(C, delta) == 1,
    vk_x = IC_0 + sum_i input_i IC_{i+1},

with every public input required below r (the verifier never reduces one)
and every proof coordinate below q. The layout is snarkjs's
(`verifyProof(uint[2] a, uint[2][2] b, uint[2] c, uint[N] input)`, G2
coordinates imaginary part first, as EIP-197 reads them and snarkjs's
`generatecall` writes them), plus `verify(..., uint[] input)` for callers
that hold a dynamic array.

The registry contract (`registry_source(card)`, one per card, no owner) has
the card's digest, commitment, claim constants and the sha256 of every
bucket's verifying key written in; its constructor takes the verifiers'
addresses in the card's order and refuses one whose key is not the card's
or is degenerate (delta = +-gamma, a point at infinity, a point off the curve
or outside the subgroup); `registry_source` itself refuses such a card
(circuits.groth16 check_verifying_key). `verifyCertificate(bucket, a, b, c,
publicSignals)` checks the signals as commitments/claims.py does, before any
pairing, and only for a whole-statement bucket; `verifyPerSliceCertificate`
takes every slice's proof of a per-slice certificate at once;
`verifyGroupCounts` is the audit circuits' and nothing else's.

Depends on the card only: the verifier client imports it.

The package: `verifier` (a bucket's verifier contract and the card's keys),
`registry` (the card's registry contract), `calldata` (a proof as the
contracts take it) and `solc` (compiling the sources).
"""
from __future__ import annotations

from .calldata import per_slice_calldata, proof_calldata
from .registry import AUDIT, PER_SLICE, WHOLE, registry_source
from .solc import REPO_ROOT, CompiledContract, SolidityError, compile_contracts, find_solc_module
from .verifier import (GROUP_COUNT_FIELDS, LICENSE, PRAGMA, KeyRefused, SolidityVerifier, card_verifiers,
                       check_card_keys, contract_name, key_hash, key_words, statement_signals, verifier_source)

__all__ = ["AUDIT", "GROUP_COUNT_FIELDS", "LICENSE", "PER_SLICE", "PRAGMA", "REPO_ROOT", "WHOLE", "CompiledContract",
           "KeyRefused", "SolidityError", "SolidityVerifier", "card_verifiers", "check_card_keys", "compile_contracts",
           "contract_name", "find_solc_module", "key_hash", "key_words", "per_slice_calldata", "proof_calldata",
           "registry_source", "statement_signals", "verifier_source"]
