"""The bound radius's circuit (statement/bound_radius.py) against its plaintext twin, with CROWN's fixed
slopes (alpha_bits 0, the statement of cards made before optimised slopes) and with optimised ones, and
every dishonest prover's choice refused: an unsound slope, a bound rounded the wrong way, a stable neuron
that is not, negative or missing box multipliers, a norm or radius term too small, an eps beyond the bound,
other weights, another decision. A Groth16 proof of it verifies, and with eps + 1 it does not. (Optimised
slopes outside [0, 1] are refused in test_statement_malicious.py.)"""
from __future__ import annotations

import dataclasses
import json
import random

import pytest

import statement.bound_radius as circuit
from circuits.backends import get_backend
from circuits.builder import ConstraintSystem
from circuits.groth16 import check_proof, prove, r1cs_digest, setup
from fairness.slope_plans import DEFAULT_ALPHA_BITS
from fairness.bound_radius import CERTIFIED, FLIP, bound_certificate, certifies, layer_bounds, _InputSet
from statement.adapter import model_commitment, statement_inputs, statement_shape
from statement.circuit import build_statement, statement_relation
from statement.witness import STATUS_FLIP, StatementPublic
from tests.fairness_toy_models import random_model, random_query
from statement_cases import unsatisfied_labels

SALT = 0xB0D


def case(seed: int, hidden=(4, 2), n_classes: int = 2, n_queries: int = 6, need_unstable: bool = False,
         alpha_bits: int = DEFAULT_ALPHA_BITS):
    """(model, shape, [(public, witness)]) of certified queries (with an unstable neuron at eps, if asked), the
    slopes optimised at alpha_bits (0: CROWN's)."""
    model = random_model(seed, n_inputs=5, hidden=hidden, n_classes=n_classes)
    shape = statement_shape(model, region_slots=1, farkas_slots=1, eps_bits=16, radius="bound", alpha_bits=alpha_bits)
    rng = random.Random(seed)
    out = []
    while len(out) < n_queries:
        q = random_query(model, rng)
        cert = bound_certificate(model, q, eps_bits=16, alpha_bits=alpha_bits)
        if cert.status != CERTIFIED or cert.capped:
            continue
        if need_unstable:
            bounds = layer_bounds(model, _InputSet(model, q, cert.eps, 16))
            if not any(l < 0 < u for b in bounds for l, u in zip(b.lower, b.upper)):
                continue
        out.append(statement_inputs(model, SALT, cert.certificate(model), shape))
    return model, shape, out


def build(shape, public, witness) -> ConstraintSystem:
    cs = ConstraintSystem(with_values=True, strict=False)
    build_statement(cs, shape, public, witness)
    return cs


def satisfied(cs) -> bool:
    return cs.compile(wire_names=False).is_satisfied(cs.witness())


def with_eps(public: StatementPublic, eps: int) -> StatementPublic:
    return dataclasses.replace(public, eps=eps)


@pytest.mark.parametrize("alpha_bits", [0, DEFAULT_ALPHA_BITS])
@pytest.mark.parametrize("seed, hidden, n_classes", [(23, (4, 2), 2), (8, (6, 4), 3), (4, (8, 4), 2)])
def test_the_circuit_proves_exactly_what_the_plaintext_bound_proves(seed, hidden, n_classes, alpha_bits):
    model, shape, cases = case(seed, hidden, n_classes, n_queries=3, alpha_bits=alpha_bits)
    relation = statement_relation(shape)
    for public, witness in cases:
        cs = build(shape, public, witness)
        assert satisfied(cs)
        assert r1cs_digest(cs.compile(wire_names=False)) == r1cs_digest(relation)  # anyone rebuilds it from the shape
        for eps in (public.eps + 1, public.eps + 64, public.eps * 2):
            plain = certifies(model, public.query, public.decision, eps, 16, alpha_bits)
            assert satisfied(build(shape, with_eps(public, eps), witness)) == plain
            assert not plain or eps <= public.eps  # the search's eps is the largest its slopes prove, here


