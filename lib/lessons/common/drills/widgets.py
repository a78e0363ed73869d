"""The drill widget: one interview question at a time, asked first; Check, Show answer,
Next question, and a running score. A thin shell over ``generate`` and
``session.Attempt`` / ``Tally``, the quiz's own rules for tries and the score (first
tries count); the tests call those and drive the widget through its buttons."""

from __future__ import annotations

import html

import ipywidgets as W

from ..viz.style import INK, VERDICT_COLORS
from .bank import _topics, generate
from .session import Attempt, Tally

__all__ = ["drill_widget"]

_ALL = "all of these"


def _para(text: str) -> str:
    return "<br>".join(html.escape(line) for line in text.splitlines())


def _feedback(attempt: Attempt, v: dict) -> tuple[str, str]:
    """The verdict colour ("right", "wrong") and sentence for an answer, as the quiz says
    it: right (and on which try), how far off, or why it was not counted as a try."""
    q = attempt.q
    if v["ok"]:
        again = f" on try {attempt.tries}" if attempt.tries > 1 else ""
        return "right", f"Right{again} ({q.tolerance_text})."
    detail = v["detail"].rstrip(".")
    if not v["counted"] and (v.get("unreadable") or v.get("did_you_mean")):
        return "wrong", f"{detail} (not counted as a try)."
    return "wrong", f"Not quite: {detail}. Try again, or Show answer."


def drill_widget(topic=None, seed: int = 0):
    """A quiz on ``topic``: None (every topic), a name, or a tuple of names (then a
    dropdown picks one of them or all). Questions follow ``generate(topic=..., seed=...)``
    from ``seed``; "Next question" moves to the next seed."""
    topics = _topics(topic)
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise ValueError(f"seed={seed!r} must be an integer")
    state = {"seed": seed, "attempt": None, "tally": Tally(), "last": None}

    pick = W.Dropdown(options=[_ALL] + list(topics), value=_ALL, description="topic",
                      layout=W.Layout(width="260px"))
    prompt = W.HTML()
    box = W.Text(placeholder="your answer", continuous_update=False,
                 layout=W.Layout(width="200px"))
    check = W.Button(description="Check", button_style="primary", layout=W.Layout(width="90px"))
    reveal = W.Button(description="Show answer", layout=W.Layout(width="120px"))
    nxt = W.Button(description="Next question", layout=W.Layout(width="130px"))
    feedback, answer, score = W.HTML(), W.HTML(), W.HTML()

    def chosen():
        return topics if pick.value == _ALL else pick.value

    def show_score():
        score.value = f"<small>score: {html.escape(state['tally'].text())}</small>"

    def ask(_=None):
        q = generate(topic=chosen(), seed=state["seed"])
        state.update(attempt=Attempt(q, state["tally"]), last=None)
        # the template's name and the seed are for developers (root.question()), not
        # for a learner: the prompt names only the topic
        prompt.value = (f"<b>Question</b> <small>[{html.escape(q.topic)}]</small><br>"
                        f"{_para(q.prompt)}")
        box.value = ""
        box.placeholder = f"your answer{' in ' + q.unit if q.unit else ''}"
        feedback.value, answer.value = "", ""
        show_score()

    def on_check(_=None):
        if not box.value.strip():
            feedback.value = "<i>type a number first</i>"
            return
        if box.value.strip() == state["last"]:  # Enter fired it, then Check: one try, not two
            return
        state["last"] = box.value.strip()
        v = state["attempt"].answer(box.value)
        colour, text = _feedback(state["attempt"], v)
        feedback.value = f"<span style='color:{VERDICT_COLORS[colour]}'>{html.escape(text)}</span>"
        show_score()

    def on_reveal(_=None):
        q = state["attempt"].q
        state["attempt"].reveal()
        answer.value = (f"<div style='border-left:3px solid {INK['light']};padding-left:8px'>"
                        f"<b>Answer: {html.escape(q.answer_text)}</b><br>"
                        f"{_para(q.explanation)}</div>")
        show_score()

    def on_next(_=None):
        state["seed"] += 1
        ask()

    check.on_click(on_check)
    reveal.on_click(on_reveal)
    nxt.on_click(on_next)
    box.observe(lambda ch: on_check() if ch["new"].strip() else None, names="value")  # Enter
    pick.observe(lambda ch: ask(), names="value")

    head = [W.HTML(f"<b>Interview drill</b> · {html.escape(', '.join(topics))}")]
    if len(topics) > 1:
        head.append(pick)
    root = W.VBox(head + [prompt, W.HBox([box, check, reveal, nxt]), feedback, answer, score])
    root.add_class("parlab-drill")
    root.question = lambda: state["attempt"].q  # the Question shown: its template and seed
    ask()
    return root
