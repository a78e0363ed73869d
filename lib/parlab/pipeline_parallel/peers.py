"""The peer: ``torch.distributed.pipelining`` (``ScheduleGPipe``, ``Schedule1F1B``,
``ScheduleInterleaved1F1B``, and for our ZB-V ``ScheduleZBVZeroBubble`` or
``ScheduleDualPipeV``) driving the very same ``PipelineStage`` modules, so its losses
and parameters can be compared with ours number for number, and its step time
measured beside ours. It takes the same ``PPRun`` as ``run``.

ZB-V's peers hold the same V (placement.py: rank r runs stages r and 2p - 1 - r).
``ScheduleDualPipeV`` is torch's "cut in half" DualPipe: DeepSeek's bidirectional order
played on one copy of the model in that V, not the two copies our ``dualpipe`` holds, so
it is a peer of our ZB-V's placement (``peer="dualpipev"``), not of our DualPipe."""

from __future__ import annotations

import torch
import torch.distributed as dist

from .. import comm
from ..data import get_batch
from ..model import GPT, loss_fn
from ..runs import Recipe, RunResult, make_run, train
from .runner import PPRun
from .schedules import placement_of
from .stages import gpt_stages

TORCH_SCHEDULES = {"gpipe": "ScheduleGPipe", "1f1b": "Schedule1F1B",
                   "interleaved": "ScheduleInterleaved1F1B", "zb-v": "ScheduleZBVZeroBubble"}
V_PEERS = {"zbv": "ScheduleZBVZeroBubble", "dualpipev": "ScheduleDualPipeV"}  # on ZB-V's V
MULTI_STAGE = ("interleaved", "zb-v")  # schedules torch drives with a list of stages


class TorchPipelineRecipe(Recipe):
    """One rank of the peer, trained by the lab's loop: torch's schedule over the same
    stages (``gpt_stages``) as ours."""

    def __init__(self, run: PPRun, group=None, peer: str | None = None):
        from torch.distributed import pipelining
        super().__init__(run, group)
        self.replica = 0
        p, m = run.p, run.micro_batches
        gpt = GPT(run.config, run.seed)
        self.names = {id(t): n for n, t in gpt.named_parameters()}
        where = placement_of(run.schedule, p, run.v, m)
        self.chunks = gpt_stages(gpt, p, self.rank, run.v, run.checkpoint, where=where,
                                 first=run.first_stage_layers, last=run.last_stage_layers)
        stages = [pipelining.PipelineStage(chunk, where.stage(self.rank, k), where.n_stages,
                                           comm.device(group), group=group)
                  for k, chunk in enumerate(self.chunks)]
        cls = getattr(pipelining, V_PEERS[peer] if peer else TORCH_SCHEDULES[run.schedule])
        # scale_grads=True (default): gradients are divided by m, i.e. the mean loss.
        self.schedule = cls(stages if run.schedule in MULTI_STAGE else stages[0], m,
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


def torch_worker(run: PPRun, group=None, peer: str | None = None) -> dict:
    """One rank of ``group`` (default: the world) training with torch's schedule."""
    return train(TorchPipelineRecipe(run, group, peer))


def _check(run: PPRun, world_size: int, peer: str | None) -> None:
    if isinstance(run, PPRun) and run.schedule not in TORCH_SCHEDULES:
        raise ValueError(f"schedule={run.schedule!r}: the peer has {sorted(TORCH_SCHEDULES)}")
    if isinstance(run, PPRun) and run.compute != "real":
        raise ValueError(f"compute={run.compute!r}: the peer runs the real model only")
    if peer is not None and peer not in V_PEERS:
        raise ValueError(f"peer={peer!r} must be None or one of {sorted(V_PEERS)}")
    if peer is not None and isinstance(run, PPRun) and run.schedule != "zb-v":
        raise ValueError(f"peer={peer!r} runs on ZB-V's V placement: schedule='zb-v', "
                         f"got {run.schedule!r}")
    if peer == "dualpipev" and isinstance(run, PPRun) and run.micro_batches < 2 * run.p:
        raise ValueError(f"peer='dualpipev' needs micro_batches >= 2p = {2 * run.p} "
                         f"(torch's ScheduleDualPipeV), got {run.micro_batches}")


def zbv_worker(run: PPRun, group=None) -> dict:
    """``torch_worker`` with torch's ScheduleZBVZeroBubble on ZB-V's V."""
    return torch_worker(run, group, "zbv")


def dualpipev_worker(run: PPRun, group=None) -> dict:
    """``torch_worker`` with torch's ScheduleDualPipeV on ZB-V's V."""
    return torch_worker(run, group, "dualpipev")


_runs = {None: make_run(PPRun, torch_worker), "zbv": make_run(PPRun, zbv_worker),
         "dualpipev": make_run(PPRun, dualpipev_worker)}


def torch_run(run: PPRun, world_size: int, timeout: float = 120.0,
              peer: str | None = None) -> RunResult:
    """The peer on ``world_size`` (= p) ranks: same model split, data and optimizer,
    torch's schedule (for ``schedule="zb-v"``: ``ScheduleZBVZeroBubble``, or with
    ``peer="dualpipev"`` ``ScheduleDualPipeV``). Returns a ``RunResult`` (losses,
    state_dict, grads, step_times)."""
    if isinstance(run, PPRun):
        run.check(world_size)  # the run's own checks first, then the peer's limits
    _check(run, world_size, peer)
    return _runs[peer](run, world_size, timeout)
