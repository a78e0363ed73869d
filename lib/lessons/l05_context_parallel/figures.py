"""Figures of notebook 05 (context parallelism): who computes which part of the causal
attention matrix, work per rank, the ring on a timeline (compute and transfers in separate
lanes), bytes per rank, attention memory against sequence length, and when a ring hop's
transfer hides behind its compute; and the notebook's tables. Plain data in (from
``experiments``), a plotly ``Figure`` or an HTML table out. Interview answers use
``lessons.common.viz.answer``."""

from __future__ import annotations

import math

import plotly.graph_objects as go
from plotly.subplots import make_subplots

from lessons.common.viz.tables import table
from lessons.common.viz.style import (INK, KIND_COLORS, WHITE, base_layout, fmt_bytes, rank_color,
                                      series_colors)

__all__ = ["layout_figure", "balance_figure", "ring_timeline", "bytes_figure", "memory_figure",
           "hiding_figure", "timing_table", "bytes_table", "memory_table"]
METHOD_NAMES = {"ring": "ring attention", "ulysses": "Ulysses", "megatron_sp": "Megatron SP"}


# --- 1. who computes what ------------------------------------------------------------------

def layout_figure(grids: dict[str, list[list]], blocks: dict[str, list[float]] | None = None,
                  title: str = "") -> go.Figure:
    """One panel per layout (``experiments.work_grid``): the causal attention matrix in
    chunks of s/(2cp) positions, queries down, keys across; each computed cell in the colour
    of the rank that owns its queries (diagonal cells: their lower triangle), nothing above
    the diagonal. ``blocks``: {layout: work per rank}, written under each panel."""
    fig = make_subplots(rows=1, cols=len(grids), subplot_titles=list(grids),
                        horizontal_spacing=0.08)
    for col, (layout, grid) in enumerate(grids.items(), start=1):
        n = len(grid)
        xref, yref = ("x", "y") if col == 1 else (f"x{col}", f"y{col}")
        for i, row in enumerate(grid):
            for j, owner in enumerate(row):
                if owner is None:
                    continue
                path = (f"M {j} {i} L {j} {i + 1} L {j + 1} {i + 1} Z" if i == j else
                        f"M {j} {i} L {j + 1} {i} L {j + 1} {i + 1} L {j} {i + 1} Z")
                fig.add_shape(type="path", path=path, xref=xref, yref=yref, layer="below",
                              fillcolor=rank_color(owner), opacity=0.8,
                              line=dict(width=0.5, color=WHITE))
            fig.add_annotation(x=-0.2, y=i + 0.5, xref=xref, yref=yref, xanchor="right",
                               showarrow=False, text=f"r{row[i]}",
                               font=dict(size=10, color=rank_color(row[i])))
        if blocks and layout in blocks:
            text = "blocks per rank: " + ", ".join(f"{b:g}" for b in blocks[layout])
            fig.add_annotation(x=n / 2, y=n + 0.6, xref=xref, yref=yref, showarrow=False,
                               yanchor="top", text=text, font=dict(size=11))
        fig.update_xaxes(range=[-0.9, n], visible=False, row=1, col=col)
        fig.update_yaxes(range=[n + 1.2, 0], visible=False, row=1, col=col, scaleanchor=xref,
                         scaleratio=1)
    base_layout(fig, title or "causal attention: which rank computes which (query, key) chunks",
                height=430, showlegend=False)
    return fig


# --- 2. balance -------------------------------------------------------------------------------

