"""Exercises for every notebook: checkers, and the reference solutions they are tested on.

Each notebook's "Your turn" section calls the checkers in ``parlab.exercises.<topic>``.
Coding exercises run the learner's function on real ranks (``core.run_learner``) and
compare it with a reference; numeric ones compare with ``parlab.cost``. Reference
solutions live in the same topic module (``solution_*``), so the tests can run every
checker on a right and on a planted wrong answer. ``widgets.answer_box`` is the small
widget that checks numeric answers in a notebook.
"""

from .core import check_number, compare_tensors, missing, run_learner, verdict

__all__ = ["check_number", "compare_tensors", "missing", "run_learner", "verdict"]
