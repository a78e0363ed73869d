"""lessons.common.viz: every figure builds from plain data, shows what it should, stays small."""

import ast
import math
import random
from pathlib import Path

import plotly.graph_objects as go
import pytest

from parlab import cost
from lessons.common import viz
from lessons.l00_collectives import figures as coll_fig
from lessons.l01_data_parallel import figures as dp_fig
from lessons.l03_pipeline_parallel import figures as pp_fig
from lessons.common.viz import charts, controls, style
from lessons.common.viz.style import COMPUTE_PHASE_COLORS, compute_phase
from ring_reference import simulate_ring

MAX_JSON = 100_000  # bytes of figure JSON saved in a notebook


def small(fig: go.Figure) -> int:
    size = len(fig.to_json())
    assert size < MAX_JSON, size
    return size


@pytest.mark.parametrize("module", [charts, style, coll_fig, dp_fig, pp_fig])
def test_figures_do_not_import_torch(module):
    tree = ast.parse(Path(module.__file__).read_text())
    imported = {a.name.split(".")[0] for node in ast.walk(tree)
                if isinstance(node, (ast.Import, ast.ImportFrom))
                for a in (node.names if isinstance(node, ast.Import)
                          else [ast.alias(node.module or "")])}
    assert "torch" not in imported and "plotly" in imported


def test_palettes():
    assert set(viz.KIND_COLORS) == {"compute", "comm", "wait"}
    assert len(set(viz.KIND_COLORS.values())) == 3
    assert len(set(viz.RANK_COLORS)) >= 8
    assert viz.rank_color(0) == viz.rank_color(len(viz.RANK_COLORS))
    assert viz.NEUTRAL_COLOR not in viz.RANK_COLORS


# --- collective_diagram ----------------------------------------------------------------

OPS = ["all_reduce", "all_gather", "reduce_scatter", "all_to_all", "broadcast", "send_recv"]


def cells(fig, n):
    """{(panel, rank, cell): (fill colour, text)} read back from shapes and annotations."""
    pad = min(s.x0 for s in fig.layout.shapes)  # cell 0 of the before panel
    after = min(s.x0 for s in fig.layout.shapes if s.x0 > n) - pad  # the after panel's x
    texts = {(round(a.x, 3), round(a.y, 3)): a.text for a in fig.layout.annotations}
    out = {}
    for s in fig.layout.shapes:
        panel = 0 if s.x0 < n else 1
        c = round(s.x0 - pad - panel * after)
        r = round(s.y0 - pad)
        out[panel, r, c] = (s.fillcolor, texts.get((round(panel * after + c + 0.5, 3),
                                                    round(r + 0.5, 3)), ""))
    return out


@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("n", [2, 4, 8])
def test_collective_diagram_builds(op, n):
    fig = coll_fig.collective_diagram(op, n)
    assert isinstance(fig, go.Figure)
    assert len(fig.data) == 0  # shapes and annotations only
    assert len(fig.layout.shapes) == 2 * n * n  # before and after, n ranks x n cells
    assert op in fig.layout.title.text
    labels = [a.text for a in fig.layout.annotations]
    assert all(f"rank {r}" in labels for r in range(n))
    assert "<b>before</b>" in labels and "<b>after</b>" in labels
    small(fig)


def test_all_reduce_diagram_sums_everywhere():
    n = 4
    c = cells(coll_fig.collective_diagram("all_reduce", n), n)
    for r in range(n):
        for k in range(n):
            assert c[0, r, k] == (viz.rank_color(r), "abcd"[k] + "₀₁₂₃"[r])
            assert c[1, r, k] == (viz.NEUTRAL_COLOR, "Σ" + "abcd"[k])


def test_cell_text_reads_on_its_colour():
    n = 8
    fig = coll_fig.collective_diagram("all_to_all", n)
    c = cells(fig, n)
    colour_of = {a.text: a.font.color for a in fig.layout.annotations if "→" in a.text}
    assert colour_of["6→0"] == "#000000"  # rank 6 is yellow: black text
    assert colour_of["0→6"] == "#FFFFFF"  # rank 0 is dark blue: white text
    assert c[0, 6, 0][0] == viz.rank_color(6)


def test_gather_and_reduce_scatter_diagrams():
    n = 3
    g = cells(coll_fig.collective_diagram("all_gather", n), n)
    rs = cells(coll_fig.collective_diagram("reduce_scatter", n), n)
    for r in range(n):
        for k in range(n):
            # all-gather: rank r starts with its shard only, ends with everyone's
            assert g[0, r, k][0] == (viz.rank_color(r) if k == r else viz.EMPTY_COLOR)
            assert g[1, r, k][0] == viz.rank_color(k)
            # reduce-scatter: full buffers in, rank r ends with the sum of chunk r
            assert rs[0, r, k][0] == viz.rank_color(r)
            assert rs[1, r, k] == ((viz.NEUTRAL_COLOR, "Σ" + "abc"[k]) if k == r
                                   else (viz.EMPTY_COLOR, ""))


def test_all_to_all_diagram_is_a_transpose():
    n = 4
    c = cells(coll_fig.collective_diagram("all_to_all", n), n)
    for r in range(n):
        for k in range(n):
            assert c[0, r, k] == (viz.rank_color(r), f"{r}→{k}")
            assert c[1, r, k] == (viz.rank_color(k), f"{k}→{r}")


def test_broadcast_and_send_recv_diagrams():
    n = 4
    b = cells(coll_fig.collective_diagram("broadcast", n), n)
    p = cells(coll_fig.collective_diagram("send_recv", n), n)
    for r in range(n):
        assert b[1, r, 0][0] == viz.rank_color(0)
        assert b[0, r, 0][0] == (viz.rank_color(0) if r == 0 else viz.EMPTY_COLOR)
        assert p[1, r, 0][0] == (viz.rank_color(0) if r in (0, 1) else viz.EMPTY_COLOR)


@pytest.mark.parametrize("op,n", [("gather", 4), ("all_reduce", 1), ("all_reduce", 9),
                                  ("broadcast", 0), ("all_reduce", 2.0)])
def test_collective_diagram_rejects(op, n):
    with pytest.raises(ValueError):
        coll_fig.collective_diagram(op, n)


# --- ring_animation ------------------------------------------------------------------------

