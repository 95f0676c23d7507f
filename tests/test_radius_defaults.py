"""The hybrid radius is the default of every command that certifies or proves, of the demo and of the service;
every command offers all four modes, and `fast` is had only by asking for it."""
from __future__ import annotations

import pytest

from commitments.api import RADIUS_MODES, DecisionRequest
from prover_service.cli import build_parser
from prover_service.commands.radius_option import (DEFAULT_EXACT_BUDGET, DEFAULT_EXACT_MAX_CONSTRAINTS, DEFAULT_RADIUS,
                                                   RADIUS_CHOICES)
from prover_service.commands.serve import settings_from
from prover_service.service.settings import Settings

COMMANDS = {  # every command with --radius, with what else it requires
    "certify": ["certify", "--model", "m", "--index", "0"],
    "prove": ["prove", "--model", "m", "--index", "0", "--out", "o"],
    "precompute": ["precompute", "--model", "m"],
    "demo": ["demo"],
    "serve": ["serve"],
    "worker": ["worker"],
}
SERVICE = ("serve", "worker")  # their default comes from FAIRPROOF_RADIUS, through Settings


def test_the_modes_are_one_list_everywhere():
    assert DEFAULT_RADIUS == "hybrid" and RADIUS_CHOICES == RADIUS_MODES == ("hybrid", "exact", "bound", "fast")
    assert DecisionRequest.model_json_schema()["properties"]["radius"]["enum"] == [*RADIUS_MODES, None]


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_every_command_defaults_to_hybrid_and_offers_every_mode(command):
    parser = build_parser()
    argv = COMMANDS[command]
    args = parser.parse_args(argv)
    if command in SERVICE:
        assert args.radius is None and settings_from(args).radius == "hybrid"
        assert args.exact_budget is None and settings_from(args).exact_budget == DEFAULT_EXACT_BUDGET
    else:
        assert args.radius == "hybrid" and args.exact_budget == DEFAULT_EXACT_BUDGET
    for mode in RADIUS_CHOICES:
        chosen = parser.parse_args([*argv, "--radius", mode])
        assert (settings_from(chosen).radius if command in SERVICE else chosen.radius) == mode
    assert parser.parse_args([*argv, "--exact-budget", "7.5"]).exact_budget == 7.5


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_no_command_takes_a_word_that_is_no_mode(command, capsys):
    parser = build_parser()
    with pytest.raises(SystemExit):
        parser.parse_args([*COMMANDS[command], "--radius", "exactly"])
    assert "invalid choice: 'exactly'" in capsys.readouterr().err


def test_the_service_settings_default_to_hybrid_and_take_every_mode():
    assert Settings().radius == "hybrid" and Settings().exact_budget == 5.0
    for mode in RADIUS_MODES:
        assert Settings.from_env({"FAIRPROOF_RADIUS": mode}).radius == mode
    assert Settings.from_env({"FAIRPROOF_RADIUS": "fast"}).radius == "fast"  # fast: only when asked for
    assert Settings.from_env({"FAIRPROOF_EXACT_BUDGET": "5"}).exact_budget == 5.0
    for bad in ({"FAIRPROOF_RADIUS": "true"}, {"FAIRPROOF_RADIUS": "Hybrid"}, {"FAIRPROOF_EXACT_BUDGET": "0"},
                {"FAIRPROOF_EXACT_BUDGET": "-1"}, {"FAIRPROOF_EXACT_BUDGET": "soon"}):
        with pytest.raises(ValueError):
            Settings.from_env(bad)
    # the command line wins over the environment, as for every other setting
    args = build_parser().parse_args(["serve", "--radius", "fast", "--exact-budget", "2"])
    assert (settings_from(args).radius, settings_from(args).exact_budget) == ("fast", 2.0)


def test_per_slice_still_needs_the_exact_radius():
    assert Settings.from_env({"FAIRPROOF_RADIUS": "exact", "FAIRPROOF_PER_SLICE": "true"}).per_slice
    with pytest.raises(ValueError, match="FAIRPROOF_RADIUS=exact"):
        Settings.from_env({"FAIRPROOF_PER_SLICE": "true"})  # the default, hybrid, is not split


@pytest.mark.parametrize("command", sorted(set(COMMANDS) - set(SERVICE)))
@pytest.mark.parametrize("budget", ["0", "-3", "inf", "nan"])
def test_a_budget_that_is_no_positive_number_of_seconds_is_refused_in_words(command, budget, tmp_path, capsys):
    """Refused before any work (the model directory is not even read): one line, exit status 1."""
    from prover_service.cli import main

    argv = [*COMMANDS[command], "--exact-budget", budget]
    argv = [str(tmp_path / "absent") if a == "m" else a for a in argv]
    if command == "demo":
        argv += ["--workdir", str(tmp_path / "demo")]
    assert main(argv) == 1
    err = capsys.readouterr().err
    assert "--exact-budget must be a positive number of seconds" in err and "Traceback" not in err
    assert not (tmp_path / "demo").exists()


@pytest.mark.parametrize("command", SERVICE)
@pytest.mark.parametrize("budget", ["0", "-3", "inf", "nan"])
def test_the_service_refuses_such_a_budget_at_start(command, budget):
    from prover_service.service.errors import ConfigurationError

    with pytest.raises(ConfigurationError, match="exact_budget"):
        settings_from(build_parser().parse_args([*COMMANDS[command], "--exact-budget", budget]))


