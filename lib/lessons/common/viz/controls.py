"""Shared pieces of the lab's ipywidgets shells: control sizes, how a figure is shown,
text that wraps only between its items. Each strategy's ``widgets.py`` builds on them."""

from __future__ import annotations

import html
import re

from IPython.display import display

LAYOUT = {"width": "420px"}
STYLE = {"description_width": "140px"}


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
