"""How a checker reads a learner's answer, and the verdict it gives back.

A checker never raises on a wrong or missing answer (a notebook must run top to
bottom before anyone has typed anything); it returns a verdict
``{"ok": bool, "message": str}``, and the message says what is wrong and where.

``as_number`` reads anything a learner may type or compute (an int, a float, "3.0",
"3/11", a numpy or torch scalar) and says in words why something is not a usable
number (NaN, infinite, too large for a float, a list, True); ``read_number`` /
``read_numbers`` turn that into a verdict. Every numeric checker (and the drills'
``Question.check``) goes through them, so none of them can raise on an odd answer.

Pure Python: no torch (numpy and torch values are read through ``.shape`` / ``.item``).
"""

from __future__ import annotations

import ast
import math
import numbers

__all__ = ["verdict", "missing", "blank", "shown", "parse_value", "as_number", "as_numbers",
           "read_number", "read_numbers", "check_number"]


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