def test_optimised_slopes_prove_at_least_crowns_radius_and_cost_few_constraints():
    """The same queries with CROWN's slopes and with optimised ones: never a smaller eps, a larger one on some,
    for a few per cent more constraints (the slopes' range checks; the bound's other checks are the same)."""
    gained = 0
    for seed, hidden, n_classes in [(23, (4, 2), 2), (8, (6, 4), 3)]:
        _, fixed, crown = case(seed, hidden, n_classes, n_queries=3, alpha_bits=0)
        _, optimised, alpha = case(seed, hidden, n_classes, n_queries=3)
        for (c, _), (a, _) in zip(crown, alpha):
            assert c.query == a.query and a.eps >= c.eps
            gained += a.eps > c.eps
        sizes = [statement_relation(s).n_constraints for s in (fixed, optimised)]
        assert sizes[0] < sizes[1] < 1.15 * sizes[0]
    assert gained


def _dishonest(monkeypatch, name, fn):
    monkeypatch.setattr(circuit, name, fn)


def _refused_with(monkeypatch, shape, public, witness, name, fn, where: str):
    _dishonest(monkeypatch, name, fn)
    cs = build(shape, public, witness)
    assert not satisfied(cs)
    labels = unsatisfied_labels(cs)
    assert any(where in label for label in labels), labels
    monkeypatch.undo()


def test_unsound_upper_lines_and_stability_claims_are_refused(monkeypatch):
    """With optimised lower slopes the relaxation chooses the upper line and the mode alone."""
    model, shape, cases = case(23, n_queries=2, need_unstable=True)
    public, witness = cases[0]
    honest = circuit.upper_hint
    assert satisfied(build(shape, public, witness))

    def shallow_slope(l, u):  # the upper line one step too flat: below ReLU at u
        on, off, t = honest(l, u)
        return [on, off, t - 1 if t else t]

    def always_on(l, u):  # "active" whatever l: h = z, which is wrong where z < 0
        return [1, 0, 0]

    def always_off(l, u):  # "dead" whatever u: h = 0, wrong where z > 0
        return [0, 1, 0]

    for fn in (shallow_slope, always_on, always_off):
        _refused_with(monkeypatch, shape, public, witness, "upper_hint", fn, "neuron")


def test_unsound_slopes_and_relaxations_are_refused(monkeypatch):
    model, shape, cases = case(23, n_queries=2, need_unstable=True, alpha_bits=0)
    public, witness = cases[0]
    honest = circuit.mode_hint

    def shallow_slope(l, u):  # the upper line one step too flat: below ReLU at u
        on, off, alpha, t = honest(l, u)
        return [on, off, alpha, t - 1 if t else t]

    def always_on(l, u):  # "active" whatever l: h = z, which is wrong where z < 0
        return [1, 0, 0, 0]

    def always_off(l, u):  # "dead" whatever u: h = 0, wrong where z > 0
        return [0, 1, 0, 0]

    for fn in (shallow_slope, always_on, always_off):
        _refused_with(monkeypatch, shape, public, witness, "mode_hint", fn, "neuron")


@pytest.mark.parametrize("alpha_bits", [0, DEFAULT_ALPHA_BITS])
def test_bounds_rounded_the_wrong_way_are_refused(monkeypatch, alpha_bits):
    model, shape, cases = case(23, n_queries=1, alpha_bits=alpha_bits)
    public, witness = cases[0]
    honest = circuit.floor_hint

    def ceiling(scale):  # l one above the floor (and u one below the ceiling): no longer bounds
        floor = honest(scale)
        return lambda v: [floor(v)[0] + 1]

    def cut(scale):  # bounds that cut far into the ReLU's input range
        floor = honest(scale)
        return lambda v: [floor(v)[0] + 1000]

    _refused_with(monkeypatch, shape, public, witness, "floor_hint", ceiling, "neuron")
    _refused_with(monkeypatch, shape, public, witness, "floor_hint", cut, "neuron")


def test_bad_multipliers_norms_and_radius_terms_are_refused(monkeypatch):
    model, shape, cases = case(23, n_queries=1)
    public, witness = cases[0]
    honest_multipliers, honest_norm, honest_radius = circuit.multiplier_hint, circuit.norm_hint, circuit.radius_hint

    def negative(q, lo, hi, eps):  # a negative multiplier turns the box's inequality around
        fn = honest_multipliers(q, lo, hi, eps)
        return lambda *a: [v - 5 for v in fn(*a)]

    def short_norm(*reduced):
        return [honest_norm(*reduced)[0] - 1]

    def short_radius(scale_bits):
        fn = honest_radius(scale_bits)
        return lambda eps, norm: [fn(eps, norm)[0] - 1]

    _refused_with(monkeypatch, shape, public, witness, "multiplier_hint", negative, "")
    _refused_with(monkeypatch, shape, public, witness, "norm_hint", short_norm, "")
    _refused_with(monkeypatch, shape, public, witness, "radius_hint", short_radius, "")


