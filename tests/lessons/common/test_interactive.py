"""The %%ranks magic: parsing, output, and the short messages for errors and hangs
(run_on_ranks itself is tested in test_launch)."""

import pytest

import parlab
from lessons.common import interactive


@pytest.mark.parametrize("line, expected", [
    ("4", (4, 30.0, False)), ("2 --timeout 5", (2, 5.0, False)), ("-n 3 -t 1.5", (3, 1.5, False)),
    ("--timeout 7 8", (8, 7.0, False)), ("4 --verbose", (4, 30.0, True)),
    ("-v 2 -t 3", (2, 3.0, True)),
])
def test_parse(line, expected):
    assert interactive.parse_args(line) == expected


@pytest.mark.parametrize("line", ["", "four", "2 3", "--timeout 5", "2 --timeout soon"])
def test_parse_errors(line):
    with pytest.raises(ValueError, match="usage"):
        interactive.parse_args(line)


def test_a_bad_line_is_one_short_message(capsys):
    interactive.ranks("four", "x = 1")
    err = capsys.readouterr().err
    assert err.startswith("✗ usage: %%ranks N") and len(err.splitlines()) == 1


def test_magic_runs_a_cell_on_every_rank(capsys):
    interactive.ranks("2", "x = torch.tensor([rank + 1.0])\ndist.all_reduce(x)\nprint('hi')\nx")
    out = capsys.readouterr().out
    assert out.count("hi") == 2 and out.count("→ tensor([3.])") == 2
    assert out.index("rank 0") < out.index("rank 1")


def test_format_shows_errors():
    text = interactive.format_results([{"output": "a\n", "value": None, "error": "Boom\n"},
                                       {"output": "", "value": "1", "error": None}])
    assert "a\nBoom" in text and "→ 1" in text


def _short(err: str, most: int = 7) -> list[str]:
    lines = err.strip().splitlines()
    assert len(lines) <= most, err
    assert "Traceback" not in err and "rank.py" not in err and "pool.py" not in err, err
    return lines


def test_raising_ranks_give_rank_line_and_exception_and_keep_the_session(capsys):
    interactive.ranks("2", "a = 5")
    capsys.readouterr()
    interactive.ranks("2", "print('before')\nif rank == 1:\n    int('x' * rank)\nb = a + 1")
    out, err = capsys.readouterr()
    assert out.count("before") == 2  # what the ranks printed is still shown
    lines = _short(err)
    assert lines[0] == "✗ rank 1 raised ValueError: invalid literal for int() with base 10: 'x'"
    assert "at line 4: int('x' * rank)" in err  # the %%ranks line is line 1
    assert "keep their variables" in err and "--verbose" in err
    assert "last_error" in err and "int('x' * rank)" in interactive.last_error
    interactive.ranks("2", "a")  # every rank finished: the same ranks, the same variables
    out, err = capsys.readouterr()
    assert out.count("→ 5") == 2 and not err and "restarted" not in out


def test_verbose_shows_the_traceback(capsys):
    interactive.ranks("2 --verbose", "1 / 0")
    out, err = capsys.readouterr()
    assert out.count("Traceback") == 2 and 'File "<ranks cell' in out and "line 2" in out
    assert "✗ all 2 ranks raised ZeroDivisionError: division by zero" in err


def test_timeout_is_short_names_rank_line_and_timeout_then_restart_notice_once(capsys):
    interactive.ranks("2", "kept = 1")
    capsys.readouterr()
    interactive.ranks("2 --timeout 3",
                      "print('start')\nif rank == 0:\n    dist.all_reduce(torch.ones(1))\n")
    out, err = capsys.readouterr()
    assert out.count("start") == 2
    lines = _short(err)
    assert lines[0] == ("✗ the cell did not finish within 3 s (set with %%ranks 2 --timeout "
                        "SECONDS); all 2 ranks were stopped")
    assert "rank 0 blocked at line 4: dist.all_reduce(torch.ones(1))" in err
    assert "did only some ranks call a collective?" in err
    assert "stack of rank 0" in interactive.last_error
    # the next cell runs on fresh ranks: it says so once, before its output
    interactive.ranks("2", "print('fresh')")
    out, err = capsys.readouterr()
    assert out.index(interactive.RESTARTED) < out.index("fresh") and not err
    # ... and a NameError on them points at the restart
    interactive.ranks("2", "kept")
    out, err = capsys.readouterr()
    assert interactive.RESTARTED not in out  # said once only
    _short(err)
    assert "✗ all 2 ranks raised NameError: name 'kept' is not defined" in err
    assert "at line 2: kept" in err and "the ranks were restarted" in err


def test_default_timeout_is_stated(monkeypatch, capsys):
    monkeypatch.setattr(interactive, "DEFAULT_TIMEOUT", 2.0)
    interactive.ranks("2", "import time\ntime.sleep(30)")
    err = capsys.readouterr().err
    assert "did not finish within 2 s (set with %%ranks 2 --timeout SECONDS)" in err
    assert "ranks 0, 1 blocked at line 3: time.sleep(30)" in err
    assert "raise --timeout" in err  # the hint for a slow cell, in the magic's words
    assert interactive.parse_args("2")[1] == 2.0


def test_one_rank_raises_while_the_other_waits(capsys):
    interactive.ranks("2 --timeout 20", "if rank == 1:\n    1 / 0\ndist.barrier()")
    err = capsys.readouterr().err
    lines = _short(err)
    assert lines[0] == "✗ rank 1 raised ZeroDivisionError: division by zero"
    assert "at line 3: 1 / 0" in err
    assert "rank 0 still running a second later (blocked at line 4: dist.barrier())" in err
    assert "waiting for rank 1" in err


def test_error_in_a_function_from_an_earlier_cell(capsys):
    interactive.ranks("2", "def f(v):\n    return v / nothing_here")
    interactive.ranks("2", "f(rank)")
    err = capsys.readouterr().err
    assert ("at line 2: f(rank) → line 3 of an earlier %%ranks cell: return v / nothing_here"
            in err)


def test_syntax_error_is_short(capsys):
    interactive.ranks("2", "x = 1\ndef (:")
    err = capsys.readouterr().err
    assert err.splitlines()[0] == "✗ SyntaxError at line 3: def (:"


def test_no_notice_on_the_first_cell_of_a_session(capsys):
    parlab.shutdown()
    interactive.ranks("3", "rank")
    assert interactive.RESTARTED not in capsys.readouterr().out


def test_run_on_ranks_reports_restarts_and_error_info():
    parlab.run_on_ranks("q = 1", 2)
    parlab.shutdown()
    res = parlab.run_on_ranks("\nq", 2, filename="<ranks cell t>")
    assert all(r["restarted"] for r in res) and res[0]["restarts"] >= 1
    assert res[0]["error_info"] == {"type": "NameError", "message": "name 'q' is not defined",
                                    "frames": [("<ranks cell t>", 2)]}
    assert not parlab.run_on_ranks("q = 2", 2)[0]["restarted"]
