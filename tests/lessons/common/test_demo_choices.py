"""Every lesson's public demos (experiments, widgets, figures, explorers) refuse a misspelt
choice before any work: each parameter whose default is a name ("zigzag", "GPT-3 175B",
"1f1b", "IB-HDR"...) is given a name that is not one, and the call must raise a
ValueError naming that parameter and listing the allowed names -- or, for the widgets'
own helpers that report problems in their output (``predict``, ``live``, ``plan_view``),
return ``{"error": ...}`` naming it. No rank starts: ``launch`` is a sentinel wherever a
module imported it. Before this sweep, 25 of the 33 such parameters outside notebook 08
failed this: 19 raised a KeyError, StopIteration or ipywidgets TraitError naming neither
the parameter nor the names, 2 named another field, 2 started ranks first, 2 went on with
the misspelt name."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import sys

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import lessons

KINDS = ("experiments", "widgets", "figures", "explorer", "cells", "walkthrough")


class RanksWouldStart(Exception):
    pass


@pytest.fixture
def no_ranks(monkeypatch):
    """``launch`` raises, in parlab.launch and in every module that imported it by name."""
    package = sys.modules["parlab.launch"]  # (parlab.launch, the attribute, is the function)
    real = package.launch

    def refuse(*a, **k):
        raise RanksWouldStart
    for mod in list(sys.modules.values()):
        if getattr(mod, "launch", None) is real:
            monkeypatch.setattr(mod, "launch", refuse)


def _named_parameters():
    """(function, parameter) for each public demo parameter whose default is a name."""
    found = []
    for info in pkgutil.walk_packages(lessons.__path__, "lessons."):
        last = info.name.rsplit(".", 1)[1]
        if not info.name.startswith("lessons.l0") or not last.startswith(KINDS):
            continue
        mod = importlib.import_module(info.name)
        for name, f in sorted(vars(mod).items()):
            if name.startswith("_") or not inspect.isfunction(f) or f.__module__ != mod.__name__:
                continue
            params = inspect.signature(f).parameters.values()
            if any(p.default is p.empty and p.kind is p.POSITIONAL_OR_KEYWORD for p in params):
                continue  # takes a result or a config: not a demo called by name
            found += [pytest.param(f, p.name, id=f"{info.name.split('.')[1][:3]}.{name}-{p.name}")
                      for p in params if isinstance(p.default, str)]
    return found


NAMED = _named_parameters()


def _refuses(fn, param: str, value: str) -> str | None:
    """None if ``fn(param=value)`` refuses ``value`` by name; else what happened."""
    try:
        got = fn(**{param: value})
    except ValueError as e:
        return None if param in str(e) else f"ValueError not naming {param}: {e}"
    except RanksWouldStart:
        return "ranks would start"
    except Exception as e:
        return f"{type(e).__name__}: {e}"
    if isinstance(got, dict) and param in str(got.get("error", "")):
        return None
    return "accepted"


def test_the_sweep_finds_the_demos():
    assert len(NAMED) >= 30  # a walk that finds nothing would pass everything


@pytest.mark.timeout(120)
@pytest.mark.parametrize("fn, param", NAMED)
def test_a_misspelt_choice_is_named_before_any_work(no_ranks, fn, param):
    assert _refuses(fn, param, "zz_not_a_choice") is None, _refuses(fn, param, "zz_not_a_choice")


@pytest.mark.timeout(120)
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(case=st.sampled_from([p.values for p in NAMED]),
       typo=st.text(st.characters(codec="ascii"), min_size=1, max_size=10))
def test_any_misspelt_choice_is_named(no_ranks, case, typo):
    fn, param = case
    default = inspect.signature(fn).parameters[param].default
    value = default + "~" + typo  # a near miss of a real name: never itself a name
    assert _refuses(fn, param, value) is None, (fn.__name__, param, value)
