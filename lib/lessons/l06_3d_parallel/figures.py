"""Figures of notebook 06 (3D parallelism): the mesh, Table 1 predicted vs paper, the
planner against every published run (in sample beside out of sample), weak scaling
published vs predicted, measured vs predicted step times, a plan's step time against the
best plan's and as overhead over the ideal, memory per GPU; the notebook's tables and
lines. Data comes from ``experiments``; the style from ``lessons.common.viz``."""

from __future__ import annotations

import math
import statistics

import plotly.graph_objects as go
from plotly.subplots import make_subplots

from parlab.hardware_presets import GPU_PRESETS
from lessons.common.viz.charts import memory_bars
from lessons.common.viz.tables import note, table
from lessons.common.viz.style import (FALLBACK_COLORS, INK, MEASURED_COLORS, MISS_COLOR,
                                      NODE_SHADES, OVERHEAD_COLORS, VALIDATION_COLORS,
                                      WARNING_COLOR, WHITE, base_layout, rank_color)

MAX_REPLICAS, MAX_STAGES, MAX_TP = 4, 8, 8  # larger meshes are drawn in part, and say so


def mesh_figure(layout: list[dict], title: str = "", gpus_per_node: int | None = None) -> go.Figure:
    """One panel per DP replica (left to right), pipeline stages as rows, TP ranks as
    columns: each cell a world rank, coloured by its pipeline stage; a TP group is a row
    of one panel, a PP group a column, a DP group the same cell in every panel. With
    ``gpus_per_node``, cells of alternate nodes sit on alternate shades and say their node.
    Meshes beyond 4 replicas x 8 stages x 8 TP ranks are drawn in part (the title says)."""
    dp = 1 + max(r["dp"] for r in layout)
    pp = 1 + max(r["pp"] for r in layout)
    tp = 1 + max(r["tp"] for r in layout)
    shown = [r for r in layout if r["dp"] < MAX_REPLICAS and r["pp"] < MAX_STAGES
             and r["tp"] < MAX_TP and r.get("cp", 0) == 0]
    cols = min(tp, MAX_TP)
    # Shapes and labels are collected and set once: plotly re-validates the whole list on
    # every add_shape, which made a 4 x 8 x 8 panel (512 shapes) take 40 s to build.
    shapes, notes = [], []
    for r in shown:
        x0 = r["dp"] * (cols + 1) + r["tp"]
        y0 = -r["pp"]
        node = r.get("node", 0)
        shapes.append(dict(type="rect", x0=x0 - 0.5, x1=x0 + 0.5, y0=y0 - 0.5, y1=y0 + 0.5,
                           line=dict(width=1, color=INK["outline"]),
                           fillcolor=NODE_SHADES[node % 2] if gpus_per_node else WHITE,
                           layer="below"))
        shapes.append(dict(type="rect", x0=x0 - 0.4, x1=x0 + 0.4, y0=y0 - 0.4, y1=y0 + 0.4,
                           line=dict(width=0), fillcolor=rank_color(r["pp"]), opacity=0.35,
                           layer="below"))
        label = f"<b>{r['rank']}</b>" + (f"<br><span style='font-size:9px'>node {node}</span>"
                                         if gpus_per_node else "")
        notes.append(dict(x=x0, y=y0, text=label, showarrow=False, font=dict(size=12)))
    for d in range(min(dp, MAX_REPLICAS)):
        notes.append(dict(x=d * (cols + 1) + (cols - 1) / 2, y=0.75, showarrow=False,
                          text=f"DP replica {d}", font=dict(size=12)))
    for s in range(min(pp, MAX_STAGES)):
        notes.append(dict(x=-0.6, y=-s, text=f"stage {s}", showarrow=False, xanchor="right",
                          font=dict(color=rank_color(s), size=12)))
    fig = go.Figure(layout=dict(shapes=shapes, annotations=notes))
    cut = dp > MAX_REPLICAS or pp > MAX_STAGES or tp > MAX_TP
    text = title or f"Mesh(dp={dp}, pp={pp}, tp={tp}): {dp * pp * tp} ranks"
    if cut:
        text += f" (first {min(dp, MAX_REPLICAS)} replicas x {min(pp, MAX_STAGES)} stages shown)"
    base_layout(fig, text, height=130 + 60 * min(pp, MAX_STAGES), showlegend=False)
    fig.update_xaxes(visible=False, range=[-2.2, min(dp, MAX_REPLICAS) * (cols + 1) - 0.5])
    fig.update_yaxes(visible=False, range=[-min(pp, MAX_STAGES) + 0.3, 1.1])
    fig.add_annotation(x=0, y=-0.02, xref="paper", yref="paper", yanchor="top", showarrow=False,
                       xanchor="left", font=dict(size=11, color=INK["dark"]),
                       text="row of a panel = one TP group · column = one pipeline (PP group) · "
                            "same cell across panels = one DP group")
    fig.update_layout(margin=dict(b=50))
    return fig


