"""The question type, the template registry, and how answers are read and checked.

A template is a function ``make(rng) -> Ask``: it draws realistic parameters from
``rng`` (a ``random.Random``), computes the answer by calling ``parlab.cost`` and says
how (``working``). ``generate`` turns it into a frozen ``Question`` whose explanation
adds the tolerance and the notebook section that measures the same quantity.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass
from typing import Callable

from ..checkers.answers import check_number, parse_value, verdict
from ..i18n import t
from .text import TEXT

# parlab.cost.ZERO_STAGE_NAMES as a Chinese question says them
ZERO_STAGE_ZH = {0: "普通数据并行", 1: "ZeRO-1", 2: "ZeRO-2", 3: "ZeRO-3"}

TOPICS = ("collectives", "dp_zero", "tp_sp", "pp", "moe_ep", "memory_flops", "cp", "3d",
          "precision", "reliability")

# Units an answer may be typed in, by family: factor to the family's base unit.
_UNITS = {
    "B": ("bytes", 1), "KB": ("bytes", 1e3), "MB": ("bytes", 1e6), "GB": ("bytes", 1e9),
    "TB": ("bytes", 1e12), "KiB": ("bytes", 2 ** 10), "MiB": ("bytes", 2 ** 20),
    "GiB": ("bytes", 2 ** 30), "TiB": ("bytes", 2 ** 40),
    "us": ("time", 1e-6), "µs": ("time", 1e-6), "ms": ("time", 1e-3), "s": ("time", 1),
    "min": ("time", 60), "h": ("time", 3600), "hours": ("time", 3600),
    "days": ("time", 86400), "day": ("time", 86400),
    "FLOP": ("flop", 1), "MFLOP": ("flop", 1e6), "GFLOP": ("flop", 1e9),
    "TFLOP": ("flop", 1e12), "PFLOP": ("flop", 1e15),
    "GB/s": ("rate", 1e9), "MB/s": ("rate", 1e6), "TB/s": ("rate", 1e12),
    "billion": ("count", 1e9), "B params": ("count", 1e9), "M": ("count", 1e6),
    "%": ("percent", 1), "x": ("ratio", 1), "": ("plain", 1),
}
_NUMBER = re.compile(r"^\s*([-+]?(?:\d[\d,_]*\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)\s*(.*?)\s*$")


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
    lang: str = "en"  # the language of prompt, explanation and tolerance_text

    def check(self, value) -> bool:
        """True when ``value`` (a number, or text such as "1.5e9", "3,072", "1.5 GB",
        "12.5%") is within ``rel_tol`` of the answer (exact counts: equal): ``verdict``'s
        ``ok``."""
        return self.verdict(value)["ok"]

    def verdict(self, value) -> dict:
        """``{"ok", "message", "detail", ...}`` on ``value``, from the same
        ``answers.check_number`` as the notebooks' answer boxes: the factor hint when wrong
        ("off by a factor 2: too high"), and for a percentage (unit "%") the one rule for
        shares: "12.5", "12.5%" and "12.5 %" are right for 12.5 %, a bare "0.125" gets
        "did you mean 12.5%?" (``did_you_mean``). Text in another unit of the same family
        is converted first ("1500 MB" for GB); text that cannot be read has ``unreadable``
        (NaN, lists and True too), empty text ``missing``."""
        if isinstance(value, str) and self.unit != "%" and value.strip():
            converted = parse_answer(value, self.unit)
            if converted is None:  # "3/11", as the answer boxes read it
                plain = parse_value(value)
                converted = plain if isinstance(plain, (int, float)) else None
            if converted is None:
                why = (f"could not read {value.strip()!r} as a number in "
                       f"{self.unit or 'plain numbers'}")
                return verdict(False, why, unreadable=True)
            value = converted
        # a percentage goes in as typed: check_number reads "12.5%" and "0.125" itself
        v = check_number(value, self.answer, rel_tol=self.rel_tol, unit=self.unit,
                         name="your answer")
        if v.get("unreadable") and isinstance(value, str):  # say it as for the other units
            return verdict(False, f"could not read {value.strip()!r} as a number in %",
                           unreadable=True)
        v.setdefault("detail", v["message"])  # "not answered yet" has none
        return v

    @property
    def answer_text(self) -> str:
        return f"{fmt(self.answer)}{_sep(self.unit)}{self.unit}"

    @property
    def tolerance_text(self) -> str:
        return t(TEXT, "exact", self.lang) if self.rel_tol == 0 else \
            t(TEXT, "within", self.lang, pct=f"{self.rel_tol:.0%}")


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
    when the unit typed is another of the same family, e.g. "1500 MB" for GB), "12.5%".
    None when empty or unreadable (or typed in a unit of another family)."""
    if text is None:
        return None
    if not isinstance(text, str):
        return text
    m = _NUMBER.match(text)
    if not m:
        return None
    value = float(m.group(1).replace(",", "").replace("_", ""))
    typed = m.group(2)
    if not typed or typed == unit:
        return value
    if typed not in _UNITS or unit not in _UNITS:
        return None
    (fam_t, f_t), (fam_u, f_u) = _UNITS[typed], _UNITS[unit]
    if fam_t != fam_u:
        return None
    return value * f_t / f_u


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
