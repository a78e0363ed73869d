"""Charts shared by several notebooks: plain Python data in, a plotly ``Figure`` out.

Every function takes lists, dicts and floats (trace events as returned by
``parlab.trace.stop()``, numbers from ``parlab.cost``) and returns a
``plotly.graph_objects.Figure``. Nothing is shown or written: the notebook decides.
Figures are kept small, because they are saved inside the notebooks: numbers are
rounded to what the eye can see, hover text is built once per event.
"""

from __future__ import annotations

import math

import plotly.graph_objects as go

from .style import (BYTES_AXIS, COMM_OP_COLORS, COMPUTE_PHASE_COLORS, FITS_COLOR, INK, KIND_COLORS,
                    LIMIT_LINE_COLOR, LOSS_COLORS, MEASURED_ALGORITHM_COLORS, MEMORY_PARTS,
                    OTHER_COLOR, SECONDS_AXIS, WARNING_COLOR, base_layout, byte_unit,
                    compute_phase, fmt_bytes, fmt_seconds, log_ticks, seconds_ticks, series_color,
                    series_colors, series_dash, si)

# --- 3. timelines of trace events -------------------------------------------------------

_MAX_NAMES_PER_KIND = 30  # beyond this, one trace per kind carries the names itself


def _hover_parts(e: dict) -> list[tuple[str, object]]:
    """(field, value) pairs shown when hovering one event, in display order."""
    sent, recv = int(e.get("bytes_sent") or 0), int(e.get("bytes_recv") or 0)
    parts = [("name", str(e.get("name", ""))),
             ("dur", round(max(e["end"] - e["start"], 0.0) * 1e3, 4))]
    if sent or recv:
        parts += [("sent", fmt_bytes(sent)), ("recv", fmt_bytes(recv)),
                  ("modelled", " (modelled)" if e.get("bytes_modelled") else "")]
    for k, v in (e.get("meta") or {}).items():
        if isinstance(v, int) and not isinstance(v, bool):
            parts.append((f"meta:{k}", v))  # a bare number is shorter in the saved JSON
        else:
            text = f"{v:.4g}" if isinstance(v, float) else str(v)
            parts.append((f"meta:{k}", text if len(text) <= 40 else text[:37] + "..."))
    return parts


def _hover_template(events: list[dict], kind: str) -> tuple[str, list[list] | None]:
    """One hover template for a group of events, and the per-event customdata.

    Saved notebooks keep every number and string of a figure, so whatever is the
    same for all events of the group (the name, often the byte counts, meta keys)
    is written once into the template; only what varies goes per event.
    """
    rows = [dict(_hover_parts(e)) for e in events]
    fields = list(dict.fromkeys(f for row in rows for f in row))
    varying = [f for f in fields if f == "dur" or len({str(r.get(f, "")) for r in rows}) > 1]
    slot = {f: i for i, f in enumerate(varying)}

    def show(f, fmt=""):
        if f in slot:
            return f"%{{customdata[{slot[f]}]{fmt}}}"
        return str(rows[0].get(f, "")).replace("%{", "% {")

    lines = [f"<b>{show('name')}</b>", f"{show('dur', ':.3f')} ms"]
    if "sent" in fields:
        lines.append(f"sent {show('sent')}, recv {show('recv')}{show('modelled')}")
    meta = [f"{f[5:]}={show(f)}" for f in fields if f.startswith("meta:")]
    if meta:
        lines.append(", ".join(meta))
    custom = [[r.get(f, "") for f in varying] for r in rows]
    return "<br>".join(lines) + f"<extra>{kind}</extra>", custom


