"""An installed (non-editable) package must carry every file it reads at run time.

Setuptools ships only Python modules inside packages (directories with an
__init__.py); anything else, and modules in plain directories such as the
Alembic migrations, must be listed as package data. This walks the packages
and checks that every such file is matched by a package-data pattern.
"""
from __future__ import annotations

import fnmatch
import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SKIP_DIRS = {"__pycache__"}


def _package_data() -> dict[str, list[str]]:
    config = tomllib.loads((REPO / "pyproject.toml").read_text())
    return config["tool"]["setuptools"].get("package-data", {})


def _shipped_without_help(package_dir: Path, relative: str) -> bool:
    """True when setuptools packs the file anyway: a module directly inside a package."""
    return relative.endswith(".py") and (package_dir / relative).parent.joinpath("__init__.py").is_file()


def _needs_listing() -> list[tuple[str, str]]:
    roots = [p for p in REPO.iterdir() if (p / "__init__.py").is_file()]
    needed = []
    for root in roots:
        for path in root.rglob("*"):
            if not path.is_file() or SKIP_DIRS & set(path.parts) or path.suffix in (".pyc",):
                continue
            package_dir = next(d for d in [path.parent, *path.parents] if (d / "__init__.py").is_file())
            package = ".".join(package_dir.relative_to(REPO).parts)
            relative = path.relative_to(package_dir).as_posix()
            if not _shipped_without_help(package_dir, relative):
                needed.append((package, relative))
    return needed


def test_every_runtime_file_outside_python_packages_is_package_data():
    patterns = _package_data()
    missing = [f"{package}: {relative}" for package, relative in _needs_listing()
               if not any(fnmatch.fnmatch(relative, pattern) for pattern in patterns.get(package, []))]
    assert not missing, "not shipped in an installed package: " + ", ".join(missing)


def test_the_check_sees_the_migrations_and_the_native_source():
    needed = set(_needs_listing())
    assert ("prover_service.service", "migrations/versions/0001_initial.py") in needed
    assert ("circuits.backends.native", "ntt.c") in needed


def _top_level_packages() -> list[str]:
    return sorted(p.name for p in REPO.iterdir() if (p / "__init__.py").is_file())


def test_every_top_level_package_is_installed_and_in_the_image():
    include = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"]["find"]["include"]
    dockerfile = (REPO / "Dockerfile").read_text().splitlines()
    packages = _top_level_packages()
    assert {"audits", "fairness", "prover_service"} <= set(packages)
    assert [p for p in packages if not any(fnmatch.fnmatch(p, pattern) for pattern in include)] == []
    assert [p for p in packages if f"COPY {p} {p}" not in dockerfile] == []
