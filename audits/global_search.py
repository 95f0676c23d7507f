"""Global discrimination search (HyFair's 2-fairness): does ANY individual of the domain get another
decision from the committed model because of its sensitive values alone?

For a two-class model with favourable class f, margin m(x) = z_f(x) - z_other(x), and an ordered
pair of sensitive combinations (s, s'), one MILP over two exact copies of the network sharing the
non-sensitive inputs z (every non-sensitive column free in the domain box, the box the radius
certificates speak of):

    maximise t  subject to  t <= m(s, z),  t <= -m(s', z),  z in the box,

each hidden ReLU exact by a binary variable and big-M constants from interval bounds over the box
(HiGHS through scipy.optimize.milp). The same class's margin is compared in both copies (a max over
outputs would lose which class won). t* > 0 means some z is decided favourably with s and
unfavourably with s'; t* <= 0 at optimality means no such z (to the solver's tolerance).

Every counterexample is re-checked by the exact forward pass at a rational point (and reported
only if the decisions really differ, ties broken as the model breaks them); the status is honest:
"counterexample", "fair (optimal)" or "unknown" (time limit, or a solver point that does not
re-check). Inputs are continuous inside the box, as the radius's are, unless `choices` restricts a
column to a few values (`categorical_choices`: a categorical feature's encoded categories, so a
counterexample is a real record's encoding there).

HyFair also asks how large the difference can get: its maximum margin difference is, over the same
two copies, the largest m(s, z) - m(s', z) over ordered pairs (s, s') and z in the box (the largest
|m(s, z) - m(s', z)|, as both orders are searched). `maximum_margin_difference` solves one MILP per
ordered pair with that objective, to a relative gap of 1e-9 (`fairness.milp`), re-evaluates the
difference exactly at the solver's point, and reports the solver's bound beside it: the value is the
maximum only when every pair is optimal; otherwise the gap and the bound are reported.
"""
from __future__ import annotations

import itertools
import math
import time
from dataclasses import dataclass
from fractions import Fraction
from typing import Callable, Mapping, Sequence

import numpy as np

from fairness.fixed_point import FixedPointModel
from fairness.milp import MilpSolution, solve

COUNTEREXAMPLE, FAIR, UNKNOWN = "counterexample", "fair (optimal)", "unknown"
DEFAULT_TIME_LIMIT = 100.0  # seconds per ordered pair, as in Fairify and HyFair


class GlobalSearchError(ValueError):
    """A question the global search cannot ask of this model."""


@dataclass(frozen=True)
class Counterexample:
    """An input (real units, model order, the source combination's sensitive values) whose decision
    changes when only its sensitive values become the target's; the exact margins of both copies.
    `grid_point`: the same input rounded to the model's input grid (integers at 2^s, what a record
    quantises to), when the committed model's decisions still differ there."""

    point: tuple[Fraction, ...]
    margins: tuple[Fraction, Fraction]
    decisions: tuple[int, int]
    grid_point: tuple[int, ...] | None = None


@dataclass(frozen=True)
class PairResult:
    source: int  # slice index decided favourably
    target: int  # slice index decided unfavourably at the same non-sensitive inputs
    status: str
    objective: float | None  # the solver's t* (logits), when it found a point
    bound: float | None  # the solver's upper bound on t (logits), when it reports one
    counterexample: Counterexample | None
    seconds: float
    message: str = ""


def real_network(model: FixedPointModel):
    s = model.scale_bits
    net = model.net
    weights = [np.array([[w / (1 << s) for w in row] for row in layer], dtype=float) for layer in net.weights]
    biases = [np.array([b / (1 << (s * (l + 2))) for b in layer], dtype=float) for l, layer in enumerate(net.biases)]
    return weights, biases


def interval_bounds(weights, biases, lo: np.ndarray, hi: np.ndarray):
    bounds = []
    for w, b in zip(weights[:-1], biases[:-1]):
        pos, neg = np.clip(w, 0, None), np.clip(w, None, 0)
        zl = pos @ lo + neg @ hi + b
        zh = pos @ hi + neg @ lo + b
        bounds.append((zl, zh))
        lo, hi = np.clip(zl, 0, None), np.clip(zh, 0, None)
    return bounds


