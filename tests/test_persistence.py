"""Persistent bias (PBA): the log-odds identity, the box, and the LP bound's soundness against the exact
MILP optimum and dense sampling on (4,2) and (8,2) models."""
from __future__ import annotations

import math
import random
from fractions import Fraction

import numpy as np
import pytest

from fairness import persistence as pb
from fairness.fixed_point import FixedPointModel, SensitiveDomain
from fairness_toy_models import random_model, random_query


def _model(seed: int, hidden=(4, 2)) -> FixedPointModel:
    return random_model(seed, n_inputs=5, hidden=hidden, n_classes=2, scale_bits=8)


NUMERIC = (1, 2, 3)  # column 0 is sensitive, column 4 stands for a categorical feature


@pytest.mark.parametrize("seed", range(8))
def test_lemma_1_log_odds_identity(seed):
    """g = (z_f - z_o)(x) - (z_f - z_o)(x') is the log of the odds ratio between x and x' (softmax)."""
    rng = np.random.default_rng(seed)
    z, z2 = rng.normal(size=2) * 3, rng.normal(size=2) * 3
    for f in (0, 1):
        o = 1 - f
        p, p2 = np.exp(z) / np.exp(z).sum(), np.exp(z2) / np.exp(z2).sum()
        log_odds_ratio = math.log((p[f] / p[o]) / (p2[f] / p2[o]))
        assert log_odds_ratio == pytest.approx((z[f] - z[o]) - (z2[f] - z2[o]), rel=1e-12, abs=1e-12)


@pytest.mark.parametrize("hidden", [(4, 2), (8, 2)])
@pytest.mark.parametrize("seed", range(4))
def test_lp_bound_is_sound_against_the_milp_and_sampling(hidden, seed):
    model = _model(seed, hidden)
    rng = random.Random(seed)
    query = random_query(model, rng)
    for delta in (Fraction(1, 4), Fraction(1)):
        for r in pb.persistence(model, query, 1, NUMERIC, delta, exact=True):
            values = [pb.g_value(model, 1, r.flip, x) for x in pb.box_samples(r.box, model.scale_bits, 200, rng)]
            low, high = r.attained
            # the LP bound is below every attained value (the MILP's points and the samples), and above it
            # on the other side; the MILP's optimum is as extreme as any sample up to the solver's tolerance
            assert r.bounds.lower <= min(low, *values) and r.bounds.upper >= max(high, *values)
            tolerance = Fraction(1, 10**6)
            assert low <= min(values) + tolerance and high >= max(values) - tolerance


def test_flipped_setting_is_the_negation():
    """g for s -> s' is -g for s' -> s: the observed and flipped settings exclude each other."""
    model = _model(2)
    query = random_query(model, random.Random(4))
    box = pb.perturbation_box(model, query, NUMERIC, Fraction(1, 2))
    (flip,) = pb.single_attribute_flips(model, query)
    back = pb.Flip(flip.attribute, flip.target, flip.source)
    there, back_bounds = pb.lp_bounds(model, 1, flip, box), pb.lp_bounds(model, 1, back, box)
    assert there.lower == -back_bounds.upper and there.upper == -back_bounds.lower
    x = pb.box_samples(box, model.scale_bits, 3, random.Random(0))[-1]
    assert pb.g_value(model, 1, flip, x) == -pb.g_value(model, 1, back, x)


def test_any_multipliers_give_a_sound_bound():
    """The weak-duality bound holds for every choice of multipliers (negative ones clipped): a solver
    that returned garbage could make the bound loose, never wrong."""
    model = _model(1, (4, 2))
    query = random_query(model, random.Random(1))
    box = pb.perturbation_box(model, query, NUMERIC, Fraction(1))
    (flip,) = pb.single_attribute_flips(model, query)
    prog = pb._program(model, 1, flip, box)
    low, _ = pb.exact_bounds(model, 1, flip, box)
    rng = np.random.default_rng(0)
    for _ in range(30):
        lam = rng.normal(size=len(prog.ub)) * 3
        nu = rng.normal(size=len(prog.eq)) * 3
        assert pb._dual_bound(prog, prog.c, lam, nu) + prog.constant <= low