def _timeline_groups(events: list[dict], kinds: list[str]):
    """(legend name, colour, events) per kind; comm split by collective (``meta["op"]``,
    e.g. "comm: all_gather") when the events use more than one; compute split by phase
    ("compute: forward", "compute: backward", "compute: optimizer", ``style.compute_phase``)
    when its spans are named after one, the rest staying "compute"."""
    for kind in kinds:
        mine = [e for e in events if e["kind"] == kind]
        if kind == "compute":
            phases = [compute_phase(e.get("name", "")) for e in mine]
            if any(phases):
                for phase in [*COMPUTE_PHASE_COLORS, None]:
                    part = [e for e, ph in zip(mine, phases) if ph == phase]
                    if part:
                        yield ((f"compute: {phase}", COMPUTE_PHASE_COLORS[phase], part) if phase
                               else (kind, KIND_COLORS[kind], part))
                continue
        ops = list(dict.fromkeys((e.get("meta") or {}).get("op") for e in mine))
        if kind != "comm" or len(ops) < 2:
            yield kind, KIND_COLORS.get(kind, OTHER_COLOR), mine
            continue
        for op in ops:
            name = f"comm: {op}" if op else kind
            yield name, COMM_OP_COLORS.get(op, KIND_COLORS["comm"]), [
                e for e in mine if (e.get("meta") or {}).get("op") == op]


def timeline(events: list[dict], title: str = "", t0: float | None = None) -> go.Figure:
    """Gantt chart of trace events: one row per rank (rank 0 on top), time in ms
    from ``t0`` (default: the earliest start), bars coloured by kind, compute by phase
    (forward light blue, backward dark blue, optimizer green: ``COMPUTE_PHASE_COLORS``,
    legend "compute: forward"...). The reader should see who computes what, who
    communicates and who sits waiting, and when.

    Hovering a bar shows the event's name, duration, bytes and meta. To keep saved
    notebooks small, each kind is drawn as a few bar traces, one per event name,
    sharing one legend entry (``legendgroup`` = kind; every trace's ``name`` is the
    kind); a kind with more than 30 distinct names is drawn as a single trace.
    Communication that mixes collectives (``meta["op"]``: all-gathers and
    reduce-scatters under ZeRO) gets one legend entry and colour per collective
    (``COMM_OP_COLORS``), named e.g. "comm: all_gather". Waits are drawn under the
    other bars: where a rank waits for a collective still in flight, the collective shows.
    """
    fig = go.Figure()
    if not events:
        base_layout(fig, title, height=220)
        fig.add_annotation(text="no events", x=0.5, y=0.5, xref="paper", yref="paper",
                           showarrow=False, font=dict(size=16, color=INK["light"]))
        fig.update_xaxes(visible=False)
        fig.update_yaxes(visible=False)
        return fig
    if t0 is None:
        t0 = min(e["start"] for e in events)
    kinds = [k for k in KIND_COLORS if any(e["kind"] == k for e in events)]
    kinds += sorted({e["kind"] for e in events} - set(KIND_COLORS))
    groups_by_kind = list(_timeline_groups(events, kinds))
    # Waits are drawn first, under everything else: a collective in flight while its rank
    # waits for it shows as the collective (the legend keeps the kinds' order).
    order = sorted(range(len(groups_by_kind)), key=lambda k: groups_by_kind[k][0] != "wait")
    for rank_in_legend in order:
        kind, color, mine = groups_by_kind[rank_in_legend]
        names = list(dict.fromkeys(str(e.get("name", "")) for e in mine))
        groups = ([[e for e in mine if str(e.get("name", "")) == nm] for nm in names]
                  if len(names) <= _MAX_NAMES_PER_KIND else [mine])
        for i, group in enumerate(groups):
            template, custom = _hover_template(group, kind)
            fig.add_trace(go.Bar(
                name=kind, legendgroup=kind, showlegend=i == 0, legendrank=1000 + rank_in_legend,
                orientation="h",
                base=[round((e["start"] - t0) * 1e3, 3) for e in group],  # 1 us resolution
                x=[round(max(e["end"] - e["start"], 0.0) * 1e3, 4) for e in group],
                y=[int(e["rank"]) for e in group], customdata=custom,
                hovertemplate=template, width=0.8,
                marker=dict(color=color, line=dict(width=0))))
    ranks = sorted({int(e["rank"]) for e in events})
    x0 = (min(e["start"] for e in events) - t0) * 1e3
    x1 = (max(e["end"] for e in events) - t0) * 1e3
    x1 += 0.02 * (x1 - x0)  # a margin after the last bar: it ends, it is not cut off
    base_layout(fig, title, barmode="overlay", bargap=0.2,
                 height=max(220, 110 + 42 * (max(ranks) - min(ranks) + 1)),
                 legend=dict(orientation="h", x=1, xanchor="right", y=1.02,
                             yanchor="bottom"))
    fig.update_xaxes(title_text="time (ms)", range=[x0, x1 if x1 > x0 else x0 + 1e-3],
                     zeroline=False)
    fig.update_yaxes(tickvals=ranks, ticktext=[f"rank {r}" for r in ranks],
                     range=[max(ranks) + 0.6, min(ranks) - 0.6], showgrid=False,
                     zeroline=False)
    return fig


