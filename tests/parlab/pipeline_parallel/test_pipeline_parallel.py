"""Pipeline parallelism: schedules as data, simulator, executor vs the reference, vs torch.
(Pipelines on sub-groups of a bigger launch: test_pp_groups.py.)"""

import dataclasses
import math
import sys
from collections import Counter

import pytest
import torch

from parlab import cost
from lessons.l03_pipeline_parallel import experiments as demos
from parlab import pipeline_parallel as pp
from parlab.model import GPT, GPTConfig, reference_train
from parlab.pipeline_parallel import PPRun
from parlab.runs import RunResult

CFG = GPTConfig(n_layers=4, d_model=32, n_heads=4, seq_len=16)
STEPS, BATCH, LR = 3, 8, 1e-3
GRID = [(p, m) for p in (1, 2, 3, 4, 8) for m in (1, 2, 3, 4, 8, 16)]


@pytest.fixture(scope="module")
def ref():
    return reference_train(CFG, STEPS, BATCH, LR)


def max_diffs(result_losses, state_dict, grads, ref) -> dict:
    return {"loss": max(abs(a - b) for a, b in zip(result_losses, ref["losses"], strict=True)),
            "params": max((state_dict[k] - ref["state_dict"][k]).abs().max().item()
                          for k in ref["state_dict"]),
            "grads": max((grads[k] - ref["grads"][k]).abs().max().item() for k in ref["grads"])}


# --- stages ---------------------------------------------------------------------------

def test_split_layers_is_balanced_and_covers_every_layer():
    for n_layers in range(1, 13):
        for n in range(1, n_layers + 1):
            parts = pp.split_layers(n_layers, n)
            assert [i for r in parts for i in r] == list(range(n_layers))
            assert max(map(len, parts)) - min(map(len, parts)) <= 1
    assert pp.split_layers(5, 2) == [range(0, 3), range(3, 5)]


def test_stages_hold_the_reference_parameters_once():
    model = GPT(CFG)
    names = {id(t): n for n, t in model.named_parameters()}
    held = []
    for rank in range(2):
        for stage in pp.gpt_stages(model, 2, rank, v=2):
            held += [names[id(q)] for q in stage.parameters()]
    ref_names = list(reference_train(CFG, 0, 1)["state_dict"])
    assert sorted(held) == sorted(ref_names) and len(held) == len(set(held))
    first = pp.gpt_stages(model, 2, 0)[0]
    assert first.names[0] == "embed" and not first.last and model.wte.weight in set(first.parameters())


def test_a_stage_is_any_list_of_modules():
    # not the lab's GPT: two Linear layers and a ReLU, cut into two stages by hand
    torch.manual_seed(0)
    layers = [torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 3)]
    first = pp.PipelineStage(layers[:2])
    last = pp.PipelineStage(layers[2:], loss_fn=torch.nn.functional.cross_entropy)
    x, y = torch.randn(5, 4), torch.tensor([0, 1, 2, 1, 0])
    assert torch.equal(last(first(x)), torch.nn.Sequential(*layers)(x)) and last.last
    assert last.loss(last(first(x)), y).item() > 0
    with pytest.raises(ValueError, match="at least one module"):
        pp.PipelineStage([])


# --- bad input: ValueError before any process starts ----------------------------------