@pytest.mark.parametrize("n", [3, 4])
def test_ring_animation_frames_and_slider(n):
    frames = simulate_ring(n)
    fig = coll_fig.ring_animation(frames, title="ring all-reduce")
    assert len(fig.frames) == len(frames) == 2 * n - 1
    assert len(fig.layout.sliders) == 1 and len(fig.layout.sliders[0].steps) == len(frames)
    assert [s.args[0][0] for s in fig.layout.sliders[0].steps] == [f.name for f in fig.frames]
    labels = [b.label for b in fig.layout.updatemenus[0].buttons]
    assert any("play" in label for label in labels)
    assert len(fig.data) == 1 and fig.data[0].type == "heatmap"
    assert fig.data[0].colorbar.title.text == "contributions"
    first, last = fig.frames[0].data[0], fig.frames[-1].data[0]
    assert [list(row) for row in first.text] == [[str(r)] * n for r in range(n)]
    assert [list(row) for row in first.z] == [[1] * n for _ in range(n)]
    assert all(t == "all" for row in last.text for t in row)
    assert all(z == n for row in last.z for z in row)
    # after reduce-scatter, rank r holds chunk r complete (as parlab.comm does)
    mid = fig.frames[n - 1].data[0]
    assert [mid.text[r][r] for r in range(n)] == ["all"] * n
    assert fig.layout.yaxis.range[0] > fig.layout.yaxis.range[1]  # rank 0 on top


def test_ring_animation_n4_cells_titles_and_transfers():
    fig = coll_fig.ring_animation(simulate_ring(4))
    step1 = fig.frames[1]
    # step 1: rank r sent chunk r-1 to rank r+1, which now holds r and r+1 there
    assert step1.data[0].text[1][3] == "0+1"
    assert step1.data[0].text[0][2] == "0+3"
    assert step1.data[0].text[2][0] == "1+2"
    assert step1.data[0].text[2][2] == "2"
    assert [f.layout.title.text for f in fig.frames[1:4]] == [
        f"reduce-scatter step {s} of 3" for s in (1, 2, 3)]
    assert fig.frames[4].layout.title.text == "all-gather step 1 of 3"
    notes = step1.layout.annotations
    line = notes[0].text
    assert "rank 0 → rank 1: chunk 3" in line and "rank 3 → rank 0: chunk 2" in line
    arrows = [a for a in notes if a.showarrow]
    assert len(arrows) == 4 + 1  # one per send, the wrap-around one drawn in two halves
    assert all(a.x == a.ax for a in arrows)  # vertical, inside the chunk's column
    assert not [a for a in fig.frames[0].layout.annotations if a.showarrow]


def test_ring_animation_text_for_many_ranks():
    fig = coll_fig.ring_animation(simulate_ring(8))
    texts = {t for f in fig.frames for row in f.data[0].text for t in row}
    assert "0–4" in texts and "all" in texts  # long runs folded, so cells stay narrow
    assert max(len(t) for t in texts) <= 9


def test_ring_animation_json_small():
    assert small(coll_fig.ring_animation(simulate_ring(8), "n=8")) < 80_000


@pytest.mark.parametrize("frames", [
    [],
    [{"phase": "warmup", "step": 0, "state": [[1, 1], [2, 2]], "sends": []}],
    [{"phase": "start", "step": 0, "state": [[1, 1], [2]], "sends": []}],
    [{"phase": "start", "step": 0, "state": [[1, 4], [2, 2]], "sends": []}],
    [{"phase": "start", "step": 0, "state": [[1, 1], [2, 2]], "sends": [(0, 2, 0)]}],
])
def test_ring_animation_rejects(frames):
    with pytest.raises(ValueError):
        coll_fig.ring_animation(frames)


# --- timeline ---------------------------------------------------------------------------------

def ev(rank, kind, name, start, end, sent=0, recv=0, modelled=False, **meta):
    return dict(rank=rank, kind=kind, name=name, start=start, end=end, bytes_sent=sent,
                bytes_recv=recv, bytes_modelled=modelled, meta=meta)


def legend_kinds(fig):
    """The legend as the reader sees it (plotly orders it by legendrank)."""
    shown = [t for t in fig.data if t.showlegend is not False]
    return [t.name for t in sorted(shown, key=lambda t: t.legendrank or 1000)]


def test_timeline_traces_extent_and_hover():
    events = [ev(0, "compute", "forward", 10.000, 10.004, step=0),
              ev(1, "compute", "forward", 10.001, 10.006, step=0),
              ev(0, "comm", "all_reduce", 10.004, 10.007, 4096, 4096, True),
              ev(1, "comm", "all_reduce", 10.006, 10.008, 4096, 4096, True),
              ev(1, "compute", "backward", 10.008, 10.010)]
    fig = viz.timeline(events, title="two ranks")
    # each kind once, compute by phase, no "wait"
    assert legend_kinds(fig) == ["compute: forward", "compute: backward", "comm"]
    assert {t.name for t in fig.data} == {"compute: forward", "compute: backward", "comm"}
    assert all(t.type == "bar" and t.orientation == "h" for t in fig.data)
    colors = {**viz.KIND_COLORS, **{f"compute: {k}": c for k, c in COMPUTE_PHASE_COLORS.items()}}
    assert all(t.marker.color == colors[t.name] for t in fig.data)
    assert sum(len(t.x) for t in fig.data) == len(events)
    # the axis runs a little past the last bar's end, so that bar is not seen as cut off
    assert fig.layout.xaxis.range == pytest.approx((0.0, 10.2))
    starts = [b for t in fig.data for b in t.base]
    ends = [b + w for t in fig.data for b, w in zip(t.base, t.x)]
    assert min(starts) == pytest.approx(0.0) and max(ends) == pytest.approx(10.0)
    assert "ms" in fig.layout.xaxis.title.text
    assert list(fig.layout.yaxis.ticktext) == ["rank 0", "rank 1"]
    assert fig.layout.yaxis.range[0] > fig.layout.yaxis.range[1]  # rank 0 on top
    assert fig.layout.barmode == "overlay"
    comm = next(t for t in fig.data if t.name == "comm")
    assert "all_reduce" in comm.hovertemplate and "(modelled)" in comm.hovertemplate
    assert "4 KiB" in comm.hovertemplate
    fwd = next(t for t in fig.data if "forward" in t.hovertemplate)
    assert "step=0" in fwd.hovertemplate and "sent" not in fwd.hovertemplate
    small(fig)


