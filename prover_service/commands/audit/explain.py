"""`fairproof audit explain`: decision-tree rules for where the model discriminates (HyFair's
Algorithm 2), grown from the global search's counterexamples and the rows' discriminated individuals."""
from __future__ import annotations

import argparse
import json
from pathlib import Path

from .common import audit_rows, data_arguments, favourable_argument, spread_lens


def register_explain(verbs: argparse._SubParsersAction) -> None:
    """`fairproof audit explain`: rules for where the model discriminates."""
    ex = verbs.add_parser(
        "explain", help="rules for where the model discriminates (HyFair's decision-tree explanations)",
        description="Samples of the domain, around the global search's counterexamples and the data set's "
                    "discriminated individuals and uniformly over the box, labelled by k (distinct decisions "
                    "over the sensitive combinations, exact model); a shallow decision tree separates k >= 2; "
                    "its rules are printed in raw units with coverage, precision and HyFair's mean-k difference "
                    "on a fresh sample.")
    data_arguments(ex)
    ex.add_argument("--samples", type=int, default=5000, metavar="N", help="sample size (default 5000)")
    ex.add_argument("--depth", type=int, default=3, metavar="D", help="tree depth (default 3)")
    ex.add_argument("--time-limit", type=float, default=100.0, metavar="S",
                    help="the global search's seconds per pair, for seeds (default 100)")
    favourable_argument(ex)
    ex.add_argument("--save-json", metavar="FILE", help="write the rules as JSON to FILE")
    ex.set_defaults(handler=run_explain)


def discriminatory_seeds(model, results, queries) -> list[tuple[int, ...]]:
    """Where to look for rules: the global search's counterexamples on the grid, and the data's individuals
    whose decision changes with their sensitive values alone."""
    import numpy as np

    from audits.explain import distinct_decisions

    seeds = [r.counterexample.grid_point for r in results
             if r.counterexample is not None and r.counterexample.grid_point is not None]
    if queries:
        data = np.array(queries, dtype=np.int64)
        seeds += [tuple(q) for q in data[distinct_decisions(model, data) >= 2]]
    return seeds


def run_explain(args: argparse.Namespace) -> int:
    from fairness.errors import ModelError
    from audits.explain import condition_json, describe_condition, explain
    from audits.global_search import categorical_choices, global_search, one_hot_blocks
    from prover_service.workspace import ModelWorkspace

    if args.samples < 100 or args.depth < 1 or not args.time_limit > 0:
        raise ModelError("--samples must be at least 100, --depth at least 1 and --time-limit positive")
    workspace = ModelWorkspace.open(args.model)
    model = workspace.fixed_point()
    card = workspace.card()
    favourable = spread_lens(args, workspace, model).favourable_class
    choices = categorical_choices(workspace.artifact.preprocessor, model)
    queries, _, _ = audit_rows(args, workspace).inside(model)
    blocks = one_hot_blocks(workspace.artifact.preprocessor, model)
    seeds = discriminatory_seeds(model, global_search(model, favourable, args.time_limit, choices=choices,
                                                       blocks=blocks), queries)
    result = explain(model, choices, seeds, samples=args.samples, depth=args.depth, blocks=blocks)
    pre = workspace.artifact.preprocessor
    print(f"where {card.model_id} discriminates: {len(seeds)} discriminatory seeds, {result.samples} samples, "
          f"{result.discriminatory_share:.1%} of them with k >= 2; tree accuracy {result.tree_accuracy:.1%} "
          "on a fresh sample")
    if not result.rules:
        print("  no rule: the tree predicts k >= 2 nowhere")
    for i, rule in enumerate(result.rules, 1):
        text = " and ".join(describe_condition(c, pre, card.feature_names) for c in rule.conditions) or "anywhere"
        print(f"  rule {i}: {text}")
        print(f"          coverage {rule.coverage:.1%}, precision {rule.precision:.1%}, "
              f"mean k difference {rule.mean_k_difference:+.3f}")
    if args.save_json:
        Path(args.save_json).write_text(json.dumps({
            "model_id": card.model_id, "seeds": len(seeds), "samples": result.samples,
            "discriminatory_share": result.discriminatory_share, "tree_accuracy": result.tree_accuracy,
            "rules": [{"conditions": [describe_condition(c, pre, card.feature_names) for c in r.conditions],
                       "conditions_standardised": [condition_json(c, pre, card.feature_names) for c in r.conditions],
                       "coverage": r.coverage, "precision": r.precision, "mean_k_difference": r.mean_k_difference}
                      for r in result.rules]}, indent=2))
    return 0
