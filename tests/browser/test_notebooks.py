"""Every notebook in a real browser (JupyterLab in headless Chromium): Run All from the
menu finishes with no error output and no browser console error; the cells tagged
nbval-check-output show their pinned outputs, compared by nbval's rules on the notebook as
saved (pinned.py; this run replaces nbval's own execution of the notebook); no answer,
verdict, hint or solution shows before a click (in markdown, outputs or code editors, after
Run All or as committed, before it), and one hint opens alone; every widget
redraws its output when one of its controls changes; and one coding exercise of "Your turn"
gets a wrong and then a right answer typed in, with the checker's verdicts read off the
page. Screenshots of failures go to build/browser-failures/, timings to
build/browser-report.json (see conftest.py)."""

from __future__ import annotations

import json
import os
import re
import time
from pathlib import Path

import pytest

import notebook_page as nbp
import pinned
import your_turn
from conftest import FAILURES, NOTEBOOK_DIR, ROOT

NOTEBOOKS = sorted(p.name for p in NOTEBOOK_DIR.glob("*.ipynb"))
RUN_ALL_TIMEOUT = float(os.environ.get("PARLAB_BROWSER_RUN_TIMEOUT", 240))

# Console errors that say nothing about the lab, each with why it is harmless. Everything
# else logged at level "error", and every uncaught page error, fails the test. Empty: with
# news and update checks off (lab_driver.SETTINGS) and Chromium's own traffic disabled,
# JupyterLab 4.6 logs no error on this closed network.
BENIGN_CONSOLE: list[re.Pattern] = []


def _shot(page, name: str, what: str, cell: int | None = None) -> str:
    stem = re.sub(r"[^A-Za-z0-9_.-]+", "-", f"{Path(name).stem}-{what}")
    path = FAILURES / f"{stem}.png"
    try:
        if cell is not None:
            where = page.locator(f'[data-parlab-cell="{cell}"]')
            where.scroll_into_view_if_needed(timeout=10_000)
            where.screenshot(path=str(FAILURES / f"{stem}-cell.png"), timeout=30_000)
        page.screenshot(path=str(path), full_page=True, timeout=30_000)
    except Exception as e:  # the screenshot must never hide the failure it documents
        return f"(no screenshot: {e})"
    return f"screenshot {path.relative_to(ROOT)}"


def _label(name: str) -> str:
    """The notebook as nbval names it: notebooks/07_mixed_precision.ipynb."""
    path = NOTEBOOK_DIR / name
    return str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else str(path)


def _saved_errors(path: Path) -> tuple[dict[int, str], set[int]]:
    """cell index -> "ename: evalue" of each error output in the saved notebook, and the
    cells tagged raises-exception (an error shown on purpose; nbval and Run All accept it)."""
    cells = json.loads(path.read_text())["cells"]
    expected = {i for i, c in enumerate(cells)
                if "raises-exception" in c.get("metadata", {}).get("tags", [])}
    return {i: f"{o.get('ename')}: {o.get('evalue')}" for i, c in enumerate(cells)
            for o in c.get("outputs", [])
            if o.get("output_type") == "error" and i not in expected}, expected


def _exercise_widgets(page, name: str, entry: dict, failures: list[str]) -> None:
    roots = nbp.widget_roots(page)
    for w in roots:
        cell = w["cell"]
        root = page.locator(f'[data-parlab-widget="{w["key"]}"]')
        try:
            choice = nbp.choose_control(root)
        except Exception as e:
            failures.append(f"widget in cell {cell}: its controls could not be read "
                            f"({type(e).__name__}: {str(e).splitlines()[0]}); "
                            + _shot(page, name, f"widget-cell{cell}", cell))
            continue
        if choice is None:
            entry["widgets"].append({"cell": cell, "control": None, "update_s": None,
                                     "note": "no enabled control"})
            continue
        control, act, timeout = choice
        record = {"cell": cell, "control": control, "update_s": None}
        entry["widgets"].append(record)
        # (its output has been still since Run All, or since the last widget settled: a
        # short quiet spell is enough to take the digest to compare with)
        nbp.settle(page, cell, timeout=30, quiet_for=0.25)
        before = nbp.digest(page, cell)
        t0 = time.monotonic()
        try:
            act()
            nbp.wait_until(lambda: nbp.digest(page, cell) != before, timeout,
                           "the output to change")
        except Exception as e:
            failures.append(f"widget in cell {cell}: changing {control} did not redraw its "
                            f"output within {timeout:.0f} s ({type(e).__name__}: "
                            f"{str(e).splitlines()[0]}); "
                            + _shot(page, name, f"widget-cell{cell}", cell))
            continue
        record["update_s"] = round(time.monotonic() - t0, 2)
        nbp.settle(page, cell, timeout=timeout)


