"""Widgets of notebook 01's ZeRO part: the memory calculator, a thin shell over ``cost.memory_plan``;
its labels, title and verdict are ``text.TEXT``'s, in the session's language."""

from __future__ import annotations

import html
import re

import ipywidgets as w
from IPython.display import HTML, display

from parlab import cost, hardware
from lessons.common.viz.charts import memory_bars
from lessons.common.i18n import current_lang, t
from lessons.common.viz.controls import LAYOUT, STYLE, choices, nowrap_html, show
from .text import TEXT


COUNTS = [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024]  # the GPU-count slider's stops
RECOMPUTE = ("none", "selective", "full")


def verdict(plan: dict) -> str:
    """``cost.memory_plan``'s one-line verdict, in the session's language."""
    spare = (plan["gpu"] - plan["total"]) / 1e9
    margin = (t(TEXT, "plan_fits", gb=spare) if plan["fits"] else t(TEXT, "plan_short", gb=-spare))
    stage = t(TEXT, "stage_0") if plan["stage"] == 0 else f"ZeRO-{plan['stage']}"
    return t(TEXT, "plan_verdict", model=plan["model"], stage=stage, gpus=plan["n_gpus"],
             micro_batch=plan["micro_batch"], seq=plan["seq_len"],
             recompute=t(TEXT, f"recompute_{plan['recompute']}"),
             states=(plan["total"] - plan["activations"]) / 1e9, acts=plan["activations"] / 1e9,
             total=plan["total"] / 1e9, card=plan["gpu"] / 1e9, margin=margin)


def _status(text: str) -> str:
    """The verdict as HTML that wraps only between its items: ``nowrap_html`` for English;
    Chinese cut after its own commas and colons the same way."""
    if current_lang() == "en":
        return nowrap_html(text)
    parts = re.split(r"(?<=[，：])|(?= [+=] )", text)
    return ('<div style="line-height:1.5">' + " ".join(
        f'<span style="white-space:nowrap">{html.escape(p.strip())}</span>'
        for p in parts if p.strip()) + "</div>")


def memory_calculator(model: str = "7B", n_gpus: int = 4, gpu: str = "A100-SXM4-80GB"):
    """Does it fit? Per-GPU memory of data-parallel training for a preset model, with
    every ZeRO stage side by side (``cost.memory_plan``) against the chosen GPU's memory,
    and the verdict for the chosen stage in words."""
    gpus = {f"{name} ({spec.memory_gb:g} GB)": spec.memory_gb
            for name, spec in hardware.GPU_PRESETS.items()}
    choices(model=(model, cost.MODEL_PRESETS), n_gpus=(n_gpus, COUNTS),
            gpu=(gpu, hardware.GPU_PRESETS))
    models = w.Dropdown(options=list(cost.MODEL_PRESETS), value=model, description=t(TEXT, "model"),
                        layout=LAYOUT, style=STYLE)
    count = w.SelectionSlider(options=COUNTS, value=n_gpus,
                              description=t(TEXT, "gpus_dp"), layout=LAYOUT, style=STYLE)
    memory = w.Dropdown(options=list(gpus), value=next(k for k in gpus if k.startswith(gpu)),
                        description="GPU", layout=LAYOUT, style=STYLE)
    stage = w.Dropdown(options=[(t(TEXT, "plain_ddp"), 0), ("ZeRO-1", 1), ("ZeRO-2", 2), ("ZeRO-3", 3)],
                       value=3, description=t(TEXT, "zero_stage"), layout=LAYOUT, style=STYLE)
    recompute = w.ToggleButtons(options=[(t(TEXT, f"recompute_{r}"), r) for r in RECOMPUTE],
                                value="none", description=t(TEXT, "recomputation"), style=STYLE)
    batch = w.IntSlider(value=1, min=1, max=32, description=t(TEXT, "micro_batch_per_gpu"), layout=LAYOUT,
                        style=STYLE, continuous_update=False)

    def draw(model, n, gpu, stage, recompute, b):
        plans = [cost.memory_plan(model, n, gpus[gpu], s, recompute, b) for s in range(4)]
        for s, p in enumerate(plans):
            p["label"] = ("<b>%s</b>" if s == stage else "%s") % ["DDP", "ZeRO-1", "ZeRO-2", "ZeRO-3"][s]
        display(HTML(_status(verdict(plans[stage]))))
        show(memory_bars(plans, t(TEXT, "calculator_title", model=model, gpus=n, gpu=gpu, micro_batch=b,
                                  recompute=t(TEXT, f"recompute_{recompute}")),
                         limit=plans[0]["gpu"], unit="GB"))

    out = w.interactive_output(draw, {"model": models, "n": count, "gpu": memory, "stage": stage,
                                      "recompute": recompute, "b": batch})
    return w.VBox([w.HBox([models, count]), w.HBox([memory, stage]), w.HBox([recompute, batch]),
                   out])
