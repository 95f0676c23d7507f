"""Every argument of both commands says what it is in --help, and fairproof-verify's usage names every option.

The walker visits every subcommand's parser (`fairproof ceremony init`, `fairproof groth16 prove`, ...) and
every argument on it, optional or positional; the usage lines of fairproof-verify are generated from its
parser, one per form, and checked here against the parser's own option strings. `--json` means one thing on
every fairproof command: the zero-argument flag that prints the result as one JSON document on stdout (a
report written to a file is `--save-json FILE`).
"""
from __future__ import annotations

import argparse
from collections.abc import Iterator

import pytest

from prover_service.cli import build_parser as fairproof_parser
from prover_service.cli import main as fairproof_main
from verifier_client.cli import FORMS, _check_mode
from verifier_client.cli import build_parser as verify_parser


def arguments(parser: argparse.ArgumentParser, path: str) -> Iterator[tuple[str, argparse.Action]]:
    """(command path, argument) for every argument of `parser` and of its subcommands, -h excepted."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from arguments(sub, f"{path} {name}")
        elif not isinstance(action, argparse._HelpAction):
            yield path, action


def without_help(parser: argparse.ArgumentParser, path: str) -> list[str]:
    return [f"{where}: {'/'.join(a.option_strings) or a.dest}" for where, a in arguments(parser, path)
            if not (a.help or "").strip()]


def test_every_argument_of_every_command_has_help():
    walked = list(arguments(fairproof_parser(), "fairproof")) + list(arguments(verify_parser(), "fairproof-verify"))
    assert len(walked) > 300  # the walker reaches the subcommands' subcommands
    assert {"fairproof ceremony install", "fairproof groth16 prove", "fairproof-verify"} <= {w for w, _ in walked}
    assert without_help(fairproof_parser(), "fairproof") == []
    assert without_help(verify_parser(), "fairproof-verify") == []


def test_an_argument_without_help_is_found():
    parser = argparse.ArgumentParser(prog="tool")
    parser.add_argument("--said", help="what it is")
    nested = parser.add_subparsers().add_parser("sub").add_subparsers().add_parser("deeper")
    nested.add_argument("--unsaid")
    nested.add_argument("target", help="  ")
    assert without_help(parser, "tool") == ["tool sub deeper: --unsaid", "tool sub deeper: target"]


def unshown(parser: argparse.ArgumentParser, usage: str) -> list[str]:
    """The parser's options (and positionals) that `usage` never names."""
    words = usage.replace("[", " ").replace("]", " ").split()
    return [a.option_strings[0] if a.option_strings else a.dest for a in parser._actions
            if not any(o in words for o in a.option_strings)
            and not (not a.option_strings and (a.metavar or a.dest.upper()) in words)]


def test_the_verifier_usage_names_every_option_in_its_three_forms():
    parser = verify_parser()
    text = parser.format_usage()
    assert unshown(parser, text) == []
    forms = text.removeprefix("usage: ").split("\n       fairproof-verify ")  # continuation lines indent more
    assert len(forms) == len(FORMS) == 3 and forms[0].startswith("fairproof-verify ")
    assert "--dataset AUDIT.json" in forms[2] and "--dataset" not in forms[0] + forms[1]
    assert "--json" in forms[0] and "--json" in forms[1] and "--log-key VKEY" in forms[0]
    assert max(len(line) for line in text.splitlines()) <= 110


def test_a_usage_that_leaves_options_out_is_found():
    # the usage line once written by hand: no --json, no log flags, no --backend
    by_hand = ("usage: fairproof-verify BUNDLE --card CARD [--record RECORD] [--attestation FILE] [trust options]\n"
               "       fairproof-verify --url URL --model ID --record RECORD [--timeout S]\n"
               "       fairproof-verify GROUPS --card CARD --dataset AUDIT.json")
    missing = unshown(verify_parser(), by_hand)
    assert {"--json", "--log-key", "--trust-witness", "--backend", "--delta"} <= set(missing)
    assert "--card" not in missing and "--dataset" not in missing


@pytest.mark.parametrize("form", range(len(FORMS)))
def test_each_form_with_what_it_requires_is_accepted(form):
    values = {"bundle": "b.json", "--card": "c.json", "--dataset": "a.json", "--url": "https://bank.example",
              "--model": "m", "--record": "r.json"}
    required, excluded = FORMS[form]
    argv = [part for name in required for part in ([values[name]] if name == "bundle" else [name, values[name]])]
    parser = verify_parser()
    _check_mode(parser, parser.parse_args(argv))  # refused: SystemExit
    known = {a.option_strings[0] if a.option_strings else a.dest for a in parser._actions}
    assert set(required) | set(excluded) <= known  # the forms name the parser's own options


def test_a_form_mixing_two_modes_is_refused(capsys):
    parser = verify_parser()
    with pytest.raises(SystemExit):
        _check_mode(parser, parser.parse_args(["b.json", "--card", "c.json", "--url", "https://bank.example",
                                               "--model", "m", "--record", "r.json"]))
    assert "not both" in capsys.readouterr().err


AUDITS_SAVING_JSON = ("spread", "persistence", "global", "kdisc", "groups", "explain", "probabilistic")


def json_options_taking_a_value(parser: argparse.ArgumentParser, path: str) -> list[str]:
    """The commands on which `--json` is not the zero-argument stdout flag (it must never take a FILE: a file
    is `--save-json FILE`)."""
    return [where for where, a in arguments(parser, path)
            if "--json" in a.option_strings and not (isinstance(a, argparse._StoreTrueAction) and a.nargs == 0)]


def test_json_is_the_stdout_flag_on_every_command():
    walked = list(arguments(fairproof_parser(), "fairproof"))
    with_json = {where for where, a in walked if "--json" in a.option_strings}
    with_save_json = {where for where, a in walked if "--save-json" in a.option_strings}
    assert {"fairproof certify", "fairproof groth16 prove"} <= with_json
    assert {*(f"fairproof audit {verb}" for verb in AUDITS_SAVING_JSON), "fairproof plot"} == with_save_json
    assert json_options_taking_a_value(fairproof_parser(), "fairproof") == []


def test_a_json_option_taking_a_file_is_found():
    parser = argparse.ArgumentParser(prog="tool")
    subs = parser.add_subparsers()
    subs.add_parser("flag").add_argument("--json", action="store_true", help="print one document")
    subs.add_parser("file").add_argument("--json", metavar="FILE", help="write the report as JSON")
    subs.add_parser("saved").add_argument("--save-json", metavar="FILE", help="write the report as JSON to FILE")
    assert json_options_taking_a_value(parser, "tool") == ["tool file"]


@pytest.mark.parametrize("command", [*(["audit", verb, "--model", "models/m"] for verb in AUDITS_SAVING_JSON),
                                     ["plot", "--out", "eps.png", "fair=bundles/*.json"]])
def test_the_old_json_file_form_is_a_usage_error(command, capsys):
    # --json is no prefix of --save-json, so argparse cannot read it as an abbreviation of it: refused before
    # any handler runs, with the usage and exit status 2
    with pytest.raises(SystemExit) as exit_:
        fairproof_main([*command, "--json", "report.json"])
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert "unrecognized arguments: --json" in err and "Traceback" not in err
    assert fairproof_parser().parse_args([*command, "--save-json", "report.json"]).save_json == "report.json"