class MilpProgram:
    """Variables and rows of the two-copy MILP (dense rows, few hundred variables)."""

    def __init__(self) -> None:
        self.lower: list[float] = []
        self.upper: list[float] = []
        self.integer: list[int] = []
        self.rows: list[tuple[dict[int, float], float, float]] = []

    def var(self, lo: float, hi: float, integer: bool = False) -> int:
        self.lower.append(lo)
        self.upper.append(hi)
        self.integer.append(int(integer))
        return len(self.lower) - 1

    def row(self, terms: dict[int, float], lo: float, hi: float) -> None:
        self.rows.append((terms, lo, hi))


def add_network_copy(prog: MilpProgram, weights, biases, free: dict[int, int], fixed: np.ndarray, lo: np.ndarray,
          hi: np.ndarray) -> dict[int, float]:
    """Add one copy (its inputs: shared variables on free columns, constants elsewhere) and return its
    logit margin as a linear form over the program's variables (key -1: the constant)."""
    prev: list[dict[int, float]] = []
    for j in range(len(fixed)):
        prev.append({free[j]: 1.0} if j in free else {-1: float(fixed[j])})
    for (w, b), (zl, zh) in zip(zip(weights[:-1], biases[:-1]), interval_bounds(weights, biases, lo, hi)):
        layer = []
        for i in range(w.shape[0]):
            form: dict[int, float] = {-1: float(b[i])}
            for k, term in enumerate(prev):
                if w[i, k] == 0:
                    continue
                for v, a in term.items():
                    form[v] = form.get(v, 0.0) + w[i, k] * a
            l, u = float(zl[i]), float(zh[i])
            if l >= 0:
                layer.append(form)
                continue
            if u <= 0:
                layer.append({-1: 0.0})
                continue
            pre = prog.var(l, u)
            prog.row({**{v: -a for v, a in form.items() if v >= 0}, pre: 1.0}, form.get(-1, 0.0), form.get(-1, 0.0))
            post = prog.var(0.0, u)
            on = prog.var(0.0, 1.0, integer=True)
            prog.row({post: 1.0, pre: -1.0}, 0.0, np.inf)  # post >= pre
            prog.row({post: 1.0, pre: -1.0, on: -l}, -np.inf, -l)  # post <= pre - l (1 - on)
            prog.row({post: 1.0, on: -u}, -np.inf, 0.0)  # post <= u on
            layer.append({post: 1.0})
        prev = layer
    return prev


def margin_form(weights, biases, last_layer: list[dict[int, float]], favourable: int) -> dict[int, float]:
    row = weights[-1][favourable] - weights[-1][1 - favourable]
    form: dict[int, float] = {-1: float(biases[-1][favourable] - biases[-1][1 - favourable])}
    for a, term in zip(row, last_layer):
        for v, k in term.items():
            form[v] = form.get(v, 0.0) + a * k
    return form


def exact_margin(model: FixedPointModel, x: Sequence[Fraction], favourable: int) -> Fraction:
    """The committed model's margin at a rational input (real units), exactly."""
    den = math.lcm(*(v.denominator for v in x))
    numerators = [int(v * (den << model.scale_bits)) for v in x]  # exact: den * x * 2^s is an integer
    z = model.net.scaled_logits(numerators, den)
    return Fraction(z[favourable] - z[1 - favourable], den << model.net.logit_scale_bits)


def _decision(margin: Fraction, favourable: int) -> int:
    """argmax, lowest index on a tie: the favourable class wins a tie iff it has the lower index."""
    if margin > 0 or (margin == 0 and favourable == 0):
        return favourable
    return 1 - favourable


