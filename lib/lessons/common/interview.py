"""A notebook's interview corner as data: each answer is a function of the numbers the
notebook computed, returning its summary, verdict and lines, and the notebook shows it by
naming the question (``interview.show("b", mw=mw)``), so no answer text sits in a code
cell above its fold-out. The words live here, in the lesson's ``interview.py``;
tests/lessons/common/test_no_spoilers.py reads them from its source and checks that no
notebook shows them before a click."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable


@dataclass(frozen=True)
class Answer:
    """What opens on a click: ``verdict`` (bold, may be empty) and ``lines`` (HTML)."""
    summary: str
    lines: list[str]
    verdict: str = ""


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
