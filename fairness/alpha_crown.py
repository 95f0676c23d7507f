"""Optimised lower relaxation slopes for the bound radius (alpha-CROWN), chosen in float.

Linear bound propagation bounds a form through a hidden ReLU h = relu(z) by a line below h where the form's
coefficient is >= 0. Every line through the origin with a slope alpha in [0, 1] lies below ReLU on the whole
real line (relu(z) >= alpha z: for z >= 0 because alpha <= 1, for z < 0 because alpha >= 0), whatever the
neuron's bounds, so every choice is sound. CROWN takes alpha in {0, 1} by a rule of thumb (1 when u >= -l);
alpha-CROWN (Xu et al., "Fast and Complete", ICLR 2021) makes every bounded quantity's slopes variables and
maximises the bound by projected gradient ascent. Here each quantity has slopes of its own, one per neuron
below it: the lower and the upper bound of every hidden neuron of layers >= 1 (layer 0's bounds are exact
linear minima) and every margin z_y - z_c. The intermediate bounds' slopes are tuned for the margins (they
enter the margins through l and u), as alpha-CROWN does.

The search runs in float64 with torch's autograd, from CROWN's slopes, for a fixed number of Adam steps,
keeping the best; the slopes are then rounded to dyadic values a / 2^bits with 0 <= a <= 2^bits (CROWN's own
slopes are such values, and win when rounding loses more than the search gained). The exact integer
propagation (`fairness.bound_radius`) and the circuit (`statement.bound_radius`) take them as they are: any
rounding is sound, and the exact bound decides what is certified. Everything here is deterministic, so a
search that runs again (`fairness.bound_radius.radius_search`, whose result a prover's circuit rebuilds)
finds the same slopes.
"""
from __future__ import annotations

from typing import Callable, Sequence

import numpy as np
import torch

from .fixed_point import FixedPointModel
from .slope_plans import DEFAULT_ALPHA_BITS, SlicePlan

ITERATIONS = 40  # Adam steps per search (tightness levels off well before, benchmarks/bound_radius.py)
LEARNING_RATE = 0.1


# ------------------------------------------------------------------------------------ float propagation


def ball_box_minimiser(a: np.ndarray, x: np.ndarray, lo: np.ndarray, hi: np.ndarray, eps: float) -> np.ndarray:
    """Per row of `a`, the point of {lo <= p <= hi, ||p - x|| <= eps} (x inside the box) where a.p is least.

    The minimiser is p(t) = clip(x - t a, lo, hi) for the smallest t >= 0 with ||p(t) - x|| = eps (or the box's
    corner, t infinite, when that lies within eps). Coordinate k stops moving at t_k = cap_k / |a_k| (cap_k: the
    distance from x_k to the face it moves towards), so ||p(t) - x||^2 = sum of the stopped caps^2 + t^2 (sum
    of the moving a_k^2) is solved exactly between consecutive stops, every row at once."""
    cap = np.where(a > 0, x - lo, np.where(a < 0, hi - x, 0.0))
    size = np.abs(a)
    with np.errstate(divide="ignore", invalid="ignore"):
        stop = np.where(size > 0, cap / size, np.inf)
    order = np.argsort(stop, axis=1)
    stops = np.take_along_axis(stop, order, 1)
    caps2 = np.take_along_axis(cap * cap, order, 1)
    sizes2 = np.take_along_axis(size * size, order, 1)
    n = a.shape[1]
    stopped = np.concatenate([np.zeros((len(a), 1)), np.cumsum(caps2, 1)], 1)  # caps^2 of the first i stops
    moving = np.concatenate([sizes2.sum(1, keepdims=True), sizes2.sum(1, keepdims=True) - np.cumsum(sizes2, 1)], 1)
    ends = np.concatenate([stops, np.full((len(a), 1), np.inf)], 1)  # segment i: t in [stops[i-1], stops[i]]
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        t = np.sqrt(np.maximum(eps * eps - stopped, 0) / moving)
    starts = np.concatenate([np.zeros((len(a), 1)), stops], 1)
    ok = (stopped <= eps * eps) & (t >= starts) & (t <= ends) & (moving > 0)
    first = np.where(ok.any(1), ok.argmax(1), n)
    chosen = np.take_along_axis(t, first[:, None], 1)[:, 0]
    chosen = np.where(ok.any(1), chosen, np.inf)  # the corner lies within eps
    with np.errstate(invalid="ignore"):
        point = np.where(np.isinf(chosen)[:, None], np.where(a > 0, lo, np.where(a < 0, hi, x)),
                         np.clip(x - np.nan_to_num(chosen[:, None] * a), lo, hi))
    return point


