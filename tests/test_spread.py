"""The counterfactual spread lens: plaintext against brute force, the circuit against the plaintext,
and every way of lying about it refused (constraints, claims, the customer's verifier)."""
from __future__ import annotations

import dataclasses
import itertools
import random
from fractions import Fraction

import pytest

from circuits.builder import ConstraintSystem
from circuits.field import R
from commitments.claims import ClaimError, bundle_claims, claims_from_signals
from fairness.spread import SpreadLens, bucket_width_at, default_favourable_class, margin, spread
from fairness_toy_models import random_model, random_query
from statement.adapter import statement_inputs
from statement.spread import argmax, distinct_count, floor_div
from statement_cases import CASES, SALT, build, case, exact_case, unsatisfied_labels


# -- plaintext ---------------------------------------------------------------------------------------


def _brute_force(model, query, lens):
    """Every combination of sensitive values, the forward pass in exact rationals at real scale."""
    net = model.net
    s = net.scale_bits
    x0 = list(query)
    decisions, buckets = [], []
    width = Fraction(lens.bucket_width, 1 << net.logit_scale_bits)
    for combo in itertools.product(*(f.values for f in model.sensitive)):
        x = list(x0)
        for f, v in zip(model.sensitive, combo):
            x[f.column] = v
        h = [Fraction(v, 1 << s) for v in x]
        for l, (w, b) in enumerate(zip(net.weights, net.biases)):
            z = [sum(Fraction(wi, 1 << s) * hi for wi, hi in zip(row, h)) + Fraction(bi, 1 << (s * (l + 2)))
                 for row, bi in zip(w, b)]
            h = z if l == net.n_layers - 1 else [max(v, 0) for v in z]
        top = max(h)
        decisions.append(h.index(top))  # the first maximum: the lowest index on a tie
        others = max(v for j, v in enumerate(h) if j != lens.favourable_class)
        m = h[lens.favourable_class] - others
        buckets.append((m / width).__floor__())
    return tuple(decisions), len(set(buckets)), len(set(decisions))


@pytest.mark.parametrize("seed", range(12))
def test_spread_equals_brute_force(seed):
    rng = random.Random(seed)
    classes = 2 + seed % 2
    model = random_model(seed, n_inputs=4, hidden=(3, 2), n_classes=classes, scale_bits=8,
                         sensitive_values=(-1, 0, 1) if seed % 3 == 0 else (0, 1))
    for _ in range(15):
        query = random_query(model, rng)
        for fav in range(classes):
            for width in (Fraction(1, 64), Fraction(1, 5), Fraction(2)):
                lens = SpreadLens(fav, bucket_width_at(model, width))
                got = spread(model, query, lens)
                decisions, k, distinct = _brute_force(model, query, lens)
                assert got.decisions == decisions
                assert got.distinct_buckets == k
                assert got.distinct_decisions == distinct
                assert got.margins == tuple(margin(z, fav) for z in got.logits)


def test_spread_floor_of_negative_margins_and_gap():
    model = random_model(3, n_inputs=3, hidden=(2,), n_classes=2, scale_bits=4, sensitive_values=(0, 1))
    query = random_query(model, random.Random(1))
    lens = SpreadLens(1, 5)
    sp = spread(model, query, lens)
    for m, b in zip(sp.margins, sp.buckets):
        assert b * 5 <= m < (b + 1) * 5  # floor, also below zero
    assert sp.largest_margin_gap == Fraction(max(sp.margins) - min(sp.margins), 1 << model.net.logit_scale_bits)


def test_lens_parameters_refused():
    with pytest.raises(ValueError):
        SpreadLens(0, 0)
    with pytest.raises(ValueError):
        SpreadLens(-1, 3)
    model = random_model(0)
    with pytest.raises(ValueError):
        spread(model, random_query(model, random.Random(0)), SpreadLens(2, 1))  # no class 2
    with pytest.raises(ValueError):
        bucket_width_at(model, 0)


