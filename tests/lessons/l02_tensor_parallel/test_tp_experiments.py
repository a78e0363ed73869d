"""Notebook 02's experiments (``lessons.l02_tensor_parallel.experiments``): what they count and
measure agrees with ``parlab.cost``, the interview numbers are the ones the notebook
states, and the figures and the widget build. Small models, one or two steps: this file runs in seconds."""

import math

import pytest

from parlab import cost
from parlab import tensor_parallel as tp
from parlab.model import GPTConfig
from parlab.tensor_parallel import TPRun
from lessons.l02_tensor_parallel import experiments as ex

CFG = GPTConfig(vocab_size=64, seq_len=16, d_model=32, n_heads=4, n_layers=2)
BATCH = 2


@pytest.fixture(scope="module")
def traced():
    return tp.run(TPRun(config=CFG, steps=2, batch_size=BATCH, trace=True), 2)


@pytest.fixture(scope="module")
def sweep():
    return ex.comm_sweep(CFG, (2,), BATCH)


def test_block_of():
    assert ex.block_of("blocks.1.mlp.fc2") == "blocks.1"
    assert [ex.block_of(x) for x in ("wte", "lm_head", "all", None)] == ["wte", "lm_head", "all", ""]


def test_comm_counted_equals_formula(sweep):
    for row in sweep:
        assert row["match"], row
        m = row["measured"]
        assert m["collectives"] == cost.tp_comm_per_layer(1, 2, 1, 2, row["sequence_parallel"])[
            "collectives"]
    plain, sp = sweep
    assert plain["measured"]["forward"] == {"all_reduce": 2} == plain["measured"]["backward"]
    # SP: the same bytes as the all-reduces, plus the re-gather of the saved shard
    assert sp["measured"]["bytes"] == plain["measured"]["bytes"] + sp["formula"]["regather_bytes"]
    # outside the blocks: the embedding's g, lm_head's f and the loss's three tiny all-reduces
    ops = sorted(o["operator"] for o in plain["outside"])
    assert ops == ["ce_max", "ce_sum_exp", "ce_target", "f", "g"]
    assert {o["bytes"] for o in plain["outside"] if o["operator"].startswith("ce_")} == {
        BATCH * CFG.seq_len * 4}  # one fp32 number per token, ring all-reduce on 2 ranks


def test_layer_sequence_and_step_events(traced):
    seq = ex.layer_sequence(traced, "blocks.0")
    assert [(c["direction"], c["operator"]) for c in seq] == [
        ("forward", "g"), ("forward", "g"), ("backward", "f"), ("backward", "f")]
    events = ex.step_events(traced, 1)
    assert {e["rank"] for e in events} == {0, 1}
    names = {e["name"] for e in events if e["kind"] != "comm"}
    assert {"forward", "backward", "optimizer"} <= names
    assert sum(e["kind"] == "comm" and e["rank"] == 0 for e in events) == len(
        ex.collectives(traced, 0, 1))


def test_activations_measured_equal_formula():
    rows = ex.activation_rows(CFG, BATCH, tps=(1, 2))
    assert len(rows) == 2 + 4
    for r in rows:
        assert r["ranks_equal"] and r["measured"] == r["formula"], r
        assert r["korthikanti"] > r["no_dropout"]
    by = {(r["tp"], r["sequence_parallel"], r["recompute"]): r["measured"] for r in rows}
    assert by[2, True, "none"] < by[2, False, "none"] < by[1, False, "none"]
    assert by[2, False, "selective"] < by[2, False, "none"]


def test_korthikanti_rows_at_gpt3_scale():
    rows = ex.korthikanti_rows()
    assert rows[0]["bytes"] == 2048 * 12288 * (34 + 5 * 96 * 2048 / 12288)
    assert len(rows) == 6


def test_throughput_and_overlap_run_and_report():
    rows = ex.throughput(CFG, tps=(1, 2), batch_size=BATCH, steps=2, repeats=1)
    assert [r["tp"] for r in rows] == [1, 2] and rows[0]["speedup"] == 1.0
    assert all(r["tokens_per_s"] > 0 and r["steps"] == 1 for r in rows)
    o = ex.overlap(CFG, tp=2, batch_size=BATCH, steps=2, repeats=1)
    assert o["off_s"] > 0 and o["on_s"] > 0 and math.isfinite(o["gain"]) and "load" in o["load"]
    assert "cores" in ex.cpu_caveat()


def test_gpu_scale_crosses_the_node_boundary():
    rows = ex.gpu_scale("GPT-3 175B", "A100 (NVLink3, IB-HDR)", (1, 2, 4, 8, 16, 32))
    assert [r["tp"] for r in rows] == [1, 2, 4, 8, 16, 32]
    assert [r["link_name"] for r in rows] == ["NVLink3"] * 4 + ["IB-HDR"] * 2
    assert rows[0]["comm_fraction"] == 0 and rows[0]["mfu"] == pytest.approx(0.5)
    # past a node the ring runs over the node's 8 cards (one per rail), not one port: MFU
    # falls, but not by half
    assert rows[3]["mfu"] / 2 < rows[4]["mfu"] < rows[3]["mfu"]
    assert [r["tp"] for r in ex.gpu_scale("13B", tps=(1, 4, 8, 16))] == [1, 4, 8]  # 40 heads


