"""Notebook 09's controls: the decision walk-through (model, GPUs, GPU type) and the timed
mixed drill (English / 中文). Thin shells: ``walkthrough.decide`` and ``drill.TimedDrill``
decide everything; these only draw, in the session's language (``lessons.lang``); the
drill's own toggle switches its questions and labels."""

from __future__ import annotations

import html

import ipywidgets as W

from parlab import planner
from lessons.common.drills.bank import topic_name
from lessons.common.drills.text import TEXT as DRILL
from lessons.common.i18n import current_lang, pick, t
from lessons.common.viz.controls import choices
from lessons.common.viz.style import VERDICT_COLORS
from .drill import TimedDrill
from .figures import walkthrough_html
from .text import TEXT
from .walkthrough import decide

_GPUS = ("A100-80GB", "H100", "H200")
_COUNTS = (4, 8, 16, 64, 256, 1024, 4096, 16384)


def walkthrough_widget(model: str = "llama3-70B", n_gpus: int = 64, gpu: str = "H100",
                       lang: str | None = None):
    """Pick a model, a GPU count and a GPU: the walk-through redraws, in ``lang`` (default:
    the session's)."""
    lang = pick(lang)
    choices(model=(model, planner.MODELS), n_gpus=(n_gpus, _COUNTS), gpu=(gpu, _GPUS))
    m = W.Dropdown(options=list(planner.MODELS), value=model, description=t(TEXT, "w_model", lang))
    n = W.Dropdown(options=_COUNTS, value=n_gpus, description=t(TEXT, "w_gpus", lang))
    g = W.Dropdown(options=_GPUS, value=gpu, description=t(TEXT, "w_gpu", lang))
    out = W.HTML()

    def draw(_=None):
        try:
            out.value = walkthrough_html(decide(m.value, n.value, g.value, lang=lang), lang)
        except ValueError as e:  # e.g. a GPU count the model's heads cannot divide
            out.value = f"<i>{html.escape(t(TEXT, 'w_cannot', lang, why=str(e)))}</i>"

    for c in (m, n, g):
        c.observe(draw, names="value")
    draw()
    return W.VBox([W.HBox([m, n, g]), out])


def _verdict(d: TimedDrill, i: int, v: dict, lang: str) -> tuple[str, str]:
    """The verdict colour and sentence for an answer, in ``lang``, as the drills say it."""
    q = d.question(i, lang)
    if v["ok"]:
        tries = v.get("tries", 1)
        return "right", t(DRILL, "w_right_on" if tries > 1 else "w_right", lang, tries=tries,
                          tolerance=q.tolerance_text)
    detail = v.get("detail", v["message"]).rstrip(".")
    if not v.get("counted", True) and (v.get("unreadable") or v.get("did_you_mean")):
        return "wrong", t(DRILL, "not_counted", lang, detail=detail)
    return "wrong", t(DRILL, "w_not_quite", lang, detail=detail)


def timed_drill_widget(seed: int = 0):
    """Ten questions, one per topic, against the clock; asked in English or 中文 (the
    toggle, starting from the session's language). The clock starts with the first
    question, on **Start** (``TimedDrill.start``)."""
    state = {"drill": TimedDrill(seed), "i": 0, "last": None, "said": None}
    lang = W.ToggleButtons(options=[("English", "en"), ("中文", "zh")], value=current_lang())
    title, prompt, feedback, answer, score = W.HTML(), W.HTML(), W.HTML(), W.HTML(), W.HTML()
    box = W.Text(continuous_update=False, layout=W.Layout(width="200px"))
    check = W.Button(button_style="primary", layout=W.Layout(width="90px"))
    reveal = W.Button(layout=W.Layout(width="120px"))
    nxt = W.Button(layout=W.Layout(width="110px"))
    start = W.Button(button_style="success", layout=W.Layout(width="110px"))

    def show():
        d, i, g = state["drill"], state["i"], lang.value
        title.value = t(TEXT, "drill_title", g)
        check.description, reveal.description = t(DRILL, "w_check", g), t(DRILL, "w_show", g)
        nxt.description = t(DRILL, "w_next", g)
        start.description = t(TEXT, "drill_start" if d.started is None else "drill_again", g)
        waiting = d.started is None
        for c in (box, check, reveal, nxt):
            c.disabled = waiting
        if waiting:
            prompt.value = t(TEXT, "drill_ready", g)
            box.placeholder = t(DRILL, "w_placeholder", g)
            score.value = ""
            return
        q = d.question(i, g)
        prompt.value = (f"<b>{i + 1} / {len(d.questions)}</b> <small>[{html.escape(topic_name(q.topic, g))}]"
                        f"</small><br>{html.escape(q.prompt)}")
        box.placeholder = (t(DRILL, "w_placeholder_unit", g, unit=q.unit) if q.unit
                           else t(DRILL, "w_placeholder", g))
        score.value = f"<small>{html.escape(d.score(g)['text'])}</small>"
        if state["said"] is not None:
            colour, text = _verdict(d, i, state["said"], g)
            feedback.value = (f"<span style='color:{VERDICT_COLORS[colour]}'>"
                              f"{html.escape(text)}</span>")
        if answer.value:
            answer.value = _shown_answer(q, g)

    def _shown_answer(q, g):
        return (f"<b>{html.escape(t(DRILL, 'w_answer', g, answer=q.answer_text))}</b>: "
                f"{html.escape(q.explanation)}")

    def on_check(_=None):
        value = box.value.strip()
        if state["drill"].started is None or not value or value == state["last"]:
            return
        state["last"] = value
        state["said"] = state["drill"].answer(state["i"], value)
        show()

    def on_reveal(_=None):
        d, i = state["drill"], state["i"]
        d.reveal(i)
        answer.value = _shown_answer(d.question(i, lang.value), lang.value)
        show()

    def on_next(_=None):
        state["i"] = (state["i"] + 1) % len(state["drill"].questions)
        state["last"], state["said"], box.value, feedback.value, answer.value = None, None, "", "", ""
        show()

    def on_start(_=None):
        if state["drill"].started is not None:  # "Start again": ten new questions, a new clock
            state.update(drill=TimedDrill(state["drill"].questions[0][0].seed + 1), i=0,
                         last=None, said=None)
            box.value, feedback.value, answer.value = "", "", ""
        state["drill"].start()
        show()

    check.on_click(on_check)
    reveal.on_click(on_reveal)
    nxt.on_click(on_next)
    start.on_click(on_start)
    box.observe(lambda ch: on_check() if ch["new"].strip() else None, names="value")
    lang.observe(lambda ch: show(), names="value")
    show()
    root = W.VBox([title, lang, prompt, W.HBox([start, box, check, reveal, nxt]), feedback,
                   answer, score])
    root.drill = lambda: state["drill"]  # for tests and debugging: the TimedDrill behind it
    return root
