"""The hybrid radius is the default of every command that certifies or proves, of the demo and of the service;
every command offers all four modes, and `fast` is had only by asking for it."""
from __future__ import annotations

import pytest

from commitments.api import RADIUS_MODES, DecisionRequest
from prover_service.cli import build_parser
from prover_service.commands.radius_option import DEFAULT_EXACT_BUDGET, DEFAULT_RADIUS, RADIUS_CHOICES
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
    assert Settings().radius == "hybrid" and Settings().exact_budget == 60.0
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


@pytest.mark.parametrize("command", sorted(COMMANDS))
@pytest.mark.parametrize("budget", ["0", "-3", "inf", "nan", "soon"])
def test_a_budget_that_is_no_positive_number_of_seconds_is_refused_in_words(command, budget, capsys):
    with pytest.raises(SystemExit):
        build_parser().parse_args([*COMMANDS[command], "--exact-budget", budget])
    err = capsys.readouterr().err
    assert "argument --exact-budget" in err and "number of seconds" in err and "Traceback" not in err
