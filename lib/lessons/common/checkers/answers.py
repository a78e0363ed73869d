"""How a checker reads a learner's answer, and the verdict it gives back.

A checker never raises on a wrong or missing answer (a notebook must run top to
bottom before anyone has typed anything); it returns a verdict
``{"ok": bool, "message": str}``, and the message says what is wrong and where.

``as_number`` reads anything a learner may type or compute (an int, a float, "3.0",
"3/11", a numpy or torch scalar) and says in words why something is not a usable
number (NaN, infinite, too large for a float, a list, True); ``read_number`` /
``read_numbers`` turn that into a verdict. Every numeric checker (and the drills'
``Question.check``) goes through them, so none of them can raise on an odd answer.

``check_number`` compares with the answer; it is the one function behind every numeric
verdict, the notebooks' answer boxes and the drills alike, so a share reads the same
way everywhere. The rule for shares and percentages:

- A question declares its form: ``share=True`` for a share of a whole (a bubble, a
  dropped share, MFU; at most 1) answered as a fraction (0.25), ``unit="%"`` for a
  percentage (25; the drills' shares, and ratios such as bubble / ideal time, which can
  pass 100 %).
- A number typed with a percent sign ("25%", "25 %") means 25/100: right for either form.
- A bare number is read in the question's form, except where that is impossible: a
  share is at most 1, so a bare 25 for a share cannot be a fraction and reads as 25 %.
- A bare number that is wrong as read but right in the other form (0.0303 for 3.03 %,
  or 1 for the share 0.01) is not accepted, since both readings are plausible numbers:
  the verdict asks "did you mean 3.03%?" / "did you mean 0.01 (1%)?" and carries
  ``did_you_mean=True`` (the drills do not count it as a try).
- Without either flag, "160%" still reads as 1.6 (a percent sign is a factor 1/100).

A wrong answer's verdict says how far off it is and which way: "off by a factor 2:
too high", or "0.0084% too low" when the factor would print as 1.

What a learner may type (``typed.read_text``; the answer boxes hand the text itself to the
checker):

- a number in any usual notation: "6.1e-5", "3,072" (commas only in groups of three:
  "1,5" is refused, since it may mean 1.5), "1_000";
- arithmetic: "2^-14", "2**-14", "1/16384", "70e9*12/64", "(8-1)/(8-1+32)", with
  + - * / ^ ** and parentheses (no names, calls or anything else). It is read by a small
  evaluator over ``ast`` in floats, so nothing can hang or eat memory: a result past
  1.8e308 ("9**9**9**9", "10**10**10") is refused as too large, text over
  ``MAX_CHARS`` characters is refused before it is parsed;
- a unit, where the question has one: "13.5 GB" for GB, converted within its family
  ("13500 MB", "13.5e9 B", "12.6 GiB" for GB; "250 us" for ms) and said so; a unit of
  another family ("1.5 s" for GB), or any unit for a plain number, is refused in words;
- a trailing percent sign, by the rule above.

When the answer was not a plain number, the verdict starts with what was understood:
"read 2^-14 = 6.1035e-05", "read 13500 MB = 13.5 GB".

How close is close enough. A count (bytes, steps, micro-batches) is exact: ``rel_tol=0``.
A value computed from a formula has a stated relative tolerance (``rel_tol=0.01``: "within
1%"). A value a learner reads off a table or works out by hand to a few digits (fp16's
smallest normal, 6.1035e-05) is judged by the digits typed (``digits=2``): the answer is
right when it is the true value correctly rounded to the significant digits the learner
typed, counting at least ``digits`` (2) and at most 6, i.e. within half a unit of the last
digit. So 6.1e-5 and 6.104e-5 are right for 6.1035e-05; 6e-5 (read as 6.0e-5) and 6.2e-5
are not; 6.103e-5 is not (6.1035 rounds to 6.104). Digits are counted in the text as typed
(6.10e-5 has 3); in an expression, in its literals with a point or an exponent (whole
numbers in it are exact: 2^-14 and 1/16384 are exact), and an exact answer or a number
computed in code is judged to 6 digits.

Pure Python: no torch (numpy and torch values are read through ``.shape`` / ``.item``).
"""

