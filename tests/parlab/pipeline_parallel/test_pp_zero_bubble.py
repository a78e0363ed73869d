"""Past ZB-H1: ZB-H2, ZB-V and DualPipe as data (schedules_zb.py, placement.py), their
bubble and peak activations against the papers, ZB-H2 and ZB-V on real ranks against
the single device, interleaving's activation factor, and the planted bugs that the
schedule check and the equivalence test must catch."""

import pytest
import workers_pp_zb

from parlab import cost, launch
from parlab import pipeline_parallel as pp
from parlab.launch import LaunchError
from parlab.model import GPT, GPTConfig, max_differences, reference_train
from parlab.pipeline_parallel import Action, PPRun
from lessons.l03_pipeline_parallel import experiments as demos

CFG = GPTConfig(n_layers=4, d_model=32, n_heads=4, seq_len=16)
CFG8 = GPTConfig(n_layers=8, d_model=32, n_heads=4, seq_len=16)  # ZB-V on 4 ranks: 8 stages
STEPS, BATCH, LR = 3, 8, 1e-3
EQUAL = {"F": 1.0, "B": 1.0, "W": 1.0}  # the papers' T_F = T_B = T_W
GRID = [(p, m) for p in (1, 2, 3, 4, 6, 8) for m in (1, 2, 3, 4, 8, 16, 24)]


@pytest.fixture(scope="module")
def refs():
    return {c: reference_train(c, STEPS, BATCH, LR) for c in (CFG, CFG8)}


# --- schedules as data ------------------------------------------------------------------

@pytest.mark.parametrize("schedule, v", [("zb-h2", 1), ("zb-v", 2), ("dualpipe", 2)])
def test_each_op_once_in_an_order_that_runs(schedule, v):
    for p, m in GRID:
        if schedule == "dualpipe" and (m % 2 or p % 2):
            continue
        acts = pp.make_schedule(schedule, p, m, v)  # make_schedule checks them itself
        pp.check_actions(acts, pp.placement_of(schedule, p, v, m))
        assert sum(map(len, acts)) == 3 * m * (p * v if schedule == "zb-v" else p)
        pp.replay(acts, p, v, {"F": 1.0, "B": 1.3, "W": 0.4},
                  where=pp.placement_of(schedule, p, v, m))


def test_bad_input_names_the_rule():
    for kwargs, words in [(dict(schedule="zb-v", p=2, micro_batches=4), "exactly v=2"),
                          (dict(schedule="zb-h2", p=2, micro_batches=4, v=2), "only exist for"),
                          (dict(schedule="dualpipe", p=2, micro_batches=3, v=2, batch_size=6),
                           "must be even"),
                          (dict(schedule="dualpipe", p=3, micro_batches=4, v=2), "p=3 must be"),
                          (dict(schedule="zb-v", p=4, micro_batches=8, v=2), "n_layers=4")]:
        with pytest.raises(ValueError, match=words):
            PPRun(**dict(dict(config=CFG), **kwargs)).check(kwargs["p"])
    with pytest.raises(ValueError, match="placement='w'"):
        pp.Placement("w", 2)


def test_planted_schedule_bugs_are_refused_before_any_process():
    good, where = pp.make_schedule("zb-h2", 4, 8), pp.placement_of("zb-h2", 4, 1, 8)
    dropped = [list(a) for a in good]
    dropped[1].remove(Action("W", 3, 0))  # a W lost: its activations would stay forever
    with pytest.raises(ValueError, match=r"rank 1: \[W3\] missing"):
        pp.check_actions(dropped, where)
    early = [list(a) for a in good]
    i = early[2].index(Action("W", 0, 0))
    early[2].insert(early[2].index(Action("B", 0, 0)), early[2].pop(i))  # W before its B
    with pytest.raises(ValueError, match="rank 2: W0 comes before B0"):
        pp.check_actions(early, where)
    cycle = [list(a) for a in good]  # rank 1 waits at B0 for rank 2, which waits for its F1
    cycle[1].remove(Action("B", 0, 0))
    cycle[1].insert(1, Action("B", 0, 0))
    with pytest.raises(ValueError, match="deadlocks"):
        pp.check_actions(cycle, where)
    pp.check_actions(good, where)


