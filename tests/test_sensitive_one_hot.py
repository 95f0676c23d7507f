"""Sensitive attributes that span several model inputs (a bank's one-hot encoding), through every layer.

A one-hot attribute is its input columns and one integer point per value; a slice is one point per
attribute, concatenated. Each acceptance below has its refusal: a point that is not one of the attribute's
(for instance (1, 1, 0) or (0, 0, 0) without a dropped value), a card whose attribute lists another
point, overlapping columns, both spellings at once, a value of the wrong length, and a persistence bound
at the customer's own value that excludes 0.
"""
from __future__ import annotations

import dataclasses
import itertools
import json
import random
from fractions import Fraction

import pytest

import onehot_bank
from bank_fixtures import forged
from circuits.field import R
from commitments.bundle import CertificateBundle, Radius
from commitments.canonical import NonCanonical
from commitments.card import ModelCard
from commitments.claims import HEAD_SIGNALS, ClaimError, claims_from_signals
from fairness.certificate import certify
from fairness.checker import check_certificate
from fairness.datasets import SensitiveFeature
from fairness.errors import CertificationError, DataError
from fairness.fixed_point import FixedPointModel, QuantisedMLP, SensitiveDomain, quantise_query, to_fixed_point
from fairness.persistence import (Flip, counterfactual_pairs, crown_bounds, g_value, perturbation_box,
                                  proved_bounds, single_attribute_flips)
from statement.shape import StatementShapeError
from verifier_client.cli import main as verify_main
from verifier_client.verify import verify_bundle

ONE = 1 << 16


# -- the attribute in the float artifact and the integer model ------------------------------------------------


def test_a_one_column_feature_keeps_the_model_json_form_and_a_wider_one_has_its_own():
    sex = SensitiveFeature.scalar("sex", 7, (0, 1), ("male", "female"))
    race = SensitiveFeature("race", (4, 5, 6), ((1, 0, 0), (0, 1, 0), (0, 0, 1)), ("a", "b", "c"))
    assert sex.to_dict() == {"name": "sex", "column": 7, "values": [0, 1], "labels": ["male", "female"]}
    assert race.to_dict() == {"name": "race", "columns": [4, 5, 6], "points": [[1, 0, 0], [0, 1, 0], [0, 0, 1]],
                              "labels": ["a", "b", "c"]}
    assert SensitiveFeature.from_dict(sex.to_dict()) == sex and SensitiveFeature.from_dict(race.to_dict()) == race
    assert (sex.column, sex.values) == (7, (0, 1))


def test_a_wider_feature_has_no_single_column_and_says_so():
    race = SensitiveFeature("race", (4, 5), ((0, 0), (1, 0), (0, 1)), ("a", "b", "c"))
    with pytest.raises(DataError, match=r"'race' spans 2 input columns \[4, 5\]"):
        race.column
    with pytest.raises(ValueError, match="'race' spans 3 input columns"):
        SensitiveDomain("race", (1, 2, 3), ((ONE, 0, 0), (0, ONE, 0)), ("a", "b")).values


@pytest.mark.parametrize("points, message", [
    (((1, 0, 0), (1, 0, 0), (0, 0, 1)), "two values have the same point"),
    (((1, 0, 0), (0, 1), (0, 0, 1)), "value 'b' has 2 integers"),
])
def test_a_feature_with_a_repeated_or_short_point_is_refused(points, message):
    with pytest.raises(DataError, match=message):
        SensitiveFeature("race", (4, 5, 6), points, ("a", "b", "c"))


def test_a_one_hot_artifact_saves_and_loads(tmp_path):
    from fairness.model import load_artifact, save_artifact

    art = onehot_bank.artifact()
    save_artifact(art, tmp_path)
    meta = json.loads((tmp_path / "model.json").read_text())
    assert [("columns" in s, "column" in s) for s in meta["sensitive"]] == [(True, False), (False, True)]
    assert load_artifact(tmp_path).sensitive == art.sensitive


def test_an_artifact_whose_sensitive_columns_are_another_attributes_inputs_is_refused(tmp_path):
    from fairness.errors import ModelError
    from fairness.model import load_artifact, save_artifact

    save_artifact(onehot_bank.artifact(), tmp_path)
    meta = json.loads((tmp_path / "model.json").read_text())
    meta["sensitive"][0]["columns"] = [2, 3, 4]  # race=b, race=c and duration
    (tmp_path / "model.json").write_text(json.dumps(meta))
    with pytest.raises(ModelError, match="sensitive feature 'race' is not at column 4"):
        load_artifact(tmp_path)