from __future__ import annotations

import decimal
import math
import numbers

from lessons.common.i18n import t

from .text import TEXT
from .typed import (MAX_CHARS, UNITS, Reading, _significant, box_value, parse_value,
                    read_text)

__all__ = ["verdict", "missing", "blank", "shown", "parse_value", "box_value", "read_text",
           "Reading", "UNITS", "as_number", "as_numbers", "as_letter", "read_number",
           "read_numbers", "check_number", "off_by", "percent_words", "tolerance_words", "MAX_CHARS"]


def verdict(ok: bool, message: str, **extra) -> dict:
    """``{"ok", "message": "Correct. ..." / "Not yet. ...", "detail": the message alone}``
    (``detail``: for front-ends that say right or wrong in their own words)."""
    return dict(ok=bool(ok), message=t(TEXT, "correct" if ok else "not_yet") + message,
                detail=message, **extra)


def missing(what: str) -> dict:
    """The verdict for an exercise not attempted yet."""
    return dict(ok=False, message=t(TEXT, "not_answered", what=what), missing=True)


def blank(answer) -> bool:
    """True for an answer not given yet: None or empty text. (Not ``answer == ""``: for a
    numpy array that comparison is an array, and ``if`` on it raises.)"""
    return answer is None or (isinstance(answer, str) and not answer.strip())


def shown(value, width: int = 40) -> str:
    """``repr(value)`` cut to fit in a sentence (10**400 has 401 digits). Never raises:
    an int past Python's 4,300-digit ``str`` limit (2**20000) is named by its number of
    digits, and a value whose ``repr`` fails (a list nested 5000 deep, an object whose
    ``__repr__`` raises) by its type."""
    if isinstance(value, int) and value.bit_length() > 10_000:  # repr would raise ValueError
        digits = int(value.bit_length() * math.log10(2)) + 1
        return f"a{' negative' if value < 0 else 'n'} integer of about {digits:,} digits"
    try:
        text = repr(value)
    except Exception:  # RecursionError, the digit limit (a Fraction of huge ints), a bad __repr__
        text = f"<a {type(value).__name__} that cannot be shown>"
    if not isinstance(text, str):  # a __repr__ that returns something else
        text = f"<a {type(value).__name__}>"
    return text if len(text) <= width else text[:width - 3] + "..."


def as_letter(answer) -> str:
    """A multiple-choice answer as its upper-case letter ("a " -> "A"). Anything but text
    comes back as ``shown(answer)``, which is no letter: ``str()`` of a learner's value
    can raise (2**20000, a list nested 5000 deep, an object whose ``__str__`` raises)."""
    return answer.strip().upper() if isinstance(answer, str) else shown(answer)


def as_number(value, *, whole: bool = False, unit: str = "") -> tuple[float | int | None, str | None]:
    """A learner's answer as a finite number: ``(number, None)``, or ``(None, why not)``
    where *why not* is a phrase to follow the answer's name ("is NaN ...").

    Accepted: ints, floats, fractions and decimals, numpy and torch scalars and
    one-element arrays, and text that reads as a number ("3.0", "1.5e9", "3/11", "2^-14",
    "13.5 GB" when ``unit`` is GB; ``read_text``).
    Refused, each in words: True/False, NaN, infinities, numbers beyond a float
    (10**400), lists and arrays of several values, anything else. ``whole``: the
    number must be an integer (3.0 is fine, 2.5 is not); it comes back as an int."""
    try:
        return _as_number(value, whole, unit=unit)
    except Exception as e:  # a learner's own type whose __float__, shape or len raises
        return None, t(TEXT, "why_unreadable", value=shown(value), err=type(e).__name__)


