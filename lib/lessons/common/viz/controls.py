"""Shared pieces of the lab's ipywidgets shells: control sizes, how a figure is shown,
text that wraps only between its items. Each strategy's ``widgets.py`` builds on them."""

from __future__ import annotations

import html
import re

from IPython.display import display

LAYOUT = {"width": "420px"}
STYLE = {"description_width": "140px"}


def choice(name: str, value, options):
    """``value`` if it is one of a widget's ``options`` (plain, or (label, value) pairs),
    else a ValueError naming the argument ``name`` and listing them. ipywidgets would raise
    a TraitError naming neither; a slider would clamp a value silently (``within``)."""
    allowed = [o[1] if isinstance(o, tuple) else o for o in options]
    if value not in allowed or isinstance(value, bool) != isinstance(allowed[0], bool):
        raise ValueError(f"{name}={value!r} must be one of {tuple(allowed)}")
    return value


def choices(**named) -> None:
    """``choice(name, value, options)`` for each ``name=(value, options)``: a widget's
    arguments checked before any control is made."""
    for name, (value, options) in named.items():
        choice(name, value, options)


def show(fig) -> None:
    display(fig)


def nowrap_html(text: str) -> str:
    """``text`` as HTML that wraps only between its items (split after ", " and ": ",
    before " + " and " = "), never inside one: "472.1 GB" stays on one line.
    (Printed text in a notebook output may break anywhere, even inside a number.)"""
    parts = re.split(r"(?<=[,:]) |(?= [+=] )", text)
    return ('<div style="line-height:1.5">' + " ".join(
        f'<span style="white-space:nowrap">{html.escape(p.strip())}</span>'
        for p in parts if p.strip()) + "</div>")


def bandwidth_label(bytes_per_s: float) -> str:
    """1e10 -> '10 GB/s', 2e8 -> '0.2 GB/s' (GB = 1e9 bytes, as links are sold)."""
    return f"{bytes_per_s / 1e9:g} GB/s"
