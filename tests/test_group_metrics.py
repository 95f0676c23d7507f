"""Group fairness metrics: equal to a direct computation over the same decisions, intervals as published."""
from __future__ import annotations

import json

import numpy as np
import pytest

from audits.group_metrics import group_report, wilson
from fairness.fixed_point import quantise_query
from fairness_toy_models import random_model


def test_wilson_interval_matches_published_values():
    # Newcombe (1998), Table I: 81/263 -> 0.2553-0.3662; 15/148 -> 0.0624-0.1605 (95%)
    lo, hi = wilson(81, 263)
    assert abs(lo - 0.2553) < 5e-4 and abs(hi - 0.3662) < 5e-4
    lo, hi = wilson(15, 148)
    assert abs(lo - 0.0624) < 5e-4 and abs(hi - 0.1605) < 5e-4
    assert wilson(0, 0) == (0.0, 1.0)
    assert wilson(0, 10)[0] == pytest.approx(0.0, abs=1e-12) and wilson(10, 10)[1] == pytest.approx(1.0)


def _direct(model, X, y, favourable):
    """Per group (n, selected, positives, true positives) and DI, SP, EO, from plain loops and numpy."""
    rows = []
    for x, label in zip(X, y):
        try:
            q = quantise_query(model, list(x))
        except Exception:
            continue
        rows.append((tuple(q[c] for c in model.sensitive_columns), int(model.net.decision(q) == favourable),
                     int(label == favourable)))
    out = {}
    for values in model.slices():
        mine = np.array([(d, p) for g, d, p in rows if g == values]).reshape(-1, 2)
        out[values] = (len(mine), int(mine[:, 0].sum()), int(mine[:, 1].sum()), int((mine[:, 0] * mine[:, 1]).sum()))
    rates = [s / n for n, s, _, _ in out.values() if n]
    tprs = [tp / p for _, _, p, tp in out.values() if p]
    return out, min(rates) / max(rates), max(rates) - min(rates), max(tprs) - min(tprs), len(rows)


def test_report_equals_a_direct_computation_on_a_random_model():
    model = random_model(5, n_inputs=4, hidden=(4, 2), n_classes=2, scale_bits=8, sensitive_values=(-1, 0, 1))
    rng = np.random.default_rng(1)
    X = rng.uniform(-1.1, 1.1, size=(600, 4))  # some rows fall outside the box
    X[:, 0] = rng.integers(-1, 2, size=600)
    y = rng.integers(0, 2, size=600)
    report = group_report(model, X, y, favourable=1, bootstrap=200)
    counts, di, sp, eo, kept = _direct(model, X, y, 1)
    assert report.rows == 600 and report.outside_box == 600 - kept > 0
    for g in report.groups:
        assert (g.n, g.selected, g.positives, g.true_positives) == counts[g.values]
    assert report.disparate_impact == pytest.approx(di, abs=1e-12)
    assert report.statistical_parity == pytest.approx(sp, abs=1e-12)
    assert report.equal_opportunity == pytest.approx(eo, abs=1e-12)
    for name, value in (("disparate_impact", di), ("statistical_parity", sp)):
        lo, hi = report.intervals[name]
        assert lo <= hi
    rates = {g.labels: g.selection_rate for g in report.groups}
    assert rates[report.most_favoured] == max(rates.values())
    assert rates[report.least_favoured] == min(rates.values())


def test_an_empty_group_is_listed_and_left_out():
    model = random_model(2, n_inputs=4, hidden=(4, 2), n_classes=2, scale_bits=8, sensitive_values=(0, 1))
    X = np.random.default_rng(0).uniform(-1, 1, size=(50, 4))
    X[:, 0] = 0.0  # everyone in group g0
    report = group_report(model, X, np.ones(50, dtype=int), favourable=1, bootstrap=20)
    assert [g.n for g in report.groups] == [50, 0]
    assert report.disparate_impact is None and report.statistical_parity is None
    with pytest.raises(ValueError, match="favourable"):
        group_report(model, X, np.ones(50, dtype=int), favourable=2)