# --- ZB-H2: the paper's bubble and memory --------------------------------------------------

@pytest.mark.parametrize("p, m", [(p, m) for p, m in GRID if m >= 2 * p - 1])
def test_zb_h2_idles_as_qi_et_al_count(p, m):
    # Qi et al. §2.3 Table 2: zero bubble per rank at T_F = T_B = T_W; (p-1)(T_F + T_B - 2 T_W) otherwise
    for durations in (EQUAL, {"F": 1.0, "B": 1.0, "W": 0.5}, {"F": 1.0, "B": 1.5, "W": 0.25}):
        t_f, t_b, t_w = (durations[k] for k in "FBW")
        for schedule in ("1f1b", "zb-h1", "zb-h2"):
            d = durations if schedule != "1f1b" else {"F": t_f, "B": t_b + t_w}
            sim = pp.simulate(schedule, p, m, durations=d)
            want = cost.split_backward_bubble(schedule, p, t_f, t_b, t_w)
            if schedule != "zb-h1" or durations is EQUAL:  # ZB-H1's W's are placed for T_B = T_W
                assert max(sim.rank_idle) == pytest.approx(want, abs=1e-9), (schedule, durations)
    assert cost.split_backward_bubble("zb-h2", p) == 0.0


@pytest.mark.parametrize("p, m", GRID)
def test_zb_h2_holds_2p_minus_1_micro_batches(p, m):
    sim = pp.simulate("zb-h2", p, m)
    assert sim.peak_activations == [cost.pipeline_peak_activations("zb-h2", p, m, r)
                                    for r in range(p)] == [min(m, 2 * p - 1)] * p
    assert pp.simulate("zb-h1", p, m).peak_activations == [
        cost.pipeline_peak_activations("zb-h1", p, m, r) for r in range(p)]


# --- ZB-V: the V placement, zero bubble at 1F1B's memory, twice the messages -------------

def test_zb_v_placement_is_a_v():
    where = pp.placement_of("zb-v", 4, 2, 8)
    assert [where.stage(r, c) for r in range(4) for c in (0, 1)] == [0, 7, 1, 6, 2, 5, 3, 4]
    assert [where.holder(s) for s in range(8)] == [(0, 0), (1, 0), (2, 0), (3, 0), (3, 1),
                                                   (2, 1), (1, 1), (0, 1)]
    dual = pp.placement_of("dualpipe", 4, 2, 8)
    assert [dual.holder(0, mb) for mb in (0, 3, 4, 7)] == [(0, 0)] * 2 + [(3, 1)] * 2


@pytest.mark.parametrize("p, m", [(p, m) for p, m in GRID if m >= 2 * p - 1])
def test_zb_v_zero_bubble_at_1f1b_memory(p, m):
    sim = pp.simulate("zb-v", p, m, 2, durations=EQUAL)
    assert max(sim.rank_idle) == pytest.approx(0.0, abs=1e-9)
    # 2p chunk activations, each half a rank's layers: 1F1B's p micro-batches on rank 0
    assert sim.peak_activations == [2 * p] * p
    assert max(sim.peak_activations) / 2 == cost.pipeline_peak_activations("1f1b", p, m, 0)
    if p > 1:  # the V's turn stays on rank p-1; every other boundary is a message, twice 1F1B's
        assert demos.schedule_messages("zb-v", p, m, 2) == 2 * demos.schedule_messages("1f1b", p, m)


# --- DualPipe: both directions, simulated (and on real ranks below) ---------------------------

@pytest.mark.parametrize("p, m", [(2, 4), (4, 8), (4, 16), (6, 12), (6, 24), (8, 16)])
def test_dualpipe_against_deepseek_table_2(p, m):
    sim = pp.simulate("dualpipe", p, m, 2, durations=EQUAL)
    assert max(sim.peak_activations) <= p + 1  # Table 2: p + 1 activations per rank
    # Table 2's B is the full backward (2 units), F&B = F + B = 3 when nothing overlaps
    formula = cost.dualpipe_bubble(p, t_fb=3.0, t_b=2.0, t_w=1.0)
    assert formula == p - 2
    # the same table's ZB1P row is Qi et al.'s ZB-H1 (p-1)(T_F + T_B - T_W), B input-only
    zb1p = (p - 1) * (1.0 + 2.0 - 2 * 1.0)
    assert zb1p == cost.split_backward_bubble("zb-h1", p) == max(
        pp.simulate("zb-h1", p, m, durations=EQUAL).rank_idle)
    # our order, played at unit times, idles less than the formula prices DeepSeek's
    assert max(sim.rank_idle) == {2: 0.0, 4: 0.0, 6: 0.0, 8: 2.0}[p] <= formula


