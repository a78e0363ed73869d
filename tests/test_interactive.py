"""The %%ranks magic's parsing and formatting (the execution is tested in test_launch)."""

import pytest

from parlab import interactive


@pytest.mark.parametrize("line, expected", [
    ("4", (4, 30.0)), ("2 --timeout 5", (2, 5.0)), ("-n 3 -t 1.5", (3, 1.5)),
    ("--timeout 7 8", (8, 7.0)),
])
def test_parse(line, expected):
    assert interactive.parse_args(line) == expected


@pytest.mark.parametrize("line", ["", "four", "2 3", "--timeout 5"])
def test_parse_errors(line):
    with pytest.raises(ValueError, match="usage"):
        interactive.parse_args(line)


def test_magic_runs_a_cell_on_every_rank(capsys):
    interactive.ranks("2", "x = torch.tensor([rank + 1.0])\ndist.all_reduce(x)\nprint('hi')\nx")
    out = capsys.readouterr().out
    assert out.count("hi") == 2 and out.count("→ tensor([3.])") == 2
    assert out.index("rank 0") < out.index("rank 1")


def test_format_shows_errors():
    text = interactive.format_results([{"output": "a\n", "value": None, "error": "Boom\n"},
                                       {"output": "", "value": "1", "error": None}])
    assert "a\nBoom" in text and "→ 1" in text
