"""The registry contract of one card (`registry_source`): the card's digest, commitment, claim constants
and verifying-key hashes written in, the verifiers' addresses taken by its constructor, and the
certificate checks of commitments/claims.py before any pairing.
"""
from __future__ import annotations

import re

from circuits.field import Q, R
from commitments.card import ModelCard, SensitiveFeatureCard
from commitments.claims import HEAD_SIGNALS
from .verifier import GROUP_COUNT_FIELDS, LICENSE, PRAGMA, KeyRefused, check_card_keys, key_hash, statement_signals


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
