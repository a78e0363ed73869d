"""One language switch for the lessons (lessons.lang, PARLAB_LANG, run.py lab --lang, the drill's
--lang), the catalogues' check, and every drill asked in Chinese with the English's numbers."""

import importlib.util
import os
import re
import subprocess
import sys

import pytest
import paths

import lessons
from lessons.common import drills, i18n
from lessons.common.drills.quiz import run_quiz
from lessons.common.drills.text import TEXT

LIB = str(paths.ROOT / "lib")
CJK = re.compile(r"[\u4e00-\u9fff]")


@pytest.fixture
def session_lang():
    """Put the session's language back after a test that switches it."""
    before = lessons.current_lang()
    yield
    lessons.lang(before)


def test_lang_switches_the_session_and_names_the_choices(session_lang):
    assert lessons.lang("zh") == "zh" and lessons.current_lang() == "zh"
    assert CJK.search(drills.generate("bubble_1f1b", seed=1).prompt)
    lessons.lang("en")
    assert not CJK.search(drills.generate("bubble_1f1b", seed=1).prompt)
    for bad in ("fr", "ZH", "", None):
        with pytest.raises(ValueError, match=r"lang=.* must be one of en, zh"):
            lessons.lang(bad)
    assert lessons.current_lang() == "en"  # a refused code changes nothing
    with pytest.raises(ValueError, match="lang='de' must be one of en, zh"):
        drills.generate("bubble_1f1b", lang="de")


def _python(code, lang):
    env = {**os.environ, "PYTHONPATH": LIB}
    env.pop("PARLAB_LANG", None)
    if lang is not None:
        env["PARLAB_LANG"] = lang
    return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                          timeout=120)


def test_parlab_lang_is_read_at_import():
    code = "import lessons; print(lessons.current_lang())"
    assert _python(code, None).stdout.strip() == "en"
    assert _python(code, "zh").stdout.strip() == "zh"
    bad = _python(code, "klingon")
    assert bad.returncode != 0 and "PARLAB_LANG: lang='klingon' must be one of en, zh" in bad.stderr


def test_run_py_lab_lang_sets_the_kernels_environment():
    spec = importlib.util.spec_from_file_location("run_py_i18n", str(paths.ROOT / "run.py"))
    run = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(run)
    assert run.LANGS == i18n.LANGS  # run.py imports nothing of the lab's: the same list, twice
    env = {}
    assert run.take_lang(["--port", "9999", "--lang", "zh", "--reset"], env) == \
        ["--port", "9999", "--reset"]
    assert env == {"PARLAB_LANG": "zh"}
    env = {}
    assert run.take_lang(["--lang=en"], env) == [] and env == {"PARLAB_LANG": "en"}
    env = {}
    assert run.take_lang(["--port", "1"], env) == ["--port", "1"] and env == {}
    for bad in (["--lang", "fr"], ["--lang"]):
        with pytest.raises(SystemExit, match="must be one of en, zh"):
            run.take_lang(bad, {})


CATALOGUES = sorted(p.relative_to(paths.ROOT / "lib").with_suffix("").as_posix().replace("/", ".")
                    for p in (paths.ROOT / "lib" / "lessons").rglob("text.py"))


@pytest.mark.parametrize("module", CATALOGUES)
def test_every_catalogue_is_complete_in_both_languages(module):
    """Each lessons' text.py: every key in both languages, the same fields, the same numbers."""
    import importlib
    assert i18n.catalogue_problems(importlib.import_module(module).TEXT) == []


def test_catalogue_check_catches_each_kind_of_problem():
    assert i18n.catalogue_problems(TEXT) == []
    planted = {
        "no_zh": {"en": "Check"},
        "fields": {"en": "{n} ranks", "zh": "{m} 个 rank"},
        "digits": {"en": "within {pct} of 2 answers", "zh": "与 {pct} 以内"},
        "fine": {"en": "{n} ranks", "zh": "{n} 个 rank"},
    }
    problems = "\n".join(i18n.catalogue_problems(planted))
    assert "no_zh: no text in zh" in problems
    assert "fields: fields differ" in problems
    assert "digits: numbers differ" in problems
    assert "fine" not in problems
    assert i18n.numbers("2,048 tokens over 8 GPUs, 12.5%") == ["12.5", "2,048", "8"]


