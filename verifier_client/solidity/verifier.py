"""One Groth16 verifier contract per circuit bucket (and audit circuit), the card's verifying key written
in as constants, and the checks of those keys a registry relies on (`check_card_keys`).
"""
from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from typing import Any

from circuits.field import Q, R
from commitments.bundle import G2Json
from commitments.card import AuditCircuit, CircuitBucket, ModelCard, VerifyingKeyJson
from commitments.claims import HEAD_SIGNALS


PRAGMA = "pragma solidity ^0.8.20;"
LICENSE = "// SPDX-License-Identifier: MIT"


@dataclass(frozen=True)
class SolidityVerifier:
    bucket: str
    contract: str  # contract name
    source: str


def contract_name(bucket: str) -> str:
    """A Solidity identifier for a bucket's verifier: "k4-f4-exact" -> "FairProofVerifier_k4_f4_exact"."""
    return "FairProofVerifier_" + re.sub(r"[^0-9A-Za-z]", "_", bucket)


def _g2(point: G2Json) -> tuple[str, str, str, str]:
    """(x imaginary, x real, y imaginary, y real): the order the pairing precompile reads."""
    (x_re, x_im), (y_re, y_im), _ = point
    return x_im, x_re, y_im, y_re


def verifier_source(bucket: str, vk: VerifyingKeyJson) -> SolidityVerifier:
    """The verifier contract of one bucket's verifying key."""
    name = contract_name(bucket)
    n = vk.nPublic
    ax, ay, _ = vk.vk_alpha_1
    constants = [f"    uint256 constant ALPHA_X = {ax};", f"    uint256 constant ALPHA_Y = {ay};"]
    for label, point in (("BETA", vk.vk_beta_2), ("GAMMA", vk.vk_gamma_2), ("DELTA", vk.vk_delta_2)):
        for suffix, value in zip(("X1", "X2", "Y1", "Y2"), _g2(point)):
            constants.append(f"    uint256 constant {label}_{suffix} = {value};")
    ic = ",\n".join(f"            [uint256({x}), uint256({y})]" for x, y, _ in vk.IC)
    source = f"""{LICENSE}
{PRAGMA}

/// Groth16 verifier of FairProof bucket {bucket} ({n} public inputs), written from the model card.
contract {name} {{
    uint256 constant R = {R};
    uint256 constant Q = {Q};
    uint256 public constant N_PUBLIC = {n};

{chr(10).join(constants)}

    function ic() internal pure returns (uint256[2][{n + 1}] memory) {{
        return [
{ic}
        ];
    }}

    /// The verifying key, as the registry checks it at deployment: alpha, beta, gamma, delta (G2 in the
    /// precompile's order), then IC_0..IC_n.
    function verifyingKey() external pure returns (uint256[] memory key) {{
        uint256[2][{n + 1}] memory points = ic();
        key = new uint256[]({14 + 2 * (n + 1)});
        uint256[14] memory head = [ALPHA_X, ALPHA_Y, BETA_X1, BETA_X2, BETA_Y1, BETA_Y2, GAMMA_X1, GAMMA_X2,
                                   GAMMA_Y1, GAMMA_Y2, DELTA_X1, DELTA_X2, DELTA_Y1, DELTA_Y2];
        for (uint256 i = 0; i < 14; i++) {{
            key[i] = head[i];
        }}
        for (uint256 i = 0; i <= {n}; i++) {{
            key[14 + 2 * i] = points[i][0];
            key[15 + 2 * i] = points[i][1];
        }}
    }}

    /// snarkjs's entry point: fixed-size public inputs.
    function verifyProof(uint256[2] calldata a, uint256[2][2] calldata b, uint256[2] calldata c,
                         uint256[{n}] calldata input) external view returns (bool) {{
        uint256[] memory signals = new uint256[]({n});
        for (uint256 i = 0; i < {n}; i++) {{
            signals[i] = input[i];
        }}
        return check(a, b, c, signals);
    }}

    /// The same check for a dynamic array (the registry's call).
    function verify(uint256[2] calldata a, uint256[2][2] calldata b, uint256[2] calldata c,
                    uint256[] calldata input) external view returns (bool) {{
        if (input.length != {n}) return false;
        return check(a, b, c, input);
    }}

    function check(uint256[2] calldata a, uint256[2][2] calldata b, uint256[2] calldata c,
                   uint256[] memory input) internal view returns (bool) {{
        if (a[0] >= Q || a[1] >= Q || c[0] >= Q || c[1] >= Q) return false;
        if (b[0][0] >= Q || b[0][1] >= Q || b[1][0] >= Q || b[1][1] >= Q) return false;
        uint256[2][{n + 1}] memory points = ic();
        uint256[2] memory acc = points[0];
        for (uint256 i = 0; i < input.length; i++) {{
            if (input[i] >= R) return false; // a signal is its own canonical value, never reduced
            (bool ok, uint256[2] memory term) = mul(points[i + 1], input[i]);
            if (!ok) return false;
            (ok, acc) = add(acc, term);
            if (!ok) return false;
        }}
        uint256[24] memory p = [
            a[0], a[1] == 0 ? 0 : Q - a[1], b[0][0], b[0][1], b[1][0], b[1][1],
            ALPHA_X, ALPHA_Y, BETA_X1, BETA_X2, BETA_Y1, BETA_Y2,
            acc[0], acc[1], GAMMA_X1, GAMMA_X2, GAMMA_Y1, GAMMA_Y2,
            c[0], c[1], DELTA_X1, DELTA_X2, DELTA_Y1, DELTA_Y2
        ];
        uint256[1] memory out;
        bool success;
        assembly {{
            success := staticcall(gas(), 0x08, p, 768, out, 32)
        }}
        return success && out[0] == 1;
    }}

    function add(uint256[2] memory x, uint256[2] memory y) internal view returns (bool ok, uint256[2] memory r) {{
        uint256[4] memory args = [x[0], x[1], y[0], y[1]];
        assembly {{
            ok := staticcall(gas(), 0x06, args, 128, r, 64)
        }}
    }}

    function mul(uint256[2] memory x, uint256 s) internal view returns (bool ok, uint256[2] memory r) {{
        uint256[3] memory args = [x[0], x[1], s];
        assembly {{
            ok := staticcall(gas(), 0x07, args, 96, r, 64)
        }}
    }}
}}
"""
    return SolidityVerifier(bucket, name, source)


