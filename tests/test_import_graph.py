"""Imports run one way: the packages form layers, and no package imports one above it.

Every import statement counts, at module level or inside a function (a lazy
import is still a dependency). The layers, bottom first:

    circuits, transparency   proof machinery and the log, unaware of fairness
    fairness                 the plain arithmetic of the claim (uses only circuits.field)
    statement, audits        the fairness statement: shape, witness, circuit, adapter;
                             the model-wide audits on the plain model (FVGM, Justicia, PBA, HyFair)
    commitments              public artefacts: model card, bundle, log entries
    offline_precompute,      the bank's region store; the customer's verifier
      verifier_client
    prover_service           the bank's service and command line

An import goes to a strictly lower layer (so packages of one layer never
import each other), and the refinements in `RULES` hold at module level.
"""
from __future__ import annotations

import ast
import os
import subprocess
import sys
import textwrap
from collections import defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

LAYERS = (
    ("circuits", "transparency"),
    ("fairness",),
    ("statement", "audits"),
    ("commitments",),
    ("offline_precompute", "verifier_client"),
    ("prover_service",),
)
PACKAGES = tuple(p for layer in LAYERS for p in layer)
RANK = {p: i for i, layer in enumerate(LAYERS) for p in layer}


def _within(module: str, prefix: str) -> bool:
    return module == prefix or module.startswith(prefix + ".")


# (importer, imported, allowed, exempt): a module under `importer`, unless it is
# under one of `exempt`, may import modules under `imported` only if they are
# under one of `allowed` (empty: none at all).
RULES = (
    # gadgets are proof machinery below the builder that offers them (and its operations and output)
    ("circuits.gadgets", "circuits.builder", (), ()),
    ("circuits.gadgets", "circuits.builder_ops", (), ()),
    ("circuits.gadgets", "circuits.builder_output", (), ()),
    # fairness needs the scalar field's size (no-wrap bounds), nothing else of circuits
    ("fairness", "circuits", ("circuits.field",), ()),
    # the statement shares only the cover kinds, the multiplier widths and the
    # radius vocabulary with fairness; the bank-side adapters from certificates
    # (networks: statement.adapter; tree ensembles: the padding, shape and
    # witness of statement.trees) are the modules that read fairness's models
    ("statement", "fairness", ("fairness.covers", "fairness.multipliers", "fairness.radius"),
     ("statement.adapter", "statement.trees.padding", "statement.trees.shape", "statement.trees.witness")),
    # the schema is read by the verifier through the card: pydantic and numpy only, nothing of the model
    ("fairness.schema", "fairness", ("fairness.errors",), ()),
    # the bank reads its CSV through the schema: nothing of fairness beyond the schema and its errors
    ("fairness.schema_csv", "fairness", ("fairness.errors", "fairness.schema"), ()),
    # the customer's verifier: no bank side, no model or training code
    ("verifier_client", "prover_service", (), ()),
    ("verifier_client", "offline_precompute", (), ()),
    ("verifier_client", "statement.adapter", (), ()),
    ("verifier_client", "commitments.publish", (), ()),
    ("verifier_client", "fairness", ("fairness.covers", "fairness.multipliers", "fairness.radius", "fairness.schema"),
     ()),
    # the audits are plaintext reports for the bank and its auditors: nothing public and nothing of the
    # customer's verifier rests on them
    ("commitments", "audits", (), ()),
    ("verifier_client", "audits", (), ()),
)


def _modules() -> dict[str, tuple[Path, bool]]:
    """module name -> (file, is a package's __init__)."""
    out = {}
    for package in PACKAGES:
        for path in sorted((REPO / package).rglob("*.py")):
            parts = path.relative_to(REPO).with_suffix("").parts
            is_init = parts[-1] == "__init__"
            out[".".join(parts[:-1] if is_init else parts)] = (path, is_init)
    return out


MODULES = _modules()


