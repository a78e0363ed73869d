"""08's goodput explorer opens at the numbers its cell states: the checkpoint size, the
restart time and the goodput of §4's prose (``prose.py``), after the browser has snapped
each log slider to its grid (on the old grid it opened at 5.01 TB and R = 631 s)."""

from __future__ import annotations

import math

import pytest

from lessons.l08_checkpoints_and_failures import experiments as E, prose, widgets

GB = 1e9


def _sliders(root) -> dict:
    out, stack = {}, [root]
    while stack:
        x = stack.pop()
        if type(x).__name__ == "FloatLogSlider":
            out[x.description] = x
        stack.extend(getattr(x, "children", ()))
    return out


def _snapped(s) -> float:
    """What the browser shows and sends back: noUiSlider snaps to min + k * step."""
    k = round((math.log10(s.value) - s.min) / s.step)
    return s.base ** (s.min + k * s.step)


def _prose(near: str) -> set[str]:
    return {e.text() for e in prose.NUMBERS if e.kind == "computed" and e.near == near}


def test_the_explorer_opens_at_the_numbers_its_cell_states():
    # the notebook's own call (§4's last code cell)
    root = widgets.goodput_explorer(n_gpus=16384, bandwidth_gb_s=E.TECTONIC["sustained"] / GB,
                                    restart_s=E.RESTART_S)
    s = _sliders(root)
    shown = {name: _snapped(slider) for name, slider in s.items()}
    for name, slider in s.items():
        assert shown[name] == pytest.approx(slider.value, rel=1e-9), name
    assert f"{shown['checkpoint (TB)']:.2f} TB" in _prose("R = 600 s is our")  # 4.86 TB
    assert f"{shown['restart R (s)']:.0f} s" in _prose("R = 600 s is our")  # 600 s
    res = E.goodput_at_scale(16384, shown["GPU-years per interruption"] * 24 * 365,
                             shown["checkpoint (TB)"] * 1e12, shown["storage (GB/s)"] * GB,
                             shown["restart R (s)"])
    assert f"{res['goodput']:.1%}" in _prose("Llama 3's own storage rate")  # 92.6%


@pytest.mark.parametrize("name, value", [("checkpoint_tb", 4.86), ("restart_s", 600),
                                         ("mtbf_years", 0.317), ("bandwidth_gb_s", 99.9)])
def test_the_log_grid_holds_the_value_and_stays_in_range(name, value):
    g = widgets._log_grid(name, value)
    lo, hi = widgets.RANGES[name]
    k = round((math.log10(value) - g["min"]) / g["step"])
    assert 10 ** (g["min"] + k * g["step"]) == pytest.approx(value, rel=1e-9)
    assert lo <= g["min"] < lo + g["step"] and g["max"] == hi


def test_every_slider_label_has_room():
    """A label wider than its description_width is cut ("MTBF per GPU (yea…" once). At 13 px
    a character takes about 7 px; in Chromium no label of this widget is cut (scrollWidth
    within clientWidth for every label)."""
    root = widgets.goodput_explorer()
    stack, tight = [root], []
    while stack:
        x = stack.pop()
        stack.extend(getattr(x, "children", ()))
        if "Slider" in type(x).__name__:
            width = x.style.description_width
            if width != "initial" and 7 * len(x.description) > int(width.removesuffix("px")):
                tight.append((x.description, width))
    assert not tight
