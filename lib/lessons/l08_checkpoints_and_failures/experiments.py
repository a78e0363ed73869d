"""Notebook 08's experiments as pure functions returning data (tests call them directly)."""

from __future__ import annotations

import dataclasses
import math
import os
import re
import shutil
import statistics
import tempfile

from parlab import cost
from parlab.launch import launch
from parlab.model import GPTConfig
from parlab.validate import check_float, check_int, shown
from . import checks
from .failover import failover  # noqa: F401  (§3)
from .stall import stall_rank
from .stragglers import KINDS, check_bug, kinds_rank
from .training import PLANTED, Layout, Spec, train_rank

TINY = GPTConfig(vocab_size=64, seq_len=16, d_model=32, n_heads=4, n_layers=2)
MEDIUM = GPTConfig(vocab_size=64, seq_len=32, d_model=256, n_heads=4, n_layers=4)

# Llama 3 (Dubey et al. 2024, arXiv 2407.21783, §3.3.4, Table 5): a 54-day snapshot of
# pre-training on 16,384 H100s, 466 job interruptions, 419 unexpected; > 90% effective time.
# The 419 have every cause (GPU, network, host, software...): "GPU issues are the largest
# category, accounting for 58.7% of all unexpected issues" (§3.3.4).
LLAMA3 = dict(days=54, gpus=16384, interruptions=466, unexpected=419, effective=0.90)
LLAMA3_405B = 405e9  # parameters
# Tectonic, Llama 3's checkpoint storage (§3.3.1): 2 TB/s sustained, 7 TB/s peak
TECTONIC = dict(sustained=2e12, peak=7e12)
# our assumptions, not the paper's: a slow storage's stall, and the restart time
SLOW_STALL_S, RESTART_S = 60.0, 600.0


def checkpoint_size(n_params: float = LLAMA3_405B) -> float:
    """Bytes of one checkpoint on the lab's one basis, 12 B/param: fp32 master weights and
    AdamW's two fp32 moments, what a resume needs (the bf16 weights are a cast of the
    master, so they need not be saved; ``cost.checkpoint_bytes``)."""
    return cost.checkpoint_bytes(n_params)["total"]


def stall_seconds(bandwidth: float, n_params: float = LLAMA3_405B) -> float:
    """C: a synchronous save's stall, ``checkpoint_size(n_params)`` at ``bandwidth`` B/s."""
    return cost.checkpoint_seconds(checkpoint_size(n_params), bandwidth)


def bandwidth_for_stall(stall_s: float = SLOW_STALL_S, n_params: float = LLAMA3_405B) -> float:
    """The storage bandwidth (B/s) at which a synchronous save stalls ``stall_s``:
    for 405B and 60 s, 4.86 TB / 60 s = 81 GB/s."""
    return checkpoint_size(n_params) / check_float("stall_s", stall_s)


C_TECTONIC = stall_seconds(TECTONIC["sustained"])  # 405B's stall at Tectonic's sustained rate


def written(path: str) -> list[dict]:
    """What a DCP checkpoint directory holds: [{file, bytes, rank}] (rank None for the
    shared ``.metadata`` and our ``.manifest.json``), sorted by name."""
    if not isinstance(path, (str, os.PathLike)) or not os.path.isdir(path):
        raise ValueError(f"path={shown(path)} must be a checkpoint directory that exists")
    out = []
    for name in sorted(os.listdir(path)):
        m = re.match(r"^__(\d+)_\d+\.distcp$", name)
        out.append({"file": name, "bytes": os.path.getsize(os.path.join(path, name)),
                    "rank": int(m.group(1)) if m else None})
    return out


def _diff(a: dict, b: dict) -> float:
    return max(float((a[k] - b[k]).abs().max()) for k in b)


