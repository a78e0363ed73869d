"""The drill widget: one interview question at a time, asked first; Check, Show answer,
Next question, and a running score. A thin shell over ``generate`` and
``session.Attempt`` / ``Tally``, the quiz's own rules for tries and the score (first
tries count); the tests call those and drive the widget through its buttons."""

from __future__ import annotations

import html

import ipywidgets as W

from ..i18n import pick, t
from ..viz.style import INK, VERDICT_COLORS
from .bank import _topics, next_question, topic_name
from .session import Attempt, Tally
from .text import TEXT

__all__ = ["drill_widget"]

_ALL = "all"  # the dropdown's value for every topic; its label is in the language


def _para(text: str) -> str:
    return "<br>".join(html.escape(line) for line in text.splitlines())


def _feedback(attempt: Attempt, v: dict) -> tuple[str, str]:
    """The verdict colour ("right", "wrong") and sentence for an answer, as the quiz says
    it: right (and on which try), how far off, or why it was not counted as a try."""
    q = attempt.q
    if v["ok"]:
        return "right", t(TEXT, "w_right_on" if attempt.tries > 1 else "w_right", q.lang,
                          tries=attempt.tries, tolerance=q.tolerance_text)
    detail = v["detail"].rstrip(".")
    if not v["counted"] and (v.get("unreadable") or v.get("did_you_mean")):
        return "wrong", t(TEXT, "not_counted", q.lang, detail=detail)
    return "wrong", t(TEXT, "w_not_quite", q.lang, detail=detail)


def drill_widget(topic=None, seed: int = 0, lang: str | None = None):
    """A quiz on ``topic``: None (every topic), a name, or a tuple of names (then a
    dropdown picks one of them or all). Questions follow ``generate(topic=..., seed=...)``
    from ``seed``, after the ones the learner's record says are due for review
    (``next_question``); "Next question" moves to the next seed. Asked in ``lang`` (default the
    session's, ``lessons.lang``)."""
    topics = _topics(topic)
    lang = pick(lang)
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise ValueError(f"seed={seed!r} must be an integer")
    state = {"seed": seed, "attempt": None, "tally": Tally(), "last": None, "asked": set()}

    choice = W.Dropdown(options=[(t(TEXT, "w_all", lang), _ALL)] + [(topic_name(n, lang), n) for n in topics],
                        value=_ALL,
                        description=t(TEXT, "w_topic", lang),
                      layout=W.Layout(width="260px"))
    prompt = W.HTML()
    box = W.Text(placeholder=t(TEXT, "w_placeholder", lang), continuous_update=False,
                 layout=W.Layout(width="200px"))
    check = W.Button(description=t(TEXT, "w_check", lang), button_style="primary",
                     layout=W.Layout(width="90px"))
    reveal = W.Button(description=t(TEXT, "w_show", lang), layout=W.Layout(width="120px"))
    nxt = W.Button(description=t(TEXT, "w_next", lang), layout=W.Layout(width="130px"))
    feedback, answer, score = W.HTML(), W.HTML(), W.HTML()

    def chosen():
        return topics if choice.value == _ALL else choice.value

    def show_score():
        score.value = f"<small>{html.escape(t(TEXT, 'w_score', lang, tally=state['tally'].text(lang)))}</small>"

    def ask(_=None):
        q, review = next_question(chosen(), state["seed"], lang, state["asked"])
        state["asked"].add(q.template)
        state.update(attempt=Attempt(q, state["tally"]), last=None)
        tag = topic_name(q.topic, lang) + (" · " + t(TEXT, "review", lang) if review else "")
        # the template's name and the seed are for developers (root.question()), not
        # for a learner: the prompt names only the topic
        prompt.value = (f"<b>{t(TEXT, 'w_question', lang)}</b> <small>[{html.escape(tag)}]</small><br>"
                        f"{_para(q.prompt)}")
        box.value = ""
        box.placeholder = t(TEXT, "w_placeholder_unit", lang, unit=q.unit) if q.unit else \
            t(TEXT, "w_placeholder", lang)
        feedback.value, answer.value = "", ""
        show_score()

    def on_check(_=None):
        if not box.value.strip():
            feedback.value = f"<i>{t(TEXT, 'w_type_first', lang)}</i>"
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
                        f"<b>{html.escape(t(TEXT, 'w_answer', lang, answer=q.answer_text))}</b><br>"
                        f"{_para(q.explanation)}</div>")
        show_score()

    def on_next(_=None):
        state["seed"] += 1
        ask()

    check.on_click(on_check)
    reveal.on_click(on_reveal)
    nxt.on_click(on_next)
    box.observe(lambda ch: on_check() if ch["new"].strip() else None, names="value")  # Enter
    choice.observe(lambda ch: ask(), names="value")

    head = [W.HTML(f"<b>{t(TEXT, 'w_title', lang)}</b> · "
                   f"{html.escape(t(TEXT, 'comma', lang).join(topic_name(n, lang) for n in topics))}")]
    if len(topics) > 1:
        head.append(choice)
    root = W.VBox(head + [prompt, W.HBox([box, check, reveal, nxt]), feedback, answer, score])
    root.add_class("parlab-drill")
    root.question = lambda: state["attempt"].q  # the Question shown: its template and seed
    ask()
    return root
