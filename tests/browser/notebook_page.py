"""One notebook open in JupyterLab, driven like a learner would: Run All from the Run menu,
Ctrl+S, one change to each widget. Every wait has a timeout; all state is read from the
DOM, except the kernel's status, which the app exposes (``window.jupyterapp``)."""

from __future__ import annotations

import re
import time

KERNEL_STATUS = """() => {
  const w = window.jupyterapp && window.jupyterapp.shell.currentWidget;
  const k = w && w.sessionContext && w.sessionContext.session && w.sessionContext.session.kernel;
  return k ? k.status : null;
}"""
DIRTY = """() => {
  const w = window.jupyterapp && window.jupyterapp.shell.currentWidget;
  return !!(w && w.context && w.context.model && w.context.model.dirty);
}"""
# Remember every kernel death (it may auto-restart between two polls).
WATCH_KERNEL = """() => {
  const w = window.jupyterapp.shell.currentWidget;
  window.__parlabKernelTrouble = [];
  w.sessionContext.statusChanged.connect((_, s) => {
    if (['dead', 'restarting', 'autorestarting'].includes(s)) window.__parlabKernelTrouble.push(s);
  });
}"""
KERNEL_TROUBLE = "() => window.__parlabKernelTrouble || []"
DIALOGS = """() => [...document.querySelectorAll('.jp-Dialog')]
  .map(d => d.innerText.trim().replace(/\\s+/g, ' ').slice(0, 300))"""
# Code cells (non-empty) not run yet, and the first cell whose error stops Run All (one not
# tagged raises-exception): Run All is over when every cell has run or one has stopped it.
RUN_ALL_STATE = """() => {
  const cells = window.jupyterapp.shell.currentWidget.content.widgets;
  let code = 0, pending = 0, stopped_at = null;
  cells.forEach((c, i) => {
    if (c.model.type !== 'code' || !c.model.sharedModel.getSource().trim()) return;
    code++;
    if (c.model.executionCount == null) { pending++; return; }
    const tags = c.model.getMetadata('tags') || [];
    if (stopped_at === null && !tags.includes('raises-exception')
        && c.model.outputs.toJSON().some(o => o.output_type === 'error')) stopped_at = i;
  });
  return {code, pending, stopped_at};
}"""
RUNNING_CELLS = """() => [...document.querySelectorAll('.jp-Notebook .jp-InputPrompt')]
  .filter(e => e.textContent.includes('[*]')).length"""
# Error outputs (and tracebacks printed to stderr) are rendered with the stderr mime type.
DOM_TRACEBACKS = """() => [...document.querySelectorAll('.jp-Notebook .jp-Cell')].flatMap((c, i) =>
  [...c.querySelectorAll('.jp-OutputArea-output[data-mime-type="application/vnd.jupyter.stderr"]')]
    .filter(o => o.textContent.includes('Traceback'))
    .map(o => ({cell: i, text: o.textContent.trim().split('\\n').slice(-3).join(' | ')})))"""
# The root widget of each widget output (one cell may display several), tagged for locators.
WIDGET_ROOTS = """() => [...document.querySelectorAll('.jp-Notebook .jp-Cell')].flatMap((c, i) =>
  [...c.querySelectorAll(':scope .jp-Cell-outputArea > .jp-OutputArea-child > '
                         + '.jp-OutputArea-output > .jupyter-widgets')].map((w, k) => {
    w.setAttribute('data-parlab-widget', i + '-' + k);
    c.setAttribute('data-parlab-cell', String(i));
    return {cell: i, key: i + '-' + k, classes: w.className};
  }))"""
CONTROLS = [".widget-slider", ".widget-toggle-buttons", ".widget-toggle-button", ".widget-dropdown",
            ".widget-text", ".widget-textarea", ".widget-button", ".widget-checkbox",
            ".widget-radio", ".widget-select", ".widget-play"]
# A digest of what the cell shows apart from its controls (figures, HTML, printed text):
# the thing a control's change must redraw. Readouts and button states live inside the
# controls and are left out, so a slider's own number changing does not count.
OUTPUT_DIGEST = """([cell, controls]) => {
  const c = document.querySelector('[data-parlab-cell="' + cell + '"] .jp-Cell-outputArea');
  if (!c) return '';
  const clone = c.cloneNode(true);
  clone.querySelectorAll(controls).forEach(e => e.remove());
  const s = clone.innerHTML;
  let h = 5381;
  for (let i = 0; i < s.length; i++) h = ((h * 33) ^ s.charCodeAt(i)) >>> 0;
  return s.length + ':' + h;
}"""


class Timeout(AssertionError):
    pass


