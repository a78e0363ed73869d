"""Figures of notebook 00 (collectives): what each collective does, the ring
all-reduce step by step, bytes measured against the formula, the alpha-beta fit."""

from __future__ import annotations

import math

import plotly.graph_objects as go

from parlab import cost
from lessons.common.i18n import t
from lessons.common.viz.charts import measured_vs_predicted
from lessons.common.viz.tables import table
from lessons.common.viz.style import (ALGORITHM_COLORS, BYTES_AXIS, CONTRIBUTION_SCALE,
                                      EMPTY_COLOR, INK, KIND_COLORS, LABEL_BACKGROUND,
                                      NEUTRAL_COLOR, RANK_COLORS, TRANSFER_COLOR, base_layout,
                                      byte_unit, fmt_bytes, rank_color, ratio_ticks, seconds_ticks,
                                      text_color)
from .cells import check_ring_frames, collective_cells, contributors, ring_step_title
from .text import TEXT

def launch_table(timing: dict, n: int = 4):
    """Seconds of a first launch (fork the ranks from the server ``import parlab`` started)
    and of a warm re-run (``experiments.time_launches``): what keeping the ranks alive saves."""
    return table([{"launch": f"first: fork {n} ranks, then the job", "seconds": timing["cold"]},
                  {"launch": f"warm re-run (median of {len(timing['warm'])})",
                   "seconds": timing["warm_median"]}],
                 formats={"seconds": ".3f"}, caption=f"one all-reduce of one number on {n} ranks")


# --- 1. collectives explained --------------------------------------------------------

# each collective's caption: text.TEXT["f_cap_<op>"], in the session's language
_CAPTIONS = ("all_reduce", "all_gather", "reduce_scatter", "all_to_all", "broadcast", "send_recv")


def collective_diagram(op: str, n: int = 4) -> go.Figure:
    """Before/after picture of one collective: one row per rank, its buffer as n
    cells coloured by the rank the data came from (grey: summed over ranks, white:
    nothing there). The reader should see where each piece of data ends up."""
    if op not in _CAPTIONS:
        raise ValueError(f"op={op!r} must be one of {sorted(_CAPTIONS)}")
    if isinstance(n, bool) or not isinstance(n, int) or not 2 <= n <= 8:
        raise ValueError(f"n={n!r} must be an int between 2 and 8")
    before, after = collective_cells(op, n)
    gap, pad = 2.6, 0.06  # gap between the panels (room for the arrow); cell padding
    shapes, notes = [], []
    for panel, (cells, x0) in enumerate(((before, 0.0), (after, n + gap))):
        notes.append(dict(x=x0 + n / 2, y=-0.15,
                          text=f"<b>{t(TEXT, ('f_before', 'f_after')[panel])}</b>",
                          showarrow=False, yanchor="bottom", font=dict(size=14)))
        for r in range(n):
            for c in range(n):
                text, key = cells[r][c]
                fill = (EMPTY_COLOR if key is None else NEUTRAL_COLOR if key == "mix"
                        else rank_color(key))
                shapes.append(dict(
                    type="rect", x0=x0 + c + pad, x1=x0 + c + 1 - pad, y0=r + pad,
                    y1=r + 1 - pad, fillcolor=fill, layer="below",
                    line=dict(color=INK["pale"] if key is None else INK["outline"], width=1,
                              dash="dot" if key is None else "solid")))
                if text:
                    notes.append(dict(x=x0 + c + 0.5, y=r + 0.5, text=text, showarrow=False,
                                      font=dict(size=13, color=text_color(fill))))
    for r in range(n):
        notes.append(dict(x=-0.15, y=r + 0.5, text=f"rank {r}", showarrow=False,
                          xanchor="right", font=dict(size=12)))
    mid = n / 2
    notes.append(dict(x=n + gap - 0.25, y=mid, ax=n + 0.25, ay=mid, xref="x", yref="y",
                      axref="x", ayref="y", text="", showarrow=True, arrowhead=2,
                      arrowsize=1.2, arrowwidth=2, arrowcolor=INK["dark"]))
    notes.append(dict(x=n + gap / 2, y=mid - 0.1, text=op, showarrow=False,
                      yanchor="bottom", font=dict(size=12, color=INK["dark"])))
    unit = 46  # pixels per cell
    fig = go.Figure()
    base_layout(fig, t(TEXT, "f_diagram_title", op=op, n=n), shapes=shapes, annotations=notes,
                 width=int((2 * n + gap + 1.6) * unit + 40),
                 height=int((n + 0.8) * unit + 110), showlegend=False)
    fig.update_layout(title_subtitle_text=t(TEXT, f"f_cap_{op}"), margin=dict(l=20, r=20, t=80, b=20))
    fig.update_xaxes(visible=False, range=[-1.4, 2 * n + gap + 0.2], fixedrange=True)
    fig.update_yaxes(visible=False, range=[n + 0.2, -0.6], fixedrange=True,
                     scaleanchor="x", scaleratio=1)
    return fig


