"""Sizes a reader can hold in their head: no source file over 600 lines outside the tests, and no function over
80 lines where the statement, the service and the commands are written."""
from __future__ import annotations

import ast
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
MAX_FILE_LINES = 600
MAX_FUNCTION_LINES = 80
SOURCE_SUFFIXES = (".py", ".c", ".h", ".js", ".sol", ".sh")
FUNCTION_ROOTS = ("statement", "prover_service/service", "prover_service/commands")


def _tracked(*roots: str) -> list[Path]:
    out = subprocess.run(["git", "ls-files", *roots], cwd=REPO, capture_output=True, text=True, check=True).stdout
    return [REPO / line for line in out.splitlines() if line]


def long_files(paths: list[Path], limit: int = MAX_FILE_LINES) -> list[str]:
    """'path: n lines' for every source file over `limit` lines."""
    found = []
    for path in paths:
        if path.suffix in SOURCE_SUFFIXES and path.is_file():
            n = len(path.read_text(errors="replace").splitlines())
            if n > limit:
                found.append(f"{path.relative_to(REPO) if path.is_relative_to(REPO) else path}: {n} lines")
    return found


def long_functions(path: Path, limit: int = MAX_FUNCTION_LINES) -> list[str]:
    """'path:line name (n lines)' for every function or method of a Python file over `limit` lines."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            n = node.end_lineno - node.lineno + 1
            if n > limit:
                found.append(f"{path.name}:{node.lineno} {node.name} ({n} lines)")
    return found


def test_no_source_file_is_over_600_lines_outside_the_tests():
    files = [p for p in _tracked() if not p.relative_to(REPO).parts[0] == "tests"]
    assert len(files) > 100  # the check reads the repository, not nothing
    assert long_files(files) == []


def test_a_long_file_is_reported(tmp_path):
    short, long = tmp_path / "short.py", tmp_path / "long.c"
    short.write_text("x = 1\n" * MAX_FILE_LINES)
    long.write_text("int x;\n" * (MAX_FILE_LINES + 1))
    assert long_files([short, long]) == [f"{long}: {MAX_FILE_LINES + 1} lines"]


def test_no_function_is_over_80_lines_in_the_statement_service_and_commands():
    files = [p for p in _tracked(*FUNCTION_ROOTS) if p.suffix == ".py"]
    assert len(files) > 30
    assert [f for p in files for f in long_functions(p)] == []


def test_a_long_function_is_reported(tmp_path):
    source = tmp_path / "m.py"
    body = "".join(f"        x{i} = {i}\n" for i in range(MAX_FUNCTION_LINES))
    source.write_text(f"def fits():\n    pass\n\n\nclass C:\n    def too_long(self):\n{body}")
    assert long_functions(source) == [f"m.py:6 too_long ({MAX_FUNCTION_LINES + 1} lines)"]
