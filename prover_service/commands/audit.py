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
counted separately (fairness.persistence_audit).

global: HyFair's global 2-fairness over the whole domain box, one MILP per
ordered pair of sensitive combinations (fairness.global_search): a
counterexample (re-checked exactly), fair (optimal), or unknown; beside it
HyFair's maximum margin difference, with the solver's bound and gap when it
stops short of optimality.

kdisc: HyFair's k-discrimination over the domain box, one MILP over a copy of
the network per sensitive combination (fairness.k_discrimination).

groups: selection rates per compound sensitive group, disparate impact, the
statistical parity difference, the equal opportunity difference (TPR gap) and
equalized odds (FVGM's EO: the larger of the TPR and FPR gaps)
(fairness.group_metrics).

probabilistic: FVGM's and Justicia's verification: each group's probability of
a favourable decision over a Bayesian network (a file, or learned from the
rows), exactly by enumeration or sampled with a stated confidence
(fairness.probabilistic).

explain: decision-tree rules for where the model discriminates
(fairness.explain, HyFair's Algorithm 2).

dataset, prove-groups: a public audit dataset, and a zero-knowledge proof of the
committed model's decision counts per group on it (statement.group_counts), which
`fairproof-verify --dataset` checks.

Each plaintext report prints a table and writes JSON (and PNG charts for spread, persistence and groups) when asked.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .key_options import add_key_setup_arguments


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
    _data_arguments(s)
    s.add_argument("--limit", type=int, metavar="N", help="only the first N individuals")
    s.add_argument("--top", type=int, default=10, metavar="N", help="individuals with the largest k to list")
    s.add_argument("--bucket-width", type=float, metavar="W",
                   help="bucket width in logits (default: the card's lens, else 0.2)")
    _favourable_argument(s)
    s.add_argument("--json", metavar="FILE", help="write the report as JSON")
    s.add_argument("--plot", metavar="FILE.png", help="write the distribution of k as a PNG chart")
    s.set_defaults(handler=run_spread)
    p2 = verbs.add_parser(
        "persistence", help="persistent bias per sensitive group (PBA's scores), observed and flipped",
        description="For every individual and every change of one sensitive attribute, sound LP bounds on the "
                    "difference of favourable logit margins between the individual and the counterfactual, "
                    "with the SAME numeric features moved by up to delta (standardised units) in both; "
                    "favoured if the lower bound is > 0, disfavoured if the upper bound is < 0.")
    _data_arguments(p2)
    p2.add_argument("--delta", default="1,2,3", help="comma-separated deltas in standardised units (default 1,2,3)")
    p2.add_argument("--limit", type=int, default=200, metavar="N", help="the first N individuals (default 200)")
    p2.add_argument("--exact", action="store_true",
                    help="also solve every pair's min and max exactly (two-copy MILP, relative gap 1e-9): which of "
                         "the LP's inconclusive pairs are persistent and which are truly mixed (small models)")
    p2.add_argument("--time-limit", type=float, default=60.0, metavar="S",
                    help="with --exact: seconds per MILP; a solve stopped short reports its gap (default 60)")
    _favourable_argument(p2)
    p2.add_argument("--json", metavar="FILE", help="write the table as JSON")
    p2.add_argument("--plot", metavar="FILE.png", help="write the favoured shares as a PNG chart")
    p2.set_defaults(handler=run_persistence)
    g = verbs.add_parser(
        "global", help="does ANY individual of the domain get another decision for its sensitive values alone?",
        description="One MILP per ordered pair of sensitive combinations over two exact copies of the committed "
                    "network sharing every other input, anywhere in the domain box: maximise t with t <= the "
                    "favourable margin in the first copy and t <= minus it in the second. A counterexample is "
                    "re-checked by the exact forward pass; 'fair (optimal)' means the solver proved none exists "
                    "(to a relative gap of 1e-9); 'unknown' means it ran out of time. Beside it, HyFair's maximum "
                    "margin difference: one more MILP per ordered pair maximising the favourable margin of the "
                    "first copy minus that of the second, the value re-checked exactly at the solver's point, "
                    "with the solver's bound and gap whenever a pair stops short of optimality.")
    g.add_argument("--model", required=True, metavar="DIR", help="committed model directory")
    g.add_argument("--time-limit", type=float, default=100.0, metavar="S", help="seconds per pair (default 100)")
    _favourable_argument(g)
    g.add_argument("--continuous", action="store_true",
                   help="let categorical features take any value of the box (default: only their categories' "
                        "encodings, so a counterexample is a real record there)")
    g.add_argument("--observed-range", action="store_true",
                   help="keep numeric features within the range the rows show (--data, or a shipped dataset's test "
                        "split; default: the whole domain box, which the card may pad beyond any real record)")
    _data_arguments(g, model=False)
    g.add_argument("--no-margin-difference", action="store_true",
                   help="answer the decision question only (skip the maximum margin difference's MILPs)")
    g.add_argument("--json", metavar="FILE", help="write the results as JSON")
    g.add_argument("--prove", metavar="DIR",
                   help="prove each counterexample on the input grid against the committed weights: a certificate "
                        "bundle (a counterfactual flip, every combination's decision public) per counterexample, "
                        "written to DIR, that anyone verifies with fairproof-verify or snarkjs and the card")
    g.add_argument("--store", metavar="URL", help="precompute store for --prove (default: the model's SQLite)")
    add_key_setup_arguments(g)
    g.set_defaults(handler=run_global)
    kd = verbs.add_parser(
        "kdisc", help="the most margin buckets one individual's sensitive combinations reach (HyFair's k)",
        description="One MILP over an exact copy of the network per sensitive combination, all sharing the other "
                    "inputs anywhere in the domain box: the largest number of distinct buckets of the favourable "
                    "margin (the spread lens's buckets) one individual reaches, re-checked by the exact forward "
                    "pass; 'optimal' when the solver proved no individual reaches more (margins at least 1e-5 "
                    "logits inside their buckets). A uniform sample of the box gives a lower bound beside it.")
    kd.add_argument("--model", required=True, metavar="DIR", help="committed model directory")
    kd.add_argument("--bucket-width", type=float, metavar="W",
                    help="bucket width in logits (default: the card's lens, else 0.2)")
    _favourable_argument(kd)
    kd.add_argument("--time-limit", type=float, default=300.0, metavar="S", help="solver seconds (default 300)")
    kd.add_argument("--samples", type=int, default=20000, metavar="N", help="uniform samples (default 20000)")
    kd.add_argument("--continuous", action="store_true",
                    help="let categorical features take any value of the box (default: their categories only)")
    _data_arguments(kd, model=False)
    kd.add_argument("--json", metavar="FILE", help="write the result as JSON")
    kd.set_defaults(handler=run_kdisc)
    gr = verbs.add_parser(
        "groups", help="selection rates per compound sensitive group; disparate impact, parity, equalized odds",
        description="Every row of the data set decided by the committed model (quantised as a customer's query; "
                    "rows outside the domain box counted apart): per compound sensitive group the selection rate, "
                    "the true positive rate and the false positive rate with Wilson 95% intervals; disparate "
                    "impact (min/max selection rate), the statistical parity difference, the equal opportunity "
                    "difference (the TPR gap, Hardt et al.) and equalized odds (the larger of the TPR and FPR "
                    "gaps, FVGM's and Justicia's EO) with bootstrap intervals; the most and least favoured groups. "
                    "The rows need their true outcome: --data with the schema's label column.")
    _data_arguments(gr)
    _favourable_argument(gr)
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
    gr.add_argument("--json", metavar="FILE", help="write the report as JSON")
    gr.add_argument("--plot", metavar="FILE.png", help="write the selection rates as a PNG chart")
    gr.set_defaults(handler=run_groups)
    ex = verbs.add_parser(
        "explain", help="rules for where the model discriminates (HyFair's decision-tree explanations)",
        description="Samples of the domain, around the global search's counterexamples and the data set's "
                    "discriminated individuals and uniformly over the box, labelled by k (distinct decisions "
                    "over the sensitive combinations, exact model); a shallow decision tree separates k >= 2; "
                    "its rules are printed in raw units with coverage, precision and HyFair's mean-k difference "
                    "on a fresh sample.")
    _data_arguments(ex)
    ex.add_argument("--samples", type=int, default=5000, metavar="N", help="sample size (default 5000)")
    ex.add_argument("--depth", type=int, default=3, metavar="D", help="tree depth (default 3)")
    ex.add_argument("--time-limit", type=float, default=100.0, metavar="S",
                    help="the global search's seconds per pair, for seeds (default 100)")
    _favourable_argument(ex)
    ex.add_argument("--json", metavar="FILE", help="write the rules as JSON")
    ex.set_defaults(handler=run_explain)
    ds = verbs.add_parser(
        "dataset", help="write a public audit dataset (model inputs and favourable labels) from the model's data",
        description="The model's dataset, training and test splits in order, as the card's model inputs at the "
                    "card's scale (the card's public preprocessing), with a label per row: 1 when its true "
                    "outcome is the favourable class. Rows outside the domain box are left out (counted). "
                    "A regulator publishes such a file; `audit prove-groups` proves the model's counts on it.")
    _data_arguments(ds)
    ds.add_argument("--rows", type=int, metavar="N", help="only the first N rows inside the box (default: all)")
    _favourable_argument(ds)
    ds.add_argument("--out", required=True, metavar="FILE.json", help="where to write the dataset")
    ds.set_defaults(handler=run_dataset)
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
    _favourable_argument(pg)
    pg.add_argument("--out", required=True, metavar="BUNDLE.json", help="where to write the bundle")
    add_key_setup_arguments(pg)
    pg.set_defaults(handler=run_prove_groups)
    pv = verbs.add_parser(
        "probabilistic", help="selection rates per group over a distribution, exactly (FVGM's and Justicia's "
                              "verification)",
        description="The committed model's probability of a favourable decision per compound sensitive group over "
                    "a distribution of records: a Bayesian network given as a file (--network, format in "
                    "docs/AUDITS.md) or learned from rows as Justicia does (--data or a shipped test split: the "
                    "group's joint frequencies, every other attribute's frequencies given the group, numeric "
                    "attributes in --bins quantile bins, each bin's state the mean of its values). Every record "
                    "of the distribution is encoded by the model's schema and decided by the exact committed model; "
                    "the probabilities are exact by enumeration, or, beyond --max-enumeration records, sampled per "
                    "group with intervals that hold for every group at once at --confidence. Prints each group's "
                    "probability, disparate impact (min/max) and statistical parity (max - min).")
    pv.add_argument("--model", required=True, metavar="DIR", help="committed model directory")
    pv.add_argument("--network", metavar="FILE.json", help="the distribution: a Bayesian network file")
    _data_arguments(pv, model=False)
    pv.add_argument("--bins", type=int, default=4, metavar="K",
                    help="learning from rows: quantile bins per numeric attribute (default 4)")
    pv.add_argument("--write-network", metavar="FILE.json", help="write the learned network in the file format")
    pv.add_argument("--max-enumeration", type=int, default=200_000, metavar="N",
                    help="enumerate exactly up to N records of the distribution, else sample (default 200000)")
    pv.add_argument("--samples", type=int, default=20_000, metavar="N",
                    help="draws per group when sampling (default 20000)")
    pv.add_argument("--confidence", type=float, default=0.95, metavar="C",
                    help="when sampling: every group's interval holds at once with probability C (default 0.95)")
    pv.add_argument("--seed", type=int, default=0, help="sampling seed (default 0)")
    _favourable_argument(pv)
    pv.add_argument("--json", metavar="FILE", help="write the result as JSON")
    pv.set_defaults(handler=run_probabilistic)
    rp = verbs.add_parser(
        "report", help="one HTML page: radii, group rates, spread, global search and explanations",
        description="Writes one self-contained HTML page (tables and embedded PNG charts, no script, nothing "
                    "fetched) for a regulator or a model-risk team: the certified radius of the first customers "
                    "of the rows (plaintext) as a histogram, selection rates per group with disparate impact, "
                    "statistical parity, equal opportunity and equalized odds, the counterfactual spread's k "
                    "distribution, the global discrimination search with the maximum margin difference, and the "
                    "explanation rules. The rows need their true outcome: --data with the schema's label column.")
    _data_arguments(rp)
    rp.add_argument("--out", required=True, metavar="FILE.html", help="where to write the page")
    rp.add_argument("--customers", type=int, default=50, metavar="N",
                    help="test customers certified for the radius histogram (default 50)")
    rp.add_argument("--samples", type=int, default=5000, metavar="N", help="explanation samples (default 5000)")
    rp.add_argument("--time-limit", type=float, default=100.0, metavar="S", help="global search, seconds per pair")
    rp.add_argument("--draws", type=int, default=20000, metavar="N",
                    help="draws per group from the learned distribution (default 20000; a quarter for the "
                         "influence of each feature)")
    _favourable_argument(rp)
    rp.set_defaults(handler=run_report)


DATA_HELP = ("the rows to audit: a CSV of raw records, one column per attribute of the model's schema (the "
             "label column too where the report needs each row's true outcome); required for an imported model")


def _data_arguments(p: argparse.ArgumentParser, *, model: bool = True) -> None:
    if model:
        p.add_argument("--model", required=True, metavar="DIR", help="committed model directory")
    p.add_argument("--data", metavar="FILE.csv", help=DATA_HELP)
    p.add_argument("--data-dir", metavar="DIR",
                   help="a shipped dataset's directory, for its test split (the default rows of a model trained on "
                        "a shipped dataset; default: see README)")


@dataclass(frozen=True)
class AuditRows:
    """The rows an audit runs on, as model inputs (floats, before quantisation): the bank's CSV read
    through the model's schema (`--data`), or a shipped dataset's split (`--data-dir`). `y`: each row's
    class index in the model's output order (None when the CSV has no label column); `names`: how a
    report points at a row (its CSV line, or its index in the split); `source`: how it names the rows."""

    source: str
    X: Any
    y: Any
    names: tuple[str, ...]
    records: tuple[Any, ...] | None = None  # the raw records (attribute -> raw value), when the source has them

    def inside(self, model, limit: int | None = None) -> tuple[list[tuple[int, ...]], list[int], int]:
        """(the queries of the first `limit` rows that lie inside the domain box, quantised as customers'
        queries are; their row indices; how many of those rows lie outside the box, no certificate being
        issued for them either)."""
        from fairness.group_metrics import decisions

        X = self.X[:limit] if limit else self.X
        queries, kept = decisions(model, X)
        return queries, kept, len(X) - len(kept)


def audit_rows(args: argparse.Namespace, workspace, *, labels: bool = False, splits: str = "test") -> AuditRows:
    """The rows every audit verb runs on (one resolution for all of them). `--data FILE.csv`: the rows of
    the bank's CSV read through the model's schema (an imported model's own, or a shipped dataset's
    preprocessing as a schema), any defect refused with its line and column; the label column is required
    when `labels`. Otherwise a shipped dataset's test split (`splits="all"`: training then test split);
    an imported model has no such split and is refused with a sentence saying to pass --data."""
    from fairness.errors import DataError
    from fairness.schema import FeatureSchema, csv_header, read_csv

    artifact = workspace.artifact
    data = getattr(args, "data", None)
    if data is not None:
        schema = _model_schema(args, artifact)
        if labels and Path(data).is_file() and schema.label.column not in csv_header(data):
            raise DataError(f"{data}: no column {schema.label.column!r}: this report needs each row's true "
                            f"outcome, the label column of the model's schema (values "
                            f"{', '.join(schema.label.values)})")
        table = read_csv(schema, data, require_label=labels)
        return AuditRows(str(data), table.X, table.y, tuple(f"line {n}" for n in table.lines), table.records)
    if isinstance(artifact.preprocessor, FeatureSchema):
        schema = artifact.preprocessor
        label = f" and {schema.label.column!r}" if labels else ""
        raise DataError(f"model {artifact.dataset!r} was imported under the bank's own schema and has no shipped "
                        f"dataset to audit: pass its rows with --data FILE.csv (columns "
                        f"{', '.join(schema.attributes)}{label})")
    dataset = _shipped_dataset(args, artifact)
    if splits == "all":
        import numpy as np

        X, y = np.concatenate([dataset.X_train, dataset.X_test]), np.concatenate([dataset.y_train, dataset.y_test])
        return AuditRows(f"{artifact.dataset} (training and test splits, in order)", X, y,
                         tuple(f"row #{i}" for i in range(len(X))))
    return AuditRows("the test split", dataset.X_test, dataset.y_test,
                     tuple(f"test #{i}" for i in range(len(dataset.X_test))), tuple(dataset.records_test))


def _shipped_dataset(args: argparse.Namespace, artifact):
    """The shipped dataset a model was trained on, split as it was for training."""
    from fairness.datasets import load_dataset

    names = [f.name for f in artifact.sensitive]
    split_seed = int(artifact.training.get("split_seed", 0)) if artifact.training else 0
    return load_dataset(artifact.dataset, getattr(args, "data_dir", None), sensitive=names, seed=split_seed)


def _model_schema(args: argparse.Namespace, artifact):
    """The schema a CSV of raw records is read through: an imported model's own, or a shipped dataset's
    preprocessing written as a schema (the same doubles per record; label column "label", class codes)."""
    from fairness.datasets import dataset_schema
    from fairness.schema import FeatureSchema

    if isinstance(artifact.preprocessor, FeatureSchema):
        return artifact.preprocessor
    return dataset_schema(_shipped_dataset(args, artifact))


def _favourable_argument(p: argparse.ArgumentParser) -> None:
    p.add_argument("--favourable-class", metavar="LABEL", help="default: the card's lens, else the dataset's")


def _progress(what: str):
    start = time.perf_counter()
    interactive = sys.stderr.isatty()

    def report(done: int, total: int) -> None:
        if interactive and (done == total or done % 20 == 0):
            print(f"\r  {what}: {done}/{total} individuals ({time.perf_counter() - start:.1f} s)",
                  end="\n" if done == total else "", file=sys.stderr, flush=True)

    return report


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
    if getattr(args, "bucket_width", None) is not None:
        try:
            width = bucket_width_at(model, args.bucket_width)
        except ValueError as exc:
            raise ModelError(str(exc)) from None
    else:
        width = card.spread.bucket_width if card.spread else bucket_width_at(model, DEFAULT_BUCKET_WIDTH)
    return SpreadLens(favourable, width)


def run_spread(args: argparse.Namespace) -> int:
    from fairness.errors import ModelError
    from fairness.spread_audit import audit_spread
    from prover_service.workspace import ModelWorkspace

    if args.limit is not None and args.limit < 1 or args.top < 0:
        raise ModelError("--limit must be at least 1 and --top non-negative")
    workspace = ModelWorkspace.open(args.model)
    model = workspace.fixed_point()
    lens = _lens(args, workspace, model)
    rows = audit_rows(args, workspace)
    queries, kept, outside = rows.inside(model, args.limit)
    report = audit_spread(model, queries, lens, _progress("spread"))
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
    if args.json:
        Path(args.json).write_text(json.dumps({
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
    from fairness.persistence_audit import audit_persistence
    from prover_service.workspace import ModelWorkspace

    deltas = _deltas(args.delta)
    if args.limit < 1 or not args.time_limit > 0:
        raise ModelError("--limit must be at least 1 and --time-limit positive")
    workspace = ModelWorkspace.open(args.model)
    artifact, model = workspace.artifact, workspace.fixed_point()
    card = workspace.card()
    if card.architecture.n_classes != 2:
        raise ModelError("persistence is defined for two-class models")
    favourable = _lens(args, workspace, model).favourable_class
    pre = artifact.preprocessor
    numeric = list(artifact.numeric_columns)
    rows = audit_rows(args, workspace)
    queries, _, outside = rows.inside(model, args.limit)
    try:
        scores = audit_persistence(model, queries, favourable, numeric, deltas, _progress("persistence"),
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
    if args.json:
        Path(args.json).write_text(json.dumps({
            "model_id": card.model_id, "data": rows.source, "individuals": len(queries), "outside_box": outside,
            "favourable_class": labels[favourable], "numeric_columns": [pre.feature_names[j] for j in numeric],
            "rows": [{"attribute": g.attribute, "group": g.group, "setting": g.setting, "delta": str(g.delta),
                      "pairs": g.pairs, "favoured": g.favoured, "disfavoured": g.disfavoured,
                      "inconclusive": g.inconclusive, **_exact_json(g)} for g in scores]}, indent=2))
    if args.plot:
        _plot_persistence(scores, card.model_id, Path(args.plot))
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


def _plot_persistence(scores, model_id: str, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    groups = list(dict.fromkeys((g.attribute, g.group, g.setting) for g in scores))
    deltas = list(dict.fromkeys(g.delta for g in scores))
    fig, ax = plt.subplots(figsize=(max(5, 1.2 * len(groups)), 3.4))
    width = 0.8 / max(len(deltas), 1)
    for i, d in enumerate(deltas):
        shares = [next((g.share(g.favoured) for g in scores if (g.attribute, g.group, g.setting) == key
                        and g.delta == d), 0.0) for key in groups]
        ax.bar([x + i * width for x in range(len(groups))], shares, width, label=f"delta {float(d):g}")
    ax.set_xticks([x + 0.4 - width / 2 for x in range(len(groups))])
    ax.set_xticklabels([f"{g[1][:12]}\n{g[2]}" for g in groups], fontsize=7)
    ax.set_ylabel("persistently favoured")
    ax.set_ylim(0, 1)
    ax.set_title(f"{model_id}: persistent bias by group", fontsize=9)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def run_global(args: argparse.Namespace) -> int:
    from fairness.errors import ModelError
    from fairness.global_search import (COUNTEREXAMPLE, FAIR, GlobalSearchError, categorical_choices,
                                        global_search, maximum_margin_difference, observed_ranges, one_hot_blocks)
    from prover_service.workspace import ModelWorkspace

    if not args.time_limit > 0:
        raise ModelError("--time-limit must be a positive number of seconds")
    if (args.data or args.data_dir) and not args.observed_range:
        raise ModelError("the global search reads rows only for --observed-range (the range they show); add it, "
                         "or leave out --data and --data-dir to search the whole domain box")
    workspace = ModelWorkspace.open(args.model)
    model = workspace.fixed_point()
    card = workspace.card()
    favourable = _lens(args, workspace, model).favourable_class
    labels = card.architecture.class_labels
    names = [", ".join(card.slice_labels(s)[1]) for s in range(len(card.slices()))]
    choices = {} if args.continuous else categorical_choices(workspace.artifact.preprocessor, model)
    blocks = () if args.continuous else one_hot_blocks(workspace.artifact.preprocessor, model)
    ranges = {}
    if args.observed_range:
        ranges = observed_ranges(model, audit_rows(args, workspace).X, workspace.artifact.numeric_columns)
    print(f"global discrimination search of {card.model_id}: favourable class {labels[favourable]!r}, "
          f"{len(names) * (len(names) - 1)} ordered pairs of sensitive combinations, {args.time_limit:g} s each; "
          f"{len(choices) + len(blocks)} categorical feature(s) restricted to their categories"
          + (f", {len(ranges)} numeric feature(s) to the data's range" if ranges else ""))

    def show(r) -> None:
        value = "-" if r.objective is None else f"{r.objective:+.4g}"
        print(f"  {names[r.source][:28]:<28} -> {names[r.target][:28]:<28} {r.status:<16} t* {value:>10} "
              f"{r.seconds:7.2f} s" + (f"  ({r.message})" if r.message else ""), flush=True)

    try:
        results = global_search(model, favourable, args.time_limit, progress=show, choices=choices, ranges=ranges,
                                blocks=blocks)
    except GlobalSearchError as exc:
        raise ModelError(str(exc)) from None
    difference = None
    if not args.no_margin_difference:
        try:
            difference = maximum_margin_difference(model, favourable, args.time_limit, choices=choices, ranges=ranges,
                                                   blocks=blocks)
        except GlobalSearchError as exc:
            raise ModelError(str(exc)) from None
    found = [r for r in results if r.status == COUNTEREXAMPLE]
    verdict = ("DISCRIMINATES: an individual's decision changes with its sensitive values alone" if found else
               "2-fair on the domain box (every pair optimal)" if all(r.status == FAIR for r in results) else
               "unknown: no counterexample found, not every pair solved to optimality")
    print(f"  verdict: {verdict}")
    if difference is not None:
        print("  " + describe_margin_difference(difference, names, card.feature_names,
                                                sensitive=model.sensitive_columns,
                                                preprocessor=workspace.artifact.preprocessor,
                                                scale_bits=model.scale_bits))
    pre = workspace.artifact.preprocessor
    for r in found[:3]:
        point = point_text(pre, model, card.feature_names, r.counterexample.point)
        print(f"  counterexample {names[r.source]} -> {names[r.target]}: margins "
              f"{float(r.counterexample.margins[0]):+.4g} / {float(r.counterexample.margins[1]):+.4g} logits at "
              f"{point}; "
              + ("on the input grid too (a quantised record)" if r.counterexample.grid_point is not None
                 else "not on the input grid (rounding it changes a decision)"))
    if args.json:
        Path(args.json).write_text(json.dumps({
            "model_id": card.model_id, "favourable_class": labels[favourable], "time_limit_s": args.time_limit,
            "categorical_columns_restricted": [card.feature_names[j] for j in choices]
            + [card.feature_names[j] for columns, _ in blocks for j in columns],
            "numeric_columns_restricted": {card.feature_names[j]: [lo, hi] for j, (lo, hi) in ranges.items()},
            "verdict": verdict, "pairs": [{
                "source": names[r.source], "target": names[r.target], "status": r.status, "objective": r.objective,
                "bound": r.bound, "seconds": r.seconds, "message": r.message,
                "counterexample": None if r.counterexample is None else {
                    **point_json(pre, model, r.counterexample.point),
                    "margins": [str(m) for m in r.counterexample.margins],
                    "decisions": [labels[d] for d in r.counterexample.decisions],
                    "grid_point": (None if r.counterexample.grid_point is None
                                   else list(r.counterexample.grid_point))}} for r in results],
            "max_margin_difference": None if difference is None else _difference_json(difference, names, pre, model)},
            indent=2))
    if args.prove:
        _prove_counterexamples(args, workspace, [r for r in found if r.counterexample.grid_point is not None], names)
    return 0


def describe_margin_difference(difference, names: list[str], feature_names, sensitive=(), preprocessor=None,
                               scale_bits: int = 0) -> str:
    """HyFair's maximum margin difference in one sentence: the value some input shows, where (in raw units
    when the preprocessing says how), and whether the solver proved it the maximum (else its bound and gap)."""
    best = difference.best
    if best is None:
        return "maximum margin difference: unknown (the solver found no point in time)"
    point = _point_words(preprocessor, scale_bits, sensitive, feature_names, best.point)
    text = (f"maximum margin difference (HyFair; the favourable margin with {names[best.source]} minus with "
            f"{names[best.target]}): {float(best.value):.6g} logits at {point}")
    if difference.optimal:
        return text + "; the maximum (every pair solved to a relative gap of 1e-9)"
    short = sum(not p.optimal for p in difference.pairs)
    bound = "unknown" if difference.bound is None else f"{difference.bound:.6g}"
    gap = "" if difference.gap is None else f", gap {difference.gap:.3g}"
    return text + (f"; NOT proved the maximum: {short} pair(s) stopped short (time limit), the solver's bound is "
                   f"{bound} logits{gap}")


def point_text(preprocessor, model, feature_names, point) -> str:
    """An input the audits found, its sensitive attributes left out, in raw units when the preprocessing
    says how (`describe_inputs`), else standardised; the units named."""
    return _point_words(preprocessor, model.scale_bits, model.sensitive_columns, feature_names, point)


def _point_words(preprocessor, scale_bits: int, sensitive, feature_names, point) -> str:
    from fairness.global_search import describe_inputs

    raw = None if preprocessor is None else describe_inputs(preprocessor, point, scale_bits, tuple(sensitive))
    if raw is not None:
        return "(" + ", ".join(f"{name}={value}" for name, value in raw) + ") [raw units]"
    shown = ", ".join(f"{feature_names[j]}={float(v):.4g}" for j, v in enumerate(point) if j not in set(sensitive))
    return f"({shown}) [standardised units]"


def point_json(preprocessor, model, point) -> dict:
    """An input the audits found, for a JSON report: every model input's standardised value (exact
    rationals as text) and, when the preprocessing says how, each non-sensitive attribute in raw units."""
    from fairness.global_search import describe_inputs

    if point is None:
        return {"point_standardised": None, "point_raw": None}
    raw = describe_inputs(preprocessor, point, model.scale_bits, tuple(model.sensitive_columns))
    return {"point_standardised": [str(v) for v in point], "point_raw": None if raw is None else dict(raw)}


def _difference_json(difference, names: list[str], preprocessor, model) -> dict:
    best = difference.best
    return {"value": None if best is None else float(best.value),
            "exact_value": None if best is None else str(best.value),
            "optimal": difference.optimal, "bound": difference.bound, "gap": difference.gap,
            "source": None if best is None else names[best.source],
            "target": None if best is None else names[best.target],
            **point_json(preprocessor, model, None if best is None else best.point),
            "pairs": [{"source": names[p.source], "target": names[p.target],
                       "value": None if p.value is None else float(p.value), "optimal": p.optimal,
                       "bound": p.bound, "gap": p.gap, "seconds": p.seconds, "message": p.message}
                      for p in difference.pairs]}


def run_kdisc(args: argparse.Namespace) -> int:
    from fractions import Fraction

    from fairness.errors import ModelError
    from fairness.global_search import GlobalSearchError, categorical_choices, one_hot_blocks
    from fairness.k_discrimination import max_buckets, sampled_max_buckets
    from prover_service.workspace import ModelWorkspace

    if not args.time_limit > 0 or args.samples < 1:
        raise ModelError("--time-limit must be positive and --samples at least 1")
    workspace = ModelWorkspace.open(args.model)
    model = workspace.fixed_point()
    card = workspace.card()
    lens = _lens(args, workspace, model)
    width = float(Fraction(lens.bucket_width, 1 << model.net.logit_scale_bits))
    pre = workspace.artifact.preprocessor
    choices = {} if args.continuous else categorical_choices(pre, model)
    blocks = () if args.continuous else one_hot_blocks(pre, model)
    names = [", ".join(card.slice_labels(s)[1]) for s in range(len(card.slices()))]
    print(f"k-discrimination of {card.model_id}: {len(names)} sensitive combinations, buckets of {width:.4g} logits "
          f"of the margin of {card.architecture.class_labels[lens.favourable_class]!r}")
    try:
        result = max_buckets(model, lens.favourable_class, width, args.time_limit, choices, blocks)
        sampled, per_sample = sampled_max_buckets(model, lens.favourable_class, width, args.samples, choices=choices,
                                                  blocks=blocks)
    except GlobalSearchError as exc:
        raise ModelError(str(exc)) from None
    bound = "-" if result.upper_bound is None else str(result.upper_bound)
    print(f"  MILP: k = {result.k} ({result.status}; no individual reaches more than {bound}) in "
          f"{result.seconds:.1f} s" + (f" ({result.message})" if result.message else ""))
    if result.point is not None:
        print(f"  at {point_text(pre, model, card.feature_names, result.point)}: buckets " +
              ", ".join(f"{n}: {b}" for n, b in zip(names, result.buckets)))
    hist = {k: int((per_sample == k).sum()) for k in sorted(set(per_sample.tolist()))}
    print(f"  sampling ({args.samples} points of the box): largest k {sampled}; k distribution {hist}")
    observed = _observed_k(args, workspace, model, lens) if args.data or args.data_dir else None
    if observed is not None:
        source, n, largest = observed
        print(f"  the rows of {source} ({n} inside the box): largest k {largest}")
    if args.json:
        Path(args.json).write_text(json.dumps({
            "model_id": card.model_id, "bucket_width_logits": width, "combinations": names,
            "milp": {"status": result.status, "k": result.k, "upper_bound": result.upper_bound,
                     "seconds": result.seconds, "message": result.message,
                     **point_json(pre, model, result.point),
                     "buckets": list(result.buckets)},
            "sampling": {"samples": args.samples, "largest_k": sampled, "distribution": hist},
            "rows": None if observed is None else {"data": observed[0], "individuals": observed[1],
                                                   "largest_k": observed[2]}}, indent=2))
    return 0


def _observed_k(args, workspace, model, lens) -> tuple[str, int, int]:
    """(the rows' source, how many lie inside the box, the largest k any of them reaches): what real
    individuals show beside the MILP's and the sampling's answers."""
    from fairness.spread_audit import audit_spread

    rows = audit_rows(args, workspace)
    queries, _, _ = rows.inside(model)
    report = audit_spread(model, queries, lens)
    largest = max((r.spread.distinct_buckets for r in report.rows), default=0)
    return rows.source, len(queries), largest


def _prove_counterexamples(args, workspace, found, names) -> None:
    """Each counterexample as a certificate bundle: the committed model decides the grid point one way and
    the target combination another, so its certificate is a counterfactual flip, proved in zero knowledge."""
    from circuits.backends import get_backend
    from fairness.errors import ModelError
    from offline_precompute.db import open_database, resolve_store_url
    from prover_service.proving import Prover
    from prover_service.workspace import write_atomically

    from .key_options import key_setup_from_args

    out = Path(args.prove)
    out.mkdir(parents=True, exist_ok=True)
    db = open_database(resolve_store_url(args.store, workspace.root))
    try:
        prover = Prover(workspace, db, get_backend(), key_setup=key_setup_from_args(args),
                        progress=lambda m: print(m, file=sys.stderr, flush=True))
        for i, r in enumerate(found):
            bundle = prover.prove(r.counterexample.grid_point).bundle
            if bundle.status != "counterfactual_flip":
                raise ModelError(f"internal: the counterexample {names[r.source]} -> {names[r.target]} was certified "
                                 f"{bundle.status}, not as a counterfactual flip")
            path = out / f"discrimination-{i}.json"
            write_atomically(path, bundle.model_dump_json(indent=1) + "\n")
            print(f"  proof of discrimination {names[r.source]} -> {names[r.target]}: {path} (decision "
                  f"{bundle.decision_label!r}, flip with {', '.join(bundle.flip_slice.labels)})")
    finally:
        db.dispose()


def _favourable_index(args, workspace) -> int | None:
    """The class --favourable-class names (a label or an index), or None for the card's lens."""
    if args.favourable_class is None:
        return None
    labels = workspace.card().architecture.class_labels
    if args.favourable_class in labels:
        return labels.index(args.favourable_class)
    if args.favourable_class.isdigit() and int(args.favourable_class) < len(labels):
        return int(args.favourable_class)
    from fairness.errors import ModelError

    raise ModelError(f"--favourable-class {args.favourable_class!r} is not a class of the model "
                     f"({', '.join(labels)})")


def run_dataset(args: argparse.Namespace) -> int:
    from prover_service.audit_proving import audit_dataset
    from prover_service.workspace import ModelWorkspace, write_atomically

    workspace = ModelWorkspace.open(args.model)
    rows = audit_rows(args, workspace, labels=True, splits="all")
    dataset, outside = audit_dataset(workspace, args.rows, _favourable_index(args, workspace), data=rows)
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

    from .key_options import ptau_from_args

    workspace = ModelWorkspace.open(args.model)
    try:
        dataset = AuditDataset.from_json(Path(args.dataset).read_bytes())
    except OSError as exc:
        raise ModelError(f"cannot read the audit dataset {args.dataset}: {exc.strerror or exc}") from None
    except NonCanonical as exc:
        raise ModelError(f"the audit dataset {args.dataset} is malformed: {exc}") from None
    ptau = ptau_from_args(args)
    prover = GroupCountsProver(workspace, progress=_say, ptau=Path(ptau) if ptau else None,
                               single_party=args.single_party_setup)
    bundle = prover.prove(dataset, _favourable_index(args, workspace))
    write_atomically(Path(args.out), bundle.model_dump_json(indent=1))
    card = workspace.card()
    from statement.group_counts import GroupCount

    counts = [GroupCount(g.rows, g.positives, g.selected, g.true_positives) for g in bundle.groups]
    for line in describe(group_metrics(card, counts), card, bundle.circuit):
        print(f"  {line}")
    print(f"wrote {args.out} (audit circuit {bundle.circuit}; the card at {workspace.card_path} now publishes it)")
    print(f"verify with: fairproof-verify {args.out} --card {workspace.card_path} --dataset {args.dataset}")
    return 0


def _say(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def run_groups(args: argparse.Namespace) -> int:
    from fairness.errors import ModelError
    from fairness.group_metrics import group_report
    from prover_service.workspace import ModelWorkspace

    if args.bootstrap < 0 or args.distribution < 0:
        raise ModelError("--bootstrap and --distribution must be non-negative numbers of draws")
    workspace = ModelWorkspace.open(args.model)
    model = workspace.fixed_point()
    card = workspace.card()
    favourable = _lens(args, workspace, model).favourable_class
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
    network = _network(workspace, model, X, args.structure) if args.distribution else None
    learned = _learned_rates(network, model, favourable, args.distribution) if network is not None else None
    if learned is not None:
        rates, di, sp = learned
        print(f"  over the learned distribution ({args.distribution} draws per group; "
              f"{_describe_network(network, card)}):")
        for r in rates:
            print(f"  {', '.join(r.labels)[:32]:<32} {r.rate:.3f} [{r.interval[0]:.3f}, {r.interval[1]:.3f}]")
        print(f"  disparate impact {'-' if di is None else f'{di:.3f}'}, statistical parity difference {sp:.3f}")
    influence = _influence(network, model, favourable, args.distribution) if args.influence and learned else None
    if influence:
        print("  fairness influence (statistical parity difference minus its value with the feature uniform):")
        for i in influence[:10]:
            print(f"  {card.feature_names[i.column][:32]:<32} {i.parity_change:+.4f}")
    if args.json:
        Path(args.json).write_text(json.dumps({
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
                "structure": args.structure, "network": _describe_network(network, card),
                "draws_per_group": args.distribution, "disparate_impact": learned[1],
                "statistical_parity": learned[2],
                "groups": [{"labels": list(r.labels), "selected": r.selected, "rate": r.rate,
                            "interval": list(r.interval)} for r in learned[0]]},
            "influence": None if influence is None else [
                {"feature": card.feature_names[i.column], "parity_change": i.parity_change,
                 "rate_change": list(i.rate_change)} for i in influence]}, indent=2))
    if args.plot:
        _plot_groups(report, card.model_id, Path(args.plot))
    return 0


def group_metric_rows(report) -> list[tuple[str, str, float | None]]:
    """(name as its paper gives it, JSON key, value) of each group metric, in the order reports list them."""
    return [("disparate impact (min/max)", "disparate_impact", report.disparate_impact),
            ("statistical parity difference", "statistical_parity", report.statistical_parity),
            ("equal opportunity difference (TPR gap)", "equal_opportunity", report.equal_opportunity),
            ("false positive rate gap", "false_positive_gap", report.false_positive_gap),
            ("equalized odds (larger of TPR and FPR gaps)", "equalized_odds", report.equalized_odds)]


def _network(workspace, model, X, structure: str):
    """The Bayesian network learned from X (fairness.distribution): the star or a learned structure."""
    from fairness.distribution import learn_network, learn_structured_network
    from fairness.errors import ModelError
    from fairness.global_search import categorical_choices

    categorical = list(categorical_choices(workspace.artifact.preprocessor, model))
    try:
        if structure == "learned":
            return learn_structured_network(model, X, categorical)
        return learn_network(model, X, categorical)
    except ValueError as exc:
        raise ModelError(f"the learned distribution: {exc}") from None


def _learned_rates(network, model, favourable: int, draws: int):
    """Selection rates per group over the learned network."""
    from fairness.distribution import distribution_rates

    return distribution_rates(model, network, favourable, draws)


def _influence(network, model, favourable: int, draws: int):
    """FVGM's fairness influence of every feature on the learned network, largest first."""
    from fairness.distribution import fairness_influence

    influence = fairness_influence(model, network, favourable, draws)
    return sorted(influence, key=lambda i: -abs(i.parity_change))


def _describe_network(network, card) -> str:
    """The learned structure in one line: each feature's parents (the group is always a root)."""
    from fairness.distribution import GROUP

    if not hasattr(network, "edges"):
        return "star: every feature with the group as its only parent"
    names = {GROUP: "group", **{j: card.feature_names[j] for j in range(len(card.feature_names))}}
    edges = [f"{names[a]} -> {names[b]}" for a, b in network.edges()]
    return f"learned (BIC hill climbing, {len(edges)} edges): " + (", ".join(edges) if edges else "none")


def _plot_groups(report, model_id: str, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    present = [g for g in report.groups if g.n]
    fig, ax = plt.subplots(figsize=(max(4, 1.1 * len(present)), 3.2))
    rates = [g.selection_rate for g in present]
    errors = [[r - g.selection_interval[0] for r, g in zip(rates, present)],
              [g.selection_interval[1] - r for r, g in zip(rates, present)]]
    ax.bar(range(len(present)), rates, yerr=errors, capsize=3)
    ax.set_xticks(range(len(present)))
    ax.set_xticklabels(["\n".join(g.labels)[:40] for g in present], fontsize=7)
    ax.set_ylabel("selection rate (95% CI)")
    ax.set_ylim(0, 1)
    ax.set_title(f"{model_id}: decided favourably, by group", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def _discriminatory_seeds(model, results, queries) -> list[tuple[int, ...]]:
    """Where to look for rules: the global search's counterexamples on the grid, and the data's individuals
    whose decision changes with their sensitive values alone."""
    import numpy as np

    from fairness.explain import distinct_decisions

    seeds = [r.counterexample.grid_point for r in results
             if r.counterexample is not None and r.counterexample.grid_point is not None]
    if queries:
        data = np.array(queries, dtype=np.int64)
        seeds += [tuple(q) for q in data[distinct_decisions(model, data) >= 2]]
    return seeds


def run_explain(args: argparse.Namespace) -> int:
    from fairness.errors import ModelError
    from fairness.explain import condition_json, describe_condition, explain
    from fairness.global_search import categorical_choices, global_search, one_hot_blocks
    from prover_service.workspace import ModelWorkspace

    if args.samples < 100 or args.depth < 1 or not args.time_limit > 0:
        raise ModelError("--samples must be at least 100, --depth at least 1 and --time-limit positive")
    workspace = ModelWorkspace.open(args.model)
    model = workspace.fixed_point()
    card = workspace.card()
    favourable = _lens(args, workspace, model).favourable_class
    choices = categorical_choices(workspace.artifact.preprocessor, model)
    queries, _, _ = audit_rows(args, workspace).inside(model)
    blocks = one_hot_blocks(workspace.artifact.preprocessor, model)
    seeds = _discriminatory_seeds(model, global_search(model, favourable, args.time_limit, choices=choices,
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
    if args.json:
        Path(args.json).write_text(json.dumps({
            "model_id": card.model_id, "seeds": len(seeds), "samples": result.samples,
            "discriminatory_share": result.discriminatory_share, "tree_accuracy": result.tree_accuracy,
            "rules": [{"conditions": [describe_condition(c, pre, card.feature_names) for c in r.conditions],
                       "conditions_standardised": [condition_json(c, pre, card.feature_names) for c in r.conditions],
                       "coverage": r.coverage, "precision": r.precision, "mean_k_difference": r.mean_k_difference}
                      for r in result.rules]}, indent=2))
    return 0


def _png(draw) -> bytes:
    """The PNG a plotting function writes to a path, as bytes."""
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "chart.png"
        draw(path)
        return path.read_bytes()


def _plot_eps(values: list[float], capped: int, flips: int, model_id: str, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(5, 3.2))
    ax.hist(values, bins=20, color="#4C72B0")
    ax.set_xlabel("certified radius eps (standardised units)")
    ax.set_ylabel("customers")
    ax.set_title(f"{model_id}: radii ({capped} at the cap, {flips} counterfactual flips)", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def run_report(args: argparse.Namespace) -> int:
    import statistics

    import numpy as np

    from fairness.certificate import FLIP, certify
    from fairness.errors import ModelError
    from fairness.explain import describe_condition, explain
    from fairness.global_search import categorical_choices, global_search, maximum_margin_difference, one_hot_blocks
    from fairness.group_metrics import group_report
    from fairness.spread_audit import audit_spread
    from prover_service.report import Section, Table, render
    from prover_service.workspace import ModelWorkspace, write_atomically

    if args.customers < 1 or args.samples < 100 or not args.time_limit > 0 or args.draws < 100:
        raise ModelError("--customers must be at least 1, --samples and --draws at least 100 and --time-limit "
                         "positive")
    workspace = ModelWorkspace.open(args.model)
    artifact, model, card = workspace.artifact, workspace.fixed_point(), workspace.card()
    lens = _lens(args, workspace, model)
    favourable = lens.favourable_class
    labels = card.architecture.class_labels
    rows = audit_rows(args, workspace, labels=True)
    queries, _, outside = rows.inside(model)
    sections = [Section("The model", [
        f"Model {card.model_id} ({card.dataset}), hidden layers {list(card.architecture.hidden_sizes)}, "
        f"classes {', '.join(labels)}; favourable class {labels[favourable]!r}.",
        f"Commitment {card.commitment}; card digest {card.digest()}. Certificates under this card prove: "
        f"{', '.join(card.lenses)}.",
        f"Sensitive attributes: {', '.join(f.name for f in card.sensitive)}. {len(queries)} individuals of "
        f"{rows.source} inside the domain box ({outside} outside, left out everywhere below)."])]

    _say_progress = _progress("radius")
    certificates = []
    for i, q in enumerate(queries[:args.customers]):
        certificates.append(certify(model, q, eps_bits=card.eps_scale_bits))
        _say_progress(i + 1, min(args.customers, len(queries)))
    eps = [c.eps / (1 << c.eps_bits) for c in certificates if c.status != FLIP]
    flips = sum(c.status == FLIP for c in certificates)
    cap = sum(1 for c in certificates if c.status != FLIP and c.eps >= _cap(model, card.eps_scale_bits))
    radius = Section("Certified radius (plaintext, fast)", [
        f"The first {len(certificates)} customers of {rows.source} certified as their bundles would be: the largest "
        "eps such "
        "that any sensitive values and any move of the other features within eps keep the decision. "
        f"{flips} decisions change with the sensitive values alone (counterfactual flips, eps 0)."])
    if eps:
        quantiles = np.percentile(eps, [10, 50, 90])
        radius.tables.append(Table(["customers", "median eps", "10%", "90%", "at the cap", "flips"],
                                   [[len(certificates), statistics.median(eps), float(quantiles[0]),
                                     float(quantiles[2]), cap, flips]]))
        radius.images.append(("radius histogram", _png(lambda path: _plot_eps(eps, cap, flips, card.model_id, path))))
    sections.append(radius)

    X, y = rows.X, rows.y
    groups = group_report(model, X, y, favourable)
    g = Section(f"Selection rates by group ({rows.source})", [
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
    network = _network(workspace, model, X, "learned")
    rates, di, sp = _learned_rates(network, model, favourable, args.draws)
    g.paragraphs.append("Over a Bayesian network learned from the rows (the group a root, every other feature "
                        f"discretised; structure {_describe_network(network, card)}; {args.draws:,} draws per group), "
                        f"the selection rates give disparate impact {'-' if di is None else f'{di:.3f}'} and "
                        f"statistical parity difference {sp:.3f}.")
    g.tables.append(Table(["group (learned distribution)", "draws", "selection rate", "95% CI"], [
        [", ".join(r.labels), r.samples, r.rate, "[%.3f, %.3f]" % r.interval] for r in rates]))
    g.tables.append(Table(["feature (fairness influence, FVGM)", "change of the parity difference"], [
        [card.feature_names[i.column], i.parity_change]
        for i in _influence(network, model, favourable, max(100, args.draws // 4))[:8]]))
    g.images.append(("selection rates", _png(lambda path: _plot_groups(groups, card.model_id, path))))
    sections.append(g)

    spread = audit_spread(model, queries, lens)
    width = lens.bucket_width / (1 << model.net.logit_scale_bits)
    s = Section("Counterfactual spread", [
        f"For every individual of {rows.source}, the decision and the favourable logit margin under every "
        "combination of "
        f"sensitive values; k counts the distinct margin buckets of width {width:.3g} logits. "
        f"{spread.flipped} of {len(spread.rows)} individuals get another decision from the sensitive values alone."])
    s.tables.append(Table(["k", "individuals"], [[k, n] for k, n in spread.k_distribution.items()]))
    s.images.append(("k distribution", _png(lambda path: _plot(spread.k_distribution, card.model_id, width, path))))
    if model.net.n_classes == 2:
        from fairness.k_discrimination import max_buckets

        most = max_buckets(model, favourable, width, args.time_limit, categorical_choices(artifact.preprocessor, model),
                           one_hot_blocks(artifact.preprocessor, model))
        bound = "unknown" if most.upper_bound is None else str(most.upper_bound)
        s.paragraphs.append(f"Over the whole domain box (one MILP over a copy of the network per combination, the "
                            f"point re-checked exactly), some individual reaches k = {most.k} ({most.status}; no "
                            f"individual reaches more than {bound}).")
    sections.append(s)

    choices = categorical_choices(artifact.preprocessor, model)
    blocks = one_hot_blocks(artifact.preprocessor, model)
    gs = Section("Global discrimination search", [
        "Does any individual of the domain get another decision for its sensitive values alone? One exact MILP "
        "per ordered pair of sensitive combinations (categorical features at their categories); "
        "counterexamples re-checked by the exact model."])
    results = []
    if model.net.n_classes == 2:
        results = global_search(model, favourable, args.time_limit, choices=choices, blocks=blocks)
        names = [", ".join(card.slice_labels(i)[1]) for i in range(len(card.slices()))]
        gs.tables.append(Table(["favoured as", "not as", "status", "t* (logits)", "seconds"], [
            [names[r.source], names[r.target], r.status, "-" if r.objective is None else r.objective, r.seconds]
            for r in results]))
        difference = maximum_margin_difference(model, favourable, args.time_limit, choices=choices, blocks=blocks)
        gs.paragraphs.append(describe_margin_difference(difference, names, card.feature_names,
                                                        sensitive=model.sensitive_columns,
                                                        preprocessor=artifact.preprocessor,
                                                        scale_bits=model.scale_bits) + ".")
    else:
        gs.paragraphs.append("Not run: the search compares one class's margin, for two-class models.")
    sections.append(gs)

    seeds = _discriminatory_seeds(model, results, queries)
    rules = explain(model, choices, seeds, samples=args.samples, blocks=blocks)
    ex = Section("Where it discriminates (explanations)", [
        f"{rules.samples} samples around {len(seeds)} discriminatory individuals and uniformly over the box, "
        f"{rules.discriminatory_share:.1%} with k >= 2; a depth-3 decision tree (accuracy "
        f"{rules.tree_accuracy:.1%} on a fresh sample) gives these rules for k >= 2."])
    ex.tables.append(Table(["rule", "coverage", "precision", "mean k difference"], [
        [" and ".join(describe_condition(c, artifact.preprocessor, card.feature_names) for c in r.conditions)
         or "anywhere", r.coverage, r.precision, r.mean_k_difference] for r in rules.rules] or [["(none)", 0, 0, 0]]))
    sections.append(ex)

    write_atomically(Path(args.out), render(f"Fairness report: {card.model_id}", sections))
    print(f"report written to {args.out} ({len(sections)} sections)")
    return 0


def run_probabilistic(args: argparse.Namespace) -> int:
    import random

    from fairness.errors import DataError, ModelError
    from fairness.probabilistic import model_decider, network_fairness, network_to_json
    from prover_service.workspace import ModelWorkspace, write_atomically

    if args.bins < 1 or args.max_enumeration < 1 or args.samples < 1 or not 0 < args.confidence < 1:
        raise ModelError("--bins, --max-enumeration and --samples must be at least 1 and --confidence strictly "
                         "between 0 and 1")
    if args.network and (args.data or args.data_dir):
        raise ModelError("give the distribution either as --network FILE or as rows to learn it from (--data), "
                         "not both")
    workspace = ModelWorkspace.open(args.model)
    model, card = workspace.fixed_point(), workspace.card()
    favourable = _lens(args, workspace, model).favourable_class
    schema = _model_schema(args, workspace.artifact)
    if args.network:
        network, source = _read_network(args.network, schema), args.network
    else:
        rows = audit_rows(args, workspace)
        _, kept, _ = rows.inside(model)
        records = [rows.records[i] for i in kept]
        network, source = _learned_group_network(records, schema, args.bins), f"learned from {rows.source}"
    if args.write_network:
        write_atomically(Path(args.write_network), json.dumps(network_to_json(network, source), indent=1) + "\n")
    try:
        decide = model_decider(network, schema.attributes, schema.transform_record,
                               lambda X: _favourable_decisions(model, X, favourable))
        result = network_fairness(network, decide, schema.sensitive, max_enumeration=args.max_enumeration,
                                  samples=args.samples, confidence=args.confidence, rng=random.Random(args.seed))
    except ValueError as exc:
        raise DataError(f"the distribution ({source}): {exc}") from None
    labels = card.architecture.class_labels
    names = {g.group: _group_label(schema, g.group) for g in result.groups}
    print(f"group fairness of {card.model_id} over a distribution ({source}), favourable class "
          f"{labels[favourable]!r}")
    if result.method == "enumeration":
        print(f"  exact: every one of the {result.assignments:,} records of the distribution decided by the committed "
              "model")
    else:
        print(f"  sampled: {result.assignments:,} draws per group (the distribution has more records than "
              f"--max-enumeration); each interval holds for all {len(result.groups)} groups at once with "
              f"probability {result.confidence:g} (Hoeffding, union bound)")
    print(f"  {'group':<36} {'Pr[group]':>10} {'Pr[favourable | group]':>32}")
    for g in result.groups:
        value = "-" if g.ppv is None else f"{g.ppv:.6f}" + (
            "" if result.method == "enumeration" else f" [{g.interval[0]:.4f}, {g.interval[1]:.4f}]")
        print(f"  {names[g.group][:36]:<36} {g.probability:>10.4f} {value:>32}")
    for name, value, interval in (("disparate impact (min/max)", result.disparate_impact,
                                   result.disparate_impact_interval),
                                  ("statistical parity difference", result.statistical_parity,
                                   result.statistical_parity_interval)):
        text = "-" if value is None else f"{value:.6f}"
        if value is not None and result.method == "sampling" and interval is not None:
            text += f" [{interval[0]:.4f}, {interval[1]:.4f}]"
        print(f"  {name:<36} {text}")
    if result.most_favoured is not None:
        print(f"  most favoured: {names[result.most_favoured.group]}; least favoured: "
              f"{names[result.least_favoured.group]}")
    if args.json:
        Path(args.json).write_text(json.dumps({
            "model_id": card.model_id, "favourable_class": labels[favourable], "distribution": source,
            "method": result.method, "records" if result.method == "enumeration" else "draws_per_group":
                result.assignments, "confidence": result.confidence,
            "groups": [{"group": dict(g.group), "labels": names[g.group], "probability": g.probability,
                        "positive_probability": g.ppv, "interval": list(g.interval), "draws": g.samples}
                       for g in result.groups],
            "disparate_impact": result.disparate_impact, "statistical_parity": result.statistical_parity,
            "disparate_impact_interval": result.disparate_impact_interval,
            "statistical_parity_interval": result.statistical_parity_interval,
            "most_favoured": None if result.most_favoured is None else names[result.most_favoured.group],
            "least_favoured": None if result.least_favoured is None else names[result.least_favoured.group]},
            indent=2))
    return 0


def _read_network(path: str, schema):
    """A network file, every state of a model attribute checked against the schema (a state the schema
    refuses is named with its variable)."""
    from fairness.errors import DataError
    from fairness.probabilistic import network_from_json
    from fairness.schema import RecordError

    try:
        data = json.loads(Path(path).read_text())
    except OSError as exc:
        raise DataError(f"cannot read the network file {path}: {exc.strerror or exc}") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise DataError(f"the network file {path} is not valid JSON ({exc})") from None
    try:
        network = network_from_json(data, path)
    except ValueError as exc:
        raise DataError(str(exc)) from None
    features = {f.name: f for f in schema.features}
    for name in network.names:
        if name in features:
            for state in network.variable(name).states:
                try:
                    features[name].encode(state)
                except RecordError as exc:
                    raise DataError(f"{path}: variable {name!r}, state {state!r}: {exc}") from None
    return network


def _learned_group_network(records, schema, bins: int):
    """Justicia's network from the rows' raw records (`fairness.probabilistic.learn_group_network`):
    categories and sensitive values as the schema lists them, numeric attributes in quantile bins."""
    import bisect

    from fairness.probabilistic import learn_group_network, quantile_bins
    from fairness.schema import NumericFeature, category_key, number

    states: dict[str, tuple[str, ...]] = {}
    edges: dict[str, tuple[float, ...]] = {}
    for f in schema.features:
        if isinstance(f, NumericFeature):
            inner, means = quantile_bins([number(f.name, r[f.name]) for r in records], bins)
            edges[f.name], states[f.name] = inner, tuple(repr(m) for m in means)
        else:
            states[f.name] = tuple(getattr(f, "categories", None) or f.values)

    def state_of(name: str, raw: str) -> str:
        if name in edges:
            return states[name][bisect.bisect_left(edges[name], number(name, raw))]
        return category_key(name, raw)  # the rows were read through the schema: one of its categories

    return learn_group_network(records, list(schema.sensitive), states, state_of)


def _group_label(schema, group) -> str:
    """A group's states by their labels (the schema's value labels of each sensitive attribute)."""
    features = {f.name: f for f in schema.features}
    out = []
    for name, state in group:
        f = features.get(name)
        labels = getattr(f, "value_labels", None)
        out.append(labels[f.values.index(state)] if labels and state in f.values else state)
    return ", ".join(out)


def _favourable_decisions(model, X, favourable: int):
    """Whether the exact committed model decides each row (model inputs) favourably, rows quantised as
    customers' queries are."""
    import numpy as np

    from fairness.fixed_point import integer_logits, quantise_query

    queries = np.array([quantise_query(model, [float(v) for v in row]) for row in X], dtype=object)
    logits = integer_logits(model.net, queries)
    return np.array([max(range(len(z)), key=lambda j, z=z: (z[j], -j)) == favourable for z in logits])


def _cap(model, eps_bits: int) -> int:
    from fairness.regions import eps_cap

    return eps_cap(model, eps_bits)
