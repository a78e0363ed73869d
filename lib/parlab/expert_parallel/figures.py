"""Figures of notebook 04 (Mixture of Experts, expert parallelism): tokens per expert
coloured by the rank that holds the expert, drop rate and balance over training steps,
drop rate against the capacity factor, all-to-all bytes per rank against the formula,
the busiest rank setting the layer's time, step time against the EP degree. Plain data
in (from ``experiments``), a plotly ``Figure`` out (interview answers: ``parlab.viz.answer``)."""

from __future__ import annotations

import plotly.graph_objects as go
from plotly.subplots import make_subplots

from ..viz.charts import bars
from ..viz.style import INK, KIND_COLORS, WARNING_COLOR, base_layout, rank_color, series_colors


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


def over_steps(sweep: list[dict], capacity_factor: float = 1.25, title: str = "") -> go.Figure:
    """Two panels over training steps, one line per (routing, balancer): max/mean
    assignments per expert, and the share capacity ``capacity_factor`` drops
    (rows from ``experiments.drop_sweep``)."""
    fig = make_subplots(rows=1, cols=2, horizontal_spacing=0.1, subplot_titles=[
        "busiest expert / mean", f"dropped at capacity factor {capacity_factor}"])
    colors = series_colors([_case(r) for r in sweep])
    for r, color in zip(sweep, colors):
        dash = "solid" if r["tilt"] else "dot"
        for col, ys in ((1, [x["max_over_mean"] for x in r["load"]]),
                        (2, [100 * d for d in r["drops"][capacity_factor]])):
            fig.add_trace(go.Scatter(name=_case(r), legendgroup=_case(r), showlegend=col == 1,
                                     y=ys, mode="lines", line=dict(color=color, dash=dash)),
                          row=1, col=col)
    fig.update_xaxes(title_text="training step")
    fig.update_yaxes(ticksuffix="%", rangemode="tozero", row=1, col=2)
    base_layout(fig, title or "load balance over training", height=420,
                legend=dict(orientation="h", y=-0.25))
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
