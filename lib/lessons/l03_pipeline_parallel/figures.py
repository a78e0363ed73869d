"""Figures of notebook 03 (pipeline parallelism): the F/B/W timeline of a schedule,
simulated or measured, the bubble sweep against the formula, the stashed-memory bars,
and the notebook's tables (HTML, ``viz.table`` underneath). §7's tables (zero bubble
and the schedules past it) are in ``figures_zb.py``, importable from here too."""

from __future__ import annotations

import html

import plotly.graph_objects as go

from parlab import cost
from lessons.common.viz.charts import bars
from lessons.common.viz.tables import table
from lessons.common.viz.style import (INK, MICROBATCH_COLORS, TRANSPARENT, WHITE, base_layout,
                                      rank_color, text_color, wheel_color)
from .figures_zb import (interleaved_memory_table, schedule_family_table, torch_orders_table,
                         zero_bubble_table)

# One hue per micro-batch; F drawn as a light tint, B in the full colour, W (zero-bubble
# weight gradients) dark: read a column of one colour as one micro-batch travelling down
# the pipeline and back. Up to 10 micro-batches: Tableau 10 (``style.MICROBATCH_COLORS``).
# More: hues taken in order round the colour wheel (micro-batch 0 red-orange ... the last
# violet), so no two micro-batches share a colour and neighbours look alike -- the hover
# names each bar.
PLOT_WIDTH = 1000  # px a notebook gives a figure (JupyterLab, default zoom): labels fit it
_OP_SHADE = {"F": 0.55, "B": 0.0, "W": -0.35}  # > 0: towards white, < 0: towards black
_OP_WORDS = {"F": "F forward (light)", "B": "B backward (full colour)",
             "W": "W weight gradients (dark)"}
# Interleaved schedules: a rank's model chunks 0, 1, 2, 3 -- plain, hatched, crossed, dotted.
CHUNK_PATTERNS = ["", "/", "x", "."]
_CHUNK_WORDS = ["plain", "hatched /", "crossed x", "dotted"]


def _shade(hex_color: str, amount: float) -> str:
    rgb = [int(hex_color[i:i + 2], 16) for i in (1, 3, 5)]
    target = 255 if amount > 0 else 0
    rgb = [round(c + (target - c) * abs(amount)) for c in rgb]
    return "#" + "".join(f"{c:02X}" for c in rgb)


def microbatch_color(mb: int, n_mb: int | None = None) -> str:
    """The hue of micro-batch ``mb`` of ``n_mb``: Tableau 10 while n_mb <= 10 (or unknown),
    else evenly spaced hues (0 .. 300 degrees) at one saturation and lightness."""
    if n_mb is None or n_mb <= len(MICROBATCH_COLORS):
        return MICROBATCH_COLORS[int(mb) % len(MICROBATCH_COLORS)]
    return wheel_color(int(mb) / (n_mb - 1))


def op_color(op: str, mb: int, n_mb: int | None = None) -> str:
    """Colour of pipeline op ``op`` ("F", "B", "W") of micro-batch ``mb`` (of ``n_mb``)."""
    return _shade(microbatch_color(mb, n_mb), _OP_SHADE[op])


def _fit(full: str, short: str, px: float) -> str:
    """The longest label that fits a bar ``px`` wide (about 6.2 px a character at the
    11 px font, and a little air), or "" -- the hover still names the bar."""
    for text in (full, short):
        if px >= 6.2 * len(text) + 4:
            return text
    return ""


def _op_label(op: str, meta: dict) -> str:
    """F3 (micro-batch 3), F3·c1 (micro-batch 3, model chunk 1 of an interleaved rank)."""
    chunk = meta.get("chunk") or 0
    return f"{op}{meta['mb']}" + (f"·c{chunk}" if chunk else "")


def _hatch(fig, ops, chunks, colors, rows, name, t0, scale) -> None:
    """Hatching for the bars of model chunks >= 1, as see-through bars drawn over them.
    (A pattern on bars whose colours come as a list makes plotly.js warn "Invalid color
    specifier" for every bar; a transparent overlay with one colour per trace does not.)
    Black hatching on light bars, white on dark ones."""
    for fg in sorted({text_color(c) for c, k in zip(colors, chunks) if k}):
        pick = [i for i, (c, k) in enumerate(zip(colors, chunks)) if k and text_color(c) == fg]
        fig.add_trace(go.Bar(
            orientation="h", width=0.8, showlegend=False, hoverinfo="skip",
            base=[round((ops[i]["start"] - t0) * scale, 4) for i in pick],
            x=[round((ops[i]["end"] - ops[i]["start"]) * scale, 4) for i in pick],
            y=[rows[int(ops[i]["rank"]), name] for i in pick],
            marker=dict(color=TRANSPARENT, line=dict(width=0), pattern=dict(
                shape=[CHUNK_PATTERNS[chunks[i] % len(CHUNK_PATTERNS)] for i in pick],
                fgcolor=fg, fgopacity=0.35, size=8))))