# --- predicted costs, measured vs predicted, bars -------------------------------------

def cost_curves(curves: dict[str, tuple[list[float], list[float]]], title: str = "",
                x_title: str = "message size (bytes)", y_title: str = "time (s)",
                log_x: bool = True, log_y: bool = True,
                vlines: dict[str, float] | None = None) -> go.Figure:
    """Predicted costs as lines (one per curve), optionally with labelled dashed
    vertical lines. The reader should see which curve is lowest where, and where
    they cross. Curves named after an algorithm ('ring ...') get its colour."""
    fig = go.Figure()
    for name, (xs, ys) in curves.items():
        if len(xs) != len(ys):
            raise ValueError(f"curve {name!r}: x and y differ in length")
        fig.add_trace(go.Scatter(
            name=name, x=[float(f"{x:.5g}") for x in xs], y=[float(f"{y:.5g}") for y in ys],
            mode="lines", line=dict(width=2, color=series_color(name), dash=series_dash(name)),
            hovertemplate=f"{name}<br>x=%{{x:.4g}}<br>y=%{{y:.4g}}<extra></extra>"))
    for label, x in (vlines or {}).items():
        if log_x and not x > 0:
            raise ValueError(f"vline {label!r} at x={x} cannot go on a log axis")
        fig.add_shape(type="line", x0=x, x1=x, y0=0, y1=1, yref="paper",
                      line=dict(color=INK["mid"], dash="dash", width=1.5))
        fig.add_annotation(x=math.log10(x) if log_x else x, y=1, yref="paper", yanchor="bottom",
                           text=label, showarrow=False, font=dict(size=11, color=INK["dark"]))
    base_layout(fig, title)
    fig.update_layout(margin=dict(t=80 if title else 50))
    fig.update_xaxes(type="log" if log_x else "linear", title_text=x_title,
                     **(BYTES_AXIS if log_x else {}))
    suffix = "s" if y_title.endswith("(s)") else ""
    y_format = dict(SECONDS_AXIS) if suffix else {"dtick": 1}
    ys = [y for _, cys in curves.values() for y in cys if y > 0]
    if not log_y:
        y_format.pop("dtick")  # one tick per decade only makes sense on a log axis
    elif suffix and ys:  # time: plain µs/ms/s labels ("~s" would print 1000 s as "1ks")
        y_format = seconds_ticks(min(ys), max(ys))
        if math.log10(max(ys) / min(ys)) < 1:  # under a decade: log_ticks' finer steps
            vals = log_ticks(min(ys), max(ys))
            y_format = dict(tickmode="array", tickvals=vals, ticktext=[fmt_seconds(v) for v in vals])
    else:
        if ys and math.log10(max(ys) / min(ys)) < 3:  # few decades: label 1-2-5 (or every digit)
            vals = log_ticks(min(ys), max(ys))
            y_format = dict(tickmode="array", tickvals=vals,
                            ticktext=[si(v) + suffix for v in vals])
    fig.update_yaxes(type="log" if log_y else "linear", title_text=y_title, **y_format)
    return fig


