"""ipywidgets front-ends. Each is a thin shell: controls in, one pure function of
``parlab`` called with their values, one figure out. Tests call those functions
directly; the widgets only wire them up."""

from __future__ import annotations

import html
import re

import ipywidgets as w
from IPython.display import HTML, display

from . import collective_demos, hardware, viz

_LAYOUT = {"width": "420px"}
_STYLE = {"description_width": "140px"}


def _show(fig) -> None:
    display(fig)


def _nowrap_html(text: str) -> str:
    """``text`` as HTML that wraps only between its items (split after ", " and ": ",
    before " + " and " = "), never inside one: "472.1 GB" stays on one line.
    (Printed text in a notebook output may break anywhere, even inside a number.)"""
    parts = re.split(r"(?<=[,:]) |(?= [+=] )", text)
    return ('<div style="line-height:1.5">' + " ".join(
        f'<span style="white-space:nowrap">{html.escape(p.strip())}</span>'
        for p in parts if p.strip()) + "</div>")


def _bandwidth_label(bytes_per_s: float) -> str:
    """1e10 -> '10 GB/s', 2e8 -> '0.2 GB/s' (GB = 1e9 bytes, as links are sold)."""
    return f"{bytes_per_s / 1e9:g} GB/s"


def collective_picker(n: int = 4):
    """Pick a collective and a number of ranks: its before/after picture."""
    op = w.Dropdown(options=["all_reduce", "all_gather", "reduce_scatter", "all_to_all",
                             "broadcast", "send_recv"], value="all_reduce",
                    description="collective", layout=_LAYOUT, style=_STYLE)
    ranks = w.IntSlider(value=n, min=2, max=8, description="ranks", layout=_LAYOUT,
                        style=_STYLE)
    out = w.interactive_output(lambda op, n: _show(viz.collective_diagram(op, n)),
                               {"op": op, "n": ranks})
    return w.VBox([w.HBox([op, ranks]), out])


def ring_runner(n: int = 4):
    """Run the hand-written ring all-reduce on N real ranks and animate what happened."""
    ranks = w.IntSlider(value=n, min=2, max=8, description="ranks", layout=_LAYOUT,
                        style=_STYLE, continuous_update=False)
    out = w.interactive_output(
        lambda n: _show(viz.ring_animation(collective_demos.ring_frames(n),
                                           f"ring all-reduce on {n} ranks (measured)")),
        {"n": ranks})
    return w.VBox([ranks, out])


def allreduce_cost_explorer(measured_alpha: float | None = None,
                            measured_bandwidth: float | None = None):
    """Predicted all-reduce time vs size for ring, tree and naive, for a chosen link
    and number of ranks, with the ring/tree crossover marked."""
    links = {f"{name} ({spec.gb_per_s_per_direction:g} GB/s, ~{spec.latency_us:g} us)":
             (spec.latency_us * 1e-6, spec.gb_per_s_per_direction * 1e9)
             for name, spec in hardware.LINK_PRESETS.items()}
    if measured_alpha and measured_bandwidth:
        links = {"this machine, measured": (measured_alpha, measured_bandwidth), **links}
    link = w.Dropdown(options=list(links), description="link", layout=_LAYOUT, style=_STYLE)
    ranks = w.SelectionSlider(options=[2, 4, 8, 16, 32, 64, 128, 256, 512, 1024], value=8,
                              description="ranks", layout=_LAYOUT, style=_STYLE)

    def draw(link, n):
        alpha, bandwidth = links[link]
        pred = collective_demos.predicted_curves(n, alpha, bandwidth)
        sizes = pred["curves"]["ring"][0]
        s = pred["crossover"]
        inside = sizes[0] < s < sizes[-1]
        note = ("tree and ring take the same number of steps: the ring is never slower"
                if s <= 0 else "" if inside else f"tree faster below {s / 1e9:,.0f} GB")
        _show(viz.cost_curves(pred["curves"], f"all-reduce on {n} ranks over {link}"
                              + (f"<br><sub>{note}</sub>" if note else ""),
                              vlines={"ring = tree": s} if inside else None))

    return w.VBox([w.HBox([link, ranks]),
                   w.interactive_output(draw, {"link": link, "n": ranks})])


