"""One vocabulary of cover kinds: the certificate, its JSON form and the statement witness."""
from __future__ import annotations

import json

import pytest

from fairness import certificate as fc
from fairness.certificate import Certificate
from fairness.covers import CoverKind
from statement.witness import DECISION_KINDS, FARKAS_KINDS, NEURON_KINDS
from statement_cases import CASES, case


def test_members_and_values():
    assert {k.name: k.value for k in CoverKind} == {
        "DISTANCE": "distance", "NEIGHBOR": "neighbor", "EMPTY_FACET": "empty_facet", "FAR_FACET": "far_facet",
        "FAR_REGION": "far_region", "FAR_CLASS": "far_class", "NO_CLASS": "no_class"}
    for kind in CoverKind:
        assert kind == kind.value and hash(kind) == hash(kind.value) and CoverKind(kind.value) is kind
        assert str(kind) == f"{kind}" == kind.value and json.dumps(kind) == json.dumps(kind.value)


def test_certificate_constants_are_the_members():
    assert (fc.DISTANCE, fc.NEIGHBOR, fc.EMPTY_FACET, fc.FAR_FACET, fc.FAR_REGION, fc.FAR_CLASS, fc.NO_CLASS) == (
        CoverKind.DISTANCE, CoverKind.NEIGHBOR, CoverKind.EMPTY_FACET, CoverKind.FAR_FACET, CoverKind.FAR_REGION,
        CoverKind.FAR_CLASS, CoverKind.NO_CLASS)
    assert all(isinstance(k, CoverKind) for k in fc.COVER_KINDS)
    assert set(fc.COVER_KINDS) == set(CoverKind)


def _plain(data):
    """The same JSON value with every str subclass replaced by a plain str."""
    if isinstance(data, dict):
        return {str(k): _plain(v) for k, v in data.items()}
    if isinstance(data, list):
        return [_plain(v) for v in data]
    if isinstance(data, str):
        return "".join(data)
    return data


@pytest.mark.parametrize("name", ["two_layer", "two_layer_farkas", "three_class"])
def test_certificate_json_is_unchanged(name):
    cert = case(name).cert
    data = cert.to_json()
    kinds = {c["kind"] for s in data["slices"] for r in s["regions"] for c in r["neurons"] + r["classes"] if c}
    assert kinds and all(type(k) is CoverKind for k in kinds)
    for dump in (lambda d: json.dumps(d), lambda d: json.dumps(d, sort_keys=True, separators=(",", ":")),
                 lambda d: json.dumps(d, indent=1)):
        assert dump(data) == dump(_plain(data))
    again = Certificate.from_json(json.loads(json.dumps(data)))
    assert json.dumps(again.to_json()) == json.dumps(data)


def test_statement_witness_carries_the_certificate_kinds():
    seen = set()
    for name in CASES:
        c = case(name)
        H = c.shape.n_hidden
        for sw in c.witness.slices:
            for row_kinds in sw.kinds:
                assert all(type(k) is CoverKind for k in row_kinds)
                assert set(row_kinds[:H]) <= NEURON_KINDS and set(row_kinds[H:]) <= DECISION_KINDS
                seen |= set(row_kinds)
    assert FARKAS_KINDS & seen and CoverKind.NEIGHBOR in seen and CoverKind.FAR_CLASS not in seen
