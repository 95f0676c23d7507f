"""Tree ensembles in fixed point: split normalisation, loaders, the bound radius against the exact one.

The libraries' models are trained on tiny synthetic data on a coarse grid (inputs multiples of 1/8, so
quantisation at 2^16 is exact); the radius tests use random integer ensembles, checked against an
independent brute-force enumeration and against sampled points.
"""
from __future__ import annotations

import itertools
import json
import random
from fractions import Fraction

import numpy as np
import pytest

from fairness.errors import CertificationError, DataError, ModelError
from fairness.fixed_point import SensitiveDomain, quantise_vector
from fairness.trees.ensemble import LEAF, Tree, TreeEnsemble, TreeModel, threshold_at_most, threshold_below
from fairness.trees.exact import exact_radius
from fairness.trees.loaders import from_lightgbm, from_sklearn, from_xgboost, from_xgboost_dump
from fairness.trees.radius import CERTIFIED, FLIP, certifies, certify_trees, eps_cap, leaf_box, path_distance

S = 16
ONE = 1 << S


# --------------------------------------------------------------------------- helpers


def grid_data(seed: int, n: int = 240, classes: int = 2) -> tuple[np.ndarray, np.ndarray]:
    """Three free features on the 1/8 grid in [-2, 2] and a sensitive 0/1 code (column 3)."""
    rng = np.random.default_rng(seed)
    X = np.round(rng.uniform(-2, 2, size=(n, 4)) * 8) / 8
    X[:, 3] = rng.integers(0, 2, n)
    z = X[:, 0] + 0.7 * X[:, 1] - 0.4 * X[:, 2] + 0.3 * X[:, 3]
    y = (z > 0).astype(int) if classes == 2 else np.digitize(z, [-0.6, 0.6])
    return X, y


def model_of(ensemble: TreeEnsemble) -> TreeModel:
    """The ensemble over three free inputs in [-2, 2] and a sensitive code in {0, 1} at column 3."""
    lower = (-2 * ONE, -2 * ONE, -2 * ONE, 0)
    upper = (2 * ONE, 2 * ONE, 2 * ONE, ONE)
    return TreeModel(ensemble, lower, upper, (SensitiveDomain.scalar("group", 3, (0, ONE), ("a", "b")),))


def queries(X: np.ndarray, count: int) -> list[tuple[int, ...]]:
    return [quantise_vector(x, S) for x in X[:count]]


def random_tree(rng: random.Random, depth: int, n_inputs: int = 4) -> Tree:
    feature, threshold, left, right, value = [], [], [], [], []

    def add(d: int) -> int:
        i = len(feature)
        for a in (feature, threshold, left, right, value):
            a.append(0)
        if d == 0 or rng.random() < 0.2:
            feature[i], value[i], left[i], right[i] = LEAF, rng.randint(-100, 100), -1, -1
            return i
        f = rng.randrange(n_inputs)
        feature[i] = f
        threshold[i] = ONE // 2 if f == 3 else rng.randint(-2 * ONE, 2 * ONE)
        left[i] = add(d - 1)
        right[i] = add(d - 1)
        return i

    add(depth)
    return Tree(tuple(feature), tuple(threshold), tuple(left), tuple(right), tuple(value))


def random_model(seed: int, trees: int, depth: int, classes: int = 2) -> TreeModel:
    rng = random.Random(seed)
    scores = 1 if classes == 2 else classes
    ens = TreeEnsemble(4, classes, S, 8, tuple(random_tree(rng, depth) for _ in range(trees * scores)),
                       tuple(rng.randint(-30, 30) for _ in range(scores)))
    return model_of(ens)


def random_query(rng: random.Random) -> tuple[int, ...]:
    return (rng.randint(-2 * ONE, 2 * ONE), rng.randint(-2 * ONE, 2 * ONE), rng.randint(-2 * ONE, 2 * ONE),
            rng.choice((0, ONE)))