def _imports(module: str, path: Path, is_init: bool) -> set[str]:
    """Every module of our packages that `module` imports, anywhere in its body."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = module.split(".") if is_init else module.split(".")[:-1]
                base = base[:len(base) - (node.level - 1)]
                source = ".".join(base + ([node.module] if node.module else []))
            else:
                source = node.module or ""
            # `from package import name` imports the submodule when `name` is one
            targets = [f"{source}.{a.name}" if f"{source}.{a.name}" in MODULES else source for a in node.names]
        else:
            continue
        found |= {t for t in targets if t.split(".")[0] in PACKAGES and t != module}
    return found


EDGES = {module: _imports(module, path, is_init) for module, (path, is_init) in MODULES.items()}


def _package(module: str) -> str:
    return module.split(".")[0]


def _package_graph() -> dict[str, dict[str, list[str]]]:
    """package -> imported package -> the module edges that make it."""
    graph: dict[str, dict[str, list[str]]] = defaultdict(lambda: defaultdict(list))
    for source, targets in sorted(EDGES.items()):
        for target in sorted(targets):
            if _package(source) != _package(target):
                graph[_package(source)][_package(target)].append(f"{source} -> {target}")
    return graph


def _describe(graph) -> str:
    lines = ["package import graph (layer: package -> imported packages):"]
    for package in PACKAGES:
        lines.append(f"  {RANK[package]}: {package} -> {', '.join(sorted(graph.get(package, {}))) or '-'}")
    return "\n".join(lines)


def _cycles(nodes: set[str], edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one node (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(edges.get(v, ())):
            if w not in nodes:
                continue
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(nodes):
        if v not in index:
            visit(v)
    return found


def test_every_package_is_scanned():
    assert set(_package(m) for m in MODULES) == set(PACKAGES)
    assert "statement.adapter" in MODULES and "circuits.lc" in MODULES and "fairness.covers" in MODULES
    assert "audits.global_search" in MODULES and "fairness.global_search" not in MODULES


def test_no_package_imports_a_package_above_it():
    graph = _package_graph()
    upward = [f"{source} -> {target} (layer {RANK[source]} -> {RANK[target]}): {', '.join(made)}"
              for source, targets in graph.items() for target, made in targets.items()
              if RANK[target] >= RANK[source]]
    assert not upward, _describe(graph) + "\nedges not going down a layer:\n  " + "\n  ".join(upward)


def test_module_rules():
    broken = []
    for importer, imported, allowed, exempt in RULES:
        for source, targets in EDGES.items():
            if not _within(source, importer) or any(_within(source, e) for e in exempt):
                continue
            for target in targets:
                if _within(target, imported) and not any(_within(target, a) for a in allowed):
                    broken.append(f"{source} -> {target} (rule: of {imported}, {importer} may import "
                                  f"{', '.join(allowed) or 'nothing'})")
    assert not broken, _describe(_package_graph()) + "\nbroken rules:\n  " + "\n  ".join(sorted(broken))


def test_no_cycles_among_packages():
    graph = _package_graph()
    edges = {source: set(targets) for source, targets in graph.items()}
    cycles = _cycles(set(PACKAGES), edges)
    assert not cycles, _describe(graph) + f"\ncycles: {cycles}"


def test_no_cycles_among_the_modules_of_circuits_and_statement():
    for package in ("circuits", "statement"):
        nodes = {m for m in MODULES if _package(m) == package}
        cycles = _cycles(nodes, EDGES)
        assert not cycles, f"{package} module cycles: {cycles}\n" + "\n".join(
            f"  {m} -> {', '.join(sorted(t for t in EDGES[m] if t in nodes))}" for c in cycles for m in c)


def test_the_verifier_loads_neither_torch_nor_scipy():
    script = textwrap.dedent("""
        import sys
        import verifier_client.cli, verifier_client.verify
        print(sorted(m for m in sys.modules if m.split(".")[0] in ("torch", "scipy")))
    """)
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=REPO, env=env,
                          timeout=120)
    assert done.returncode == 0 and done.stdout.strip() == "[]", done.stdout + done.stderr