def resharded_resume(save: Layout = Layout("ours", 4), resume=(Layout("fsdp2", 2), Layout("ours", 2)),
                     steps: int = 6, at: int = 3, planted=(), config: GPTConfig = TINY,
                     timeout: float = 120.0) -> dict:
    """Train ``steps`` on ``save`` (saving after ``at``), then resume from that checkpoint
    on each layout of ``resume`` (and with each ``planted`` mistake, on resume[0]).
    Returns {"base": losses, "rows": [{layout, planted, loss_diff, param_diff,
    first_bad}]}. Every argument is checked, and every run's spec made, before any rank
    starts: a misspelt planted mistake or layout kind is a ValueError listing the names."""
    layouts = resume if isinstance(resume, (tuple, list)) else [resume]
    for name, lay in [("save", save)] + [("resume", r) for r in layouts]:
        if not isinstance(lay, Layout):
            raise ValueError(f"{name}={shown(lay)} must be a Layout (or, for resume, a tuple of "
                             "them), e.g. Layout('ours', 2)")
        checks.ranks(f"{name} dp", lay.dp)  # launched here: the launcher's cap
    if not isinstance(resume, (tuple, list)) or not resume:
        raise ValueError(f"resume={shown(resume)} must be a non-empty tuple of Layouts to "
                         "resume on")
    planted = checks.choices("planted", planted, PLANTED[1:])
    steps = checks.steps("steps", steps)
    check_int("at", at, 1, steps - 1)  # saved after step at - 1; the resume trains at ..
    checks.timeout(timeout)
    # the specs, checked now (config, batch over dp...); the directory is filled in below
    spec = Spec(config, save, steps=steps, directory="", save_at=(at,))
    cases = [(lay, None) for lay in resume] + [(resume[0], p) for p in planted]
    for lay, bug in cases:
        dataclasses.replace(spec, layout=lay, resume_from="", save_at=(), planted=bug)
    directory = tempfile.mkdtemp(prefix="parlab_reshard_")
    try:
        spec = dataclasses.replace(spec, directory=directory)
        base = launch(train_rank, save.dp, spec, timeout=timeout)[0]
        files = written(base["saved"][at])
        rows = []
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
        return {"base": base["losses"], "saved_on": save.label, "at": at, "rows": rows,
                "files": files}
    finally:
        shutil.rmtree(directory, ignore_errors=True)


def save_stall(config: GPTConfig = MEDIUM, ranks: int = 2, repeats: int = 3,
               timeout: float = 120.0) -> dict:
    """Sync vs async DCP save on ``ranks`` ranks: medians of the blocked time, the async
    save's total, a training step's time, and bytes per rank against
    ``cost.checkpoint_bytes`` (12 B/param: fp32 weights, exp_avg, exp_avg_sq)."""
    checks.config(config)
    checks.ranks("ranks", ranks)
    check_int("repeats", repeats, 1, checks.MAX_REPEATS)
    checks.timeout(timeout)
    directory = tempfile.mkdtemp(prefix="parlab_stall_")
    try:
        r = launch(stall_rank, ranks, config, directory, repeats, timeout=timeout)[0]
    finally:
        shutil.rmtree(directory, ignore_errors=True)
    want = cost.checkpoint_bytes(r["params"], ranks)
    med = {k: statistics.median(r[k]) for k in ("sync", "async", "async_total", "step")}
    return {**{f"{k}_s": v for k, v in med.items()}, "repeats": repeats, "ranks": ranks,
            "params": r["params"], "files": r["files"], "writes": r["writes"],
            "formula_per_rank": want["per_rank"],
            "per_param": want["per_param"], "raw": {k: r[k] for k in ("sync", "async")}}


