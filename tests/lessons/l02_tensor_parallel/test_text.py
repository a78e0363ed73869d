"""Notebook 02 speaks Chinese when the session does (``lessons.lang("zh")``): checker messages,
an interview answer and the explorer's table come out in Chinese, with the same numbers as in
English, and English again after switching back."""

import re

import pytest

from lessons.common import i18n
from lessons.l02_tensor_parallel import exercises as ex
from lessons.l02_tensor_parallel import experiments, interview, widgets
from two_languages import CJK, same_numbers


@pytest.mark.parametrize("call", [
    lambda: ex.check_block_collectives({"all_reduce": 2}, {"all_reduce": 2}),      # both passes off
    lambda: ex.check_block_collectives({"all_gather": 2, "reduce_scatter": 2},
                                       {"all_gather": 4, "reduce_scatter": 2}),    # right: the counts
    lambda: ex.check_where_f("B"),
    lambda: ex.check_where_f(None),
    lambda: ex.check_layer_bytes(1),
])
def test_checker_messages_in_both_languages(both, call):
    v = both(call)
    assert v["en"]["ok"] == v["zh"]["ok"]
    same_numbers(v["en"]["message"], v["zh"]["message"])


def test_a_verdict_is_chinese_from_its_first_word(both):
    v = both(lambda: ex.check_block_collectives({"all_gather": 2, "reduce_scatter": 2},
                                                {"all_gather": 4, "reduce_scatter": 2}))
    assert v["en"]["message"].startswith("Correct. Forward")
    assert v["zh"]["message"].startswith("正确。前向") and "4" in v["zh"]["message"]


@pytest.mark.parametrize("key,numbers", [("c", {"n": {"c": {"forward": 2, "backward": 2}}}),
                                         ("thirty_seconds", {}), ("j", {})])
def test_interview_answers_in_both_languages(both, key, numbers):
    a = both(lambda: interview.corner.answer(key, **numbers))
    for part in ("summary", "verdict"):
        en, zh = getattr(a["en"], part), getattr(a["zh"], part)
        if en:
            assert CJK.search(zh) and i18n.numbers(en) == i18n.numbers(zh), (en, zh)
    assert len(a["en"].lines) == len(a["zh"].lines)
    for en, zh in zip(a["en"].lines, a["zh"].lines):
        same_numbers(re.sub(r"<[^>]+>", "", en), zh)


def test_the_30_second_answer_quotes_the_time_model(both):
    mfu = [r["mfu"] for r in experiments.gpu_scale("GPT-3 175B", tps=(8, 16))]
    a = both(lambda: interview.corner.answer("thirty_seconds"))
    for code in ("en", "zh"):
        assert all(f"{m:.1%}" in a[code].lines[0] for m in mfu)


def test_the_explorer_table_in_both_languages(both):
    row = experiments.gpu_scale("GPT-3 175B", tps=(8,))[0]
    page = both(lambda: widgets.gpu_html(row, "GPT-3 175B", "A100 (NVLink3, IB-HDR)"))
    assert "communication share" in page["en"] and "通信占比" in page["zh"]
    assert i18n.numbers(page["en"]) == i18n.numbers(page["zh"])
