"""Group fairness over a distribution, exactly (FVGM's and Justicia's verification problem).

A classifier over discrete features and a distribution over those features: a small Bayesian
network, each variable with a finite list of states, its parents, and a table giving, for every
assignment of its parents, the probability of each of its states (a Boolean variable may give
Pr[var = 1] alone). For every compound group (an assignment of the sensitive variables) the
probability of a positive prediction,

    PPV(group) = Pr[classifier(X) = 1 | sensitive = group],

by exact enumeration of every other variable (variable elimination is not needed at these sizes;
enumeration is the reference), and by Monte-Carlo sampling for networks too large to enumerate, with
a stated confidence (Hoeffding's bound with a union bound over the groups: every group's interval
holds at once). From the PPVs: the most and least favoured groups, disparate impact min/max and
statistical parity max - min (intervals by interval arithmetic when sampled). For linear threshold
classifiers over independent features FVGM's dynamic programme over partial sums
(`linear_positive_probability`) gives the same number in polynomial space.

Categorical variables are categorical, never one Boolean per value: independent bits could put a
record in two categories at once, or a group in two races (FVGM's one-hot pitfall). Choice variables
inside the network are enumerated, never fixed by the sign of their weight: a variable with a
positive weight can lower the positive rate through its children (FVGM's pitfall).

For a committed ReLU network over encoded features (`model_decider`), each assignment of the
network's variables is a raw record (a numeric attribute's state is a raw value, e.g. the mean of a
bin as FVGM discretises); the record is encoded by the model's own schema and quantised exactly as a
customer's query is, and the exact integer model decides it. The PPV is then exact for that
discretised distribution: the approximation is in the distribution (its bins and its tables, e.g.
learned from data by `learn_group_network`, Justicia's conditional probabilities), never in the
model's decisions.

The network file (`network_from_json`, format "fairproof-bayesian-network/1"; docs/AUDITS.md):

    {"format": "fairproof-bayesian-network/1",
     "variables": [
       {"name": "sex", "states": ["F", "M"], "probabilities": [0.48, 0.52]},
       {"name": "income", "states": ["25", "60", "110"], "parents": ["sex"],
        "table": [{"given": ["F"], "probabilities": [0.5, 0.3, 0.2]},
                  {"given": ["M"], "probabilities": [0.3, 0.4, 0.3]}]}]}

variables in topological order (parents first), states as text (a numeric attribute's state is a
number in the attribute's raw units), one table row per assignment of the parents (states in the
parents' order), each row's probabilities in [0, 1] summing to 1.
"""
from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Callable, Iterator, Mapping, Sequence

import numpy as np

Assignment = Mapping[str, int]  # variable -> index of its state (for a Boolean variable, its value 0 or 1)
NETWORK_FORMAT = "fairproof-bayesian-network/1"
SUM_TOLERANCE = 1e-9


@dataclass(frozen=True)
class Variable:
    name: str
    parents: tuple[str, ...] = ()
    # per assignment of the parents (their state indices, in order; () for a root): the probability of
    # each state, or for a two-state variable Pr[name = 1] alone
    table: Mapping[tuple[int, ...], float | Sequence[float]] = None  # type: ignore[assignment]
    states: tuple[str, ...] = ("0", "1")

    def distribution(self, key: tuple[int, ...]) -> tuple[float, ...]:
        """The probability of each state given the parents' states `key`."""
        entry = self.table[key]
        if isinstance(entry, (int, float)):
            return (1.0 - float(entry), float(entry))
        return tuple(float(q) for q in entry)

    def probability(self, value: int, assignment: Assignment) -> float:
        return self.distribution(tuple(assignment[p] for p in self.parents))[value]


