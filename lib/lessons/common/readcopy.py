"""Read-only copies of notebook sections, for links that must land on a section.

A link from one notebook to another's section ("→ 03 §4") cannot be made reliable in
JupyterLab: opening a notebook starts its kernel (unasked, one more process per click) and
lands at its top when the heading is not rendered yet. So ``run.py lab`` writes a small
page per linked section beside the learner's notebooks (``work/read/<key>.html``): that
section's cells as shipped (prose, code, the outputs kept in the repository), no kernel,
no script. JupyterLab opens it in a tab of its own; any browser can too.

    python -m lessons read-copies --out work/read

The pages are rewritten only when their notebook changed (``write_copies`` compares
modification times), so a second start costs nothing.
"""

from __future__ import annotations

import html
import re
from pathlib import Path

from .files import write_whole

STYLE = """body{font-family:system-ui,sans-serif;max-width:52em;margin:1.5em auto;padding:0 1em;
line-height:1.45;color:#222}pre{background:#f6f6f6;padding:.6em;overflow-x:auto;font-size:90%}
.note{background:#fff8e1;border-left:4px solid #e0a800;padding:.5em .8em;margin-bottom:1.2em}
table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:2px 6px}
.jp-InputPrompt,.jp-OutputPrompt{display:none}"""


def _level(line: str) -> int:
    m = re.match(r"(#{1,6})\s", line)
    return len(m.group(1)) if m else 0


def section_cells(cells: list[dict], heading: str) -> list[dict]:
    """The cells of the section whose markdown heading reads ``heading`` (after its #'s):
    from the cell that holds it up to the next heading of the same level or higher."""
    start = level = None
    for i, c in enumerate(cells):
        if c["cell_type"] != "markdown":
            continue
        for line in "".join(c["source"]).splitlines():
            lv = _level(line)
            if start is None and lv and line[lv:].strip() == heading.strip():
                start, level = i, lv
                break
            if start is not None and i > start and lv and lv <= level:
                return cells[start:i]
    if start is None:
        raise ValueError(f"heading={heading!r} is in no markdown cell")
    return cells[start:]


def page(notebook: Path, heading: str, label: str) -> str:
    """One section of ``notebook`` as a self-contained page (no script)."""
    import nbformat
    from nbconvert import HTMLExporter
    from pygments.formatters import HtmlFormatter

    nb = nbformat.read(notebook, as_version=4)
    nb.cells = section_cells(nb.cells, heading)
    for c in nb.cells:  # outputs pinned without a count (tools/pin_outputs.py) still validate
        for o in c.get("outputs", []):
            if o.get("output_type") == "execute_result":
                o.setdefault("execution_count", None)
    body, _ = HTMLExporter(template_name="basic").from_notebook_node(nb)
    note = (f"<div class='note'><b>{html.escape(label)}</b>, a read-only copy: nothing runs "
            f"here. To run this section, open <code>{html.escape(notebook.name)}</code> in "
            "JupyterLab and run its cells from the top.</div>")
    css = STYLE + HtmlFormatter().get_style_defs(".highlight")
    return (f"<!DOCTYPE html>\n<html><head><meta charset='utf-8'><title>{html.escape(label)}"
            f"</title><style>{css}</style></head><body>{note}{body}</body></html>\n")


def write_copies(sections: dict, notebooks: Path, out: Path, label=None) -> list[str]:
    """A page per key of ``sections`` ({key: (notebook file, heading, ...)}) in ``out``,
    each written whole (``files.write_whole``); only those older than their notebook.
    Returns the keys written."""
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for key, (name, heading, *_) in sections.items():
        src, dst = Path(notebooks) / name, out / f"{key}.html"
        if dst.exists() and dst.stat().st_mtime >= src.stat().st_mtime:
            continue
        write_whole(dst, page(src, heading, label(key) if label else f"{name} · {heading}"))
        written.append(key)
    return written
