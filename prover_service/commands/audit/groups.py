"""`fairproof audit groups`: selection rates per compound sensitive group and the group metrics, over
the rows and over a Bayesian network learned from them."""
from __future__ import annotations

import argparse
import json
from pathlib import Path

from .common import audit_rows, data_arguments, favourable_argument, spread_lens
from .networks import describe_network, feature_influence, learned_network, learned_rates
from .plots import plot_groups


def register_groups(verbs: argparse._SubParsersAction) -> None:
    """`fairproof audit groups`: selection rates and group metrics."""
    gr = verbs.add_parser(
        "groups", help="selection rates per compound sensitive group; disparate impact, parity, equalized odds",
        description="Every row of the data set decided by the committed model (quantised as a customer's query; "
                    "rows outside the domain box counted apart): per compound sensitive group the selection rate, "
                    "the true positive rate and the false positive rate with Wilson 95% intervals; disparate "
                    "impact (min/max selection rate), the statistical parity difference, the equal opportunity "
                    "difference (the TPR gap, Hardt et al.) and equalized odds (the larger of the TPR and FPR "
                    "gaps, FVGM's and Justicia's EO) with bootstrap intervals; the most and least favoured groups. "
                    "The rows need their true outcome: --data with the schema's label column.")
    data_arguments(gr)
    favourable_argument(gr)
    gr.add_argument("--bootstrap", type=int, default=1000, metavar="B", help="bootstrap resamples (default 1000)")
    gr.add_argument("--distribution", type=int, default=20000, metavar="N",
                    help="also the selection rates over a Bayesian network learned from the rows (the group a "
                         "root, every other feature discretised), N draws per group (default 20000; 0: off)")
    gr.add_argument("--structure", choices=("learned", "star"), default="learned",
                    help="the network's structure: learned from the rows by hill climbing on BIC (pgmpy; "
                         "default), or the star (every feature with the group as its only parent)")
    gr.add_argument("--influence", action="store_true",
                    help="with --distribution: FVGM's fairness influence of each feature, how much the statistical "
                         "parity difference and each group's rate change when that feature is made uniform")
    gr.add_argument("--save-json", metavar="FILE", help="write the report as JSON to FILE")
    gr.add_argument("--plot", metavar="FILE.png", help="write the selection rates as a PNG chart")
    gr.set_defaults(handler=run_groups)


