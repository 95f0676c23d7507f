"""iden3's rapidsnark (C++ with field assembly) as a peer of the benchmarks: its `prover` built from source.

rapidsnark proves a snarkjs .zkey and .wtns:

    prover circuit.zkey witness.wtns proof.json public.json

`build_prover` compiles that command once per source revision into a cache
directory. The source is a checkout of github.com/iden3/rapidsnark with its
submodules (depends/ffiasm, depends/circom_runtime; depends/json may be
missing: Debian's nlohmann-json3-dev stands in), given as a directory, or
cloned with git (`git clone --recursive`) when the machine can reach GitHub.
The build needs cmake, nasm, g++ and GMP's headers (Debian: cmake, nasm,
g++, libgmp-dev, nlohmann-json3-dev); `missing_packages` names those absent,
so that a run that cannot build it says exactly what to install.
"""
from __future__ import annotations

import hashlib
import os
import platform
import shutil
import subprocess
from pathlib import Path

REPOSITORY = "https://github.com/iden3/rapidsnark"
DEBIAN_PACKAGES = ("cmake", "nasm", "g++", "make", "libgmp-dev", "nlohmann-json3-dev")
SUBMODULE_FILES = ("depends/ffiasm/c/alt_bn128.cpp", "depends/circom_runtime/c")
SYSTEM_JSON = Path("/usr/include/nlohmann/json.hpp")


class RapidsnarkUnavailable(RuntimeError):
    """rapidsnark cannot be built here; the message says what is missing."""


def missing_packages() -> list[str]:
    """The Debian packages of DEBIAN_PACKAGES that dpkg does not list as installed (all of them
    when dpkg itself is missing: then the tools are looked up on PATH instead)."""
    if shutil.which("dpkg-query") is None:
        tools = {"cmake": "cmake", "nasm": "nasm", "g++": "g++", "make": "make"}
        return [package for package, tool in tools.items() if shutil.which(tool) is None]
    missing = []
    for package in DEBIAN_PACKAGES:
        done = subprocess.run(["dpkg-query", "-W", "-f=${Status}", package], capture_output=True, text=True)
        if done.returncode != 0 or "install ok installed" not in done.stdout:
            missing.append(package)
    return missing


def cache_root() -> Path:
    return Path(os.environ.get("FAIRPROOF_BENCH_CACHE", Path.home() / ".cache" / "fairproof" / "bench"))


def fetch_source(source: str | None, log) -> Path:
    """A rapidsnark checkout with its submodules: `source` if it is a directory, else a clone of
    `source` (default: the GitHub repository) under the cache directory."""
    if source and Path(source).is_dir():
        return Path(source)
    url = source or REPOSITORY
    target = cache_root() / ("rapidsnark-" + hashlib.sha256(url.encode()).hexdigest()[:12])
    if not (target / "CMakeLists.txt").is_file():
        if shutil.which("git") is None:
            raise RapidsnarkUnavailable("git is not installed: give --rapidsnark-source DIR (a checkout)")
        log(f"rapidsnark: cloning {url}")
        target.parent.mkdir(parents=True, exist_ok=True)
        done = subprocess.run(["git", "clone", "--recursive", "--depth", "1", "--shallow-submodules", url, str(target)],
                              capture_output=True, text=True)
        if done.returncode != 0:
            shutil.rmtree(target, ignore_errors=True)
            raise RapidsnarkUnavailable(f"git clone {url} failed: {done.stderr.strip()[-500:]}; "
                                        "give --rapidsnark-source DIR (a checkout with its submodules)")
    return target


def _check_source(src: Path) -> None:
    absent = [name for name in SUBMODULE_FILES if not (src / name).exists()]
    if absent:
        raise RapidsnarkUnavailable(f"{src} lacks its submodules ({', '.join(absent)}): "
                                    "`git submodule update --init depends/ffiasm depends/circom_runtime`")
    if not (src / "depends/json/single_include/nlohmann/json.hpp").is_file():
        if not SYSTEM_JSON.is_file():
            raise RapidsnarkUnavailable("nlohmann/json is missing: install nlohmann-json3-dev or the depends/json submodule")
        include = src / "depends/json/single_include"
        include.mkdir(parents=True, exist_ok=True)
        link = include / "nlohmann"
        if not link.exists():
            link.symlink_to(SYSTEM_JSON.parent)


def _revision(src: Path) -> str:
    done = subprocess.run(["git", "-C", str(src), "rev-parse", "HEAD"], capture_output=True, text=True)
    if done.returncode == 0:
        return done.stdout.strip()
    digest = hashlib.sha256()
    for path in sorted((src / "src").glob("*.cpp")):
        digest.update(path.read_bytes())
    return "tree-" + digest.hexdigest()[:16]


def build_prover(source: str | None, log) -> tuple[Path, str]:
    """(path of rapidsnark's `prover`, source revision), built unless already built for that revision."""
    missing = missing_packages()
    if missing:
        raise RapidsnarkUnavailable("missing Debian packages: " + " ".join(missing)
                                    + f" (apt-get install {' '.join(missing)})")
    src = fetch_source(source, log)
    _check_source(src)
    revision = _revision(src)
    build = cache_root() / f"rapidsnark-build-{revision[:16]}"
    prover = build / "src" / "prover"
    if prover.is_file():
        return prover, revision
    arch = "arm64" if platform.machine() in ("aarch64", "arm64") else "x86_64"
    log(f"rapidsnark: building its prover ({revision[:12]}, {arch})")
    steps = [["cmake", "-S", str(src), "-B", str(build), f"-DTARGET_PLATFORM={'aarch64' if arch == 'arm64' else 'x86_64'}",
              "-DCMAKE_BUILD_TYPE=Release"],
             ["cmake", "--build", str(build), "--target", "prover", "-j", str(os.cpu_count() or 2)]]
    for step in steps:
        done = subprocess.run(step, capture_output=True, text=True)
        if done.returncode != 0:
            raise RapidsnarkUnavailable(f"{' '.join(step[:3])} failed: {(done.stdout + done.stderr).strip()[-1500:]}")
    if not prover.is_file():
        raise RapidsnarkUnavailable(f"the build finished without {prover}")
    return prover, revision