def table1_figure(rows: list[dict], title: str = "") -> go.Figure:
    """Narayanan et al. 2021 Table 1: achieved TFLOP/s per A100 (paper) vs the planner's
    prediction, one pair of bars per model, the error written above."""
    x = [r["model"] for r in rows]
    fig = go.Figure()
    fig.add_trace(go.Bar(name="paper (Table 1)", x=x, y=[r["paper_tflops"] for r in rows],
                         marker=dict(color=MEASURED_COLORS["measured"])))
    fig.add_trace(go.Bar(name="planner.estimate", x=x,
                         y=[round(r["predicted_tflops"], 1) for r in rows],
                         marker=dict(color=MEASURED_COLORS["predicted"])))
    for r in rows:
        fig.add_annotation(x=r["model"], y=max(r["paper_tflops"], r["predicted_tflops"]),
                           yanchor="bottom", showarrow=False,
                           text=f"{r['error']:+.0%}".replace("-0%", "0%").replace("+0%", "0%"),
                           font=dict(size=11))
    peak = GPU_PRESETS["A100-SXM4-80GB"].peak_tflops["bf16"]
    fig.add_hline(y=peak, line=dict(dash="dash", color=WARNING_COLOR))
    fig.add_annotation(x=0, xref="paper", y=peak, yanchor="bottom", xanchor="left",
                       showarrow=False, text=f"A100 bf16 dense peak, {peak:g} TFLOP/s",
                       font=dict(color=WARNING_COLOR, size=11))
    base_layout(fig, title or "TFLOP/s per A100: Narayanan et al. 2021 Table 1 vs the planner",
                barmode="group", legend=dict(orientation="h", y=-0.2))
    fig.update_yaxes(title_text="TFLOP/s per GPU", rangemode="tozero")
    fig.update_xaxes(title_text="model (TP x PP on the GPUs of the table)")
    return fig


def sweep_figure(sweep: dict, title: str = "") -> go.Figure:
    """Measured (best and median) vs predicted step time for every layout of the sweep,
    sorted by the measurement; the ideal (no bubble, no communication) as a line."""
    rows = sorted(sweep["rows"], key=lambda r: r["measured"])
    x = [f"{r['dp']}×{r['pp']}×{r['tp']}" for r in rows]
    fig = go.Figure()
    for key, name in (("measured", "measured (best step)"), ("median", "measured (median)"),
                      ("predicted", "predicted (cost formulas)")):
        fig.add_trace(go.Bar(name=name, x=x, y=[round(r[key] * 1e3, 2) for r in rows],
                             marker=dict(color=MEASURED_COLORS[key])))
    ideal = sweep["ideal"] * 1e3
    fig.add_hline(y=ideal, line=dict(dash="dash", color=INK["dark"]),
                  annotation_text=f"ideal: {ideal:.0f} ms", annotation_position="top left")
    base_layout(fig, title or f"8 ranks, emulated compute: step time per layout dp×pp×tp "
                              f"(Spearman ρ = {sweep['spearman']:.2f})", barmode="group",
                legend=dict(orientation="h", y=-0.2))
    top = max(max(r["measured"], r["median"], r["predicted"]) for r in rows) * 1e3
    lo, hi = ideal / 1.25, top * 1.15
    # 1-2-5 ticks labelled in full (plotly's own log ticks label the minor ones "2", "5")
    ticks = [t for t in (m * 10 ** k for k in range(0, 6) for m in (1, 2, 5)) if lo <= t <= hi]
    fig.update_yaxes(title_text="ms per step (pipeline + grad sync)", type="log",
                     range=[math.log10(lo), math.log10(hi)], tickvals=ticks,
                     ticktext=[f"{t:,g}" for t in ticks])
    fig.update_xaxes(title_text="dp × pp × tp")
    return fig


