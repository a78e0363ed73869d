"""The question type, the template registry, and how answers are read and checked.

A template is a function ``make(rng) -> Ask``: it draws realistic parameters from
``rng`` (a ``random.Random``), computes the answer by calling ``parlab.cost`` and says
how (``working``). ``generate`` turns it into a frozen ``Question`` whose explanation
adds the tolerance and the notebook section that measures the same quantity.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Callable

from ..checkers.answers import check_number, percent_words, read_text
from ..i18n import t
from .text import TEXT

# parlab.cost.ZERO_STAGE_NAMES as a Chinese question says them
ZERO_STAGE_ZH = {0: "普通数据并行", 1: "ZeRO-1", 2: "ZeRO-2", 3: "ZeRO-3"}

TOPICS = ("collectives", "dp_zero", "tp_sp", "pp", "moe_ep", "memory_flops", "cp", "3d",
          "precision", "reliability")

# Units an answer may be typed in are the answer boxes' (``answers.UNITS``): a question is
# read by the same ``check_number``.


@dataclass(frozen=True)
class Ask:
    """What a template returns: the question (``prompt``; ``prompt_zh`` the same question in
    Chinese, written from the same formatted numbers), the answer (in ``unit``) and the
    working."""
    prompt: str
    answer: float
    unit: str
    working: str
    rel_tol: float = 0.02  # 0: an exact count
    digits: int = 0  # > 0: read off a table or by hand, right to the digits typed (rel_tol unused)
    prompt_zh: str = ""


@dataclass(frozen=True)
class Question:
    template: str
    topic: str
    seed: int
    prompt: str
    answer: float
    unit: str
    rel_tol: float
    explanation: str
    section: str
    digits: int = 0  # see Ask
    lang: str = "en"  # the language of prompt, explanation and tolerance_text

    def check(self, value) -> bool:
        """True when ``value`` (a number, or text such as "1.5e9", "3,072", "1.5 GB",
        "12.5%", "2^-9") is within ``rel_tol`` of the answer (exact counts: equal; with
        ``digits``, the answer rounded to the digits typed): ``verdict``'s ``ok``."""
        return self.verdict(value)["ok"]

    def verdict(self, value) -> dict:
        """``{"ok", "message", "detail", ...}`` on ``value``, from the same
        ``answers.check_number`` as the notebooks' answer boxes: the factor hint when wrong
        ("off by a factor 2: too high"), and for a percentage (unit "%") the one rule for
        shares: "12.5", "12.5%" and "12.5 %" are right for 12.5 %, a bare "0.125" gets
        "did you mean 12.5%?" (``did_you_mean``). Text in another unit of the same family
        is converted ("1500 MB" for GB) and a formula computed ("2^-9"), and the message
        says what was read; text that cannot be read has ``unreadable`` (NaN, lists and
        True too), empty text ``missing``."""
        v = check_number(value, self.answer, rel_tol=self.rel_tol, digits=self.digits,
                         unit=self.unit, name="your answer")
        v.setdefault("detail", v["message"])  # "not answered yet" has none
        return v

    @property
    def answer_text(self) -> str:
        return f"{fmt(self.answer)}{_sep(self.unit)}{self.unit}"

    @property
    def tolerance_text(self) -> str:
        if self.digits:
            return t(TEXT, "digits", self.lang, digits=self.digits)
        return t(TEXT, "exact", self.lang) if self.rel_tol == 0 else \
            t(TEXT, "within", self.lang, pct=percent_words(self.rel_tol))


def _sep(unit: str) -> str:
    return "" if unit in ("", "%", "x") else " "


def fmt(x: float) -> str:
    """A number as a person would write it: ints with thousands separators, others to
    4 significant digits (scientific when very large or small)."""
    if isinstance(x, int) or (float(x).is_integer() and abs(x) < 1e15):
        return f"{int(x):,}"
    if x != 0 and (abs(x) >= 1e6 or abs(x) < 1e-3):
        return f"{x:.4g}"
    return f"{x:,.4g}" if abs(x) >= 1000 else f"{x:.4g}"


def parse_answer(text, unit: str = ""):
    """A typed answer in the question's ``unit``: "1.5e9", "3,072", "1.5 GB" (converted
    when the unit typed is another of the same family, e.g. "1500 MB" for GB), "12.5%",
    "2^-9" (``answers.read_text``). None when empty or unreadable (or typed in a unit of
    another family)."""
    if text is None:
        return None
    if not isinstance(text, str):
        return text
    t = text.strip()
    if unit == "%" and t.endswith("%"):
        t = t[:-1]
    r = read_text(t, "" if unit == "%" else unit)
    return r.value if r.why is None else None


# --- the registry ---------------------------------------------------------------------

@dataclass(frozen=True)
class Template:
    name: str
    topic: str
    section: tuple  # (notebook "03", section number 4, its title)
    make: Callable[[random.Random], Ask]

    def citation(self, lang: str = "en") -> str:
        nb, n, title = self.section
        return t(TEXT, "citation", lang, nb=nb, n=n, title=title)


_REGISTRY: dict[str, Template] = {}


def template(name: str, topic: str, section: tuple):
    """Register ``make(rng) -> Ask`` as the template ``name`` of ``topic``."""
    if topic not in TOPICS:
        raise ValueError(f"topic={topic!r} must be one of {', '.join(TOPICS)}")

    def register(make):
        if name in _REGISTRY:
            raise ValueError(f"template={name!r} is registered twice")
        _REGISTRY[name] = Template(name, topic, section, make)
        return make
    return register