class _Network:
    """The integer model in real units (float64): W_l / 2^s, b_l / 2^(s(l+2)), inputs / 2^s."""

    def __init__(self, model: FixedPointModel):
        s = model.scale_bits
        self.weights = [torch.tensor(np.array(w, dtype=float) / (1 << s)) for w in model.net.weights]
        self.biases = [torch.tensor(np.array(b, dtype=float) / (1 << (s * (l + 2))))
                       for l, b in enumerate(model.net.biases)]
        self.free = np.array(model.free_columns, dtype=int)
        self.fixed = np.array(model.sensitive_columns, dtype=int)
        self.lo = np.array(model.box_lower, dtype=float)[self.free] / (1 << s)
        self.hi = np.array(model.box_upper, dtype=float)[self.free] / (1 << s)
        self.hidden = len(self.weights) - 1

    def minimum(self, a: torch.Tensor, c: torch.Tensor, x: np.ndarray, eps: float) -> torch.Tensor:
        """min (a.x + c) over the ball of radius eps around x inside the box (sensitive columns at x's), per
        row, at the minimiser. Its gradient in a is the minimiser (envelope theorem), which is what the
        search needs; the minimiser itself is found without gradients."""
        af, xf = a[:, self.free], x[self.free]
        fixed = c + a[:, self.fixed] @ torch.tensor(x[self.fixed])
        if eps <= 0:
            return fixed + af @ torch.tensor(xf)
        point = ball_box_minimiser(af.detach().numpy(), xf, self.lo, self.hi, eps)
        return fixed + (af * torch.tensor(point)).sum(1)

    def back(self, rows: torch.Tensor, consts: torch.Tensor, top: int, bounds, slopes: Sequence[torch.Tensor]):
        """Forms on h_{top-1} to forms on the input: a coefficient >= 0 takes its row's slope (any neuron), one
        < 0 the line through (l, 0) and (u, u) (unstable), h = z (active) or h = 0 (dead)."""
        for k in range(top - 1, -1, -1):
            l, u = bounds[k]
            on, unstable = l >= 0, (l < 0) & (u > 0)
            width = torch.where(unstable, u - l, torch.ones_like(l))
            upper = torch.where(on, torch.ones_like(l), torch.where(unstable, u / width, torch.zeros_like(l)))
            offset = torch.where(unstable, l, torch.zeros_like(l))
            pos, neg = rows.clamp(min=0), rows.clamp(max=0)
            m = pos * slopes[k] + neg * upper
            consts = consts - (neg * upper * offset).sum(1) + m @ self.biases[k]
            rows = m @ self.weights[k]
        return rows, consts

    def margins(self, x: np.ndarray, y: int, eps: float,
                choose: Callable[[object, int, list], list[torch.Tensor]]) -> torch.Tensor:
        """Lower bounds of z_y - z_c (c != y, increasing) over the set; choose(quantity, rows, bounds) gives
        each quantity's slopes (quantity: a hidden layer k >= 1, rows 2 H_k: lower bounds then upper; or
        "margins")."""
        bounds: list[tuple[torch.Tensor, torch.Tensor]] = []
        for k in range(self.hidden):
            w, b = self.weights[k], self.biases[k]
            rows, consts = torch.cat([w, -w]), torch.cat([b, -b])
            if k:
                rows, consts = self.back(rows, consts, k, bounds, choose(k, len(rows), bounds))
            low = self.minimum(rows, consts, x, eps)
            bounds.append((low[:len(w)], -low[len(w):]))
        w, b = self.weights[-1], self.biases[-1]
        others = [c for c in range(len(w)) if c != y]
        rows, consts = w[y] - w[others], b[y] - b[others]
        rows, consts = self.back(rows, consts, self.hidden, bounds, choose("margins", len(rows), bounds))
        return self.minimum(rows, consts, x, eps)


class _Adam:
    """Adam's ascent step (Kingma and Ba) on slopes kept in [0, 1] (projected after each step): plain code,
    as torch.optim loads its compiler on first use, seconds a prover would wait for every process."""

    def __init__(self, params: list[torch.Tensor], learning_rate: float, betas=(0.9, 0.999), tiny: float = 1e-8):
        self.params, self.rate, self.betas, self.tiny = params, learning_rate, betas, tiny
        self.m = [torch.zeros_like(p) for p in params]
        self.v = [torch.zeros_like(p) for p in params]
        self.t = 0

    def __call__(self) -> None:
        """One step against the gradients the last backward pass left (the loss is minimised)."""
        self.t += 1
        b1, b2 = self.betas
        with torch.no_grad():
            for p, m, v in zip(self.params, self.m, self.v):
                g = p.grad if p.grad is not None else torch.zeros_like(p)
                m.mul_(b1).add_(g, alpha=1 - b1)
                v.mul_(b2).addcmul_(g, g, value=1 - b2)
                size = (v / (1 - b2 ** self.t)).sqrt_().add_(self.tiny)
                p.sub_(self.rate * (m / (1 - b1 ** self.t)) / size).clamp_(0, 1)
                p.grad = None


