"""Figures of notebook 02 (tensor parallelism): the f/g block diagram, one step's
collectives on a timeline, counted-vs-formula bars, activation bytes, tokens/s, and the
GPU-scale model against the TP degree; and the notebook's tables. Plain data in (from
``experiments``), a plotly ``Figure`` or an HTML table out (interview answers:
``lessons.common.viz.answer``)."""

from __future__ import annotations

import math

import plotly.graph_objects as go
from plotly.subplots import make_subplots

from lessons.common.viz.charts import bars, timeline
# answer: the shared box (context_parallel.figures imports it from here)
from lessons.common.viz.tables import answer, table  # noqa: F401
from lessons.common.viz.style import (INK, KIND_COLORS, LABEL_BACKGROUND, NEUTRAL_COLOR,
                                      base_layout, rank_color, series_colors)

COMM = KIND_COLORS["comm"]
# what each traced operator is called in the papers (Shoeybi's f/g; Korthikanti's g/g-bar)
OPERATOR_LABELS = {"f": "f", "g": "g", "sp_gather": "g (SP)", "sp_reduce_scatter": "ḡ (SP)",
                   "sp_regather": "re-gather", "ce_max": "max", "ce_sum_exp": "Σexp",
                   "ce_target": "target", "sp_param_grads": "SP grads"}


# --- 1. where f and g go ----------------------------------------------------------------

def _columns(sequence_parallel: bool):
    """(kind, label) from left to right: "all" one box every rank shares, "rank" one box
    per rank, "comm" a collective spanning the ranks."""
    if not sequence_parallel:
        return [("all", "X<br>(whole, on<br>every rank)"),
                ("comm", "<b>f</b><br>fwd: identity<br>bwd: all-reduce"),
                ("rank", "GeLU(X A<sub>{r}</sub>)<br>column slice"),
                ("rank", "Y<sub>{r}</sub> B<sub>{r}</sub><br>row slice:<br>partial sum"),
                ("comm", "<b>g</b><br>fwd: all-reduce<br>bwd: identity"),
                ("all", "Z = Σ<sub>r</sub> Y<sub>r</sub>B<sub>r</sub><br>(whole, on<br>every rank)")]
    return [("rank", "LayerNorm<br>on positions<br>shard {r}"),
            ("comm", "<b>g</b><br>fwd: all-gather<br>bwd: reduce-scatter"),
            ("rank", "GeLU(X A<sub>{r}</sub>)<br>column slice"),
            ("rank", "Y<sub>{r}</sub> B<sub>{r}</sub><br>row slice:<br>partial sum"),
            ("comm", "<b>ḡ</b><br>fwd: reduce-scatter<br>bwd: all-gather"),
            ("rank", "residual add<br>on positions<br>shard {r}")]


def fg_diagram(sequence_parallel: bool = False, t: int = 2) -> go.Figure:
    """Megatron's MLP block on ``t`` ranks (one lane per rank): the column-parallel
    matmul, then the row-parallel one, with f before and g after (Shoeybi et al. 2019,
    Fig. 3a) -- or, with sequence parallelism, Korthikanti et al.'s g and ḡ (2022, Fig. 6).
    Orange boxes are the only places where ranks talk. The attention block has the same
    shape (qkv column-split by heads, proj row-split)."""
    cols = _columns(sequence_parallel)
    fig = go.Figure()
    w, gap, lane = 1.25, 0.45, 1.0
    for i, (kind, label) in enumerate(cols):
        x0 = i * (w + gap)
        boxes = ([(0, t - 1)] if kind in ("all", "comm") else [(r, r) for r in range(t)])
        for lo, hi in boxes:
            y0, y1 = -hi * lane - 0.4, -lo * lane + 0.4
            color = COMM if kind == "comm" else NEUTRAL_COLOR if kind == "all" else rank_color(lo)
            fig.add_shape(type="rect", x0=x0, x1=x0 + w, y0=y0, y1=y1,
                          line=dict(width=1, color=INK["outline"]),
                          fillcolor=color, opacity=0.85 if kind != "rank" else 0.35, layer="below")
            fig.add_annotation(x=x0 + w / 2, y=(y0 + y1) / 2, text=label.format(r=lo),
                               showarrow=False, font=dict(size=10 if kind == "comm" else 11))
        if i:
            for r in range(t):
                fig.add_annotation(x=x0, y=-r * lane, ax=x0 - gap, ay=-r * lane, xref="x", yref="y",
                                   axref="x", ayref="y", text="", showarrow=True, arrowhead=2,
                                   arrowwidth=1.2, arrowcolor=INK["outline"])
    for r in range(t):
        fig.add_annotation(x=-0.1, y=-r * lane, text=f"rank {r}", showarrow=False, xanchor="right",
                           font=dict(color=rank_color(r), size=12))
    title = ("tensor + sequence parallel MLP: g and ḡ at the edges" if sequence_parallel
             else "tensor-parallel MLP: column then row, f and g at the edges")
    base_layout(fig, title, height=140 + 95 * t, showlegend=False)
    fig.update_xaxes(visible=False, range=[-0.9, len(cols) * (w + gap)])
    fig.update_yaxes(visible=False, range=[-(t - 1) * lane - 0.6, 0.6])
    return fig