@pytest.mark.parametrize("kwargs, words", [
    (dict(schedule="1f1b", p=5, micro_batches=4), "n_layers=4"),              # P > layers
    (dict(schedule="1f1b", p=2, micro_batches=3, batch_size=8), "divisible by micro_batches=3"),
    (dict(schedule="1f1b", p=2, micro_batches=4, batch_size=2), "divisible by micro_batches=4"),  # fewer rows than m
    (dict(schedule="1f1b", p=2, micro_batches=4, batch_size=0), "batch_size=0"),
    (dict(schedule="1f1b", p=2, micro_batches=4, batch_size=8.0), "batch_size=8.0 must be an integer"),
    (dict(schedule="interleaved", p=2, micro_batches=4, v=3), "n_layers=4"),  # v chunks don't fit
    (dict(schedule="interleaved", p=2, micro_batches=3, v=2, batch_size=6), "micro_batches divisible by p"),
    (dict(schedule="interleaved", p=2, micro_batches=2, v=1), "v >= 2"),
    (dict(schedule="gpipe", p=2, micro_batches=2, v=2), "only exist for 'interleaved'"),
    (dict(schedule="pipedream", p=2, micro_batches=2), "must be one of"),
    (dict(schedule="gpipe", p=0, micro_batches=2), "p=0"),
    (dict(schedule="gpipe", p=2.0, micro_batches=2), "p=2.0 must be an integer"),
    (dict(schedule="gpipe", p=2, micro_batches="2"), "micro_batches='2' must be an integer"),
    (dict(schedule="gpipe", p=2, micro_batches=2, steps=0), "steps=0"),
    (dict(schedule="gpipe", p=2, micro_batches=2, steps=2.0), "steps=2.0 must be an integer"),
    (dict(schedule="gpipe", p=2, micro_batches=2, lr=math.nan), "lr=nan"),
    (dict(schedule="gpipe", p=2, micro_batches=2, lr=0.0), "lr=0.0"),
    (dict(schedule="gpipe", p=2, micro_batches=2, weight_decay=-0.1), "weight_decay=-0.1"),
    (dict(schedule="gpipe", p=2, micro_batches=2, seed=-1), "seed=-1"),
    (dict(schedule="gpipe", p=2, micro_batches=2, compute="fast"), "compute='fast'"),
    (dict(schedule="gpipe", p=2, micro_batches=2, t_fwd=0.0), "t_fwd=0.0"),
    (dict(schedule="gpipe", p=2, micro_batches=2, t_bwd=math.inf), "t_bwd=inf"),
    (dict(schedule="gpipe", p=2, micro_batches=2, t_fwd="1"), "t_fwd='1'"),
    (dict(schedule="gpipe", p=2, micro_batches=2, checkpoint=1), "checkpoint=1 must be True or False"),
    (dict(schedule="gpipe", p=2, micro_batches=2, compute="emulated", checkpoint=True), "checkpoint"),
    (dict(schedule="gpipe", p=2, micro_batches=2, config={"n_layers": 4}), "config must be a GPTConfig"),
])
def test_bad_input_raises_before_launch(monkeypatch, kwargs, words):
    def no_launch(*a, **k):
        raise AssertionError("a process was started")
    monkeypatch.setattr(sys.modules["parlab.launch"], "launch", no_launch)
    kwargs = dict(dict(config=CFG), **kwargs)
    p = kwargs["p"]
    world_size = p if isinstance(p, int) and p >= 1 else 2
    with pytest.raises(ValueError, match=words):
        pp.run(PPRun(**kwargs), world_size)
    with pytest.raises(ValueError, match=words):
        pp.run(PPRun(**kwargs, peer="pipelining"), world_size)


def test_world_size_must_equal_p_and_emulated_runs_need_no_layers(monkeypatch):
    monkeypatch.setattr(sys.modules["parlab.launch"], "launch", None)
    with pytest.raises(ValueError, match="world_size=4 must equal p=2"):
        pp.run(PPRun(config=CFG, p=2, micro_batches=2), 4)
    with pytest.raises(ValueError, match="world_size=2.0 must be an integer"):
        pp.run(PPRun(config=CFG, p=2, micro_batches=2), 2.0)
    with pytest.raises(ValueError, match="must be a PPRun"):
        pp.run(dict(p=2, m=2), 2)
    with pytest.raises(ValueError, match="the peer has"):
        pp.run(PPRun(config=CFG, schedule="zb-h1", p=2, micro_batches=2, peer="pipelining"), 2)
    with pytest.raises(ValueError, match="real model only"):
        pp.run(PPRun(config=CFG, p=2, micro_batches=2, compute="emulated", peer="pipelining"), 2)
    # emulated ops have no layers: 8 stages of a 4-layer model are fine
    PPRun(config=CFG, p=8, micro_batches=8, compute="emulated").check(8)
    with pytest.raises(ValueError, match="n_layers=4"):
        PPRun(config=CFG, p=8, micro_batches=8).check(8)
    with pytest.raises(AttributeError):  # frozen: a checked run stays checked
        PPRun().p = 3


# --- schedules as data ----------------------------------------------------------------

