"""Widgets of notebook 08: the goodput explorer, a thin shell over
``experiments.goodput_at_scale`` and ``figures.goodput_figure``."""

from __future__ import annotations

import html
import math

import ipywidgets as w

from lessons.common.viz.controls import LAYOUT, STYLE, show
from parlab.validate import check_choice, check_float
from lessons.common.viz.style import WARNING_COLOR, fmt_seconds
from lessons.common.i18n import t
from . import experiments, figures
from .text import TEXT

GPUS = [1024, 2048, 4096, 8192, 16384, 32768, 65536, 131072]
# The log sliders' ranges, as powers of 10: a value outside one would be clamped to its end
# without a word, so goodput_explorer refuses it instead.
RANGES = {"mtbf_years": (-0.5, 2), "checkpoint_tb": (-1, 1.5), "bandwidth_gb_s": (0, 4),
          "restart_s": (0, 4)}


STEP = 0.05  # a log slider's step, in powers of 10


def _log_grid(name: str, value: float, step: float = STEP) -> dict:
    """min, max and step of ``name``'s log slider, its grid moved so that ``value`` lies
    on it. The browser snaps a slider to min + k * step (in powers of 10) and sends that
    back: on RANGES' own grid 4.86 TB opened as 10^0.70 = 5.01 TB and R = 600 s as 631 s,
    so the widget computed with numbers the cell above it does not state. (``value`` is
    checked against RANGES by goodput_explorer first.)"""
    lo, hi = RANGES[name]
    x = math.log10(value)
    return {"min": x - math.floor((x - lo) / step + 1e-9) * step, "max": hi, "step": step}


def explorer_html(res: dict) -> str:
    """``experiments.goodput_at_scale``'s numbers as a small table."""
    rows = [(t(TEXT, "row_per_day"), f"{res['per_day']:.1f}"),
            (t(TEXT, "row_mtbf"), fmt_seconds(res["job_mtbf_s"]) + f" ({res['job_mtbf_s'] / 3600:.2f} h)"),
            (t(TEXT, "row_stall"), fmt_seconds(res["checkpoint_s"])),
            (t(TEXT, "row_young"), fmt_seconds(res["young_s"])),
            (t(TEXT, "row_daly"), fmt_seconds(res["daly_s"])),
            (t(TEXT, "row_goodput"), f"{res['goodput']:.1%}")]
    return "<table>" + "".join(f"<tr><td>{html.escape(a)}</td><td><b>{html.escape(b)}</b></td></tr>"
                               for a, b in rows) + "</table>"


def goodput_explorer(n_gpus: int = 16384, mtbf_years: float | None = None,
                     checkpoint_tb: float | None = None, bandwidth_gb_s: float | None = None,
                     restart_s: float = experiments.RESTART_S):
    """Sliders for the GPUs, the GPU-years per interruption (each GPU's share of the job's
    interruptions, whatever their cause: Llama 3's 419 by default), the checkpoint size
    (TB; default 405B at 12 B/param), the storage bandwidth (GB/s, aggregate; default the
    rate at which that checkpoint stalls 60 s) and the restart time (s): interruptions per
    day, tau*, goodput and the goodput curve update at once. A value its slider cannot
    show is a ValueError naming it (a slider would clamp it silently)."""
    check_choice("n_gpus", n_gpus, GPUS)
    for name, value in (("mtbf_years", mtbf_years), ("checkpoint_tb", checkpoint_tb),
                        ("bandwidth_gb_s", bandwidth_gb_s), ("restart_s", restart_s)):
        if value is not None:
            lo, hi = (10 ** e for e in RANGES[name])
            check_float(name, value)
            if not lo <= value <= hi:
                raise ValueError(f"{name}={value} must be within [{lo:.3g}, {hi:.3g}], its "
                                 "slider's range")
    if mtbf_years is None:
        mtbf_years = experiments.LLAMA3_GPU_MTBF_H / (24 * 365)
    if checkpoint_tb is None:
        checkpoint_tb = experiments.checkpoint_size() / 1e12
    if bandwidth_gb_s is None:
        bandwidth_gb_s = experiments.bandwidth_for_stall() / 1e9
    # the longest label ("GPU-years per interruption") needs more room than STYLE's
    layout, style = {**LAYOUT, "width": "480px"}, {**STYLE, "description_width": "200px"}
    gpus = w.SelectionSlider(options=GPUS, value=n_gpus,
                             description=t(TEXT, "gpus"), layout=layout, style=style)
    mtbf = w.FloatLogSlider(value=mtbf_years, base=10, **_log_grid("mtbf_years", mtbf_years),
                            description=t(TEXT, "mtbf"), layout=layout, style=style)
    size = w.FloatLogSlider(value=checkpoint_tb, base=10, **_log_grid("checkpoint_tb", checkpoint_tb),
                            description=t(TEXT, "size"), layout=layout, style=style)
    bw = w.FloatLogSlider(value=bandwidth_gb_s, base=10, **_log_grid("bandwidth_gb_s", bandwidth_gb_s),
                          description=t(TEXT, "bandwidth"), layout=layout, style=style)
    restart = w.FloatLogSlider(value=restart_s, base=10, **_log_grid("restart_s", restart_s),
                               description=t(TEXT, "restart"), layout=layout, style=style)
    numbers, fig_out = w.HTML(), w.Output()

    def update(_=None):
        try:
            res = experiments.goodput_at_scale(gpus.value, mtbf.value * 24 * 365, size.value * 1e12,
                                               bw.value * 1e9, restart.value)
        except ValueError as e:
            numbers.value = f"<p style='color:{WARNING_COLOR}'>{html.escape(str(e))}</p>"
            return
        numbers.value = explorer_html(res)
        fig_out.clear_output(wait=True)
        with fig_out:
            show(figures.goodput_figure(res))

    for control in (gpus, mtbf, size, bw, restart):
        control.observe(update, names="value")
    update()
    return w.VBox([w.HBox([w.VBox([gpus, mtbf, size, bw, restart]), numbers]), fig_out])