def measured_vs_predicted(rows: list[dict], title: str = "",
                          predicted_for: set | None = None) -> go.Figure:
    """Measured (best and median) and predicted collective times against message size,
    one colour per algorithm: solid = best, dotted = median, dashed = predicted. The
    reader should see where the model holds (best close to dashed) and how far the
    typical run (median) strays. ``rows``: dicts with ``algorithm``, ``bytes``,
    ``measured`` (median), ``best`` and, optionally, ``predicted`` (seconds).
    ``predicted_for``: the algorithms whose prediction is drawn (default: all)."""
    palette = MEASURED_ALGORITHM_COLORS
    algorithms = list(dict.fromkeys(r["algorithm"] for r in rows))
    fig = go.Figure()
    for k, algo in enumerate(algorithms):
        mine = sorted((r for r in rows if r["algorithm"] == algo), key=lambda r: r["bytes"])
        color = series_color(algo) or palette[k % len(palette)]
        for key, label in (("best", "best"), ("measured", "median"), ("predicted", "predicted")):
            if any(r.get(key) is None for r in mine) or (
                    key == "predicted" and predicted_for is not None and algo not in predicted_for):
                continue
            fig.add_trace(go.Scatter(
                name=f"{algo} ({label})", legendgroup=algo, x=[r["bytes"] for r in mine],
                y=[r[key] for r in mine], mode="lines+markers" if key == "best" else "lines",
                line=dict(color=color, width=2, dash=series_dash(f"({label})")),
                hovertemplate=f"{algo} ({label})<br>%{{x}} B: %{{y:.3s}}s<extra></extra>"))
    base_layout(fig, title)
    fig.update_layout(margin=dict(t=80 if title else 50))
    fig.update_xaxes(type="log", title_text="message size (bytes)", **BYTES_AXIS)
    ys = [r[k] for r in rows for k in ("best", "measured", "predicted")
          if isinstance(r.get(k), (int, float)) and r[k] > 0]
    fig.update_yaxes(type="log", title_text="time", **(seconds_ticks(min(ys), max(ys)) if ys
                                                        else SECONDS_AXIS))
    return fig


def bars(categories: list[str], series: dict[str, list[float]], title: str = "",
         y_title: str = "") -> go.Figure:
    """Grouped bars: one group per category, one bar per series. The reader
    should compare the series within each group. Series named after an algorithm or a
    data-parallel variant get its colour, the others distinct ones (``series_colors``)."""
    fig = go.Figure()
    for (name, values), color in zip(series.items(), series_colors(series)):
        if len(values) != len(categories):
            raise ValueError(f"series {name!r} has {len(values)} values for "
                             f"{len(categories)} categories")
        fig.add_trace(go.Bar(name=name, x=list(categories), y=list(values),
                             marker=dict(color=color),
                             hovertemplate=f"{name}<br>%{{x}}: %{{y:.4g}}<extra></extra>"))
    base_layout(fig, title, barmode="group")
    fig.update_yaxes(title_text=y_title)
    return fig


# --- memory per GPU: stacked bars against the device's memory --------------------------
# (the parts and their colours: ``style.MEMORY_PARTS``, importable from here as before)

