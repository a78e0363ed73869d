"""Notebook 06's experiments (``lessons.l06_3d_parallel.experiments``): the mesh data, a 3D run
equal to one device, the emulated sweep and its prediction from ``parlab.cost``, the
planner views, the interview numbers the notebook states, and the figures and the widget build. Small: this file runs in seconds."""

import pytest

from parlab import cost
from parlab.model import GPTConfig
from lessons.l06_3d_parallel import experiments as ex

CFG = GPTConfig(vocab_size=64, seq_len=8, d_model=32, n_heads=4, n_layers=4)
# a probe as comm_probe returns it: alpha 100 us per ring step, 1 GB/s, for every group size
PROBE = {"groups": {g: dict(alpha=1e-4, bandwidth=1e9, times={}) for g in (2, 4, 8)},
         "load": "load average 0.0 on 2 usable cores"}


def test_mesh_layout_and_factorizations():
    rows = ex.mesh_layout(2, 2, 2, gpus_per_node=4)
    assert [r["node"] for r in rows] == [0] * 4 + [1] * 4
    assert rows[5]["tp_group"] == [4, 5] and rows[5]["pp_group"] == [5, 7]
    assert rows[5]["dp_group"] == [1, 5]
    lays = ex.factorizations(8)
    assert len(lays) == 10 and all(d * p * t == 8 for d, p, t in lays)
    assert (2, 2, 2) in lays and (1, 1, 8) in lays
    assert (1, 1, 8) not in ex.factorizations(8, CFG, 32, 4)  # 4 heads: t = 8 cannot run


def test_reference_check_small():
    (r,) = ex.reference_check([(1, 2, 2)], CFG, steps=2, batch_size=4, micro_batches=2)
    assert max(r["loss"], r["grad"], r["param"]) < 1e-5
    assert [c["tp"] for c in r["coords"]] == [0, 1, 0, 1]


