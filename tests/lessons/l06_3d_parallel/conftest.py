"""The ``english`` fixture: a test that reads the checkers' English words runs in English
whatever the session's language (``PARLAB_LANG``); test_bilingual_06.py renders both."""

import pytest

import lessons


@pytest.fixture
def english():
    before = lessons.current_lang()
    lessons.lang("en")
    yield
    lessons.lang(before)