def test_audit_groups_command(bank, tmp_path_factory, capsys):
    from bank_fixtures import copy_of_bank_model
    from offline_precompute.certify import test_inputs
    from prover_service.cli import main as fairproof

    root, workspace, store = copy_of_bank_model(bank, tmp_path_factory, "audit-groups")
    store.dispose()
    out = tmp_path_factory.mktemp("groups")
    assert fairproof(["audit", "groups", "--model", str(root), "--bootstrap", "100", "--influence",
                      "--distribution", "2000",
                      "--save-json", str(out / "g.json"), "--plot", str(out / "g.png")]) == 0
    text = capsys.readouterr().out
    assert "disparate impact" in text and "most favoured" in text
    report = json.loads((out / "g.json").read_text())
    X, y = test_inputs(workspace.artifact)
    favourable = bank.card.architecture.class_labels.index(report["favourable_class"])
    counts, di, sp, eo, kept = _direct(workspace.fixed_point(), X, y, favourable)
    assert [(g["n"], g["selected"], g["positives"], g["true_positives"]) for g in report["groups"]] == \
        list(counts.values())
    assert report["disparate_impact"] == pytest.approx(di) and report["equal_opportunity"] == pytest.approx(eo)
    fpr = [g["false_positives"] / g["negatives"] for g in report["groups"] if g["negatives"]]
    fpr_gap = max(fpr) - min(fpr) if len(fpr) >= 2 else None  # a gap needs two groups with a negative
    assert report["false_positive_gap"] == (None if fpr_gap is None else pytest.approx(fpr_gap))
    assert report["equalized_odds"] == pytest.approx(max(eo, fpr_gap or 0.0))
    assert (out / "g.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    learned = report["learned_distribution"]
    assert learned["draws_per_group"] == 2000 and len(learned["groups"]) == len(report["groups"])
    rates = [g["rate"] for g in learned["groups"]]
    assert learned["statistical_parity"] == pytest.approx(max(rates) - min(rates))
    features = [i["feature"] for i in report["influence"]]
    assert sorted(features) == sorted(bank.card.feature_names[j] for j in range(len(bank.card.feature_names))
                                      if j not in {f.column for f in bank.card.sensitive})
    assert [abs(i["parity_change"]) for i in report["influence"]] == sorted(
        (abs(i["parity_change"]) for i in report["influence"]), reverse=True)
    for bad in (["--favourable-class", "nobody"], ["--bootstrap", "-1"]):
        code = fairproof(["audit", "groups", "--model", str(root), *bad])
        err = capsys.readouterr().err
        assert code != 0 and "Traceback" not in err and err.strip(), bad


def _threshold_model():
    """Two inputs (a sensitive group in {0, 1}, a score in [-1, 1]); decided favourably (class 1) exactly
    when the score is positive, whatever the group: one ReLU copies the score into class 1's logit."""
    from fairness.fixed_point import FixedPointModel, QuantisedMLP, SensitiveDomain

    s = 4
    one = 1 << s
    net = QuantisedMLP(scale_bits=s, weights=(((0, one),), ((0,), (one,))), biases=((0,), (0, 0)))
    group = SensitiveDomain.scalar("group", 0, (0, one), ("g0", "g1"))
    return FixedPointModel(net=net, box_lower=(0, -one), box_upper=(one, one), sensitive=(group,))


def test_equal_opportunity_and_equalized_odds_are_both_reported_against_a_hand_count():
    """Group g0: 4 positives all selected, 4 negatives of which 1 selected; g1: 4 positives of which 3
    selected, 4 negatives all selected. TPRs 1 and 3/4, FPRs 1/4 and 1: the equal opportunity difference
    (TPR gap) is 1/4, equalized odds (FVGM's EO, the larger of the TPR and FPR gaps) is 3/4."""
    model = _threshold_model()
    rows = []  # (group, selected, label)
    rows += [(0, 1, 1)] * 4 + [(0, 1, 0)] + [(0, 0, 0)] * 3
    rows += [(1, 1, 1)] * 3 + [(1, 0, 1)] + [(1, 1, 0)] * 4
    X = np.array([[g, 0.5 if chosen else -0.5] for g, chosen, _ in rows])
    y = np.array([label for _, _, label in rows])
    report = group_report(model, X, y, favourable=1, bootstrap=0)
    g0, g1 = report.groups
    assert (g0.n, g0.selected, g0.positives, g0.true_positives, g0.negatives, g0.false_positives) == (8, 5, 4, 4, 4, 1)
    assert (g1.n, g1.selected, g1.positives, g1.true_positives, g1.negatives, g1.false_positives) == (8, 7, 4, 3, 4, 4)
    assert (g0.true_positive_rate, g0.false_positive_rate) == (1.0, 0.25)
    assert (g1.true_positive_rate, g1.false_positive_rate) == (0.75, 1.0)
    assert report.equal_opportunity == 0.25
    assert report.false_positive_gap == 0.75
    assert report.equalized_odds == 0.75
    # the twin: the same rows with the FPRs brought together; equalized odds falls to the TPR gap
    fair = [(g, 0 if (g == 1 and label == 0 and i % 4) else chosen, label) for i, (g, chosen, label) in enumerate(rows)]
    X = np.array([[g, 0.5 if chosen else -0.5] for g, chosen, _ in fair])
    report = group_report(model, X, y, favourable=1, bootstrap=0)
    assert report.false_positive_gap == 0.0 and report.equalized_odds == report.equal_opportunity == 0.25


def test_equalized_odds_bootstrap_interval_holds_the_value():
    model = random_model(5, n_inputs=4, hidden=(4, 2), n_classes=2, scale_bits=8, sensitive_values=(-1, 0, 1))
    rng = np.random.default_rng(2)
    X = rng.uniform(-1, 1, size=(400, 4))
    X[:, 0] = rng.integers(-1, 2, size=400)
    y = rng.integers(0, 2, size=400)
    report = group_report(model, X, y, favourable=1, bootstrap=300)
    assert report.equalized_odds == max(report.equal_opportunity, report.false_positive_gap)
    assert set(report.intervals) == {"disparate_impact", "statistical_parity", "equal_opportunity",
                                     "false_positive_gap", "equalized_odds"}
    lo, hi = report.intervals["equalized_odds"]
    assert 0 <= lo <= hi <= 1 and hi >= report.intervals["equal_opportunity"][1]  # the max of the two gaps
