"""Widget of notebook 04 (expert parallelism): a thin shell over ``experiments.predict``
(instant routing of a batch, and a time model of one MoE layer) and ``experiments.live``
(a real run on CPU ranks)."""

from __future__ import annotations

import html

import ipywidgets as w

from lessons.common.i18n import t
from lessons.common.viz.controls import LAYOUT, STYLE
from lessons.common.viz.style import WARNING_COLOR, fmt_bytes, rank_color
from . import experiments
from .text import TEXT


def _table(rows: list[tuple[str, str]]) -> str:
    return ("<table>" + "".join(f"<tr><td>{html.escape(a)}</td><td><b>{html.escape(b)}</b></td></tr>"
                                for a, b in rows) + "</table>")


def expert_bars_html(counts: list[int], ep: int, capacity: int | None) -> str:
    """Tokens per expert as horizontal bars in the colour of the rank that holds it."""
    top, per = max(max(counts), capacity or 0, 1), len(counts) // ep
    out = []
    for e, n in enumerate(counts):
        over = "" if capacity is None or n <= capacity else t(TEXT, "w_over", n=n - capacity)
        out.append(f"<div style='white-space:nowrap'>{t(TEXT, 'w_expert', e=e)} "
                   f"<span style='display:inline-block;height:10px;width:{int(200 * n / top)}px;"
                   f"background:{rank_color(e // per)}'></span> {n}{over}</div>")
    return "".join(out)


def predict_html(p: dict, ep: int) -> str:
    """One ``experiments.predict`` result as bars and a table."""
    cap = t(TEXT, "w_no_limit") if p["capacity"] is None else str(p["capacity"])
    return (f"<h4>{t(TEXT, 'w_predicted')}</h4>" +
            expert_bars_html(p["routed"], ep, p["capacity"]) + _table([
                (t(TEXT, "w_capacity"), cap),
                (t(TEXT, "w_dropped_assignments"), f"{p['drop_rate']:.1%}"),
                (t(TEXT, "w_busiest_expert"), f"{p['max_over_mean']:.2f}"),
                (t(TEXT, "w_busiest_rank"), f"{p['busiest_over_mean']:.2f}"),
                (t(TEXT, "w_dispatch"), ", ".join(fmt_bytes(b) for b in p["dispatch_sent"]) +
                 t(TEXT, "w_balanced_formula", bytes=fmt_bytes(p["dispatch_formula_balanced"]))),
                (t(TEXT, "w_layer_time"), t(TEXT, "w_layer_ms", compute=p["compute_s"] * 1e3,
                                             comm=p["comm_s"] * 1e3,
                                             balanced=p["balanced_compute_s"] * 1e3))]))


def live_html(res: dict) -> str:
    """``experiments.live``'s result as a small table (or its error)."""
    if "error" in res:
        return f"<p style='color:{WARNING_COLOR}'>{html.escape(res['error'])}</p>"
    b0 = [r for r in res["bytes"] if r["layer"] == "blocks.0.moe"]
    return (f"<h4>{t(TEXT, 'w_measured')}</h4>"
            f"<p><i>{html.escape(res['load'])}</i></p>") + _table([
        (t(TEXT, "w_step"), t(TEXT, "w_step_ms", ms=res["step_s"] * 1e3)),
        (t(TEXT, "w_per_expert"), str(res["routed"])),
        (t(TEXT, "w_busiest_expert"), f"{res['max_over_mean']:.2f}"),
        (t(TEXT, "w_dropped"), t(TEXT, "w_dropped_rule", rate=res["drop_rate"], rule=res["drop_rule"])),
        (t(TEXT, "w_rows"), str(res["rows"])),
        (t(TEXT, "w_a2a"), ", ".join(fmt_bytes(r["measured"]) for r in b0)),
        (t(TEXT, "w_formula"), fmt_bytes(b0[0]["balanced"]))])


# the capacity factors offered besides "no limit" (a run without capacity)
CAPACITY_FACTORS = (1.0, 1.25, 1.5, 2.0)


def capacity_choices() -> list[tuple[str, float | None]]:
    """The capacity factor's choices as (label, value), "no limit" in the session's language."""
    return [(t(TEXT, "w_no_limit"), None)] + [(str(f), f) for f in CAPACITY_FACTORS]


def ep_explorer(n_experts: int = 4, top_k: int = 1, capacity_factor: float = 1.25,
                skew: float = 1.0, ep: int = 2, run_now: bool = True):
    """Experts, top-k, capacity factor, routing skew and EP degree: the prediction
    (``experiments.predict``) updates at once; "run live" trains the small MoE GPT on
    ``ep`` CPU ranks (skew > 0: the skewed seed, else the balanced one)."""
    experts = w.ToggleButtons(options=[2, 4, 8], value=n_experts, description=t(TEXT, "w_experts"),
                              style=STYLE)
    k = w.ToggleButtons(options=[1, 2], value=top_k, description=t(TEXT, "w_top_k"), style=STYLE)
    cf = w.Dropdown(options=capacity_choices(), value=capacity_factor,
                    description=t(TEXT, "w_capacity_factor"), layout=LAYOUT, style=STYLE)
    sk = w.FloatSlider(value=skew, min=0.0, max=3.0, step=0.25, description=t(TEXT, "w_skew"),
                       layout=LAYOUT, style=STYLE)
    degree = w.ToggleButtons(options=[1, 2, 4], value=ep, description=t(TEXT, "w_degree"), style=STYLE)
    button = w.Button(description=t(TEXT, "w_run"), icon="play", layout={"width": "auto"})
    pred_out, live_out = w.HTML(), w.HTML()

    def predict(_=None):
        if experts.value % degree.value:
            pred_out.value = (f"<p style='color:{WARNING_COLOR}'>"
                              f"{t(TEXT, 'w_ep_divides', ep=degree.value, experts=experts.value)}</p>")
            return
        p = experiments.predict(256, experts.value, k.value, cf.value, sk.value, degree.value)
        pred_out.value = predict_html(p, degree.value)

    def run_live(_=None):
        live_out.value = f"<p>{t(TEXT, 'w_running')}</p>"
        live_out.value = live_html(experiments.live(degree.value, experts.value, k.value,
                                                    cf.value, sk.value > 0))

    for control in (experts, k, cf, sk, degree):
        control.observe(predict, names="value")
        control.observe(lambda _: setattr(live_out, "value", f"<p>{t(TEXT, 'w_press')}</p>"),
                        names="value")
    button.on_click(run_live)
    predict()
    run_live() if run_now else setattr(live_out, "value", f"<p>{t(TEXT, 'w_press')}</p>")
    return w.VBox([experts, k, degree, w.HBox([cf, sk]), button,
                   w.HTML(f"<p style='font-size:12px;max-width:60em'>{t(TEXT, 'w_why')}</p>"),
                   w.HBox([pred_out, live_out], layout={"justify_content": "space-around"})])