def brute_radius_sq(model: TreeModel, q: tuple[int, ...]) -> int | None:
    """The smallest squared distance to a flipping leaf combination, by the plain product of all leaves."""
    y = model.ensemble.decision(q)
    best = None
    for s in model.slices():
        per_tree = [t.leaves() for t in model.ensemble.trees]
        for combo in itertools.product(*per_tree):
            lo, hi = list(model.box_lower), list(model.box_upper)
            for c, v in zip(model.sensitive_columns, s):
                lo[c] = hi[c] = v
            ok, strict_hi = True, {}
            for _, path in combo:
                for f, (a, b) in path.items():
                    if a is not None:
                        lo[f] = max(lo[f], a)
                    if b is not None:
                        strict_hi[f] = min(strict_hi.get(f, b), b)
            for f in range(4):
                if lo[f] > hi[f] or (f in strict_hi and lo[f] >= strict_hi[f]):
                    ok = False
                if f in strict_hi:
                    hi[f] = min(hi[f], strict_hi[f])
            if not ok:
                continue
            scores = list(model.ensemble.base)
            for i, (node, _) in enumerate(combo):
                scores[i % len(scores)] += model.ensemble.trees[i].value[node]
            from fairness.trees.ensemble import strict_decision_of

            if strict_decision_of(scores) == y:
                continue
            d2 = sum((lo[c] - q[c]) ** 2 if q[c] < lo[c] else (q[c] - hi[c]) ** 2 if q[c] > hi[c] else 0
                     for c in model.free_columns)
            best = d2 if best is None else min(best, d2)
    return best


def sampled_points(model: TreeModel, q: tuple[int, ...], eps: Fraction, rng: random.Random,
                   n: int = 150) -> list[tuple[Fraction, ...]]:
    """Points closer than eps on the free columns (clipped into the box, which only brings them closer):
    random directions, and moves along each axis onto every threshold of that axis within reach."""
    r_units = eps * ONE  # eps in input units at 2^s
    out = []
    free = model.free_columns
    for _ in range(n):
        d = [rng.gauss(0, 1) for _ in free]
        norm = sum(v * v for v in d) ** 0.5 or 1.0
        r = r_units * Fraction(rng.random()) * Fraction(999, 1000)
        p = list(map(Fraction, q))
        for c, v in zip(free, d):
            p[c] = min(max(p[c] + r * Fraction(v / norm), Fraction(model.box_lower[c])), Fraction(model.box_upper[c]))
        out.append(tuple(p))
    for tree in model.ensemble.trees:
        for f, t in zip(tree.feature, tree.threshold):
            if f in free and abs(t - q[f]) < r_units:
                for v in (Fraction(t), Fraction(t) - Fraction(1, 2)):
                    if abs(v - q[f]) < r_units and model.box_lower[f] <= v <= model.box_upper[f]:
                        p = list(map(Fraction, q))
                        p[f] = v
                        out.append(tuple(p))
    return out


# --------------------------------------------------------------------------- split rules


def test_thresholds_keep_each_librarys_comparison_on_the_grid():
    # x < 0.5 (XGBoost) and x <= 0.5 (LightGBM, scikit-learn) differ exactly at x = 0.5
    assert threshold_below(0.5, S) == ONE // 2 and threshold_at_most(0.5, S) == ONE // 2 + 1
    half = ONE // 2
    tree = Tree((0, LEAF, LEAF), (threshold_below(0.5, S), 0, 0), (1, -1, -1), (2, -1, -1), (0, -1, 1))
    ens = TreeEnsemble(1, 2, S, 0, (tree,), (0,))
    assert ens.decision((half - 1,)) == 0 and ens.decision((half,)) == 1
    tree_le = Tree((0, LEAF, LEAF), (threshold_at_most(0.5, S), 0, 0), (1, -1, -1), (2, -1, -1), (0, -1, 1))
    ens_le = TreeEnsemble(1, 2, S, 0, (tree_le,), (0,))
    assert ens_le.decision((half,)) == 0 and ens_le.decision((half + 1,)) == 1
    # a threshold off the grid is rounded as inputs are: a row equal to it decides as the library
    t = 0.3
    assert TreeEnsemble(1, 2, S, 0, (Tree((0, LEAF, LEAF), (threshold_below(t, S), 0, 0), (1, -1, -1), (2, -1, -1),
                                          (0, -1, 1)),), (0,)).decision(quantise_vector([t], S)) == 1