def _as_number(value, whole: bool, depth: int = 0, unit: str = ""):
    if isinstance(value, str):
        r = read_text(value, unit)
        if r.why:
            return None, r.why
        value = r.value
    if isinstance(value, decimal.Decimal):  # not a numbers.Real, but a number all the same
        if value.is_snan():
            return None, t(TEXT, "why_nan")
        value = float(value)  # Decimal('1e99999') is inf, refused below
    if isinstance(value, bool):
        return None, t(TEXT, "why_bool", value=repr(value))
    if hasattr(value, "shape") and hasattr(value, "item") and depth == 0:  # numpy / torch
        size = math.prod(int(d) for d in value.shape)
        if size != 1:
            return None, t(TEXT, "why_array", size=size)
        # depth 1: a numpy long double's .item() is itself (it has .shape too)
        return _as_number(value.item(), whole, depth + 1)
    if isinstance(value, (list, tuple, set, frozenset, dict)):
        return None, t(TEXT, "why_items", kind=type(value).__name__, n=len(value))
    if isinstance(value, numbers.Complex) and not isinstance(value, numbers.Real):
        return None, t(TEXT, "why_complex", value=shown(value))
    if not isinstance(value, numbers.Real):
        return None, t(TEXT, "why_not_number", value=shown(value))
    try:
        f = float(value)
    except OverflowError:  # an int (or Fraction) beyond 1.8e308: no answer here is that big
        return None, t(TEXT, "why_too_large", value=shown(value))
    if math.isnan(f):
        return None, t(TEXT, "why_nan")
    if math.isinf(f):
        return None, t(TEXT, "why_minus_inf" if f < 0 else "why_inf")
    if whole:
        if not f.is_integer():
            return None, t(TEXT, "why_whole", value=f"{f:g}")
        return (int(value) if isinstance(value, numbers.Integral) else int(f)), None
    return f, None


def read_number(answer, name: str = "answer", *, unit: str = "", whole: bool = False,
                ask: str = "") -> tuple[float | int | None, dict | None]:
    """``(the answer as a number, None)``, or ``(None, the verdict)``: "not answered yet"
    when blank (``ask`` says what to type), else what is wrong with it (``as_number``)."""
    if blank(answer):
        return None, missing(ask or t(TEXT, ("ask_whole" if whole else "ask_number")
                                      + ("_unit" if unit else ""), name=name, unit=unit))
    got, why = as_number(answer, whole=whole, unit=unit)
    if why:  # unreadable: the drills do not count it as a try
        return None, verdict(False, f"{name} {why}", unreadable=True)
    return got, None


def as_numbers(value, *, count: int | None = None, whole: bool = False
               ) -> tuple[list | None, str | None]:
    """A list of numbers (a list, tuple or set; a 1-D numpy or torch array; text such as
    "[0, 1, 14, 15]"): ``(the numbers, None)``, or ``(None, why not)`` naming the first
    item that is not a number (``as_number``), or a wrong length when ``count`` is given."""
    try:
        return _as_numbers(value, count, whole)
    except Exception as e:  # a learner's list type whose len or iteration raises
        return None, t(TEXT, "why_list_unreadable", value=shown(value), err=type(e).__name__)


def _as_numbers(value, count, whole):
    if isinstance(value, str):
        value = parse_value(value)
    if hasattr(value, "tolist") and hasattr(value, "shape") and len(value.shape) == 1:
        value = value.tolist()
    what = t(TEXT, "list_of_n", count=count) if count is not None else t(TEXT, "list_of")
    if not isinstance(value, (list, tuple, set, frozenset)):
        return None, t(TEXT, "why_list", what=what, value=shown(value))
    items = list(value)
    if count is not None and len(items) != count:
        return None, t(TEXT, "why_list_len", what=what, n=len(items), value=shown(value))
    out = []
    for i, x in enumerate(items):
        got, why = as_number(x, whole=whole)
        if why:
            return None, t(TEXT, "why_item", i=i, why=why)
        out.append(got)
    return out, None


def read_numbers(answer, name: str = "answer", *, count: int | None = None, whole: bool = False,
                 ask: str = "") -> tuple[list | None, dict | None]:
    """``(the answer as a list of numbers, None)`` or ``(None, the verdict)``: "not
    answered yet" when blank, else what is wrong with it (``as_numbers``)."""
    if blank(answer):
        return None, missing(ask or t(TEXT, "ask_list", name=name))
    got, why = as_numbers(answer, count=count, whole=whole)
    if why:
        return None, verdict(False, f"{name} {why}")
    return got, None