def pipeline_timeline(events: list[dict], title: str = "", overlay: list[dict] | None = None,
                      labels: tuple[str, str] = ("simulated", "measured"),
                      unit: str = "ms", width: int = PLOT_WIDTH) -> go.Figure:
    """One row per rank (rank 0 on top), one bar per F / B / W op coloured by its
    micro-batch, shaded by op (F light, B full, W dark: a key under the axis), hatched
    by model chunk (interleaved: chunk 1 "/"), labelled F3, B3·c1 (micro-batch 3,
    chunk 1) where the label fits on a ``width``-px-wide figure (else "F3", else nothing;
    the hover names every bar). More than 10 micro-batches get hues in order round the
    colour wheel (``microbatch_color``) instead of a repeating palette. The reader should
    see the fill and drain triangles (the bubble) and, across rows, each micro-batch
    go down the pipeline and back. With ``overlay``, each rank gets two rows: the
    ``events`` (labels[0]) above the ``overlay`` (labels[1]), on the same time axis.

    Events are trace-style dicts (rank, name, start, end, meta with mb and chunk);
    only F/B/W ops are drawn. Times start at 0 for each set; ``unit="ms"`` shows
    seconds as ms, anything else draws the times as they are (simulator units)."""
    sets = [(labels[0], events)] + ([(labels[1], overlay)] if overlay is not None else [])
    used_ops, used_chunks = set(), set()
    scale = 1e3 if unit == "ms" else 1.0
    ranks = sorted({int(e["rank"]) for _, evs in sets for e in evs})
    n_mb = 1 + max((int(e["meta"]["mb"]) for _, evs in sets for e in evs
                    if e.get("name") in _OP_SHADE), default=0)
    rows = {(r, name): f"rank {r}" + (f" · {name}" if overlay is not None else "")
            for r in ranks for name, _ in sets}
    # the plot area: the figure less its margins and the row labels ("rank 3 · measured")
    plot_px = width - 80 - 7 * max(len(v) for v in rows.values())
    fig = go.Figure()
    for name, evs in sets:
        ops = [e for e in evs if e.get("name") in _OP_SHADE]
        if not ops:
            continue
        t0 = min(e["start"] for e in ops)
        span = max(max(e["end"] for e in ops) - t0, 1e-12)
        for op in "FBW":
            mine = [e for e in ops if e["name"] == op]
            if not mine:
                continue
            full = [_op_label(op, e["meta"]) for e in mine]
            # a bar too narrow for "F3·c1" says "F3" (its hatching tells the chunk), one
            # too narrow for that says nothing: the hover gives every bar's full label
            text = [_fit(f, f"{op}{e['meta']['mb']}", (e["end"] - e["start"]) / span * plot_px)
                    for f, e in zip(full, mine)]
            chunks = [int(e["meta"].get("chunk") or 0) for e in mine]
            colors = [op_color(op, e["meta"]["mb"], n_mb) for e in mine]
            marker = dict(color=colors, line=dict(width=0.5, color=WHITE))
            if any(chunks):
                used_chunks.update(chunks)
            fig.add_trace(go.Bar(
                name=f"{op} ({name})" if overlay is not None else op, orientation="h",
                base=[round((e["start"] - t0) * scale, 4) for e in mine],
                x=[round((e["end"] - e["start"]) * scale, 4) for e in mine],
                y=[rows[int(e["rank"]), name] for e in mine], text=text,
                textposition="inside", insidetextanchor="middle", textangle=0,
                constraintext="inside", width=0.8, marker=marker,
                textfont=dict(size=11, color=[text_color(c) for c in colors]),
                customdata=[[round((e["start"] - t0) * scale, 4), f] for e, f in zip(mine, full)],
                hovertemplate=f"%{{customdata[1]}} ({name})<br>start %{{customdata[0]:.4g}} "
                              f"{unit}, lasts %{{x:.4g}} {unit}<extra></extra>"))
            _hatch(fig, mine, chunks, colors, rows, name, t0, scale)
            used_ops.add(op)
    order = [rows[r, name] for r in ranks for name, _ in sets]
    base_layout(fig, title, barmode="overlay", showlegend=False,
                 height=max(220, 140 + 36 * len(order)), uniformtext=dict(minsize=8, mode="hide"))
    fig.update_layout(margin=dict(b=100))
    # the key: what the shades (and the hatching) mean, under the time axis
    key = [_OP_WORDS[op] for op in "FBW" if op in used_ops]
    key += [f"chunk {c} {_CHUNK_WORDS[c % len(_CHUNK_WORDS)]}" for c in sorted(used_chunks)]
    if key:
        hue = "one hue per micro-batch" + (" (in order round the colour wheel)"
                                           if n_mb > len(MICROBATCH_COLORS) else "")
        fig.add_annotation(text="key: " + " · ".join(key) + f" · {hue} · hover a bar for its name",
                           xref="paper", yref="paper", x=0, y=0, xanchor="left", yanchor="top",
                           yshift=-60, showarrow=False, font=dict(size=11, color=INK["outline"]))
    fig.update_xaxes(title_text=f"time ({unit})", zeroline=False, tickformat=",~r")  # 5,000 ms, never "5k ms"
    fig.update_yaxes(type="category", categoryorder="array", categoryarray=order[::-1],
                     showgrid=False)
    return fig