def test_other_weights_another_decision_and_an_eps_beyond_the_cap_are_refused():
    model, shape, cases = case(23, n_queries=1)
    public, witness = cases[0]
    weights = [list(map(list, layer)) for layer in witness.weights]
    weights[-1][public.decision][0] += 1
    other = dataclasses.replace(witness, weights=tuple(tuple(map(tuple, layer)) for layer in weights))
    cs = build(shape, public, other)
    assert not satisfied(cs) and any("commitment" in label for label in unsatisfied_labels(cs))
    n = model.net.n_classes
    lying = dataclasses.replace(public, decision=(public.decision + 1) % n)
    assert not satisfied(build(shape, lying, witness))
    assert not satisfied(build(shape, with_eps(public, shape.eps_cap + 1), witness))


def test_a_groth16_proof_verifies_and_eps_plus_one_does_not():
    backend = get_backend()
    model, shape, cases = case(23, n_queries=1)
    public, witness = cases[0]
    relation = statement_relation(shape)
    pk, vk = setup(relation, backend)
    cs = build(shape, public, witness)
    proof = prove(pk, relation, cs.witness(), backend)
    signals = public.field_elements()
    assert check_proof(vk, signals, proof, backend).ok
    assert not check_proof(vk, [*signals[:2], signals[2] + 1, *signals[3:]], proof, backend).ok
    assert not check_proof(vk, [signals[0], (signals[1] + 1) % 2, *signals[2:]], proof, backend).ok
    assert not check_proof(vk, [*signals[:3], 1, 1, *signals[5:]], proof, backend).ok  # a flip instead


def test_flips_are_proved_and_a_flip_the_model_does_not_make_is_refused():
    model = random_model(23, n_inputs=5, hidden=(4, 2))
    shape = statement_shape(model, region_slots=1, farkas_slots=1, eps_bits=16, radius="bound")
    commitment = model_commitment(model, SALT, shape)
    rng = random.Random(5)
    flips = certified = 0
    for _ in range(12):
        q = random_query(model, rng)
        cert = bound_certificate(model, q, eps_bits=16)
        public, witness = statement_inputs(model, SALT, cert.certificate(model), shape)
        if cert.status == FLIP:
            assert public.status == STATUS_FLIP and public.flip_slice == cert.flip_slice
            assert satisfied(build(shape, public, witness))
            assert not satisfied(build(shape, dataclasses.replace(public, eps=1), witness))  # a flip is radius 0
            flips += 1
        else:
            for s in range(len(model.slices())):  # no slice of a certified query flips
                assert not satisfied(build(shape, StatementPublic(commitment, cert.decision, 0, STATUS_FLIP, s,
                                                                  tuple(q)), witness))
            certified += 1
    assert flips and certified


@pytest.fixture(scope="module")
def bound_bank(bank, tmp_path_factory):
    """The bank's German (4,2) model (both lenses) proving bound-radius certificates, on a copy of its model."""
    from bank_fixtures import copy_of_bank_model
    from prover_service.bucket_keys import SinglePartyKeySetup
    from prover_service.proving import Prover

    root, workspace, db = copy_of_bank_model(bank, tmp_path_factory, "bound")
    prover = Prover(workspace, db, get_backend(), key_setup=SinglePartyKeySetup(), radius="bound")
    from offline_precompute.certify import query_from_record

    bundles = [prover.prove(query_from_record(workspace.artifact, prover.model, r)).bundle for r in bank.records]
    yield prover, bundles
    db.dispose()


