"""What every exercise checker shares: verdicts and the reading of answers
(``answers``), running the learner's function away from the notebook's kernel
(``learner``), element-wise comparison of tensors, the checkers' parameter checks, and
the reference solutions on demand. Checkers use all of it as ``core.<name>``.
"""

from __future__ import annotations

import inspect
import textwrap

import torch

from parlab.launch import MAX_LOCAL_RANKS
from parlab.validate import check_float, check_int
from lessons.common.i18n import t
from .answers import (as_letter, as_number, as_numbers, blank, check_number, missing,
                      parse_value, read_number, read_numbers, shown, verdict)
from .learner import call_learner, learner_source, load_learner, run_learner
from .text import TEXT

__all__ = ["verdict", "missing", "blank", "shown", "parse_value", "as_number", "as_numbers",
           "as_letter", "read_number", "read_numbers", "check_number", "compare_tensors",
           "learner_source", "load_learner", "run_learner", "call_learner", "check_ranks",
           "check_timeout", "NotWritten", "solution_source", "show_solution", "solution_html",
           "hints", "MAX_LOCAL_RANKS"]


class NotWritten(Exception):
    """Raised by a harness when the learner's function still raises NotImplementedError."""


def compare_tensors(got, want, *, where: str, atol: float = 1e-6, rtol: float = 1e-5) -> str | None:
    """None if ``got`` matches ``want``; else one line naming ``where``, the first wrong
    element, its value, the expected value and the difference."""
    if got is None:
        return t(TEXT, "tensor_none", where=where)
    if not isinstance(got, torch.Tensor):
        return t(TEXT, "tensor_type", where=where, kind=type(got).__name__)
    if tuple(got.shape) != tuple(want.shape):
        return t(TEXT, "tensor_shape", where=where, got=tuple(got.shape), want=tuple(want.shape))
    g, w = got.detach().double(), want.detach().double()
    bad = ~torch.isclose(g, w, atol=atol, rtol=rtol)
    if not bad.any():
        return None
    idx = tuple(int(i) for i in bad.nonzero()[0])
    n_bad = int(bad.sum())
    return t(TEXT, "tensor_element", where=where, idx=list(idx), got=f"{g[idx].item():.6g}",
             want=f"{w[idx].item():.6g}", diff=f"{abs(g[idx] - w[idx]).item():.3g}", bad=n_bad, n=g.numel())


def check_ranks(name: str, value, low: int = 1) -> int:
    """A checker's rank-count parameter: an integer in [low, the launcher's cap], else a
    ValueError naming it, before any process starts."""
    return check_int(name, value, low, MAX_LOCAL_RANKS)


def check_timeout(value) -> float:
    """A checker's ``timeout``: seconds, finite and > 0 (nothing may wait forever)."""
    return check_float("timeout", value)


# --- reference solutions, on demand ----------------------------------------------------------

def solution_source(solutions: dict, name: str) -> str | None:
    """The source of ``solutions[name]`` (a topic module's reference functions), with its
    ``def`` renamed to the exercise's name so it reads as the answer to paste; None for an
    unknown name."""
    fn = solutions.get(name)
    if fn is None:
        return None
    return textwrap.dedent(inspect.getsource(fn)).replace(f"def {fn.__name__}(", f"def {name}(", 1)


def show_solution(solutions: dict, name: str) -> None:
    """Print the reference solution of exercise ``name``, or the names there are."""
    src = solution_source(solutions, name)
    print(src if src is not None else f"no solution named {name!r}; one of {', '.join(solutions)}")


def solution_html(solutions: dict, name: str) -> str:
    """The reference solution as an HTML ``<pre>`` block (for ``viz.note``: opens on a click)."""
    import html
    src = solution_source(solutions, name)
    if src is None:
        raise ValueError(f"name={name!r} must be one of {', '.join(solutions)}")
    return f"<pre>{html.escape(src)}</pre>"


def hints(solutions: dict, hints: dict, name: str):
    """Tiered help for exercise ``name`` in a notebook: hint 1, hint 2 (from ``hints``, a
    lesson's ``HINTS``), then the reference solution, each behind its own click
    (``hints.help_html``)."""
    from IPython.display import HTML
    from .hints import help_html
    return HTML(help_html(solution_source(solutions, name), name, hints))
