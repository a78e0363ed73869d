"""parlab.checkpoint: DCP checkpoints that reshard, resume equal to the uninterrupted run,
planted restore mistakes caught; the cost formulas; bad input named before any process."""

from __future__ import annotations

import math

import pytest
import torch

from parlab import cost
from lessons.l08_checkpoints_and_failures import experiments as E
from parlab.checkpoint.state import flat_boxes


@pytest.mark.parametrize("shape", [(7,), (3, 5), (4, 3, 2), (1, 6), (5, 1)])
def test_flat_boxes_cover_every_range_exactly_once(shape):
    n = math.prod(shape)
    full = torch.arange(n).view(shape)
    for a in range(n + 1):
        for b in range(a, n + 1):
            seen = torch.zeros(n, dtype=torch.long)
            for offs, sizes, at in flat_boxes(shape, a, b):
                box = full[tuple(slice(o, o + s) for o, s in zip(offs, sizes))].reshape(-1)
                assert torch.equal(box, full.reshape(-1)[a:b][at:at + box.numel()])
                seen[box] += 1
            assert seen[a:b].eq(1).all() and int(seen.sum()) == b - a


def test_resume_on_other_layouts_equals_the_uninterrupted_run_and_planted_bugs_show():
    r = E.resharded_resume(planted=("no_optimizer", "data_off_by_one", "no_rng"))
    good = [row for row in r["rows"] if row["planted"] is None]
    assert [row["layout"] for row in good] == ["fsdp2 dp2", "ours dp2"]
    for row in good:  # dp4 (ours) -> dp2: only the order of the gradient sums differs
        assert row["loss_diff"] < 1e-5 and row["param_diff"] < 2e-5 and row["first_bad"] is None
    bad = {row["planted"]: row for row in r["rows"] if row["planted"]}
    assert bad["no_optimizer"]["first_bad"] == 4  # the loss at 3 uses the loaded weights
    assert bad["data_off_by_one"]["first_bad"] == 3 and bad["data_off_by_one"]["start"] == 4
    assert bad["no_rng"]["first_bad"] == 3  # another dropout mask at once
    for row in bad.values():
        assert row["param_diff"] > 1e-3


def test_resume_onto_one_device_from_a_sharded_checkpoint(tmp_path):
    import dataclasses
    from parlab.launch import launch
    from lessons.l08_checkpoints_and_failures.training import Layout, Spec, train_rank
    spec = Spec(E.TINY, Layout("ours", 2), steps=4, directory=str(tmp_path), save_at=(2,))
    base = launch(train_rank, 2, spec, timeout=60)[0]
    one = train_rank(dataclasses.replace(spec, layout=Layout("one", 1), resume_from=base["saved"][2],
                                         save_at=()))
    assert max(abs(one["losses"][k] - base["losses"][k]) for k in (2, 3)) < 1e-5
    full = train_rank(dataclasses.replace(spec, layout=Layout("one", 1), save_at=()))
    assert max(abs(full["losses"][k] - base["losses"][k]) for k in range(4)) < 1e-5
    # the same resume, not asked to reshard: refused before anything loads, naming the fields
    from parlab.checkpoint import CheckpointMismatch
    with pytest.raises(CheckpointMismatch, match=r"layout\.recipe: saved 'ZeroRecipe', this run "
                       r"'OneDevice'.*layout\.world_size: saved 2, this run 1.*reshard=True"):
        train_rank(dataclasses.replace(spec, layout=Layout("one", 1), resume_from=base["saved"][2],
                                       save_at=(), reshard=False))


def test_cost_formulas():
    assert cost.checkpoint_bytes(1e9)["total"] == 12e9
    assert cost.checkpoint_bytes(1e9, 4, weights=2)["per_rank"] == 14e9 / 4
    assert cost.interruptions_per_day(16384, 16384 * 24) == pytest.approx(1)
    assert cost.young_interval(2, 100) == pytest.approx(20)
    # Daly's form is Young's to first order when C << M
    assert cost.daly_interval(1, 1e6) == pytest.approx(cost.young_interval(1, 1e6), rel=1e-3)
    curve = cost.goodput_curve(60, 3 * 3600, 600)
    best = max(curve, key=lambda r: r["goodput"])
    assert best["tau"] == pytest.approx(cost.young_interval(60, 3 * 3600), rel=0.2)
    assert cost.pipeline_time_with_straggler(4, 8, 1, 2) == (8 + 3) * 3


def test_llama3_counts():
    r = E.llama3_check()
    assert r["gpu_mtbf_hours"] == pytest.approx(54 * 24 * 16384 / 419)
    assert 2.5 < r["job_mtbf_hours"] < 3.5  # "about one failure every three hours"
    assert 0.8 < r["goodput"] < 1


@pytest.mark.parametrize("call, match", [
    (lambda: cost.checkpoint_bytes(-1), "n_params"),
    (lambda: cost.young_interval(0, 1), "c="),
    (lambda: cost.interruptions_per_day(0, 10), "n_gpus"),
    (lambda: cost.goodput(0, 1, 1), "tau"),
])
def test_bad_input_is_named(call, match):
    with pytest.raises(ValueError, match=match):
        call()


def test_save_bytes_per_rank_match_the_formula_and_async_writes_in_the_background():
    """§3's lesson without a timing: a sync save writes on the training thread before it
    returns; an async save returns and its files are written by another thread (the
    blocked seconds themselves are shown in the notebook, not asserted)."""
    r = E.save_stall(repeats=2)
    for rank, b in r["files"]["sync"].items():
        assert abs(b - r["formula_per_rank"]) / r["formula_per_rank"] < 0.05
    sync, background = r["writes"]["sync"], r["writes"]["async"]
    assert len(sync) == len(background) == 2, r["writes"]
    assert all(w["on_training_thread"] and w["before_return"] for w in sync), sync
    assert not any(w["on_training_thread"] for w in background), background


def test_a_straggler_sets_the_pace_of_dp_and_tp_under_load(cpu_hogs):
    """§5 "the slowest rank sets the pace", as a bound no load can break: the fast rank's
    own step cannot end before the slow rank's compute (stragglers.straggler_rank)."""
    for row in E.stragglers(kinds=("dp", "tp"), ranks=2, slowdown=1.0, repeats=2):
        assert min(row["own_s"]) >= row["floor_s"], row
        assert row["floor_s"] == pytest.approx(2 * row["t_compute"])


def test_a_step_that_does_not_synchronise_is_caught():
    for row in E.stragglers(kinds=("dp", "tp"), ranks=2, slowdown=3.0, repeats=2,
                            bug="no_sync"):
        assert min(row["own_s"]) < row["floor_s"], row  # 20 ms of its own vs the 80 ms floor


@pytest.mark.parametrize("kw, match", [
    ({"kinds": ("dp", "zz")}, "kinds"), ({"kinds": ()}, "kinds"),
    ({"ranks": 1}, "ranks"), ({"slowdown": 0}, "slowdown"), ({"bug": "late"}, "bug"),
])
def test_straggler_input_is_named_before_any_rank_starts(kw, match):
    with pytest.raises(ValueError, match=match):
        E.stragglers(**kw)


def test_step_formulas_refuse_bad_input():
    with pytest.raises(ValueError, match="computes"):
        cost.synchronous_step([])
    with pytest.raises(ValueError, match="computes"):
        cost.synchronous_step([0.1, float("nan")])
    with pytest.raises(ValueError, match="t_bwd"):
        cost.pipeline_time_with_straggler(4, 8, 1.0, -2.0)
    with pytest.raises(ValueError, match="c="):
        cost.goodput_curve("60", 11000)