def balance_figure(rows: list[dict], timing: list[dict] | None = None, title: str = "") -> go.Figure:
    """Left: forward attention work per rank (counted; the formula as black ticks), one bar
    series per layout (``experiments.balance_rows``, one cp). Right (with ``timing``,
    ``experiments.balance_timing``): seconds each rank spent computing blocks."""
    cols = 2 if timing else 1
    fig = make_subplots(rows=1, cols=cols, horizontal_spacing=0.12, subplot_titles=(
        ["counted work (blocks of (s/cp)² scores per head)",
         "measured CPU time per rank, one call"][:cols]))
    colors = dict(zip(("contiguous", "zigzag"), series_colors(["contiguous", "zigzag"])))
    for r in rows:
        ranks = [f"rank {i}" for i in range(len(r["counted"]))]
        fig.add_trace(go.Bar(name=r["layout"], legendgroup=r["layout"], x=ranks, y=r["counted"],
                             marker_color=colors[r["layout"]], offsetgroup=r["layout"],
                             text=[f"{v:g}" for v in r["counted"]]), row=1, col=1)
        fig.add_trace(go.Scatter(name="formula", legendgroup="formula", showlegend=r is rows[0],
                                 x=ranks, y=r["formula"], mode="markers", offsetgroup=r["layout"],
                                 marker=dict(symbol="line-ew-open", size=22, color=INK["black"],
                                             line=dict(width=2))), row=1, col=1)
    for t in timing or []:
        fig.add_trace(go.Bar(name=t["layout"], legendgroup=t["layout"], showlegend=False,
                             x=[f"rank {i}" for i in range(len(t["compute_s"]))],
                             y=[round(v * 1e3, 3) for v in t["compute_s"]], offsetgroup=t["layout"],
                             marker_color=colors[t["layout"]]), row=1, col=2)
    if timing:
        fig.update_yaxes(title_text="ms", row=1, col=2)
    base_layout(fig, title or f"causal ring attention, cp = {len(rows[0]['counted'])}",
                barmode="group", scattermode="group", height=380)
    return fig


# --- 3. the ring on a timeline -------------------------------------------------------------------

def ring_timeline(events: list[dict], title: str = "") -> go.Figure:
    """One attention call on every rank (``experiments.ring_events``), two lanes per rank:
    the blocks it computes and what it has on the wire (a K/V hop spans posting to
    completion). Ring: the hop that brings block i+1 spans the computation of block i."""
    fig = go.Figure()
    if not events:
        return base_layout(fig, title or "no events")
    t0 = min(e["start"] for e in events)
    ranks = sorted({e["rank"] for e in events})
    lanes = [f"r{r} {lane}" for r in ranks for lane in ("compute", "on the wire")]
    for kind, lane in (("compute", "compute"), ("comm", "on the wire")):
        mine = [e for e in events if e["kind"] == kind]
        if not mine:
            continue
        labels = [_label(e) for e in mine]
        fig.add_trace(go.Bar(
            name=kind, orientation="h", y=[f"r{e['rank']} {lane}" for e in mine],
            base=[round((e["start"] - t0) * 1e3, 3) for e in mine],
            x=[round(max(e["end"] - e["start"], 1e-6) * 1e3, 4) for e in mine],
            marker=dict(color=[rank_color(e["rank"]) if kind == "compute" else KIND_COLORS["comm"]
                               for e in mine], line=dict(width=0.5, color=WHITE)),
            text=labels, textposition="inside", insidetextanchor="middle", textangle=0,
            hovertemplate="%{text}<br>%{x:.3f} ms<extra>" + kind + "</extra>"))
    base_layout(fig, title or "one attention call, every rank", barmode="overlay",
                height=140 + 45 * len(lanes), showlegend=False,
                uniformtext=dict(minsize=8, mode="hide"))
    fig.update_yaxes(categoryorder="array", categoryarray=lanes[::-1])
    fig.update_xaxes(title_text="time (ms)")
    return fig


def _label(e: dict) -> str:
    m = e.get("meta") or {}
    if e["name"] == "ring block":
        return f"block of r{m.get('source')}"
    if e["name"] in ("ring kv", "ring dkv"):
        return f"{'K/V' if e['name'] == 'ring kv' else 'dK/dV'} hop {m.get('ring_step')}"
    return f"{m.get('operator') or e['name']}"


# --- 4. bytes per rank per layer ----------------------------------------------------------------

