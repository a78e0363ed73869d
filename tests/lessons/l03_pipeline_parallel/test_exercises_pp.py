"""Notebook 03's exercises: every checker passes the reference, fails a planted wrong
answer with a message naming where, and says "not answered" for the placeholder."""

from __future__ import annotations

import pytest
import torch

from parlab import cost
from lessons.l03_pipeline_parallel import exercises as ex


def placeholder(*args):
    raise NotImplementedError  # your code


# --- my_1f1b ---------------------------------------------------------------------------------

def test_1f1b_reference_runs_on_real_ranks_and_matches_the_single_device():
    v = ex.check_1f1b(ex.solution_1f1b, p=2, m=4)
    assert v["ok"], v["message"]
    assert v["peaks"] == [2, 1] and "gradients equal" in v["message"]


def test_1f1b_reference_passes_the_plan_at_the_notebook_size():
    plan = ex.plan_1f1b(ex.solution_1f1b, 4, 8)
    assert plan["ok"] and plan["peaks"] == [4, 3, 2, 1]
    assert plan["bubble"] == pytest.approx(cost.bubble_fraction(4, 8))


def test_1f1b_gpipe_is_named_by_its_peak():
    gpipe = lambda s, p, m: [("F", i) for i in range(m)] + [("B", i) for i in range(m)]  # noqa: E731
    v = ex.check_1f1b(gpipe)
    assert not v["ok"] and "stage 0 holds 8 activations at peak, 1F1B holds 4" in v["message"]


def test_1f1b_backward_before_forward_is_named():
    def wrong(stage, p, m):
        acts = ex.solution_1f1b(stage, p, m)
        if stage == 1:  # swap F3 and the B3 after it
            i, j = acts.index(("F", 3)), acts.index(("B", 3))
            acts[i], acts[j] = acts[j], acts[i]
        return acts
    v = ex.check_1f1b(wrong)
    assert not v["ok"] and "stage 1: B(3) comes before F(3)" in v["message"]


def test_1f1b_deadlock_missing_and_bad_items_are_named():
    # the last stage waits for a backward from nobody... every stage runs B0 first: F0 never ran
    def deadlock(stage, p, m):
        acts = ex.solution_1f1b(stage, p, m)
        if stage == 0:  # wants B0 before F1 .. F3 reach the last stage: stage 0 never sends F1
            return [("F", 0), ("B", 0)] + [a for a in acts if a not in (("F", 0), ("B", 0))]
        return acts
    v = ex.check_1f1b(deadlock)
    assert not v["ok"] and "deadlocks" in v["message"]
    v = ex.check_1f1b(lambda s, p, m: ex.solution_1f1b(s, p, m)[:-1])
    assert not v["ok"] and "is missing" in v["message"] and "stage 0" in v["message"]
    v = ex.check_1f1b(lambda s, p, m: ["X1"])
    assert not v["ok"] and "('F', mb)" in v["message"]
    v = ex.check_1f1b(lambda s, p, m: 1 / 0)
    assert not v["ok"] and "ZeroDivisionError" in v["message"]


def test_1f1b_slow_but_valid_schedule_is_told_its_bubble():
    # one forward at a time down the whole pipe: valid, small peak, but a big bubble
    def serial(stage, p, m):
        return [a for i in range(m) for a in (("F", i), ("B", i))]
    v = ex.check_1f1b(serial)
    assert not v["ok"] and "bubble" in v["message"] and "27.3%" in v["message"]


def test_1f1b_placeholder_says_not_answered():
    v = ex.check_1f1b(placeholder)
    assert not v["ok"] and v.get("missing") and "Not answered yet" in v["message"]


def test_1f1b_wrong_results_on_ranks_are_caught():
    # strings "F3" are accepted as actions: the reference in that spelling passes the plan
    as_text = lambda s, p, m: [f"{op}{mb}" for op, mb in ex.solution_1f1b(s, p, m)]  # noqa: E731
    assert ex.plan_1f1b(as_text, 4, 8)["ok"]


# --- my_partition ----------------------------------------------------------------------------

def test_partition_reference_wrong_and_placeholder():
    assert ex.check_partition(ex.solution_partition)["ok"]
    last_heavy = lambda n, s: [n // s] * (s - 1) + [n - (n // s) * (s - 1)]  # noqa: E731
    v = ex.check_partition(last_heavy)
    assert not v["ok"] and "my_partition(10, 4)" in v["message"] and "stage 0 gets 2" in v["message"]
    v = ex.check_partition(lambda n, s: [n // s] * s)
    assert not v["ok"] and "covers 8 layers, not 10" in v["message"]
    assert ex.check_partition(placeholder).get("missing")


# --- numeric ---------------------------------------------------------------------------------

@pytest.mark.parametrize("check, right, wrong", [
    (ex.check_bubble, 7 / 31, 7 / 24),
    (ex.check_interleaved, 7 / 79, 7 / 31),
    (ex.check_min_m, cost.min_micro_batches(8, 0.10), cost.min_micro_batches(8, 0.10) - 1),
    (ex.check_peak, 6, 8),
])
def test_numeric_checkers(check, right, wrong):
    assert check(right)["ok"]
    bad = check(wrong)
    assert not bad["ok"] and "Not yet" in bad["message"]
    assert check(None).get("missing") and check("").get("missing")
    assert not check("abc")["ok"]


def test_min_m_says_too_many():
    m = cost.min_micro_batches(8, 0.10)
    assert m == 63  # (P-1)/(M+P-1) = 7/70 exactly
    assert "not the fewest" in ex.check_min_m(m + 5)["message"]


def test_show_solution_prints_the_reference(capsys):
    ex.show_solution("my_1f1b")
    assert "def my_1f1b(" in capsys.readouterr().out


# --- my_pipeline_forward ---------------------------------------------------------------------

def test_pipeline_forward_reference_wrong_and_placeholder():
    v = ex.check_pipeline_forward(ex.solution_pipeline_forward)
    assert v["ok"], v["message"]

    def no_recv(micro_batches, stage, n_stages, layer):  # uses its own (zero) inputs
        import torch.distributed as dist
        out = []
        for x in micro_batches:
            y = layer(x)
            if stage > 0:
                buf = torch.empty_like(x)
                dist.recv(buf, stage - 1)
            if stage < n_stages - 1:
                dist.send(y, stage + 1)
            else:
                out.append(y)
        return out
    v = ex.check_pipeline_forward(no_recv)
    assert not v["ok"] and "micro-batch 0 leaving the last stage (3)" in v["message"]
    assert "element [0]" in v["message"] and "expected" in v["message"]
    assert ex.check_pipeline_forward(placeholder).get("missing")
