"""Training of the fully connected ReLU classifiers (PyTorch, CPU, seeded).

Optimiser: plain mini-batch SGD on the cross-entropy, as in the FairProof paper.

The "fair" variant. The paper's "fair" models use weight decay 10 (German),
0.2 (Adult), 2.5 / 3 (Credit, hidden (4,2) / (8,2)). Read literally as the
per-step decay of `torch.optim.SGD(weight_decay=...)`, every one of these
collapses the network to a constant classifier; read as the coefficient of
the summed loss (mean CE + wd/(2N) * sum ||W||^2, what `--weight-decay`
still does) they are weak on Adult and Credit, and no single scaling of the
paper's numbers both avoids collapse on German and separates fair from
unfair on Adult.

`TrainingResult.degenerate` flags a classifier that predicts one class on the
whole test set, so a too-strong decay is never silently accepted.

The fair variant (`select_fair_l2`, `train_fair_on_dataset`, and
`load_or_train(variant="fair")`) therefore does not use the paper's numbers.
It is defined by a rule fixed in advance that never looks at certified radii
or at the test split:

    objective(lambda) = mean cross-entropy + (lambda / 2) * sum_l ||W_l||_F^2

    1. Carve a validation split (VALIDATION_FRACTION of the training rows,
       permutation seeded by VALIDATION_SPLIT_SEED) off the training split.
    2. Train the reference model (lambda = 0) and each lambda of
       FAIR_L2_GRID on the remaining rows, all with the same schedule and
       seed as the unfair model.
    3. lambda is eligible when its model (a) predicts every class on the
       validation rows and (b) has validation accuracy at most
       MAX_VALIDATION_DROP_POINTS percentage points below the reference
       (exact integer test: 100 * correct >= 100 * correct_ref - drop * n_val).
    4. The fair lambda is the largest eligible grid value. The grid is tried
       from the largest value down and stops at the first eligible one (the
       smaller values cannot change the choice). If none is eligible, lambda
       is 0 and the selection says so.
    5. The fair model is retrained on the whole training split with the
       chosen lambda (same schedule and seed), so it differs from the unfair
       model only in the penalty.

The chosen lambda, the reference and per-lambda validation accuracies are
stored in the artifact's training metadata under "fair_selection".
An explicit `weight_decay` (the paper's numbers, CLI `--weight-decay`) keeps
the wd / (2 N) reading above.

Measured at hidden (4, 2), seeds 0, 1, 2, default schedules: the rule picks
lambda = 0.03 on German and 0.01 on Adult and Credit for every seed. Median
certified radius over the first 100 test rows (flips counted as 0), fair vs
unfair: German 1.080/0.398, 1.050/0.468, 1.046/0.387; Adult 0.759/0.608,
0.620/0.671, 0.700/0.541; Credit 1.581/0.994, 1.808/1.536, 1.558/0.961.
Fair exceeds unfair in 8 of 9 cases; Adult seed 1 is the exception.

Reproducibility: torch.manual_seed(seed) for the initial weights, a separate
seeded generator for the mini-batch order, one intra-op thread and
deterministic algorithms while training; the same seed and data give
bit-identical weights on the same machine and torch build.
"""
from __future__ import annotations

import os
import time
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np

from fairness.errors import ModelError
from fairness.model import ModelArtifact, artifact_from_dataset, load_artifact, save_artifact
from fairness.network import FloatMLP

# (epoch, mean training loss, training accuracy) after each epoch.
ProgressCallback = Callable[[int, float, float], None]

# Paper weight decays of the "fair" models; keyed by dataset then hidden sizes (None = any).
PAPER_FAIR_WEIGHT_DECAY: dict[str, dict[tuple[int, ...] | None, float]] = {
    "german": {None: 10.0},
    "adult": {None: 0.2},
    "credit": {(4, 2): 2.5, (8, 2): 3.0, None: 2.5},
    "compas": {None: 1.0},  # not in the paper; a moderate value for the same convention
}

# Per-dataset defaults: quick to train on 2 CPU cores, sensible accuracy.
DEFAULT_SCHEDULE: dict[str, dict[str, float | int]] = {
    "german": {"epochs": 50, "batch_size": 32, "lr": 0.1},
    "adult": {"epochs": 10, "batch_size": 128, "lr": 0.1},
    "credit": {"epochs": 10, "batch_size": 128, "lr": 0.1},
    "compas": {"epochs": 30, "batch_size": 64, "lr": 0.1},
}