# --- interleaving's activations: 1 + (p-1)/(p v) of 1F1B's ----------------------------------

@pytest.mark.parametrize("p, v", [(2, 2), (4, 2), (4, 4), (8, 2), (8, 3)])
def test_interleaved_memory_factor(p, v):
    m = 2 * p  # enough micro-batches for the whole warm-up
    sim = pp.simulate("interleaved", p, m, v)
    held = sim.peak_activations[0] / v  # chunks of 1/v of the rank's layers
    assert held / cost.pipeline_peak_activations("1f1b", p, m, 0) == pytest.approx(
        cost.interleaved_memory_factor(p, v))
    assert held == pytest.approx(cost.interleaved_peak_activations(p, m, v))


# --- on real ranks: equal to one device --------------------------------------------------------

@pytest.mark.timeout(180)
def test_zb_h2_zb_v_and_dualpipe_match_the_reference(refs):
    for schedule, p, m, v, config in [("zb-h2", 2, 4, 1, CFG), ("zb-h2", 4, 8, 1, CFG),
                                      ("zb-v", 2, 4, 2, CFG), ("zb-v", 4, 8, 2, CFG8),
                                      ("dualpipe", 2, 4, 2, CFG), ("dualpipe", 4, 8, 2, CFG)]:
        r = pp.run(PPRun(config=config, steps=STEPS, batch_size=BATCH, lr=LR, schedule=schedule,
                         p=p, micro_batches=m, v=v), p, timeout=60)
        d = max_differences(r, refs[config])
        assert max(d.values()) < 2e-6, (schedule, p, d)
        assert r.stash_peak == pp.simulate(schedule, p, m, v).peak_activations
        # DualPipe: each rank holds its stage of both directions, twice the weights in all
        twice = 2 if schedule == "dualpipe" else 1
        assert sum(mem["params"] for mem in r.memory) == twice * GPT(config).num_params() * 4
        for rank, actions in enumerate(pp.make_schedule(schedule, p, m, v)):  # the schedule's order
            ops = sorted((e for e in r.events if e["rank"] == rank and e["name"] in "FBW"
                          and e["meta"]["step"] == 0), key=lambda e: e["start"])
            assert [(e["name"], e["meta"]["mb"], e["meta"]["chunk"]) for e in ops] == \
                [tuple(a) for a in actions]


@pytest.mark.timeout(180)
def test_planted_executor_bugs_are_caught(refs):
    run = PPRun(config=CFG, steps=STEPS, batch_size=BATCH, lr=LR, schedule="zb-h2", p=2,
                micro_batches=4)
    # one W computes nothing: the equivalence check must see micro-batch 0's share missing
    wrong = pp.collect(run, launch(workers_pp_zb.planted, 2, run, "w_skipped", timeout=60))
    assert max_differences(wrong, refs[CFG])["grad"] > 1e-4
    # one W dropped from the list: the executor refuses to end a step with activations held
    with pytest.raises(LaunchError, match="activations left over"):
        launch(workers_pp_zb.planted, 2, run, "w_dropped", timeout=60)
    # DualPipe's two copies of each stage not summed: each steps on half the gradient
    dual = PPRun(config=CFG, steps=STEPS, batch_size=BATCH, lr=LR, schedule="dualpipe", p=2,
                 micro_batches=4, v=2)
    apart = pp.collect(dual, launch(workers_pp_zb.planted, 2, dual, "twins_apart", timeout=60))
    assert max_differences(apart, refs[CFG])["grad"] > 1e-4


