"""Notebook 09's controls: the decision walk-through (model, GPUs, GPU type) and the timed
mixed drill (English / 中文). Thin shells: ``walkthrough.decide`` and ``drill.TimedDrill``
decide everything; these only draw."""

from __future__ import annotations

import html

import ipywidgets as W

from parlab import planner
from lessons.common.i18n import current_lang
from lessons.common.viz.controls import choices
from lessons.common.viz.style import VERDICT_COLORS
from .drill import TimedDrill
from .figures import walkthrough_html
from .walkthrough import decide

_GPUS = ("A100-80GB", "H100", "H200")
_COUNTS = (4, 8, 16, 64, 256, 1024, 4096, 16384)


def walkthrough_widget(model: str = "llama3-70B", n_gpus: int = 64, gpu: str = "H100"):
    """Pick a model, a GPU count and a GPU: the walk-through redraws."""
    choices(model=(model, planner.MODELS), n_gpus=(n_gpus, _COUNTS), gpu=(gpu, _GPUS))
    m = W.Dropdown(options=list(planner.MODELS), value=model, description="model")
    n = W.Dropdown(options=_COUNTS, value=n_gpus, description="GPUs")
    g = W.Dropdown(options=_GPUS, value=gpu, description="GPU")
    out = W.HTML()

    def draw(_=None):
        try:
            out.value = walkthrough_html(decide(m.value, n.value, g.value))
        except ValueError as e:  # e.g. a GPU count the model's heads cannot divide
            out.value = f"<i>{html.escape(str(e))}</i>"

    for c in (m, n, g):
        c.observe(draw, names="value")
    draw()
    return W.VBox([W.HBox([m, n, g]), out])


# Before Start: the questions stay hidden and the clock stopped (Run All builds the widget
# long before a learner who reads the sections above reaches it).
_READY = {"en": "Press <b>Start</b>: the first question appears and the clock starts.",
          "zh": "按 <b>Start</b>：第一题出现，同时开始计时。"}


def timed_drill_widget(seed: int = 0):
    """Ten questions, one per topic, against the clock; the prompt in English or 中文.
    The clock starts with the first question, on **Start** (``TimedDrill.start``)."""
    state = {"drill": TimedDrill(seed), "i": 0, "last": None}
    lang = W.ToggleButtons(options=[("English", "en"), ("中文", "zh")], value=current_lang())
    prompt, feedback, answer, score = W.HTML(), W.HTML(), W.HTML(), W.HTML()
    box = W.Text(placeholder="your answer", continuous_update=False, layout=W.Layout(width="200px"))
    check = W.Button(description="Check", button_style="primary", layout=W.Layout(width="90px"))
    reveal = W.Button(description="Show answer", layout=W.Layout(width="120px"))
    nxt = W.Button(description="Next", layout=W.Layout(width="90px"))
    start = W.Button(description="Start", button_style="success", layout=W.Layout(width="110px"))

    def show():
        d, i = state["drill"], state["i"]
        waiting = d.started is None
        for c in (box, check, reveal, nxt):
            c.disabled = waiting
        if waiting:
            prompt.value = _READY[lang.value]
            score.value = ""
            return
        q, zh = d.questions[i]
        text = q.prompt if lang.value == "en" else zh
        prompt.value = (f"<b>{i + 1} / {len(d.questions)}</b> <small>[{html.escape(q.topic)}]"
                        f"</small><br>{html.escape(text)}")
        box.placeholder = f"your answer{' in ' + q.unit if q.unit else ''}"
        score.value = f"<small>{html.escape(d.score()['text'])}</small>"

    def on_check(_=None):
        value = box.value.strip()
        if state["drill"].started is None or not value or value == state["last"]:
            return
        state["last"] = value
        v = state["drill"].answer(state["i"], value)
        colour = VERDICT_COLORS["right" if v["ok"] else "wrong"]
        feedback.value = f"<span style='color:{colour}'>{html.escape(v['message'])}</span>"
        show()

    def on_reveal(_=None):
        d, i = state["drill"], state["i"]
        d.reveal(i)
        q = d.questions[i][0]
        answer.value = f"<b>{html.escape(q.answer_text)}</b>: {html.escape(q.explanation)}"
        show()

    def on_next(_=None):
        state["i"] = (state["i"] + 1) % len(state["drill"].questions)
        state["last"], box.value, feedback.value, answer.value = None, "", "", ""
        show()

    def on_start(_=None):
        if state["drill"].started is not None:  # "Start again": ten new questions, a new clock
            state.update(drill=TimedDrill(state["drill"].questions[0][0].seed + 1), i=0, last=None)
            box.value, feedback.value, answer.value = "", "", ""
        state["drill"].start()
        start.description = "Start again"
        show()

    check.on_click(on_check)
    reveal.on_click(on_reveal)
    nxt.on_click(on_next)
    start.on_click(on_start)
    box.observe(lambda ch: on_check() if ch["new"].strip() else None, names="value")
    lang.observe(lambda ch: show(), names="value")
    show()
    root = W.VBox([W.HTML("<b>Timed drill</b> · one question from every topic"), lang, prompt,
                   W.HBox([start, box, check, reveal, nxt]), feedback, answer, score])
    root.drill = lambda: state["drill"]  # for tests and debugging: the TimedDrill behind it
    return root