def wait_until(fn, timeout: float, what: str, poll: float = 0.25):
    """fn() until truthy; Timeout naming ``what`` after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        value = fn()
        if value:
            return value
        if time.monotonic() > deadline:
            raise Timeout(f"timed out after {timeout:.0f} s waiting for {what}")
        time.sleep(poll)


def open_notebook(page, url: str, timeout: float = 120.0) -> None:
    page.goto(url, timeout=timeout * 1000)
    page.wait_for_selector(".jp-Notebook .jp-Cell", state="attached", timeout=timeout * 1000)
    wait_until(lambda: page.evaluate(KERNEL_STATUS) == "idle", timeout, "the kernel to start")
    page.evaluate(WATCH_KERNEL)


def kernel_trouble(page) -> str:
    """'' or what went wrong with the kernel (a death, a dialog left open)."""
    trouble = page.evaluate(KERNEL_TROUBLE)
    dialogs = page.evaluate(DIALOGS)
    return "; ".join(([f"the kernel died ({', '.join(trouble)})"] if trouble else [])
                     + [f"dialog open: {d}" for d in dialogs])


def run_all(page, timeout: float) -> float:
    """Edit → Clear Outputs of All Cells, then Run → Run All Cells, from the menu bar;
    seconds until Run All is over (see RUN_ALL_STATE: JupyterLab 4 sends the cells one
    at a time, so "idle and no [*]" also holds for a moment between two cells)."""
    page.click(".lm-MenuBar-itemLabel:text-is('Edit')", timeout=30_000)
    page.click(".lm-Menu-itemLabel:text-is('Clear Outputs of All Cells')", timeout=30_000)

    def cleared():
        state = page.evaluate(RUN_ALL_STATE)
        return state["pending"] == state["code"]

    wait_until(cleared, 30, "Clear Outputs of All Cells to clear the execution counts")
    page.click(".lm-MenuBar-itemLabel:text-is('Run')", timeout=30_000)
    page.click(".lm-Menu-itemLabel:text-is('Run All Cells')", timeout=30_000)
    t0 = time.monotonic()

    def done():
        trouble = kernel_trouble(page)
        if trouble:  # out of memory, most often
            raise Timeout(f"Run All did not finish: {trouble}")
        state = page.evaluate(RUN_ALL_STATE)
        return (page.evaluate(RUNNING_CELLS) == 0 and page.evaluate(KERNEL_STATUS) == "idle"
                and (state["pending"] == 0 or state["stopped_at"] is not None))

    wait_until(lambda: done() and (time.sleep(0.5) or done()), timeout,
               "Run All to finish (a cell has not run yet, or the kernel is busy)", poll=0.5)
    return time.monotonic() - t0


def save(page, timeout: float = 60.0) -> None:
    page.keyboard.press("Control+s")
    wait_until(lambda: not page.evaluate(DIRTY), timeout, "Ctrl+S to save the notebook")


def dom_tracebacks(page) -> list[dict]:
    return page.evaluate(DOM_TRACEBACKS)


def widget_roots(page) -> list[dict]:
    return page.evaluate(WIDGET_ROOTS)


def digest(page, cell: int) -> str:
    return page.evaluate(OUTPUT_DIGEST, [cell, ", ".join(CONTROLS)])


def settle(page, cell: int, timeout: float, quiet_for: float = 0.5) -> bool:
    """Wait for the kernel to be idle and the cell's output to stop changing."""
    deadline = time.monotonic() + timeout
    last, since = None, time.monotonic()
    while time.monotonic() < deadline:
        d = digest(page, cell)
        idle = page.evaluate(KERNEL_STATUS) == "idle"
        if d != last or not idle:
            last, since = d, time.monotonic()
        elif time.monotonic() - since >= quiet_for:
            return True
        time.sleep(0.25)
    return False


def _label(loc) -> str:
    text = loc.locator(".widget-label").first
    return (text.text_content(timeout=2000) or "").strip() if text.count() else ""


def choose_control(root):
    """(description, action, timeout): the one change to make to this widget. Answer
    boxes and drills get an answer typed and checked; otherwise controls that must
    redraw come first (sliders, toggles, dropdowns, ...), a lone button last (it may
    start a live run, so it gets more time). None when the widget has no enabled control."""
    classes = root.get_attribute("class") or ""
    buttons = root.locator("button.widget-button:not([disabled])")
    if "parlab-answer" in classes or "parlab-drill" in classes:
        text = root.locator(".widget-text input:not([disabled]), "
                            ".widget-textarea textarea:not([disabled])")
        if text.count():
            check = buttons.filter(has_text=re.compile("check", re.I))
            button = check.first if check.count() else buttons.first

            def answer():
                text.first.fill("1")
                if buttons.count():
                    button.click()
                else:
                    text.first.press("Enter")
            kind = "answer box" if "parlab-answer" in classes else "drill"
            return f"{kind}: typed 1 and pressed Check", answer, 30.0
    sliders = root.locator(".widget-slider:has(.noUi-target:not([disabled]))")
    if sliders.count():
        slider = sliders.first
        handle = slider.locator(".noUi-handle").first
        now, top = handle.get_attribute("aria-valuenow"), handle.get_attribute("aria-valuemax")
        key = "ArrowLeft" if now is not None and now == top else "ArrowRight"

        def slide():
            handle.scroll_into_view_if_needed(timeout=10_000)
            handle.focus()
            handle.press(key)
        return f"slider '{_label(slider)}': {key}", slide, 30.0
    toggles = root.locator(".widget-toggle-buttons button:not(.mod-active):not([disabled])")
    if toggles.count():
        b = toggles.first
        return f"toggle button '{(b.text_content() or '').strip()}'", b.click, 30.0
    selects = root.locator(".widget-dropdown select:not([disabled]), "
                           ".widget-select select:not([disabled])")
    if selects.count():
        sel = selects.first
        values = sel.evaluate("s => [...s.options].map(o => o.value)")
        other = [v for v in values if v != sel.input_value()]
        if other:
            return (f"dropdown option '{other[0]}'", lambda: sel.select_option(other[0]), 30.0)
    radios = root.locator(".widget-radio-box input[type=radio]:not(:checked):not([disabled])")
    if radios.count():
        return "radio button", radios.first.click, 30.0
    boxes = root.locator(".widget-checkbox input[type=checkbox]:not([disabled])")
    if boxes.count():
        return "checkbox", boxes.first.click, 30.0
    if buttons.count():
        b = buttons.first
        return f"button '{(b.text_content() or '').strip()}'", b.click, 60.0
    return None