# Bump when training semantics change, so cached models are retrained.
# 2: "fair" = validation-selected L2 penalty (FAIR_RULE) instead of the paper's weight decay.
TRAINING_VERSION = 2

# Candidate L2 coefficients (lambda in mean CE + lambda/2 * sum ||W||^2) of the fair variant.
FAIR_L2_GRID: tuple[float, ...] = (1e-4, 3e-4, 1e-3, 3e-3, 1e-2, 3e-2, 1e-1)
VALIDATION_FRACTION = 0.2
VALIDATION_SPLIT_SEED = 0
MAX_VALIDATION_DROP_POINTS = 1  # percentage points of validation accuracy
FAIR_RULE = ("largest grid lambda whose model predicts every class on a validation split of the training "
             "rows and loses at most 1 point of validation accuracy against lambda = 0 (same schedule and seed)")

# Called with each grid point of the fair selection as soon as it is evaluated.
GridProgressCallback = Callable[["GridPoint"], None]


@dataclass(frozen=True)
class TrainingConfig:
    hidden_sizes: tuple[int, ...]
    weight_decay: float = 0.0
    epochs: int = 50
    batch_size: int = 32
    lr: float = 0.1
    momentum: float = 0.0
    seed: int = 0
    # Direct L2 coefficient: adds l2/2 * sum ||W||^2 to the mean CE (independent of N).
    l2: float = 0.0
    weight_decay_convention: str = ("mean CE + (wd/(2N) + l2/2) * sum ||W||^2, weights only "
                                    "(wd: l2 coefficient on the summed loss, l2: on the mean loss)")

    def __post_init__(self) -> None:
        if not self.hidden_sizes or any(int(h) < 1 for h in self.hidden_sizes):
            raise ModelError(f"hidden sizes must be positive integers, got {self.hidden_sizes}")
        if self.epochs < 1 or self.batch_size < 1:
            raise ModelError("epochs and batch size must be at least 1")
        if not (self.lr > 0) or self.weight_decay < 0 or not 0 <= self.momentum < 1:
            raise ModelError("need lr > 0, weight_decay >= 0 and 0 <= momentum < 1")
        if not (self.l2 >= 0 and np.isfinite(self.l2)):
            raise ModelError(f"l2 must be a finite number >= 0, got {self.l2}")

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["hidden_sizes"] = list(self.hidden_sizes)
        d["optimizer"] = "SGD"
        d["loss"] = "cross-entropy"
        d["training_version"] = TRAINING_VERSION
        return d


@dataclass(frozen=True)
class TrainingResult:
    model: FloatMLP
    config: TrainingConfig
    train_accuracy: float
    test_accuracy: float
    history: tuple[tuple[int, float, float], ...] = field(default_factory=tuple)
    seconds: float = 0.0
    # True when the model predicts one class on the whole test set (train set if no test set).
    degenerate: bool = False


def paper_weight_decay(dataset: str, hidden_sizes: Sequence[int], variant: str) -> float:
    """The weight decay of the paper's 'fair' or 'unfair' (0) model for this dataset and shape."""
    if variant == "unfair":
        return 0.0
    if variant != "fair":
        raise ModelError(f"variant must be 'fair' or 'unfair', got {variant!r}")
    table = PAPER_FAIR_WEIGHT_DECAY.get(dataset)
    if table is None:
        raise ModelError(f"no paper weight decay for dataset {dataset!r}")
    return table.get(tuple(hidden_sizes), table[None])


def default_config(dataset: str, hidden_sizes: Sequence[int], variant: str = "unfair", *, seed: int = 0,
                   weight_decay: float | None = None, **overrides: Any) -> TrainingConfig:
    """Schedule defaults for `dataset`; weight decay explicit, else the paper's value for `variant`
    (wd / (2 N) reading). The product's fair variant is `train_fair_on_dataset` instead."""
    sched = dict(DEFAULT_SCHEDULE.get(dataset, DEFAULT_SCHEDULE["german"]))
    sched.update({k: v for k, v in overrides.items() if v is not None})
    wd = paper_weight_decay(dataset, hidden_sizes, variant) if weight_decay is None else float(weight_decay)
    return TrainingConfig(hidden_sizes=tuple(int(h) for h in hidden_sizes), weight_decay=wd, seed=seed, **sched)