def test_timeline_t0_and_varying_hover_fields():
    events = [ev(r, "comm", "sendrecv", 5.0 + s * 0.001, 5.0 + s * 0.001 + 0.0005,
                 1024 * (s + 1), 1024, False, step=s) for r in range(3) for s in range(3)]
    events.append(ev(2, "wait", "barrier", 5.003, 5.004))
    fig = viz.timeline(events, t0=4.999)
    assert fig.layout.xaxis.range == pytest.approx((1.0, 5.08))
    assert legend_kinds(fig) == ["comm", "wait"]
    assert fig.data[0].name == "wait"  # drawn first: a collective in flight shows over a wait
    comm = next(t for t in fig.data if t.name == "comm")
    # what varies per event travels in customdata, named in the template
    assert "step=%{customdata" in comm.hovertemplate
    assert "sent %{customdata" in comm.hovertemplate
    row = list(comm.customdata[-1])
    assert row[0] == pytest.approx(0.5) and "3 KiB" in row and 2 in row


def test_timeline_colours_comm_by_collective_when_it_mixes_them():
    events = [ev(0, "compute", "forward block0", 0.0, 1.0),
              ev(0, "comm", "all_gather block0 params (forward)", 1.0, 2.0, 8, 8, True,
                 op="all_gather"),
              ev(0, "comm", "all_gather block0 params (backward)", 3.0, 4.0, 8, 8, True,
                 op="all_gather"),
              ev(0, "comm", "reduce_scatter block0 grads", 4.0, 5.0, 8, 8, True,
                 op="reduce_scatter")]
    fig = viz.timeline(events)
    assert legend_kinds(fig) == ["compute: forward", "comm: all_gather", "comm: reduce_scatter"]
    color = {t.name: t.marker.color for t in fig.data}
    assert color["comm: all_gather"] != color["comm: reduce_scatter"] != color["compute: forward"]
    assert color["comm: all_gather"] == viz.COMM_OP_COLORS["all_gather"]
    # one collective only (or none named): comm keeps its one colour and name
    one = viz.timeline(events[:3])
    assert legend_kinds(one) == ["compute: forward", "comm"]
    assert {t.marker.color for t in one.data if t.name == "comm"} == {viz.KIND_COLORS["comm"]}


def test_timeline_compute_phases_get_distinct_colours():
    # notebook 01's step: forward, backward, optimizer were one blue block
    events = [ev(0, "compute", "forward", 0.0, 1.0), ev(0, "compute", "backward", 1.0, 3.0),
              ev(0, "compute", "AdamW", 3.0, 3.5), ev(0, "compute", "compress", 3.5, 3.6),
              ev(0, "compute", "forward loss", 0.5, 1.0)]
    fig = viz.timeline(events)
    assert legend_kinds(fig) == ["compute: forward", "compute: backward", "compute: optimizer",
                                 "compute"]
    colours = {t.name: t.marker.color for t in fig.data}
    assert len(set(colours.values())) == 4  # four distinct colours
    assert colours["compute"] == viz.KIND_COLORS["compute"]
    assert compute_phase("forward loss") == "forward" and compute_phase("optimizer") == "optimizer"
    assert compute_phase("reduce") is None and compute_phase("") is None
    # without phase names a kind keeps its one legend entry and colour
    plain = viz.timeline([ev(0, "compute", "reduce", 0, 1)])
    assert [t.name for t in plain.data] == ["compute"]


def test_timeline_many_names_fall_back_to_one_trace_per_kind():
    events = [ev(0, "compute", f"layer{i}", i * 1e-3, (i + 1) * 1e-3) for i in range(50)]
    fig = viz.timeline(events)
    assert len(fig.data) == 1 and "%{customdata" in fig.data[0].hovertemplate


def test_timeline_empty():
    fig = viz.timeline([])
    assert len(fig.data) == 0
    assert any(a.text == "no events" for a in fig.layout.annotations)
    fig.to_json()


def test_timeline_2000_events_is_small():
    rng = random.Random(0)
    events, t = [], 0.0
    while len(events) < 2000:
        for phase in ("reduce_scatter", "all_gather"):
            for s in range(7):
                for r in range(8):
                    a = t + rng.random() * 1e-5
                    b = a + 2e-4 + rng.random() * 1e-4
                    events.append(ev(r, "comm", f"ring_{phase}", a, b, 131072, 131072,
                                     phase=phase, step=s, chunk=(r - s - 1) % 8))
                    if phase == "reduce_scatter":
                        events.append(ev(r, "compute", "reduce", b, b + 3e-5, step=s))
                t += 4e-4
    fig = viz.timeline(events[:2000])
    assert sum(len(t.x) for t in fig.data) == 2000
    assert len(fig.data) <= 4
    small(fig)


# --- bytes_table_figure ------------------------------------------------------------------------

def byte_rows(S=2 ** 20):
    rows = []
    for n in (2, 4, 8):
        for alg in ("ring", "naive"):
            for r in range(n):
                f = cost.collective_bytes("all_reduce", S, n, alg, rank=r)
                rows.append(dict(n=n, algorithm=alg, rank=r, measured=f * 1.01, formula=f))
    return rows


def test_bytes_table_figure():
    rows = byte_rows()
    fig = coll_fig.bytes_table_figure(rows)
    names = [t.name for t in fig.data]
    assert names == ["ring (measured)", "ring (formula)",
                     "naive, rank 0 (measured)", "naive, rank 0 (formula)"]
    assert "MiB" in fig.layout.yaxis.title.text
    ring_formula = [2 * (n - 1) / n for n in (2, 4, 8)]  # in MiB, for S = 1 MiB
    assert list(fig.data[1].y) == pytest.approx(ring_formula)
    assert list(fig.data[3].y) == pytest.approx([n - 1 for n in (2, 4, 8)])  # naive root
    assert list(fig.data[2].y) == pytest.approx([1.01 * (n - 1) for n in (2, 4, 8)])
    assert fig.data[0].type == "bar" and fig.data[1].type == "scatter"
    assert list(fig.data[0].x) == list(fig.data[1].x)  # formula marks sit on their bars
    assert list(fig.layout.xaxis.ticktext) == ["n=2", "n=4", "n=8"]
    small(fig)


def test_bytes_table_figure_small_values_in_bytes():
    rows = [dict(n=2, algorithm="ring", rank=r, measured=100.0, formula=100.0) for r in (0, 1)]
    fig = coll_fig.bytes_table_figure(rows)
    assert fig.layout.yaxis.title.text.endswith("(B)")
    assert len(fig.data) == 2
    with pytest.raises(ValueError):
        coll_fig.bytes_table_figure([])


