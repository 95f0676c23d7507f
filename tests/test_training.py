"""Seeded SGD training, the model cache, and the train / import-model commands."""
from __future__ import annotations

import numpy as np
import pytest

from fairness.datasets import load_dataset
from fairness.errors import ModelError
from fairness.model import load_artifact
from fairness.training import (
    TrainingConfig, default_config, load_or_train, paper_weight_decay, train_mlp, train_on_dataset,
)

torch = pytest.importorskip("torch")


@pytest.fixture(scope="module")
def german():
    return load_dataset("german")


def test_same_seed_gives_identical_weights(german):
    cfg = default_config("german", (4, 2), "fair", seed=5, epochs=5)
    _, a = train_on_dataset(german, cfg)
    _, b = train_on_dataset(german, cfg)
    _, c = train_on_dataset(german, default_config("german", (4, 2), "fair", seed=6, epochs=5))
    assert a.model.equals(b.model)
    assert not a.model.equals(c.model)


def test_german_fair_and_unfair_train_to_sensible_classifiers(german):
    epochs_seen = []
    art, fair = train_on_dataset(german, default_config("german", (4, 2), "fair"),
                                 progress=lambda e, loss, acc: epochs_seen.append((e, loss, acc)))
    _, unfair = train_on_dataset(german, default_config("german", (4, 2), "unfair"))
    assert [e for e, _, _ in epochs_seen] == list(range(1, 51))
    assert epochs_seen[-1][1] < epochs_seen[0][1]  # the loss went down
    # majority class is 70% of German; both must beat it and predict both classes
    for r in (fair, unfair):
        assert r.test_accuracy >= 0.74 and not r.degenerate
        assert len(np.unique(r.model.predict(german.X_test))) == 2
    weight_norm = lambda m: sum(float((w ** 2).sum()) for w in m.weights)  # noqa: E731
    assert weight_norm(fair.model) < weight_norm(unfair.model)  # the decay regularises
    assert art.training["weight_decay"] == 10.0 and art.test_accuracy == fair.test_accuracy


def test_paper_weight_decays():
    assert paper_weight_decay("german", (4, 2), "fair") == 10.0
    assert paper_weight_decay("adult", (8, 2), "fair") == 0.2
    assert paper_weight_decay("credit", (4, 2), "fair") == 2.5
    assert paper_weight_decay("credit", (8, 2), "fair") == 3.0
    assert paper_weight_decay("credit", (8, 2), "unfair") == 0.0
    with pytest.raises(ModelError):
        paper_weight_decay("german", (4, 2), "fairest")


def test_strong_decay_is_flagged_degenerate(german):
    _, r = train_on_dataset(german, default_config("german", (4, 2), weight_decay=2000, epochs=5))
    assert r.degenerate
    with pytest.raises(ModelError, match="diverged"):
        train_on_dataset(german, default_config("german", (4, 2), weight_decay=1e5, epochs=2))


def test_three_classes_and_deeper_net():
    rng = np.random.default_rng(0)
    centres = np.array([[2, 0, 0], [0, 2, 0], [0, 0, 2]], dtype=float)
    y = rng.integers(0, 3, size=600)
    X = centres[y] + rng.normal(scale=0.5, size=(600, 3))
    cfg = TrainingConfig(hidden_sizes=(8, 4, 4), epochs=30, batch_size=32, lr=0.05, seed=1)
    r = train_mlp(X[:500], y[:500], 3, cfg, X_test=X[500:], y_test=y[500:])
    assert r.model.n_classes == 3 and r.model.hidden_sizes == (8, 4, 4)
    assert r.test_accuracy > 0.9


def test_bad_training_input_is_rejected():
    with pytest.raises(ModelError, match="labels"):
        train_mlp(np.zeros((4, 2)), np.array([0, 1, 2, 1]), 2, TrainingConfig(hidden_sizes=(2,)))
    with pytest.raises(ModelError, match="hidden sizes"):
        TrainingConfig(hidden_sizes=(0,))
    with pytest.raises(ModelError, match="non-finite"):
        train_mlp(np.full((2, 2), np.nan), np.array([0, 1]), 2, TrainingConfig(hidden_sizes=(2,)))