_PARTS = (("compute", "compute above the ideal"), ("communication", "exposed communication"),
          ("bubble", "pipeline bubble"))


def validation_figure(rows: list[dict], title: str = "", tolerance: float = 0.15) -> go.Figure:
    """The planner against published runs (``experiments.validation_rows``): each row's
    error (predicted / published - 1, + = optimistic) as a horizontal bar, its name
    written level beside it, in sample (the rows the constants were chosen on) above out
    of sample, the +-tolerance band shaded; the rows with an explanation grey (scored like
    the rest)."""
    sides = (("in sample", [r for r in rows if r["in_sample"]]),
             ("out of sample", [r for r in rows if not r["in_sample"]]))
    sizes = [len(rs) + 2 for _, rs in sides]
    fig = make_subplots(rows=2, cols=1, shared_xaxes=True, vertical_spacing=60 / (16 * sum(sizes) + 60),
                        row_heights=[n / sum(sizes) for n in sizes],
                        subplot_titles=[f"{name} ({len(rs)} runs)" for name, rs in sides])
    for row, (name, rs) in enumerate(sides, 1):
        for miss in (False, True):
            pick = [r for r in rs if bool(r["known_miss"]) == miss]
            if not pick:
                continue
            fig.add_trace(go.Bar(
                y=[r["name"] for r in pick], x=[100 * max(-60, min(60, r["error"])) for r in pick],
                orientation="h",
                name="explained miss (scored; reason below the table)" if miss else name,
                marker=dict(color=MISS_COLOR if miss else VALIDATION_COLORS[name]),
                customdata=[[100 * r["error"], r["group"]] for r in pick], showlegend=row == 2 or not miss,
                hovertemplate="%{y}<br>%{customdata[1]}<br>error %{customdata[0]:+.1f}%<extra></extra>"),
                row=row, col=1)
        fig.add_vrect(x0=-100 * tolerance, x1=100 * tolerance, fillcolor=VALIDATION_COLORS["tolerance"],
                      opacity=0.12, line_width=0, row=row, col=1)
        # every run named, in the table's order from the top, not every other one
        names = [r["name"] for r in rs]
        fig.update_yaxes(tickmode="array", tickvals=names, ticktext=names, autorange="reversed",
                         tickfont=dict(size=10), row=row, col=1)
    height = 16 * sum(sizes) + 200
    base_layout(fig, title or "The planner against published runs: predicted / published - 1",
                barmode="overlay", height=height,
                legend=dict(orientation="h", xref="container", x=0.01, yref="container",
                            y=1 - 70 / height, yanchor="top"))
    # the names stand level left of the bars, in a margin as wide as the longest (at 10 px,
    # about 6 px a character); the legend sits between the title and the panels
    longest = max((len(r["name"]) for r in rows), default=10)
    fig.update_layout(margin=dict(t=140, l=int(6 * longest) + 20))
    fig.update_xaxes(range=[-62, 62], showticklabels=True)
    fig.update_xaxes(title_text="error, % (clipped at ±60; + = the planner is optimistic)", row=2, col=1)
    return fig


