"""`fairproof audit report`: one self-contained HTML page for a regulator or a model-risk team, built
section by section (the model, certified radii, group rates, spread, global search, explanations)."""
from __future__ import annotations

import argparse
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .common import AuditRows, audit_rows, data_arguments, favourable_argument, progress_printer, spread_lens
from .explain import discriminatory_seeds
from .groups import group_metric_rows
from .networks import describe_network, feature_influence, learned_network, learned_rates
from .plots import plot_eps, plot_groups, plot_spread, png_of
from .search import describe_margin_difference


def register_report(verbs: argparse._SubParsersAction) -> None:
    """`fairproof audit report`: the HTML report."""
    rp = verbs.add_parser(
        "report", help="one HTML page: radii, group rates, spread, global search and explanations",
        description="Writes one self-contained HTML page (tables and embedded PNG charts, no script, nothing "
                    "fetched) for a regulator or a model-risk team: the certified radius of the first customers "
                    "of the rows (plaintext) as a histogram, selection rates per group with disparate impact, "
                    "statistical parity, equal opportunity and equalized odds, the counterfactual spread's k "
                    "distribution, the global discrimination search with the maximum margin difference, and the "
                    "explanation rules. The rows need their true outcome: --data with the schema's label column.")
    data_arguments(rp)
    rp.add_argument("--out", required=True, metavar="FILE.html", help="where to write the page")
    rp.add_argument("--customers", type=int, default=50, metavar="N",
                    help="test customers certified for the radius histogram (default 50)")
    rp.add_argument("--samples", type=int, default=5000, metavar="N", help="explanation samples (default 5000)")
    rp.add_argument("--time-limit", type=float, default=100.0, metavar="S", help="global search, seconds per pair")
    rp.add_argument("--draws", type=int, default=20000, metavar="N",
                    help="draws per group from the learned distribution (default 20000; a quarter for the "
                         "influence of each feature)")
    favourable_argument(rp)
    rp.set_defaults(handler=run_report)


@dataclass(frozen=True)
class _Audit:
    """What every section of the report reads: the committed model, its card, the rows inside the box."""

    args: argparse.Namespace
    workspace: Any
    model: Any
    card: Any
    lens: Any
    rows: AuditRows
    queries: list[tuple[int, ...]]
    outside: int
    choices: Any  # categorical features at their categories (audits.global_search)
    blocks: Any  # one-hot blocks

    @property
    def favourable(self) -> int:
        return int(self.lens.favourable_class)

    @property
    def preprocessor(self) -> Any:
        return self.workspace.artifact.preprocessor


def run_report(args: argparse.Namespace) -> int:
    from fairness.errors import ModelError
    from prover_service.report import render
    from prover_service.workspace import write_atomically

    if args.customers < 1 or args.samples < 100 or not args.time_limit > 0 or args.draws < 100:
        raise ModelError("--customers must be at least 1, --samples and --draws at least 100 and --time-limit "
                         "positive")
    audit = _open(args)
    sections = [_model_section(audit), _radius_section(audit), _groups_section(audit), _spread_section(audit)]
    search, results = _search_section(audit)
    sections += [search, _explain_section(audit, results)]
    write_atomically(Path(args.out), render(f"Fairness report: {audit.card.model_id}", sections))
    print(f"report written to {args.out} ({len(sections)} sections)")
    return 0


def _open(args: argparse.Namespace) -> _Audit:
    from audits.global_search import categorical_choices, one_hot_blocks
    from prover_service.workspace import ModelWorkspace

    workspace = ModelWorkspace.open(args.model)
    model, card = workspace.fixed_point(), workspace.card()
    lens = spread_lens(args, workspace, model)
    rows = audit_rows(args, workspace, labels=True)
    queries, _, outside = rows.inside(model)
    pre = workspace.artifact.preprocessor
    return _Audit(args, workspace, model, card, lens, rows, queries, outside, categorical_choices(pre, model),
                  one_hot_blocks(pre, model))


def _model_section(audit: _Audit) -> Any:
    from prover_service.report import Section

    card, labels = audit.card, audit.card.architecture.class_labels
    return Section("The model", [
        f"Model {card.model_id} ({card.dataset}), hidden layers {list(card.architecture.hidden_sizes)}, "
        f"classes {', '.join(labels)}; favourable class {labels[audit.favourable]!r}.",
        f"Commitment {card.commitment}; card digest {card.digest()}. Certificates under this card prove: "
        f"{', '.join(card.lenses)}.",
        f"Sensitive attributes: {', '.join(f.name for f in card.sensitive)}. {len(audit.queries)} individuals of "
        f"{audit.rows.source} inside the domain box ({audit.outside} outside, left out everywhere below)."])


