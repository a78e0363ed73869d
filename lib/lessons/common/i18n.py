"""The lessons' language: English (``en``) or Chinese (``zh``), one switch for the session.

    import lessons
    lessons.lang("zh")          # drills, the glossary, 09's answers now speak Chinese
    lessons.current_lang()      # "zh"

The switch starts from the environment variable ``PARLAB_LANG``, which
``python3 run.py lab --lang zh`` sets for JupyterLab (every kernel it starts inherits it)
and ``python -m lessons drill --lang zh`` sets for its one process; unset, it is English.

Text that exists in both languages lives in catalogues: ``{key: {"en": ..., "zh": ...}}``
with ``str.format`` fields, so a number is formatted once, by the code that passes it, and
reads the same in both (``t(CATALOGUE, key, **fields)``). ``catalogue_problems`` is what
the tests check every catalogue with.
"""

from __future__ import annotations

import os
import re
import string
from collections.abc import Mapping

LANGS = ("en", "zh")
NAMES = {"en": "English", "zh": "中文"}
ENV = "PARLAB_LANG"


def check_lang(code) -> str:
    """``code`` if it is one of ``LANGS``, else a ValueError naming ``lang`` and the choices."""
    if code not in LANGS:
        raise ValueError(f"lang={code!r} must be one of {', '.join(LANGS)}")
    return code


def _from_env() -> str:
    code = os.environ.get(ENV, "").strip()
    if not code:
        return "en"
    try:
        return check_lang(code)
    except ValueError as e:  # said where it was set: a typo in the variable, not in a call
        raise ValueError(f"{ENV}: {e}") from None


_current = _from_env()


def lang(code: str) -> str:
    """Switch every lesson to ``code`` ("en" or "zh") for this session; returns it."""
    global _current
    _current = check_lang(code)
    return _current


def current_lang() -> str:
    """The language the lessons speak now: the last ``lang(...)``, else ``PARLAB_LANG``."""
    return _current


def pick(lang_: str | None) -> str:
    """An explicit ``lang`` argument, checked; None: the session's language."""
    return _current if lang_ is None else check_lang(lang_)


def t(catalogue: dict, key: str, lang: str | None = None, **fields) -> str:
    """``catalogue[key]`` in ``lang`` (default: the session's), formatted with ``fields``."""
    return catalogue[key][pick(lang)].format(**fields)


class Questions(Mapping):
    """A notebook's numeric exercise questions, each rendered when it is read, in the
    session's language: ``QUESTIONS[name]`` is ``t(catalogue, "q_" + name, **fields())``,
    where ``fields`` (None: no fields) gives the numbers the checker uses, so each number
    is stated once, in the exercises module."""

    def __init__(self, catalogue: dict, fields: dict):
        self._catalogue, self._fields = catalogue, dict(fields)

    def __getitem__(self, name: str) -> str:
        make = self._fields[name]  # an unknown name is a KeyError, as for a dict
        return t(self._catalogue, f"q_{name}", **(make() if make else {}))

    def __iter__(self):
        return iter(self._fields)

    def __len__(self) -> int:
        return len(self._fields)


def fields(text: str) -> set[str]:
    """The ``str.format`` field names in ``text``."""
    return {f for _, f, _, _ in string.Formatter().parse(text) if f}


_NUMBER = re.compile(r"\d+(?:[.,]\d+)*")


def numbers(text: str) -> list[str]:
    """The numbers written in ``text``, sorted: "2,048 tokens over 8 GPUs" -> ["2,048", "8"].
    Two renderings of one thing must write the same ones."""
    return sorted(_NUMBER.findall(text))


def catalogue_problems(catalogue: dict, sample: dict | None = None) -> list[str]:
    """What is wrong with a catalogue, one line each (empty: nothing): a key missing a
    language or empty in one, fields that differ between the languages, and, formatted
    with ``sample`` (default: a distinct number per field), numbers that differ."""
    problems = []
    for key, texts in catalogue.items():
        missing = [c for c in LANGS if not (isinstance(texts, dict) and texts.get(c))]
        if missing:
            problems.append(f"{key}: no text in {', '.join(missing)}")
            continue
        names = {c: fields(texts[c]) for c in LANGS}
        if len({frozenset(v) for v in names.values()}) > 1:
            problems.append(f"{key}: fields differ: " + "; ".join(
                f"{c} {sorted(v)}" for c, v in names.items()))
            continue
        values = sample or {}
        values = {f: values.get(f, 1000 + 7 * i) for i, f in enumerate(sorted(names["en"]))}
        shown = {c: numbers(texts[c].format(**values)) for c in LANGS}
        if shown["en"] != shown["zh"]:
            problems.append(f"{key}: numbers differ: en {shown['en']}, zh {shown['zh']}")
    return problems
