"""Figures and tables of notebook 01 (data parallelism and ZeRO): a step's timeline with a
compute and a comm lane per rank, the bucket-size sweep, throughput, and one function per
table of the notebook."""

from __future__ import annotations

import plotly.graph_objects as go

from lessons.common.viz.charts import bars, timeline
from lessons.common.viz.tables import table
from lessons.common.viz.style import BYTES_AXIS, KIND_COLORS, VARIANT_COLORS, base_layout


def dp_timeline(events: list[dict], title: str = "", t0: float | None = None) -> go.Figure:
    """``timeline`` with two lanes per rank: its compute (forward, backward, optimizer) and
    its communication (all-reduce bars, and grey waits for them). The reader should see
    whether the orange bars run under the backward bar (overlap) or after it (exposed)."""
    lanes = [dict(e, rank=2 * int(e["rank"]) + (e["kind"] != "compute")) for e in events]
    fig = timeline(lanes, title, t0)
    if lanes:
        ys = sorted({e["rank"] for e in lanes})
        fig.update_yaxes(tickvals=ys, ticktext=[f"rank {y // 2} {'comm' if y % 2 else 'compute'}"
                                                for y in ys])
    return fig


def bucket_sweep_figure(rows: list[dict], title: str = "") -> go.Figure:
    """Step time (left axis) and overlap fraction (right axis) against the bucket size;
    the naive variant (no buckets) as a dashed level. ``rows``: dicts with
    ``bucket_bytes`` (None for naive), ``median`` (s) and ``overlap`` (0..1). The reader
    should see the trade-off: small buckets overlap more but pay one latency each."""
    bucketed = sorted((r for r in rows if r.get("bucket_bytes")), key=lambda r: r["bucket_bytes"])
    if not bucketed:
        raise ValueError("rows has no bucketed entry")
    xs = [r["bucket_bytes"] for r in bucketed]
    fig = go.Figure()
    fig.add_trace(go.Scatter(name="step time (median)", x=xs,
                             y=[round(r["median"] * 1e3, 3) for r in bucketed],
                             mode="lines+markers", line=dict(color=KIND_COLORS["compute"]),
                             hovertemplate="bucket %{x:.3s}B: %{y:.2f} ms<extra></extra>"))
    fig.add_trace(go.Scatter(name="overlap fraction", x=xs, yaxis="y2",
                             y=[round(100 * (r["overlap"] or 0.0), 1) for r in bucketed],
                             mode="lines+markers", line=dict(color=KIND_COLORS["comm"], dash="dot"),
                             hovertemplate="bucket %{x:.3s}B: %{y:.0f}% overlapped<extra></extra>"))
    for r in rows:
        if not r.get("bucket_bytes"):
            fig.add_trace(go.Scatter(name=f"{r.get('label', 'naive')} step time",
                                     x=[xs[0], xs[-1]], y=[round(r["median"] * 1e3, 3)] * 2,
                                     mode="lines", line=dict(color=VARIANT_COLORS["naive"], dash="dash"),
                                     hovertemplate="%{y:.2f} ms<extra>naive</extra>"))
    base_layout(fig, title, legend=dict(orientation="h", y=1.02, yanchor="bottom", x=0))
    fig.update_layout(margin=dict(t=90 if title else 50, r=60),
                      yaxis2=dict(title="overlap with backward (%)", overlaying="y",
                                  side="right", range=[0, 100], showgrid=False,
                                  tickmode="linear", tick0=0, dtick=20, zeroline=False))
    fig.update_xaxes(type="log", title_text="bucket size (bytes)", **BYTES_AXIS)
    fig.update_layout(yaxis=dict(title="step time (ms)", rangemode="tozero"))
    return fig


# --- tables: each builds one of notebook 01's tables from the data its cell computed ---------

_E = ".1e"
_DIFFS = {"loss": "max |Δ loss|", "grad": "max |Δ grad|", "param": "max |Δ param|"}