class KeyRefused(ValueError):
    """A card whose keys no registry may be deployed with: a degenerate or invalid verifying key, or a
    circuit whose public inputs are not its statement's (the message names the bucket)."""


def key_words(vk: VerifyingKeyJson) -> list[int]:
    """The verifying key as its verifier's `verifyingKey()` returns it: alpha, beta, gamma, delta (G2 in
    the precompile's order: x imaginary, x real, y imaginary, y real), then IC_0..IC_n."""
    words = [int(v) for v in vk.vk_alpha_1[:2]]
    for point in (vk.vk_beta_2, vk.vk_gamma_2, vk.vk_delta_2):
        words += [int(v) for v in _g2(point)]
    for x, y, _ in vk.IC:
        words += [int(x), int(y)]
    return words


def key_hash(vk: VerifyingKeyJson) -> str:
    """sha256 of the key's words as 32-byte big-endian integers (Solidity's sha256(abi.encodePacked(key)))."""
    return hashlib.sha256(b"".join(w.to_bytes(32, "big") for w in key_words(vk))).hexdigest()


def statement_signals(card: ModelCard) -> int:
    """A whole statement's public inputs under `card` (commitments.claims's layout); a per-slice one has one more."""
    return HEAD_SIGNALS + card.architecture.n_inputs + card.n_spread_signals + card.n_persistence_signals


def check_card_keys(card: ModelCard, backend: Any = None) -> None:
    """Refuse (KeyRefused) a card with any bucket or audit circuit whose verifying key is invalid or degenerate
    (circuits.groth16 check_verifying_key: a point at infinity, delta = +-gamma, points off the curve or
    outside the subgroup), does not match its digest on the card, or whose public inputs are not its
    statement's: a registry deployed with such a key would accept proofs of anything."""
    from circuits.errors import MalformedArtifact
    from circuits.groth16 import vk_digest
    from circuits.groth16.system import Groth16
    from circuits.snarkjs.json_formats import verifying_key_from_json

    from ..verify import bucket_verifying_key

    whole = statement_signals(card)
    for bucket in card.circuits:
        try:
            bucket_verifying_key(bucket, backend)
        except MalformedArtifact as exc:
            raise KeyRefused(f"bucket {bucket.bucket}: {exc}") from None
        expected = whole + (1 if bucket.shape.per_slice else 0)
        if bucket.n_public != expected:
            raise KeyRefused(f"bucket {bucket.bucket} has {bucket.n_public} public inputs, "
                             f"this model's statement has {expected}")
    for circuit in card.audit_circuits:
        what = f"verifying key of audit circuit {circuit.name}"
        try:
            vk = verifying_key_from_json(circuit.verifying_key.model_dump(mode="json"), what=what, backend=backend)
            Groth16(backend).prepare(vk)  # check_verifying_key's refusals raise here
        except MalformedArtifact as exc:
            raise KeyRefused(f"audit circuit {circuit.name}: {exc}") from None
        if vk.n_public != circuit.n_public or vk_digest(vk) != circuit.verifying_key_digest:
            raise KeyRefused(f"the {what} does not match its digest or size on the card")
        groups = 2 + GROUP_COUNT_FIELDS * len(card.slices())
        if circuit.n_public != groups:
            raise KeyRefused(f"audit circuit {circuit.name} has {circuit.n_public} public inputs, a group-counts "
                             f"statement over {len(card.slices())} slices has {groups}")


GROUP_COUNT_FIELDS = 4  # rows, positives, selected, true positives (statement.dataset)


def card_verifiers(card: ModelCard) -> list[SolidityVerifier]:
    """A verifier per bucket and audit circuit of the card, in the card's order."""
    entries: list[CircuitBucket | AuditCircuit] = [*card.circuits, *card.audit_circuits]
    return [verifier_source(e.bucket if isinstance(e, CircuitBucket) else e.name, e.verifying_key) for e in entries]
