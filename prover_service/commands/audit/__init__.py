"""`fairproof audit spread|persistence|global|kdisc|groups|probabilistic|explain|report|dataset|prove-groups`:
model-wide reports.

Every verb runs on any committed model. The rows it reads are resolved once,
by `audit_rows`: `--data FILE.csv` (the bank's raw records read through the
model's schema, any defect refused with its line and column; the label column
where a report needs true outcomes), else a shipped dataset's test split
(`--data-dir`); a model imported under its own schema has no such split and is
asked for --data (docs/AUDITS.md).

spread: every individual run with every combination of sensitive values; the
distribution of k (distinct margin buckets) and of distinct decisions, and the
individuals with the largest k.

persistence: PBA's group scores; per sensitive group and delta, the share of
(input, single-attribute flip) pairs whose favourable margin is persistently
larger (favoured) or smaller (disfavoured) than the counterfactual's over the
box of numeric features within delta, observed and flipped, inconclusive
counted separately (audits.persistence).

global: HyFair's global 2-fairness over the whole domain box, one MILP per
ordered pair of sensitive combinations (audits.global_search): a
counterexample (re-checked exactly), fair (optimal), or unknown; beside it
HyFair's maximum margin difference, with the solver's bound and gap when it
stops short of optimality.

kdisc: HyFair's k-discrimination over the domain box, one MILP over a copy of
the network per sensitive combination (audits.k_discrimination).

groups: selection rates per compound sensitive group, disparate impact, the
statistical parity difference, the equal opportunity difference (TPR gap) and
equalized odds (FVGM's EO: the larger of the TPR and FPR gaps)
(audits.group_metrics).

probabilistic: FVGM's and Justicia's verification: each group's probability of
a favourable decision over a Bayesian network (a file, or learned from the
rows), exactly by enumeration or sampled with a stated confidence
(audits.probabilistic).

explain: decision-tree rules for where the model discriminates
(audits.explain, HyFair's Algorithm 2).

dataset, prove-groups: a public audit dataset, and a zero-knowledge proof of the
committed model's decision counts per group on it (statement.group_counts), which
`fairproof-verify --dataset` checks.

Each plaintext report prints a table and writes JSON (and PNG charts for spread, persistence and groups) when asked.

The package: `common` (the rows and options every verb shares), one module per
family of verbs (`spread`, `search`, `groups`, `explain`, `probabilistic`,
`group_proofs`, `report`), `networks` (the learned Bayesian network) and
`plots` (the PNG charts).
"""
from __future__ import annotations

import argparse

from .common import AuditRows, audit_rows, favourable_index
from .explain import register_explain, run_explain
from .group_proofs import register_dataset, register_prove_groups, run_dataset, run_prove_groups
from .groups import group_metric_rows, register_groups, run_groups
from .probabilistic import register_probabilistic, run_probabilistic
from .report import register_report, run_report
from .search import (describe_margin_difference, point_json, point_text, register_global, register_kdisc, run_global,
                     run_kdisc)
from .spread import register_persistence, register_spread, run_persistence, run_spread

_favourable_index = favourable_index  # the name `fairproof ceremony` imports

# The verbs in the order `fairproof audit --help` lists them.
VERBS = (register_spread, register_persistence, register_global, register_kdisc, register_groups, register_explain,
         register_dataset, register_prove_groups, register_probabilistic, register_report)

__all__ = ["AuditRows", "VERBS", "audit_rows", "describe_margin_difference", "favourable_index", "group_metric_rows",
           "point_json", "point_text", "register", "run_dataset", "run_explain", "run_global", "run_groups",
           "run_kdisc", "run_persistence", "run_probabilistic", "run_prove_groups", "run_report", "run_spread"]


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "audit", help="model-wide fairness reports (plaintext, for the bank or an auditor with the model)",
        description="Model-wide reports over a data set, computed in plaintext from the committed model.")
    verbs = p.add_subparsers(dest="audit", required=True, metavar="REPORT")
    for add in VERBS:
        add(verbs)
