"""Figures for the notebooks: plain Python data in, a plotly ``Figure`` out.

Every function here takes lists, dicts and floats (trace events as returned by
``parlab.trace.stop()``, numbers from ``parlab.cost``) and returns a
``plotly.graph_objects.Figure``. Nothing is shown or written: the notebook decides
(``fig`` as the last line of a cell, or ``fig.show()``).

Figures are kept small, because they are saved inside the notebooks: numbers are
rounded to what the eye can see, hover text is built once per event, and no
plotly.js is embedded.

Colours are shared by the whole lab: ``KIND_COLORS`` for the three kinds of trace
events, ``RANK_COLORS`` (via :func:`rank_color`) for data that belongs to one rank,
``NEUTRAL_COLOR`` for data mixed from several ranks, ``ALGORITHM_COLORS`` for the
collective algorithms of ``parlab.cost``.
"""

from __future__ import annotations

import math

import plotly.graph_objects as go

TEMPLATE = "plotly_white"

KIND_COLORS = {
    "compute": "#4C78A8",  # blue: useful work
    "comm": "#F58518",  # orange: bytes on the wire
    "wait": "#B0B0B0",  # grey: idle, waiting for someone else
}
# One colour per rank; colour-blind-friendly (Okabe & Ito), mid-tones so both black
# and white text stay readable. Ranks beyond 8 reuse the palette.
RANK_COLORS = ["#0072B2", "#E69F00", "#009E73", "#CC79A7",
               "#56B4E9", "#D55E00", "#F0E442", "#8C6D9E"]
NEUTRAL_COLOR = "#D9D9D9"  # a cell combining several ranks' data (a sum)
EMPTY_COLOR = "#FFFFFF"
ALGORITHM_COLORS = {"ring": "#54A24B", "tree": "#B279A2", "naive": "#E45756"}
# Data-parallel variants (notebook 01): "naive" keeps the algorithm red; the other two
# differ from it, and from each other, in hue and lightness (colour-blind safe).
VARIANT_COLORS = {"naive": ALGORITHM_COLORS["naive"], "bucketed": "#4E79A7", "ddp": "#59A14F"}
# Timelines that mix collectives colour comm bars by op (``meta["op"]``): gathers stay
# the comm orange, reductions of gradients purple.
COMM_OP_COLORS = {"all_reduce": "#F58518", "all_gather": "#F58518",
                  "reduce_scatter": "#8E6BB5", "all_to_all": "#9D755D",
                  "broadcast": "#72B7B2", "send_recv": "#72B7B2"}
# Series without a colour of their own (bars, curves): Tableau 10 without its red, so
# that none of them can be mistaken for "naive".
FALLBACK_COLORS = ["#4E79A7", "#F28E2B", "#59A14F", "#B07AA1", "#76B7B2", "#EDC948",
                   "#9C755F", "#FF9DA7", "#BAB0AC"]

# Sequential scale for "how many contributions does this chunk hold" (light -> dark).
CONTRIBUTION_SCALE = [[0.0, "#DEEBF7"], [0.5, "#6BAED6"], [1.0, "#08306B"]]

_OTHER_COLOR = "#7F7F7F"
_SUBSCRIPTS = str.maketrans("0123456789", "₀₁₂₃₄₅₆₇₈₉")


def rank_color(rank: int) -> str:
    """The lab's colour for ``rank`` (the palette repeats after 8 ranks)."""
    return RANK_COLORS[int(rank) % len(RANK_COLORS)]


# --- small helpers ----------------------------------------------------------------

def _text_color(hex_color: str) -> str:
    """Black or white, whichever reads better on ``hex_color`` ("#RRGGBB")."""
    r, g, b = (int(hex_color[i:i + 2], 16) / 255 for i in (1, 3, 5))
    lum = 0.2126 * r + 0.7152 * g + 0.0722 * b
    return "#000000" if lum > 0.45 else "#FFFFFF"


def _fmt_bytes(n: float) -> str:
    """1536 -> '1.5 KiB' (binary units, as the notebooks use)."""
    n = float(n)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(n) < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.3g} {unit}"
        n /= 1024
    return f"{n:.3g} TiB"  # unreachable


def _byte_unit(max_value: float) -> tuple[str, float]:
    """The binary unit that makes ``max_value`` read as 1..1023, and its size."""
    for unit, size in (("GiB", 2.0 ** 30), ("MiB", 2.0 ** 20), ("KiB", 2.0 ** 10)):
        if max_value >= size:
            return unit, size
    return "B", 1.0


def _base_layout(fig: go.Figure, title: str, **kw) -> go.Figure:
    fig.update_layout(template=TEMPLATE, title=dict(text=title, x=0.01, xanchor="left"),
                      margin=dict(l=60, r=20, t=60 if title else 30, b=50), **kw)
    return fig


def _series_color(name: str) -> str | None:
    """Algorithm colour when a series is named after one ('ring ...'), the variant's when
    named after a data-parallel variant ('bucketed', 'ddp'), else None."""
    first = name.strip().lower().split(" ")[0].rstrip(",:")
    return ALGORITHM_COLORS.get(first) or VARIANT_COLORS.get(first)


