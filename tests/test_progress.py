"""Progress bars: drawn on a terminal (a tmux pane), absent from piped output."""
from __future__ import annotations

import io
import os
import shlex
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from prover_service.progress import StageBar

REPO = Path(__file__).resolve().parents[1]
BAR = "%|"  # tqdm's bar: "proving:  35%|███▌      | building the statement witness"


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_a_bar_is_drawn_on_a_terminal_only():
    tty, pipe = _Terminal(), io.StringIO()
    for stream in (tty, pipe):
        with StageBar("proving", stream=stream) as bar:
            bar.stage("certifying", 0.05)
            bar.stage("proving (1000 constraints)", 0.6)
    assert BAR in tty.getvalue() and "proving (1000 constraints)" in tty.getvalue()
    assert pipe.getvalue() == ""
    counted = _Terminal()
    with StageBar("rows", total=10, stream=counted) as bar:
        bar.update(4)
    assert "40%" in counted.getvalue()


def in_tmux(command: list[str], log: Path, timeout: float = 900) -> str:
    """Run `command` in a detached tmux session (a terminal) and return every byte it drew."""
    if shutil.which("tmux") is None:
        pytest.skip("tmux is not installed")
    session = f"fairproof-{os.getpid()}-{time.monotonic_ns()}"
    done = log.with_suffix(".done")
    script = f"{shlex.join(command)}; echo $? > {shlex.quote(str(done))}"
    subprocess.run(["tmux", "new-session", "-d", "-s", session, "-x", "160", "-y", "50", "bash", "-c",
                    f"sleep 0.5; {script}"], check=True, cwd=REPO)
    try:
        subprocess.run(["tmux", "pipe-pane", "-t", session, "-o", f"cat >> {shlex.quote(str(log))}"], check=True)
        deadline = time.monotonic() + timeout
        while not done.exists():
            if time.monotonic() > deadline:
                raise AssertionError(f"{command[:3]} did not finish in {timeout} s")
            time.sleep(0.5)
    finally:
        subprocess.run(["tmux", "kill-session", "-t", session], capture_output=True)
    assert done.read_text().strip() == "0", log.read_text(errors="replace")[-3000:]
    return log.read_text(errors="replace")


def piped(command: list[str], timeout: float = 900) -> str:
    done = subprocess.run(command, capture_output=True, text=True, timeout=timeout, cwd=REPO)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout + done.stderr


def test_prove_draws_a_bar_in_a_terminal_and_none_when_piped(bank, tmp_path_factory, tmp_path):
    from bank_fixtures import copy_of_bank_model

    root, _, store = copy_of_bank_model(bank, tmp_path_factory, "progress")
    store.dispose()
    command = [sys.executable, "-m", "prover_service.cli", "prove", "--model", str(root), "--index", "0",
               "--radius", "fast", "--out", str(tmp_path / "bundle.json")]  # the bank's card has fast buckets
    drawn = in_tmux(command, tmp_path / "tty.log")
    assert BAR in drawn and "proving:" in drawn
    quiet = piped(command)
    assert BAR not in quiet and "\r" not in quiet and "bundle written" in quiet


@pytest.mark.slow
def test_demo_draws_bars_in_a_terminal_and_none_when_piped(tmp_path):
    """`fairproof demo` end to end: piped first (it trains, commits, precomputes and runs the ceremonies), then
    again in a tmux pane (reusing that work): each customer's proof gets a bar there and nowhere else."""
    command = [sys.executable, "-m", "prover_service.cli", "demo", "--workdir", str(tmp_path / "demo"),
               "--customers", "2"]
    quiet = piped(command, timeout=1800)
    assert BAR not in quiet and "VALID" in quiet
    drawn = in_tmux(command, tmp_path / "tty.log")
    assert "customer 0:" in drawn and BAR in drawn and "VALID" in drawn
