"""Widget of notebook 06 (3D parallelism): the planner explorer, a thin shell over
``experiments.plan_view`` and ``figures``."""

from __future__ import annotations

import html

import ipywidgets as w

from parlab.planner import MODELS
from lessons.common.i18n import t
from lessons.common.viz.controls import LAYOUT, STYLE, choices
from lessons.common.viz.style import WARNING_COLOR
from . import experiments, figures
from .text import TEXT


def ranked_html(view: dict) -> str:
    """The ranked configurations (and the infeasible ones, with why) as HTML tables."""
    if "error" in view:
        return f"<p style='color:{WARNING_COLOR}'>{html.escape(view['error'])}</p>"
    head = "<p>" + t(TEXT, "explorer.head", model=html.escape(view["model"]), n_gpus=view["n_gpus"],
                     gpu=view["gpu"], global_batch=view["global_batch"], seq_len=view["seq_len"],
                     n_ranked=view["n_ranked"]) + "</p>"
    ranked = view["ranked"]
    best = ranked[0]["step_s"] / ranked[0]["band"][1] if ranked else 1.0
    rows = "".join(
        f"<tr><td>{k + 1}</td><td>{html.escape(r['label'])}</td><td>{r['step_s']:.2f} s "
        f"({r['step_s'] / r['band'][1]:.2f}–{r['step_s'] / r['band'][0]:.2f})</td>"
        f"<td>{r['step_s'] / r['band'][1] / best - 1:+.1%}</td>"
        f"<td>{r['mfu']:.0%}</td><td>{html.escape('; '.join(r['reasons'][:3]))}</td></tr>"
        for k, r in enumerate(ranked))
    bad = "".join(f"<tr><td>{html.escape(i['label'])}</td><td>{html.escape(i['reasons'][0])}</td></tr>"
                  for i in view["infeasible"][:8])
    cols = ["#", t(TEXT, "explorer.col_config"), t(TEXT, "explorer.col_step"),
            t(TEXT, "explorer.col_vs"), "MFU", t(TEXT, "explorer.col_why")]
    return (head + "<table><tr>" + "".join(f"<th>{c}</th>" for c in cols) + f"</tr>{rows}</table>"
            + (f"<details><summary>{t(TEXT, 'explorer.infeasible', n=len(view['infeasible']))}"
               f"</summary><table>{bad}</table></details>" if bad else ""))


# the explorer's choices (its controls' options)
PER_NODE, NODES = [4, 8], [1, 2, 4, 8, 16, 32, 64, 128]
BATCHES, SEQ_LENS = [64, 128, 256, 512, 1024, 1536, 2048, 4096], [1024, 2048, 4096, 8192]


def planner_explorer(model: str = "13B", gpu: str = "A100-80GB", gpus_per_node: int = 8,
                     nodes: int = 2, interconnect: str = "IB-HDR", global_batch: int = 512,
                     seq_len: int = 2048):
    """Choose a model, a cluster (GPU, GPUs per node, nodes, interconnect), the global
    batch and sequence length: the planner's ranked layouts, the memory per GPU against
    the device line, the time breakdown and the best layout's mesh redraw at once."""
    choices(model=(model, MODELS), gpu=(gpu, experiments.CLUSTER_GPUS),
            gpus_per_node=(gpus_per_node, PER_NODE), nodes=(nodes, NODES),
            interconnect=(interconnect, experiments.INTERCONNECTS),
            global_batch=(global_batch, BATCHES), seq_len=(seq_len, SEQ_LENS))
    models = w.Dropdown(options=sorted(MODELS), value=model, description=t(TEXT, "explorer.model"),
                        layout=LAYOUT, style=STYLE)
    gpus = w.Dropdown(options=list(experiments.CLUSTER_GPUS), value=gpu, description=t(TEXT, "explorer.gpu"),
                      layout=LAYOUT, style=STYLE)
    per_node = w.Dropdown(options=PER_NODE, value=gpus_per_node, description=t(TEXT, "explorer.per_node"),
                          layout=LAYOUT, style=STYLE)
    n_nodes = w.Dropdown(options=NODES, value=nodes,
                         description=t(TEXT, "explorer.nodes"), layout=LAYOUT, style=STYLE)
    links = w.Dropdown(options=list(experiments.INTERCONNECTS), value=interconnect,
                       description=t(TEXT, "explorer.links"), layout=LAYOUT, style=STYLE)
    batch = w.Dropdown(options=BATCHES, value=global_batch,
                       description=t(TEXT, "explorer.batch"), layout=LAYOUT, style=STYLE)
    seq = w.Dropdown(options=SEQ_LENS, value=seq_len,
                     description=t(TEXT, "explorer.seq"), layout=LAYOUT, style=STYLE)
    table, figs = w.HTML(), w.Output()

    def update(_=None):
        view = experiments.plan_view(models.value, gpus.value, per_node.value, n_nodes.value,
                                     links.value, batch.value, seq.value)
        table.value = ranked_html(view)
        figs.clear_output(wait=True)
        if "error" in view or not view["ranked"]:
            return
        with figs:
            figures.memory_figure(view["ranked"]).show()
            figures.breakdown_figure(view["ranked"]).show()
            figures.mesh_figure(view["mesh"], gpus_per_node=per_node.value,
                                title=t(TEXT, "explorer.best", label=view["best"]["label"])).show()

    for c in (models, gpus, per_node, n_nodes, links, batch, seq):
        c.observe(update, names="value")
    update()
    return w.VBox([w.HBox([models, gpus]), w.HBox([per_node, n_nodes]), w.HBox([links, batch]),
                   seq, table, figs])