class BayesianNetwork:
    """Discrete variables in topological order (parents before children)."""

    def __init__(self, variables: Sequence[Variable]):
        arity: dict[str, int] = {}
        for v in variables:
            if v.name in arity:
                raise ValueError(f"variable {v.name!r} is named twice")
            if any(p not in arity for p in v.parents):
                raise ValueError(f"variable {v.name!r}: parents must come first")
            if len(v.states) < 2 or len(set(v.states)) != len(v.states):
                raise ValueError(f"variable {v.name!r}: at least two distinct states")
            keys = set(itertools.product(*(range(arity[p]) for p in v.parents)))
            if v.table is None or set(v.table) != keys:
                raise ValueError(f"variable {v.name!r}: a probability in [0, 1] per assignment of its parents")
            for key in keys:
                _check_distribution(v, key, arity)
            arity[v.name] = len(v.states)
        self.variables = tuple(variables)
        self.names = tuple(v.name for v in variables)
        self.arity = arity

    @classmethod
    def independent(cls, probabilities: Mapping[str, float]) -> "BayesianNetwork":
        return cls([Variable(n, (), {(): p}) for n, p in probabilities.items()])

    def variable(self, name: str) -> Variable:
        return self.variables[self.names.index(name)]

    def joint(self, assignment: Assignment) -> float:
        out = 1.0
        for v in self.variables:
            out *= v.probability(assignment[v.name], assignment)
        return out

    def sample(self, n: int, rng, fixed: Assignment | None = None) -> list[dict[str, int]]:
        """n forward samples (`rng.random()`: random.Random or numpy's Generator); variables in `fixed`
        are clamped to their given state instead of drawn (conditioning, when they are roots)."""
        out = []
        for _ in range(n):
            a: dict[str, int] = {}
            for v in self.variables:
                if fixed is not None and v.name in fixed:
                    a[v.name] = fixed[v.name]
                    continue
                a[v.name] = _draw(v.distribution(tuple(a[p] for p in v.parents)), rng.random())
            out.append(a)
        return out

    def assignments(self, names: Sequence[str]) -> Iterator[dict[str, int]]:
        """Every assignment of the variables `names`."""
        for values in itertools.product(*(range(self.arity[n]) for n in names)):
            yield dict(zip(names, values))

    def size(self, names: Sequence[str]) -> int:
        """How many assignments the variables `names` have."""
        return math.prod(self.arity[n] for n in names)


def _check_distribution(v: Variable, key: tuple[int, ...], arity: Mapping[str, int]) -> None:
    entry = v.table[key]
    if isinstance(entry, (int, float)) and not isinstance(entry, bool):
        if len(v.states) != 2 or not 0.0 <= entry <= 1.0:
            raise ValueError(f"variable {v.name!r}: a probability in [0, 1] per assignment of its parents")
        return
    given = ", ".join(f"{p}={k}" for p, k in zip(v.parents, key))
    where = f"given {given}" if given else "(a root)"
    try:
        q = [float(x) for x in entry]
    except (TypeError, ValueError):
        raise ValueError(f"variable {v.name!r} {where}: a probability per state, not {entry!r}") from None
    if len(q) != len(v.states) or any(not 0.0 <= x <= 1.0 for x in q) or abs(math.fsum(q) - 1.0) > SUM_TOLERANCE:
        raise ValueError(f"variable {v.name!r} {where}: {len(v.states)} probabilities (one per state "
                         f"{', '.join(v.states)}), each in [0, 1], summing to 1; got {list(entry)}")


def _draw(distribution: Sequence[float], u: float) -> int:
    """The state a uniform u in [0, 1) falls in."""
    total = 0.0
    for i, q in enumerate(distribution):
        total += q
        if u < total:
            return i
    return max(i for i, q in enumerate(distribution) if q > 0)  # u beyond a sum rounded below 1


def positive_probability(network: BayesianNetwork, classifier: Callable[[Assignment], bool],
                         group: Assignment) -> float:
    """Pr[classifier = 1 | group] by exact enumeration over every other variable."""
    unknown = [n for n in network.names if n not in group]
    total = positive = 0.0
    for rest in network.assignments(unknown):
        a = {**group, **rest}
        p = network.joint(a)
        total += p
        if classifier(a):
            positive += p
    if total == 0:
        raise ValueError(f"group {dict(group)} has probability 0")
    return positive / total


def sampled_positive_probability(network: BayesianNetwork, classifier: Callable[[Assignment], bool],
                                 group: Assignment, n: int, rng) -> float:
    """The same by rejection sampling (for networks too large to enumerate)."""
    hits = kept = 0
    for a in network.sample(n, rng):
        if all(a[k] == v for k, v in group.items()):
            kept += 1
            hits += bool(classifier(a))
    if kept == 0:
        raise ValueError(f"no sample fell in group {dict(group)}")
    return hits / kept


@dataclass(frozen=True)
class GroupPPV:
    group: tuple[tuple[str, int], ...]
    ppv: float


@dataclass(frozen=True)
class FairnessSummary:
    groups: tuple[GroupPPV, ...]
    most_favoured: GroupPPV
    least_favoured: GroupPPV
    disparate_impact: float  # min / max
    statistical_parity: float  # max - min


