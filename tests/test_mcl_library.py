"""The mcl library loaded from a per-wheel cache: written once, then loaded without importing the wheel.

Each case runs in a fresh process (a process loads mcl once), with its own cache directory.
"""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("mclbn256")

PROBE = (
    "import sys\n"
    "from circuits.backends import get_backend\n"
    "b = get_backend('mcl')\n"
    "g = b.g1_generator()\n"
    "assert b.g1_add(g, g) == b.g1_mul(g, 2)\n"  # the self-check ran too: the library is alt_bn128 mcl
    "print('wheel imported' if 'mclbn256.mclbn256' in sys.modules else 'from cache')\n"
)


def _probe(cache: Path) -> str:
    env = {**os.environ, "FAIRPROOF_NATIVE_DIR": str(cache)}
    run = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, env=env, timeout=120)
    assert run.returncode == 0, run.stderr
    return run.stdout.strip()


def _directory(cache: Path) -> Path:
    found = list(cache.glob("mclbn256-*"))
    assert len(found) == 1, found
    return found[0]


def test_the_first_process_caches_the_library_and_the_next_loads_it_without_the_wheel(tmp_path):
    assert _probe(tmp_path) == "wheel imported"
    directory = _directory(tmp_path)
    assert sorted(p.relative_to(directory).as_posix() for p in directory.rglob("*") if p.is_file()) == [
        "lib/libmcl.so", "libmclbn256.so", "ready"]
    assert not list(directory.rglob("*.tmp"))
    assert _probe(tmp_path) == "from cache"


def test_a_cache_without_its_ready_marker_is_not_loaded_and_is_rewritten(tmp_path):
    _probe(tmp_path)
    directory = _directory(tmp_path)
    (directory / "ready").unlink()
    (directory / "libmclbn256.so").write_bytes(b"partial")
    assert _probe(tmp_path) == "wheel imported"
    assert (directory / "ready").is_file() and (directory / "libmclbn256.so").stat().st_size > 1 << 20
    assert _probe(tmp_path) == "from cache"


def test_a_damaged_library_falls_back_to_the_wheel(tmp_path):
    _probe(tmp_path)
    directory = _directory(tmp_path)
    (directory / "libmclbn256.so").write_bytes(b"\x7fELF not a library")
    assert _probe(tmp_path) == "wheel imported"  # and it is rewritten for the next process
    assert _probe(tmp_path) == "from cache"


def test_an_unwritable_cache_still_loads_the_wheel(tmp_path):
    blocked = tmp_path / "blocked"
    blocked.write_text("a file where the cache directory would go")
    assert _probe(blocked) == "wheel imported"
    assert _probe(blocked) == "wheel imported"