def test_missing_or_float_inputs_have_no_decision():
    ens = random_model(0, 2, 2).ensemble
    with pytest.raises(DataError, match="not an exact number"):
        ens.decision((0, float("nan"), 0, 0))
    with pytest.raises(DataError, match="takes 4 inputs"):
        ens.decision((0, 0, 0))
    assert ens.decision((0, 0, 0, 0)) in (0, 1)


def test_malformed_trees_are_refused():
    with pytest.raises(ValueError, match="must follow it"):
        Tree((0, LEAF), (0, 0), (0, -1), (1, -1), (0, 1))
    with pytest.raises(ValueError, match="do not split"):
        TreeEnsemble(4, 3, S, 8, (random_tree(random.Random(0), 2),) * 4, (0, 0, 0))
    assert TreeEnsemble(4, 3, S, 8, (random_tree(random.Random(0), 2),) * 3, (0, 0, 0)).n_scores == 3


# --------------------------------------------------------------------------- loaders agree with the libraries


@pytest.mark.parametrize("classes", [2, 3])
def test_xgboost_and_lightgbm_agree_on_every_row(classes):
    import lightgbm as lgb
    import xgboost as xgb

    X, y = grid_data(1, classes=classes)
    xm = xgb.XGBClassifier(n_estimators=5, max_depth=3, n_jobs=1).fit(X, y)
    ens = from_xgboost(bytes(xm.get_booster().save_raw("json")))
    assert ens.n_scores == (1 if classes == 2 else 3) and len(ens.trees) == 5 * ens.n_scores
    assert [ens.decision(q) for q in queries(X, len(X))] == list(xm.predict(X))
    margins = xm.predict(X[:20], output_margin=True)
    got = [np.array(ens.scores(q), dtype=float) / 2 ** ens.value_bits for q in queries(X, 20)]
    assert np.allclose(np.asarray(got).reshape(np.shape(margins)), margins, atol=1e-5)

    lm = lgb.LGBMClassifier(n_estimators=5, num_leaves=6, verbose=-1, n_jobs=1).fit(X, y)
    lens = from_lightgbm(lm.booster_.dump_model(), n_inputs=4)
    assert [lens.decision(q) for q in queries(X, len(X))] == list(lm.predict(X))
    # the rejection twin: a base moved towards one class no longer agrees
    moved = (lens.base[0] + (1 << 40),) + lens.base[1:]
    broken = TreeEnsemble(lens.n_inputs, lens.n_classes, S, lens.value_bits, lens.trees, moved)
    assert [broken.decision(q) for q in queries(X, len(X))] != list(lm.predict(X))


@pytest.mark.parametrize("classes", [2, 3])
def test_sklearn_ensembles_agree_on_every_row(classes):
    from sklearn.ensemble import GradientBoostingClassifier, HistGradientBoostingClassifier, RandomForestClassifier
    from threadpoolctl import threadpool_limits

    X, y = grid_data(2, classes=classes)
    with threadpool_limits(1):
        for clf in (GradientBoostingClassifier(n_estimators=4, max_depth=2, random_state=0),
                    HistGradientBoostingClassifier(max_iter=4, max_depth=3, early_stopping=False),
                    RandomForestClassifier(n_estimators=4, max_depth=3, random_state=0)):
            ens = from_sklearn(clf.fit(X, y))
            assert [ens.decision(q) for q in queries(X, len(X))] == list(clf.predict(X)), type(clf).__name__


def test_xgboost_dump_reads_as_the_json_model():
    import xgboost as xgb

    X, y = grid_data(4)
    xm = xgb.XGBClassifier(n_estimators=4, max_depth=3, n_jobs=1).fit(X, y)
    booster = xm.get_booster()
    ens = from_xgboost(bytes(booster.save_raw("json")))
    base = json.loads(booster.save_config())["learner"]["learner_model_param"]["base_score"]
    p = float(base.strip("[]"))
    dumped = from_xgboost_dump(booster.get_dump(dump_format="json"), n_classes=2,
                               base_margin=[float(np.log(np.float32(p) / (1 - np.float32(p))))], n_inputs=4)
    assert dumped.trees == ens.trees
    assert abs(dumped.base[0] - ens.base[0]) <= 2 ** (ens.value_bits - 20)
    with pytest.raises(ModelError, match="not one of the given feature names"):
        from_xgboost_dump([booster.get_dump(dump_format="json")[0].replace('"f', '"g')], n_classes=2,
                          base_margin=[0.0], n_inputs=4)
    with pytest.raises(ModelError, match="base margin"):
        from_xgboost_dump(booster.get_dump(dump_format="json"), n_classes=2, base_margin=[0.0, 0.0], n_inputs=4)


