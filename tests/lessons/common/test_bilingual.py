"""Everything a candidate rehearses exists in English and Chinese, one catalogue per lesson
(its ``text.py``): the interview corners' answers (``INTERVIEW``, shown by
``lessons.common.interview.said``), the checkers' messages and the widgets' labels
(``TEXT``), and the hints (``hints.py``, each hint ``{"en", "zh"}``). The questions of a
corner are markdown, English then Chinese in the same cell, so both show before any run. Each check is per lesson, so a
lesson that falls behind names itself."""

from __future__ import annotations

import ast
import importlib
import json
import re
from pathlib import Path

import pytest

from lessons import FOLDERS
from lessons.common import i18n

ROOT = Path(__file__).resolve().parents[3]
NOTEBOOKS = {p.name[:2]: p for p in (ROOT / "notebooks").glob("*.ipynb")}
STEMS = sorted(FOLDERS)
CJK = re.compile(r"[\u3400-\u9fff]")


def _module(stem: str, name: str):
    return importlib.import_module(f"lessons.{FOLDERS[stem]}.{name}")


def _catalogues(stem: str) -> dict:
    """Every catalogue in the lesson's text.py: its upper-case dicts of {"en", "zh"}."""
    text = _module(stem, "text")
    return {n: v for n, v in vars(text).items() if n.isupper() and isinstance(v, dict)}


@pytest.mark.parametrize("stem", STEMS)
def test_the_lesson_has_one_catalogue_complete_in_both_languages(stem):
    cats = _catalogues(stem)
    assert "TEXT" in cats, f"lessons/{FOLDERS[stem]}/text.py has no TEXT"
    for name, cat in cats.items():
        assert i18n.catalogue_problems(cat) == [], name


@pytest.mark.parametrize("stem", STEMS)
def test_every_interview_answer_comes_from_the_catalogue(stem):
    """Each answer of the corner has its summary in INTERVIEW (its lines beside it), and
    interview.py itself holds no sentence: the words are in text.py only."""
    corner = _module(stem, "interview").corner
    catalogue = getattr(_module(stem, "text"), "INTERVIEW", {})
    summaries = {k for k in catalogue if "." not in k}
    assert sorted(summaries) == sorted(corner.answers), (
        f"answers {sorted(corner.answers)}, INTERVIEW summaries {sorted(summaries)}")
    path = ROOT / "lib" / "lessons" / FOLDERS[stem] / "interview.py"
    tree = ast.parse(path.read_text())
    docs = {id(n.body[0].value) for n in ast.walk(tree)
            if isinstance(n, (ast.Module, ast.FunctionDef, ast.ClassDef)) and n.body
            and isinstance(n.body[0], ast.Expr) and isinstance(n.body[0].value, ast.Constant)}
    prose = [n.value for n in ast.walk(tree) if isinstance(n, ast.Constant)
             and isinstance(n.value, str) and id(n) not in docs and len(n.value.split()) >= 4]
    assert prose == [], f"{path.name} still writes text: {prose[:3]}"


@pytest.mark.parametrize("stem", STEMS)
def test_every_hint_is_in_both_languages(stem):
    hints = _module(stem, "hints").HINTS
    for name, pair in hints.items():
        assert len(pair) == 2, name
        problems = i18n.catalogue_problems({f"{name}[{i}]": h for i, h in enumerate(pair)})
        assert problems == [], problems


def _corner_questions(stem: str) -> list[tuple[int, str]]:
    """The markdown cells of the interview corner (the section whose heading names it)
    that ask something: a question mark outside a fold-out."""
    cells = json.loads(NOTEBOOKS[stem].read_text())["cells"]
    out, inside = [], False
    for i, c in enumerate(cells):
        src = "".join(c["source"])
        if c["cell_type"] != "markdown":
            continue
        if src.startswith("## "):
            inside = "interview" in src.lower().split("\n", 1)[0]
        asked = re.sub(r"<details.*?</details>", "", src, flags=re.S)
        if inside and "?" in asked:
            out.append((i, src))
    return out


@pytest.mark.parametrize("stem", [s for s in STEMS if s != "09"])
def test_every_corner_question_is_asked_in_both_languages(stem):
    questions = _corner_questions(stem)
    assert questions, f"{NOTEBOOKS[stem].name}: no question in its interview corner"
    english_only = [i for i, src in questions if not CJK.search(src)]
    assert english_only == [], f"{NOTEBOOKS[stem].name}: cells {english_only} ask in English only"
