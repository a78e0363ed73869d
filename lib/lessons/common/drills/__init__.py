"""Interview drills: randomised questions whose answers are computed by ``parlab.cost``.

    from lessons.common import drills
    q = drills.generate(topic="pp", seed=3)     # or template="bubble_1f1b"
    print(q.prompt); q.check(12.5); print(q.answer_text, q.explanation)

Each question template draws realistic parameters from a seed (model presets from
``cost.MODEL_PRESETS``, GPUs and links from ``parlab.hardware``), computes the answer
with ``parlab.cost`` and explains it: the formula, the worked numbers, and the notebook
section that measures the same thing. Front-ends: ``python -m lessons drill`` (a terminal
quiz, ``drills.quiz``) and ``drills.widgets.drill_widget`` (a notebook widget).

  core          Question, Ask, parse_answer(), the @template registry
  bank          templates(), generate(): every lesson's templates together (each lesson's
                drills.py registers its topic's: l00 collectives ... l08 reliability)
  session       Attempt, Tally: tries and the score (first tries count), for both front-ends
  quiz          the terminal quiz
  widgets       drill_widget (the only module here that imports ipywidgets)
"""

from .bank import generate, registry, templates
from .core import TOPICS, Ask, Question, parse_answer

__all__ = ["TOPICS", "Ask", "Question", "generate", "parse_answer", "registry", "templates"]
