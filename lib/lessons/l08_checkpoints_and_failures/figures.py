"""Figures and tables of notebook 08 (checkpoints and failures): what a DCP checkpoint
holds, resharded resumes and planted restore mistakes, sync vs async saves, checkpoint
bytes at scale, goodput against the checkpoint interval, and stragglers. Plain data in
(from ``experiments``), a plotly ``Figure`` or an HTML table out."""

from __future__ import annotations

import math

import plotly.graph_objects as go

from lessons.common.viz.style import (INK, KIND_COLORS, WARNING_COLOR, base_layout, fmt_seconds,
                                      series_colors)
from lessons.common.viz.tables import table
from parlab.checkpoint import MANIFEST

__all__ = ["files_table", "resume_table", "mistakes_table", "stall_table", "scale_table",
           "goodput_figure", "straggler_table", "straggler_figure"]

MISTAKES = {"no_optimizer": "optimizer state not restored (fresh AdamW moments)",
            "data_off_by_one": "data position off by one (next step + 1)",
            "no_rng": "RNG state not restored (the new process's own)"}


def _mb(v: float) -> str:
    return f"{v / 1e6:,.2f}"


def _kb(v: float) -> str:
    return f"{v / 1e3:,.1f}"


# --- §1 DCP -----------------------------------------------------------------------------

def files_table(files: list[dict], saved_on: str = ""):
    """``experiments.written``: each file of one checkpoint directory, who wrote it, its size."""
    def what(f):
        if f["file"] == MANIFEST:
            return "ours, written last: every file's size and CRC-32, the run's config and layout (§3)"
        if f["rank"] is None:
            return "global metadata: every tensor's shape and where each saved box sits"
        return "this rank's boxes: weights, exp_avg, exp_avg_sq"
    rows = [dict(file=f["file"], writer="rank 0, for all" if f["rank"] is None else f"rank {f['rank']}",
                 what=what(f), bytes=f["bytes"]) for f in files]
    return table(rows, ["file", "writer", "what", "bytes"],
                 caption=f"one DCP checkpoint{' saved on ' + saved_on if saved_on else ''}",
                 headers=dict(bytes="kB"), formats=dict(bytes=_kb))


def resume_table(result: dict):
    """Resumes without a planted mistake (``experiments.resharded_resume``): each layout's
    largest loss and parameter difference from continuing on the saving layout."""
    rows = [dict(layout=r["layout"], start=r["start"], loss=r["loss_diff"], param=r["param_diff"],
                 equal="yes" if r["first_bad"] is None else f"no, from step {r['first_bad']}")
            for r in result["rows"] if r["planted"] is None]
    return table(rows, caption=f"saved on {result['saved_on']} before step {result['at']}, "
                               f"resumed on another layout",
                 headers=dict(layout="resumed on", start="first step run", loss="max |loss diff|",
                              param="max |param diff| at the end", equal="equal (1e-5)"),
                 formats=dict(loss=".1e", param=".1e"))


def mistakes_table(result: dict):
    """Resumes with a planted restore mistake: the first step whose loss differs from the
    uninterrupted run's, and by how much at most."""
    rows = []
    for r in result["rows"]:
        if r["planted"] is None:
            continue
        first = r["first_bad"]
        note = " (never run: resumed one step late)" if first is not None and first < r["start"] else ""
        rows.append(dict(mistake=MISTAKES.get(r["planted"], r["planted"]), layout=r["layout"],
                         start=r["start"], first=f"{first}{note}" if first is not None else "none",
                         loss=r["loss_diff"], param=r["param_diff"]))
    return table(rows, caption="planted restore mistakes, caught against the uninterrupted run",
                 headers=dict(mistake="restore mistake", layout="resumed on", start="first step run",
                              first="first step that differs", loss="max |loss diff|",
                              param="max |param diff| at the end"),
                 formats=dict(loss=".3f", param=".3f"))


# --- §2 saves ---------------------------------------------------------------------------

def _written_by(writes: list[dict]) -> str:
    """stall.py's record of each save: which thread wrote, and whether before save returned."""
    if all(w["on_training_thread"] and w["before_return"] for w in writes):
        return "the training thread, before save returned"
    if not any(w["on_training_thread"] for w in writes):
        return "a background thread, while training went on"
    return "both (varied between saves)"


def stall_table(r: dict):
    """``experiments.save_stall``: seconds a save blocks training, sync and async (medians),
    and bytes per rank beside ``cost.checkpoint_bytes``."""
    sync, asyn = r["files"]["sync"], r["files"]["async"]
    rows = [dict(mode="dcp.save (sync)", blocked=r["sync_s"], total=r["sync_s"],
                 by=_written_by(r["writes"]["sync"]), bytes=" · ".join(_mb(b) for b in sync.values())),
            dict(mode="dcp.async_save", blocked=r["async_s"], total=r["async_total_s"],
                 by=_written_by(r["writes"]["async"]), bytes=" · ".join(_mb(b) for b in asyn.values()))]
    return table(rows, caption=f"{r['params']:,} parameters on {r['ranks']} ranks, medians of "
                               f"{r['repeats']} (this machine); one training step alone: "
                               f"{fmt_seconds(r['step_s'])}; cost.checkpoint_bytes per rank "
                               f"({r['per_param']} B/param): {_mb(r['formula_per_rank'])} MB",
                 headers=dict(blocked="training blocked (s)", total="until written (s)",
                              by="rank 0's files written by", bytes="MB per rank (rank 0 · 1 · ...)"),
                 formats=dict(blocked=".2f", total=".2f"))


