"""The radius vocabulary is defined once (fairness/radius.py) and every layer imports it.

The source (every package and script, not the tests) is read as Python and searched for a second
definition: a tuple, list or set literal naming two or more radius modes, a Literal[...] naming one, or a
name bound to a bare mode word at module or class level (`FAST = "fast"`, `radius: str = "exact"`).
Comparisons and call arguments (`radius == "exact"`, `certify(radius="exact")`) use the vocabulary and are
not definitions.
"""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

from fairness.radius import PROVED_RADII, RADIUS_MODES, REGION_RADII, Radius, parse_radius

REPO = Path(__file__).resolve().parents[1]
SOURCE = ("circuits", "transparency", "fairness", "statement", "audits", "commitments", "offline_precompute",
          "verifier_client", "prover_service", "benchmarks", "scripts")
HOME = "fairness/radius.py"  # the one definition
WORDS = frozenset(mode.value for mode in Radius)


def _word(node: ast.AST) -> str | None:
    return node.value if isinstance(node, ast.Constant) and node.value in WORDS else None


def _is_literal(node: ast.AST) -> bool:
    return (isinstance(node, ast.Name) and node.id == "Literal") or (
        isinstance(node, ast.Attribute) and node.attr == "Literal")


def definitions(source: str) -> list[int]:
    """Line numbers where `source` defines radius vocabulary of its own."""
    found: set[int] = set()
    tree = ast.parse(source)
    for node in ast.walk(tree):
        if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
            if len({w for w in map(_word, node.elts) if w}) >= 2:
                found.add(node.lineno)
        elif isinstance(node, ast.Subscript) and _is_literal(node.value):
            elts = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
            if any(_word(e) for e in elts):
                found.add(node.lineno)
    scopes = [tree] + [n for n in ast.walk(tree) if isinstance(n, ast.ClassDef)]
    for scope in scopes:  # module and class bodies: constants and field defaults, not function defaults
        for stmt in scope.body:
            value = stmt.value if isinstance(stmt, (ast.Assign, ast.AnnAssign)) else None
            if value is not None and _word(value):
                found.add(stmt.lineno)
    return sorted(found)


def _sources() -> list[Path]:
    return sorted(p for top in SOURCE if (REPO / top).is_dir() for p in (REPO / top).rglob("*.py"))


def test_the_radius_vocabulary_is_defined_once():
    where = {p.relative_to(REPO).as_posix(): definitions(p.read_text(encoding="utf-8")) for p in _sources()}
    assert where[HOME], "the walker no longer sees the definition in fairness/radius.py"
    elsewhere = {path: lines for path, lines in where.items() if lines and path != HOME}
    assert not elsewhere, f"radius modes defined outside {HOME} (import fairness.radius instead): {elsewhere}"


@pytest.mark.parametrize("planted", [
    'RADIUS_MODES = ("fast", "exact")',
    'CHOICES = ["hybrid", "exact", "bound", "fast"]',
    'from typing import Literal\nKind = Literal["fast", "exact", "bound"]',
    'import typing\ndef f(kind: typing.Literal["bound"]) -> None: ...',
    'HYBRID = "hybrid"',
    'HYBRID, EXACT = "hybrid", "exact"',
    'class Settings:\n    radius: str = "fast"',
    'for mode in {"fast", "exact"}: pass',
])
def test_a_second_definition_is_found(planted):
    last = 2 + planted.count("\n")  # the planted definition is its last line
    assert definitions(f"import os\n{planted}\n") == [last]


@pytest.mark.parametrize("use", [
    'if radius == "exact": pass',
    'certify(q, radius="bound")',
    'def f(radius: str = "fast") -> None: ...',
    'kinds = ("cap", "exact")',  # one mode word beside other words
    'labels = {"fast": 1, "exact": 2}',
])
def test_uses_are_no_definitions(use):
    assert definitions(use) == []


def test_the_modes_spell_as_their_words():
    assert RADIUS_MODES == ("hybrid", "exact", "bound", "fast") and [str(m) for m in Radius] == list(RADIUS_MODES)
    assert f"k4-f4-{Radius.EXACT}" == "k4-f4-exact" and "hybrid" not in PROVED_RADII
    assert set(REGION_RADII) < set(PROVED_RADII) < set(RADIUS_MODES)
    assert parse_radius("bound") is Radius.BOUND
    with pytest.raises(ValueError, match="the modes are fast, exact, bound"):
        parse_radius("hybrid", PROVED_RADII)
    with pytest.raises(ValueError, match="'Exact' is not a radius mode"):
        parse_radius("Exact")