def test_load_or_train_caches(tmp_path):
    calls = []
    a = load_or_train("german", (2, 4), "unfair", tmp_path, seed=0, progress=lambda *x: calls.append(x))
    assert len(calls) == 50
    b = load_or_train("german", (2, 4), "unfair", tmp_path, seed=0, progress=lambda *x: calls.append(x))
    assert len(calls) == 50  # second call loaded the cache, no training
    assert a.model.equals(b.model) and a.hidden_sizes == (2, 4)
    (entry,) = [p for p in tmp_path.iterdir() if p.is_dir()]
    (entry / "weights.npz").write_bytes(b"broken")  # a damaged entry is retrained
    c = load_or_train("german", (2, 4), "unfair", tmp_path, seed=0, progress=lambda *x: calls.append(x))
    assert len(calls) == 100 and c.model.equals(a.model)


def test_train_and_import_commands(tmp_path, capsys):
    from prover_service.cli import main

    out = tmp_path / "g"
    rc = main(["train", "--dataset", "german", "--hidden", "4,2", "--variant", "unfair", "--epochs", "5",
               "--seed", "2", "--out", str(out)])
    assert rc == 0
    captured = capsys.readouterr()
    assert "epoch 5/5" in captured.err and "test accuracy" in captured.out and "decisions agree" in captured.out
    art = load_artifact(out)
    assert art.training["epochs"] == 5 and art.seed == 2

    seq = torch.nn.Sequential(torch.nn.Linear(20, 4), torch.nn.ReLU(), torch.nn.Linear(4, 2), torch.nn.ReLU(),
                              torch.nn.Linear(2, 2))
    with torch.no_grad():
        for layer, (w, b) in zip((seq[0], seq[2], seq[4]), zip(art.model.weights, art.model.biases, strict=True)):
            layer.weight.copy_(torch.tensor(w))
            layer.bias.copy_(torch.tensor(b))
    torch.save(seq.state_dict(), tmp_path / "m.pt")
    # A shipped dataset's preprocessing cannot be checked against the bank's pipeline: only --no-check is possible.
    with pytest.raises(SystemExit):
        main(["import-model", "--format", "torch", str(tmp_path / "m.pt"), "--dataset", "german",
              "--out", str(tmp_path / "imp")])
    rc = main(["import-model", "--format", "torch", str(tmp_path / "m.pt"), "--dataset", "german", "--no-check",
               "--out", str(tmp_path / "imp")])
    assert rc == 0
    imported = load_artifact(tmp_path / "imp")
    X = load_dataset("german").X_test
    assert imported.model.hidden_sizes == (4, 2)
    assert np.allclose(imported.model.forward(X), art.model.forward(X), atol=1e-6)  # float32 round trip
    assert imported.test_accuracy == pytest.approx(art.test_accuracy)
    capsys.readouterr()
    rc = main(["import-model", "--format", "torch", str(tmp_path / "m.pt"), "--dataset", "credit", "--no-check",
               "--out", str(tmp_path / "x")])
    assert rc == 1
    assert "takes 20 inputs, expected 23" in capsys.readouterr().err


# --- the fair variant: validation-selected L2 penalty -------------------------------------------

def _synthetic_imbalanced(n=400, seed=0):
    rng = np.random.default_rng(seed)
    y = (rng.random(n) < 0.3).astype(int)
    X = rng.normal(size=(n, 3)) + np.where(y[:, None] == 1, 1.0, -1.0) * np.array([1.0, 0.5, 0.0])
    return X, y


def test_fair_rule_skips_collapsing_lambda_and_matches_a_direct_recomputation():
    from fairness.training import select_fair_l2, validation_split

    X, y = _synthetic_imbalanced()
    cfg = TrainingConfig(hidden_sizes=(4, 2), epochs=40, batch_size=32, lr=0.1, seed=3)
    seen = []
    sel = select_fair_l2(X, y, 2, cfg, grid=(1e-3, 10.0), progress=seen.append)
    # lambda = 10 shrinks the weights to nothing: a constant classifier is never "fair"
    assert [p.l2 for p in sel.points] == [10.0, 1e-3] and seen == list(sel.points)
    assert not sel.points[0].all_classes and not sel.points[0].eligible
    assert sel.points[1].eligible and sel.l2 == 1e-3 and sel.found

    fit, val = validation_split(len(y))
    assert len(fit) + len(val) == len(y) and not set(fit) & set(val) and sel.n_val == len(val) == 80

    def val_correct(l2):
        r = train_mlp(X[fit], y[fit], 2, TrainingConfig(hidden_sizes=(4, 2), epochs=40, batch_size=32, lr=0.1,
                                                        seed=3, l2=l2))
        return int((r.model.predict(X[val]) == y[val]).sum())

    assert sel.reference_val_correct == val_correct(0.0)
    assert sel.points[1].val_correct == val_correct(1e-3)


