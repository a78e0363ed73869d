"""What notebook 09 shows: the answers behind clicks (English and 中文), each sentence
linked to the section that measures it, the claims table, the walk-through's steps and
table. Pure HTML from the data of ``answers``, ``followups`` and ``walkthrough``; the
words around them (summaries, headers, captions) in the session's language
(``lessons.lang``), from ``text.TEXT``."""

from __future__ import annotations

import html

from lessons.common import viz
from lessons.common.i18n import pick, t
from .answers import QUESTION, three_minute, thirty_second
from .followups import claims, follow_ups
from .sections import href, label
from .seed_claims import VERDICTS
from .text import TEXT

_NAMES = {"en": "English", "zh": "中文"}


def _link(key: str) -> str:
    return (f" <a href='{html.escape(href(key))}' style='font-size:85%;white-space:nowrap'>"
            f"→ {html.escape(label(key))}</a>")


def _details(summary: str, body: str, lang: str | None = None) -> str:
    return (f"<details><summary><b>{html.escape(summary)}</b>{t(TEXT, 'click', lang)}</summary>"
            f"<div style='margin-left:1em'>{body}</div></details>")


def _langs(lang: str | None = None) -> list[str]:
    """Both languages, the session's (or ``lang``) first."""
    first = pick(lang)
    return [first] + [g for g in _NAMES if g != first]


def question_html():
    """The question, in both languages: what the interviewer asks."""
    from IPython.display import HTML
    first, second = _langs()
    return HTML(f"<blockquote style='font-size:115%'><b>{html.escape(QUESTION[first])}</b><br>"
                f"{html.escape(QUESTION[second])}</blockquote>")


def thirty_second_html():
    """The 30-second answer, one click per language."""
    from IPython.display import HTML
    return HTML("".join(_details(t(TEXT, "thirty_title", name=_NAMES[g]),
                                 f"<p>{html.escape(thirty_second(g))}</p>") for g in _langs()))


def three_minute_html():
    """The 3-minute answer, one click per language; each sentence links to its section."""
    from IPython.display import HTML
    parts = []
    for g in _langs():
        items = "".join(f"<li>{html.escape(s)}{_link(k)}</li>" for s, k in three_minute(g))
        parts.append(_details(t(TEXT, "three_title", name=_NAMES[g]), f"<ol>{items}</ol>"))
    return HTML("".join(parts))


def follow_up_html(i: int, lang: str | None = None):
    """Follow-up ``i``: the question shows (in both languages, ``lang``'s first), the
    answer, in ``lang`` (default: the session's), opens on a click."""
    from IPython.display import HTML
    lang = pick(lang)
    items = follow_ups(lang)
    if not 0 <= i < len(items):
        raise ValueError(f"i={i!r} must be 0..{len(items) - 1}")
    f = items[i]
    first, second = _langs(lang)
    body = (f"<p><b>{html.escape(f['verdict'])}</b></p><ul>"
            + "".join(f"<li>{html.escape(s)}{_link(k)}</li>" for s, k in f["answer"]) + "</ul>")
    return HTML(f"<p><b>{t(TEXT, 'follow_up', lang, i=i + 1)}</b> {html.escape(f['q'][first])}<br>"
                f"<span style='color:#555'>{html.escape(f['q'][second])}</span><br>"
                f"<span style='font-size:85%;color:#555'>{html.escape(f['origin'])}</span></p>"
                + _details(t(TEXT, "answer", lang), body, lang))


def claims_html(lang: str | None = None):
    """Every claim of the interview text, in its order: verdict and why, the figure that
    settles it, the section that measures it; behind a click. In ``lang`` (default: the
    session's): in Chinese each claim is the text's own words, quoted."""
    from IPython.display import HTML
    lang = pick(lang)
    rows = claims(lang)
    th = "padding:2px 8px;border-bottom:1px solid #ccc;text-align:left;vertical-align:top"
    head = "".join(f"<th style='{th}'>{html.escape(t(TEXT, h, lang))}</th>"
                   for h in ("col_part", "col_claim", "col_verdict", "col_figure", "col_where"))
    quote = "「{}」" if lang == "zh" else "{}"
    body = "".join(
        f"<tr><td style='{th};color:#555'>{html.escape(r['part'])}</td>"
        f"<td style='{th}'>{html.escape(quote.format(r['claim']))}</td>"
        f"<td style='{th}'>" + t(TEXT, "verdict_why", lang,
                                 verdict=f"<b>{html.escape(r['verdict_text'])}</b>",
                                 why=html.escape(r["why"])) + "</td>"
        f"<td style='{th}'>{html.escape(r['figure'])}</td>"
        f"<td style='{th}'>{_link(r['key'])}</td></tr>" for r in rows)
    counts = t(TEXT, "claims_sep", lang).join(
        t(TEXT, "claims_count", lang, n=sum(r["verdict"] == v for r in rows),
          verdict=t(TEXT, f"verdict.{v}", lang)) for v in VERDICTS)
    table = f"<table style='border-collapse:collapse;font-size:13px'><tr>{head}</tr>{body}</table>"
    return HTML(_details(t(TEXT, "claims_title", lang, n=len(rows), counts=counts), table, lang))


_HEADS = {"rank": "head_rank", "kind": "head_kind", "layout": "head_layout",
          "step_s": "head_step", "ranked_s": "head_ranked", "mfu": "head_mfu",
          "memory_gb": "head_memory", "slower": "head_slower"}


def walkthrough_html(d: dict, lang: str | None = None) -> str:
    """The walk-through of ``walkthrough.decide``: numbered steps, then each kind of
    layout's best (as the planner ranks it) in a table. The steps speak the language
    ``decide`` was given; the heading, caption and headers ``lang`` (default: the
    session's)."""
    steps = "".join(f"<li><b>{html.escape(s['q'])}</b> {html.escape(s['a'])}{_link(s['key'])}</li>"
                    for s in d["steps"])
    title = t(TEXT, "walk_title", lang, model=html.escape(d["model"]), n_gpus=f"{d['n_gpus']:,}",
              gpu=html.escape(d["gpu"]))
    out = f"<p><b>{title}</b></p><ol>{steps}</ol>"
    if d["rows"]:
        out += viz.table(d["rows"], list(_HEADS),
                         caption=t(TEXT, "walk_caption", lang, of=d["of"],
                                   infeasible=d["infeasible"]),
                         formats={"step_s": ".1f", "ranked_s": ".1f", "mfu": ".0%",
                                  "memory_gb": ".1f", "slower": "+.0%"},
                         headers={k: t(TEXT, h, lang) for k, h in _HEADS.items()}).data
    return out


def walkthrough_figure(d: dict):
    from IPython.display import HTML
    return HTML(walkthrough_html(d))
