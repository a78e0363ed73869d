"""The peer: ``torch.distributed.pipelining`` (``ScheduleGPipe``, ``Schedule1F1B``,
``ScheduleInterleaved1F1B``) driving the very same ``Stage`` modules, so its losses
and parameters can be compared with ours number for number, and its step time
measured beside ours."""

from __future__ import annotations

import time

import torch
import torch.distributed as dist

from ..model import GPTConfig, loss_fn
from .schedules import validate
from .stages import build_stages


TORCH_SCHEDULES = {"gpipe": "ScheduleGPipe", "1f1b": "Schedule1F1B",
                   "interleaved": "ScheduleInterleaved1F1B"}


def torch_pipeline_worker(schedule, p, m, v, config, steps, batch_size, lr, seed,
                          data_seed) -> dict:
    """One rank training with torch.distributed.pipelining on our stages."""
    from torch.distributed import pipelining

    from ..data import get_batch

    torch.set_num_threads(1)
    rank = dist.get_rank()
    chunks = build_stages(config, p, rank, v, seed)
    stages = [pipelining.PipelineStage(c, k * p + rank, p * v, torch.device("cpu"))
              for k, c in enumerate(chunks)]
    cls = getattr(pipelining, TORCH_SCHEDULES[schedule])
    # scale_grads=True (default): gradients are divided by m, i.e. the mean loss.
    sched = cls(stages if schedule == "interleaved" else stages[0], m, loss_fn=loss_fn)
    params = [q for c in chunks for q in c.parameters()]
    opt = torch.optim.AdamW(params, lr=lr, betas=(0.9, 0.95), weight_decay=0.0)
    first, last = chunks[0].first, any(c.last for c in chunks)
    losses, times = [], []
    for step in range(steps):
        x, y = get_batch(step, batch_size, config.seq_len, config.vocab_size, seed=data_seed)
        mb_losses = []
        dist.barrier()
        t0 = time.perf_counter()
        sched.step(*([x] if first else []), target=y if last else None,
                   losses=mb_losses if last else None)
        opt.step()
        opt.zero_grad(set_to_none=True)
        times.append((t0, time.perf_counter()))
        if last:
            losses.append(sum(t.item() for t in mb_losses) / m)
    return dict(losses=losses if last else None, times=times,
                state_dict={n: t.detach().clone() for c in chunks
                            for n, t in c.state_dict().items()})


def torch_run(schedule: str, p: int, m: int, v: int = 1, *, config: GPTConfig | None = None,
              steps: int = 1, batch_size: int | None = None, lr: float = 1e-3, seed: int = 0,
              data_seed: int = 0, timeout: float = 120.0) -> dict:
    """The peer: same model split, data and optimizer, torch's schedule. Returns
    {"losses", "state_dict", "step_times"} like ``pp.run``."""
    from ..launch import launch

    config = config or GPTConfig()
    batch_size = m if batch_size is None else batch_size
    if schedule not in TORCH_SCHEDULES:
        raise ValueError(f"schedule={schedule!r}: the peer has {sorted(TORCH_SCHEDULES)}")
    validate(schedule, p, m, v, config.n_layers, batch_size)
    out = launch(torch_pipeline_worker, p, schedule, p, m, v, config, steps, batch_size, lr,
                 seed, data_seed, timeout=timeout, backend="gloo")
    return dict(losses=next(r["losses"] for r in out if r["losses"] is not None),
                state_dict={k: t for r in out for k, t in r["state_dict"].items()},
                step_times=[max(r["times"][s][1] for r in out) - min(r["times"][s][0] for r in out)
                            for s in range(steps)])
