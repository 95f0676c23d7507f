"""`fairproof train`: train a classifier on a benchmark dataset and save a model artifact.

Prints per-epoch progress to stderr, then test accuracy, the fixed-point
agreement report and the bit-width check at the chosen scale.
"""
from __future__ import annotations

import argparse
import sys


def parse_hidden(text: str) -> tuple[int, ...]:
    try:
        sizes = tuple(int(p) for p in text.split(",") if p.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(f"hidden sizes must be comma-separated integers, got {text!r}") from None
    if not sizes or any(h < 1 for h in sizes):
        raise argparse.ArgumentTypeError(f"hidden sizes must be positive, got {text!r}")
    return sizes


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("train", help="train a ReLU classifier on a benchmark dataset and save it as a model artifact")
    p.add_argument("--dataset", required=True, help="german, adult, credit or compas")
    p.add_argument("--hidden", type=parse_hidden, default=(4, 2), help="hidden layer sizes, e.g. 4,2 (default)")
    p.add_argument("--variant", choices=("fair", "unfair"), default="fair",
                   help="fair: the largest L2 penalty of a fixed grid that keeps validation accuracy within "
                        "1 point of the unpenalised model (validation rows carved from the training split); "
                        "unfair: none")
    p.add_argument("--weight-decay", type=float, default=None,
                   help="train with this explicit weight decay instead (read as mean CE + wd/(2N) * sum ||W||^2; "
                        "the paper's values are German 10, Adult 0.2, Credit 2.5)")
    p.add_argument("--epochs", type=int, default=None,
                   help="passes over the training rows (default: the dataset's schedule, e.g. 50 for german)")
    p.add_argument("--lr", type=float, default=None,
                   help="SGD learning rate (default: the dataset's schedule, 0.1)")
    p.add_argument("--batch-size", type=int, default=None,
                   help="rows per SGD step (default: the dataset's schedule, e.g. 32 for german)")
    p.add_argument("--seed", type=int, default=0, help="seed of the initial weights and batch order")
    p.add_argument("--sensitive", default=None, help="comma-separated sensitive features (default: the paper's)")
    p.add_argument("--scale-bits", type=int, default=None, help="fixed-point scale for the report (default 16)")
    p.add_argument("--data-dir", default=None, help="dataset directory (default: $FAIRPROOF_DATA_DIR, ./data, ../shared/datasets)")
    p.add_argument("--out", required=True, help="artifact directory to write (model.json + weights.npz)")
    p.add_argument("--quiet", action="store_true", help="no per-epoch progress")
    p.set_defaults(handler=run)


def print_fixed_point_report(artifact, dataset, scale_bits: int) -> None:
    from fairness.bitwidth import bit_widths, max_safe_scale_bits
    from fairness.fixed_point import agreement_report, to_fixed_point

    fp = to_fixed_point(artifact, scale_bits)
    agree = agreement_report(artifact.model, fp, dataset.X_test)
    widths = bit_widths(fp)
    print(f"fixed point at scale 2^{scale_bits}: decisions agree on {agree.n_agree}/{agree.n} test rows "
          f"({agree.agreement_rate:.4f}), max |logit error| {agree.max_logit_error:.3g}, "
          f"integer ties {agree.n_ties}, test rows outside the box {agree.n_outside_box}")
    status = "ok" if widths.ok else "WOULD WRAP"
    print(f"bit widths: widest {widths.widest.name} = {widths.max_bits} bits (limit {widths.limit_bits}): {status}; "
          f"largest safe scale 2^{max_safe_scale_bits(artifact)}")


def run(args: argparse.Namespace) -> int:
    from fairness.datasets import canonical_name, load_dataset
    from fairness.fixed_point import DEFAULT_SCALE_BITS
    from fairness.model import save_artifact
    from fairness.training import FAIR_L2_GRID, default_config, train_fair_on_dataset, train_on_dataset

    name = canonical_name(args.dataset)
    sensitive = [s.strip() for s in args.sensitive.split(",")] if args.sensitive else None
    dataset = load_dataset(name, args.data_dir, sensitive=sensitive)
    select = args.variant == "fair" and args.weight_decay is None
    config = default_config(name, args.hidden, "unfair", seed=args.seed, weight_decay=args.weight_decay,
                            epochs=args.epochs, lr=args.lr, batch_size=args.batch_size)
    penalty = (f"l2 chosen from {list(FAIR_L2_GRID)} on a validation split" if select
               else f"weight_decay={config.weight_decay}")
    print(f"training {name} hidden={config.hidden_sizes} variant={args.variant} {penalty} "
          f"lr={config.lr} epochs={config.epochs} batch={config.batch_size} seed={config.seed} "
          f"({len(dataset.y_train)} train / {len(dataset.y_test)} test rows)", file=sys.stderr)

    def progress(epoch: int, loss: float, acc: float) -> None:
        if not args.quiet:
            print(f"  epoch {epoch}/{config.epochs}: loss {loss:.4f} train accuracy {acc:.4f}", file=sys.stderr)

    def grid_progress(point) -> None:
        if not args.quiet:
            verdict = "eligible" if point.eligible else ("one class only" if not point.all_classes else "too inaccurate")
            print(f"  l2 {point.l2:g}: validation accuracy {point.val_accuracy:.4f} ({verdict}, {point.seconds:.1f}s)",
                  file=sys.stderr)

    if select:
        artifact, result, selection = train_fair_on_dataset(dataset, config, progress, grid_progress=grid_progress)
        print(f"fair l2 = {selection.l2:g} (reference validation accuracy {selection.reference_val_accuracy:.4f})")
        if not selection.found:
            print("warning: no grid penalty met the rule (every class predicted, validation accuracy within 1 point); "
                  "the fair model is unpenalised",
                  file=sys.stderr)
    else:
        artifact, result = train_on_dataset(dataset, config, progress)
    out = save_artifact(artifact, args.out)
    print(f"train accuracy {result.train_accuracy:.4f}, test accuracy {result.test_accuracy:.4f} ({result.seconds:.1f}s)")
    if result.degenerate:
        print("warning: the model predicts a single class on the whole test set (try another seed or a smaller weight decay)",
              file=sys.stderr)
    print_fixed_point_report(artifact, dataset, args.scale_bits if args.scale_bits is not None else DEFAULT_SCALE_BITS)
    print(f"model artifact written to {out}")
    return 0
