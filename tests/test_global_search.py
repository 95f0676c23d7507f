"""The global discrimination search: every counterexample is real, every "fair (optimal)" survives
dense sampling, and the command reports it honestly."""
from __future__ import annotations

import dataclasses
import json
import random
from fractions import Fraction

import numpy as np
import pytest

from audits.global_search import (COUNTEREXAMPLE, FAIR, GlobalSearchError, _decision, exact_margin,
                                  global_search)
from fairness.fixed_point import FixedPointModel, QuantisedMLP
from fairness_toy_models import random_model


def _decisions_at(model: FixedPointModel, x: list[int], favourable: int) -> list[int]:
    """The integer model's decision at grid point x with every combination of sensitive values."""
    out = []
    for values in model.slices():
        point = list(x)
        for c, v in zip(model.sensitive_columns, values):
            point[c] = v
        out.append(model.net.decision(point))
    return out


@pytest.mark.parametrize("seed", range(8))
def test_counterexamples_are_real_and_fair_verdicts_survive_sampling(seed):
    model = random_model(seed, n_inputs=4, hidden=(4, 2), n_classes=2, scale_bits=6)
    results = global_search(model, favourable=1, time_limit=30)
    assert len(results) == 2  # two ordered pairs of the two combinations
    slices = model.slices()
    rng = random.Random(seed)
    samples = [[rng.randint(lo, hi) for lo, hi in zip(model.box_lower, model.box_upper)] for _ in range(3000)]
    for r in results:
        assert r.status in (COUNTEREXAMPLE, FAIR), r
        if r.status == COUNTEREXAMPLE:
            ce = r.counterexample
            # exact margins at the rational point: the source decides favourably, the target does not
            one = 1 << model.scale_bits
            for index, margin, decision in zip((r.source, r.target), ce.margins, ce.decisions):
                point = list(ce.point)
                for c, v in zip(model.sensitive_columns, slices[index]):
                    point[c] = Fraction(v, one)
                assert exact_margin(model, point, 1) == margin
                assert _decision(margin, 1) == decision
            assert ce.decisions == (1, 0)
            assert r.objective > 0
        else:
            assert r.objective <= 0 and r.counterexample is None
            for x in samples:  # no grid point decided favourably with the source and not the target
                d = _decisions_at(model, x, 1)
                assert not (d[r.source] == 1 and d[r.target] == 0), (r, x)


def test_a_model_blind_to_the_sensitive_column_is_fair_and_a_biased_one_is_caught():
    base = random_model(3, n_inputs=4, hidden=(4, 2), n_classes=2, scale_bits=6)
    w0 = [list(row) for row in base.net.weights[0]]
    for row in w0:
        row[base.sensitive_columns[0]] = 0
    blind = dataclasses.replace(base, net=QuantisedMLP(base.net.scale_bits, (tuple(map(tuple, w0)),
                                                                          *base.net.weights[1:]), base.net.biases))
    assert [r.status for r in global_search(blind, 1, time_limit=30)] == [FAIR, FAIR]
    for row in w0:
        row[base.sensitive_columns[0]] = 40 << base.scale_bits  # the group decides everything
    biased = dataclasses.replace(base, net=QuantisedMLP(base.net.scale_bits, (tuple(map(tuple, w0)),
                                                                           *base.net.weights[1:]), base.net.biases))
    assert COUNTEREXAMPLE in [r.status for r in global_search(biased, 1, time_limit=30)]


def test_questions_it_cannot_answer_are_refused():
    with pytest.raises(GlobalSearchError, match="two-class"):
        global_search(random_model(0, n_classes=3, scale_bits=6), 0)
    with pytest.raises(GlobalSearchError, match="favourable"):
        global_search(random_model(0, scale_bits=6), 2)
    with pytest.raises(GlobalSearchError, match="time limit"):
        global_search(random_model(0, scale_bits=6), 1, time_limit=0)


def test_ties_are_broken_as_the_model_breaks_them():
    assert _decision(Fraction(0), 0) == 0 and _decision(Fraction(0), 1) == 0
    assert _decision(Fraction(1, 10**9), 1) == 1 and _decision(Fraction(-1, 10**9), 0) == 1


def test_audit_global_command(bank, tmp_path_factory, capsys):
    from bank_fixtures import copy_of_bank_model
    from prover_service.cli import main as fairproof

    root, workspace, store = copy_of_bank_model(bank, tmp_path_factory, "audit-global")
    store.dispose()
    out = tmp_path_factory.mktemp("global") / "global.json"
    assert fairproof(["audit", "global", "--model", str(root), "--time-limit", "60", "--save-json", str(out)]) == 0
    text = capsys.readouterr().out
    assert "global discrimination search" in text and "verdict:" in text
    report = json.loads(out.read_text())
    assert len(report["pairs"]) == 2 and all(p["status"] in (COUNTEREXAMPLE, FAIR) for p in report["pairs"])
    model = workspace.fixed_point()
    favourable = bank.card.architecture.class_labels.index(report["favourable_class"])
    for p in report["pairs"]:
        if p["counterexample"]:
            point = [Fraction(v) for v in p["counterexample"]["point_standardised"]]
            assert _decision(exact_margin(model, point, favourable), favourable) == favourable
    for bad in (["--time-limit", "0"], ["--favourable-class", "nobody"]):
        code = fairproof(["audit", "global", "--model", str(root), *bad])
        err = capsys.readouterr().err
        assert code != 0 and "Traceback" not in err and err.strip(), bad