def stragglers(kinds=("dp", "tp", "pp"), ranks: int = 4, slowdown: float = 0.5,
               t_compute: float = 0.02, repeats: int = 3, micro_batches: int = 4,
               pp_compute: float | None = None, timeout: float = 120.0,
               bug: str | None = None) -> list[dict]:
    """Per kind, in one job: median step normal and with rank 1 (1 + slowdown) slower,
    against the prediction: DP/TP, the normal step + the slow rank's extra compute
    (``cost.synchronous_step``: the slowest rank sets the pace); PP, the normal step + the
    rise ``cost.pipeline_time_with_straggler`` predicts (an upper bound for 1F1B).
    ``pp_compute``: one micro-batch's forward per stage for PP (default ``t_compute``).
    ``own_s`` / ``floor_s`` (dp, tp): rank 0's own part of each slowed step, which cannot
    end before the slow rank's compute ``floor_s`` (stragglers.straggler_rank); ``bug``
    is passed on (a planted step that does not synchronise)."""
    if not kinds or isinstance(kinds, str) or not isinstance(kinds, (tuple, list)) \
            or any(k not in KINDS for k in kinds):
        raise ValueError(f"kinds={shown(kinds)}: a non-empty tuple of names from {KINDS}")
    check_bug(bug)
    if isinstance(ranks, int) and not isinstance(ranks, bool) and ranks < 2:
        raise ValueError(f"ranks={ranks}: a straggler needs at least 2 ranks (rank 1 is slowed)")
    checks.ranks("ranks", ranks, 2)
    check_float("slowdown", slowdown, high=checks.MAX_SLOWDOWN)
    check_float("t_compute", t_compute, high=checks.MAX_COMPUTE_S)
    if pp_compute is not None:
        check_float("pp_compute", pp_compute, high=checks.MAX_COMPUTE_S)
    check_int("repeats", repeats, 1, checks.MAX_REPEATS)
    check_int("micro_batches", micro_batches, 1, checks.MAX_MICRO_BATCHES)
    checks.timeout(timeout)
    t = {k: (pp_compute or t_compute) if k == "pp" else t_compute for k in kinds}
    # The sleeps alone take this long (each kind: 2 repeats + 1 steps, half of them slowed;
    # a 1F1B step is (M + P - 1) slots of forward + backward = 3 t): a timeout below it
    # could only end in a LaunchTimeout after the wait, so it is refused now.
    sleeps = 0.0
    for k in kinds:
        per_step = 3 * t[k] * (micro_batches + ranks - 1) if k == "pp" else t[k]
        sleeps += per_step * ((repeats + 1) + repeats * (1 + slowdown))
    if sleeps >= timeout:
        raise ValueError(f"timeout={timeout} s is shorter than the straggler's sleeps alone "
                         f"(about {sleeps:.3g} s for repeats={repeats}, slowdown={slowdown}, "
                         f"t_compute={t_compute}): raise timeout or make the work smaller")
    res = launch(kinds_rank, ranks, tuple(kinds), 1, slowdown, t, repeats, micro_batches,
                 bug, timeout=timeout)[0]
    rows = []
    for kind in kinds:
        normal, slowed = (statistics.median(res[kind][c]) for c in ("normal", "slowed"))
        tc = t[kind]
        if kind == "pp":
            ideal = cost.pipeline_time_with_straggler(ranks, micro_batches, tc, 2 * tc)
            ideal_slow = cost.pipeline_time_with_straggler(ranks, micro_batches, tc, 2 * tc, slowdown)
            predicted = normal + (ideal_slow - ideal)
        else:
            computes = [tc] * ranks
            computes[1] *= 1 + slowdown
            predicted = normal + cost.synchronous_step(computes) - tc
        rows.append({"kind": kind, "normal_s": normal, "slowed_s": slowed, "t_compute": tc,
                     "predicted_s": predicted, "ratio": slowed / predicted, "slowdown": slowdown,
                     "ranks": ranks, "micro_batches": micro_batches,
                     "own_s": res[kind]["own"]["slowed"], "floor_s": tc * (1 + slowdown),
                     "normal_all": res[kind]["normal"], "slowed_all": res[kind]["slowed"]})
    return rows


