"""The answer box: what a learner may type, and the verdict it shows."""

from __future__ import annotations

import pytest

from lessons.common.checkers import check_number
from lessons.common.checkers.widgets import answer_box, parse_value


@pytest.mark.parametrize("text, value", [
    ("", None), ("  ", None), ("42", 42.0), ("1.5e9", 1.5e9), ("3,072", 3072.0), ("1_000", 1000.0),
    ("3/11", 3 / 11), (" 6 / 4 ", 1.5), ("[(0, 1), (2, 0)]", [(0, 1), (2, 0)]),
    ("{'all_reduce': 2}", {"all_reduce": 2}), ("1/0", "1/0"), ("lots", "lots")])
def test_parse_value(text, value):
    assert parse_value(text) == value


def test_answer_box_checks_what_was_typed():
    box = answer_box(lambda x: check_number(x, 3 / 11, rel_tol=0.01), label="bubble")
    row = box.children[1]
    text, button, out = row.children[0], row.children[1], box.children[2]
    text.value = "3/11"
    button.click()
    assert "Correct" in out.value
    text.value = "0.5"
    button.click()
    assert "Not yet" in out.value and "off by a factor" in out.value


def test_a_checker_bug_is_not_shown_as_a_wrong_answer():
    def broken(x):
        raise KeyError("oops")
    box = answer_box(broken)
    box.children[0].children[0].value = "1"
    box.children[0].children[1].click()
    assert "checker error" in box.children[1].value