def group_fairness(network: BayesianNetwork, classifier: Callable[[Assignment], bool],
                   sensitive: Sequence[str]) -> FairnessSummary:
    """PPV of every compound group (every assignment of the sensitive variables), exactly."""
    groups = []
    for group in network.assignments(sensitive):
        groups.append(GroupPPV(tuple(group.items()), positive_probability(network, classifier, group)))
    most = max(groups, key=lambda g: g.ppv)
    least = min(groups, key=lambda g: g.ppv)
    return FairnessSummary(tuple(groups), most, least, least.ppv / most.ppv if most.ppv else 1.0,
                           most.ppv - least.ppv)


def linear_positive_probability(weights: Sequence[int], threshold: int, probabilities: Sequence[float]) -> float:
    """Pr[sum_i w_i X_i >= threshold] for independent Boolean X_i (integer weights), by FVGM's dynamic
    programme over the partial sum, pruned when the rest can no longer change the outcome."""
    n = len(weights)
    rest_max = [sum(max(w, 0) for w in weights[i:]) for i in range(n + 1)]
    rest_min = [sum(min(w, 0) for w in weights[i:]) for i in range(n + 1)]

    @lru_cache(maxsize=None)
    def go(i: int, partial: int) -> float:
        if partial + rest_min[i] >= threshold:
            return 1.0  # decided whatever the rest
        if partial + rest_max[i] < threshold:
            return 0.0
        p = probabilities[i]
        return p * go(i + 1, partial + weights[i]) + (1 - p) * go(i + 1, partial)

    return go(0, 0)


# --------------------------------------------------------------------------- a model over a network

Decider = Callable[[Sequence[Assignment]], np.ndarray]  # assignments -> favourable decision (bool) of each


@dataclass(frozen=True)
class GroupProbability:
    """One compound group over the network: its states, its probability, and Pr[favourable | group]
    (`ppv`, None for a group of probability 0) with an interval: the value itself when enumerated,
    a simultaneous `confidence` interval when sampled (`samples` draws)."""

    group: tuple[tuple[str, str], ...]  # (variable, state) per sensitive variable
    probability: float
    ppv: float | None
    interval: tuple[float, float]
    samples: int = 0


@dataclass(frozen=True)
class NetworkFairness:
    """Every group's PPV over the network; disparate impact (min / max) and statistical parity (max - min)
    over the groups of positive probability, with intervals when sampled."""

    method: str  # "enumeration" or "sampling"
    assignments: int  # enumerated in all, or drawn per group
    confidence: float | None  # sampling only
    groups: tuple[GroupProbability, ...]

    @property
    def present(self) -> tuple[GroupProbability, ...]:
        return tuple(g for g in self.groups if g.ppv is not None)

    def _rates(self) -> list[float]:
        return [g.ppv for g in self.groups if g.ppv is not None]

    @property
    def most_favoured(self) -> GroupProbability | None:
        return max(self.present, key=lambda g: g.ppv or 0.0, default=None)

    @property
    def least_favoured(self) -> GroupProbability | None:
        return min(self.present, key=lambda g: g.ppv or 0.0, default=None)

    @property
    def disparate_impact(self) -> float | None:
        rates = self._rates()
        if len(rates) < 2 or max(rates) == 0:
            return None
        return min(rates) / max(rates)

    @property
    def statistical_parity(self) -> float | None:
        rates = self._rates()
        return max(rates) - min(rates) if len(rates) >= 2 else None

    @property
    def disparate_impact_interval(self) -> tuple[float, float] | None:
        """Where DI lies when every group's PPV lies in its interval."""
        present = self.present
        if len(present) < 2:
            return None
        low = min(g.interval[0] for g in present)
        high_max = max(g.interval[1] for g in present)
        low_max = max(g.interval[0] for g in present)
        high_min = min(g.interval[1] for g in present)
        return (low / high_max if high_max > 0 else 0.0, min(1.0, high_min / low_max) if low_max > 0 else 1.0)

    @property
    def statistical_parity_interval(self) -> tuple[float, float] | None:
        """Where SP lies when every group's PPV lies in its interval."""
        present = self.present
        if len(present) < 2:
            return None
        lows, highs = [g.interval[0] for g in present], [g.interval[1] for g in present]
        return max(0.0, max(lows) - min(highs)), max(highs) - min(lows)


