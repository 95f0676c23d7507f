"""The guides' shell sessions, run as a reader would run them.

docs/guides/*.md show commands in fenced ```console blocks: a line `$ COMMAND` (continued on the next
line after a trailing backslash) is a command, and the lines under it, up to the next command, are output
it must print (each a substring of its stdout and stderr). Each guide's commands run in order, in one
workspace, each in its own bash that starts with the variables exported and the directory left by the
commands before it; each must exit 0. Blocks fenced ```console slow take minutes of proving or a running
service: they run only in the slow tier, with the rest of their guide, in order. Any other shell fence is
refused, so a command shown in a guide is a command some test runs.

The bank's guide runs in a directory holding the bank's own files (a scikit-learn pipeline, its facts and
its scored rows, built from German Credit rows); the auditor's and the operator's guides run on a copy of
the directory the bank's guide left; the customer's guide runs on an honest certificate of the conformance
corpus.
"""
from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
GUIDES = REPO / "docs" / "guides"
VECTORS = REPO / "tests" / "vectors" / "v1"
CUSTOMER_VECTOR = "v1-044"  # an honest certificate with the customer's record, on a card an auditor attested
FENCES = {"console": False, "console slow": True}  # the console fences, and whether they are slow
OTHER_FENCES = {"", "yaml", "json", "text"}  # fences that hold no command
TIMEOUT = {False: 600, True: 3600}  # seconds per command


class GuideError(Exception):
    """A guide's console blocks cannot be read."""


class GuideFailure(AssertionError):
    """A guide's command failed or did not print what the guide shows."""


@dataclass(frozen=True)
class Command:
    guide: str
    line: int  # 1-based line of the `$ ` in the guide
    text: str
    expected: tuple[str, ...]
    slow: bool


# ------------------------------------------------------------------ reading a guide
def extract(text: str, guide: str = "guide") -> list[Command]:
    """Every command of the guide's console blocks, in order."""
    commands: list[Command] = []
    current: dict | None = None
    fence: str | None = None
    continued = False

    def close() -> None:
        nonlocal current
        if current is not None:
            commands.append(Command(guide, current["line"], current["text"], tuple(current["expected"]),
                                    FENCES[fence]))
            current = None

    for number, line in enumerate(text.splitlines(), 1):
        stripped = line.strip()
        if stripped.startswith("```"):
            if fence is None:
                fence = stripped[3:].strip()
                if fence not in FENCES and fence not in OTHER_FENCES:
                    raise GuideError(f"{guide}:{number}: a ```{fence} block: commands go in ```console blocks, "
                                     f"which the tests run")
                continue
            if stripped == "```":
                if continued:
                    raise GuideError(f"{guide}:{number}: the block ends inside a continued command")
                if fence in FENCES:
                    close()
                fence = None
                continue
        if fence not in FENCES:
            continue
        if continued:
            current["text"] += "\n" + line
            continued = line.endswith("\\")
        elif line.startswith("$ "):
            close()
            current = {"line": number, "text": line[2:], "expected": []}
            continued = line.endswith("\\")
        elif stripped:
            if current is None:
                raise GuideError(f"{guide}:{number}: output before any command in a console block")
            current["expected"].append(stripped)
    if fence is not None:
        raise GuideError(f"{guide}: a fenced block is never closed")
    return commands


def guide_commands(name: str, *, slow: bool) -> list[Command]:
    """The guide's commands: the default tier's, or (slow) every one."""
    commands = extract((GUIDES / name).read_text(), name)
    return [c for c in commands if slow or not c.slow]


