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
"""
from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from circuits.field import Q, R
from commitments.bundle import CertificateBundle, G2Json, SnarkjsProof
from commitments.card import AuditCircuit, CircuitBucket, ModelCard, SensitiveFeatureCard, VerifyingKeyJson
from commitments.claims import HEAD_SIGNALS

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
    from circuits.groth16 import prepare_verifying_key, vk_digest
    from circuits.snarkjs.json_formats import verifying_key_from_json

    from .verify import bucket_verifying_key

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
            prepare_verifying_key(vk, backend)  # check_verifying_key's refusals raise here
        except MalformedArtifact as exc:
            raise KeyRefused(f"audit circuit {circuit.name}: {exc}") from None
        if vk.n_public != circuit.n_public or vk_digest(vk) != circuit.verifying_key_digest:
            raise KeyRefused(f"the {what} does not match its digest or size on the card")
        groups = 2 + GROUP_COUNT_FIELDS * len(card.slices())
        if circuit.n_public != groups:
            raise KeyRefused(f"audit circuit {circuit.name} has {circuit.n_public} public inputs, a group-counts "
                             f"statement over {len(card.slices())} slices has {groups}")


GROUP_COUNT_FIELDS = 4  # rows, positives, selected, true positives (statement.dataset)
WHOLE, PER_SLICE, AUDIT = 1, 2, 3


def _comment(text: str) -> str:
    """Card text (a feature's or model's name) made safe for a Solidity comment: the card is the bank's, and a
    line break in a name would otherwise write code into the registry."""
    return re.sub(r"[^0-9A-Za-z_.=+ -]", "?", text)[:80]


def _signed_literal(v: int) -> str:
    return f"int256({v})" if v >= 0 else f"-int256({-v})"


def _point_function(a: int, feature: SensitiveFeatureCard) -> str:
    """`pointOf<a>(s)`: which of sensitive feature a's points (card order) the query holds at the feature's
    columns, or the number of its points when it holds none. One function for a feature spanning one input
    or several (a one-hot block): a loop over constant arrays, so that a wide feature costs the registry
    code in proportion to its points' coordinates, never a local per column."""
    columns, points = feature.input_columns, feature.points
    width, count = len(columns), len(points)
    at = ", ".join(f"uint256({HEAD_SIGNALS + c})" if i == 0 else str(HEAD_SIGNALS + c) for i, c in enumerate(columns))
    table = ", ".join("[" + ", ".join(_signed_literal(v) for v in point) + "]" for point in points)
    return f"""
    /// {_comment(feature.name)}: which of its {count} domain points the query holds at its input(s), {count} if none.
    function pointOf{a}(uint256[] calldata s) internal pure returns (uint256) {{
        uint256[{width}] memory at = [{at}];
        int256[{width}][{count}] memory points = [{table}];
        for (uint256 k = 0; k < {count}; k++) {{
            bool same = true;
            for (uint256 i = 0; i < {width} && same; i++) {{
                same = signedOf(s[at[i]]) == points[k][i];
            }}
            if (same) return k;
        }}
        return {count};
    }}
"""


