"""Notebook 09 in Chinese, all of it: the follow-ups' answers, the claims table and the
walk-through render in Chinese with no English sentence left (names and code aside) and
with the English rendering's numbers; the Chinese claims quote the interview text's own
words; the widgets, the timed drill and the appendix follow the session's language."""

from __future__ import annotations

import re

import pytest

import lessons
from lessons.common import i18n
from lessons.l09_the_whole_answer import (answers, drill, figures, followups, interview,
                                          seed_claims, walkthrough, widgets)
from parlab import planner
import paths

SEED = paths.ROOT.parent / "shared" / "seed" / "000_d73126e8f67e4da1.txt"
CJK = re.compile(r"[\u4e00-\u9fff]")
WORD = re.compile(r"[A-Za-z][A-Za-z'’-]*[,.;:]?")
JOBS = [("llama3-70B", 64, "H100"), ("7B", 4, "A100-80GB"), ("1.3B", 8, "A100-80GB"),
        ("175B", 1024, "A100-80GB"), ("70B", 4, "A100-80GB"), ("mixtral-8x7B", 64, "H100"),
        ("llama3-405B", 256, "H100")]


@pytest.fixture
def session_lang():
    """Put the session's language back after a test that switches it."""
    before = lessons.current_lang()
    yield
    lessons.lang(before)


def english_runs(text: str, least: int = 4) -> list[str]:
    """Runs of ``least`` or more plain English words in a row: a sentence left untranslated.
    Code, layouts ("dp=8 tp=4"), units and names of one to three words are not runs."""
    runs, run = [], []
    # a Chinese character or punctuation mark ends a run, as a non-word token does
    for token in re.sub(r"[\u3000-\u303f\u4e00-\u9fff\uff00-\uffef]", " | ", text).split():
        if WORD.fullmatch(token):
            run.append(token)
            continue
        if len(run) >= least:
            runs.append(" ".join(run))
        run = []
    if len(run) >= least:
        runs.append(" ".join(run))
    return runs


def test_the_check_bites():
    assert english_runs("放不下：needs more memory than that") == ["needs more memory than that"]
    assert english_runs("最优布局 dp=4 tp=1 pp=1 b=4 ZeRO-2 recompute=none（Wang 等 2023）") == []


def _pairs():
    """(where, English, Chinese) for every text the follow-ups, the claims table and the
    walk-through show."""
    out = []
    for n, (en, zh) in enumerate(zip(followups.follow_ups("en"), followups.follow_ups("zh")), 1):
        out.append((f"follow-up {n} origin", en["origin"], zh["origin"]))
        out.append((f"follow-up {n} verdict", en["verdict"], zh["verdict"]))
        assert [k for _, k in en["answer"]] == [k for _, k in zh["answer"]]
        out += [(f"follow-up {n}.{i}", e, z)
                for i, ((e, _), (z, _)) in enumerate(zip(en["answer"], zh["answer"]), 1)]
    for en, zh in zip(followups.claims("en"), followups.claims("zh"), strict=True):
        assert en["id"] == zh["id"] and en["verdict"] == zh["verdict"] and en["key"] == zh["key"]
        for field in ("part", "verdict_text", "why", "figure"):
            out.append((f"claim {en['id']} {field}", en[field], zh[field]))
    for job in JOBS:
        en, zh = walkthrough.decide(*job, lang="en"), walkthrough.decide(*job, lang="zh")
        assert [s["key"] for s in en["steps"]] == [s["key"] for s in zh["steps"]]
        assert en["best"] == zh["best"] and len(en["rows"]) == len(zh["rows"])
        for e, z in zip(en["steps"], zh["steps"]):
            out += [(f"walk-through {job} q", e["q"], z["q"]), (f"walk-through {job} a", e["a"], z["a"])]
        out += [(f"walk-through {job} kind", e["kind"], z["kind"])
                for e, z in zip(en["rows"], zh["rows"])]
    return out


def test_the_chinese_rendering_has_no_english_sentence_and_the_same_numbers():
    untranslated, numbers = [], []
    for where, en, zh in _pairs():
        if english_runs(zh):
            untranslated.append((where, english_runs(zh)))
        if i18n.numbers(en) != i18n.numbers(zh):
            numbers.append((where, en, zh))
    assert untranslated == []
    assert numbers == []


def test_the_chinese_says_something_in_chinese():
    for where, en, zh in _pairs():
        if CJK.search(zh) is None:  # a bare figure ("13.5 GB") or a layout kind ("TP + DP")
            assert zh == en and not english_runs(en, 2), where


def test_the_chinese_claims_quote_the_interview_text_and_the_english_says_the_same_numbers():
    for cid, part, claim in seed_claims.SEED_CLAIMS:
        assert set(claim) == {"en", "zh"}, cid
        # a paper of the reading list is quoted by its (English) title
        assert CJK.search(claim["zh"]) or part == seed_claims.READING, cid
        assert i18n.numbers(claim["en"]) == i18n.numbers(claim["zh"]), cid
    zh = followups.claims("zh")
    assert [r["claim"] for r in zh] == [c["zh"] for _, _, c in seed_claims.SEED_CLAIMS]
    assert {r["part"] for r in zh} >= {"标准答", "追问 1", "追问 3", "简历呼应"}