def run_groups(args: argparse.Namespace) -> int:
    from fairness.errors import ModelError
    from audits.group_metrics import group_report
    from prover_service.workspace import ModelWorkspace

    if args.bootstrap < 0 or args.distribution < 0:
        raise ModelError("--bootstrap and --distribution must be non-negative numbers of draws")
    workspace = ModelWorkspace.open(args.model)
    model = workspace.fixed_point()
    card = workspace.card()
    favourable = spread_lens(args, workspace, model).favourable_class
    rows = audit_rows(args, workspace, labels=True)
    X, y = rows.X, rows.y
    report = group_report(model, X, y, favourable, bootstrap=args.bootstrap)
    labels = card.architecture.class_labels
    print(f"group fairness of {card.model_id} over {report.rows} rows of {rows.source} ({report.outside_box} outside "
          f"the domain box skipped), favourable class {labels[favourable]!r}")
    print(f"  {'group':<32} {'n':>6} {'selected':>9} {'rate [95% CI]':>22} {'positives':>9} {'TPR [95% CI]':>22} "
          f"{'negatives':>9} {'FPR [95% CI]':>22}")

    def rate(value, interval) -> str:
        return "-" if value is None else f"{value:.3f} [{interval[0]:.3f}, {interval[1]:.3f}]"

    for g in report.groups:
        print(f"  {', '.join(g.labels)[:32]:<32} {g.n:>6} {g.selected:>9} "
              f"{rate(g.selection_rate, g.selection_interval):>22} {g.positives:>9} "
              f"{rate(g.true_positive_rate, g.true_positive_interval):>22} {g.negatives:>9} "
              f"{rate(g.false_positive_rate, g.false_positive_interval):>22}")
    for name, key, value in group_metric_rows(report):
        interval = report.intervals.get(key)
        text = "-" if value is None else f"{value:.3f}" + (f" [{interval[0]:.3f}, {interval[1]:.3f}]" if interval else "")
        print(f"  {name:<48} {text}")
    if report.most_favoured is not None:
        print(f"  most favoured: {', '.join(report.most_favoured)}; least favoured: {', '.join(report.least_favoured)}")
    network = learned_network(workspace, model, X, args.structure) if args.distribution else None
    learned = learned_rates(network, model, favourable, args.distribution) if network is not None else None
    if learned is not None:
        rates, di, sp = learned
        print(f"  over the learned distribution ({args.distribution} draws per group; "
              f"{describe_network(network, card)}):")
        for r in rates:
            print(f"  {', '.join(r.labels)[:32]:<32} {r.rate:.3f} [{r.interval[0]:.3f}, {r.interval[1]:.3f}]")
        print(f"  disparate impact {'-' if di is None else f'{di:.3f}'}, statistical parity difference {sp:.3f}")
    influence = feature_influence(network, model, favourable, args.distribution) if args.influence and learned else None
    if influence:
        print("  fairness influence (statistical parity difference minus its value with the feature uniform):")
        for i in influence[:10]:
            print(f"  {card.feature_names[i.column][:32]:<32} {i.parity_change:+.4f}")
    if args.save_json:
        Path(args.save_json).write_text(json.dumps({
            "model_id": card.model_id, "favourable_class": labels[favourable], "rows": report.rows,
            "outside_box": report.outside_box,
            "data": rows.source,
            "groups": [{"labels": list(g.labels), "n": g.n, "selected": g.selected, "positives": g.positives,
                        "true_positives": g.true_positives, "selection_rate": g.selection_rate,
                        "selection_interval": list(g.selection_interval), "true_positive_rate": g.true_positive_rate,
                        "true_positive_interval": list(g.true_positive_interval), "negatives": g.negatives,
                        "false_positives": g.false_positives, "false_positive_rate": g.false_positive_rate,
                        "false_positive_interval": list(g.false_positive_interval)} for g in report.groups],
            "disparate_impact": report.disparate_impact, "statistical_parity": report.statistical_parity,
            "equal_opportunity": report.equal_opportunity, "false_positive_gap": report.false_positive_gap,
            "equalized_odds": report.equalized_odds,
            "intervals": {k: list(v) for k, v in report.intervals.items()},
            "most_favoured": report.most_favoured and list(report.most_favoured),
            "least_favoured": report.least_favoured and list(report.least_favoured),
            "learned_distribution": None if learned is None else {
                "structure": args.structure, "network": describe_network(network, card),
                "draws_per_group": args.distribution, "disparate_impact": learned[1],
                "statistical_parity": learned[2],
                "groups": [{"labels": list(r.labels), "selected": r.selected, "rate": r.rate,
                            "interval": list(r.interval)} for r in learned[0]]},
            "influence": None if influence is None else [
                {"feature": card.feature_names[i.column], "parity_change": i.parity_change,
                 "rate_change": list(i.rate_change)} for i in influence]}, indent=2))
    if args.plot:
        plot_groups(report, card.model_id, Path(args.plot))
    return 0


def group_metric_rows(report) -> list[tuple[str, str, float | None]]:
    """(name as its paper gives it, JSON key, value) of each group metric, in the order reports list them."""
    return [("disparate impact (min/max)", "disparate_impact", report.disparate_impact),
            ("statistical parity difference", "statistical_parity", report.statistical_parity),
            ("equal opportunity difference (TPR gap)", "equal_opportunity", report.equal_opportunity),
            ("false positive rate gap", "false_positive_gap", report.false_positive_gap),
            ("equalized odds (larger of TPR and FPR gaps)", "equalized_odds", report.equalized_odds)]
