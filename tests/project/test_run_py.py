"""run.py: the learner's working copies (lab), --allow-root, and static HTML pages (html)."""

import importlib.util
import os
import re

import nbformat
import pytest
import paths

ROOT = str(paths.ROOT)


@pytest.fixture(scope="module")
def run():
    spec = importlib.util.spec_from_file_location("parlab_run_py", os.path.join(ROOT, "run.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _notebook(path, *cells):
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_markdown_cell(c[3:]) if c.startswith("md:")
                else nbformat.v4.new_code_cell(c) for c in cells]
    nbformat.write(nb, str(path))


def test_lab_copies_once_keeps_edits_and_adds_new_notebooks(run, tmp_path):
    src, work = tmp_path / "notebooks", tmp_path / "work"
    src.mkdir()
    for name in ("00_a.ipynb", "01_b.ipynb"):
        _notebook(src / name, f"print('{name}')")
    (src / "notes.txt").write_text("not a notebook")
    done = run.prepare_work(notebooks=str(src), work=str(work))
    assert done == {"copied": ["00_a.ipynb", "01_b.ipynb"], "kept": [], "backup": None}
    assert sorted(os.listdir(work)) == ["00_a.ipynb", "01_b.ipynb"]
    (work / "00_a.ipynb").write_text("my edits")  # the learner works on the copy
    _notebook(src / "02_c.ipynb", "1")  # a notebook added later
    done = run.prepare_work(notebooks=str(src), work=str(work))
    assert done["copied"] == ["02_c.ipynb"] and done["kept"] == ["00_a.ipynb", "01_b.ipynb"]
    assert (work / "00_a.ipynb").read_text() == "my edits"
    assert "print('00_a.ipynb')" in (src / "00_a.ipynb").read_text()  # the original untouched


def test_reset_moves_the_copies_to_a_backup_and_copies_afresh(run, tmp_path):
    src, work = tmp_path / "notebooks", tmp_path / "work"
    src.mkdir()
    _notebook(src / "00_a.ipynb", "x = 1")
    run.prepare_work(notebooks=str(src), work=str(work))
    (work / "00_a.ipynb").write_text("my edits")
    (work / "mine.ipynb").write_text("my own notebook")
    (work / ".ipynb_checkpoints").mkdir()
    (work / "data.csv").write_text("1,2")  # not a notebook: stays where it is
    done = run.prepare_work(reset=True, notebooks=str(src), work=str(work))
    backup = done["backup"]
    assert os.path.dirname(backup) == str(work)
    assert re.fullmatch(r"backup-\d{8}-\d{6}(-\d+)?", os.path.basename(backup))
    assert sorted(os.listdir(backup)) == [".ipynb_checkpoints", "00_a.ipynb", "mine.ipynb"]
    assert open(os.path.join(backup, "00_a.ipynb")).read() == "my edits"  # nothing deleted
    assert done["copied"] == ["00_a.ipynb"] and "x = 1" in (work / "00_a.ipynb").read_text()
    assert (work / "data.csv").exists() and not (work / "mine.ipynb").exists()
    # a second reset in the same second gets its own folder
    done2 = run.prepare_work(reset=True, notebooks=str(src), work=str(work))
    assert done2["backup"] != backup and os.path.exists(os.path.join(backup, "00_a.ipynb"))


def test_allow_root_only_as_root(run):
    assert "--allow-root" in run.lab_args([], euid=0)
    assert "--allow-root" not in run.lab_args([], euid=1000)
    assert run.lab_args(["--allow-root"], euid=0).count("--allow-root") == 1
    args = run.lab_args(["--port", "9999"], euid=1000, work="/w", start="00_a.ipynb")
    assert args[1:] == ["-m", "jupyter", "lab", "--notebook-dir", "/w",
                        "--LabApp.default_url=/lab/tree/00_a.ipynb", "--port", "9999"]


def test_allow_root_with_monkeypatched_geteuid(run, monkeypatch):
    monkeypatch.setattr(os, "geteuid", lambda: 0)
    assert run.lab_args([])[-1] == "--allow-root"


def test_relative_paths_in_the_notebooks_hold_from_the_working_folder(run):
    """work/ sits beside notebooks/, so '../README.md' and sibling links still resolve."""
    assert os.path.dirname(run.WORK) == os.path.dirname(run.NOTEBOOKS)
    names = {os.path.basename(p) for p in run.select_notebooks([])}
    for path in run.select_notebooks([]):
        text = open(path, encoding="utf-8").read()
        for target in re.findall(r"\]\((?!https?:|#)([^)#\s]+)", text):
            if target.endswith(".ipynb"):
                assert target in names, (path, target)  # copied beside it
            else:
                assert os.path.exists(os.path.normpath(os.path.join(run.WORK, target))), \
                    (path, target)


def test_select_notebooks(run, tmp_path):
    for n in ("00_a", "03_b", "03_c", "10_d"):
        _notebook(tmp_path / f"{n}.ipynb", "1")
    pick = lambda *names: [os.path.basename(p) for p in run.select_notebooks(list(names),
                                                                              str(tmp_path))]
    assert pick() == ["00_a.ipynb", "03_b.ipynb", "03_c.ipynb", "10_d.ipynb"]
    assert pick("03") == ["03_b.ipynb", "03_c.ipynb"]
    assert pick("10_d.ipynb", "00") == ["10_d.ipynb", "00_a.ipynb"]
    with pytest.raises(SystemExit, match="no notebook named '7'"):
        pick("7")


@pytest.mark.timeout(240)
def test_html_has_the_figure_no_traceback_and_reports_a_failing_cell(run, tmp_path):
    src, build = tmp_path / "notebooks", tmp_path / "build"
    src.mkdir()
    _notebook(src / "01_ok.ipynb", "md:# Small",
              "import plotly.graph_objects as go\nprint('kernel says hi')\n"
              "go.Figure(go.Scatter(x=[1, 2], y=[2, 1], name='my-trace')).show()",
              "import ipywidgets\nipywidgets.IntSlider(3)")
    _notebook(src / "02_bad.ipynb", "x = 1", "1 / 0", "print('never')")
    before = sorted(os.listdir(src))
    failures = run.build_html(run.select_notebooks([], str(src)), str(build))
    assert sorted(os.listdir(src)) == before  # nothing written beside the notebooks
    assert sorted(os.listdir(build)) == ["01_ok.html", "02_bad.html", "assets"]  # no scratch
    assets = sorted(os.listdir(build / "assets"))  # shared by the pages, nothing half-copied
    assert re.fullmatch(r"mathjax-2\.7\.\d+", assets[0]) \
        and re.fullmatch(r"plotly-[\d.]+\.min\.js", assets[1]), assets
    styles = assets[2:]  # the lab's stylesheets, one copy for both pages
    assert styles and all(re.fullmatch(r"style-[0-9a-f]{12}\.css", n) for n in styles), assets
    for name in ("01_ok.html", "02_bad.html"):
        links = re.findall(r'href="assets/(style-[^"]+)"', (build / name).read_text())
        assert sorted(links) == styles
    page = (build / "01_ok.html").read_text()
    assert 'class="plotly-graph-div"' in page and "my-trace" in page
    assert "Plotly.newPlot" in page and "* plotly.js v" not in page  # not inlined: loaded
    assert page.count(f'<script src="assets/{assets[1]}">') == 1  # once, from the shared copy
    assert "kernel says hi" in page and "Traceback" not in page
    assert "widgets) do nothing here" in page and "it works in JupyterLab" in page
    assert "application/vnd.jupyter.widget-state+json" not in page
    assert len(failures) == 1 and failures[0].startswith("02_bad: cell 2 ('1 / 0') failed: "
                                                         "ZeroDivisionError")
    bad = (build / "02_bad.html").read_text()
    assert "This run failed" in bad and "ZeroDivisionError" in bad  # written anyway


def test_assets_are_copied_once_and_a_half_copy_is_redone(run, tmp_path):
    urls = run.write_assets(str(tmp_path))
    plotly_js = tmp_path / urls["plotly"]
    mathjax_js = tmp_path / urls["mathjax"].split("?")[0]
    assert urls["mathjax"].startswith("assets/mathjax-") and mathjax_js.is_file()
    assert plotly_js.stat().st_size > 1_000_000  # the whole of plotly.js
    stamps = plotly_js.stat().st_mtime_ns, mathjax_js.stat().st_mtime_ns
    assert run.write_assets(str(tmp_path)) == urls  # a second build copies nothing
    assert (plotly_js.stat().st_mtime_ns, mathjax_js.stat().st_mtime_ns) == stamps
    # a copy cut short lies under a .part name, never the final one, and is started over
    half = tmp_path / "assets" / (mathjax_js.parent.name + ".part")
    mathjax_js.parent.rename(half)
    (half / "MathJax.js").unlink()
    assert run.write_assets(str(tmp_path)) == urls and mathjax_js.is_file()
    assert not half.exists()