def registry_source(card: ModelCard, check_keys: bool = True) -> str:
    """FairProofRegistry for `card`: every rule commitments.claims enforces on a certificate's public signals,
    with the card's constants written in, checked before any pairing; the card's verifying keys bound to
    the verifiers at deployment. Refuses (KeyRefused) a card whose keys are degenerate (check_card_keys),
    unless `check_keys` is False (tests: the constructor's own refusal)."""
    if check_keys:
        check_card_keys(card)
    n = card.architecture.n_inputs
    slices = card.slices()
    n_slices = len(slices)
    n_signals = statement_signals(card)
    entries = [(b.bucket, PER_SLICE if b.shape.per_slice else WHOLE, b.shape.eps_cap, b.n_public, b.verifying_key)
               for b in card.circuits]
    entries += [(a.name, AUDIT, a.n_rows, a.n_public, a.verifying_key) for a in card.audit_circuits]
    for name, *_ in entries:
        if not re.fullmatch(r"[0-9A-Za-z_-]+", name):
            raise KeyRefused(f"circuit name {name!r} cannot be written into the registry")
    kinds = {WHOLE: "a whole statement", PER_SLICE: "one slice's statement", AUDIT: "group counts"}

    immutables = "\n".join(f"    address public immutable verifier{i}; // {name}: {kinds[kind]}"
                           for i, (name, kind, *_rest) in enumerate(entries))
    lookup = "\n".join(f'        if (key == keccak256("{name}")) return ({kind}, {cap}, verifier{i});'
                       for i, (name, kind, cap, *_rest) in enumerate(entries))
    assign = "\n".join(
        f'        checkVerifier(verifiers_[{i}], 0x{key_hash(vk)}, {n_public});\n'
        f'        verifier{i} = verifiers_[{i}];\n        buckets.push("{name}");'
        for i, (name, _kind, _cap, n_public, vk) in enumerate(entries))

    box = "\n".join(f"        if (!within(s[{HEAD_SIGNALS + j}], {_signed_literal(lo)}, {_signed_literal(hi)})) "
                    f"return (false, 0); // {_comment(card.feature_names[j])}"
                    for j, (lo, hi) in enumerate(zip(card.box_lower, card.box_upper)))
    sensitive = []
    for a, f in enumerate(card.sensitive):
        count = len(f.points)
        sensitive.append(f"""        {{ // {_comment(f.name)}: one of its domain values, and which
            uint256 k = pointOf{a}(s);
            if (k == {count}) return (false, 0);
            own = own * {count} + k;
        }}""")
    point_functions = "".join(_point_function(a, f) for a, f in enumerate(card.sensitive))
    spread = ""
    if card.spread is not None:
        first = HEAD_SIGNALS + n
        spread = f"""
    /// The spread lens: one decision per slice (each a class; all the decision on a certified radius;
    /// the query's own slice's the decision), then the margin-bucket count, between 1 and the slices.
    function spreadOk(uint256[] calldata s, uint256 own) internal pure returns (bool) {{
        uint256 decision = s[1];
        bool certified = s[3] == 0;
        for (uint256 t = 0; t < N_SLICES; t++) {{
            uint256 d = s[{first} + t];
            if (d >= N_CLASSES || (certified && d != decision)) return false;
        }}
        uint256 count = s[{first} + N_SLICES];
        if (count < 1 || count > N_SLICES) return false;
        return s[{first} + own] == decision;
    }}
"""
    persistence = ""
    if card.persistence is not None:
        first = HEAD_SIGNALS + n + card.n_spread_signals
        lines = [f"        uint256 point{a} = pointOf{a}(s); // the query's own value of {_comment(f.name)}"
                 for a, f in enumerate(card.sensitive)]
        for i, (a, point) in enumerate(card.persistence_pairs()):
            f = card.sensitive[a]
            lines.append(f"        if (!boundsOk(s[{first + 1 + 2 * i}], s[{first + 2 + 2 * i}], "
                         f"point{a} == {f.points.index(point)})) return false; "
                         f"// {_comment(f.name)} = {_comment(f.label_of(point))}")
        persistence = f"""
    /// The persistence lens: delta within the card's cap, then per value of every sensitive feature the
    /// bounds (signed, |b| < 2^250) with lower <= upper, containing 0 at the customer's own value.
    function persistenceOk(uint256[] calldata s) internal pure returns (bool) {{
        if (s[{first}] > DELTA_CAP) return false;
{chr(10).join(lines)}
        return true;
    }}

    function boundsOk(uint256 lowerSignal, uint256 upperSignal, bool own) internal pure returns (bool) {{
        int256 lower = signedOf(lowerSignal);
        int256 upper = signedOf(upperSignal);
        if (lower <= -BOUND_LIMIT || lower >= BOUND_LIMIT) return false;
        if (upper <= -BOUND_LIMIT || upper >= BOUND_LIMIT) return false;
        if (lower > upper) return false;
        return !own || (lower <= 0 && upper >= 0);
    }}
"""
    lens_calls = ((" && spreadOk(s, own)" if card.spread is not None else "")
                  + (" && persistenceOk(s)" if card.persistence is not None else ""))
    delta_cap = f"    uint256 constant DELTA_CAP = {card.persistence_delta_cap};\n" if card.persistence else ""
    n_groups_signals = 2 + GROUP_COUNT_FIELDS * n_slices

    return f"""{LICENSE}
{PRAGMA}

interface IFairProofVerifier {{
    function verify(uint256[2] calldata a, uint256[2][2] calldata b, uint256[2] calldata c,
                    uint256[] calldata input) external view returns (bool);
    function verifyingKey() external view returns (uint256[] memory);
}}

/// The certificates of model {_comment(card.model_id)}, checkable by anyone. Written from its model card: the card
/// digest, the weight commitment, every constant the certificate's claims are checked against (classes,
/// domain box, sensitive values, slices, caps) and the verifying key of every bucket (its sha256) are
/// fixed in this source; the constructor takes the verifiers' addresses in the card's order and refuses
/// one whose key is not the card's or is degenerate. No owner, nothing to update: another card is another
/// registry.
///
/// A certificate's public signals are checked as commitments/claims.py checks them, before any pairing:
/// each below r, the commitment, the decision a class, status 0 (certified) or 1 (flip: radius 0, a slice
/// index), E at most the bucket's cap, the query inside the domain box with sensitive values of their
/// domains, and the lenses' signals. A verifier's address alone proves nothing: the deployer chose
/// its code; check it against `fairproof export-solidity`'s source before trusting this registry.
contract FairProofRegistry {{
    bytes32 public constant cardDigest = 0x{card.digest()};
    uint256 public constant commitment = {int(card.commitment)};
    uint256 constant R = {R};
    uint256 constant HALF_R = {(R - 1) // 2};
    uint256 constant Q = {Q};
    int256 constant BOUND_LIMIT = int256(1 << 250);
    uint256 public constant N_SIGNALS = {n_signals}; // a whole statement's public inputs (a slice's: one more)
    uint256 constant N_CLASSES = {card.architecture.n_classes};
    uint256 public constant N_SLICES = {n_slices};
    uint256 constant N_GROUP_SIGNALS = {n_groups_signals};
{delta_cap}    uint256 constant WHOLE = {WHOLE};
    uint256 constant PER_SLICE = {PER_SLICE};
    uint256 constant AUDIT = {AUDIT};

{immutables}
    string[] public buckets; // every bucket and audit circuit, in the card's order

    constructor(address[] memory verifiers_) {{
        require(verifiers_.length == {len(entries)}, "one verifier per bucket and audit circuit, in the card's order");
{assign}
    }}

    /// (kind, the bucket's eps cap or the audit circuit's rows, verifier) of a circuit; kind 0: unknown.
    function entry(string calldata name) internal view returns (uint256, uint256, address) {{
        bytes32 key = keccak256(bytes(name));
{lookup}
        return (0, 0, address(0));
    }}

    function verifierOf(string calldata name) external view returns (address verifier) {{
        (, , verifier) = entry(name);
    }}

    // ------------------------------------------------------------------ certificates

    /// True iff `bucket` is a whole-statement bucket of the card, the signals are claims an honest certificate
    /// can have, and the proof verifies under the bucket's key. Per-slice buckets: verifyPerSliceCertificate.
    function verifyCertificate(string calldata bucket, uint256[2] calldata a, uint256[2][2] calldata b,
                               uint256[2] calldata c, uint256[] calldata publicSignals) external view returns (bool) {{
        (uint256 kind, uint256 cap, address verifier) = entry(bucket);
        if (kind != WHOLE || publicSignals.length != N_SIGNALS || !claimsOk(publicSignals, cap)) return false;
        return IFairProofVerifier(verifier).verify(a, b, c, publicSignals);
    }}

    /// A per-slice certificate: one proof per slice, slice t's under a per-slice bucket (all of one cap) with
    /// signals ending in t, all agreeing on every other signal; the claims are checked on slice 0's signals.
    function verifyPerSliceCertificate(string[] calldata bucketNames, uint256[2][] calldata a,
                                       uint256[2][2][] calldata b, uint256[2][] calldata c,
                                       uint256[][] calldata publicSignals) external view returns (bool) {{
        if (bucketNames.length != N_SLICES || a.length != N_SLICES || b.length != N_SLICES || c.length != N_SLICES
            || publicSignals.length != N_SLICES) return false;
        (bool ok, address[] memory verifiers) = slicesAgree(bucketNames, publicSignals);
        if (!ok) return false;
        for (uint256 t = 0; t < N_SLICES; t++) {{
            if (!IFairProofVerifier(verifiers[t]).verify(a[t], b[t], c[t], publicSignals[t])) return false;
        }}
        return true;
    }}

    function slicesAgree(string[] calldata bucketNames, uint256[][] calldata publicSignals)
        internal view returns (bool, address[] memory verifiers) {{
        verifiers = new address[](N_SLICES);
        uint256 cap0;
        for (uint256 t = 0; t < N_SLICES; t++) {{
            (uint256 kind, uint256 cap, address verifier) = entry(bucketNames[t]);
            if (kind != PER_SLICE || (t > 0 && cap != cap0)) return (false, verifiers);
            cap0 = cap;
            uint256[] calldata s = publicSignals[t];
            if (s.length != N_SIGNALS + 1 || s[N_SIGNALS] != t) return (false, verifiers);
            if (t > 0) {{
                for (uint256 j = 0; j < N_SIGNALS; j++) {{
                    if (s[j] != publicSignals[0][j]) return (false, verifiers);
                }}
            }}
            verifiers[t] = verifier;
        }}
        return (claimsOk(publicSignals[0], cap0), verifiers);
    }}

    /// The claims alone, without a proof (what verifyCertificate checks before the pairing). For a per-slice
    /// bucket the last signal is the slice the proof stands for, below N_SLICES.
    function checkClaims(string calldata bucket, uint256[] calldata publicSignals) external view returns (bool) {{
        (uint256 kind, uint256 cap, ) = entry(bucket);
        if (kind == WHOLE) return publicSignals.length == N_SIGNALS && claimsOk(publicSignals, cap);
        if (kind == PER_SLICE) {{
            return publicSignals.length == N_SIGNALS + 1 && publicSignals[N_SIGNALS] < N_SLICES
                && claimsOk(publicSignals, cap);
        }}
        return false;
    }}

    /// The first N_SIGNALS signals: commitments.claims.claims_from_signals's rules.
    function claimsOk(uint256[] calldata s, uint256 cap) internal pure returns (bool) {{
        for (uint256 i = 0; i < N_SIGNALS; i++) {{
            if (s[i] >= R) return false; // a signal is its own canonical value, never reduced
        }}
        if (!headOk(s, cap)) return false;
        (bool inside, uint256 own) = queryOk(s);
        return inside{lens_calls};
    }}

    /// commitment, decision, E, status, flip slice.
    function headOk(uint256[] calldata s, uint256 cap) internal pure returns (bool) {{
        if (s[0] != commitment || s[1] >= N_CLASSES || s[2] > cap) return false;
        if (s[3] == 0) return s[4] == 0; // certified: no flip slice
        return s[3] == 1 && s[2] == 0 && s[4] < N_SLICES; // a flip certifies radius 0, at one of the slices
    }}

    /// The query inside the domain box (signed: above (r - 1) / 2 is negative), each sensitive value one of its
    /// domain's; and the index of the query's own slice.
    function queryOk(uint256[] calldata s) internal pure returns (bool, uint256 own) {{
{box}
{chr(10).join(sensitive)}
        return (true, own);
    }}
{point_functions}{spread}{persistence}
    function signedOf(uint256 v) internal pure returns (int256) {{
        return v <= HALF_R ? int256(v) : -int256(R - v);
    }}

    function within(uint256 v, int256 lower, int256 upper) internal pure returns (bool) {{
        int256 x = signedOf(v);
        return lower <= x && x <= upper;
    }}

    // ------------------------------------------------------------------ group counts

    /// A proof of group counts under one of the card's audit circuits (never a certificate): commitment, the
    /// dataset's Poseidon digest (the caller compares it with its dataset's), then per slice rows, positives,
    /// selected, true positives with t <= a <= n, t <= p <= n and the rows summing to the circuit's.
    function verifyGroupCounts(string calldata circuit, uint256[2] calldata a, uint256[2][2] calldata b,
                               uint256[2] calldata c, uint256[] calldata publicSignals) external view returns (bool) {{
        (uint256 kind, uint256 rows, address verifier) = entry(circuit);
        if (kind != AUDIT || !groupCountsOk(publicSignals, rows)) return false;
        return IFairProofVerifier(verifier).verify(a, b, c, publicSignals);
    }}

    function checkGroupCounts(string calldata circuit, uint256[] calldata publicSignals) external view returns (bool) {{
        (uint256 kind, uint256 rows, ) = entry(circuit);
        return kind == AUDIT && groupCountsOk(publicSignals, rows);
    }}

    function groupCountsOk(uint256[] calldata s, uint256 rows) internal pure returns (bool) {{
        if (s.length != N_GROUP_SIGNALS || s[0] != commitment || s[1] >= R) return false;
        uint256 total = 0;
        for (uint256 g = 0; g < N_SLICES; g++) {{
            uint256 n = s[2 + 4 * g];
            uint256 p = s[3 + 4 * g];
            uint256 sel = s[4 + 4 * g];
            uint256 tp = s[5 + 4 * g];
            if (n > rows || p > n || sel > n || tp > sel || tp > p) return false;
            total += n;
        }}
        return total == rows;
    }}

    // ------------------------------------------------------------------ deployment

    /// The verifier's key must be the card's (its sha256) and not degenerate: every coordinate below q, no
    /// point at infinity, delta not +-gamma, the G1 points on the curve and the G2 points in the subgroup
    /// (the precompiles refuse any other point).
    function checkVerifier(address verifier, bytes32 expected, uint256 nPublic) internal view {{
        uint256[] memory key = IFairProofVerifier(verifier).verifyingKey();
        require(key.length == 14 + 2 * (nPublic + 1), "the verifier's key has another number of public inputs");
        require(sha256(abi.encodePacked(key)) == expected, "the verifier's key is not the card's key for this circuit");
        for (uint256 i = 0; i < key.length; i++) {{
            require(key[i] < Q, "a verifying key coordinate is not below q");
        }}
        require(key[0] != 0 || key[1] != 0, "degenerate key: alpha is the point at infinity");
        for (uint256 p = 2; p < 14; p += 4) {{
            require(key[p] != 0 || key[p + 1] != 0 || key[p + 2] != 0 || key[p + 3] != 0,
                    "degenerate key: a G2 point is the point at infinity");
        }}
        bool sameX = key[10] == key[6] && key[11] == key[7];
        require(!(sameX && key[12] == key[8] && key[13] == key[9]), "degenerate key: delta equals gamma");
        require(!(sameX && key[12] == (Q - key[8]) % Q && key[13] == (Q - key[9]) % Q),
                "degenerate key: delta equals -gamma");
        for (uint256 i = 14; i < key.length; i += 2) {{
            require(key[i] != 0 || key[i + 1] != 0, "degenerate key: an IC point is the point at infinity");
            uint256[4] memory args = [key[i], key[i + 1], key[i], key[i + 1]];
            uint256[2] memory sum;
            bool onCurve;
            assembly {{
                onCurve := staticcall(gas(), 0x06, args, 128, sum, 64)
            }}
            require(onCurve, "an IC point is not on the curve");
        }}
        uint256[18] memory pairs = [key[0], key[1], key[2], key[3], key[4], key[5],
                                    key[0], key[1], key[6], key[7], key[8], key[9],
                                    key[0], key[1], key[10], key[11], key[12], key[13]];
        uint256[1] memory out;
        bool valid;
        assembly {{
            valid := staticcall(gas(), 0x08, pairs, 576, out, 32)
        }}
        require(valid, "a verifying key point is not on the curve or not in the subgroup");
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


def per_slice_calldata(bundle: CertificateBundle) -> tuple[list[str], list[list[int]], list[list[list[int]]],
                                                           list[list[int]], list[list[int]]]:
    """(bucket names, a's, b's, c's, public signals) of every slice's proof of a per-slice certificate, slice
    0 first (the bundle's own proof, then its parts in order): verifyPerSliceCertificate's arguments."""
    from commitments.claims import part_signals

    names, a_s, b_s, c_s, signals = [bundle.bucket], [], [], [], [[int(v) for v in bundle.public_signals]]
    for proof in (bundle.proof, *(p.proof for p in bundle.parts)):
        a, b, c = proof_calldata(proof)
        a_s.append(a)
        b_s.append(b)
        c_s.append(c)
    for part in bundle.parts:
        names.append(part.bucket)
        signals.append([int(v) for v in part_signals(bundle, part.slice_index)])
    return names, a_s, b_s, c_s, signals


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
