"""The learner's one-page summary, from their record (``lessons.common.record``): exercises
passed by lesson, the drill by topic, what is due for review, the figures measured on their
own machine, and CV lines built from those. In English or Chinese; as text for a terminal
or as a small HTML page an instructor can collect.

    python -m lessons progress [--lang zh] [--html PATH]
    python3 run.py progress [--lang zh] [--html PATH]
"""

from __future__ import annotations

import html as _html
import importlib
import time

from lessons import FOLDERS

from . import record
from .i18n import pick, t
from .text import TEXT


def exercise_names(lesson: str) -> list[str]:
    """The checkers a lesson has: every ``check_*`` of its exercises modules."""
    from pathlib import Path
    folder = Path(__file__).resolve().parents[1] / lesson
    names = set()
    for path in sorted(folder.glob("exercises*.py")):
        module = importlib.import_module(f"lessons.{lesson}.{path.stem}")
        names |= {n for n in vars(module) if n.startswith("check_") and callable(getattr(module, n))
                  and getattr(getattr(module, n), "__module__", "") == module.__name__}
    return sorted(names)


def _value(v: float) -> str:
    """12,346 / 1.23 / 0.0123: thousands with separators, small values to 3 digits."""
    return f"{v:,.0f}" if abs(v) >= 1000 else f"{v:.3g}"


def _day(at: float | None) -> str:
    return time.strftime("%Y-%m-%d", time.localtime(at)) if at else "-"


def sections(lang: str | None = None, summary: dict | None = None) -> list[tuple[str, list[str]]]:
    """(heading, lines) of the page; the first heading is the title."""
    lang = pick(lang)
    from .drills.bank import topic_name
    if not record.enabled() and summary is None:
        return [(t(TEXT, "title", lang), [t(TEXT, "off", lang)])]
    s = summary if summary is not None else record.summary()
    head = [t(TEXT, "record", lang, path=s["path"], since=_day(s["since"]))] if s["since"] else \
        [t(TEXT, "empty", lang)]
    out = [(t(TEXT, "title", lang), head)]
    sep = t(TEXT, "sep", lang)

    lines, built = [], []
    for lesson in FOLDERS.values():
        got = s["exercises"].get(lesson)
        if not got:
            continue
        total = exercise_names(lesson)
        passed = [n for n in got["passed"] if n in total]
        missing = [n for n in got["tried"] if n not in got["passed"]]
        lines.append(t(TEXT, "lesson_line", lang, lesson=t(TEXT, f"lesson_{lesson}", lang),
                       passed=len(passed), total=len(total),
                       missing=t(TEXT, "not_yet", lang, names=", ".join(missing)) if missing else ""))
        if passed:
            built.append(t(TEXT, f"lesson_{lesson}", lang))
    if lines:
        out.append((t(TEXT, "exercises", lang), lines))

    lines, asked, first = [], 0, 0
    for topic, d in s["drill"].items():
        asked, first = asked + d["asked"], first + d["first"]
        lines.append(t(TEXT, "drill_line", lang, topic=topic_name(topic, lang), first=d["first"],
                       asked=d["asked"], median=f"{d['median_s']:.0f}"))
    if lines:
        if s["due"]:
            from .drills.bank import registry
            reg = registry()
            names = sorted({topic_name(reg[x].topic, lang) for x in s["due"] if x in reg})
            lines.append(t(TEXT, "due", lang, n=len(s["due"]), topics=sep.join(names)))
        else:
            lines.append(t(TEXT, "none_due", lang))
        out.append((t(TEXT, "drill", lang), lines))

    m = s["measurements"]
    if m:
        out.append((t(TEXT, "measured", lang), [
            t(TEXT, "measure_line", lang, name=x["name_zh" if lang == "zh" else "name"],
              value=_value(x["value"]), unit=x["unit"],
              when=_day(x["at"]), device=x["device"]) for x in m]))

    cv = []
    if built:
        cv.append(t(TEXT, "cv_built", lang, parts=sep.join(built)))
    if m:
        what = sep.join(f"{x['name_zh' if lang == 'zh' else 'name']} ({_value(x['value'])} {x['unit']})"
                        for x in m[:3])
        cv.append(t(TEXT, "cv_measured", lang, what=what, device=m[-1]["device"]))
    if asked:
        cv.append(t(TEXT, "cv_drill", lang, asked=asked, share=f"{first / asked:.0%}"))
    if cv:
        out.append((t(TEXT, "cv", lang), cv))
    return out


def text(lang: str | None = None, summary: dict | None = None) -> str:
    parts = []
    for i, (heading, lines) in enumerate(sections(lang, summary)):
        parts.append(heading if i == 0 else f"\n{heading}")
        parts += [f"  {line}" for line in lines]
    return "\n".join(parts)


def page(lang: str | None = None, summary: dict | None = None) -> str:
    """The same as one self-contained HTML page (no script, prints on one sheet)."""
    lang = pick(lang)
    secs = sections(lang, summary)
    body = [f"<h1>{_html.escape(secs[0][0])}</h1>"] + [f"<p>{_html.escape(x)}</p>" for x in secs[0][1]]
    for heading, lines in secs[1:]:
        body.append(f"<h2>{_html.escape(heading)}</h2><ul>"
                    + "".join(f"<li>{_html.escape(x)}</li>" for x in lines) + "</ul>")
    return ("<!DOCTYPE html>\n<html lang='{}'><head><meta charset='utf-8'><title>{}</title>"
            "<style>body{{font-family:sans-serif;max-width:46em;margin:2em auto;line-height:1.4}}"
            "h2{{font-size:1.1em;margin-top:1.4em}}</style></head><body>{}</body></html>\n"
            ).format(lang, _html.escape(secs[0][0]), "".join(body))


def write_page(path: str, lang: str | None = None) -> str:
    """``page`` written whole to ``path``; returns the path."""
    from .files import write_whole
    return write_whole(path, page(lang))
