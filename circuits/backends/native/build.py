"""Compile native/*.c into a shared library cached per source and compiler.

The library lands in $FAIRPROOF_NATIVE_DIR or ~/.cache/fairproof/native under
<sha256 of source (with the files it includes from this directory), compiler version
and flags>.so, so an edited source or a new compiler gets a new file and a
stale one is never loaded. It is written to a temporary file in the same directory and renamed into place
(os.replace is atomic), so concurrent processes never see a partial library.
Any failure (no compiler, compile error, unwritable cache) raises
NativeBuildError; the caller decides whether to fall back to numpy.

Each build also records, in <stem>.built, the SHA-256 of the source (and the
flags) and the library built from it. A process loads the recorded library
whenever the source is still the same, without asking the compiler its
version first: starting `cc --version` costs about 10 ms a library, paid by
every short command. So a machine without a compiler (a slim image whose
libraries were built when the image was) loads it too, and a new compiler
is picked up only when the source changes (the library it replaces is
correct code all the same).
"""
from __future__ import annotations

import ctypes
import hashlib
import logging
import os
import re
import shutil
import subprocess
import tempfile
import threading
from pathlib import Path
from typing import Callable

HERE = Path(__file__).resolve().parent
# x86-64-v2, not -march=native: a cache directory may be shared by machines with different CPUs
FLAGS = ("-O3", "-march=x86-64-v2", "-shared", "-fPIC")
COMPILE_TIMEOUT_S = 120


class NativeBuildError(RuntimeError):
    pass


ENV_SWITCH = "FAIRPROOF_NATIVE_NTT"  # "0": no native kernels; "required": a kernel that cannot load is an error


def enabled_by_env() -> bool:
    return os.environ.get(ENV_SWITCH, "1").strip().lower() not in ("0", "false", "no", "off")


def required_by_env() -> bool:
    return os.environ.get(ENV_SWITCH, "").strip().lower() == "required"


class NativeLibrary:
    """One native/<source> library per process, compiled, bound and checked on first use.

    `load()` returns what `bind(ctypes.CDLL)` made of it, or None when native
    kernels are switched off or it cannot be built or bound (logged once on
    `logger`, whose callers then take `fallback`); with ENV_SWITCH=required
    that is an error instead."""

    def __init__(self, source: str, bind: Callable[[ctypes.CDLL], object], what: str, fallback: str,
                 logger: logging.Logger):
        self.source, self.bind, self.what, self.fallback, self.logger = source, bind, what, fallback, logger
        self.loaded: object | None = None
        self.failed = False
        self._lock = threading.Lock()

    def load(self):
        if not enabled_by_env():
            return None
        with self._lock:
            if self.loaded is not None or self.failed:
                return self.loaded
            try:
                value = self.bind(ctypes.CDLL(str(build(self.source))))
            except (NativeBuildError, OSError, AttributeError) as exc:
                if required_by_env():
                    raise NativeBuildError(f"the {self.what} is required ({ENV_SWITCH}=required) but unavailable: "
                                           f"{exc}") from None
                self.failed = True
                self.logger.warning("%s unavailable, %s: %s", self.what, self.fallback, exc)
                return None
            self.loaded = value
            return value


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


_LOCAL_INCLUDE = re.compile(rb'^\s*#\s*include\s+"([^"]+)"', re.MULTILINE)


def source_bytes(source_name: str) -> bytes:
    """The source and, after it, every file of this directory it includes with `#include "..."` (recursively,
    each once): what the library is compiled from, so an edited included file is rebuilt too."""
    seen: list[str] = []

    def visit(name: str) -> None:
        if name in seen:
            return
        seen.append(name)
        for included in _LOCAL_INCLUDE.findall((HERE / name).read_bytes()):
            visit(included.decode())

    visit(source_name)
    return b"".join(len(name).to_bytes(4, "big") + name.encode() + (HERE / name).read_bytes() for name in seen)


def library_path(source_name: str, cc: str) -> Path:
    source = source_bytes(source_name)
    digest = hashlib.sha256()
    for part in (source, _compiler_version(cc).encode(), " ".join(FLAGS).encode()):
        digest.update(hashlib.sha256(part).digest())
    return cache_dir() / f"{Path(source_name).stem}-{digest.hexdigest()}.so"


def _source_digest(source_name: str) -> str:
    digest = hashlib.sha256(source_bytes(source_name))
    digest.update(" ".join(FLAGS).encode())
    return digest.hexdigest()


def _record(source_name: str) -> Path:
    return cache_dir() / f"{Path(source_name).stem}.built"


def prebuilt(source_name: str) -> Path | None:
    """The library recorded for this exact source by an earlier build, if it is still there."""
    try:
        digest, _, name = _record(source_name).read_text().strip().partition(" ")
    except OSError:
        return None
    path = cache_dir() / name
    return path if digest == _source_digest(source_name) and name and path.is_file() else None


def build(source_name: str) -> Path:
    """Path of the compiled library for native/<source_name>: the one recorded for this very source,
    else compiled now."""
    found = prebuilt(source_name)
    if found is not None:
        return found
    cc = _compiler()
    target = library_path(source_name, cc)
    if target.exists():
        _remember(source_name, target)
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
    _remember(source_name, target)
    return target


def _remember(source_name: str, target: Path) -> None:
    try:
        record = _record(source_name)
        tmp = record.with_suffix(".tmp")
        tmp.write_text(f"{_source_digest(source_name)} {target.name}\n")
        os.replace(tmp, record)
    except OSError:
        pass  # only a convenience for machines without a compiler