_MAX_DIGITS = 6  # an exact answer, or a number from code, is judged to this many digits


def _close(got: float, want: float, rel_tol: float) -> bool:
    """Within ``rel_tol`` of the answer, relative to the answer ("within 2% of the
    answer"); a hair of float rounding (1e-9 relative) even for exact counts."""
    return abs(got - want) <= max(rel_tol * abs(want), 1e-9 * max(1.0, abs(want)))


def _rounds_to(got: float, want: float, k: int) -> bool:
    """``got`` is ``want`` correctly rounded to ``k`` significant digits: within half a
    unit of ``got``'s k-th digit (and a hair of float rounding)."""
    if got == 0 or want == 0:
        return _close(got, want, 0)
    half = 0.5 * 10.0 ** (math.floor(math.log10(abs(got))) - k + 1)
    return abs(got - want) <= half + 1e-9 * abs(want)


def _code_digits(x) -> int:
    """Significant digits of a number given as a value (a code cell's ``answer = 6.1e-5``):
    those of its shortest repr, which is what was typed."""
    text = repr(float(x)) if not isinstance(x, int) else str(abs(x))
    return _significant(text.lstrip("-"))


def percent_words(rel_tol: float) -> str:
    """A relative tolerance as a percentage that never reads "0%": 0.001 -> "0.1%"."""
    return f"{float(f'{rel_tol * 100:.2g}'):g}%"


def tolerance_words(rel_tol: float, digits: int = 0) -> str:
    """The tolerance in words: "exactly", "within 0.1%" (never "within 0%"), or the
    digits rule."""
    if digits:
        return t(TEXT, "tol_digits", digits=digits)
    if not rel_tol:
        return t(TEXT, "tol_exact")
    return t(TEXT, "tol_within", pct=percent_words(rel_tol))


def off_by(got: float, want: float) -> str:
    """How a wrong number misses, as a phrase after it: "is off by a factor 2: too high",
    or "is 0.0084% too high" when the factor would print as 1."""
    if want == 0:
        return t(TEXT, "off_zero_wanted")
    r = got / want
    if r < 0:
        return t(TEXT, "off_sign")
    if r == 0:
        return t(TEXT, "off_is_zero")
    way = "high" if r > 1 else "low"
    if abs(r - 1) < 0.005:  # "a factor 1" would say nothing
        return t(TEXT, f"off_pct_{way}", pct=f"{abs(r - 1) * 100:.2g}")
    return t(TEXT, f"off_factor_{way}", r=f"{r:.3g}")


def _percent_sign(answer):
    """The number part of text typed with a percent sign ("25%", "25 %" -> "25"), else None."""
    if isinstance(answer, str) and answer.strip().endswith(("%", "\uff05")):  # ％: full width
        return answer.strip()[:-1]
    return None


def _share_text(x: float, percent: bool) -> str:
    """A share as the question asks for it: "3.03%", or "0.25 (25%)" for a fraction."""
    return f"{x * 100:.4g}%" if percent else f"{x:.4g} ({x * 100:.4g}%)"


def _reading(answer, name: str, unit: str):
    """``(number, note, significant digits, None)`` or ``(None, "", None, the verdict)``:
    typed text through ``read_text`` (its note and digits), any other value through
    ``read_number`` (its repr's digits)."""
    if isinstance(answer, str) and not blank(answer):
        r = read_text(answer, unit)
        if r.why:  # unreadable: the drills do not count it as a try
            return None, "", None, verdict(False, f"{name} {r.why}", unreadable=True)
        return r.value, r.note, r.digits, None
    got, bad = read_number(answer, name, unit=unit)
    if bad:
        return None, "", None, bad
    try:
        return got, "", _code_digits(got), None
    except (OverflowError, ValueError):  # cannot happen for a finite float; stay safe
        return got, "", None, None