def _schedules():
    for p, m in GRID:
        yield "gpipe", p, m, 1
        yield "1f1b", p, m, 1
        yield "zb-h1", p, m, 1
        for v in (2, 3):
            if m % p == 0:
                yield "interleaved", p, m, v


@pytest.mark.parametrize("schedule, p, m, v", list(_schedules()))
def test_every_op_once_in_dependency_order(schedule, p, m, v):
    ops = "FBW" if schedule == "zb-h1" else "FB"
    for rank, actions in enumerate(pp.make_schedule(schedule, p, m, v)):
        assert Counter(actions) == Counter(pp.Action(o, i, c) for o in ops for i in range(m)
                                           for c in range(v))
        seen = set()
        for a in actions:  # on one rank: F before B before W of the same (mb, chunk)
            assert a.op == "F" or (ops[ops.index(a.op) - 1], a.mb, a.chunk) in seen
            seen.add(tuple(a))
    pp.replay(pp.make_schedule(schedule, p, m, v), p, v, {"F": 1, "B": 2, "W": 1})  # no deadlock


def test_warmup_lengths():
    for p, m in GRID:
        for r, actions in enumerate(pp.make_schedule("1f1b", p, m)):
            warm = next(i for i, a in enumerate(actions) if a.op == "B")
            assert warm == min(p - r, m)  # p - r - 1 warm-up F, then 1F before the 1st B
        assert all(a.op == "F" for a in pp.make_schedule("gpipe", p, m)[0][:m])
    # Megatron-LM: 2 (p - r - 1) + (v - 1) p warm-up forwards
    for r, actions in enumerate(pp.make_schedule("interleaved", 4, 8, 2)):
        assert next(i for i, a in enumerate(actions) if a.op == "B") == 2 * (3 - r) + 4 + 1
    assert [a.op for a in pp.make_schedule("1f1b", 4, 8)[1]][:6] == list("FFFBFB")


def test_a_schedule_out_of_dependency_order_deadlocks():
    bad = pp.make_schedule("1f1b", 2, 2)
    bad[0] = [pp.Action("F", 0, 0), pp.Action("B", 1, 0), pp.Action("F", 1, 0),
              pp.Action("B", 0, 0)]  # waits for B1 before sending F1: a cycle
    with pytest.raises(RuntimeError, match="deadlocks"):
        pp.replay(bad, 2, 1, {"F": 1, "B": 2})


# --- simulator vs the formulas ------------------------------------------------------------

@pytest.mark.parametrize("p, m", GRID)
def test_simulated_bubble_matches_the_formula(p, m):
    for schedule in ("gpipe", "1f1b"):
        sim = pp.simulate(schedule, p, m, t_fwd=1.0, t_bwd=2.0)
        assert sim.bubble_fraction == pytest.approx(cost.bubble_fraction(p, m), abs=1e-12)
        assert sim.bubble_ratio == pytest.approx(cost.bubble_ratio(p, m), abs=1e-12)
        assert sim.makespan == pytest.approx((m + p - 1) * 3.0)
        assert sim.peak_activations == [cost.pipeline_peak_activations(schedule, p, m, r)
                                        for r in range(p)]
    for v in (2, 3, 4):
        if m % p == 0:
            sim = pp.simulate("interleaved", p, m, v, t_fwd=1.0, t_bwd=3.0)
            assert sim.bubble_fraction == pytest.approx(cost.bubble_fraction(p, m, v), abs=1e-12)


@pytest.mark.parametrize("p, m", [(p, m) for p, m in GRID if m >= p])
def test_zb_h1_bubble_is_a_third_of_1f1b_at_equal_f_b_w(p, m):
    # Qi et al. 2024, §2.3 Table 2: bubble (p-1)(T_F + T_B - T_W) with T_F = T_B = T_W = 1.
    sim = pp.simulate("zb-h1", p, m, t_fwd=1.0, t_bwd=2.0)
    assert sim.makespan == pytest.approx(3 * m + (p - 1))
    assert max(sim.peak_activations) == min(p, m)  # never above 1F1B's peak


