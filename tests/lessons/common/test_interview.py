"""The interview corners as data (lessons.common.interview): an answer opens only on a click,
a wrong key is a ValueError naming it, and every notebook names only answers its lesson has,
each of them."""

from __future__ import annotations

import importlib
import json
import re
from pathlib import Path

import pytest

from lessons import FOLDERS
from lessons.common.interview import Answer, Corner

ROOT = Path(__file__).resolve().parents[3]
NOTEBOOKS = {p.name[:2]: p for p in (ROOT / "notebooks").glob("*.ipynb")}
WITH_CORNER = sorted(s for s, folder in FOLDERS.items()
                     if (ROOT / "lib" / "lessons" / folder / "interview.py").exists())


def _corner() -> Corner:
    return Corner({"b": lambda loss: Answer("(b) answer", [f"loss {loss:.2f}, a sentence"],
                                            "The verdict.")})


def test_an_answer_is_a_closed_fold_out():
    html = _corner().show("b", loss=2.5).data
    assert html.startswith("<details><summary><b>(b) answer</b>")
    assert "<details open" not in html
    assert "<b>The verdict.</b>" in html and "<li>loss 2.50, a sentence</li>" in html


def test_an_unknown_question_is_a_value_error_naming_it():
    with pytest.raises(ValueError, match=r"key='z' must be one of b"):
        _corner().show("z")


def _shown_keys(stem: str) -> list[str]:
    cells = json.loads(NOTEBOOKS[stem].read_text())["cells"]
    return [k for c in cells if c["cell_type"] == "code"
            for k in re.findall(r'interview\.show\("([^"]+)"', "".join(c["source"]))]


def test_every_lesson_with_an_interview_corner_is_checked():
    assert WITH_CORNER == [f"{i:02d}" for i in range(10)]


@pytest.mark.parametrize("stem", WITH_CORNER)
def test_the_notebook_shows_each_answer_of_its_lesson_once(stem):
    corner = importlib.import_module(f"lessons.{FOLDERS[stem]}.interview").corner
    shown = _shown_keys(stem)
    assert sorted(shown) == sorted(corner.answers), (
        f"{NOTEBOOKS[stem].name} shows {shown}; its interview.py has {list(corner.answers)}")