def _series_colors(names) -> list[str]:
    """One colour per series: its own (``_series_color``) where it has one, else the next
    of FALLBACK_COLORS not already taken -- never two series in the same colour while
    the palette lasts."""
    own = [_series_color(n) for n in names]
    free = [c for c in FALLBACK_COLORS if c not in own]
    out = []
    for c in own:
        if c is None:
            c = free.pop(0) if free else FALLBACK_COLORS[len(out) % len(FALLBACK_COLORS)]
        out.append(c)
    return out


# --- 1. collectives explained --------------------------------------------------------

_CAPTIONS = {
    "all_reduce": "every rank ends with the element-wise sum of all buffers",
    "all_gather": "every rank ends with every rank's shard",
    "reduce_scatter": "rank r ends with chunk r, summed over all ranks",
    "all_to_all": "rank r sends its chunk c to rank c: a transpose",
    "broadcast": "rank 0's buffer is copied to every rank",
    "send_recv": "rank 0 sends its buffer to rank 1; the others do nothing",
}


def _collective_cells(op: str, n: int):
    """(before, after): [rank][cell] -> (text, colour key) with key a rank,
    'mix' (several ranks' data combined) or None (nothing there)."""
    letter = "abcdefgh"

    def own(r, c):  # element c of rank r's original buffer
        return (f"{letter[c]}{str(r).translate(_SUBSCRIPTS)}", r)

    empty = ("", None)
    rng = range(n)
    if op == "all_reduce":
        before = [[own(r, c) for c in rng] for r in rng]
        after = [[(f"Σ{letter[c]}", "mix") for c in rng] for r in rng]
    elif op == "all_gather":
        before = [[own(r, c) if c == r else empty for c in rng] for r in rng]
        after = [[own(c, c) for c in rng] for r in rng]
    elif op == "reduce_scatter":
        before = [[own(r, c) for c in rng] for r in rng]
        after = [[(f"Σ{letter[c]}", "mix") if c == r else empty for c in rng] for r in rng]
    elif op == "all_to_all":
        before = [[(f"{r}→{c}", r) for c in rng] for r in rng]
        after = [[(f"{c}→{r}", c) for c in rng] for r in rng]
    elif op == "broadcast":
        before = [[own(0, c) if r == 0 else empty for c in rng] for r in rng]
        after = [[own(0, c) for c in rng] for r in rng]
    else:  # send_recv
        before = [[own(0, c) if r == 0 else empty for c in rng] for r in rng]
        after = [[own(0, c) if r in (0, 1) else empty for c in rng] for r in rng]
    return before, after


def collective_diagram(op: str, n: int = 4) -> go.Figure:
    """Before/after picture of one collective: one row per rank, its buffer as n
    cells coloured by the rank the data came from (grey: summed over ranks, white:
    nothing there). The reader should see where each piece of data ends up."""
    if op not in _CAPTIONS:
        raise ValueError(f"op={op!r} must be one of {sorted(_CAPTIONS)}")
    if isinstance(n, bool) or not isinstance(n, int) or not 2 <= n <= 8:
        raise ValueError(f"n={n!r} must be an int between 2 and 8")
    before, after = _collective_cells(op, n)
    gap, pad = 2.6, 0.06  # gap between the panels (room for the arrow); cell padding
    shapes, notes = [], []
    for panel, (cells, x0) in enumerate(((before, 0.0), (after, n + gap))):
        notes.append(dict(x=x0 + n / 2, y=-0.15, text=f"<b>{('before', 'after')[panel]}</b>",
                          showarrow=False, yanchor="bottom", font=dict(size=14)))
        for r in range(n):
            for c in range(n):
                text, key = cells[r][c]
                fill = (EMPTY_COLOR if key is None else NEUTRAL_COLOR if key == "mix"
                        else rank_color(key))
                shapes.append(dict(
                    type="rect", x0=x0 + c + pad, x1=x0 + c + 1 - pad, y0=r + pad,
                    y1=r + 1 - pad, fillcolor=fill, layer="below",
                    line=dict(color="#BBBBBB" if key is None else "#555555", width=1,
                              dash="dot" if key is None else "solid")))
                if text:
                    notes.append(dict(x=x0 + c + 0.5, y=r + 0.5, text=text, showarrow=False,
                                      font=dict(size=13, color=_text_color(fill))))
    for r in range(n):
        notes.append(dict(x=-0.15, y=r + 0.5, text=f"rank {r}", showarrow=False,
                          xanchor="right", font=dict(size=12)))
    mid = n / 2
    notes.append(dict(x=n + gap - 0.25, y=mid, ax=n + 0.25, ay=mid, xref="x", yref="y",
                      axref="x", ayref="y", text="", showarrow=True, arrowhead=2,
                      arrowsize=1.2, arrowwidth=2, arrowcolor="#444444"))
    notes.append(dict(x=n + gap / 2, y=mid - 0.1, text=op, showarrow=False,
                      yanchor="bottom", font=dict(size=12, color="#444444")))
    unit = 46  # pixels per cell
    fig = go.Figure()
    _base_layout(fig, f"<b>{op}</b>, {n} ranks", shapes=shapes, annotations=notes,
                 width=int((2 * n + gap + 1.6) * unit + 40),
                 height=int((n + 0.8) * unit + 110), showlegend=False)
    fig.update_layout(title_subtitle_text=_CAPTIONS[op], margin=dict(l=20, r=20, t=80, b=20))
    fig.update_xaxes(visible=False, range=[-1.4, 2 * n + gap + 0.2], fixedrange=True)
    fig.update_yaxes(visible=False, range=[n + 0.2, -0.6], fixedrange=True,
                     scaleanchor="x", scaleratio=1)
    return fig


