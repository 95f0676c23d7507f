"""A bank's XGBoost and LightGBM pipelines end to end: import, commit, prove, and the customer's verdict.

The bank fits Pipeline(ColumnTransformer(StandardScaler, OneHotEncoder), <ensemble>) on the first 300 rows of
german.data (foreign worker sensitive, one-hot); `fairproof import-model` reads it under the bank's facts and
checks it on the bank's rows, `fairproof commit` commits to the ensemble and sets up the tree statement's key,
`fairproof prove` proves a customer's certificate, and `fairproof-verify` (and every verifier reading the
card) accepts it. Each acceptance has its forgery: a bank that edits the bundle's signals, re-publishes the
card with a bucket of another kind, or proves under a key of its own is refused.
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from commitments.bundle import CertificateBundle
from commitments.card import ModelCard
from fairness.errors import CertificationError, ModelError
from fairness.fixed_point import quantise_vector
from prover_service.importers.trees import check_tree_import, read_tree_pipeline
from prover_service.tree_proving import TreeProver, TreeWorkspace, commit_trees, save_tree_model
from tests.bank_pipelines import GERMAN, column_transformer, frame, german_rows
from tests.test_trees_import import FACTS
from verifier_client.verify import verify_bundle

pytestmark = pytest.mark.integration


def fitted(library: str):
    import lightgbm as lgb
    import xgboost as xgb
    from sklearn.pipeline import Pipeline
    from threadpoolctl import threadpool_limits

    rows = german_rows(300)
    y = np.array([r[GERMAN.label] == "good" for r in rows], dtype=int)
    clf = (xgb.XGBClassifier(n_estimators=4, max_depth=2, n_jobs=1) if library == "xgboost"
           else lgb.LGBMClassifier(n_estimators=4, num_leaves=4, max_depth=2, verbose=-1, n_jobs=1))
    with threadpool_limits(1):
        pipe = Pipeline([("prepare", column_transformer(GERMAN)), ("classify", clf)]).fit(frame(GERMAN, rows), y)
    records = [{k: v for k, v in r.items() if k != GERMAN.label} for r in rows]
    return pipe, records


@pytest.fixture(scope="module", params=["xgboost", "lightgbm"])
def committed(request, tmp_path_factory):
    from circuits.backends import get_backend

    pipe, records = fitted(request.param)
    bank = read_tree_pipeline(pipe, FACTS)
    check = check_tree_import(bank, records)
    root = save_tree_model(tmp_path_factory.mktemp(request.param) / "model", bank.model.ensemble, bank.schema,
                           {"source": bank.source, "import_check": {"rows": check.rows, "runtime": check.runtime}})
    workspace = TreeWorkspace.open(root)
    backend = get_backend()
    card = commit_trees(workspace, backend, model_id=f"german-{request.param}")
    return workspace, card, bank, records, backend


def provable(workspace: TreeWorkspace, bank, records, prover: TreeProver):
    """The first customer with a certificate the statement proves (a positive eps, or a flip)."""
    s = bank.model.scale_bits
    for record in records:
        query = quantise_vector(bank.schema.encode({a: record[a] for a in bank.schema.attributes}), s)
        try:
            return prover.prove(query)
        except CertificationError:
            continue
    pytest.fail("no customer with a provable certificate")


def test_the_card_says_tree_ensemble_and_reads_back(committed):
    workspace, card, *_ = committed
    again = ModelCard.from_json(workspace.files.card_path.read_bytes())
    assert again == card and again.digest() == card.digest()
    assert card.architecture.kind == "tree-ensemble" and card.architecture.hidden_sizes == ()
    (bucket,) = card.circuits
    assert bucket.bucket == f"t{bucket.shape.n_trees}-d{bucket.shape.depth}-bound"
    assert bucket.shape.radius == "bound" and not bucket.shape.per_slice
    published = json.loads(workspace.files.card_path.read_text())
    assert published["architecture"]["kind"] == "tree-ensemble"


def test_a_customer_certificate_verifies_and_its_forgeries_do_not(committed):
    workspace, card, bank, records, backend = committed
    prover = TreeProver(workspace, backend)
    result = provable(workspace, bank, records, prover)
    bundle = result.bundle
    verdict = verify_bundle(bundle, card, backend, query=bundle.query)
    assert verdict.valid, verdict.reasons
    assert verdict.claims.model_kind == "tree-ensemble" and verdict.claims.radius == "bound"

    # a larger E in the signals and the readable field: the pairing refuses it
    signals = list(bundle.public_signals)
    signals[2] = str(int(signals[2]) + 1)
    raised = bundle.model_copy(update={"public_signals": tuple(signals),
                                       "eps": bundle.eps.model_copy(update={"numerator": bundle.eps.numerator + 1})})
    refused = verify_bundle(raised, card, backend, query=bundle.query)
    # (past the bucket's cap the claims refuse it before any pairing)
    assert not refused.valid and refused.code == ("claims.eps-cap" if bundle.eps.capped else "proof.rejected")

    # another customer's record
    other = list(bundle.query)
    other[0] = bundle.query[0] + 1 if bundle.query[0] < card.box_upper[0] else bundle.query[0] - 1
    assert verify_bundle(bundle, card, backend, query=tuple(other)).code == "customer.record"


def test_a_bundle_under_a_key_the_bank_set_up_again_is_refused(committed, tmp_path):
    """The bank re-publishes the card with a new key of its own (new toxic waste) and proves under it: the
    customer's pinned card names the old key, so the new bundle's card digest is refused."""
    workspace, card, bank, records, backend = committed
    import shutil

    twin = TreeWorkspace.open(shutil.copytree(workspace.root, tmp_path / "twin"))
    forged_card = commit_trees(twin, backend, model_id=card.model_id, force=True)
    assert forged_card.digest() != card.digest()
    bundle = provable(twin, bank, records, TreeProver(twin, backend)).bundle
    assert verify_bundle(bundle, forged_card, backend).valid  # valid under the card it names ...
    refused = verify_bundle(bundle, card, backend)  # ... never under the pinned one
    assert not refused.valid and refused.code == "claims.card-digest"
    # nor with the digest re-pointed at the pinned card: the commitment (a new salt) differs
    renamed = bundle.model_copy(update={"card_digest": card.digest()})
    assert verify_bundle(renamed, card, backend).code == "claims.commitment"


def test_a_card_mixing_a_network_bucket_into_a_tree_ensemble_is_refused(committed):
    _, card, *_ = committed
    value = card.published_value()
    value["architecture"].pop("kind")  # re-published as a network's card with the tree bucket
    with pytest.raises(Exception, match="network statements"):
        ModelCard.model_validate(value)
    value = card.published_value()
    value["architecture"]["hidden_sizes"] = [4]
    with pytest.raises(Exception, match="no hidden layers"):
        ModelCard.model_validate(value)


def test_a_directory_of_another_kind_is_refused(tmp_path):
    with pytest.raises(ModelError, match="not a tree-ensemble model directory"):
        TreeWorkspace.open(tmp_path)