def test_interview_numbers(sweep):
    n = ex.interview(comm=sweep)
    assert n["a"]["measured"]["forward"] == n["a"]["formula"]["forward"] == {"all_reduce": 2}
    assert n["b"]["params"] == 12 * 12288 ** 2 == 1_811_939_328
    assert n["b"]["param_bytes"] == 3_623_878_656
    assert n["b"]["activations"] == pytest.approx(2_868_903_936)
    assert n["c"] == {"forward": 2, "backward": 2}
    assert n["d"] == {"per_direction": 300.0, "total": 600.0, "links": 12.0}
    e = n["e"]
    assert e["message"] == 50_331_648 == 48 * 2 ** 20
    assert e["forward_bytes"] == 176_160_768 and e["step_bytes"] == 352_321_536
    assert n["f"]["gpt3_tp8"][1] == pytest.approx(n["f"]["gpt3_tp8"][0] * 1.25)
    g = n["g"]
    assert 0 < g["best_gain"] < g["comm_fraction"]
    # hiding all the communication removes the comm share c: 1 / (1 - c) - 1 > c
    assert g["full_gain"] == pytest.approx(1 / (1 - g["comm_fraction"]) - 1)
    assert g["full_gain"] > 2 * g["best_gain"] > 0
    assert n["h"][16]["mfu"] < n["h"][8]["mfu"] and n["h"][16]["link_name"] == "IB-HDR"
    i = n["i"]["rows"]
    assert i[8]["comm_fraction"] > i[4]["comm_fraction"] > 0
    assert n["i"]["comm_bytes"][8] / n["i"]["comm_bytes"][4] == pytest.approx((7 / 8) / (3 / 4))


def test_live_reports_bad_choices_and_measures():
    assert "must divide" in ex.live(3, False, 32, 64)["error"]
    assert "seq_len" in ex.live(4, True, 30, 64)["error"]
    r = ex.live(2, True, 16, 32, steps=2)
    assert r["block"]["bytes"] == r["formula"]["bytes"]
    assert set(r["activations"]) == {r["activation_formula"]}


def test_peer_check_small():
    pytest.importorskip("torch.distributed.tensor.parallel")
    (row,) = ex.peer_check([(2, False)], CFG, steps=2, batch_size=BATCH)
    assert row["loss"] < 1e-5 and row["params"] < 1e-5


def test_figures_build(traced, sweep):
    pytest.importorskip("plotly")
    from lessons.l02_tensor_parallel import figures as fg
    assert len(fg.fg_diagram(False, 2).layout.shapes) == 2 + 4 + 2
    assert len(fg.fg_diagram(True, 4).layout.shapes) == 4 * 4 + 2
    assert len(fg.step_timeline(ex.step_events(traced, 1), "step").data) > 0
    assert len(fg.comm_bars(sweep).data) == 3
    rows = [dict(tp=1, sequence_parallel=False, recompute="none", measured=1, formula=1,
                 korthikanti=2)]
    assert len(fg.activation_bars(rows).data) == 3
    assert len(fg.throughput_figure([dict(tp=1, tokens_per_s=5.0, speedup=1.0)]).data) == 1
    curves = {p: ex.gpu_scale("GPT-3 175B", p, (1, 8, 16)) for p in ex.PLATFORMS}
    assert len(fg.gpu_scale_figure(curves).data) == 2 * len(ex.PLATFORMS)


def test_tables_build(traced, sweep):
    pytest.importorskip("IPython")
    from lessons.l02_tensor_parallel import figures as fg
    seq = ex.layer_sequence(traced, "blocks.0")
    assert fg.collectives_table(seq).data.count("<tr>") == 1 + len(seq)
    assert "KiB" in fg.collectives_table(seq).data
    assert "times" in fg.outside_table(ex.comm_table(CFG, 2, result=traced)["outside"]).data
    assert "KiB (formula)" in fg.comm_count_table(sweep).data
    acts = [dict(tp=2, sequence_parallel=True, recompute="none", measured=10, formula=10.0,
                 korthikanti=12.0, no_dropout=11.0)]
    assert "Korthikanti, no dropout" in fg.activation_table(acts).data
    assert " GB<" in fg.korthikanti_table(ex.korthikanti_rows("GPT-3 175B", 1, 8)).data
    thr = [dict(tp=1, step_s=0.0123, steps=4, tokens_per_s=1000.0, speedup=1.0)]
    assert "12.3 ms" in fg.throughput_table(thr).data
    assert "45 ms" in fg.cpu_work_table([dict(tp=1, cpu_s=0.045, ratio=1.0)]).data
    curves = {p: ex.gpu_scale("GPT-3 175B", p, (8, 16)) for p in ex.PLATFORMS}
    assert fg.gpu_scale_table(curves).data.count("<tr>") == 1 + 2 * len(ex.PLATFORMS)


def test_widgets_build():
    pytest.importorskip("ipywidgets")
    from lessons.l02_tensor_parallel import widgets
    box = widgets.tp_explorer(run_now=False)
    assert box is not None and "MFU" in box.children[-1].children[1].value
    # the predicted times each sit on a line of their own, in a unit that keeps them short,
    # and no value wraps ("7041 ms / 81 ms" broke in two in a narrow column)
    row = ex.gpu_scale("GPT-3 175B", "A100 (NVLink3, IB-HDR)", (8,))[0]
    html = widgets.gpu_html(row, "GPT-3 175B", "A100")
    assert " / " not in html and " s</b>" in html and " ms</b>" in html
    assert html.count("white-space:nowrap") == html.count("<tr>")
    assert box.children[-1].layout.flex_flow == "row wrap"
    assert "must divide" in widgets.live_html(ex.live(3, False, 32, 64))
    html = widgets.live_html(ex.live(2, False, 16, 32, steps=2))
    assert "all-reduce" in html and "tokens/s" in html