def check_number(answer, want: float, *, rel_tol: float = 0.01, digits: int = 0,
                 unit: str = "", hint: str = "", explanation: str = "", name: str = "answer",
                 share: bool = False) -> dict:
    """A numeric answer within ``rel_tol`` of ``want`` (relative to ``want``), or, with
    ``digits`` (for a value read off a table or worked out by hand), ``want`` correctly
    rounded to the significant digits typed, at least ``digits`` (the rule in this
    module's docstring). The tolerance is stated in the message; an answer typed as a
    formula or with a unit starts it with what was read ("read 2^-14 = 6.1035e-05").
    Any answer gets a verdict.

    ``share=True``: ``want`` is a share of a whole as a fraction; ``unit="%"``: ``want``
    is a percentage. Both read answers by the rule in this module's docstring ("25%",
    "0.25" and "25" for the share 0.25; "did you mean ...?" when ambiguous). The verdict
    has ``want``, ``detail`` (the message without "Correct." / "Not yet.") and, for a
    number right only in the other form, ``did_you_mean=True``."""
    percent = unit == "%"
    if digits and (share or percent):
        raise ValueError(f"digits={digits} is for plain numbers, not a share or a percentage")
    pct_text = _percent_sign(answer)
    got, note, sig, bad = _reading(answer if pct_text is None else pct_text, name, unit)
    if bad:
        return bad
    k = max(digits, min(sig or _MAX_DIGITS, _MAX_DIGITS))
    if digits:
        tol = (t(TEXT, "tol_k_digits", k=k) if k < _MAX_DIGITS
               else t(TEXT, "tol_max_digits", k=_MAX_DIGITS))
        wanted = t(TEXT, "wanted_digits", digits=digits, k=k)
    else:
        tol = tolerance_words(rel_tol)
        wanted = t(TEXT, "wanted_tol", tol=tol) if rel_tol else t(TEXT, "wanted_exact")

    def close(x):
        return _rounds_to(x, want, k) if digits else _close(x, want, rel_tol)

    def done(ok, detail, **extra):
        return verdict(ok, t(TEXT, "noted", note=note, detail=detail) if note else detail,
                       want=want, **extra)

    if not (share or percent):
        u = f" {unit}" if unit else ""
        typed = f"{got:,.6g}{u}"
        if pct_text is not None:  # "160%" of a plain number is 1.6
            got /= 100
            typed = f"{pct_text.strip()}% = {got:,.6g}{u}"
        if close(got):
            return done(True, t(TEXT, "right_number", want=f"{want:,.6g}{u}", tol=tol,
                                explanation=explanation).strip())
        return done(False, t(TEXT, "wrong_number", typed=typed, off=off_by(got, want), wanted=wanted,
                             hint=hint).strip())

    # a share or percentage: work in fractions (0.25), compare in the question's own form
    scale = 100 if percent else 1
    alt = None  # the other reading of a bare number, where both are plausible
    if pct_text is not None:
        frac, typed = got / 100, f"{got:.6g}%"
    elif percent:
        frac, alt, typed = got / 100, got, t(TEXT, "read_pct", got=f"{got:.6g}", pct=f"{got:.4g}")
    elif abs(got) > 1:  # a share is at most 1: a bare 25 can only mean 25%
        frac, typed = got / 100, t(TEXT, "read_pct", got=f"{got:.6g}", pct=f"{got:.4g}")
    else:
        frac, alt, typed = got, got / 100, t(TEXT, "read_fraction", got=f"{got:.6g}",
                                             pct=f"{got * 100:.4g}")
    if close(frac * scale):
        return done(True, t(TEXT, "right_number", want=_share_text(want / scale, percent), tol=tol,
                            explanation=explanation).strip())
    if alt is not None and close(alt * scale):
        a = f"{alt * 100:.4g}" if percent else f"{alt:.4g}"
        return done(False, t(TEXT, "did_you_mean_pct" if percent else "did_you_mean_fraction",
                             typed=typed, alt=_share_text(alt, percent), a=a, b=f"{alt * 100:.4g}"),
                    did_you_mean=True)
    return done(False, t(TEXT, "wrong_number", typed=typed, off=off_by(frac * scale, want),
                         wanted=wanted, hint=hint).strip())
