"""Figures of notebook 04 (Mixture of Experts, expert parallelism): tokens per expert
coloured by the rank that holds the expert, drop rate and balance over training steps,
drop rate against the capacity factor, all-to-all bytes per rank against the formula,
the busiest rank setting the layer's time, step time against the EP degree; and the
notebook's tables. Plain data in (from ``experiments``), a plotly ``Figure`` or an HTML
table out (interview answers: ``lessons.common.viz.answer``)."""

from __future__ import annotations

import plotly.graph_objects as go
from plotly.subplots import make_subplots

from lessons.common.viz.charts import bars
from lessons.common.viz.tables import table
from lessons.common.viz.style import (INK, KIND_COLORS, WARNING_COLOR, base_layout, rank_color,
                                      series_colors)


def expert_histogram(table: list[dict], capacity: int | None = None, title: str = "") -> go.Figure:
    """Tokens each expert computed, one bar per expert in the colour of its rank
    (rows from ``experiments.expert_table``); dashed: the capacity, if any."""
    fig = go.Figure()
    for row in table:
        es = sorted(row["experts"])
        fig.add_trace(go.Bar(name=f"rank {row['rank']}", x=[f"expert {e}" for e in es],
                             y=[row["experts"][e] for e in es],
                             marker=dict(color=rank_color(row["rank"])),
                             hovertemplate="%{x}: %{y} tokens<extra>rank " + str(row["rank"]) + "</extra>"))
    total = sum(sum(r["experts"].values()) for r in table)
    n = sum(len(r["experts"]) for r in table)
    fig.add_hline(y=total / n, line=dict(dash="dot", color=INK["mid"]),
                  annotation_text="mean", annotation_position="top left")
    if capacity is not None:
        fig.add_hline(y=capacity, line=dict(dash="dash", color=WARNING_COLOR),
                      annotation_text=f"capacity {capacity}", annotation_position="top right")
    base_layout(fig, title or "tokens per expert, coloured by the rank that holds it")
    fig.update_yaxes(title_text="tokens (assignments) in one step")
    return fig


def _case(r: dict) -> str:
    return f"{'skewed' if r['tilt'] else 'balanced'}, {r['balancer']}"


def balance_over_steps(sweep: list[dict], capacity_factor: float = 1.25, title: str = "") -> go.Figure:
    """Small multiples over training steps, one column per balancer (none, aux loss,
    bias): top, busiest expert / mean; bottom, the share capacity ``capacity_factor``
    drops. Two lines per panel, balanced and skewed routing, in the same colours in
    every panel (rows from ``experiments.drop_sweep``)."""
    balancers = list(dict.fromkeys(r["balancer"] for r in sweep))
    fig = make_subplots(rows=2, cols=len(balancers), shared_xaxes=True, shared_yaxes="rows",
                        horizontal_spacing=0.04, vertical_spacing=0.1,
                        subplot_titles=[f"balancer: {b}" for b in balancers])
    colors = dict(zip(("balanced", "skewed"), series_colors(["balanced routing", "skewed routing"])))
    for r in sweep:
        col = balancers.index(r["balancer"]) + 1
        routing = "skewed" if r["tilt"] else "balanced"
        for row, ys in ((1, [x["max_over_mean"] for x in r["load"]]),
                        (2, [100 * d for d in r["drops"][capacity_factor]])):
            fig.add_trace(go.Scatter(name=f"{routing} routing", legendgroup=routing, y=ys,
                                     mode="lines", line=dict(color=colors[routing]),
                                     showlegend=row == 1 and col == 1),
                          row=row, col=col)
    fig.add_hline(y=1, line=dict(dash="dot", color=INK["mid"]), row=1, col="all")
    fig.update_xaxes(title_text="training step", row=2)
    fig.update_yaxes(title_text="busiest / mean", rangemode="tozero", row=1, col=1)
    fig.update_yaxes(title_text=f"dropped at cf {capacity_factor:g}", ticksuffix="%",
                     rangemode="tozero", row=2, col=1)
    base_layout(fig, title or "load balance over training: each balancer on its own", height=480,
                legend=dict(orientation="h", y=-0.18))
    return fig