def _section_link(page, lab, name: str) -> list[str]:
    """09's "→ 03 §4" opens the read-only copy of that section in a tab of its own, and no
    kernel starts (conftest.py wrote the copy beside the notebooks, as run.py lab does)."""
    page.evaluate("document.querySelectorAll('details').forEach(d => d.open = true)")
    link = page.locator("a:has-text('→ 03 §4')").first
    href = link.get_attribute("href") or ""
    if "read/bubble.html" not in href:
        return [f"09's link to 03 §4 goes to {href!r}, not its read-only copy"]
    kernels = len(lab.api("GET", "api/sessions"))
    link.scroll_into_view_if_needed()
    link.click()
    try:
        nbp.wait_until(lambda: "bubble.html" in page.locator(".lm-TabBar-tabLabel").all_inner_texts(),
                       30, "the section's copy to open in a tab")
    except nbp.Timeout as e:
        return [f"{e}; " + _shot(page, name, "section-link")]
    after = len(lab.api("GET", "api/sessions"))
    return [] if after == kernels else [f"opening a section link started a kernel ({kernels} -> {after})"]


@pytest.mark.timeout(900)
@pytest.mark.parametrize("name", NOTEBOOKS, ids=[Path(n).stem for n in NOTEBOOKS])
def test_notebook_in_browser(name, lab, browser, report, request):
    entry = report.notebooks[name] = {"widgets": []}
    failures: list[str] = []
    console: list[str] = []
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    page = context.new_page()
    warnings: dict[str, int] = {}  # reported, not failed: plotly warns through console.trace

    def on_console(m):
        if m.type == "error":
            url = (m.location or {}).get("url", "")
            console.append(f"console.error: {m.text[:500]}" + (f" ({url})" if url else ""))
        elif m.type in ("warning", "trace"):
            warnings[m.text[:200]] = warnings.get(m.text[:200], 0) + 1

    page.on("console", on_console)
    page.on("pageerror", lambda e: console.append(f"page error: {str(e)[:500]}"))
    t0 = time.monotonic()
    try:
        try:
            nbp.open_notebook(page, lab.notebook_url(name, f"w{len(report.notebooks)}"))
            entry["open_s"] = round(time.monotonic() - t0, 1)
            before = your_turn.seen(page)  # the committed outputs and sources, before any run
        except Exception as e:
            failures.append(f"{name} did not open with an idle kernel: "
                            f"{str(e).splitlines()[0]}; " + _shot(page, name, "open"))
        if not failures:
            try:
                entry["run_all_s"] = round(nbp.run_all(page, RUN_ALL_TIMEOUT), 1)
            except nbp.Timeout as e:
                failures.append(f"{name}: {e}; " + _shot(page, name, "run-all"))
        if failures:  # nothing further can be checked
            pytest.fail(failures[-1], pytrace=False)
        nbp.save(page)
        errors, expected = _saved_errors(lab.root / name)
        failures += [f"error output in cell {i}: {e}" for i, e in errors.items()]
        # the run nbval would have made (its cells of this notebook are deselected, conftest.py)
        entry["pinned_cells"], differ = pinned.compare_pinned(
            request.session, lab.root / name, NOTEBOOK_DIR / name, label=_label(name))
        failures += [f"pinned output: {d}" for d in differ]
        # tracebacks printed to stderr (a worker's, a warning's) are not error outputs
        shown = [t for t in nbp.dom_tracebacks(page) if t["cell"] not in expected]
        failures += [f"traceback shown in cell {t['cell']}: {t['text']}"
                     for t in shown if t["cell"] not in errors]
        if failures:
            failures.append(_shot(page, name, "run-all-errors"))
        failures += [f"visible before any click: {f!r}" for f in your_turn.spoilers(page, before)]
        hint = your_turn.open_one_hint(page)
        if hint:
            failures.append(f"{name}: {hint}; " + _shot(page, name, "hint"))
        t1 = time.monotonic()
        _exercise_widgets(page, name, entry, failures)
        failures += [f"notation: {p}" for p in your_turn.type_notations(page, name[:2])]
        entry["widgets_s"] = round(time.monotonic() - t1, 1)
        failures += [f"traceback shown after the widget changes in cell {t['cell']}: {t['text']}"
                     for t in nbp.dom_tracebacks(page)
                     if t not in shown and t["cell"] not in expected]
        try:
            turn = entry["your_turn"] = your_turn.wrong_then_right(page, name[:2])
            if not turn["wrong"].startswith("Not yet."):
                failures.append(f"{turn['exercise']}: a planted mistake got {turn['wrong'][:200]!r}")
            if not turn["right"].startswith("Correct."):
                failures.append(f"{turn['exercise']}: the reference solution got {turn['right'][:200]!r}")
        except (AssertionError, nbp.Timeout) as e:
            failures.append(f"{name}, Your turn: {str(e).splitlines()[0]}; "
                            + _shot(page, name, "your-turn"))
        trouble = nbp.kernel_trouble(page)
        if trouble:
            failures.append(f"after the widget changes: {trouble}; "
                            + _shot(page, name, "kernel"))
        if name.startswith("09"):
            failures += _section_link(page, lab, name)
        failures += [c for c in console if not any(b.search(c) for b in BENIGN_CONSOLE)]
        assert not failures, f"{name} in JupyterLab:\n  " + "\n  ".join(failures)
    finally:
        entry["failures"] = failures
        entry["console_warnings"] = [f"{n} x {text}" for text, n in warnings.items()][:10]
        context.close()
        lab.shutdown_kernels()
        entry["total_s"] = round(time.monotonic() - t0, 1)
        report.write()