def collectives_run_table(rows: list[dict]):
    """Every collective run once (``experiments.collectives_table``): each rank's buffer
    before and after. Rank r starts with 10r + 0, 10r + 1, ...: the tens digit says whose."""
    numbers = lambda values: ", ".join(f"{v:g}" for v in values)  # noqa: E731
    n = len({r["rank"] for r in rows})
    return table(rows, ["op", "rank", "before", "after"], formats={"before": numbers, "after": numbers},
                 caption=f"every collective once on {n} ranks (rank r starts with 10r + 0, 10r + 1, ...)")


# --- 2. the ring all-reduce, step by step ---------------------------------------------

def _ring_annotations(sends, n: int) -> list[dict]:
    """Arrows from the sender's cell to the receiver's, in the chunk's column
    (right edge of the cell, so the text stays readable), plus a text line."""
    arrow = dict(xref="x", yref="y", axref="x", ayref="y", text="", showarrow=True,
                 arrowhead=2, arrowsize=1, arrowwidth=2, arrowcolor=TRANSFER_COLOR, visible=True)
    out = []
    for src, dst, c in sends:
        x = c + 0.38
        if dst == (src + 1) % n and dst == 0 and n > 2:  # the ring wraps: leave at the
            out.append(dict(arrow, x=x, y=n - 0.5 + 0.45, ax=x, ay=src + 0.2))  # bottom,
            out.append(dict(arrow, x=x, y=dst - 0.2, ax=x, ay=-0.5 - 0.45))  # re-enter on top
        else:
            down = 1 if dst > src else -1
            out.append(dict(arrow, x=x, y=dst - 0.2 * down, ax=x, ay=src + 0.2 * down))
    if sends:
        items = [t(TEXT, "f_transfer", src=s, dst=d, c=c) for s, d, c in sends]
        lines = ["    ".join(items[i:i + 3]) for i in range(0, len(items), 3)]
        text = "<br>".join(lines)
    else:
        text = t(TEXT, "f_no_transfers")
    # The text line goes first, so it keeps its place (and style) in every frame.
    return [dict(xref="paper", yref="paper", x=0, y=0, xanchor="left", yanchor="top",
                 yshift=-8, align="left", showarrow=False, text=text, visible=True,
                 font=dict(size=11, color=INK["dark"]))] + out


