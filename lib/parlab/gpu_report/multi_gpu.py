"""Sections "nccl" and "strategies", for two or more GPUs (one per rank: ``parlab.launch``
then picks NCCL).

nccl: all-reduce, all-gather and reduce-scatter of S bytes timed the nccl-tests way
(``doc/PERFORMANCE.md``): warm-up, then the mean of back-to-back iterations, the slowest
rank's time; algbw = S / t and busbw = algbw x the ring factor (``cost.bus_bandwidth``),
compared with the preset link's bandwidth per direction (``hardware.LINK_PRESETS``).

strategies: each strategy's run on world_size = the GPU count, checked against
``reference_train`` (``model.max_differences``) and timed against PyTorch's peer on the
same configuration (tokens/s from the median step time, the first step left out)."""

from __future__ import annotations

import importlib
import statistics
import time

import torch
import torch.distributed as dist

from .. import comm, cost, hardware
from ..model import GPTConfig, max_differences, reference_train
from .common import ERROR, OK, ratio, short, synchronize

OPS = ("all_reduce", "all_gather", "reduce_scatter")
QUICK_SIZES = tuple(1 << k for k in (20, 24, 28))  # 1 MiB, 16 MiB, 256 MiB
FULL_SIZES = tuple(1 << k for k in range(20, 31, 2))  # 1 MiB ... 1 GiB, x4


