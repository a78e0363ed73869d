"""Notebook 08 speaks the session's language: checker messages (one from the ranks), the
goodput explorer's table and an interview answer rendered in English and in Chinese carry
the same numbers, the Chinese ones in Chinese."""

from __future__ import annotations

import html

import pytest

from lessons.common import i18n
from lessons.l08_checkpoints_and_failures import exercises as ex
from lessons.l08_checkpoints_and_failures import interview, widgets
from two_languages import CJK, same_numbers

pytestmark = pytest.mark.timeout(180)


def test_checker_messages_in_both_languages(both):
    for check in (lambda: ex.check_young_interval(2078.5),               # right
                  lambda: ex.check_interruptions_per_day(3.0),           # wrong: the hint
                  lambda: ex.check_checkpoint_bytes_per_rank(1e9)):  # wrong: the hint
        v = both(check)
        assert v["en"]["ok"] == v["zh"]["ok"]
        same_numbers(v["en"]["detail"], v["zh"]["detail"])


def returns_nothing(train_state):
    import torch
    torch.set_rng_state(train_state["rng"])


def test_a_message_from_the_ranks_follows_the_session():
    """The resume hook's complaint is written on a rank: in the language of the session
    that ran the check, not the ranks' environment."""
    before = i18n.current_lang()
    try:
        i18n.lang("zh")
        v = ex.check_resume(returns_nothing)
    finally:
        i18n.lang(before)
    assert not v["ok"] and "returns_nothing 返回了 None" in v["message"], v["message"]


def test_the_explorer_table_in_both_languages(both):
    res = {"per_day": 7.76, "job_mtbf_s": 11124.0, "checkpoint_s": 2.43, "young_s": 232.6,
           "daly_s": 235.0, "goodput": 0.963}
    page = both(lambda: widgets.explorer_html(res))
    assert "interruptions per day" in page["en"] and "每天中断次数" in page["zh"]
    assert i18n.numbers(html.unescape(page["en"])) == i18n.numbers(html.unescape(page["zh"]))


def test_an_interview_answer_in_both_languages(both):
    ll = {"checkpoint_s": 2.43, "job_mtbf_hours": 3.09, "young_s": 232.6, "daly_s": 235.0,
          "goodput": 0.963}
    slow = {"checkpoint_s": 60.0, "young_s": 1155.7, "goodput": 0.84}
    b405 = {"total": 4.86e12}
    a = both(lambda: interview.corner.answer("c", ll=ll, b405=b405, slow=slow, R=600.0))
    assert a["en"].summary == "(c) answer" and CJK.search(a["zh"].summary)
    assert len(a["en"].lines) == len(a["zh"].lines) == 3
    for en, zh in zip(a["en"].lines + [a["en"].verdict], a["zh"].lines + [a["zh"].verdict]):
        same_numbers(en, zh)
    assert "1,156 s" in a["zh"].lines[0] and "96.3%" in a["zh"].lines[2]
