"""`fairproof audit spread` and `fairproof audit persistence`: what each individual's sensitive values
alone change, over the rows (the counterfactual spread, and PBA's persistent bias per group)."""
from __future__ import annotations

import argparse
import json
from pathlib import Path

from .common import audit_rows, data_arguments, favourable_argument, progress_printer, spread_lens
from .plots import plot_persistence, plot_spread


def register_spread(verbs: argparse._SubParsersAction) -> None:
    """`fairproof audit spread`: the counterfactual spread over the rows."""
    s = verbs.add_parser(
        "spread", help="counterfactual spread over a data set: how many outcomes the sensitive combinations give",
        description="For every individual, the committed model's decision and favourable-class logit margin "
                    "under every combination of sensitive values; k = the number of distinct margin buckets "
                    "(HyFair's C_eps on the logit margin, docs/STATEMENT.md). Prints the distribution of k and of "
                    "the distinct decisions and the individuals with the largest k.")
    data_arguments(s)
    s.add_argument("--limit", type=int, metavar="N", help="only the first N individuals")
    s.add_argument("--top", type=int, default=10, metavar="N", help="individuals with the largest k to list")
    s.add_argument("--bucket-width", type=float, metavar="W",
                   help="bucket width in logits (default: the card's lens, else 0.2)")
    favourable_argument(s)
    s.add_argument("--save-json", metavar="FILE", help="write the report as JSON to FILE")
    s.add_argument("--plot", metavar="FILE.png", help="write the distribution of k as a PNG chart")
    s.set_defaults(handler=run_spread)


def register_persistence(verbs: argparse._SubParsersAction) -> None:
    """`fairproof audit persistence`: PBA's persistent bias per sensitive group."""
    p2 = verbs.add_parser(
        "persistence", help="persistent bias per sensitive group (PBA's scores), observed and flipped",
        description="For every individual and every change of one sensitive attribute, sound LP bounds on the "
                    "difference of favourable logit margins between the individual and the counterfactual, "
                    "with the SAME numeric features moved by up to delta (standardised units) in both; "
                    "favoured if the lower bound is > 0, disfavoured if the upper bound is < 0.")
    data_arguments(p2)
    p2.add_argument("--delta", default="1,2,3", help="comma-separated deltas in standardised units (default 1,2,3)")
    p2.add_argument("--limit", type=int, default=200, metavar="N", help="the first N individuals (default 200)")
    p2.add_argument("--exact", action="store_true",
                    help="also solve every pair's min and max exactly (two-copy MILP, relative gap 1e-9): which of "
                         "the LP's inconclusive pairs are persistent and which are truly mixed (small models)")
    p2.add_argument("--time-limit", type=float, default=60.0, metavar="S",
                    help="with --exact: seconds per MILP; a solve stopped short reports its gap (default 60)")
    favourable_argument(p2)
    p2.add_argument("--save-json", metavar="FILE", help="write the table as JSON to FILE")
    p2.add_argument("--plot", metavar="FILE.png", help="write the favoured shares as a PNG chart")
    p2.set_defaults(handler=run_persistence)


