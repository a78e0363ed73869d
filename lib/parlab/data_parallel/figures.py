"""Figures of notebook 01 (data parallelism): a step's timeline with a compute and a
comm lane per rank, and the bucket-size sweep."""

from __future__ import annotations

import plotly.graph_objects as go

from ..viz.charts import timeline
from ..viz.style import BYTES_AXIS, KIND_COLORS, VARIANT_COLORS, base_layout

def dp_timeline(events: list[dict], title: str = "", t0: float | None = None) -> go.Figure:
    """``timeline`` with two lanes per rank: its compute (forward, backward, optimizer) and
    its communication (all-reduce bars, and grey waits for them). The reader should see
    whether the orange bars run under the backward bar (overlap) or after it (exposed)."""
    lanes = [dict(e, rank=2 * int(e["rank"]) + (e["kind"] != "compute")) for e in events]
    fig = timeline(lanes, title, t0)
    if lanes:
        ys = sorted({e["rank"] for e in lanes})
        fig.update_yaxes(tickvals=ys, ticktext=[f"rank {y // 2} {'comm' if y % 2 else 'compute'}"
                                                for y in ys])
    return fig


def bucket_sweep_figure(rows: list[dict], title: str = "") -> go.Figure:
    """Step time (left axis) and overlap fraction (right axis) against the bucket size;
    the naive variant (no buckets) as a dashed level. ``rows``: dicts with
    ``bucket_bytes`` (None for naive), ``median`` (s) and ``overlap`` (0..1). The reader
    should see the trade-off: small buckets overlap more but pay one latency each."""
    bucketed = sorted((r for r in rows if r.get("bucket_bytes")), key=lambda r: r["bucket_bytes"])
    if not bucketed:
        raise ValueError("rows has no bucketed entry")
    xs = [r["bucket_bytes"] for r in bucketed]
    fig = go.Figure()
    fig.add_trace(go.Scatter(name="step time (median)", x=xs,
                             y=[round(r["median"] * 1e3, 3) for r in bucketed],
                             mode="lines+markers", line=dict(color=KIND_COLORS["compute"]),
                             hovertemplate="bucket %{x:.3s}B: %{y:.2f} ms<extra></extra>"))
    fig.add_trace(go.Scatter(name="overlap fraction", x=xs, yaxis="y2",
                             y=[round(100 * (r["overlap"] or 0.0), 1) for r in bucketed],
                             mode="lines+markers", line=dict(color=KIND_COLORS["comm"], dash="dot"),
                             hovertemplate="bucket %{x:.3s}B: %{y:.0f}% overlapped<extra></extra>"))
    for r in rows:
        if not r.get("bucket_bytes"):
            fig.add_trace(go.Scatter(name=f"{r.get('label', 'naive')} step time",
                                     x=[xs[0], xs[-1]], y=[round(r["median"] * 1e3, 3)] * 2,
                                     mode="lines", line=dict(color=VARIANT_COLORS["naive"], dash="dash"),
                                     hovertemplate="%{y:.2f} ms<extra>naive</extra>"))
    base_layout(fig, title, legend=dict(orientation="h", y=1.02, yanchor="bottom", x=0))
    fig.update_layout(margin=dict(t=90 if title else 50, r=60),
                      yaxis2=dict(title="overlap with backward (%)", overlaying="y",
                                  side="right", range=[0, 100], showgrid=False,
                                  tickmode="linear", tick0=0, dtick=20, zeroline=False))
    fig.update_xaxes(type="log", title_text="bucket size (bytes)", **BYTES_AXIS)
    fig.update_layout(yaxis=dict(title="step time (ms)", rangemode="tozero"))
    return fig
