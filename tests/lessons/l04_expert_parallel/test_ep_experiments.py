"""Notebook 04's experiments (``lessons.l04_expert_parallel.experiments``): the skew knob
leaves ``reference_train`` unchanged at zero and skews when set, counted drops follow
``cost.expert_capacity``, traced all-to-all bytes add up to ``cost.moe_all_to_all_bytes``,
the busiest rank sets the emulated layer's time, and the figures and the widget build. Small runs: seconds."""

import pytest
import torch

from parlab.cost import expert_parallel as cost
from lessons.l04_expert_parallel import experiments as ex
from parlab.model import max_differences, reference_train

CFG = ex.moe_config(seq_len=16, d_model=32)


def test_train_routing_is_reference_train_without_tilt_and_skews_with_it():
    a, b = ex.train_routing(CFG, 3), reference_train(CFG, 3, ex.BATCH, lr=ex.LR)
    assert a["losses"] == b["losses"] and a["moe"] == b["moe"]
    routed = ex.train_routing(CFG, 1, tilt=1.0)["moe"][0]["blocks.0.moe"]["routed"]
    assert routed[0] > 2 * sum(routed) / len(routed)


def test_kept_mask_is_the_models_rule():
    cfg = ex.moe_config(seq_len=16, d_model=32, top_k=2, capacity_factor=1.0)
    s = reference_train(cfg, 1, ex.BATCH)["moe"][0]["blocks.0.moe"]
    assert s["capacity"] == cost.expert_capacity(ex.BATCH * 16, 4, 1.0, 2)
    assert sum(s["routed"]) - sum(s["kept"]) == len(s["dropped"]) > 0
    idx = torch.tensor([[0, 1], [0, 2], [0, 1]])
    assert (~ex.kept_mask(idx, 4, 2)).nonzero().tolist() == [[2, 0]]
    assert ex.kept_mask(idx, 4, None).all()


def test_step_load_counts_drops_from_counts():
    step = {"l": {"routed": [6, 1, 1, 0], "dropped": [(0, 0)] * 2}}
    assert ex.step_load(step)["drop_rate"] == 2 / 8
    assert ex.step_load(step, 1.0)["drop_rate"] == 4 / 8  # capacity 2: 6 -> 2
    assert ex.step_load(step)["max_over_mean"] == 3.0


def test_drop_sweep_small():
    rows = ex.drop_sweep(tilts=(1.0,), balancers=("none", "aux loss"), cfs=(1.0, 2.0), steps=3,
                         config=CFG)
    assert [r["balancer"] for r in rows] == ["none", "aux loss"]
    for r in rows:
        assert len(r["load"]) == 3 and len(r["measured"]) == 3
        assert r["drops"][1.0][0] >= r["drops"][2.0][0]
        s = ex.summarize(r, last=2)
        assert s["first"]["max_over_mean"] > 2


def test_simulate():
    s = ex.simulate(256, 4, 1, 1.0, 0.0, 2)
    assert sum(s["routed"]) == 256 and s["capacity"] == 64
    assert s["dropped"] == sum(max(0, r - 64) for r in s["routed"])
    skew = ex.simulate(256, 4, 1, 1.0, 2.0, 2)
    assert skew["drop_rate"] > s["drop_rate"] and skew["max_over_mean"] > s["max_over_mean"]
    assert ex.simulate(256, 4, 2, None, 0.0, 4)["dropped"] == 0
    with pytest.raises(ValueError):
        ex.simulate(256, 4, 1, 1.0, 0.0, 3)


def test_ep_run_counts_and_bytes():
    r = ex.ep_run(2, ex.SEEDS["skewed"], 1, CFG)
    d = max_differences(r, reference_train(CFG, 1, ex.BATCH, seed=ex.SEEDS["skewed"]))
    assert max(d.values()) < 1e-5
    table = ex.expert_table(r)
    routed = r.ranks[0]["routed"][0]["blocks.0.moe"]
    assert [n for row in table for n in row["experts"].values()] == routed
    rows = ex.a2a_check(r, CFG, ex.BATCH)
    assert all(x["measured"] == x["counted"] for x in rows)
    for layer in {x["layer"] for x in rows}:
        mine = [x for x in rows if x["layer"] == layer]
        assert sum(x["measured"] for x in mine) == pytest.approx(sum(x["formula"] for x in mine))
    assert sum(ex.rows_per_rank(r)) == sum(routed)