def _group_states(network: BayesianNetwork, group: Assignment) -> tuple[tuple[str, str], ...]:
    return tuple((name, network.variable(name).states[k]) for name, k in group.items())


def enumerated_fairness(network: BayesianNetwork, decide: Decider, sensitive: Sequence[str],
                        batch: int = 4096) -> NetworkFairness:
    """Every group's PPV exactly: every assignment of every variable, its joint probability, and the
    decision on it (in batches, so a model decides many records at once)."""
    names = list(network.names)
    groups = list(network.assignments(sensitive))
    index = {tuple(g[n] for n in sensitive): i for i, g in enumerate(groups)}
    mass, favourable = [0.0] * len(groups), [0.0] * len(groups)
    pending: list[dict[str, int]] = []

    def flush() -> None:
        if not pending:
            return
        decided = decide(pending)
        for a, d in zip(pending, decided):
            p = network.joint(a)
            g = index[tuple(a[n] for n in sensitive)]
            mass[g] += p
            if d:
                favourable[g] += p
        pending.clear()

    for a in network.assignments(names):
        pending.append(a)
        if len(pending) == batch:
            flush()
    flush()
    out = []
    for g, group in enumerate(groups):
        ppv = favourable[g] / mass[g] if mass[g] > 0 else None
        out.append(GroupProbability(_group_states(network, group), mass[g], ppv,
                                    (ppv, ppv) if ppv is not None else (0.0, 1.0)))
    return NetworkFairness("enumeration", network.size(names), None, tuple(out))


def hoeffding_half_width(samples: int, confidence: float, groups: int) -> float:
    """Half the width of an interval around a sampled proportion that holds with probability at least
    `confidence` for all `groups` proportions at once (Hoeffding, union bound)."""
    return math.sqrt(math.log(2 * groups / (1 - confidence)) / (2 * samples))


def sampled_fairness(network: BayesianNetwork, decide: Decider, sensitive: Sequence[str], samples: int,
                     confidence: float, rng) -> NetworkFairness:
    """Every group's PPV from `samples` draws of the network given the group: the sensitive variables
    clamped when they are roots (then clamping is conditioning), otherwise by rejection; intervals that
    hold for every group at once with probability `confidence`."""
    if samples < 1 or not 0 < confidence < 1:
        raise ValueError("sampling needs at least one draw and a confidence strictly between 0 and 1")
    roots = all(not network.variable(n).parents for n in sensitive)
    groups = list(network.assignments(sensitive))
    half = hoeffding_half_width(samples, confidence, len(groups))
    out = []
    for group in groups:
        probability = _group_probability(network, group)
        if probability == 0:
            out.append(GroupProbability(_group_states(network, group), 0.0, None, (0.0, 1.0), 0))
            continue
        draws = _draws_given(network, group, samples, rng, roots)
        ppv = float(np.mean(decide(draws)))
        out.append(GroupProbability(_group_states(network, group), probability, ppv,
                                    (max(0.0, ppv - half), min(1.0, ppv + half)), len(draws)))
    return NetworkFairness("sampling", samples, confidence, tuple(out))


def _group_probability(network: BayesianNetwork, group: Assignment) -> float:
    """Pr[group] by enumerating the group's variables and their ancestors only."""
    needed: list[str] = []
    stack = list(group)
    while stack:
        name = stack.pop()
        if name not in needed:
            needed.append(name)
            stack.extend(network.variable(name).parents)
    order = [n for n in network.names if n in needed]
    free = [n for n in order if n not in group]
    total = 0.0
    for rest in network.assignments(free):
        a = {**group, **rest}
        p = 1.0
        for n in order:
            p *= network.variable(n).probability(a[n], a)
        total += p
    return total


def _draws_given(network: BayesianNetwork, group: Assignment, n: int, rng, roots: bool) -> list[dict[str, int]]:
    if roots:
        return network.sample(n, rng, fixed=group)
    kept: list[dict[str, int]] = []
    for _ in range(1000):
        kept += [a for a in network.sample(n, rng) if all(a[k] == v for k, v in group.items())]
        if len(kept) >= n:
            return kept[:n]
    raise ValueError(f"rejection sampling kept only {len(kept)} draws of group {dict(group)}")