def test_box_rounds_delta_up_fixes_other_columns_and_clips():
    model = _model(0)
    query = list(random_query(model, random.Random(0)))
    query[1] = model.box_upper[1] - 3  # near the top of the domain
    box = pb.perturbation_box(model, query, NUMERIC, Fraction(1, 1000))
    one = 1 << model.scale_bits
    assert box.delta == 1 and Fraction(box.delta, one) >= Fraction(1, 1000)  # rounded up
    for j in range(len(query)):
        if j in NUMERIC:
            assert box.lower[j] == max(model.box_lower[j], query[j] - 1)
            assert box.upper[j] == min(model.box_upper[j], query[j] + 1)
        else:
            assert box.lower[j] == box.upper[j] == query[j]
    wide = pb.perturbation_box(model, query, NUMERIC, 10)
    assert wide.upper[1] == model.box_upper[1]


def test_bad_questions_are_refused():
    model = _model(0)
    query = random_query(model, random.Random(0))
    with pytest.raises(pb.PersistenceError):
        pb.perturbation_box(model, query, NUMERIC, -1)
    with pytest.raises(pb.PersistenceError):
        pb.perturbation_box(model, query, NUMERIC, float("nan"))
    with pytest.raises(pb.PersistenceError):
        pb.perturbation_box(model, query, (0, 1), 1)  # the sensitive column
    three = random_model(0, n_inputs=5, hidden=(3,), n_classes=3, scale_bits=8)
    q3 = random_query(three, random.Random(0))
    box = pb.perturbation_box(three, q3, NUMERIC, 1)
    with pytest.raises(pb.PersistenceError, match="two-class"):
        pb.lp_bounds(three, 1, pb.single_attribute_flips(three, q3)[0], box)
    with pytest.raises(pb.PersistenceError):
        pb.lp_bounds(model, 2, pb.single_attribute_flips(model, query)[0],
                     pb.perturbation_box(model, query, NUMERIC, 1))


def test_single_attribute_flips_change_one_attribute():
    base = random_model(3, n_inputs=5, hidden=(3,), n_classes=2, scale_bits=8)
    one = 1 << 8
    second = SensitiveDomain.scalar("second", 4, (-one, 0, one), ("a", "b", "c"))
    model = FixedPointModel(base.net, base.box_lower, base.box_upper, (base.sensitive[0], second))
    query = list(random_query(model, random.Random(0)))
    query[4] = 0
    flips = pb.single_attribute_flips(model, query)
    slices = model.slices()
    assert len(flips) == 1 + 2
    for f in flips:
        a, b = slices[f.source], slices[f.target]
        assert sum(x != y for x, y in zip(a, b)) == 1 and a[f.attribute] != b[f.attribute]


def test_status_follows_the_bounds():
    assert pb.Bounds(Fraction(1, 10), Fraction(1), "lp").status == pb.FAVOURED
    assert pb.Bounds(Fraction(-1), Fraction(-1, 10), "lp").status == pb.DISFAVOURED
    assert pb.Bounds(Fraction(0), Fraction(1), "lp").status == pb.INCONCLUSIVE  # min g = 0 is not > 0