def test_busiest_rank_sets_the_layer_time():
    rows = ex.busiest([40, 5], row_s=1e-3, repeats=2)
    assert rows[0]["predicted_s"] == pytest.approx(0.04)
    assert all(r["layer_s"] >= 0.9 * 0.04 for r in rows)
    assert rows[1]["compute_s"] < rows[0]["compute_s"]


def test_predict_and_live():
    p = ex.predict(256, 4, 1, 1.25, 1.0, 2)
    assert p["compute_s"] >= p["balanced_compute_s"] > 0 and p["layer_s"] > p["compute_s"]
    assert "must divide" in ex.live(3)["error"]


def test_capacity_drops_make_prediction_and_measurement_comparable():
    # the rule needs only the counts per expert: 256 tokens, 4 experts, cf 1.25 -> C = 80
    assert ex.capacity_drops([124, 58, 57, 17], 1.25) == (124 - 80) / 256
    assert ex.capacity_drops([124, 58, 57, 17], None) == 0.0
    assert ex.capacity_drops([10, 10, 6, 6], 1.0, top_k=2) == 4 / 32  # 16 tokens x 2, C = 8
    for k in (1, 2):  # the widget's prediction obeys it, and so does a real run
        p = ex.predict(256, 4, k, 1.0, 1.5, 2)
        assert p["drop_rate"] == pytest.approx(ex.capacity_drops(p["routed"], 1.0, k))
    live = ex.live(2, 4, 2, 1.0, True, steps=2)
    assert live["drop_rate"] == pytest.approx(live["drop_rule"]) and live["drop_rate"] > 0


def test_interview_numbers():
    n = ex.interview()
    assert n["mixtral_params"]["total"] == pytest.approx(46.7e9, rel=0.01)
    assert n["mixtral_params"]["active"] == pytest.approx(12.9e9, rel=0.01)
    assert n["models"]["Mixtral 8x7B"]["n_experts"] == 8 < 64
    assert n["ep_vs_tp"]["ep8"] == pytest.approx(2 * n["ep_vs_tp"]["tp8_mlp_only"])


def test_figures_and_widget_build():
    pytest.importorskip("plotly")
    from lessons.l04_expert_parallel import figures as fg
    sweep = ex.drop_sweep(tilts=(0.0, 1.0), balancers=("none",), cfs=(1.0, 1.25), steps=2,
                          config=CFG)
    assert len(fg.balance_over_steps(sweep).data) == 4 and len(fg.drop_vs_capacity(sweep).data) == 2
    for t in (fg.balance_table(sweep), fg.routing_table({"skewed": [5, 1, 1, 1]}),
              fg.busiest_table([dict(rank=0, rows=2, compute_s=1e-3, layer_s=2e-3)]),
              fg.step_time_table([dict(ep=1, step_s=1.0, steps=2, speedup=1.0)]),
              fg.a2a_table({"s": [dict(rank=0, layer="blocks.0.moe", measured=2048, balanced=1024,
                                       sent_rows=3, recv_rows=4)]})):
        assert "<table" in t.data
    assert len(fg.expert_histogram([{"rank": 0, "experts": {0: 3, 1: 5}}], 4).data) == 1
    bus = [dict(rank=0, rows=2, compute_s=1.0, layer_s=2.0, predicted_s=2.0, balanced_s=1.5)]
    assert len(fg.busiest_figure(bus).data) == 2
    assert len(fg.step_time_bars([dict(ep=1, step_s=1.0, speedup=1.0)]).data) == 1
    a2a = [dict(rank=0, layer="blocks.0.moe", measured=1, formula=1, balanced=1)]
    assert len(fg.a2a_bars(a2a).data) == 3
    pytest.importorskip("ipywidgets")
    from lessons.l04_expert_parallel import widgets
    box = widgets.ep_explorer(run_now=False)
    assert "dropped" in box.children[-1].children[0].value
    cf = box.children[3].children[0]
    assert cf.label == "1.25" and ("no limit", None) in widgets.capacity_choices()
    cf.value = None  # no limit: the prediction says so and drops nothing
    assert "no limit" in box.children[-1].children[0].value
    assert "must divide" in widgets.live_html(ex.live(3))
