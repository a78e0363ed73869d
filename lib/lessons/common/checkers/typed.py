"""Typed text as a number: the notations, formulas and units an answer box understands.

The rules, and what the verdict says it read, are in ``answers``' docstring: a number in
any usual notation, arithmetic over numbers only (``+ - * / ^ **`` and parentheses,
evaluated over ``ast`` in floats, so nothing typed can hang or eat memory), and a unit
of the question's family. ``read_text`` never raises: what it cannot read comes back as
a phrase that says why.
"""

from __future__ import annotations

import ast
import math
import re

from lessons.common.i18n import t

from .text import TEXT

__all__ = ["MAX_CHARS", "UNITS", "Reading", "read_text", "parse_value", "box_value"]


def _cut(value, width: int = 40) -> str:
    """``repr`` of a typed string or a float, cut to fit in a sentence."""
    text = repr(value)
    return text if len(text) <= width else text[:width - 3] + "..."


MAX_CHARS = 200  # longer text is no answer to these questions: refused before it is parsed

# Units a typed answer may carry, by family: the factor to the family's base unit.
UNITS = {
    "B": ("bytes", 1), "byte": ("bytes", 1), "bytes": ("bytes", 1),
    "kB": ("bytes", 1e3), "KB": ("bytes", 1e3), "MB": ("bytes", 1e6), "GB": ("bytes", 1e9),
    "TB": ("bytes", 1e12), "PB": ("bytes", 1e15), "KiB": ("bytes", 2 ** 10),
    "MiB": ("bytes", 2 ** 20), "GiB": ("bytes", 2 ** 30), "TiB": ("bytes", 2 ** 40),
    "ns": ("time", 1e-9), "us": ("time", 1e-6), "µs": ("time", 1e-6), "μs": ("time", 1e-6),
    "ms": ("time", 1e-3), "s": ("time", 1), "min": ("time", 60), "h": ("time", 3600),
    "hours": ("time", 3600), "days": ("time", 86400), "day": ("time", 86400),
    "FLOP": ("flop", 1), "MFLOP": ("flop", 1e6), "GFLOP": ("flop", 1e9),
    "TFLOP": ("flop", 1e12), "PFLOP": ("flop", 1e15),
    "MB/s": ("rate", 1e6), "GB/s": ("rate", 1e9), "TB/s": ("rate", 1e12),
    "billion": ("count", 1e9), "B params": ("count", 1e9), "M": ("count", 1e6),
    "x": ("ratio", 1),
}
_FAMILY = {"bytes": "size in bytes", "time": "time", "flop": "count of operations",
           "rate": "bandwidth", "count": "count", "ratio": "ratio"}
# what an input method may type instead of ASCII: full-width forms (a Chinese keyboard),
# the minus sign, times and divide
_ASCII = {**{c: chr(c - 0xFEE0) for c in range(0xFF01, 0xFF5F)}, 0x3000: " ", 0x2212: "-",
          0xD7: "*", 0xF7: "/", 0x2013: "-"}
_UNIT_TAIL = re.compile(r"^(.*?)\s*([A-Za-zµμ][A-Za-zµμ/ ]*)$", re.S)
_GROUPED = re.compile(r"\d[\d,]*\d")
_LITERAL = re.compile(r"^(?:\d[\d_]*\.?[\d_]*|\.\d[\d_]*)(?:[eE][-+]?\d[\d_]*)?$")
_OPS = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.Pow: "^"}


class Reading(tuple):
    """What ``read_text`` understood: ``value`` (a float in the question's unit, or None),
    ``note`` ("read 2^-14 = 6.1035e-05", or "" for a plain number), ``digits`` (the
    significant digits typed; None for an exact answer) and ``why`` (a phrase after the
    answer's name when it could not be read, else None)."""
    __slots__ = ()

    def __new__(cls, value=None, note="", digits=None, why=None):
        return tuple.__new__(cls, (value, note, digits, why))

    value = property(lambda self: self[0])
    note = property(lambda self: self[1])
    digits = property(lambda self: self[2])
    why = property(lambda self: self[3])


