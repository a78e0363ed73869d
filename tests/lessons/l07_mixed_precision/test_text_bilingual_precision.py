"""Notebook 07 speaks the session's language: two checker messages and an interview answer
rendered in English and in Chinese carry the same numbers, the Chinese ones in Chinese."""

from __future__ import annotations



from lessons.l07_mixed_precision import exercises as ex
from lessons.l07_mixed_precision import interview
from two_languages import CJK, same_numbers


def test_checker_messages_in_both_languages(both):
    for check in (lambda: ex.check_fp16_smallest_normal(6.1e-5),        # right
                  lambda: ex.check_bf16_allreduce_bound(1.0, 1024),     # wrong: the hint
                  lambda: ex.check_vanishing_update(2 ** -8, 1.0, "bf16", "down")):  # the slip
        v = both(check)
        assert v["en"]["ok"] == v["zh"]["ok"]
        same_numbers(v["en"]["detail"], v["zh"]["detail"])
    v = both(lambda: ex.check_vanishing_update(2 ** -8, 1.0, "bf16", "down"))
    assert "where an increase stops vanishing" in v["en"]["message"]
    assert v["zh"]["message"].startswith("还不对。")


def test_an_interview_answer_in_both_languages(both):
    losses = {"fp32": 2.7975, "bf16": 2.8209, "master": 2.7967, "kahan": 2.7970, "stochastic": 2.7951}
    mw = {k: {"losses": [v], "vanished": [0.1253]} for k, v in losses.items()}
    a = both(lambda: interview.corner.answer("b", ln={"unchanged": 1.0}, mw=mw))
    assert a["en"].summary == "(b) answer" and CJK.search(a["zh"].summary)
    assert len(a["en"].lines) == len(a["zh"].lines) == 3
    for en, zh in zip(a["en"].lines, a["zh"].lines):
        same_numbers(en, zh)
    assert "2.821" in a["zh"].lines[1] and "13%" in a["zh"].lines[1]
