"""The cheat sheets (lessons.common.cheatsheet): one per topic, both languages with the same
numbers, each number computed by parlab.cost, MathJax from the pages' own assets."""

from __future__ import annotations

import re
from pathlib import Path

from parlab import cost
from lessons.common import cheatsheet, i18n

ROOT = Path(__file__).resolve().parents[3]


def test_every_topic_has_a_sheet_in_both_languages_with_the_same_numbers():
    sheets = cheatsheet.sheets()
    assert sorted(sheets) == [f"{i:02d}" for i in range(9)]
    for number, sheet in sheets.items():
        assert sheet["title"]["en"] and re.search(r"[\u4e00-\u9fff]", sheet["title"]["zh"])
        assert len(sheet["entries"]) >= 2, number
        for e in sheet["entries"]:
            assert e["formula"] and e["source"], e
            assert i18n.catalogue_problems({"name": e["name"], "example": e["example"]}) == [], e
            assert re.search(r"[\u4e00-\u9fff]", e["example"]["zh"]), e


def test_the_numbers_are_the_cost_models():
    sheets = cheatsheet.sheets()
    examples = " ".join(e["example"]["en"] for s in sheets.values() for e in s["entries"])
    assert f"{cost.bubble_fraction(4, 8):.1%}" in examples
    seven_b = cost.MODEL_PRESETS["7B"].n_params
    assert f"{cost.zero_memory(seven_b, 64, 3)['total'] / 1e9:.2f} GB" in examples
    assert f"{cost.young_interval(60, 3 * 3600):.0f} s" in examples


def test_pages_read_offline_and_run_py_html_builds_them(tmp_path):
    paths = cheatsheet.write_all(str(tmp_path), "assets/mathjax-2.7.9/MathJax.js?config=TeX-AMS_CHTML")
    assert len(paths) == 10 and all(Path(p).exists() for p in paths)
    page = (tmp_path / "cheatsheet-03.html").read_text()
    assert "<script src='assets/mathjax-2.7.9/MathJax.js?config=TeX-AMS_CHTML'>" in page
    assert "http" not in page.split("<body>")[0]  # nothing from the network
    assert "流水线并行" in page and "\\[\\frac{p-1}{m+p-1}\\]" in page
    index = (tmp_path / "cheatsheets.html").read_text()
    assert index.count("<li>") == 9 and "cheatsheet-08.html" in index
    assert "cheatsheet import write_all" in (ROOT / "run.py").read_text()