# --- 2. one step's collectives --------------------------------------------------------------

def step_timeline(events: list[dict], title: str = "", block: str = "blocks.0") -> go.Figure:
    """``viz.timeline`` of one training step (forward/backward/optimizer spans and every
    collective), with ``block``'s collectives on rank 0 labelled by their operator."""
    fig = timeline(events, title)
    if not events:
        return fig
    t0 = min(e["start"] for e in events)
    mine = [e for e in events if e["kind"] == "comm" and e["rank"] == 0 and
            str((e.get("meta") or {}).get("layer", "")).startswith(block + ".")]
    for k, e in enumerate(mine):
        meta = e["meta"]
        fig.add_annotation(x=round(((e["start"] + e["end"]) / 2 - t0) * 1e3, 3), y=0,
                           text=f"{OPERATOR_LABELS.get(meta.get('operator'), meta.get('operator'))}"
                                f" {meta['layer'].split('.')[-1]}",
                           showarrow=True, arrowhead=1, ax=0, ay=-24 - 14 * (k % 3),
                           font=dict(size=10), bgcolor=LABEL_BACKGROUND)
    ranks = len({e["rank"] for e in events})
    fig.update_layout(margin=dict(t=110, b=100), height=240 + 50 * ranks,
                      legend=dict(y=-0.3, yanchor="top", x=0, xanchor="left"))
    return fig


# --- 3. counted vs formula; activations; tokens/s ---------------------------------------------

def _case(r: dict) -> str:
    return f"t={r['tp']}" + (" SP" if r["sequence_parallel"] else "")


def comm_bars(rows: list[dict], title: str = "") -> go.Figure:
    """Bytes one rank sends for one block in one training step: counted in the trace vs
    ``cost.tp_comm_per_layer`` (rows from ``experiments.comm_sweep``)."""
    cats = [_case(r) for r in rows]
    fig = bars(cats, {"counted (trace)": [r["measured"]["bytes"] / 1024 for r in rows],
                      "formula (cost.tp_comm_per_layer)": [r["formula"]["bytes"] / 1024 for r in rows],
                      "of which SP's re-gather (formula)": [r["formula"]["regather_bytes"] / 1024
                                                            for r in rows]},
               title or "bytes sent per rank, one block, one training step", "KiB")
    for c, r in zip(cats, rows):
        fig.add_annotation(x=c, y=r["measured"]["bytes"] / 1024, yanchor="bottom", showarrow=False,
                           text=f"{r['measured']['collectives']} collectives", font=dict(size=11))
    return fig


def activation_bars(rows: list[dict], recompute: str = "none", title: str = "") -> go.Figure:
    """Bytes one block saves for backward on a rank: measured vs ``activation_memory``
    (layer="lab", our fp32 layer) vs Korthikanti's Eq. 1-4 rescaled to fp32 (rows from
    ``experiments.activation_rows``)."""
    mine = [r for r in rows if r["recompute"] == recompute]
    return bars([_case(r) for r in mine],
                {"measured": [r["measured"] / 1024 for r in mine],
                 "formula, our layer": [r["formula"] / 1024 for r in mine],
                 "Korthikanti (with dropout), fp32": [r["korthikanti"] / 1024 for r in mine]},
                title or f"activations saved per block and rank (recompute={recompute})", "KiB")


def throughput_figure(rows: list[dict], title: str = "") -> go.Figure:
    """Measured tokens/s at each TP degree on this machine's ranks."""
    fig = bars([f"t={r['tp']}" for r in rows],
               {"tokens/s (median step)": [r["tokens_per_s"] for r in rows]},
               title or "training tokens/s on this machine's CPU ranks", "tokens/s")
    for r in rows:
        fig.add_annotation(x=f"t={r['tp']}", y=r["tokens_per_s"], yanchor="bottom",
                           showarrow=False, text=f"{r['speedup']:.2f}×")
    return fig


