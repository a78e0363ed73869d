"""Widgets of notebook 02 (tensor parallelism): thin shells over ``experiments`` and ``figures``.
Their labels are ``text.TEXT``'s ("w.*"), in the session's language when the widget is built
or its result drawn."""

from __future__ import annotations

import html

import ipywidgets as w

from lessons.common.viz.controls import LAYOUT, STYLE, choices
from lessons.common.i18n import t
from lessons.common.viz.style import WARNING_COLOR, fmt_bytes, fmt_seconds
from . import experiments
from .text import TEXT

# each result box keeps its numbers on one line: the two boxes sit side by side when
# the notebook is wide enough, one under the other when it is not
BOX = {"min_width": "380px", "flex": "1 1 380px", "margin": "0 12px 0 0"}


def _table(rows: list[tuple[str, str]]) -> str:
    """Label, value rows; a value never wraps (no "7041 ms /" above "81 ms")."""
    return ("<table>" + "".join(f"<tr><td style='padding-right:10px'>{html.escape(a)}</td>"
                                f"<td style='white-space:nowrap'><b>{html.escape(b)}</b></td></tr>"
                                for a, b in rows) + "</table>")


def _ops(d: dict) -> str:
    return " + ".join(f"{n} {op.replace('_', '-')}" for op, n in sorted(d.items())) or t(TEXT, "none")


def live_html(res: dict) -> str:
    """``experiments.live``'s result as a small table (or its error)."""
    if "error" in res:
        return f"<p style='color:{WARNING_COLOR}'>{html.escape(res['error'])}</p>"
    b, f = res["block"], res["formula"]
    acts = sorted(set(res["activations"]))
    return (f"<h4>{t(TEXT, 'w.measured')}</h4>"
            f"<p><i>{html.escape(res['load'])}</i></p>") + _table([
        (t(TEXT, "w.step_time"), f"{res['step_s'] * 1e3:.1f} ms"),
        (t(TEXT, "w.tokens_per_s"), f"{res['tokens_per_s']:,.0f}"),
        (t(TEXT, "w.block_forward"), _ops(b["forward"])),
        (t(TEXT, "w.block_backward"), _ops(b["backward"])),
        (t(TEXT, "w.bytes_sent"), t(TEXT, "w.formula", value=fmt_bytes(b["bytes"]), formula=fmt_bytes(f["bytes"]))),
        (t(TEXT, "w.activations"), t(TEXT, "w.formula", value=", ".join(fmt_bytes(a) for a in acts),
                                     formula=fmt_bytes(res["activation_formula"])))])


def gpu_html(row: dict, model: str, platform: str) -> str:
    """One ``experiments.gpu_scale`` row as a small table."""
    head = t(TEXT, "w.predicted", model=html.escape(model), platform=html.escape(platform))
    return f"<h4>{head}</h4>" + _table([
        (t(TEXT, "w.tp_over"), t(TEXT, "w.link", link=row["link_name"], gb=row["bandwidth"] / 1e9)),
        (t(TEXT, "w.compute"), fmt_seconds(row["compute_s"])),
        (t(TEXT, "w.comm"), fmt_seconds(row["comm_s"]) if row["comm_s"] else t(TEXT, "none")),
        (t(TEXT, "w.comm_share"), f"{row['comm_fraction']:.1%}"),
        (t(TEXT, "w.mfu"), f"{row['mfu']:.1%}"),
        (t(TEXT, "w.tokens_per_gpu"), f"{row['tokens_per_s_per_gpu']:,.0f}")])


# the explorer's choices (its controls' options)
TPS, SEQ_LENS, WIDTHS = [1, 2, 4], [16, 32, 64, 128], [32, 64, 128, 256]


def tp_explorer(tp: int = 2, sequence_parallel: bool = False, seq_len: int = 32,
                d_model: int = 64, model: str = "GPT-3 175B",
                platform: str = "A100 (NVLink3, IB-HDR)", run_now: bool = True):
    """Choose the TP degree, sequence parallelism, sequence length and width: the
    GPU-scale prediction (``experiments.gpu_scale``) updates at once; "run live" trains a
    2-block GPT on that many CPU ranks (``experiments.live``) and shows what it measured."""
    choices(tp=(tp, TPS), seq_len=(seq_len, SEQ_LENS), d_model=(d_model, WIDTHS),
            model=(model, experiments.GPU_MODELS), platform=(platform, experiments.PLATFORMS))
    tps = w.ToggleButtons(options=TPS, value=tp, description=t(TEXT, "w.tp"), style=STYLE)
    sp = w.Checkbox(value=sequence_parallel, description=t(TEXT, "w.sp"), indent=False)
    seq = w.Dropdown(options=SEQ_LENS, value=seq_len, description=t(TEXT, "w.seq_len"),
                     layout=LAYOUT, style=STYLE)
    width = w.Dropdown(options=WIDTHS, value=d_model, description=t(TEXT, "w.d_model"),
                       layout=LAYOUT, style=STYLE)
    models = w.Dropdown(options=list(experiments.GPU_MODELS), value=model,
                        description=t(TEXT, "w.model"), layout=LAYOUT, style=STYLE)
    platforms = w.Dropdown(options=list(experiments.PLATFORMS), value=platform,
                           description=t(TEXT, "w.platform"), layout=LAYOUT, style=STYLE)
    button = w.Button(description=t(TEXT, "w.run"), icon="play", layout={"width": "auto"})
    press_run = f"<p>{t(TEXT, 'w.press_run')}</p>"
    live_out, gpu_out = w.HTML(layout=BOX), w.HTML(layout=BOX)

    def predict(_=None):
        rows = experiments.gpu_scale(models.value, platforms.value, (tps.value,),
                                     sequence_parallel=sp.value and tps.value > 1)
        gpu_out.value = gpu_html(rows[0], models.value, platforms.value)

    def run_live(_=None):
        live_out.value = f"<p>{t(TEXT, 'w.running')}</p>"
        live_out.value = live_html(experiments.live(tps.value, sp.value, seq.value, width.value))

    for control in (tps, sp, models, platforms):
        control.observe(predict, names="value")
    for control in (tps, sp, seq, width):  # a stale measurement would mislead: clear it
        control.observe(lambda _: setattr(live_out, "value", press_run), names="value")
    button.on_click(run_live)
    predict()
    run_live() if run_now else setattr(live_out, "value", press_run)
    return w.VBox([tps, w.HBox([sp, button]), w.HBox([seq, width]), w.HBox([models, platforms]),
                   w.HBox([live_out, gpu_out], layout={"flex_flow": "row wrap"})])
