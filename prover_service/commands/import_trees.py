"""`fairproof import-model` for a Pipeline ending in a tree ensemble (XGBoost, LightGBM, scikit-learn's).

The same options as a network's import: the facts say what the files do not, `--check scored.csv` compares
the fixed-point ensemble with the bank's own pipeline and its recorded decisions on every row and refuses
the import naming the rows that differ, `--no-check` imports without it (the card says so). A tree has no
logit margin to call a difference a rounding tie: every difference is refused. The model directory holds
the ensemble (`trees.json`) and the schema read from the pipeline (`schema.json`).
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any


def import_tree_pipeline(args: argparse.Namespace, pipeline: Any) -> int:
    from fairness.errors import DataError, ModelError
    from fairness.fixed_point import DEFAULT_SCALE_BITS
    from fairness.schema_csv import csv_header, read_csv
    from prover_service.importers.bank_facts import load_facts, unused_facts
    from prover_service.importers.trees import check_tree_import, read_tree_pipeline
    from prover_service.model_import import recorded_decisions
    from prover_service.tree_proving import save_tree_model

    if args.preprocessor:
        raise ModelError("--preprocessor is for a torch or ONNX network: a scikit-learn Pipeline holds its own")
    if args.accept_near_ties or args.tie_tolerance is not None:
        raise ModelError("a tree ensemble has no near ties to accept: every difference from the bank's decisions "
                         "is refused")
    loaded = load_facts(args.facts, name=Path(args.file).stem, sensitive=args.sensitive,
                        label_column=args.label_column, favourable=args.favourable,
                        domain_from=args.domain_from, margin=args.margin)
    started = time.perf_counter()
    bank = read_tree_pipeline(pipeline, loaded.facts, columns=loaded.columns,
                              scale_bits=DEFAULT_SCALE_BITS if args.scale_bits is None else args.scale_bits)
    unused = unused_facts(loaded, bank.schema.attributes)
    if unused:
        raise ModelError(f"the facts name column(s) {', '.join(map(repr, unused))}, which the model does not read "
                         f"(it reads {', '.join(bank.schema.attributes)})")
    ensemble = bank.model.ensemble
    shape = f"{len(ensemble.trees)} trees over {ensemble.n_inputs} inputs, {ensemble.n_classes} classes"
    print(f"read {bank.source} from {args.file} in {(time.perf_counter() - started) * 1000:.0f} ms: {shape} "
          f"under schema {bank.schema.name!r}")
    for note in bank.notes:
        print(f"  note: {note}")
    record: dict[str, Any] = {"imported_from": str(args.file), "format": "sklearn", "source": bank.source,
                              "runtime": bank.runtime.name, "notes": list(bank.notes),
                              "facts": loaded.record(bank.schema.attributes)}
    if args.no_check:
        out = save_tree_model(args.out, ensemble, bank.schema, {**record, "import_check": None})
        print(f"decisions NOT checked against the bank's (--no-check); tree ensemble written to {out}")
        return 0
    column = args.prediction_column or loaded.decision_column or loaded.facts.label_column
    if column not in csv_header(args.check):
        raise DataError(f"{args.check}: the check needs the bank's own decision of every row in a column "
                        f"{column!r} (--prediction-column names another)")
    table = read_csv(bank.schema, args.check, extra_columns=[column])
    recorded = recorded_decisions(bank.schema, table, column, args.check)
    print(f"checking {len(table.records)} rows of {args.check} ...", file=sys.stderr, flush=True)
    try:
        check = check_tree_import(bank, table.records, rows=table.lines, recorded=recorded)
    except ModelError as exc:
        raise ModelError(f"import refused: {exc}") from None
    out = save_tree_model(args.out, ensemble, bank.schema, {
        **record, "import_check": {"rows": check.rows, "runtime": check.runtime},
        "data": str(Path(args.check).resolve())})
    print(f"imported {shape}; {check.summary()}")
    print(f"tree ensemble written to {out} (its schema: {out / 'schema.json'})")
    return 0