def test_every_drill_asks_in_chinese_with_the_english_numbers():
    """Each template, over several seeds: the same answer and the same numbers written in both
    languages, the Chinese prompt in Chinese, and the unit and tolerance lines too."""
    for name in drills.templates():
        for seed in range(6):
            en, zh = (drills.generate(name, seed=seed, lang=c) for c in i18n.LANGS)
            assert (en.answer, en.unit, en.rel_tol) == (zh.answer, zh.unit, zh.rel_tol), name
            assert CJK.search(zh.prompt) and not CJK.search(en.prompt), (name, seed)
            assert i18n.numbers(en.prompt) == i18n.numbers(zh.prompt), (name, seed, en.prompt,
                                                                        zh.prompt)
            assert zh.lang == "zh" and CJK.search(zh.explanation.splitlines()[-1]), name


def test_terminal_quiz_in_chinese():
    said = []
    answers = iter(["oops", "", "1e30", "1e30"])
    tally = run_quiz("pp", n=2, seed=0, read=lambda _: next(answers), out=said.append,
                     lang="zh")
    text = "\n".join(said)
    assert "第 1/2 题" in text and "已跳过。答案是" in text and "答错了：你答的是 1e30" in text
    assert "（不计入尝试次数）" in text and f"得分：{tally.text('zh')}" in text
    assert "Question" not in text and "score:" not in text
    for seed in (0, 1):  # the questions themselves, not only the quiz's words around them
        assert drills.generate(topic="pp", seed=seed, lang="zh").prompt[:12] in text


@pytest.mark.parametrize("lang, first_line", [("zh", "第 1/1 题"), ("en", "Question 1/1")])
def test_drill_cli_lang(lang, first_line):
    env = {**os.environ, "PYTHONPATH": LIB}
    env.pop("PARLAB_LANG", None)
    r = subprocess.run([sys.executable, "-m", "lessons", "drill", "--lang", lang, "--n", "1"],
                       input="\n", env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and first_line in r.stdout, r.stdout + r.stderr
    bad = subprocess.run([sys.executable, "-m", "lessons", "drill", "--lang", "fr"], env=env,
                         capture_output=True, text=True, timeout=120)
    assert bad.returncode != 0 and "lang='fr' must be one of en, zh" in bad.stderr


def test_drill_widget_in_chinese(session_lang):
    from lessons.common.drills.widgets import drill_widget

    def parts(w):
        out, todo = [], [w]
        while todo:
            x = todo.pop()
            out.append(x)
            todo.extend(getattr(x, "children", ()))
        return out
    lessons.lang("zh")  # the session's language, unless the call names one
    for w, want in ((drill_widget(("pp", "cp")), "zh"), (drill_widget("pp", lang="en"), "en")):
        buttons = {b.description for b in parts(w) if type(b).__name__ == "Button"}
        assert buttons == ({"检查", "看答案", "下一题"} if want == "zh"
                           else {"Check", "Show answer", "Next question"})
    w = drill_widget(("pp", "cp"))
    dropdown = next(c for c in parts(w) if type(c).__name__ == "Dropdown")
    assert dropdown.label == "以上全部"
    assert dropdown.options[-1] == ("上下文并行", "cp")  # shown by its Chinese name, keyed as ever
    dropdown.value = "cp"
    assert any("[上下文并行]" in getattr(c, "value", "") for c in parts(w) if type(c).__name__ == "HTML")


def test_the_whole_answer_follows_the_session(session_lang):
    from lessons.l09_the_whole_answer import answers, followups, walkthrough
    lessons.lang("zh")
    assert answers.thirty_second() == answers.thirty_second("zh")
    assert followups.follow_ups() == followups.follow_ups("zh")
    assert followups.claims() == followups.claims("zh")
    assert walkthrough.decide("7B", 4, "A100-80GB") == walkthrough.decide("7B", 4, "A100-80GB", lang="zh")
    lessons.lang("en")
    assert answers.thirty_second() == answers.thirty_second("en")
    assert followups.follow_ups() == followups.follow_ups("en")
    with pytest.raises(ValueError, match="lang='jp' must be one of en, zh"):
        answers.three_minute("jp")
