"""Tiered help for every coding exercise: a first hint (where to start), a second one
(the step most learners get wrong), then the reference solution, each behind its own
click. ``help_html`` builds the three nested click-to-open notes from a lesson's
``HINTS`` (its ``hints.py``); every lesson's ``exercises.hints(name)`` shows them. The
tests check that each exercise has both hints and that nothing of them is visible before
a click."""

from __future__ import annotations

import html

from lessons.common.i18n import pick, t

from .text import TEXT


def in_lang(text, lang: str | None = None) -> str:
    """A hint as written: one string (English only), or ``{"en": ..., "zh": ...}``, in ``lang``
    (default: the session's language)."""
    return text[pick(lang)] if isinstance(text, dict) else text


def help_html(solution_source: str | None, name: str, hints: dict) -> str:
    """Hint 1, hint 2 and the reference solution as three click-to-open notes, nested so
    each opens only after the one before it; nothing but the summaries shows at first.
    ``hints``: {exercise name: (hint 1, hint 2)}, a lesson's ``HINTS``; each hint a string
    or ``{"en": ..., "zh": ...}``, shown in the session's language."""
    if name not in hints:
        raise ValueError(f"name={name!r} must be one of {', '.join(hints)}")
    first, second = (in_lang(h) for h in hints[name])
    solution = (f"<pre>{html.escape(solution_source)}</pre>" if solution_source
                else f"<p>{t(TEXT, 'no_solution')}</p>")

    def note(summary, body):
        return (f"<details><summary>{summary}</summary>"
                f"<div style='margin-left:1em'>{body}</div></details>")

    return note(t(TEXT, "hint_1", name=name),
                f"<p>{first}</p>" + note(t(TEXT, "hint_2"),
                                         f"<p>{second}</p>" + note(t(TEXT, "solution"), solution)))
