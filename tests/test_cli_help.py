"""Every argument of both commands says what it is in --help, and fairproof-verify's usage names every option.

The walker visits every subcommand's parser (`fairproof ceremony init`, `fairproof groth16 prove`, ...) and
every argument on it, optional or positional; the usage lines of fairproof-verify are generated from its
parser, one per form, and checked here against the parser's own option strings.
"""
from __future__ import annotations

import argparse
from collections.abc import Iterator

import pytest

from prover_service.cli import build_parser as fairproof_parser
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
