"""Widget of notebook 04 (expert parallelism): a thin shell over ``experiments.predict``
(instant routing of a batch, and a time model of one MoE layer) and ``experiments.live``
(a real run on CPU ranks)."""

from __future__ import annotations

import html

import ipywidgets as w

from lessons.common.viz.controls import LAYOUT, STYLE
from lessons.common.viz.style import WARNING_COLOR, fmt_bytes, rank_color
from . import experiments


def _table(rows: list[tuple[str, str]]) -> str:
    return ("<table>" + "".join(f"<tr><td>{html.escape(a)}</td><td><b>{html.escape(b)}</b></td></tr>"
                                for a, b in rows) + "</table>")


def expert_bars_html(counts: list[int], ep: int, capacity: int | None) -> str:
    """Tokens per expert as horizontal bars in the colour of the rank that holds it."""
    top, per = max(max(counts), capacity or 0, 1), len(counts) // ep
    out = []
    for e, n in enumerate(counts):
        over = "" if capacity is None or n <= capacity else f" ({n - capacity} over capacity)"
        out.append(f"<div style='white-space:nowrap'>expert {e} "
                   f"<span style='display:inline-block;height:10px;width:{int(200 * n / top)}px;"
                   f"background:{rank_color(e // per)}'></span> {n}{over}</div>")
    return "".join(out)


def predict_html(p: dict, ep: int) -> str:
    """One ``experiments.predict`` result as bars and a table."""
    return ("<h4>predicted: one routed batch, one MoE layer</h4>" +
            expert_bars_html(p["routed"], ep, p["capacity"]) + _table([
                ("capacity per expert", "no limit" if p["capacity"] is None else str(p["capacity"])),
                ("dropped assignments", f"{p['drop_rate']:.1%}"),
                ("busiest expert / mean", f"{p['max_over_mean']:.2f}"),
                ("busiest rank / mean", f"{p['busiest_over_mean']:.2f}"),
                ("dispatch bytes sent, per rank", ", ".join(fmt_bytes(b) for b in p["dispatch_sent"]) +
                 f" (balanced formula {fmt_bytes(p['dispatch_formula_balanced'])})"),
                ("layer forward: compute + all-to-all", f"{p['compute_s'] * 1e3:.2f} + "
                 f"{p['comm_s'] * 1e3:.2f} ms (balanced compute {p['balanced_compute_s'] * 1e3:.2f} ms)")]))


def live_html(res: dict) -> str:
    """``experiments.live``'s result as a small table (or its error)."""
    if "error" in res:
        return f"<p style='color:{WARNING_COLOR}'>{html.escape(res['error'])}</p>"
    b0 = [r for r in res["bytes"] if r["layer"] == "blocks.0.moe"]
    return ("<h4>measured here, on CPU ranks</h4>"
            f"<p><i>{html.escape(res['load'])}</i></p>") + _table([
        ("step time (median)", f"{res['step_s'] * 1e3:.1f} ms"),
        ("assignments per expert (block 0, step 0)", str(res["routed"])),
        ("busiest expert / mean", f"{res['max_over_mean']:.2f}"),
        ("dropped", f"{res['drop_rate']:.1%} (capacity rule on these counts: "
                    f"{res['drop_rule']:.1%})"),
        ("rows computed per rank", str(res["rows"])),
        ("a2a bytes per rank, block 0 (traced)", ", ".join(fmt_bytes(r["measured"]) for r in b0)),
        ("formula, balanced", fmt_bytes(b0[0]["balanced"]))])


# the capacity factor's choices as (label, value): "no limit" is a run without capacity
CAPACITY_CHOICES = [("no limit", None)] + [(str(f), f) for f in (1.0, 1.25, 1.5, 2.0)]
# why the two panels differ: their routers are not the same router
WHY_THEY_DIFFER = ("Left: a made-up router, expert e drawn with popularity ∝ (e+1)<sup>−skew</sup>, "
                   "so expert 0 is the hot one by construction. Right: the GPT's own router, whose hot "
                   "expert and skew come from its random initial weights (skew &gt; 0 only picks the "
                   "seed that starts skewed). Compare each side with its capacity rule, not the "
                   "sides' numbers with each other.")


def ep_explorer(n_experts: int = 4, top_k: int = 1, capacity_factor: float = 1.25,
                skew: float = 1.0, ep: int = 2, run_now: bool = True):
    """Experts, top-k, capacity factor, routing skew and EP degree: the prediction
    (``experiments.predict``) updates at once; "run live" trains the small MoE GPT on
    ``ep`` CPU ranks (skew > 0: the skewed seed, else the balanced one)."""
    experts = w.ToggleButtons(options=[2, 4, 8], value=n_experts, description="experts", style=STYLE)
    k = w.ToggleButtons(options=[1, 2], value=top_k, description="top-k", style=STYLE)
    cf = w.Dropdown(options=CAPACITY_CHOICES, value=capacity_factor,
                    description="capacity factor", layout=LAYOUT, style=STYLE)
    sk = w.FloatSlider(value=skew, min=0.0, max=3.0, step=0.25, description="routing skew",
                       layout=LAYOUT, style=STYLE)
    degree = w.ToggleButtons(options=[1, 2, 4], value=ep, description="EP degree", style=STYLE)
    button = w.Button(description="run live on CPU ranks", icon="play", layout={"width": "auto"})
    pred_out, live_out = w.HTML(), w.HTML()

    def predict(_=None):
        if experts.value % degree.value:
            pred_out.value = (f"<p style='color:{WARNING_COLOR}'>ep={degree.value} must divide "
                              f"n_experts={experts.value}</p>")
            return
        p = experiments.predict(256, experts.value, k.value, cf.value, sk.value, degree.value)
        pred_out.value = predict_html(p, degree.value)

    def run_live(_=None):
        live_out.value = "<p>running ...</p>"
        live_out.value = live_html(experiments.live(degree.value, experts.value, k.value,
                                                    cf.value, sk.value > 0))

    for control in (experts, k, cf, sk, degree):
        control.observe(predict, names="value")
        control.observe(lambda _: setattr(live_out, "value", "<p>press <i>run live</i></p>"),
                        names="value")
    button.on_click(run_live)
    predict()
    run_live() if run_now else setattr(live_out, "value", "<p>press <i>run live</i></p>")
    return w.VBox([experts, k, degree, w.HBox([cf, sk]), button,
                   w.HTML(f"<p style='font-size:12px;max-width:60em'>{WHY_THEY_DIFFER}</p>"),
                   w.HBox([pred_out, live_out], layout={"justify_content": "space-around"})])