@dataclass
class TwoCopies:
    """The shared part of the global search's MILPs: two exact copies of the network, one with the source's
    sensitive values and one with the target's, sharing every other input (free in the searched box)."""

    program: MilpProgram
    free: dict[int, int]  # non-sensitive column -> its variable
    margins: tuple[dict[int, float], dict[int, float]]  # each copy's favourable margin, a linear form
    lower: np.ndarray  # the searched box (real units)
    upper: np.ndarray

    def point(self, x: np.ndarray) -> list[float]:
        """The solver's shared inputs as a full input vector (sensitive columns 0, set by the caller)."""
        return [float(x[self.free[j]]) if j in self.free else 0.0 for j in range(len(self.lower))]

    def solve(self, objective: dict[int, float], time_limit: float) -> MilpSolution:
        """minimise the linear form `objective` over the program's variables."""
        prog = self.program
        a = np.zeros((len(prog.rows), len(prog.lower)))
        lo_r, hi_r = [], []
        for i, (terms, rlo, rhi) in enumerate(prog.rows):
            for v, k in terms.items():
                a[i, v] += k
            lo_r.append(rlo)
            hi_r.append(rhi)
        cost = np.zeros(len(prog.lower))
        for v, k in objective.items():
            if v >= 0:
                cost[v] += k
        return solve(cost, a, lo_r, hi_r, prog.lower, prog.upper, prog.integer, time_limit)


Block = tuple[tuple[int, ...], tuple[tuple[int, ...], ...]]  # (columns, the points they may take together)


def two_copies(model: FixedPointModel, favourable: int, source: int, target: int,
               choices: Mapping[int, Sequence[int]] | None = None,
               ranges: Mapping[int, tuple[int, int]] | None = None, blocks: Sequence[Block] = ()) -> TwoCopies:
    """The two copies of the network for an ordered pair of sensitive combinations. `choices`: columns
    restricted to a few values (integers at 2^s, e.g. a categorical feature's encoded categories), one
    binary per value. `ranges`: columns restricted to a sub-interval of the box (integers at 2^s, e.g.
    the values observed in the data); the interval bounds of both copies start from the restricted box.
    `blocks`: groups of columns restricted to a few points together (a one-hot categorical feature's
    encodings, `one_hot_blocks`), one binary per point."""
    weights, biases = real_network(model)
    one = 1 << model.scale_bits
    slices = model.slices()
    sens = model.sensitive_columns
    n = model.net.n_inputs
    box_lo = np.array([v / one for v in model.box_lower])
    box_hi = np.array([v / one for v in model.box_upper])
    for j, (lo, hi) in (ranges or {}).items():
        if j in sens or not model.box_lower[j] <= lo <= hi <= model.box_upper[j]:
            raise GlobalSearchError(f"column {j}: its range must be a non-sensitive sub-interval of the box")
        box_lo[j], box_hi[j] = lo / one, hi / one
    prog = MilpProgram()
    free_columns = [j for j in range(n) if j not in sens]
    free = {j: prog.var(float(box_lo[j]), float(box_hi[j])) for j in free_columns}
    restrict_to_encodings(prog, free, one, box_lo, box_hi, choices or {}, blocks)
    margins = []
    for index in (source, target):
        fixed = box_lo.copy()
        lo, hi = box_lo.copy(), box_hi.copy()
        for c, v in zip(sens, slices[index]):
            fixed[c] = lo[c] = hi[c] = v / one
        last = add_network_copy(prog, weights, biases, free, fixed, lo, hi)
        margins.append(margin_form(weights, biases, last, favourable))
    return TwoCopies(prog, free, (margins[0], margins[1]), box_lo, box_hi)


def restrict_to_encodings(prog: MilpProgram, free: Mapping[int, int], one: int, box_lo: np.ndarray,
                          box_hi: np.ndarray, choices: Mapping[int, Sequence[int]], blocks: Sequence[Block]) -> None:
    """Keep categorical inputs at real records' encodings: a column in `choices` equals one of its values
    (integers at 2^s), the columns of a block one of its points together, each by one binary per value or
    point summing to one. Without this a MILP reads a one-hot feature at 0.84 of one category."""
    for j, values in choices.items():
        if j not in free or not values or any(not box_lo[j] <= v / one <= box_hi[j] for v in values):
            raise GlobalSearchError(f"column {j}: its choices must be values of a non-sensitive column's box")
        picks = [prog.var(0.0, 1.0, integer=True) for _ in values]
        prog.row(dict.fromkeys(picks, 1.0), 1.0, 1.0)  # exactly one value
        prog.row({free[j]: 1.0, **{b: -v / one for b, v in zip(picks, values)}}, 0.0, 0.0)
    for columns, points in blocks:
        if not points or any(c not in free or c in choices for c in columns):
            raise GlobalSearchError(f"columns {list(columns)}: a block must be free non-sensitive columns")
        picks = [prog.var(0.0, 1.0, integer=True) for _ in points]
        prog.row(dict.fromkeys(picks, 1.0), 1.0, 1.0)  # exactly one point
        for k, c in enumerate(columns):
            prog.row({free[c]: 1.0, **{b: -p[k] / one for b, p in zip(picks, points) if p[k]}}, 0.0, 0.0)