def train_mlp(X_train: np.ndarray, y_train: np.ndarray, n_classes: int, config: TrainingConfig, *,
              X_test: np.ndarray | None = None, y_test: np.ndarray | None = None,
              progress: ProgressCallback | None = None) -> TrainingResult:
    """Train a ReLU MLP with SGD on (X_train, y_train) as `config` says."""
    import torch  # lazy: training extra

    X_train = np.asarray(X_train, dtype=np.float64)
    y_train = np.asarray(y_train)
    if X_train.ndim != 2 or len(X_train) != len(y_train) or len(y_train) == 0:
        raise ModelError(f"training data: X of shape {X_train.shape} does not match {len(y_train)} labels")
    if n_classes < 2 or y_train.min() < 0 or y_train.max() >= n_classes:
        raise ModelError(f"labels must lie in 0..{n_classes - 1} with n_classes >= 2")
    if not np.all(np.isfinite(X_train)):
        raise ModelError("training data contains non-finite values")

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    deterministic = torch.are_deterministic_algorithms_enabled()
    torch.use_deterministic_algorithms(True)
    start = time.perf_counter()
    try:
        torch.manual_seed(config.seed)
        layers: list[torch.nn.Module] = []
        prev = X_train.shape[1]
        for h in config.hidden_sizes:
            layers += [torch.nn.Linear(prev, h), torch.nn.ReLU()]
            prev = h
        layers.append(torch.nn.Linear(prev, n_classes))
        net = torch.nn.Sequential(*layers)
        opt = torch.optim.SGD(net.parameters(), lr=config.lr, momentum=config.momentum)
        X = torch.tensor(X_train, dtype=torch.float32)
        y = torch.tensor(y_train, dtype=torch.long)
        n = len(X)
        decay = config.weight_decay / (2.0 * n) + config.l2 / 2.0
        weights = [m.weight for m in net if isinstance(m, torch.nn.Linear)]
        order = torch.Generator().manual_seed(config.seed + 1)
        history = []
        for epoch in range(1, config.epochs + 1):
            perm = torch.randperm(n, generator=order)
            total = 0.0
            for i in range(0, n, config.batch_size):
                idx = perm[i:i + config.batch_size]
                opt.zero_grad()
                loss = torch.nn.functional.cross_entropy(net(X[idx]), y[idx])
                if decay:
                    loss = loss + decay * sum((w * w).sum() for w in weights)
                loss.backward()
                opt.step()
                total += float(loss.detach()) * len(idx)
            with torch.no_grad():
                acc = float((net(X).argmax(1) == y).float().mean())
            mean_loss = total / n
            if not np.isfinite(mean_loss):
                raise ModelError(f"training diverged at epoch {epoch} (loss {mean_loss}); lower the learning rate")
            history.append((epoch, mean_loss, acc))
            if progress is not None:
                progress(epoch, mean_loss, acc)
        model = FloatMLP(
            [m.weight.detach().double().numpy() for m in net if isinstance(m, torch.nn.Linear)],
            [m.bias.detach().double().numpy() for m in net if isinstance(m, torch.nn.Linear)],
        )
    finally:
        torch.set_num_threads(threads)
        torch.use_deterministic_algorithms(deterministic)
    seconds = time.perf_counter() - start
    train_acc = model.accuracy(X_train, y_train)
    if X_test is not None and y_test is not None and len(y_test):
        test_acc = model.accuracy(X_test, y_test)
        constant = len(np.unique(model.predict(X_test))) == 1
    else:
        test_acc, constant = float("nan"), len(np.unique(model.predict(X_train))) == 1
    return TrainingResult(model, config, train_acc, test_acc, tuple(history), seconds, constant)


@dataclass(frozen=True)
class GridPoint:
    """One candidate lambda of the fair selection, scored on the validation rows."""

    l2: float
    val_correct: int
    n_val: int
    all_classes: bool  # predicts every class on the validation rows
    eligible: bool
    seconds: float
    diverged: bool = False  # training blew up (scored as 0 correct, ineligible)

    @property
    def val_accuracy(self) -> float:
        return self.val_correct / self.n_val

    def to_dict(self) -> dict[str, Any]:
        return {"l2": self.l2, "val_accuracy": self.val_accuracy, "val_correct": self.val_correct,
                "all_classes_predicted": self.all_classes, "eligible": self.eligible,
                "diverged": self.diverged, "seconds": round(self.seconds, 3)}


