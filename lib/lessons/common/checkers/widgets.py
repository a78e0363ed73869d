"""The small widget that checks a numeric (or list) answer: one text box per field,
a Check button and the checker's message. A thin shell over a checker function
``check(*values) -> {"ok", "message"}``, which the tests call directly."""

from __future__ import annotations

import html

import ipywidgets as W

from ..i18n import t
from ..viz.style import VERDICT_COLORS
from .text import TEXT
from .answers import box_value, parse_value  # the checkers read typed text the same way

__all__ = ["answer_box", "parse_value"]


def answer_box(check, fields=("answer",), label: str = "", placeholder: str | None = None):
    """A row of text boxes (one per field of ``check``), a Check button and the verdict.
    Pressing Enter in a box checks too. A number goes to ``check`` as the text typed
    ("2^-14", "13.5 GB"), which the checker reads and says what it understood; a list or
    dict as its Python value (``answers.box_value``)."""
    placeholder = t(TEXT, "box_number") if placeholder is None else placeholder
    boxes = [W.Text(placeholder=placeholder, description=f, continuous_update=False,
                    layout=W.Layout(width="260px"), style={"description_width": "initial"})
             for f in fields]
    button = W.Button(description=t(TEXT, "box_check"), button_style="primary",
                      layout=W.Layout(width="90px"))
    out = W.HTML(value=f"<i>{t(TEXT, 'box_prompt')}</i>")

    def on_check(_=None):
        values = [box_value(b.value) for b in boxes]
        try:
            v = check(*values)
        except Exception as e:  # a checker bug must not look like a wrong answer
            out.value = (f"<span style='color:{VERDICT_COLORS['error']}'>"
                         f"{html.escape(t(TEXT, 'box_error', error=repr(e)))}</span>")
            return
        colour = VERDICT_COLORS["right" if v["ok"] else "wrong"]
        out.value = f"<span style='color:{colour}'>{html.escape(v['message'])}</span>"

    button.on_click(on_check)
    for b in boxes:
        b.observe(lambda ch: on_check() if ch["name"] == "value" else None, names="value")
    head = [W.HTML(f"<b>{html.escape(label)}</b>")] if label else []
    box = W.VBox(head + [W.HBox(boxes + [button]), out])
    box.add_class("parlab-answer")
    return box
