"""plan(..., zero3_with_pp=True): ZeRO-3 (FSDP2) with a pipeline. It finds the layouts only ZeRO-3 fits, its
pruning rule (ZeRO-3 only at the micro-batches ZeRO-1 cannot fit, resharding only) loses
nothing against trying every variant, and the layouts ZeRO-3 does not beat are unchanged."""

import dataclasses
import itertools

import pytest

from parlab import cost, planner
from parlab.planner import Layout, predict
from parlab.planner.estimate import divisors
from parlab.planner.presets import cluster_for, resolve_model
from parlab.planner.search import Candidate, reasons

search = __import__("parlab.planner.search", fromlist=["_best_variant"])


def _rank_time(e):
    return e.step_time.total / planner.error_band(e.layout)[1]


def _every_variant(model, cluster, base, n_gpus, B):
    """Every variant plan() could pick for a layout with a pipeline, none pruned: ZeRO 0, 1
    and 3 both ways, sequence parallelism, interleaving, recomputation, every micro-batch."""
    dp = base.check(model, n_gpus, B)
    per = B // dp
    zeros = [(0, None), (1, None), (3, False), (3, True)]
    sps = (False, True) if base.tp > 1 else (False,)
    for (zero, keep), sp, v, rec in itertools.product(zeros, sps, (1, 2, 4, 8), cost.RECOMPUTE):
        if v > 1 and (per % base.pp or base.pp * v > model.n_layers
                      or not base.uneven_stages and model.n_layers % (base.pp * v)):
            continue
        for b in divisors(per // base.pp if v > 1 else per):
            lay = dataclasses.replace(base, zero_stage=zero, fsdp_keep_unsharded=keep,
                                      sequence_parallel=sp, v=v, recompute=rec, micro_batch=b)
            yield predict(model, cluster, lay, n_gpus, B)


def test_plan_finds_zero3_with_a_pipeline_where_zero1_cannot_fit():
    # 70B on 32 A100s, no tensor parallelism, 4 stages: 17.5B parameters a stage; ZeRO-1
    # keeps their 16-bit weights and gradients whole (70 GB) and Adam's states over dp=8
    p = planner.plan("70B", 32, "A100-80GB", 64, tps=(1,), pps=(4,), cps=(1,),
                     zero3_with_pp=True)
    assert not p.infeasible and len(p.ranked) == 1
    c = p.best
    assert (c.tp, c.pp, c.zero_stage) == (1, 4, 3)
    assert not c.estimate.layout.keeps_unsharded
    assert "ZeRO-3 (reshard)" in c.label and "ZeRO-3 (reshard)" in c.reasons[-2]
    assert "every micro-batch" in " ".join(c.reasons)
    # ZeRO-1 at its leanest does not fit: only ZeRO-3 made this layout possible
    lean = dataclasses.replace(c.estimate.layout, zero_stage=1, fsdp_keep_unsharded=None,
                               recompute="full", v=1, micro_batch=1)
    assert not predict(c.estimate.model, c.estimate.cluster, lean, 32, 64).fits


@pytest.mark.parametrize("dp_overlap", [True, False])
def test_the_pruning_loses_nothing_against_trying_every_variant(dp_overlap):
    # 70B on 64 A100s (notebook 06's job): ZeRO-3 wins some layouts, ZeRO-1 others
    model, cluster, n, B = resolve_model("70B"), cluster_for("A100-80GB"), 64, 256
    p = planner.plan(model, n, "A100-80GB", B, tps=(2, 4), pps=(2, 4, 8), cps=(1,),
                     dp_overlap=dp_overlap, zero3_with_pp=True)
    ranked = {(c.tp, c.pp): c for c in p.ranked}
    zero3_won = 0
    for tp, pp in itertools.product((2, 4), (2, 4, 8)):
        base = Layout(tp=tp, pp=pp, dp_overlap=dp_overlap)
        fits = [e for e in _every_variant(model, cluster, base, n, B) if e.fits]
        assert bool(fits) == ((tp, pp) in ranked), (tp, pp)
        if fits:
            best = min(_rank_time(e) for e in fits)
            assert ranked[(tp, pp)].rank_time == pytest.approx(best, rel=1e-12), (tp, pp)
            zero3_won += ranked[(tp, pp)].zero_stage == 3
    assert zero3_won  # the case exercises the rule: ZeRO-3 is the best of some layout


def test_keeping_the_stage_unsharded_is_zero1_with_more_memory_and_no_less_traffic():
    # why plan() does not try it when the traffic overlaps (dp_overlap, the default)
    model, cluster = resolve_model("70B"), cluster_for("A100-80GB")
    keeps = []
    for tp, pp, b, rec in ((2, 4, 1, "none"), (4, 2, 2, "selective"), (8, 8, 1, "full")):
        base = Layout(tp=tp, pp=pp, micro_batch=b, recompute=rec, sequence_parallel=True)
        zero1 = predict(model, cluster, dataclasses.replace(base, zero_stage=1), 64, 256)
        keep = predict(model, cluster, dataclasses.replace(base, zero_stage=3,
                                                           fsdp_keep_unsharded=True), 64, 256)
        assert keep.memory_per_gpu.total > zero1.memory_per_gpu.total
        assert keep.step_time.total >= zero1.step_time.total
        keeps.append(keep)
    c = Candidate(keeps[0], reasons(keeps[0]))  # dp = 8: it says how it synchronises
    assert "ZeRO-3 (keep unsharded)" in c.label
    assert "once a step" in " ".join(c.reasons)


def _without_zero3_and_pp(monkeypatch):
    """plan() as it was: ZeRO-3 with a pipeline never fits."""
    real = search.predict

    def old(model, cluster, lay, *a, **k):
        e = real(model, cluster, lay, *a, **k)
        return dataclasses.replace(e, fits=False) if lay.zero_stage == 3 and lay.pp > 1 else e
    monkeypatch.setattr(search, "predict", old)


@pytest.mark.parametrize("job", [("13B", 8, "A100-80GB", 512), ("70B", 64, "A100-80GB", 1024)])
def test_a_layout_changes_only_where_zero3_with_a_pipeline_is_faster(job, monkeypatch):
    new = planner.plan(*job, cps=(1,), zero3_with_pp=True)
    with monkeypatch.context() as m:
        _without_zero3_and_pp(m)
        old = planner.plan(*job, cps=(1,), zero3_with_pp=True)
    before = {(c.tp, c.pp): c for c in old.ranked}
    for c in new.ranked:
        was = before.get((c.tp, c.pp))
        if c.zero_stage == 3 and c.pp > 1:  # new, or faster than what the layout had
            assert was is None or c.rank_time < was.rank_time
        else:
            assert was is not None and (was.label, was.rank_time) == (c.label, c.rank_time)
    assert set(before) <= {(c.tp, c.pp) for c in new.ranked}
    if job[0] == "13B":  # notebook 06's 13B on 8 A100s: ZeRO-3 with PP wins nothing
        assert [c.label for c in new.ranked] == [c.label for c in old.ranked]


def test_by_default_plan_leaves_zero3_with_a_pipeline_out_and_checks_the_switch():
    # no published run validates ZeRO-3 with a pipeline yet: off unless asked for
    job = ("70B", 32, "A100-80GB", 64)
    off = planner.plan(*job, tps=(1,), pps=(4,), cps=(1,))
    assert not off.ranked and off.infeasible  # ZeRO-1 cannot fit; ZeRO-3 was not tried
    assert "ZeRO-3" not in " ".join(r for i in off.infeasible for r in i.reasons)
    on = planner.plan(*job, tps=(1,), pps=(4,), cps=(1,), zero3_with_pp=True)
    assert on.best.zero_stage == 3
    with pytest.raises(ValueError, match="zero3_with_pp"):
        planner.plan(*job, tps=(1,), pps=(4,), cps=(1,), zero3_with_pp="yes")
