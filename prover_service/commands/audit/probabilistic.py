"""`fairproof audit probabilistic`: each group's probability of a favourable decision over a Bayesian
network (a file, or learned from the rows as Justicia does), exactly or sampled (FVGM's and Justicia's
verification)."""
from __future__ import annotations

import argparse
import json
from pathlib import Path

from .common import audit_rows, data_arguments, favourable_argument, model_schema, spread_lens


def register_probabilistic(verbs: argparse._SubParsersAction) -> None:
    """`fairproof audit probabilistic`: group rates over a distribution."""
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
    data_arguments(pv, model=False)
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
    favourable_argument(pv)
    pv.add_argument("--save-json", metavar="FILE", help="write the result as JSON to FILE")
    pv.set_defaults(handler=run_probabilistic)


def run_probabilistic(args: argparse.Namespace) -> int:
    import random

    from fairness.errors import DataError, ModelError
    from audits.probabilistic import model_decider, network_fairness, network_to_json
    from prover_service.workspace import ModelWorkspace, write_atomically

    if args.bins < 1 or args.max_enumeration < 1 or args.samples < 1 or not 0 < args.confidence < 1:
        raise ModelError("--bins, --max-enumeration and --samples must be at least 1 and --confidence strictly "
                         "between 0 and 1")
    if args.network and (args.data or args.data_dir):
        raise ModelError("give the distribution either as --network FILE or as rows to learn it from (--data), "
                         "not both")
    workspace = ModelWorkspace.open(args.model)
    model, card = workspace.fixed_point(), workspace.card()
    favourable = spread_lens(args, workspace, model).favourable_class
    schema = model_schema(args, workspace.artifact)
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
    if args.save_json:
        Path(args.save_json).write_text(json.dumps({
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
    from audits.probabilistic import network_from_json
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
    """Justicia's network from the rows' raw records (`audits.probabilistic.learn_group_network`):
    categories and sensitive values as the schema lists them, numeric attributes in quantile bins."""
    import bisect

    from audits.probabilistic import learn_group_network, quantile_bins
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
