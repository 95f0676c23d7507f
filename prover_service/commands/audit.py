"""`fairproof audit spread`: the counterfactual spread of a model over a data set (plaintext).

Every individual of the data set is run with every combination of sensitive
values; the command prints the distribution of k (distinct margin buckets)
and of distinct decisions, the individuals with the largest k, and writes the
same as JSON and a PNG chart when asked.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "audit", help="model-wide fairness reports (plaintext, for the bank or an auditor with the model)",
        description="Model-wide reports over a data set, computed in plaintext from the committed model.")
    verbs = p.add_subparsers(dest="audit", required=True, metavar="REPORT")
    s = verbs.add_parser(
        "spread", help="counterfactual spread over a data set: how many outcomes the sensitive combinations give",
        description="For every individual, the committed model's decision and favourable-class logit margin "
                    "under every combination of sensitive values; k = the number of distinct margin buckets "
                    "(HyFair's C_eps on the logit margin, docs/STATEMENT.md). Prints the distribution of k and of "
                    "the distinct decisions and the individuals with the largest k.")
    s.add_argument("--model", required=True, metavar="DIR", help="committed model directory")
    s.add_argument("--data", default="test", choices=("test",), help="the dataset's test split (default)")
    s.add_argument("--data-dir", metavar="DIR", help="dataset directory (default: see README)")
    s.add_argument("--limit", type=int, metavar="N", help="only the first N individuals")
    s.add_argument("--top", type=int, default=10, metavar="N", help="individuals with the largest k to list")
    s.add_argument("--bucket-width", type=float, metavar="W",
                   help="bucket width in logits (default: the card's lens, else 0.2)")
    s.add_argument("--favourable-class", metavar="LABEL", help="default: the card's lens, else the dataset's")
    s.add_argument("--json", metavar="FILE", help="write the report as JSON")
    s.add_argument("--plot", metavar="FILE.png", help="write the distribution of k as a PNG chart")
    s.set_defaults(handler=run_spread)


def _lens(args, workspace, model):
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
    if args.bucket_width is not None:
        try:
            width = bucket_width_at(model, args.bucket_width)
        except ValueError as exc:
            raise ModelError(str(exc)) from None
    else:
        width = card.spread.bucket_width if card.spread else bucket_width_at(model, DEFAULT_BUCKET_WIDTH)
    return SpreadLens(favourable, width)


def run_spread(args: argparse.Namespace) -> int:
    from fairness.datasets import load_dataset
    from fairness.errors import DataError, ModelError
    from fairness.spread_audit import audit_spread
    from offline_precompute.certify import query_from_record
    from prover_service.workspace import ModelWorkspace

    if args.limit is not None and args.limit < 1 or args.top < 0:
        raise ModelError("--limit must be at least 1 and --top non-negative")
    workspace = ModelWorkspace.open(args.model)
    artifact, model = workspace.artifact, workspace.fixed_point()
    lens = _lens(args, workspace, model)
    sensitive = getattr(artifact.preprocessor, "sensitive", None)
    if not isinstance(sensitive, tuple) or not all(isinstance(name, str) for name in sensitive):
        raise DataError(f"model {artifact.dataset!r} was not trained here on a shipped dataset: "
                        "the spread audit reads the dataset's test split")
    dataset = load_dataset(artifact.dataset, args.data_dir, sensitive=list(sensitive))
    records = list(dataset.records_test[:args.limit] if args.limit else dataset.records_test)
    queries, kept, outside = [], [], 0
    for i, record in enumerate(records):
        try:
            queries.append(query_from_record(artifact, model, dict(record)))
            kept.append(i)
        except DataError:
            outside += 1  # outside the card's domain box: no certificate is issued for it either
    start = time.perf_counter()
    interactive = sys.stderr.isatty()

    def progress(done: int, total: int) -> None:
        if interactive and (done == total or done % 50 == 0):
            print(f"\r  spread: {done}/{total} individuals ({time.perf_counter() - start:.1f} s)",
                  end="\n" if done == total else "", file=sys.stderr, flush=True)

    report = audit_spread(model, queries, lens, progress)
    card = workspace.card()
    labels = card.architecture.class_labels
    width_logits = lens.bucket_width / (1 << model.net.logit_scale_bits)
    n = len(report.rows)
    print(f"counterfactual spread of {card.model_id} over {n} test individuals "
          f"({outside} outside the domain box skipped), {report.n_slices} sensitive combinations")
    print(f"  favourable class {labels[lens.favourable_class]!r}, bucket width {width_logits:.6g} logits")
    print(f"  {'k':>3} {'individuals':>12} {'share':>7}   {'distinct decisions':>18} {'individuals':>12}")
    kd, dd = report.k_distribution, report.decision_distribution
    for k in range(1, report.n_slices + 1):
        print(f"  {k:>3} {kd[k]:>12} {kd[k] / max(n, 1):>7.1%}   {k:>18} {dd[k]:>12}")
    print(f"  decision changes with the sensitive combination alone: {report.flipped} of {n}; "
          f"mean largest margin gap {float(report.mean_gap()):.4f} logits")
    top = report.largest(args.top)
    if top:
        print("  largest k (then largest margin gap):")
        for row in top:
            sp = row.spread
            print(f"    test #{kept[row.index]}: k = {sp.distinct_buckets}, decisions "
                  f"{', '.join(labels[d] for d in sp.decisions)}, gap {float(sp.largest_margin_gap):.4f} logits")
    if args.json:
        Path(args.json).write_text(json.dumps({
            "model_id": card.model_id, "individuals": n, "outside_box": outside, "slices": report.n_slices,
            "favourable_class": labels[lens.favourable_class], "bucket_width": lens.bucket_width,
            "logit_scale_bits": model.net.logit_scale_bits,
            "k_distribution": kd, "distinct_decisions": dd, "decision_changes": report.flipped,
            "largest": [{"test_index": kept[r.index], "k": r.spread.distinct_buckets,
                         "decisions": list(r.spread.decisions),
                         "margin_gap": float(r.spread.largest_margin_gap)} for r in top],
        }, indent=2))
    if args.plot:
        _plot(kd, card.model_id, width_logits, Path(args.plot))
    return 0


def _plot(distribution: dict[int, int], model_id: str, width: float, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(5, 3.2))
    ks = list(distribution)
    ax.bar([str(k) for k in ks], [distribution[k] for k in ks], color="#4C72B0")
    ax.set_xlabel("k: distinct margin buckets over the sensitive combinations")
    ax.set_ylabel("individuals")
    ax.set_title(f"{model_id}: counterfactual spread (width {width:.3g} logits)", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
