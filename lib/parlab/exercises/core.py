"""What every exercise checker shares: verdicts, numeric answers, element-wise
comparison, and running a learner's function on real ranks.

A checker never raises on a wrong or missing answer (a notebook must run top to
bottom before anyone has typed anything); it returns a verdict
``{"ok": bool, "message": str}``, and the message says what is wrong and where
(which rank, step, element or micro-batch, and by how much).

Numeric answers: ``as_number`` reads anything a learner may type or compute (an
int, a float, "3.0", "3/11", a numpy or torch scalar) and says in words why something
is not a usable number (NaN, infinite, too large for a float, a list, True);
``read_number`` / ``read_numbers`` turn that into a verdict, and every numeric checker
goes through them, so none of them can raise on an odd answer.

Coding exercises: the learner writes a function in a notebook cell. It never runs in
the caller (the notebook's kernel): a learner's ``time.sleep``, ``os._exit`` or
``sys.exit`` would freeze or kill it. Ranks are separate processes and cannot import
a notebook, so ``learner_source`` sends the function's *source* (``inspect.getsource``;
a lambda's own text), followed by what it uses from the notebook that can travel as
text (imports, constants, helper functions). The ranks execute it with ``torch`` and
``dist`` in scope and call it through a checker's harness (a module-level function in
``parlab.exercises.<topic>``): ``run_learner`` on real ranks, ``call_learner`` in one
child process for the exercises that need no communication (a partition, a schedule,
groups). Both have a timeout and turn a hang, a death, ``sys.exit`` or an exception
into a verdict.
"""

from __future__ import annotations

import ast
import builtins
import inspect
import linecache
import math
import numbers
import pickle
import re
import sys
import textwrap
import types

import torch

from ..launch import MAX_LOCAL_RANKS, LaunchError, LaunchTimeout, launch
from ..validate import check_float, check_int

__all__ = ["verdict", "missing", "blank", "shown", "parse_value", "as_number", "read_number",
           "read_numbers", "check_number", "compare_tensors", "learner_source", "load_learner",
           "run_learner", "call_learner", "check_ranks", "check_timeout", "NotWritten",
           "solution_source", "show_solution", "solution_html"]


class NotWritten(Exception):
    """Raised by a harness when the learner's function still raises NotImplementedError."""


def verdict(ok: bool, message: str, **extra) -> dict:
    return dict(ok=bool(ok), message=("Correct. " if ok else "Not yet. ") + message, **extra)


def missing(what: str) -> dict:
    """The verdict for an exercise not attempted yet."""
    return dict(ok=False, message=f"Not answered yet: {what}", missing=True)


def blank(answer) -> bool:
    """True for an answer not given yet: None or empty text. (Not ``answer == ""``: for a
    numpy array that comparison is an array, and ``if`` on it raises.)"""
    return answer is None or (isinstance(answer, str) and not answer.strip())


def shown(value, width: int = 40) -> str:
    """``repr(value)`` cut to fit in a sentence (10**400 has 401 digits)."""
    text = repr(value)
    return text if len(text) <= width else text[:width - 3] + "..."


def parse_value(text: str):
    """What a learner typed: a number ("1.5e9", "3,072"), a fraction ("3/11": a bubble is
    often worked out as one), a Python literal ("[(0, 1)]"), or None when empty; other
    text comes back as it is."""
    text = text.strip()
    if not text:
        return None
    plain = text.replace(",", "").replace("_", "")
    try:
        return float(plain)
    except ValueError:
        pass
    num, slash, den = plain.partition("/")
    if slash:
        try:
            a, b = float(num), float(den)
        except ValueError:
            pass
        else:
            if b:
                return a / b
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return text


