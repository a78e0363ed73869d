"""The cells nbval compares (tagged ``nbval-check-output``) keep, once pinned by
tools/pin_outputs.py, only their printed stdout and their value. A ``display(...)`` in such
a cell is a third output that nbval finds unexpected on every run ("Unexpected output
fields"), so a table shown with display() goes in the cell before the checked one."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import paths

NOTEBOOKS = sorted(paths.NOTEBOOKS.glob("[0-9][0-9]_*.ipynb"))
TAG = "nbval-check-output"
DISPLAY = re.compile(r"(^|[^\w.])display\(", re.M)


def displaying_checked_cells(cells) -> list[int]:
    return [i for i, c in enumerate(cells) if c["cell_type"] == "code"
            and TAG in c.get("metadata", {}).get("tags", [])
            and DISPLAY.search("".join(c["source"]))]


def test_rule_catches_a_displayed_table_in_a_checked_cell():
    cell = {"cell_type": "code", "metadata": {"tags": [TAG]},
            "source": ["t = demos.table()\n", "display(figures.t(t))\n", "print(t)"]}
    assert displaying_checked_cells([cell]) == [0]
    assert displaying_checked_cells([dict(cell, metadata={})]) == []


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.name[:2] for p in NOTEBOOKS])
def test_checked_cells_do_not_display(path):
    bad = displaying_checked_cells(json.loads(path.read_text())["cells"])
    assert not bad, (f"{path.name}: checked cells {bad} call display(), an output the pinned "
                     f"notebook cannot hold; show the table in the cell before")
