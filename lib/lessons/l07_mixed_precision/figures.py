"""Figures and tables of notebook 07 (mixed precision): the formats on one log number
line, loss curves, fp16 underflow per layer, the ops autocast runs in each dtype, the error
of a bf16 reduction against its bound, fp8 quantization errors, bytes per parameter.
Plain data in (from ``experiments``), a plotly ``Figure`` or an HTML table out."""

from __future__ import annotations

import plotly.graph_objects as go
from plotly.subplots import make_subplots

from lessons.common.viz.charts import bars, loss_curves
from lessons.common.viz.style import LOSS_COLORS, base_layout, series_colors
from lessons.common.viz.tables import table

__all__ = ["formats_table", "number_line", "loss_figure", "vanished_table", "underflow_table",
           "autocast_table", "reduction_figure", "quantization_table", "bytes_table", "bytes_figure"]


def formats_table(rows: list[dict]):
    """``formats.format_table()`` as HTML."""
    return table(rows, ["format", "bits", "exponent_bits", "mantissa_bits", "max", "smallest_normal",
                        "smallest_subnormal", "eps"],
                 formats={k: ".4g" for k in ("max", "smallest_normal", "smallest_subnormal", "eps")},
                 headers={"exponent_bits": "exponent bits", "mantissa_bits": "mantissa bits",
                          "smallest_normal": "smallest normal", "smallest_subnormal": "smallest subnormal",
                          "eps": "machine epsilon"},
                 caption="Number formats, from torch.finfo")


def number_line(rows: list[dict]) -> go.Figure:
    """One row per format on a log axis: subnormals (thin), normals (thick) up to the max."""
    fig = go.Figure()
    for i, (r, c) in enumerate(zip(rows, series_colors([r["format"] for r in rows]))):
        fig.add_trace(go.Scatter(x=[r["smallest_subnormal"], r["smallest_normal"]], y=[i, i],
                                 mode="lines", line=dict(color=c, width=3), opacity=0.5,
                                 name=f"{r['format']} subnormal", showlegend=False,
                                 hovertemplate=f"{r['format']} subnormals %{{x:.3g}}<extra></extra>"))
        fig.add_trace(go.Scatter(x=[r["smallest_normal"], r["max"]], y=[i, i], mode="lines+markers",
                                 line=dict(color=c, width=12), name=r["format"],
                                 hovertemplate=f"{r['format']} %{{x:.4g}}<extra></extra>"))
    fig.update_xaxes(type="log", title_text="magnitude (log scale)", exponentformat="power")
    fig.update_yaxes(tickvals=list(range(len(rows))), ticktext=[r["format"] for r in rows])
    return base_layout(fig, "range of each format: subnormals (thin) and normals (thick)",
                       height=320, showlegend=False)


# Each run its own colour, dash and marker: the runs of §3 and §6 differ by less than a
# line's width, so colour alone cannot tell them apart (nor can a reader who sees no colour).
_DASHES = ("solid", "dash", "dot", "dashdot", "longdash", "longdashdot")
_MARKERS = ("circle", "square", "diamond", "triangle-up", "x", "cross")


def loss_figure(curves: dict, title: str) -> go.Figure:
    """The loss per step of each run (top), and its difference from the first run's
    (bottom: where runs that overlap on top come apart). One legend entry per run."""
    names = list(curves)
    if not names:
        return loss_curves(curves, title)
    ref = [float(y) for y in curves[names[0]]]
    fig = make_subplots(rows=2, cols=1, shared_xaxes=True, vertical_spacing=0.08,
                        row_heights=[0.6, 0.4])
    for i, (name, color) in enumerate(zip(names, LOSS_COLORS * len(names))):
        ys = [float(y) for y in curves[name]]
        style = dict(mode="lines+markers", legendgroup=name,
                     line=dict(color=color, width=4 if i == 0 else 2, dash=_DASHES[i % len(_DASHES)]),
                     marker=dict(symbol=_MARKERS[i % len(_MARKERS)], size=6, color=color))
        fig.add_trace(go.Scatter(name=name, x=list(range(len(ys))), y=[round(y, 4) for y in ys],
                                 hovertemplate=f"{name}<br>step %{{x}}: %{{y:.4f}}<extra></extra>",
                                 **style), row=1, col=1)
        diff = [round(y - r, 5) for y, r in zip(ys, ref)]
        fig.add_trace(go.Scatter(name=name, x=list(range(len(diff))), y=diff, showlegend=False,
                                 hovertemplate=f"{name}<br>step %{{x}}: %{{y:+.4f}}<extra></extra>",
                                 **style), row=2, col=1)
    base_layout(fig, title, height=520)
    fig.update_xaxes(title_text="optimizer step", row=2, col=1)
    fig.update_yaxes(title_text="training loss (nats/token)", row=1, col=1)
    fig.update_yaxes(title_text=f"loss − {names[0]}'s", row=2, col=1)
    return fig