def test_audit_persistence_command_counts_the_lp_statuses(bank, tmp_path_factory, capsys):
    import json

    from bank_fixtures import copy_of_bank_model
    from fairness.datasets import load_dataset
    from offline_precompute.certify import query_from_record
    from prover_service.cli import main as fairproof

    root, workspace, store = copy_of_bank_model(bank, tmp_path_factory, "audit-persistence")
    store.dispose()
    out = tmp_path_factory.mktemp("persistence-out")
    assert fairproof(["audit", "persistence", "--model", str(root), "--limit", "12", "--delta", "1,0.5",
                      "--save-json", str(out / "p.json"), "--plot", str(out / "p.png")]) == 0
    text = capsys.readouterr().out
    assert "observed" in text and "flipped" in text and "delta 0.5 (standardised) = duration +-" in text
    report = json.loads((out / "p.json").read_text())
    model, artifact = workspace.fixed_point(), workspace.artifact
    pre = artifact.preprocessor
    numeric = [j for j, (n, k) in enumerate(zip(pre.feature_names, pre.kinds)) if k == "numeric" and n not in pre.sensitive]
    favourable = bank.card.spread.favourable_class
    statuses = []
    for record in load_dataset("german").records_test[:12]:
        q = query_from_record(artifact, model, dict(record))
        box = pb.perturbation_box(model, q, numeric, Fraction(1))
        statuses += [pb.lp_bounds(model, favourable, f, box).status for f in pb.single_attribute_flips(model, q)]
    rows = [r for r in report["rows"] if r["delta"] == "1"]
    observed = [r for r in rows if r["setting"] == "observed"]
    flipped = [r for r in rows if r["setting"] == "flipped"]
    assert sum(r["pairs"] for r in observed) == len(statuses) == sum(r["pairs"] for r in flipped)
    assert sum(r["favoured"] for r in observed) == statuses.count(pb.FAVOURED)
    assert sum(r["disfavoured"] for r in observed) == statuses.count(pb.DISFAVOURED)
    # the flipped setting sees each pair from the other side
    assert sum(r["favoured"] for r in flipped) == statuses.count(pb.DISFAVOURED)
    assert (out / "p.png").read_bytes()[:4] == b"\x89PNG"
    for bad in (["--delta", "0"], ["--delta", "x"], ["--limit", "0"]):
        assert fairproof(["audit", "persistence", "--model", str(root), *bad]) != 0
        err = capsys.readouterr().err
        assert "Traceback" not in err and err.strip()


@pytest.mark.parametrize("hidden", [(4, 2), (8, 2)])
@pytest.mark.parametrize("seed", range(4))
def test_bound_propagation_is_sound_and_no_tighter_than_the_lp(hidden, seed):
    """CROWN through both copies (exact rationals, no solver) is sound against the MILP and sampling;
    it is one dual-feasible point of the same triangle LP, so the LP's bound is at least as tight."""
    model = _model(seed, hidden)
    rng = random.Random(seed)
    query = random_query(model, rng)
    tolerance = Fraction(1, 10**6)
    for delta in (Fraction(1, 4), Fraction(1)):
        box = pb.perturbation_box(model, query, NUMERIC, delta)
        for flip in pb.single_attribute_flips(model, query):
            crown, lp = pb.crown_bounds(model, 1, flip, box), pb.lp_bounds(model, 1, flip, box)
            low, high = pb.exact_bounds(model, 1, flip, box)
            values = [pb.g_value(model, 1, flip, x) for x in pb.box_samples(box, model.scale_bits, 100, rng)]
            assert crown.lower <= min(low, *values) and crown.upper >= max(high, *values)
            assert lp.lower >= crown.lower - tolerance and lp.upper <= crown.upper + tolerance


def test_relaxation_slopes_round_outward():
    """An upper relaxation t (x - l) needs t (u - l) >= u: rounding the slope up keeps it, down may not."""
    rng = random.Random(7)
    for _ in range(200):
        l, u = -Fraction(rng.randint(1, 10**6), 997), Fraction(rng.randint(1, 10**6), 991)
        exact = u / (u - l)
        up, down = pb._ceil_dyadic(exact, 8), pb._floor_dyadic(exact, 8)
        assert up * (u - l) >= u and up - exact < Fraction(1, 256)
        if down != exact:
            assert down * (u - l) < u  # the wrong direction cuts into ReLU at u


# -- the MILP's optimum: closed to a relative gap of 1e-9, or said to be short of it -----------------------


def _gap_case():
    """A one-hidden-layer model and a box (two free inputs) on which HiGHS's default relative gap of 1e-4
    stops a few ten-thousandths of a logit above the minimum of g."""
    model = random_model(17, n_inputs=3, hidden=(12,), n_classes=2, scale_bits=10, weight_range=3.0)
    query = random_query(model, random.Random(17))
    box = pb.perturbation_box(model, query, (1, 2), Fraction(4))
    (flip,) = pb.single_attribute_flips(model, query)
    return model, box, flip