def memory_calculator(model: str = "7B", n_gpus: int = 4, gpu: str = "A100-SXM4-80GB"):
    """Does it fit? Per-GPU memory of data-parallel training for a preset model, with
    every ZeRO stage side by side (``cost.memory_plan``) against the chosen GPU's memory,
    and the verdict for the chosen stage in words."""
    from . import cost
    gpus = {f"{name} ({spec.memory_gb:g} GB)": spec.memory_gb
            for name, spec in hardware.GPU_PRESETS.items()}
    models = w.Dropdown(options=list(cost.MODEL_PRESETS), value=model, description="model",
                        layout=_LAYOUT, style=_STYLE)
    count = w.SelectionSlider(options=[1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024], value=n_gpus,
                              description="GPUs (dp)", layout=_LAYOUT, style=_STYLE)
    memory = w.Dropdown(options=list(gpus), value=next(k for k in gpus if k.startswith(gpu)),
                        description="GPU", layout=_LAYOUT, style=_STYLE)
    stage = w.Dropdown(options=[("plain DP (DDP)", 0), ("ZeRO-1", 1), ("ZeRO-2", 2), ("ZeRO-3", 3)],
                       value=3, description="ZeRO stage", layout=_LAYOUT, style=_STYLE)
    recompute = w.ToggleButtons(options=["none", "selective", "full"], value="none",
                                description="recomputation", style=_STYLE)
    batch = w.IntSlider(value=1, min=1, max=32, description="micro-batch / GPU", layout=_LAYOUT,
                        style=_STYLE, continuous_update=False)

    def draw(model, n, gpu, stage, recompute, b):
        plans = [cost.memory_plan(model, n, gpus[gpu], s, recompute, b) for s in range(4)]
        for s, p in enumerate(plans):
            p["label"] = ("<b>%s</b>" if s == stage else "%s") % ["DDP", "ZeRO-1", "ZeRO-2", "ZeRO-3"][s]
        display(HTML(_nowrap_html(plans[stage]["verdict"])))
        _show(viz.memory_bars(plans, f"{model} on {n} x {gpu}, micro-batch {b}, "
                              f"recompute={recompute}", limit=plans[0]["gpu"], unit="GB"))

    out = w.interactive_output(draw, {"model": models, "n": count, "gpu": memory, "stage": stage,
                                      "recompute": recompute, "b": batch})
    return w.VBox([w.HBox([models, count]), w.HBox([memory, stage]), w.HBox([recompute, batch]),
                   out])


# --- data parallelism (notebook 01) ------------------------------------------------------