# ------------------------------------------------------------------ running commands
class Shell:
    """Runs commands one by one in `workdir`; variables exported and the directory changed carry over."""

    def __init__(self, workdir: Path, env: dict[str, str], state: Path):
        self.workdir, self.env, self.state = workdir, env, state
        state.mkdir(parents=True, exist_ok=True)
        (state / "cwd").write_text(str(workdir))
        self.groups: list[int] = []  # process groups started, ended by close()
        self.count = 0

    def run(self, text: str, timeout: float) -> tuple[int, str]:
        self.count += 1
        out = self.state / f"out-{self.count}.txt"
        exports, cwd = self.state / "exports.sh", self.state / "cwd"
        script = (f'[ -f "{exports}" ] && source "{exports}"\ncd "$(cat "{cwd}")" || exit 97\n{text}\n'
                  f'__status=$?\nexport -p > "{exports}"\npwd > "{cwd}"\nexit $__status\n')
        with open(out, "wb") as sink:
            process = subprocess.Popen(["bash", "-c", script], cwd=self.workdir, env=self.env, stdin=subprocess.DEVNULL,
                                       stdout=sink, stderr=subprocess.STDOUT, start_new_session=True)
            self.groups.append(process.pid)
            try:
                status = process.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()
                status = -1
        return status, out.read_text(errors="replace")

    def close(self) -> None:
        """End what the commands left running (a service started in the background)."""
        alive = []
        for group in self.groups:
            try:
                os.killpg(group, signal.SIGTERM)
                alive.append(group)
            except ProcessLookupError:
                pass
        deadline = time.monotonic() + 40
        for group in alive:
            while time.monotonic() < deadline and _group_alive(group):
                time.sleep(0.2)
            if _group_alive(group):
                os.killpg(group, signal.SIGKILL)


def _group_alive(group: int) -> bool:
    try:
        os.killpg(group, 0)
    except ProcessLookupError:
        return False
    return True


def guide_env(state: Path) -> dict[str, str]:
    """The reader's environment: this checkout's commands first, its datasets, a pin file of its own."""
    from fairness.datasets import resolve_data_dir

    keep = {"FAIRPROOF_BACKEND", "FAIRPROOF_NATIVE_DIR", "FAIRPROOF_NATIVE_NTT"}
    env = {k: v for k, v in os.environ.items() if not k.startswith("FAIRPROOF_") or k in keep}
    tools = [str(Path(sys.executable).parent), str(REPO / "node_modules" / ".bin")]
    env["PATH"] = os.pathsep.join(tools + [env.get("PATH", "")])
    env["FAIRPROOF_DATA_DIR"] = str(resolve_data_dir().resolve())
    env["FAIRPROOF_PIN_FILE"] = str(state / "pins.json")
    return env


def run_commands(commands: list[Command], workdir: Path, state: Path) -> list[str]:
    """Run the commands in order; raise GuideFailure at the first that fails. Returns their outputs."""
    shell = Shell(workdir, guide_env(state), state)
    outputs = []
    try:
        for command in commands:
            status, output = shell.run(command.text, TIMEOUT[command.slow])
            where = f"{command.guide}:{command.line}: `{command.text}`"
            if status != 0:
                raise GuideFailure(f"{where} exited {status}:\n{output[-3000:]}")
            missing = [e for e in command.expected if e not in output]
            if missing:
                raise GuideFailure(f"{where} did not print {missing}:\n{output[-3000:]}")
            outputs.append(output)
    finally:
        shell.close()
    return outputs


# ------------------------------------------------------------------ workspaces
def prepare_bank(workdir: Path) -> None:
    """The bank's own files: a fitted scikit-learn pipeline, its facts, the rows it scored, one customer's record."""
    import joblib

    from bank_pipelines import GERMAN, _yaml, fit_pipeline, frame, german_rows, labels, write_csv
    from fairness.datasets import load_dataset

    workdir.mkdir(parents=True, exist_ok=True)
    rows = german_rows()
    pipeline = fit_pipeline(GERMAN, frame(GERMAN, rows), labels(GERMAN, rows))
    joblib.dump(pipeline, workdir / "pipeline.joblib")
    write_csv(workdir / "scored.csv", rows, [str(v) for v in pipeline.predict(frame(GERMAN, rows))])
    (workdir / "facts.yaml").write_text(_yaml(GERMAN.facts))
    record = load_dataset("german").records_test[0]
    (workdir / "customer.json").write_text(json.dumps(dict(record)))
    # a second bank model: a Pipeline ending in XGBoost, its facts and the rows it scored (decisions 0 / 1)
    from tree_bank import FACTS, fitted_pipeline

    trees, _ = fitted_pipeline("xgboost")
    joblib.dump(trees, workdir / "trees.joblib")
    scored = german_rows(300)
    write_csv(workdir / "trees.csv", scored, [str(int(v)) for v in trees.predict(frame(GERMAN, scored))])
    (workdir / "trees.yaml").write_text(_yaml({
        "name": FACTS.name, "label_column": "decision", "sensitive": list(FACTS.sensitive),
        "domains": {k: list(v) for k, v in FACTS.domains.items()}, "units": dict(FACTS.units),
        "value_labels": {k: dict(v) for k, v in FACTS.value_labels.items()}}))