def search_pair(model: FixedPointModel, favourable: int, source: int, target: int,
                time_limit: float = DEFAULT_TIME_LIMIT, choices: Mapping[int, Sequence[int]] | None = None,
                ranges: Mapping[int, tuple[int, int]] | None = None, blocks: Sequence[Block] = ()) -> PairResult:
    """One ordered pair of sensitive combinations: a point decided favourably with `source` and not
    with `target`, or optimality of its absence (`two_copies` for `choices`, `ranges` and `blocks`)."""
    t0 = time.perf_counter()
    copies = two_copies(model, favourable, source, target, choices, ranges, blocks)
    prog = copies.program
    t = prog.var(-np.inf, np.inf)
    for form, sign in zip(copies.margins, (1.0, -1.0)):  # t <= sign * m
        prog.row({**{v: -sign * a for v, a in form.items() if v >= 0}, t: 1.0}, -np.inf, sign * form.get(-1, 0.0))
    res = copies.solve({t: -1.0}, time_limit)
    seconds = time.perf_counter() - t0
    objective = None if res.x is None else float(res.x[t])
    bound = None if res.bound is None else -res.bound
    if res.x is not None:
        point = exact_solver_point(model, copies.point(res.x), copies.lower, copies.upper, choices or {}, blocks)
        found = _recheck(model, favourable, source, target, point)
        if found is not None:
            return PairResult(source, target, COUNTEREXAMPLE, objective, bound, found, seconds)
    if res.optimal and objective is not None and objective <= 0:
        return PairResult(source, target, FAIR, objective, bound, None, seconds)
    message = res.message if not res.optimal else "the solver's point does not re-check exactly"
    return PairResult(source, target, UNKNOWN, objective, bound, None, seconds, message)


@dataclass(frozen=True)
class MarginDifference:
    """HyFair's maximum margin difference for one ordered pair of sensitive combinations: the largest
    m(source, z) - m(target, z) over the shared inputs z of the searched box. `value` is the difference
    at the solver's point, recomputed exactly (a difference some input really shows, in logits);
    `bound` the solver's upper bound on the maximum; `optimal` whether the solver closed the gap
    (relative 1e-9), so that `value` is the maximum. `point`: the input (real units, the source's
    sensitive values)."""

    source: int
    target: int
    value: Fraction | None
    bound: float | None
    optimal: bool
    point: tuple[Fraction, ...] | None
    seconds: float
    message: str = ""

    @property
    def gap(self) -> float | None:
        """bound - value (logits), when both are known."""
        if self.value is None or self.bound is None:
            return None
        return max(0.0, self.bound - float(self.value))


