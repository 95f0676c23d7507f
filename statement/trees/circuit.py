"""The tree-ensemble bound certificate as a constraint system (`fairness.trees.radius` is its plaintext twin).

Public inputs, in the network certificate's order (`statement.public_inputs`): the commitment C, the
decision y, E (eps = E / 2^t), the status (0: certified, 1: a flip), the flip slice, the query x
(n_inputs). Private: the salt, per padded tree a one-hot feature selector and a threshold per internal
node, a value per leaf, the base, the query's path per tree, the counterfactual's path per tree and a
rival class, and per slice and tree the prover's lowest and highest reachable leaf (value and index).
The circuit proves, for the ensemble committed in C:

1. commitment: Poseidon over the tag, the shape digest, the salt and the packed base, features,
   thresholds and values (`commitment`) = C, each feature the index named by a checked one-hot selector,
   thresholds and values range-checked;
2. inference: at every level the path turns right exactly when x[f] >= threshold at the node it reached;
   y is the decision of the reached leaves' values plus the base (binary: y = [score > 0]; multiclass:
   the largest score, the lowest index on a tie);
3. status 1 (a flip): E = 0, and x with the flip slice's sensitive values (reached the same way) does not
   decide y strictly (binary: the score is not on y's side of 0; multiclass: the rival class, not y,
   scores at least y's). Status 0: the flip slice is 0;
4. status 0, the radius: 1 <= E <= eps_cap, and in every slice, for every leaf of every tree (all 2^D,
   no prover choice), the reachable bit of `fairness.trees.radius` (the slice's sensitive values take the
   leaf's turns and the turns lie closer than eps to x), computed by `reach` from the committed splits
   and x; the prover's lowest and highest values are reachable leaves' values bounding every
   reachable leaf; and base + the worst leaves keep y strictly (radius.margin_bounds). Under a flip
   (E = 0) no leaf is reachable and these checks are off.

Every point closer than eps (in the box, sensitive columns at a slice) reaches one reachable leaf per
tree, so its scores are bounded by step 4's sums: y is its strict decision.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from .commitment import commit_in_circuit
from .gadgets import WorstChoice, feature_selector, max_over_reachable, select_feature
from .reach import reachable_leaves
from .shape import TreeShape
from .witness import TreePublic, TreeWitness


@dataclass
class TreeSignals:
    """The public inputs as circuit values."""

    commitment: object
    decision: object
    eps: object
    status: object
    flip_slice: object
    query: list


def build_tree_statement(cs, shape: TreeShape, public: TreePublic | None = None,
                         witness: TreeWitness | None = None) -> None:
    """Build the statement's constraints (and, with values, its witness) into cs."""
    if cs.with_values and (public is None or witness is None):
        raise ValueError("building with values needs the public inputs and the witness")
    pub = declare_public_inputs(cs, shape, public if cs.with_values else None)
    wit = witness if cs.with_values else None
    with cs.scope("domain"):
        status_and_eps(cs, shape, pub)
        query_in_domain(cs, shape, pub.query)
    ensemble = committed_ensemble(cs, shape, pub.commitment, wit)
    with cs.scope("inference"):
        x_at, right = [], []  # per tree, per node: the query's value at the node's feature, its turn there
        for i, (selectors, thresholds) in enumerate(zip(ensemble.selectors, ensemble.thresholds)):
            with cs.scope(f"tree[{i}]"):
                x_at.append([select_feature(cs, s, pub.query) for s in selectors])
                right.append([goes_right(cs, shape, x, t) for x, t in zip(x_at[i], thresholds)])
        reached = [leaf_reached(cs, shape, i, turn_of(right[i]), ensemble.values[i],
                                None if wit is None else wit.paths[i]) for i in range(shape.n_trees)]
        is_the_decision(cs, shape, pub.decision, score_sums(cs, shape, ensemble.base, reached))
    with cs.scope("flip"):
        flip_claim(cs, shape, pub, ensemble, x_at, wit)
    radius_claim(cs, shape, pub, ensemble, x_at, right, wit)


def declare_public_inputs(cs, shape: TreeShape, pub: TreePublic | None) -> TreeSignals:
    return TreeSignals(
        cs.public_input("commitment", None if pub is None else pub.commitment),
        cs.public_input("decision", None if pub is None else pub.decision),
        cs.public_input("eps", None if pub is None else pub.eps),
        cs.public_input("status", None if pub is None else pub.status),
        cs.public_input("flip_slice", None if pub is None else pub.flip_slice),
        cs.public_inputs("query", shape.n_inputs, None if pub is None else pub.query))