def equivalence_table(rows: list[dict], caption: str = ""):
    """Largest differences from one device (``model.max_differences``), one row per run:
    the first keys of a row name the run, then ``loss``, ``grad``, ``param``. Float
    rounding is ~1e-7; a bug shows as 1e-3 or more."""
    return table(rows, headers=_DIFFS, formats=dict.fromkeys(_DIFFS, _E), caption=caption)


def bucket_sweep_table(sweep: dict):
    """Naive vs bucketed DP (``experiments.bucket_sweep``): all-reduces per step, median
    step time, overlap with backward, and the communication backward did not hide."""
    return table([dict(variant=k, all_reduces=r["buckets"], step=r["median"] * 1e3,
                       overlap=r["overlap"], exposed=r["exposed"] * 1e3) for k, r in sweep.items()],
                 headers={"all_reduces": "all-reduces / step", "step": "step, median (ms)",
                          "overlap": "overlap with backward", "exposed": "exposed comm (ms)"},
                 formats={"step": ".1f", "overlap": ".0%", "exposed": ".1f"},
                 caption="naive vs bucketed DP, 2 ranks, interleaved in one launch")


def throughput_table(rows: list[dict]):
    """Tokens/s per variant and rank count (``experiments.throughput``), with the speedup
    over one rank and the step time over torch DDP's in the same launch."""
    return table(rows, ["world_size", "variant", "step_s", "tokens_per_s", "speedup", "vs_ddp"],
                 headers={"world_size": "ranks", "step_s": "step, median (ms)",
                          "tokens_per_s": "tokens/s", "speedup": "vs 1 rank", "vs_ddp": "step / DDP's"},
                 formats={"step_s": lambda s: f"{s * 1e3:.1f}", "tokens_per_s": ",.0f",
                          "speedup": ".2f", "vs_ddp": ".2f"},
                 caption="weak scaling: 8 x 64 tokens per rank per step, variants interleaved")


def throughput_figure(rows: list[dict], title: str = "") -> go.Figure:
    """Tokens/s as grouped bars, one group per rank count, one bar per variant
    (``experiments.throughput`` rows). The reader should compare the variants in a group."""
    variants = list(dict.fromkeys(r["variant"] for r in rows))
    sizes = sorted({r["world_size"] for r in rows})
    tps = {(r["variant"], r["world_size"]): r["tokens_per_s"] for r in rows}
    return bars([f"{n} rank{'s' if n > 1 else ''}" for n in sizes],
                {v: [tps[v, n] for n in sizes] for v in variants}, title, "tokens / s")


def wire_bytes_table(wire: list[dict]):
    """Bytes rank 0 sent per step with each exchange (``experiments.wire_bytes``), traced
    against the formula and as a share of the fp32 gradient."""
    return table([dict(r, ratio=r["bytes"] / r["gradient_bytes"]) for r in wire],
                 ["setting", "world_size", "bytes", "formula", "ratio"],
                 headers={"world_size": "ranks", "bytes": "bytes sent (traced)",
                          "ratio": "/ fp32 gradient"},
                 formats={"formula": ",.0f", "ratio": ".3f"}, caption="bytes rank 0 sends per step")


def compression_table(comp: dict, last: int = 5):
    """The compressed runs (``experiments.compression_runs``): loss over the last steps,
    its gap to the exact exchange, bytes per step, and codec time on this machine."""
    mean = lambda v: sum(v["losses"][-last:]) / last  # noqa: E731
    exact = mean(next(iter(comp.values())))
    return table([dict(exchange=k, last=mean(v), gap=mean(v) - exact, bytes=v["bytes_per_step"],
                       codec=v["codec_s"] * 1e3) for k, v in comp.items()],
                 headers={"last": f"loss, last {last} steps", "gap": "vs exact",
                          "bytes": "bytes / step", "codec": "codec ms / step"},
                 formats={"last": ".3f", "gap": "+.3f", "bytes": ",.0f", "codec": ".2f"},
                 caption=f"{len(next(iter(comp.values()))['losses'])} steps on 2 ranks; bytes rank 0 "
                         "sent; codec time measured on this CPU")


