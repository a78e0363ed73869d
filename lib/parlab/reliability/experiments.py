"""Notebook 08's experiments as pure functions returning data (tests call them directly)."""

from __future__ import annotations

import dataclasses
import shutil
import statistics
import tempfile

from .. import cost
from ..launch import launch
from ..model import GPTConfig
from .failover import failover  # noqa: F401  (§3)
from .stall import stall_rank
from .stragglers import straggler_rank
from .training import Layout, Spec, train_rank

TINY = GPTConfig(vocab_size=64, seq_len=16, d_model=32, n_heads=4, n_layers=2)
MEDIUM = GPTConfig(vocab_size=64, seq_len=32, d_model=256, n_heads=4, n_layers=4)

# Llama 3 (Dubey et al. 2024, arXiv 2407.21783, §3.3.4, Table 5): a 54-day snapshot of
# pre-training on 16,384 H100s, 466 job interruptions, 419 unexpected; > 90% effective time.
LLAMA3 = dict(days=54, gpus=16384, interruptions=466, unexpected=419, effective=0.90)


def _diff(a: dict, b: dict) -> float:
    return max(float((a[k] - b[k]).abs().max()) for k in b)


def resharded_resume(save: Layout = Layout("ours", 4), resume=(Layout("fsdp2", 2), Layout("ours", 2)),
                     steps: int = 6, at: int = 3, planted=(), config: GPTConfig = TINY,
                     timeout: float = 120.0) -> dict:
    """Train ``steps`` on ``save`` (saving after ``at``), then resume from that checkpoint
    on each layout of ``resume`` (and with each ``planted`` mistake, on resume[0]).
    Returns {"base": losses, "rows": [{layout, planted, loss_diff, param_diff,
    first_bad}]}."""
    directory = tempfile.mkdtemp(prefix="parlab_reshard_")
    try:
        spec = Spec(config, save, steps=steps, directory=directory, save_at=(at,))
        base = launch(train_rank, save.dp, spec, timeout=timeout)[0]
        rows = []
        cases = [(lay, None) for lay in resume] + [(resume[0], p) for p in planted]
        for lay, bug in cases:
            s = dataclasses.replace(spec, layout=lay, resume_from=base["saved"][at], save_at=(),
                                    planted=bug)
            got = launch(train_rank, lay.dp, s, timeout=timeout)[0]
            diffs = {k: abs(got["losses"].get(k, float("nan")) - base["losses"][k])
                     for k in range(at, steps)}
            bad = [k for k, d in diffs.items() if not d <= 1e-5]
            rows.append({"layout": lay.label, "planted": bug, "start": got["start"],
                         "loss_diff": max(d for d in diffs.values() if d == d),
                         "param_diff": _diff(got["params"], base["params"]),
                         "first_bad": bad[0] if bad else None})
        return {"base": base["losses"], "saved_on": save.label, "at": at, "rows": rows}
    finally:
        shutil.rmtree(directory, ignore_errors=True)


def save_stall(config: GPTConfig = MEDIUM, ranks: int = 2, repeats: int = 3,
               timeout: float = 120.0) -> dict:
    """Sync vs async DCP save on ``ranks`` ranks: medians of the blocked time, the async
    save's total, a training step's time, and bytes per rank against
    ``cost.checkpoint_bytes`` (12 B/param: fp32 weights, exp_avg, exp_avg_sq)."""
    directory = tempfile.mkdtemp(prefix="parlab_stall_")
    try:
        r = launch(stall_rank, ranks, config, directory, repeats, timeout=timeout)[0]
    finally:
        shutil.rmtree(directory, ignore_errors=True)
    want = cost.checkpoint_bytes(r["params"], ranks)
    med = {k: statistics.median(r[k]) for k in ("sync", "async", "async_total", "step")}
    return {**{f"{k}_s": v for k, v in med.items()}, "repeats": repeats, "ranks": ranks,
            "params": r["params"], "files": r["files"], "formula_per_rank": want["per_rank"],
            "per_param": want["per_param"], "raw": {k: r[k] for k in ("sync", "async")}}


def stragglers(kinds=("dp", "tp", "pp"), ranks: int = 4, slowdown: float = 0.5,
               t_compute: float = 0.02, repeats: int = 3, micro_batches: int = 4,
               timeout: float = 120.0) -> list[dict]:
    """Per kind: median step normal and with rank 1 (1 + slowdown) slower, against the
    prediction: DP/TP, the normal step + the slow rank's extra compute; PP,
    ``cost.pipeline_time_with_straggler`` scaled by the normal step's measured/ideal."""
    rows = []
    for kind in kinds:
        r = launch(straggler_rank, ranks, kind, 1, slowdown, t_compute, repeats,
                   micro_batches=micro_batches, timeout=timeout)[0]
        normal, slowed = statistics.median(r["normal"]), statistics.median(r["slowed"])
        if kind == "pp":
            ideal = cost.pipeline_time_with_straggler(ranks, micro_batches, t_compute, 2 * t_compute)
            ideal_slow = cost.pipeline_time_with_straggler(ranks, micro_batches, t_compute,
                                                           2 * t_compute, slowdown)
            predicted = normal + (ideal_slow - ideal)
        else:
            predicted = normal + t_compute * slowdown
        rows.append({"kind": kind, "normal_s": normal, "slowed_s": slowed,
                     "predicted_s": predicted, "ratio": slowed / predicted})
    return rows


def llama3_check(checkpoint_s: float = 60.0, restart_s: float = 600.0) -> dict:
    """Llama 3's counts -> MTBF per GPU and of the job; the Young interval and goodput
    for an assumed checkpoint stall and restart (seconds; the paper gives neither)."""
    gpu_h = cost.implied_gpu_mtbf_hours(LLAMA3["unexpected"], LLAMA3["days"], LLAMA3["gpus"])
    job_s = cost.job_mtbf_hours(LLAMA3["gpus"], gpu_h) * 3600
    tau = cost.young_interval(checkpoint_s, job_s)
    g = cost.goodput(tau, checkpoint_s, job_s, restart_s)
    return {"gpu_mtbf_hours": gpu_h, "gpu_mtbf_years": gpu_h / cost.reliability.HOURS_PER_YEAR,
            "job_mtbf_hours": job_s / 3600,
            "per_day": LLAMA3["interruptions"] / LLAMA3["days"], "young_s": tau,
            "daly_s": cost.daly_interval(checkpoint_s, job_s), **g,
            "checkpoint_s": checkpoint_s, "restart_s": restart_s}