_METRICS = {"mfu": ("MFU", 100.0, "%"), "tokens_per_s": ("tokens/s of the TP group", 1.0, ""),
            "tokens_per_s_per_gpu": ("tokens/s per GPU", 1.0, ""),
            "comm_fraction": ("communication share of the step", 100.0, "%")}


def gpu_scale_figure(curves: dict[str, list[dict]], metrics=("mfu", "tokens_per_s"),
                     gpus_per_node: int = 8, title: str = "") -> go.Figure:
    """The GPU-scale model against the TP degree, one line per platform/model
    (``experiments.gpu_scale`` rows), one panel per metric; right of the dashed line
    the TP group spans nodes and its ring runs over the network."""
    fig = make_subplots(rows=1, cols=len(metrics), subplot_titles=[_METRICS[m][0] for m in metrics],
                        horizontal_spacing=0.12)
    colors = series_colors(list(curves))
    for j, m in enumerate(metrics, start=1):
        label, scale, unit = _METRICS[m]
        for (name, rows), color in zip(curves.items(), colors):
            fig.add_trace(go.Scatter(
                name=name, legendgroup=name, showlegend=j == 1, x=[r["tp"] for r in rows],
                y=[round(r[m] * scale, 4) for r in rows], mode="lines+markers",
                line=dict(color=color, width=2), customdata=[[r["link_name"]] for r in rows],
                hovertemplate=f"{name}<br>t=%{{x}} over %{{customdata[0]}}: %{{y:.3g}}{unit}"
                              "<extra></extra>"), row=1, col=j)
        # between gpus_per_node and the next degree, halfway on the log axis (shapes take
        # data values on a log axis, annotations their log10)
        fig.add_vline(x=gpus_per_node * math.sqrt(2), line=dict(dash="dash", color=INK["mid"]),
                      row=1, col=j)
        tps = sorted({r["tp"] for rows in curves.values() for r in rows})
        fig.update_xaxes(type="log", tickvals=tps, title_text="TP degree t", row=1, col=j)
        fig.update_yaxes(ticksuffix=unit, rangemode="tozero", row=1, col=j)
    fig.add_annotation(x=0, y=-0.32, xref="paper", yref="paper", xanchor="left", yanchor="top",
                       showarrow=False, font=dict(size=11, color=INK["dark"]),
                       text=f"dashed line: one node = {gpus_per_node} GPUs; right of it the TP "
                            "ring crosses the network")
    base_layout(fig, title or "GPU-scale model: one TP group, compute then communication",
                height=440, legend=dict(orientation="h", y=-0.2))
    fig.update_layout(margin=dict(t=80, b=110))
    return fig


# --- 4. tables (HTML; ``viz.table`` underneath) ---------------------------------------------

def _kib(b: float) -> str:
    return f"{b / 1024:g} KiB"


def _ms(s: float) -> str:
    return f"{s * 1e3:,.0f} ms"


def _ops(d: dict) -> str:
    return " + ".join(f"{n} {op.replace('_', '-')}" for op, n in sorted(d.items())) or "none"


def collectives_table(seq: list[dict]):
    """One block's collectives in one training step, in the order rank 0 ran them: pass,
    Megatron operator (f, g, ...), collective, layer and bytes sent
    (``experiments.layer_sequence``)."""
    return table(seq, ["direction", "operator", "op", "layer", "bytes_sent"],
                 caption="block 0's collectives in one step, rank 0, in order",
                 formats={"bytes_sent": _kib}, headers={"bytes_sent": "sent by rank 0"})


def outside_table(rows: list[dict], t: int = 2):
    """The collectives outside the blocks (embedding, lm_head, the loss) in one step on
    ``t`` ranks, with the bytes rank 0 sent and how many times
    (``experiments.comm_table(...)["outside"]``)."""
    return table(rows, ["layer", "direction", "operator", "op", "bytes", "n"],
                 caption=f"collectives outside the blocks, one step, rank 0 (t={t})",
                 headers={"bytes": "bytes sent", "n": "times"})


def comm_count_table(sweep: list[dict]):
    """Per case (t, SP): one block's collectives per pass and the KiB one rank sends per
    training step, counted in the trace next to ``cost.tp_comm_per_layer``
    (``experiments.comm_sweep``)."""
    rows = [dict(case=_case(r), forward=_ops(r["measured"]["forward"]),
                 backward=_ops(r["measured"]["backward"]), counted=r["measured"]["bytes"] / 1024,
                 formula=r["formula"]["bytes"] / 1024, equal=r["match"]) for r in sweep]
    return table(rows, caption="one block, one training step, per rank: traced vs "
                               "cost.tp_comm_per_layer",
                 formats={"counted": "g", "formula": "g"},
                 headers={"counted": "KiB sent (trace)", "formula": "KiB (formula)"})