def network_fairness(network: BayesianNetwork, decide: Decider, sensitive: Sequence[str], *,
                     max_enumeration: int, samples: int, confidence: float, rng) -> NetworkFairness:
    """Exact by enumeration when the network has at most `max_enumeration` assignments, else sampled."""
    missing = [n for n in sensitive if n not in network.names]
    if missing:
        raise ValueError(f"the network has no variable for the sensitive attribute(s) {', '.join(missing)}")
    if network.size(network.names) <= max_enumeration:
        return enumerated_fairness(network, decide, sensitive)
    return sampled_fairness(network, decide, sensitive, samples, confidence, rng)


def model_decider(network: BayesianNetwork, attributes: Sequence[str], encode: Callable[[Mapping[str, str]], Any],
                  decide_inputs: Callable[[np.ndarray], np.ndarray]) -> Decider:
    """The committed model over the network: an assignment's states of the model's `attributes` as a raw
    record, encoded by the model's schema (`encode`: record -> model inputs, refusing what the schema
    refuses), then `decide_inputs` (rows of model inputs -> favourable or not, the exact model). Each
    distinct record is encoded once."""
    missing = [a for a in attributes if a not in network.names]
    if missing:
        raise ValueError(f"the network has no variable for the model's attribute(s) {', '.join(missing)}")
    states = {a: network.variable(a).states for a in attributes}
    cache: dict[tuple[int, ...], Any] = {}

    def encoded(key: tuple[int, ...]):
        if key not in cache:
            cache[key] = encode({a: states[a][k] for a, k in zip(attributes, key)})
        return cache[key]

    def decide(assignments: Sequence[Assignment]) -> np.ndarray:
        rows = np.array([encoded(tuple(a[n] for n in attributes)) for a in assignments], dtype=np.float64)
        return np.asarray(decide_inputs(rows), dtype=bool)

    return decide


# --------------------------------------------------------------------------- the network file


def network_from_json(data: Any, source: str = "network") -> BayesianNetwork:
    """A network from its JSON value (the module docstring's format); ValueError naming the defect."""
    if not isinstance(data, dict) or data.get("format") != NETWORK_FORMAT:
        raise ValueError(f'{source}: not a Bayesian network file (an object with "format": "{NETWORK_FORMAT}")')
    extra = set(data) - {"format", "variables", "description"}
    if extra:
        raise ValueError(f"{source}: unknown field(s) {', '.join(sorted(extra))}")
    items = data.get("variables")
    if not isinstance(items, list) or not items:
        raise ValueError(f'{source}: "variables" must be a non-empty list')
    states: dict[str, tuple[str, ...]] = {}
    variables = []
    for i, item in enumerate(items):
        v = _variable_from_json(item, states, f"{source}: variable {i + 1}")
        states[v.name] = v.states
        variables.append(v)
    try:
        return BayesianNetwork(variables)
    except ValueError as exc:
        raise ValueError(f"{source}: {exc}") from None


def _variable_from_json(item: Any, known: Mapping[str, tuple[str, ...]], where: str) -> Variable:
    if not isinstance(item, dict) or not isinstance(item.get("name"), str) or not item["name"]:
        raise ValueError(f"{where}: an object with a name")
    name = item["name"]
    where = f"{where} ({name!r})"
    extra = set(item) - {"name", "states", "parents", "probabilities", "table"}
    if extra:
        raise ValueError(f"{where}: unknown field(s) {', '.join(sorted(extra))}")
    states = item.get("states")
    if not isinstance(states, list) or not all(isinstance(x, str) for x in states):
        raise ValueError(f"{where}: \"states\" must be a list of texts")
    if len(states) < 2 or len(set(states)) != len(states):
        raise ValueError(f"{where}: at least two distinct states")
    parents = item.get("parents", [])
    if not isinstance(parents, list) or not all(isinstance(x, str) for x in parents):
        raise ValueError(f"{where}: \"parents\" must be a list of variable names")
    unknown = [p for p in parents if p not in known]
    if unknown:
        raise ValueError(f"{where}: parent(s) {', '.join(unknown)} must be variables listed before it")
    if not parents:
        if "probabilities" not in item or "table" in item:
            raise ValueError(f'{where}: a root gives "probabilities" (one per state), no "table"')
        return Variable(name, (), {(): _probabilities(item["probabilities"], where)}, tuple(states))
    rows = item.get("table")
    if "probabilities" in item or not isinstance(rows, list):
        raise ValueError(f'{where}: a variable with parents gives a "table" of rows {{"given": [...], '
                         '"probabilities": [...]}, one per assignment of its parents')
    table: dict[tuple[int, ...], tuple[float, ...]] = {}
    for row in rows:
        if not isinstance(row, dict) or set(row) != {"given", "probabilities"} or not isinstance(row["given"], list):
            raise ValueError(f'{where}: each table row is {{"given": [parent states], "probabilities": [...]}}')
        given = row["given"]
        if len(given) != len(parents) or any(g not in known[p] for g, p in zip(given, parents)):
            raise ValueError(f"{where}: table row given {given}: one state of each parent "
                             f"({', '.join(parents)}), in that order")
        key = tuple(known[p].index(g) for g, p in zip(given, parents))
        if key in table:
            raise ValueError(f"{where}: table row given {given} appears twice")
        table[key] = _probabilities(row["probabilities"], f"{where} given {given}")
    return Variable(name, tuple(parents), table, tuple(states))


