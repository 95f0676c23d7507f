"""A bank's tree-ensemble pipeline on German credit: the checked import and the certificate on its model.

The bank fits Pipeline(ColumnTransformer(StandardScaler, OneHotEncoder), <ensemble>) on the first 300
rows of german.data (foreign_worker sensitive, one-hot); the importer reads the schema from the fitted
preprocessing and the trees from the classifier, and the checked import compares the fixed-point
ensemble with the bank's own pipeline on every row.
"""
from __future__ import annotations

import dataclasses
import random
import re
from fractions import Fraction

import numpy as np
import pytest

from fairness.errors import ModelError
from fairness.fixed_point import quantise_vector
from fairness.trees.ensemble import Tree
from fairness.trees.exact import exact_radius
from fairness.trees.radius import CERTIFIED, certify_trees
from prover_service.importers import BankFacts
from prover_service.importers.trees import TreeBankModel, check_tree_import, imported_decisions, read_tree_pipeline
from tests.bank_pipelines import GERMAN, column_transformer, frame, german_rows
from tests.test_trees import sampled_points

FACTS = BankFacts(name="german-trees", sensitive=("foreign_worker",),
                  domains={"duration": (4, 72), "credit_amount": (250, 18424), "age": (19, 75),
                           "installment_commitment": (1, 4), "residence_since": (1, 4)},
                  units={"duration": "months"}, label_column="decision",
                  value_labels={"foreign_worker": {"A201": "foreign worker", "A202": "not a foreign worker"}})


@pytest.fixture(scope="module")
def german():
    rows = german_rows(300)
    records = [{k: v for k, v in r.items() if k != GERMAN.label} for r in rows]
    y = np.array([r[GERMAN.label] == "good" for r in rows], dtype=int)
    return frame(GERMAN, rows), y, records


def classifiers() -> dict[str, object]:
    import lightgbm as lgb
    import xgboost as xgb
    from sklearn.ensemble import GradientBoostingClassifier, HistGradientBoostingClassifier, RandomForestClassifier

    return {
        "xgboost": xgb.XGBClassifier(n_estimators=6, max_depth=3, n_jobs=1),
        "lightgbm": lgb.LGBMClassifier(n_estimators=6, num_leaves=8, verbose=-1, n_jobs=1),
        "gradient_boosting": GradientBoostingClassifier(n_estimators=6, max_depth=3, random_state=0),
        "hist_gradient_boosting": HistGradientBoostingClassifier(max_iter=6, max_depth=3, early_stopping=False),
        "random_forest": RandomForestClassifier(n_estimators=6, max_depth=4, random_state=0),
    }


def fit(name: str, df, y) -> TreeBankModel:
    from sklearn.pipeline import Pipeline
    from threadpoolctl import threadpool_limits

    with threadpool_limits(1):
        pipe = Pipeline([("prepare", column_transformer(GERMAN)), ("classify", classifiers()[name])]).fit(df, y)
    return read_tree_pipeline(pipe, FACTS)


@pytest.fixture(scope="module")
def xgb_bank(german) -> TreeBankModel:
    df, y, _ = german
    return fit("xgboost", df, y)


@pytest.mark.parametrize("name", ["xgboost", "lightgbm", "gradient_boosting", "hist_gradient_boosting",
                                  "random_forest"])
def test_import_agrees_with_the_banks_pipeline_on_every_row(german, name):
    df, y, records = german
    bank = fit(name, df, y)
    assert bank.schema.sensitive == ("foreign_worker",)
    assert bank.model.sensitive_columns == (22, 23) and len(bank.model.slices()) == 2  # one-hot, two values
    check = check_tree_import(bank, records)
    assert check.rows == 300 and "all agree" in check.summary()
    # the recorded decisions (the bank's own, here its runtime's) agree too; a wrong record is named
    run = bank.runtime.decide(records)
    check_tree_import(bank, records, recorded=run)
    wrong = run.copy()
    wrong[7] = 1 - wrong[7]
    with pytest.raises(ModelError, match=r"on 1 of 300 rows: row 8: recorded"):
        check_tree_import(bank, records, recorded=wrong)


def test_a_tampered_threshold_is_refused_naming_the_rows(german, xgb_bank):
    _, _, records = german
    bank = xgb_bank
    honest = imported_decisions(bank, records)
    ens = bank.model.ensemble
    for node, f in enumerate(ens.trees[0].feature):  # move one split of the first tree until decisions change
        if f < 0:
            continue
        t = ens.trees[0]
        threshold = list(t.threshold)
        threshold[node] += 1 << (ens.scale_bits + 1)  # two standard units
        tampered_tree = Tree(t.feature, tuple(threshold), t.left, t.right, t.value)
        tampered = dataclasses.replace(ens, trees=(tampered_tree,) + ens.trees[1:])
        model = dataclasses.replace(bank.model, ensemble=tampered)
        broken = dataclasses.replace(bank, model=model)
        changed = np.flatnonzero(imported_decisions(broken, records) != honest)
        if len(changed):
            break
    else:
        pytest.fail("no single threshold change altered a decision")
    with pytest.raises(ModelError) as err:
        check_tree_import(broken, records)
    named = [int(v) for v in re.findall(r"row (\d+):", str(err.value))]
    assert named == [int(i) + 1 for i in changed[:10]]
    assert f"on {len(changed)} of 300 rows" in str(err.value)


