"""The drill widget: one interview question at a time (stub; the real one follows)."""

from __future__ import annotations

import html

import ipywidgets as W

from . import TOPICS

__all__ = ["drill_widget"]


def drill_widget(topic=None, seed: int = 0):
    """A quiz on ``topic`` (None = all topics, a name, or a tuple of names)."""
    names = TOPICS if topic is None else ((topic,) if isinstance(topic, str) else tuple(topic))
    bad = [t for t in names if t not in TOPICS]
    if bad:
        raise ValueError(f"topic={bad[0]!r} is not one of {', '.join(TOPICS)}")
    box = W.VBox([W.HTML(f"<b>Interview drill</b> ({html.escape(', '.join(names))}): "
                         "questions coming soon.")])
    box.add_class("parlab-drill")
    return box
