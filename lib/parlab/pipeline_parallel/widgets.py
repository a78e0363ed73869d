"""Widgets of notebook 03 (pipeline parallelism): thin shells over ``experiments`` and ``figures``."""

from __future__ import annotations

import ipywidgets as w

from ..viz.controls import LAYOUT, STYLE, show
from . import experiments
from .figures import pipeline_timeline
from ..cost import PIPELINE_SCHEDULES


def pipeline_explorer(schedule: str = "1f1b", p: int = 4, m: int = 8, v: int = 2):
    """Choose a schedule, P, M (and v for interleaved): the simulated timeline redraws
    at once; "run live" runs the schedule on P real ranks (emulated compute) and
    overlays the measured timeline (``experiments.explore``)."""
    sched = w.Dropdown(options=list(PIPELINE_SCHEDULES), value=schedule,
                       description="schedule", layout=LAYOUT, style=STYLE)
    ps = w.IntSlider(value=p, min=1, max=8, description="stages P", layout=LAYOUT,
                     style=STYLE, continuous_update=False)
    ms = w.IntSlider(value=m, min=1, max=16, description="micro-batches M", layout=LAYOUT,
                     style=STYLE, continuous_update=False)
    vs = w.IntSlider(value=v, min=2, max=4, description="chunks v", layout=LAYOUT,
                     style=STYLE, continuous_update=False,
                     tooltip="model chunks per rank: interleaved schedule only")
    button = w.Button(description="run live (emulated compute)", icon="play",
                      layout={"width": "auto"},
                      tooltip="run the schedule on P real ranks and overlay the measured timeline")
    out = w.Output()

    def only_interleaved(_=None):  # v means something for the interleaved schedule only
        vs.disabled = sched.value != "interleaved"

    only_interleaved()
    sched.observe(only_interleaved, names="value")

    def draw(live=False):
        res = experiments.explore(sched.value, ps.value, ms.value, vs.value, live=live)
        out.clear_output(wait=True)
        with out:
            if "error" in res:
                print(res["error"])
                return
            print(res["text"])
            run = res["run"].events if res["run"] is not None else None
            show(pipeline_timeline(res["sim"].events, overlay=run, labels=(
                "simulated", "measured")))

    for control in (sched, ps, ms, vs):
        control.observe(lambda _: draw(), names="value")
    button.on_click(lambda _: draw(live=True))
    draw()
    return w.VBox([w.HBox([sched, ps]), w.HBox([ms, vs]), button, out])