def scale_table(rows: list[dict]):
    """``experiments.scale_bytes``: checkpoint bytes of large models (``cost.checkpoint_bytes``)."""
    return table([dict(model=r["model"], params=r["params"] / 1e9, per_param=r["per_param"],
                       total=r["total"] / 1e12) for r in rows],
                 caption="one checkpoint: fp32 master weights, AdamW m and v"
                 + (", and the bf16 weights" if any(r["per_param"] > 12 for r in rows) else ""),
                 headers=dict(params="parameters (billions)", per_param="bytes per parameter",
                              total="checkpoint (TB)"), formats=dict(params=",.0f", total=".1f"))


# --- §4 goodput -------------------------------------------------------------------------

def goodput_figure(res: dict, title: str = "") -> go.Figure:
    """Goodput against the checkpoint interval tau (log axis), ``experiments.goodput_at_scale``,
    Young's tau* = sqrt(2CM) marked; the two losses on either side drawn in."""
    curve = res["curve"]
    taus = [p["tau"] for p in curve]
    colors = series_colors(["goodput", "checkpointing", "lost to failures"])
    fig = go.Figure()
    fig.add_trace(go.Scatter(x=taus, y=[p["goodput"] for p in curve], name="goodput",
                             line=dict(color=colors[0], width=3)))
    fig.add_trace(go.Scatter(x=taus, y=[p["checkpoint_share"] for p in curve], name="time saving (C per τ)",
                             line=dict(color=colors[1], dash="dash")))
    fig.add_trace(go.Scatter(x=taus, y=[min(1.0, p["lost_share"] + p["restart_share"]) for p in curve],
                             name="time lost to failures (τ/2 + C + R per failure)",
                             line=dict(color=colors[2], dash="dot")))
    tau = res["young_s"]
    fig.add_vline(x=tau, line=dict(color=INK["black"], dash="dash", width=1))
    fig.add_trace(go.Scatter(x=[tau], y=[res["goodput"]], mode="markers+text", name="Young's τ*",
                             marker=dict(color=INK["black"], size=10), textposition="top center",
                             text=[f"τ* = {fmt_seconds(tau)}: {res['goodput']:.1%}"]))
    fig.update_xaxes(type="log", title="checkpoint interval τ (seconds of training between saves)")
    fig.update_yaxes(title="share of wall time", range=[0, 1.05], tickformat=".0%")
    base_layout(fig, title or (f"goodput: {res['per_day']:.1f} interruptions/day, C = "
                               f"{fmt_seconds(res['checkpoint_s'])}, R = {fmt_seconds(res['restart_s'])}"),
                height=420, legend=dict(orientation="h", y=-0.25))
    return fig


# --- §5 stragglers ----------------------------------------------------------------------

KIND_NAMES = {"dp": "data parallel", "tp": "tensor parallel", "pp": "pipeline (1F1B)"}


def straggler_table(rows: list[dict]):
    """``experiments.stragglers``: median step with all ranks equal and with one slowed,
    beside the prediction (DP/TP: the slowest rank's compute sets the step; PP: the slow
    stage's busy time plus the fill and drain, an upper bound for 1F1B) and, for DP/TP, rank
    0's shortest own step against rank 1's compute, a bound no load on the machine breaks."""
    return table([dict(kind=KIND_NAMES.get(r["kind"], r["kind"]), normal=r["normal_s"] * 1e3,
                       slowed=r["slowed_s"] * 1e3, predicted=r["predicted_s"] * 1e3,
                       ratio=r["ratio"],
                       own=(f"{min(r['own_s']) * 1e3:.1f} ≥ {r['floor_s'] * 1e3:.0f}"
                            if r["kind"] != "pp" else "")) for r in rows],
                 caption=(f"{rows[0]['ranks']} ranks, rank 1 {rows[0]['slowdown']:.0%} slower "
                          f"(emulated compute; this machine, medians)") if rows else "",
                 headers=dict(kind="parallelism", normal="step, all equal (ms)",
                              slowed="step, rank 1 slow (ms)", predicted="predicted (ms)",
                              ratio="measured / predicted",
                              own="rank 0's shortest own step ≥ rank 1's compute (ms)"),
                 formats=dict(normal=".1f", slowed=".1f", predicted=".1f", ratio=".2f"))


def straggler_figure(rows: list[dict], title: str = "") -> go.Figure:
    """Bars per kind: step normal, with a straggler, and the prediction (ms)."""
    names = [KIND_NAMES.get(r["kind"], r["kind"]) for r in rows]
    fig = go.Figure()
    for key, label, color in (("normal_s", "all ranks equal", KIND_COLORS["compute"]),
                              ("slowed_s", "rank 1 slowed", WARNING_COLOR),
                              ("predicted_s", "predicted with the straggler", KIND_COLORS["wait"])):
        fig.add_trace(go.Bar(x=names, y=[r[key] * 1e3 for r in rows], name=label, marker_color=color,
                             text=[f"{r[key] * 1e3:.0f}" for r in rows], textposition="outside"))
    top = max(max(r["slowed_s"], r["predicted_s"]) for r in rows) * 1e3 if rows else 1
    fig.update_yaxes(title="step (ms)", range=[0, top * 1.2 if math.isfinite(top) else 1])
    base_layout(fig, title or "one slow rank sets the pace of a synchronous step", height=380,
                barmode="group")
    return fig