def margin_difference_pair(model: FixedPointModel, favourable: int, source: int, target: int,
                           time_limit: float = DEFAULT_TIME_LIMIT,
                           choices: Mapping[int, Sequence[int]] | None = None,
                           ranges: Mapping[int, tuple[int, int]] | None = None,
                           blocks: Sequence[Block] = ()) -> MarginDifference:
    """maximise m(source, z) - m(target, z) over z in the box (the two copies of `search_pair`), to a
    relative gap of 1e-9; the value re-evaluated exactly at the solver's point."""
    t0 = time.perf_counter()
    copies = two_copies(model, favourable, source, target, choices, ranges, blocks)
    first, second = copies.margins
    objective = {v: -a for v, a in first.items()}  # minimise -(m_source - m_target)
    for v, a in second.items():
        objective[v] = objective.get(v, 0.0) + a
    res = copies.solve(objective, time_limit)
    seconds = time.perf_counter() - t0
    constant = first.get(-1, 0.0) - second.get(-1, 0.0)
    bound = None if res.bound is None else constant - res.bound
    if res.x is None:
        return MarginDifference(source, target, None, bound, False, None, seconds, res.message)
    point = exact_solver_point(model, copies.point(res.x), copies.lower, copies.upper, choices or {}, blocks)
    value = (exact_margin(model, _with_slice(model, point, source), favourable)
             - exact_margin(model, _with_slice(model, point, target), favourable))
    return MarginDifference(source, target, value, bound, res.optimal, tuple(_with_slice(model, point, source)),
                            seconds, "" if res.optimal else res.message)


def exact_solver_point(model: FixedPointModel, values: Sequence[float], lo: Sequence[float], hi: Sequence[float],
                 choices: Mapping[int, Sequence[int]], blocks: Sequence[Block] = ()) -> list[Fraction]:
    """The solver's point as exact rationals inside the searched box; a column restricted to a few values
    takes the nearest of them, a block the nearest of its points (the solver's floats are within its
    tolerance of one)."""
    one = 1 << model.scale_bits
    x = []
    for j, v in enumerate(values):
        if j in choices:
            x.append(min((Fraction(c, one) for c in choices[j]), key=lambda c, v=v: abs(float(c) - v)))
            continue
        r = Fraction(float(v)).limit_denominator(1 << 40)
        x.append(min(max(r, Fraction(float(lo[j]))), Fraction(float(hi[j]))))
    for columns, points in blocks:
        nearest = min(points, key=lambda p: sum(abs(p[k] / one - values[c]) for k, c in enumerate(columns)))
        for k, c in enumerate(columns):
            x[c] = Fraction(nearest[k], one)
    return x


def _with_slice(model: FixedPointModel, x: Sequence[Fraction], index: int) -> list[Fraction]:
    """x with the sensitive columns set to slice `index` (real units)."""
    point = list(x)
    for c, v in zip(model.sensitive_columns, model.slices()[index]):
        point[c] = Fraction(v, 1 << model.scale_bits)
    return point


@dataclass(frozen=True)
class MaximumMarginDifference:
    """The largest margin difference over every ordered pair (HyFair's max |F(x, z1) - F(x, z2)| on the
    favourable margin): the best pair's value and point; `bound` the largest of the pairs' bounds, and
    `optimal` only when every pair was solved to optimality (then `value` is the maximum)."""

    pairs: tuple[MarginDifference, ...]

    @property
    def best(self) -> MarginDifference | None:
        found = [p for p in self.pairs if p.value is not None]
        return max(found, key=lambda p: p.value) if found else None

    @property
    def value(self) -> Fraction | None:
        best = self.best
        return None if best is None else best.value

    @property
    def bound(self) -> float | None:
        if any(p.bound is None for p in self.pairs):
            return None
        return max(p.bound for p in self.pairs)

    @property
    def optimal(self) -> bool:
        return all(p.optimal for p in self.pairs)

    @property
    def gap(self) -> float | None:
        if self.value is None or self.bound is None:
            return None
        return max(0.0, self.bound - float(self.value))


def maximum_margin_difference(model: FixedPointModel, favourable: int, time_limit: float = DEFAULT_TIME_LIMIT,
                              progress: Callable[[MarginDifference], None] | None = None,
                              choices: Mapping[int, Sequence[int]] | None = None,
                              ranges: Mapping[int, tuple[int, int]] | None = None,
                              blocks: Sequence[Block] = ()) -> MaximumMarginDifference:
    """`margin_difference_pair` for every ordered pair of distinct sensitive combinations."""
    _check_question(model, favourable, time_limit)
    out = []
    for source, target in itertools.permutations(range(len(model.slices())), 2):
        result = margin_difference_pair(model, favourable, source, target, time_limit, choices, ranges, blocks)
        out.append(result)
        if progress is not None:
            progress(result)
    return MaximumMarginDifference(tuple(out))


