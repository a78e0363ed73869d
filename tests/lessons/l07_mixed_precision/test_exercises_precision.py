"""Notebook 07's checkers: the reference passes, planted mistakes fail with the expected
message, the untouched placeholder gets "not yet written", any typed answer a verdict."""

from __future__ import annotations

import pytest

from lessons.l07_mixed_precision import exercises as ex

pytestmark = pytest.mark.timeout(180)


def my_scaled_step(params, optimizer, scale, good_steps, growth_interval):
    raise NotImplementedError  # your code


def no_unscale(params, optimizer, scale, good_steps, growth_interval):
    import torch
    if not all(bool(torch.isfinite(p.grad).all()) for p in params if p.grad is not None):
        return scale * 0.5, 0
    optimizer.step()
    good_steps += 1
    return (scale * 2.0, 0) if good_steps == growth_interval else (scale, good_steps)


def no_skip(params, optimizer, scale, good_steps, growth_interval):
    import torch
    finite = all(bool(torch.isfinite(p.grad).all()) for p in params if p.grad is not None)
    for p in params:
        if p.grad is not None:
            p.grad.mul_(1.0 / scale)
    optimizer.step()
    if not finite:
        return scale * 0.5, 0
    good_steps += 1
    return (scale * 2.0, 0) if good_steps == growth_interval else (scale, good_steps)


def never_grows(params, optimizer, scale, good_steps, growth_interval):
    import torch
    if not all(bool(torch.isfinite(p.grad).all()) for p in params if p.grad is not None):
        return scale * 0.5, 0
    for p in params:
        if p.grad is not None:
            p.grad.mul_(1.0 / scale)
    optimizer.step()
    return scale, good_steps + 1


def test_reference_solution_is_correct():
    v = ex.check_scaled_step(ex.solution_scaled_step)
    assert v["ok"], v["message"]
    assert "step 3 skipped" in v["message"]


@pytest.mark.parametrize("fn, says", [
    (no_unscale, "divided by the scale"),
    (no_skip, "skipped steps [], expected [3]"),
    (never_grows, "step 2 used scale 1024, GradScaler used 2048"),
])
def test_planted_mistakes_are_named(fn, says):
    v = ex.check_scaled_step(fn)
    assert not v["ok"] and says in v["message"], v["message"]


def test_placeholder_is_not_yet_written():
    v = ex.check_scaled_step(my_scaled_step)
    assert not v["ok"] and "NotImplementedError" in v["message"], v["message"]


def test_numeric_checkers():
    assert ex.check_bytes_per_param(16)["ok"] and not ex.check_bytes_per_param(14)["ok"]
    assert ex.check_bytes_per_param(16, "fp32")["ok"]
    assert ex.check_fp16_smallest_normal(2 ** -14)["ok"] and not ex.check_fp16_smallest_normal(2 ** -24)["ok"]
    assert ex.check_bf16_allreduce_bound(1023 / 256)["ok"]
    for odd in (None, "abc", float("nan"), [1, "a"], 10 ** 400, True):
        for check in (ex.check_bytes_per_param, ex.check_fp16_smallest_normal, ex.check_vanishing_update,
                      ex.check_bf16_allreduce_bound):
            assert check(odd)["ok"] is False


def test_vanishing_update_asks_for_the_side_below_a_power_of_two():
    # Exercise 3: a bf16 weight of 1.0, decreased. Below 1.0 bf16's spacing is 2^-8, so a
    # decrease is lost up to 2^-9 (ties to even: 1.0); 2^-8 is the increase's threshold,
    # the answer the exercise used to accept. torch rounds exactly so.
    import torch
    down = ex.check_vanishing_update(2 ** -9)
    assert down["ok"] and down["want"] == 2 ** -9, down["message"]
    assert ex.check_vanishing_update("1/512")["ok"] and ex.check_vanishing_update(0.00195)["ok"]
    one = torch.tensor(1.0, dtype=torch.float64)
    assert (one - 2 ** -9).to(torch.bfloat16).item() == 1.0
    assert (one - 0.002).to(torch.bfloat16).item() == 0.99609375  # past 2^-9: it moves
    for planted in (2 ** -8, 0.0039):  # the old answer, one-sided ulp(1.0)/2
        v = ex.check_vanishing_update(planted)
        assert not v["ok"] and "where an increase stops vanishing" in v["message"], v["message"]
        assert "0.00195" not in v["message"]  # the verdict does not give the answer away
    for wrong in (2 ** -7, 2 ** -10):
        assert not ex.check_vanishing_update(wrong)["ok"]
    # asked for an increase, the other side: 2^-8, and 2^-9 is the slip
    assert ex.check_vanishing_update(2 ** -8, direction="up")["ok"]
    v = ex.check_vanishing_update(2 ** -9, direction="up")
    assert not v["ok"] and "where a decrease stops vanishing" in v["message"], v["message"]
    # off a power of two both sides are one ulp: no "other side" verdict
    assert ex.check_vanishing_update(2 ** -8, weight=1.5)["ok"]


def test_checker_parameters_are_refused_before_anything_runs():
    with pytest.raises(ValueError, match="overflow_at"):
        ex.check_scaled_step(ex.solution_scaled_step, steps=4, overflow_at=9)
    with pytest.raises(ValueError, match="world_size"):
        ex.check_bf16_allreduce_bound(1, world_size=1)
    with pytest.raises(ValueError, match="recipe"):
        ex.check_bytes_per_param(16, recipe="int4")
