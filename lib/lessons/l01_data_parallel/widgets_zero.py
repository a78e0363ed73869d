"""Widgets of notebook 01's ZeRO part: the memory calculator, a thin shell over ``cost.memory_plan``."""

from __future__ import annotations

import ipywidgets as w
from IPython.display import HTML, display

from parlab import cost, hardware
from lessons.common.viz.charts import memory_bars
from lessons.common.viz.controls import LAYOUT, STYLE, choices, nowrap_html, show


COUNTS = [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024]  # the GPU-count slider's stops


def memory_calculator(model: str = "7B", n_gpus: int = 4, gpu: str = "A100-SXM4-80GB"):
    """Does it fit? Per-GPU memory of data-parallel training for a preset model, with
    every ZeRO stage side by side (``cost.memory_plan``) against the chosen GPU's memory,
    and the verdict for the chosen stage in words."""
    gpus = {f"{name} ({spec.memory_gb:g} GB)": spec.memory_gb
            for name, spec in hardware.GPU_PRESETS.items()}
    choices(model=(model, cost.MODEL_PRESETS), n_gpus=(n_gpus, COUNTS),
            gpu=(gpu, hardware.GPU_PRESETS))
    models = w.Dropdown(options=list(cost.MODEL_PRESETS), value=model, description="model",
                        layout=LAYOUT, style=STYLE)
    count = w.SelectionSlider(options=COUNTS, value=n_gpus,
                              description="GPUs (dp)", layout=LAYOUT, style=STYLE)
    memory = w.Dropdown(options=list(gpus), value=next(k for k in gpus if k.startswith(gpu)),
                        description="GPU", layout=LAYOUT, style=STYLE)
    stage = w.Dropdown(options=[("plain DP (DDP)", 0), ("ZeRO-1", 1), ("ZeRO-2", 2), ("ZeRO-3", 3)],
                       value=3, description="ZeRO stage", layout=LAYOUT, style=STYLE)
    recompute = w.ToggleButtons(options=["none", "selective", "full"], value="none",
                                description="recomputation", style=STYLE)
    batch = w.IntSlider(value=1, min=1, max=32, description="micro-batch / GPU", layout=LAYOUT,
                        style=STYLE, continuous_update=False)

    def draw(model, n, gpu, stage, recompute, b):
        plans = [cost.memory_plan(model, n, gpus[gpu], s, recompute, b) for s in range(4)]
        for s, p in enumerate(plans):
            p["label"] = ("<b>%s</b>" if s == stage else "%s") % ["DDP", "ZeRO-1", "ZeRO-2", "ZeRO-3"][s]
        display(HTML(nowrap_html(plans[stage]["verdict"])))
        show(memory_bars(plans, f"{model} on {n} x {gpu}, micro-batch {b}, "
                              f"recompute={recompute}", limit=plans[0]["gpu"], unit="GB"))

    out = w.interactive_output(draw, {"model": models, "n": count, "gpu": memory, "stage": stage,
                                      "recompute": recompute, "b": batch})
    return w.VBox([w.HBox([models, count]), w.HBox([memory, stage]), w.HBox([recompute, batch]),
                   out])
