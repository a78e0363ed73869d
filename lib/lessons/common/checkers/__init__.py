"""Exercises for every notebook: checkers, and the reference solutions they are tested on.

Each notebook's "Your turn" section calls the checkers in ``lessons.common.checkers.<topic>``.
Coding exercises run the learner's function on real ranks (``core.run_learner``), or in
one child process when it needs no communication (``core.call_learner``), never in the
notebook's kernel, and compare it with a reference; numeric ones read the answer with
``core.read_number`` (any input gets a verdict) and compare it with ``parlab.cost``. Reference
solutions live in the same topic module (``solution_*``), so the tests can run every
checker on a right and on a planted wrong answer. ``widgets.answer_box`` is the small
widget that checks numeric answers in a notebook.
"""

from .core import (as_number, call_learner, check_number, compare_tensors, missing, read_number,
                   run_learner, verdict)

__all__ = ["as_number", "call_learner", "check_number", "compare_tensors", "missing",
           "read_number", "run_learner", "verdict"]