def test_model_ratio_figure_draws_measured_over_predicted_for_our_algorithms():
    rows = {n: [dict(algorithm=a, n=n, bytes=b, measured=3.0 * b, best=2.0 * b, predicted=1.0 * b)
                for a in ("ring (ours)", "naive (ours)", "torch") for b in (4, 4096, 1 << 20)]
            for n in (2, 4)}
    fig = coll_fig.model_ratio_figure(rows, "ratio")
    assert len(fig.data) == 8 and not any("torch" in t.name for t in fig.data)  # 2 algos x 2 n x 2
    best = next(t for t in fig.data if t.name == "ring (ours), 4 ranks (best)")
    assert list(best.y) == [2.0, 2.0, 2.0] and list(best.x) == [4, 4096, 1 << 20]
    assert fig.layout.xaxis.type == "log" and fig.layout.yaxis.title.text == "measured / predicted"
    # a ratio's axis reads 1x, 2x, 3x..., never seconds; "= model" sits on the line at 1 (log10 = 0)
    assert "1×" in fig.layout.yaxis.ticktext and not any("s" in t for t in fig.layout.yaxis.ticktext)
    assert [a.y for a in fig.layout.annotations if a.text == "= model"] == [0]
    small(fig)


def test_ratio_ticks_cover_the_ratios_and_refuse_nonpositive_ones():
    from lessons.common.viz.style import ratio_ticks
    t = ratio_ticks([0.9, 1.0, 30.0])
    assert t["ticktext"][0] == "0.5×" and "20×" in t["ticktext"] and "50×" in t["ticktext"]
    with pytest.raises(ValueError, match="ratios must be > 0"):
        ratio_ticks([0.0, 1.0])


def test_collectives_tables_build():
    html = coll_fig.bytes_table(byte_rows()).data
    assert "sent, counted (MiB)" in html and "<td" in html
    assert "first: fork 4 ranks" in coll_fig.launch_table({"cold": 1.0, "warm": [0.1, 0.3],
                                                           "warm_median": 0.2}).data
    rows = [dict(op="all_reduce", rank=r, before=[10.0 * r], after=[10.0]) for r in (0, 1)]
    assert "on 2 ranks" in coll_fig.collectives_run_table(rows).data
    scale = coll_fig.allreduce_at_scale_table(14e9, [2, 4096], 1e-6, 25e9, 300e9, 8).data
    assert "8,190" in scale and "ring s, DGX nodes" in scale  # 2(N-1) steps at N = 4096
    assert "535 buckets" in coll_fig.bucket_latency_table(14e9, 25 * 2 ** 20, [2, 8], 1e-6, 25e9).data


# --- alpha_beta_figure, cost_curves, bars --------------------------------------------------------

def test_alpha_beta_figure():
    alpha, beta = 20e-6, 1 / 5e9
    sizes = [2 ** k for k in range(4, 25, 2)]
    times = [alpha + beta * s for s in sizes]
    extra = {"all_reduce n=4": (sizes, [2 * t for t in times])}
    fig = coll_fig.alpha_beta_figure(sizes, times, alpha, beta, title="p2p", extra=extra)
    assert len(fig.data) == 3
    assert fig.layout.xaxis.type == "log" and fig.layout.yaxis.type == "log"
    assert "bytes" in fig.layout.xaxis.title.text
    assert fig.layout.yaxis.title.text == "time" and "1 ms" in fig.layout.yaxis.ticktext  # units on ticks
    fit = next(t for t in fig.data if t.mode == "lines")
    assert fit.x[0] == pytest.approx(sizes[0]) and fit.x[-1] == pytest.approx(sizes[-1], 1e-3)
    assert fit.y[0] == pytest.approx(alpha + beta * sizes[0], 1e-3)
    assert fig.data[0].y[0] == pytest.approx(times[0], 1e-3)
    text = " ".join(a.text for a in fig.layout.annotations)
    assert "20 µs" in text and "5 GB/s" in text
    knee = alpha / beta  # latency = transfer time: marked, at log10 on the log axis
    assert any(s.x0 == pytest.approx(knee) for s in fig.layout.shapes)
    assert any(a.x == pytest.approx(math.log10(knee)) for a in fig.layout.annotations)
    small(fig)
    assert len(coll_fig.alpha_beta_figure(sizes, times, alpha, beta).data) == 2
    with pytest.raises(ValueError):
        coll_fig.alpha_beta_figure(sizes, times[:-1], alpha, beta)


def test_cost_curves():
    sizes = [2.0 ** k for k in range(10, 31)]
    curves = {alg: (sizes, [cost.collective_time("all_reduce", s, 8, 5e-6, 10e9, alg)
                            for s in sizes]) for alg in ("ring", "tree", "naive")}
    x = cost.ring_tree_crossover(8, 5e-6, 10e9)
    fig = viz.cost_curves(curves, title="all-reduce, n=8", vlines={"ring/tree crossover": x})
    assert [t.name for t in fig.data] == ["ring", "tree", "naive"]
    assert fig.data[0].line.color == viz.ALGORITHM_COLORS["ring"]
    assert fig.layout.xaxis.type == "log" and fig.layout.yaxis.type == "log"
    assert len(fig.layout.shapes) == 1 and fig.layout.shapes[0].x0 == pytest.approx(x)
    label = next(a for a in fig.layout.annotations if a.text == "ring/tree crossover")
    assert label.x == pytest.approx(math.log10(x))  # annotations on log axes take log10
    assert fig.layout.yaxis.title.text == "time (s)"
    small(fig)
    lin = viz.cost_curves({"a": ([0, 1, 2], [0, 1, 4])}, log_x=False, log_y=False,
                          vlines={"one": 1.0})
    assert lin.layout.xaxis.type == "linear" and lin.layout.annotations[0].x == 1.0
    # a log y axis gets at least 3 labels, however few decades the curves span
    y = fig.layout.yaxis  # > 3 decades: one tick per decade, in plain units
    assert all(v2 / v1 == pytest.approx(10) for v1, v2 in zip(y.tickvals, y.tickvals[1:]))
    assert all(t.endswith((" ns", " µs", " ms", " s")) for t in y.ticktext)
    narrow = viz.cost_curves({"a": ([1e8, 1e11], [0.12, 1.5])}, y_title="step time (s)")
    y = narrow.layout.yaxis  # 1, 2, 5 per decade, every label with its unit
    assert list(y.tickvals) == [0.1, 0.2, 0.5, 1.0, 2.0] and y.tickmode == "array"
    assert list(y.ticktext) == ["100 ms", "200 ms", "500 ms", "1 s", "2 s"]
    slow = viz.cost_curves({"naive": ([1e6, 1e10], [1e-3, 800.0])}, y_title="time (s)")
    assert "1ks" not in slow.layout.yaxis.ticktext and "1,000 s" in slow.layout.yaxis.ticktext
    digits = viz.cost_curves({"a": ([1, 10], [0.12, 0.3])}).layout.yaxis
    assert [v for v in digits.tickvals if 0.12 <= v <= 0.3] == [0.15, 0.2, 0.25, 0.3]
    assert list(digits.ticktext)[:2] == ["100 ms", "150 ms"]
    assert [style.si(v) for v in (2e-4, 1500, 3e9, 1)] == ["200µ", "1.5k", "3G", "1"]
    with pytest.raises(ValueError):
        viz.cost_curves({"a": ([1, 2], [1])})
    with pytest.raises(ValueError):
        viz.cost_curves({"a": ([1, 2], [1, 2])}, vlines={"zero": 0.0})