def test_the_milp_optimum_equals_the_exact_extremes_where_the_default_gap_stops_short(monkeypatch):
    from arrangement_reference import arrangement_vertices
    from fairness import milp

    model, box, flip = _gap_case()
    values = [pb.g_value(model, 1, flip, x)
              for x in arrangement_vertices(model, (flip.source, flip.target), box.lower, box.upper)]
    low, high = pb.exact_extremes(model, 1, flip, box)
    assert low.optimal and high.optimal
    assert abs(low.attained - min(values)) <= Fraction(1, 10**9) * abs(min(values))
    assert abs(high.attained - max(values)) <= Fraction(1, 10**9) * abs(max(values))
    assert low.bound <= float(min(values)) + 1e-9 and high.bound >= float(max(values)) - 1e-9
    assert pb.exact_bounds(model, 1, flip, box) == (low.attained, high.attained)
    # the same solve at HiGHS's default gaps stops short of the minimum, and says it is optimal
    monkeypatch.setattr(milp, "MIP_REL_GAP", 1e-4)
    monkeypatch.setattr(milp, "MIP_ABS_GAP", 1e-6)
    default, _ = pb.exact_extremes(model, 1, flip, box)
    assert default.optimal and default.attained - min(values) > Fraction(1, 10**5)


def test_a_milp_stopped_short_is_not_called_exact(monkeypatch):
    """HiGHS stopped after its root node (as a time limit stops it, but deterministically): each extreme
    keeps its attained value and bound, says it is not optimal and by how much at most; the audit counts
    it apart and prints the gap."""
    from fairness import milp
    from audits.persistence import audit_persistence

    model = random_model(3, n_inputs=5, hidden=(8, 4), n_classes=2, scale_bits=8, weight_range=2.0)
    query = random_query(model, random.Random(3))
    box = pb.perturbation_box(model, query, NUMERIC, Fraction(2))
    (flip,) = pb.single_attribute_flips(model, query)
    exact_low, exact_high = pb.exact_extremes(model, 1, flip, box)
    assert exact_low.optimal and exact_high.optimal
    monkeypatch.setattr(milp, "MAX_NODES", 1)
    low, high = pb.exact_extremes(model, 1, flip, box)
    for stopped, exact, sign in ((low, exact_low, 1), (high, exact_high, -1)):
        assert not stopped.optimal and stopped.message and stopped.gap > 1e-6
        # the value found is attained (no better than the optimum) and the bound is on the optimum's far side
        assert sign * stopped.attained >= sign * exact.attained - Fraction(1, 10**9)
        assert sign * stopped.bound <= sign * float(exact.attained) + 1e-9
    (score, *_) = audit_persistence(model, [query], 1, NUMERIC, [Fraction(2)], exact=True)
    assert score.exact.stopped_short == 1 and score.exact.largest_gap >= max(low.gap, high.gap) - 1e-9


def test_the_audits_exact_counts_follow_the_milp():
    from audits.persistence import NEITHER, audit_persistence, exact_status

    model = _model(1, (4, 2))
    rng = random.Random(3)
    queries = [random_query(model, rng) for _ in range(6)]
    scores = audit_persistence(model, queries, 1, NUMERIC, [Fraction(1, 2)], exact=True)
    statuses = []
    for q in queries:
        box = pb.perturbation_box(model, q, NUMERIC, Fraction(1, 2))
        for flip in pb.single_attribute_flips(model, q):
            statuses.append(exact_status(*pb.exact_extremes(model, 1, flip, box)))
    observed = [g for g in scores if g.setting == "observed"]
    assert sum(g.exact.favoured for g in observed) == statuses.count(pb.FAVOURED)
    assert sum(g.exact.disfavoured for g in observed) == statuses.count(pb.DISFAVOURED)
    assert sum(g.exact.neither for g in observed) == statuses.count(NEITHER)
    flipped = [g for g in scores if g.setting == "flipped"]
    assert sum(g.exact.favoured for g in flipped) == statuses.count(pb.DISFAVOURED)
    for g in scores:  # what the sound LP certifies, the exact optimum confirms
        assert g.exact.favoured >= g.favoured and g.exact.disfavoured >= g.disfavoured
    assert all(g.exact is None for g in audit_persistence(model, queries[:1], 1, NUMERIC, [Fraction(1, 2)]))


# -- optimised slopes: the LP's bound, proved without a solver -----------------------------------------


