"""Checkpoints and failures (notebook 08): checkpoint bytes, interruptions, the optimal
checkpoint interval, goodput, and a pipeline with one slow stage.

* ``checkpoint_bytes``: what a training state holds per parameter: fp32 master weights
  and AdamW's two fp32 moments (4 + 4 + 4 = 12 B), plus the 2 B bf16/fp16 weights if they
  are saved too (Rajbhandari et al. 2020, §3.1: 16 B/param of mixed-precision Adam state,
  of which the gradients, 2 B, are not saved).
* ``interruptions_per_day``: n GPUs, each failing at rate 1/MTBF, fail together at n/MTBF
  (independent failures; a synchronous job stops at any one of them). Fitted to a count
  of interruptions of every cause (``implied_gpu_mtbf_hours``), "MTBF" is the mean time
  between job interruptions per GPU, not a GPU's own failure rate.
* ``young_interval``: Young (1974), "A first order approximation to the optimum
  checkpoint interval", CACM 17(9): tau = sqrt(2 C M) for write time C and job MTBF M.
  ``daly_interval``: Daly (2006), "A higher order estimate of the optimum checkpoint
  interval for restart dumps", FGCS 22(3), eq. 37: sqrt(2CM)[1 + sqrt(C/2M)/3 + C/9M] - C
  for C < 2M, else M.
* ``goodput``: the share of wall time that is useful training with a checkpoint every
  tau (each costing C of stall), failures at rate 1/M, each losing on average tau/2 of
  work plus the restart R (first-order model, as in Young's derivation).
"""

from __future__ import annotations

import math

from ..validate import check_float, check_int

HOURS_PER_YEAR = 24 * 365


def checkpoint_bytes(n_params: float, ranks: int = 1, master: int = 4, moments: int = 8,
                     weights: int = 0) -> dict:
    """Bytes of one checkpoint: ``per_param`` = master + moments + weights (default 12:
    fp32 master, AdamW m and v; ``weights=2`` adds the bf16 copy), ``total``, and
    ``per_rank`` when the state is sharded evenly over ``ranks`` (ZeRO/FSDP)."""
    check_float("n_params", n_params)
    check_int("ranks", ranks)
    for name, v in (("master", master), ("moments", moments), ("weights", weights)):
        check_int(name, v, 0)
    per = master + moments + weights
    return {"per_param": per, "total": n_params * per, "per_rank": n_params * per / ranks}


def interruptions_per_day(n_gpus: int, mtbf_gpu_hours: float) -> float:
    """Expected failures per day of a job on ``n_gpus`` GPUs, each with MTBF
    ``mtbf_gpu_hours`` (independent): 24 n / MTBF."""
    check_int("n_gpus", n_gpus)
    check_float("mtbf_gpu_hours", mtbf_gpu_hours)
    return 24.0 * n_gpus / mtbf_gpu_hours


def job_mtbf_hours(n_gpus: int, mtbf_gpu_hours: float) -> float:
    """The job's mean time between failures: MTBF per GPU / n."""
    return 24.0 / interruptions_per_day(n_gpus, mtbf_gpu_hours)


def implied_gpu_mtbf_hours(interruptions: float, days: float, n_gpus: int) -> float:
    """GPU-hours per interruption: days x 24 x n_gpus / interruptions, the mean time
    between job interruptions per GPU that a count of ``interruptions`` in ``days`` on
    ``n_gpus`` implies. It is a GPU's own MTBF only if every interruption was a GPU
    failure; Llama 3's 419 unexpected ones also count network, host and software causes
    (GPU issues were 58.7% of them: Dubey et al. 2024, §3.3.4)."""
    check_float("interruptions", interruptions)
    check_float("days", days)
    check_int("n_gpus", n_gpus)
    return days * 24.0 * n_gpus / interruptions


def checkpoint_seconds(size_bytes: float, bandwidth_bytes_per_s: float) -> float:
    """C: the time to write a checkpoint of ``size_bytes`` at the storage's bandwidth."""
    check_float("size_bytes", size_bytes)
    check_float("bandwidth_bytes_per_s", bandwidth_bytes_per_s)
    return size_bytes / bandwidth_bytes_per_s