def bubble_sweep_figure(rows: list[dict], title: str = "") -> go.Figure:
    """Measured bubble (markers, one symbol per schedule) against the formula (a line
    per pipeline depth P), versus the number of micro-batches M. ``rows``: dicts
    with p, m, schedule, measured and formula (fractions). The reader should see
    the markers of every schedule on their P's line."""
    fig = go.Figure()
    symbols = ["circle", "diamond", "square", "x"]
    for i, p in enumerate(sorted({r["p"] for r in rows})):
        mine = sorted((r for r in rows if r["p"] == p), key=lambda r: r["m"])
        ms = sorted({r["m"] for r in mine})
        formula = {r["m"]: r["formula"] for r in mine}
        fig.add_trace(go.Scatter(name=f"P={p}: (P-1)/(M+P-1)", x=ms,
                                 y=[round(100 * formula[m], 3) for m in ms], mode="lines",
                                 line=dict(color=rank_color(i), width=2),
                                 hovertemplate="M=%{x}: %{y:.1f}%<extra>formula</extra>"))
        for j, sched in enumerate(dict.fromkeys(r["schedule"] for r in mine)):
            pts = [r for r in mine if r["schedule"] == sched]
            fig.add_trace(go.Scatter(
                name=f"P={p}: {sched}, measured", x=[r["m"] for r in pts],
                y=[round(100 * r["measured"], 3) for r in pts], mode="markers",
                marker=dict(color=rank_color(i), size=9, symbol=symbols[j % len(symbols)],
                            line=dict(width=1, color=WHITE)),
                hovertemplate=f"{sched}, M=%{{x}}: %{{y:.1f}}%<extra>measured</extra>"))
    base_layout(fig, title)
    fig.update_xaxes(type="log", title_text="micro-batches M",
                     tickvals=sorted({r["m"] for r in rows}))
    fig.update_yaxes(title_text="bubble: idle / total time (%)", rangemode="tozero")
    return fig


# ----------------------------------------------------------------------------- tables (HTML)

def _pct(x: float) -> str:
    return f"{x:.1%}"


def stages_table(rows: list[dict]):
    """How the model is cut: per layout, rank and model chunk, its virtual stage, blocks,
    parameters and what else it holds (``experiments.stage_table`` rows with a layout)."""
    return table(rows, ["layout", "rank", "chunk", "stage", "blocks", "params", "extras"],
                 caption="how the model is cut: each rank's chunks, their blocks and parameters",
                 headers={"extras": "also holds"})


def schedule_lists(schedules: dict[str, list[list[str]]]):
    """Each schedule's action list per rank (``experiments.schedule_tokens``), one row a
    rank, under the schedule's name. A line wraps between actions only, never inside
    one ("B6.1" stays whole)."""
    from IPython.display import HTML
    token = "<span style='white-space:nowrap'>{}</span>"
    parts = ["<div style='font-family:monospace;font-size:12px;line-height:1.45'>"]
    for name, ranks in schedules.items():
        parts.append(f"<div style='font-weight:bold;margin-top:6px'>{html.escape(name)}</div>"
                     "<table style='border-collapse:collapse'>")
        for r, tokens in enumerate(ranks):
            parts.append(f"<tr><td style='white-space:nowrap;vertical-align:top;padding:0 8px 0 0'>"
                         f"rank&nbsp;{r}:</td><td style='text-align:left'>"
                         + " ".join(token.format(html.escape(t)) for t in tokens) + "</td></tr>")
        parts.append("</table>")
    return HTML("".join(parts) + "</div>")


