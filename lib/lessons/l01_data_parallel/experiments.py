"""The experiments of notebook 01 (data parallelism) and of bench/data_parallel.py: rank
workers and the pure functions that turn their results into tables and figures.

Workers (``*_worker``) run on every rank via ``parlab.launch``; the other functions run
in the notebook, call ``launch`` themselves where needed and return plain data that
``lessons.common.viz`` draws. Tests call them directly.
"""

from __future__ import annotations

import statistics
import time

import torch
import torch.distributed as dist

from parlab import comm, cost, trace
from parlab.data import local_batch
from parlab.launch import launch
from parlab.model import GPT, GPTConfig, max_differences, reference_optimizer
from parlab.trace import overlap_fraction
from parlab.data_parallel.compression import COMPRESSORS, payload_bytes
from parlab.data_parallel.ddp import assign_buckets
from parlab.data_parallel.runner import DPRun, make_dp, run
from lessons.common import record
from lessons.common.i18n import t
from .text import TEXT

TIMING_CONFIG = GPTConfig()  # vocab 64, seq 64, d 64, 4 heads, 4 layers: ~0.2 M parameters
COMPRESSION_CONFIG = GPTConfig(n_layers=2, d_model=32, n_heads=4, seq_len=32)  # ~31 k parameters


# --- 1. step times of several variants, interleaved A/B in one launch ---------------------

def _train_step(dp, opt, x, y) -> None:
    opt.zero_grad(set_to_none=True)
    with trace.span("forward"):
        loss = dp(x, y)[1]
    with trace.span("backward"):
        loss.backward()  # the part's gradient sync finishes inside it
    with trace.span("optimizer"):
        opt.step()


def ab_step_times_worker(specs: dict, config: GPTConfig, per_rank_batch: int, steps: int,
                         warmup: int = 3, record: bool = False, group=None,
                         cpu: bool = False) -> dict:
    """``specs``: {label: DPRun keyword arguments (variant, bucket_bytes, ...)}. Every label
    gets its own identical model copy on this rank, and ``trace.interleaved`` times one
    training step of each per round. Returns {"times": {label: [seconds per step]},
    "events": {label: [trace events]}} (warm-up left out; events only if ``record``).
    ``cpu``: time each step by the main thread's CPU time instead of the wall clock.
    Data parallel over ``group`` (default: the world)."""
    torch.set_num_threads(1)
    rank, world, device = dist.get_rank(group), dist.get_world_size(group), comm.device(group)
    x, y = local_batch(0, per_rank_batch * world, config.seq_len, config.vocab_size, rank, world)
    x, y = x.to(device), y.to(device)
    setups = {}
    for label, kw in specs.items():
        model = GPT(config, seed=0).to(device)
        setups[label] = (make_dp(model, DPRun(config, **kw), group),
                         reference_optimizer(model.parameters(), lr=1e-3))
    return trace.interleaved({v: (lambda k, s=s: _train_step(*s, x, y)) for v, s in setups.items()},
                             steps, warmup, record,
                             sync=torch.cuda.synchronize if device.type == "cuda" else None,
                             group=group, clock=time.thread_time if cpu else None)


def compare_step_times(world_size: int, specs: dict | None = None,
                       config: GPTConfig = TIMING_CONFIG, per_rank_batch: int = 8,
                       steps: int = 30, warmup: int = 3, record: bool = False,
                       timeout: float = 300.0, cpu: bool = False) -> dict:
    """Step time of each spec on ``world_size`` ranks, interleaved A/B (``cpu``: each rank's
    main-thread CPU time, not wall time). A step lasts as
    long as its slowest rank, so each step's time is the max over ranks; "median" is the
    median over steps. Returns {label: {"median", "steps", "tokens_per_s", "events",
    "overlap", "exposed"}}; the last three need ``record`` (see ``step_metrics``)."""
    specs = specs or {v: {"variant": v, "bucket_bytes": 64 << 10}
                      for v in ("bucketed", "ddp", "naive")}
    if per_rank_batch < 1 or steps < 1 or warmup < 0:
        raise ValueError(f"need per_rank_batch >= 1, steps >= 1 and warmup >= 0, got "
                         f"per_rank_batch={per_rank_batch}, steps={steps}, warmup={warmup}")
    for kw in specs.values():
        DPRun(config, **{"batch_size": per_rank_batch * world_size, **kw}).check(world_size)
    per_rank = launch(ab_step_times_worker, world_size, specs, config, per_rank_batch, steps,
                      warmup, record, cpu=cpu, timeout=timeout)
    out = {}
    for v in specs:
        slowest = [max(r["times"][v][s] for r in per_rank) for s in range(steps)]
        med = statistics.median(slowest)
        events = [e for r in per_rank for e in r["events"][v]]
        out[v] = {"median": med, "steps": slowest, "events": events,
                  "tokens_per_s": world_size * per_rank_batch * config.seq_len / med,
                  **(step_metrics(events) if record else {})}
    return out


