"""The tree-ensemble statement (statement/trees) against its plaintext twin, fairness.trees.radius.

Small random integer ensembles (3-6 trees, depth 2-3, 4-6 inputs, the last one sensitive): the honest
witness satisfies the constraint system at the plaintext certificate's E and the same witness at E + 1 does
not (the circuit proves exactly the plaintext bound); a single tree, whose bound is exact, gets no E + 1.
Every dishonest witness is refused by the constraint named: another feature selector or threshold or leaf
value (the commitment), a selector that is not one-hot, another path, a split fact or a reachable bit that is
not the one the committed splits give, a worst value that is not the worst. Counterfactual flips (status 1, E = 0)
are proved where the plaintext finds one, ties included, and refused where it does not: a flip the model
does not make, another flip slice, E > 0 under a flip, a radius claimed over a flip, a rival class that is
y or scores below it, another counterfactual path.
"""
from __future__ import annotations

import dataclasses
import math
import random

import pytest

from circuits.backends import get_backend
from circuits.builder import ConstraintSystem
from circuits.field import R
from circuits.groth16 import check_proof, prove, r1cs_digest, setup
from fairness.fixed_point import SensitiveDomain
from fairness.trees.ensemble import LEAF, Tree, TreeEnsemble, TreeModel
from fairness.trees.exact import exact_radius
from fairness.trees.radius import CERTIFIED, FLIP, certifies, certify_trees, distance_sq, leaf_box
from statement.trees import (TreeShapeError, build_tree_statement, pad_tree, pad_trees, tree_shape,
                             tree_statement_inputs)
from statement.trees.circuit import goes_right
from statement.trees.reach import reachable_leaves
from statement.trees.witness import CERTIFIED_STATUS, FLIP_STATUS, TreePublic, TreeWitness, reach_bits, tree_signs
from statement_cases import unsatisfied_labels

S = 8  # inputs at 2^8, eps at 2^8
ONE = 1 << S
SALT = 0x7EE5


# --------------------------------------------------------------------------- random ensembles


def random_tree(rng: random.Random, depth: int, n_inputs: int, trained: bool = False) -> Tree:
    """A random tree of depth <= `depth`; the sensitive (last) column is split on rarely, at its middle.
    trained=True: as a trained tree is, every threshold inside its node's interval on the feature (no
    leaf that no point reaches); else anywhere in the box, contradictions and empty leaves included."""
    feature: list[int] = []
    threshold: list[int] = []
    left: list[int] = []
    right: list[int] = []
    value: list[int] = []

    def add(d: int, bounds: dict[int, tuple[int, int]]) -> int:
        i = len(feature)
        for a in (feature, threshold, left, right, value):
            a.append(0)
        f = rng.randrange(n_inputs)
        if f == n_inputs - 1 and rng.random() < 0.7:
            f = rng.randrange(n_inputs - 1)
        lo, hi = bounds.get(f, (-2 * ONE, 2 * ONE) if f < n_inputs - 1 else (0, ONE))
        if d == 0 or rng.random() < 0.2 or (trained and hi - lo < 2):
            feature[i], value[i], left[i], right[i] = LEAF, rng.randint(-100, 100), -1, -1
            return i
        feature[i] = f
        if f == n_inputs - 1:
            threshold[i] = ONE // 2
        else:
            threshold[i] = rng.randint(lo + 1, hi) if trained else rng.randint(-2 * ONE, 2 * ONE)
        left[i] = add(d - 1, {**bounds, f: (lo, threshold[i] - 1)})  # x < t
        right[i] = add(d - 1, {**bounds, f: (threshold[i], hi)})  # x >= t
        return i

    add(depth, {})
    return Tree(tuple(feature), tuple(threshold), tuple(left), tuple(right), tuple(value))


