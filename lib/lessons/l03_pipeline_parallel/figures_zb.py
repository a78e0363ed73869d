"""Notebook 03's §7 tables (``viz.table`` underneath): ZB-H1 simulated and measured
beside 1F1B, the schedules past ZB-H1 (``experiments_zb.schedule_family``) beside their
papers, interleaving's memory (``experiments_zb.interleaved_memory``) and torch's own V
orders (``torch_orders.torch_v_rows``). The timeline
they sit beside is ``figures.pipeline_timeline``; every name here is importable from
``figures`` as well."""

from __future__ import annotations

from lessons.common.viz.tables import table

PCT = ".1%"  # a share, as the tables of figures.py show it


def zero_bubble_table(res: dict[str, dict], caption: str):
    """Per schedule (name -> ``experiments.measured_bubble``): the bubble simulated with
    messages free, simulated with the run's message costs, measured, and the
    micro-batches each rank held at its peak."""
    rows = [dict(schedule=name, sim=r["simulated"], sim_comm=r["simulated_comm"],
                 measured=r["measured"], held=str(r["stash_peak"])) for name, r in res.items()]
    return table(rows, caption=caption, formats=dict(sim=PCT, sim_comm=PCT, measured=PCT),
                 headers=dict(sim="simulated (messages free)", sim_comm="simulated with costs",
                              held="micro-batches held per rank"))


def schedule_family_table(rows: list[dict], p: int, m: int):
    """``experiments_zb.schedule_family``: idle per rank and peak activations, simulated
    beside each paper's, the whole step's idle share, and the messages of a step."""
    return table(rows, caption=f"P = {p}, M = {m}, T_F = T_B = T_W = 1 (1F1B: T_B + T_W = 2)",
                 formats=dict(idle=".3g", idle_paper=".3g", step=PCT, peak=".3g",
                              peak_paper=".3g"),
                 headers=dict(idle="idle per rank (simulated, most)", idle_paper="paper",
                              step="idle share of the step", peak="peak (micro-batches)",
                              peak_paper="paper", messages="messages / step"))


def interleaved_memory_table(rows: list[dict]):
    """``experiments_zb.interleaved_memory``: rank 0's activations over 1F1B's, from the
    schedule (and a real run where measured), beside 1 + (P - 1)/(P v)."""
    rows = [dict(r, measured="" if r["measured"] is None else f"{r['measured']:.4g}")
            for r in rows]
    return table(rows, caption="interleaved 1F1B, M = 2P: rank 0 over 1F1B's P micro-batches",
                 formats=dict(factor=".4g", formula=".4g"),
                 headers=dict(chunks="chunks held (rank 0)", factor="simulated / 1F1B",
                              measured="real run / 1F1B", formula="1 + (P-1)/(P v)"))


def torch_orders_table(rows: list[dict], p: int, m: int):
    """``torch_orders.torch_v_rows``: our ZB-V order and torch's two V orders, replayed
    alike (idle per rank, idle share of the step, peak in micro-batches' worth), and
    DualPipeV's idle beside the DualPipe README's row."""
    return table(rows, ["order", "idle", "readme", "step", "makespan", "peak"],
                 caption=f"on the V, P = {p}, M = {m}, T_F = T_B = T_W = 1, nothing overlapped",
                 formats=dict(idle=".3g", readme=".3g", step=PCT, makespan=".3g", peak=".3g"),
                 headers=dict(order="order", idle="idle per rank (most)",
                              readme="DualPipe README's row", step="idle share of the step",
                              makespan="step (slots)", peak="peak (micro-batches)"))
