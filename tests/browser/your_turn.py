"""What a learner does in "Your turn", driven in the browser: nothing of an answer shows
before a click (spoilers), one hint opens on a click and only that hint, and one coding
exercise per notebook gets a wrong answer and then the right one typed into its cell,
with the checker's verdicts read off the page."""

from __future__ import annotations

import ast
import importlib
import re
import time

import notebook_page as nbp
from lessons import FOLDERS

# One coding exercise per notebook, and a planted mistake a learner could make in it:
# (exercise, text in the reference solution, what the mistake puts there instead)
PLANTED = {
    "00": ("my_reduce_scatter", "out += incoming", "out -= incoming"),
    "01": ("my_dp_exchange", "g.div_(world_size)", "g.div_(1)"),
    "02": ("my_tp_mlp_forward", "dist.all_reduce(z)", "z = z"),
    "03": ("my_partition", "(s < extra)", "(s >= n_stages - extra)"),
    "04": ("my_route", "logits.topk(top_k", "(-logits).topk(top_k"),
    "05": ("my_zigzag_shard", "chunks[2 * world_size - 1 - rank]", "chunks[world_size + rank]"),
    "06": ("my_groups", '"tp": [(d_i * pp + p_i) * tp + i', '"tp": [(i * pp + p_i) * tp + t_i'),
    "07": ("my_scaled_step", "g.mul_(1.0 / scale)", "g.mul_(1.0)"),
    "08": ("my_resume", 'int(train_state["step"])', 'int(train_state["step"]) + 1'),
    "09": ("my_layout", '"dp": n_gpus // (tp * pp)', '"dp": n_gpus // tp'),
}

# The page with every closed <details> emptied but for its summary: the text a learner sees
# without clicking, from markdown and from outputs ("shown"), and in the code cells' editors
# ("code": what CodeMirror renders, and each cell's source, which the editor shows in full
# when scrolled). And the text each closed <details> hides.
SHOWN_AND_HIDDEN = """() => {
  const widget = window.jupyterapp.shell.currentWidget.content;
  const code = [...widget.node.querySelectorAll('.jp-CodeCell .cm-content')].map(e => e.textContent)
    .concat(widget.widgets.filter(c => c.model.type === 'code').map(c => c.model.sharedModel.getSource()));
  const nb = window.jupyterapp.shell.currentWidget.content.node.cloneNode(true);
  // a space after each block, so text read from two blocks does not run together
  nb.querySelectorAll('p, div, li, pre, summary, details, td, th, br, h1, h2, h3, h4')
    .forEach(e => e.append(' '));
  const hidden = [];
  nb.querySelectorAll('details:not([open])').forEach(d => {
    const body = [...d.childNodes].filter(n => n.nodeName !== 'SUMMARY');
    hidden.push(body.map(n => n.textContent).join(' '));
    body.forEach(n => n.remove());
  });
  nb.querySelectorAll('.jp-CodeCell .jp-InputArea, .jp-InputArea-editor, style, script')
    .forEach(e => e.remove());
  return {shown: nb.textContent, code: code.join(' '), hidden};
}"""
SOURCES = "() => window.jupyterapp.shell.currentWidget.content.widgets.map(c => [c.model.type, c.model.sharedModel.getSource()])"
# Replace one cell's source (as typing would) and run the given cells in order.
TYPE_AND_RUN = """async ([at, source, run]) => {
  const app = window.jupyterapp, nb = app.shell.currentWidget.content;
  nb.widgets[at].model.sharedModel.setSource(source);
  run.forEach(i => nb.widgets[i].model.outputs.clear());  // a verdict read later is this run's
  for (const i of run) {
    nb.deselectAll();
    nb.activeCellIndex = i;
    await app.commands.execute('notebook:run-cell');
  }
}"""
OUTPUT_TEXT = """(i) => {
  const o = window.jupyterapp.shell.currentWidget.content.widgets[i].node.querySelector('.jp-Cell-outputArea');
  return o ? o.innerText : '';
}"""