def test_a_pipeline_that_is_not_a_tree_ensemble_is_refused(german):
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import Pipeline

    df, y, _ = german
    pipe = Pipeline([("prepare", column_transformer(GERMAN)), ("classify", LogisticRegression(max_iter=200))]).fit(df, y)
    with pytest.raises(ModelError, match="not a tree ensemble"):
        read_tree_pipeline(pipe, FACTS)
    with pytest.raises(ModelError, match="expected a fitted Pipeline"):
        read_tree_pipeline(pipe[-1], FACTS)


def test_missing_values_are_refused(german, xgb_bank):
    _, _, records = german
    record = dict(records[0], age="")
    with pytest.raises(Exception, match="age: value is empty"):
        imported_decisions(xgb_bank, [record])
    assert len(imported_decisions(xgb_bank, records[:1])) == 1


def test_certificates_on_the_banks_model_are_sound(german, xgb_bank):
    _, _, records = german
    bank = xgb_bank
    rng = random.Random(3)
    certified = 0
    for record in records[:12]:
        q = quantise_vector(bank.schema.encode({a: record[a] for a in bank.schema.attributes}), bank.model.scale_bits)
        cert = certify_trees(bank.model, q)
        if cert.status != CERTIFIED:
            continue
        certified += 1
        for s in bank.model.slices():
            for p in sampled_points(bank.model, bank.model.with_slice(q, s), cert.eps_value, rng, 30):
                assert bank.model.ensemble.strict_decision(p) == cert.decision
    assert certified >= 6


def test_bound_below_exact_on_a_small_german_ensemble(german):
    df, y, records = german
    import xgboost as xgb
    from sklearn.pipeline import Pipeline

    pipe = Pipeline([("prepare", column_transformer(GERMAN)),
                     ("classify", xgb.XGBClassifier(n_estimators=4, max_depth=2, n_jobs=1))]).fit(df, y)
    bank = read_tree_pipeline(pipe, FACTS)
    check_tree_import(bank, records)
    compared = 0
    for record in records[:10]:
        q = quantise_vector(bank.schema.encode({a: record[a] for a in bank.schema.attributes}), bank.model.scale_bits)
        cert = certify_trees(bank.model, q)
        ex = exact_radius(bank.model, q)
        assert cert.eps <= ex.eps
        if ex.distance_sq is not None:
            # the exact radius is attained: its witness decides otherwise, just past eps
            assert bank.model.ensemble.strict_decision(ex.witness) != cert.decision
            assert Fraction(ex.distance_sq, 1 << (2 * bank.model.scale_bits)) >= cert.eps_value ** 2
            compared += 1
    assert compared >= 5


def test_a_scaled_sensitive_column_is_composed_into_thresholds(german):
    """A scaler after the one-hot encoder: the schema keeps the 0/1 points, the thresholds absorb the scaling."""
    import lightgbm as lgb
    from sklearn.compose import ColumnTransformer
    from sklearn.pipeline import Pipeline
    from sklearn.preprocessing import MinMaxScaler, OneHotEncoder, StandardScaler

    df, _, records = german
    # labels that depend on the sensitive column, so that the trees split on it
    y = ((df["foreign_worker"] == "A202") | (df["duration"] < 12)).to_numpy().astype(int)
    ct = ColumnTransformer([("num", StandardScaler(), list(GERMAN.numeric)),
                            ("sens", Pipeline([("onehot", OneHotEncoder(sparse_output=False)),
                                               ("scale", MinMaxScaler(feature_range=(5, 7)))]), ["foreign_worker"])])
    clf = lgb.LGBMClassifier(n_estimators=8, num_leaves=8, min_child_samples=3, verbose=-1, n_jobs=1)
    pipe = Pipeline([("prepare", ct), ("classify", clf)]).fit(df, y)
    bank = read_tree_pipeline(pipe, FACTS)
    assert any("composed exactly into that input's thresholds" in n for n in bank.notes)
    assert bank.model.sensitive_columns == (5, 6)
    assert any(f in (5, 6) for t in bank.model.ensemble.trees for f in t.feature)
    check_tree_import(bank, records)
    # the twin: the same trees read without the scaling split the 0/1 inputs at ~6 and decide otherwise
    from fairness.trees.loaders import from_lightgbm

    plain = from_lightgbm(clf.booster_.dump_model(), n_inputs=bank.model.ensemble.n_inputs)
    unscaled = dataclasses.replace(bank, model=dataclasses.replace(bank.model, ensemble=plain))
    with pytest.raises(ModelError, match="does not decide as the bank's model"):
        check_tree_import(unscaled, records)
