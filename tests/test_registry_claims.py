"""The registry enforces on-chain what commitments/claims.py enforces: a dishonest bank's differential test.

Every rule claims_from_signals (and, for per-slice certificates, bundle_claims) applies to a certificate's
public signals is tried with a forged signal vector built as a bank would build it; the registry in py-evm
and the Python verifier must agree on every one, honest certificates are accepted by both, and a forgery is
refused for its claims before any pairing (its gas shows no pairing ran), so no valid proof is needed to
show it. Per-slice certificates are taken only whole (every slice's proof in one call), audit circuits only
by verifyGroupCounts, and a card with a degenerate verifying key gets no registry: export-solidity refuses
it, and the registry's constructor refuses such a key, or a verifier whose key is not the card's.
"""
from __future__ import annotations

import random

import pytest

from circuits.field import Q, R
from commitments.claims import PERSISTENCE_BOUND_LIMIT, ClaimError, claims_from_signals
from test_solidity import (CERTIFY, PROOF_TYPES, VERIFY, Chain, DeploymentRefused, compile_card, deploy_card,
                           evm)  # noqa: F401 (fixture)
from verifier_client.solidity import KeyRefused, card_verifiers, proof_calldata, registry_source

CHECK = "checkClaims(string,uint256[])"
PER_SLICE = "verifyPerSliceCertificate(string[],uint256[2][],uint256[2][2][],uint256[2][],uint256[][])"
PER_SLICE_TYPES = ["string[]", "uint256[2][]", "uint256[2][2][]", "uint256[2][]", "uint256[][]"]
GROUPS = "verifyGroupCounts(string,uint256[2],uint256[2][2],uint256[2],uint256[])"
CHECK_GROUPS = "checkGroupCounts(string,uint256[])"
CERTIFY_TYPES = ["string", *PROOF_TYPES, "uint256[]"]
NO_PAIRING = 120_000  # a call refused for its claims costs far less than one pairing (181,000 alone)


def view(chain: Chain, to: str, signature: str, types, args) -> bool:
    """The boolean a view call returns (no transaction)."""
    from eth_abi import decode, encode
    from eth_utils import function_signature_to_4byte_selector

    data = "0x" + (function_signature_to_4byte_selector(signature) + encode(list(types), list(args))).hex()
    (result,) = decode(["bool"], bytes.fromhex(chain.tester.call({"from": chain.account, "to": to, "data": data})[2:]))
    return result


def python_ok(signals, card, bucket: str) -> bool:
    """The Python verifier's verdict on the claims (claims_from_signals; for a per-slice bucket the last
    signal names the slice, which must be one of the card's)."""
    b = card.bucket(bucket)
    try:
        index = int(signals[-1]) if b.shape.per_slice else 0
        if b.shape.per_slice and index >= len(card.slices()):
            return False
        claims_from_signals([str(v) for v in signals], card, b, index)
    except ClaimError:
        return False
    return True