def test_the_artifact_takes_the_schema_points_and_the_integer_model_scales_them_exactly():
    art = onehot_bank.artifact()
    race, sex = art.sensitive
    assert (race.columns, race.points) == ((1, 2, 3), ((1, 0, 0), (0, 1, 0), (0, 0, 1)))
    assert (sex.columns, sex.points) == ((5,), ((0,), (1,)))
    model = to_fixed_point(art, 16)
    assert model.sensitive[0].points == ((ONE, 0, 0), (0, ONE, 0), (0, 0, ONE))
    assert model.sensitive_columns == (1, 2, 3, 5) and model.sensitive_widths == (3, 1)


def test_slices_are_the_attributes_points_concatenated_not_every_corner():
    model = to_fixed_point(onehot_bank.artifact(), 16)
    expected = [(*r, s) for r in ((ONE, 0, 0), (0, ONE, 0), (0, 0, ONE)) for s in (0, ONE)]
    assert model.slices() == expected and len(expected) == 6 != 2 ** 3 * 2
    assert model.slice_labels((0, 0, ONE, ONE)) == ("c", "male")
    assert model.slice_points((0, 0, ONE, ONE)) == ((0, 0, ONE), (ONE,))


def test_a_scalar_only_model_slices_as_before():
    sens = (SensitiveDomain.scalar("g", 0, (0, 3, 1), ("x", "y", "z")), SensitiveDomain.scalar("h", 2, (5, 4), ("p", "q")))
    net = QuantisedMLP(0, (((1, 1, 1),), ((1,), (0,))), ((0,), (0, 0)))
    model = FixedPointModel(net, (0, 0, 0), (9, 9, 9), sens)
    assert model.slices() == [tuple(c) for c in itertools.product((0, 3, 1), (5, 4))]
    assert model.sensitive_columns == (0, 2)


@pytest.mark.parametrize("race", [(1, 0, 0), (0, 1, 0), (0, 0, 1)])
def test_a_query_at_a_point_is_taken(race):
    model = to_fixed_point(onehot_bank.artifact(), 16)
    q = quantise_query(model, [0.5, *race, 0.25, 1.0])
    assert q[1:4] == tuple(v * ONE for v in race)


@pytest.mark.parametrize("race", [(1, 1, 0), (0, 0, 0), (0.5, 0.5, 0)])
def test_a_query_between_points_is_refused_naming_the_attribute(race):
    model = to_fixed_point(onehot_bank.artifact(), 16)
    with pytest.raises(DataError, match=r"sensitive feature 'race' .* at column\(s\) \[1, 2, 3\] is not a value"):
        quantise_query(model, [0.5, *race, 0.25, 1.0])


def test_a_dropped_value_is_the_all_zeros_point():
    model = to_fixed_point(onehot_bank.artifact(drop="a"), 16)
    assert model.sensitive[0].points == ((0, 0), (ONE, 0), (0, ONE)) and len(model.slices()) == 6
    assert quantise_query(model, [0.5, 0, 0, 0.25, 0.0])[1:3] == (0, 0)
    with pytest.raises(DataError, match="'race'"):
        quantise_query(model, [0.5, 1, 1, 0.25, 0.0])


def test_the_integer_model_refuses_a_point_outside_the_box():
    net = QuantisedMLP(0, (((1, 1, 1),), ((1,), (0,))), ((0,), (0, 0)))
    race = SensitiveDomain("race", (1, 2), ((0, 0), (1, 0), (0, 2)), ("a", "b", "c"))
    with pytest.raises(ValueError, match="value 'c' lies outside the box at column 2"):
        FixedPointModel(net, (0, 0, 0), (9, 1, 1), (race,))


# -- the card ------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def bank(tmp_path_factory):
    bank = onehot_bank.OneHotBank(tmp_path_factory.mktemp("onehot-bank"))
    yield bank
    bank.db.dispose()


def _card_json(card: ModelCard) -> dict:
    return json.loads(card.canonical_json())


def _read(data: dict) -> ModelCard:
    return ModelCard.from_json(json.dumps(data))


