"""run.py html's pages in a real Chromium with the network cut off: the formulas are typeset
by the MathJax copied into build/assets/, the figure draws from the shared plotly.js, nothing
is fetched from outside, and printing opens every fold-out. Gated like the rest of
tests/browser (conftest.py): skips without Chromium or Playwright, fails under
PARLAB_BROWSER_TEST=required (CI). One tiny notebook is built, not a lesson."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[2]

ANSWER = "the answer hides here until asked"


@pytest.fixture(scope="module")
def page(chromium, tmp_path_factory):
    """build/01_page.html of a small notebook: formulas, a figure, a fold-out, a widget."""
    spec = importlib.util.spec_from_file_location("parlab_run_py", ROOT / "run.py")
    run = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(run)
    src, build = tmp_path_factory.mktemp("notebooks"), tmp_path_factory.mktemp("build")
    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_markdown_cell("# Page\n\nInline $a^2 + b^2$ and a display:\n\n"
                                      "$$t = \\frac{2(N-1)}{N}\\,\\frac{B}{\\beta}$$"),
        nbformat.v4.new_code_cell(
            "import plotly.graph_objects as go\n"
            "go.Figure(go.Scatter(x=[1, 2, 3], y=[3, 1, 2])).show()"),
        nbformat.v4.new_code_cell(
            "from IPython.display import HTML\n"
            f"HTML('<details><summary>Answer</summary><p>{ANSWER}</p></details>"
            f"<details><summary>Hint</summary><p>a hint</p></details>')"),
        nbformat.v4.new_code_cell("import ipywidgets\nipywidgets.IntSlider(3)"),
    ]
    nbformat.write(nb, str(src / "01_page.ipynb"))
    assert run.build_html([str(src / "01_page.ipynb")], str(build)) == []
    return build / "01_page.html"


def test_page_is_small_and_loads_its_scripts_from_assets(page):
    html = page.read_text(encoding="utf-8")
    # plotly.js alone is ~4.8 MB, the lab's stylesheet ~260 KB: both are in assets/
    assert page.stat().st_size < 100_000, page.stat().st_size
    assert '<link rel="stylesheet" href="assets/style-' in html
    assert "* plotly.js v" not in html and '<script src="assets/plotly-' in html
    assert 'src="assets/mathjax-' in html and not re.search(r"src=[\"']?(https?:)?//", html)
    assets = page.parent / "assets"
    assert len(list(assets.glob("plotly-*.min.js"))) == 1
    assert len(list(assets.glob("mathjax-*/MathJax.js"))) == 1


def test_offline_math_typeset_figure_drawn_and_printing_opens_fold_outs(browser, page):
    context = browser.new_context()
    outside, errors = [], []

    def only_files(route):  # the network is off: anything but file:// fails
        if route.request.url.startswith("file:"):
            route.continue_()
        else:
            outside.append(route.request.url)
            route.abort()

    context.route("**/*", only_files)
    tab = context.new_page()
    tab.on("pageerror", lambda e: errors.append(str(e)))
    # a file that is not there (a font MathJax asks for, say)
    tab.on("requestfailed", lambda r: r.url.startswith("file:") and errors.append(r.url))
    try:
        tab.goto(page.as_uri())
        # MathJax's queue empties once every formula is typeset
        tab.wait_for_function("window.MathJax && MathJax.Hub && MathJax.Hub.queue.pending === 0"
                              " && document.querySelectorAll('.MathJax').length >= 2",
                              timeout=30_000)
        text = tab.inner_text("body")
        assert "$$" not in text and "\\frac" not in text and "a^2" not in text
        assert tab.locator(".MathJax_Display").count() == 1
        # in its own fonts (without them the letters come out upright, in the system's)
        assert tab.evaluate("MathJax.OutputJax['HTML-CSS'].fontInUse") == "STIX-Web"
        assert tab.evaluate("[...document.fonts].some(f => f.family.startsWith('STIXMathJax')"
                            " && f.status === 'loaded')")
        tab.wait_for_selector(".plotly-graph-div .main-svg .scatterlayer .trace",
                              timeout=30_000)
        assert outside == [] and errors == []
        # the lab's stylesheet applies from assets/ (it defines the lab's variables)
        assert tab.evaluate("getComputedStyle(document.body)"
                            ".getPropertyValue('--jp-ui-font-family')").strip()

        answer = tab.get_by_text(ANSWER, exact=True)  # not the code cell quoting it
        assert not answer.is_visible()  # closed on screen: no answer before the learner asks
        # page.pdf() prints as a browser does (beforeprint, print, afterprint); a listener
        # added after the page's own sees the fold-outs as the printout does
        tab.evaluate("""() => window.addEventListener('beforeprint', () => {
            window.__parlab_open_at_print = [...document.querySelectorAll('details')]
                .map(d => d.open); })""")
        tab.pdf()
        assert tab.evaluate("window.__parlab_open_at_print") == [True, True]
        assert tab.evaluate("[...document.querySelectorAll('details')].map(d => d.open)") \
            == [False, False]  # closed again after printing
        assert not answer.is_visible()
        # and print CSS alone shows them, for a print that fires no beforeprint
        tab.emulate_media(media="print")
        assert answer.is_visible()
    finally:
        context.close()
