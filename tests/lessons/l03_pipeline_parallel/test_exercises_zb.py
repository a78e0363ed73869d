"""Notebook 03's ZB-H1 exercise (``exercises/zero_bubble.py``): the reference passes on real
ranks, each planted wrong order is caught with what is wrong (a W before its B, a stage
with no W, a deadlock, the peak over P, the bubble over the paper's formula), the
placeholder says "not answered", and bad checker input is refused before anything runs."""

from __future__ import annotations

import pytest

from parlab import cost
from lessons.common.checkers import learner
from lessons.l03_pipeline_parallel import exercises as ex


def placeholder(stage, n_stages, n_micro):
    raise NotImplementedError  # your code


def w_right_after_b(stage, n_stages, n_micro):
    """1F1B with each backward split, W at once: right, but no bubble saved."""
    out = []
    for op, mb in ex.solution_1f1b(stage, n_stages, n_micro):
        out += [(op, mb)] + ([("W", mb)] if op == "B" else [])
    return out


def w_at_the_end(stage, n_stages, n_micro):
    """Every W after the last B: ZB-H2's tail, with every micro-batch held to the end."""
    return ex.solution_1f1b(stage, n_stages, n_micro) + [("W", i) for i in range(n_micro)]


def w_before_its_b(stage, n_stages, n_micro):
    acts = ex.solution_zb_h1(stage, n_stages, n_micro)
    if stage == 1:  # swap B2 and W2
        i, j = acts.index(("B", 2)), acts.index(("W", 2))
        acts[i], acts[j] = acts[j], acts[i]
    return acts


def backward_too_soon(stage, n_stages, n_micro):
    """Stage 0 wants B0 before it has sent F1: the last stage never gets F1."""
    acts = ex.solution_zb_h1(stage, n_stages, n_micro)
    if stage == 0:
        first = [("F", 0), ("B", 0), ("W", 0)]
        return first + [a for a in acts if a not in first]
    return acts


# --- the reference --------------------------------------------------------------------------

def test_reference_runs_on_real_ranks_and_matches_the_single_device():
    v = ex.check_zb_h1(ex.solution_zb_h1, p=2, m=4)
    assert v["ok"], v["message"]
    assert "loss and gradients equal the single device's" in v["message"]
    assert v["peaks"] == [2, 2] and v["idle"] == [1.0, 0.0]


def test_reference_plan_at_the_notebook_size_meets_the_paper():
    plan = ex.plan_zb_h1(ex.solution_zb_h1, 4, 8)
    assert plan["ok"] and plan["peaks"] == [4, 4, 4, 4]  # P on every stage: 1F1B's rank 0
    assert plan["idle"] == [3.0, 2.0, 1.0, 0.0]
    assert max(plan["idle"]) == cost.split_backward_bubble("zb-h1", 4) == 3.0


def test_reference_is_the_lab_schedule():
    from parlab import pipeline_parallel as pp
    for p, m in ((2, 4), (4, 4), (4, 8), (5, 13)):
        mine = [[pp.Action(op, mb, 0) for op, mb in ex.solution_zb_h1(s, p, m)] for s in range(p)]
        assert mine == pp.make_schedule("zb-h1", p, m), (p, m)


# --- planted wrong orders -------------------------------------------------------------------

def test_a_w_before_its_b_is_named():
    v = ex.plan_zb_h1(w_before_its_b)
    assert not v["ok"] and "stage 1: W(2) comes before B(2)" in v["message"]
    assert "output gradient" in v["message"]


def test_1f1b_without_w_is_told_to_split_the_backward():
    v = ex.plan_zb_h1(ex.solution_1f1b)
    assert not v["ok"] and "stage 0 runs no W" in v["message"] and "('W', mb)" in v["message"]


def test_a_deadlock_names_where_each_stage_waits():
    v = ex.plan_zb_h1(backward_too_soon)
    assert not v["ok"] and "P=4, M=8 deadlocks" in v["message"]
    assert "0: B0" in v["message"] and "W(mb) only its own B(mb)" in v["message"]


def test_the_peak_over_p_is_named():
    v = ex.plan_zb_h1(w_at_the_end)
    assert not v["ok"], v["message"]
    assert "stage 0 holds 8 micro-batches' activations" in v["message"]
    assert "1F1B's most, P = 4" in v["message"]


def test_the_bubble_over_the_formula_is_named():
    v = ex.plan_zb_h1(w_right_after_b)
    assert not v["ok"], v["message"]
    assert "stage 0 idles 6 time units" in v["message"]
    assert "(P - 1)(T_F + T_B - T_W) = 3" in v["message"] and "= 9" in v["message"]
    assert v["idle"] == [6.0, 4.0, 2.0, 0.0]


def test_bad_items_and_errors_get_a_verdict():
    v = ex.plan_zb_h1(lambda s, p, m: [("X", 0)])
    assert not v["ok"] and "('W', mb)" in v["message"]
    v = ex.plan_zb_h1(lambda s, p, m: ex.solution_zb_h1(s, p, m)[:-1])
    assert not v["ok"] and "stage 0: W(7) is missing" in v["message"]
    v = ex.plan_zb_h1(lambda s, p, m: 1 / 0)
    assert not v["ok"] and "ZeroDivisionError" in v["message"]
    # "W3" strings are read as actions too
    assert ex.plan_zb_h1(lambda s, p, m: [f"{op}{mb}" for op, mb in ex.solution_zb_h1(s, p, m)])["ok"]


def test_placeholder_says_not_answered():
    v = ex.check_zb_h1(placeholder)
    assert not v["ok"] and v.get("missing") and "Not answered yet" in v["message"]
    assert "my_zb_h1" in v["message"]


# --- the checker's own parameters, before any process starts ----------------------------------

@pytest.mark.parametrize("kwargs, named", [
    (dict(p=1), "p=1"), (dict(m=0), "m=0"), (dict(p=4, m=3), "m=3 must be at least p=4"),
    (dict(p=4.0), "p=4.0"), (dict(timeout=0), "timeout=0"),
])
def test_bad_parameters_are_refused_before_any_rank_starts(kwargs, named, monkeypatch):
    def no_ranks(*args, **kwargs):
        raise AssertionError("a process was started before the parameters were checked")
    monkeypatch.setattr(learner, "launch", no_ranks)
    for check in (ex.check_zb_h1, ex.plan_zb_h1):
        with pytest.raises(ValueError, match=named.replace(".", r"\.")):
            check(ex.solution_zb_h1, **kwargs)


def test_hints_and_solution_under_the_exercise_name(capsys):
    assert "def my_zb_h1(" in ex.hints("my_zb_h1").data
    ex.show_solution("my_zb_h1")
    assert "def my_zb_h1(" in capsys.readouterr().out
