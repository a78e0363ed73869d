"""What notebook 09 shows: the answers behind clicks (English and 中文), each sentence
linked to the section that measures it, the claims table, the walk-through's steps and
table. Pure HTML from the data of ``answers``, ``followups`` and ``walkthrough``."""

from __future__ import annotations

import html

from lessons.common import viz
from .answers import QUESTION, three_minute, thirty_second
from .followups import claims, follow_ups
from .sections import href, label
from .seed_claims import VERDICTS

_NAMES = {"en": "English", "zh": "中文"}


def _link(key: str) -> str:
    return (f" <a href='{html.escape(href(key))}' style='font-size:85%;white-space:nowrap'>"
            f"→ {html.escape(label(key))}</a>")


def _details(summary: str, body: str) -> str:
    return (f"<details><summary><b>{html.escape(summary)}</b> (click to open)</summary>"
            f"<div style='margin-left:1em'>{body}</div></details>")


def question_html():
    """The question, in both languages: what the interviewer asks."""
    from IPython.display import HTML
    return HTML(f"<blockquote style='font-size:115%'><b>{html.escape(QUESTION['en'])}</b><br>"
                f"{html.escape(QUESTION['zh'])}</blockquote>")


def thirty_second_html():
    """The 30-second answer, one click per language."""
    from IPython.display import HTML
    return HTML("".join(_details(f"A 30-second answer · {_NAMES[g]}",
                                 f"<p>{html.escape(thirty_second(g))}</p>") for g in _NAMES))


def three_minute_html():
    """The 3-minute answer, one click per language; each sentence links to its section."""
    from IPython.display import HTML
    parts = []
    for g in _NAMES:
        items = "".join(f"<li>{html.escape(s)}{_link(k)}</li>" for s, k in three_minute(g))
        parts.append(_details(f"A 3-minute answer · {_NAMES[g]}", f"<ol>{items}</ol>"))
    return HTML("".join(parts))


def follow_up_html(i: int):
    """Follow-up ``i``: the question shows, the answer opens on a click."""
    from IPython.display import HTML
    items = follow_ups()
    if not 0 <= i < len(items):
        raise ValueError(f"i={i!r} must be 0..{len(items) - 1}")
    f = items[i]
    body = (f"<p><b>{html.escape(f['verdict'])}</b></p><ul>"
            + "".join(f"<li>{html.escape(s)}{_link(k)}</li>" for s, k in f["answer"]) + "</ul>")
    return HTML(f"<p><b>Follow-up {i + 1}.</b> {html.escape(f['q']['en'])}<br>"
                f"<span style='color:#555'>{html.escape(f['q']['zh'])}</span><br>"
                f"<span style='font-size:85%;color:#555'>{html.escape(f['origin'])}</span></p>"
                + _details("Answer", body))


def claims_html():
    """Every claim of the interview text, in its order: verdict and why, the figure that
    settles it, the section that measures it; behind a click."""
    from IPython.display import HTML
    rows = claims()
    th = "padding:2px 8px;border-bottom:1px solid #ccc;text-align:left;vertical-align:top"
    head = "".join(f"<th style='{th}'>{h}</th>"
                   for h in ("where in the text", "claim", "verdict", "the figure", "where measured"))
    body = "".join(
        f"<tr><td style='{th};color:#555'>{html.escape(r['part'])}</td>"
        f"<td style='{th}'>{html.escape(r['claim'])}</td>"
        f"<td style='{th}'><b>{html.escape(r['verdict'])}</b>: {html.escape(r['why'])}</td>"
        f"<td style='{th}'>{html.escape(r['figure'])}</td>"
        f"<td style='{th}'>{_link(r['key'])}</td></tr>" for r in rows)
    counts = ", ".join(f"{sum(r['verdict'] == v for r in rows)} {v}" for v in VERDICTS)
    table = f"<table style='border-collapse:collapse;font-size:13px'><tr>{head}</tr>{body}</table>"
    return HTML(_details(f"The interview text's claims, judged ({len(rows)}: {counts})", table))


def walkthrough_html(d: dict) -> str:
    """The walk-through of ``walkthrough.decide``: numbered steps, then each kind of
    layout's best (as the planner ranks it) in a table."""
    steps = "".join(f"<li><b>{html.escape(s['q'])}</b> {html.escape(s['a'])}{_link(s['key'])}</li>"
                    for s in d["steps"])
    out = (f"<p><b>{html.escape(d['model'])} on {d['n_gpus']:,} × {html.escape(d['gpu'])}</b></p>"
           f"<ol>{steps}</ol>")
    if d["rows"]:
        out += viz.table(d["rows"], ["rank", "kind", "layout", "step_s", "ranked_s", "mfu",
                                     "memory_gb", "slower"],
                         caption=f"the best layout of each kind, of {d['of']} that fit "
                                 f"({d['infeasible']} do not). Ranked step: the predicted "
                                 "step at the best end of its kind's error band "
                                 "(published ZeRO-3 runs were slower than predicted)",
                         formats={"step_s": ".1f", "ranked_s": ".1f", "mfu": ".0%",
                                  "memory_gb": ".1f", "slower": "+.0%"},
                         headers={"step_s": "predicted step (s)", "ranked_s": "ranked step (s)",
                                  "memory_gb": "GB / GPU", "slower": "vs #1's ranked step"}).data
    return out


def walkthrough_figure(d: dict):
    from IPython.display import HTML
    return HTML(walkthrough_html(d))