def _recheck(model: FixedPointModel, favourable: int, source: int, target: int,
             x: Sequence[Fraction]) -> Counterexample | None:
    """The solver's point (exact rationals in the searched box, `exact_solver_point`) with the source's
    sensitive values, if the committed model really decides it favourably with them and not with the
    target's."""
    one = 1 << model.scale_bits
    slices = model.slices()
    copies = []
    for index in (source, target):
        point = list(x)
        for c, v in zip(model.sensitive_columns, slices[index]):
            point[c] = Fraction(v, one)
        copies.append(point)
    ms = tuple(exact_margin(model, p, favourable) for p in copies)
    decisions = tuple(_decision(m, favourable) for m in ms)
    if not (decisions[0] == favourable and decisions[1] != favourable):
        return None
    grid = [min(max(round(v * one), lo), hi) for v, lo, hi in zip(copies[0], model.box_lower, model.box_upper)]
    on_grid = []
    for index in (source, target):
        point = list(grid)
        for c, v in zip(model.sensitive_columns, slices[index]):
            point[c] = v
        on_grid.append(model.net.decision(point))
    kept = tuple(grid) if on_grid[0] == favourable and on_grid[1] != favourable else None
    return Counterexample(tuple(copies[0]), ms, decisions, kept)


def global_search(model: FixedPointModel, favourable: int, time_limit: float = DEFAULT_TIME_LIMIT,
                  progress: Callable[[PairResult], None] | None = None,
                  choices: Mapping[int, Sequence[int]] | None = None,
                  ranges: Mapping[int, tuple[int, int]] | None = None,
                  blocks: Sequence[Block] = ()) -> list[PairResult]:
    """Every ordered pair of distinct sensitive combinations (S (S - 1) MILPs)."""
    _check_question(model, favourable, time_limit)
    out = []
    for source, target in itertools.permutations(range(len(model.slices())), 2):
        result = search_pair(model, favourable, source, target, time_limit, choices, ranges, blocks)
        out.append(result)
        if progress is not None:
            progress(result)
    return out


def _check_question(model: FixedPointModel, favourable: int, time_limit: float) -> None:
    """The search compares one class's margin between two copies: two classes, a time to do it in."""
    if model.net.n_classes != 2:
        raise GlobalSearchError("the global search compares one class's margin: two-class models only")
    if favourable not in (0, 1):
        raise GlobalSearchError(f"favourable class {favourable} is not a class of this model")
    if not time_limit > 0:
        raise GlobalSearchError("the time limit must be positive")


def categorical_choices(preprocessor, model: FixedPointModel) -> dict[int, tuple[int, ...]]:
    """Each non-sensitive ordinal categorical column's encoded categories, (code - mean) / std quantised
    at the model's scale as queries are, within the domain box (a shipped dataset's preprocessor, or a
    bank's schema; a schema's one-hot features are `one_hot_blocks`)."""
    from fairness.fixed_point import quantise_value
    from fairness.schema import CategoricalFeature, FeatureSchema

    if isinstance(preprocessor, FeatureSchema):
        out = {}
        for f, j in preprocessor.columns():
            if isinstance(f, CategoricalFeature) and f.encoding == "ordinal":
                values = sorted({quantise_value((c - f.mean) / f.std, model.scale_bits) for c in f.ordinal_codes})
                values = [v for v in values if model.box_lower[j] <= v <= model.box_upper[j]]
                if values:
                    out[j] = tuple(values)
        return out
    kinds = getattr(preprocessor, "kinds", None)
    if kinds is None:
        return {}
    out = {}
    for j, (name, kind) in enumerate(zip(preprocessor.feature_names, kinds)):
        if kind != "categorical" or name in preprocessor.sensitive:
            continue
        values = sorted({quantise_value((k - preprocessor.means[j]) / preprocessor.stds[j], model.scale_bits)
                         for k in range(len(preprocessor.categories[name]))})
        values = [v for v in values if model.box_lower[j] <= v <= model.box_upper[j]]
        if values:
            out[j] = tuple(values)
    return out