# -- keys: a hybrid model needs the buckets of both statements ------------------------------------------------


@pytest.fixture(scope="module")
def committed(tmp_path_factory):
    """A random 20 -> (3, 2) -> 2 network under the German schema, committed and precomputed (no keys)."""
    import numpy as np

    from fairness.datasets import load_dataset
    from fairness.errors import DataError
    from fairness.model import FloatMLP, artifact_from_dataset, save_artifact
    from prover_service.cli import main

    try:
        german = load_dataset("german")
    except (DataError, FileNotFoundError) as exc:  # pragma: no cover - depends on the machine
        pytest.skip(f"German Credit dataset not available: {exc}")
    rng = np.random.default_rng(5)
    sizes = [german.n_features, 3, 2, 2]
    network = FloatMLP([rng.normal(0, 0.6, (sizes[i + 1], sizes[i])) for i in range(3)],
                       [rng.normal(0, 0.3, sizes[i + 1]) for i in range(3)])
    root = tmp_path_factory.mktemp("hybrid-keys") / "model"
    save_artifact(artifact_from_dataset(network, german), root)
    assert main(["commit", "--model", str(root), "--no-spread"]) == 0
    assert main(["precompute", "--model", str(root), "--quiet", "--key-queries", "0"]) == 0
    return root


def _buckets_listed(output: str) -> dict[str, str]:
    """`precompute`'s closing lines: bucket -> what became of its keys."""
    return {line.split()[3].rstrip(":"): line.rsplit(", ", 1)[1] for line in output.splitlines()
            if line.startswith("keys for bucket ")}


def test_precompute_finds_both_statements_buckets_for_a_hybrid_model(committed, capsys):
    from prover_service.cli import main

    capsys.readouterr()
    assert main(["precompute", "--model", str(committed), "--key-queries", "3", "--quiet"]) == 0
    hybrid = _buckets_listed(capsys.readouterr().out)
    assert "k1-f1-bound" in hybrid and any(name.endswith("-exact") for name in hybrid)
    assert set(hybrid.values()) == {"needs a ceremony"}  # no phase-1 file given: nobody may set them up here
    # the twins: the fast radius needs fast buckets only, the bound radius its one bucket
    assert main(["precompute", "--model", str(committed), "--key-queries", "3", "--quiet", "--radius", "fast"]) == 0
    fast = _buckets_listed(capsys.readouterr().out)
    assert fast and not any(name.endswith(("-exact", "-bound")) for name in fast)
    assert main(["precompute", "--model", str(committed), "--key-queries", "3", "--quiet", "--radius", "bound"]) == 0
    assert list(_buckets_listed(capsys.readouterr().out)) == ["k1-f1-bound"]


def test_a_missing_bucket_is_one_line_naming_what_to_set_up(committed, tmp_path, capsys):
    from prover_service.cli import main

    capsys.readouterr()
    assert main(["prove", "--model", str(committed), "--index", "0", "--out", str(tmp_path / "b.json")]) == 1
    err = capsys.readouterr().err
    assert "Traceback" not in err and len(err.strip().splitlines()) <= 2
    assert "has no keys yet" in err and "fairproof ceremony init" in err
    assert "-exact" in err and "k1-f1-bound" in err and "set up both" in err
    assert not (tmp_path / "b.json").exists()
    # its twin: a fast prover names its own bucket, and no hybrid note
    assert main(["prove", "--model", str(committed), "--index", "0", "--out", str(tmp_path / "b.json"),
                 "--radius", "fast"]) == 1
    err = capsys.readouterr().err
    assert "has no keys yet" in err and "set up both" not in err and "-exact" not in err


# -- the hybrid radius's largest exact statement -------------------------------------------------------------

PROVING = ("prove", "precompute", "demo", *SERVICE)  # the commands that prove (certify only certifies)


@pytest.mark.parametrize("command", PROVING)
def test_every_proving_command_takes_the_largest_exact_statement(command):
    parser = build_parser()
    args = parser.parse_args(COMMANDS[command])
    if command in SERVICE:
        assert args.exact_max_constraints is None
        assert settings_from(args).exact_max_constraints == DEFAULT_EXACT_MAX_CONSTRAINTS
        chosen = settings_from(parser.parse_args([*COMMANDS[command], "--exact-max-constraints", "1000"]))
        assert chosen.exact_max_constraints == 1000
    else:
        assert args.exact_max_constraints == DEFAULT_EXACT_MAX_CONSTRAINTS
        assert parser.parse_args([*COMMANDS[command], "--exact-max-constraints", "1000"]).exact_max_constraints == 1000


@pytest.mark.parametrize("command", PROVING)
@pytest.mark.parametrize("bad", ["0", "-5", "1.5", "many"])
def test_a_largest_statement_that_is_no_positive_count_is_refused_with_usage(command, bad, capsys):
    with pytest.raises(SystemExit) as exit_:
        build_parser().parse_args([*COMMANDS[command], "--exact-max-constraints", bad])
    assert exit_.value.code == 2
    assert "--exact-max-constraints" in capsys.readouterr().err


def test_the_service_takes_the_largest_exact_statement_from_its_environment():
    assert Settings.from_env({"FAIRPROOF_EXACT_MAX_CONSTRAINTS": "250000"}).exact_max_constraints == 250_000
    for bad in ("0", "-1", "1e6x", "lots"):
        with pytest.raises(ValueError):
            Settings.from_env({"FAIRPROOF_EXACT_MAX_CONSTRAINTS": bad})
