"""Notebook 09's exercise in Chinese: the checker's messages and the hints, with the English's
numbers (the catalogue check of lessons.common.i18n), switched by lang or the session."""

import re

import lessons
from lessons.common import i18n
from lessons.l09_the_whole_answer import exercises as ex
from lessons.l09_the_whole_answer.hints import HINTS
from lessons.l09_the_whole_answer.text import TEXT

CJK = re.compile(r"[\u4e00-\u9fff]")


def layout_pipeline_first(n_params, n_layers, n_heads, n_gpus, gpus_per_node, gpu_memory_gb):
    pp = 32 if n_layers % 32 == 0 and n_gpus >= 32 else 1  # slower beyond the error bar at 175B
    return {"tp": 1, "pp": pp, "dp": n_gpus // pp}


def layout_wrong_product(n_params, n_layers, n_heads, n_gpus, gpus_per_node, gpu_memory_gb):
    return {"tp": 2, "pp": 1, "dp": n_gpus}


def test_catalogue_and_hints_agree_in_both_languages():
    assert i18n.catalogue_problems(TEXT) == []
    for name, pair in HINTS.items():
        assert len(pair) == 2, name
        for hint in pair:
            assert i18n.numbers(hint["en"]) == i18n.numbers(hint["zh"]) and CJK.search(hint["zh"]), name


def test_checker_speaks_the_language():
    en = ex.check_layout(layout_pipeline_first, lang="en")
    zh = ex.check_layout(layout_pipeline_first, lang="zh")
    assert not en["ok"] and not zh["ok"]
    assert "error bar" in en["message"] and "规划器的误差范围" in zh["message"]
    assert en["message"].startswith("Not yet.") and zh["message"].startswith("还不对。")
    assert i18n.numbers(en["detail"]) == i18n.numbers(zh["detail"])
    before = lessons.current_lang()
    try:
        lessons.lang("zh")
        v = ex.check_layout(layout_wrong_product)
        assert not v["ok"] and "应等于" in v["message"], v["message"]
    finally:
        lessons.lang(before)


def test_hints_follow_the_language():
    assert HINTS["my_layout"][0]["zh"] in ex.hints("my_layout", lang="zh").data
    assert HINTS["my_layout"][0]["en"] in ex.hints("my_layout", lang="en").data


def test_the_planners_refusals_are_said_in_chinese_with_its_numbers():
    from parlab import planner
    reasons = {i.reasons[0] for case in ex.CASES[:4] for i in planner.plan(*case, cps=(1,)).infeasible}
    known = 0
    for r in reasons:
        en, zh = ex.planner_why(r, "en"), ex.planner_why(r, "zh")
        assert en == r  # the English is the planner's own sentence, word for word
        if zh != r:
            known += 1
            assert CJK.search(zh) and i18n.numbers(zh) == i18n.numbers(r), (r, zh)
    assert known == len(reasons), [r for r in reasons if ex.planner_why(r, "zh") == r]
    assert ex.planner_why("something new", "zh") == "something new"


def layout_too_deep(n_params, n_layers, n_heads, n_gpus, gpus_per_node, gpu_memory_gb):
    return {"tp": 1, "pp": n_gpus, "dp": 1}


def test_an_infeasible_layout_is_explained_in_chinese():
    v = ex.check_layout(layout_too_deep, cases=(("70B", 64, "H100"),), lang="zh")
    assert not v["ok"] and "必须整除 n_layers=80" in v["message"], v["message"]
