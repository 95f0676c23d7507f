"""Compile native/*.c into a shared library cached per source and compiler.

The library lands in $FAIRPROOF_NATIVE_DIR or ~/.cache/fairproof/native under
<sha256 of source, compiler version and flags>.so, so an edited source or a
new compiler gets a new file and a stale one is never loaded. It is written
to a temporary file in the same directory and renamed into place
(os.replace is atomic), so concurrent processes never see a partial library.
Any failure (no compiler, compile error, unwritable cache) returns None; the
caller falls back to numpy.
"""
from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
# x86-64-v2, not -march=native: a cache directory may be shared by machines with different CPUs
FLAGS = ("-O3", "-march=x86-64-v2", "-shared", "-fPIC")
COMPILE_TIMEOUT_S = 120


class NativeBuildError(RuntimeError):
    pass


def cache_dir() -> Path:
    configured = os.environ.get("FAIRPROOF_NATIVE_DIR")
    if configured:
        return Path(configured)
    return Path.home() / ".cache" / "fairproof" / "native"


def _compiler() -> str:
    cc = os.environ.get("CC") or "gcc"
    found = shutil.which(cc)
    if found is None:
        raise NativeBuildError(f"C compiler {cc!r} not found")
    return found


def _compiler_version(cc: str) -> str:
    try:
        out = subprocess.run([cc, "--version"], capture_output=True, text=True, timeout=30, check=True)
    except (OSError, subprocess.SubprocessError) as exc:
        raise NativeBuildError(f"{cc} --version failed: {exc}") from None
    return out.stdout


def library_path(source_name: str, cc: str) -> Path:
    source = (HERE / source_name).read_bytes()
    digest = hashlib.sha256()
    for part in (source, _compiler_version(cc).encode(), " ".join(FLAGS).encode()):
        digest.update(hashlib.sha256(part).digest())
    return cache_dir() / f"{Path(source_name).stem}-{digest.hexdigest()}.so"


def build(source_name: str) -> Path:
    """Path of the compiled library for native/<source_name>, compiling it if absent."""
    cc = _compiler()
    target = library_path(source_name, cc)
    if target.exists():
        return target
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(suffix=".so.tmp", dir=target.parent)
        os.close(fd)
    except OSError as exc:
        raise NativeBuildError(f"cannot write to {target.parent}: {exc}") from None
    try:
        cmd = [cc, *FLAGS, "-o", tmp, str(HERE / source_name)]
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=COMPILE_TIMEOUT_S)
        except (OSError, subprocess.SubprocessError) as exc:
            raise NativeBuildError(f"{' '.join(cmd)} failed: {exc}") from None
        if proc.returncode != 0:
            raise NativeBuildError(f"{' '.join(cmd)} failed:\n{proc.stderr.strip()}")
        os.replace(tmp, target)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return target
