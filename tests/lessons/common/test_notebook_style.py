"""Each notebook reads as a lesson, not a test harness (what a learner sees in the cells):
short prose cells, no test-suite talk, tables and figures from a named function in the
strategy's ``figures.py``, and one click-to-open help (hint 1, hint 2, solution) for every
coding exercise. Each rule names the notebook and the cell that breaks it."""

from __future__ import annotations

import importlib
import json
import re
from pathlib import Path

import pytest
import paths
from lessons import FOLDERS

NOTEBOOKS = sorted(paths.NOTEBOOKS.glob("[0-9][0-9]_*.ipynb"))
MAX_MARKDOWN = 1500  # characters of one prose cell; longer ones become notes, figures or two cells
# words about our own test machinery, which a learner has no use for
PLUMBING = re.compile(r"tests?/|pytest|nbval|\bCI\b|test suite|\bhogs?\b|unit tests?", re.I)


def _cells(path: Path):
    return [(i, c["cell_type"], "".join(c["source"])) for i, c in
            enumerate(json.loads(path.read_text())["cells"])]


ids = [p.name[:2] for p in NOTEBOOKS]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=ids)
def test_prose_cells_are_short(path):
    long = {i: len(s) for i, kind, s in _cells(path) if kind == "markdown" and len(s) > MAX_MARKDOWN}
    assert not long, f"{path.name}: markdown cells over {MAX_MARKDOWN} characters (cell: length): {long}"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=ids)
def test_no_test_suite_talk(path):
    hits = {i: m.group(0) for i, _, s in _cells(path) for m in PLUMBING.finditer(s)}
    assert not hits, f"{path.name}: test-suite words in cells (cell: word): {hits}"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=ids)
def test_tables_come_from_a_named_figure_function(path):
    raw = [i for i, kind, s in _cells(path) if kind == "code" and "viz.table(" in s]
    assert not raw, (f"{path.name}: cells {raw} build a table in the notebook; "
                     f"call a named function of the strategy's figures.py instead")


@pytest.mark.parametrize("path", NOTEBOOKS, ids=ids)
def test_every_coding_exercise_has_its_tiered_help(path):
    cells = _cells(path)
    code = "\n".join(s for _, kind, s in cells if kind == "code")
    solutions = importlib.import_module(f"lessons.{FOLDERS[path.name[:2]]}.exercises").SOLUTIONS
    missing = [n for n in solutions if not re.search(rf"\.hints\(\s*[\"']{n}[\"']\s*\)", code)]
    assert not missing, f"{path.name}: no hints(...) cell for {missing}"
    old = [i for i, _, s in cells if "show_solution" in s or "solution_html" in s]
    assert not old, f"{path.name}: cells {old} still open the solution another way; use hints(name)"