def test_the_card_writes_a_one_hot_attribute_by_its_columns_and_a_coded_one_as_before(bank):
    race, sex = _card_json(bank.card)["sensitive"]
    assert race == {"name": "race", "columns": [1, 2, 3], "values": [[ONE, 0, 0], [0, ONE, 0], [0, 0, ONE]],
                    "labels": ["a", "b", "c"]}
    assert sex == {"name": "sex", "column": 5, "values": [0, ONE], "labels": ["female", "male"]}
    assert bank.card.sensitive[0].input_columns == (1, 2, 3) and bank.card.sensitive[1].points == ((0,), (ONE,))
    assert bank.card.slices() == to_fixed_point(bank.artifact, 16).slices()
    assert ModelCard.from_json(bank.card.canonical_json()).digest() == bank.card.digest()


def test_the_cards_shape_names_the_attributes_widths(bank):
    bucket = bank.card.circuits[0]
    shape = bank.card.statement_shape_json(bucket)
    assert shape["sensitive_columns"] == [1, 2, 3, 5] and shape["sensitive_widths"] == [3, 1]
    assert len(shape["slices"]) == 6


def _race(data: dict) -> dict:
    return data["sensitive"][0]


CARD_DEFECTS = {
    "a value that is not a one-hot point of the schema": (
        lambda d: _race(d)["values"].__setitem__(1, [0, ONE, ONE]), "differ from the feature schema"),
    "two values swapped": (
        lambda d: _race(d)["values"].reverse(), "differ from the feature schema"),
    "columns overlapping another attribute": (
        lambda d: _race(d).__setitem__("columns", [1, 2, 5]), "distinct input indices"),
    "both column and columns": (
        lambda d: _race(d).__setitem__("column", 1), "either column"),
    "neither column nor columns": (
        lambda d: _race(d).pop("columns"), "either column"),
    "a value of the wrong length": (
        lambda d: _race(d)["values"].__setitem__(0, [ONE, 0]), "must be a list of 3 integers"),
    "a repeated value": (
        lambda d: _race(d)["values"].__setitem__(1, [ONE, 0, 0]), "two values are the same"),
    "a coded attribute given lists": (
        lambda d: d["sensitive"][1]["values"].__setitem__(0, [0]), "values are integers"),
    "a point beyond 2^53 - 1": (
        lambda d: _race(d)["values"].__setitem__(0, [2 ** 53, 0, 0]), r"2\^53 - 1"),
    "columns outside the inputs": (
        lambda d: _race(d).__setitem__("columns", [1, 2, 6]), "distinct input indices"),
}


def test_the_genuine_card_reads_back(bank):
    assert _read(_card_json(bank.card)) == bank.card


@pytest.mark.parametrize("name", CARD_DEFECTS)
def test_a_card_with_a_defective_attribute_is_refused(bank, name):
    edit, message = CARD_DEFECTS[name]
    data = _card_json(bank.card)
    edit(data)
    with pytest.raises(NonCanonical, match=message):
        _read(data)


def test_a_defective_card_is_unusable_to_the_customer(bank, tmp_path, capsys):
    data = _card_json(bank.card)
    _race(data)["values"][1] = [0, ONE, ONE]
    status, err = _verify(tmp_path, bank.bundles[0].model_dump_json(), json.dumps(data), capsys)
    assert status == 2 and "sensitive" in err and "Traceback" not in err


def test_a_card_without_a_schema_that_moves_the_customers_point_is_refused(bank):
    """A card that publishes no schema binds nothing else to its points: one listing another point for the
    customer's own value (race b) leaves the customer's query at no value of the attribute."""
    data = _card_json(bank.card)
    data.pop("feature_schema")
    honest = _read(data)
    _race(data)["values"][1] = [0, ONE, ONE]
    tampered = _read(data)
    assert verify_bundle(bank.bundles[0].model_copy(update={"card_digest": honest.digest()}), honest)
    verdict = verify_bundle(bank.bundles[0].model_copy(update={"card_digest": tampered.digest()}), tampered)
    assert not verdict and verdict.code == "claims.sensitive-value"


# -- the statement shape -------------------------------------------------------------------------------------


def _shape(bank):
    from prover_service.bucket_keys import shape_from_card

    return shape_from_card(bank.card, bank.card.circuits[0])