def compression_step_table(rows: list[dict], caption: str = ""):
    """Predicted step time per exchange (``experiments.compression_step_time``), one row per
    link bandwidth: ``{"bandwidth": label, exchange: seconds, ...}``."""
    return table(rows, formats={k: (lambda t: f"{t:.3f} s") for k in rows[0] if k != "bandwidth"},
                 caption=caption)


def parts_table(rows: list[dict]):
    """Each part on a model that is not the GPT (``byom.data_parallel_demo``): its largest
    difference from one device."""
    return table(rows, caption="the parts on TiedNet, 2 ranks, against one device",
                 formats={"max |diff|": _E})


def zero_memory_table(rows: list[dict], parts=("params", "grads", "optimizer", "total"),
                      caption: str = ""):
    """Bytes per rank at each ZeRO stage, measured against ``cost.zero_memory``: rows with
    ``stage``, ``<part> measured``, ``<part> formula`` and ``gathered peak``."""
    columns = ["stage"] + [f"{k} {w}" for k in parts for w in ("measured", "formula")]
    return table(rows, columns + ["gathered peak"], caption=caption,
                 formats={f"{k} formula": ",.0f" for k in parts})


def zero_speed_table(rows: list[dict]):
    """Step times of ours and torch's peers in the same ranks, and ours / theirs (median of
    the per-round ratios): milliseconds in the ``(ms)`` columns."""
    return table(rows, formats={k: ".1f" if k.endswith("(ms)") else ".2f" for k in rows[0]
                                if k != "ranks"},
                 caption="step time, median over rounds; ours / theirs, median of the per-round ratios")


def model_table(rows: list[dict], digits: dict, caption: str = ""):
    """A table of model (``parlab.cost``) numbers for the interview corner: ``digits``
    maps a column to its format (".2f")."""
    return table(rows, formats=digits, caption=caption)


def fsdp_modes_table(rows: list[dict], caption: str = ""):
    """ZeRO-3 / FSDP with and without resharding and prefetch (``zero.experiments.fsdp_modes``):
    the peak of gathered parameters and the bytes per rank of one step, measured against
    ``cost.fsdp_gathered_peak`` / ``cost.fsdp_comm_volume``, and the largest difference
    from one device. The reader should see memory and traffic trade places."""
    cols = ["mode", "peak measured", "peak formula", "all-gather measured", "all-gather formula",
            "reduce-scatter measured", "reduce-scatter formula", "max diff"]
    return table(rows, cols, caption=caption,
                 headers={"max diff": "max |Δ| vs one device"},
                 formats={**{c: ",.0f" for c in cols[1:-1]}, "max diff": _E})


def gather_issue_table(rows: list[dict], caption: str = ""):
    """When each block's all-gather started, relative to the compute of the unit before it
    (``zero.experiments.gather_issue`` rows with a ``mode``): lead > 0 ms means issued
    before that unit began computing (prefetched)."""
    return table([dict(r, lead=r["lead"] * 1e3, after=r["after"] * 1e3) for r in rows],
                 ["mode", "pass", "unit", "async", "lead", "after"], caption=caption,
                 headers={"lead": "issued before the previous unit's compute (ms)",
                          "after": "issued after it ended (ms)"},
                 formats={"lead": "+.2f", "after": "+.2f"})


def hsdp_table(rows: list[dict], caption: str = ""):
    """HSDP vs flat ZeRO-3 on 4 ranks (``zero.experiments.hsdp_traffic``): bytes per rank
    and step in the shard group and across replicas, measured vs ``cost.hsdp_comm_volume``,
    the parameter bytes a rank keeps, and the largest difference from one device."""
    cols = ["run", "shard group", "shard group spans nodes", "shard-group measured",
            "shard-group formula", "replicate measured", "replicate formula", "params per rank",
            "max diff"]
    return table(rows, cols, caption=caption, headers={"max diff": "max |Δ| vs one device"},
                 formats={"shard-group formula": ",.0f", "replicate formula": ",.0f",
                          "shard-group measured": ",", "replicate measured": ",",
                          "params per rank": ",", "max diff": _E})
