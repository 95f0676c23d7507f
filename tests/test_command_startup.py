"""What the short commands import: `fairproof --help` builds every command's parser, and
`fairproof groth16 prove` runs, without the modules they do not need (measured with
`python -X importtime`: pydantic alone costs `--help` more than everything else; the phase-1 and
phase-2 machinery, the .zkey and .ptau readers are not the prover's)."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def _modules_after(code: str) -> set[str]:
    done = subprocess.run([sys.executable, "-c", code + "\nimport sys, json\nprint(json.dumps(sorted(sys.modules)))"],
                          capture_output=True, text=True, cwd=REPO, timeout=120)
    assert done.returncode == 0, done.stderr
    return set(json.loads(done.stdout.strip().splitlines()[-1]))


def test_help_builds_every_parser_without_pydantic_or_numpy():
    loaded = _modules_after("from prover_service.cli import build_parser\nbuild_parser().format_help()")
    assert "prover_service.commands.groth16" in loaded and "prover_service.commands.certify" in loaded
    assert not {"pydantic", "numpy", "prover_service.outputs"} & loaded
    # twin: the check sees such an import when there is one
    assert "pydantic" in _modules_after("import prover_service.outputs")


def test_groth16_prove_loads_only_the_prover(tmp_path):
    from circuits.snarkjs import write_r1cs, write_wtns
    from groth16_circuits import cubic, cubic_witness
    from prover_service.cli import main as fairproof

    write_r1cs(tmp_path / "c.r1cs", cubic())
    write_wtns(tmp_path / "w.wtns", cubic_witness(3))
    assert fairproof(["groth16", "setup", str(tmp_path / "c.r1cs"), str(tmp_path / "keys"), "--seed", "startup"]) == 0
    run = (f"from prover_service.cli import main\n"
           f"assert main(['groth16', 'prove', {str(tmp_path / 'keys')!r}, {str(tmp_path / 'w.wtns')!r}, "
           f"{str(tmp_path / 'out')!r}]) == 0")
    loaded = _modules_after(run)
    assert (tmp_path / "out" / "proof.json").is_file()
    not_the_provers = {"circuits.groth16.phase1", "circuits.groth16.phase2", "circuits.snarkjs.zkey",
                       "circuits.snarkjs.zkey_file", "circuits.snarkjs.ptau", "circuits.snarkjs.r1cs",
                       "pydantic", "py_ecc"}
    assert not not_the_provers & loaded, not_the_provers & loaded
    # twin: setup needs them, and the same check sees them
    setup = (f"from prover_service.cli import main\n"
             f"assert main(['groth16', 'setup', {str(tmp_path / 'c.r1cs')!r}, {str(tmp_path / 'keys2')!r}, "
             f"'--seed', 'startup']) == 0")
    assert "circuits.snarkjs.r1cs" in _modules_after(setup)
