"""The lab's plot style: one template, shared colours and small formatters.

Every figure module (``lessons.common.viz.charts`` and each strategy's ``figures.py``) draws
with these, so a rank, a kind of event or an algorithm has the same colour in every
notebook. ``KIND_COLORS`` for the three kinds of trace events, ``RANK_COLORS`` (via
:func:`rank_color`) for data that belongs to one rank, ``NEUTRAL_COLOR`` for data mixed
from several ranks, ``ALGORITHM_COLORS`` for the collective algorithms of ``parlab.cost``.
Every colour the figures and widgets use is named here (greys of ink in ``INK``, the
red of warnings ``WARNING_COLOR``, each figure's own palette): none is written elsewhere.
"""

from __future__ import annotations

import colorsys
import math

import plotly.graph_objects as go
import plotly.io as pio

# Load plotly's renderers now, while the notebook imports the lab. Plotly loads them (and
# with them nbformat and jsonschema, which build a grammar when imported) the first time a
# figure is displayed; when that first figure is a widget's, inside its callback, the
# same imports took 5-7 s instead of about 2 s here, and the learner waited on the widget.
pio.renderers.default  # noqa: B018

TEMPLATE = "plotly_white"

KIND_COLORS = {
    "compute": "#4C78A8",  # blue: useful work
    "comm": "#F58518",  # orange: bytes on the wire
    "wait": "#B0B0B0",  # grey: idle, waiting for someone else
}
# Compute spans split by phase (a trace name starting "forward", "backward", "optimizer"
# or "AdamW"...): forward light, backward dark -- one blue family, read as "useful work" --
# and the optimizer step green, so the three never merge into one blue block.
COMPUTE_PHASE_COLORS = {"forward": "#9ECAE9", "backward": "#2C5F8A", "optimizer": "#54A24B"}
COMPUTE_PHASE_WORDS = {"forward": ("forward", "fwd", "f"), "backward": ("backward", "bwd", "b"),
                       "optimizer": ("optimizer", "adamw", "adam", "sgd", "optim")}


def compute_phase(name: str) -> str | None:
    """"forward", "backward" or "optimizer" from a compute span's name (its first word),
    else None: "forward loss" -> "forward", "AdamW" -> "optimizer"."""
    first = str(name).strip().lower().replace("_", " ").split(" ")[0] if name else ""
    return next((phase for phase, words in COMPUTE_PHASE_WORDS.items() if first in words), None)


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

OTHER_COLOR = "#7F7F7F"

# --- neutral ink, backgrounds and verdicts ------------------------------------------
WHITE = "#FFFFFF"  # backgrounds and the thin rims between touching bars, cells, markers
TRANSPARENT = "rgba(0,0,0,0)"  # see-through bars drawn over others (the pipeline's hatching)
LABEL_BACKGROUND = "rgba(255,255,255,0.8)"  # half-see-through white behind text on a plot
# Greys for ink that carries no data of its own -- annotation text, outlines, reference
# lines, formula marks -- darkest first.
INK = {
    "black": "#000000",  # formula ticks and reference curves over coloured bars and lines
    "darkest": "#222222",  # the reference series: the exact run, the measured points, a range
    "darker": "#333333",  # formula dashes over measured bars
    "dark": "#444444",  # annotation text and arrows
    "outline": "#555555",  # outlines of cells and boxes; the key under a figure
    "mid": "#666666",  # dashed reference lines (a mean, a knee, a node boundary)
    "light": "#888888",  # faint notes and dotted guides ("no events", an entropy floor)
    "pale": "#BBBBBB",  # outlines of empty cells; formula bars beside counted ones
}
MISS_COLOR = "#BDBDBD"  # a known miss of the planner (notebook 06), out of the comparison
# The red of warnings: a widget's error message, limits the eye must not miss (a peak,
# an expert's capacity, the device's memory), "does not fit".
WARNING_COLOR = "#C62828"
FITS_COLOR = "#2E7D32"  # "fits" over a memory bar
LIMIT_LINE_COLOR = ALGORITHM_COLORS["naive"]  # the dashed line of the device's memory
TRANSFER_COLOR = "#D62728"  # the arrows of a ring step's transfers
# Answer boxes (``exercises.widgets``) and drills: right, not quite, and a checker that failed.
VERDICT_COLORS = {"right": "#137333", "wrong": "#B3261E", "error": "#BB0000"}

