"""Every command and subcommand of ``lcg``, found by walking the argument parser itself (so a
new one is covered without editing this test), has a one-line help in its parent's listing,
a description, and an ``Example:`` section with at least one ``lcg`` line.
"""

from __future__ import annotations

import argparse
import re

from lcg.cli.main import build_parser


def _commands(
    parser: argparse.ArgumentParser, path: tuple[str, ...] = ()
) -> list[tuple[tuple[str, ...], argparse.ArgumentParser, str | None]]:
    """``(words, parser, listing help)`` of every (sub)command under ``parser``."""
    found: list[tuple[tuple[str, ...], argparse.ArgumentParser, str | None]] = []
    for action in parser._actions:
        if not isinstance(action, argparse._SubParsersAction):
            continue
        listed = {a.dest: a.help for a in action._choices_actions}
        for name, sub in action.choices.items():
            words = (*path, name)
            found.append((words, sub, listed.get(name)))
            found.extend(_commands(sub, words))
    return found


COMMANDS = _commands(build_parser())


def test_the_walk_finds_the_nested_commands() -> None:
    names = {" ".join(words) for words, _, _ in COMMANDS}
    assert {"status", "wal ls", "mark create", "eval run", "demo", "serve"} <= names


def test_every_command_has_help_and_an_example() -> None:
    problems: list[str] = []
    for words, parser, listed in COMMANDS:
        name = "lcg " + " ".join(words)
        if not listed or not listed.strip():
            problems.append(f"{name}: no help line in `lcg {' '.join(words[:-1])} --help`")
        elif listed[0].isupper() and not listed[1:2].isupper():
            problems.append(f"{name}: help line {listed!r} starts with a capital (the rest do not)")
        elif listed.endswith("."):
            problems.append(f"{name}: help line {listed!r} ends with a full stop")
        text = parser.format_help()
        if not (parser.description or "").strip():
            problems.append(f"{name}: no description")
        example = re.search(r"^Example:\n((?:  .*\n?)+)", text, re.M)
        if example is None:
            problems.append(f"{name}: no 'Example:' section in --help")
        elif not re.search(r"^\s+(\$ )?(\S+=\S+ )*lcg\b", example.group(1), re.M):
            problems.append(f"{name}: the example shows no lcg command line")
    assert not problems, "\n".join(problems)