def test_ensemble_json_round_trip_and_refusals():
    ens = random_model(9, 3, 3, 3).ensemble
    data = json.loads(json.dumps(ens.to_json()))
    assert TreeEnsemble.from_json(data) == ens
    data["trees"][0]["left"][0] = 0  # a cycle
    with pytest.raises(ModelError, match="must follow it"):
        TreeEnsemble.from_json(data)
    data = ens.to_json()
    data["base"] = [1.5, 0, 0]
    with pytest.raises(ModelError, match="base must be a list of integers"):
        TreeEnsemble.from_json(data)
    with pytest.raises(ModelError, match="not a fairproof-trees/1 object"):
        TreeEnsemble.from_json({"format": "other"})


def test_loaders_refuse_what_they_cannot_read():
    import lightgbm as lgb
    import xgboost as xgb

    X, y = grid_data(3)
    with pytest.raises(ModelError, match="not a Booster JSON"):
        from_xgboost({"learner": {}})
    with pytest.raises(ModelError, match="cannot read it as JSON"):
        from_xgboost("{not json")
    xm = xgb.XGBRegressor(n_estimators=2, max_depth=2, n_jobs=1).fit(X, y)
    with pytest.raises(ModelError, match="not a classifier"):
        from_xgboost(bytes(xm.get_booster().save_raw("json")))
    dump = lgb.LGBMClassifier(n_estimators=2, num_leaves=4, verbose=-1, n_jobs=1).fit(X, y).booster_.dump_model()
    node = dump["tree_info"][0]["tree_structure"]
    node["decision_type"] = "=="
    with pytest.raises(ModelError, match="categorical"):
        from_lightgbm(json.loads(json.dumps(dump)))
    node["decision_type"], node["missing_type"] = "<=", "Zero"
    with pytest.raises(ModelError, match="zero_as_missing"):
        from_lightgbm(dump)
    node["missing_type"] = "None"
    assert from_lightgbm(dump).n_classes == 2
    with pytest.raises(ModelError, match="not a tree ensemble"):
        from sklearn.linear_model import LogisticRegression

        from_sklearn(LogisticRegression().fit(X, y))


# --------------------------------------------------------------------------- the exact radius


@pytest.mark.parametrize("classes", [2, 3])
def test_exact_radius_matches_brute_force(classes):
    rng = random.Random(7)
    checked = 0
    for seed in range(12):
        model = random_model(seed, 3 if classes == 2 else 1, 2, classes)
        for _ in range(3):
            q = random_query(rng)
            ex = exact_radius(model, q, eps_bits=16)
            if ex.flip_slice is not None:
                continue
            brute = brute_radius_sq(model, q)
            assert ex.distance_sq == brute
            if brute is not None:
                checked += 1
                # the checked minimiser: a point of the flipping combination at the exact distance's closure
                w = ex.witness
                assert model.ensemble.strict_decision(w) != model.ensemble.decision(q)
                assert sum((ex.nearest[c] - q[c]) ** 2 for c in model.free_columns) == brute
    assert checked >= 10


def test_exact_radius_refuses_an_ensemble_too_large_to_enumerate():
    model = random_model(1, 8, 3)
    q = random_query(random.Random(1))
    with pytest.raises(CertificationError, match="too large"):
        exact_radius(model, q, max_nodes=5)


# --------------------------------------------------------------------------- the bound radius