def _radius_section(audit: _Audit) -> Any:
    import statistics

    import numpy as np

    from fairness.certificate import FLIP, certify
    from prover_service.report import Section, Table

    model, card, customers = audit.model, audit.card, audit.args.customers
    say_progress = progress_printer("radius")
    certificates = []
    for i, q in enumerate(audit.queries[:customers]):
        certificates.append(certify(model, q, eps_bits=card.eps_scale_bits))
        say_progress(i + 1, min(customers, len(audit.queries)))
    eps = [c.eps / (1 << c.eps_bits) for c in certificates if c.status != FLIP]
    flips = sum(c.status == FLIP for c in certificates)
    cap = sum(1 for c in certificates if c.status != FLIP and c.eps >= _cap(model, card.eps_scale_bits))
    radius = Section("Certified radius (plaintext, fast)", [
        f"The first {len(certificates)} customers of {audit.rows.source} certified as their bundles would be: the "
        "largest eps such "
        "that any sensitive values and any move of the other features within eps keep the decision. "
        f"{flips} decisions change with the sensitive values alone (counterfactual flips, eps 0)."])
    if eps:
        quantiles = np.percentile(eps, [10, 50, 90])
        radius.tables.append(Table(["customers", "median eps", "10%", "90%", "at the cap", "flips"],
                                   [[len(certificates), statistics.median(eps), float(quantiles[0]),
                                     float(quantiles[2]), cap, flips]]))
        radius.images.append(("radius histogram", png_of(lambda path: plot_eps(eps, cap, flips, card.model_id, path))))
    return radius


