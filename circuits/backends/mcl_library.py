"""The mcl shared library of the `mclbn256` wheel, loaded from a per-wheel cache.

Importing the wheel decodes its libraries from hex strings (about 8 MB of
source), writes them to a temporary directory and loads them: some 70 ms on
every process start, which a short command (`fairproof groth16 prove` on a
small circuit) pays in full. The first process writes the same bytes to
$FAIRPROOF_NATIVE_DIR (default ~/.cache/fairproof/native)/mclbn256-<key>/,
in the wheel's own layout, and later ones load them from there without
importing the wheel. The key names the wheel's module file by path, size and
modification time, so a reinstalled or upgraded wheel gets a directory of
its own. Files are written to temporaries and renamed into place, and a
directory counts only once its `ready` marker exists, so a concurrent or
interrupted writer never leaves a partial library to load. Whatever cannot
be cached (a read-only home, say) falls back to importing the wheel.
"""
from __future__ import annotations

import ctypes
import hashlib
import importlib.util
import os
import tempfile
from pathlib import Path

from .native.build import cache_dir

MCL = Path("lib") / "libmcl.so"
MCLBN256 = Path("libmclbn256.so")
READY = "ready"


def load_wheel_library() -> ctypes.CDLL:
    """libmclbn256 (after its libmcl dependency, as the wheel loads them)."""
    directory = _cache_directory()
    if directory is not None and (directory / READY).is_file():
        try:
            return _load(directory)
        except OSError:
            pass  # unreadable or damaged: the wheel's own loader below, which rewrites the cache
    import mclbn256.mclbn256 as wheel

    if directory is not None:
        try:
            _store(directory, wheel.mcl_bs, wheel.mclbn256_bs)
        except OSError:
            pass  # no cache then: every process imports the wheel
    return wheel.loaded_libraries["libmclbn256"]


def _cache_directory() -> Path | None:
    spec = importlib.util.find_spec("mclbn256")  # finds the package without importing it
    if spec is None or spec.origin is None:
        return None
    module = Path(spec.origin).parent / "mclbn256.py"
    try:
        st = module.stat()
    except OSError:
        return None
    key = hashlib.sha256(f"{module.resolve()}|{st.st_size}|{st.st_mtime_ns}".encode()).hexdigest()[:32]
    return cache_dir() / f"mclbn256-{key}"


def _load(directory: Path) -> ctypes.CDLL:
    if (directory / MCL).is_file():
        ctypes.CDLL(str(directory / MCL))
    return ctypes.CDLL(str(directory / MCLBN256))


def _store(directory: Path, mcl: bytes, mclbn256: bytes) -> None:
    for relative, data in ((MCL, mcl), (MCLBN256, mclbn256)):
        if not data:
            continue
        target = directory / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(suffix=".tmp", dir=target.parent)
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(data)
            os.replace(tmp, target)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
    (directory / READY).write_text("")