# --- palettes of particular figures -------------------------------------------------
# Memory per GPU (``charts.memory_bars``): what a rank holds, bottom to top, and its colour.
MEMORY_PARTS = {
    "params": "#4C78A8", "grads": "#F58518", "optimizer": "#54A24B",
    "gathered_peak": "#9ECAE9", "activations": "#B279A2",
}
# Algorithms of ``charts.measured_vs_predicted`` without a colour of their own, in turn.
MEASURED_ALGORITHM_COLORS = ["#54A24B", "#E45756", "#4C78A8", "#F58518", "#B279A2"]
# ``charts.loss_curves``: one hue per method, the first (the exact run) near-black.
LOSS_COLORS = [INK["darkest"], "#4C78A8", "#F58518", "#E45756", "#54A24B", "#B279A2", "#9D755D"]
# Measurement against prediction (notebook 06): the best step in the compute blue, the
# median in the forward's light blue, the prediction in the comm orange.
MEASURED_COLORS = {"measured": KIND_COLORS["compute"], "median": COMPUTE_PHASE_COLORS["forward"],
                   "predicted": KIND_COLORS["comm"]}
# The planner against published runs (notebook 06): in-sample rows blue, out-of-sample
# orange, the +-tolerance band in the ring's green.
VALIDATION_COLORS = {"in sample": KIND_COLORS["compute"], "out of sample": KIND_COLORS["comm"],
                     "tolerance": ALGORITHM_COLORS["ring"]}
# A step's overhead over its ideal (notebook 06): compute, exposed comm, the bubble in red.
OVERHEAD_COLORS = {"compute": KIND_COLORS["compute"], "communication": KIND_COLORS["comm"],
                   "bubble": ALGORITHM_COLORS["naive"]}
NODE_SHADES = ["#F2F2F2", "#DDEAF6"]  # the mesh figure: cells of alternate nodes, grey and blue
# One hue per micro-batch (the pipeline timeline, notebook 03): Tableau 10. F is drawn as
# a light tint of it, B in the full colour, W dark.
MICROBATCH_COLORS = ["#4E79A7", "#F28E2B", "#E15759", "#76B7B2", "#59A14F",
                     "#EDC948", "#B07AA1", "#FF9DA7", "#9C755F", "#BAB0AC"]
SUBSCRIPTS = str.maketrans("0123456789", "₀₁₂₃₄₅₆₇₈₉")


def rank_color(rank: int) -> str:
    """The lab's colour for ``rank`` (the palette repeats after 8 ranks)."""
    return RANK_COLORS[int(rank) % len(RANK_COLORS)]


def wheel_color(fraction: float) -> str:
    """"#RRGGBB" ``fraction`` (0..1) of the way round the colour wheel from red-orange (0
    degrees) to violet (300), at one saturation and lightness: the hues of micro-batches
    beyond the 10 of MICROBATCH_COLORS."""
    r, g, b = colorsys.hls_to_rgb(fraction * 300 / 360, 0.45, 0.65)
    return "#" + "".join(f"{round(255 * c):02X}" for c in (r, g, b))


# --- small helpers ----------------------------------------------------------------

def text_color(hex_color: str) -> str:
    """Black or white, whichever reads better on ``hex_color`` ("#RRGGBB")."""
    r, g, b = (int(hex_color[i:i + 2], 16) / 255 for i in (1, 3, 5))
    lum = 0.2126 * r + 0.7152 * g + 0.0722 * b
    return "#000000" if lum > 0.45 else "#FFFFFF"


def fmt_bytes(n: float) -> str:
    """1536 -> '1.5 KiB' (binary units, as the notebooks use)."""
    n = float(n)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(n) < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.3g} {unit}"
        n /= 1024
    return f"{n:.3g} TiB"  # unreachable


def byte_unit(max_value: float) -> tuple[str, float]:
    """The binary unit that makes ``max_value`` read as 1..1023, and its size."""
    for unit, size in (("GiB", 2.0 ** 30), ("MiB", 2.0 ** 20), ("KiB", 2.0 ** 10)):
        if max_value >= size:
            return unit, size
    return "B", 1.0


def base_layout(fig: go.Figure, title: str, **kw) -> go.Figure:
    fig.update_layout(template=TEMPLATE, title=dict(text=title, x=0.01, xanchor="left"),
                      margin=dict(l=60, r=20, t=60 if title else 30, b=50), **kw)
    return fig


def series_color(name: str) -> str | None:
    """Algorithm colour when a series is named after one ('ring ...'), the variant's when
    named after a data-parallel variant ('bucketed', 'ddp'), else None."""
    first = name.strip().lower().split(" ")[0].rstrip(",:")
    return ALGORITHM_COLORS.get(first) or VARIANT_COLORS.get(first)


def series_colors(names) -> list[str]:
    """One colour per series: its own (``series_color``) where it has one, else the next
    of FALLBACK_COLORS not already taken -- never two series in the same colour while
    the palette lasts."""
    own = [series_color(n) for n in names]
    free = [c for c in FALLBACK_COLORS if c not in own]
    out = []
    for c in own:
        if c is None:
            c = free.pop(0) if free else FALLBACK_COLORS[len(out) % len(FALLBACK_COLORS)]
        out.append(c)
    return out