def step_metrics(events: list[dict]) -> dict:
    """From traced steps: "overlap" (``data_parallel.overlap_fraction``; None without
    traced communication, e.g. DDP) and "exposed": the median over steps of the longest
    wait, over ranks, between the end of backward and the start of the optimizer step --
    the communication time that backward did not hide."""
    gaps = {}
    for r, s in {(e["rank"], e["meta"]["step"]) for e in events}:
        mine = {e["name"]: e for e in events if e["rank"] == r and e["meta"]["step"] == s}
        gap = mine["optimizer"]["start"] - mine["backward"]["end"]
        gaps[s] = max(gaps.get(s, 0.0), gap)
    has_comm = any(e["kind"] == "comm" for e in events)
    return {"overlap": overlap_fraction(events) if has_comm else None,
            "exposed": statistics.median(gaps.values()) if gaps else None}


def one_step(events: list[dict], step: int | None = None) -> list[dict]:
    """The events of one step (default: the step whose slowest rank took the median time)."""
    if step is None:
        ends = {}
        for e in events:
            s = e["meta"]["step"]
            lo, hi = ends.get(s, (e["start"], e["end"]))
            ends[s] = (min(lo, e["start"]), max(hi, e["end"]))
        ranked = sorted(ends, key=lambda s: ends[s][1] - ends[s][0])
        step = ranked[len(ranked) // 2]
    return [e for e in events if e["meta"]["step"] == step]


# --- 2. bucket size: timeline, step time, overlap ---------------------------------------

BUCKET_SIZES = (1 << 10, 4 << 10, 16 << 10, 64 << 10, 256 << 10, 1 << 20)


def bucket_sweep(world_size: int = 2, bucket_sizes=BUCKET_SIZES, steps: int = 8,
                 config: GPTConfig = TIMING_CONFIG, per_rank_batch: int = 8) -> dict:
    """Naive DP and bucketed DP with each bucket size, traced and interleaved in one launch.
    Returns {label: result of ``compare_step_times`` + "bucket_bytes", "buckets"}, labels
    "naive" and e.g. "bucketed 64 KiB"."""
    specs = {"naive": {"variant": "naive"}}
    specs.update({f"bucketed {_kib(b)}": {"variant": "bucketed", "bucket_bytes": b}
                  for b in bucket_sizes})
    out = compare_step_times(world_size, specs, config, per_rank_batch, steps, warmup=2,
                             record=True)
    sizes = [p.numel() * 4 for p in reversed(list(GPT(config).parameters()))]
    for label, kw in specs.items():
        b = kw.get("bucket_bytes")
        out[label]["bucket_bytes"] = b
        out[label]["buckets"] = len(assign_buckets(sizes, b)) if b else len(sizes)
    return out


def _kib(n: int) -> str:
    if n >= 1 << 20:
        return f"{n / 2 ** 20:g} MiB"
    return f"{n / 1024:g} KiB" if n >= 1024 else f"{n} B"


# --- 3. throughput at 1, 2, 4 ranks ---------------------------------------------------------

def throughput(world_sizes=(1, 2, 4), variants=("naive", "bucketed", "ddp"),
               bucket_bytes: int = 256 << 10, config: GPTConfig = TIMING_CONFIG,
               per_rank_batch: int = 8, steps: int = 12) -> list[dict]:
    """Tokens per second of each variant at each world size, with a fixed per-rank batch
    (weak scaling: W ranks train on W times the tokens per step). Variants interleaved
    A/B within each world size. Rows: world_size, variant, step_s (median), tokens_per_s,
    speedup (tokens/s over the same variant on 1 rank) and vs_ddp (step time / DDP's)."""
    rows = []
    for n in world_sizes:
        res = compare_step_times(n, {v: {"variant": v, "bucket_bytes": bucket_bytes}
                                     for v in variants}, config, per_rank_batch, steps)
        for v in variants:
            rows.append({"world_size": n, "variant": v, "step_s": res[v]["median"],
                         "tokens_per_s": res[v]["tokens_per_s"],
                         "vs_ddp": res[v]["median"] / res["ddp"]["median"]
                         if "ddp" in res else None})
    base = {r["variant"]: r["tokens_per_s"] for r in rows if r["world_size"] == min(world_sizes)}
    for r in rows:
        r["speedup"] = r["tokens_per_s"] / base[r["variant"]]
        record.measurement("l01_data_parallel", f"DP {r['variant']} on {r['world_size']} ranks",
                           r["tokens_per_s"], "tokens/s", f"数据并行 {r['variant']}，{r['world_size']} 个 rank")
    return rows


# --- 4. gradient accumulation = the big batch ----------------------------------------------

def accumulation_check(world_size: int = 2, micro_batches: int = 4, steps: int = 3,
                       config: GPTConfig | None = None, batch_size: int = 16) -> dict:
    """Train with ``micro_batches`` micro-batches per rank and the reference on the
    whole batch at once. Returns {1: ..., micro_batches: ...}, each with the
    ``max_differences``, the bytes rank 0 sent and its all-reduces, per optimizer step."""
    from parlab.model import reference_train
    config = config or COMPRESSION_CONFIG
    ref = reference_train(config, steps, batch_size)
    out = {}
    for a in (1, micro_batches):
        spec = DPRun(config, steps=steps, batch_size=batch_size, variant="bucketed",
                     bucket_bytes=16 << 10, micro_batches=a, trace=True)
        res = run(spec, world_size)
        events = [e for e in res.events if e["rank"] == 0]
        out[a] = {**max_differences(res, ref), "micro_batch": batch_size // world_size // a,
                  "bytes_per_step": res["ranks"][0]["bytes_sent"] / steps,
                  "all_reduces_per_step": sum(e["kind"] == "comm" for e in events) / steps}
    return out


def wire_bytes(world_sizes=(2, 4), settings: dict | None = None,
               config: GPTConfig = COMPRESSION_CONFIG) -> list[dict]:
    """Bytes rank 0 sends in one optimizer step, from the trace, for each setting
    ({label: DPRun fields}) and world size; with the formula of ``exchange_bytes``."""
    settings = settings or {
        "exact, torch all-reduce (ring bytes modelled)": {"variant": "naive"},
        "fp16, hand-written ring all-reduce (counted)": {"variant": "naive", "compression": "fp16"},
        "top-1%, hand-written ring all-gather (counted)": {"variant": "naive",
                                                           "compression": "topk"},
    }
    sizes = [p.numel() for p in GPT(config).parameters()]
    rows = []
    for label, kw in settings.items():
        for n in world_sizes:
            res = run(DPRun(config, steps=1, batch_size=4 * n, **kw), n)
            rows.append({"setting": label, "world_size": n,
                         "bytes": res["ranks"][0]["bytes_sent"],
                         "formula": exchange_bytes(sizes, n, kw.get("compression"),
                                                   kw.get("topk_ratio", 0.01)),
                         "gradient_bytes": 4 * sum(sizes)})
    return rows


# --- 5. compression: bytes, convergence, and when it pays off --------------------------------

COMPRESSION_SETTINGS = {  # label: (compression, topk_ratio, error_feedback)
    "exact (fp32 all-reduce)": (None, 0.01, True),
    "fp16 + EF": ("fp16", 0.01, True),
    "top-1% + EF": ("topk", 0.01, True),
    "top-1%, no EF": ("topk", 0.01, False),
    "sign + EF": ("sign", 0.01, True),
    "sign, no EF": ("sign", 0.01, False),
}


def compression_runs(world_size: int = 2, steps: int = 60, settings: dict | None = None,
                     config: GPTConfig = COMPRESSION_CONFIG, batch_size: int = 16,
                     lr: float = 3e-3) -> dict:
    """The same training run (same seeds, same batches) with each gradient exchange.
    Returns {label: {"losses", "bytes_per_step" (bytes rank 0 sent, from the trace),
    "bytes_counted" (False where the trace modelled them), "codec_s" (median seconds of
    compress + decompress per step on rank 0)}}."""
    out = {}
    for label, (kind, ratio, ef) in (settings or COMPRESSION_SETTINGS).items():
        spec = DPRun(config, steps=steps, batch_size=batch_size, lr=lr, variant="naive",
                     compression=kind, topk_ratio=ratio, error_feedback=ef, trace=True)
        res = run(spec, world_size)
        events = [e for e in res.events if e["rank"] == 0]
        codec = {}
        for e in events:
            if e["name"] in ("compress", "decompress"):
                s = sum(1 for f in events if f["name"] == "optimizer" and f["start"] < e["start"])
                codec[s] = codec.get(s, 0.0) + e["end"] - e["start"]
        out[label] = {"losses": res["losses"],
                      "bytes_per_step": res["ranks"][0]["bytes_sent"] / steps,
                      "bytes_counted": not any(e["bytes_modelled"] for e in events
                                               if e["kind"] == "comm"),
                      "codec_s": statistics.median(codec.values()) if codec else 0.0}
    return out


def _exchange(n_params_per_tensor: list[int], n: int, kind: str | None,
              topk_ratio: float) -> tuple[str, float]:
    """Our exchange of these tensors among ``n`` ranks, as (collective, buffer bytes):
    an all-reduce of the fp32 (or fp16) gradients, or an all-gather of the top-k / sign
    payloads -- whose output, n payloads, grows with n."""
    payload = sum(payload_bytes(k, kind, topk_ratio) for k in n_params_per_tensor)
    return ("all_reduce", payload) if kind in (None, "fp16") else ("all_gather", n * payload)


def exchange_bytes(n_params_per_tensor: list[int], n: int, kind: str | None,
                   topk_ratio: float = 0.01) -> float:
    """Bytes one rank sends per step in our exchange (ring algorithms)."""
    return cost.collective_bytes(*_exchange(n_params_per_tensor, n, kind, topk_ratio), n)


def compression_step_time(kind: str | None, n_params: int, n: int, alpha: float,
                          bandwidth: float, compute_s: float, topk_ratio: float = 0.01,
                          codec_s: float = 0.0, n_tensors: int = 1) -> float:
    """Predicted step time with compression, no overlap: compute + codec (seconds to
    compress and decompress, given) + exchange, the exchange from ``cost.collective_time``
    (alpha-beta, ring; Thakur et al. 2005) with the bytes of our payloads. ``n_tensors``
    equal tensors share the ``n_params`` (one message either way)."""
    op, nbytes = _exchange([n_params // n_tensors] * n_tensors, n, kind, topk_ratio)
    comm_s = cost.collective_time(op, nbytes, n, alpha, bandwidth)
    return compute_s + (0.0 if kind is None else codec_s) + comm_s


def compression_payoff(n_params: int, n: int, alpha: float, compute_s: float,
                       bandwidths: list[float], topk_ratio: float = 0.01,
                       codec_s_per_param: dict | None = None) -> dict:
    """{label: (bandwidths, predicted step times)} for exact, fp16, top-k and sign;
    ``codec_s_per_param``: {kind: seconds per parameter to compress + decompress}."""
    codec = codec_s_per_param or {}
    names = {None: "exact fp32", "fp16": "fp16", "topk": f"top-{topk_ratio:.0%}",
             "sign": "sign (1 bit)"}
    return {names[k]: (list(bandwidths),
                       [compression_step_time(k, n_params, n, alpha, b, compute_s, topk_ratio,
                                              codec.get(k, 0.0) * n_params) for b in bandwidths])
            for k in COMPRESSORS}


def sweep_caption(label: str, r: dict) -> str:
    """Title of one bucket-sweep entry's timeline: what was measured, in one line."""
    overlap = t(TEXT, "not_applicable") if r.get("overlap") is None else f"{r['overlap']:.0%}"
    n = r["buckets"]
    return t(TEXT, "sweep_caption_1" if n == 1 else "sweep_caption", label=label, buckets=n,
             step_ms=r["median"] * 1e3, exposed_ms=r["exposed"] * 1e3, overlap=overlap)


def compression_pays_below(kind: str, n_params: int, n: int, alpha: float, compute_s: float,
                           gain: float = 0.10, topk_ratio: float = 0.01,
                           codec_s: float = 0.0) -> float | None:
    """The link bandwidth (bytes/s) below which compressing with ``kind`` shortens the
    predicted step (``compression_step_time``) by at least ``gain`` of the exact step;
    None when it never does between 1 MB/s and 10 TB/s. The saving falls as the link gets
    faster, so a bisection on log(bandwidth) finds the one crossing. What sets it is the
    ratio of gradient bytes to compute (and n), not one bandwidth for every model."""
    def saved(bw):
        exact = compression_step_time(None, n_params, n, alpha, bw, compute_s)
        return 1 - compression_step_time(kind, n_params, n, alpha, bw, compute_s, topk_ratio,
                                         codec_s) / exact
    lo, hi = 1e6, 1e13
    if saved(lo) < gain:
        return None
    if saved(hi) >= gain:
        return hi
    for _ in range(60):
        mid = (lo * hi) ** 0.5
        lo, hi = (mid, hi) if saved(mid) >= gain else (lo, mid)
    return lo