def prepare_customer(workdir: Path) -> None:
    """What a customer holds: the card, the bundle, their record, and an auditor's attestation and key."""
    workdir.mkdir(parents=True, exist_ok=True)
    with open(VECTORS / "vectors.jsonl") as lines:
        vector = next(v for v in map(json.loads, lines) if v["id"] == CUSTOMER_VECTOR)
    assert vector["expected"]["verdict"] == "VALID"
    options = vector["options"]
    (workdir / "bundle.json").write_text(vector["bundle"])
    shutil.copyfile(VECTORS / vector["card"], workdir / "card.json")
    (workdir / "customer.json").write_text(options["record"])
    (workdir / "attestation.json").write_text(options["attestations"][0])
    (workdir / "auditor.vkey").write_text(options["trusted_auditors"][0] + "\n")


def needs_snarkjs() -> None:
    if not (REPO / "node_modules" / ".bin" / "snarkjs").exists():
        pytest.skip("snarkjs is not installed (node_modules, scripts/setup.sh)")


@pytest.fixture(scope="module")
def bank_workspace(tmp_path_factory):
    """The directory the bank's guide leaves, its default-tier commands run once for this module."""
    root = tmp_path_factory.mktemp("guide-bank")
    prepare_bank(root / "work")
    run_commands(guide_commands("bank.md", slow=False), root / "work", root / "shell")
    return root / "work"


def copy_of(workspace: Path, tmp_path: Path) -> Path:
    return Path(shutil.copytree(workspace, tmp_path / "work", symlinks=True))


# ------------------------------------------------------------------ the guides
GUIDE_NAMES = ("bank.md", "customer.md", "auditor.md", "operations.md")


def test_each_guide_has_commands_the_default_tier_runs():
    assert sorted(p.name for p in GUIDES.glob("*.md")) == sorted(GUIDE_NAMES)
    for name in GUIDE_NAMES:
        commands = guide_commands(name, slow=False)
        assert commands, name
        assert all(c.text.strip() and not c.slow for c in commands), name


def test_the_bank_guide_runs(bank_workspace):
    for model in ("g42", "bank", "trees"):
        card = json.loads((bank_workspace / "models" / model / "card.json").read_text())
        assert card["model_id"] == model
    assert card["architecture"]["kind"] == "tree-ensemble" and (bank_workspace / "trees-bundle.json").is_file()
    assert (bank_workspace / "models" / "bank" / "schema.json").is_file()
    assert json.loads((bank_workspace / "german.json").read_text())


@pytest.mark.snarkjs
def test_the_customer_guide_runs(tmp_path):
    needs_snarkjs()
    prepare_customer(tmp_path / "work")
    run_commands(guide_commands("customer.md", slow=False), tmp_path / "work", tmp_path / "shell")
    assert (tmp_path / "work" / "out" / "proof.json").is_file()
    assert (tmp_path / "work" / "verify.html").stat().st_size > 100_000
    assert (tmp_path / "work" / "sol" / "FairProofRegistry.sol").is_file()


def test_the_auditor_guide_runs(bank_workspace, tmp_path):
    work = copy_of(bank_workspace, tmp_path)
    run_commands(guide_commands("auditor.md", slow=False), work, tmp_path / "shell")
    for name in ("spread.json", "pba.json", "global.json", "audit.json"):
        assert json.loads((work / name).read_text()), name
    assert (work / "auditor.key").stat().st_mode & 0o077 == 0


def test_the_operations_guide_runs(bank_workspace, tmp_path):
    work = copy_of(bank_workspace, tmp_path)
    run_commands(guide_commands("operations.md", slow=False), work, tmp_path / "shell")
    assert (work / "var" / "secrets" / "g42" / "salt").is_file()
    assert not (work / "var" / "models" / "g42" / "secret" / "salt").exists()