def test_the_shape_groups_the_columns_and_keeps_the_model_part_and_scalar_digests(bank):
    shape = _shape(bank)
    assert shape.attribute_widths == (3, 1) and shape.attribute_columns(0) == (1, 2, 3)
    assert "sensitive_widths" in shape.to_json() and "sensitive_widths" not in shape.model_part()
    scalar = dataclasses.replace(shape, sensitive_widths=(1, 1, 1, 1))
    assert scalar.sensitive_widths == () and "sensitive_widths" not in scalar.to_json()
    assert scalar.digest() != shape.digest() and scalar.model_digest() == shape.model_digest()


def test_the_shape_a_card_names_is_the_one_its_keys_were_made_for(bank):
    """What an auditor rebuilds from the card (audit-keys) is the prover's shape, widths included."""
    from prover_service.bucket_keys import card_shape, parse_bucket, shape_from_card

    for bucket in bank.card.circuits:
        k, f, radius = parse_bucket(bucket.bucket)
        assert shape_from_card(bank.card, bucket) == card_shape(bank.card, bank.model, k, f, radius)
    from_card = shape_from_card(bank.card, bank.card.circuits[0])
    assert dataclasses.replace(from_card, sensitive_widths=()) != from_card  # the widths are part of it


@pytest.mark.parametrize("widths", [(2, 1), (3, 2), (4, 0), (0, 4)])
def test_widths_that_do_not_cover_the_sensitive_columns_are_refused(bank, widths):
    with pytest.raises(StatementShapeError, match="sensitive_widths"):
        dataclasses.replace(_shape(bank), sensitive_widths=widths)


def test_the_persistence_pairs_are_each_attributes_points_in_lexicographic_order(bank):
    shape = _shape(bank)
    race = sorted([(ONE, 0, 0), (0, ONE, 0), (0, 0, ONE)])
    expected = [(0, p) for p in race] + [(1, (0,)), (1, (ONE,))]
    assert list(shape.persistence_pairs) == expected == bank.card.persistence_pairs()
    assert counterfactual_pairs(bank.model) == expected


# -- the persistence lens in plaintext -----------------------------------------------------------------------


def test_a_flip_changes_every_column_of_the_attribute(bank):
    q = quantise_query(bank.model, bank.artifact.preprocessor.encode(bank.records[0]))
    flips = single_attribute_flips(bank.model, q)
    slices = bank.model.slices()
    assert len(flips) == 2 + 1  # race to its two other values, sex to its other one
    for f in flips:
        source, target = bank.model.slice_points(slices[f.source]), bank.model.slice_points(slices[f.target])
        assert [a for a in range(2) if source[a] != target[a]] == [f.attribute]
    to_c = next(f for f in flips if bank.model.slice_labels(slices[f.target]) == ("c", "female"))
    assert bank.model.slice_points(slices[to_c.target])[0] == (0, 0, ONE)


def test_the_proved_bounds_enclose_the_gap_of_every_counterfactual_point(bank):
    model, rng = bank.model, random.Random(0)
    q = quantise_query(model, bank.artifact.preprocessor.encode(bank.records[1]))
    numeric = bank.card.persistence.columns
    delta = bank.card.persistence.default_delta
    box = perturbation_box(model, q, numeric, Fraction(delta, ONE))
    scale = 1 << model.net.logit_scale_bits
    slices = model.slices()
    own = model.slice_points(model.query_slice(q))
    for (a, point), (lower, upper) in zip(counterfactual_pairs(model), proved_bounds(model, q, 1, numeric, delta)):
        target = tuple(point if b == a else own[b] for b in range(len(own)))
        flip = Flip(a, slices.index(model.query_slice(q)), slices.index(tuple(v for p in target for v in p)))
        crown = crown_bounds(model, 1, flip, box)
        assert Fraction(lower, scale) <= crown.lower and crown.upper <= Fraction(upper, scale)
        for _ in range(20):
            x = [Fraction(rng.randint(lo, hi), ONE) for lo, hi in zip(box.lower, box.upper)]
            assert Fraction(lower, scale) <= g_value(model, 1, flip, x) <= Fraction(upper, scale)
        if point == own[a]:
            assert lower <= 0 <= upper


# -- certificates end to end ---------------------------------------------------------------------------------


def _verify(tmp_path, bundle_text: str, card_text: str, capsys, *extra: str) -> tuple[int, str]:
    b, c = tmp_path / "bundle.json", tmp_path / "card.json"
    b.write_text(bundle_text)
    c.write_text(card_text)
    status = verify_main([str(b), "--card", str(c), "--pin-file", str(tmp_path / "pins.json"), *extra])
    captured = capsys.readouterr()
    return status, captured.out + captured.err


