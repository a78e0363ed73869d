"""Notebook 06's clipping exercise (``lessons.l06_3d_parallel.exercises_clip``, re-exported by
``exercises.parallel_nd``): the reference passes on real ranks, each typical mistake is
named with its factor, the placeholder gets "not answered", a slow or hanging per-tensor
norm is said to be one, and bad settings are ValueErrors naming the field before any rank
starts. The gradient given to the ranks is marked as the GPT's tensor-parallel plan
marks the model."""

import math

import pytest
import torch
import torch.distributed as dist

from parlab import cost
from lessons.l06_3d_parallel import exercises_clip as clip
from lessons.common.checkers import learner
from lessons.l06_3d_parallel import exercises as ex
from parlab.mesh import Mesh

pytestmark = [pytest.mark.timeout(180),
              pytest.mark.usefixtures("english")]  # the messages' English words are read


# --- learner functions (module level: their source travels to the ranks) ------------------

def placeholder(grads, groups):
    raise NotImplementedError  # your code


def replicated_on_every_tp_rank(grads, groups):
    total = torch.zeros(1)
    for g in grads.values():  # planted: no tp_split test, layer norms counted t times
        total += g.pow(2).sum()
    dist.all_reduce(total, group=groups["tp"])
    dist.all_reduce(total, group=groups["pp"])
    return total.sqrt().item()


def no_pp_sum(grads, groups):
    total = torch.zeros(1)
    for g in grads.values():
        if g.tp_split is not None or dist.get_rank(groups["tp"]) == 0:
            total += g.pow(2).sum()
    dist.all_reduce(total, group=groups["tp"])  # planted: the stages never added
    return total.sqrt().item()


def summed_over_dp(grads, groups):
    total = torch.zeros(1)
    for g in grads.values():
        if g.tp_split is not None or dist.get_rank(groups["tp"]) == 0:
            total += g.pow(2).sum()
    for axis in ("tp", "pp", "dp"):  # planted: the DP replicas added too
        dist.all_reduce(total, group=groups[axis])
    return total.sqrt().item()


def norms_added(grads, groups):
    total = torch.zeros(1)
    for g in grads.values():
        if g.tp_split is not None or dist.get_rank(groups["tp"]) == 0:
            total += g.pow(2).sum()
    total = total.sqrt()  # planted: the root first, then norms added
    dist.all_reduce(total, group=groups["tp"])
    dist.all_reduce(total, group=groups["pp"])
    return total.item()


def no_root(grads, groups):
    total = torch.zeros(1)
    for g in grads.values():
        if g.tp_split is not None or dist.get_rank(groups["tp"]) == 0:
            total += g.pow(2).sum()
    dist.all_reduce(total, group=groups["tp"])
    dist.all_reduce(total, group=groups["pp"])
    return total  # planted: ||g||^2, as a one-element tensor


def per_tensor_over_tp(grads, groups):
    total = torch.zeros(1)
    first = dist.get_rank(groups["tp"]) == 0
    for g in grads.values():  # right, but one all-reduce per tensor
        x = g.pow(2).sum().reshape(1) * (1.0 if g.tp_split is not None or first else 0.0)
        dist.all_reduce(x, group=groups["tp"])
        total += x
    dist.all_reduce(total, group=groups["pp"])
    return float(total.sqrt())


def per_tensor_over_pp(grads, groups):
    total = torch.zeros(1)
    for g in grads.values():  # the stages hold different tensors: this never pairs up
        x = g.pow(2).sum().reshape(1)
        dist.all_reduce(x, group=groups["pp"])
        total += x
    return float(total.sqrt())


def returns_a_list(grads, groups):
    return [float(g.norm()) for g in grads.values()]


# --- the tests -----------------------------------------------------------------------------

def test_the_reference_passes_and_is_reexported():
    assert ex.check_global_grad_norm is clip.check_global_grad_norm
    v = ex.check_global_grad_norm(ex.solution_global_grad_norm)
    assert v["ok"], v["message"]
    assert f"every rank returned {clip.one_device_norm():.6g}" in v["message"]
    assert "rank 0 ran 2 collectives carrying 2 elements" in v["message"]
    v = ex.check_global_grad_norm(ex.solution_global_grad_norm, dp=1, pp=2, tp=2)
    assert v["ok"] and "With dp = 1 an extra sum over DP would not show" in v["message"]


def test_replicated_counted_tp_times_names_the_factor():
    s = clip._sums(clip.cut(2, 2))
    S = sum(sq[0] for sq, _ in s.values())
    R = sum(sq[1] for (_, t), (sq, _) in s.items() if t == 0)
    f = cost.clip_norm_overcount(S, R, 2)
    assert f > 1.05
    v = ex.check_global_grad_norm(replicated_on_every_tp_rank)
    assert not v["ok"]
    assert "counted on all 2 TP ranks, 2 times instead of once" in v["message"], v["message"]
    assert f"(×{f:.3f})" in v["message"] and f"×{f:.3f} (cost.clip_norm_overcount)" in v["message"]