@dataclass(frozen=True)
class FairSelection:
    """Outcome of `select_fair_l2`: the chosen lambda and the evidence for it."""

    l2: float  # chosen lambda; 0.0 when no grid value was eligible
    grid: tuple[float, ...]
    points: tuple[GridPoint, ...]  # evaluated points, largest lambda first
    reference_val_correct: int
    n_fit: int
    n_val: int
    validation_fraction: float
    split_seed: int
    max_drop_points: float

    @property
    def reference_val_accuracy(self) -> float:
        return self.reference_val_correct / self.n_val

    @property
    def found(self) -> bool:
        return any(p.eligible for p in self.points)

    def to_dict(self) -> dict[str, Any]:
        return {
            "rule": FAIR_RULE,
            "l2": self.l2,
            "found": self.found,
            "grid": list(self.grid),
            "points": [p.to_dict() for p in self.points],
            "reference_val_accuracy": self.reference_val_accuracy,
            "n_fit": self.n_fit,
            "n_val": self.n_val,
            "validation_fraction": self.validation_fraction,
            "validation_split_seed": self.split_seed,
            "max_validation_drop_points": self.max_drop_points,
        }


def validation_split(n: int, fraction: float = VALIDATION_FRACTION,
                     seed: int = VALIDATION_SPLIT_SEED) -> tuple[np.ndarray, np.ndarray]:
    """(fit indices, validation indices) of n training rows: a seeded permutation, the first
    round(n * fraction) rows validate."""
    if not 0 < fraction < 1:
        raise ModelError(f"validation fraction must lie strictly between 0 and 1, got {fraction}")
    n_val = int(round(n * fraction))
    if n_val < 1 or n_val >= n:
        raise ModelError(f"{n} training rows are too few for a validation split of {fraction}")
    perm = np.random.default_rng(seed).permutation(n)
    return np.sort(perm[n_val:]), np.sort(perm[:n_val])


def select_fair_l2(X_train: np.ndarray, y_train: np.ndarray, n_classes: int, config: TrainingConfig, *,
                   grid: Sequence[float] = FAIR_L2_GRID, validation_fraction: float = VALIDATION_FRACTION,
                   split_seed: int = VALIDATION_SPLIT_SEED, max_drop_points: float = MAX_VALIDATION_DROP_POINTS,
                   progress: GridProgressCallback | None = None) -> FairSelection:
    """The fair variant's lambda by the rule in the module docstring.

    Only training rows are given, so the test split cannot influence the choice.
    `config` is the unfair model's schedule and seed; its own penalties are replaced
    (0 for the reference, lambda for each grid point).
    """
    grid_t = tuple(sorted({float(g) for g in grid}, reverse=True))
    if not grid_t or any(not (g > 0 and np.isfinite(g)) for g in grid_t):
        raise ModelError(f"the lambda grid must be non-empty positive finite numbers, got {list(grid)}")
    if not max_drop_points >= 0:
        raise ModelError(f"max validation drop must be >= 0 percentage points, got {max_drop_points}")
    X_train = np.asarray(X_train, dtype=np.float64)
    y_train = np.asarray(y_train)
    if len(X_train) != len(y_train):
        raise ModelError(f"training data: {len(X_train)} rows but {len(y_train)} labels")
    fit, val = validation_split(len(y_train), validation_fraction, split_seed)
    X_fit, y_fit, X_val, y_val = X_train[fit], y_train[fit], X_train[val], y_train[val]
    n_val = len(val)

    def train_and_score(l2: float) -> tuple[int, bool, float]:
        cfg = replace(config, weight_decay=0.0, l2=l2)
        r = train_mlp(X_fit, y_fit, n_classes, cfg)
        pred = r.model.predict(X_val)
        return int((pred == y_val).sum()), len(np.unique(pred)) == n_classes, r.seconds

    ref_correct, _, _ = train_and_score(0.0)  # bad data or a diverging schedule raises here
    points: list[GridPoint] = []
    chosen = 0.0
    for lam in grid_t:
        start = time.perf_counter()
        try:
            correct, all_classes, secs = train_and_score(lam)
            diverged = False
        except ModelError:  # the reference trained, so only this penalty made training diverge
            correct, all_classes, secs, diverged = 0, False, time.perf_counter() - start, True
        # integer form of: acc(lam) >= acc(0) - max_drop_points / 100
        within = 100 * correct >= 100 * ref_correct - max_drop_points * n_val
        point = GridPoint(lam, correct, n_val, all_classes, all_classes and within, secs, diverged)
        points.append(point)
        if progress is not None:
            progress(point)
        if point.eligible:
            chosen = lam
            break
    return FairSelection(chosen, grid_t, tuple(points), ref_correct, len(fit), n_val,
                         float(validation_fraction), int(split_seed), float(max_drop_points))