def bubble_normalisations_table(p: int, m: int):
    """The two ways the literature states one bubble, at P = ``p``, M = ``m``: idle time
    over the whole step (``cost.bubble_fraction``) and over the ideal time
    (``cost.bubble_ratio``), with the papers that use each."""
    rows = [dict(n="idle / total step time", formula="(P − 1) / (M + P − 1)",
                 value=cost.bubble_fraction(p, m), used="cost.bubble_fraction; Huang et al. 2019 §2.3"),
            dict(n="idle / ideal (bubble-free) time", formula="(P − 1) / M",
                 value=cost.bubble_ratio(p, m), used="cost.bubble_ratio; Narayanan et al. 2021a §2.2.1")]
    return table(rows, caption=f"one bubble, two normalisations (P = {p}, M = {m})",
                 formats={"value": _pct},
                 headers={"n": "normalisation", "value": f"P = {p}, M = {m}", "used": "used by"})


def bubble_sweep_table(sweep: list[dict]):
    """Per P and M: the bubble's formula next to GPipe and 1F1B measured, as idle / total
    and as idle / ideal (``experiments.bubble_sweep`` rows)."""
    by = {(r["p"], r["m"], r["schedule"]): r for r in sweep}
    keys = sorted({(r["p"], r["m"]) for r in sweep})
    rows = [dict(P=p, M=m, formula=by[p, m, "gpipe"]["formula"], gpipe=by[p, m, "gpipe"]["measured"],
                 one=by[p, m, "1f1b"]["measured"], formula_ratio=by[p, m, "gpipe"]["formula_ratio"],
                 gpipe_ratio=by[p, m, "gpipe"]["measured_ratio"],
                 one_ratio=by[p, m, "1f1b"]["measured_ratio"]) for p, m in keys]
    cols = ("formula", "gpipe", "one", "formula_ratio", "gpipe_ratio", "one_ratio")
    return table(rows, caption="bubble: formula vs measured (best of 3 steps), both normalisations",
                 formats={k: _pct for k in cols},
                 headers=dict(formula="idle/total: formula", gpipe="GPipe", one="1F1B",
                              formula_ratio="idle/ideal: formula", gpipe_ratio="GPipe",
                              one_ratio="1F1B"))


def held_table(mem: list[dict]):
    """Micro-batches whose activations each rank held at its peak, measured / formula,
    per M and schedule (``experiments.memory_rows``)."""
    keys = list(dict.fromkeys((r["m"], r["schedule"]) for r in mem))
    rows = [dict(M=m, schedule=s, **{f"rank {r['rank']}": f"{r['held']} / {r['formula']}"
                                     for r in mem if (r["m"], r["schedule"]) == (m, s)})
            for m, s in keys]
    return table(rows, caption="micro-batches held at the peak, per rank: measured / formula")


def stash_bars(mem: list[dict], ms=(4, 16)) -> go.Figure:
    """Peak stashed activation bytes per rank, measured, one bar series per schedule and
    M in ``ms`` (``experiments.memory_rows``)."""
    ranks = sorted({r["rank"] for r in mem})
    series = {f"{s}, M={m}": [next(x["bytes"] / 2 ** 20 for x in mem
                                   if (x["m"], x["schedule"], x["rank"]) == (m, s, r)) for r in ranks]
              for s in dict.fromkeys(x["schedule"] for x in mem) for m in ms}
    return bars([f"rank {r}" for r in ranks], series,
                "peak stashed activations per rank (measured)", "MiB")


def interleaving_table(res: dict[int, dict], t_fwd: float):
    """P, M fixed; per v (1 = plain 1F1B): the op time, the bubble by the formula, by the
    simulator charged the run's message costs, and measured; the two costs; and rank 0's
    peak in micro-batches' worth (``experiments.measured_bubble`` per v)."""
    rows = [dict(schedule="1F1B" if v == 1 else f"interleaved, v = {v}", op=t_fwd / v * 1e3,
                 formula=r["formula"], sim=r["simulated_comm"], measured=r["measured"],
                 t_comm=r["t_comm"] * 1e3, t_gap=r["t_gap"] * 1e3, held=r["stash_peak"][0] / v)
            for v, r in res.items()]
    first = next(iter(res.values()))
    return table(rows, caption=f"P = {first['p']}, M = {first['m']}: the bubble (idle / total) "
                               "three ways",
                 formats=dict(op=".1f", formula=_pct, sim=_pct, measured=_pct, t_comm=".1f",
                              t_gap=".1f", held=".3g"),
                 headers=dict(op="forward op (ms)", sim="simulated with costs",
                              t_comm="t_comm (ms)", t_gap="t_gap (ms)",
                              held="rank 0 holds (micro-batches' worth)"))
