"""Widgets of notebook 00 (collectives): thin shells over ``experiments`` and ``figures``.
Their labels are ``text.TEXT``'s, in the session's language when a widget is built or drawn."""

from __future__ import annotations

import ipywidgets as w

from lessons.common.viz.charts import cost_curves
from lessons.common.i18n import t
from lessons.common.viz.controls import LAYOUT, STYLE, show
from . import experiments, explorer
from .text import TEXT
from .figures import collective_diagram, readable_time_axis, ring_animation


def collective_picker(n: int = 4):
    """Pick a collective and a number of ranks: its before/after picture."""
    op = w.Dropdown(options=["all_reduce", "all_gather", "reduce_scatter", "all_to_all",
                             "broadcast", "send_recv"], value="all_reduce",
                    description=t(TEXT, "w_collective"), layout=LAYOUT, style=STYLE)
    ranks = w.IntSlider(value=n, min=2, max=8, description=t(TEXT, "w_ranks"), layout=LAYOUT,
                        style=STYLE)
    out = w.interactive_output(lambda op, n: show(collective_diagram(op, n)),
                               {"op": op, "n": ranks})
    return w.VBox([w.HBox([op, ranks]), out])


def ring_runner(n: int = 4):
    """Run the hand-written ring all-reduce on N real ranks and animate what happened."""
    ranks = w.IntSlider(value=n, min=2, max=8, description=t(TEXT, "w_ranks"), layout=LAYOUT,
                        style=STYLE, continuous_update=False)
    out = w.interactive_output(
        lambda n: show(ring_animation(experiments.ring_frames(n),
                                      t(TEXT, "w_ring_title", n=n))),
        {"n": ranks})
    return w.VBox([ranks, out])


def allreduce_cost_explorer(measured_alpha: float | None = None,
                            measured_bandwidth: float | None = None):
    """Predicted all-reduce time vs size for ring, tree and naive, for a chosen link
    and number of ranks, with the ring/tree crossover marked. Only links that can join
    that many GPUs are offered (``explorer.link_choices``); a line under the controls
    names the others."""
    measured = ((measured_alpha, measured_bandwidth)
                if measured_alpha and measured_bandwidth else None)
    ranks = w.SelectionSlider(options=[2, 4, 8, 16, 32, 64, 128, 256, 512, 1024], value=8,
                              description=t(TEXT, "w_ranks"), layout=LAYOUT, style=STYLE)
    choices = explorer.link_choices(ranks.value, measured)
    link = w.Dropdown(options=list(choices["links"]), description=t(TEXT, "w_link"), layout=LAYOUT,
                      style=STYLE)
    left_out = w.HTML(choices["note"])

    def offer(change):  # the links this many ranks can use; keep the chosen one if it can
        new = explorer.link_choices(change["new"], measured)
        keep = link.value if link.value in new["links"] else None
        link.options = list(new["links"])
        link.value = keep or next(k for k in new["links"] if k.startswith("IB-HDR"))
        left_out.value = new["note"]

    ranks.observe(offer, names="value")

    def draw(link, n):
        links = explorer.link_choices(n, measured)["links"]
        if link not in links:  # the dropdown is being re-filled for a new rank count
            return
        alpha, bandwidth = links[link]
        pred = explorer.predicted_curves(n, alpha, bandwidth)
        sizes = pred["curves"]["ring"][0]
        s = pred["crossover"]
        inside = sizes[0] < s < sizes[-1]
        note = (t(TEXT, "w_same_steps") if s <= 0 else
                "" if inside else t(TEXT, "w_tree_below", gb=s / 1e9))
        fig = cost_curves(pred["curves"], t(TEXT, "w_explorer_title", n=n, link=link)
                          + (f"<br><sub>{note}</sub>" if note else ""),
                          vlines={t(TEXT, "w_crossover"): s} if inside else None)
        show(readable_time_axis(fig))  # µs/ms/s ticks, not "1ks"

    return w.VBox([w.HBox([link, ranks]), left_out,
                   w.interactive_output(draw, {"link": link, "n": ranks})])