def one_hot_blocks(preprocessor, model: FixedPointModel) -> tuple[Block, ...]:
    """A bank's schema's one-hot categorical features: each as its input columns and the points they take
    together (one per category, the dropped category all zeros), at the model's scale."""
    from fairness.schema import CategoricalFeature, FeatureSchema

    if not isinstance(preprocessor, FeatureSchema):
        return ()
    one = 1 << model.scale_bits
    out = []
    for f, j in preprocessor.columns():
        if isinstance(f, CategoricalFeature) and f.encoding == "one_hot":
            columns = tuple(range(j, j + len(f.inputs)))
            points = tuple(dict.fromkeys(tuple(int(v) * one for v in f.encode(c)) for c in f.categories))
            out.append((columns, points))
    return tuple(out)


def describe_inputs(preprocessor, point: Sequence[Fraction], scale_bits: int,
                    skip: Sequence[int] = ()) -> list[tuple[str, str]] | None:
    """(attribute, value in raw units) of a model input (standardised rationals, model order), leaving out
    the attributes on columns in `skip` (the sensitive ones): what the audits print for a found individual.
    A bank's schema gives numbers as mean + std * value with their unit and a one-hot block or an ordinal
    code as its category (`FeatureSchema`'s describe); a shipped dataset's preprocessor its means, stds and
    category labels. None when the preprocessing says nothing of raw units."""
    from fairness.schema import FeatureSchema

    if isinstance(preprocessor, FeatureSchema):
        out = []
        for feature, first in preprocessor.columns():
            columns = range(first, first + len(feature.inputs))
            if not any(c in skip for c in columns):
                values = _at_codes(feature, [point[c] for c in columns], scale_bits)
                out.append((feature.name, feature.describe(values)))
        return out
    if getattr(preprocessor, "kinds", None) is None:
        return None
    return [(name, _shipped_value(preprocessor, j, point[j], scale_bits))
            for j, name in enumerate(preprocessor.feature_names) if j not in skip]


def _at_codes(feature, values: list[Fraction], scale_bits: int) -> list[Fraction]:
    """An ordinal input at its code's quantised value (what a record's query holds) as the code's exact
    standardised double, so that the schema names the category; any other value unchanged."""
    from fairness.fixed_point import quantise_value
    from fairness.schema import CategoricalFeature

    if not isinstance(feature, CategoricalFeature) or feature.encoding != "ordinal":
        return values
    for code in feature.ordinal_codes:
        exact = (code - feature.mean) / feature.std
        if values[0] == Fraction(quantise_value(exact, scale_bits), 1 << scale_bits):
            return [Fraction(exact)]
    return values


def _shipped_value(preprocessor, j: int, value: Fraction, scale_bits: int) -> str:
    """A shipped dataset's input in raw units: a number, or a categorical code's label."""
    from fairness.fixed_point import quantise_value

    mean, std = float(preprocessor.means[j]), float(preprocessor.stds[j])
    name = preprocessor.feature_names[j]
    if preprocessor.kinds[j] == "categorical":
        categories = preprocessor.categories[name]
        labels = getattr(preprocessor, "category_labels", {}).get(name) or categories
        for k in range(len(categories)):
            if value == Fraction(quantise_value((k - mean) / std, scale_bits), 1 << scale_bits):
                return str(labels[k])
        return f"code {mean + std * float(value):.4g}"
    return f"{mean + std * float(value):.6g}"


def observed_ranges(model: FixedPointModel, X: np.ndarray, columns: Sequence[int]) -> dict[int, tuple[int, int]]:
    """For each of `columns`, the range of the rows' values (standardised floats), rounded outward to the
    model's grid and kept inside the domain box: a search there only meets values the data shows."""
    from fairness.fixed_point import quantise_ceil, quantise_floor

    out = {}
    for j in columns:
        lo = max(model.box_lower[j], quantise_floor(float(np.min(X[:, j])), model.scale_bits))
        hi = min(model.box_upper[j], quantise_ceil(float(np.max(X[:, j])), model.scale_bits))
        if lo <= hi:
            out[j] = (lo, hi)
    return out