def test_both_customers_verify_with_every_lens(bank, tmp_path, capsys):
    for i, (bundle, record) in enumerate(zip(bank.bundles, bank.records)):
        (tmp_path / f"record{i}.json").write_text(json.dumps(record))
        status, out = _verify(tmp_path, bundle.model_dump_json(), bank.card.canonical_json(), capsys,
                              "--record", str(tmp_path / f"record{i}.json"),
                              "--require-lens", "spread", "--require-lens", "persistence")
        assert status == 0 and "VALID certificate" in out, out


def test_the_certified_customer_is_certified_over_the_three_points_and_both_sexes(bank):
    bundle, cert = bank.bundles[0], bank.certificates[0]
    assert bundle.status == "certified" and bundle.eps.numerator > 0
    assert [tuple(s.slice_values) for s in cert.slices] == bank.card.slices()
    assert len(bundle.spread.decisions) == 6 and bundle.spread.distinct_decisions == 1


def test_the_flip_is_the_value_the_plaintext_model_flips_on(bank):
    bundle = bank.bundles[1]
    decisions = onehot_bank.plaintext_decisions(bank.artifact, bank.model, bank.records[1])
    own = decisions[("b", "F")]
    assert bundle.decision == own and bundle.status == "counterfactual_flip"
    first = next(k for k in itertools.product(onehot_bank.RACES, onehot_bank.SEXES) if decisions[k] != own)
    assert first == ("c", "F")
    assert bundle.flip_slice.labels == ("c", "female")
    assert bundle.flip_slice.values == (0, 0, ONE, 0)
    assert bundle.spread.decisions == tuple(decisions[k] for k in itertools.product("abc", "FM"))


def test_the_flip_reads_in_the_customers_terms(bank, tmp_path, capsys):
    status, out = _verify(tmp_path, bank.bundles[1].model_dump_json(), bank.card.canonical_json(), capsys)
    assert status == 0 and "with race, sex set to c, female" in out, out
    assert "race = a:" in out and "race = c:" in out  # the persistence bounds, per value label
    assert "  race = b\n" in out  # the record the certificate is about, in the customer's own terms


def test_the_plaintext_checker_accepts_both_certificates(bank):
    for cert in bank.certificates:
        check_certificate(bank.model, cert)


@pytest.mark.parametrize("race", [(1, 1, 0), (0, 0, 0)])
def test_the_plaintext_checker_refuses_a_certificate_between_points(bank, race):
    cert = bank.certificates[0]
    query = (cert.query[0], *(v * ONE for v in race), *cert.query[4:])
    with pytest.raises(CertificationError, match=r"sensitive feature 'race' \(column\(s\) \[1, 2, 3\]\)"):
        check_certificate(bank.model, dataclasses.replace(cert, query=query))
    with pytest.raises(CertificationError, match="'race'"):
        certify(bank.model, query)


def test_the_exact_reference_flips_on_the_proofs_slice_and_bounds_its_radius(bank):
    """An independent exact-distance search over the same slices: radius 0 at the proof's flip slice, and for
    the certified customer a radius the proved (fast) eps does not exceed, the exact certificate's to 2^-16."""
    from exact_reference import reference_radius

    flipped = reference_radius(bank.model, bank.certificates[1].query)
    assert flipped.radius == 0 and flipped.slice_index == bank.bundles[1].flip_slice.index
    certified = reference_radius(bank.model, bank.certificates[0].query)
    proved = Fraction(bank.bundles[0].eps.numerator, ONE)
    assert 0 < proved <= certified.radius
    exact = certify(bank.model, bank.certificates[0].query, radius="exact")
    assert abs(exact.eps - certified.radius * ONE) <= 1


def test_the_bound_radius_flips_on_the_same_slice_as_the_proof(bank):
    from fairness.bound_radius import FLIP, bound_certificate

    certified = bound_certificate(bank.model, bank.certificates[0].query)
    assert certified.status != FLIP and certified.eps > 0
    flipped = bound_certificate(bank.model, bank.certificates[1].query)
    assert flipped.status == FLIP and flipped.flip_slice == bank.bundles[1].flip_slice.index
    assert bank.model.slices()[flipped.flip_slice] == (0, 0, ONE, 0)


