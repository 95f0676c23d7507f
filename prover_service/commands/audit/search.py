"""`fairproof audit global` and `fairproof audit kdisc`: MILP searches over the whole domain box (HyFair's
global 2-fairness with the maximum margin difference, and its k-discrimination), and how their points are
shown."""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from ..key_options import add_key_setup_arguments
from .common import audit_rows, data_arguments, favourable_argument, spread_lens


def register_global(verbs: argparse._SubParsersAction) -> None:
    """`fairproof audit global`: HyFair's global 2-fairness over the domain box."""
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
    favourable_argument(g)
    g.add_argument("--continuous", action="store_true",
                   help="let categorical features take any value of the box (default: only their categories' "
                        "encodings, so a counterexample is a real record there)")
    g.add_argument("--observed-range", action="store_true",
                   help="keep numeric features within the range the rows show (--data, or a shipped dataset's test "
                        "split; default: the whole domain box, which the card may pad beyond any real record)")
    data_arguments(g, model=False)
    g.add_argument("--no-margin-difference", action="store_true",
                   help="answer the decision question only (skip the maximum margin difference's MILPs)")
    g.add_argument("--save-json", metavar="FILE", help="write the results as JSON to FILE")
    g.add_argument("--prove", metavar="DIR",
                   help="prove each counterexample on the input grid against the committed weights: a certificate "
                        "bundle (a counterfactual flip, every combination's decision public) per counterexample, "
                        "written to DIR, that anyone verifies with fairproof-verify or snarkjs and the card")
    g.add_argument("--store", metavar="URL", help="precompute store for --prove (default: the model's SQLite)")
    add_key_setup_arguments(g)
    g.set_defaults(handler=run_global)


def register_kdisc(verbs: argparse._SubParsersAction) -> None:
    """`fairproof audit kdisc`: HyFair's k-discrimination over the domain box."""
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
    favourable_argument(kd)
    kd.add_argument("--time-limit", type=float, default=300.0, metavar="S", help="solver seconds (default 300)")
    kd.add_argument("--samples", type=int, default=20000, metavar="N", help="uniform samples (default 20000)")
    kd.add_argument("--continuous", action="store_true",
                    help="let categorical features take any value of the box (default: their categories only)")
    data_arguments(kd, model=False)
    kd.add_argument("--save-json", metavar="FILE", help="write the result as JSON to FILE")
    kd.set_defaults(handler=run_kdisc)


def run_global(args: argparse.Namespace) -> int:
    from fairness.errors import ModelError
    from audits.global_search import (COUNTEREXAMPLE, FAIR, GlobalSearchError, categorical_choices,
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
    favourable = spread_lens(args, workspace, model).favourable_class
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
    if args.save_json:
        restricted = ([card.feature_names[j] for j in choices]
                      + [card.feature_names[j] for columns, _ in blocks for j in columns])
        Path(args.save_json).write_text(json.dumps({
            "model_id": card.model_id, "favourable_class": labels[favourable], "time_limit_s": args.time_limit,
            "categorical_columns_restricted": restricted,
            "numeric_columns_restricted": {card.feature_names[j]: [lo, hi] for j, (lo, hi) in ranges.items()},
            "verdict": verdict, "pairs": [_pair_json(r, names, labels, pre, model) for r in results],
            "max_margin_difference": None if difference is None else _difference_json(difference, names, pre, model)},
            indent=2))
    if args.prove:
        _prove_counterexamples(args, workspace, [r for r in found if r.counterexample.grid_point is not None], names)
    return 0


def _pair_json(r, names: list[str], labels, preprocessor, model) -> dict:
    """One ordered pair of the global search, for the JSON report."""
    return {"source": names[r.source], "target": names[r.target], "status": r.status, "objective": r.objective,
            "bound": r.bound, "seconds": r.seconds, "message": r.message,
            "counterexample": None if r.counterexample is None else {
                **point_json(preprocessor, model, r.counterexample.point),
                "margins": [str(m) for m in r.counterexample.margins],
                "decisions": [labels[d] for d in r.counterexample.decisions],
                "grid_point": (None if r.counterexample.grid_point is None
                               else list(r.counterexample.grid_point))}}


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
    from audits.global_search import describe_inputs

    raw = None if preprocessor is None else describe_inputs(preprocessor, point, scale_bits, tuple(sensitive))
    if raw is not None:
        return "(" + ", ".join(f"{name}={value}" for name, value in raw) + ") [raw units]"
    shown = ", ".join(f"{feature_names[j]}={float(v):.4g}" for j, v in enumerate(point) if j not in set(sensitive))
    return f"({shown}) [standardised units]"


def point_json(preprocessor, model, point) -> dict:
    """An input the audits found, for a JSON report: every model input's standardised value (exact
    rationals as text) and, when the preprocessing says how, each non-sensitive attribute in raw units."""
    from audits.global_search import describe_inputs

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
    from audits.global_search import GlobalSearchError, categorical_choices, one_hot_blocks
    from audits.k_discrimination import max_buckets, sampled_max_buckets
    from prover_service.workspace import ModelWorkspace

    if not args.time_limit > 0 or args.samples < 1:
        raise ModelError("--time-limit must be positive and --samples at least 1")
    workspace = ModelWorkspace.open(args.model)
    model = workspace.fixed_point()
    card = workspace.card()
    lens = spread_lens(args, workspace, model)
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
    if args.save_json:
        Path(args.save_json).write_text(json.dumps({
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
    from audits.spread import audit_spread

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

    from ..key_options import key_setup_from_args

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
