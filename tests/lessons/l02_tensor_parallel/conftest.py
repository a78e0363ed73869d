"""Notebook 02's tests read the checkers' English messages: each runs in English whatever
``PARLAB_LANG`` the suite was started with (test_text.py switches languages itself), and
the session's language is restored after it."""

import pytest

import lessons


@pytest.fixture(autouse=True)
def english():
    before = lessons.current_lang()
    lessons.lang("en")
    yield
    lessons.lang(before)
