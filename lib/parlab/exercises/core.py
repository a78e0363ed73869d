"""What every exercise checker shares: verdicts, numeric answers, element-wise
comparison, and running a learner's function on real ranks.

A checker never raises on a wrong or missing answer (a notebook must run top to
bottom before anyone has typed anything); it returns a verdict
``{"ok": bool, "message": str}``, and the message says what is wrong and where
(which rank, step, element or micro-batch, and by how much).

Coding exercises: the learner writes a function in a notebook cell. Ranks are
separate processes and cannot import a notebook, so ``run_learner`` sends the
function's *source* (``inspect.getsource``) to the ranks, which execute it with
``torch`` and ``dist`` in scope and call it through a checker's harness (a
module-level function in ``parlab.exercises.<topic>``). The function must be
self-contained: imports and helpers inside it, not in other cells.
"""

from __future__ import annotations

import inspect
import math
import textwrap

import torch

from ..launch import LaunchError, LaunchTimeout, launch

__all__ = ["verdict", "missing", "check_number", "compare_tensors", "learner_source",
           "load_learner", "run_learner", "NotWritten", "solution_source", "show_solution",
           "solution_html"]


class NotWritten(Exception):
    """Raised by a harness when the learner's function still raises NotImplementedError."""


def verdict(ok: bool, message: str, **extra) -> dict:
    return dict(ok=bool(ok), message=("Correct. " if ok else "Not yet. ") + message, **extra)


def missing(what: str) -> dict:
    """The verdict for an exercise not attempted yet."""
    return dict(ok=False, message=f"Not answered yet: {what}", missing=True)


def check_number(answer, want: float, *, rel_tol: float = 0.01, unit: str = "",
                 hint: str = "", explanation: str = "", name: str = "answer") -> dict:
    """A numeric answer within ``rel_tol`` of ``want`` (relative; absolute 1e-9 near 0).
    The tolerance is stated in the message."""
    if answer is None or (isinstance(answer, str) and not answer.strip()):
        return missing(f"set {name} = a number" + (f" ({unit})" if unit else ""))
    try:
        got = float(answer)
    except (TypeError, ValueError):
        return verdict(False, f"{name} must be a number, got {answer!r}")
    tol = f"within {rel_tol:.0%}" if rel_tol else "exactly"
    u = f" {unit}" if unit else ""
    if math.isclose(got, want, rel_tol=rel_tol, abs_tol=1e-9):
        return verdict(True, f"{want:,.6g}{u} ({tol}). {explanation}".strip(), want=want)
    off = got / want if want else float("inf")
    return verdict(False, f"{got:,.6g}{u} is off by a factor {off:.3g} (wanted {tol} of the "
                   f"answer). {hint}".strip(), want=want)


def compare_tensors(got, want, *, where: str, atol: float = 1e-6, rtol: float = 1e-5) -> str | None:
    """None if ``got`` matches ``want``; else one line naming ``where``, the first wrong
    element, its value, the expected value and the difference."""
    if got is None:
        return f"{where}: returned None"
    if not isinstance(got, torch.Tensor):
        return f"{where}: returned a {type(got).__name__}, expected a tensor"
    if tuple(got.shape) != tuple(want.shape):
        return f"{where}: shape {tuple(got.shape)}, expected {tuple(want.shape)}"
    g, w = got.detach().double(), want.detach().double()
    bad = ~torch.isclose(g, w, atol=atol, rtol=rtol)
    if not bad.any():
        return None
    idx = tuple(int(i) for i in bad.nonzero()[0])
    n_bad = int(bad.sum())
    return (f"{where}: element {list(idx)} is {g[idx].item():.6g}, expected {w[idx].item():.6g} "
            f"(off by {abs(g[idx] - w[idx]).item():.3g}); {n_bad} of {g.numel()} elements wrong")


def learner_source(fn) -> tuple[str, str]:
    """(source, name) of a learner's function, ready to send to the ranks."""
    if not callable(fn) or not hasattr(fn, "__code__"):
        raise ValueError(f"expected a function defined with def, got {type(fn).__name__}")
    try:
        src = inspect.getsource(fn)
    except (OSError, TypeError) as e:
        raise ValueError(f"cannot read the source of {fn.__name__}: {e}") from None
    return textwrap.dedent(src), fn.__name__


def load_learner(source: str, name: str):
    """On a rank: execute the learner's source and return the function it defines."""
    import torch.distributed as dist
    namespace = {"torch": torch, "dist": dist, "__name__": "learner"}
    exec(compile(source, f"<your {name}>", "exec"), namespace)
    return namespace[name]


def run_learner(harness, fn, world_size: int, *args, timeout: float = 20.0) -> tuple[list | None, dict | None]:
    """Run ``harness(source, name, *args)`` on ``world_size`` ranks.

    Returns ``(results by rank, None)``, or ``(None, verdict)`` when the learner's
    function is not written yet, raised on some rank, or hung (timeout): the verdict
    names the rank and the line, without parlab's own frames."""
    try:
        source, name = learner_source(fn)
    except ValueError as e:
        return None, verdict(False, str(e))
    try:
        return launch(harness, world_size, source, name, *args, timeout=timeout), None
    except LaunchTimeout as e:
        return None, verdict(False, f"{name} did not finish within {timeout:g} s on {world_size} "
                             f"ranks (a send without its matching recv, or a collective not every "
                             f"rank called?). " + "; ".join(f"rank {r}: blocked in {where}"
                                                     for r, where in e.blocked_in.items()))
    except LaunchError as e:
        text = str(e)
        if "NotImplementedError" in text or "NotWritten" in text:
            return None, missing(f"write {name} (it still raises NotImplementedError)")
        return None, verdict(False, f"{name} raised on the ranks: {_short(text)}")


def _short(text: str, keep: int = 6) -> str:
    """The learner-facing tail of a remote traceback: lines from the learner's own code
    (``<your ...>``) and the exception line, not parlab's frames."""
    lines = [ln.rstrip() for ln in text.splitlines() if ln.strip()]
    mine = [i for i, ln in enumerate(lines) if "<your " in ln]
    if mine:
        picked = lines[mine[0]:]
        picked = [ln for ln in picked if "parlab" not in ln or "<your " in ln]
        return " | ".join(picked[-keep:])
    return " | ".join(lines[-3:])


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
