"""torch's own V orders read off ``pipeline_order`` and simulated by ours
(pipeline_parallel/torch_orders.py): our ZB-V is torch's ScheduleZBVZeroBubble action for
action; torch's ScheduleDualPipeV translated onto the V runs every F/B/W once, never
deadlocks, and its simulated idle, step share and peak are pinned; with its overlapped
pairs kept whole it idles the DualPipe README's DualPipeV row; a wrong translation is
caught; bad input is refused before any rank starts."""
from collections import Counter

import pytest

from parlab.pipeline_parallel.placement import Action
from parlab.pipeline_parallel.schedules_zb import dualpipev, zb_v
from lessons.l03_pipeline_parallel.torch_orders import (readme_row, replay_whole, simulate_order,
                                                        to_actions, torch_v_order, torch_v_rows)


@pytest.mark.parametrize("p, m", [(2, 4), (4, 8), (4, 6)])
def test_our_zb_v_is_torchs_action_for_action(p, m):
    assert torch_v_order("torch-zbv", p, m) == zb_v(p, m)


def test_a_changed_order_differs_from_torchs():
    ours = zb_v(4, 8)
    ours[1][3], ours[1][4] = ours[1][4], ours[1][3]
    assert torch_v_order("torch-zbv", 4, 8) != ours


@pytest.mark.parametrize("p, m", [(2, 4), (4, 8)])
def test_dualpipev_translated_runs_every_op_once(p, m):
    actions = torch_v_order("torch-dualpipev", p, m)
    assert actions == dualpipev(p, m)  # our own DualPipeV, read off torch's real ranks too
    for rank in actions:
        assert Counter(rank) == Counter(Action(op, mb, c) for op in "FBW" for mb in range(m)
                                        for c in (0, 1))
    got = simulate_order(actions, p, m)  # replays without deadlock
    zbv = simulate_order(zb_v(p, m), p, m)
    assert got["idle"] == p - 1 and zbv["idle"] == 0
    assert got["step"] == pytest.approx(zbv["step"]) and got["peak"] == p + 0.5


@pytest.mark.parametrize("p, m", [(2, 4), (4, 8), (4, 12)])
def test_dualpipev_with_its_pairs_whole_idles_the_readme_row(p, m):
    """The DualPipe README's DualPipeV row, (PP/2 - 1)(F&B + B - 3W) with PP = 2p, is
    2(p - 1) at unit times with nothing overlapped: the order with its pairs whole idles
    exactly that on rank 0; with each half started on its own input, p - 1."""
    units = torch_v_order("torch-dualpipev", p, m, units=True)
    assert any(len(u) == 3 for rank in units for u in rank)  # the overlapped pairs
    whole = replay_whole(units, p, m)
    assert readme_row(p) == 2 * (p - 1) == whole["idle"]
    assert whole["rank_idle"] == [2 * (p - 1) - r for r in range(p)]
    split = simulate_order([[a for u in rank for a in u] for rank in units], p, m)
    assert split["idle"] == p - 1 and whole["makespan"] == split["makespan"] + p - 1


def test_pairs_cut_into_single_ops_replay_as_the_split_order():
    units = torch_v_order("torch-dualpipev", 4, 8, units=True)
    singles = [[(a,) for u in rank for a in u] for rank in units]
    assert replay_whole(singles, 4, 8)["idle"] == 3 != readme_row(4)


def test_rows():
    rows = torch_v_rows(4, 8)
    assert [r["order"] for r in rows] == ["ours: zb-v", "torch-zbv", "torch-dualpipev",
                                          "torch-dualpipev, pairs whole"]
    assert rows[0] == {**rows[1], "order": "ours: zb-v"}
    assert rows[2]["readme"] == rows[3]["readme"] == rows[3]["idle"] == 6


def test_a_stage_the_rank_does_not_hold_is_refused():
    with pytest.raises(ValueError, match="holds stages 0 and 3"):
        to_actions([[(1, "F", 0, ())], []], 2)
    with pytest.raises(ValueError, match="unexpected action"):
        to_actions([[(0, "UNSHARD", 0, ())], []], 2)


@pytest.mark.parametrize("args, match", [(("torch-dualpipe", 4, 8), "name="),
                                         (("torch-dualpipev", 4, 6), "m >= 2p"),
                                         (("torch-zbv", 1, 8), "p")])
def test_bad_input(args, match):
    with pytest.raises(ValueError, match=match):
        torch_v_order(*args)