def activation_table(acts: list[dict]):
    """Bytes one block saves for backward on rank 0, per t, SP and recomputation: measured,
    our layer's formula, Korthikanti's (fp32) and Korthikanti's without dropout
    (``experiments.activation_rows``)."""
    rows = [dict(t=r["tp"], SP="yes" if r["sequence_parallel"] else "no", recompute=r["recompute"],
                 measured=r["measured"], formula=round(r["formula"]),
                 korthikanti=round(r["korthikanti"]), no_dropout=round(r["no_dropout"]))
            for r in acts]
    return table(rows, caption="bytes one block saves for backward, rank 0",
                 headers={"formula": "formula (our layer)", "korthikanti": "Korthikanti, fp32",
                          "no_dropout": "Korthikanti, no dropout"})


def korthikanti_table(rows: list[dict], title: str = "GPT-3 175B, b=1, t=8"):
    """Korthikanti et al.'s Table 2 (activation bytes per layer: TP, SP, selective
    recomputation) at one model's shape (``experiments.korthikanti_rows``)."""
    return table(rows, ["label", "expression", "bytes"],
                 caption=f"{title}: activation bytes per layer (Korthikanti et al. 2022, "
                         "Table 2; cost.activation_table)",
                 formats={"bytes": lambda b: f"{b / 1e9:.3f} GB"},
                 headers={"label": "", "bytes": "per layer"})


def throughput_table(rows: list[dict], title: str = "MEDIUM, batch 8, this machine's CPU ranks"):
    """Median step, steps timed, tokens/s and speed-up over t = 1 at each TP degree
    (``experiments.throughput``)."""
    return table(rows, ["tp", "step_s", "steps", "tokens_per_s", "speedup"], caption=title,
                 formats={"step_s": lambda x: f"{x * 1e3:.1f} ms", "tokens_per_s": ",.0f",
                          "speedup": ".2f"},
                 headers={"tp": "t", "step_s": "median step", "steps": "steps timed",
                          "tokens_per_s": "tokens/s", "speedup": "× t=1"})


def cpu_work_table(rows: list[dict]):
    """CPU seconds per training step, all ranks together, and the ratio to t = 1
    (``experiments.cpu_work``)."""
    return table(rows, ["tp", "cpu_s", "ratio"],
                 caption="CPU seconds per training step, all ranks together (median of 2)",
                 formats={"cpu_s": _ms, "ratio": ".2f"},
                 headers={"tp": "t", "cpu_s": "CPU per step", "ratio": "× t=1"})


def gpu_scale_table(curves: dict[str, list[dict]], title: str = "GPT-3 175B, b=1, s=2048"):
    """The GPU-scale model, one row per platform and TP degree: the link the ring runs
    over, compute and communication per micro-batch, communication share, MFU and
    tokens/s per GPU (``experiments.gpu_scale`` rows)."""
    rows = [dict(platform=p, **r) for p, rs in curves.items() for r in rs]
    return table(rows, ["platform", "tp", "link_name", "compute_s", "comm_s", "comm_fraction",
                        "mfu", "tokens_per_s_per_gpu"],
                 caption=f"{title}: the GPU-scale model (cost.tp_scaling_curve)",
                 formats={"compute_s": _ms, "comm_s": _ms, "comm_fraction": ".1%", "mfu": ".1%",
                          "tokens_per_s_per_gpu": ",.0f"},
                 headers={"tp": "t", "link_name": "ring over", "compute_s": "compute",
                          "comm_s": "comm", "comm_fraction": "comm share", "mfu": "MFU",
                          "tokens_per_s_per_gpu": "tokens/s per GPU"})


def forward_overlap_table(rows: list[dict]):
    """The SP MLP's median forward per t and chunk count, and its ratio to unchunked
    (``forward_overlap.forward_overlap``)."""
    return table(rows, ["tp", "chunks", "forward_s", "ratio"],
                 caption="SP MLP forward, this machine's CPU ranks (medians, interleaved)",
                 formats={"forward_s": lambda x: f"{x * 1e3:.1f} ms", "ratio": ".2f"},
                 headers={"tp": "t", "chunks": "chunks c", "forward_s": "median forward",
                          "ratio": "× c=1"})