def _op(name: str, nbytes: int, n: int, device):
    """A no-argument call of collective ``name`` on S ~ ``nbytes`` (fp32, a multiple of
    n elements: S is the full buffer, as in nccl-tests), and the exact S."""
    numel = max(n, nbytes // 4 // n * n)
    full = torch.ones(numel, device=device)
    part = torch.empty(numel // n, device=device)
    if name == "all_reduce":
        return (lambda: dist.all_reduce(full)), 4 * numel
    if name == "all_gather":
        return (lambda: dist.all_gather_into_tensor(full, part)), 4 * numel
    return (lambda: dist.reduce_scatter_tensor(part, full)), 4 * numel


def nccl_worker(sizes, ops=OPS, warmup: int = 5, iters: int = 20) -> list[dict]:
    """Rank side: seconds per collective for each op and size, the slowest rank's."""
    n = dist.get_world_size()
    device = comm.device()
    rows = []
    for name in ops:
        for nbytes in sizes:
            fn, S = _op(name, nbytes, n, device)
            for _ in range(warmup):
                fn()
            synchronize(device)
            dist.barrier()
            t0 = time.perf_counter()
            for _ in range(iters):
                fn()
            synchronize(device)
            t = torch.tensor([(time.perf_counter() - t0) / iters], device=device)
            dist.all_reduce(t, op=dist.ReduceOp.MAX)
            rows.append({"op": name, "bytes": S, "seconds": t.item()})
    return rows


def add_bandwidths(rows: list[dict], n: int, link_gb_s: float | None) -> list[dict]:
    """Each row (op, bytes, seconds) with algbw, busbw (GB/s) and busbw / the link's."""
    for r in rows:
        r["algbw_gb_s"] = r["bytes"] / r["seconds"] / 1e9
        r["busbw_gb_s"] = cost.bus_bandwidth(r["op"], r["bytes"], n, r["seconds"]) / 1e9
        r["fraction_of_link"] = ratio(r["busbw_gb_s"], link_gb_s)
    return rows


def nccl_section(quick: bool, n_gpus: int) -> dict:
    from ..launch import launch
    spec = hardware.match_gpu(torch.cuda.get_device_name(0))
    link = hardware.LINK_PRESETS[spec.link] if spec else None
    peak = link.gb_per_s_per_direction if link else None
    rows = launch(nccl_worker, n_gpus, QUICK_SIZES if quick else FULL_SIZES, timeout=600)[0]
    add_bandwidths(rows, n_gpus, peak)
    best = {op: max(r["busbw_gb_s"] for r in rows if r["op"] == op) for op in OPS}
    return {"world_size": n_gpus, "link": link.name if link else None,
            "link_gb_s_per_direction": peak, "rows": rows, "best_busbw_gb_s": best}


# --- strategies ----------------------------------------------------------------------

CONFIG = GPTConfig(vocab_size=128, seq_len=128, d_model=256, n_heads=8, n_layers=8)
STEPS = 6


def cases(n: int) -> list[dict]:
    """Per strategy: ours and the peer as (label, Run, "module:function"), for n ranks
    (the Run objects are built here; each is checked when it runs). A strategy this
    parlab does not have is a case with a "reason"."""
    common = dict(config=CONFIG, steps=STEPS, batch_size=8 * n)
    specs = [("data_parallel", "DPRun", ("bucketed DP", {"variant": "bucketed"}, "run"),
              ("DDP", {"variant": "ddp"}, "run")),
             ("zero", "ZeroRun", ("ZeRO-3", {"zero_stage": 3}, "run"),
              ("FSDP2", {"zero_stage": "fsdp2"}, "run")),
             ("pipeline_parallel", "PPRun", ("1F1B", {"schedule": "1f1b", "p": n, "micro_batches": 2 * n}, "run"),
              ("torch Schedule1F1B", {"schedule": "1f1b", "p": n, "micro_batches": 2 * n,
                                      "peer": "pipelining"}, "run")),
             ("tensor_parallel", "TPRun", ("Megatron TP", {}, "run"),
              ("torch DTensor TP", {"peer": "dtensor"}, "run"))]
    out = []
    for strategy, cls, (ours, kw, fn), (peer, peer_kw, peer_fn) in specs:
        case = {"strategy": strategy, "ours": ours, "peer": peer}
        try:
            Run = getattr(importlib.import_module(f"parlab.{strategy}"), cls)
        except (ImportError, AttributeError) as e:
            out.append({**case, "reason": f"parlab.{strategy} has no {cls} ({short(e)})"})
            continue
        out.append({**case, "run": Run(**common, **kw), "fn": fn,
                    "peer_run": Run(**common, **peer_kw), "peer_fn": peer_fn})
    return out


def _call(strategy: str, fn: str, run, n: int):
    module, _, name = fn.rpartition(":")
    mod = importlib.import_module(f"parlab.{strategy}" + (f".{module}" if module else ""))
    return getattr(mod, name)(run, n, timeout=600)


def tokens_per_s(result, tokens_per_step: int) -> float | None:
    times = list(result.step_times[1:] or result.step_times)  # the first step opens connections
    return tokens_per_step / statistics.median(times) if times else None


def strategies_section(n_gpus: int, tolerance: float = 1e-4) -> dict:
    batch = 8 * n_gpus
    ref = reference_train(CONFIG, STEPS, batch, device="cuda" if torch.cuda.is_available() else "cpu")
    tokens = batch * CONFIG.seq_len
    rows = []
    for case in cases(n_gpus):
        row = {k: case[k] for k in ("strategy", "ours", "peer")}
        if "reason" in case:
            rows.append({**row, "status": "skipped", "reason": case["reason"]})
            continue
        try:
            case["run"].check(n_gpus)
        except ValueError as e:  # the strategy's own check: this world size does not fit
            rows.append({**row, "status": "skipped", "reason": short(e)})
            continue
        try:
            res = _call(case["strategy"], case["fn"], case["run"], n_gpus)
            diff = max_differences(res, ref)
            row.update(status=OK, max_differences=diff, equal=max(diff.values()) < tolerance,
                       tokens_per_s=tokens_per_s(res, tokens))
        except Exception as e:  # noqa: BLE001
            rows.append({**row, "status": ERROR, "reason": short(e)})
            continue
        try:
            peer = _call(case["strategy"], case["peer_fn"], case["peer_run"], n_gpus)
            row["peer_tokens_per_s"] = tokens_per_s(peer, tokens)
            row["ratio_vs_peer"] = ratio(row["tokens_per_s"], row["peer_tokens_per_s"])
        except Exception as e:  # noqa: BLE001
            row["peer_error"] = short(e)
        rows.append(row)
    return {"world_size": n_gpus, "backend": hardware.default_backend(n_gpus),
            "config": vars(CONFIG).copy(), "steps": STEPS, "batch_size": batch,
            "tolerance": tolerance, "rows": rows,
            "note": "pipeline_parallel.run and its peer run on gloo (CPU ranks) whatever the GPUs"}


def nccl_lines(rec: dict) -> list[str]:
    link = f"{rec['link']} {rec['link_gb_s_per_direction']:g} GB/s per direction" if rec["link"] else "no link preset"
    out = [f"  {rec['world_size']} GPUs; bus bandwidth vs {link}"]
    for r in rec["rows"]:
        frac = f" ({r['fraction_of_link']:.0%})" if r["fraction_of_link"] is not None else ""
        out.append(f"  {r['op']:<15} {r['bytes'] / 2**20:8.0f} MiB  {r['seconds'] * 1e6:9.0f} us  "
                   f"algbw {r['algbw_gb_s']:7.1f}  busbw {r['busbw_gb_s']:7.1f} GB/s{frac}")
    return out


def strategies_lines(rec: dict) -> list[str]:
    out = [f"  {rec['world_size']} ranks on {rec['backend']}; {rec['steps']} steps, batch {rec['batch_size']}"]
    for r in rec["rows"]:
        if r["status"] != OK:
            out.append(f"  {r['strategy']:<18} {r['status']}: {r['reason']}")
            continue
        d = r["max_differences"]
        vs = (f"{r['peer']} {r['peer_tokens_per_s']:,.0f} tokens/s, ratio {r['ratio_vs_peer']:.2f}"
              if r.get("peer_tokens_per_s") else f"{r['peer']}: {r.get('peer_error', '-')}")
        out.append(f"  {r['strategy']:<18} {r['ours']}: equal to one device {r['equal']} (max diff "
                   f"{max(d.values()):.1e}); {r['tokens_per_s']:,.0f} tokens/s; {vs}")
    return out