def status_and_eps(cs, shape: TreeShape, pub: TreeSignals) -> None:
    """status in {0, 1}; E <= cap; status 0: E >= 1; status 1: E = 0."""
    cs.assert_is_bool(pub.status)
    cs.assert_range(shape.eps_cap - pub.eps, shape.eps_value_bits)
    cs.assert_range(cs.mul(1 - pub.status, pub.eps - 1), shape.eps_value_bits)
    cs.assert_equal(cs.mul(pub.status, pub.eps), 0)


@dataclass
class CommittedEnsemble:
    """The private ensemble as circuit values, bound to C."""

    selectors: list  # per tree, per internal node, the one-hot feature bits
    thresholds: list  # per tree, per internal node
    values: list  # per tree, per leaf
    base: list  # per score


def flip_claim(cs, shape: TreeShape, pub: TreeSignals, ensemble: CommittedEnsemble, x_at: Sequence,
               wit: TreeWitness | None) -> None:
    """The flip slice names a slice (0 unless status is 1); under a flip, the query with that slice's
    sensitive values does not decide y strictly."""
    at = [cs.is_equal(pub.flip_slice, s) for s in range(len(shape.slices))]
    cs.assert_equal(cs.sum(at), 1)
    cs.assert_equal(cs.mul(1 - pub.status, pub.flip_slice), 0)
    # the counterfactual differs from x only on the sensitive columns: its value at a node's feature is
    # x's plus, per sensitive column c, selector[c] (slice value - x[c])
    shift = {c: cs.lin_comb([(values[k], a) for values, a in zip(shape.slices, at)]) - pub.query[c]
             for k, c in enumerate(shape.sensitive_columns)}
    reached = []
    for i in range(shape.n_trees):
        with cs.scope(f"tree[{i}]"):
            point_at = [cs.sum([x, *(cs.mul(selector[c], d) for c, d in shift.items())])
                        for x, selector in zip(x_at[i], ensemble.selectors[i])]
        reached.append(leaf_reached(cs, shape, i, turn_compared(shape, point_at, ensemble.thresholds[i]),
                                    ensemble.values[i], None if wit is None else wit.flip_paths[i], "flip_path"))
    not_strictly(cs, shape, pub.decision, score_sums(cs, shape, ensemble.base, reached), pub.status,
                 None if wit is None else wit.rival)


def radius_claim(cs, shape: TreeShape, pub: TreeSignals, ensemble: CommittedEnsemble, x_at: Sequence,
                 right: Sequence, wit: TreeWitness | None) -> None:
    """Status 0: in every slice, the worst reachable leaves at E keep y strictly (step 4). A tree's worst
    leaf is its smallest reachable value when it adds to y's score, its largest otherwise: with the sign
    s_i = -1 (y's) or +1 (another class's), the largest reachable s_i v, one choice per slice and tree."""
    certified = 1 - pub.status
    eps_sq_scaled = cs.square(pub.eps) * (1 << shape.eps_sq_shift)
    reach = []  # per tree, per slice, per leaf
    for i in range(shape.n_trees):
        with cs.scope(f"tree[{i}]/reach"):
            reach.append(reachable_leaves(cs, shape, ensemble.selectors[i], ensemble.thresholds[i], x_at[i], right[i],
                                          eps_sq_scaled))
    y_scores = decision_one_hot(cs, shape, pub.decision) if shape.n_scores > 1 else [pub.decision]
    signs = [1 - 2 * y_scores[k] for k in range(shape.n_scores)]  # -1 on y's score (binary: y = 1), else +1
    with cs.scope("signed"):
        signed = [[cs.mul(signs[i % shape.n_scores], v) for v in ensemble.values[i]] for i in range(shape.n_trees)]
    for s in range(len(shape.slices)):
        with cs.scope(f"slice[{s}]"):
            worst = []
            for i in range(shape.n_trees):
                with cs.scope(f"tree[{i}]"):
                    claim = None if wit is None else wit.worst[s][i]
                    choice = worst_choice(cs, shape, f"slice[{s}]/tree[{i}]/worst",
                                          None if claim is None else (claim.value, claim.index))
                    worst.append(max_over_reachable(cs, signed[i], reach[i][s], choice, shape.value_range_bits,
                                                    certified))
            with cs.scope("margin"):
                keeps_decision(cs, shape, pub.decision, y_scores, signs, ensemble.base,
                               score_sums(cs, shape, 0, worst), certified)