def bytes_figure(rows: list[dict], curves: dict | None = None, title: str = "") -> go.Figure:
    """Left: bytes one rank sends per layer and step, counted vs formula, per method and cp
    (``experiments.bytes_rows``). Right (``curves``, ``experiments.bytes_curve``): the
    formula at a long-context GPU shape against cp."""
    cols = 2 if curves else 1
    fig = make_subplots(rows=1, cols=cols, horizontal_spacing=0.12, subplot_titles=(
        ["counted on our ranks (fp32)", "formula at 128k tokens, d = 4096 (bf16)"][:cols]))
    cats = [f"{METHOD_NAMES[r['method']]}<br>cp={r['cp']}" for r in rows]
    for key, color in (("counted", INK["outline"]), ("formula", INK["pale"])):
        fig.add_trace(go.Bar(name=key, x=cats, y=[r[key] / 1024 for r in rows],
                             marker_color=color), row=1, col=1)
    fig.update_yaxes(title_text="KiB", row=1, col=1)
    for (m, pts), color in zip((curves or {}).items(), series_colors(list(curves or {}))):
        fig.add_trace(go.Scatter(name=METHOD_NAMES[m] + " (formula)", x=[p[0] for p in pts if p[0] > 1],
                                 y=[round(p[1] / 1e9, 4) for p in pts if p[0] > 1],
                                 mode="lines+markers", line=dict(color=color)), row=1, col=2)
    if curves:
        fig.update_xaxes(type="log", title_text="cp", tickvals=[2, 4, 8, 16, 32, 64], row=1, col=2)
        fig.update_yaxes(title_text="GB per layer per step", rangemode="tozero", row=1, col=2)
    base_layout(fig, title or "bytes one rank sends for one layer, one training step",
                barmode="group", height=420)
    return fig


# --- 5. memory against sequence length ----------------------------------------------------------

def memory_figure(rows: list[dict], title: str = "") -> go.Figure:
    """Peak bytes of one attention call per rank (``experiments.memory_rows``) against the
    sequence length, one panel per method, one colour per cp: measured (solid) and
    ``cost.attention_memory_per_rank`` (dashed), log-log."""
    methods = list(dict.fromkeys(r["method"] for r in rows))
    fig = make_subplots(rows=1, cols=len(methods), shared_yaxes=True, horizontal_spacing=0.06,
                        subplot_titles=[METHOD_NAMES[m] for m in methods])
    cps = sorted({r["cp"] for r in rows})
    for col, m in enumerate(methods, start=1):
        for cp in cps:
            mine = sorted((r for r in rows if r["method"] == m and r["cp"] == cp),
                          key=lambda r: r["seq_len"])
            xs = [r["seq_len"] for r in mine]
            for key, dash in (("peak", "solid"), ("formula", "dash")):
                fig.add_trace(go.Scatter(
                    name=f"cp={cp} {'measured' if key == 'peak' else 'formula'}",
                    legendgroup=f"{cp}{key}", showlegend=col == 1, x=xs, y=[r[key] for r in mine],
                    mode="lines+markers" if key == "peak" else "lines",
                    line=dict(color=rank_color(cps.index(cp)), dash=dash),
                    customdata=[fmt_bytes(r[key]) for r in mine],
                    hovertemplate=f"cp={cp}, s=%{{x}}: %{{customdata}}<extra>{key}</extra>"),
                    row=1, col=col)
        fig.update_xaxes(type="log", title_text="sequence length s", tickvals=sorted(
            {r["seq_len"] for r in rows}), row=1, col=col)
    ys = [r[k] for r in rows for k in ("peak", "formula")]
    ticks = [2.0 ** k for k in range(math.floor(math.log2(min(ys))), math.ceil(math.log2(max(ys))) + 1)
             if k % 2 == 0]  # 64 KiB, 256 KiB, 1 MiB, ...
    fig.update_yaxes(type="log", tickvals=ticks, ticktext=[fmt_bytes(v) for v in ticks])
    fig.update_yaxes(title_text="bytes per rank", row=1, col=1)
    base_layout(fig, title or "one causal attention call: peak memory per rank", height=420)
    return fig


# --- 6. when does a ring hop hide its transfer? ---------------------------------------------------

def _seconds(v: float) -> str:
    """1e-6 -> "1 µs", 0.01 -> "10 ms": a time tick in the unit that keeps it whole."""
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("µs", 1e-6), ("ns", 1e-9)):
        if v >= scale * 0.999:
            return f"{v / scale:g} {unit}"
    return f"{v:g} s"