def test_communication_time_is_on_the_critical_path():
    assert pp.simulate("gpipe", 4, 4, t_comm=0.5).makespan == pytest.approx(7 * 3 + 2 * 3 * 0.5)
    assert pp.simulate("gpipe", 1, 4, t_comm=0.5).makespan == pytest.approx(12)


# --- executor vs the single-device reference ----------------------------------------------

@pytest.mark.timeout(120)
@pytest.mark.parametrize("schedule, p, m, v, checkpoint", [
    ("gpipe", 2, 4, 1, False), ("1f1b", 2, 4, 1, False), ("1f1b", 4, 8, 1, False),
    ("interleaved", 2, 2, 2, False), ("interleaved", 1, 2, 2, False),
    ("zb-h1", 2, 4, 1, False), ("zb-h1", 4, 4, 1, False), ("1f1b", 2, 4, 1, True),
])
def test_matches_reference(ref, schedule, p, m, v, checkpoint):
    r = pp.run(PPRun(config=CFG, steps=STEPS, batch_size=BATCH, lr=LR, schedule=schedule,
                     p=p, micro_batches=m, v=v, checkpoint=checkpoint), p, timeout=60)
    assert isinstance(r, pp.PipelineResult) and isinstance(r, RunResult)
    assert (r.schedule, r.p, r.micro_batches, r.v) == (schedule, p, m, v)
    assert [mem["activations"] for mem in r.memory] == r.stash_peak_bytes
    # the stages hold the model's parameters between them, each once
    assert sum(mem["params"] for mem in r.memory) == GPT(CFG).num_params() * 4
    assert len(r.step_times) == STEPS and 0 <= r.bubble_fraction < 1
    assert sorted(r.state_dict) == sorted(ref["state_dict"])
    diffs = max_diffs(r.losses, r.state_dict, r.grads, ref)
    assert max(diffs.values()) < 2e-6, diffs
    # the order of ops on every rank is the schedule's
    for rank, actions in enumerate(pp.make_schedule(schedule, p, m, v)):
        ops = sorted((e for e in r.events if e["rank"] == rank and e["name"] in "FBW"
                      and e["meta"]["step"] == 0), key=lambda e: e["start"])
        assert [(e["name"], e["meta"]["mb"], e["meta"]["chunk"]) for e in ops] == \
            [tuple(a) for a in actions]


def test_the_comparison_can_fail(ref):
    # Same code, half the data per step: the reference check must notice.
    r = pp.run(PPRun(config=CFG, steps=STEPS, batch_size=4, lr=LR, schedule="1f1b", p=2, micro_batches=4),
               2, timeout=60)
    diffs = max_diffs(r.losses, r.state_dict, r.grads, ref)
    assert min(diffs.values()) > 1e-4, diffs


@pytest.mark.timeout(120)
def test_weight_decay_is_honoured():
    ref = reference_train(CFG, STEPS, BATCH, LR, weight_decay=0.1)
    r = pp.run(PPRun(config=CFG, steps=STEPS, batch_size=BATCH, lr=LR, weight_decay=0.1,
                     schedule="1f1b", p=2, micro_batches=4), 2, timeout=60)
    assert max(max_diffs(r.losses, r.state_dict, r.grads, ref).values()) < 2e-6
    without = reference_train(CFG, STEPS, BATCH, LR)  # and the decay made a difference
    assert max_diffs(r.losses, r.state_dict, r.grads, without)["params"] > 1e-5


def test_stashed_activations_gpipe_vs_1f1b_and_checkpointing():
    runs = {(s, c): pp.run(PPRun(config=CFG, steps=1, batch_size=BATCH, schedule=s, p=2, micro_batches=4,
                                 checkpoint=c), 2, timeout=60)
            for s, c in [("gpipe", False), ("1f1b", False), ("1f1b", True)]}
    assert runs["gpipe", False].stash_peak == [4, 4]  # m micro-batches
    assert runs["1f1b", False].stash_peak == [2, 1]   # p - rank
    g, f, c = (runs[k].stash_peak_bytes[0] for k in [("gpipe", False), ("1f1b", False),
                                                     ("1f1b", True)])
    assert g == 2 * f  # same bytes per micro-batch on rank 0, 4 of them instead of 2
    # Checkpointing keeps, per micro-batch of 2 x 16 tokens: the input of each of the 2
    # blocks and the stage output (d_model=32 fp32), the token ids and positions (int64).
    act = 2 * 16 * 32 * 4
    assert c == 2 * (3 * act + 2 * 16 * 8 + 16 * 8)
    assert c < f / 5


