"""The checkers' own words follow the session's language: the verdict, how far off a number
is, what a typed formula was read as, why text is not a number, what happened to the
learner's function on its ranks, the answer box's labels. The numbers are the same."""

from __future__ import annotations

import pytest

import lessons
from lessons.common import i18n
from lessons.common.checkers import answers, core
from lessons.common.checkers.widgets import answer_box


@pytest.fixture
def zh():
    was = lessons.current_lang()
    lessons.lang("zh")
    yield
    lessons.lang(was)


@pytest.mark.parametrize("typed,want,kw", [
    ("2^-14", 2 ** -14, dict(digits=2)), ("12", 6, {}), ("6.02", 6, {}), ("-6", 6, {}),
    ("0.0303", 3.03, dict(unit="%")), ("1.5 s", 1.5, dict(unit="GB")), ("1,5", 1.5, {}),
    ("x + 1", 1, {}), ("13500 MB", 13.5, dict(unit="GB")), ("nan", 1, {})])
def test_a_verdict_in_chinese_says_the_same_numbers(typed, want, kw, both):
    said = both(lambda: answers.check_number(typed, want, **kw)["message"])
    en, zh = said["en"], said["zh"]
    assert i18n.numbers(en) == i18n.numbers(zh), (en, zh)
    assert zh.startswith(("正确。", "还不对。")) and i18n._NUMBER.sub("", zh) != i18n._NUMBER.sub("", en)
    assert not any(w in zh for w in ("off by", "read ", "must be", "wanted", "did you mean")), zh


def test_the_words_themselves(zh):
    assert "差了 2 倍：偏高" in answers.check_number("12", 6)["message"]
    assert "读作 2^-14 = 6.1035e-05" in answers.check_number("2^-14", 2 ** -14, digits=2)["message"]
    assert "你是想写 3.03% 吗" in answers.check_number("0.0303", 3.03, unit="%")["message"]
    assert "是 NaN" in answers.check_number(float("nan"), 1)["message"]
    assert core.compare_tensors(None, None, where="rank 1") == "rank 1：返回了 None"


def test_a_hanging_function_is_reported_in_chinese(zh):
    def my_fn(x):
        while True:
            pass
    values, v = core.call_learner(my_fn, [(1,)], label="my_fn", timeout=3)
    assert not v["ok"] and "没能在 3 秒内结束" in v["message"], v["message"]


def test_a_raising_function_is_reported_in_the_session_language_on_its_process(zh):
    def my_fn(x):
        return 1 / 0
    _, v = core.call_learner(my_fn, [(1,)], label="my_fn", timeout=30)
    assert "抛出了 ZeroDivisionError" in v["message"] and "第 2 行" in v["message"], v["message"]


def test_the_answer_box_in_chinese(zh):
    box = answer_box(lambda x: answers.check_number(x, 2))
    parts, todo = [], [box]
    while todo:
        w = todo.pop()
        parts.append(w)
        todo.extend(getattr(w, "children", ()))
    button = next(w for w in parts if type(w).__name__ == "Button")
    text = next(w for w in parts if type(w).__name__ == "Text")
    assert button.description == "检查" and text.placeholder == "一个数"
    text.value = "3"
    html_out = [w.value for w in parts if type(w).__name__ == "HTML"]
    assert any("还不对。" in h for h in html_out), html_out
