"""Compiling Solidity sources with solc from npm (package.json pins it): ABI and creation bytecode per
contract.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any


REPO_ROOT = Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class CompiledContract:
    abi: list[dict[str, Any]]  # solc's JSON ABI entries
    bytecode: str  # hex, no 0x


class SolidityError(RuntimeError):
    """The Solidity compiler is missing or refused a source."""


_COMPILE = ("const solc = require(process.argv[1]); let input = '';"
            "process.stdin.on('data', d => input += d).on('end', () => process.stdout.write(solc.compile(input)));")


def find_solc_module() -> Path | None:
    """The `solc` npm package (package.json pins it; `npm ci` installs it), or None (also without node)."""
    if shutil.which("node") is None:
        return None
    for candidate in (os.environ.get("FAIRPROOF_SOLC_MODULE"), REPO_ROOT / "node_modules" / "solc"):
        if candidate and (Path(candidate) / "package.json").is_file():
            return Path(candidate)
    return None


def compile_contracts(sources: dict[str, str], timeout: float = 600) -> dict[str, CompiledContract]:
    """Compile Solidity sources (file name -> text) with solc from npm (optimiser on, 200 runs):
    contract name -> ABI and creation bytecode. Raises SolidityError with the compiler's errors."""
    module = find_solc_module()
    if module is None:
        raise SolidityError("the Solidity compiler is not installed: node and `npm ci` in the repository root "
                            "(package.json pins solc)")
    request = {"language": "Solidity", "sources": {name: {"content": text} for name, text in sources.items()},
               "settings": {"optimizer": {"enabled": True, "runs": 200},
                            "outputSelection": {"*": {"*": ["abi", "evm.bytecode.object"]}}}}
    try:
        done = subprocess.run(["node", "-e", _COMPILE, str(module)], input=json.dumps(request), capture_output=True,
                              text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise SolidityError(f"solc took more than {timeout} s") from None
    if done.returncode != 0:
        raise SolidityError(f"solc failed: {done.stderr[-2000:]}")
    output = json.loads(done.stdout)
    errors = [e.get("formattedMessage", e.get("message", "")) for e in output.get("errors", [])
              if e.get("severity") == "error"]
    if errors:
        raise SolidityError("solc refused the source: " + "\n".join(errors)[:4000])
    return {name: CompiledContract(c["abi"], c["evm"]["bytecode"]["object"])
            for unit in output["contracts"].values() for name, c in unit.items()}