# --- 2. the ring all-reduce, step by step ---------------------------------------------

def _contributors(mask: int, n: int) -> str:
    """Cell text: 'all', '0+1+3', or with runs folded for long lists ('0–4+6')."""
    if mask == (1 << n) - 1:
        return "all"
    ranks = [k for k in range(n) if mask >> k & 1]
    if len(ranks) <= 4:
        return "+".join(map(str, ranks))
    runs, start = [], ranks[0]
    for a, b in zip(ranks, ranks[1:] + [None]):
        if b != a + 1:
            runs.append(str(start) if start == a else f"{start}–{a}" if a - start > 1
                        else f"{start}+{a}")
            start = b
    return "+".join(runs)


def _check_ring_frames(frames) -> tuple[int, int]:
    if not frames:
        raise ValueError("frames is empty")
    n = len(frames[0]["state"])
    chunks = len(frames[0]["state"][0]) if n else 0
    if n < 2 or chunks < 1:
        raise ValueError("state must have at least 2 ranks and 1 chunk")
    for i, f in enumerate(frames):
        if f["phase"] not in ("start", "reduce_scatter", "all_gather"):
            raise ValueError(f"frame {i}: phase={f['phase']!r} must be 'start', "
                             "'reduce_scatter' or 'all_gather'")
        st = f["state"]
        if len(st) != n or any(len(row) != chunks for row in st):
            raise ValueError(f"frame {i}: state must be {n} ranks x {chunks} chunks")
        if any(not 0 <= m < 1 << n for row in st for m in row):
            raise ValueError(f"frame {i}: bitmasks must be in [0, 2**{n})")
        for src, dst, c in f.get("sends", ()):
            if not (0 <= src < n and 0 <= dst < n and 0 <= c < chunks):
                raise ValueError(f"frame {i}: send {(src, dst, c)} out of range")
    return n, chunks


def _ring_step_title(f: dict, n: int) -> str:
    if f["phase"] == "start":
        return "start: every rank holds only its own data"
    name = "reduce-scatter" if f["phase"] == "reduce_scatter" else "all-gather"
    return f"{name} step {f.get('step', 0) + 1} of {n - 1}"


def _ring_annotations(sends, n: int) -> list[dict]:
    """Arrows from the sender's cell to the receiver's, in the chunk's column
    (right edge of the cell, so the text stays readable), plus a text line."""
    arrow = dict(xref="x", yref="y", axref="x", ayref="y", text="", showarrow=True,
                 arrowhead=2, arrowsize=1, arrowwidth=2, arrowcolor="#D62728", visible=True)
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
        items = [f"rank {s} → rank {d}: chunk {c}" for s, d, c in sends]
        lines = ["    ".join(items[i:i + 3]) for i in range(0, len(items), 3)]
        text = "<br>".join(lines)
    else:
        text = "no transfers yet"
    # The text line goes first, so it keeps its place (and style) in every frame.
    return [dict(xref="paper", yref="paper", x=0, y=0, xanchor="left", yanchor="top",
                 yshift=-8, align="left", showarrow=False, text=text, visible=True,
                 font=dict(size=11, color="#444444"))] + out


