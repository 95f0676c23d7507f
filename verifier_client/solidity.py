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

The registry contract fixes, at deployment and for good, the card digest,
the weight commitment and the bucket verifiers; `verifyCertificate(bucket,
a, b, c, publicSignals)` refuses signals whose first entry (the statement's
commitment input) is not the card's, then asks that bucket's verifier. It
has no owner: another card is another registry.

Depends on the card only: the verifier client imports it.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from circuits.field import Q, R
from commitments.bundle import G2Json, SnarkjsProof
from commitments.card import AuditCircuit, CircuitBucket, ModelCard, VerifyingKeyJson

REPO_ROOT = Path(__file__).resolve().parents[1]
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


REGISTRY_SOURCE = f"""{LICENSE}
{PRAGMA}

interface IFairProofVerifier {{
    function verify(uint256[2] calldata a, uint256[2][2] calldata b, uint256[2] calldata c,
                    uint256[] calldata input) external view returns (bool);
}}

/// One model card's certificates, checkable by anyone: the card digest, the weight commitment and the
/// verifier of every bucket are fixed at deployment (no owner, nothing to update: another card is
/// another registry).
contract FairProofRegistry {{
    bytes32 public immutable cardDigest;
    uint256 public immutable commitment;
    mapping(bytes32 => address) private verifiers;
    string[] public buckets;

    constructor(bytes32 cardDigest_, uint256 commitment_, string[] memory names, address[] memory addresses) {{
        require(names.length == addresses.length, "one verifier per bucket");
        cardDigest = cardDigest_;
        commitment = commitment_;
        for (uint256 i = 0; i < names.length; i++) {{
            bytes32 key = keccak256(bytes(names[i]));
            require(verifiers[key] == address(0), "bucket listed twice");
            verifiers[key] = addresses[i];
            buckets.push(names[i]);
        }}
    }}

    function verifierOf(string calldata bucket) external view returns (address) {{
        return verifiers[keccak256(bytes(bucket))];
    }}

    /// True iff the proof verifies under the bucket's key and its statement is about the committed model.
    function verifyCertificate(string calldata bucket, uint256[2] calldata a, uint256[2][2] calldata b,
                               uint256[2] calldata c, uint256[] calldata publicSignals) external view returns (bool) {{
        address verifier = verifiers[keccak256(bytes(bucket))];
        if (verifier == address(0) || publicSignals.length == 0 || publicSignals[0] != commitment) return false;
        return IFairProofVerifier(verifier).verify(a, b, c, publicSignals);
    }}
}}
"""


def card_verifiers(card: ModelCard) -> list[SolidityVerifier]:
    """A verifier per bucket and audit circuit of the card, in the card's order."""
    entries: list[CircuitBucket | AuditCircuit] = [*card.circuits, *card.audit_circuits]
    return [verifier_source(e.bucket if isinstance(e, CircuitBucket) else e.name, e.verifying_key) for e in entries]


def proof_calldata(proof: SnarkjsProof) -> tuple[list[int], list[list[int]], list[int]]:
    """(a, b, c) of a snarkjs proof.json (a `SnarkjsProof`) as the verifier takes them."""
    a = [int(v) for v in proof.pi_a[:2]]
    (b_x_re, b_x_im), (b_y_re, b_y_im) = proof.pi_b[0], proof.pi_b[1]
    b = [[int(b_x_im), int(b_x_re)], [int(b_y_im), int(b_y_re)]]
    c = [int(v) for v in proof.pi_c[:2]]
    return a, b, c


@dataclass(frozen=True)
class CompiledContract:
    abi: list[dict[str, Any]]  # solc's JSON ABI entries
    bytecode: str  # hex, no 0x


class SolidityError(RuntimeError):
    """The Solidity compiler is missing or refused a source."""


_COMPILE = ("const solc = require(process.argv[1]); let input = '';"
            "process.stdin.on('data', d => input += d).on('end', () => process.stdout.write(solc.compile(input)));")


def find_solc_module() -> Path | None:
    """The `solc` npm package (package.json pins it; `npm ci` installs it), or None (also without node)."""
    if shutil.which("node") is None:
        return None
    for candidate in (os.environ.get("FAIRPROOF_SOLC_MODULE"), REPO_ROOT / "node_modules" / "solc"):
        if candidate and (Path(candidate) / "package.json").is_file():
            return Path(candidate)
    return None


def compile_contracts(sources: dict[str, str], timeout: float = 600) -> dict[str, CompiledContract]:
    """Compile Solidity sources (file name -> text) with solc from npm (optimiser on, 200 runs):
    contract name -> ABI and creation bytecode. Raises SolidityError with the compiler's errors."""
    module = find_solc_module()
    if module is None:
        raise SolidityError("the Solidity compiler is not installed: node and `npm ci` in the repository root "
                            "(package.json pins solc)")
    request = {"language": "Solidity", "sources": {name: {"content": text} for name, text in sources.items()},
               "settings": {"optimizer": {"enabled": True, "runs": 200},
                            "outputSelection": {"*": {"*": ["abi", "evm.bytecode.object"]}}}}
    try:
        done = subprocess.run(["node", "-e", _COMPILE, str(module)], input=json.dumps(request), capture_output=True,
                              text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise SolidityError(f"solc took more than {timeout} s") from None
    if done.returncode != 0:
        raise SolidityError(f"solc failed: {done.stderr[-2000:]}")
    output = json.loads(done.stdout)
    errors = [e.get("formattedMessage", e.get("message", "")) for e in output.get("errors", [])
              if e.get("severity") == "error"]
    if errors:
        raise SolidityError("solc refused the source: " + "\n".join(errors)[:4000])
    return {name: CompiledContract(c["abi"], c["evm"]["bytecode"]["object"])
            for unit in output["contracts"].values() for name, c in unit.items()}