def drop_vs_capacity(sweep: list[dict], last: int = 10, title: str = "") -> go.Figure:
    """Dropped share against the capacity factor, mean of the last ``last`` steps."""
    fig = go.Figure()
    for r, color in zip(sweep, series_colors([_case(r) for r in sweep])):
        cfs = sorted(r["drops"])
        fig.add_trace(go.Scatter(name=_case(r), x=cfs, mode="lines+markers",
                                 y=[100 * sum(r["drops"][c][-last:]) / last for c in cfs],
                                 line=dict(color=color, dash="solid" if r["tilt"] else "dot")))
    base_layout(fig, title or f"dropped assignments vs capacity factor (last {last} steps)")
    fig.update_xaxes(title_text="capacity factor")
    fig.update_yaxes(title_text="dropped", ticksuffix="%", rangemode="tozero")
    return fig


def a2a_bars(rows: list[dict], layer: str = "blocks.0.moe", title: str = "") -> go.Figure:
    """Bytes each rank sends in one layer's all-to-alls per step: traced vs
    ``cost.moe_all_to_all_bytes`` (rank's own remote share; balanced routing)."""
    mine = [r for r in rows if r["layer"] == layer]
    return bars([f"rank {r['rank']}" for r in mine],
                {"traced": [r["measured"] / 1024 for r in mine],
                 "formula, own remote share (symmetric)": [r["formula"] / 1024 for r in mine],
                 "formula, balanced": [r["balanced"] / 1024 for r in mine]},
                title or f"all-to-all bytes sent per rank, {layer}, one training step", "KiB")


def busiest_figure(rows: list[dict], title: str = "") -> go.Figure:
    """Per rank: emulated expert compute, then waiting in the combine all-to-all
    (rows from ``experiments.busiest``); dashed: max(rows) x time per row."""
    fig = go.Figure()
    x = [f"rank {r['rank']}<br>{r['rows']} rows" for r in rows]
    fig.add_trace(go.Bar(name="expert compute", x=x, y=[1e3 * r["compute_s"] for r in rows],
                         marker=dict(color=KIND_COLORS["compute"])))
    fig.add_trace(go.Bar(name="waiting for the busiest rank", x=x,
                         y=[1e3 * (r["layer_s"] - r["compute_s"]) for r in rows],
                         marker=dict(color=KIND_COLORS["wait"])))
    # the lines' labels sit right of the plot, where no bar can hide them; legend below
    for y, dash, color, text in ((rows[0]["predicted_s"], "dash", WARNING_COLOR,
                                  "predicted:<br>busiest rank's rows"),
                                 (rows[0]["balanced_s"], "dot", INK["mid"], "if balanced")):
        fig.add_hline(y=1e3 * y, line=dict(dash=dash, color=color))
        fig.add_annotation(x=1.01, xref="paper", y=1e3 * y, xanchor="left", showarrow=False,
                           text=text, font=dict(color=color, size=11), align="left")
    base_layout(fig, title or "one MoE layer: every rank waits for the busiest", barmode="stack",
                legend=dict(orientation="h", y=-0.22, x=0))
    fig.update_layout(margin=dict(r=150, b=110))
    fig.update_yaxes(title_text="ms")
    return fig


def step_time_bars(rows: list[dict], title: str = "") -> go.Figure:
    """Median step time at each EP degree on this machine (``experiments.step_times``)."""
    fig = bars([f"ep={r['ep']}" for r in rows], {"step (ms)": [1e3 * r["step_s"] for r in rows]},
               title or "training step time on this machine's CPU ranks", "ms")
    for r in rows:
        fig.add_annotation(x=f"ep={r['ep']}", y=1e3 * r["step_s"], yanchor="bottom",
                           showarrow=False, text=f"{r['speedup']:.2f}×")
    return fig


# --- tables (HTML; ``viz.table`` underneath) ------------------------------------------------

def _ms(x: float) -> str:
    return f"{x * 1e3:.1f} ms"


def routing_table(per_expert: dict[str, list[int]]):
    """Per model seed: tokens each expert computed (rank = expert), busiest / mean (what
    sets the step) and busiest / coldest (what a "hot expert" claim quotes)."""
    rows = [dict(seed=name, tokens=", ".join(map(str, c)), over_mean=max(c) / (sum(c) / len(c)),
                 over_coldest=max(c) / max(min(c), 1)) for name, c in per_expert.items()]
    return table(rows, caption="block 0, step 0: tokens per expert (rank = expert), 4 ranks",
                 formats={"over_mean": ".2f", "over_coldest": ".1f"},
                 headers={"tokens": "tokens per expert 0..3", "over_mean": "busiest / mean",
                          "over_coldest": "busiest / coldest"})