def ring_animation(frames: list[dict], title: str = "") -> go.Figure:
    """Ring all-reduce as an animation: a grid of ranks (rows) by chunks (columns),
    each cell darker the more ranks' contributions it holds, red arrows for the
    step's transfers. The reader should see each chunk pick up one contribution
    per hop in reduce-scatter, then the finished chunks travel round in all-gather.

    ``frames``: one dict per step, ``{"phase", "step" (0-based within the phase),
    "state" ([rank][chunk] bitmask of contributing ranks), "sends" ([(src, dst,
    chunk)])}``; ``parlab.collective_demos.ring_frames`` records them from a real run.
    """
    n, chunks = _check_ring_frames(frames)
    ranks, cols = list(range(n)), list(range(chunks))

    def grid(state):
        z = [[bin(m).count("1") or None for m in row] for row in state]
        text = [[_contributors(m, n) if m else "" for m in row] for row in state]
        return z, text

    def full_title(f):
        step = _ring_step_title(f, n)
        return f"{title}: {step}" if title else step

    z0, text0 = grid(frames[0]["state"])
    heat = go.Heatmap(
        x=cols, y=ranks, z=z0, text=text0, texttemplate="%{text}", zmin=1, zmax=n,
        colorscale=CONTRIBUTION_SCALE, xgap=3, ygap=3, textfont=dict(size=12),
        colorbar=dict(title=dict(text="contributions"), tickvals=list(range(1, n + 1)),
                      thickness=14, len=0.8),
        hovertemplate="rank %{y}, chunk %{x}<br>contributions: %{text} (%{z} of "
                      f"{n})<extra></extra>")
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
        label = ("start" if f["phase"] == "start" else
                 f"{'RS' if f['phase'] == 'reduce_scatter' else 'AG'} {f.get('step', 0) + 1}")
        steps.append(dict(method="animate", label=label, args=[
            [str(i)], dict(mode="immediate", frame=dict(duration=0, redraw=True),
                           transition=dict(duration=0))]))
    fig.frames = anim_frames
    n_lines = max(1, math.ceil(max(len(f.get("sends", [])) for f in frames) / 3))
    _base_layout(fig, full_title(frames[0]), annotations=notes[0],
                 width=max(760, 220 + 85 * chunks), height=280 + 48 * n + 16 * n_lines)
    fig.update_layout(
        margin=dict(l=70, r=20, t=90, b=130 + 16 * n_lines),
        updatemenus=[dict(type="buttons", direction="left", x=0, y=0, xanchor="left",
                          yanchor="top", pad=dict(t=60 + 16 * n_lines), showactive=False,
                          buttons=[
                              dict(label="▶ play", method="animate", args=[None, dict(
                                  frame=dict(duration=900, redraw=True), fromcurrent=True,
                                  transition=dict(duration=0))]),
                              dict(label="❚❚ pause", method="animate", args=[[None], dict(
                                  mode="immediate", frame=dict(duration=0, redraw=False),
                                  transition=dict(duration=0))])])],
        sliders=[dict(active=0, steps=steps, x=0.3, len=0.7, y=0, yanchor="top",
                      pad=dict(t=50 + 16 * n_lines), currentvalue=dict(prefix="step: "))])
    fig.update_xaxes(side="top", tickvals=cols, ticktext=[f"chunk {c}" for c in cols],
                     range=[-0.5, chunks - 0.5], showgrid=False, zeroline=False,
                     fixedrange=True)
    fig.update_yaxes(tickvals=ranks, ticktext=[f"rank {r}" for r in ranks],
                     range=[n - 0.5 + 0.6, -0.5 - 0.6], showgrid=False, zeroline=False,
                     fixedrange=True)
    return fig


# --- 3. timelines of trace events -------------------------------------------------------

_MAX_NAMES_PER_KIND = 30  # beyond this, one trace per kind carries the names itself