def test_default_favourable_class():
    assert default_favourable_class(("bad credit risk", "good credit risk")) == 1
    assert default_favourable_class(("no default", "default")) == 0
    assert default_favourable_class(("<=50K", ">50K")) == 1
    assert default_favourable_class(("reject", "maybe", "accept")) == 2


# -- gadgets in isolation ------------------------------------------------------------------------------


def _gadget(values, fn):
    cs = ConstraintSystem(with_values=True, strict=False)
    ins = [cs.private_input(f"v{i}", v % R) for i, v in enumerate(values)]
    out = fn(cs, ins)
    return cs, out


@pytest.mark.parametrize("values", [(3, 7, 7, -2), (0, 0), (-5, -9, -5), (1,)])
def test_argmax_gadget_lowest_index_on_tie(values):
    cs, (bits, top) = _gadget(values, lambda cs, ins: argmax(cs, ins, 64))
    assert cs.compile().is_satisfied(cs.witness())
    best = max(range(len(values)), key=lambda j: (values[j], -j))
    assert [cs.value_of(b) for b in bits] == [int(j == best) for j in range(len(values))]
    assert cs.signed_value_of(top) == values[best]


@pytest.mark.parametrize("value,width", [(17, 5), (-17, 5), (0, 1), (-1, 3), (1000, 1000), (-1000, 7)])
def test_floor_div_gadget(value, width):
    cs, q = _gadget([value], lambda cs, ins: floor_div(cs, ins[0], width, 2048))
    assert cs.compile().is_satisfied(cs.witness())
    assert cs.signed_value_of(q) == value // width


@pytest.mark.parametrize("values", [(1, 1, 1), (1, 2, 1, 3), (5,), (-1, 1, -1, 1, 0)])
def test_distinct_count_gadget(values):
    cs, k = _gadget(values, lambda cs, ins: distinct_count(cs, ins))
    assert cs.compile().is_satisfied(cs.witness())
    assert cs.value_of(k) == len(set(values))


def _hint_wires(cs, fragment):
    return [w for w in range(cs.n_wires) if fragment in cs.wire_name(w)]