def test_fair_rule_scores_a_diverging_lambda_as_ineligible():
    from fairness.training import select_fair_l2

    X, y = _synthetic_imbalanced()
    cfg = TrainingConfig(hidden_sizes=(4, 2), epochs=40, batch_size=32, lr=0.3, seed=3)
    sel = select_fair_l2(X, y, 2, cfg, grid=(1e-3, 10.0))  # lr * 10 > 2: the decay step overshoots
    assert sel.points[0].diverged and not sel.points[0].eligible
    assert sel.points[1].l2 == 1e-3 and not sel.points[1].diverged


def test_fair_rule_on_german_picks_the_documented_lambda(german):
    from fairness.training import FAIR_L2_GRID, train_fair_on_dataset

    cfg = default_config("german", (4, 2), "unfair", seed=0)
    art, res, sel = train_fair_on_dataset(german, cfg)
    # seed 0: lambda 0.1 predicts one class on the validation rows, 0.03 is the largest eligible value
    assert sel.grid == tuple(sorted(FAIR_L2_GRID, reverse=True))
    assert [p.l2 for p in sel.points] == [0.1, 0.03] and sel.l2 == 0.03
    assert not sel.points[0].all_classes
    for p in sel.points:  # the rule, restated on the recorded counts
        within = 100 * p.val_correct >= 100 * sel.reference_val_correct - sel.n_val
        assert p.eligible == (p.all_classes and within)
    assert sel.n_fit + sel.n_val == len(german.y_train)
    assert res.config.l2 == 0.03 and res.config.weight_decay == 0.0 and not res.degenerate
    info = art.training
    assert info["regularisation_rule"] == "fair_selection" and info["training_version"] == 2
    assert info["fair_selection"]["l2"] == 0.03 and len(info["fair_selection"]["points"]) == 2
    assert info["fair_selection"]["points"][1]["val_accuracy"] == sel.points[1].val_accuracy


def test_fair_rule_never_reads_the_test_split(german):
    import dataclasses

    from fairness.training import train_fair_on_dataset

    cfg = default_config("german", (4, 2), "unfair", seed=0)
    _, a, sel_a = train_fair_on_dataset(german, cfg)
    scrambled = dataclasses.replace(german, X_test=german.X_test[::-1] * -3.0, y_test=1 - german.y_test)
    _, b, sel_b = train_fair_on_dataset(scrambled, cfg)
    strip = lambda s: [(p.l2, p.val_correct, p.all_classes, p.eligible) for p in s.points]  # noqa: E731
    assert strip(sel_a) == strip(sel_b) and sel_a.reference_val_correct == sel_b.reference_val_correct
    assert a.model.equals(b.model)
    assert a.test_accuracy != b.test_accuracy  # the scrambled test split was really different


def test_fair_rule_rejects_bad_settings():
    from fairness.training import select_fair_l2, validation_split

    X, y = _synthetic_imbalanced(40)
    cfg = TrainingConfig(hidden_sizes=(2,), epochs=1)
    with pytest.raises(ModelError, match="grid"):
        select_fair_l2(X, y, 2, cfg, grid=(0.1, -1.0))
    with pytest.raises(ModelError, match="grid"):
        select_fair_l2(X, y, 2, cfg, grid=())
    with pytest.raises(ModelError, match="validation fraction"):
        validation_split(40, 1.0)
    with pytest.raises(ModelError, match="too few"):
        validation_split(2, 0.1)
    with pytest.raises(ModelError, match="l2"):
        TrainingConfig(hidden_sizes=(2,), l2=-0.5)


def test_train_command_fair_selection_and_explicit_weight_decay(tmp_path, capsys):
    from prover_service.cli import main

    rc = main(["train", "--dataset", "german", "--variant", "fair", "--out", str(tmp_path / "f")])
    assert rc == 0
    captured = capsys.readouterr()
    assert "l2 0.1: validation accuracy" in captured.err and "one class only" in captured.err
    assert "fair l2 = 0.03" in captured.out
    fair = load_artifact(tmp_path / "f")
    assert fair.training["l2"] == 0.03 and fair.training["fair_selection"]["found"]

    rc = main(["train", "--dataset", "german", "--variant", "fair", "--weight-decay", "10", "--quiet",
               "--out", str(tmp_path / "p")])
    assert rc == 0
    paper = load_artifact(tmp_path / "p")
    assert paper.training["weight_decay"] == 10.0 and paper.training["l2"] == 0.0
    assert paper.training["regularisation_rule"] == "explicit" and "fair_selection" not in paper.training