def _probabilities(value: Any, where: str) -> tuple[float, ...]:
    if not isinstance(value, list) or not all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in value):
        raise ValueError(f"{where}: probabilities must be a list of numbers")
    return tuple(float(x) for x in value)


def network_to_json(network: BayesianNetwork, description: str = "") -> dict[str, Any]:
    """The network in the file format `network_from_json` reads."""
    out: list[dict[str, Any]] = []
    for v in network.variables:
        item: dict[str, Any] = {"name": v.name, "states": list(v.states)}
        if not v.parents:
            item["probabilities"] = list(v.distribution(()))
        else:
            item["parents"] = list(v.parents)
            item["table"] = [{"given": [network.variable(p).states[k] for p, k in zip(v.parents, key)],
                              "probabilities": list(v.distribution(key))}
                             for key in itertools.product(*(range(network.arity[p]) for p in v.parents))]
        out.append(item)
    return {"format": NETWORK_FORMAT, **({"description": description} if description else {}), "variables": out}


# --------------------------------------------------------------------------- learned from rows


def learn_group_network(records: Sequence[Mapping[str, str]], sensitive: Sequence[str],
                        states: Mapping[str, Sequence[str]], state_of: Callable[[str, str], str]) -> BayesianNetwork:
    """Justicia's distribution (its conditional variant) from raw records: the compound group's joint
    frequencies (each sensitive attribute given the ones before it), and every other attribute's
    frequencies given the group (p_i = Pr[X_i | group]), attributes independent given the group. A
    group absent from the rows takes the attribute's overall frequencies. `states`: each attribute's
    states; `state_of(attribute, raw value)`: the state a record's value falls in (its category, or its
    numeric bin)."""
    if not records:
        raise ValueError("no rows to learn the distribution from")
    names = list(states)
    coded = [{a: list(states[a]).index(state_of(a, r[a])) for a in names} for r in records]
    variables = []
    for i, a in enumerate(sensitive):
        parents = tuple(sensitive[:i])
        variables.append(Variable(a, parents, _frequencies(coded, a, parents, states), tuple(states[a])))
    for a in names:
        if a not in sensitive:
            variables.append(Variable(a, tuple(sensitive), _frequencies(coded, a, tuple(sensitive), states),
                                      tuple(states[a])))
    return BayesianNetwork(variables)


def _frequencies(coded: Sequence[Mapping[str, int]], name: str, parents: tuple[str, ...],
                 states: Mapping[str, Sequence[str]]) -> dict[tuple[int, ...], tuple[float, ...]]:
    k = len(states[name])
    overall = np.bincount([c[name] for c in coded], minlength=k) / len(coded)
    table = {}
    for key in itertools.product(*(range(len(states[p])) for p in parents)):
        rows = [c[name] for c in coded if all(c[p] == v for p, v in zip(parents, key))]
        table[key] = tuple(float(x) for x in (np.bincount(rows, minlength=k) / len(rows) if rows else overall))
    return table


def quantile_bins(values: Sequence[float], bins: int) -> tuple[tuple[float, ...], tuple[float, ...]]:
    """FVGM's discretisation of a numeric attribute: (inner edges, the mean of the values in each bin),
    quantile bins (equal counts; fewer when values repeat), each closed on the right: a value v falls in
    bin `bisect_left(edges, v)`; a bin's state is its mean, a raw value of the attribute."""
    x = np.sort(np.asarray(values, dtype=float))
    edges = sorted({float(e) for e in np.quantile(x, [i / bins for i in range(1, bins)])})
    which = np.searchsorted(edges, x, side="left")
    present = sorted(set(which.tolist()))
    means = tuple(float(x[which == b].mean()) for b in present)
    return tuple(edges[b - 1] for b in present[1:]), means
