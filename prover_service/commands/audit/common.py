"""What every audit verb shares: the rows it runs on (`audit_rows`), their options, the favourable
class and spread lens it reads from the card, and progress on stderr."""
from __future__ import annotations

import argparse
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any


DATA_HELP = ("the rows to audit: a CSV of raw records, one column per attribute of the model's schema (the "
             "label column too where the report needs each row's true outcome); required for an imported model")


def data_arguments(p: argparse.ArgumentParser, *, model: bool = True) -> None:
    if model:
        p.add_argument("--model", required=True, metavar="DIR", help="committed model directory")
    p.add_argument("--data", metavar="FILE.csv", help=DATA_HELP)
    p.add_argument("--data-dir", metavar="DIR",
                   help="a shipped dataset's directory, for its test split (the default rows of a model trained on "
                        "a shipped dataset; default: see README)")


@dataclass(frozen=True)
class AuditRows:
    """The rows an audit runs on, as model inputs (floats, before quantisation): the bank's CSV read
    through the model's schema (`--data`), or a shipped dataset's split (`--data-dir`). `y`: each row's
    class index in the model's output order (None when the CSV has no label column); `names`: how a
    report points at a row (its CSV line, or its index in the split); `source`: how it names the rows."""

    source: str
    X: Any
    y: Any
    names: tuple[str, ...]
    records: tuple[Any, ...] | None = None  # the raw records (attribute -> raw value), when the source has them

    def inside(self, model, limit: int | None = None) -> tuple[list[tuple[int, ...]], list[int], int]:
        """(the queries of the first `limit` rows that lie inside the domain box, quantised as customers'
        queries are; their row indices; how many of those rows lie outside the box, no certificate being
        issued for them either)."""
        from audits.group_metrics import decisions

        X = self.X[:limit] if limit else self.X
        queries, kept = decisions(model, X)
        return queries, kept, len(X) - len(kept)


def audit_rows(args: argparse.Namespace, workspace, *, labels: bool = False, splits: str = "test") -> AuditRows:
    """The rows every audit verb runs on (one resolution for all of them). `--data FILE.csv`: the rows of
    the bank's CSV read through the model's schema (an imported model's own, or a shipped dataset's
    preprocessing as a schema), any defect refused with its line and column; the label column is required
    when `labels`. Otherwise a shipped dataset's test split (`splits="all"`: training then test split);
    an imported model has no such split and is refused with a sentence saying to pass --data."""
    from fairness.errors import DataError
    from fairness.schema import FeatureSchema
    from fairness.schema_csv import csv_header, read_csv

    artifact = workspace.artifact
    data = getattr(args, "data", None)
    if data is not None:
        schema = model_schema(args, artifact)
        if labels and Path(data).is_file() and schema.label.column not in csv_header(data):
            raise DataError(f"{data}: no column {schema.label.column!r}: this report needs each row's true "
                            f"outcome, the label column of the model's schema (values "
                            f"{', '.join(schema.label.values)})")
        table = read_csv(schema, data, require_label=labels)
        return AuditRows(str(data), table.X, table.y, tuple(f"line {n}" for n in table.lines), table.records)
    if isinstance(artifact.preprocessor, FeatureSchema):
        schema = artifact.preprocessor
        label = f" and {schema.label.column!r}" if labels else ""
        raise DataError(f"model {artifact.dataset!r} was imported under the bank's own schema and has no shipped "
                        f"dataset to audit: pass its rows with --data FILE.csv (columns "
                        f"{', '.join(schema.attributes)}{label})")
    dataset = _shipped_dataset(args, artifact)
    if splits == "all":
        import numpy as np

        X, y = np.concatenate([dataset.X_train, dataset.X_test]), np.concatenate([dataset.y_train, dataset.y_test])
        return AuditRows(f"{artifact.dataset} (training and test splits, in order)", X, y,
                         tuple(f"row #{i}" for i in range(len(X))))
    return AuditRows("the test split", dataset.X_test, dataset.y_test,
                     tuple(f"test #{i}" for i in range(len(dataset.X_test))), tuple(dataset.records_test))


def _shipped_dataset(args: argparse.Namespace, artifact):
    """The shipped dataset a model was trained on, split as it was for training."""
    from fairness.datasets import load_dataset

    names = [f.name for f in artifact.sensitive]
    split_seed = int(artifact.training.get("split_seed", 0)) if artifact.training else 0
    return load_dataset(artifact.dataset, getattr(args, "data_dir", None), sensitive=names, seed=split_seed)


def model_schema(args: argparse.Namespace, artifact):
    """The schema a CSV of raw records is read through: an imported model's own, or a shipped dataset's
    preprocessing written as a schema (the same doubles per record; label column "label", class codes)."""
    from fairness.datasets import dataset_schema
    from fairness.schema import FeatureSchema

    if isinstance(artifact.preprocessor, FeatureSchema):
        return artifact.preprocessor
    return dataset_schema(_shipped_dataset(args, artifact))


def favourable_argument(p: argparse.ArgumentParser) -> None:
    p.add_argument("--favourable-class", metavar="LABEL", help="default: the card's lens, else the dataset's")


def progress_printer(what: str):
    start = time.perf_counter()
    interactive = sys.stderr.isatty()

    def report(done: int, total: int) -> None:
        if interactive and (done == total or done % 20 == 0):
            print(f"\r  {what}: {done}/{total} individuals ({time.perf_counter() - start:.1f} s)",
                  end="\n" if done == total else "", file=sys.stderr, flush=True)

    return report


def spread_lens(args, workspace, model):
    from fairness.errors import ModelError
    from fairness.spread import DEFAULT_BUCKET_WIDTH, SpreadLens, bucket_width_at, default_favourable_class

    card = workspace.card()
    labels = card.architecture.class_labels
    if args.favourable_class is not None:
        if args.favourable_class not in labels:
            raise ModelError(f"favourable class {args.favourable_class!r} is not one of {labels}")
        favourable = labels.index(args.favourable_class)
    else:
        favourable = card.spread.favourable_class if card.spread else default_favourable_class(labels)
    if getattr(args, "bucket_width", None) is not None:
        try:
            width = bucket_width_at(model, args.bucket_width)
        except ValueError as exc:
            raise ModelError(str(exc)) from None
    else:
        width = card.spread.bucket_width if card.spread else bucket_width_at(model, DEFAULT_BUCKET_WIDTH)
    return SpreadLens(favourable, width)


def favourable_index(args, workspace) -> int | None:
    """The class --favourable-class names (a label or an index), or None for the card's lens."""
    if args.favourable_class is None:
        return None
    labels = workspace.card().architecture.class_labels
    if args.favourable_class in labels:
        return labels.index(args.favourable_class)
    if args.favourable_class.isdigit() and int(args.favourable_class) < len(labels):
        return int(args.favourable_class)
    from fairness.errors import ModelError

    raise ModelError(f"--favourable-class {args.favourable_class!r} is not a class of the model "
                     f"({', '.join(labels)})")


def say(message: str) -> None:
    print(message, file=sys.stderr, flush=True)