def ring_animation(frames: list[dict], title: str = "") -> go.Figure:
    """Ring all-reduce as an animation: a grid of ranks (rows) by chunks (columns),
    each cell darker the more ranks' contributions it holds, red arrows for the
    step's transfers. The reader should see each chunk pick up one contribution
    per hop in reduce-scatter, then the finished chunks travel round in all-gather.

    ``frames``: one dict per step, ``{"phase", "step" (0-based within the phase),
    "state" ([rank][chunk] bitmask of contributing ranks), "sends" ([(src, dst,
    chunk)])}``; ``parlab.collective_demos.ring_frames`` records them from a real run.
    """
    n, chunks = check_ring_frames(frames)
    ranks, cols = list(range(n)), list(range(chunks))

    def grid(state):
        z = [[bin(m).count("1") or None for m in row] for row in state]
        text = [[contributors(m, n) if m else "" for m in row] for row in state]
        return z, text

    def full_title(f):
        step = ring_step_title(f, n)
        return f"{title}: {step}" if title else step

    z0, text0 = grid(frames[0]["state"])
    heat = go.Heatmap(
        x=cols, y=ranks, z=z0, text=text0, texttemplate="%{text}", zmin=1, zmax=n,
        colorscale=CONTRIBUTION_SCALE, xgap=3, ygap=3, textfont=dict(size=12),
        colorbar=dict(title=dict(text=t(TEXT, "f_contributions")), tickvals=list(range(1, n + 1)),
                      thickness=14, len=0.8),
        hovertemplate=t(TEXT, "f_hover", n=n))
    fig = go.Figure(data=[heat])
    # Plotly merges a frame's annotations into the current ones by position, so every
    # frame carries the same number (padded with invisible ones, and every real one
    # says visible=True): otherwise arrows of one step would linger, or stay hidden,
    # in another.
    notes = [_ring_annotations(f.get("sends", []), n) for f in frames]
    width = max(len(a) for a in notes)
    notes = [a + [dict(text="", showarrow=False, visible=False)] * (width - len(a))
             for a in notes]
    anim_frames, steps = [], []
    for i, f in enumerate(frames):
        z, text = grid(f["state"])
        anim_frames.append(go.Frame(
            name=str(i), data=[go.Heatmap(z=z, text=text)],
            layout=dict(annotations=notes[i],
                        title=dict(text=full_title(f), x=0.01, xanchor="left"))))
        label = (t(TEXT, "f_start_label") if f["phase"] == "start" else
                 f"{'RS' if f['phase'] == 'reduce_scatter' else 'AG'} {f.get('step', 0) + 1}")
        steps.append(dict(method="animate", label=label, args=[
            [str(i)], dict(mode="immediate", frame=dict(duration=0, redraw=True),
                           transition=dict(duration=0))]))
    fig.frames = anim_frames
    n_lines = max(1, math.ceil(max(len(f.get("sends", [])) for f in frames) / 3))
    base_layout(fig, full_title(frames[0]), annotations=notes[0],
                 width=max(760, 220 + 85 * chunks), height=280 + 48 * n + 16 * n_lines)
    fig.update_layout(
        margin=dict(l=70, r=20, t=90, b=130 + 16 * n_lines),
        updatemenus=[dict(type="buttons", direction="left", x=0, y=0, xanchor="left",
                          yanchor="top", pad=dict(t=60 + 16 * n_lines), showactive=False,
                          buttons=[
                              dict(label=t(TEXT, "f_play"), method="animate", args=[None, dict(
                                  frame=dict(duration=900, redraw=True), fromcurrent=True,
                                  transition=dict(duration=0))]),
                              dict(label=t(TEXT, "f_pause"), method="animate", args=[[None], dict(
                                  mode="immediate", frame=dict(duration=0, redraw=False),
                                  transition=dict(duration=0))])])],
        sliders=[dict(active=0, steps=steps, x=0.3, len=0.7, y=0, yanchor="top",
                      pad=dict(t=50 + 16 * n_lines), currentvalue=dict(prefix=t(TEXT, "f_slider")))])
    fig.update_xaxes(side="top", tickvals=cols, ticktext=[t(TEXT, "f_chunk", c=c) for c in cols],
                     range=[-0.5, chunks - 0.5], showgrid=False, zeroline=False,
                     fixedrange=True)
    fig.update_yaxes(tickvals=ranks, ticktext=[f"rank {r}" for r in ranks],
                     range=[n - 0.5 + 0.6, -0.5 - 0.6], showgrid=False, zeroline=False,
                     fixedrange=True)
    return fig


# --- 4. measured bytes against the formula ----------------------------------------------