def _hover_parts(e: dict) -> list[tuple[str, object]]:
    """(field, value) pairs shown when hovering one event, in display order."""
    sent, recv = int(e.get("bytes_sent") or 0), int(e.get("bytes_recv") or 0)
    parts = [("name", str(e.get("name", ""))),
             ("dur", round(max(e["end"] - e["start"], 0.0) * 1e3, 4))]
    if sent or recv:
        parts += [("sent", _fmt_bytes(sent)), ("recv", _fmt_bytes(recv)),
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
    e.g. "comm: all_gather") when the events use more than one."""
    for kind in kinds:
        mine = [e for e in events if e["kind"] == kind]
        ops = list(dict.fromkeys((e.get("meta") or {}).get("op") for e in mine))
        if kind != "comm" or len(ops) < 2:
            yield kind, KIND_COLORS.get(kind, _OTHER_COLOR), mine
            continue
        for op in ops:
            name = f"comm: {op}" if op else kind
            yield name, COMM_OP_COLORS.get(op, KIND_COLORS["comm"]), [
                e for e in mine if (e.get("meta") or {}).get("op") == op]


def timeline(events: list[dict], title: str = "", t0: float | None = None) -> go.Figure:
    """Gantt chart of trace events: one row per rank (rank 0 on top), time in ms
    from ``t0`` (default: the earliest start), bars coloured by kind. The reader
    should see who computes, who communicates and who sits waiting, and when.

    Hovering a bar shows the event's name, duration, bytes and meta. To keep saved
    notebooks small, each kind is drawn as a few bar traces, one per event name,
    sharing one legend entry (``legendgroup`` = kind; every trace's ``name`` is the
    kind); a kind with more than 30 distinct names is drawn as a single trace.
    Communication that mixes collectives (``meta["op"]``: all-gathers and
    reduce-scatters under ZeRO) gets one legend entry and colour per collective
    (``COMM_OP_COLORS``), named e.g. "comm: all_gather".
    """
    fig = go.Figure()
    if not events:
        _base_layout(fig, title, height=220)
        fig.add_annotation(text="no events", x=0.5, y=0.5, xref="paper", yref="paper",
                           showarrow=False, font=dict(size=16, color="#888888"))
        fig.update_xaxes(visible=False)
        fig.update_yaxes(visible=False)
        return fig
    if t0 is None:
        t0 = min(e["start"] for e in events)
    kinds = [k for k in KIND_COLORS if any(e["kind"] == k for e in events)]
    kinds += sorted({e["kind"] for e in events} - set(KIND_COLORS))
    for kind, color, mine in _timeline_groups(events, kinds):
        names = list(dict.fromkeys(str(e.get("name", "")) for e in mine))
        groups = ([[e for e in mine if str(e.get("name", "")) == nm] for nm in names]
                  if len(names) <= _MAX_NAMES_PER_KIND else [mine])
        for i, group in enumerate(groups):
            template, custom = _hover_template(group, kind)
            fig.add_trace(go.Bar(
                name=kind, legendgroup=kind, showlegend=i == 0, orientation="h",
                base=[round((e["start"] - t0) * 1e3, 3) for e in group],  # 1 us resolution
                x=[round(max(e["end"] - e["start"], 0.0) * 1e3, 4) for e in group],
                y=[int(e["rank"]) for e in group], customdata=custom,
                hovertemplate=template, width=0.8,
                marker=dict(color=color, line=dict(width=0))))
    ranks = sorted({int(e["rank"]) for e in events})
    x0 = (min(e["start"] for e in events) - t0) * 1e3
    x1 = (max(e["end"] for e in events) - t0) * 1e3
    x1 += 0.02 * (x1 - x0)  # a margin after the last bar: it ends, it is not cut off
    _base_layout(fig, title, barmode="overlay", bargap=0.2,
                 height=max(220, 110 + 42 * (max(ranks) - min(ranks) + 1)),
                 legend=dict(orientation="h", x=1, xanchor="right", y=1.02,
                             yanchor="bottom"))
    fig.update_xaxes(title_text="time (ms)", range=[x0, x1 if x1 > x0 else x0 + 1e-3],
                     zeroline=False)
    fig.update_yaxes(tickvals=ranks, ticktext=[f"rank {r}" for r in ranks],
                     range=[max(ranks) + 0.6, min(ranks) - 0.6], showgrid=False,
                     zeroline=False)
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
    unit, size = _byte_unit(max(max(r["measured"], r["formula"]) for r in rows))
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
            per_rank = ", ".join(f"{r['rank']}: {_fmt_bytes(r['measured'])}"
                                 for r in sorted(rs, key=lambda r: r["rank"])[:8])
            hover.append(f"<b>{alg}, n={n}</b><br>busiest: rank {top['rank']}<br>"
                         f"measured {_fmt_bytes(top['measured'])}<br>"
                         f"formula {_fmt_bytes(top['formula'])} (ratio {ratio:.2f})<br>"
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
            line=dict(color="#333333", width=1, dash="dot"), legendgroup=alg,
            marker=dict(symbol="line-ew", size=24, line=dict(width=3, color="#333333")),
            hovertemplate=f"{alg} formula: %{{y:.3g}} {unit}<extra></extra>"))
    _base_layout(fig, "bytes sent per collective: busiest rank, measured vs formula",
                 barmode="overlay")
    fig.update_xaxes(title_text="world size n (ranks)", tickvals=list(range(len(ns))),
                     ticktext=[f"n={n}" for n in ns], range=[-0.6, len(ns) - 0.4])
    fig.update_yaxes(title_text=f"bytes sent by the busiest rank ({unit})", rangemode="tozero")
    return fig


# --- 5. the alpha-beta fit -----------------------------------------------------------------

def _log_space(lo: float, hi: float, k: int = 64) -> list[float]:
    a, b = math.log10(lo), math.log10(hi)
    return [10 ** (a + (b - a) * i / (k - 1)) for i in range(k)]


def alpha_beta_figure(sizes: list[float], times: list[float], alpha: float, beta: float,
                      title: str = "", extra: dict[str, tuple[list, list]] | None = None
                      ) -> go.Figure:
    """Measured message time against size on log-log axes, with the fitted
    alpha + beta*size. The reader should see a flat floor (latency, alpha) for
    small messages and a slope-1 line (bandwidth, 1/beta) for large ones, meeting
    near size = alpha/beta. Times are in seconds (axis labels with SI prefixes)."""
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
                                        color="#222222" if i == 0 else rank_color(i - 1),
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
                       bgcolor="rgba(255,255,255,0.8)",
                       text=f"α = {alpha * 1e6:.3g} µs (latency)<br>1/β = {bw} (bandwidth)")
    if alpha > 0 and beta > 0 and lo < alpha / beta < hi:
        knee = alpha / beta
        fig.add_shape(type="line", x0=knee, x1=knee, y0=0, y1=1, yref="paper",
                      line=dict(color="#888888", dash="dot", width=1))
        fig.add_annotation(x=math.log10(knee), y=0.02, yref="paper", xanchor="left",
                           yanchor="bottom", showarrow=False, font=dict(size=11, color="#666"),
                           text=f" α = β·size at {_fmt_bytes(knee)}")
    _base_layout(fig, title, legend=dict(x=1, xanchor="right", y=0.02, yanchor="bottom"))
    fig.update_xaxes(type="log", title_text="message size (bytes)", **_BYTES_AXIS)
    fig.update_yaxes(type="log", title_text="time (s)", **_SECONDS_AXIS)
    return fig


# --- 6, 7. generic helpers --------------------------------------------------------------------

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
            mode="lines", line=dict(width=2, color=_series_color(name), dash=_series_dash(name)),
            hovertemplate=f"{name}<br>x=%{{x:.4g}}<br>y=%{{y:.4g}}<extra></extra>"))
    for label, x in (vlines or {}).items():
        if log_x and not x > 0:
            raise ValueError(f"vline {label!r} at x={x} cannot go on a log axis")
        fig.add_shape(type="line", x0=x, x1=x, y0=0, y1=1, yref="paper",
                      line=dict(color="#666666", dash="dash", width=1.5))
        fig.add_annotation(x=math.log10(x) if log_x else x, y=1, yref="paper", yanchor="bottom",
                           text=label, showarrow=False, font=dict(size=11, color="#444444"))
    _base_layout(fig, title)
    fig.update_layout(margin=dict(t=80 if title else 50))
    fig.update_xaxes(type="log" if log_x else "linear", title_text=x_title,
                     **(_BYTES_AXIS if log_x else {}))
    suffix = "s" if y_title.endswith("(s)") else ""
    y_format = dict(_SECONDS_AXIS) if suffix else {"dtick": 1}
    if not log_y:
        y_format.pop("dtick")  # one tick per decade only makes sense on a log axis
    else:
        ys = [y for _, cys in curves.values() for y in cys if y > 0]
        if ys and math.log10(max(ys) / min(ys)) < 3:  # few decades: label 1-2-5 (or every digit)
            vals = _log_ticks(min(ys), max(ys))
            y_format = dict(tickmode="array", tickvals=vals,
                            ticktext=[_si(v) + suffix for v in vals])
    fig.update_yaxes(type="log" if log_y else "linear", title_text=y_title, **y_format)
    return fig


def _log_ticks(lo: float, hi: float) -> list[float]:
    """Tick values for a log axis spanning lo..hi over less than 3 decades: 1-2-5 per
    decade, or every half digit within one decade -- at least 3 of them. (plotly's own
    "D1"/"D2" ticks label the minor ones with bare digits, whatever tickformat says.)"""
    steps = (1, 2, 5) if math.log10(hi / lo) >= 0.8 else [h / 2 for h in range(2, 20)]
    k0, k1 = math.floor(math.log10(lo)), math.ceil(math.log10(hi))
    vals = [m * 10.0 ** k for k in range(k0, k1 + 1) for m in steps]
    inside = [v for v in vals if lo / 1.3 <= v <= hi * 1.3]
    return [float(f"{v:.3g}") for v in inside]


def _si(v: float) -> str:
    """0.0002 -> '200µ', 1500 -> '1.5k': SI prefixes, as plotly's "~s" format writes them."""
    for exp, prefix in ((9, "G"), (6, "M"), (3, "k"), (0, ""), (-3, "m"), (-6, "µ"), (-9, "n")):
        if abs(v) >= 10.0 ** exp or exp == -9:
            return f"{v / 10.0 ** exp:.3g}{prefix}"
    return f"{v:.3g}"