def test_bound_certificates_are_proved_verified_and_said_to_be_bounds(bank, bound_bank, tmp_path, capsys):
    from bank_fixtures import forged
    from commitments.bundle import Radius
    from verifier_client.cli import main as verify_main
    from verifier_client.verify import verify_bundle

    prover, bundles = bound_bank
    card = prover.card
    assert [b.bucket for b in card.circuits if b.shape.radius == "bound"] == ["k1-f1-bound"]
    for bundle, record in zip(bundles, bank.records):
        verdict = verify_bundle(bundle, card)
        assert verdict and verdict.radius == "bound" and bundle.bucket == "k1-f1-bound"
        assert bundle.spread is not None and bundle.persistence is not None  # the card's lenses, proved too
        region = next(b for b in bank.bundles if b.query == bundle.query)
        assert bundle.decision == region.decision and bundle.spread == region.spread  # the same model's claims
        bigger = forged(bundle, eps=Radius(numerator=bundle.eps.numerator + 1, scale_bits=bundle.eps.scale_bits))
        assert not verify_bundle(bigger, card)
    (tmp_path / "b.json").write_text(bundles[0].model_dump_json())
    (tmp_path / "c.json").write_text(card.canonical_json())
    assert verify_main([str(tmp_path / "b.json"), "--card", str(tmp_path / "c.json"),
                        "--pin-file", str(tmp_path / "pins")]) == 0
    out = capsys.readouterr().out
    assert "lower bound (bound: linear bound propagation" in out and "Keys of bucket k1-f1-bound" in out
    # The region statement's key cannot verify a bound proof, nor the other way round.
    fast = next(b.bucket for b in card.circuits if b.shape.radius == "fast")
    relabelled = bundles[0].model_copy(update={"bucket": fast})
    assert not verify_bundle(relabelled, card)


def test_hybrid_proves_the_exact_radius_within_its_budget_and_size_and_the_bound_beyond(bank, bound_bank):
    from offline_precompute.certify import query_from_record
    from prover_service.bucket_keys import SinglePartyKeySetup
    from prover_service.proving import Prover
    from verifier_client.verify import verify_bundle

    bound_prover, _ = bound_bank
    radii, said = {}, {}
    # (budget in seconds, largest exact statement in constraints): time enough and room enough, too little
    # time, and time enough but a statement larger than the deployment proves online
    for budget, largest in ((120.0, 10**7), (0.001, 10**7), (120.0, 1000)):
        heard: list[str] = []
        prover = Prover(bound_prover.workspace, bound_prover.db, get_backend(), key_setup=SinglePartyKeySetup(),
                        radius="hybrid", exact_budget=budget, exact_max_constraints=largest, progress=heard.append)
        query = query_from_record(prover.workspace.artifact, prover.model, bank.records[0])
        bundle = prover.prove(query).bundle
        verdict = verify_bundle(bundle, prover.card)
        assert verdict
        radii[budget, largest] = (verdict.radius, bundle.eps.numerator, bundle.bucket)
        said[budget, largest] = " ".join(heard)
    exact, late, large = radii[120.0, 10**7], radii[0.001, 10**7], radii[120.0, 1000]
    assert exact[0] == "exact" and exact[2].endswith("-exact")
    assert late[0] == "bound" and late[2] == "k1-f1-bound" and "within 0.001 s" in said[0.001, 10**7]
    assert large[0] == "bound" and large[2] == "k1-f1-bound" and "more than 1,000 constraints" in said[120.0, 1000]
    assert late[1] == large[1] <= exact[1]  # the bound radius never exceeds the exact one


def test_hybrid_searches_the_bound_in_a_child_and_here_when_the_child_gives_nothing(bank, bound_bank, monkeypatch):
    """The bound radius a hybrid prover proves comes from its search child; a child that dies without an answer
    (or hangs past the deadline) costs the search again in the prover, never a wrong or missing certificate."""
    import os

    import prover_service.proving as proving
    from offline_precompute.certify import query_from_record
    from prover_service.proving import Prover
    from verifier_client.verify import verify_bundle

    import fairness.bound_radius as bound_radius

    bound_prover, _ = bound_bank
    searches_here: list[int] = []  # searches run in this process (a child's are in its own copy of the list)
    real = bound_radius._search

    def counted(*args):
        searches_here.append(os.getpid())
        return real(*args)

    monkeypatch.setattr(bound_radius, "_search", counted)
    monkeypatch.setattr(bound_radius, "_SEARCHES", type(bound_radius._SEARCHES)())
    prover = Prover(bound_prover.workspace, bound_prover.db, get_backend(), radius="hybrid", exact_budget=0.001)
    query = query_from_record(prover.workspace.artifact, prover.model, bank.records[1])
    from_child = prover.prove(query).bundle
    assert verify_bundle(from_child, prover.card) and from_child.bucket == "k1-f1-bound"
    assert searches_here == []  # certificate and witness both took the child's search

    monkeypatch.setattr(proving, "searched_radius", lambda *args: os._exit(3))
    monkeypatch.setattr(bound_radius, "_SEARCHES", type(bound_radius._SEARCHES)())  # forget the child's answer
    from_here = prover.prove(query).bundle
    assert verify_bundle(from_here, prover.card) and from_here.eps == from_child.eps
    assert searches_here == [os.getpid()]  # the dead child's search, made here once


