"""HTML pieces for notebook output: tables instead of printed fixed-width text
(which wraps and splits numbers on a narrow screen), short collapsible notes for
caveats, and answers that open on a click."""

from __future__ import annotations

import html

__all__ = ["table", "note", "answer"]


def _cell(value, fmt) -> str:
    if fmt is not None and value is not None and not isinstance(value, str):
        text = fmt(value) if callable(fmt) else format(value, fmt)
    elif isinstance(value, float):
        text = f"{value:,.4g}"
    elif isinstance(value, int) and not isinstance(value, bool):
        text = f"{value:,}"
    else:
        text = "" if value is None else str(value)
    return html.escape(text)


def table(rows: list[dict], columns: list[str] | None = None, *, caption: str = "",
          formats: dict | None = None, headers: dict | None = None):
    """An HTML table of ``rows`` (dicts). ``columns``: which keys, in order (default:
    the first row's). ``formats``: key -> format spec (".1%") or callable.
    ``headers``: key -> column title. Numbers are right-aligned and never wrap."""
    from IPython.display import HTML
    columns = list(columns or (rows[0].keys() if rows else []))
    formats, headers = formats or {}, headers or {}
    numeric = {c: all(isinstance(r.get(c), (int, float)) or r.get(c) is None for r in rows)
               for c in columns}
    style = ("border-collapse:collapse;font-size:13px;margin:4px 0",
             "padding:2px 10px;border-bottom:1px solid #ccc;white-space:nowrap")
    # headers may wrap (a long title must not widen its column past the cell); numbers never do
    th = "padding:2px 10px;border-bottom:1px solid #ccc;vertical-align:bottom;max-width:9em"
    head = "".join(f"<th style='{th};text-align:{'right' if numeric[c] else 'left'}'>"
                   f"{html.escape(str(headers.get(c, c)))}</th>" for c in columns)
    body = "".join(
        "<tr>" + "".join(f"<td style='{style[1]};text-align:{'right' if numeric[c] else 'left'}'>"
                         f"{_cell(r.get(c), formats.get(c))}</td>" for c in columns) + "</tr>"
        for r in rows)
    cap = (f"<caption style='caption-side:top;text-align:left;font-weight:bold'>"
           f"{html.escape(caption)}</caption>") if caption else ""
    return HTML(f"<table style='{style[0]}'>{cap}<thead><tr>{head}</tr></thead>"
                f"<tbody>{body}</tbody></table>")


def note(summary: str, body: str):
    """A collapsed note: ``summary`` shows, ``body`` (HTML) opens on a click. For caveats."""
    from IPython.display import HTML
    return HTML(f"<details><summary>{html.escape(summary)}</summary>"
                f"<div style='margin-left:1em'>{body}</div></details>")


def answer(summary: str, lines: list[str], verdict: str = ""):
    """An answer that opens on a click: ``summary`` shows; ``verdict`` (bold) and the
    ``lines`` (HTML, computed in the notebook) open."""
    from IPython.display import HTML
    body = "".join(f"<li>{line}</li>" for line in lines)
    head = f"<p><b>{html.escape(verdict)}</b></p>" if verdict else ""
    from lessons.common.checkers.text import TEXT
    from lessons.common.i18n import t
    click = t(TEXT, "click_to_open")  # "(click to open)", in the session's language
    gap = "" if click.startswith("（") else " "
    return HTML(f"<details><summary><b>{html.escape(summary)}</b>{gap}{click}</summary>"
                f"{head}<ul>{body}</ul></details>")