def weak_scaling_figure(sweeps: list[dict], title: str = "") -> go.Figure:
    """Weak scaling (``planner.weak_scaling``): one panel per precision, each sweep's step at
    every scale against its step at the first scale that runs the whole model, in % (0 =
    perfect weak scaling), the published figures as solid lines, the planner's dashed, one
    colour per model (one legend entry each), circles on H100 and diamonds on other GPUs;
    the GPUs on a log axis."""
    dtypes = sorted({s["dtype"] for s in sweeps}, key=lambda d: (d != "bf16", d))
    models = list(dict.fromkeys(s["model"] for s in sweeps))
    colour = {m: FALLBACK_COLORS[i % len(FALLBACK_COLORS)] for i, m in enumerate(models)}
    fig = make_subplots(rows=1, cols=len(dtypes), shared_yaxes=True, horizontal_spacing=0.06,
                        subplot_titles=[d.upper() for d in dtypes])
    named = set()
    for col, dtype in enumerate(dtypes, 1):
        for s in (s for s in sweeps if s["dtype"] == dtype):
            w = s["whole"]
            for kind, dash in (("published", "solid"), ("predicted", "dash")):
                steps = s[kind][w:]
                first = kind == "published" and s["model"] not in named
                named.add(s["model"])
                fig.add_trace(go.Scatter(
                    x=s["gpus"][w:], y=[100 * (x / steps[0] - 1) for x in steps],
                    mode="lines+markers", line=dict(color=colour[s["model"]], dash=dash),
                    marker=dict(size=6 if kind == "published" else 4,
                                symbol="circle" if s["gpu"] == "H100" else "diamond"),
                    name=s["model"], legendgroup=s["model"], showlegend=first,
                    hovertemplate=f"{s['model']} {dtype.upper()} on {s['gpu']}, release "
                                  f"{s['release']}, {kind}<br>%{{x}} GPUs: %{{y:+.1f}}%"
                                  "<extra></extra>"), row=1, col=col)
        ticks = [8 * 4 ** k for k in range(6)]  # 8 ... 8,192: one label every two doublings
        fig.update_xaxes(type="log", tickvals=ticks, ticktext=[f"{x:,}" for x in ticks],
                         title_text="GPUs (the batch grows with them)", row=1, col=col)
    fig.update_yaxes(title_text="step vs the sweep's first scale, % (0: perfect)", row=1, col=1)
    base_layout(fig, title or "Weak scaling: published (solid) and predicted (dashed) step, "
                "NVIDIA's DGX Cloud tables (diamonds: GB200)", height=430,
                legend=dict(orientation="h", y=-0.25))
    return fig


def weak_scaling_line(sweeps: list[dict]) -> str:
    """One line over ``planner.weak_scaling()``'s sweeps: how far the step grows from each
    sweep's first whole-model scale to its largest, as published and as predicted."""
    grow = {k: [round(s["growth"][k], 3) + 0.0 for s in sweeps]  # + 0.0: no "-0.0%"
            for k in ("published", "predicted")}
    return (f"weak scaling, {len(sweeps)} sweeps of NVIDIA's DGX Cloud tables (the batch per "
            f"GPU fixed, up to {max(max(s['gpus']) for s in sweeps):,} GPUs): the step grows "
            f"{min(grow['published']):+.1%} to {max(grow['published']):+.1%} as published, "
            f"{min(grow['predicted']):+.1%} to {max(grow['predicted']):+.1%} as predicted")


def release_spread_line(configs: list[dict], median_error: float) -> str:
    """One line over ``planner.release_spread()``: how far one configuration's published step
    moves between NVIDIA's releases (median, widest), beside the planner's ``median_error``
    (its median |error| out of sample)."""
    median = statistics.median(c["spread"] for c in configs)
    wide = max(configs, key=lambda c: c["spread"])
    return (f"one configuration in several of NVIDIA's releases ({len(configs)} such): its step "
            f"moves {median:.1%} (median), {wide['spread']:.1%} at most ({wide['model']}, "
            f"{wide['n_gpus']:,} GPUs, {wide['dtype'].upper()}); the planner's median |error| "
            f"out of sample is {median_error:.1%}")