def young_interval(c: float, m: float) -> float:
    """Young (1974): tau = sqrt(2 C M) (C, M in the same unit)."""
    check_float("c", c)
    check_float("m", m)
    return math.sqrt(2 * c * m)


def daly_interval(c: float, m: float) -> float:
    """Daly (2006), eq. 37: sqrt(2CM)(1 + sqrt(C/2M)/3 + C/9M) - C if C < 2M, else M."""
    check_float("c", c)
    check_float("m", m)
    if c >= 2 * m:
        return m
    return math.sqrt(2 * c * m) * (1 + math.sqrt(c / (2 * m)) / 3 + c / (9 * m)) - c


def goodput(tau: float, c: float, m: float, r: float = 0.0) -> dict:
    """Useful share of wall time with a checkpoint every ``tau`` of training (stall
    ``c`` each), job MTBF ``m``, restart ``r`` (all one unit). Per unit of wall time the
    job fails 1/m times, losing tau/2 + c (half an interval's work and, on average,
    the save in flight) + r each; the rest is split between work and saves as tau : c.
    Returns {"goodput", "checkpoint_share", "lost_share", "restart_share"}."""
    check_float("tau", tau)
    check_float("c", c, strict=False)
    check_float("m", m)
    check_float("r", r, strict=False)
    failed = min(1.0, (tau / 2 + c + r) / m)  # share of time lost to failures
    running = 1.0 - failed
    useful = running * tau / (tau + c)
    return {"goodput": useful, "checkpoint_share": running * c / (tau + c),
            "lost_share": min(1.0, (tau / 2 + c) / m), "restart_share": min(1.0, r / m)}


def goodput_curve(c: float, m: float, r: float = 0.0, points: int = 60) -> list[dict]:
    """goodput(tau) on a log grid of tau from C/10 to 2M."""
    check_float("c", c, strict=False)
    check_float("m", m)
    check_float("r", r, strict=False)
    check_int("points", points, 2)
    lo = math.log(max(c, 1e-9) / 10)
    hi = math.log(2 * m)
    taus = [math.exp(lo + (hi - lo) * i / (points - 1)) for i in range(points)]
    return [{"tau": t, **goodput(t, c, m, r)} for t in taus]


def pipeline_time_with_straggler(p: int, m: int, t_fwd: float, t_bwd: float,
                                 slowdown: float = 0.0) -> float:
    """1F1B/GPipe step with stage times t_fwd + t_bwd per micro-batch, one stage
    (1 + slowdown) slower: that stage is busy m (1 + s)(t_f + t_b) and the fill and drain
    cross the other p - 1 stages once: m (1 + s)(t_f + t_b) + (p - 1)(t_f + t_b).
    slowdown = 0 gives (m + p - 1)(t_f + t_b) (Huang et al. 2019, GPipe §2.3). With 1F1B
    the slow stage's warm-up forwards overlap part of the fill, so this is an upper
    bound (measured here: 1F1B, p = 4, m = 4, +50% on stage 1 rose half as much)."""
    check_int("p", p)
    check_int("m", m)
    check_float("slowdown", slowdown, strict=False)
    t = check_float("t_fwd", t_fwd, strict=False) + check_float("t_bwd", t_bwd, strict=False)
    return m * (1 + slowdown) * t + (p - 1) * t


def synchronous_step(computes: list[float], comm: float = 0.0) -> float:
    """A synchronous step (DP, TP): the slowest rank's compute plus the communication."""
    if not isinstance(computes, (list, tuple)) or not computes:
        raise ValueError(f"computes={computes!r} must be a non-empty list of seconds")
    slowest = max(check_float("computes", t, strict=False) for t in computes)
    return slowest + check_float("comm", comm, strict=False)


def restart_for_goodput(target: float, tau: float, c: float, m: float) -> float:
    """The restart time R at which ``goodput(tau, c, m, R)`` equals ``target``: solving
    (1 - (tau/2 + c + R)/m) tau/(tau + c) = target for R. Negative when even R = 0
    falls short of ``target``."""
    check_float("target", target)
    check_float("tau", tau)
    check_float("c", c, strict=False)
    check_float("m", m)
    if target >= 1:
        raise ValueError(f"target={target} must be a share below 1")
    return m * (1 - target * (tau + c) / tau) - tau / 2 - c
