"""`fairproof import-model`: wrap a bank's own trained network as a model artifact.

With `--schema` (the bank's feature schema) the network keeps the bank's own
feature order, encodings, domain and labels, and `--check DATA.csv` compares
its decisions with the bank's own on every row before anything is written
(see `prover_service.model_import`). `--dataset` instead imposes a shipped
dataset's preprocessing, which fits only networks trained on it.
No import happens without a check unless `--no-check` is given, and then the
artifact, and the card committed from it, say so.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path


def register(subparsers: argparse._SubParsersAction) -> None:
    from fairness.model_formats import MODEL_FORMATS

    p = subparsers.add_parser("import-model", help="import a trained network (ONNX, torch, TorchScript, scikit-learn)")
    p.add_argument("file", help="the network: .onnx, a torch state dict (.pt), TorchScript, or a pickled MLPClassifier")
    p.add_argument("--format", choices=MODEL_FORMATS, required=True)
    source = p.add_mutually_exclusive_group(required=True)
    source.add_argument("--schema", help="the bank's feature schema (JSON or YAML)")
    source.add_argument("--dataset", help="a shipped dataset (german, adult, credit, compas) whose preprocessing the "
                                          "network was trained with")
    check = p.add_mutually_exclusive_group(required=True)
    check.add_argument("--check", metavar="DATA.csv", help="the bank's data with its own decisions: refuse the "
                                                           "import if any decision differs")
    check.add_argument("--no-check", action="store_true", help="import without comparing decisions (the card says so)")
    p.add_argument("--prediction-column", default="prediction",
                   help="column of DATA.csv holding the bank's own decision (a class value of the schema's label)")
    p.add_argument("--accept-near-ties", action="store_true",
                   help="accept rows whose decisions differ only where the logits are within --tie-tolerance of a tie")
    p.add_argument("--tie-tolerance", type=float, default=None, help="logit margin treated as a near tie (default 1e-3)")
    p.add_argument("--sensitive", default=None, help="with --dataset: comma-separated sensitive features")
    p.add_argument("--seed", type=int, default=0, help="with --dataset: train/test split seed")
    p.add_argument("--scale-bits", type=int, default=None, help="fixed-point scale the check quantises at (default 16)")
    p.add_argument("--data-dir", default=None)
    p.add_argument("--out", required=True, help="artifact directory to write")
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from fairness.errors import DataError

    if args.dataset and args.check:
        raise DataError("--check compares decisions through a schema: with --dataset only --no-check is possible "
                        "(write the bank's schema and use --schema)")
    return _import_with_schema(args) if args.schema else _import_with_dataset(args)


def _import_with_dataset(args: argparse.Namespace) -> int:
    from fairness.datasets import load_dataset
    from fairness.fixed_point import DEFAULT_SCALE_BITS
    from fairness.model import artifact_from_dataset, import_model, save_artifact
    from prover_service.commands.train import print_fixed_point_report

    sensitive = [s.strip() for s in args.sensitive.split(",")] if args.sensitive else None
    dataset = load_dataset(args.dataset, args.data_dir, sensitive=sensitive, seed=args.seed)
    model = import_model(args.file, args.format, n_inputs=dataset.n_features, n_classes=dataset.n_classes)
    artifact = artifact_from_dataset(model, dataset, seed=None, training={
        "imported_from": str(args.file), "format": args.format, "import_check": "none (imported with --no-check)"})
    out = save_artifact(artifact, args.out)
    print(f"imported {args.format} network {model.n_inputs}->{model.hidden_sizes}->{model.n_classes}; "
          f"test accuracy {artifact.test_accuracy:.4f}; decisions NOT checked against the bank's (--no-check)")
    print_fixed_point_report(artifact, dataset, args.scale_bits if args.scale_bits is not None else DEFAULT_SCALE_BITS)
    print(f"model artifact written to {out}")
    return 0


def _import_with_schema(args: argparse.Namespace) -> int:
    from fairness.errors import DataError, ModelError
    from fairness.fixed_point import DEFAULT_SCALE_BITS
    from fairness.model import artifact_from_schema, import_model, save_artifact
    from fairness.schema import FeatureSchema, csv_header, read_csv
    from prover_service.model_import import (DEFAULT_TIE_TOLERANCE, bank_runtime, check_import, recorded_decisions,
                                             sklearn_classes)

    schema = FeatureSchema.load(args.schema)
    model = import_model(args.file, args.format)
    if args.format == "sklearn":
        classes = sklearn_classes(args.file)
        if classes != schema.label.values:
            raise ModelError(f"the classifier's classes are {', '.join(classes)} in that order; the schema's label "
                             f"{schema.label.column!r} lists {', '.join(schema.label.values)}")
    training = {"imported_from": str(args.file), "format": args.format}
    if args.no_check:
        artifact = artifact_from_schema(model, schema, training={**training, "import_check": "none (imported with --no-check)"})
        out = save_artifact(artifact, args.out)
        print(f"imported {args.format} network {model.n_inputs}->{model.hidden_sizes}->{model.n_classes} under schema "
              f"{schema.name!r}; decisions NOT checked against the bank's (--no-check)")
        print(f"model artifact written to {out}")
        return 0

    if args.prediction_column not in csv_header(args.check):
        raise DataError(f"{args.check}: the check needs the bank's own decision of every row in a column "
                        f"{args.prediction_column!r} (--prediction-column names another)")
    table = read_csv(schema, args.check, extra_columns=[args.prediction_column])
    recorded = recorded_decisions(schema, table, args.prediction_column, args.check)
    probe = artifact_from_schema(model, schema, X_test=table.X, y_test=recorded)
    tolerance = DEFAULT_TIE_TOLERANCE if args.tie_tolerance is None else args.tie_tolerance
    if not tolerance >= 0:
        raise DataError("--tie-tolerance must be a non-negative number")
    print(f"checking {len(table.X)} rows of {args.check} ...", file=sys.stderr, flush=True)
    check = check_import(probe, schema, table, recorded, bank_runtime(args.file, args.format), args.check,
                         scale_bits=args.scale_bits if args.scale_bits is not None else DEFAULT_SCALE_BITS,
                         tie_tolerance=tolerance)
    labels = schema.class_labels
    if check.refusals:
        shown = "\n  ".join(d.describe(labels) for d in check.refusals[:20])
        more = f"\n  ... and {len(check.refusals) - 20} more" if len(check.refusals) > 20 else ""
        hint = f"\n{check.hint}" if check.hint else ""
        raise ModelError(f"import refused: on {len(check.refusals)} of {check.rows} rows the imported model does not "
                         f"decide as the bank's:\n  {shown}{more}{hint}")
    for d in check.near_ties:
        print(f"warning: near tie, {d.describe(labels)}", file=sys.stderr)
    if check.near_ties and not args.accept_near_ties:
        raise ModelError(f"import refused: {len(check.near_ties)} row(s) differ at a near tie (listed above); "
                         "pass --accept-near-ties to accept fixed-point rounding there")
    artifact = artifact_from_schema(model, schema, X_test=table.X, y_test=table.y,
                                    training={**training, "import_check": check.record(),
                                              "data": str(Path(args.check).resolve())})
    out = save_artifact(artifact, args.out)
    print(f"imported {args.format} network {model.n_inputs}->{model.hidden_sizes}->{model.n_classes} under schema "
          f"{schema.name!r}; {check.summary()}")
    print(f"model artifact written to {out}")
    return 0