def breakdown_figure(rows: list[dict], title: str = "") -> go.Figure:
    """Ranked candidates (``experiments.candidate_row``, best first) in two panels sharing
    the x axis. Top: each one's step as it is ranked (at the fast end of its ``band``, the
    range the published runs of its kind give), in % slower than the best, with that range
    as an error bar and the best's range shaded -- plans a few % apart show, and so does
    which of them the error bars cannot tell apart. Bottom: where each step goes, as
    overhead over its ideal (the model FLOPs at every GPU's peak): compute above the ideal,
    exposed communication, bubble."""
    x = [f"#{k + 1} dp{r['dp']} tp{r['tp']} pp{r['pp']}" + (f" cp{r['cp']}" if r.get("cp", 1) > 1 else "")
         + (f" ep{r['ep']}" if r.get("ep", 1) > 1 else "") + (" Z3" if r["zero_stage"] == 3 else "")
         for k, r in enumerate(rows)]
    fig = make_subplots(rows=2, cols=1, shared_xaxes=True, vertical_spacing=0.08, row_heights=[0.45, 0.55],
                        subplot_titles=["step as ranked: % slower than #1 (bars: published runs' range)",
                                        "where the step goes: % over the ideal step (MFU = 1)"])
    best = rows[0]["step_s"] / rows[0]["band"][1] if rows else 1.0
    rel = [100 * (r["step_s"] / r["band"][1] / best - 1) for r in rows]
    top = [100 * (r["step_s"] / r["band"][0] / best - 1) for r in rows]
    fig.add_trace(go.Scatter(x=x, y=rel, mode="markers", name="step vs #1, with its range",
                             marker=dict(color=INK["darkest"], size=9),
                             error_y=dict(type="data", symmetric=False, array=[t - r for t, r in zip(top, rel)],
                                          arrayminus=[0] * len(rows), color=INK["darkest"]),
                             customdata=[[r["step_s"]] for r in rows],
                             hovertemplate="%{y:+.1f}% vs #1 (predicted step %{customdata[0]:.2f} s)"
                                           "<extra>%{x}</extra>"), row=1, col=1)
    if rows:
        fig.add_hrect(y0=0, y1=top[0], fillcolor=VALIDATION_COLORS["tolerance"], opacity=0.15,
                      line_width=0, row=1, col=1)
    for key, name in _PARTS:
        ys = [100 * ((r[key] - r["ideal"]) if key == "compute" else r[key]) / r["ideal"] for r in rows]
        fig.add_trace(go.Bar(name=name, x=x, y=ys, marker=dict(color=OVERHEAD_COLORS[key]),
                             hovertemplate=f"{name}: %{{y:.1f}}% of the ideal<extra>%{{x}}</extra>"),
                      row=2, col=1)
    base_layout(fig, title or "the planner's best layouts: how far apart, and why",
                barmode="stack", height=560, legend=dict(orientation="h", y=-0.25))
    fig.update_yaxes(title_text="% slower than #1", ticksuffix="%", row=1, col=1)
    fig.update_yaxes(title_text="% over the ideal", ticksuffix="%", rangemode="tozero", row=2, col=1)
    fig.update_annotations(font=dict(size=12))
    return fig


def memory_figure(rows: list[dict], title: str = "") -> go.Figure:
    """Memory per GPU of ranked candidates against the device's memory."""
    plans = [dict(label=f"#{k + 1} dp{r['dp']} tp{r['tp']} pp{r['pp']}",
                  **{p: r[p] for p in ("params", "grads", "optimizer", "activations")})
             for k, r in enumerate(rows)]
    return memory_bars(plans, title or "memory per GPU (first pipeline stage)",
                       limit=rows[0]["capacity"], unit="GB")


# --- tables (HTML; ``viz.table`` underneath) ------------------------------------------------

def _ms(v: float) -> str:
    return f"{v * 1e3:,.0f}"


def layouts_table(rows: list[dict]):
    """Today's layouts on 8 ranks (``experiments.todays_layouts``): the largest
    difference of loss, gradients and parameters from one device after 3 steps."""
    return table(rows, caption="8 ranks, 3 AdamW steps: largest |difference| from one device",
                 formats=dict(loss=".1e", grad=".1e", param=".1e"))


def probe_table(probe: dict):
    """This machine's all-reduce on groups of g of the 8 ranks (``experiments.comm_probe``):
    the fitted latency per ring step and bandwidth, or why a fit was not possible."""
    rows = [dict(group=g, alpha=x["alpha"] * 1e6, bandwidth=x["bandwidth"] / 1e9 if x["fitted"] else None,
                 note="" if x["fitted"] else "too noisy to fit: all of it counted as latency")
            for g, x in probe["groups"].items()]
    return table(rows, caption="this machine's links: all-reduce on groups of g of the 8 ranks (best times)",
                 headers=dict(group="ranks per group", alpha="α (µs per ring step)",
                              bandwidth="bandwidth (GB/s)", note=""),
                 formats=dict(alpha=",.0f", bandwidth=".2f"))