def test_prediction_is_the_cost_composition():
    ideal = (ex.T_FWD + ex.T_BWD) / 8
    flat = ex.predict_emulated(8, 1, 1, PROBE)
    assert flat["compute"] == pytest.approx(ideal) and flat["bubble"] == 0 and flat["tp_comm"] == 0
    pipe = ex.predict_emulated(1, 8, 1, PROBE)
    assert pipe["bubble"] == pytest.approx(cost.bubble_ratio(8, ex.MICRO) * ideal)
    assert pipe["dp_comm"] == 0 and pipe["p2p"] > 0
    tp8 = ex.predict_emulated(1, 1, 8, PROBE)
    c = cost.tp_comm_per_layer(32 // 4, 16, 64, 8, bytes_per_value=4)
    one = cost.collective_time("all_reduce", c["message_bytes"], 8, 1e-4, 1e9)
    assert tp8["tp_comm"] == pytest.approx(ex.MICRO * 8 * 4 * one)
    assert ex.stage_params(ex.SMALL, 2, 2) < ex.stage_params(ex.SMALL, 1, 1)


def test_spearman():
    assert ex.spearman([1, 2, 3], [10, 20, 30]) == pytest.approx(1.0)
    assert ex.spearman([1, 2, 3], [3, 2, 1]) == pytest.approx(-1.0)
    assert ex.spearman([1, 1, 2], [1, 1, 2]) == pytest.approx(1.0)


def test_comm_probe_and_sweep_small():
    probe = ex.comm_probe(4, sizes=(1024, 1 << 19), groups=(2, 4), repeats=2)
    assert set(probe["groups"]) == {2, 4}
    assert all(x["alpha"] >= 0 and x["bandwidth"] > 0 for x in probe["groups"].values())
    sw = ex.emulated_sweep([(2, 1, 1), (1, 2, 1)], probe, CFG, batch_size=8, micro_batches=2,
                           steps=2, t_fwd=0.04, t_bwd=0.08, world=2)
    assert [r["label"] for r in sw["rows"]] == ["2×1×1", "1×2×1"]
    assert all(r["measured"] >= sw["ideal"] * 0.9 and r["predicted"] > 0 for r in sw["rows"])
    assert -1 <= sw["spearman"] <= 1 and "load" in sw["load"]


def test_table1_and_plans():
    rows = ex.table1()
    assert len(rows) == 10 and rows[-1]["paper_tflops"] == 163
    assert max(abs(r["error"]) for r in rows) < 0.10
    val = ex.validation_rows()
    assert {r["in_sample"] for r in val} == {True, False} and len(val) > len(rows)
    v = ex.plan_view("13B", "A100-80GB", 8, 2, "IB-HDR", 512, 2048, top=5)
    assert v["n_gpus"] == 16 and len(v["ranked"]) == 5 and v["mesh"]
    assert all(r["ideal"] < r["step_s"] and r["band"][0] <= 1 for r in v["ranked"])
    assert "error" in ex.plan_view("13B", "no such GPU")


def test_interview_numbers():
    n = ex.interview()
    seed = n["a"]["seed"]
    assert seed["product"] == 32768 and seed["layers_per_stage"] == 1.5
    assert seed["estimate"].bubble_fraction > 0.5
    for g, v in n["a"]["table2"].items():
        assert abs(v["predicted"] / v["paper"] - 1) < 0.10, g
    pl = n["b"]["placement"]
    t8, t16 = pl["tp=8 pp=12"].tflops_per_gpu, pl["tp=16 pp=6"].tflops_per_gpu
    assert 0.75 * t8 < t16 < t8  # past a node: slower on the 8 cards, not a third
    assert n["b"]["one_card"].tflops_per_gpu < t8 / 2  # ... which one port would make it
    z = n["b"]["zero3"]
    assert z["deepspeed_band"][1] < 1 < z["band"][1]  # Table 2's DeepSpeed ZeRO-3 ran slower
    assert z["deepspeed"].step_time.total > z["best"].step_time  # a gather per matrix, waited on
    assert z["deepspeed_rank"] > z["rank"] and z["fsdp"]["gpus"] >= 8 and z["fsdp"]["rows"]
    assert n["c"]["order"]["13B on 16 A100"]["slower"] > 0.05
    assert all(v["rank"] for v in n["c"]["order"].values())
    d = n["d"]
    assert not d[1].fits and d[2].fits and d[2].bubble_fraction < d[24].bubble_fraction
    four = ex.four_d_example()
    e = four["estimate"]
    assert (e.tp, e.cp, e.pp, e.dp) == (8, 16, 16, 8) and four["rank_of_published"]
    assert abs(e.mfu / four["published"] - 1) < 0.25


@pytest.mark.usefixtures("english")  # the explorer's English words are read
def test_figures_and_widget_build():
    pytest.importorskip("plotly")
    from lessons.l06_3d_parallel import figures as fg
    assert len(fg.mesh_figure(ex.mesh_layout(2, 2, 2, 4), gpus_per_node=4).layout.shapes) == 16
    big = fg.mesh_figure(ex.mesh_layout(16, 12, 8))
    assert "shown" in big.layout.title.text
    assert len(fg.table1_figure(ex.table1()).data) == 2
    runs = ex.validation_rows()
    f = fg.validation_figure(runs)
    assert len(f.data) >= 3 and all(t.orientation == "h" for t in f.data)
    # every run named, level, on its panel's axis; the figure grows with the rows
    named = list(f.layout.yaxis.tickvals) + list(f.layout.yaxis2.tickvals)
    assert sorted(named) == sorted(r["name"] for r in runs)
    assert f.layout.height >= 16 * len(runs)
    assert f.layout.margin.l >= 6 * max(len(r["name"]) for r in runs)
    # weak scaling: a published and a predicted line per sweep, each from its first
    # whole-model scale at 0% (the 405B's from 576 GPUs, not its cut 32-GPU run)
    from parlab import planner
    ws = planner.weak_scaling()
    f = fg.weak_scaling_figure(ws)
    assert len(f.data) == 2 * len(ws) and all(t.y[0] == 0 for t in f.data)
    big = [t for t in f.data if t.name == "Llama 3.1 405B"]
    assert big and all(t.x[0] in (576, 512, 128) for t in big)  # 128: GB200's NVL72 racks
    assert sum(t.x[0] == 576 for t in big) == 8  # 24.11.1 and 25.02, two precisions, two lines
    assert {t.line.dash for t in f.data} == {"solid", "dash"}
    shown = [t.name for t in f.data if t.showlegend]  # one legend entry a model
    assert sorted(shown) == sorted({s["model"] for s in ws})
    assert {t.marker.symbol for t in f.data} == {"circle", "diamond"}  # GB200's diamonds
    line = fg.weak_scaling_line(ws)
    assert f"{len(ws)} sweeps" in line and "2,304 GPUs" in line and "-0.0%" not in line
    flat = [dict(s, growth={"published": 0.1, "predicted": -0.0001}) for s in ws]
    assert "+10.0% to +10.0% as published, +0.0% to +0.0% as predicted" in fg.weak_scaling_line(flat)
    two = [dict(model="M", n_gpus=8, dtype="fp8", spread=x) for x in (0.10, 0.02)]
    assert fg.release_spread_line(two, 0.066) == (
        "one configuration in several of NVIDIA's releases (2 such): its step moves 6.0% "
        "(median), 10.0% at most (M, 8 GPUs, FP8); the planner's median |error| out of "
        "sample is 6.6%")
    rows = [dict(dp=1, pp=2, tp=1, label="1×2×1", measured=0.1, median=0.11, predicted=0.09)]
    assert len(fg.sweep_figure(dict(rows=rows, ideal=0.05, spearman=1.0)).data) == 3
    v = ex.plan_view("7B", nodes=1, global_batch=256, top=3)
    f = fg.breakdown_figure(v["ranked"])
    assert len(f.data) == 4  # the step vs #1 with its range, and three parts
    assert f.data[0].y[0] == 0 and all(y >= 0 for y in f.data[0].y)  # relative to the best
    runs = ex.validation_rows()
    for t in (fg.validation_table(runs), fg.zero3_table(runs), fg.misses_note(runs),
              fg.layouts_table([dict(layout="dp2 cp2 tp2", loss=1e-7, grad=1e-7, param=1e-7)]),
              fg.probe_table(dict(groups={2: dict(alpha=1e-4, bandwidth=1e9, fitted=True)})),
              fg.sweep_table(dict(ideal=0.075, rows=[dict(label="1×2×4", measured=0.1, median=0.11,
                  predicted=0.09, parts=dict(compute=0.08, bubble=0.01, tp_comm=0.0, p2p=0.0,
                                             dp_comm=0.0))]))):
        assert "<" in t.data
    assert len(fg.memory_figure(v["ranked"]).data) >= 3
    pytest.importorskip("ipywidgets")
    from lessons.l06_3d_parallel import widgets
    box = widgets.planner_explorer(model="7B", nodes=1, global_batch=256)
    assert "layouts fit" in box.children[-2].value
    assert "color:#C62828" in widgets.ranked_html({"error": "bad"})


def test_mt_nlg_and_palm_differ_by_convention_only():
    # MT-NLG's own 126 TFLOP/s (hardware FLOPs, full recomputation counted) and PaLM's
    # Table 3 MFU for the same run: taking out the repeated forward closes the gap
    x = ex.two_sources_example()
    assert x["gpus"] == 2240 and x["tflops"] == 126
    assert abs(x["hfu"] - x["palm"]) > 0.09          # 40% against 30.2%: far apart as printed
    assert x["model_share"] == pytest.approx(0.75, abs=0.005)  # 6 of 8 passes (Narayanan §5.1)
    assert abs(x["converted"] - x["palm"]) < 0.005   # and together once counted alike
