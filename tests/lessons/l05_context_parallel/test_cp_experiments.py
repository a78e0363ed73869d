"""Notebook 05's experiments (``lessons.l05_context_parallel.experiments``): what they count and
measure agrees with ``parlab.cost``, the memory probe counts what it says, and the figures and the widget build. Small shapes,
one or two steps: this file runs in seconds."""

import math

import pytest
import torch

from parlab import cost
from lessons.l05_context_parallel import experiments as ex
from parlab.model import GPTConfig

CFG = GPTConfig(vocab_size=64, seq_len=16, d_model=32, n_heads=4, n_layers=2)
BATCH = 2
CASES = ((2, "ring", "contiguous"), (2, "ring", "zigzag"), (2, "ulysses", "zigzag"),
         (4, "ring", "contiguous"), (4, "ring", "zigzag"))


@pytest.fixture(scope="module")
def runs():
    return ex.sweep(CASES, CFG, steps=2, batch_size=BATCH)


def test_work_grid_owns_every_causal_cell_once():
    for layout in ("contiguous", "zigzag"):
        grid = ex.work_grid(4, layout)
        assert len(grid) == 8 and all(grid[i][j] is None for i in range(8) for j in range(i + 1, 8))
        assert sorted(row[0] for row in grid) == [0, 0, 1, 1, 2, 2, 3, 3]  # 2 chunks per rank
    assert [row[0] for row in ex.work_grid(2, "zigzag")] == [0, 1, 1, 0]


def test_balance_counted_equals_formula(runs):
    rows = {(r["cp"], r["layout"]): r for r in ex.balance_rows(runs, CFG)}
    assert set(rows) == {(2, "contiguous"), (2, "zigzag"), (4, "contiguous"), (4, "zigzag")}
    assert all(r["match"] for r in rows.values())
    assert rows[4, "contiguous"]["counted"] == [1, 2, 3, 4]
    assert rows[4, "contiguous"]["imbalance"] == pytest.approx(1.6)
    assert rows[4, "zigzag"]["counted"] == [2.5] * 4 and rows[4, "zigzag"]["imbalance"] == 1


def test_bytes_counted_equal_formula(runs):
    meg = {2: dict(measured=dict(bytes=cost.cp_comm_per_layer(BATCH, 16, 32, 2, "megatron_sp", 4)[
        "bytes"], collectives=10))}
    rows = ex.bytes_rows(runs, CFG, BATCH, megatron=meg)
    assert [(r["cp"], r["method"]) for r in rows] == [(2, "megatron_sp"), (2, "ring"), (2, "ulysses"),
                                                     (4, "ring")]
    assert all(r["match"] and r["messages"] == r["formula_messages"] for r in rows)
    by = {(r["cp"], r["method"]): r["counted"] for r in rows}
    shard = BATCH * 16 // 2 * 32 * 4  # one K shard, fp32, cp = 2
    assert by[2, "ring"] == (3 * 2 - 2) * 2 * shard
    assert by[2, "ulysses"] < by[2, "ring"] < by[2, "megatron_sp"]


def test_bytes_curve_trends():
    c = ex.bytes_curve()
    ring, uly, meg = (dict(c[m]) for m in ("ring", "ulysses", "megatron_sp"))
    assert ring[1] == uly[1] == meg[1] == 0
    assert uly[32] < uly[8] < uly[2] and max(uly) == 32  # falls with cp, stops at n_heads
    assert ring[2] < ring[64] < 6 * 131072 * 4096 * 2 and 64 in ring  # bounded, any cp


def test_ring_events_and_overlap_order(runs):
    events = ex.ring_events(runs[4, "ring", "zigzag"])
    assert {e["rank"] for e in events} == {0, 1, 2, 3}
    assert {e["name"] for e in events} == {"ring block", "ring kv"}
    rows = ex.overlap_rows(events)
    assert len(rows) == 4 * 3 and all(r["posted_before"] and r["waited_after"] for r in rows)
    back = ex.ring_events(runs[4, "ring", "zigzag"], "backward")
    assert {"ring block", "ring kv", "ring dkv"} == {e["name"] for e in back}
    uly = ex.ring_events(runs[2, "ulysses", "zigzag"])
    assert sum(e["kind"] == "comm" for e in uly if e["rank"] == 0) == 4  # q, k, v in; out back


def test_live_bytes_counts_new_storages_only():
    x = torch.randn(100)
    with ex.LiveBytes() as probe:
        y = x * 2             # new: 400 bytes
        v = y[:10]            # a view: nothing new
        z = torch.empty(1000)  # new: 4000 bytes
        del z                 # released
        w = v + 1             # new: 40 bytes
    assert probe.largest == 4000 and probe.peak == 4400 and probe.live == 440
    del y, v, w