@pytest.mark.parametrize("fn, words", [
    (no_pp_sum, "the PP all-reduce is missing"),
    (summed_over_dp, "the 2 DP replicas hold the same averaged gradient, so it was counted 2 "
                     "times, norm ×√2 = ×1.414"),
    (norms_added, "norms were added, not squares"),
    (no_root, "that is ||g||², the sum of squares"),
    (returns_a_list, "rank 0 returned a list: return the norm")])
def test_each_mistake_is_named(fn, words):
    v = ex.check_global_grad_norm(fn)
    assert not v["ok"] and words in v["message"], v["message"]


def test_missing_pp_names_each_stage_and_dp_on_another_layout():
    v = ex.check_global_grad_norm(no_pp_sum, dp=1, pp=2, tp=2)
    assert "stage 0: " in v["message"] and "stage 1: " in v["message"], v["message"]
    v = ex.check_global_grad_norm(summed_over_dp, dp=2, pp=2, tp=1)
    assert "×√2" in v["message"] and "TP ranks" not in v["message"], v["message"]


def test_per_tensor_all_reduces_are_right_but_slow_and_over_pp_they_hang():
    v = ex.check_global_grad_norm(per_tensor_over_tp)
    assert v["ok"] and "It is slow, though" in v["message"], v["message"]
    v = ex.check_global_grad_norm(per_tensor_over_pp, timeout=8.0)
    assert not v["ok"] and "did not finish within 8 s" in v["message"], v["message"]
    held = {s: len(clip.cut(2, 2)[s, 0]) for s in range(2)}
    assert f"stage 0: {held[0]}, stage 1: {held[1]}" in v["message"], v["message"]


def test_the_placeholder_is_not_answered_and_starts_no_rank(monkeypatch):
    monkeypatch.setattr(learner, "launch", lambda *a, **k: pytest.fail("a rank started"))
    v = ex.check_global_grad_norm(placeholder)
    assert v["ok"] is False and v.get("missing") and "write placeholder" in v["message"]


@pytest.mark.parametrize("kw, field", [
    (dict(dp=0), "dp=0"), (dict(pp=True), "pp=True"), (dict(tp=3), "tp=3 must divide n_heads=4"),
    (dict(pp=8, dp=1, tp=1), "pp=8 must be at most n_layers=4"),
    (dict(dp=4, pp=2, tp=2), "dp \\* pp \\* tp = 16"), (dict(timeout=0), "timeout=0")])
def test_bad_settings_are_refused_before_any_rank_starts(monkeypatch, kw, field):
    monkeypatch.setattr(learner, "launch", lambda *a, **k: pytest.fail("a rank started"))
    with pytest.raises(ValueError, match=field):
        ex.check_global_grad_norm(ex.solution_global_grad_norm, **kw)


def test_rules_agree_with_cost_and_with_one_device():
    from parlab.model import GPT
    model = GPT(clip.config())
    for name, p in model.named_parameters():
        p.grad = clip.one_device_grads()[name].clone()
    norm = float(torch.nn.utils.clip_grad_norm_(model.parameters(), 1e9))
    assert norm == pytest.approx(clip.one_device_norm(), rel=1e-6)
    for dp, pp, tp in ((2, 2, 2), (1, 2, 4), (2, 1, 2)):
        mesh, s = Mesh(dp=dp, pp=pp, tp=tp), clip._sums(clip.cut(pp, tp))
        right = clip.rule_value(s, mesh, 0, "once", ("tp", "pp"), "squares")
        assert right == pytest.approx(norm, rel=1e-6)
        S = sum(sq[0] for sq, _ in s.values())
        R = sum(sq[1] for (_, t), (sq, _) in s.items() if t == 0)
        every = clip.rule_value(s, mesh, 0, "every", ("tp", "pp"), "squares")
        assert every / right == pytest.approx(cost.clip_norm_overcount(S, R, tp))
        dp_too = clip.rule_value(s, mesh, 0, "once", ("tp", "pp", "dp"), "squares")
        assert dp_too / right == pytest.approx(cost.clip_norm_overcount(S, 0.0, 1, dp_summed=dp))


def marks():
    from parlab.model import GPT
    from parlab.tensor_parallel import apply_tensor_parallel, gpt_plan
    model = GPT(clip.config())
    apply_tensor_parallel(model, gpt_plan(model.config), dist.group.WORLD)
    return {n: (getattr(p, "tp_split", None), tuple(p.shape)) for n, p in model.named_parameters()}


def test_the_pieces_are_marked_and_cut_as_the_gpt_plan_does():
    from parlab import launch
    got = launch(marks, 2, timeout=120)
    pieces = clip.cut(1, 2)
    for t in range(2):
        assert {n: (split, tuple(g.shape)) for n, (g, split) in pieces[0, t].items()} == got[t]
    assert math.isclose(sum(float(g.pow(2).sum()) for (g, sp) in pieces[0, 1].values()
                            if sp is not None) + sum(float(g.pow(2).sum()) for g, _ in
                                                     pieces[0, 0].values()),
                        clip.one_device_norm() ** 2, rel_tol=1e-5)
