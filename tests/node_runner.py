"""Running a JavaScript program of the verification page in node: JSON in on stdin, JSON out on stdout."""
from __future__ import annotations

import json
import shutil
import subprocess
from typing import Any

import pytest


def run_node(program: str, payload: Any, *args: str, timeout: float = 600) -> Any:
    """`node -e program args...` fed `payload` as JSON; its stdout parsed as JSON (skips without node)."""
    if shutil.which("node") is None:
        pytest.skip("node is not installed")
    done = subprocess.run(["node", "-e", program, *args], input=json.dumps(payload), capture_output=True, text=True,
                          timeout=timeout)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)