# Log axes: one labelled tick per decade (dtick=1), with SI prefixes throughout
# ("100µs", "1ms"; "1k", "1M") rather than plotly's mix of prefixed and bare minor labels.
_SECONDS_AXIS = dict(tickformat="~s", ticksuffix="s", dtick=1)
_BYTES_AXIS = dict(tickformat="~s", dtick=1)


def _series_dash(name: str) -> str:
    """Line style from a series name: tree dashed (so it shows where it lies on the
    ring), '(predicted)' dashed, '(median)' dotted, everything else solid."""
    lowered = name.lower()
    if "(median)" in lowered:
        return "dot"
    return "dash" if "(predicted)" in lowered or lowered.startswith("tree") else "solid"


def measured_vs_predicted(rows: list[dict], title: str = "",
                          predicted_for: set | None = None) -> go.Figure:
    """Measured (best and median) and predicted collective times against message size,
    one colour per algorithm: solid = best, dotted = median, dashed = predicted. The
    reader should see where the model holds (best close to dashed) and how far the
    typical run (median) strays. ``rows``: dicts with ``algorithm``, ``bytes``,
    ``measured`` (median), ``best`` and, optionally, ``predicted`` (seconds).
    ``predicted_for``: the algorithms whose prediction is drawn (default: all)."""
    palette = ["#54A24B", "#E45756", "#4C78A8", "#F58518", "#B279A2"]
    algorithms = list(dict.fromkeys(r["algorithm"] for r in rows))
    fig = go.Figure()
    for k, algo in enumerate(algorithms):
        mine = sorted((r for r in rows if r["algorithm"] == algo), key=lambda r: r["bytes"])
        color = _series_color(algo) or palette[k % len(palette)]
        for key, label in (("best", "best"), ("measured", "median"), ("predicted", "predicted")):
            if any(r.get(key) is None for r in mine) or (
                    key == "predicted" and predicted_for is not None and algo not in predicted_for):
                continue
            fig.add_trace(go.Scatter(
                name=f"{algo} ({label})", legendgroup=algo, x=[r["bytes"] for r in mine],
                y=[r[key] for r in mine], mode="lines+markers" if key == "best" else "lines",
                line=dict(color=color, width=2, dash=_series_dash(f"({label})")),
                hovertemplate=f"{algo} ({label})<br>%{{x}} B: %{{y:.3s}}s<extra></extra>"))
    _base_layout(fig, title)
    fig.update_layout(margin=dict(t=80 if title else 50))
    fig.update_xaxes(type="log", title_text="message size (bytes)", **_BYTES_AXIS)
    fig.update_yaxes(type="log", title_text="time (s)", **_SECONDS_AXIS)
    return fig


