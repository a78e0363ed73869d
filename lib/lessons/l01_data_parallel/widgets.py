"""Widgets of notebook 01 (data parallelism): thin shells over ``experiments`` and ``figures``;
their labels and titles are ``text.TEXT``'s, in the session's language when built and drawn."""

from __future__ import annotations

import ipywidgets as w

from lessons.common.viz.charts import cost_curves
from lessons.common.i18n import t
from lessons.common.viz.controls import LAYOUT, STYLE, bandwidth_label, show
from . import experiments
from .figures import dp_timeline
from .text import TEXT


def dp_bucket_explorer(sweep: dict):
    """Pick a bucket size from a measured ``experiments.bucket_sweep``: the timeline of one
    typical step, with its step time, overlap fraction and exposed communication."""
    labels = [k for k in sweep if sweep[k].get("bucket_bytes")]
    # buttons with the size alone ("256 KiB"): a slider's readout is too narrow for it
    size = w.ToggleButtons(options=[(experiments._kib(sweep[k]["bucket_bytes"]), k) for k in labels],
                           value=labels[len(labels) // 2], description=t(TEXT, "bucket_size"),
                           style={"description_width": "initial", "button_width": "72px"})

    def draw(label):
        r = sweep[label]
        show(dp_timeline(experiments.one_step(r["events"]), experiments.sweep_caption(label, r)))

    return w.VBox([size, w.interactive_output(draw, {"label": size})])


def compression_payoff_explorer(codec_s_per_param: dict | None = None, alpha: float = 5e-6):
    """Predicted step time with and without gradient compression against link bandwidth
    (``experiments.compression_payoff``), for a chosen model size, compute time per step and
    number of ranks; the chosen bandwidth marked. ``codec_s_per_param``: measured
    compress + decompress cost per parameter, {kind: seconds}, included on request."""
    params = w.SelectionSlider(options=[("1M", 10 ** 6), ("10M", 10 ** 7), ("100M", 10 ** 8),
                                        ("1B", 10 ** 9), ("7B", 7 * 10 ** 9)], value=10 ** 8,
                               description=t(TEXT, "parameters"), layout=LAYOUT, style=STYLE)
    compute = w.FloatLogSlider(value=0.1, base=10, min=-3, max=1, step=0.25,
                               description=t(TEXT, "compute_per_step"), layout=LAYOUT, style=STYLE)
    ranks = w.SelectionSlider(options=[2, 4, 8, 16, 64, 256], value=8, description=t(TEXT, "ranks"),
                              layout=LAYOUT, style=STYLE)
    bandwidth = w.SelectionSlider(
        options=[(bandwidth_label(g * 1e9), g * 1e9)
                 for g in (0.1, 0.2, 0.5, 1, 2, 5, 10, 25, 50, 100, 200, 300)],
        value=10e9, description=t(TEXT, "link_bandwidth"), layout=LAYOUT, style=STYLE,
        tooltip=t(TEXT, "per_direction"))
    codec = w.Checkbox(value=False, description=t(TEXT, "codec_cost"),
                       disabled=not codec_s_per_param, indent=False,
                       layout={"width": "auto"}, style={"description_width": "initial"})
    grid = [10 ** (8 + 0.1 * i) for i in range(36)]

    def draw(n_params, compute_s, n, bw, with_codec):
        curves = experiments.compression_payoff(n_params, n, alpha, compute_s, grid + [bw],
                                             codec_s_per_param=codec_s_per_param if with_codec
                                             else None)
        at_bw = {k: ys[-1] for k, (_, ys) in curves.items()}
        best = min(at_bw, key=at_bw.get)
        curves = {k: (xs[:-1], ys[:-1]) for k, (xs, ys) in curves.items()}
        title = t(TEXT, "payoff_title", ranks=n, gb_s=bw / 1e9, best=best,
                  speedup=at_bw["exact fp32"] / at_bw[best])
        show(cost_curves(curves, title, x_title=t(TEXT, "payoff_x"), y_title=t(TEXT, "step_time"),
                         vlines={t(TEXT, "chosen"): bw}))

    out = w.interactive_output(draw, {"n_params": params, "compute_s": compute, "n": ranks,
                                      "bw": bandwidth, "with_codec": codec})
    return w.VBox([w.HBox([params, compute]), w.HBox([ranks, bandwidth]), codec, out])
