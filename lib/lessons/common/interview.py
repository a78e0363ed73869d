"""A notebook's interview corner as data: each answer is a function of the numbers the
notebook computed, returning its summary, verdict and lines, and the notebook shows it by
naming the question (``interview.show("b", mw=mw)``), so no answer text sits in a code
cell above its fold-out. The words live here, in the lesson's ``interview.py``;
tests/lessons/common/test_no_spoilers.py reads them and checks that no notebook shows them
before a click.

The words are in two languages: a lesson's ``text.py`` holds ``INTERVIEW``, a catalogue
(``lessons.common.i18n``) with, for an answer ``b``, the keys ``"b"`` (its summary),
``"b.1"``, ``"b.2"``, ... (its lines, in order) and optionally ``"b.verdict"``. An answer
function computes its numbers and returns ``said(INTERVIEW, "b", **numbers)``: the answer
in the session's language, every number formatted by the one template field both
languages share."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from lessons.common.i18n import t


@dataclass(frozen=True)
class Answer:
    """What opens on a click: ``verdict`` (bold, may be empty) and ``lines`` (HTML)."""
    summary: str
    lines: list[str]
    verdict: str = ""


def lines_of(catalogue: dict, key: str) -> list[str]:
    """The line keys of answer ``key`` in ``catalogue``, in order: ``key.1``, ``key.2``, ..."""
    out = []
    while f"{key}.{len(out) + 1}" in catalogue:
        out.append(f"{key}.{len(out) + 1}")
    return out


def said(catalogue: dict, key: str, lang: str | None = None, **fields) -> Answer:
    """Answer ``key`` of a lesson's ``INTERVIEW`` catalogue in ``lang`` (default: the
    session's), each text formatted with ``fields`` (a text uses the fields it names)."""
    if key not in catalogue:
        raise ValueError(f"key={key!r} is not in the catalogue")
    verdict = f"{key}.verdict"
    return Answer(t(catalogue, key, lang, **fields),
                  [t(catalogue, k, lang, **fields) for k in lines_of(catalogue, key)],
                  t(catalogue, verdict, lang, **fields) if verdict in catalogue else "")


@dataclass(frozen=True)
class Corner:
    """Question key -> a function of the notebook's numbers that returns its Answer."""
    answers: dict[str, Callable[..., Answer]] = field(default_factory=dict)

    def answer(self, key: str, **numbers) -> Answer:
        if key not in self.answers:
            raise ValueError(f"key={key!r} must be one of {', '.join(self.answers)}")
        return self.answers[key](**numbers)

    def show(self, key: str, **numbers):
        """The closed fold-out of answer ``key``: only its summary shows until a click."""
        a = self.answer(key, **numbers)
        # the front-end is imported here, not above, so the answers import (and are
        # tested) without plotly or IPython
        from lessons.common.viz import answer
        return answer(a.summary, a.lines, a.verdict)