def as_number(value, *, whole: bool = False) -> tuple[float | int | None, str | None]:
    """A learner's answer as a finite number: ``(number, None)``, or ``(None, why not)``
    where *why not* is a phrase to follow the answer's name ("is NaN ...").

    Accepted: ints, floats, fractions and decimals, numpy and torch scalars and
    one-element arrays, and text that reads as a number ("3.0", "1.5e9", "3/11").
    Refused, each in words: True/False, NaN, infinities, numbers beyond a float
    (10**400), lists and arrays of several values, anything else. ``whole``: the
    number must be an integer (3.0 is fine, 2.5 is not); it comes back as an int."""
    if isinstance(value, str):
        parsed = parse_value(value)
        if parsed is None or isinstance(parsed, str):
            return None, f"must be a number, got {shown(value)}"
        value = parsed
    if isinstance(value, bool):
        return None, f"must be a number, got {value!r} (a yes/no value, not a number)"
    if hasattr(value, "shape") and hasattr(value, "item"):  # numpy / torch, any shape
        size = math.prod(value.shape)
        if size != 1:
            return None, f"must be one number, got an array of {size} values"
        return as_number(value.item(), whole=whole)
    if isinstance(value, (list, tuple, set, frozenset, dict)):
        return None, f"must be one number, got a {type(value).__name__} of {len(value)} items"
    if isinstance(value, numbers.Complex) and not isinstance(value, numbers.Real):
        return None, f"must be a real number, got {shown(value)}"
    if not isinstance(value, numbers.Real):
        return None, f"must be a number, got {shown(value)}"
    try:
        f = float(value)
    except OverflowError:  # an int (or Fraction) beyond 1.8e308: no answer here is that big
        return None, f"= {shown(value)} is too large to be right (more than 1.8e308)"
    if math.isnan(f):
        return None, "is NaN (not a number): a 0/0 or inf - inf somewhere in the working?"
    if math.isinf(f):
        return None, f"is {'minus ' if f < 0 else ''}infinity: a division by zero somewhere?"
    if whole:
        if not f.is_integer():
            return None, f"must be a whole number, got {f:g}"
        return (int(value) if isinstance(value, numbers.Integral) else int(f)), None
    return f, None


def read_number(answer, name: str = "answer", *, unit: str = "", whole: bool = False,
                ask: str = "") -> tuple[float | int | None, dict | None]:
    """``(the answer as a number, None)``, or ``(None, the verdict)``: "not answered yet"
    when blank (``ask`` says what to type), else what is wrong with it (``as_number``)."""
    if blank(answer):
        return None, missing(ask or f"set {name} = a {'whole ' if whole else ''}number"
                             + (f" ({unit})" if unit else ""))
    got, why = as_number(answer, whole=whole)
    if why:
        return None, verdict(False, f"{name} {why}")
    return got, None


def as_numbers(value, *, count: int | None = None, whole: bool = False
               ) -> tuple[list | None, str | None]:
    """A list of numbers (a list, tuple or set; a 1-D numpy or torch array; text such as
    "[0, 1, 14, 15]"): ``(the numbers, None)``, or ``(None, why not)`` naming the first
    item that is not a number (``as_number``), or a wrong length when ``count`` is given."""
    if isinstance(value, str):
        value = parse_value(value)
    if hasattr(value, "tolist") and hasattr(value, "shape") and len(value.shape) == 1:
        value = value.tolist()
    what = f"a list of {count} numbers" if count is not None else "a list of numbers"
    if not isinstance(value, (list, tuple, set, frozenset)):
        return None, f"must be {what}, got {shown(value)}"
    items = list(value)
    if count is not None and len(items) != count:
        return None, f"must be {what}, got {len(items)} items ({shown(value)})"
    out = []
    for i, x in enumerate(items):
        got, why = as_number(x, whole=whole)
        if why:
            return None, f"(item {i}) {why}"
        out.append(got)
    return out, None


def read_numbers(answer, name: str = "answer", *, count: int | None = None, whole: bool = False,
                 ask: str = "") -> tuple[list | None, dict | None]:
    """``(the answer as a list of numbers, None)`` or ``(None, the verdict)``: "not
    answered yet" when blank, else what is wrong with it (``as_numbers``)."""
    if blank(answer):
        return None, missing(ask or f"set {name} = a list of numbers")
    got, why = as_numbers(answer, count=count, whole=whole)
    if why:
        return None, verdict(False, f"{name} {why}")
    return got, None


def check_number(answer, want: float, *, rel_tol: float = 0.01, unit: str = "",
                 hint: str = "", explanation: str = "", name: str = "answer") -> dict:
    """A numeric answer within ``rel_tol`` of ``want`` (relative; absolute 1e-9 near 0).
    The tolerance is stated in the message. Any answer gets a verdict (``read_number``)."""
    got, bad = read_number(answer, name, unit=unit)
    if bad:
        return bad
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
