"""`fairproof audit dataset` and `fairproof audit prove-groups`: a public audit dataset, and a
zero-knowledge proof of the committed model's decision counts per group on it."""
from __future__ import annotations

import argparse
from pathlib import Path

from ..key_options import add_key_setup_arguments
from .common import audit_rows, data_arguments, favourable_argument, favourable_index, say


def register_dataset(verbs: argparse._SubParsersAction) -> None:
    """`fairproof audit dataset`: write a public audit dataset."""
    ds = verbs.add_parser(
        "dataset", help="write a public audit dataset (model inputs and favourable labels) from the model's data",
        description="The model's dataset, training and test splits in order, as the card's model inputs at the "
                    "card's scale (the card's public preprocessing), with a label per row: 1 when its true "
                    "outcome is the favourable class. Rows outside the domain box are left out (counted). "
                    "A regulator publishes such a file; `audit prove-groups` proves the model's counts on it.")
    data_arguments(ds)
    ds.add_argument("--rows", type=int, metavar="N", help="only the first N rows inside the box (default: all)")
    favourable_argument(ds)
    ds.add_argument("--out", required=True, metavar="FILE.json", help="where to write the dataset")
    ds.set_defaults(handler=run_dataset)


def register_prove_groups(verbs: argparse._SubParsersAction) -> None:
    """`fairproof audit prove-groups`: prove the decision counts per group."""
    pg = verbs.add_parser(
        "prove-groups", help="prove the committed model's decision counts per group on a public audit dataset",
        description="A Groth16 proof, against the card's weight commitment, of the number of rows, positives, "
                    "selected rows and selected positives of every sensitive group on the dataset (named by its "
                    "Poseidon digest): selection rates, disparate impact, statistical parity, the equal "
                    "opportunity difference and equalized odds follow exactly. The audit circuit (one per row "
                    "count) is set up on first use and published on the card. Verify with `fairproof-verify "
                    "BUNDLE --card CARD --dataset FILE` or snarkjs (`fairproof export-snarkjs BUNDLE OUTDIR "
                    "--card CARD --dataset FILE`).")
    pg.add_argument("--model", required=True, metavar="DIR", help="committed model directory")
    pg.add_argument("--dataset", required=True, metavar="FILE.json", help="the public audit dataset")
    favourable_argument(pg)
    pg.add_argument("--out", required=True, metavar="BUNDLE.json", help="where to write the bundle")
    add_key_setup_arguments(pg)
    pg.set_defaults(handler=run_prove_groups)


def run_dataset(args: argparse.Namespace) -> int:
    from prover_service.audit_proving import audit_dataset
    from prover_service.workspace import ModelWorkspace, write_atomically

    workspace = ModelWorkspace.open(args.model)
    rows = audit_rows(args, workspace, labels=True, splits="all")
    dataset, outside = audit_dataset(workspace, args.rows, favourable_index(args, workspace), data=rows)
    write_atomically(Path(args.out), dataset.model_dump_json())
    positives = sum(dataset.labels)
    print(f"wrote {args.out}: {len(dataset.rows)} rows ({positives} labelled {dataset.favourable_label!r}), "
          f"{outside} outside the domain box left out; SHA-256 {dataset.sha256()}")
    return 0


def run_prove_groups(args: argparse.Namespace) -> int:
    from commitments.audit import AuditDataset
    from commitments.canonical import NonCanonical
    from fairness.errors import ModelError
    from prover_service.audit_proving import GroupCountsProver
    from prover_service.workspace import ModelWorkspace, write_atomically
    from verifier_client.audit import describe, group_metrics

    from ..key_options import ptau_from_args

    workspace = ModelWorkspace.open(args.model)
    try:
        dataset = AuditDataset.from_json(Path(args.dataset).read_bytes())
    except OSError as exc:
        raise ModelError(f"cannot read the audit dataset {args.dataset}: {exc.strerror or exc}") from None
    except NonCanonical as exc:
        raise ModelError(f"the audit dataset {args.dataset} is malformed: {exc}") from None
    ptau = ptau_from_args(args)
    prover = GroupCountsProver(workspace, progress=say, ptau=Path(ptau) if ptau else None,
                               single_party=args.single_party_setup)
    bundle = prover.prove(dataset, favourable_index(args, workspace))
    write_atomically(Path(args.out), bundle.model_dump_json(indent=1))
    card = workspace.card()
    from statement.group_counts import GroupCount

    counts = [GroupCount(g.rows, g.positives, g.selected, g.true_positives) for g in bundle.groups]
    for line in describe(group_metrics(card, counts), card, bundle.circuit):
        print(f"  {line}")
    print(f"wrote {args.out} (audit circuit {bundle.circuit}; the card at {workspace.card_path} now publishes it)")
    print(f"verify with: fairproof-verify {args.out} --card {workspace.card_path} --dataset {args.dataset}")
    return 0
