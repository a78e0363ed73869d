"""Notebook 02's tests read the checkers' English messages: each runs in English whatever
``PARLAB_LANG`` the suite was started with (test_text.py switches languages itself)."""

import pytest


@pytest.fixture(autouse=True)
def _in_english(english):  # tests/lessons/conftest.py
    yield