@pytest.mark.timeout(120)
def test_emulated_mode_runs_the_schedule_with_real_messages():
    r = pp.run(PPRun(schedule="interleaved", p=2, micro_batches=4, v=2, batch_size=4, steps=1,
                     compute="emulated", t_fwd=0.004, t_bwd=0.008), 2, timeout=60)
    assert r.losses == [] and r.state_dict == {} and r.grads == {}
    assert r.stash_peak == [peak for peak in pp.simulate("interleaved", 2, 4, 2).peak_activations]
    sends = [e for e in r.events if e["name"].startswith("send")]
    assert len(sends) == 2 * 4 * (2 * 2 - 1)  # each boundary: one activation, one gradient
    assert {e["bytes_sent"] for e in sends} == {64 * 64 * 4}  # one sequence (batch = m)


# --- the peer: torch.distributed.pipelining on the same stages ------------------------------

@pytest.mark.timeout(120)
@pytest.mark.parametrize("schedule, p, m, v", [("gpipe", 2, 4, 1), ("1f1b", 2, 4, 1),
                                               ("interleaved", 2, 2, 2)])
def test_same_losses_as_torch_pipelining(ref, schedule, p, m, v):
    run = PPRun(config=CFG, steps=STEPS, batch_size=BATCH, lr=LR, schedule=schedule, p=p, micro_batches=m,
                v=v)
    theirs = pp.run(dataclasses.replace(run, peer="pipelining"), p, timeout=60)
    ours = pp.run(run, p, timeout=60)
    assert ours.losses == pytest.approx(theirs["losses"], abs=1e-6)
    assert max((ours.state_dict[k] - t).abs().max().item()
               for k, t in theirs["state_dict"].items()) < 1e-6
    assert sorted(theirs.grads) == sorted(ours.grads) and len(theirs.step_times) == STEPS


# --- notebook helpers ------------------------------------------------------------------------

def test_stage_table_and_schedule_text():
    rows = demos.stage_table(GPTConfig(n_layers=8), 2, v=2)
    assert [(r["rank"], r["chunk"], r["stage"], r["blocks"]) for r in rows] == [
        (0, 0, 0, "0..1"), (0, 1, 2, "4..5"), (1, 0, 1, "2..3"), (1, 1, 3, "6..7")]
    assert rows[0]["extras"] == "wte, wpe" and rows[-1]["extras"] == "ln_f, lm_head, loss"
    assert sum(r["params"] for r in rows) == sum(
        t.numel() for t in reference_train(GPTConfig(n_layers=8), 0, 1)["state_dict"].values())
    assert demos.schedule_text("1f1b", 2, 3) == ["rank 0: F0 F1 B0 F2 B1 B2",
                                                 "rank 1: F0 B0 F1 B1 F2 B2"]
    assert demos.schedule_tokens("interleaved", 2, 2, 2)[1][:4] == ["F0", "F1", "F0.1", "B0.1"]


def test_explore_simulates_at_once_and_reports_bad_choices():
    # an M the schedule cannot take draws the nearest one that it can, and says why
    res = demos.explore("interleaved", 4, 6, v=2)
    assert res["m"] == 4 and "sim" in res and "error" not in res
    assert "M=6 does not work here" in res["note"] and "micro_batches divisible by p" in res["note"]
    assert demos.explore("interleaved", 3, 8, v=2)["m"] == 9
    assert demos.explore("interleaved", 4, 8, v=2)["note"] == ""
    assert demos.micro_batch_choices("interleaved", 3, 2) == [3, 6, 9, 12, 15]
    assert demos.micro_batch_choices("1f1b", 3, 2) == list(range(1, 17))
    assert "must be one of" in demos.explore("nope", 2, 4)["error"]
    res = demos.explore("gpipe", 8, 16, v=3)  # v is ignored for non-interleaved schedules
    assert res["run"] is None and res["sim"].peak_activations == [16] * 8
    assert "formula 30.4%" in res["text"]  # 7 / 23