def _words(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


def _fragments(text: str, least: int = 30) -> list[str]:
    """Sentences (or lines) of hidden text long enough that finding one on the page
    means the answer was shown, not that two texts share a phrase."""
    parts = re.split(r"(?<=[.!?;])\s+", _words(text))
    return [p for p in parts if len(p) >= least and re.search(r"[A-Za-z]{4}", p)]


def seen(page) -> str:
    """Everything a learner can read without clicking: markdown, outputs (closed
    <details> emptied but for their summaries) and the code editors. Taken right after
    the notebook opens, it is what the notebook shows as committed, before it runs."""
    got = page.evaluate(SHOWN_AND_HIDDEN)
    return _words(got["shown"] + " " + got["code"])


def spoilers(page, before: str = "") -> list[str]:
    """Hidden text (an answer, a verdict, a hint, a solution) that is also on the page
    before any click, in its markdown, outputs or code editors, or in ``before`` (what
    ``seen`` read before Run All: the committed outputs): each such sentence, once."""
    got = page.evaluate(SHOWN_AND_HIDDEN)
    shown = _words(got["shown"] + " " + got["code"]) + " " + before
    found = []
    for body in got["hidden"]:
        for f in _fragments(body):
            if f in shown and f not in found:
                found.append(f)
    return found


def open_one_hint(page) -> str | None:
    """Click the first "Hint 1": its text must show, and hint 2 and the solution must
    stay closed. None if it behaved, else what went wrong."""
    summary = page.locator("summary", has_text="Hint 1").first
    if not summary.count():
        return "no 'Hint 1' on the page"
    summary.scroll_into_view_if_needed(timeout=10_000)
    summary.click()
    details = summary.locator("xpath=..")
    state = details.evaluate("""d => ({open: d.open,
        inner: [...d.querySelectorAll('details')].map(x => x.open),
        text: d.querySelector(':scope > div > p') ? d.querySelector(':scope > div > p').innerText : ''})""")
    if not state["open"] or not state["text"].strip():
        return f"clicking 'Hint 1' did not show its text ({state})"
    if any(state["inner"]):
        return "hint 2 or the solution opened with hint 1"
    return None


def _solution_and_mistake(stem: str) -> tuple[str, str, str]:
    from lessons.common.checkers import core

    name, right, wrong = PLANTED[stem]
    mod = importlib.import_module(f"lessons.{FOLDERS[stem]}.exercises")
    src = core.solution_source(mod.SOLUTIONS, name)
    assert right in src, f"the planted mistake of {name} no longer fits its solution"
    return name, src, src.replace(right, wrong, 1)


def _verdict(page, cell: int, timeout: float) -> str:
    def said():
        text = page.evaluate(OUTPUT_TEXT, cell)
        idle = page.evaluate(nbp.KERNEL_STATUS) == "idle"
        m = re.search(r"Correct\.|Not yet\.|Not answered", text) if idle else None
        return text[m.start():] if m else None  # from the verdict on (a repr's quote before it)
    return _words(nbp.wait_until(said, timeout, "the checker's verdict"))


def _with_function(cell_source: str, name: str, function_source: str) -> str:
    """The cell with its ``def name`` (the learner's part) replaced, the rest (the
    checker's call, if it is in the same cell) kept."""
    tree = ast.parse(cell_source)
    node = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == name)
    lines = cell_source.splitlines(keepends=True)
    start = node.lineno - 1 - len(node.decorator_list)
    return "".join(lines[:start]) + function_source.rstrip() + "\n" + "".join(lines[node.end_lineno:])


def wrong_then_right(page, stem: str, timeout: float = 90.0) -> dict:
    """Type the planted mistake into the exercise's cell and run it and its checker,
    then the reference solution: {"exercise", "wrong", "right", "seconds"} with the
    verdicts read off the page."""
    name, right_src, wrong_src = _solution_and_mistake(stem)
    cells = page.evaluate(SOURCES)
    defs = [i for i, (kind, s) in enumerate(cells) if kind == "code" and f"def {name}(" in s]
    assert defs, f"no cell defines {name}"
    at = defs[0]
    checks = [i for i, (kind, s) in enumerate(cells)
              if i >= at and kind == "code" and re.search(rf"check\w*\(\s*{name}\b", s)]
    assert checks, f"no cell checks {name}"
    run = sorted({at, checks[0]})
    t0 = time.monotonic()
    verdicts = {}
    for label, src in (("wrong", wrong_src), ("right", right_src)):
        page.evaluate(TYPE_AND_RUN, [at, _with_function(cells[at][1], name, src), run])
        verdicts[label] = _verdict(page, checks[0], timeout)
    return dict(exercise=name, seconds=round(time.monotonic() - t0, 1), **verdicts)



# Answer boxes read the notations people type (issue 33): per notebook, one box (by its
# label) and what is typed into it, each right, with what the verdict must say it read.
NOTATIONS = {
    "07": ("smallest normal", [("2^-14", "read 2^-14 ="), ("2**-14", "read 2**-14 ="),
                               ("1/16384", "read 1/16384 ="), ("6.1e-5", ""), ("6.104e-5", "")]),
}


def type_notations(page, stem: str, timeout: float = 30.0) -> list[str]:
    """Type each notation of ``NOTATIONS[stem]`` into its answer box and press Check; what
    went wrong (a verdict that is not "Correct.", or that does not say what it read)."""
    if stem not in NOTATIONS:
        return []
    label, typed = NOTATIONS[stem]
    box = page.locator(".parlab-answer").filter(has=page.locator(f"b:text-is('{label}')")).first
    if not box.count():
        return [f"no answer box labelled {label!r}"]
    box.scroll_into_view_if_needed(timeout=10_000)
    text, check = box.locator(".widget-text input").first, box.locator("button").first
    verdict = box.locator(".widget-html-content").last
    problems = []
    for value, says in typed:
        before = verdict.text_content() or ""
        text.fill(value)
        check.click()
        deadline = time.monotonic() + timeout
        while (got := verdict.text_content() or "") == before and time.monotonic() < deadline:
            time.sleep(0.1)
        if not got.startswith("Correct.") or says not in got:
            problems.append(f"{label!r} box: typed {value!r}, got {got[:160]!r}")
    return problems