@pytest.mark.timeout(120)
def test_dualpipe_runs_emulated_with_real_messages():
    r = pp.run(PPRun(schedule="dualpipe", p=2, micro_batches=4, v=2, batch_size=4, steps=1,
                     compute="emulated", t_fwd=0.004, t_bwd=0.008), 2, timeout=60)
    assert r.stash_peak == pp.simulate("dualpipe", 2, 4, 2).peak_activations
    sends = [e for e in r.events if e["name"].startswith("send")]
    assert len(sends) == demos.schedule_messages("dualpipe", 2, 4, 2) == 2 * 4 * 1



# --- uneven first and last stages -------------------------------------------------------------

def test_uneven_first_and_last_stages_are_cut_and_checked():
    assert [len(r) for r in pp.split_layers(8, 4, first=1, last=1)] == [1, 3, 3, 1]
    assert [len(r) for r in pp.split_layers(8, 4, last=0)] == [3, 3, 2, 0]
    first, *_, last = [st for r in range(4) for st in pp.gpt_stages(GPT(CFG8), 4, r, first=1,
                                                                     last=1)]
    assert first.names == ["embed", "blocks.0"] and last.names == ["blocks.7", "head"]
    for kwargs, words in [(dict(first_stage_layers=-1), "first_stage_layers=-1"),
                          (dict(last_stage_layers=2.0), "last_stage_layers=2.0"),
                          (dict(first_stage_layers=4, last_stage_layers=3), "each needs one"),
                          (dict(first_stage_layers=1, compute="emulated"), "compute='real'")]:
        with pytest.raises(ValueError, match=words):
            PPRun(**dict(dict(config=CFG8, p=4, micro_batches=4), **kwargs)).check(4)
    with pytest.raises(ValueError, match="must equal n_layers=4"):
        PPRun(config=CFG, p=2, micro_batches=4, first_stage_layers=1, last_stage_layers=1).check(2)


@pytest.mark.timeout(180)
def test_uneven_stages_match_the_reference(refs):
    for schedule, p, m, v, config, first, last in [("1f1b", 4, 8, 1, CFG8, 1, 1),
                                                   ("interleaved", 2, 4, 2, CFG8, 1, 2),
                                                   ("zb-h2", 2, 4, 1, CFG, 0, 4)]:
        r = pp.run(PPRun(config=config, steps=STEPS, batch_size=BATCH, lr=LR, schedule=schedule,
                         p=p, micro_batches=m, v=v, first_stage_layers=first,
                         last_stage_layers=last), p, timeout=60)
        d = max_differences(r, refs[config])
        assert max(d.values()) < 2e-6, (schedule, first, last, d)


# --- notebook 03's section: rows, tables, the exercise -------------------------------------------

def test_schedule_family_rows_agree_with_their_papers():
    from lessons.l03_pipeline_parallel import exercises as ex
    from lessons.l03_pipeline_parallel import experiments_zb, figures
    rows = {r["schedule"]: r for r in experiments_zb.schedule_family(4, 8)}
    assert list(rows) == list(experiments_zb.FAMILY)
    assert all(r["idle"] == pytest.approx(r["idle_paper"]) and r["peak"] == r["peak_paper"]
               for s, r in rows.items() if s != "dualpipe")
    assert (rows["dualpipe"]["idle"], rows["dualpipe"]["idle_paper"]) == (0.0, 2.0)  # below it
    assert [rows[s]["idle"] for s in ("1f1b", "zb-h1", "zb-h2")] == [9.0, 3.0, 0.0]
    assert rows["zb-h2"]["step"] == pytest.approx(rows["zb-h1"]["step"])  # the corners stay
    assert rows["zb-v"]["messages"] == 2 * rows["1f1b"]["messages"]
    mem = experiments_zb.interleaved_memory(measured={(2, 2): 5})
    assert all(r["factor"] == pytest.approx(r["formula"]) for r in mem)
    assert mem[0]["measured"] == 1.25 and mem[1]["measured"] is None
    for html in (figures.schedule_family_table(list(rows.values()), 4, 8),
                 figures.interleaved_memory_table(mem)):
        assert "<table" in html.data
    assert ex.check_zb_h2_peak(15)["ok"] and not ex.check_zb_h2_peak(8)["ok"]
