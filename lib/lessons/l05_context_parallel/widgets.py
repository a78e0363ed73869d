"""Widgets of notebook 05 (context parallelism): thin shells over ``experiments`` and ``figures``."""

from __future__ import annotations

import html

import ipywidgets as w

from lessons.common.i18n import t
from lessons.common.viz.controls import LAYOUT, STYLE, choices, show
from parlab.context_parallel.apply import ATTENTIONS
from parlab.context_parallel.layout import LAYOUTS
from lessons.common.viz.style import WARNING_COLOR, fmt_bytes
from . import experiments, figures
from .text import TEXT


def _table(rows: list[tuple[str, str]]) -> str:
    return ("<table>" + "".join(f"<tr><td>{html.escape(a)}</td><td><b>{html.escape(b)}</b></td></tr>"
                                for a, b in rows) + "</table>")


def _work(blocks) -> str:
    return ", ".join(f"{b:g}" for b in blocks)


def predict_html(res: dict) -> str:
    """``experiments.predict``'s result as a small table (or its error)."""
    if "error" in res:
        return f"<p style='color:{WARNING_COLOR}'>{html.escape(res['error'])}</p>"
    return f"<h4>{t(TEXT, 'w_predicted')}</h4>" + _table([
        (t(TEXT, "w_bytes"), t(TEXT, "w_bytes_sp", bytes=fmt_bytes(res["bytes"]), cp=res["cp"],
                                sp=fmt_bytes(res["megatron_bytes"]))),
        (t(TEXT, "w_memory"), fmt_bytes(res["memory"])),
        (t(TEXT, "w_work"), _work(res["work"])),
        (t(TEXT, "w_imbalance"), f"{res['imbalance']:.2f}")])


def live_html(res: dict) -> str:
    """``experiments.live``'s measurements as a small table (or its error)."""
    if "error" in res:
        return f"<p style='color:{WARNING_COLOR}'>{html.escape(res['error'])}</p>"
    work = res["counted_work"]
    return f"<h4>{t(TEXT, 'w_measured')}</h4>" + _table([
        (t(TEXT, "w_sent"), t(TEXT, "w_sent_formula", bytes=fmt_bytes(res["counted_bytes"]),
                               formula=fmt_bytes(res["bytes"]))),
        (t(TEXT, "w_peak"), t(TEXT, "w_peak_largest", peak=fmt_bytes(res["counted_memory"]),
                               largest=fmt_bytes(res["largest"]))),
        (t(TEXT, "w_work_counted"), _work(work)),
        (t(TEXT, "w_imbalance"), f"{max(work) / (sum(work) / len(work)):.2f}"),
        (t(TEXT, "w_step"), t(TEXT, "w_step_ms", ms=res["step_s"] * 1e3)),
        (t(TEXT, "w_machine"), res["load"])])


SEQ_LENS, CPS = [16, 32, 64, 128, 256], [1, 2, 4]  # the explorer's choices


def cp_explorer(seq_len: int = 32, cp: int = 2, layout: str = "zigzag", attention: str = "ring",
                run_now: bool = True):
    """Choose the sequence length, cp, the layout and ring vs Ulysses: the formulas update at
    once (``experiments.predict``); "run live" trains the 2-block GPT on cp CPU ranks and
    shows one attention call per rank on a timeline with what it counted and measured
    (``experiments.live``)."""
    choices(seq_len=(seq_len, SEQ_LENS), cp=(cp, CPS), layout=(layout, LAYOUTS),
            attention=(attention, ATTENTIONS))
    seq = w.Dropdown(options=SEQ_LENS, value=seq_len, description=t(TEXT, "w_seq"),
                     layout=LAYOUT, style=STYLE)
    cps = w.ToggleButtons(options=CPS, value=cp, description=t(TEXT, "w_cp"), style=STYLE)
    lay = w.ToggleButtons(options=list(LAYOUTS), value=layout, description=t(TEXT, "w_layout"),
                          style=STYLE)
    att = w.ToggleButtons(options=list(ATTENTIONS), value=attention,
                          description=t(TEXT, "w_attention"), style=STYLE)
    button = w.Button(description=t(TEXT, "w_run"), icon="play", layout={"width": "auto"})
    pred_out, live_out, fig_out = w.HTML(), w.HTML(), w.Output()

    def predict(_=None):
        pred_out.value = predict_html(experiments.predict(seq.value, cps.value, lay.value, att.value))

    def stale(_=None):  # a stale measurement would mislead: clear it
        live_out.value = f"<p>{t(TEXT, 'w_press')}</p>"
        fig_out.clear_output()

    def run_live(_=None):
        live_out.value = f"<p>{t(TEXT, 'w_running')}</p>"
        res = experiments.live(seq.value, cps.value, lay.value, att.value)
        live_out.value = live_html(res)
        fig_out.clear_output(wait=True)
        if "error" not in res:
            with fig_out:
                show(figures.ring_timeline(res["events"], t(TEXT, "w_timeline", attention=res["attention"],
                                                            cp=res["cp"], layout=res["layout"])))

    for control in (seq, cps, lay, att):
        control.observe(predict, names="value")
        control.observe(stale, names="value")
    button.on_click(run_live)
    predict()
    run_live() if run_now else stale()
    return w.VBox([w.HBox([seq, button]), cps, lay, att,
                   w.HBox([pred_out, live_out], layout={"justify_content": "space-around"}),
                   fig_out])
