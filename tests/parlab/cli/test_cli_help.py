"""`python -m parlab --help` (and `python -m lessons --help`) gives every subcommand its
line, and each `<command> --help` a description and a help text for every flag."""
import re

import pytest

import clis
from clis import COMMANDS


def _help(argv, capsys, cli=None) -> str:
    with pytest.raises(SystemExit) as e:
        (cli.main if cli is not None else clis.main)(argv)
    assert e.value.code == 0
    return capsys.readouterr().out


@pytest.mark.parametrize("cli, commands", [(clis.parlab_cli, clis.LIBRARY),
                                           (clis.lessons_cli, clis.LESSONS)])
def test_top_level_help_describes_every_command(cli, commands, capsys):
    out = _help(["--help"], capsys, cli)
    listed = dict(re.findall(r"^    ([\w-]+) +(\S.*)$", out, re.M))
    assert sorted(listed) == sorted(commands), out
    assert all(len(text) > 10 for text in listed.values()), out


def _options(out: str) -> dict:
    """{flag: its help text} from an argparse help page's options section (a help text
    may start on the flag's line or, for a long flag, on the next one)."""
    section = out.split("options:\n", 1)[1]
    flags, last = {}, None
    for line in section.splitlines():
        m = re.match(r"^  (-[-\w]+(?:, -[-\w]+)?)(?: [A-Z_ .\[\]]+?)?(?:  +(\S.*))?$", line)
        if m:
            last = m[1].split(", ")[-1]
            flags[last] = m[2] or ""
        elif last and line.startswith("    "):
            flags[last] += (" " if flags[last] else "") + line.strip()
    return flags


@pytest.mark.parametrize("command", COMMANDS)
def test_each_command_has_a_description_and_help_for_every_flag(command, capsys):
    out = _help([command, "--help"], capsys)
    description = out.split("\n\n")[1]
    assert not description.startswith(("options:", "usage:")) and len(description) > 20, out
    flags = _options(out)
    assert "--help" in flags and len(flags) > 1, out
    empty = [f for f, text in flags.items() if not text.strip()]
    assert not empty, f"{command}: no help for {empty}\n{out}"


def test_flag_help_shows_the_default(capsys):
    out = _help(["3d", "--help"], capsys)
    assert "(default: 0)" in out  # --zero-stage's 0 is a default too, not "no default"
    assert "(default: None)" not in out and "(default: False)" not in out
    # a switch has no default to show: --no-compile's stored True is the switch left off
    assert "(default: True)" not in _help(["gpu-report", "--help"], capsys)