@pytest.mark.skipif(not SEED.exists(), reason="the seed text is not in this checkout")
def test_each_chinese_claim_is_the_interview_texts_own_words():
    flat = re.sub(r"\s+", "", SEED.read_text())
    for cid, _, claim in seed_claims.SEED_CLAIMS:
        for piece in claim["zh"].split("……"):  # "……" where a part is left out
            assert re.sub(r"\s+", "", piece) in flat, (cid, piece)


def test_the_walkthrough_says_the_planners_reasons_word_for_word_in_english():
    for job in JOBS[:4]:
        for c in planner.plan(*job).ranked:
            said = walkthrough.reasons(c.estimate, "en")
            for key in ("tp", "pp"):
                assert said[key] in c.reasons, (job, key, said[key], c.reasons)
            if c.dp * c.cp > 1:
                assert said["dp"] in c.reasons, (job, said["dp"], c.reasons)


def test_the_figures_render_in_the_session_language(session_lang):
    lessons.lang("zh")
    claims = figures.claims_html().data
    assert "原文说法" in claims and "「主流策略分四类" in claims and "（点击展开）" in claims
    assert "where in the text" not in claims
    assert "追问 3。" in figures.follow_up_html(2).data
    assert followups.follow_ups()[0]["verdict"] == followups.follow_ups("zh")[0]["verdict"]
    table = figures.walkthrough_html(walkthrough.decide("7B", 4, "A100-80GB"))
    assert "比第 1 名慢" in table and "只有 DP" in table and "训练状态在一张卡上放得下吗" in table
    assert "30 秒版回答" in figures.thirty_second_html().data
    numbers = interview.corner.answer("numbers", f=answers.facts())
    assert numbers.summary == "答案引用的数字" and all(CJK.search(x) for x in numbers.lines)
    lessons.lang("en")
    claims = figures.claims_html().data
    assert "where in the text" in claims and "原文说法" not in claims
    assert interview.corner.answer("numbers", f=answers.facts()).summary == \
        "The figures the answers quote"


def _parts(w):
    out, todo = [], [w]
    while todo:
        x = todo.pop()
        out.append(x)
        todo.extend(getattr(x, "children", ()))
    return out


def test_the_widgets_speak_the_session_language(session_lang):
    lessons.lang("zh")
    w = widgets.walkthrough_widget("7B", 4, "A100-80GB")
    labels = {c.description for c in _parts(w) if type(c).__name__ == "Dropdown"}
    assert labels == {"模型", "GPU 数", "GPU 型号"}
    shown = "".join(c.value for c in _parts(w) if type(c).__name__ == "HTML")
    assert "哪里" in shown and english_runs(re.sub(r"<[^>]+>", " ", shown)) == []

    t = widgets.timed_drill_widget(seed=0)
    buttons = {b.description: b for b in _parts(t) if type(b).__name__ == "Button"}
    assert set(buttons) == {"开始", "检查", "看答案", "下一题"}
    toggle = next(c for c in _parts(t) if type(c).__name__ == "ToggleButtons")
    assert toggle.value == "zh"
    buttons["开始"].click()
    assert buttons["开始"].description == "重新开始"
    html_ = lambda: "\n".join(c.value for c in _parts(t) if type(c).__name__ == "HTML")  # noqa: E731
    first = drill.mixed_drill(0)[0]
    assert first[1] in html_() and "首次答对" in html_()
    buttons["看答案"].click()
    assert "答案：" in html_() and "见 notebook" in html_()
    toggle.value = "en"  # the drill's own switch: its question and labels in English
    assert first[0].prompt in html_() and buttons["开始"].description == "Start again"
    assert "Settled in notebook" in html_()


def test_the_drill_explains_and_scores_in_both_languages():
    d = drill.TimedDrill(0, clock=lambda: 0.0)
    d.start()
    for i, (q, zh) in enumerate(d.questions):
        en_q, zh_q = d.question(i, "en"), d.question(i, "zh")
        assert en_q is q and zh_q.prompt == zh and zh_q.answer == q.answer
        assert zh_q.lang == "zh" and CJK.search(zh_q.explanation) and CJK.search(zh_q.tolerance_text)
        assert i18n.numbers(en_q.explanation) == i18n.numbers(zh_q.explanation), q.template
        assert english_runs(zh_q.explanation) == [], zh_q.explanation
    d.answer(0, d.questions[0][0].answer)
    en, zh = d.score("en")["text"], d.score("zh")["text"]
    assert "right first time" in en and "首次答对" in zh and i18n.numbers(en) == i18n.numbers(zh)
