"""`fairproof import-model FILE`: wrap a bank's own trained model as a model artifact.

The bank hands over its model as it has it: a fitted scikit-learn Pipeline
(joblib), a torch network (state dict, TorchScript or the module pickled whole)
with its fitted preprocessor, or an ONNX graph. The format is read from the file
(`--format` overrides). With `--facts` (what no model file says: sensitive
columns, numeric domains, the decision column, the favourable class) the feature
schema is read from the fitted objects themselves and written beside the
artifact as schema.json for the bank to read. `--schema` instead takes the
bank's hand-written schema for a bare network, and `--dataset` a shipped
dataset's preprocessing.

`--check DATA.csv` compares, on every row of the bank's data, the imported
exact fixed-point network, the bank's own artifact run by its own runtime on the
raw records, and the decisions the bank recorded, before anything is written
(see `prover_service.model_import`). No import happens without a check unless
`--no-check` is given, and then the artifact, and the card committed from it,
say so.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the command line loads its libraries lazily
    from fairness.model import FloatMLP, ModelArtifact
    from fairness.schema import FeatureSchema
    from prover_service.importers import BankModel
    from prover_service.importers.bank_facts import LoadedFacts


def register(subparsers: argparse._SubParsersAction) -> None:
    from fairness.model_formats import MODEL_FORMATS

    p = subparsers.add_parser("import-model", help="import a bank's trained model (scikit-learn Pipeline, torch, "
                                                   "TorchScript, ONNX) as it has it")
    p.add_argument("file", help="the bank's model: a joblib/pickle of a fitted Pipeline, a torch state dict, "
                                "TorchScript or whole module, or .onnx")
    p.add_argument("--format", choices=MODEL_FORMATS, default=None,
                   help="the file's format (default: read from the file)")
    source = p.add_mutually_exclusive_group()
    source.add_argument("--facts", metavar="FACTS.yaml", help="the bank's facts (YAML or JSON): sensitive columns, "
                                                              "numeric domains, decision column, favourable class")
    source.add_argument("--schema", help="the bank's hand-written feature schema (JSON or YAML) for a bare network")
    source.add_argument("--dataset", help="a shipped dataset (german, adult, credit, compas) whose preprocessing the "
                                          "network was trained with")
    p.add_argument("--preprocessor", metavar="FITTED.joblib",
                   help="the fitted scikit-learn ColumnTransformer / Pipeline a torch or ONNX network reads after")
    p.add_argument("--sensitive", default=None, help="comma-separated sensitive columns (with --dataset: features)")
    p.add_argument("--domain-from", metavar="DATA.csv", default=None,
                   help="take each numeric column's domain from this data: its [min, max], widened by --margin")
    p.add_argument("--margin", type=float, default=None, metavar="F",
                   help="with --domain-from: widen each range by F times its width on each side (default 0)")
    p.add_argument("--favourable", default=None, metavar="VALUE", help="the raw class value the lenses call favourable")
    p.add_argument("--label-column", default=None, help="the outcome column the model predicts (overrides the facts' label_column)")
    check = p.add_mutually_exclusive_group(required=True)
    check.add_argument("--check", metavar="DATA.csv", help="the bank's data with its own decisions: refuse the "
                                                           "import if any decision differs")
    check.add_argument("--no-check", action="store_true", help="import without comparing decisions (the card says so)")
    p.add_argument("--prediction-column", default=None,
                   help="column of DATA.csv holding the bank's own decision (default: the facts' decision_column, "
                        "else their label_column; with --schema 'prediction')")
    p.add_argument("--accept-near-ties", action="store_true",
                   help="accept rows whose decisions differ only where the logits are within --tie-tolerance of a tie")
    p.add_argument("--tie-tolerance", type=float, default=None, help="logit margin treated as a near tie (default 1e-3)")
    p.add_argument("--seed", type=int, default=0, help="with --dataset: train/test split seed")
    p.add_argument("--scale-bits", type=int, default=None, help="fixed-point scale the check quantises at (default 16)")
    p.add_argument("--data-dir", default=None,
                   help="with --dataset: dataset directory (default: $FAIRPROOF_DATA_DIR, ./data, ../shared/datasets)")
    p.add_argument("--out", required=True, help="artifact directory to write")
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from fairness.errors import DataError

    if args.dataset and args.check:
        raise DataError("--check compares decisions through a schema: with --dataset only --no-check is possible "
                        "(write the bank's schema and use --schema)")
    if args.dataset:
        return _import_with_dataset(args)
    if args.schema:
        _refuse_facts_options(args, "--schema")
        return _import_bank_model(args)
    if not args.facts and args.sensitive is None:
        raise DataError("say what no model file says: give the bank's facts (--facts FACTS.yaml), or its schema "
                        "(--schema), or a shipped dataset (--dataset)")
    return _import_bank_model(args)


def _refuse_facts_options(args: argparse.Namespace, route: str) -> None:
    from fairness.errors import DataError

    given = [flag for flag, value in (("--sensitive", args.sensitive), ("--domain-from", args.domain_from),
                                      ("--margin", args.margin), ("--label-column", args.label_column),
                                      ("--preprocessor", args.preprocessor))
             if value is not None]
    if given:
        raise DataError(f"{', '.join(given)} complete the bank's facts; with {route} the schema says it all")


def _import_with_dataset(args: argparse.Namespace) -> int:
    from fairness.datasets import load_dataset
    from fairness.fixed_point import DEFAULT_SCALE_BITS
    from fairness.model import artifact_from_dataset, import_model, save_artifact
    from prover_service.commands.train import print_fixed_point_report
    from prover_service.importers.detect import detect_format

    sensitive = [s.strip() for s in args.sensitive.split(",")] if args.sensitive else None
    dataset = load_dataset(args.dataset, args.data_dir, sensitive=sensitive, seed=args.seed)
    fmt = args.format or detect_format(args.file)
    model = import_model(args.file, fmt, n_inputs=dataset.n_features, n_classes=dataset.n_classes)
    artifact = artifact_from_dataset(model, dataset, seed=None, training={
        "imported_from": str(args.file), "format": fmt, "import_check": "none (imported with --no-check)"})
    out = save_artifact(artifact, args.out)
    print(f"imported {fmt} network {model.n_inputs}->{model.hidden_sizes}->{model.n_classes}; "
          f"test accuracy {artifact.test_accuracy:.4f}; decisions NOT checked against the bank's (--no-check)")
    print_fixed_point_report(artifact, dataset, args.scale_bits if args.scale_bits is not None else DEFAULT_SCALE_BITS)
    print(f"model artifact written to {out}")
    return 0


def _import_bank_model(args: argparse.Namespace) -> int:
    """Read the bank's model (facts or schema route), check it on the bank's data, write the artifact."""
    from fairness.errors import DataError, ModelError
    from fairness.fixed_point import DEFAULT_SCALE_BITS
    from fairness.model import artifact_from_schema
    from fairness.schema_csv import csv_header, read_csv
    from prover_service.importers.detect import detect_format
    from prover_service.model_import import DEFAULT_TIE_TOLERANCE, check_import, recorded_decisions

    fmt = args.format or detect_format(args.file)
    pipeline = None  # the file unpickled once, when it may be a tree ensemble's Pipeline
    if fmt == "sklearn" and not args.schema and not args.preprocessor:  # a Pipeline holds its own preprocessing
        from prover_service.importers.sklearn_pipeline import load_pickled
        from prover_service.importers.trees import is_tree_pipeline

        pipeline = load_pickled(args.file)
        if is_tree_pipeline(pipeline):
            from .import_trees import import_tree_pipeline

            return import_tree_pipeline(args, pipeline)
    started = time.perf_counter()
    bank, loaded = _read_bank_model(args, fmt, pipeline)
    seconds = time.perf_counter() - started
    schema = bank.schema
    training = _training_record(args, fmt, bank, loaded)
    print(f"read {bank.source} from {args.file} in {seconds * 1000:.0f} ms: {_shape(bank.network)} under schema "
          f"{schema.name!r}")
    for note in bank.notes:
        print(f"  note: {note}")
    if loaded is not None:
        print(f"  {loaded.describe_domains(schema.attributes)}")
    if args.no_check:
        artifact = artifact_from_schema(bank.network, schema,
                                        training={**training, "import_check": "none (imported with --no-check)"})
        out = _write(artifact, schema, args.out)
        print(f"decisions NOT checked against the bank's (--no-check); model artifact written to {out}")
        return 0

    column = args.prediction_column or (
        (loaded.decision_column or loaded.facts.label_column) if loaded is not None else "prediction")
    if column not in csv_header(args.check):
        raise DataError(f"{args.check}: the check needs the bank's own decision of every row in a column "
                        f"{column!r} (--prediction-column names another)")
    table = read_csv(schema, args.check, extra_columns=[column])
    recorded = recorded_decisions(schema, table, column, args.check)
    tolerance = DEFAULT_TIE_TOLERANCE if args.tie_tolerance is None else args.tie_tolerance
    if not tolerance >= 0:
        raise DataError("--tie-tolerance must be a non-negative number")
    print(f"checking {len(table.X)} rows of {args.check} ...", file=sys.stderr, flush=True)
    check = check_import(bank, table, recorded, args.check,
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
    truth = table.y if table.y is not None and column != schema.label.column else None
    artifact = artifact_from_schema(bank.network, schema, X_test=table.X if truth is not None else None, y_test=truth,
                                    training={**training, "import_check": check.record(),
                                              "data": str(Path(args.check).resolve())})
    out = _write(artifact, schema, args.out)
    print(f"imported {fmt} model {_shape(bank.network)} under schema {schema.name!r}; {check.summary()}")
    print(f"model artifact written to {out} (its schema: {out / 'schema.json'})")
    return 0


def _read_bank_model(args: argparse.Namespace, fmt: str, pipeline: Any = None) -> tuple[BankModel, LoadedFacts | None]:
    """The BankModel of the file, by format; with the facts it was read under (None on the schema route)."""
    from fairness.errors import ModelError
    from fairness.schema import FeatureSchema
    from prover_service.importers.bank_facts import load_facts, unused_facts
    from prover_service.importers.sklearn_pipeline import load_pickled, read_sklearn
    from prover_service.importers.torch_network import read_torch

    if args.schema:
        schema = FeatureSchema.load(args.schema)
        if fmt == "onnx":
            from prover_service.importers.onnx_network import read_onnx_network

            return read_onnx_network(args.file, schema), None
        if fmt == "sklearn":
            return read_sklearn(args.file, None, schema=schema), None
        return read_torch(args.file, None, schema=schema), None
    loaded = load_facts(args.facts, name=Path(args.file).stem, sensitive=args.sensitive,
                        label_column=args.label_column, favourable=args.favourable,
                        domain_from=args.domain_from, margin=args.margin)
    preprocessor = load_pickled(args.preprocessor) if args.preprocessor else None
    if fmt == "sklearn":
        if preprocessor is not None:
            raise ModelError("--preprocessor is for a torch or ONNX network: a scikit-learn Pipeline holds its own")
        bank = read_sklearn(args.file, loaded.facts, columns=loaded.columns, obj=pipeline)
    elif fmt == "onnx":
        from prover_service.importers.onnx_pipeline import read_onnx

        bank = read_onnx(args.file, loaded.facts, preprocessor=preprocessor, columns=loaded.columns)
    else:
        bank = read_torch(args.file, loaded.facts, preprocessor=preprocessor, columns=loaded.columns)
    unused = unused_facts(loaded, bank.schema.attributes)
    if unused:
        raise ModelError(f"the facts name column(s) {', '.join(map(repr, unused))}, which the model does not read "
                         f"(it reads {', '.join(bank.schema.attributes)})")
    return bank, loaded


def _training_record(args: argparse.Namespace, fmt: str, bank: BankModel, loaded: LoadedFacts | None) -> dict:
    """What the artifact records of the import: source, rewrites, runtime, facts, favourable class."""
    from fairness.errors import ModelError
    from fairness.schema import category_key

    record = {"imported_from": str(args.file), "format": fmt, "source": bank.source, "notes": list(bank.notes),
              "runtime": bank.runtime.name}
    if args.preprocessor:
        record["preprocessor"] = str(args.preprocessor)
    favourable = args.favourable
    if loaded is not None:
        record["facts"] = loaded.record(bank.schema.attributes)
        favourable = loaded.facts.favourable
    if favourable is not None:
        label = bank.schema.label
        value = category_key("favourable", favourable)
        if value not in label.values:
            raise ModelError(f"the favourable class {value!r} is not one of the model's classes "
                             f"{', '.join(label.values)}")
        record["favourable_value"] = value
        record["favourable_class"] = label.class_labels[label.values.index(value)]
    return record


def _write(artifact: ModelArtifact, schema: FeatureSchema, directory: str) -> Path:
    """The artifact, and the schema read from the bank's files beside it (for the bank to read)."""
    from fairness.model import save_artifact

    out = save_artifact(artifact, directory)
    (out / "schema.json").write_text(json.dumps(schema.model_dump(mode="json"), indent=2) + "\n")
    return out


def _shape(network: FloatMLP) -> str:
    return f"{network.n_inputs}->{network.hidden_sizes}->{network.n_classes}"
