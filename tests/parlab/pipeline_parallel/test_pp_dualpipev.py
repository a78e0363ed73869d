"""Our DualPipeV (schedules_zb.dualpipev): torch's ScheduleDualPipeV order action for
action, every op once in an order that runs, its idle and peak as the simulator counts
them, m < 2p refused before any process starts, and on real ranks equal to one device and
to torch's ScheduleDualPipeV on the same stages -- with planted bugs the comparison catches."""
import dataclasses

import pytest
import workers_pp_zb

from parlab import cost, launch
from parlab import pipeline_parallel as pp
from parlab.launch import LaunchError
from parlab.model import GPTConfig, max_differences, reference_train
from parlab.pipeline_parallel import Action, PPRun
from parlab.pipeline_parallel.schedules_zb import dualpipev
from lessons.l03_pipeline_parallel.torch_orders import to_actions

CFG = GPTConfig(n_layers=4, d_model=32, n_heads=4, seq_len=16)
CFG8 = GPTConfig(n_layers=8, d_model=32, n_heads=4, seq_len=16)  # 2p stages at p=4
STEPS, BATCH, LR = 3, 16, 1e-3
TOL = {"loss": 2e-6, "grad": 1e-6, "param": 1e-5}  # test_pp_peers_zb's, at this batch
EQUAL = {"F": 1.0, "B": 1.0, "W": 1.0}
CASES = [(p, m) for p in (2, 3, 4) for m in (2 * p, 2 * p + 1, 2 * p + 3, 4 * p)]


def torch_order(p: int, m: int) -> list[list[Action]]:
    """torch's ScheduleDualPipeV order for p ranks and m micro-batches, as our actions on
    the V (``torch_orders.to_actions``: a full backward is B then W, an overlapped pair
    F, B, W). Read off without processes: ``_calculate_single_rank_operations`` needs only
    the group's size and m (torch's private method: if it moves, this test says so)."""
    from torch.distributed.pipelining.schedules import ScheduleDualPipeV
    s = ScheduleDualPipeV.__new__(ScheduleDualPipeV)  # no stages, no process group
    s.pp_group_size, s._n_microbatches = p, m

    def plain(a):
        subs = tuple(plain(x) for x in (a.sub_actions or ()))
        return (a.stage_index, a.computation_type.value, a.microbatch_index, subs)
    return to_actions([[plain(a) for a in s._calculate_single_rank_operations(r)]
                       for r in range(p)], p)


# --- as data ----------------------------------------------------------------------------------

@pytest.mark.parametrize("p, m", CASES)
def test_ours_is_torchs_order_action_for_action(p, m):
    assert dualpipev(p, m) == torch_order(p, m) == pp.make_schedule("dualpipev", p, m, 2)


def test_a_changed_order_differs_from_torchs():
    ours = dualpipev(4, 8)
    ours[2][5], ours[2][6] = ours[2][6], ours[2][5]
    assert ours != torch_order(4, 8)


@pytest.mark.parametrize("p, m", CASES + [(1, 2), (1, 5), (6, 12), (8, 16)])
def test_each_op_once_its_idle_and_peak(p, m):
    acts = pp.make_schedule("dualpipev", p, m, 2)  # make_schedule checks them itself
    assert sum(map(len, acts)) == 3 * m * 2 * p
    assert pp.placement_of("dualpipev", p, 2, m).kind == "v"
    sim = pp.simulate("dualpipev", p, m, 2, durations=EQUAL)
    zbv = pp.simulate("zb-v", p, m, 2, durations=EQUAL)
    # at T_F = T_B = T_W: rank r idles p - 1 - r slots (ZB-V: none) and holds 2p + 1 chunk
    # activations, half a micro-batch more than ZB-V's 2p (1F1B's p micro-batches)
    assert sim.rank_idle == pytest.approx([p - 1 - r for r in range(p)])
    assert max(zbv.rank_idle) == pytest.approx(0.0)
    assert sim.peak_activations == [2 * p + 1] * p == [zbv.peak_activations[0] + 1] * p
    # the same rank-0 idle as ZB-H1 / Qi et al.'s (p - 1)(T_F + T_B - T_W), here at equal times
    assert max(sim.rank_idle) == cost.split_backward_bubble("zb-h1", p)


def test_fewer_than_2p_micro_batches_are_refused_before_any_process():
    for p, m in [(2, 3), (4, 7), (4, 1)]:
        with pytest.raises(ValueError, match=f"micro_batches={m} must be >= 2p"):
            pp.make_schedule("dualpipev", p, m, 2)
        with pytest.raises(ValueError, match="micro_batches="):
            PPRun(config=CFG8, p=p, micro_batches=m, v=2, schedule="dualpipev",
                  batch_size=16).check(p)
    with pytest.raises(ValueError, match="exactly v=2"):
        PPRun(config=CFG, p=2, micro_batches=4, schedule="dualpipev").check(2)
    with pytest.raises(ValueError, match="schedule='zb-v'"):  # torch's DualPipeV as ZB-V's peer only
        PPRun(config=CFG, p=2, micro_batches=4, v=2, schedule="dualpipev",
              peer="dualpipev").check(2)


# --- on real ranks ---------------------------------------------------------------------------

@pytest.fixture(scope="module")
def refs():
    return {c: reference_train(c, STEPS, BATCH, LR) for c in (CFG, CFG8)}


def dpv(p, m, config):
    return PPRun(config=config, steps=STEPS, batch_size=BATCH, lr=LR, schedule="dualpipev",
                 p=p, micro_batches=m, v=2)


@pytest.mark.timeout(400)
@pytest.mark.parametrize("p, m, config", [(2, 4, CFG), (4, 8, CFG8)])
def test_equal_to_one_device_and_to_torchs_dualpipev(refs, p, m, config):
    ours = pp.run(dpv(p, m, config), p, timeout=120)
    d = max_differences(ours, refs[config])
    assert all(d[k] < TOL[k] for k in TOL), d
    assert ours.stash_peak == pp.simulate("dualpipev", p, m, 2).peak_activations
    for rank, actions in enumerate(dualpipev(p, m)):  # the ranks ran the schedule's order
        ops = sorted((e for e in ours.events if e["rank"] == rank and e["name"] in "FBW"
                      and e["meta"]["step"] == 0), key=lambda e: e["start"])
        assert [(e["name"], e["meta"]["mb"], e["meta"]["chunk"]) for e in ops] == \
            [tuple(a) for a in actions]
    theirs = pp.run(dataclasses.replace(dpv(p, m, config), peer="pipelining"), p, timeout=120)
    for other in (refs[config], ours):
        d = max_differences(theirs, other)
        assert all(d[k] < TOL[k] for k in TOL), d


@pytest.mark.timeout(180)
def test_planted_bugs_are_caught(refs):
    run = dpv(2, 4, CFG)
    # one W computes nothing: micro-batch 0's share of chunk 0's weight gradients is missing
    wrong = pp.collect(run, launch(workers_pp_zb.planted, 2, run, "w_skipped", timeout=60))
    assert max_differences(wrong, refs[CFG])["grad"] > 1e-4
    # one W dropped from the list: the step ends with activations still held
    with pytest.raises(LaunchError, match="activations left over"):
        launch(workers_pp_zb.planted, 2, run, "w_dropped", timeout=60)
