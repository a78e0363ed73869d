"""Fixtures for the lessons' tests in two languages: ``english`` runs a test that reads the
checkers' English words in English whatever ``PARLAB_LANG`` the suite started with; ``both``
renders a call in English, then in Chinese. Each puts the session's language back."""

from __future__ import annotations

import pytest

import lessons
from lessons.common import i18n


@pytest.fixture
def english():
    before = lessons.current_lang()
    lessons.lang("en")
    yield
    lessons.lang(before)


@pytest.fixture
def both():
    """``render(make) -> {"en": make() in English, "zh": make() in Chinese}``."""
    before = lessons.current_lang()

    def render(make):
        out = {}
        for code in i18n.LANGS:
            lessons.lang(code)
            out[code] = make()
        return out

    yield render
    lessons.lang(before)