def log_ticks(lo: float, hi: float) -> list[float]:
    """Tick values for a log axis spanning lo..hi over less than 3 decades: 1-2-5 per
    decade, or every half digit within one decade -- at least 3 of them. (plotly's own
    "D1"/"D2" ticks label the minor ones with bare digits, whatever tickformat says.)"""
    steps = (1, 2, 5) if math.log10(hi / lo) >= 0.8 else [h / 2 for h in range(2, 20)]
    k0, k1 = math.floor(math.log10(lo)), math.ceil(math.log10(hi))
    vals = [m * 10.0 ** k for k in range(k0, k1 + 1) for m in steps]
    inside = [v for v in vals if lo / 1.3 <= v <= hi * 1.3]
    return [float(f"{v:.3g}") for v in inside]


def si(v: float) -> str:
    """0.0002 -> '200µ', 1500 -> '1.5k': SI prefixes, as plotly's "~s" format writes them."""
    for exp, prefix in ((9, "G"), (6, "M"), (3, "k"), (0, ""), (-3, "m"), (-6, "µ"), (-9, "n")):
        if abs(v) >= 10.0 ** exp or exp == -9:
            return f"{v / 10.0 ** exp:.3g}{prefix}"
    return f"{v:.3g}"


def fmt_seconds(v: float) -> str:
    """'20 µs', '1.5 ms', '1,000 s': plain units, never an SI prefix above a second ('1ks')."""
    scale, unit = next(((k, u) for k, u in ((1, "s"), (1e-3, "ms"), (1e-6, "µs")) if v >= k),
                       (1e-9, "ns"))
    return f"{v / scale:,.3g} {unit}" if v / scale < 1000 else f"{v / scale:,.0f} {unit}"


def seconds_ticks(lo: float, hi: float) -> dict:
    """``fig.update_yaxes(**...)`` settings for a log time axis over ``lo``..``hi`` s: a tick
    per decade (1-2-5 over three decades or less: always several), in ns/µs/ms/s, from
    the tick just below ``lo`` to the one just above ``hi``."""
    if not 0 < lo <= hi:
        raise ValueError(f"lo={lo} and hi={hi} must satisfy 0 < lo <= hi")
    a, b = math.floor(math.log10(lo)), math.ceil(math.log10(hi))
    steps = (1,) if b - a > 3 else (1, 2, 5)
    cand = [m * 10.0 ** k for k in range(a, b + 2) for m in steps]
    low = max(v for v in cand if v <= lo * (1 + 1e-9))
    high = min(v for v in cand if v >= hi * (1 - 1e-9) and v > low)
    vals = [v for v in cand if low <= v <= high]
    return dict(tickmode="array", tickvals=vals, ticktext=[fmt_seconds(v) for v in vals],
                range=[math.log10(low) - 0.05, math.log10(high) + 0.05])  # whole markers at the ends


def ratio_ticks(ratios: list[float]) -> dict:
    """``fig.update_yaxes(**...)`` settings for a log axis of ratios: 1-2-5 ticks read
    "1×", "2×", "0.5×" (a ratio has no unit: not the seconds a time axis shows)."""
    lo, hi = min(ratios), max(ratios)
    if not 0 < lo <= hi:
        raise ValueError(f"ratios must be > 0, got {lo} .. {hi}")
    a, b = math.floor(math.log10(lo)), math.ceil(math.log10(hi))
    vals = [m * 10.0 ** e for e in range(a, b + 1) for m in (1, 2, 5)]
    vals = [v for v in vals if lo / 2.5 <= v <= hi * 2.5]
    return dict(tickmode="array", tickvals=vals, ticktext=[f"{v:g}×" for v in vals],
                range=[math.log10(lo) - 0.1, math.log10(hi) + 0.1])


# Log axes: one labelled tick per decade (dtick=1), with SI prefixes throughout
# ("100µs", "1ms"; "1k", "1M") rather than plotly's mix of prefixed and bare minor labels.
SECONDS_AXIS = dict(tickformat="~s", ticksuffix="s", dtick=1)  # prefer seconds_ticks: "~s" reads 1000 s as "1ks"
BYTES_AXIS = dict(tickformat="~s", dtick=1)


def series_dash(name: str) -> str:
    """Line style from a series name: tree dashed (so it shows where it lies on the
    ring), '(predicted)' dashed, '(median)' dotted, everything else solid."""
    lowered = name.lower()
    if "(median)" in lowered:
        return "dot"
    return "dash" if "(predicted)" in lowered or lowered.startswith("tree") else "solid"
