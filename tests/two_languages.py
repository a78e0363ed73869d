"""What the lessons' two-language tests share: does a Chinese rendering say the same numbers
as the English one, in Chinese? (The ``both`` and ``english`` fixtures are in
tests/lessons/conftest.py.)"""

from __future__ import annotations

import re

from lessons.common import i18n

CJK = re.compile(r"[\u3400-\u9fff]")


def same_numbers(en, zh=None) -> None:
    """``en`` has no Chinese, ``zh`` has some, and both write the same numbers. ``en`` may be
    ``{"en": ..., "zh": ...}`` (what the ``both`` fixture returns)."""
    if zh is None:
        en, zh = en["en"], en["zh"]
    assert not CJK.search(en), en
    assert CJK.search(zh), zh
    assert i18n.numbers(en) == i18n.numbers(zh), (en, zh)