def test_bars():
    fig = viz.bars(["spawn", "fork"], {"first launch": [1.5, 0.4], "warm pool": [0.2, 0.1]},
                   title="launch time", y_title="time (s)")
    assert len(fig.data) == 2 and fig.layout.barmode == "group"
    assert list(fig.data[1].y) == [0.2, 0.1] and list(fig.data[0].x) == ["spawn", "fork"]
    assert fig.layout.yaxis.title.text == "time (s)"
    small(fig)
    with pytest.raises(ValueError):
        viz.bars(["a", "b"], {"s": [1.0]})


def test_bars_series_colours_are_distinct():
    fig = viz.bars(["1 rank", "2 ranks", "4 ranks"],
                   {"naive": [1, 2, 3], "bucketed": [1, 2, 4], "ddp": [1, 2, 4]})
    colors = [t.marker.color for t in fig.data]
    assert colors == [viz.VARIANT_COLORS[v] for v in ("naive", "bucketed", "ddp")]
    assert len(set(colors)) == 3
    # series without a colour of their own never repeat one, nor take naive's red
    fig = viz.bars(["a"], {"naive": [1], "x": [1], "y": [1], "ring": [1], "z": [1]})
    colors = [t.marker.color for t in fig.data]
    assert len(set(colors)) == 5 and colors[3] == viz.ALGORITHM_COLORS["ring"]


def test_every_figure_uses_the_lab_template():
    figs = [coll_fig.collective_diagram("all_reduce"), coll_fig.ring_animation(simulate_ring(3)),
            viz.timeline([ev(0, "compute", "x", 0, 1)]), coll_fig.bytes_table_figure(byte_rows()),
            coll_fig.alpha_beta_figure([1, 10], [1e-6, 2e-6], 1e-6, 1e-7),
            viz.cost_curves({"a": ([1, 2], [1, 2])}), viz.bars(["a"], {"s": [1]})]
    white = go.Figure(layout=dict(template="plotly_white")).layout.template
    for fig in figs:
        assert fig.layout.template == white
        fig.to_json()


def test_ring_animation_frames_replace_all_annotations():
    fig = coll_fig.ring_animation(simulate_ring(4))
    counts = {len(f.layout.annotations) for f in fig.frames}
    assert len(counts) == 1  # same count in every frame: going back clears old arrows
    start = fig.frames[0].layout.annotations
    assert not [a for a in start if a.showarrow and a.visible is not False]
    for f in fig.frames[1:]:  # later frames must re-show what "start" hid
        arrows = [a for a in f.layout.annotations if a.showarrow]
        assert arrows and all(a.visible is True for a in arrows)
        assert f.layout.annotations[0].visible is True and "rank" in f.layout.annotations[0].text


def test_measured_vs_predicted_styles():
    rows = [{"algorithm": a, "bytes": b, "measured": 2e-4 * b, "best": 1e-4 * b,
             "predicted": None if a == "torch" else 1.1e-4 * b}
            for a in ("ring (ours)", "naive (ours)", "torch") for b in (4, 64, 1024)]
    fig = viz.measured_vs_predicted(rows, "t")
    names = [t.name for t in fig.data]
    assert "torch (predicted)" not in names and len(names) == 8
    by_name = {t.name: t for t in fig.data}
    assert by_name["ring (ours) (best)"].line.dash == "solid"
    assert by_name["ring (ours) (median)"].line.dash == "dot"
    assert by_name["ring (ours) (predicted)"].line.dash == "dash"
    assert by_name["ring (ours) (best)"].line.color == by_name["ring (ours) (predicted)"].line.color
    assert by_name["ring (ours) (best)"].line.color != by_name["naive (ours) (best)"].line.color
    assert all(t.endswith((" ns", " µs", " ms", " s")) for t in fig.layout.yaxis.ticktext)


def test_measured_vs_predicted_only_for_chosen_algorithms():
    rows = [{"algorithm": a, "bytes": b, "measured": 2.0, "best": 1.0, "predicted": 1.5}
            for a in ("ring (ours)", "torch") for b in (4, 64)]
    names = [t.name for t in viz.measured_vs_predicted(rows, predicted_for={"ring (ours)"}).data]
    assert "ring (ours) (predicted)" in names and "torch (predicted)" not in names


def test_memory_bars_stack_parts_against_the_device_line():
    plans = [dict(cost.memory_plan("7B", 4, 80, s), label=f"stage {s}") for s in range(4)]
    fig = viz.memory_bars(plans, "7B", limit=80e9, unit="GB")
    assert fig.layout.barmode == "stack"
    assert [t.name for t in fig.data] == ["params", "grads", "optimizer", "activations"]
    stacked = [sum(t.y[i] for t in fig.data) for i in range(4)]
    assert stacked == pytest.approx([p["total"] / 1e9 for p in plans], rel=1e-4)
    verdicts = [a.text for a in fig.layout.annotations if a.text in ("fits", "does not fit")]
    assert verdicts == ["does not fit" if not p["fits"] else "fits" for p in plans]
    assert verdicts[0] == "does not fit" and verdicts[3] == "fits"
    assert fig.layout.shapes[0].y0 == 80.0  # the device line, in GB
    # its label sits in the right margin, level with the line: not over any bar
    label = next(a for a in fig.layout.annotations if "device" in a.text)
    assert (label.xref, label.x, label.xanchor, label.y) == ("paper", 1, "left", 80.0)
    assert "80&nbsp;GB" in label.text and fig.layout.margin.r >= 80