class _Refused(Exception):
    """A typed expression that is not a number, with the phrase that says why."""


def _significant(literal: str) -> int:
    """Significant digits of a decimal literal as typed: "6.10e-5" 3, "0.00061" 2, "6100" 4."""
    mantissa = re.split(r"[eE]", literal.replace("_", "").replace(",", ""))[0]
    digits = mantissa.replace(".", "").lstrip("0")
    return max(1, len(digits))


def _evaluate(node, src: str, counted: list, alone: bool) -> float:
    """The value of a parsed expression, in floats (so no operation can run long), or
    ``_Refused``. ``counted`` collects the significant digits of the literals that carry
    a precision: every one when the answer is one literal (``alone``), else those with a
    point or an exponent (whole numbers in a formula are exact)."""
    if isinstance(node, ast.Constant):
        text = ast.get_source_segment(src, node) or ""
        if isinstance(node.value, bool) or not isinstance(node.value, (int, float)) \
                or not _LITERAL.match(text):
            raise _Refused(t(TEXT, "typed_not_decimal", text=text or _cut(node.value)))
        if alone or re.search(r"[.eE]", text):
            counted.append(_significant(text))
        x = float(node.value)  # at most MAX_CHARS digits, but 1e999 is a float too: inf
        if not math.isfinite(x):
            raise _Refused(t(TEXT, "why_too_large_short"))
        return x
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        x = _evaluate(node.operand, src, counted, alone)
        return -x if isinstance(node.op, ast.USub) else x
    if isinstance(node, ast.BinOp) and type(node.op) in _OPS:
        a = _evaluate(node.left, src, counted, False)
        b = _evaluate(node.right, src, counted, False)
        try:
            if isinstance(node.op, ast.Pow):
                x = math.pow(a, b)  # raises on overflow, where ** on ints would compute for ever
            elif isinstance(node.op, ast.Div):
                x = a / b
            elif isinstance(node.op, ast.Mult):
                x = a * b
            else:
                x = a + b if isinstance(node.op, ast.Add) else a - b
        except ZeroDivisionError:
            raise _Refused(t(TEXT, "typed_div_zero")) from None
        except OverflowError:
            raise _Refused(t(TEXT, "why_too_large_short")) from None
        except ValueError:  # math.pow(-8, 1/3), math.pow(0, -1)
            raise _Refused(t(TEXT, "typed_no_real", a=_cut(a), b=_cut(b))) from None
        if not math.isfinite(x):
            raise _Refused(t(TEXT, "why_too_large_short"))
        return x
    if isinstance(node, ast.Name):
        raise _Refused(t(TEXT, "typed_name", name=repr(node.id)))
    if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
        raise _Refused(t(TEXT, "typed_items", kind=type(node).__name__.lower(), n=len(node.elts)))
    if isinstance(node, ast.BinOp):
        raise _Refused(t(TEXT, "typed_operator"))
    raise _Refused(t(TEXT, "typed_only"))


def _fmt(x: float) -> str:
    """A value read, to 5 significant digits: 6.1035e-05, 1.3125e+10, 13.5."""
    return f"{x:.5g}"


def read_text(text: str, unit: str = "") -> Reading:
    """Typed text as a number in the question's ``unit`` (module docstring): a
    ``Reading(value, note, digits, why)``. Never raises."""
    try:
        return _read_text(text, unit)
    except Exception as e:  # a parser limit not foreseen here: still a verdict, not a crash
        return Reading(why=t(TEXT, "typed_unreadable", err=type(e).__name__))


