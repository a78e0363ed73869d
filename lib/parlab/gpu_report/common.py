"""What every section of the GPU report shares: its record (``status`` "ok", "skipped"
or "error", a ``reason``, the ``seconds`` it took), why a GPU section cannot run here,
a timer that is honest on a GPU (CUDA events) and on a CPU, and JSON-safe values."""

from __future__ import annotations

import math
import statistics
import time
import traceback

import torch
import torch.distributed as dist

OK = "ok"
SKIPPED = "skipped"
ERROR = "error"


def skipped(reason: str) -> dict:
    return {"status": SKIPPED, "reason": reason}


def short(e: BaseException, limit: int = 300) -> str:
    """One line naming an exception: what a report prints in place of a figure."""
    text = f"{type(e).__name__}: {e}".strip().splitlines()[0]
    return text if len(text) <= limit else text[:limit - 3] + "..."


def cuda_reason() -> str | None:
    """Why no GPU section can run in this process, or None when a CUDA GPU is here."""
    try:
        if torch.cuda.is_available() and torch.cuda.device_count() > 0:
            return None
    except Exception as e:  # a broken driver says so here rather than in every section
        return f"no usable CUDA GPU ({short(e)})"
    build = "" if torch.version.cuda else f"; torch {torch.__version__} is a CPU-only build"
    return f"no CUDA GPU (torch.cuda.is_available() is False{build})"


def nccl_reason(n_gpus: int, nccl_available: bool) -> str | None:
    """Why the multi-GPU sections cannot run, or None: they need >= 2 GPUs and NCCL
    (one GPU per rank, as ``parlab.launch`` then picks NCCL)."""
    if n_gpus < 2:
        return f"needs >= 2 GPUs with NCCL, one per rank (found {n_gpus})"
    if not nccl_available:
        return "needs NCCL (torch.distributed.is_nccl_available() is False)"
    return None


def nccl_available() -> bool:
    try:
        return bool(dist.is_available() and dist.is_nccl_available())
    except Exception:
        return False


def run_section(fn, *args, **kwargs) -> dict:
    """``fn(*args, **kwargs)`` -> its record, timed. A section that raises becomes
    {"status": "error", "reason": ...} (the traceback's tail kept under "traceback"),
    so one failed measurement never hides the others."""
    t0 = time.perf_counter()
    try:
        out = dict(fn(*args, **kwargs))
        out.setdefault("status", OK)
    except Exception as e:  # noqa: BLE001  (reported, not swallowed)
        out = {"status": ERROR, "reason": short(e),
               "traceback": "".join(traceback.format_exc(limit=-4).splitlines(True)[-12:])}
    out["seconds"] = round(time.perf_counter() - t0, 3)
    return out


def gpu_name(device) -> str:
    """torch's name for ``device`` ("NVIDIA H200", ...), "cpu" for the CPU."""
    return torch.cuda.get_device_name(device) if torch.device(device).type == "cuda" else "cpu"


def empty_cache(device) -> None:
    if torch.device(device).type == "cuda":
        torch.cuda.empty_cache()


def synchronize(device) -> None:
    if torch.device(device).type == "cuda":
        torch.cuda.synchronize(device)


def time_op(fn, device="cpu", warmup: int = 3, iters: int = 10, rounds: int = 3) -> float:
    """Seconds per call of ``fn``: ``warmup`` calls first (kernel choice, workspaces),
    then the median over ``rounds`` of the mean of ``iters`` back-to-back calls. On a
    GPU, CUDA events time the queued kernels, not Python's launch loop."""
    cuda = torch.device(device).type == "cuda"
    for _ in range(warmup):
        fn()
    synchronize(device)
    times = []
    for _ in range(rounds):
        if cuda:
            start = torch.cuda.Event(enable_timing=True)
            end = torch.cuda.Event(enable_timing=True)
            start.record()
            for _ in range(iters):
                fn()
            end.record()
            end.synchronize()
            times.append(start.elapsed_time(end) / 1e3 / iters)  # ms -> s
        else:
            t0 = time.perf_counter()
            for _ in range(iters):
                fn()
            times.append((time.perf_counter() - t0) / iters)
    return statistics.median(times)


def tflops(flops: float, seconds: float) -> float:
    """FLOP done in ``seconds`` as TFLOP/s (1e12 FLOP/s, decimal, as datasheets)."""
    return flops / seconds / 1e12


def ratio(a, b):
    """a / b, or None when either is missing or b is 0 (JSON has no NaN)."""
    return None if a is None or not b else a / b


def json_safe(obj):
    """``obj`` with tuples as lists and NaN/inf as None, so json.dump writes strict JSON."""
    if isinstance(obj, dict):
        return {str(k): json_safe(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [json_safe(v) for v in obj]
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    if isinstance(obj, (str, int, float, bool)) or obj is None:
        return obj
    return str(obj)