def test_memory_bars_measured_with_formula_markers():
    rows = [{"label": "ZeRO-1", "params": 4096, "grads": 4096, "optimizer": 4096, "predicted": 12000},
            {"label": "ZeRO-3", "params": 1024, "grads": 1024, "optimizer": 4096,
             "gathered_peak": 512, "predicted": 6000}]
    fig = viz.memory_bars(rows)
    names = [t.name for t in fig.data]
    assert names == ["params", "grads", "optimizer", "gathered peak", "formula"]
    assert fig.layout.yaxis.title.text == "per GPU (KiB)"
    assert list(fig.data[-1].y) == pytest.approx([12000 / 1024, 6000 / 1024])
    assert not [a for a in fig.layout.annotations or [] if a.text == "fits"]  # no limit given
    with pytest.raises(ValueError):
        viz.memory_bars([])


# --- pipeline figures (notebook 03) ---------------------------------------------------------

def _pipeline_events(p=2, m=3):
    ev = []
    for r in range(p):
        for i in range(m):
            ev.append(dict(rank=r, kind="compute", name="F", start=r + i, end=r + i + 1,
                           meta=dict(mb=i, chunk=0)))
            ev.append(dict(rank=r, kind="compute", name="B", start=10 + i, end=12 + i,
                           meta=dict(mb=i, chunk=1)))
        ev.append(dict(rank=r, kind="wait", name="recv act", start=0, end=1, meta={}))
    return ev


def _op_traces(fig):
    """The F / B / W bar traces (the hatching overlays have no name)."""
    return [t for t in fig.data if t.name]


def test_pipeline_timeline_bars_colours_and_rows():
    fig = pp_fig.pipeline_timeline(_pipeline_events(), "t", unit="units")
    ops, hatch = _op_traces(fig), [t for t in fig.data if not t.name]
    assert [t.name for t in ops] == ["F", "B"]  # the wait is not an op: not drawn
    f, b = ops
    # chunk 1 is hatched by a see-through bar over each of its bars, no hover of its own
    assert len(hatch) == 1 and list(hatch[0].base) == list(b.base) and hatch[0].hoverinfo == "skip"
    assert set(hatch[0].marker.pattern.shape) == {"/"} and hatch[0].marker.color == "rgba(0,0,0,0)"
    assert list(f.text) == ["F0", "F1", "F2"] * 2
    assert list(b.text) == ["B0·c1", "B1·c1", "B2·c1"] * 2
    assert list(f.base[:3]) == [0, 1, 2] and list(b.x) == [2] * 6
    assert f.marker.color[0] == pp_fig.op_color("F", 0) != b.marker.color[0] == pp_fig.op_color("B", 0)
    assert pp_fig.op_color("F", 0) != pp_fig.op_color("F", 1)
    assert pp_fig.op_color("B", 10) == pp_fig.op_color("B", 0)  # n_mb unknown: it repeats
    # more than 10 micro-batches: every one its own hue, in order
    many = [pp_fig.op_color("B", i, 16) for i in range(16)]
    assert len(set(many)) == 16 and pp_fig.op_color("F", 3, 16) != many[3]
    assert list(fig.layout.yaxis.categoryarray) == ["rank 1", "rank 0"]  # rank 0 on top
    # labels read horizontally; one that does not fit is hidden, not shrunk or rotated
    assert f.textangle == 0 and f.textposition == "inside"
    assert fig.layout.uniformtext.mode == "hide"
    # chunk 1 is hatched, chunk 0 plain; the key under the axis says what shades mean
    assert f.marker.pattern.shape is None and b.marker.pattern.shape is None  # hatched by overlay
    key = fig.layout.annotations[0].text
    assert "F forward (light)" in key and "B backward (full colour)" in key
    assert "chunk 1 hatched" in key and "W weight" not in key
    small(fig)


def test_pipeline_timeline_interleaved_and_zero_bubble_labels():
    from parlab import pipeline_parallel as pp
    fig = pp_fig.pipeline_timeline(pp.simulate("interleaved", 4, 8, 2, 0.01, 0.02).events)
    f = next(t for t in fig.data if t.name == "F")
    # the two chunks look different: chunk 1's bars (and only they) carry a hatching overlay
    hatched = {(y, b) for t in fig.data if not t.name for y, b in zip(t.y, t.base)}
    chunk = [int((y, b) in hatched) for y, b in zip(f.y, f.base)]
    assert 0 in chunk and 1 in chunk
    # short bars carry the short label; the hover shows the chunk
    mbs = [c[1][1:].split("·")[0] for c in f.customdata]
    assert all(t in (f"F{mb}", f"F{mb}·c1", "") for t, mb in zip(f.text, mbs))
    assert {c[1] for c, k in zip(f.customdata, chunk) if k} == {f"F{i}·c1" for i in range(8)}
    assert "customdata[1]" in f.hovertemplate
    zb = pp_fig.pipeline_timeline(pp.simulate("zb-h1", 4, 8, t_fwd=0.01, t_bwd=0.02).events)
    assert [t.name for t in zb.data] == ["F", "B", "W"]  # one chunk: no hatching
    assert all(t.textangle == 0 for t in zb.data)
    assert "W weight gradients (dark)" in zb.layout.annotations[0].text
    assert "chunk" not in zb.layout.annotations[0].text


def test_pipeline_timeline_labels_only_where_they_fit():
    from parlab import pipeline_parallel as pp
    for schedule, p, m, v in [("1f1b", 8, 16, 1), ("interleaved", 4, 16, 4), ("zb-h1", 8, 16, 1)]:
        sim = pp.simulate(schedule, p, m, v, 0.01, 0.02)
        fig = pp_fig.pipeline_timeline(sim.events, width=1000)
        span = sim.makespan
        for t in _op_traces(fig):
            for text, w in zip(t.text, t.x):
                px = w / (span * 1e3) * (1000 - 80 - 7 * len("rank 7"))
                assert text == "" or px >= 6.2 * len(text) + 4, (schedule, text, px)
            assert len(t.customdata) == len(t.x)  # every bar keeps its hover
        key = fig.layout.annotations[0].text
        assert "colour wheel" in key
    f = _op_traces(pp_fig.pipeline_timeline(pp.simulate("1f1b", 8, 16).events))[1]
    assert "B15" in f.text  # 1F1B, P=8, M=16: the backward bars keep their labels
    narrow = _op_traces(pp_fig.pipeline_timeline(pp.simulate("1f1b", 8, 16).events, width=300))[1]
    assert set(narrow.text) == {""}