def test_floor_div_gadget_refuses_another_quotient():
    """A forged quotient q + 1 with its remainder r - W: the remainder's range check refuses it."""
    cs, q = _gadget([17], lambda cs, ins: floor_div(cs, ins[0], 5, 2048))
    r1cs = cs.compile()
    witness = cs.witness()
    (wire,) = _hint_wires(cs, "quotient")
    for delta in (1, -1, R // 5):
        forged = list(witness)
        forged[wire] = (forged[wire] + delta) % R
        assert not r1cs.is_satisfied(forged)


def test_argmax_gadget_refuses_another_choice():
    cs, _ = _gadget([3, 7, 7], lambda cs, ins: argmax(cs, ins, 64))
    r1cs = cs.compile()
    witness = cs.witness()
    wires = _hint_wires(cs, "argmax")
    assert len(wires) == 3
    for choice in range(3):
        forged = list(witness)
        for j, w in enumerate(wires):
            forged[w] = int(j == choice)
        # The top value follows the choice (a product wire); recompute the witness honestly from it.
        assert r1cs.is_satisfied(forged) == (choice == 1)


# -- the statement with the lens -----------------------------------------------------------------------


def _with_lens(c, favourable=1, width=37):
    return dataclasses.replace(c.shape, spread_width=width, favourable_class=favourable % c.shape.n_classes)


@pytest.mark.parametrize("name", sorted(CASES))
def test_statement_proves_the_plaintext_spread(name):
    c = case(name)
    shape = _with_lens(c)
    public, witness = statement_inputs(c.model, SALT, c.cert, shape)
    sp = spread(c.model, c.cert.query, SpreadLens(shape.favourable_class, shape.spread_width))
    assert public.spread_decisions == sp.decisions and public.spread_buckets == sp.distinct_buckets
    cs = build(shape, public, witness)
    assert cs.compile().is_satisfied(cs.witness())
    assert cs.n_public == shape.n_public


@pytest.mark.parametrize("name", ["two_layer", "flip", "two_sensitive"])
def test_per_slice_statement_proves_every_slices_spread(name):
    c = exact_case(name)
    shape = dataclasses.replace(_with_lens(c), per_slice=True)
    for si in range(shape.n_slices):
        public, witness = statement_inputs(c.model, SALT, c.cert, shape, part=si)
        cs = build(shape, public, witness)
        assert cs.compile().is_satisfied(cs.witness())


def _refused(shape, public, witness):
    cs = build(shape, public, witness, strict=False)
    return unsatisfied_labels(cs)


@pytest.mark.parametrize("name", ["two_layer", "two_sensitive", "flip", "flip_three_class"])
def test_forged_bucket_count_refused(name):
    c = case(name)
    shape = _with_lens(c, width=1)
    public, witness = statement_inputs(c.model, SALT, c.cert, shape)
    for k in {public.spread_buckets - 1, public.spread_buckets + 1, 0}:
        forged = dataclasses.replace(public, spread_buckets=k)
        labels = _refused(shape, forged, witness)
        assert any(label.startswith("spread/buckets") for label in labels), labels


@pytest.mark.parametrize("name", ["flip", "flip_three_class", "two_sensitive", "three_class"])
def test_forged_counterfactual_decision_refused(name):
    c = case(name)
    shape = _with_lens(c)
    public, witness = statement_inputs(c.model, SALT, c.cert, shape)
    for s in range(shape.n_slices):
        for d in range(shape.n_classes):
            if d == public.spread_decisions[s]:
                continue
            decisions = list(public.spread_decisions)
            decisions[s] = d
            labels = _refused(shape, dataclasses.replace(public, spread_decisions=tuple(decisions)), witness)
            assert any(label.startswith(f"spread/slice{s}") for label in labels), labels


def test_statement_refuses_a_forged_quotient_wire():
    """The bank keeps the public bucket count and moves one slice's private bucket instead."""
    c = case("two_sensitive")
    shape = _with_lens(c, width=1)
    public, witness = statement_inputs(c.model, SALT, c.cert, shape)
    cs = build(shape, public, witness)
    r1cs = cs.compile()
    values = cs.witness()
    wires = [w for w in range(cs.n_wires) if "spread/slice" in cs.wire_name(w) and "quotient" in cs.wire_name(w)]
    assert len(wires) == shape.n_slices
    for w in wires:
        forged = list(values)
        forged[w] = (forged[w] + 1) % R
        assert not r1cs.is_satisfied(forged)


def test_shape_digest_unchanged_without_the_lens_and_changed_with_it():
    c = case("two_layer")
    assert "spread_width" not in c.shape.to_json()
    lens = _with_lens(c)
    assert lens.to_json()["spread_width"] == 37 and lens.digest() != c.shape.digest()
    assert lens.n_public == c.shape.n_public + c.shape.n_slices + 1
    with pytest.raises(Exception):
        dataclasses.replace(c.shape, favourable_class=1)  # a favourable class without the lens
    with pytest.raises(Exception):
        dataclasses.replace(c.shape, spread_width=1 << 200)


# -- the customer's side: claims and the verifier --------------------------------------------------------


def test_bank_bundles_carry_the_spread(bank):
    assert bank.card.spread is not None
    for bundle, record in zip(bank.bundles, bank.records):
        claims = bundle_claims(bundle, bank.card)
        assert claims.spread is not None and bundle.spread == claims.spread.readable()
        model = bank.prover.model
        lens = SpreadLens(bank.card.spread.favourable_class, bank.card.spread.bucket_width)
        sp = spread(model, bundle.query, lens)
        assert claims.spread.decisions == sp.decisions
        assert claims.spread.score_buckets == sp.distinct_buckets


def _signals_with(bundle, card, position, value):
    signals = list(bundle.public_signals)
    signals[5 + card.architecture.n_inputs + position] = str(value)
    return signals


def test_claims_refuse_spread_signals_no_proof_can_have(bank):
    card, bundle = bank.card, bank.bundles[0]
    bucket = card.bucket(bundle.bucket)
    n_slices = len(card.slices())
    C = card.architecture.n_classes
    cases = [
        (_signals_with(bundle, card, 0, C), "not a class"),  # a decision outside the classes
        (_signals_with(bundle, card, 0, R - 1), "not a class"),  # -1 in the field
        (_signals_with(bundle, card, n_slices, 0), "margin buckets"),  # no bucket at all
        (_signals_with(bundle, card, n_slices, n_slices + 1), "margin buckets"),
        (_signals_with(bundle, card, 0, R + 1), "public signal"),  # not canonical
    ]
    for signals, words in cases:
        with pytest.raises(ClaimError, match=words):
            claims_from_signals(signals, card, bucket)


def test_claims_refuse_a_certified_radius_with_a_differing_slice(bank):
    card, bundle = bank.card, bank.bundles[0]
    assert bundle.status == "certified"
    bucket = card.bucket(bundle.bucket)
    own = card.slices().index(tuple(bundle.query[f.column] for f in card.sensitive))
    other = next(s for s in range(len(card.slices())) if s != own)
    flipped = 1 - bundle.decision
    with pytest.raises(ClaimError, match="every slice decides the same"):
        claims_from_signals(_signals_with(bundle, card, other, flipped), card, bucket)
    with pytest.raises(ClaimError, match="own sensitive values"):
        claims_from_signals(_signals_with(bundle, card, own, flipped), card, bucket)


def test_readable_spread_must_match_the_signals(bank):
    from commitments.bundle import CounterfactualSpread

    card, bundle = bank.card, bank.bundles[0]
    sp = bundle.spread
    lies = [
        sp.model_copy(update={"score_buckets": sp.score_buckets % len(card.slices()) + 1}),
        sp.model_copy(update={"distinct_decisions": 2}),
        sp.model_copy(update={"decision_labels": tuple(reversed(sp.decision_labels))})
        if len(set(sp.decision_labels)) > 1 else sp.model_copy(update={"decision_labels": ("x",) * len(sp.decisions)}),
    ]
    for lie in lies:
        assert lie != sp
        with pytest.raises(ClaimError, match="spread"):
            bundle_claims(bundle.model_copy(update={"spread": lie}), card)
    with pytest.raises(ClaimError, match="spread"):  # the lens dropped from the readable bundle
        bundle_claims(bundle.model_copy(update={"spread": None}), card)
    assert isinstance(sp, CounterfactualSpread)


def test_card_without_the_lens_refuses_the_lens_signals(bank):
    """A bank that re-publishes its card without the lens (or with it) changes the card digest,
    and the signal count of every bucket no longer fits: both are refused."""
    card, bundle = bank.card, bank.bundles[0]
    bare = card.model_copy(update={"spread": None})
    with pytest.raises(ClaimError):
        bundle_claims(bundle, bare)
    with pytest.raises(ClaimError, match="public inputs"):
        claims_from_signals(bundle.public_signals, bare, bare.bucket(bundle.bucket))


def test_forged_spread_signal_fails_the_pairing(bank):
    """The bank edits a counterfactual decision (and the readable field to match): the proof fails."""
    from bank_fixtures import forged
    from verifier_client.verify import verify_bundle

    card, bundle = bank.card, bank.bundles[0]
    assert verify_bundle(bundle, card).valid
    sp = bundle.spread
    k = sp.score_buckets % len(card.slices()) + 1
    lie = forged(bundle, spread=sp.model_copy(update={"score_buckets": k}).model_dump())
    assert bundle_claims(lie, card).spread.score_buckets == k  # well-formed: only the proof can catch it
    verdict = verify_bundle(lie, card)
    assert not verdict.valid


def test_verifier_prints_the_spread(bank, tmp_path, capsys):
    from verifier_client.cli import main as verify_main

    b, c = tmp_path / "bundle.json", tmp_path / "card.json"
    b.write_text(bank.bundles[0].model_dump_json())
    c.write_text(bank.card.canonical_json())
    assert verify_main([str(b), "--card", str(c), "--pin-file", str(tmp_path / "pins.json")]) == 0
    out = capsys.readouterr().out
    assert "Counterfactual spread" in out and "distinct bucket(s)" in out
    for labels in (bank.card.slice_labels(s)[1] for s in range(len(bank.card.slices()))):
        assert ", ".join(labels) in out


# -- the audit over a data set ----------------------------------------------------------------------------


def test_audit_spread_command_matches_the_lens(bank, tmp_path_factory, capsys):
    import json

    from fairness.datasets import load_dataset
    from offline_precompute.certify import query_from_record
    from prover_service.cli import main as fairproof
    from bank_fixtures import copy_of_bank_model

    root, workspace, store = copy_of_bank_model(bank, tmp_path_factory, "audit-spread")
    store.dispose()
    out = tmp_path_factory.mktemp("audit-out")
    code = fairproof(["audit", "spread", "--model", str(root), "--limit", "40", "--top", "3",
                      "--save-json", str(out / "spread.json"), "--plot", str(out / "spread.png")])
    assert code == 0
    text = capsys.readouterr().out
    assert "counterfactual spread" in text and "largest k" in text
    report = json.loads((out / "spread.json").read_text())
    model, artifact = workspace.fixed_point(), workspace.artifact
    lens = SpreadLens(bank.card.spread.favourable_class, bank.card.spread.bucket_width)
    records = load_dataset("german").records_test[:40]
    ks = [spread(model, query_from_record(artifact, model, dict(r)), lens).distinct_buckets for r in records]
    assert report["k_distribution"] == {str(k): ks.count(k) for k in range(1, len(bank.card.slices()) + 1)}
    assert report["largest"][0]["k"] == max(ks)
    assert (out / "spread.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_audit_spread_refuses_bad_options(bank, tmp_path_factory, capsys):
    from prover_service.cli import main as fairproof
    from bank_fixtures import copy_of_bank_model

    root, _, store = copy_of_bank_model(bank, tmp_path_factory, "audit-bad")
    store.dispose()
    for extra in (["--bucket-width", "0"], ["--favourable-class", "nobody"], ["--limit", "0"]):
        code = fairproof(["audit", "spread", "--model", str(root), *extra])
        err = capsys.readouterr().err
        assert code != 0 and "Traceback" not in err and err.strip(), extra


def test_a_customer_who_requires_the_spread_refuses_a_certificate_without_it(bank, tmp_path, capsys):
    import dataclasses as dc

    from verifier_client.cli import main as verify_main
    from verifier_client.verify import lens_problem, verify_bundle

    card, bundle = bank.card, bank.bundles[0]
    claims = bundle_claims(bundle, card)
    assert lens_problem(claims, ["radius", "spread"]) is None
    assert "does not prove the counterfactual spread" in lens_problem(dc.replace(claims, spread=None), ["spread"])
    assert "unknown lens" in lens_problem(claims, ["fairness"])
    bare = dc.replace(claims, spread=None)
    assert verify_bundle(bundle, card, required_lenses=["spread"]).valid
    assert not verify_bundle(bundle, card, required_lenses=["fairness"]).valid
    b, c = tmp_path / "bundle.json", tmp_path / "card.json"
    b.write_text(bundle.model_dump_json())
    c.write_text(card.canonical_json())
    pins = ["--pin-file", str(tmp_path / "pins.json")]
    assert verify_main([str(b), "--card", str(c), "--require-lens", "spread", *pins]) == 0
    capsys.readouterr()
    with pytest.raises(SystemExit):  # argparse refuses a lens this verifier does not know
        verify_main([str(b), "--card", str(c), "--require-lens", "fairness", *pins])
    assert "does not prove the counterfactual spread" in lens_problem(bare, ["radius", "spread"])