def bytes_table_figure(rows: list[dict]) -> go.Figure:
    """Bytes sent by the busiest rank, measured (bars) against the formula
    (dashes), per world size n and algorithm. The reader should see the ring stay
    near 2S while the naive root grows like (n-1) S."""
    if not rows:
        raise ValueError("rows is empty")
    algos = list(dict.fromkeys(r["algorithm"] for r in rows))
    ns = sorted({int(r["n"]) for r in rows})
    groups: dict[tuple[str, int], list[dict]] = {}
    for r in rows:
        groups.setdefault((r["algorithm"], int(r["n"])), []).append(r)
    unit, size = byte_unit(max(max(r["measured"], r["formula"]) for r in rows))
    fig = go.Figure()
    width = 0.8 / len(algos)
    for j, alg in enumerate(algos):
        xs, measured, formula, hover, busiest = [], [], [], [], set()
        symmetric = True
        for i, n in enumerate(ns):
            rs = groups.get((alg, n))
            if not rs:
                continue
            top = max(rs, key=lambda r: (r["measured"], -r["rank"]))
            lo = min(r["measured"] for r in rs)
            symmetric &= top["measured"] - lo <= 0.01 * top["measured"]  # within 1%
            busiest.add(top["rank"])
            xs.append(i + (j - (len(algos) - 1) / 2) * width)
            measured.append(top["measured"] / size)
            formula.append(top["formula"] / size)
            ratio = top["measured"] / top["formula"] if top["formula"] else float("nan")
            per_rank = ", ".join(f"{r['rank']}: {fmt_bytes(r['measured'])}"
                                 for r in sorted(rs, key=lambda r: r["rank"])[:8])
            hover.append(f"<b>{alg}, n={n}</b><br>busiest: rank {top['rank']}<br>"
                         f"measured {fmt_bytes(top['measured'])}<br>"
                         f"formula {fmt_bytes(top['formula'])} (ratio {ratio:.2f})<br>"
                         f"per rank: {per_rank}" + (", ..." if len(rs) > 8 else ""))
        who = ("" if symmetric else f", rank {busiest.pop()}" if len(busiest) == 1
               else ", busiest rank")
        color = ALGORITHM_COLORS.get(alg, RANK_COLORS[j % len(RANK_COLORS)])
        fig.add_trace(go.Bar(name=f"{alg}{who} (measured)", x=xs, y=measured, width=width,
                             marker=dict(color=color), hovertext=hover,
                             hovertemplate="%{hovertext}<extra></extra>",
                             legendgroup=alg))
        fig.add_trace(go.Scatter(
            name=f"{alg}{who} (formula)", x=xs, y=formula, mode="lines+markers",
            line=dict(color=INK["darker"], width=1, dash="dot"), legendgroup=alg,
            marker=dict(symbol="line-ew", size=24, line=dict(width=3, color=INK["darker"])),
            hovertemplate=f"{alg} formula: %{{y:.3g}} {unit}<extra></extra>"))
    base_layout(fig, "bytes sent per collective: busiest rank, measured vs formula",
                 barmode="overlay")
    fig.update_xaxes(title_text="world size n (ranks)", tickvals=list(range(len(ns))),
                     ticktext=[f"n={n}" for n in ns], range=[-0.6, len(ns) - 0.4])
    fig.update_yaxes(title_text=f"bytes sent by the busiest rank ({unit})", rangemode="tozero")
    return fig


def bytes_table(rows: list[dict]):
    """Bytes sent in one all-reduce (``experiments.bytes_table``), counted against the
    formula, for rank 0 and rank 1 (the naive root and one of the others)."""
    mib = lambda b: f"{b / 2 ** 20:.3f}"  # noqa: E731
    return table([r for r in rows if r["rank"] <= 1], ["n", "algorithm", "rank", "measured", "formula"],
                 headers={"n": "N", "measured": "sent, counted (MiB)", "formula": "formula (MiB)"},
                 formats={"measured": mib, "formula": mib}, caption="bytes sent in one all-reduce")


# --- 5. the alpha-beta fit -----------------------------------------------------------------

def _log_space(lo: float, hi: float, k: int = 64) -> list[float]:
    a, b = math.log10(lo), math.log10(hi)
    return [10 ** (a + (b - a) * i / (k - 1)) for i in range(k)]


def readable_time_axis(fig: go.Figure) -> go.Figure:
    """A log time axis (e.g. ``viz.cost_curves``) with ``seconds_ticks`` over the plotted values."""
    ys = [y for t in fig.data if getattr(t, "y", None) is not None for y in t.y
          if isinstance(y, (int, float)) and y > 0]
    if ys:
        fig.update_yaxes(title_text=t(TEXT, "f_time"), **seconds_ticks(min(ys), max(ys)))
    return fig


