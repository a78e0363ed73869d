"""Notebook 03 speaks the session's language: checker messages, the explorer's lines, the
forward checker's verdict said on a rank and the interview answers come out in English or
Chinese, with the same numbers in both."""

from __future__ import annotations

import json

import pytest

from lessons.common import i18n
from lessons.l03_pipeline_parallel import exercises as ex, experiments, interview
from lessons.l03_pipeline_parallel.exercises_forward import _check_peer
from lessons.l03_pipeline_parallel.exercises_schedules import structure
from lessons.common.checkers.watch import Diagnosis
from parlab.pipeline_parallel.schedules import Action
from two_languages import CJK, same_numbers
import paths


def test_checker_messages_in_both_languages(both):
    m = ex.cost.min_micro_batches(ex.P, ex.TARGET)
    for make in (lambda: ex.check_min_m(m)["message"],        # right
                 lambda: ex.check_min_m(10)["message"],       # too few
                 lambda: ex.check_min_m(m + 5)["message"],    # not the fewest
                 lambda: structure([Action("B", 3, 0)], 1, 8),  # B before its F
                 lambda: structure([Action("F", 9, 0)], 2, 8)):  # outside 0..7
        said = both(make)
        same_numbers(said["en"], said["zh"])
    said = both(lambda: ex.check_min_m(m)["message"])
    assert said["en"].startswith("Correct. M = 63") and said["zh"].startswith("正确。M = 63")


def test_the_numeric_questions_carry_the_checkers_numbers(both):
    # each question is written once, in both languages, with the sizes its checker uses;
    # the notebook's answer boxes take their labels from here
    assert sorted(ex.QUESTIONS) == ["bubble", "interleaved", "min_m", "peak", "zb_h2_peak"]
    en = {}
    for name in ex.QUESTIONS:
        said = both(lambda: ex.QUESTIONS[name])
        same_numbers(said)
        en[name] = said["en"]
    assert f"P = {ex.P}, M = {ex.M}" in en["bubble"]
    assert f"{ex.TARGET:.0%}" in en["min_m"]
    assert f"stage {ex.PEAK_STAGE}" in en["peak"]
    with pytest.raises(KeyError):
        ex.QUESTIONS["bubbles"]
    cells = json.loads((paths.ROOT / "notebooks" / "03_pipeline_parallel.ipynb").read_text())["cells"]
    code = "".join("".join(c["source"]) for c in cells if c["cell_type"] == "code")
    assert all(f'QUESTIONS["{name}"]' in code for name in ex.QUESTIONS)


def test_a_verdict_said_on_a_rank_speaks_the_language_passed_to_it():
    said = {}
    for lang in ("en", "zh"):
        with pytest.raises(Diagnosis) as e:
            _check_peer("send", 3, 1, 4, lang)  # stage 1 sends to rank 3, not to stage 2
        said[lang] = str(e.value)
    assert "it must send to stage 2 (rank 2)" in said["en"]
    same_numbers(said["en"], said["zh"])


def test_the_explorer_lines_in_both_languages(both):
    said = both(lambda: experiments.explore("interleaved", 3, 8, 2))
    for key in ("note", "text"):
        en, zh = said["en"][key], said["zh"][key]
        assert i18n.numbers(en) == i18n.numbers(zh) and CJK.search(zh), (en, zh)
    assert said["en"]["m"] == said["zh"]["m"] == 9


@pytest.mark.parametrize("key", ["c", "d", "advice"])
def test_an_interview_answer_in_both_languages(both, key):
    n = experiments.interview()
    said = both(lambda: interview.corner.answer(key, n=n))
    en, zh = said["en"], said["zh"]
    assert len(en.lines) == len(zh.lines) and bool(en.verdict) == bool(zh.verdict)
    for e, z in zip([en.summary, en.verdict, *en.lines], [zh.summary, zh.verdict, *zh.lines]):
        if e:
            same_numbers(e, z)
    if key == "d":  # the one verdict the spoiler test looks for by its English words
        assert en.verdict.startswith("Half right: the bubble falls with M")
