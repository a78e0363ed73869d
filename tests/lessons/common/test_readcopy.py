"""Links that land on their section and start no kernel: the read-only copies of the
sections notebook 09 links to (lessons.common.readcopy), and where 09's links point in
JupyterLab with copies, without them, and in run.py html's pages."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from lessons.common import readcopy
from lessons.l09_the_whole_answer import sections

ROOT = Path(__file__).resolve().parents[3]


def _md(text):
    return {"cell_type": "markdown", "metadata": {}, "source": text}


def _code(text):
    return {"cell_type": "code", "metadata": {}, "source": text, "outputs": [], "execution_count": None}


CELLS = [_md("# 03 · Pipelines"), _md("## 1 · Stages\n\ntext"), _code("x = 1"),
         _md("## 2 · The bubble\n\nprose"), _code("y = 2"), _md("### A sub-part\n\nmore"),
         _code("z = 3"), _md("## 3 · Next")]


def test_a_section_runs_to_the_next_heading_of_its_level():
    got = readcopy.section_cells(CELLS, "2 · The bubble")
    assert [c["source"] for c in got] == [c["source"] for c in CELLS[3:7]]
    sub = readcopy.section_cells(CELLS, "A sub-part")
    assert [c["source"] for c in sub] == ["### A sub-part\n\nmore", "z = 3", "## 3 · Next"][:2]
    with pytest.raises(ValueError, match="heading='4 · Gone' is in no markdown cell"):
        readcopy.section_cells(CELLS, "4 · Gone")


def test_every_linked_section_has_its_page(tmp_path):
    """Each page holds its section's heading and none of the next section's."""
    keys = ("bubble", "hierarchical", "goodput")
    written = readcopy.write_copies({k: sections.SECTIONS[k] for k in keys}, ROOT / "notebooks",
                                    tmp_path, label=sections.title)
    assert sorted(written) == sorted(keys)
    page = (tmp_path / "bubble.html").read_text()
    assert "Notebook 03 §4 · The bubble, predicted and measured" in page and "read-only" in page
    assert 'id="4-%C2%B7-The-bubble,-predicted-and-measured"' in page  # the heading itself
    assert "What 1F1B really changes: memory" not in page  # section 5 is not in it
    assert "<script" not in page
    # written again only when the notebook changed
    assert readcopy.write_copies({"bubble": sections.SECTIONS["bubble"]}, ROOT / "notebooks",
                                 tmp_path, label=sections.title) == []
    old = (ROOT / "notebooks" / sections.SECTIONS["bubble"][0]).stat().st_mtime - 60  # before its notebook
    os.utime(tmp_path / "bubble.html", (old, old))
    assert readcopy.write_copies({"bubble": sections.SECTIONS["bubble"]}, ROOT / "notebooks",
                                 tmp_path, label=sections.title) == ["bubble"]


def test_where_a_link_goes(tmp_path, monkeypatch):
    monkeypatch.delenv("PARLAB_LINKS", raising=False)
    anchor = sections.anchor(sections.SECTIONS["bubble"][1])
    # no copies beside the notebook: the notebook at the heading
    assert sections.href("bubble", here=str(tmp_path)) == f"03_pipeline_parallel.ipynb#{anchor}"
    # copies written (run.py lab): the read-only page, no kernel started
    (tmp_path / "read").mkdir()
    (tmp_path / "read" / "bubble.html").write_text("x")
    assert sections.href("bubble", here=str(tmp_path)) == "read/bubble.html"
    # run.py html's pages: the section in its page
    monkeypatch.setenv("PARLAB_LINKS", "pages")
    assert sections.href("bubble", here=str(tmp_path)) == f"03_pipeline_parallel.html#{anchor}"


def test_run_py_lab_writes_the_copies_in_the_background():
    src = (ROOT / "run.py").read_text()
    assert '"read-copies", "--out", os.path.join(WORK, "read")' in src
    assert "client.execute(env=kernel_env)" in src and 'PARLAB_LINKS="pages"' in src
