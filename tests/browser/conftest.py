"""Fixtures of the real-browser test: one JupyterLab server and one headless Chromium for
the module, a report written to build/browser-report.json.

PARLAB_BROWSER_TEST=required (set by .ci/run): a missing Chromium or Playwright is a
failure. Unset: the test runs when both are here, and skips otherwise, saying what is missing. PARLAB_BROWSER_TEST=skip: always
skips (a quicker local `python3 run.py test`). PARLAB_CHROMIUM: the browser's path
(default /usr/bin/chromium, Debian's package). PARLAB_BROWSER_NOTEBOOKS: another folder of
notebooks to run (default notebooks/; the test's own checks were tried on planted bad ones).

One execution of each notebook: when the browser test is to run a notebook of notebooks/
(PARLAB_BROWSER_TEST=required, or unset with Chromium and Playwright here) nbval's cells of
that notebook are deselected, and the browser test compares the outputs it saved with the
pinned ones by nbval's rules instead (pinned.py). Without the browser test (skip, or nothing
to run it with), nbval executes the notebooks as before."""

from __future__ import annotations

import importlib
import json
import os
import shutil
import sys
import time
from pathlib import Path

import pytest

from lab_driver import CHROMIUM_ARGS, LabServer, chromium_version, copy_notebooks

ROOT = Path(__file__).resolve().parents[2]
BUILD = ROOT / "build"
FAILURES = BUILD / "browser-failures"
REPORT_PATH = BUILD / "browser-report.json"
NOTEBOOK_DIR = Path(os.environ.get("PARLAB_BROWSER_NOTEBOOKS", ROOT / "notebooks")).resolve()
_SUMMARY: list[str] = []
_SUMMARY_NBVAL: list[str] = []


def _missing(chromium: str) -> list[str]:
    """What the browser test lacks here: [] when it can run."""
    missing = []
    if not (os.path.isfile(chromium) and os.access(chromium, os.X_OK)):
        missing.append(f"no Chromium at {chromium}")
    try:
        importlib.import_module("playwright.sync_api")
    except ImportError:
        missing.append(f"Playwright is not installed in {sys.prefix}")
    return missing


def browser_test_runs() -> bool:
    """Whether the browser test, once selected, runs (or fails for want of what it needs,
    under PARLAB_BROWSER_TEST=required) rather than skips."""
    mode = os.environ.get("PARLAB_BROWSER_TEST", "")
    chromium = os.environ.get("PARLAB_CHROMIUM", "/usr/bin/chromium")
    return mode == "required" or (mode != "skip" and not _missing(chromium))


def _requirements() -> str:
    mode = os.environ.get("PARLAB_BROWSER_TEST", "")
    if mode == "skip":
        pytest.skip("PARLAB_BROWSER_TEST=skip")
    chromium = os.environ.get("PARLAB_CHROMIUM", "/usr/bin/chromium")
    missing = _missing(chromium)
    if missing:
        why = "browser test cannot run: " + "; ".join(missing) + " (.ci/run installs both)"
        if mode == "required":
            pytest.fail(why + " and PARLAB_BROWSER_TEST=required", pytrace=False)
        pytest.skip(why + "; PARLAB_BROWSER_TEST=required makes this a failure")
    return chromium


@pytest.fixture(scope="module")
def chromium():
    return _requirements()


@pytest.fixture(scope="module")
def lab(chromium, tmp_path_factory):
    """JupyterLab serving copies of notebooks/*.ipynb from a temporary folder."""
    base = tmp_path_factory.mktemp("browser")
    root, settings = base / "root", base / "settings"
    root.mkdir()
    copy_notebooks(NOTEBOOK_DIR, root)
    # a read-only copy of one section beside them, as run.py lab writes them all (work/read/):
    # 09's link to it must open it, and start no kernel (test_notebooks._section_link)
    from lessons.common.readcopy import write_copies
    from lessons.l09_the_whole_answer.sections import SECTIONS, title
    write_copies({"bubble": SECTIONS["bubble"]}, NOTEBOOK_DIR, root / "read", label=title)
    server = LabServer(sys.executable, root, settings, base / "jupyter.log")
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="module")
def browser(chromium):
    from playwright.sync_api import sync_playwright

    pw = sync_playwright().start()
    try:
        b = pw.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS, timeout=120_000)
        try:
            yield b
        finally:
            b.close()
    finally:
        pw.stop()


class Report:
    """Per notebook: Run All seconds; per widget: cell, control changed, update seconds.
    Rewritten after each notebook, so a crash keeps what was measured."""

    def __init__(self, chromium: str):
        import importlib.metadata as md

        self.t0 = time.monotonic()
        self.data = {"chromium": chromium_version(chromium),
                     "playwright": md.version("playwright"), "notebooks": {}}

    @property
    def notebooks(self) -> dict:
        return self.data["notebooks"]

    def write(self) -> None:
        self.data["total_s"] = round(time.monotonic() - self.t0, 1)
        REPORT_PATH.write_text(json.dumps(self.data, indent=1) + "\n")

    def summary(self) -> list[str]:
        d = self.data
        lines = [f"{d['chromium']}, playwright {d['playwright']}, {d['total_s']:.0f} s in all; "
                 f"report: {REPORT_PATH.relative_to(ROOT)}"]
        for name, nb in d["notebooks"].items():
            widgets = ", ".join(
                f"cell {w['cell']} {w['update_s']} s" if w.get("update_s") is not None
                else f"cell {w['cell']} {w.get('note', 'NO UPDATE')}" for w in nb["widgets"])
            lines.append(f"{name}: {nb.get('total_s', '-')} s, "
                         f"Run All {nb.get('run_all_s', '-')} s, "
                         f"pinned cells {nb.get('pinned_cells', '-')}; "
                         f"widget updates: {widgets or '-'}"
                         + (f"; Your turn {t['exercise']} wrong then right {t['seconds']} s"
                            if (t := nb.get("your_turn")) else ""))
        return lines


@pytest.fixture(scope="module")
def report(chromium):
    shutil.rmtree(FAILURES, ignore_errors=True)
    FAILURES.mkdir(parents=True, exist_ok=True)
    r = Report(chromium)
    yield r
    r.write()
    _SUMMARY[:] = r.summary()


@pytest.hookimpl(trylast=True)  # after -k and -m have deselected theirs
def pytest_collection_modifyitems(config, items):
    """Deselect nbval's cells of each notebook the browser test will run in this session:
    it executes the notebook and compares the pinned outputs (test_notebooks.py)."""
    if not browser_test_runs():
        return
    covered = {NOTEBOOK_DIR / item.callspec.params["name"] for item in items
               if getattr(item, "originalname", None) == "test_notebook_in_browser"}
    if not covered:
        return
    from nbval.plugin import IPyNbCell

    twice = [item for item in items
             if isinstance(item, IPyNbCell) and Path(item.path).resolve() in covered]
    if twice:
        config.hook.pytest_deselected(items=twice)
        drop = set(twice)
        items[:] = [item for item in items if item not in drop]
        _SUMMARY_NBVAL.append(
            f"nbval: {len(twice)} cells of {len({item.path for item in twice})} notebooks "
            f"deselected: the browser test executes each notebook once and compares its "
            f"pinned outputs (tests/browser/pinned.py)")


def pytest_terminal_summary(terminalreporter):
    for line in _SUMMARY_NBVAL:
        terminalreporter.write_line(line)
    if _SUMMARY:
        terminalreporter.section("browser test (JupyterLab in Chromium)")
        for line in _SUMMARY:
            terminalreporter.write_line(line)
