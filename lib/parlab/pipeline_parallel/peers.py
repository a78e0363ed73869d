"""The peer: ``torch.distributed.pipelining`` (``ScheduleGPipe``, ``Schedule1F1B``,
``ScheduleInterleaved1F1B``) driving the very same ``Stage`` modules, so its losses
and parameters can be compared with ours number for number, and its step time
measured beside ours. It takes the same ``PPRun`` as ``run``."""

from __future__ import annotations

import time

import torch
import torch.distributed as dist

from ..model import loss_fn
from ..runs import RunResult
from .runner import PPRun
from .stages import build_stages

TORCH_SCHEDULES = {"gpipe": "ScheduleGPipe", "1f1b": "Schedule1F1B",
                   "interleaved": "ScheduleInterleaved1F1B"}


def torch_pipeline_worker(run: PPRun, group=None) -> dict:
    """One rank of ``group`` (default: the world) training with torch's schedule."""
    from torch.distributed import pipelining

    from ..data import get_batch

    torch.set_num_threads(1)
    rank, p, m, c = dist.get_rank(group), run.p, run.m, run.config
    chunks = build_stages(c, p, rank, run.v, run.seed, run.checkpoint)
    stages = [pipelining.PipelineStage(chunk, k * p + rank, p * run.v, torch.device("cpu"),
                                       group=group) for k, chunk in enumerate(chunks)]
    cls = getattr(pipelining, TORCH_SCHEDULES[run.schedule])
    # scale_grads=True (default): gradients are divided by m, i.e. the mean loss.
    sched = cls(stages if run.schedule == "interleaved" else stages[0], m, loss_fn=loss_fn)
    params = [q for chunk in chunks for q in chunk.parameters()]
    opt = torch.optim.AdamW(params, lr=run.lr, betas=(0.9, 0.95), weight_decay=run.weight_decay)
    first, last = chunks[0].first, any(chunk.last for chunk in chunks)
    losses, times, grads = [], [], {}
    for step in range(run.steps):
        x, y = get_batch(step, run.batch_size, c.seq_len, c.vocab_size, seed=run.data_seed)
        mb_losses = []
        dist.barrier(group=group)
        t0 = time.perf_counter()
        sched.step(*([x] if first else []), target=y if last else None,
                   losses=mb_losses if last else None)
        if step == run.steps - 1:
            grads = {n: q.grad.clone() for chunk in chunks for n, q in chunk.named_parameters()}
        opt.step()
        opt.zero_grad(set_to_none=True)
        times.append((t0, time.perf_counter()))
        if last:
            losses.append(sum(t.item() for t in mb_losses) / m)
    return dict(losses=losses if last else None, times=times, grads=grads,
                state_dict={n: t.detach().clone() for chunk in chunks
                            for n, t in chunk.state_dict().items()})


def torch_run(run: PPRun, world_size: int, timeout: float = 120.0) -> RunResult:
    """The peer on ``world_size`` (= p) ranks: same model split, data and optimizer,
    torch's schedule. Returns a ``RunResult`` (losses, state_dict, grads, step_times)."""
    from ..launch import launch

    if not isinstance(run, PPRun):
        raise ValueError(f"run must be a PPRun, got {type(run).__name__}")
    run.check(world_size)
    if run.schedule not in TORCH_SCHEDULES:
        raise ValueError(f"schedule={run.schedule!r}: the peer has {sorted(TORCH_SCHEDULES)}")
    if run.compute != "real":
        raise ValueError(f"compute={run.compute!r}: the peer runs the real model only")
    out = launch(torch_pipeline_worker, world_size, run, timeout=timeout, backend="gloo")
    return RunResult(
        losses=next(r["losses"] for r in out if r["losses"] is not None),
        state_dict={k: t for r in out for k, t in r["state_dict"].items()},
        grads={k: t for r in out for k, t in r["grads"].items()},
        step_times=[max(r["times"][s][1] for r in out) - min(r["times"][s][0] for r in out)
                    for s in range(run.steps)],
        ranks=[{"times": r["times"]} for r in out])
