"""Honest fairness certificates on tiny random models, and their statement inputs."""
from __future__ import annotations

import random
from dataclasses import dataclass
from functools import lru_cache

import pytest

from circuits.backends import get_backend
from circuits.builder import ConstraintSystem
from circuits.errors import CircuitError
from fairness.certificate import Certificate, certify
from fairness.checker import check_certificate
from fairness.fixed_point import FixedPointModel, SensitiveDomain
from fairness_toy_models import random_model, random_query
from statement import StatementPublic, StatementShape, StatementWitness, build_statement
from statement.adapter import bucket_sizes, statement_inputs, statement_shape

EPS_BITS = 6
SALT = 0x1234_5678_9ABC_DEF0_1357_9BDF_2468_ACE0

# name -> (hidden sizes, classes, model seed, query seed); what each exercises is in the comment.
CASES = {
    "two_layer": ((3, 2), 2, 0, 0),       # decision attainment, neighbour + Farkas covers
    "two_layer_farkas": ((3, 2), 2, 3, 3),  # 7 regions, 7 Farkas entries (empty facets, no-class)
    "one_layer": ((3,), 2, 7, 7),         # empty facets and no-class certificates
    "capped": ((3,), 2, 6, 6),            # E = eps_cap: no designated row
    "three_class_neuron": ((3,), 3, 6, 601),  # 3 classes, neuron attainment
    "three_class": ((3,), 3, 1, 101),     # 3 classes, decision attainment
    "flip": ((3, 2), 2, 1, 1),            # a slice flips the decision: status 1
    "flip_three_class": ((2, 2), 3, 4, 2),  # y = 2, slice 1 decides 0
    "two_sensitive": ((3,), 2, 3, 5),     # two sensitive features: 6 slices
    "three_hidden": ((2, 2, 2), 2, 2, 2),  # three hidden layers
}
# Cases proved by the exact statement only.
EXACT_CASES = {
    "far_class": ((3, 2), 2, 0, 1),       # far-class covers (decision-row separations) and a counterexample
}


def _model(name: str) -> FixedPointModel:
    hidden, classes, seed, _ = CASES[name] if name in CASES else EXACT_CASES[name]
    if name != "two_sensitive":
        return random_model(seed, n_inputs=4, hidden=hidden, n_classes=classes, scale_bits=6)
    base = random_model(seed, n_inputs=5, hidden=hidden, n_classes=classes, scale_bits=6)
    one = 1 << 6
    second = SensitiveDomain.scalar("second", 1, (-one, 0, one), ("a", "b", "c"))
    return FixedPointModel(base.net, base.box_lower, base.box_upper, (base.sensitive[0], second))


@dataclass(frozen=True)
class Case:
    model: FixedPointModel
    cert: Certificate
    shape: StatementShape
    public: StatementPublic
    witness: StatementWitness


@lru_cache(maxsize=None)
def case(name: str) -> Case:
    qseed = CASES[name][3]
    model = _model(name)
    query = random_query(model, random.Random(qseed))
    cert = certify(model, query, eps_bits=EPS_BITS)
    check_certificate(model, cert)
    k, f = bucket_sizes(cert)
    shape = statement_shape(model, region_slots=max(k, 2), farkas_slots=max(f, 2), eps_bits=EPS_BITS)
    public, witness = statement_inputs(model, SALT, cert, shape)
    return Case(model, cert, shape, public, witness)


@lru_cache(maxsize=None)
def exact_case(name: str) -> Case:
    """The same model and query, certified with the exact radius and proved by the exact statement."""
    qseed = (CASES[name] if name in CASES else EXACT_CASES[name])[3]
    model = _model(name)
    query = random_query(model, random.Random(qseed))
    cert = certify(model, query, eps_bits=EPS_BITS, radius="exact")
    check_certificate(model, cert)
    k, f = bucket_sizes(cert)
    shape = statement_shape(model, region_slots=max(k, 2), farkas_slots=max(f, 2), eps_bits=EPS_BITS,
                            radius="exact")
    public, witness = statement_inputs(model, SALT, cert, shape)
    return Case(model, cert, shape, public, witness)


def build(shape, public, witness, strict: bool = True) -> ConstraintSystem:
    cs = ConstraintSystem(with_values=True, strict=strict)
    build_statement(cs, shape, public, witness)
    return cs


def unsatisfied_labels(cs: ConstraintSystem) -> set[str]:
    """Gadget scopes of every constraint the witness violates."""
    r1cs = cs.compile(wire_names=False)
    w = cs.witness()
    from circuits.field import R

    bad = set()
    for i, c in enumerate(r1cs.constraints):
        a = sum(w[x] * k for x, k in c.a) % R
        b = sum(w[x] * k for x, k in c.b) % R
        cc = sum(w[x] * k for x, k in c.c) % R
        if (a * b - cc) % R:
            bad.add(cs.constraint_label(i))
    return bad


def rejected(c: Case, public=None, witness=None) -> set[str]:
    """Build a forged witness non-strictly, assert the R1CS refuses it, and return the violated scopes."""
    cs = build(c.shape, public or c.public, witness or c.witness, strict=False)
    r1cs = cs.compile(wire_names=False)
    assert not r1cs.is_satisfied(cs.witness())
    return unsatisfied_labels(cs)


def some(labels: set[str], fragment: str) -> bool:
    return any(fragment in label for label in labels)


@pytest.fixture(scope="module")
def mcl():
    """The mcl backend (statement proofs under Groth16), or a skip where it is unavailable."""
    try:
        return get_backend("mcl")
    except CircuitError as exc:
        pytest.skip(f"mcl backend unavailable: {exc}")
