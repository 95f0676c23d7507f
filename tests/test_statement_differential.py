"""The circuit agrees with the plaintext checker on mutated certificates.

Each mutation changes one cover of an honest certificate (to DISTANCE, or a
neuron row to NEIGHBOR) or the published E; the circuit's witness must
satisfy the constraint system exactly when `fairness.checker` accepts.
"""
from __future__ import annotations

import dataclasses
import random

import pytest

from circuits.errors import CircuitError
from fairness.certificate import DISTANCE, NEIGHBOR, Cover
from fairness.checker import check_certificate
from fairness.errors import CertificationError
from statement.adapter import statement_inputs
from statement_cases import SALT, build, case


def _mutate_cover(cert, si, ri, row, kind):
    sc = cert.slices[si]
    rc = sc.regions[ri]
    if row < len(rc.neurons):
        neurons = list(rc.neurons)
        neurons[row] = Cover(kind)
        rc = dataclasses.replace(rc, neurons=tuple(neurons))
    else:
        classes = list(rc.classes)
        classes[row - len(rc.neurons)] = Cover(kind)
        rc = dataclasses.replace(rc, classes=tuple(classes))
    regions = list(sc.regions)
    regions[ri] = rc
    slices = list(cert.slices)
    slices[si] = dataclasses.replace(sc, regions=tuple(regions))
    return dataclasses.replace(cert, slices=tuple(slices))


def _mutations(c, rng, n):
    cert, y = c.cert, c.cert.decision
    # The honest certificate first (accepted by both), then mutations.
    out = [cert] + [dataclasses.replace(cert, eps=e) for e in (max(cert.eps - 1, 0), cert.eps + 1)]
    while len(out) < n:
        si = rng.randrange(len(cert.slices))
        ri = rng.randrange(len(cert.slices[si].regions))
        rc = cert.slices[si].regions[ri]
        row = rng.randrange(len(rc.neurons) + len(rc.classes))
        if row >= len(rc.neurons) and row - len(rc.neurons) == y:
            continue
        current = rc.neurons[row] if row < len(rc.neurons) else rc.classes[row - len(rc.neurons)]
        kind = NEIGHBOR if row < len(rc.neurons) and current.kind != NEIGHBOR and rng.random() < 0.5 else DISTANCE
        if kind == current.kind:
            continue
        out.append(_mutate_cover(cert, si, ri, row, kind))
    return out


@pytest.mark.parametrize("name", ["two_layer_farkas", "three_class"])
def test_circuit_accepts_exactly_what_the_checker_accepts(name):
    c = case(name)
    rng = random.Random(name)
    verdicts = []
    for cert in _mutations(c, rng, 16):
        try:
            check_certificate(c.model, cert)
            checker_ok = True
        except CertificationError:
            checker_ok = False
        try:
            public, witness = statement_inputs(c.model, SALT, cert, c.shape)
        except CircuitError:
            assert not checker_ok
            verdicts.append(False)
            continue
        cs = build(c.shape, public, witness, strict=False)
        circuit_ok = cs.compile(wire_names=False).is_satisfied(cs.witness())
        assert circuit_ok == checker_ok, (cert.eps, checker_ok, circuit_ok)
        verdicts.append(circuit_ok)
    assert False in verdicts and True in verdicts  # both verdicts are exercised