def hiding_figure(curves: dict[str, list[dict]], title: str = "") -> go.Figure:
    """Per link (``experiments.ring_hiding`` rows): one hop's forward compute and its K/V
    transfer against the block size c = s/cp; the transfer hides right of the crossing."""
    fig = go.Figure()
    compute_done = False
    for (link, rows), color in zip(curves.items(), series_colors(list(curves))):
        xs = [r["block"] for r in rows]
        if not compute_done:
            fig.add_trace(go.Scatter(name="compute of one block", x=xs,
                                     y=[r["compute_s"] for r in rows], mode="lines+markers",
                                     line=dict(color=INK["black"], width=2)))
            compute_done = True
        fig.add_trace(go.Scatter(name=f"K/V transfer over {link}", x=xs,
                                 y=[r["transfer_s"] for r in rows], mode="lines+markers",
                                 line=dict(color=color, dash="dash")))
    ticks = [b for b in xs if b in (64, 256, 1024, 4096, 16384, 65536)]
    fig.update_xaxes(type="log", title_text="block size c = s/cp (positions per rank)",
                     tickvals=ticks, ticktext=[f"{b // 1024}k" if b >= 1024 else str(b) for b in ticks])
    ys = [y for tr in fig.data for y in tr.y]
    decades = [10.0 ** k for k in range(math.floor(math.log10(min(ys))), math.ceil(math.log10(max(ys))) + 1)]
    fig.update_yaxes(type="log", title_text="time per hop", tickvals=decades,
                     ticktext=[_seconds(v) for v in decades])
    return base_layout(fig, title or "ring attention: compute per hop vs transfer per hop",
                       height=400)


# --- tables (HTML; ``viz.table`` underneath) ------------------------------------------------

def _kib(v: float) -> str:
    return f"{v / 1024:,.0f}"


def timing_table(timing: list[dict], cp: int = 4, seq_len: int = 2048):
    """Per layout (``experiments.balance_timing``): each rank's CPU time in one causal
    ring-attention call, their max/mean beside the counted work's, and the whole call."""
    rows = [dict(layout=t["layout"], per_rank=" · ".join(f"{x * 1e3:.0f}" for x in t["compute_s"]),
                 imbalance=t["imbalance"], predicted=t["predicted"], call=t["call_s"] * 1e3)
            for t in timing]
    ranks = " · ".join(str(r) for r in range(len(timing[0]["compute_s"]))) if timing else ""
    return table(rows, caption=f"one causal ring-attention call, cp = {cp}, s = {seq_len} "
                               f"(this machine: CPU time the least of the rounds, the call their median)",
                 headers=dict(per_rank=f"CPU ms, ranks {ranks}", imbalance="max/mean, CPU time",
                              predicted="max/mean, counted work", call="whole call (ms)"),
                 formats=dict(imbalance=".2f", predicted=".2f", call=".0f"))


def bytes_table(rows: list[dict]):
    """Per (cp, method) of ``experiments.bytes_rows``: messages and bytes rank 0 sent for
    one layer in one step, counted beside ``cost.cp_comm_per_layer``."""
    return table(rows, ["cp", "method", "messages", "counted", "formula", "match"],
                 caption="bytes rank 0 sends for one layer in one training step (fp32)",
                 headers=dict(counted="counted (KiB)", formula="cost.cp_comm_per_layer (KiB)",
                              match="equal"), formats=dict(counted=_kib, formula=_kib))


def memory_table(rows: list[dict]):
    """Per (cp, s, method) of ``experiments.memory_rows``: the most bytes one attention
    call had alive (peak), the formula, their ratio, what was kept, and the output's error."""
    return table([dict(r, ratio=r["peak"] / r["formula"]) for r in rows],
                 ["cp", "seq_len", "method", "peak", "formula", "ratio", "kept", "error"],
                 caption="one causal attention forward per rank: bytes the call allocated (KiB)",
                 headers=dict(seq_len="s", peak="peak (KiB)", formula="formula (KiB)",
                              ratio="peak / formula", kept="kept (KiB)", error="max |error|"),
                 formats=dict(peak=_kib, formula=_kib, kept=_kib, ratio=".2f", error=".1e"))


def liu_table(rows: list[dict]):
    """Liu et al.'s Table 2 (GPU rows) beside c = FLOPS / bandwidth computed here."""
    return table(rows, formats={k: ".1f" for k in rows[0] if k.endswith("(k)")},
                 caption="Liu et al. 2023, Table 2, against the hiding condition c = F / B")