def test_restricted_columns_take_only_their_values():
    model = random_model(4, n_inputs=4, hidden=(4, 2), n_classes=2, scale_bits=6)
    one = 1 << model.scale_bits
    choices = {1: (-one, -one // 4, one // 2), 3: (0, one)}
    results = global_search(model, 1, time_limit=30, choices=choices)
    found = [r for r in results if r.status == COUNTEREXAMPLE]
    assert found
    for r in found:
        for j, values in choices.items():
            assert r.counterexample.point[j] * one in values
        if r.counterexample.grid_point is not None:
            d = _decisions_at(model, list(r.counterexample.grid_point), 1)
            assert d[r.source] == 1 and d[r.target] == 0
    # restricting can only shrink the set searched: a fair pair stays fair
    free = {(r.source, r.target): r.status for r in global_search(model, 1, time_limit=30)}
    for r in results:
        if free[(r.source, r.target)] == FAIR:
            assert r.status == FAIR
    for bad in ({0: (0,)}, {1: ()}, {1: (4 * one,)}):  # a sensitive column, no value, outside the box
        with pytest.raises(GlobalSearchError, match="choices"):
            global_search(model, 1, time_limit=5, choices=bad)


def test_categorical_choices_are_the_encoded_categories(bank):
    from audits.global_search import categorical_choices
    from fairness.fixed_point import quantise_value

    artifact = bank.prover.workspace.artifact
    model = bank.prover.model
    pre = artifact.preprocessor
    choices = categorical_choices(pre, model)
    sensitive = set(model.sensitive_columns)
    categorical = [j for j, k in enumerate(pre.kinds) if k == "categorical" and j not in sensitive]
    assert sorted(choices) == categorical
    j = categorical[0]
    name = pre.feature_names[j]
    expected = {quantise_value((k - pre.means[j]) / pre.stds[j], model.scale_bits)
                for k in range(len(pre.categories[name]))}
    assert set(choices[j]) == expected


def test_a_counterexample_is_proved_as_a_flip_anyone_can_verify(bank, tmp_path_factory, capsys):
    """The auditor's publishable proof of discrimination: the counterexample on the input grid, proved
    against the committed weights; the verifier accepts it with the card alone and refuses it edited."""
    from bank_fixtures import copy_of_bank_model, forged
    from commitments.bundle import CertificateBundle
    from commitments.claims import bundle_claims
    from prover_service.cli import main as fairproof
    from verifier_client.verify import verify_bundle

    root, workspace, store = copy_of_bank_model(bank, tmp_path_factory, "prove-discrimination")
    store.dispose()
    out = tmp_path_factory.mktemp("discrimination")
    assert fairproof(["audit", "global", "--model", str(root), "--time-limit", "60", "--save-json", str(out / "g.json"),
                      "--prove", str(out / "proofs"), "--single-party-setup"]) == 0
    report = json.loads((out / "g.json").read_text())
    found = [p for p in report["pairs"] if p["counterexample"] and p["counterexample"]["grid_point"]]
    bundles = sorted((out / "proofs").glob("discrimination-*.json"))
    assert found and len(bundles) == len(found)
    card = workspace.card()  # now listing the bucket the proof used
    for path, pair in zip(bundles, found):
        bundle = CertificateBundle.model_validate_json(path.read_text())
        assert list(bundle.query) == pair["counterexample"]["grid_point"]
        verdict = verify_bundle(bundle, card)
        assert verdict.valid, verdict.reasons
        claims = bundle_claims(bundle, card)
        assert claims.status == "counterfactual_flip" and claims.spread.distinct_decisions == 2
        assert ", ".join(claims.flip.labels) == pair["target"]
        # a forger who moves the individual (signals and readable query agreeing) is refused by the pairing
        moved = list(bundle.query)
        free = next(j for j in range(len(moved)) if j not in {f.column for f in card.sensitive}
                    and moved[j] < card.box_upper[j])
        moved[free] += 1
        assert not verify_bundle(forged(bundle, query=tuple(moved)), card).valid


def test_ranges_keep_the_search_inside_them():
    from audits.global_search import observed_ranges

    model = random_model(4, n_inputs=4, hidden=(4, 2), n_classes=2, scale_bits=6)
    one = 1 << model.scale_bits
    X = np.random.default_rng(0).uniform(-0.5, 0.25, size=(100, 4))
    ranges = observed_ranges(model, X, [1, 2, 3])
    for j, (lo, hi) in ranges.items():
        assert lo <= X[:, j].min() * one and hi >= X[:, j].max() * one and hi - lo <= 0.75 * one + 2
    results = global_search(model, 1, time_limit=30, ranges=ranges)
    for r in results:
        if r.counterexample is not None:
            for j, (lo, hi) in ranges.items():
                assert Fraction(lo, one) <= r.counterexample.point[j] <= Fraction(hi, one)
    for bad in ({0: (0, 1)}, {1: (one, 0)}, {1: (-2 * one, 0)}):  # sensitive, empty, beyond the box
        with pytest.raises(GlobalSearchError, match="range"):
            global_search(model, 1, time_limit=5, ranges=bad)


# -- HyFair's maximum margin difference --------------------------------------------------------------------


def _margin_difference_at(model: FixedPointModel, x, source: int, target: int, favourable: int) -> Fraction:
    """m(source, x) - m(target, x), exactly, at a rational input whose sensitive columns are overwritten."""
    one = 1 << model.scale_bits
    out = []
    for index in (source, target):
        point = list(x)
        for c, v in zip(model.sensitive_columns, model.slices()[index]):
            point[c] = Fraction(v, one)
        out.append(exact_margin(model, point, favourable))
    return out[0] - out[1]


@pytest.mark.parametrize("seed", range(6))
def test_the_maximum_margin_difference_equals_the_exact_reference(seed):
    """One hidden layer, two free inputs: the maximum over the arrangement's vertices is the maximum."""
    from arrangement_reference import arrangement_vertices
    from audits.global_search import maximum_margin_difference

    model = random_model(seed, n_inputs=3, hidden=(12,), n_classes=2, scale_bits=10, weight_range=3.0)
    result = maximum_margin_difference(model, favourable=1, time_limit=30)
    assert result.optimal and len(result.pairs) == 2
    vertices = arrangement_vertices(model, (0, 1), model.box_lower, model.box_upper)
    for pair in result.pairs:
        best = max(_margin_difference_at(model, x, pair.source, pair.target, 1) for x in vertices)
        assert abs(pair.value - best) <= Fraction(1, 10**9) * max(1, abs(best))
        assert pair.bound >= float(best) - 1e-9 * max(1, abs(float(best)))
        # the value is the difference at the point reported, which lies in the box
        assert _margin_difference_at(model, pair.point, pair.source, pair.target, 1) == pair.value
        assert all(Fraction(lo, 1 << 10) <= v <= Fraction(hi, 1 << 10)
                   for v, lo, hi in zip(pair.point, model.box_lower, model.box_upper))
    assert result.value == max(p.value for p in result.pairs)


def test_the_maximum_margin_difference_bounds_a_dense_grid():
    """Two hidden layers: no grid point of the box shows a larger difference than the optimum."""
    from audits.global_search import maximum_margin_difference

    model = random_model(4, n_inputs=3, hidden=(4, 2), n_classes=2, scale_bits=6)
    result = maximum_margin_difference(model, favourable=0, time_limit=30)
    assert result.optimal
    grid = [Fraction(k, 16) for k in range(-16, 17)]
    for pair in result.pairs:
        sampled = max(_margin_difference_at(model, [Fraction(0), a, b], pair.source, pair.target, 0)
                      for a in grid for b in grid)
        assert sampled <= pair.value + Fraction(1, 10**9) * max(1, abs(pair.value))
        assert pair.value - sampled < 1  # and the grid comes near it (a sanity check on the units)


def test_a_margin_difference_stopped_short_says_so(monkeypatch):
    from fairness import milp
    from audits.global_search import margin_difference_pair, maximum_margin_difference
    from prover_service.commands.audit import describe_margin_difference

    model = random_model(3, n_inputs=5, hidden=(8, 4), n_classes=2, scale_bits=8, weight_range=2.0)
    exact = margin_difference_pair(model, 1, 0, 1, time_limit=30)
    monkeypatch.setattr(milp, "MAX_NODES", 1)
    stopped = margin_difference_pair(model, 1, 0, 1, time_limit=30)
    assert exact.optimal and not stopped.optimal
    assert stopped.value is None or stopped.value <= exact.value + Fraction(1, 10**9)
    assert stopped.bound is not None and stopped.bound >= float(exact.value) - 1e-9
    result = maximum_margin_difference(model, 1, time_limit=30)
    text = describe_margin_difference(result, ["a", "b"], [f"x{j}" for j in range(5)], model.sensitive_columns)
    assert not result.optimal and "NOT proved the maximum" in text and "bound" in text
    monkeypatch.setattr(milp, "MAX_NODES", None)
    text = describe_margin_difference(maximum_margin_difference(model, 1, time_limit=30), ["a", "b"],
                                      [f"x{j}" for j in range(5)], model.sensitive_columns)
    assert "the maximum (every pair solved" in text