def llama3_check(checkpoint_s: float = SLOW_STALL_S, restart_s: float = RESTART_S) -> dict:
    """Llama 3's counts -> the mean time between job interruptions per GPU
    (``gpu_mtbf_hours``: GPU-hours per unexpected interruption, whatever its cause, not a
    GPU's own MTBF) and of the job; the Young interval and goodput for an assumed
    checkpoint stall and restart (seconds; the paper gives neither)."""
    check_float("checkpoint_s", checkpoint_s)
    check_float("restart_s", restart_s, strict=False)
    gpu_h = cost.implied_gpu_mtbf_hours(LLAMA3["unexpected"], LLAMA3["days"], LLAMA3["gpus"])
    job_s = cost.job_mtbf_hours(LLAMA3["gpus"], gpu_h) * 3600
    tau = cost.young_interval(checkpoint_s, job_s)
    g = cost.goodput(tau, checkpoint_s, job_s, restart_s)
    return {"gpu_mtbf_hours": gpu_h, "gpu_mtbf_years": gpu_h / cost.reliability.HOURS_PER_YEAR,
            "job_mtbf_hours": job_s / 3600,
            "per_day": LLAMA3["interruptions"] / LLAMA3["days"], "young_s": tau,
            "daly_s": cost.daly_interval(checkpoint_s, job_s), **g,
            "checkpoint_s": checkpoint_s, "restart_s": restart_s}


LLAMA3_GPU_MTBF_H = cost.implied_gpu_mtbf_hours(LLAMA3["unexpected"], LLAMA3["days"], LLAMA3["gpus"])


def goodput_at_scale(n_gpus: int = 16384, mtbf_gpu_hours: float = LLAMA3_GPU_MTBF_H,
                     checkpoint_bytes: float | None = None, bandwidth: float | None = None,
                     restart_s: float = RESTART_S, points: int = 60) -> dict:
    """The goodput widget's numbers: interruptions per day of ``n_gpus`` GPUs, each
    interrupting the job once per ``mtbf_gpu_hours`` on average, C = checkpoint_bytes /
    bandwidth (a synchronous save's stall; defaults: 405B's ``checkpoint_size()`` at
    ``bandwidth_for_stall()``, C = 60 s), Young's and Daly's interval, goodput there, and
    goodput against the interval."""
    check_int("n_gpus", n_gpus)
    check_float("mtbf_gpu_hours", mtbf_gpu_hours)
    checks.optional_float("checkpoint_bytes", checkpoint_bytes)
    checks.optional_float("bandwidth", bandwidth)
    check_float("restart_s", restart_s, strict=False)
    check_int("points", points, 2, checks.MAX_POINTS)
    checkpoint_bytes = checkpoint_size() if checkpoint_bytes is None else checkpoint_bytes
    bandwidth = bandwidth_for_stall() if bandwidth is None else bandwidth
    per_day = cost.interruptions_per_day(n_gpus, mtbf_gpu_hours)
    m = cost.job_mtbf_hours(n_gpus, mtbf_gpu_hours) * 3600
    c = cost.checkpoint_seconds(checkpoint_bytes, bandwidth)
    tau = cost.young_interval(c, m)
    curve = cost.goodput_curve(c, m, restart_s, points)
    best = max(curve, key=lambda r: r["goodput"])
    return {"per_day": per_day, "job_mtbf_s": m, "checkpoint_s": c, "restart_s": restart_s,
            "young_s": tau, "daly_s": cost.daly_interval(c, m),
            **cost.goodput(tau, c, m, restart_s), "curve": curve, "best_tau_s": best["tau"],
            "best_goodput": best["goodput"]}


