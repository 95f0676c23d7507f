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

import pytest

from commitments.bundle import CertificateBundle
from commitments.card import ModelCard
from fairness.errors import CertificationError, ModelError
from prover_service.tree_proving import TreeProver, TreeWorkspace, commit_trees
from tree_bank import TreeBank
from verifier_client.verify import verify_bundle

@pytest.fixture(scope="module", params=["xgboost", "lightgbm"])
def committed(request, tmp_path_factory):
    bank = TreeBank(tmp_path_factory.mktemp(request.param) / "model", library=request.param, n_proved=1,
                    model_id=f"german-{request.param}")
    return bank.workspace, bank.card, bank, bank.backend


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
    workspace, card, bank, backend = committed
    bundle = bank.bundles[0]
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
    workspace, card, bank, backend = committed
    import shutil

    twin = TreeWorkspace.open(shutil.copytree(workspace.root, tmp_path / "twin"))
    forged_card = commit_trees(twin, backend, model_id=card.model_id, force=True)
    assert forged_card.digest() != card.digest()
    bundle = TreeProver(twin, backend).prove(bank.bundles[0].query).bundle
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


# ------------------------------------------------------------------------------------------ the commands


def _bank_files(root: Path, library: str = "xgboost"):
    """The bank's pipeline.joblib, facts.yaml and scored.csv (its raw rows and its own decision of each)."""
    import joblib
    import yaml

    from bank_pipelines import GERMAN, frame, german_rows, write_csv
    from tree_bank import FACTS, fitted_pipeline

    pipe, records = fitted_pipeline(library)
    root.mkdir(parents=True, exist_ok=True)
    joblib.dump(pipe, root / "pipeline.joblib")
    facts = {"name": FACTS.name, "label_column": "decision", "sensitive": list(FACTS.sensitive),
             "domains": {k: list(v) for k, v in FACTS.domains.items()}, "units": dict(FACTS.units),
             "value_labels": {k: dict(v) for k, v in FACTS.value_labels.items()}}
    (root / "facts.yaml").write_text(yaml.safe_dump(facts))
    decisions = [str(int(d)) for d in pipe.predict(frame(GERMAN, german_rows(300)))]
    write_csv(root / "scored.csv", german_rows(300), decisions)
    return pipe, records, decisions


def test_the_commands_import_commit_certify_prove_and_verify(tmp_path, capsys):
    from prover_service.cli import main as fairproof
    from verifier_client.cli import main as verify

    _, records, decisions = _bank_files(tmp_path)
    model = tmp_path / "model"
    assert fairproof(["import-model", str(tmp_path / "pipeline.joblib"), "--facts", str(tmp_path / "facts.yaml"),
                      "--check", str(tmp_path / "scored.csv"), "--out", str(model)]) == 0, capsys.readouterr().err
    said = capsys.readouterr().out
    assert "4 trees over" in said and "decisions checked on 300 rows" in said
    assert fairproof(["commit", "--model", str(model)]) == 0, capsys.readouterr().err
    assert "committed tree ensemble" in capsys.readouterr().out
    card = ModelCard.from_json((model / "card.json").read_bytes())
    assert card.import_check and "300 rows" in card.import_check

    from circuits.backends import get_backend

    prover = TreeProver(TreeWorkspace.open(model), get_backend())
    schema = card.feature_schema
    for index, record in enumerate(records):  # the first customer with a provable certificate
        raw = {a: record[a] for a in schema.attributes}
        try:
            prover.prove(TreeBank.query_of(prover.model, schema, raw))
        except CertificationError:
            continue
        break
    (tmp_path / "customer.json").write_text(json.dumps(raw))
    assert fairproof(["certify", "--model", str(model), "--record", str(tmp_path / "customer.json"), "--json"]) == 0
    certified = json.loads(capsys.readouterr().out)
    assert certified["radius"] == "bound" and certified["decision"] == int(decisions[index])
    bundle = tmp_path / "bundle.json"
    assert fairproof(["prove", "--model", str(model), "--index", str(index), "--data", str(tmp_path / "scored.csv"),
                      "--out", str(bundle)]) == 0, capsys.readouterr().err
    assert "eps: " in capsys.readouterr().out
    proved = CertificateBundle.model_validate_json(bundle.read_text())
    assert proved.eps.numerator == certified["eps_numerator"]
    assert verify([str(bundle), "--card", str(model / "card.json"), "--record", str(tmp_path / "customer.json")]) == 0
    out = capsys.readouterr().out
    assert "VALID" in out and "the worst leaf each tree can reach within eps" in out and "the trees the bank" in out
    assert fairproof(["export-snarkjs", str(bundle), str(tmp_path / "snarkjs"), "--card", str(model / "card.json")]) == 0
    assert "proves the bound radius (the worst reachable leaf of each tree" in capsys.readouterr().out
    assert json.loads((tmp_path / "snarkjs" / "public.json").read_text()) == list(proved.public_signals)

    # the rejection twins: another customer's record; options a tree ensemble has no use for
    age = int(raw["age"])
    other = dict(raw, age=str(age + 1 if age < 75 else age - 1))
    (tmp_path / "other.json").write_text(json.dumps(other))
    assert verify([str(bundle), "--card", str(model / "card.json"), "--record", str(tmp_path / "other.json")]) == 1
    assert fairproof(["prove", "--model", str(model), "--record", str(tmp_path / "customer.json"), "--out",
                      str(tmp_path / "b2.json"), "--per-slice"]) == 1
    assert "--per-slice do(es) not apply" in capsys.readouterr().err