class Layout:
    """Where each signal sits under `card` (commitments.claims's order)."""

    def __init__(self, card, bucket: str):
        self.card = card
        self.n = card.architecture.n_inputs
        self.slices = card.slices()
        self.S = len(self.slices)
        self.classes = card.architecture.n_classes
        self.cap = card.bucket(bucket).shape.eps_cap
        self.spread = 5 + self.n  # first spread signal
        self.persistence = self.spread + card.n_spread_signals  # delta, then (lower, upper) per pair
        self.sensitive = card.sensitive[0]  # its first input: `column`, one of its points: `point`
        self.column, self.point = self.sensitive.input_columns[0], self.sensitive.points[0]
        self.free = next(j for j in range(self.n) if j not in card.sensitive_columns)

    def query(self, s) -> tuple[int, ...]:
        return tuple(v if v <= (R - 1) // 2 else v - R for v in s[5:5 + self.n])

    def own(self, s) -> int:
        return self.slices.index(self.card.query_slice(self.query(s)))

    def pair_index(self, s, own: bool) -> int:
        """A persistence pair of the first sensitive attribute at the customer's own value (own) or at another."""
        mine = self.sensitive.point_of(self.query(s))
        for i, (a, point) in enumerate(self.card.persistence_pairs()):
            if a == 0 and (point == mine) == own:
                return i
        raise AssertionError("no such pair")

    def set_point(self, s, a: int, point) -> None:
        """The query's inputs of sensitive attribute a set to `point` (signed values as v mod r)."""
        for c, v in zip(self.card.sensitive[a].input_columns, point):
            s[5 + c] = v % R


def _set_spread(L: Layout, s, decisions):
    for t, d in enumerate(decisions):
        s[L.spread + t] = d


def _certified(L: Layout, s, eps=None):
    """A certified radius: status 0, flip 0, every slice deciding the decision (as a careful forger writes it)."""
    s[3], s[4] = 0, 0
    if eps is not None:
        s[2] = eps
    _set_spread(L, s, [s[1]] * L.S)


def _flip(L: Layout, s, slice_index=None):
    """A counterfactual flip at another slice than the query's own, radius 0."""
    own = L.own(s)
    other = slice_index if slice_index is not None else (own + 1) % L.S
    s[2], s[3], s[4] = 0, 1, other
    decisions = [s[1]] * L.S
    decisions[other] = (s[1] + 1) % L.classes
    _set_spread(L, s, decisions)


def _forge(name: str, L: Layout, honest):
    s = [int(v) for v in honest]
    lo, hi = L.card.box_lower[L.free], L.card.box_upper[L.free]
    if name == "commitment of another card":
        s[0] = (s[0] + 1) % R
    elif name == "a decision that is no class":
        s[1] = L.classes
        _set_spread(L, s, [L.classes] * L.S)
    elif name == "status 2":
        s[3] = 2
    elif name == "status -1 (r - 1)":
        s[3] = R - 1
    elif name == "eps above the bucket's cap":
        _certified(L, s, L.cap + 1)
    elif name == "eps + r (not canonical)":
        s[2] += R
    elif name == "a flip with a radius":
        _flip(L, s)
        s[2] = 1
    elif name == "a certified radius naming a flip slice":
        _certified(L, s)
        s[4] = 1
    elif name == "a flip slice outside the slices":
        _flip(L, s)
        s[4] = L.S
    elif name == "query below the box":
        s[5 + L.free] = (lo - 1) % R
    elif name == "query above the box":
        s[5 + L.free] = (hi + 1) % R
    elif name == "query at -2^200":
        s[5 + L.free] = (-(1 << 200)) % R
    elif name == "query at r + its value":
        s[5 + L.free] += R
    elif name == "a sensitive value outside its domain":
        s[5 + L.column] = (L.point[0] + 1) % R
    elif name == "a slice's decision that is no class":
        _flip(L, s)
        s[L.spread + s[4]] = L.classes
    elif name == "zero margin buckets":
        s[L.spread + L.S] = 0
    elif name == "more margin buckets than slices":
        s[L.spread + L.S] = L.S + 1
    elif name == "the own slice deciding otherwise":
        _flip(L, s)
        s[L.spread + L.own(s)] = (s[1] + 1) % L.classes
    elif name == "a certified radius with slices deciding otherwise":
        _certified(L, s)
        s[L.spread + (L.own(s) + 1) % L.S] = (s[1] + 1) % L.classes
    elif name == "delta above the card's cap":
        s[L.persistence] = L.card.persistence_delta_cap + 1
    elif name == "lower bound above upper":
        i = L.pair_index(s, own=False)
        s[L.persistence + 1 + 2 * i], s[L.persistence + 2 + 2 * i] = 5, 4
    elif name == "a bound no proof can state":
        i = L.pair_index(s, own=False)
        s[L.persistence + 1 + 2 * i] = (-PERSISTENCE_BOUND_LIMIT) % R
    elif name == "own value's bounds excluding 0":
        i = L.pair_index(s, own=True)
        s[L.persistence + 1 + 2 * i], s[L.persistence + 2 + 2 * i] = 1, 2
    elif name == "one signal short":
        s = s[:-1]
    elif name == "one signal more":
        s = [*s, 0]
    else:
        raise AssertionError(name)
    return s


FORGERIES = ["commitment of another card", "a decision that is no class", "status 2", "status -1 (r - 1)",
             "eps above the bucket's cap", "eps + r (not canonical)", "a flip with a radius",
             "a certified radius naming a flip slice", "a flip slice outside the slices", "query below the box",
             "query above the box", "query at -2^200", "query at r + its value",
             "a sensitive value outside its domain", "a slice's decision that is no class", "zero margin buckets",
             "more margin buckets than slices", "the own slice deciding otherwise",
             "a certified radius with slices deciding otherwise", "delta above the card's cap",
             "lower bound above upper", "a bound no proof can state", "own value's bounds excluding 0",
             "one signal short", "one signal more"]

# Claims an honest certificate can have (both verifiers accept them; only the proof can refuse them).
POSSIBLE = ["the honest signals", "eps at the cap", "a flip at another slice", "query at the box's corner",
            "one margin bucket", "delta 0", "wide persistence bounds"]


def _possible(name: str, L: Layout, honest):
    s = [int(v) for v in honest]
    if name == "eps at the cap":
        _certified(L, s, L.cap)
    elif name == "a flip at another slice":
        _flip(L, s)
    elif name == "query at the box's corner":
        s[5 + L.free] = L.card.box_lower[L.free] % R
    elif name == "one margin bucket":
        s[L.spread + L.S] = 1
    elif name == "delta 0":
        s[L.persistence] = 0
    elif name == "wide persistence bounds":
        for i in range(len(L.card.persistence_pairs())):
            s[L.persistence + 1 + 2 * i] = (-PERSISTENCE_BOUND_LIMIT + 1) % R
            s[L.persistence + 2 + 2 * i] = PERSISTENCE_BOUND_LIMIT - 1
    return s


def one_hot_bundles():
    """A card whose sensitive attributes are one-hot (three inputs; one, a value dropped; two, a value
    dropped: tests/page_cases.py) and two certificates under it: certified, and a flip."""
    from page_cases import one_hot_bank, one_hot_certificate

    one_hot = one_hot_bank()
    return one_hot.card, [one_hot_certificate(one_hot), one_hot_certificate(one_hot, flip=4)]


@pytest.fixture(scope="module", params=["german", "one-hot"])
def whole(request, evm):
    """A card with a whole-statement bucket and the three lenses, with its registry deployed: the German
    bank's (each sensitive attribute one input) or a card with one-hot sensitive attributes; its honest
    certificates last."""
    if request.param == "german":
        bank = request.getfixturevalue("bank")
        card, bundles = bank.card, list(bank.bundles)
    else:
        card, bundles = one_hot_bundles()
    bundle = bundles[0]
    assert card.spread is not None and card.persistence is not None
    chain = Chain()
    registry, verifiers = deploy_card(chain, card)
    return chain, registry, verifiers, card, bundle, Layout(card, bundle.bucket), bundles


def test_the_registry_accepts_honest_certificates(whole):
    from verifier_client.verify import verify_bundle

    chain, registry, _, card, _, _, bundles = whole
    for bundle in bundles:
        assert verify_bundle(bundle, card).valid
        a, b, c = proof_calldata(bundle.proof)
        ok, gas = chain.call(registry, CERTIFY, CERTIFY_TYPES, [bundle.bucket, a, b, c,
                                                               [int(v) for v in bundle.public_signals]])
        # 477,062 gas measured for the German card's 33 public inputs; each further input adds an ecMul and an
        # ecAdd (6,150) and its claims' checks (the one-hot card's 50 take 640,226).
        assert ok and gas < 1.2 * (477_062 + 10_000 * (len(bundle.public_signals) - 33)), gas
        signals = [int(v) for v in bundle.public_signals]
        assert view(chain, registry, CHECK, ["string", "uint256[]"], [bundle.bucket, signals])


@pytest.mark.parametrize("forgery", FORGERIES)
def test_a_forged_claim_is_refused_by_both_before_any_pairing(whole, forgery):
    chain, registry, _, card, bundle, L, _ = whole
    signals = _forge(forgery, L, bundle.public_signals)
    assert not python_ok(signals, card, bundle.bucket)
    assert not view(chain, registry, CHECK, ["string", "uint256[]"], [bundle.bucket, signals])
    a, b, c = proof_calldata(bundle.proof)
    if all(v < 1 << 256 for v in signals):
        ok, gas = chain.call(registry, CERTIFY, CERTIFY_TYPES, [bundle.bucket, a, b, c, signals])
        assert not ok and gas < NO_PAIRING, gas  # refused for its claims: no pairing ran


@pytest.mark.parametrize("claim", POSSIBLE)
def test_possible_claims_pass_both_and_only_the_proof_decides(whole, claim):
    chain, registry, _, card, bundle, L, _ = whole
    signals = _possible(claim, L, bundle.public_signals)
    assert python_ok(signals, card, bundle.bucket)
    assert view(chain, registry, CHECK, ["string", "uint256[]"], [bundle.bucket, signals])
    a, b, c = proof_calldata(bundle.proof)
    ok, gas = chain.call(registry, CERTIFY, CERTIFY_TYPES, [bundle.bucket, a, b, c, signals])
    assert ok == (signals == [int(v) for v in bundle.public_signals])
    assert gas > 200_000  # the pairing ran


def test_random_signal_vectors_get_the_same_verdict_from_both(whole):
    """A differential fuzz: honest signals with one or two entries set to values at every rule's edges."""
    chain, registry, _, card, bundle, L, _ = whole
    rng = random.Random(20261128)
    honest = [int(v) for v in bundle.public_signals]
    edges = sorted({0, 1, 2, L.S - 1, L.S, L.S + 1, L.classes, L.cap, L.cap + 1, R - 1, R - 2,
                    card.persistence_delta_cap, card.persistence_delta_cap + 1, PERSISTENCE_BOUND_LIMIT - 1,
                    PERSISTENCE_BOUND_LIMIT, R - PERSISTENCE_BOUND_LIMIT, R - PERSISTENCE_BOUND_LIMIT + 1,
                    *(v % R for v in card.box_lower), *((v - 1) % R for v in card.box_lower),
                    *(v % R for v in card.box_upper), *((v + 1) % R for v in card.box_upper),
                    *(v % R for f in card.sensitive for p in f.points for v in p)})
    verdicts = []
    for _ in range(160):
        s = list(honest)
        for _ in range(rng.choice((1, 1, 2))):
            s[rng.randrange(len(s))] = rng.choice(edges)
        if rng.random() < 0.3 and s[3] == 0:  # the spread lens following the decision, as a careful forger writes it
            _set_spread(L, s, [s[1]] * L.S)
        expected = python_ok(s, card, bundle.bucket)
        assert view(chain, registry, CHECK, ["string", "uint256[]"], [bundle.bucket, s]) == expected, s
        verdicts.append(expected)
    assert any(verdicts) and not all(verdicts)  # both verdicts were exercised


def test_the_pairing_alone_refuses_the_honest_proof_for_every_forged_claim(whole, request):
    """No claim check in the way: the bucket's own verifier, given the real proof and an impossible claim,
    refuses it; and the statement's constraints cannot be satisfied with such claims (the circuit itself,
    on the reference statement cases), so no proof of them exists to be found."""
    if request.node.callspec.params["whole"] == "one-hot":
        pytest.skip("the one-hot card's key is a circuit's that constrains nothing: only the claims' checks refuse")
    chain, _, verifiers, _, bundle, L, _ = whole
    a, b, c = proof_calldata(bundle.proof)
    for forgery in FORGERIES:
        signals = _forge(forgery, L, bundle.public_signals)
        if len(signals) != len(bundle.public_signals) or forgery == "eps + r (not canonical)":
            continue
        ok, _ = chain.call(verifiers[bundle.bucket], VERIFY, [*PROOF_TYPES, "uint256[]"], [a, b, c, signals])
        assert not ok, forgery

    import dataclasses

    from statement_cases import case, rejected, some

    capped = case("capped")
    assert some(rejected(capped, dataclasses.replace(capped.public, eps=capped.public.eps + 1)), "eps")
    two = case("two_layer")
    assert some(rejected(two, dataclasses.replace(two.public, decision=2)), "decision")
    flip = case("flip")
    assert some(rejected(flip, dataclasses.replace(flip.public, eps=1)), "eps")


def test_unknown_bucket_and_a_bucket_name_of_another_kind_are_refused(whole):
    chain, registry, _, _, bundle, _, _ = whole
    a, b, c = proof_calldata(bundle.proof)
    signals = [int(v) for v in bundle.public_signals]
    for name in ("k1-f1", "", bundle.bucket + "-slice", bundle.bucket.upper()):
        assert not chain.call(registry, CERTIFY, CERTIFY_TYPES, [name, a, b, c, signals])[0]
    assert not view(chain, registry, CHECK_GROUPS, ["string", "uint256[]"], [bundle.bucket, signals])


# ----------------------------------------------------------------------------- deployment

def _with_key(card, **points):
    bucket = card.circuits[0]
    vk = bucket.verifying_key.model_copy(update=points)
    return card.model_copy(update={"circuits": (bucket.model_copy(update={"verifying_key": vk}), *card.circuits[1:])})


def _negated(point):
    (x, (y_re, y_im), z) = point
    return (x, (str((Q - int(y_re)) % Q), str((Q - int(y_im)) % Q)), z)


@pytest.mark.parametrize("degenerate", ["delta = gamma", "delta = -gamma"])
def test_a_degenerate_key_gets_no_registry(bank, evm, tmp_path, degenerate):
    from prover_service.cli import main as fairproof

    vk = bank.card.circuits[0].verifying_key
    delta = vk.vk_gamma_2 if degenerate == "delta = gamma" else _negated(vk.vk_gamma_2)
    bad = _with_key(bank.card, vk_delta_2=delta)
    with pytest.raises(KeyRefused, match="delta equals"):
        registry_source(bad)
    path = tmp_path / "card.json"
    path.write_text(bad.canonical_json())
    assert fairproof(["export-solidity", "--card", str(path), "--out", str(tmp_path / "sol")]) != 0
    assert not (tmp_path / "sol" / "FairProofRegistry.sol").exists()
    # The constructor refuses it too, were the source written by hand without the Python check.
    chain = Chain()
    with pytest.raises(DeploymentRefused, match=f"degenerate key: {degenerate.replace('delta = ', 'delta equals ')}"):
        deploy_card(chain, bad, check_keys=False)


def test_the_constructor_refuses_verifiers_that_are_not_the_cards(bank, evm):
    card = bank.card
    compiled, verifiers = compile_card(card)
    chain = Chain()
    addresses = [chain.deploy(compiled[v.contract].bytecode) for v in verifiers]
    registry = chain.deploy(compiled["FairProofRegistry"].bytecode, ["address[]"], [addresses])
    assert registry
    # another card's key (here: alpha doubled, a valid key the card does not have) behind the bucket's name
    other = _with_key(card, vk_alpha_1=_double_alpha(card))
    other_compiled, other_verifiers = compile_card(other, check_keys=False)
    impostor = chain.deploy(other_compiled[other_verifiers[0].contract].bytecode)
    with pytest.raises(DeploymentRefused, match="not the card's key"):
        chain.deploy(compiled["FairProofRegistry"].bytecode, ["address[]"], [[impostor, *addresses[1:]]])
    with pytest.raises(DeploymentRefused, match="one verifier per bucket"):  # a missing verifier
        chain.deploy(compiled["FairProofRegistry"].bytecode, ["address[]"], [addresses[:-1]])


def _double_alpha(card):
    from circuits.backends import get_backend

    x, y, z = card.circuits[0].verifying_key.vk_alpha_1
    doubled = get_backend().g1_mul((int(x), int(y)), 2)
    return (str(doubled[0]), str(doubled[1]), z)


def test_registry_names_every_circuit_in_the_cards_order(bank):
    source = registry_source(bank.card)
    for v in card_verifiers(bank.card):
        assert f'keccak256("{v.bucket}")' in source
    assert bank.card.digest() in source and bank.card.commitment in source


def test_card_text_cannot_write_code_into_the_registry(bank):
    """The card is the bank's: a feature or model name with a line break stays inside its comment."""
    card = bank.card
    names = list(card.feature_names)
    names[0] = "age\n    function steal() external {}\n//"
    forged = card.model_copy(update={"feature_names": tuple(names), "model_id": "m\nfunction x() external {}"})
    source = registry_source(forged)
    assert not any(line.lstrip().startswith("function steal") or line.lstrip().startswith("function x")
                   for line in source.splitlines())