def query_in_domain(cs, shape: TreeShape, x: Sequence) -> None:
    """Every query value inside the domain box; its sensitive values one of the slices."""
    for j, (lo, hi) in enumerate(zip(shape.box_lower, shape.box_upper)):
        cs.assert_range(x[j] - lo, (hi - lo).bit_length())
        cs.assert_range(hi - x[j], (hi - lo).bit_length())
    matches = []
    for slice_values in shape.slices:
        match = cs.one
        for c, v in zip(shape.sensitive_columns, slice_values):
            match = cs.and_(match, cs.is_equal(x[c], v))
        matches.append(match)
    cs.assert_equal(cs.sum(matches), 1)


def committed_ensemble(cs, shape: TreeShape, commitment, wit: TreeWitness | None) -> CommittedEnsemble:
    """Declare the private ensemble (selectors, thresholds, leaf values, base, salt), check each against
    the shape's widths, and assert that its commitment is C."""
    selectors, thresholds, values, features = [], [], [], []
    with cs.scope("ensemble"):
        for i in range(shape.n_trees):
            tree = None if wit is None else wit.trees[i]
            sel, thr, fs = [], [], []
            for k in range(shape.n_nodes):
                with cs.scope(f"tree[{i}]/node[{k}]"):
                    one_hot = None if tree is None else [int(f == tree.feature[k]) for f in range(shape.n_inputs)]
                    bits = cs.private_inputs(f"tree[{i}]/selector[{k}]", shape.n_inputs, one_hot)
                    fs.append(feature_selector(cs, bits))
                    t = cs.private_input(f"tree[{i}]/threshold[{k}]", None if tree is None else tree.threshold[k])
                    cs.assert_signed_range(t, shape.threshold_bits)
                sel.append(bits)
                thr.append(t)
            vs = cs.private_inputs(f"tree[{i}]/value", shape.n_leaves, None if tree is None else tree.value)
            with cs.scope(f"tree[{i}]/values"):
                for v in vs:
                    cs.assert_signed_range(v, shape.value_range_bits)
            selectors.append(sel)
            thresholds.append(thr)
            values.append(vs)
            features.append(fs)
        base = cs.private_inputs("base", shape.n_scores, None if wit is None else wit.base)
        with cs.scope("base"):
            for b in base:
                cs.assert_signed_range(b, shape.value_range_bits)
        salt = cs.private_input("salt", None if wit is None else wit.salt)
    digest = commit_in_circuit(cs, salt, features, thresholds, values, base, shape)
    with cs.scope("commitment_check"):
        cs.assert_equal(digest, commitment)
    return CommittedEnsemble(selectors, thresholds, values, base)


def private_bits(cs, name: str, value: int | None, n: int) -> list:
    """n private boolean inputs, little-endian bits of value."""
    bits = cs.private_inputs(name, n, None if value is None else [(value >> b) & 1 for b in range(n)])
    with cs.scope(name):
        for b in bits:
            cs.assert_is_bool(b)
    return bits


def goes_right(cs, shape: TreeShape, x_f, threshold):
    """[x[f] >= threshold] at one node, x_f the point's value at the node's feature."""
    with cs.scope("goes_right"):
        return 1 - cs.is_less(x_f, threshold, shape.coordinate_bits)


def leaf_reached(cs, shape: TreeShape, i: int, turn_at, values, path: int | None, name: str = "path"):
    """The value of the leaf a point reaches in tree i. The prover names the leaf (its index's bits, the
    turns from the root; the private input tree[i]/<name>); at level k, turn_at(cs, level, turns) is the
    point's turn ([x[f] >= threshold]) at the node of `level` those earlier turns reach, and the named
    turn must be it."""
    D = shape.depth
    bits = private_bits(cs, f"tree[{i}]/{name}", path, D)  # bit D-1-k: the turn at level k (1 = right)
    with cs.scope(f"tree[{i}]"):
        for k in range(D):
            with cs.scope(f"level[{k}]"):
                turns = bits[D - k:]  # the turns above level k, little-endian: the node's index in its level
                level = range((1 << k) - 1, (1 << (k + 1)) - 1)
                cs.assert_equal(bits[D - 1 - k], turn_at(cs, level, turns))
        with cs.scope("leaf"):
            return cs.mux(bits, values)


def turn_of(right: Sequence):
    """turn_at for a point whose turn at every node is known (the query's, from inference): a mux."""
    return lambda cs, level, turns: cs.mux(turns, [right[n] for n in level])