def test_an_import_that_disagrees_with_the_banks_decisions_is_refused_naming_the_rows(tmp_path, capsys):
    from bank_pipelines import german_rows, write_csv
    from prover_service.cli import main as fairproof

    _, _, decisions = _bank_files(tmp_path)
    wrong = list(decisions)
    wrong[4] = "1" if wrong[4] == "0" else "0"
    write_csv(tmp_path / "wrong.csv", german_rows(300), wrong)
    assert fairproof(["import-model", str(tmp_path / "pipeline.joblib"), "--facts", str(tmp_path / "facts.yaml"),
                      "--check", str(tmp_path / "wrong.csv"), "--out", str(tmp_path / "model")]) == 1
    err = capsys.readouterr().err
    assert "import refused" in err and "on 1 of 300 rows: row 6: recorded" in err
    assert not (tmp_path / "model" / "trees.json").exists()


# ------------------------------------------------------------------------------------------- the service


def test_the_service_serves_a_tree_ensemble_and_its_customer_verifies_the_certificate(committed, tmp_path):
    """Registered like any model: its card published in the log, a customer's record decided and proved by a
    worker, the bundle (with its log evidence) verified by the customer under the published card; a radius
    mode the tree statement does not prove is refused (422) before any job."""
    import shutil
    import time

    from fastapi.testclient import TestClient

    from prover_service.service.app import create_app
    from prover_service.service.settings import Settings

    workspace, card, bank, backend = committed
    admin = {"X-API-Key": "k" * 32}
    models = tmp_path / "models"
    shutil.copytree(workspace.root, models / "trees")
    record = {a: bank.proved_records[0][a] for a in card.feature_schema.attributes}
    with TestClient(create_app(Settings(models_dir=models, admin_api_key=admin["X-API-Key"], workers=1))) as client:
        assert client.post("/v1/admin/models", json={"directory": "trees"}, headers=admin).status_code == 201
        published = ModelCard.from_json(client.get(f"/v1/models/{card.model_id}/card").content)
        assert published.digest() == card.digest()
        refused = client.post(f"/v1/models/{card.model_id}/decisions", json={"record": record, "radius": "exact"})
        assert refused.status_code == 422 and "tree ensemble" in refused.json()["detail"], refused.text
        bad = client.post(f"/v1/models/{card.model_id}/decisions", json={"record": {**record, "age": "800"}})
        assert bad.status_code == 422
        accepted = client.post(f"/v1/models/{card.model_id}/decisions", json={"record": record}).json()
        headers = {"X-Job-Token": accepted["job_token"]}
        deadline = time.monotonic() + 120
        while (job := client.get(f"/v1/jobs/{accepted['job_id']}", headers=headers).json())["status"] not in (
                "succeeded", "failed") and time.monotonic() < deadline:
            time.sleep(0.2)
        assert job["status"] == "succeeded", job
        served = CertificateBundle.model_validate_json(client.get(job["certificate_url"], headers=headers).content)
        report = _monitor(client, tmp_path / "auditor")
    # the auditor's monitor follows the log: the tree card and its certificate, no violation
    assert report.exit_status == 0 and report.violations == []
    followed = report.report["models"][card.model_id]
    assert followed["certificates"] == 1 and followed["cards_published"] == 1
    assert followed["eps_values"] == [served.eps.decimal] if served.status == "certified" else followed["flips"] == 1
    assert served.decision == bank.bundles[0].decision == accepted["decision"]
    verdict = verify_bundle(served, published, backend, query=bank.bundles[0].query)
    assert verdict.valid, verdict.reasons
    assert verdict.claims.eps_numerator == bank.bundles[0].eps.numerator