def alpha_beta_figure(sizes: list[float], times: list[float], alpha: float, beta: float,
                      title: str = "", extra: dict[str, tuple[list, list]] | None = None
                      ) -> go.Figure:
    """Measured message time against size on log-log axes, with the fitted
    alpha + beta*size. The reader should see a flat floor (latency, alpha) for
    small messages and a slope-1 line (bandwidth, 1/beta) for large ones, meeting
    near size = alpha/beta. Times are in seconds (ticks in µs/ms/s)."""
    if len(sizes) != len(times) or not sizes:
        raise ValueError("sizes and times must be non-empty and of equal length")
    series = {"measured": (list(sizes), list(times))}
    for name, (xs, ys) in (extra or {}).items():
        if len(xs) != len(ys):
            raise ValueError(f"extra[{name!r}]: sizes and times differ in length")
        series[name] = (list(xs), list(ys))
    fig = go.Figure()
    for i, (name, (xs, ys)) in enumerate(series.items()):
        pts = [(x, y) for x, y in zip(xs, ys) if x > 0 and y > 0]  # log axes
        fig.add_trace(go.Scatter(
            name=name, x=[p[0] for p in pts], y=[float(f"{p[1]:.4g}") for p in pts],
            mode="markers", marker=dict(size=8 if i == 0 else 7,
                                        color=INK["darkest"] if i == 0 else rank_color(i - 1),
                                        symbol="circle" if i == 0 else "diamond"),
            hovertemplate=f"{name}<br>%{{x:.3s}}B: %{{y:.3s}}s<extra></extra>"))
    all_x = [x for xs, _ in series.values() for x in xs if x > 0]
    lo, hi = (min(all_x), max(all_x)) if all_x else (1.0, 1e6)
    hi = hi if hi > lo else lo * 10
    fit_x = [x for x in _log_space(lo, hi) if alpha + beta * x > 0]
    fig.add_trace(go.Scatter(
        name="fit: α + β·size", x=[float(f"{x:.4g}") for x in fit_x],
        y=[float(f"{alpha + beta * x:.4g}") for x in fit_x], mode="lines",
        line=dict(color=KIND_COLORS["comm"], width=2),
        hovertemplate="fit<br>%{x:.3s}B: %{y:.3s}s<extra></extra>"))
    bw = f"{1 / beta / 1e9:.3g} GB/s" if beta > 0 else "∞"
    fig.add_annotation(xref="paper", yref="paper", x=0.02, y=0.98, xanchor="left",
                       yanchor="top", align="left", showarrow=False,
                       bgcolor=LABEL_BACKGROUND,
                       text=f"α = {alpha * 1e6:.3g} µs (latency)<br>1/β = {bw} (bandwidth)")
    if alpha > 0 and beta > 0 and lo < alpha / beta < hi:
        knee = alpha / beta
        fig.add_shape(type="line", x0=knee, x1=knee, y0=0, y1=1, yref="paper",
                      line=dict(color=INK["light"], dash="dot", width=1))
        fig.add_annotation(x=math.log10(knee), y=0.02, yref="paper", xanchor="left",
                           yanchor="bottom", showarrow=False, font=dict(size=11, color=INK["mid"]),
                           text=f" α = β·size at {fmt_bytes(knee)}")
    # the legend sits outside the plot, right of it: inside, it covered the largest messages
    base_layout(fig, title, legend=dict(x=1.02, xanchor="left", y=1, yanchor="top"))
    fig.update_xaxes(type="log", title_text="message size (bytes)", **BYTES_AXIS)
    all_y = [y for _, ys in series.values() for y in ys if y > 0] + [alpha + beta * x for x in fit_x]
    fig.update_yaxes(type="log", title_text="time", **seconds_ticks(min(all_y), max(all_y)))
    return fig