def train_on_dataset(dataset: Any, config: TrainingConfig, progress: ProgressCallback | None = None, *,
                     selection: FairSelection | None = None) -> tuple[ModelArtifact, TrainingResult]:
    """Train on a `fairness.datasets.Dataset` and bundle the result as an artifact.

    `selection` (from `select_fair_l2`) is recorded in the training metadata when given.
    """
    result = train_mlp(dataset.X_train, dataset.y_train, dataset.n_classes, config,
                       X_test=dataset.X_test, y_test=dataset.y_test, progress=progress)
    info = config.to_dict()
    info["train_accuracy"] = result.train_accuracy
    info["seconds"] = round(result.seconds, 3)
    info["degenerate"] = result.degenerate
    if selection is not None:
        info["regularisation_rule"] = "fair_selection"
        info["fair_selection"] = selection.to_dict()
    elif config.weight_decay or config.l2:
        info["regularisation_rule"] = "explicit"
    else:
        info["regularisation_rule"] = "none"
    artifact = artifact_from_dataset(result.model, dataset, training=info, seed=config.seed)
    return artifact, result


def train_fair_on_dataset(dataset: Any, config: TrainingConfig, progress: ProgressCallback | None = None, *,
                          grid_progress: GridProgressCallback | None = None,
                          grid: Sequence[float] = FAIR_L2_GRID) -> tuple[ModelArtifact, TrainingResult, FairSelection]:
    """The fair model: lambda chosen on the training split by `select_fair_l2`, then retrained on
    the whole training split. `config` is the unfair model's config (schedule and seed)."""
    selection = select_fair_l2(dataset.X_train, dataset.y_train, dataset.n_classes, config, grid=grid,
                               progress=grid_progress)
    fair_config = replace(config, weight_decay=0.0, l2=selection.l2)
    artifact, result = train_on_dataset(dataset, fair_config, progress, selection=selection)
    return artifact, result, selection


def load_or_train(dataset: str, hidden: Sequence[int], variant: str = "unfair", cache_dir: str | os.PathLike[str] | None = None,
                  seed: int = 0, *, data_dir: str | os.PathLike[str] | None = None,
                  sensitive: Sequence[str] | None = None,
                  progress: ProgressCallback | None = None,
                  grid_progress: GridProgressCallback | None = None) -> ModelArtifact:
    """A trained model artifact for (dataset, hidden sizes, variant, seed), cached.

    variant "fair" is the validation-selected L2 penalty (`train_fair_on_dataset`;
    `progress` then reports the final retraining, `grid_progress` each grid point),
    "unfair" no penalty.

    The cache lives in `cache_dir` (default ~/.cache/fairproof/models), one
    artifact directory per key; a missing or unreadable entry is retrained and
    written atomically (rename of a completed directory). The dataset split
    uses seed 0; `seed` seeds the training. `sensitive` overrides the dataset's
    default sensitive features (e.g. ["sex", "race"] for COMPAS).
    """
    from fairness.datasets import canonical_name, load_dataset

    name = canonical_name(dataset)
    hidden_t = tuple(int(h) for h in hidden)
    root = Path(cache_dir) if cache_dir is not None else Path.home() / ".cache" / "fairproof" / "models"
    key = f"{name}-h{'x'.join(map(str, hidden_t))}-{variant}-seed{seed}-v{TRAINING_VERSION}"
    if sensitive is not None:
        key += "-s-" + "+".join(sensitive)
    target = root / key
    if target.is_dir():
        try:
            return load_artifact(target)
        except ModelError:
            pass  # stale or partial entry: retrain below
    ds = load_dataset(name, data_dir, sensitive=sensitive, seed=0)
    if variant == "fair":
        config = default_config(name, hidden_t, "unfair", seed=seed)
        artifact, _, _ = train_fair_on_dataset(ds, config, progress, grid_progress=grid_progress)
    else:
        config = default_config(name, hidden_t, variant, seed=seed)
        artifact, _ = train_on_dataset(ds, config, progress)
    root.mkdir(parents=True, exist_ok=True)
    tmp = root / f".{key}.{os.getpid()}.tmp"
    save_artifact(artifact, tmp)
    try:
        os.replace(tmp, target)
    except OSError:
        # another process finished first (or a stale entry exists): keep theirs if valid
        import shutil

        shutil.rmtree(tmp, ignore_errors=True)
        try:
            return load_artifact(target)
        except ModelError:
            shutil.rmtree(target, ignore_errors=True)
            save_artifact(artifact, target)
    return artifact