def random_model(seed: int, trees: int, depth: int, n_inputs: int, classes: int = 2, trained: bool = False) -> TreeModel:
    """`trees` trees per score (3 classes: 3 x trees); free inputs in [-2, 2]; the last input a sensitive
    code in {0, 1} (binary) or {0, 1/2, 1} (3 classes: three slices)."""
    rng = random.Random(seed)
    scores = 1 if classes == 2 else classes
    ens = TreeEnsemble(n_inputs, classes, S, 8,
                       tuple(random_tree(rng, depth, n_inputs, trained) for _ in range(trees * scores)),
                       tuple(rng.randint(-30, 30) for _ in range(scores)))
    codes = (0, ONE) if classes == 2 else (0, ONE // 2, ONE)
    lower = (-2 * ONE,) * (n_inputs - 1) + (0,)
    upper = (2 * ONE,) * (n_inputs - 1) + (ONE,)
    group = SensitiveDomain.scalar("group", n_inputs - 1, codes, tuple(f"g{c}" for c in codes))
    return TreeModel(ens, lower, upper, (group,))


def certified_case(seed: int, trees: int, depth: int, n_inputs: int, classes: int = 2, trained: bool = False):
    """(model, query, E) of the first seed from `seed` on with a certified, uncapped query of E >= 1."""
    for attempt in range(seed, seed + 50):
        model = random_model(attempt, trees, depth, n_inputs, classes, trained)
        rng = random.Random(attempt)
        for _ in range(60):
            codes = model.sensitive[0].points
            q = tuple(rng.randint(-2 * ONE, 2 * ONE) for _ in range(n_inputs - 1)) + rng.choice(codes)
            cert = certify_trees(model, q, eps_bits=S)
            if cert.status == CERTIFIED and cert.eps > 0 and not cert.capped:
                return model, q, cert.eps
    raise AssertionError(f"no certified query near seed {seed}")


def flip_case(seed: int, trees: int, depth: int, n_inputs: int, classes: int = 2):
    """(model, query, certificate) of the first seed from `seed` on with a query one of whose slices flips."""
    for attempt in range(seed, seed + 50):
        model = random_model(attempt, trees, depth, n_inputs, classes)
        rng = random.Random(attempt)
        for _ in range(60):
            q = tuple(rng.randint(-2 * ONE, 2 * ONE) for _ in range(n_inputs - 1)) + rng.choice(model.sensitive[0].points)
            cert = certify_trees(model, q, eps_bits=S)
            if cert.status == FLIP:
                return model, q, cert
    raise AssertionError(f"no flip near seed {seed}")


def build(model: TreeModel, depth: int, public: TreePublic, witness: TreeWitness) -> ConstraintSystem:
    cs = ConstraintSystem(with_values=True, strict=False)
    build_tree_statement(cs, tree_shape(model, depth, eps_bits=S), public, witness)
    return cs


def satisfied(cs: ConstraintSystem) -> bool:
    return cs.compile(wire_names=False).is_satisfied(cs.witness())


def inputs(model: TreeModel, depth: int, query, eps: int) -> tuple[TreePublic, TreeWitness]:
    return tree_statement_inputs(model, tree_shape(model, depth, eps_bits=S), query, eps, SALT)


# --------------------------------------------------------------------------- padding


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_padding_keeps_every_score_and_the_bound_radius(seed):
    model, query, eps = certified_case(seed, 4, 2, 5)
    padded = dataclasses.replace(model.ensemble, trees=tuple(
        t.as_tree() for t in pad_trees(model.ensemble.trees, 3, model.sensitive_columns)))
    rng = random.Random(seed)
    for _ in range(200):
        x = tuple(rng.randint(-2 * ONE, 2 * ONE) for _ in range(4)) + (rng.choice((0, ONE)),)
        assert padded.scores(x) == model.ensemble.scores(x)
    assert certify_trees(dataclasses.replace(model, ensemble=padded), query, eps_bits=S).eps == eps


def test_a_tree_deeper_than_the_shape_is_refused():
    deep = Tree((0, 1, LEAF, LEAF, LEAF), (0, 0, 0, 0, 0), (1, 2, -1, -1, -1), (4, 3, -1, -1, -1), (0, 0, 1, 2, 3))
    assert pad_tree(deep, 2, 0).value == (1, 2, 3, 3)
    with pytest.raises(ValueError, match="deeper"):
        pad_tree(deep, 1, 0)


# --------------------------------------------------------------------------- honest witnesses


@pytest.mark.parametrize("seed, trees, depth, n_inputs, classes", [
    (11, 3, 2, 4, 2), (12, 5, 3, 5, 2), (13, 6, 3, 6, 2), (14, 1, 2, 4, 3), (15, 2, 3, 5, 3),
])
def test_the_circuit_proves_exactly_the_plaintext_bound(seed, trees, depth, n_inputs, classes):
    model, query, eps = certified_case(seed, trees, depth, n_inputs, classes)
    public, witness = inputs(model, depth, query, eps)
    cs = build(model, depth, public, witness)
    assert satisfied(cs) and cs.unconstrained_wires() == []
    setup_cs = ConstraintSystem(with_values=False)
    build_tree_statement(setup_cs, tree_shape(model, depth, eps_bits=S))
    assert r1cs_digest(setup_cs.compile(wire_names=False)) == r1cs_digest(cs.compile(wire_names=False))
    # E + 1: the bound fails there, so no witness satisfies the system, the honest prover's included
    assert not certifies(model, query, eps + 1, S)
    assert not satisfied(build(model, depth, *inputs(model, depth, query, eps + 1)))


def circuit_reach(model: TreeModel, depth: int, query, eps: int) -> list[list[list[int]]]:
    """Per tree, slice and leaf: the reachable bit `statement.trees.reach` computes, the splits as private inputs."""
    shape = tree_shape(model, depth, eps_bits=S)
    cs = ConstraintSystem(with_values=True, strict=False)
    x = cs.private_inputs("x", shape.n_inputs, list(query))
    out = []
    for i, tree in enumerate(pad_trees(model.ensemble.trees, depth, model.sensitive_columns)):
        selectors = [cs.private_inputs(f"sel[{i}][{k}]", shape.n_inputs, [int(f == tree.feature[k]) for f in range(shape.n_inputs)])
                     for k in range(shape.n_nodes)]
        for bits in selectors:
            for b in bits:
                cs.assert_is_bool(b)
        thresholds = cs.private_inputs(f"t[{i}]", shape.n_nodes, list(tree.threshold))
        x_at = [cs.inner_product(bits, x) for bits in selectors]
        right = [goes_right(cs, shape, v, t) for v, t in zip(x_at, thresholds)]
        reach = reachable_leaves(cs, shape, selectors, thresholds, x_at, right,
                                 cs.constant(eps * eps << shape.eps_sq_shift))
        out.append([[r if isinstance(r, int) else r.value for r in row] for row in reach])
    assert satisfied(cs)
    return out


def with_thresholds_past_the_box(model: TreeModel, rng: random.Random) -> TreeModel:
    """Some free splits moved past the domain box, so that some leaves meet it nowhere."""
    trees = []
    for t in model.ensemble.trees:
        threshold = [v if f < 0 or f == 3 or rng.random() < 0.7 else rng.choice((-3 * ONE, 3 * ONE, 2 * ONE + 1))
                     for f, v in zip(t.feature, t.threshold)]
        trees.append(dataclasses.replace(t, threshold=tuple(threshold)))
    return dataclasses.replace(model, ensemble=dataclasses.replace(model.ensemble, trees=tuple(trees)))


@pytest.mark.parametrize("seed", range(8))
def test_the_reachable_bits_are_the_plaintexts_leaf_for_leaf(seed):
    """On random trees (contradictory paths, thresholds on and past the box's edges, the sensitive column
    split) and random E from 0 to the cap, every leaf's bit in every slice equals `reach_bits`."""
    rng = random.Random(seed)
    model = random_model(100 + seed, 3, 3, 4)
    if seed % 2:
        model = with_thresholds_past_the_box(model, rng)
    shape = tree_shape(model, 3, eps_bits=S)
    trees = pad_trees(model.ensemble.trees, 3, model.sensitive_columns)
    for _ in range(3):
        q = tuple(rng.randint(-2 * ONE, 2 * ONE) for _ in range(3)) + (rng.choice((0, ONE)),)
        # E at random, and on both sides of some leaves' distances (where a leaf's bit changes)
        distances = sorted({distance_sq(q, *box, model.free_columns) for tree in trees for path in tree.paths()
                            for sv in shape.slices if (box := leaf_box(model, path, sv)) is not None})
        edges = [e for d2 in rng.sample(distances, min(3, len(distances))) for e in (math.isqrt(d2), math.isqrt(d2) + 1)]
        for eps in {0, 1, rng.randint(1, shape.eps_cap), shape.eps_cap, *(min(e, shape.eps_cap) for e in edges)}:
            assert_same_reach(model, 3, q, eps)


def assert_same_reach(model: TreeModel, depth: int, q, eps: int) -> None:
    got = circuit_reach(model, depth, q, eps)
    for i, tree in enumerate(pad_trees(model.ensemble.trees, depth, model.sensitive_columns)):
        for s, slice_values in enumerate(model.slices()):
            assert got[i][s] == [int(b) for b in reach_bits(model, tree, q, slice_values, eps, S)], (i, s, eps)


def test_two_turns_the_same_way_on_one_feature_count_the_deeper_once():
    """x[0] = 0 and a leaf behind x[0] >= 1 and then x[0] >= 2: its distance is 2 (not sqrt(1 + 4)), so it
    is reachable at E = 2 + 2^-8 and not at E = 2. The same turns in the other order (a redundant deeper
    split, as no trained tree has) count the deeper, x[0] >= 1: distance 1, sound and looser."""
    def model_with(thresholds):
        tree = Tree((0, 1, 0, LEAF, LEAF, LEAF, LEAF), thresholds + (0, 0, 0, 0), (1, 3, 5, -1, -1, -1, -1),
                    (2, 4, 6, -1, -1, -1, -1), (0, 0, 0, 1, 2, 3, 4))
        return TreeModel(TreeEnsemble(4, 2, S, 8, (tree,), (0,)), (-2 * ONE,) * 3 + (0,), (2 * ONE,) * 3 + (ONE,),
                         (SensitiveDomain.scalar("group", 3, (0, ONE), ("g0", "g1")),))

    q = (0, 0, 0, 0)
    tighter_below = model_with((ONE, 0, 2 * ONE))
    for eps in (2 * ONE, 2 * ONE + 1):
        assert_same_reach(tighter_below, 2, q, eps)
    assert circuit_reach(tighter_below, 2, q, 2 * ONE + 1)[0][0][3] == 1
    assert circuit_reach(tighter_below, 2, q, 2 * ONE)[0][0][3] == 0
    looser_below = model_with((2 * ONE, 0, ONE))
    for eps in (ONE, ONE + 1):
        assert_same_reach(looser_below, 2, q, eps)
    assert circuit_reach(looser_below, 2, q, ONE + 1)[0][0][3] == 1 and circuit_reach(looser_below, 2, q, ONE)[0][0][3] == 0


@pytest.mark.parametrize("seed", [40, 41, 42, 43, 44])
def test_a_single_tree_is_tight_and_gets_no_more(seed):
    """One tree as trained trees are (every leaf reached by some point): the bound is the exact radius,
    and E + 1 (beyond it) is not provable."""
    model, query, eps = certified_case(seed, 1, 3, 4, trained=True)
    assert exact_radius(model, query, eps_bits=S).eps == eps
    assert satisfied(build(model, 3, *inputs(model, 3, query, eps)))
    assert not satisfied(build(model, 3, *inputs(model, 3, query, eps + 1)))


def test_widths_below_the_models_needs_are_refused():
    model, _, _ = certified_case(21, 3, 3, 4)
    with pytest.raises(TreeShapeError, match="threshold"):
        tree_shape(model, 3, eps_bits=S, threshold_bits=2)
    with pytest.raises(TreeShapeError, match="leaf value"):
        tree_shape(model, 3, eps_bits=S, value_range_bits=3)
    assert tree_shape(model, 3, eps_bits=S, threshold_bits=20).threshold_bits == 20


# --------------------------------------------------------------------------- dishonest witnesses


@pytest.fixture(scope="module")
def small():
    """A 3-tree depth-2 binary ensemble, a certified query and its honest inputs."""
    model, query, eps = certified_case(31, 3, 2, 4)
    public, witness = inputs(model, 2, query, eps)
    assert satisfied(build(model, 2, public, witness))
    return model, public, witness


def refused(model, public, witness, where: str) -> set[str]:
    cs = build(model, 2, public, witness)
    labels = unsatisfied_labels(cs)
    assert labels and any(where in label for label in labels), labels
    return labels


def replace_tree(witness: TreeWitness, i: int, **changes) -> TreeWitness:
    trees = list(witness.trees)
    trees[i] = dataclasses.replace(trees[i], **changes)
    return dataclasses.replace(witness, trees=tuple(trees))


def test_another_feature_threshold_or_leaf_value_breaks_the_commitment(small):
    model, public, witness = small
    tree = witness.trees[0]
    other = (tree.feature[0] + 1) % model.ensemble.n_inputs
    refused(model, public, replace_tree(witness, 0, feature=(other, *tree.feature[1:])), "commitment_check")
    refused(model, public, replace_tree(witness, 0, threshold=(tree.threshold[0] + 1, *tree.threshold[1:])),
            "commitment_check")
    refused(model, public, replace_tree(witness, 1, value=tuple(v + 1 for v in witness.trees[1].value)),
            "commitment_check")
    refused(model, public, dataclasses.replace(witness, salt=witness.salt + 1), "commitment_check")


def test_a_selector_that_is_not_one_hot_is_refused(small):
    """Selecting feature 0 besides the committed f != 0 keeps the committed index (0 + f) but steers the
    comparison to x[0] + x[f]: the one-hot check refuses it, whatever the commitment says."""
    model, public, witness = small
    i, k = next((i, k) for i, t in enumerate(witness.trees) for k, f in enumerate(t.feature) if f != 0)
    cs = build(model, 2, public, witness)
    labels = tampered(cs, f"ensemble/tree[{i}]/node[{k}]/tree[{i}]/selector[{k}][0]", 1)
    assert f"ensemble/tree[{i}]/node[{k}]/one_hot" in labels, labels
    assert not any("commitment" in label for label in labels), labels


def test_another_path_is_refused(small):
    model, public, witness = small
    paths = list(witness.paths)
    paths[0] ^= 1  # the other leaf under the same last node
    refused(model, public, dataclasses.replace(witness, paths=tuple(paths)), "inference/tree[0]/level[1]")
    paths[0] ^= 3  # the first turn changed
    refused(model, public, dataclasses.replace(witness, paths=tuple(paths)), "inference/tree[0]/level[0]")


def _spread_tree(model: TreeModel, public: TreePublic, witness: TreeWitness):
    """(slice, tree, reachable bits) of a tree whose reachable leaves hold at least two values."""
    for s, slice_values in enumerate(tree_shape(model, 2, eps_bits=S).slices):
        for i, tree in enumerate(witness.trees):
            reach = reach_bits(model, tree, public.query, slice_values, public.eps, S)
            if len({tree.value[j] for j, r in enumerate(reach) if r}) > 1:
                return s, i, reach
    raise AssertionError("no tree with two reachable values")


def test_a_worst_value_that_is_not_the_worst_is_refused(small):
    model, public, witness = small
    s, i, reach = _spread_tree(model, public, witness)
    tree = witness.trees[i]
    honest = witness.worst[s][i]
    sign = tree_signs(len(witness.trees), model.ensemble.n_scores, public.decision)[i]
    assert honest.value == sign * tree.value[honest.index]
    second = max((j for j, r in enumerate(reach) if r and sign * tree.value[j] < honest.value),
                 key=lambda j: sign * tree.value[j])
    unreachable = [j for j, r in enumerate(reach) if not r]

    def claim(**changes):
        worst = [list(row) for row in witness.worst]
        worst[s][i] = dataclasses.replace(honest, **changes)
        return dataclasses.replace(witness, worst=tuple(tuple(row) for row in worst))

    where = f"slice[{s}]/tree[{i}]/max_over_reachable"
    refused(model, public, claim(index=second, value=sign * tree.value[second]), f"{where}/dominates")
    refused(model, public, claim(value=honest.value + 1), f"{where}/chosen")
    refused(model, public, claim(value=-honest.value if honest.value else 1), f"{where}/chosen")  # the other sign
    if unreachable:  # an unreachable leaf is no worst case, even with its true signed value
        j = unreachable[0]
        refused(model, public, claim(index=j, value=sign * tree.value[j]), f"{where}/chosen")


def tampered(cs: ConstraintSystem, wire_name: str, delta: int) -> set[str]:
    """The constraints the witness fails after adding delta to one named wire."""
    r1cs = cs.compile(wire_names=False)
    w = cs.witness()
    wire = cs.r1cs_wire(wire_name)
    w[wire] = (w[wire] + delta) % R
    bad = set()
    for k, c in enumerate(r1cs.constraints):
        a = sum(w[x] * v for x, v in c.a) % R
        b = sum(w[x] * v for x, v in c.b) % R
        if (a * b - sum(w[x] * v for x, v in c.c)) % R:
            bad.add(cs.constraint_label(k))
    return bad


def test_a_split_fact_or_a_reachable_bit_other_than_the_committed_splits_give_is_refused(small):
    """The reachability bits are computed from the committed splits and the query, never chosen: a node's
    violation, a pair's same-feature bit, a leaf's bit in a slice, each moved alone, fails the constraint
    that computes it."""
    model, public, witness = small
    cs = build(model, 2, public, witness)
    assert satisfied(cs)
    for wire, scope in [("tree[0]/reach/node[0]/violation/mul", "tree[0]/reach/node[0]/violation"),
                        ("tree[0]/reach/pair[0,1]/same/is_zero/out", "tree[0]/reach/pair[0,1]/same/is_zero"),
                        ("tree[0]/reach/slice[0]/leaf[0]/mul", "tree[0]/reach/slice[0]/leaf[0]")]:
        labels = tampered(cs, wire, 1)
        assert any(label.startswith(scope) for label in labels), (wire, labels)
        assert tampered(cs, wire, 0) == set()  # the untouched witness passes: the check can tell


def test_a_lying_decision_or_eps_beyond_the_cap_is_refused(small):
    model, public, witness = small
    refused(model, dataclasses.replace(public, decision=1 - public.decision), witness, "inference/decides")
    cap = tree_shape(model, 2, eps_bits=S).eps_cap
    refused(model, dataclasses.replace(public, eps=cap + 1), witness, "domain")
    refused(model, dataclasses.replace(public, eps=0), witness, "domain")


def proved(model: TreeModel, depth: int, public: TreePublic, witness: TreeWitness):
    """(verifying key, proof, backend): the key set up from the shape alone (no values), the proof from the
    witness, whose public values are checked to be the signals in declaration order."""
    shape = tree_shape(model, depth, eps_bits=S)
    backend = get_backend()
    setup_cs = ConstraintSystem(with_values=False)
    build_tree_statement(setup_cs, shape)
    relation = setup_cs.compile(wire_names=False)
    pk, vk = setup(relation, backend)
    cs = ConstraintSystem(with_values=True)
    build_tree_statement(cs, shape, public, witness)
    assert cs.public_values() == public.signals()
    return vk, prove(pk, relation, cs.witness(), backend), backend


def test_a_groth16_proof_verifies_and_another_eps_or_decision_does_not(small):
    """One proof end to end for the 3-tree depth-2 ensemble: the key comes from the shape alone (no values),
    the proof from the honest witness."""
    model, public, witness = small
    vk, proof, backend = proved(model, 2, public, witness)
    signals = public.signals()
    assert check_proof(vk, signals, proof, backend).ok
    assert not check_proof(vk, [*signals[:2], signals[2] + 1, *signals[3:]], proof, backend).ok
    assert not check_proof(vk, [signals[0], 1 - signals[1], *signals[2:]], proof, backend).ok


# --------------------------------------------------------------------------- counterfactual flips


@pytest.mark.parametrize("seed, trees, depth, n_inputs, classes", [(51, 3, 2, 4, 2), (52, 2, 3, 5, 3)])
def test_a_flip_the_plaintext_finds_is_proved_at_eps_zero(seed, trees, depth, n_inputs, classes):
    model, query, cert = flip_case(seed, trees, depth, n_inputs, classes)
    public, witness = inputs(model, depth, query, 0)
    assert (public.status, public.flip_slice, public.decision) == (FLIP_STATUS, cert.flip_slice, cert.decision)
    cs = build(model, depth, public, witness)
    assert satisfied(cs) and cs.unconstrained_wires() == []
    # the same flip with E > 0, or as a certified radius at E = 1, is refused
    refused_at(model, depth, dataclasses.replace(public, eps=1), witness, "domain")
    labels = refused_at(model, depth, dataclasses.replace(public, status=CERTIFIED_STATUS, flip_slice=0, eps=1), witness,
                        f"slice[{cert.flip_slice}]")
    assert any("margin" in label or "over_reachable" in label for label in labels), labels


def tie_model(classes: int) -> tuple[TreeModel, tuple[int, ...]]:
    """One split per tree on the sensitive column; at group 0 the scores tie (binary: score 0), at group 1
    they do not. The query is in group 0: its own slice flips, by a tie."""
    split = Tree((1, LEAF, LEAF), (ONE // 2, 0, 0), (1, -1, -1), (2, -1, -1), (0, 0, 0))
    scores = 1 if classes == 2 else classes
    leaves = [(0, 5)] + [(0, -5)] * (scores - 1)  # group 1 favours score 0
    trees = tuple(dataclasses.replace(split, value=(0, low, high)) for low, high in leaves)
    ens = TreeEnsemble(2, classes, S, 8, trees, (0,) * scores)
    group = SensitiveDomain.scalar("group", 1, (0, ONE), ("g0", "g1"))
    return TreeModel(ens, (-2 * ONE, 0), (2 * ONE, ONE), (group,)), (ONE // 3, 0)


@pytest.mark.parametrize("classes", [2, 3])
def test_a_query_whose_own_scores_tie_is_proved_a_flip_of_its_own_slice(classes):
    model, query = tie_model(classes)
    cert = certify_trees(model, query, eps_bits=S)
    assert (cert.status, cert.flip_slice, cert.tie, cert.decision) == (FLIP, 0, True, 0)
    public, witness = inputs(model, 1, query, 0)
    assert satisfied(build(model, 1, public, witness))
    # the other decision is not the model's (lowest index on a tie; binary: score > 0)
    refused_at(model, 1, dataclasses.replace(public, decision=1), witness, "inference/decides")


@pytest.fixture(scope="module")
def certified_small():
    model, query, eps = certified_case(61, 3, 2, 4)
    return model, query, eps


def test_a_flip_the_model_does_not_make_is_refused(certified_small):
    """A certified query: claiming that any slice flips it (E = 0) fails the counterfactual's check."""
    model, query, eps = certified_small
    public, witness = inputs(model, 2, query, eps)
    for s in range(len(model.slices())):
        counterfactual = model.with_slice(query, model.slices()[s])
        padded = pad_trees(model.ensemble.trees, 2, model.sensitive_columns)
        forged = dataclasses.replace(witness, flip_paths=tuple(t.leaf_of(counterfactual) for t in padded))
        refused_at(model, 2, dataclasses.replace(public, status=FLIP_STATUS, flip_slice=s, eps=0), forged,
                   "flip/not_strictly")


def test_the_flip_slice_and_status_are_checked(certified_small):
    model, query, eps = certified_small
    public, witness = inputs(model, 2, query, eps)
    assert satisfied(build(model, 2, public, witness))
    # status 0 names slice 0, even with the counterfactual's paths at the slice named
    counterfactual = model.with_slice(query, model.slices()[1])
    padded = pad_trees(model.ensemble.trees, 2, model.sensitive_columns)
    at_slice_1 = dataclasses.replace(witness, flip_paths=tuple(t.leaf_of(counterfactual) for t in padded))
    assert unsatisfied_labels(build(model, 2, dataclasses.replace(public, flip_slice=1), at_slice_1)) == {"flip"}
    refused_at(model, 2, dataclasses.replace(public, status=2), witness, "domain")
    # a flip slice past the last slice names none (the one-hot over the slices sums to 0)
    beyond = dataclasses.replace(public, status=FLIP_STATUS, flip_slice=len(model.slices()), eps=0)
    assert "flip" in unsatisfied_labels(build(model, 2, beyond, witness))


def test_another_counterfactual_path_or_rival_is_refused():
    model, query, cert = flip_case(52, 2, 3, 5, 3)
    public, witness = inputs(model, 3, query, 0)
    paths = list(witness.flip_paths)
    paths[0] ^= 1
    refused_at(model, 3, public, dataclasses.replace(witness, flip_paths=tuple(paths)), "flip/tree[0]/level[2]")
    refused_at(model, 3, public, dataclasses.replace(witness, rival=public.decision), "flip/not_strictly")
    scores = model.ensemble.scores(model.with_slice(query, model.slices()[cert.flip_slice]))
    losers = [c for c in range(3) if c != public.decision and scores[c] < scores[public.decision]]
    for c in losers:  # a class that scores below y there is no rival
        refused_at(model, 3, public, dataclasses.replace(witness, rival=c), "flip/not_strictly")


def test_a_groth16_proof_of_a_flip_verifies_and_the_certified_reading_does_not():
    model, query, cert = flip_case(51, 3, 2, 4)
    public, witness = inputs(model, 2, query, 0)
    vk, proof, backend = proved(model, 2, public, witness)
    signals = public.signals()
    assert signals[3:5] == [FLIP_STATUS, cert.flip_slice]
    assert check_proof(vk, signals, proof, backend).ok
    assert not check_proof(vk, [*signals[:3], CERTIFIED_STATUS, 0, *signals[5:]], proof, backend).ok


def refused_at(model, depth: int, public, witness, where: str) -> set[str]:
    labels = unsatisfied_labels(build(model, depth, public, witness))
    assert labels and any(where in label for label in labels), labels
    return labels