def _crown(rows: int, bounds) -> list[torch.Tensor]:
    """CROWN's slopes for every neuron below: 1 when active or when u >= -l, else 0."""
    return [((l >= 0) | ((u > 0) & (u >= -l))).double().expand(rows, -1).clone() for l, u in bounds]


def _rounded(slopes: list[torch.Tensor], bits: int) -> list[torch.Tensor]:
    one = 1 << bits
    return [torch.round(s.detach().clamp(0, 1) * one) / one for s in slopes]


# ------------------------------------------------------------------------------------ the search


def _search(net: _Network, x: np.ndarray, y: int, eps: float, bits: int, iterations: int,
            learning_rate: float, warm: SlicePlan | None) -> dict:
    """The slopes (dyadic, as float tensors) that maximise the smallest margin bound found, from CROWN's
    or from `warm`'s (whichever bounds better), keeping the best."""
    start: dict = {}
    seen: list = []

    def crown(quantity, rows, bounds):
        start[quantity] = _crown(rows, bounds)
        seen[:] = bounds
        return start[quantity]

    best_value = float(net.margins(x, y, eps, crown).min())
    if warm is not None:
        slopes = _tensors(warm, y, net.weights[-1].shape[0])
        value = float(net.margins(x, y, eps, lambda q, rows, bounds: slopes[q]).min())
        if value > best_value:
            best_value, start = value, slopes
    best = {q: [s.clone() for s in v] for q, v in start.items()}
    params = {q: [s.clone().requires_grad_(True) for s in v] for q, v in start.items()}
    if iterations > 0 and any(bool(((l < 0) & (u > 0)).any()) for l, u in seen):  # else CROWN's are exact
        flat = [s for v in params.values() for s in v]
        step = _Adam(flat, learning_rate)
        for _ in range(iterations):
            bound = net.margins(x, y, eps, lambda q, rows, bounds: params[q])
            (-bound.sum()).backward()
            step()
        rounded = {q: _rounded(v, bits) for q, v in params.items()}
        value = float(net.margins(x, y, eps, lambda q, rows, bounds: rounded[q]).min())
        if value > best_value:
            best_value, best = value, rounded
    return best


def _plan(best: dict, bits: int, hidden_sizes: Sequence[int], n_classes: int, y: int) -> SlicePlan:
    one = 1 << bits

    def ints(t: torch.Tensor, row: int) -> tuple[int, ...]:
        return tuple(int(v) for v in torch.round(t[row] * one).clamp(0, one).tolist())

    neurons = []
    for k in range(1, len(hidden_sizes)):
        h = hidden_sizes[k]
        neurons.append(tuple((tuple(ints(t, i) for t in best[k]), tuple(ints(t, h + i) for t in best[k]))
                             for i in range(h)))
    zero = tuple((0,) * h for h in hidden_sizes)
    margins, row = [], 0
    for c in range(n_classes):
        if c == y:
            margins.append(zero)
        else:
            margins.append(tuple(ints(t, row) for t in best["margins"]))
            row += 1
    return SlicePlan(bits, tuple(neurons), tuple(margins))


def optimise_plans(model: FixedPointModel, query: Sequence[int], decision: int, eps: int, eps_bits: int,
                   bits: int = DEFAULT_ALPHA_BITS, warm: Sequence[SlicePlan] | None = None, *,
                   iterations: int = ITERATIONS, learning_rate: float = LEARNING_RATE) -> tuple[SlicePlan, ...]:
    """The optimised slopes of every slice (the model's order) at eps = E / 2^eps_bits around the query's
    free columns, for the margins of `decision`; from `warm`'s slopes (one plan per slice) when they bound
    better than CROWN's."""
    if not 1 <= bits <= 16:
        raise ValueError(f"slopes have 1 to 16 bits, not {bits}")
    net = _Network(model)
    real_eps = eps / (1 << eps_bits)  # in input units
    plans = []
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # tensors this small go faster on one thread (and leave the others to proving)
    try:
        for index, values in enumerate(model.slices()):
            x = np.array(model.with_slice(query, values), dtype=float) / (1 << model.scale_bits)
            best = _search(net, x, decision, real_eps, bits, iterations, learning_rate,
                           warm[index] if warm is not None else None)
            plans.append(_plan(best, bits, model.net.hidden_sizes, model.net.n_classes, decision))
    finally:
        torch.set_num_threads(threads)
    return tuple(plans)