def model_ratio_figure(by_ranks: dict[int, list[dict]], title: str = "",
                       algorithms=("ring (ours)", "naive (ours)")) -> go.Figure:
    """Measured over predicted time of one all-reduce against message size, one line per
    algorithm and rank count (``experiments.all_reduce_vs_model`` rows, keyed by ranks;
    only ``algorithms``: torch's gloo all-reduce has an algorithm of its own):
    solid = best of the repetitions, dotted = median. The reader should see where the
    alpha-beta-gamma model holds (near 1) and how far a typical run strays above it."""
    fig = measured_vs_predicted([], title)  # its axes and layout; the traces are ratios
    ratios = [1.0]
    for k, (n, rows) in enumerate(sorted(by_ranks.items())):
        for algo in [a for a in dict.fromkeys(r["algorithm"] for r in rows) if a in algorithms]:
            mine = sorted((r for r in rows if r["algorithm"] == algo), key=lambda r: r["bytes"])
            for key, dash in (("best", "solid"), ("measured", "dot")):
                fig.add_trace(go.Scatter(
                    name=f"{algo}, {n} ranks ({'best' if key == 'best' else 'median'})",
                    legendgroup=f"{algo}{n}", x=[r["bytes"] for r in mine],
                    y=[round(r[key] / r["predicted"], 3) for r in mine], mode="lines+markers",
                    marker=dict(symbol=("circle", "square", "diamond")[k % 3]),
                    line=dict(color=ALGORITHM_COLORS.get(algo.split(" ")[0], RANK_COLORS[k]),
                              dash=dash if k == 0 else "dash" if key == "best" else "dashdot"),
                    hovertemplate=f"{algo}, {n} ranks<br>%{{x}} B: %{{y:.2f}}x the model<extra></extra>"))
                ratios += [r[key] / r["predicted"] for r in mine if r[key] > 0]
    fig.add_hline(y=1, line=dict(color=INK["dark"], width=1))
    fig.add_annotation(x=1, xref="paper", y=0, yref="y", text="= model", showarrow=False,  # a log
                       xanchor="right", yanchor="bottom")  # axis's annotation y is log10: 0 -> 1
    fig.update_yaxes(type="log", title_text="measured / predicted", **ratio_ticks(ratios))
    return fig



# --- 7. the interview corner: one big all-reduce, and DDP's buckets ---------------------

def allreduce_at_scale_table(S: float, ns: list[int], alpha: float, B: float,
                             nvlink: float, gpus_per_node: int, caption: str = ""):
    """One all-reduce of S bytes on N ranks by the alpha-beta model: ring steps, bytes per
    rank and in all, ring / tree / naive time, and the ring on nodes of ``gpus_per_node``
    GPUs (NVLink inside, one card per GPU across: ``cost.group_bandwidth``)."""
    def row(n):
        rails = cost.group_bandwidth("all_reduce", n, 1, gpus_per_node, nvlink, B)
        return {"N": n, "ring steps": cost.collective_steps("all_reduce", n),
                "ring GB/rank": cost.collective_bytes("all_reduce", S, n) / 1e9,
                "all ranks GB": n * cost.collective_bytes("all_reduce", S, n) / 1e9,
                "ring s": cost.collective_time("all_reduce", S, n, alpha, B),
                "tree s": cost.collective_time("all_reduce", S, n, alpha, B, "tree"),
                "naive root GB": cost.collective_bytes("all_reduce", S, n, "naive", rank=0) / 1e9,
                "naive s": cost.collective_time("all_reduce", S, n, alpha, B, "naive"),
                "ring s, DGX nodes": cost.collective_time("all_reduce", S, n, alpha, rails)}
    return table([row(n) for n in ns], caption=caption, formats={
        "ring GB/rank": ".2f", "all ranks GB": ",.0f", "ring s": ".3f", "tree s": ".3f",
        "naive root GB": ",.0f", "naive s": ",.1f", "ring s, DGX nodes": ".3f"})


def bucket_latency_table(S: float, bucket: float, ns: list[int], alpha: float, B: float):
    """S bytes of gradients all-reduced in buckets of ``bucket`` bytes (ring, alpha-beta):
    time per bucket, the latency's share of it, and all buckets together, per N."""
    n_buckets = -(-int(S) // int(bucket))

    def row(n):
        t = cost.collective_time("all_reduce", bucket, n, alpha, B)
        return {"N": n, "per bucket ms": t * 1e3, "all buckets s": n_buckets * t,
                "of which latency": cost.collective_steps("all_reduce", n) * alpha / t}
    return table([row(n) for n in ns], caption=(
        f"S = {S / 1e9:.1f} GB of gradients in {n_buckets} buckets of {bucket / 2 ** 20:g} MiB; "
        f"alpha = {alpha * 1e6:g} us, B = {B / 1e9:g} GB/s per direction"),
        formats={"per bucket ms": ".2f", "of which latency": ".0%", "all buckets s": ".2f"})