def test_interview_numbers():
    n = demos.interview([dict(p=4, m=8, schedule=s, measured=0.3) for s in ("gpipe", "1f1b")])
    assert (n["a"]["m50"], n["a"]["m20"]) == (3, 12)  # 3/6 = 50%, 3/15 = 20%
    assert (n["b"]["ratio"], round(n["b"]["fraction"], 4)) == (0.375, 0.2727)
    assert n["b"]["measured"] == {"gpipe": 0.3, "1f1b": 0.3}
    assert [q for q, share, _ in n["c"]["rows"] if share < 0.15] == [2, 3]
    assert n["d"][16] == (16, 4)
    assert all(share < 1 / (k + 1) for k, (_, share) in n["advice"].items())


def test_message_counts_and_op_times():
    r = pp.run(PPRun(config=CFG, batch_size=8, steps=2, schedule="interleaved", p=2, micro_batches=4, v=2),
               2, timeout=60)
    rows = demos.message_counts(r, step=1)
    assert [row["messages"] for row in rows] == [12, 12]  # 3 boundaries x 4 micro-batches x 2
    assert demos.schedule_messages("interleaved", 2, 4, 2) == 24  # read off the schedule
    assert demos.schedule_messages("1f1b", 2, 4) == 8 and demos.schedule_messages("1f1b", 1, 4) == 0
    assert rows[0]["bytes"] == 12 * 2 * 16 * 32 * 4
    assert set(demos.op_times(r)) == {"F", "B"}


def test_message_costs_read_back_what_the_simulator_charged():
    # a message's latency and a rank's pause between ops, recovered from a timeline
    for schedule, p, m, v in [("1f1b", 4, 8, 1), ("interleaved", 2, 12, 3), ("zb-h1", 4, 8, 1)]:
        t = pp.simulate(schedule, p, m, v, 1.0, 2.0, t_comm=0.3, t_gap=0.1)
        costs = demos.message_costs(t.events, p, v)
        assert costs == pytest.approx(dict(t_comm=0.3, t_gap=0.1))
        assert pp.simulate(schedule, p, m, v, 1.0, 2.0, **costs).bubble_fraction == pytest.approx(
            t.bubble_fraction)
    # interleaving pays the latency along a v times longer chain: 2.7% free, 10% at 0.3
    free, paid = (pp.simulate("interleaved", 2, 12, 3, t_comm=c).bubble_fraction for c in (0, 0.3))
    assert free == pytest.approx(cost.bubble_fraction(2, 12, 3))
    assert paid > 3 * free
    assert demos.message_costs([], 2) == dict(t_comm=0.0, t_gap=0.0)


# --- the executor takes data ------------------------------------------------------------

def _by_hand(m: int = 4):
    """GPipe on 2 ranks written out, not named: all forwards, then all backwards."""
    from parlab.pipeline_parallel import Action
    return [[Action("F", i, 0) for i in range(m)] + [Action("B", i, 0) for i in reversed(range(m))]
            for _ in range(2)]


@pytest.mark.timeout(120)
def test_the_executor_runs_lists_it_is_given():
    import parlab
    import workers_pp
    assert parlab.launch(workers_pp.executor_on_lists, 2, _by_hand()) == [(8, 4), (8, 4)]
    ours = pp.make_schedule("1f1b", 2, 4)  # a named schedule is only lists
    assert [peak for _, peak in parlab.launch(workers_pp.executor_on_lists, 2, ours)] == [2, 1]


@pytest.mark.timeout(120)
def test_the_executor_refuses_lists_that_cannot_run():
    import parlab
    import workers_pp
    lists = _by_hand()
    del lists[1][-1]  # rank 1 never runs micro-batch 0's backward
    with pytest.raises(parlab.LaunchError, match=r"rank 1: \[B0\] missing"):
        parlab.launch(workers_pp.executor_on_lists, 2, lists, timeout=60)
    deadlock = _by_hand()
    deadlock[1] = deadlock[1][4:] + deadlock[1][:4]  # rank 1 backward before any forward
    with pytest.raises(parlab.LaunchError, match="comes before|deadlocks"):
        parlab.launch(workers_pp.executor_on_lists, 2, deadlock, timeout=60)