def dp_bucket_explorer(sweep: dict):
    """Pick a bucket size from a measured ``dp_demos.bucket_sweep``: the timeline of one
    typical step, with its step time, overlap fraction and exposed communication."""
    from . import dp_demos
    labels = [k for k in sweep if sweep[k].get("bucket_bytes")]
    size = w.SelectionSlider(options=labels, value=labels[len(labels) // 2],
                             description="bucket size", layout=_LAYOUT, style=_STYLE)

    def draw(label):
        r = sweep[label]
        _show(viz.dp_timeline(dp_demos.one_step(r["events"]), dp_demos.sweep_caption(label, r)))

    return w.VBox([size, w.interactive_output(draw, {"label": size})])


def compression_payoff_explorer(codec_s_per_param: dict | None = None, alpha: float = 5e-6):
    """Predicted step time with and without gradient compression against link bandwidth
    (``dp_demos.compression_payoff``), for a chosen model size, compute time per step and
    number of ranks; the chosen bandwidth marked. ``codec_s_per_param``: measured
    compress + decompress cost per parameter, {kind: seconds}, included on request."""
    from . import dp_demos
    params = w.SelectionSlider(options=[("1M", 10 ** 6), ("10M", 10 ** 7), ("100M", 10 ** 8),
                                        ("1B", 10 ** 9), ("7B", 7 * 10 ** 9)], value=10 ** 8,
                               description="parameters", layout=_LAYOUT, style=_STYLE)
    compute = w.FloatLogSlider(value=0.1, base=10, min=-3, max=1, step=0.25,
                               description="compute / step (s)", layout=_LAYOUT, style=_STYLE)
    ranks = w.SelectionSlider(options=[2, 4, 8, 16, 64, 256], value=8, description="ranks",
                              layout=_LAYOUT, style=_STYLE)
    bandwidth = w.SelectionSlider(
        options=[(_bandwidth_label(g * 1e9), g * 1e9)
                 for g in (0.1, 0.2, 0.5, 1, 2, 5, 10, 25, 50, 100, 200, 300)],
        value=10e9, description="link bandwidth", layout=_LAYOUT, style=_STYLE,
        tooltip="per direction; GB = 1e9 bytes")
    codec = w.Checkbox(value=False, description="add the codec cost (measured on this CPU)",
                       disabled=not codec_s_per_param, indent=False,
                       layout={"width": "auto"}, style={"description_width": "initial"})
    grid = [10 ** (8 + 0.1 * i) for i in range(36)]

    def draw(n_params, compute_s, n, bw, with_codec):
        curves = dp_demos.compression_payoff(n_params, n, alpha, compute_s, grid + [bw],
                                             codec_s_per_param=codec_s_per_param if with_codec
                                             else None)
        at_bw = {k: ys[-1] for k, (_, ys) in curves.items()}
        best = min(at_bw, key=at_bw.get)
        curves = {k: (xs[:-1], ys[:-1]) for k, (xs, ys) in curves.items()}
        _show(viz.cost_curves(curves, f"predicted step time, {n} ranks<br><sub>at {bw / 1e9:.3g} GB/s"
                              f": fastest {best}, {at_bw['exact fp32'] / at_bw[best]:.2f}x exact"
                              "</sub>", x_title="link bandwidth per direction (bytes/s)",
                              y_title="step time (s)", vlines={"chosen": bw}))

    out = w.interactive_output(draw, {"n_params": params, "compute_s": compute, "n": ranks,
                                      "bw": bandwidth, "with_codec": codec})
    return w.VBox([w.HBox([params, compute]), w.HBox([ranks, bandwidth]), codec, out])


def pipeline_explorer(schedule: str = "1f1b", p: int = 4, m: int = 8, v: int = 2):
    """Choose a schedule, P, M (and v for interleaved): the simulated timeline redraws
    at once; "run live" runs the schedule on P real ranks (emulated compute) and
    overlays the measured timeline (``pipeline_demos.explore``)."""
    from . import pipeline_demos

    sched = w.Dropdown(options=["gpipe", "1f1b", "interleaved", "zb-h1"], value=schedule,
                       description="schedule", layout=_LAYOUT, style=_STYLE)
    ps = w.IntSlider(value=p, min=1, max=8, description="stages P", layout=_LAYOUT,
                     style=_STYLE, continuous_update=False)
    ms = w.IntSlider(value=m, min=1, max=16, description="micro-batches M", layout=_LAYOUT,
                     style=_STYLE, continuous_update=False)
    vs = w.IntSlider(value=v, min=2, max=4, description="chunks v", layout=_LAYOUT,
                     style=_STYLE, continuous_update=False,
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
        res = pipeline_demos.explore(sched.value, ps.value, ms.value, vs.value, live=live)
        out.clear_output(wait=True)
        with out:
            if "error" in res:
                print(res["error"])
                return
            print(res["text"])
            run = res["run"].events if res["run"] is not None else None
            _show(viz.pipeline_timeline(res["sim"].events, overlay=run, labels=(
                "simulated", "measured")))

    for control in (sched, ps, ms, vs):
        control.observe(lambda _: draw(), names="value")
    button.on_click(lambda _: draw(live=True))
    draw()
    return w.VBox([w.HBox([sched, ps]), w.HBox([ms, vs]), button, out])