def _tensors(plan: SlicePlan, decision: int, n_classes: int) -> dict:
    """A plan's slopes as the search's tensors (alpha = a / 2^bits), quantity by quantity."""
    one = float(1 << plan.bits)
    out: dict = {}
    for k, layer in enumerate(plan.neurons, start=1):
        out[k] = [torch.tensor([s[0][j] for s in layer] + [s[1][j] for s in layer], dtype=torch.float64) / one
                  for j in range(k)]
    per_class = [plan.margins[c] for c in range(n_classes) if c != decision]
    out["margins"] = [torch.tensor([p[j] for p in per_class], dtype=torch.float64) / one
                      for j in range(len(plan.margins[0]))]
    return out


def float_margins(model: FixedPointModel, query: Sequence[int], decision: int, eps: float,
                  plans: Sequence[SlicePlan]) -> list[np.ndarray]:
    """Per slice, the float margin bounds at eps (input units) with the given slopes: what the search
    expects the exact bound to find."""
    net = _Network(model)
    out = []
    for values, plan in zip(model.slices(), plans):
        x = np.array(model.with_slice(query, values), dtype=float) / (1 << model.scale_bits)
        slopes = _tensors(plan, decision, model.net.n_classes)
        with torch.no_grad():
            out.append(net.margins(x, decision, eps, lambda q, rows, bounds: slopes[q]).numpy())
    return out


# ------------------------------------------------------------------------------------ the persistence lens


def polish_pair_slopes(weights: Sequence[np.ndarray], biases: Sequence[np.ndarray], margin_row: np.ndarray,
                       margin_bias: float, copies: Sequence[tuple[np.ndarray, np.ndarray, list]],
                       shared: np.ndarray, sign: int, start: Sequence[Sequence[Sequence[float]]],
                       iterations: int = 300, learning_rate: float = 0.05) -> tuple[list, float]:
    """Slopes for the persistence lens's bound of sign * g, by gradient ascent from `start` (per copy, per
    hidden layer, one alpha per neuron), keeping the best; with the bound found (float).

    g = m(copy 0) - m(copy 1), both copies over the same box: `copies` holds per copy its box (lower, upper,
    full input vectors in real units; fixed columns equal) and its pre-activation bounds [(l, u)] per hidden
    layer; `shared` marks the columns both copies share (the box's free ones). Weights and biases in real
    units; margin_row . h + margin_bias is the favourable margin."""
    W = [torch.tensor(w) for w in weights]
    b = [torch.tensor(v) for v in biases]
    row, bias = torch.tensor(margin_row), float(margin_bias)
    free = torch.tensor(shared)
    params = [[torch.tensor(np.array(layer, dtype=float)).clamp(0, 1).requires_grad_(True) for layer in copy]
              for copy in start]
    boxes = [(torch.tensor(lo), torch.tensor(hi)) for lo, hi, _ in copies]
    bounds = [[(torch.tensor(l), torch.tensor(u)) for l, u in layers] for _, _, layers in copies]

    def value() -> torch.Tensor:
        a_total: torch.Tensor | float = 0.0
        c_total: torch.Tensor | float = 0.0
        for k, copy_sign in enumerate((sign, -sign)):
            rows, consts = copy_sign * row[None], torch.tensor([copy_sign * bias])
            for layer in range(len(W) - 1, -1, -1):  # W: the hidden layers' weights
                l, u = bounds[k][layer]
                on, unstable = l >= 0, (l < 0) & (u > 0)
                width = torch.where(unstable, u - l, torch.ones_like(l))
                upper = torch.where(on, torch.ones_like(l), torch.where(unstable, u / width, torch.zeros_like(l)))
                offset = torch.where(unstable, l, torch.zeros_like(l))
                pos, neg = rows.clamp(min=0), rows.clamp(max=0)
                m = pos * params[k][layer] + neg * upper
                consts = consts - (neg * upper * offset).sum(1) + m @ b[layer]
                rows = m @ W[layer]
            lo, hi = boxes[k]
            c_total = c_total + consts + (rows[:, ~free] * lo[~free]).sum(1)
            a_total = a_total + rows[:, free]
        lo, hi = boxes[0]
        return (c_total + torch.minimum(a_total * lo[free], a_total * hi[free]).sum(1))[0]

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        flat = [p for copy in params for p in copy]
        best_value = float(value().detach())
        best = [[p.detach().clone() for p in copy] for copy in params]
        step = _Adam(flat, learning_rate)
        for _ in range(iterations):
            bound = value()
            if float(bound.detach()) > best_value:
                best_value, best = float(bound.detach()), [[p.detach().clone() for p in copy] for copy in params]
            (-bound).backward()
            step()
        last = float(value().detach())
        if last > best_value:
            best_value, best = last, [[p.detach().clone() for p in copy] for copy in params]
    finally:
        torch.set_num_threads(threads)
    return [[p.tolist() for p in copy] for copy in best], best_value