def test_pipeline_timeline_overlay_gets_two_rows_per_rank():
    sim = _pipeline_events()
    meas = [dict(e, start=e["start"] * 1e-3 + 5, end=e["end"] * 1e-3 + 5) for e in sim]
    fig = pp_fig.pipeline_timeline(sim, overlay=meas, labels=("sim", "run"), unit="units")
    assert len(_op_traces(fig)) == 4
    assert list(fig.layout.yaxis.categoryarray) == ["rank 1 · run", "rank 1 · sim",
                                                   "rank 0 · run", "rank 0 · sim"]
    run_f = next(t for t in fig.data if t.name == "F (run)")
    assert min(run_f.base) == 0  # each set starts at its own first op
    ms = pp_fig.pipeline_timeline(meas, unit="ms")
    assert ms.data[0].x[0] == pytest.approx(1.0)  # 1e-3 s shown as 1 ms


def test_bubble_sweep_figure():
    rows = [dict(p=p, m=m, schedule=s, measured=cost.bubble_fraction(p, m) + 0.01,
                 formula=cost.bubble_fraction(p, m))
            for p in (2, 4) for m in (1, 2, 4) for s in ("gpipe", "1f1b")]
    fig = pp_fig.bubble_sweep_figure(rows, "bubble")
    lines = [t for t in fig.data if t.mode == "lines"]
    assert [t.name for t in lines] == ["P=2: (P-1)/(M+P-1)", "P=4: (P-1)/(M+P-1)"]
    assert all(t.name.startswith("P=") for t in fig.data)
    assert fig.layout.xaxis.title.text == "micro-batches M"
    assert list(lines[1].y) == [75.0, 60.0, pytest.approx(42.857, abs=1e-3)]
    assert len(fig.data) == 6
    small(fig)


# --- data parallelism (notebook 01) ------------------------------------------------------

def _dp_events():
    ev = lambda r, kind, name, s, e, **meta: {"rank": r, "kind": kind, "name": name,  # noqa: E731
                                              "start": s, "end": e, "bytes_sent": 0,
                                              "bytes_recv": 0, "meta": meta}
    out = []
    for r in (0, 1):
        out += [ev(r, "compute", "forward", 0.0, 0.01, step=0),
                ev(r, "compute", "backward", 0.01, 0.03, step=0),
                ev(r, "comm", "bucket all_reduce", 0.02, 0.035, step=0, bucket=0),
                ev(r, "wait", "wait for buckets", 0.03, 0.035, step=0),
                ev(r, "compute", "optimizer", 0.035, 0.04, step=0)]
    return out


def test_dp_timeline_has_a_compute_and_a_comm_lane_per_rank():
    fig = dp_fig.dp_timeline(_dp_events(), "t")
    assert list(fig.layout.yaxis.ticktext) == ["rank 0 compute", "rank 0 comm",
                                               "rank 1 compute", "rank 1 comm"]
    lanes = {t.legendgroup: set(t.y) for t in fig.data}
    assert lanes["compute: forward"] == lanes["compute: backward"] == {0, 2}
    assert lanes["compute: optimizer"] == {0, 2}
    assert lanes["comm"] == {1, 3} and lanes["wait"] == {1, 3}
    small(fig)
    assert len(dp_fig.dp_timeline([]).data) == 0


def test_bucket_sweep_figure():
    rows = [{"bucket_bytes": None, "median": 0.05, "overlap": 0.0},
            {"bucket_bytes": 4096, "median": 0.03, "overlap": 0.5},
            {"bucket_bytes": 1024, "median": 0.04, "overlap": 0.6}]
    fig = dp_fig.bucket_sweep_figure(rows, "sweep")
    step, overlap, naive = fig.data
    assert list(step.x) == [1024, 4096] and list(step.y) == [40.0, 30.0]
    assert list(overlap.y) == [60.0, 50.0] and overlap.yaxis == "y2"
    assert list(naive.y) == [50.0, 50.0]
    # the overlap axis has its own round ticks, not the step-time axis' grid lines
    y2 = fig.layout.yaxis2
    assert tuple(y2.range) == (0, 100) and y2.tickmode == "linear" and y2.dtick == 20
    assert y2.showgrid is False
    small(fig)
    with pytest.raises(ValueError):
        dp_fig.bucket_sweep_figure(rows[:1])


def test_data_parallel_tables_and_throughput_build():
    rows = [dict(variant=v, world_size=n, step_s=0.01 * n, tokens_per_s=1000.0 * n, speedup=n,
                 vs_ddp=1.0) for v in ("naive", "ddp") for n in (1, 2)]
    assert "tokens/s" in dp_fig.throughput_table(rows).data
    fig = dp_fig.throughput_figure(rows, "tps")
    assert [t.name for t in fig.data] == ["naive", "ddp"] and list(fig.data[1].y) == [1000.0, 2000.0]
    assert "max |Δ grad|" in dp_fig.equivalence_table([dict(run="x", loss=1e-7, grad=2e-7, param=0.0)]).data
    comp = {"exact": dict(losses=[2.0] * 6, bytes_per_step=100, codec_s=0.0),
            "fp16": dict(losses=[2.5] * 6, bytes_per_step=50, codec_s=1e-3)}
    assert "+0.500" in dp_fig.compression_table(comp).data
    sweep = {"naive": dict(buckets=53, median=0.1, overlap=0.0, exposed=0.05)}
    assert "53" in dp_fig.bucket_sweep_table(sweep).data
    assert "0.700 s" in dp_fig.compression_step_table([{"bandwidth": "1 GB/s", "exact": 0.7}]).data


def test_loss_curves():
    fig = viz.loss_curves({"exact": [4.0, 3.0], "sign, no EF": [4.0, 3.5]}, "c", floor=1.07)
    assert [t.name for t in fig.data] == ["exact", "sign, no EF", "entropy floor 1.070"]
    assert fig.data[1].line.dash == "dot" and list(fig.data[2].y) == [1.07, 1.07]
    pair = viz.loss_curves({"exact": [4.0], "sign + EF": [4.0], "sign, no EF": [4.1], "top-1%": [4.2]})
    assert pair.data[1].line.color == pair.data[2].line.color != pair.data[3].line.color
    assert pair.data[0].line.width > pair.data[1].line.width
    small(fig)