@pytest.mark.parametrize("classes", [2, 3])
def test_bound_is_never_above_exact_and_equals_it_for_one_tree(classes):
    rng = random.Random(11)
    below = equal_single = 0
    for seed in range(25):
        trees = 1 + seed % 8 if classes == 2 else 1 + seed % 2
        model = random_model(100 + seed, trees, 1 + seed % 3, classes)
        for _ in range(3):
            q = random_query(rng)
            cert = certify_trees(model, q, eps_bits=12)
            ex = exact_radius(model, q, eps_bits=12)
            if cert.status == FLIP:
                assert ex.flip_slice == cert.flip_slice and ex.eps == 0
                continue
            assert cert.eps <= ex.eps
            below += cert.eps < ex.eps
            if len(model.ensemble.trees) == model.ensemble.n_scores == 1:
                assert cert.eps == ex.eps
                equal_single += 1
                if not cert.capped:  # tight: one more step of 2^-t is not certified
                    assert not certifies(model, q, cert.eps + 1, 12)
                    assert certifies(model, q, cert.eps, 12)
    # the bound is sometimes strictly looser on several trees; a binary single tree is always exact
    assert below >= 1 and (equal_single >= 3 or classes == 3)


def test_certified_eps_is_sound_on_sampled_points():
    rng = random.Random(5)
    checked = 0
    for seed in range(8):
        model = random_model(200 + seed, 4, 3, 2 if seed % 2 else 3)
        for _ in range(2):
            q = random_query(rng)
            cert = certify_trees(model, q)
            if cert.status != CERTIFIED or cert.eps == 0:
                continue
            for s in model.slices():
                for p in sampled_points(model, model.with_slice(q, s), cert.eps_value, rng, 60):
                    assert model.ensemble.strict_decision(p) == cert.decision
                    checked += 1
            # the rejection twin: past the exact radius some point of the box decides otherwise
            ex = exact_radius(model, q)
            if ex.distance_sq is not None:
                assert model.ensemble.strict_decision(ex.witness) != cert.decision
    assert checked > 500


