"""pinned.py, without a browser: the check the browser test makes on each notebook it ran
(its saved outputs against the pinned ones, by nbval's rules) passes what nbval passes and
fails, naming the cell, what nbval fails: a changed pinned line, an output nbval finds
missing or unexpected, a notebook whose cells do not match."""

from __future__ import annotations

import json

import nbformat
import pytest

import paths
from pinned import compare_pinned

TAG = "nbval-check-output"


def _cell(source, outputs=(), tags=(), count=1):
    c = nbformat.v4.new_code_cell(source, execution_count=count)
    c.outputs = [nbformat.from_dict(o) for o in outputs]
    if tags:
        c.metadata["tags"] = list(tags)
    return c


def _out(text, name="stdout"):
    return {"output_type": "stream", "name": name, "text": text}


def _write(path, cells):
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_markdown_cell("# a notebook")] + cells
    nbformat.write(nb, str(path))
    return path


def _pinned(tmp_path):
    return _write(tmp_path / "pinned.ipynb", [
        _cell("x = 1", count=None),
        _cell("print('bytes', 8)", [_out("bytes 8\n")], [TAG]),
        _cell("print('a time')", count=None),
        _cell("2 + 2", [{"output_type": "execute_result", "execution_count": 4,
                         "data": {"text/plain": "4"}, "metadata": {}}], [TAG])])


def _saved(tmp_path, second="bytes 8\n", more=(), result="4"):
    return _write(tmp_path / "saved.ipynb", [
        _cell("x = 1", count=1),
        _cell("print('bytes', 8)", [_out(second), *more], [TAG], count=2),
        _cell("print('a time')", [_out("0.123 s\n")], count=3),  # not tagged: not compared
        _cell("2 + 2", [{"output_type": "execute_result", "execution_count": 9,
                         "data": {"text/plain": result}, "metadata": {}}], [TAG], count=4)])


def test_equal_outputs_pass_whatever_the_counts_and_untagged_cells(request, tmp_path):
    checked, failures = compare_pinned(request.session, _saved(tmp_path), _pinned(tmp_path))
    assert (checked, failures) == (2, [])


def test_streams_are_merged_as_nbval_merges_them(request, tmp_path):
    # two writes to stdout, and a progress line overwritten with \r, read as one output
    saved = _saved(tmp_path, second="bytes ", more=[_out("1\rbytes 8\n")])
    assert compare_pinned(request.session, saved, _pinned(tmp_path)) == (2, [])


def test_a_changed_line_is_caught_naming_the_cell(request, tmp_path):
    checked, failures = compare_pinned(request.session, _saved(tmp_path, second="bytes 9\n"),
                                       _pinned(tmp_path), label="notebooks/x.ipynb")
    assert checked == 2 and len(failures) == 1
    assert failures[0].startswith("notebooks/x.ipynb::Cell 1 (cell 2 of the notebook, "
                                  "\"print('bytes', 8)\"): outputs differ from the pinned ones")
    assert "mismatch 'stdout'" in failures[0] and "bytes 9" in failures[0]


def test_a_changed_value_and_an_unexpected_stderr_are_caught(request, tmp_path):
    saved = _saved(tmp_path, more=[_out("a warning\n", "stderr")], result="5")
    checked, failures = compare_pinned(request.session, saved, _pinned(tmp_path))
    assert [f.split(" (")[0] for f in failures] == ["pinned.ipynb::Cell 1", "pinned.ipynb::Cell 3"]
    assert "Unexpected output fields" in failures[0] and "stderr" in failures[0]
    assert "mismatch 'text/plain'" in failures[1]


def test_a_missing_output_and_mismatched_cells_are_caught(request, tmp_path):
    saved = _write(tmp_path / "saved.ipynb", [_cell("x = 1"), _cell("print('bytes', 8)", [], [TAG]),
                                              _cell("print('a time')"), _cell("2 + 2", [], [TAG])])
    failures = compare_pinned(request.session, saved, _pinned(tmp_path))[1]
    assert len(failures) == 2 and all("Missing output fields" in f for f in failures)
    # Run All stopped at an error before the last cell: one line says it was not compared
    stopped = _write(tmp_path / "stopped.ipynb", [
        _cell("x = 1"), _cell("print('bytes', 8)", [_out("bytes 8\n")], [TAG]),
        _cell("print('a time')"), _cell("2 + 2", [], [TAG], count=None)])
    assert compare_pinned(request.session, stopped, _pinned(tmp_path)) == (2, [
        "pinned.ipynb: 1 pinned cells did not run, so their outputs were not compared: Cell 3"])
    fewer = _write(tmp_path / "fewer.ipynb", [_cell("x = 1")])
    assert "has 1 code cells, the pinned one 4" in compare_pinned(request.session, fewer,
                                                                  _pinned(tmp_path))[1][0]


@pytest.mark.parametrize("name", ["07_mixed_precision.ipynb", "09_the_whole_answer.ipynb"])
def test_a_real_notebook_passes_itself_and_a_planted_pin_is_caught(request, tmp_path, name):
    real = paths.NOTEBOOKS / name
    assert compare_pinned(request.session, real, real)[1] == []
    nb = json.loads(real.read_text())
    code = [c for c in nb["cells"] if c["cell_type"] == "code"]
    k, cell = next((k, c) for k, c in enumerate(code) if TAG in c["metadata"].get("tags", []))
    out = next(o for o in cell["outputs"] if o.get("name") == "stdout")
    out["text"] = ["a planted wrong pin\n"] + out["text"]
    planted = tmp_path / name
    planted.write_text(json.dumps(nb))
    checked, failures = compare_pinned(request.session, real, planted)
    assert checked == sum(TAG in c["metadata"].get("tags", []) for c in code)
    assert len(failures) == 1 and failures[0].startswith(f"{name}::Cell {k} (")
    assert "a planted wrong pin" in failures[0]
