"""Notebook 09 · The whole answer: the seed's main question as a mock interview built
from the lab's own results (answers in English and 中文 with links to the sections that
measure each sentence, the claims judged, a planner-driven decision walk-through, a timed
drill over every topic). Nothing here runs ranks."""

from .answers import QUESTION, three_minute, thirty_second
from .drill import TimedDrill, mixed_drill
from .facts import facts
from .followups import claims, follow_ups
from .sections import SECTIONS, href
from .walkthrough import decide

__all__ = ["QUESTION", "thirty_second", "three_minute", "follow_ups", "claims", "facts",
           "decide", "mixed_drill", "TimedDrill", "SECTIONS", "href"]