def test_dp_widgets_build():
    pytest.importorskip("ipywidgets")
    from lessons.l01_data_parallel import widgets as dp_widgets
    from lessons.l01_data_parallel import widgets_zero as zero_widgets
    sweep = {"naive": {"bucket_bytes": None}, "bucketed 4 KiB":
             {"bucket_bytes": 4096, "events": _dp_events(), "median": 0.04, "overlap": 0.5,
              "exposed": 0.005, "buckets": 3}}
    assert dp_widgets.dp_bucket_explorer(sweep) is not None
    box = dp_widgets.compression_payoff_explorer({"sign": 1e-8})
    bandwidth = box.children[1].children[1]
    assert bandwidth.label == "10 GB/s" and bandwidth.value == 10e9  # readable readout
    codec = box.children[2]
    assert codec.indent is False and codec.style.description_width == "initial"


def test_sweep_caption_plural():
    from lessons.l01_data_parallel import experiments as dp_demos
    r = {"median": 0.01, "overlap": 0.5, "exposed": 0.001}
    assert "1 all-reduce per step" in dp_demos.sweep_caption("b", {**r, "buckets": 1})
    assert "3 all-reduces per step" in dp_demos.sweep_caption("b", {**r, "buckets": 3})


def test_memory_calculator_status_wraps_between_items_only():
    pytest.importorskip("ipywidgets")
    from lessons.l01_data_parallel import widgets as dp_widgets
    from lessons.l01_data_parallel import widgets_zero as zero_widgets
    from parlab import cost
    verdict = cost.memory_plan("70B", 4, 80, 0)["verdict"]
    html = controls.nowrap_html(verdict)
    spans = [s.split("</span>")[0] for s in html.split('<span style="white-space:nowrap">')[1:]]
    assert len(spans) >= 5
    # a line may break only between spans; none ends in a number cut from its unit
    assert not [s for s in spans if s[-1].isdigit()]
    assert any(s.startswith("= ") and s.split()[2] == "GB" for s in spans)
    assert zero_widgets.memory_calculator() is not None


def test_pipeline_explorer_builds_without_starting_ranks(monkeypatch):
    import sys

    from lessons.l03_pipeline_parallel import widgets as pp_widgets

    def no_launch(*a, **k):
        raise AssertionError("the explorer must simulate, not launch, until 'run live'")
    monkeypatch.setattr(sys.modules["parlab.launch"], "launch", no_launch)
    monkeypatch.setattr(pp_widgets, "show", lambda fig: None)
    box = pp_widgets.pipeline_explorer(schedule="interleaved", p=4, m=8, v=2)
    sched, p = box.children[0].children
    m, info = box.children[1].children[0], box.children[3]
    assert (m.min, m.step, m.max, m.value) == (4, 4, 16, 8)  # interleaved: multiples of P only
    p.value = 3  # M=8 is not a multiple of 3: the slider moves to 9 and the note says why
    assert (m.min, m.step, m.max, m.value) == (3, 3, 15, 9)
    assert "M=8 does not work here" in info.value and "showing M=9" in info.value
    assert "interleaved,</span> <span style=\"white-space:nowrap\">P=3," in info.value
    m.value = 7  # set from code: drawn as the nearest valid M, the slider follows
    assert m.value == 6 and "M=7 does not work here" in info.value
    sched.value = "zb-h1"  # every M works again
    assert (m.min, m.step, m.max, m.value) == (1, 1, 16, 6) and "does not work" not in info.value
    assert "zb-h1,</span>" in info.value and "simulated bubble" in info.value
    assert pp_widgets.explorer_html({"error": "bad <choice>"}).count("bad &lt;choice&gt;") == 1


def test_pipeline_explorer_v_slider_only_for_interleaved(monkeypatch):
    import sys

    from lessons.l03_pipeline_parallel import widgets as pp_widgets
    monkeypatch.setattr(sys.modules["parlab.launch"], "launch", None)
    monkeypatch.setattr(pp_widgets, "show", lambda fig: None)
    box = pp_widgets.pipeline_explorer(schedule="1f1b")
    sched = box.children[0].children[0]
    v = box.children[1].children[1]
    assert v.disabled and v.description == "chunks v" and v.layout.visibility == "hidden"
    sched.value = "interleaved"
    assert not v.disabled and v.layout.visibility == "visible"
    sched.value = "gpipe"
    assert v.disabled and v.layout.visibility == "hidden"
    controls = [c for row in box.children[:2] for c in row.children]
    assert all(len(c.description) <= 16 for c in controls)  # fits the 140 px label column
    assert box.children[2].layout.width == "auto"  # the button shows its whole label


def test_pipeline_tables_build():
    from lessons.l03_pipeline_parallel import experiments as pp_demos
    text = pp_fig.schedule_lists({"interleaved": pp_demos.schedule_tokens("interleaved", 2, 4, 2)}).data
    # a line may break between actions, never inside one
    assert "<span style='white-space:nowrap'>B3.1</span>" in text and text.count("rank&nbsp;") == 2
    assert "27.3%" in pp_fig.bubble_normalisations_table(4, 8).data  # 3 / 11
    assert "37.5%" in pp_fig.bubble_normalisations_table(4, 8).data  # 3 / 8
    sweep = [dict(p=2, m=m, schedule=s, formula=0.5, measured=0.52, formula_ratio=1.0,
                  measured_ratio=1.1) for m in (1, 2) for s in ("gpipe", "1f1b")]
    assert pp_fig.bubble_sweep_table(sweep).data.count("<tr>") == 3
    mem = [dict(m=m, schedule=s, rank=r, held=1, formula=1, bytes=2 ** 20)
           for m in (4, 16) for s in ("gpipe", "1f1b") for r in range(2)]
    assert "1 / 1" in pp_fig.held_table(mem).data
    assert len(pp_fig.stash_bars(mem).data) == 4
    from parlab.model import GPTConfig
    rows = pp_demos.stage_table(GPTConfig(n_layers=4), 2)
    assert "also holds" in pp_fig.stages_table([dict(r, layout="P = 2") for r in rows]).data
    run = dict(p=4, m=8, formula=0.2, simulated=0.2, simulated_comm=0.25, measured=0.3, t_comm=0.002,
               t_gap=0.001, stash_peak=[4, 3, 2, 1])
    assert "interleaved, v = 2" in pp_fig.interleaving_table({1: run, 2: run}, 0.03).data
    assert "[4, 3, 2, 1]" in pp_fig.zero_bubble_table({"ZB-H1": run}, "c").data