def test_group_metrics_count_each_combination_of_points_under_its_labels(bank):
    from audits.group_metrics import group_report

    rng = random.Random(1)
    records = [{"income": rng.randint(0, 200), "race": rng.choice("abc"), "duration": rng.randint(3, 72),
                "sex": rng.choice("FM")} for _ in range(60)]
    X = [bank.artifact.preprocessor.encode(r) for r in records]
    report = group_report(bank.model, X, [0] * len(X), favourable=1, bootstrap=0)
    sexes = {"F": "female", "M": "male"}
    assert [g.labels for g in report.groups] == [(r, sexes[x]) for r in "abc" for x in "FM"]
    for g in report.groups:
        race, sex = g.labels
        assert g.n == sum(1 for r in records if (r["race"], sexes[r["sex"]]) == (race, sex))


def test_the_persistence_bounds_name_the_points_and_the_own_value_holds_zero(bank):
    bounds = bank.bundles[0].persistence.bounds
    assert [(b.attribute, b.value) for b in bounds] == [
        ("race", (0, 0, ONE)), ("race", (0, ONE, 0)), ("race", (ONE, 0, 0)), ("sex", 0), ("sex", ONE)]
    own = [b for b in bounds if b.status == "own"]
    assert [(b.label, b.lower <= 0 <= b.upper) for b in own] == [("b", True), ("female", True)]
    model = bank.model
    q = tuple(bank.bundles[0].query)
    assert [(b.lower, b.upper) for b in bounds] == proved_bounds(model, q, 1, bank.card.persistence.columns,
                                                                bank.bundles[0].persistence.delta,
                                                                alpha_bits=bank.card.bucket(bank.bundles[0].bucket)
                                                                .shape.alpha_bits)


def _signals(bundle: CertificateBundle, edit) -> CertificateBundle:
    signals = [int(v) for v in bundle.public_signals]
    edit(signals)
    return bundle.model_copy(update={"public_signals": tuple(str(v % R) for v in signals)})


@pytest.mark.parametrize("race", [(1, 1, 0), (0, 0, 0)])
def test_a_query_between_the_points_is_refused_by_the_claims(bank, race):
    def edit(s):
        s[HEAD_SIGNALS + 1:HEAD_SIGNALS + 4] = [v * ONE for v in race]

    verdict = verify_bundle(_signals(bank.bundles[0], edit), bank.card)
    assert not verdict and verdict.code == "claims.sensitive-value"
    assert "public signals 6, 7, 8 (sensitive feature 'race') are not a value" in verdict.reasons[0]


def test_an_own_value_bound_excluding_zero_is_refused_by_the_claims(bank):
    card, bundle = bank.card, bank.bundles[0]
    own = next(i for i, b in enumerate(bundle.persistence.bounds) if b.status == "own" and b.attribute == "race")
    at = HEAD_SIGNALS + card.architecture.n_inputs + card.n_spread_signals + 1 + 2 * own

    def edit(s):
        s[at], s[at + 1] = 1, 5

    with pytest.raises(ClaimError, match="customer's own value") as refused:
        claims_from_signals(_signals(bundle, edit).public_signals, card, card.bucket(bundle.bucket))
    assert refused.value.code == "claims.persistence"
    verdict = verify_bundle(_signals(bundle, edit), card)
    assert not verdict and verdict.code == "claims.persistence"


def _following(bundle: CertificateBundle, card: ModelCard, edit) -> CertificateBundle:
    """The bundle with its signals edited and every readable field saying what they say (a careful forger's)."""
    edited = _signals(bundle, edit)
    c = claims_from_signals(edited.public_signals, card, card.bucket(bundle.bucket))
    return edited.model_copy(update={
        "decision": c.decision, "decision_label": c.decision_label, "status": c.status, "flip_slice": c.flip,
        "query": c.query, "eps": Radius(numerator=c.eps_numerator, scale_bits=c.eps_scale_bits, capped=c.capped),
        "spread": c.spread.readable() if c.spread else None,
        "persistence": c.persistence.readable() if c.persistence else None})