def _read_text(text: str, unit: str) -> Reading:
    text_ = text.strip().translate(_ASCII)
    if len(text_) > MAX_CHARS:
        return Reading(why=t(TEXT, "typed_long", n=f"{len(text_):,}", most=MAX_CHARS))
    typed_unit = ""
    m = _UNIT_TAIL.match(text_)
    if m and m.group(1) and re.search(r"[\d)]$", m.group(1)):
        text_, typed_unit = m.group(1), m.group(2).strip()
    if not text_:
        return Reading(why=t(TEXT, "why_not_number", value=_cut(text.strip())))
    for run in [] if text_[0] in "[{" else _GROUPED.findall(text_):  # commas: thousands, or a list
        if "," in run and not re.fullmatch(r"\d{1,3}(,\d{3})+", run):
            return Reading(why=t(TEXT, "typed_comma", run=repr(run)))
    expr = re.sub(r"(?<=\d),(?=\d{3})", "", text_).replace("^", "**")
    try:
        tree = ast.parse(expr, mode="eval").body
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return Reading(why=t(TEXT, "why_not_number", value=_cut(text.strip())))
    if isinstance(tree, ast.Name):  # a word, not a formula
        return Reading(why=t(TEXT, "why_not_number", value=_cut(text.strip())))
    counted: list = []
    try:
        value = _evaluate(tree, expr, counted, alone=True)
    except _Refused as e:
        return Reading(why=str(e))
    except RecursionError:
        return Reading(why=t(TEXT, "typed_nested"))
    plain = isinstance(tree, ast.Constant) or (
        isinstance(tree, ast.UnaryOp) and isinstance(tree.operand, ast.Constant))
    shown_text = text_.strip() if len(text_.strip()) <= 40 else text_.strip()[:37] + "..."
    note = "" if plain else t(TEXT, "typed_read", text=shown_text, value=_fmt(value))
    factor, why = _unit_factor(typed_unit, unit)
    if why:
        return Reading(why=t(TEXT, "typed_unit_why", text=text_.strip(), typed=typed_unit, why=why))
    if factor != 1:
        value *= factor
        note = t(TEXT, "typed_read_unit", text=shown_text, typed=typed_unit, value=_fmt(value), unit=unit)
    return Reading(value, note, min(counted) if counted else None)


def _unit_factor(typed: str, unit: str) -> tuple[float, str | None]:
    """The factor from a typed unit to the question's, or why it cannot be converted."""
    if not typed or typed == unit:
        return 1, None
    if typed.rstrip("s") == unit.rstrip("s") and typed not in UNITS:  # "assignment(s)"
        return 1, None
    if not unit:
        return 1, t(TEXT, "unit_none")
    if typed not in UNITS:
        return 1, t(TEXT, "unit_unknown", typed=repr(typed), unit=unit)
    if unit not in UNITS or UNITS[typed][0] != UNITS[unit][0]:
        what = (t(TEXT, "unit_a", family=t(TEXT, "family_" + UNITS[unit][0])) if unit in UNITS
                else t(TEXT, "unit_in", unit=unit))
        return 1, t(TEXT, "unit_family", typed=typed, family=t(TEXT, "family_" + UNITS[typed][0]),
                    what=what, unit=unit)
    return UNITS[typed][1] / UNITS[unit][1], None


def parse_value(text: str):
    """What a learner typed: a number ("1.5e9", "3,072", "2^-14", "70e9*12/64", "3/11";
    ``read_text``), a Python literal ("[(0, 1)]"), or None when empty; other text (a unit,
    a percent sign, a letter) comes back as it is, for the checker to read."""
    text = text.strip()
    if not text:
        return None
    r = read_text(text)
    if r.why is None:
        return r.value
    if len(text) > 10 * MAX_CHARS:  # no list answer is that long; literal_eval would try
        return text
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return text


def box_value(text: str):
    """What an answer box hands its checker: None when empty, a Python literal for a list
    or dict ("[(0, 1)]"), else the text itself, so that the checker reads it with its unit
    and says what it understood ("read 2^-14 = 6.1035e-05")."""
    value = parse_value(text)
    return text.strip() if isinstance(value, (float, int)) and not isinstance(value, bool) \
        else value
