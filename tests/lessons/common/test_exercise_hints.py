"""Tiered help: every coding exercise has hint 1, hint 2 and its solution, each behind
its own click, and nothing of them shows before a click."""

from __future__ import annotations

import importlib
from html.parser import HTMLParser

import pytest

import lessons
from lessons import FOLDERS
from lessons.common.checkers.hints import in_lang

TOPICS = list(FOLDERS.values())  # every lesson has exercises, and hints for its coding ones
EXERCISES = [(t, n) for t in TOPICS
             for n in importlib.import_module(f"lessons.{t}.exercises").SOLUTIONS]


def hints_of(topic: str, lang: str = "en") -> dict:
    """A lesson's hints in ``lang`` (each hint is {"en", "zh"}, or a string: English only)."""
    return {n: tuple(in_lang(h, lang) for h in pair)
            for n, pair in importlib.import_module(f"lessons.{topic}.hints").HINTS.items()}


class _Visible(HTMLParser):
    """The text a browser shows with every <details> closed: summaries of the open
    levels only (a closed details shows its summary and nothing else)."""

    def __init__(self):
        super().__init__()
        self.stack, self.shown, self.in_summary = [], [], 0

    def handle_starttag(self, tag, attrs):
        if tag == "details":
            self.stack.append(False)  # closed: only its summary is visible
        elif tag == "summary":
            self.in_summary += 1

    def handle_endtag(self, tag):
        if tag == "details":
            self.stack.pop()
        elif tag == "summary":
            self.in_summary -= 1

    def handle_data(self, data):
        # visible: outside any details, or the summary of the outermost closed one
        depth = len(self.stack)
        if depth == 0 or (depth == 1 and self.in_summary):
            self.shown.append(data)


def test_every_exercise_has_two_hints_and_no_stale_ones():
    for topic in TOPICS:  # each lesson's hints are for its own exercises, every one of them
        names = {n for t, n in EXERCISES if t == topic}
        assert set(hints_of(topic)) == names, topic
    for name, tiers in ((n, t) for topic in TOPICS for n, t in hints_of(topic).items()):
        assert len(tiers) == 2 and all(len(t) > 40 for t in tiers), name
        assert tiers[0] != tiers[1], name


@pytest.mark.parametrize("topic,name", EXERCISES)
def test_hints_open_one_level_at_a_time_and_hide_the_solution(topic, name, english):
    mod = importlib.import_module(f"lessons.{topic}.exercises")
    hints = hints_of(topic)
    page = mod.hints(name).data
    assert page.count("<details>") == 3  # hint 1 > hint 2 > solution, nested
    assert page.index("Hint 2") > page.index(hints[name][0][:20])
    assert page.index("Reference solution") > page.index(hints[name][1][:20])
    assert f"def {name}(" in page  # the solution, under the exercise's own name
    seen = _Visible()
    seen.feed(page)
    visible = "".join(seen.shown)
    assert "Hint 1" in visible and name in visible
    for hidden in (*hints[name], "Hint 2", "def "):
        assert hidden[:20] not in visible, (name, hidden)


def test_an_unknown_exercise_is_a_value_error_naming_the_known_ones():
    from lessons.l00_collectives import exercises as collectives
    with pytest.raises(ValueError, match="my_reduce_scatter"):
        collectives.hints("my_reduce")


@pytest.mark.parametrize("topic,name", EXERCISES)
def test_hints_in_chinese(topic, name):
    """In a Chinese session the labels and both hints are Chinese; the solution is the code."""
    mod = importlib.import_module(f"lessons.{topic}.exercises")
    was = lessons.current_lang()
    lessons.lang("zh")
    try:
        page = mod.hints(name).data
    finally:
        lessons.lang(was)
    first, second = hints_of(topic, "zh")[name]
    assert page.index("提示 2") > page.index(first[:12]) and page.index("参考答案") > page.index(second[:12])
    assert "Hint 2" not in page and f"def {name}(" in page