def test_the_page_verifies_bound_certificates_in_the_verifiers_words(bound_bank, tmp_path, capsys):
    from page_cases import PageCase, node_verdicts
    from verifier_client.cli import main as verify_main

    prover, bundles = bound_bank
    card_text = prover.card.canonical_json()
    (tmp_path / "b.json").write_text(bundles[0].model_dump_json())
    (tmp_path / "c.json").write_text(card_text)
    assert verify_main([str(tmp_path / "b.json"), "--card", str(tmp_path / "c.json"), "--pin-file",
                        str(tmp_path / "pins")]) == 0
    printed = capsys.readouterr().out.splitlines()
    data = bundles[0].model_dump(mode="json")
    data["eps"]["numerator"] += 1
    data["public_signals"][2] = str(int(data["public_signals"][2]) + 1)
    honest, tampered = node_verdicts([PageCase("bound", bundles[0].model_dump_json(), card_text),
                                      PageCase("bound, eps + 1", json.dumps(data), card_text)])
    report = honest["report"].splitlines()
    assert honest["verdict"] == "VALID" and report == printed[:len(report)]
    assert any("bound radius: linear bound propagation" in line for line in report)
    assert tampered["verdict"] == "INVALID" and "proof rejected" in tampered["reason"]


def test_a_card_published_before_optimised_slopes_keeps_its_keys(bank, tmp_path_factory, monkeypatch):
    """A card whose k1-f1-bound bucket has fixed slopes (alpha_bits 0, no such field on its shape) goes on
    proving CROWN's radius with those keys; the same model committed today gets optimised slopes, whose
    radius is never smaller. Both verify."""
    import prover_service.bucket_keys as bucket_keys
    from bank_fixtures import copy_of_bank_model
    from offline_precompute.certify import query_from_record
    from prover_service.bucket_keys import SinglePartyKeySetup
    from prover_service.proving import Prover
    from verifier_client.verify import verify_bundle

    eps = {}
    for name, default in (("before", 0), ("today", DEFAULT_ALPHA_BITS)):
        root, workspace, db = copy_of_bank_model(bank, tmp_path_factory, f"slopes-{name}")
        monkeypatch.setattr(bucket_keys, "DEFAULT_ALPHA_BITS", default)
        prover = Prover(workspace, db, get_backend(), key_setup=SinglePartyKeySetup(), radius="bound")
        query = query_from_record(workspace.artifact, prover.model, bank.records[0])
        bundle = prover.prove(query).bundle
        bucket = prover.card.bucket("k1-f1-bound")
        assert bucket.shape.alpha_bits == default
        assert ("alpha_bits" in bucket.shape.model_dump()) == bool(default)  # the old spelling, the old digest
        assert verify_bundle(bundle, prover.card)
        if name == "before":  # the card now publishes the fixed bucket: a new prover keeps to it
            monkeypatch.setattr(bucket_keys, "DEFAULT_ALPHA_BITS", DEFAULT_ALPHA_BITS)
            again = Prover(workspace, db, get_backend(), key_setup=SinglePartyKeySetup(), radius="bound")
            assert again.shape_for(1, 1, "bound").alpha_bits == 0
            repeat = again.prove(query).bundle
            assert verify_bundle(repeat, again.card) and repeat.eps == bundle.eps
            assert again.card.bucket("k1-f1-bound") == bucket
        eps[name] = bundle.eps.numerator
        db.dispose()
    assert eps["today"] >= eps["before"]