def vanished_table(rows: list[dict]):
    return table(rows, formats={"median |w|": ".3g", "half ulp": ".3g", "unchanged": ".0%"},
                 headers={"half ulp": "half ulp of |w| (gap away from 0)",
                          "unchanged": "bf16 weight unchanged by the last step"},
                 caption="bf16 weights updated in place, AdamW: which updates vanish")


def underflow_table(rows: list[dict]):
    return table(rows, ["parameter", "scaling", "scale", "zero", "subnormal", "overflow"],
                 formats={"scale": ".0f", "zero": ".2%", "subnormal": ".1%", "overflow": ".2%"},
                 caption="fp16 gradients: share of nonzero elements flushed to 0, subnormal, inf")


def autocast_table(dtypes: dict):
    """{label: experiments.op_dtypes(...)} side by side, one row per aten op."""
    ops = list(dict.fromkeys(op for d in dtypes.values() for op in d))
    rows = [{"aten op": op, **{k: ", ".join(d.get(op, ["-"])) for k, d in dtypes.items()}} for op in ops]
    return table(rows, caption="output dtype of each op in one forward + loss of the GPT")


def reduction_figure(rows: list[dict], measured: dict | None = None) -> go.Figure:
    """Relative error of a bf16 ring sum vs world size, against gamma_(n-1)."""
    n = [r["world_size"] for r in rows]
    fig = go.Figure()
    fig.add_trace(go.Scatter(x=n, y=[r["bound"] if r["bound"] < 1 else None for r in rows],
                             name="bound gamma_(n-1)", mode="lines", line=dict(dash="dash")))
    fig.add_trace(go.Scatter(x=n, y=[r["bf16 max"] for r in rows], name="bf16 ring, max", mode="lines+markers"))
    fig.add_trace(go.Scatter(x=n, y=[r["bf16 mean"] for r in rows], name="bf16 ring, mean", mode="lines+markers"))
    fig.add_trace(go.Scatter(x=n, y=[r["fp32-accumulated max"] for r in rows],
                             name="fp32 accumulate, bf16 result, max", mode="lines+markers"))
    if measured:
        fig.add_trace(go.Scatter(x=list(measured), y=[m["ring bf16"]["max"] for m in measured.values()],
                                 name="real ranks (gloo), max", mode="markers",
                                 marker=dict(size=14, symbol="circle-open")))
    fig.update_xaxes(type="log", title_text="ranks summed (world size)")
    fig.update_yaxes(type="log", title_text="|error| / sum |x_i|")
    return base_layout(fig, "error of a gradient sum in bf16, by world size")


def quantization_table(rows: list[dict]):
    return table(rows, ["tensor", "format", "scaling", "relative error", "tensors"],
                 formats={"relative error": ".2%"},
                 caption="fp8 rounding of the GPT's Linear layers (median relative error)")


def bytes_table(measured: dict, predicted: dict):
    """Measured bytes per parameter by kind (``experiments.bytes_per_param``) beside the
    recipe's ``cost.training_bytes_per_param``."""
    rows = []
    for recipe, m in measured.items():
        if recipe == "gemm_fraction":
            continue
        p = predicted[recipe]
        rows.append({"recipe": recipe, "weights": m["weights"], "fp8 copies": m.get("fp8_weights", 0.0),
                     "grads": m["grads"], "master": m.get("master", 0.0), "Adam m + v": m["optimizer"],
                     "measured total": m["total"], "cost total": p["total"]})
    return table(rows, formats={k: ".2f" for k in ("weights", "fp8 copies", "grads", "master",
                                                   "Adam m + v", "measured total", "cost total")},
                 caption="bytes per parameter held after one step (memory.held_bytes)")


def bytes_figure(measured: dict) -> go.Figure:
    recipes = [k for k in measured if k != "gemm_fraction"]
    kinds = ("weights", "fp8_weights", "grads", "master", "optimizer")
    fig = bars(recipes, {k: [measured[r].get(k, 0.0) for r in recipes] for k in kinds},
               "bytes per parameter, measured", y_title="bytes per parameter")
    fig.update_layout(barmode="stack")
    return fig