def test_memory_rows_match_the_score_term():
    rows = ex.memory_rows((64, 128), (1, 2), ("ring", "ulysses"))
    assert len(rows) == 8
    for r in rows:
        assert r["largest"] == r["scores"], r  # the biggest tensor is the formula's score term
        assert r["formula"] <= r["peak"] < 4 * r["formula"], r
        assert r["error"] < 1e-5
    by = {(r["cp"], r["seq_len"], r["method"]): r for r in rows}
    assert by[2, 128, "ring"]["scores"] == by[1, 128, "ring"]["scores"] / 4   # ring: 1/cp^2
    assert by[2, 128, "ulysses"]["scores"] == by[1, 128, "ulysses"]["scores"] / 2  # Ulysses: 1/cp
    assert by[1, 128, "ring"]["kept"] < by[1, 128, "ulysses"]["kept"]  # no (s, s) kept by ring


def test_balance_timing_runs_and_reports():
    rows = ex.balance_timing(2, 64, 1)
    assert [r["layout"] for r in rows] == ["contiguous", "zigzag"]
    for r in rows:
        assert len(r["compute_s"]) == 2 and all(t >= 0 for t in r["compute_s"])
        assert math.isfinite(r["imbalance"]) and "load" in r["load"]
        assert {e["name"] for e in r["events"]} >= {"ring block", "ring kv"}
    assert rows[0]["predicted"] == pytest.approx(4 / 3) and rows[1]["predicted"] == 1


def test_ring_hiding_crossover():
    nv, ib = ex.ring_hiding(link="NVLink3"), ex.ring_hiding(link="IB-HDR")
    assert not nv[0]["hidden"] and nv[-1]["hidden"]
    first = {name: next(r["block"] for r in rows if r["hidden"]) for name, rows in
             (("nv", nv), ("ib", ib))}
    assert first["ib"] > 4 * first["nv"]  # 12x less bandwidth: longer blocks needed


def test_predict_and_live():
    assert "divisible" in ex.predict(30, 4)["error"]
    assert "n_heads" in ex.predict(32, 8, "contiguous", "ulysses")["error"]
    p = ex.predict(32, 4, "contiguous")
    assert p["work"] == [1, 2, 3, 4] and p["imbalance"] == pytest.approx(1.6)
    r = ex.live(16, 2, "zigzag", "ring")
    assert r["counted_bytes"] == r["bytes"] and r["counted_work"] == r["work"]
    assert r["largest"] <= r["counted_memory"] and r["events"]
    assert "error" in ex.live(30, 4)


def test_peer_check_skips_without_two_gpus():
    if torch.cuda.is_available() and torch.cuda.device_count() >= 2:
        pytest.skip("GPUs present: the peer runs in the notebook")
    assert "needs 2" in ex.peer_check()["skipped"]


def test_figures_build(runs):
    pytest.importorskip("plotly")
    from lessons.l05_context_parallel import figures as fg
    grids = {lay: ex.work_grid(2, lay) for lay in ("contiguous", "zigzag")}
    assert len(fg.layout_figure(grids, {"zigzag": [1.5, 1.5]}).layout.shapes) == 2 * 10
    assert len(fg.balance_figure(ex.balance_rows(runs, CFG)).data) == 2 * 4
    assert len(fg.ring_timeline(ex.ring_events(runs[4, "ring", "zigzag"])).data) == 2
    assert fg.ring_timeline([]).data == ()
    assert len(fg.bytes_figure(ex.bytes_rows(runs, CFG, BATCH), ex.bytes_curve()).data) == 2 + 3
    mem = [dict(cp=c, seq_len=s, method=m, peak=1.0 * s, formula=0.5 * s)
           for c in (1, 2) for s in (64, 128) for m in ("ring", "ulysses")]
    assert len(fg.memory_figure(mem).data) == 2 * 2 * 2
    assert len(fg.hiding_figure({"NVLink3": ex.ring_hiding()}).data) == 2
    assert "<table" in fg.bytes_table(ex.bytes_rows(runs, CFG, BATCH)).data
    assert "peak / formula" in fg.memory_table([dict(m, kept=1.0, error=0.0) for m in mem]).data
    timing = [dict(layout="zigzag", compute_s=[0.01, 0.02], imbalance=1.3, predicted=1.0, call_s=0.03)]
    assert "ranks 0 · 1" in fg.timing_table(timing, cp=2).data


def test_widgets_build():
    pytest.importorskip("ipywidgets")
    from lessons.l05_context_parallel import widgets
    box = widgets.cp_explorer(run_now=False)
    assert "predicted" in box.children[4].children[0].value
    assert "divisible" in widgets.predict_html(ex.predict(30, 4))
    html = widgets.live_html(ex.live(16, 2, "zigzag", "ulysses"))
    assert "measured" in html and "load" in html


def test_liu_table2_is_the_hiding_condition_at_full_peak():
    """Liu et al.'s Table 2 is c = FLOPS / bandwidth, s = 6c: reproduced within their
    rounding (24.96k where they print 24.5k); half the peak halves the block."""
    from lessons.l05_context_parallel import experiments as demos
    for r in demos.liu_table2_rows():
        assert abs(r["c = F/B (k)"] / r["c, paper (k)"] - 1) < 0.05, r
        assert abs(r["s = 6c (k)"] / r["s = 6c, paper (k)"] - 1) < 0.02, r
        assert r["c at 50% of peak (k)"] == pytest.approx(r["c = F/B (k)"] / 2)