def _groups_section(audit: _Audit) -> Any:
    from audits.group_metrics import group_report
    from prover_service.report import Section, Table

    model, card, favourable, draws = audit.model, audit.card, audit.favourable, audit.args.draws
    X, y = audit.rows.X, audit.rows.y
    groups = group_report(model, X, y, favourable)
    g = Section(f"Selection rates by group ({audit.rows.source})", [
        "Each row decided by the committed model as a customer's query would be. Intervals: Wilson 95% per "
        "group; bootstrap 95% for the differences. The equal opportunity difference is the gap of true positive "
        "rates alone (Hardt et al.); equalized odds, as FVGM and Justicia define EO, is the larger of the true "
        "and false positive rate gaps."])
    g.tables.append(Table(["group", "n", "selected", "selection rate", "95% CI", "positives", "TPR", "95% CI",
                           "negatives", "FPR", "95% CI"], [
        [", ".join(r.labels), r.n, r.selected, r.selection_rate if r.selection_rate is not None else "-",
         "[%.3f, %.3f]" % r.selection_interval, r.positives,
         r.true_positive_rate if r.true_positive_rate is not None else "-", "[%.3f, %.3f]" % r.true_positive_interval,
         r.negatives, r.false_positive_rate if r.false_positive_rate is not None else "-",
         "[%.3f, %.3f]" % r.false_positive_interval]
        for r in groups.groups]))
    g.tables.append(Table(["metric", "value", "95% CI"], [
        [name, "-" if value is None else value,
         "-" if key not in groups.intervals else "[%.3f, %.3f]" % groups.intervals[key]]
        for name, key, value in group_metric_rows(groups)]))
    if groups.most_favoured is not None:
        g.paragraphs.append(f"Most favoured: {', '.join(groups.most_favoured)}; least favoured: "
                            f"{', '.join(groups.least_favoured)}.")
    network = learned_network(audit.workspace, model, X, "learned")
    rates, di, sp = learned_rates(network, model, favourable, draws)
    g.paragraphs.append("Over a Bayesian network learned from the rows (the group a root, every other feature "
                        f"discretised; structure {describe_network(network, card)}; {draws:,} draws per group), "
                        f"the selection rates give disparate impact {'-' if di is None else f'{di:.3f}'} and "
                        f"statistical parity difference {sp:.3f}.")
    g.tables.append(Table(["group (learned distribution)", "draws", "selection rate", "95% CI"], [
        [", ".join(r.labels), r.samples, r.rate, "[%.3f, %.3f]" % r.interval] for r in rates]))
    g.tables.append(Table(["feature (fairness influence, FVGM)", "change of the parity difference"], [
        [card.feature_names[i.column], i.parity_change]
        for i in feature_influence(network, model, favourable, max(100, draws // 4))[:8]]))
    g.images.append(("selection rates", png_of(lambda path: plot_groups(groups, card.model_id, path))))
    return g


def _spread_section(audit: _Audit) -> Any:
    from audits.spread import audit_spread
    from prover_service.report import Section, Table

    model, card, lens = audit.model, audit.card, audit.lens
    spread = audit_spread(model, audit.queries, lens)
    width = lens.bucket_width / (1 << model.net.logit_scale_bits)
    s = Section("Counterfactual spread", [
        f"For every individual of {audit.rows.source}, the decision and the favourable logit margin under every "
        "combination of "
        f"sensitive values; k counts the distinct margin buckets of width {width:.3g} logits. "
        f"{spread.flipped} of {len(spread.rows)} individuals get another decision from the sensitive values alone."])
    s.tables.append(Table(["k", "individuals"], [[k, n] for k, n in spread.k_distribution.items()]))
    s.images.append(("k distribution",
                     png_of(lambda path: plot_spread(spread.k_distribution, card.model_id, width, path))))
    if model.net.n_classes == 2:
        from audits.k_discrimination import max_buckets

        most = max_buckets(model, audit.favourable, width, audit.args.time_limit, audit.choices, audit.blocks)
        bound = "unknown" if most.upper_bound is None else str(most.upper_bound)
        s.paragraphs.append(f"Over the whole domain box (one MILP over a copy of the network per combination, the "
                            f"point re-checked exactly), some individual reaches k = {most.k} ({most.status}; no "
                            f"individual reaches more than {bound}).")
    return s


def _search_section(audit: _Audit) -> tuple[Any, list[Any]]:
    """The global discrimination search's section, and its results (the explanations' seeds)."""
    from audits.global_search import global_search, maximum_margin_difference
    from prover_service.report import Section, Table

    model, card, time_limit = audit.model, audit.card, audit.args.time_limit
    gs = Section("Global discrimination search", [
        "Does any individual of the domain get another decision for its sensitive values alone? One exact MILP "
        "per ordered pair of sensitive combinations (categorical features at their categories); "
        "counterexamples re-checked by the exact model."])
    if model.net.n_classes != 2:
        gs.paragraphs.append("Not run: the search compares one class's margin, for two-class models.")
        return gs, []
    results = global_search(model, audit.favourable, time_limit, choices=audit.choices, blocks=audit.blocks)
    names = [", ".join(card.slice_labels(i)[1]) for i in range(len(card.slices()))]
    gs.tables.append(Table(["favoured as", "not as", "status", "t* (logits)", "seconds"], [
        [names[r.source], names[r.target], r.status, "-" if r.objective is None else r.objective, r.seconds]
        for r in results]))
    difference = maximum_margin_difference(model, audit.favourable, time_limit, choices=audit.choices,
                                           blocks=audit.blocks)
    gs.paragraphs.append(describe_margin_difference(difference, names, card.feature_names,
                                                    sensitive=model.sensitive_columns,
                                                    preprocessor=audit.preprocessor,
                                                    scale_bits=model.scale_bits) + ".")
    return gs, results


def _explain_section(audit: _Audit, results: list[Any]) -> Any:
    from audits.explain import describe_condition, explain
    from prover_service.report import Section, Table

    seeds = discriminatory_seeds(audit.model, results, audit.queries)
    rules = explain(audit.model, audit.choices, seeds, samples=audit.args.samples, blocks=audit.blocks)
    ex = Section("Where it discriminates (explanations)", [
        f"{rules.samples} samples around {len(seeds)} discriminatory individuals and uniformly over the box, "
        f"{rules.discriminatory_share:.1%} with k >= 2; a depth-3 decision tree (accuracy "
        f"{rules.tree_accuracy:.1%} on a fresh sample) gives these rules for k >= 2."])
    ex.tables.append(Table(["rule", "coverage", "precision", "mean k difference"], [
        [" and ".join(describe_condition(c, audit.preprocessor, audit.card.feature_names) for c in r.conditions)
         or "anywhere", r.coverage, r.precision, r.mean_k_difference] for r in rules.rules] or [["(none)", 0, 0, 0]]))
    return ex


def _cap(model, eps_bits: int) -> int:
    from fairness.regions import eps_cap

    return eps_cap(model, eps_bits)