def run_spread(args: argparse.Namespace) -> int:
    from fairness.errors import ModelError
    from audits.spread import audit_spread
    from prover_service.workspace import ModelWorkspace

    if args.limit is not None and args.limit < 1 or args.top < 0:
        raise ModelError("--limit must be at least 1 and --top non-negative")
    workspace = ModelWorkspace.open(args.model)
    model = workspace.fixed_point()
    lens = spread_lens(args, workspace, model)
    rows = audit_rows(args, workspace)
    queries, kept, outside = rows.inside(model, args.limit)
    report = audit_spread(model, queries, lens, progress_printer("spread"))
    card = workspace.card()
    labels = card.architecture.class_labels
    width_logits = lens.bucket_width / (1 << model.net.logit_scale_bits)
    n = len(report.rows)
    print(f"counterfactual spread of {card.model_id} over {n} individuals of {rows.source} "
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
            print(f"    {rows.names[kept[row.index]]}: k = {sp.distinct_buckets}, decisions "
                  f"{', '.join(labels[d] for d in sp.decisions)}, gap {float(sp.largest_margin_gap):.4f} logits")
    if args.save_json:
        Path(args.save_json).write_text(json.dumps({
            "model_id": card.model_id, "data": rows.source, "individuals": n, "outside_box": outside,
            "slices": report.n_slices,
            "favourable_class": labels[lens.favourable_class], "bucket_width": lens.bucket_width,
            "logit_scale_bits": model.net.logit_scale_bits,
            "k_distribution": kd, "distinct_decisions": dd, "decision_changes": report.flipped,
            "largest": [{"row": rows.names[kept[r.index]], "test_index": kept[r.index], "k": r.spread.distinct_buckets,
                         "decisions": list(r.spread.decisions),
                         "margin_gap": float(r.spread.largest_margin_gap)} for r in top],
        }, indent=2))
    if args.plot:
        plot_spread(kd, card.model_id, width_logits, Path(args.plot))
    return 0


def _deltas(text: str):
    from fractions import Fraction

    from fairness.errors import ModelError

    try:
        deltas = [Fraction(part.strip()) for part in text.split(",") if part.strip()]
    except (ValueError, ZeroDivisionError):
        raise ModelError(f"--delta takes comma-separated numbers, not {text!r}") from None
    if not deltas or any(d <= 0 or d > 100 for d in deltas):
        raise ModelError("every delta must lie in (0, 100] standardised units")
    return deltas


def run_persistence(args: argparse.Namespace) -> int:
    from fairness.errors import ModelError
    from fairness.persistence import PersistenceError
    from audits.persistence import audit_persistence
    from prover_service.workspace import ModelWorkspace

    deltas = _deltas(args.delta)
    if args.limit < 1 or not args.time_limit > 0:
        raise ModelError("--limit must be at least 1 and --time-limit positive")
    workspace = ModelWorkspace.open(args.model)
    artifact, model = workspace.artifact, workspace.fixed_point()
    card = workspace.card()
    if card.architecture.n_classes != 2:
        raise ModelError("persistence is defined for two-class models")
    favourable = spread_lens(args, workspace, model).favourable_class
    pre = artifact.preprocessor
    numeric = list(artifact.numeric_columns)
    rows = audit_rows(args, workspace)
    queries, _, outside = rows.inside(model, args.limit)
    try:
        scores = audit_persistence(model, queries, favourable, numeric, deltas, progress_printer("persistence"),
                                   exact=args.exact, time_limit=args.time_limit)
    except PersistenceError as exc:
        raise ModelError(str(exc)) from None
    labels = card.architecture.class_labels
    print(f"persistent bias of {card.model_id} over {len(queries)} individuals of {rows.source} ({outside} outside "
          f"the domain box skipped), favourable class {labels[favourable]!r}")
    for d in deltas:
        raw = ", ".join(f"{pre.feature_names[j]} +-{float(d) * _std(pre, j):.4g}" for j in numeric)
        print(f"  delta {float(d):g} (standardised) = {raw}")
    print(f"  {'attribute':<14} {'group':<22} {'setting':<9} {'delta':>5} {'pairs':>6} {'favoured':>9} "
          f"{'disfavoured':>11} {'inconclusive':>12}")
    for g in scores:
        print(f"  {g.attribute:<14} {g.group[:22]:<22} {g.setting:<9} {float(g.delta):>5g} {g.pairs:>6} "
              f"{g.share(g.favoured):>9.1%} {g.share(g.disfavoured):>11.1%} {g.share(g.inconclusive):>12.1%}")
    if args.exact:
        _print_exact_persistence(scores)
    if args.save_json:
        Path(args.save_json).write_text(json.dumps({
            "model_id": card.model_id, "data": rows.source, "individuals": len(queries), "outside_box": outside,
            "favourable_class": labels[favourable], "numeric_columns": [pre.feature_names[j] for j in numeric],
            "rows": [{"attribute": g.attribute, "group": g.group, "setting": g.setting, "delta": str(g.delta),
                      "pairs": g.pairs, "favoured": g.favoured, "disfavoured": g.disfavoured,
                      "inconclusive": g.inconclusive, **_exact_json(g)} for g in scores]}, indent=2))
    if args.plot:
        plot_persistence(scores, card.model_id, Path(args.plot))
    return 0


def _print_exact_persistence(scores) -> None:
    """The MILP's verdicts beside the LP's: the persistent pairs the relaxation left inconclusive, and
    whether every solve closed its gap (else the largest gap, never called exact)."""
    print("  exact, by the two-copy MILP on every pair (relative gap 1e-9):")
    print(f"  {'attribute':<14} {'group':<22} {'setting':<9} {'delta':>5} {'pairs':>6} {'favoured':>9} "
          f"{'disfavoured':>11} {'neither':>8} {'unresolved':>10}")
    for g in scores:
        e = g.exact
        print(f"  {g.attribute:<14} {g.group[:22]:<22} {g.setting:<9} {float(g.delta):>5g} {g.pairs:>6} "
              f"{g.share(e.favoured):>9.1%} {g.share(e.disfavoured):>11.1%} {g.share(e.neither):>8.1%} "
              f"{g.share(e.unresolved):>10.1%}")
    short = sum(g.exact.stopped_short for g in scores if g.setting == "observed")  # each pair counted once
    if short:
        print(f"  {short} pair(s) whose MILP stopped short of optimality (time limit): not exact there; the largest "
              f"gap between the value found and the solver's bound is {max(g.exact.largest_gap for g in scores):.3g} "
              "logits")
    else:
        print("  every MILP solved to optimality (relative gap 1e-9)")


def _exact_json(score) -> dict:
    if score.exact is None:
        return {}
    e = score.exact
    return {"exact": {"favoured": e.favoured, "disfavoured": e.disfavoured, "neither": e.neither,
                      "unresolved": e.unresolved, "stopped_short": e.stopped_short, "largest_gap": e.largest_gap}}


def _std(preprocessor, column: int) -> float:
    """The standard deviation a numeric model input was standardised with (a shipped dataset's
    preprocessor or a bank's schema)."""
    stds = getattr(preprocessor, "stds", None)
    if stds is not None:
        return float(stds[column])
    for feature, first in preprocessor.columns():
        if first == column:
            return float(feature.std)
    raise ValueError(f"model input {column} is not a feature of the schema")