def sweep_table(sweep: dict):
    """Every layout of the emulated sweep (``experiments.emulated_sweep``), fastest measured
    first: measured (best, median) and predicted ms per step, the prediction's parts, and
    measured / predicted."""
    parts = ("compute", "bubble", "tp_comm", "p2p", "dp_comm")
    rows = [dict(label=r["label"], measured=r["measured"], median=r["median"], predicted=r["predicted"],
                 **{k: r["parts"][k] for k in parts}, ratio=r["measured"] / r["predicted"])
            for r in sorted(sweep["rows"], key=lambda r: r["measured"])]
    return table(rows, caption=f"every layout of 8 ranks, fastest measured first (ms per step; "
                               f"ideal = {sweep['ideal'] * 1e3:.0f} ms)",
                 headers=dict(label="dp × pp × tp", measured="measured (best)", median="median",
                              predicted="predicted", compute="= work", bubble="+ bubble", tp_comm="+ TP",
                              p2p="+ p2p", dp_comm="+ DP", ratio="measured / predicted"),
                 formats=dict(ratio=".2f", **{k: _ms for k in ("measured", "median", "predicted", *parts)}))


def _searched(r: dict) -> str:
    """The knobs searched for a row and the error's range over them, or ""."""
    if not r["searched"]:
        return ""
    return f"{', '.join(r['searched'])}: {r['spread'][0]:+.0%} to {r['spread'][1]:+.0%}"


def validation_table(rows: list[dict]):
    """The planner against every published run (``experiments.validation_rows``), every
    one scored: the source, the figure compared, published vs predicted, the error, within
    15% or not, in or out of sample, the knobs searched (and the error's range over them),
    and whether an explanation stands beside it."""
    return table([dict(r, ok="yes" if r["within"] else "no", why="below" if r["known_miss"] else "",
                       knobs=_searched(r)) for r in rows],
                 ["group", "name", "metric", "published", "predicted", "error", "ok", "in_sample",
                  "knobs", "why"],
                 caption="published runs, every one scored: in sample (the constants were chosen on "
                         "them) and out of sample",
                 headers=dict(group="source", name="run", metric="figure", published="published",
                              predicted="planner", error="error", ok="within 15%",
                              in_sample="in sample", knobs="searched: error range", why="explained"),
                 formats=dict(published=".3g", predicted=".3g", error="+.1%"))


def misses_note(rows: list[dict]):
    """The explanations beside the rows of ``validation_rows`` that have one (each still
    in the score), in a collapsed note."""
    return note("Why some rows miss, beside their errors (click)", "<ul>" + "".join(
        f"<li><b>{r['name']}</b> ({r['error']:+.0%}): {r['known_miss']}</li>"
        for r in rows if r["known_miss"]) + "</ul>")


def zero3_table(rows: list[dict]):
    """The ZeRO-3 rows of ``validation_rows`` (Narayanan et al. Table 2, no model
    parallelism, fixed batch): TFLOP/s per GPU, paper vs planner."""
    return table([r for r in rows if "ZeRO-3" in r["name"]], ["name", "published", "predicted", "error"],
                 caption="DeepSpeed's ZeRO-3 (2021) at a fixed batch (175B: 1536 sequences; 530B: 2560, then 2240): "
                         "TFLOP/s per GPU",
                 headers=dict(name="run", published="paper (Table 2)", predicted="planner", error="error"),
                 formats=dict(published=".0f", predicted=".0f", error="+.0%"))


def clip_table(rows: list[dict]):
    """``experiments_clip.clip_rows``: the global norm of step 0 on each layout and rule
    against one device's, and the parameters after the clipped steps."""
    return table(rows, ["layout", "rule", "norm", "one_device", "ratio", "param_diff"],
                 caption="global gradient norm, step 0, before clipping (max_norm 0.5)",
                 headers=dict(one_device="one device", ratio="norm / one device",
                              param_diff="max |param diff|"),
                 formats=dict(norm=".5f", one_device=".5f", ratio=".4f", param_diff=".1e"))