def bars(categories: list[str], series: dict[str, list[float]], title: str = "",
         y_title: str = "") -> go.Figure:
    """Grouped bars: one group per category, one bar per series. The reader
    should compare the series within each group. Series named after an algorithm or a
    data-parallel variant get its colour, the others distinct ones (``_series_colors``)."""
    fig = go.Figure()
    for (name, values), color in zip(series.items(), _series_colors(series)):
        if len(values) != len(categories):
            raise ValueError(f"series {name!r} has {len(values)} values for "
                             f"{len(categories)} categories")
        fig.add_trace(go.Bar(name=name, x=list(categories), y=list(values),
                             marker=dict(color=color),
                             hovertemplate=f"{name}<br>%{{x}}: %{{y:.4g}}<extra></extra>"))
    _base_layout(fig, title, barmode="group")
    fig.update_yaxes(title_text=y_title)
    return fig


# --- memory per GPU: stacked bars against the device's memory --------------------------

MEMORY_PARTS = {  # what a rank holds, bottom to top, and its colour
    "params": "#4C78A8", "grads": "#F58518", "optimizer": "#54A24B",
    "gathered_peak": "#9ECAE9", "activations": "#B279A2",
}


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
    name, size = ("GB", 1e9) if unit == "GB" else _byte_unit(biggest)
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
            mode="markers", marker=dict(symbol="line-ew", size=28, color="#000000",
                                        line=dict(width=3, color="#000000")),
            hovertemplate=f"formula: %{{y:.3g}} {name}<extra>%{{x}}</extra>"))
    if limit:
        # the line's label goes in the right margin, level with the line: never on a bar
        fig.add_hline(y=limit / size, line=dict(color="#E45756", dash="dash", width=2))
        fig.add_annotation(x=1, xref="paper", xanchor="left", xshift=6, y=limit / size,
                           yanchor="middle", showarrow=False, align="left",
                           text=f"device<br>memory<br>{limit / size:.4g}&nbsp;{name}",
                           font=dict(color="#C62828", size=12))
        for label, top in zip(labels, tops):
            fits = top <= limit
            fig.add_annotation(x=label, y=top / size, yanchor="bottom", showarrow=False,
                               text="fits" if fits else "does not fit",
                               font=dict(color="#2E7D32" if fits else "#C62828", size=13))
    _base_layout(fig, title, barmode="stack")
    if limit:  # the legend below the bars, the right margin for the line's label
        fig.update_layout(margin=dict(r=90, b=80),
                          legend=dict(orientation="h", x=0, y=-0.08, yanchor="top"))
    fig.update_yaxes(title_text=f"per GPU ({name})", rangemode="tozero")
    return fig


# --- data parallelism (notebook 01) --------------------------------------------------------

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
                                     mode="lines", line=dict(color="#E45756", dash="dash"),
                                     hovertemplate="%{y:.2f} ms<extra>naive</extra>"))
    _base_layout(fig, title, legend=dict(orientation="h", y=1.02, yanchor="bottom", x=0))
    fig.update_layout(margin=dict(t=90 if title else 50, r=60),
                      yaxis2=dict(title="overlap with backward (%)", overlaying="y",
                                  side="right", range=[0, 100], showgrid=False,
                                  tickmode="linear", tick0=0, dtick=20, zeroline=False))
    fig.update_xaxes(type="log", title_text="bucket size (bytes)", **_BYTES_AXIS)
    fig.update_layout(yaxis=dict(title="step time (ms)", rangemode="tozero"))
    return fig


def loss_curves(curves: dict[str, list[float]], title: str = "",
                floor: float | None = None) -> go.Figure:
    """Training loss per step, one line per run, with the data's entropy floor (the best
    any model can reach) as a dashed level. The reader should see which runs track the
    exact one and which lag behind."""
    fig = go.Figure()
    palette = ["#222222", "#4C78A8", "#F58518", "#E45756", "#54A24B", "#B279A2", "#9D755D"]
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
                                 line=dict(color="#888888", dash="dash", width=1),
                                 hoverinfo="skip"))
    _base_layout(fig, title)
    fig.update_xaxes(title_text="optimizer step")
    fig.update_yaxes(title_text="training loss (nats/token)")
    return fig


