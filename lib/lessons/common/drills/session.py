"""The tries on each drill question and the score: one set of rules for the terminal
quiz (``quiz.run_quiz``) and the widget (``widgets.drill_widget``), which only show
what ``Attempt`` and ``Tally`` decide.

Each counted try goes into the learner's record (``lessons.common.record``), with the
seconds since the question was shown; the first try, or a reveal before any, settles the
question's Leitner box there.

The score counts first tries, and says so: "2 right of 3 on the first try". A question
is answered once it has a counted try; a right answer after a wrong one is reported on
its own ("1 more right on a later try"), so it is seen but does not pass for knowing the
answer. Not counted as a try: an empty answer, one that cannot be read as a number
(a typo), and a number right only in the other form of a percentage (0.0303 for 3.03 %,
which gets "did you mean 3.03%?"): the arithmetic was right, only the form was not.
Once the answer is shown, further tries get a verdict but no score; a question shown
before any try is skipped.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from .. import record
from ..i18n import t
from .core import Question
from .text import TEXT

__all__ = ["Attempt", "Tally"]


@dataclass
class Tally:
    answered: int = 0  # questions with at least one counted try
    first: int = 0     # right on the first counted try
    later: int = 0     # right on a later try, before the answer was shown
    skipped: int = 0   # answer shown (or skipped) before any counted try

    def text(self, lang: str | None = None) -> str:
        """ "2 right of 3 on the first try, 1 more right on a later try, 1 skipped" (in
        ``lang``; default the session's)."""
        parts = [t(TEXT, "score_first", lang, first=self.first, answered=self.answered)]
        if self.later:
            parts.append(t(TEXT, "score_later", lang, later=self.later))
        if self.skipped:
            parts.append(t(TEXT, "score_skipped", lang, skipped=self.skipped))
        return t(TEXT, "comma", lang).join(parts)


class Attempt:
    """One question's tries, counted into ``tally`` as they come."""

    def __init__(self, question: Question, tally: Tally):
        self.q, self.tally = question, tally
        self.tries = 0         # counted tries
        self.solved = False    # a right answer came before the answer was shown
        self.revealed = False
        self.shown_at = time.monotonic()  # the clock of this question starts when it is shown

    def answer(self, value) -> dict:
        """The question's verdict on ``value`` (``Question.verdict``), counted by the rules
        above; ``counted`` says whether it was a try and ``tries`` how many so far."""
        v = dict(self.q.verdict(value))
        counts = not (v.get("missing") or v.get("unreadable") or v.get("did_you_mean"))
        if counts and not self.revealed and not self.solved:
            self.tries += 1
            if record.enabled():
                record.drill_try(self.q, self.tries, v["ok"], time.monotonic() - self.shown_at)
                if self.tries == 1:
                    record.settle(self.q.template, self.q.topic, v["ok"])
            if self.tries == 1:
                self.tally.answered += 1
            if v["ok"]:
                self.solved = True
                if self.tries == 1:
                    self.tally.first += 1
                else:
                    self.tally.later += 1
        else:
            counts = False
        v.update(counted=counts, tries=self.tries)
        return v

    def reveal(self) -> None:
        """The answer is shown: a skip when nothing was tried, and no score after it."""
        if not self.revealed and self.tries == 0 and not self.solved:
            self.tally.skipped += 1
            if record.enabled():  # shown before a try: a miss, back to box 1
                record.settle(self.q.template, self.q.topic, False)
        self.revealed = True