def _monitor(client, state: Path):
    """The auditor's monitor (verifier_client.monitor) over the in-process service."""
    import httpx

    from verifier_client.monitor import monitor
    from verifier_client.service_client import ServiceClient

    def handle(request: httpx.Request) -> httpx.Response:
        answer = client.request(request.method, request.url.raw_path.decode("ascii"), content=request.content,
                                headers={"content-type": "application/json"})
        return httpx.Response(answer.status_code, content=answer.content,
                              headers={"content-type": answer.headers.get("content-type", "application/json")})

    with ServiceClient("http://bank.test", transport=httpx.MockTransport(handle)) as service:
        return monitor(service, state)


# ------------------------------------------------------------------------------------------ key ceremonies


def test_a_ceremony_replaces_the_banks_own_key_and_its_audit_passes(committed, tmp_path, capsys):
    """The bank commits with a key of its own; a ceremony (the bank, an auditor, a beacon) for the committed
    statement replaces it; the auditor's audit-keys rebuilds the tree statement from the card and checks
    the chain; a customer who trusts the auditor accepts the new bundle and refused the old card's key."""
    import shutil

    from prover_service.cli import main as fairproof

    workspace, card, bank, backend = committed
    model = Path(shutil.copytree(workspace.root, tmp_path / "model"))
    bucket = card.circuits[0].bucket
    assert fairproof(["groth16", "dev-ptau", "13", str(tmp_path / "phase1.ptau")]) == 0
    assert fairproof(["ceremony", "init", "--model", str(model), "--bucket", bucket, "--ptau",
                      str(tmp_path / "phase1.ptau"), "--out", str(tmp_path / "c")]) == 0, capsys.readouterr().err
    assert fairproof(["ceremony", "contribute", str(tmp_path / "c"), "--name", "auditor.example"]) == 0
    assert fairproof(["ceremony", "finalize", str(tmp_path / "c"), "--beacon", "5e" * 16]) == 0
    assert fairproof(["ceremony", "install", str(tmp_path / "c"), "--model", str(model)]) == 0, capsys.readouterr().err
    installed = ModelCard.from_json((model / "card.json").read_bytes())
    (new_bucket,) = installed.circuits
    assert new_bucket.setup.method == "ceremony" and new_bucket.r1cs_digest == card.circuits[0].r1cs_digest
    assert installed.commitment == card.commitment and installed.digest() != card.digest()
    auditor = next(c.hash for c in new_bucket.setup.contributions if c.name == "auditor.example")

    bundle = TreeProver(TreeWorkspace.open(model), backend).prove(bank.bundles[0].query).bundle
    assert verify_bundle(bundle, installed, backend, trusted_contributors=[auditor]).valid
    # the rejection twin: the bank's own key, under the old card, is refused by the same customer
    refused = verify_bundle(bank.bundles[0], card, backend, trusted_contributors=[auditor])
    assert not refused.valid and refused.code == "customer.contributor"

    from prover_service.key_audit import audit_card

    shutil.copyfile(model / "keys" / bucket / "bucket.zkey", tmp_path / f"{bucket}.zkey")
    audit = audit_card(installed, tmp_path / "phase1.ptau", tmp_path, backend)
    assert audit.ok, [r.reason for r in audit.buckets]
    own = audit_card(card, tmp_path / "phase1.ptau", tmp_path, backend)  # the bank alone: nothing to check
    assert not own.ok and "set up by the bank alone" in own.buckets[0].reason
