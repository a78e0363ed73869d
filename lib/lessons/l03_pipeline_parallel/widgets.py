"""Widgets of notebook 03 (pipeline parallelism): thin shells over ``experiments`` and ``figures``."""

from __future__ import annotations

import html

import ipywidgets as w

from lessons.common.i18n import t
from lessons.common.viz.controls import LAYOUT, STYLE, choices, nowrap_html, show
from lessons.common.viz.style import WARNING_COLOR
from . import experiments
from .figures import pipeline_timeline
from .text import TEXT
from parlab.cost import PIPELINE_SCHEDULES

M_MAX = 16  # the micro-batch slider's range: 1 .. M_MAX


def explorer_html(res: dict) -> str:
    """``experiments.explore``'s lines, each wrapping only between its items, under the
    note that says why M moved (if it did), or the error of a bad choice."""
    if "error" in res:
        return f"<p style='color:{WARNING_COLOR}'>{html.escape(res['error'])}</p>"
    note = (f"<p style='color:{WARNING_COLOR};margin:2px 0'>{html.escape(res['note'])}</p>"
            if res.get("note") else "")
    return note + "".join(nowrap_html(line) for line in res["lines"])


def pipeline_explorer(schedule: str = "1f1b", p: int = 4, m: int = 8, v: int = 2):
    """Choose a schedule, P, M (and v for interleaved): the simulated timeline redraws
    at once; "run live" runs the schedule on P real ranks (emulated compute) and
    overlays the measured timeline (``experiments.explore``). The M slider offers only
    the counts the schedule accepts (``experiments.micro_batch_choices``: multiples of P
    for interleaved); the v slider shows for interleaved only. An argument its control
    cannot show is a ValueError naming it (a slider would clamp it silently). Its labels
    and lines are in the session's language when it is built (``text.TEXT``)."""
    choices(schedule=(schedule, PIPELINE_SCHEDULES), p=(p, range(1, 9)), m=(m, range(1, M_MAX + 1)),
            v=(v, range(2, 5)))
    sched = w.Dropdown(options=list(PIPELINE_SCHEDULES), value=schedule,
                       description=t(TEXT, "widget.schedule"), layout=LAYOUT, style=STYLE)
    ps = w.IntSlider(value=p, min=1, max=8, description=t(TEXT, "widget.p"), layout=LAYOUT,
                     style=STYLE, continuous_update=False)
    ms = w.IntSlider(value=m, min=1, max=M_MAX, description=t(TEXT, "widget.m"),
                     layout=LAYOUT,
                     style=STYLE, continuous_update=False)
    vs = w.IntSlider(value=v, min=2, max=4, description=t(TEXT, "widget.v"), layout=dict(LAYOUT),
                     style=STYLE, continuous_update=False,
                     tooltip=t(TEXT, "widget.v_tip"))
    button = w.Button(description=t(TEXT, "widget.run"), icon="play", layout={"width": "auto"},
                      tooltip=t(TEXT, "widget.run_tip"))
    info, out = w.HTML(), w.Output()
    busy = []  # non-empty while the controls are being set from here: no redraw

    def fit_m():
        """Give the M slider the schedule's choices: (min, step, max) = (P, P, ...) for
        interleaved, so a value it cannot take is never offered."""
        choices = experiments.micro_batch_choices(sched.value, ps.value, vs.value, M_MAX)
        nearest = min(choices, key=lambda c: (abs(c - ms.value), c))
        step = choices[1] - choices[0] if len(choices) > 1 else 1
        busy.append(1)
        try:
            with ms.hold_trait_notifications():
                ms.min, ms.max, ms.step, ms.value = choices[0], choices[-1], step, nearest
        finally:
            busy.pop()

    def draw(live=False, m_wanted=None):
        res = experiments.explore(sched.value, ps.value, ms.value if m_wanted is None else m_wanted,
                                  vs.value, live=live, m_max=M_MAX)
        info.value = explorer_html(res)
        if "error" in res:  # keep the figure of the last valid setting
            return
        if res["m"] != ms.value:  # the slider shows the M that is drawn
            busy.append(1)
            try:
                ms.value = res["m"]
            finally:
                busy.pop()
        out.clear_output(wait=True)
        with out:
            run = res["run"].events if res["run"] is not None else None
            show(pipeline_timeline(res["sim"].events, overlay=run, labels=(
                t(TEXT, "widget.simulated"), t(TEXT, "widget.measured"))))

    def on_shape(_=None):  # schedule or P: v's visibility and M's choices follow
        interleaved = sched.value == "interleaved"
        vs.disabled = not interleaved
        vs.layout.visibility = "visible" if interleaved else "hidden"
        wanted = ms.value
        fit_m()
        draw(m_wanted=wanted)

    def on_value(_=None):
        if not busy:
            draw()

    sched.observe(on_shape, names="value")
    ps.observe(on_shape, names="value")
    ms.observe(on_value, names="value")
    vs.observe(on_value, names="value")
    button.on_click(lambda _: draw(live=True))
    on_shape()
    return w.VBox([w.HBox([sched, ps]), w.HBox([ms, vs]), button, info, out])