@pytest.mark.slow
@pytest.mark.snarkjs
def test_every_guide_runs_whole(tmp_path):
    """Every block, the slow ones too: ceremonies and proofs, the service, audits of keys and groups."""
    needs_snarkjs()
    bank = tmp_path / "bank"
    prepare_bank(bank / "work")
    run_commands(guide_commands("bank.md", slow=True), bank / "work", bank / "shell")
    prepare_customer(tmp_path / "customer" / "work")
    run_commands(guide_commands("customer.md", slow=True), tmp_path / "customer" / "work", tmp_path / "customer" / "shell")
    for name in ("auditor.md", "operations.md"):
        root = tmp_path / name.removesuffix(".md")
        work = Path(shutil.copytree(bank / "work", root / "work", symlinks=True))
        run_commands(guide_commands(name, slow=True), work, root / "shell")


# ------------------------------------------------------------------ the runner itself
SYNTHETIC = """# A guide

```console
$ export GREETING=hello && mkdir -p sub && cd sub
$ echo "$GREETING from $(basename "$PWD")" \\
    && echo second line
hello from sub
second line
```

```yaml
not: run
```

```console slow
$ echo slow
```
"""


def test_the_extractor_reads_commands_output_and_tiers():
    commands = extract(SYNTHETIC, "synthetic.md")
    assert [(c.line, c.slow) for c in commands] == [(4, False), (5, False), (16, True)]
    assert commands[1].text == 'echo "$GREETING from $(basename "$PWD")" \\\n    && echo second line'
    assert commands[1].expected == ("hello from sub", "second line")
    assert commands[0].expected == ()


@pytest.mark.parametrize("text, words", [
    ("```bash\nfairproof --help\n```\n", "```bash block"),
    ("```sh\n$ ls\n```\n", "```sh block"),
    ("```console\nstray output\n$ ls\n```\n", "output before any command"),
    ("```console\n$ ls \\\n```\n", "inside a continued command"),
    ("```console\n$ ls\n", "never closed"),
])
def test_the_extractor_refuses_commands_it_would_not_run(text, words):
    with pytest.raises(GuideError, match=words.replace("`", ".")):
        extract(text, "bad.md")


def test_the_runner_runs_a_guide_in_order(tmp_path):
    (tmp_path / "work").mkdir()
    outputs = run_commands([c for c in extract(SYNTHETIC, "synthetic.md") if not c.slow], tmp_path / "work",
                           tmp_path / "shell")
    assert outputs[1].splitlines() == ["hello from sub", "second line"]


def test_a_guide_with_a_failing_command_fails(tmp_path):
    broken = SYNTHETIC.replace("$ export GREETING=hello", "$ test -d nowhere && export GREETING=hello")
    (tmp_path / "work").mkdir()
    with pytest.raises(GuideFailure, match=r"synthetic.md:4: `test -d nowhere && .*` exited 1"):
        run_commands(extract(broken, "synthetic.md"), tmp_path / "work", tmp_path / "shell")


def test_a_guide_showing_output_the_command_does_not_print_fails(tmp_path):
    wrong = SYNTHETIC.replace("hello from sub", "hello from elsewhere")
    (tmp_path / "work").mkdir()
    with pytest.raises(GuideFailure, match="did not print .'hello from elsewhere'."):
        run_commands(extract(wrong, "synthetic.md"), tmp_path / "work", tmp_path / "shell")


def test_a_command_left_running_is_ended(tmp_path):
    (tmp_path / "work").mkdir()
    guide = "```console\n$ sleep 300 > /dev/null 2>&1 & echo $! > sleeper.pid\n$ kill -0 $(cat sleeper.pid)\n```\n"
    run_commands(extract(guide, "background.md"), tmp_path / "work", tmp_path / "shell")
    status = Path(f"/proc/{int((tmp_path / 'work' / 'sleeper.pid').read_text())}/stat")
    assert not status.exists() or status.read_text().split(") ", 1)[1].startswith("Z")  # gone, or a zombie