def test_another_point_with_every_field_following_is_refused_by_the_proof(bank):
    """Race a instead of b, the own-value bounds moved with it: claims any proof could have, so only the
    proof can refuse them."""
    card, bundle = bank.card, bank.bundles[0]
    first = HEAD_SIGNALS + card.architecture.n_inputs + card.n_spread_signals + 1
    pairs = card.persistence_pairs()

    def edit(s):
        s[HEAD_SIGNALS + 1:HEAD_SIGNALS + 4] = [ONE, 0, 0]
        at = first + 2 * pairs.index((0, (ONE, 0, 0)))
        s[at], s[at + 1] = 0, 0

    fake = _following(bundle, card, edit)
    assert fake.persistence.bounds[pairs.index((0, (ONE, 0, 0)))].status == "own"
    verdict = verify_bundle(fake, card)
    assert not verdict and verdict.code == "proof.rejected"


def test_a_certified_radius_claimed_for_the_flipped_customer_is_refused_by_the_proof(bank):
    bundle = bank.bundles[1]
    fake = forged(bundle, status="certified", flip_slice=None,
                  eps=Radius(numerator=1, scale_bits=bundle.eps.scale_bits),
                  spread=bundle.spread.model_copy(update={
                      "decisions": (bundle.decision,) * 6, "distinct_decisions": 1,
                      "decision_labels": (bundle.decision_label,) * 6}))
    verdict = verify_bundle(fake, bank.card)
    assert not verdict and verdict.code == "proof.rejected"


# -- the persistence lens in the circuit ---------------------------------------------------------------------


def test_the_circuit_states_the_plaintext_bounds_of_whole_points_and_refuses_a_forged_one(bank):
    """The circuit's counterfactual copies set every column of race: its bounds are the plaintext ones (a
    copy moving one column alone would state others), and a race bound off by one is refused in its pair."""
    from prover_service.bucket_keys import shape_from_card
    from statement.adapter import statement_inputs
    from statement_cases import build, unsatisfied_labels

    card, cert = bank.card, bank.certificates[0]
    shape = shape_from_card(card, card.bucket(bank.bundles[0].bucket))
    delta = card.persistence.default_delta
    public, witness = statement_inputs(bank.model, bank.prover.salt, cert, shape, persistence_delta=delta)
    assert list(public.persistence_bounds) == proved_bounds(bank.model, cert.query, 1, shape.persistence_columns,
                                                            delta, alpha_bits=shape.alpha_bits)
    cs = build(shape, public, witness)
    assert cs.compile().is_satisfied(cs.witness())
    p = 2  # race a, the last race point in lexicographic order: a value other than the customer's
    assert shape.persistence_pairs[p] == (0, (ONE, 0, 0))
    bounds = list(public.persistence_bounds)
    bounds[p] = (bounds[p][0] + 1, bounds[p][1])
    refused = build(shape, dataclasses.replace(public, persistence_bounds=tuple(bounds)), witness, strict=False)
    assert any(label.startswith(f"persistence/pair{p}/bounds") for label in unsatisfied_labels(refused))


# -- a dropped value: the all-zeros point ---------------------------------------------------------------------


@pytest.fixture(scope="module")
def dropped(tmp_path_factory):
    bank = onehot_bank.OneHotBank(tmp_path_factory.mktemp("onehot-dropped"), drop="a", records=[onehot_bank.DROPPED])
    yield bank
    bank.db.dispose()


def test_a_customer_of_the_dropped_value_is_certified_at_the_all_zeros_point(dropped, tmp_path, capsys):
    race = _card_json(dropped.card)["sensitive"][0]
    assert (race["columns"], race["values"]) == ([1, 2], [[0, 0], [ONE, 0], [0, ONE]])
    bundle = dropped.bundles[0]
    assert bundle.query[1:3] == (0, 0)
    assert bundle.spread.decisions == tuple(
        onehot_bank.plaintext_decisions(dropped.artifact, dropped.model, dropped.records[0])[k]
        for k in itertools.product("abc", "FM"))
    (tmp_path / "record.json").write_text(json.dumps(dropped.records[0]))
    status, out = _verify(tmp_path, bundle.model_dump_json(), dropped.card.canonical_json(), capsys,
                          "--record", str(tmp_path / "record.json"))
    assert status == 0 and "VALID certificate" in out, out


def test_both_race_inputs_set_is_no_value_under_a_drop(dropped):
    def edit(s):
        s[HEAD_SIGNALS + 1:HEAD_SIGNALS + 3] = [ONE, ONE]

    verdict = verify_bundle(_signals(dropped.bundles[0], edit), dropped.card)
    assert not verdict and verdict.code == "claims.sensitive-value"
