"""The learner's record (lessons.common.record): what is written, where, how it survives a
killed kernel, the Leitner boxes that bring missed drill questions back, and the one-page
summary (lessons.common.progress) in both languages."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from lessons.common import progress, record
from lessons.common.drills import bank, quiz
from lessons.common.drills.session import Attempt, Tally

ROOT = Path(__file__).resolve().parents[3]
DAY = record.DAY


@pytest.fixture
def rec(tmp_path, monkeypatch):
    p = tmp_path / "record.sqlite"
    monkeypatch.setenv(record.ENV, str(p))
    return p


def test_off_keeps_nothing(tmp_path, monkeypatch):
    monkeypatch.setenv(record.ENV, "off")
    assert record.path() is None and not record.enabled()
    assert record.exercise("l00_collectives", "check_x", True) is False
    assert record.summary()["exercises"] == {}
    assert "PARLAB_RECORD=off" in progress.text("en")


def test_default_file_is_in_the_work_folder(monkeypatch):
    monkeypatch.delenv(record.ENV, raising=False)
    p = record.path()
    assert p.name == record.FILE and p.parent in (ROOT / "work", Path.home() / ".parlab")


def test_an_unwritable_record_is_said_once_and_never_raises(tmp_path, monkeypatch, capsys):
    blocker = tmp_path / "a_file"
    blocker.write_text("x")
    monkeypatch.setenv(record.ENV, str(blocker / "record.sqlite"))  # its folder is a file
    monkeypatch.setattr(record, "_warned", False)
    assert record.exercise("l00_collectives", "check_x", True) is False
    assert record.exercise("l00_collectives", "check_x", True) is False
    err = capsys.readouterr().err
    assert err.count("cannot be written") == 1 and "PARLAB_RECORD" in err


def test_watch_records_each_verdict_and_keeps_the_function(rec):
    ns = {"__name__": "lessons.l07_mixed_precision.exercises"}
    exec(textwrap.dedent("""
        def check_answer(x):
            '''doc'''
            return {"ok": x == 4, "message": "m"}
        def check_missing(x=None):
            return {"ok": False, "message": "m", "missing": True}
        def helper(x):
            return {"ok": True}
    """), ns)
    original = ns["check_answer"]
    record.watch(ns)
    assert ns["check_answer"].__wrapped__ is original and ns["check_answer"].__doc__ == "doc"
    assert ns["helper"]({}) == {"ok": True}
    ns["check_answer"](3), ns["check_answer"](4), ns["check_missing"](), ns["helper"](1)
    rows = sqlite3.connect(rec).execute("SELECT lesson, name, ok FROM exercise").fetchall()
    # the not-yet-attempted verdict and the helper are not exercises done
    assert rows == [("l07_mixed_precision", "check_answer", 0), ("l07_mixed_precision", "check_answer", 1)]
    assert record.summary()["exercises"] == {
        "l07_mixed_precision": {"passed": ["check_answer"], "tried": ["check_answer"]}}


def test_every_lesson_records_its_checkers():
    """Each lesson's exercises modules hand their check_* functions to record.watch."""
    import importlib
    from lessons import FOLDERS
    for folder in FOLDERS.values():
        names = progress.exercise_names(folder)
        assert names, folder
        for path in sorted((ROOT / "lib" / "lessons" / folder).glob("exercises*.py")):
            mod = importlib.import_module(f"lessons.{folder}.{path.stem}")
            unwatched = [n for n in vars(mod) if n.startswith("check_") and callable(getattr(mod, n))
                         and getattr(getattr(mod, n), "__module__", "") == mod.__name__
                         and not hasattr(getattr(mod, n), "__wrapped__")]
            assert unwatched == [], f"{mod.__name__}: {unwatched} not recorded (record.watch)"


def _question(template="bubble_1f1b"):
    return bank.generate(template=template, seed=3)


def test_a_drill_try_is_timed_from_the_moment_it_is_shown(rec):
    q = _question()
    a = Attempt(q, Tally())
    a.shown_at -= 42  # shown 42 s ago
    a.answer("1e9")  # wrong
    a.answer(q.answer)  # right on the second try
    rows = sqlite3.connect(rec).execute("SELECT template, try, ok, seconds FROM drill").fetchall()
    assert [(r[0], r[1], r[2]) for r in rows] == [(q.template, 1, 0), (q.template, 2, 1)]
    assert 42 <= rows[0][3] < 60
    assert record.boxes() == {q.template: 1}  # the first try decides: missed