def restart_for_target(target: float = 0.90, checkpoint_s: float = SLOW_STALL_S) -> dict:
    """At Llama 3's failure rate and Young's interval for ``checkpoint_s``: the restart
    time at which the formula's goodput reaches ``target`` (e.g. their "> 90%")."""
    check_float("target", target)
    if not target < 1:
        raise ValueError(f"target={target} must be < 1 (a share of the wall time)")
    r = llama3_check(checkpoint_s)
    m = r["job_mtbf_hours"] * 3600
    need = cost.reliability.restart_for_goodput(target, r["young_s"], checkpoint_s, m)
    ceiling = cost.goodput(r["young_s"], checkpoint_s, m, 0.0)["goodput"]
    return {"target": target, "restart_s": need, "goodput_at_r0": ceiling,
            "young_s": r["young_s"], "checkpoint_s": checkpoint_s,
            "reachable": need >= 0 and not math.isnan(need)}


def scale_bytes(models=(("Llama 3 405B", LLAMA3_405B), ("1T (Narayanan et al.)", 1e12)),
                weights: int = 0, ranks: int = 1) -> list[dict]:
    """Checkpoint bytes at scale by ``cost.checkpoint_bytes`` (12 B/param + ``weights``:
    2 when the bf16 weights are saved too)."""
    if isinstance(models, str) or not isinstance(models, (tuple, list)) or not models:
        raise ValueError(f"models={shown(models)} must be a tuple of (name, parameters) pairs")
    for m in models:
        if not (isinstance(m, (tuple, list)) and len(m) == 2 and isinstance(m[0], str)):
            raise ValueError(f"models: {shown(m)} must be a (name, parameters) pair")
        check_float(f"models: {m[0]}'s parameters", m[1])
    check_int("weights", weights, 0)
    check_int("ranks", ranks)
    return [{"model": name, "params": n, **cost.checkpoint_bytes(n, ranks, weights=weights)}
            for name, n in models]


def tp_resharded_resume(resume=((1, 4), (4, 1)), steps: int = 4, save_at: int = 2) -> dict:
    """torch's DTensor TP (``tp_resume``, on ``byom.MLPStack``): saved at dp2·tp2 after
    ``save_at`` steps, resumed on each (dp, tp) of ``resume``; the largest loss and
    parameter differences from continuing at dp2·tp2."""
    from . import tp_resume
    if isinstance(resume, str) or not isinstance(resume, (tuple, list)) or not resume:
        raise ValueError(f"resume={shown(resume)} must be a non-empty tuple of (dp, tp) pairs")
    for pair in resume:
        if not (isinstance(pair, (tuple, list)) and len(pair) == 2):
            raise ValueError(f"resume: {shown(pair)} must be a (dp, tp) pair")
        dp, tp = check_int("resume dp", pair[0]), check_int("resume tp", pair[1])
        checks.ranks("resume dp * tp", dp * tp)
        if tp_resume.BATCH % dp or tp_resume.WIDTH % tp:
            raise ValueError(f"resume ({dp}, {tp}): dp must divide the batch of "
                             f"{tp_resume.BATCH} rows and tp the width {tp_resume.WIDTH}")
    steps = checks.steps("steps", steps)
    check_int("save_at", save_at, 1, steps - 1)  # the resumed runs train save_at .. steps - 1
    d = tempfile.mkdtemp(prefix="parlab_tp_ckpt_")
    try:
        straight = launch(tp_resume.run, 4, 2, 2, steps, (save_at,), d, timeout=120)[0]
        rows = []
        for dp, tp in resume:
            r = launch(tp_resume.run, dp * tp, dp, tp, steps, (), None,
                       os.path.join(d, f"step_{save_at}"), timeout=120)[0]
            rows.append({"layout": f"dp{dp}·tp{tp}", "start": min(r["losses"]),
                         "loss_diff": max(abs(r["losses"][s] - straight["losses"][s]) for s in r["losses"]),
                         "param_diff": _diff(r["params"], straight["params"])})
        return {"saved_on": "dp2·tp2", "rows": rows}
    finally:
        shutil.rmtree(d, ignore_errors=True)