def memory_bars(plans: list[dict], title: str = "", limit: float | None = None,
                unit: str | None = None) -> go.Figure:
    """Per-GPU memory as stacked bars, one bar per plan (a dict with a ``label`` and
    bytes under any of MEMORY_PARTS, e.g. ``cost.memory_plan`` or a ZeRO rank's
    measured ``memory``). Optional per plan: ``predicted`` total bytes, drawn as a
    black marker (formula next to measurement). ``limit``: the device's memory in
    bytes, drawn as a dashed line, with "fits" / "does not fit" written over each bar.
    The reader should see which part dominates and how far each bar is from the line.
    ``unit``: "GB" (1e9, as GPUs are sold) or None for binary units (KiB, MiB, GiB)."""
    if not plans:
        raise ValueError("plans must not be empty")
    labels = [p["label"] for p in plans]
    tops = [sum(p.get(k, 0) for k in MEMORY_PARTS) for p in plans]
    biggest = max(tops + [limit or 0] + [p.get("predicted", 0) for p in plans])
    name, size = ("GB", 1e9) if unit == "GB" else byte_unit(biggest)
    fig = go.Figure()
    for part, color in MEMORY_PARTS.items():
        if not any(p.get(part) for p in plans):
            continue
        fig.add_trace(go.Bar(
            name=part.replace("_", " "), x=labels, y=[round(p.get(part, 0) / size, 4) for p in plans],
            marker=dict(color=color),
            hovertemplate=f"{part}: %{{y:.3g}} {name}<extra>%{{x}}</extra>"))
    if any("predicted" in p for p in plans):
        fig.add_trace(go.Scatter(
            name="formula", x=labels, y=[p.get("predicted", 0) / size for p in plans],
            mode="markers", marker=dict(symbol="line-ew", size=28, color=INK["black"],
                                        line=dict(width=3, color=INK["black"])),
            hovertemplate=f"formula: %{{y:.3g}} {name}<extra>%{{x}}</extra>"))
    if limit:
        # the line's label goes in the right margin, level with the line: never on a bar
        fig.add_hline(y=limit / size, line=dict(color=LIMIT_LINE_COLOR, dash="dash", width=2))
        fig.add_annotation(x=1, xref="paper", xanchor="left", xshift=6, y=limit / size,
                           yanchor="middle", showarrow=False, align="left",
                           text=f"device<br>memory<br>{limit / size:.4g}&nbsp;{name}",
                           font=dict(color=WARNING_COLOR, size=12))
        for label, top in zip(labels, tops):
            fits = top <= limit
            fig.add_annotation(x=label, y=top / size, yanchor="bottom", showarrow=False,
                               text="fits" if fits else "does not fit",
                               font=dict(color=FITS_COLOR if fits else WARNING_COLOR, size=13))
    base_layout(fig, title, barmode="stack")
    if limit:  # the legend below the bars, the right margin for the line's label
        fig.update_layout(margin=dict(r=90, b=80),
                          legend=dict(orientation="h", x=0, y=-0.08, yanchor="top"))
    fig.update_yaxes(title_text=f"per GPU ({name})", rangemode="tozero")
    return fig


# --- training loss -----------------------------------------------------------------------

def loss_curves(curves: dict[str, list[float]], title: str = "",
                floor: float | None = None) -> go.Figure:
    """Training loss per step, one line per run, with the data's entropy floor (the best
    any model can reach) as a dashed level. The reader should see which runs track the
    exact one and which lag behind."""
    fig = go.Figure()
    palette = LOSS_COLORS
    # one hue per method ("sign + EF" and "sign, no EF" share it; no EF dotted); the first
    # run (the exact one) is drawn wide and pale, so a run that tracks it stays visible on top
    hues = {}
    for i, (name, ys) in enumerate(curves.items()):
        method = name.replace(", no EF", "").replace(" + EF", "").strip()
        color = hues.setdefault(method, palette[len(hues) % len(palette)])
        fig.add_trace(go.Scatter(name=name, x=list(range(len(ys))),
                                 y=[round(float(y), 4) for y in ys], mode="lines",
                                 opacity=0.45 if i == 0 else 1.0,
                                 line=dict(color=color, width=5 if i == 0 else 2,
                                           dash="dot" if "no EF" in name else "solid"),
                                 hovertemplate=f"{name}<br>step %{{x}}: %{{y:.3f}}<extra></extra>"))
    if floor is not None and curves:
        n = max(len(ys) for ys in curves.values())
        fig.add_trace(go.Scatter(name=f"entropy floor {floor:.3f}", x=[0, max(n - 1, 1)],
                                 y=[floor, floor], mode="lines",
                                 line=dict(color=INK["light"], dash="dash", width=1),
                                 hoverinfo="skip"))
    base_layout(fig, title)
    fig.update_xaxes(title_text="optimizer step")
    fig.update_yaxes(title_text="training loss (nats/token)")
    return fig
