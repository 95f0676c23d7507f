"""The image's filesystem, built with the Dockerfile's steps, proves as a non-root user with native kernels.

No container engine runs on these machines (the Docker client is installed, no daemon; the base image
registry is not reachable), so this test repeats the Dockerfile's steps in a fresh virtual environment:
install the locked dependencies with their hashes, install the project without resolving, compile the
native kernels with FAIRPROOF_NATIVE_NTT=required, then, as an unprivileged user with no compiler on
its PATH, set up a key, prove and verify with `fairproof groth16`. Slow (a fresh install): run with
`-m slow`.
"""
from __future__ import annotations

import os
import subprocess
import tempfile
from pathlib import Path

import pytest

from circuits.snarkjs import write_r1cs
from circuits.snarkjs.wtns import write_wtns
from groth16_circuits import random_system

REPO = Path(__file__).resolve().parents[1]
UNPRIVILEGED = 10001

pytestmark = pytest.mark.slow


def _run(cmd, env, *, user: int | None = None, timeout: float = 1800) -> subprocess.CompletedProcess:
    def drop():
        os.setgid(user)
        os.setuid(user)

    done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout,
                          preexec_fn=drop if user is not None else None)
    assert done.returncode == 0, (cmd, done.stdout[-2000:], done.stderr[-4000:])
    return done


# A system Python 3.11 that an unprivileged user can run (the image's is /usr/local/bin/python3.11).
SYSTEM_PYTHON = next((p for p in ("/usr/local/bin/python3.11", "/usr/bin/python3.11") if os.access(p, os.X_OK)), None)


@pytest.mark.skipif(os.geteuid() != 0, reason="dropping to an unprivileged user needs root")
@pytest.mark.skipif(SYSTEM_PYTHON is None, reason="no system-wide Python 3.11 for an unprivileged user")
def test_the_image_filesystem_proves_as_a_non_root_user_with_native_kernels():
    root = Path(tempfile.mkdtemp(prefix="fairproof-image-"))
    root.chmod(0o755)
    venv = root / "venv"
    base = {k: v for k, v in os.environ.items() if not k.startswith(("FAIRPROOF_", "PYTHON", "VIRTUAL_ENV"))}
    _run([SYSTEM_PYTHON, "-m", "venv", str(venv)], base)
    pip = [str(venv / "bin" / "python"), "-m", "pip", "install", "--no-cache-dir", "--quiet"]
    _run([*pip, "--require-hashes", "-r", str(REPO / "requirements" / "prover.lock.txt")], base)
    _run([*pip, "--no-deps", str(REPO)], base)
    native = {**base, "FAIRPROOF_NATIVE_DIR": str(root / "native"), "FAIRPROOF_NATIVE_NTT": "required"}
    _run([str(venv / "bin" / "python"), "-c", "from circuits.backends.native.kernels import load; load()"], native)

    r1cs, witness = random_system(3000, 2, seed=7)
    work = root / "work"
    work.mkdir()
    write_r1cs(work / "c.r1cs", r1cs)
    write_wtns(work / "c.wtns", witness)
    for path in (root, root / "native", work, *work.iterdir(), *(root / "native").iterdir()):
        path.chmod(0o777 if path == work else 0o755 if path.is_dir() else 0o644)
    home = root / "home"
    home.mkdir(mode=0o777)
    home.chmod(0o777)
    runtime = {**native, "HOME": str(home), "CC": "/nonexistent/gcc", "PATH": f"{venv / 'bin'}:/usr/bin:/bin",
               "TMPDIR": "/tmp"}
    check = ("import os; from circuits.backends.native.kernels import load; "
             "assert os.geteuid() != 0; assert load() is not None; print('native kernels loaded as', os.geteuid())")
    said = _run([str(venv / "bin" / "python"), "-c", check], runtime, user=UNPRIVILEGED)
    assert f"native kernels loaded as {UNPRIVILEGED}" in said.stdout
    fairproof = str(venv / "bin" / "fairproof")
    _run([fairproof, "groth16", "setup", str(work / "c.r1cs"), str(work / "keys"), "--seed", "image-test"], runtime,
         user=UNPRIVILEGED)
    _run([fairproof, "groth16", "prove", str(work / "keys"), str(work / "c.wtns"), str(work / "out")], runtime,
         user=UNPRIVILEGED)
    _run([fairproof, "groth16", "verify", str(work / "keys" / "verification_key.json"), str(work / "out" / "proof.json"),
          str(work / "out" / "public.json")], runtime, user=UNPRIVILEGED)
    # Rejection twin: a changed public input is refused by the same installation.
    public = (work / "out" / "public.json").read_text()
    (work / "out" / "public.json").write_text(public.replace('"', '"1', 1))
    refused = subprocess.run([fairproof, "groth16", "verify", str(work / "keys" / "verification_key.json"),
                              str(work / "out" / "proof.json"), str(work / "out" / "public.json")],
                             env=runtime, capture_output=True, text=True, timeout=600)
    assert refused.returncode != 0