def test_flip_is_reported_with_its_slice():
    # one tree on the sensitive column alone: group b decides otherwise
    tree = Tree((3, LEAF, LEAF), (ONE // 2, 0, 0), (1, -1, -1), (2, -1, -1), (0, 5, -5))
    model = model_of(TreeEnsemble(4, 2, S, 0, (tree,), (0,)))
    cert = certify_trees(model, (0, 0, 0, 0))
    assert cert.status == FLIP and cert.eps == 0 and cert.flip_slice == 1 and not cert.tie
    assert exact_radius(model, (0, 0, 0, 0)).flip_slice == 1
    # a tie in the other slice is a flip too (ties are not strict decisions)
    tie = model_of(TreeEnsemble(4, 2, S, 0, (Tree((3, LEAF, LEAF), (ONE // 2, 0, 0), (1, -1, -1), (2, -1, -1),
                                                   (0, 5, 0)),), (0,)))
    assert certify_trees(tie, (0, 0, 0, 0)).tie
    # the twin: a tree ignoring the sensitive column certifies, the radius the distance to its split
    fair = model_of(TreeEnsemble(4, 2, S, 0, (Tree((0, LEAF, LEAF), (ONE // 4, 0, 0), (1, -1, -1), (2, -1, -1),
                                                   (0, 5, -5)),), (0,)))
    cert = certify_trees(fair, (0, 0, 0, 0), eps_bits=8)
    assert cert.status == CERTIFIED and cert.eps_value == Fraction(1, 4)


def test_leaf_box_respects_the_slice_and_the_box():
    model = model_of(TreeEnsemble(4, 2, S, 0, (random_tree(random.Random(0), 1),), (0,)))
    assert leaf_box(model, {3: (None, ONE // 2)}, (ONE,)) is None  # the sensitive value outside the path
    assert leaf_box(model, {3: (None, ONE // 2)}, (0,)) is not None
    assert leaf_box(model, {0: (3 * ONE, None)}, (0,)) is None  # beyond the domain box
    assert leaf_box(model, {0: (None, -2 * ONE)}, (0,)) is None  # x < box lower: empty
    assert leaf_box(model, {0: (None, -2 * ONE + 1)}, (0,)) == ((-2 * ONE, -2 * ONE, -2 * ONE, 0),
                                                                (-2 * ONE + 1, 2 * ONE, 2 * ONE, 0))
    assert eps_cap(model, 0) == 6  # the free box's diagonal: sqrt(3 * 4^2) = 6.9...


def test_path_distance_counts_the_deepest_turn_each_way_and_asks_no_point_to_exist():
    """The bound's reachability: per free column and direction the deepest turn's violation, per sensitive
    column the slice's value taking every turn. In a trained tree the deeper turn the same way is the
    tighter one, so this is the distance to the leaf's interval; a redundant (looser) deeper turn counts
    less, and a path no point takes still gets a distance: both can only make the bound smaller."""
    model = model_of(TreeEnsemble(4, 2, S, 0, (random_tree(random.Random(0), 1),), (0,)))
    q = (0, 0, 0, 0)
    right, left = True, False
    assert path_distance(model, [(0, ONE, right)], (0,), q) == ONE ** 2  # x0 >= 1
    assert path_distance(model, [(0, ONE, right), (1, -ONE, left)], (0,), q) == 2 * ONE ** 2  # and x1 < -1
    assert path_distance(model, [(0, -ONE, right), (0, ONE, left)], (0,), q) == 0  # -1 <= x0 < 1 holds
    assert path_distance(model, [(0, ONE, right), (0, 2 * ONE, right)], (0,), q) == 4 * ONE ** 2  # tighter below
    assert path_distance(model, [(0, 2 * ONE, right), (0, ONE, right)], (0,), q) == ONE ** 2  # redundant: looser
    assert path_distance(model, [(0, ONE, right), (0, 3 * ONE, left)], (0,), q) == ONE ** 2  # 1 <= x0 < 3
    assert path_distance(model, [(3, ONE // 2, left)], (ONE,), q) is None  # the slice's value fails the turn
    assert path_distance(model, [(3, ONE // 2, left)], (0,), q) == 0
    assert path_distance(model, [(3, ONE // 2, left), (3, 0, right)], (0,), q) == 0  # both sensitive turns taken
    assert leaf_box(model, {0: (ONE, -ONE)}, (0,)) is None  # x0 >= 1 and x0 < -1: no point
    assert path_distance(model, [(0, ONE, right), (0, -ONE, left)], (0,), q) == 2 * ONE ** 2  # both ways count
    assert leaf_box(model, {0: (3 * ONE, None)}, (0,)) is None  # past the box
    assert path_distance(model, [(0, 3 * ONE, right)], (0,), q) == 9 * ONE ** 2


def test_queries_outside_the_model_are_refused():
    model = random_model(3, 2, 2)
    with pytest.raises(DataError, match="outside the model's domain box"):
        certify_trees(model, (3 * ONE, 0, 0, 0))
    with pytest.raises(DataError, match="not a value of its domain"):
        certify_trees(model, (0, 0, 0, 7))
    with pytest.raises(CertificationError, match="eps_bits"):
        certify_trees(model, (0, 0, 0, 0), eps_bits=-1)
    assert certify_trees(model, (0, 0, 0, 0)).status in (CERTIFIED, FLIP)


@pytest.mark.parametrize("rule", ["<", "<="])
def test_a_split_on_float32_inputs_is_read_at_the_float32_boundary(rule):
    """XGBoost and scikit-learn's trees compare float32(x): the split sends x right exactly when x passes the
    boundary `float32_boundary` gives, for doubles just either side of every float32 near the threshold.
    The rejection twin: read at t itself, a double just below a float32 threshold goes the wrong way."""
    from fractions import Fraction

    from fairness.trees.loaders import float32_boundary

    rng = np.random.default_rng(7)
    wrong_at_t = 0
    for i, t in enumerate(rng.normal(0, 3, 400)):
        t = float(np.float32(t)) if i % 2 else float(t)  # a float32 threshold (XGBoost's) and a double
        m = float32_boundary(Fraction(t), rule)
        for x32 in (np.nextafter(np.float32(t), np.float32(-np.inf)), np.float32(t), np.nextafter(np.float32(t), np.float32(np.inf))):
            for x in (np.nextafter(float(x32), -np.inf), float(x32), np.nextafter(float(x32), np.inf)):
                if Fraction(float(x)) == m:
                    continue  # the midpoint itself rounds to the even neighbour
                x32_as_double = float(np.float32(x))  # the library's float32 input, compared exactly with t
                library_right = x32_as_double >= t if rule == "<" else x32_as_double > t
                assert (Fraction(float(x)) >= m) == library_right, (t, x)
                wrong_at_t += (Fraction(float(x)) >= Fraction(t) if rule == "<" else Fraction(float(x)) > Fraction(t)) != library_right
    assert wrong_at_t > 0