def test_leitner_boxes_move_up_when_right_and_back_when_missed(rec):
    t0 = 1_000_000.0
    assert record.settle("a", "pp", True, now=t0) == 2
    assert record.settle("a", "pp", True, now=t0) == 3
    assert record.settle("b", "cp", False, now=t0) == 1
    assert record.due(now=t0) == ["b"]  # box 1: due at the next drill; "a" waits 3 days
    assert record.due(now=t0 + 3 * DAY) == ["b", "a"]  # lowest box first
    assert record.due("pp", now=t0 + 3 * DAY) == ["a"]
    assert record.settle("a", "pp", False, now=t0) == 1  # one miss: back to box 1
    for _ in range(9):
        top = record.settle("c", "pp", True, now=t0)
    assert top == max(record.INTERVAL_DAYS)


def test_the_drill_brings_a_missed_question_back_with_new_numbers(rec):
    missed = _question("bubble_ratio")
    Attempt(missed, Tally()).reveal()  # shown before any try: a miss
    assert record.due() == ["bubble_ratio"]
    q, review = bank.next_question("pp", seed=7)
    assert review and q.template == "bubble_ratio" and q.seed == 7
    # within one session a question is not brought back twice
    q2, review2 = bank.next_question("pp", seed=8, asked={"bubble_ratio"})
    assert not review2
    # the terminal quiz asks it first and says it is a review
    lines = []
    quiz.run_quiz("pp", n=2, seed=7, read=lambda _: "", out=lines.append)
    heads = [x for x in lines if "Question " in x]
    assert "review" in heads[0] and "review" not in heads[1]
    # a question of another topic is not due in this one
    assert bank.next_question("cp", seed=7)[1] is False


def test_a_killed_writer_leaves_a_whole_record(rec):
    """A process writing pairs of rows (one transaction each) is killed at random moments:
    the file stays a valid database and holds only whole pairs."""
    code = textwrap.dedent(f"""
        import sys; sys.path.insert(0, {str(ROOT / 'lib')!r})
        from lessons.common import record
        i = 0
        print("ready", flush=True)
        while True:
            record._write([("INSERT INTO exercise VALUES (?, 'l00', 'pair_a', 1)", (i,)),
                           ("INSERT INTO exercise VALUES (?, 'l00', 'pair_b', 1)", (i,))])
            i += 1
    """)
    env = dict(os.environ, **{record.ENV: str(rec)})
    for delay in (0.05, 0.13, 0.31):
        p = subprocess.Popen([sys.executable, "-c", code], env=env, stdout=subprocess.PIPE, text=True)
        try:
            assert p.stdout.readline().strip() == "ready"
            time.sleep(delay)
            p.send_signal(signal.SIGKILL)
        finally:
            p.wait(timeout=30)
        con = sqlite3.connect(rec)
        assert con.execute("PRAGMA integrity_check").fetchone() == ("ok",)
        a = con.execute("SELECT COUNT(*) FROM exercise WHERE name = 'pair_a'").fetchone()[0]
        b = con.execute("SELECT COUNT(*) FROM exercise WHERE name = 'pair_b'").fetchone()[0]
        con.close()
        assert a == b
    assert a > 0


def test_the_page_in_both_languages(rec):
    record.exercise("l02_tensor_parallel", "check_tp_mlp", True)
    record.exercise("l02_tensor_parallel", "check_where_f", False)
    record.measurement("l02_tensor_parallel", "TP t=2", 12345.6, "tokens/s", "张量并行 t=2")
    q = _question()
    Attempt(q, Tally()).answer(q.answer)
    en, zh = progress.text("en"), progress.text("zh")
    assert "tensor parallelism with sequence parallelism: 1 of" in en and "check_where_f" in en
    assert "pipeline parallelism: 1 of 1 right on the first try" in en
    assert "TP t=2: 12,346 tokens/s" in en and "Implemented tensor parallelism" in en
    assert "张量并行与序列并行：" in zh and "个中通过 1 个" in zh and "流水线并行：1 题中首次答对 1 题" in zh
    assert "张量并行 t=2：12,346 tokens/s" in zh and "写进简历" in zh
    html = progress.page("zh")
    assert html.startswith("<!DOCTYPE html>") and "<h2>写进简历</h2>" in html and "<script" not in html


def test_progress_command(rec, tmp_path):
    record.exercise("l00_collectives", "check_ring_all_reduce", True)
    env = dict(os.environ, PYTHONPATH=str(ROOT / "lib"), **{record.ENV: str(rec)})
    out = subprocess.run([sys.executable, "-m", "lessons", "progress", "--lang", "zh"], env=env,
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert "我的学习记录" in out.stdout and "集合通信" in out.stdout
    page = tmp_path / "me.html"
    out = subprocess.run([sys.executable, "-m", "lessons", "progress", "--html", str(page)], env=env,
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and page.read_text().count("<h2>") >= 2
    bad = subprocess.run([sys.executable, "-m", "lessons", "progress", "--lang", "fr"], env=env,
                         capture_output=True, text=True, timeout=120)
    assert bad.returncode != 0 and "lang='fr' must be one of en, zh" in bad.stderr