@pytest.mark.parametrize("hidden", [(4, 2), (3, 3, 2)])
@pytest.mark.parametrize("seed", range(3))
def test_optimised_bounds_reach_the_lp_and_stay_sound(hidden, seed):
    """Propagation with the LP's slopes is within a thousandth of a logit of the triangle LP's optimum (the
    slopes' rounding), never looser than CROWN's fixed slopes by more than that, gives every status the LP
    gives, and is sound against the MILP's attained extremes and dense sampling."""
    model = _model(seed, hidden)
    rng = random.Random(seed)
    query = random_query(model, rng)
    for delta in (Fraction(1, 4), Fraction(1)):
        box = pb.perturbation_box(model, query, NUMERIC, delta)
        for flip in pb.single_attribute_flips(model, query):
            lp, crown = pb.lp_bounds(model, 1, flip, box), pb.crown_bounds(model, 1, flip, box)
            optimised, low_slopes, high_slopes = pb.optimised_bounds(model, 1, flip, box, 16)
            assert lp.lower - optimised.lower < Fraction(1, 1000) and optimised.upper - lp.upper < Fraction(1, 1000)
            assert optimised.lower > crown.lower - Fraction(1, 1000) and optimised.upper < crown.upper + Fraction(1, 1000)
            assert lp.status == pb.INCONCLUSIVE or optimised.status == lp.status
            low, high = pb.exact_bounds(model, 1, flip, box)
            values = [pb.g_value(model, 1, flip, x) for x in pb.box_samples(box, model.scale_bits, 60, rng)]
            assert optimised.lower <= min(low, *values) and optimised.upper >= max(high, *values)
            for slopes in (low_slopes, high_slopes):
                assert all(0 <= a <= 1 << 16 for a in slopes.flat())
                assert len(slopes.flat()) == 2 * sum(hidden)


def test_any_slopes_in_zero_one_give_a_sound_bound():
    """The statement lets the prover choose: random slopes (0, 1, or anything between) bound g validly."""
    model = _model(2)
    rng = random.Random(2)
    query = random_query(model, rng)
    box = pb.perturbation_box(model, query, NUMERIC, Fraction(1))
    flip = pb.single_attribute_flips(model, query)[0]
    net = pb._Net(model, 1)
    low, high = pb.exact_bounds(model, 1, flip, box)
    for _ in range(20):
        copies = tuple(tuple(tuple(rng.choice((0, 1 << 16, rng.randint(0, 1 << 16))) for _ in range(h))
                             for h in model.net.hidden_sizes) for _ in range(2))
        slopes = pb.PairSlopes(16, copies)
        assert pb._backward_lower(model, net, flip, box, 1, 16, slopes) <= low
        assert -pb._backward_lower(model, net, flip, box, -1, 16, slopes) >= high


def test_a_dual_the_propagation_cannot_express_is_polished(monkeypatch):
    """Where the LP's dual does not read off as slopes (here: a reading replaced by all zeros), gradient ascent
    from CROWN's slopes brings the bound back to within a thousandth of a logit of the LP's."""
    honest = pb.lp_slopes

    def unreadable(*args):
        slopes, optimum = honest(*args)
        return pb.PairSlopes(slopes.bits, tuple(tuple((0,) * len(layer) for layer in copy)
                                                for copy in slopes.copies)), optimum

    def far_from_the_lp(model, flip, box) -> bool:  # the zero slopes lose more than a hundredth
        zero = unreadable(model, 1, flip, box, 1, 16)[0]
        return pb._backward_lower(model, pb._Net(model, 1), flip, box, 1, 16, zero) < \
            pb.lp_bounds(model, 1, flip, box).lower - Fraction(1, 100)

    found = None
    for seed in range(8):
        model = _model(seed)
        rng = random.Random(seed)
        for _ in range(4):
            query = random_query(model, rng)
            box = pb.perturbation_box(model, query, NUMERIC, Fraction(1))
            flip = pb.single_attribute_flips(model, query)[0]
            if found is None and far_from_the_lp(model, flip, box):
                found = model, flip, box
    assert found is not None
    model, flip, box = found
    lp = pb.lp_bounds(model, 1, flip, box)
    monkeypatch.setattr(pb, "lp_slopes", unreadable)
    slopes, bound = pb.best_slopes(model, 1, flip, box, 1, 16)
    assert lp.lower - bound < Fraction(1, 1000) and any(0 < a < 1 << 16 for a in slopes.flat())
    monkeypatch.undo()
    assert pb.best_slopes(model, 1, flip, box, 1, 16)[1] >= bound - Fraction(1, 10**4)
