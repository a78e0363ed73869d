"""Notebook 08's checkers: the reference passes, planted mistakes fail with the expected
message, the untouched placeholder gets "not yet written", any typed answer a verdict."""

from __future__ import annotations

import pytest

from parlab import cost
from lessons.l08_checkpoints_and_failures import exercises as ex

pytestmark = pytest.mark.timeout(180)


def my_resume(train_state):
    raise NotImplementedError  # your code


def one_step_late(train_state):
    import torch
    torch.set_rng_state(train_state["rng"])
    return int(train_state["step"]) + 1


def forgets_the_rng(train_state):
    return int(train_state["step"])


def returns_nothing(train_state):
    import torch
    torch.set_rng_state(train_state["rng"])


def test_reference_solution_is_correct():
    v = ex.check_resume(ex.solution_resume)
    assert v["ok"], v["message"]
    assert "steps 2-4 equal the uninterrupted run" in v["message"]


@pytest.mark.parametrize("fn, says", [
    (one_step_late, "resumed at step 3, 1 step(s) late"),
    (forgets_the_rng, "step 2 is the first whose loss differs"),
    (returns_nothing, "returned None: it must return the next step"),
])
def test_planted_mistakes_are_named(fn, says):
    v = ex.check_resume(fn)
    assert not v["ok"] and says in v["message"], v["message"]
    if fn is forgets_the_rng:
        assert "RNG" in v["message"]


def test_placeholder_is_not_yet_written():
    v = ex.check_resume(my_resume)
    assert not v["ok"] and v.get("missing") and "NotImplementedError" in v["message"], v["message"]


@pytest.mark.parametrize("kw, named", [(dict(ranks=3), "ranks=3"), (dict(at=5), "at=5"),
                                       (dict(steps=1), "steps=1"), (dict(timeout=0), "timeout=0")])
def test_bad_parameters_are_refused_first(kw, named):
    with pytest.raises(ValueError, match=named):
        ex.check_resume(ex.solution_resume, **kw)


def test_numeric_checkers():
    assert ex.check_young_interval(cost.young_interval(60, 3 * 3600))["ok"]
    assert not ex.check_young_interval(cost.young_interval(60, 3 * 3600) * 2)["ok"]
    assert ex.check_young_interval("1138")["ok"] and not ex.check_young_interval(60 * 3 * 3600)["ok"]
    assert ex.check_interruptions_per_day(24 * 16384 / (5 * 8760))["ok"]
    assert not ex.check_interruptions_per_day(16384 / (5 * 8760))["ok"]  # per hour
    assert ex.check_checkpoint_bytes_per_rank(12 * 70e9 / 64)["ok"]
    assert not ex.check_checkpoint_bytes_per_rank(16 * 70e9 / 64)["ok"]
    assert not ex.check_checkpoint_bytes_per_rank(12 * 70e9)["ok"]
    for odd in (None, "abc", float("nan"), [1, "a"], 10 ** 400, True):
        for check in (ex.check_young_interval, ex.check_interruptions_per_day,
                      ex.check_checkpoint_bytes_per_rank):
            assert check(odd)["ok"] is False