def turn_compared(shape: TreeShape, x_at: Sequence, thresholds: Sequence):
    """turn_at for a point compared only on its path (the counterfactual): the value and threshold at the
    reached node (muxes over the level), compared."""
    return lambda cs, level, turns: goes_right(cs, shape, cs.mux(turns, [x_at[n] for n in level]),
                                               cs.mux(turns, [thresholds[n] for n in level]))


def worst_choice(cs, shape: TreeShape, name: str, claim: tuple[int, int] | None) -> WorstChoice:
    value = cs.private_input(f"{name}/value", None if claim is None else claim[0])
    bits = private_bits(cs, f"{name}/index", None if claim is None else claim[1], shape.depth)
    return WorstChoice(value, bits)


def score_sums(cs, shape: TreeShape, base, per_tree: Sequence) -> list:
    """Per score k: base_k (a list, or 0 for none) + the sum of tree i's term over the trees of score k
    (i % n_scores == k)."""
    n = shape.n_scores
    return [cs.sum([0 if base == 0 else base[k], *(per_tree[i] for i in range(k, shape.n_trees, n))])
            for k in range(n)]


def decision_one_hot(cs, shape: TreeShape, decision) -> list:
    """[decision == c] per class c, checked to name one class."""
    one_hot = [cs.is_equal(decision, c) for c in range(shape.n_scores)]
    cs.assert_equal(cs.sum(one_hot), 1)
    return one_hot


def is_the_decision(cs, shape: TreeShape, decision, scores: Sequence) -> None:
    """`decision` is the scores' decision (`fairness.trees.ensemble.decision_of`), strict or not: binary,
    y = [score > 0]; multiclass, score_y >= score_c for every c, strictly for c < y (lowest index on a tie)."""
    width = shape.score_bits + 2
    with cs.scope("decides"):
        if shape.n_scores == 1:
            cs.assert_is_bool(decision)
            cs.assert_range(cs.select(decision, scores[0] - 1, -scores[0]), width)
            return
        one_hot = decision_one_hot(cs, shape, decision)
        score_y = cs.inner_product(one_hot, list(scores))
        for c in range(shape.n_scores):
            above = cs.sum(one_hot[c + 1:])  # [y > c]: then c must lose strictly
            cs.assert_range(cs.mul(1 - one_hot[c], score_y - scores[c] - above), width)


def keeps_decision(cs, shape: TreeShape, decision, y_scores: Sequence, signs: Sequence, base: Sequence,
                   worst: Sequence, gate) -> None:
    """Where gate is 1: every point whose trees each add at worst the signed worst values `worst` (summed
    per score) is decided `decision` strictly. Binary (s = 1 - 2y): s base + worst <= -1, i.e. the score
    signed towards y is >= 1. Multiclass, for every c != y: base_y - base_c - worst_y - worst_c >= 1 (y's
    trees add at least -worst_y, c's at most worst_c). Where gate is 0, nothing."""
    width = shape.score_bits + 2  # |any of these margins - 1| < 2^(score_bits + 2)
    with cs.scope("decides"):
        if shape.n_scores == 1:
            cs.assert_range(cs.mul(gate, -cs.mul(signs[0], base[0]) - worst[0] - 1), width)
            return
        base_y = cs.inner_product(list(y_scores), list(base))
        worst_y = cs.inner_product(list(y_scores), list(worst))
        for c in range(shape.n_scores):
            cs.assert_range(cs.mul(cs.mul(gate, 1 - y_scores[c]), base_y - base[c] - worst_y - worst[c] - 1), width)


def not_strictly(cs, shape: TreeShape, decision, scores: Sequence, gate, rival: int | None) -> None:
    """Where gate is 1: the scores do not decide `decision` strictly (binary: y = 1 and score <= 0, or
    y = 0 and score >= 0; multiclass: the private rival class, not y, scores at least y's)."""
    width = shape.score_bits + 2
    with cs.scope("not_strictly"):
        if shape.n_scores == 1:
            cs.assert_range(cs.mul(gate, cs.select(decision, -scores[0], scores[0])), width)
            return
        bits = cs.private_inputs("rival", shape.n_scores,
                                 None if rival is None else [int(c == rival) for c in range(shape.n_scores)])
        with cs.scope("rival"):
            for b in bits:
                cs.assert_is_bool(b)
            cs.assert_equal(cs.sum(bits), 1)
        one_hot = decision_one_hot(cs, shape, decision)
        cs.assert_equal(cs.mul(gate, cs.inner_product(bits, one_hot)), 0)
        cs.assert_range(cs.mul(gate, cs.inner_product(bits, list(scores)) - cs.inner_product(one_hot, list(scores))),
                        width)