# --- pipeline parallelism (notebook 03) -----------------------------------------------------

# One hue per micro-batch (Tableau 10, repeating); F drawn as a light tint, B in the full
# colour, W (zero-bubble weight gradients) dark: read a column of one colour as one
# micro-batch travelling down the pipeline and back.
MICROBATCH_COLORS = ["#4E79A7", "#F28E2B", "#E15759", "#76B7B2", "#59A14F",
                     "#EDC948", "#B07AA1", "#FF9DA7", "#9C755F", "#BAB0AC"]
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


def op_color(op: str, mb: int) -> str:
    """Colour of pipeline op ``op`` ("F", "B", "W") of micro-batch ``mb``."""
    return _shade(MICROBATCH_COLORS[int(mb) % len(MICROBATCH_COLORS)], _OP_SHADE[op])


def _op_label(op: str, meta: dict) -> str:
    """F3 (micro-batch 3), F3·c1 (micro-batch 3, model chunk 1 of an interleaved rank)."""
    chunk = meta.get("chunk") or 0
    return f"{op}{meta['mb']}" + (f"·c{chunk}" if chunk else "")


def pipeline_timeline(events: list[dict], title: str = "", overlay: list[dict] | None = None,
                      labels: tuple[str, str] = ("simulated", "measured"),
                      unit: str = "ms") -> go.Figure:
    """One row per rank (rank 0 on top), one bar per F / B / W op coloured by its
    micro-batch, shaded by op (F light, B full, W dark: a key under the axis), hatched
    by model chunk (interleaved: chunk 1 "/"), labelled F3, B3·c1 (micro-batch 3,
    chunk 1) where the label fits (horizontal, else hidden; hover shows it). The reader should
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
    rows = {(r, name): f"rank {r}" + (f" · {name}" if overlay is not None else "")
            for r in ranks for name, _ in sets}
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
            # a bar too narrow for "F3·c1" (at ~7 px a character on a ~760 px wide plot)
            # says "F3": its hatching tells the chunk, its hover the full label
            text = [f if (e["end"] - e["start"]) / span * 760 >= 7 * len(f) + 4
                    else f"{op}{e['meta']['mb']}" for f, e in zip(full, mine)]
            chunks = [int(e["meta"].get("chunk") or 0) for e in mine]
            colors = [op_color(op, e["meta"]["mb"]) for e in mine]
            marker = dict(color=colors, line=dict(width=0.5, color="#FFFFFF"))
            if any(chunks):
                used_chunks.update(chunks)
                marker["pattern"] = dict(
                    shape=[CHUNK_PATTERNS[c % len(CHUNK_PATTERNS)] for c in chunks],
                    fgcolor=[_text_color(c) for c in colors], fgopacity=0.45, size=6)
            fig.add_trace(go.Bar(
                name=f"{op} ({name})" if overlay is not None else op, orientation="h",
                base=[round((e["start"] - t0) * scale, 4) for e in mine],
                x=[round((e["end"] - e["start"]) * scale, 4) for e in mine],
                y=[rows[int(e["rank"]), name] for e in mine], text=text,
                textposition="inside", insidetextanchor="middle", textangle=0,
                constraintext="inside", width=0.8, marker=marker,
                textfont=dict(color=[_text_color(c) for c in colors]),
                customdata=[[round((e["start"] - t0) * scale, 4), f] for e, f in zip(mine, full)],
                hovertemplate=f"%{{customdata[1]}} ({name})<br>start %{{customdata[0]:.4g}} "
                              f"{unit}, lasts %{{x:.4g}} {unit}<extra></extra>"))
            used_ops.add(op)
    order = [rows[r, name] for r in ranks for name, _ in sets]
    _base_layout(fig, title, barmode="overlay", showlegend=False,
                 height=max(200, 120 + 34 * len(order)), uniformtext=dict(minsize=8, mode="hide"))
    fig.update_layout(margin=dict(b=80))
    # the key: what the shades (and the hatching) mean, under the time axis
    key = [_OP_WORDS[op] for op in "FBW" if op in used_ops]
    key += [f"chunk {c} {_CHUNK_WORDS[c % len(_CHUNK_WORDS)]}" for c in sorted(used_chunks)]
    if key:
        fig.add_annotation(text="key: " + " · ".join(key) + " · one hue per micro-batch",
                           xref="paper", yref="paper", x=0, y=0, xanchor="left", yanchor="top",
                           yshift=-42, showarrow=False, font=dict(size=11, color="#555555"))
    fig.update_xaxes(title_text=f"time ({unit})", zeroline=False)
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
                            line=dict(width=1, color="#FFFFFF")),
                hovertemplate=f"{sched}, M=%{{x}}: %{{y:.1f}}%<extra>measured</extra>"))
    _base_layout(fig, title)
    fig.update_xaxes(type="log", title_text="micro-batches M",
                     tickvals=sorted({r["m"] for r in rows}))
    fig.update_yaxes(title_text="bubble: idle / total time (%)", rangemode="tozero")
    return fig
