"""The peer: ``torch.distributed.pipelining`` (``ScheduleGPipe``, ``Schedule1F1B``,
``ScheduleInterleaved1F1B``) driving the very same ``PipelineStage`` modules, so its losses
and parameters can be compared with ours number for number, and its step time
measured beside ours. It takes the same ``PPRun`` as ``run``."""

from __future__ import annotations

import torch
import torch.distributed as dist

from .. import comm
from ..data import get_batch
from ..model import GPT, loss_fn
from ..runs import Recipe, RunResult, make_run, train
from .runner import PPRun
from .stages import gpt_stages

TORCH_SCHEDULES = {"gpipe": "ScheduleGPipe", "1f1b": "Schedule1F1B",
                   "interleaved": "ScheduleInterleaved1F1B"}


class TorchPipelineRecipe(Recipe):
    """One rank of the peer, trained by the lab's loop: torch's schedule over the same
    stages (``gpt_stages``) as ours."""

    def __init__(self, run: PPRun, group=None):
        from torch.distributed import pipelining
        super().__init__(run, group)
        self.replica = 0
        p, m = run.p, run.micro_batches
        gpt = GPT(run.config, run.seed)
        self.names = {id(t): n for n, t in gpt.named_parameters()}
        self.chunks = gpt_stages(gpt, p, self.rank, run.v, run.checkpoint,
                                 first=run.first_stage_layers, last=run.last_stage_layers)
        stages = [pipelining.PipelineStage(chunk, k * p + self.rank, p * run.v,
                                           comm.device(group), group=group)
                  for k, chunk in enumerate(self.chunks)]
        cls = getattr(pipelining, TORCH_SCHEDULES[run.schedule])
        # scale_grads=True (default): gradients are divided by m, i.e. the mean loss.
        self.schedule = cls(stages if run.schedule == "interleaved" else stages[0], m,
                            loss_fn=loss_fn)
        self.first = self.rank == 0
        self.last = any(chunk.last for chunk in self.chunks)
        self.model = torch.nn.ModuleList(self.chunks)
        self.optimizer = self.make_optimizer(self.model.parameters())

    def batch(self, step: int):
        r, c = self.run, self.run.config
        return get_batch(step, r.batch_size, c.seq_len, c.vocab_size, seed=r.data_seed)

    def before_step(self) -> None:
        dist.barrier(group=self.group)

    def train_step(self, x, y):
        losses = []
        self.schedule.step(*([x] if self.first else []), target=y if self.last else None,
                           losses=losses if self.last else None)
        return sum(t.item() for t in losses) / self.run.micro_batches if self.last else 0.0

    def full_state(self):
        params = [q for c in self.chunks for q in c.parameters()]
        return ({self.names[id(q)]: q.detach().clone() for q in params},
                {self.names[id(q)]: q.grad.clone() for q in params})


def torch_worker(run: PPRun, group=None) -> dict:
    """One rank of ``group`` (default: the world) training with torch's schedule."""
    return train(TorchPipelineRecipe(run, group))


def _check(run: PPRun, world_size: int) -> None:
    if isinstance(run, PPRun) and run.schedule not in TORCH_SCHEDULES:
        raise ValueError(f"schedule={run.schedule!r}: the peer has {sorted(TORCH_SCHEDULES)}")
    if isinstance(run, PPRun) and run.compute != "real":
        raise ValueError(f"compute={run.compute!r}: the peer runs the real model only")


_run = make_run(PPRun, torch_worker)


def torch_run(run: PPRun, world_size: int, timeout: float = 120.0) -> RunResult:
    """The peer on ``world_size`` (= p) ranks: same model split, data and optimizer,
    torch's schedule. Returns a ``RunResult`` (losses, state_dict, grads, step_times)."""
    if isinstance(run, PPRun):
        run.check(world_size)  # the run's own checks first, then the peer's limits
    _check(run, world_size)
    return _run(run, world_size, timeout)