def balance_table(sweep: list[dict], last: int = 10):
    """Per (routing, balancer) of ``experiments.drop_sweep``: busiest/mean and
    busiest/coldest at the first step and over the last ``last`` steps, the share each
    capacity factor would drop (last steps), and what the capped run really dropped."""
    from .experiments import summarize
    rows, cfs = [], []
    for r in sweep:
        s = summarize(r, last)
        cfs = sorted(s["drops_last"])
        rows.append(dict(routing="skewed" if r["tilt"] else "balanced", balancer=r["balancer"],
                         mean_first=s["first"]["max_over_mean"], mean_last=s["last"]["max_over_mean"],
                         cold_first=s["first"]["max_over_min"], cold_last=s["last"]["max_over_min"],
                         **{f"cf {cf:g}": s["drops_last"][cf] for cf in cfs},
                         capped=s["measured_last"]))
    return table(rows, caption=f"balance (first step -> mean of the last {last}) and the share "
                               f"dropped at each capacity factor (last {last} steps)",
                 formats={"mean_first": ".2f", "mean_last": ".2f", "cold_first": ".1f",
                          "cold_last": ".1f", "capped": ".1%", **{f"cf {cf:g}": ".1%" for cf in cfs}},
                 headers={"mean_first": "busiest/mean, first", "mean_last": "last",
                          "cold_first": "busiest/coldest, first", "cold_last": "last",
                          "capped": f"trained at cf {sweep[0]['measured_cf']:g}"})


def a2a_table(a2a: dict[str, list[dict]], layer: str = "blocks.0.moe"):
    """Per seed and rank: all-to-all KiB sent in one layer (traced, forward + backward)
    beside the balanced formula, and the rows the rank sent out and took in
    (``experiments.a2a_check``)."""
    rows = [dict(seed=name, rank=x["rank"], sent=x["measured"] / 1024, balanced=x["balanced"] / 1024,
                 rows_out=x["sent_rows"], rows_in=x["recv_rows"])
            for name, xs in a2a.items() for x in xs if x["layer"] == layer]
    return table(rows, caption=f"{layer}, step 0: all-to-all bytes each rank sends (forward + backward)",
                 formats={"sent": "g", "balanced": "g"},
                 headers={"sent": "KiB sent (trace)", "balanced": "formula, balanced (KiB)",
                          "rows_out": "rows out", "rows_in": "rows in"})


def busiest_table(rows: list[dict]):
    """Per rank of the emulated layer (``experiments.busiest``): its rows, how long it
    computed and when the combine all-to-all let it go."""
    return table(rows, ["rank", "rows", "compute_s", "layer_s"],
                 caption="emulated MoE layer, 4 ranks, medians of 5",
                 formats={"compute_s": _ms, "layer_s": _ms},
                 headers={"compute_s": "computes", "layer_s": "leaves the layer at"})


def step_time_table(rows: list[dict]):
    """Median training step at each EP degree and its speed-up over the first
    (``experiments.step_times``)."""
    return table(rows, ["ep", "step_s", "steps", "speedup"], caption="HEAVY experts, median step",
                 formats={"step_s": _ms, "speedup": ".2f"},
                 headers={"step_s": "median step", "steps": "steps timed", "speedup": "× ep=1"})


def variant_table(rows: list[dict], caption: str = ""):
    """Rows of ``experiments_variants`` (any of its three functions) as one HTML table."""
    pct = {k: ".1%" for k in ("none", "one", "more", "none_random", "one_random", "more_random")}
    return table(rows, caption=caption or "MoE variants on 2 ranks (block 0, step 0)",
                 formats={"sent_kib": ".1f", "formula_kib": ".1f", "max_diff": ".1e",
                          "received": lambda v: ", ".join(map(str, v)), **pct},
                 headers={"sent_kib": "KiB sent (trace)", "formula_kib": "formula, balanced",
                          "dropped_formula": "dropped, formula", "max_diff": "max |diff| vs 1 device",
                          "none": "0 experts", "one": "1", "more": "2+",
                          "none_random": "0, random", "one_random": "1, random",
                          "more_random": "2+, random", "capacity_drops": "capacity drops"})
