"""07's loss curves can be told apart: the bf16 runs of §3 lie within a line's width of
each other, so each run has its own colour, dash and marker, one legend entry, and a
lower panel of its difference from the first run."""

from __future__ import annotations

import pytest

from lessons.l07_mixed_precision import figures

CURVES = {"fp32": [4.18, 3.74, 3.44, 3.16], "bf16": [4.18, 3.74, 3.45, 3.17],
          "master": [4.18, 3.74, 3.44, 3.16], "kahan": [4.18, 3.74, 3.44, 3.16],
          "stochastic": [4.18, 3.74, 3.44, 3.15]}


def test_each_run_has_its_own_colour_dash_and_marker():
    fig = figures.loss_figure(CURVES, "t")
    top = [t for t in fig.data if t.yaxis == "y"]
    assert [t.name for t in top] == list(CURVES)
    assert [t.name for t in fig.data if t.showlegend is not False] == list(CURVES)  # one entry each
    for key in (lambda t: t.line.color, lambda t: t.line.dash, lambda t: t.marker.symbol):
        assert len({key(t) for t in top}) == len(top)


def test_the_lower_panel_is_the_difference_from_the_first_run():
    fig = figures.loss_figure(CURVES, "t")
    low = {t.name: t for t in fig.data if t.yaxis == "y2"}
    assert list(low) == list(CURVES)
    for name, ys in CURVES.items():
        assert list(low[name].y) == pytest.approx([y - r for y, r in zip(ys, CURVES["fp32"])])
    assert "fp32" in fig.layout.yaxis2.title.text
