"""`fairproof schema`: write a shipped dataset's preprocessing as a feature schema.

A network trained with a shipped loader can then be imported under that
schema with a decision check, and a bank can start its own schema from one.
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("schema", help="write a shipped dataset's preprocessing as a feature schema (JSON)")
    p.add_argument("--dataset", required=True, help="german, adult, credit or compas")
    p.add_argument("--sensitive", default=None, help="comma-separated sensitive features (default: the paper's)")
    p.add_argument("--seed", type=int, default=0, help="train/test split seed (the standardisation uses the training split)")
    p.add_argument("--data-dir", default=None, help="dataset directory (default: $FAIRPROOF_DATA_DIR, ./data, ../shared/datasets)")
    p.add_argument("--out", required=True, help="the schema file to write")
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from fairness.datasets import dataset_schema, load_dataset

    sensitive = [s.strip() for s in args.sensitive.split(",")] if args.sensitive else None
    schema = dataset_schema(load_dataset(args.dataset, args.data_dir, sensitive=sensitive, seed=args.seed))
    out = Path(args.out)
    tmp = out.with_name(out.name + ".tmp")
    tmp.write_text(json.dumps(schema.model_dump(mode="json"), indent=2) + "\n")
    tmp.replace(out)
    print(f"schema of {schema.name}: {len(schema.attributes)} attributes, {schema.n_inputs} model inputs, "
          f"sensitive {', '.join(schema.sensitive)}; written to {out}")
    return 0
