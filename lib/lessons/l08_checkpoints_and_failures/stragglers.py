"""One slow rank in a synchronous job (a straggler), emulated: one rank's sleeps last
(1 + slowdown) times longer. Sleeps, not math, so the lesson does not depend on how
many ranks share a core (parallel_nd/emulated.py does the same for notebook 06).

* DP: each rank "computes" t, then all-reduces its gradients; the all-reduce cannot end
  before the last rank joins, so the step is max over ranks + the all-reduce.
* TP: every layer computes t / L, then all-reduces its output (Megatron's g); the slow
  rank delays every layer: again the step is the slowest rank's compute + the traffic.
* PP: the pipeline executor (pipeline_parallel/executor.py, 1F1B) with ``EmulatedCompute``
  whose ops last (1 + slowdown) longer on one stage: that stage sets the pace of the
  steady state (``cost.pipeline_time_with_straggler``).

Each kind alternates normal and slowed steps in one job (the same processes, interleaved)
and returns rank 0's step times per condition.
"""

from __future__ import annotations

import time

import torch
import torch.distributed as dist

KINDS = ("dp", "tp", "pp")
BUGS = (None, "no_sync")  # planted: "no_sync", a step that skips its all-reduce


def check_bug(bug) -> None:
    if bug not in BUGS:
        raise ValueError(f"bug={bug!r}: one of {BUGS}")


def _busy(seconds: float) -> None:
    deadline = time.perf_counter() + seconds
    time.sleep(max(0.0, deadline - time.perf_counter()))


def _dp_step(t: float, factor: float, buf: torch.Tensor, sync: bool = True) -> None:
    _busy(t * factor)
    if sync:
        dist.all_reduce(buf)


def _tp_step(t: float, factor: float, buf: torch.Tensor, layers: int, sync: bool = True) -> None:
    for _ in range(layers):
        _busy(t / layers * factor)
        if sync:
            dist.all_reduce(buf)


def straggler_rank(kind: str, slow_rank: int, slowdown: float, t_compute: float,
                   repeats: int, layers: int = 4, micro_batches: int = 4,
                   bug: str | None = None) -> dict:
    """Rank 0: {"normal": [step seconds], "slowed": [...], "own": {cond: [...]}},
    alternating (see module doc). ``own``: from rank 0 *entering* the step's start barrier
    to the end of its own part of the step (dp, tp: its last all-reduce). No rank leaves
    that barrier before rank 0 entered it, and rank 0's all-reduce cannot end before the
    slow rank has slept and joined, so ``own`` >= the slow rank's compute, however loaded
    the machine: the straggler sets the pace as a fact, not a timing. ``t_compute``: one
    step's compute per rank (dp, tp), or one micro-batch's forward through a stage (pp;
    backward 2x). ``bug="no_sync"`` (planted): dp/tp skip the all-reduce, so nobody waits."""
    check_bug(bug)
    if kind not in KINDS:
        raise ValueError(f"kind={kind!r} must be one of {KINDS}")
    rank, world = dist.get_rank(), dist.get_world_size()
    times = {"normal": [], "slowed": [], "own": {"normal": [], "slowed": []}}
    buf = torch.zeros(1 << 14)
    executors = {}
    if kind == "pp":
        from parlab.pipeline_parallel.compute import EmulatedCompute
        from parlab.pipeline_parallel.executor import PipelineExecutor
        from parlab.pipeline_parallel.schedules import make_schedule, placement_of
        shape = (1, 4, 8)
        for cond, f in (("normal", 1.0), ("slowed", 1.0 + slowdown)):
            f = f if rank == slow_rank else 1.0
            compute = EmulatedCompute({"F": t_compute * f, "B": 2 * t_compute * f}, shape, world)
            executors[cond] = PipelineExecutor(make_schedule("1f1b", world, micro_batches),
                                               placement_of("1f1b", world, 1, micro_batches),
                                               compute, shape)
        inputs = [torch.zeros(shape) for _ in range(micro_batches)]
    for i in range(2 * repeats + 1):
        cond = ("normal", "slowed")[i % 2]
        factor = 1.0 + slowdown if (cond == "slowed" and rank == slow_rank) else 1.0
        entered = time.perf_counter()
        dist.barrier()
        t0 = time.perf_counter()
        if kind == "dp":
            _dp_step(t_compute, factor, buf, bug is None)
        elif kind == "tp":
            _tp_step(t_compute, factor, buf, layers, bug is None)
        else:
            executors[cond].step(inputs, inputs)
        own = time.perf_counter()
        dist.barrier()  # the step ends when the last rank is done
        if i:  # the first is a warm-up
            times[cond].append(time.perf_counter() - t0)
            times["own"][cond].append(own - entered)
    return times if rank == 0 else None


def kinds_rank(kinds, slow_rank: int, slowdown: float, t_compute: dict, repeats: int,
               micro_batches: int = 4, bug: str | None = None) -> dict | None:
    """``straggler_rank`` for each kind in one job (one start-up for all): rank 0 returns
    {kind: {"normal": [...], "slowed": [...], "own": ...}}; ``t_compute``: {kind: seconds}."""
    out = {k: straggler_rank(k, slow_rank, slowdown, t_compute[k], repeats,
                             micro_batches=micro_batches, bug=bug) for k in kinds}
    return out if dist.get_rank() == 0 else None
