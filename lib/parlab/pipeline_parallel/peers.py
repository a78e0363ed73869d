"""The peers: ``torch.distributed.pipelining`` (``ScheduleGPipe``, ``Schedule1F1B``,
``ScheduleInterleaved1F1B``, for our ZB-V ``ScheduleZBVZeroBubble`` or
``ScheduleDualPipeV``, for our DualPipeV ``ScheduleDualPipeV``) driving the very same
``PipelineStage`` modules, so its losses and parameters can be compared with ours number
for number, and its step time measured beside ours. A ``PPRun`` asks for it with ``peer``:

  "pipelining"  torch's schedule of the same name as the run's (zb-v: ZBVZeroBubble,
                dualpipev: DualPipeV -- the same order as ours, action for action)
  "dualpipev"   torch's ScheduleDualPipeV on ZB-V's V (schedule="zb-v"): another order

ZB-V's and DualPipeV's peers hold the same V (placement.py: rank r runs stages r and
2p - 1 - r). ``ScheduleDualPipeV`` is torch's "cut in half" DualPipe: DeepSeek's
bidirectional order played on one copy of the model in that V, not the two copies our
``dualpipe`` holds, so it is a peer of our DualPipeV and of ZB-V's placement, not of our
DualPipe."""

from __future__ import annotations

import torch
import torch.distributed as dist

from .. import comm
from ..data import get_batch
from ..model import GPT, loss_fn
from ..runs import Recipe, module_state
from .schedules import placement_of
from .stages import gpt_stages

PEERS = ("pipelining", "dualpipev")
TORCH_SCHEDULES = {"gpipe": "ScheduleGPipe", "1f1b": "Schedule1F1B",
                   "interleaved": "ScheduleInterleaved1F1B", "zb-v": "ScheduleZBVZeroBubble",
                   "dualpipev": "ScheduleDualPipeV"}
MULTI_STAGE = ("interleaved", "zb-v", "dualpipev")  # torch drives these with a list of stages


def check_peer(run) -> None:
    """ValueError unless torch can run ``run`` (a PPRun) with ``run.peer``."""
    if run.peer not in PEERS:
        raise ValueError(f"peer={run.peer!r} must be None or one of {PEERS}")
    if run.schedule not in TORCH_SCHEDULES:
        raise ValueError(f"schedule={run.schedule!r}: the peer has {sorted(TORCH_SCHEDULES)}")
    if run.compute != "real":
        raise ValueError(f"compute={run.compute!r}: the peer runs the real model only")
    if run.peer == "dualpipev" and run.schedule != "zb-v":
        raise ValueError(f"peer='dualpipev' runs on ZB-V's V placement: schedule='zb-v', "
                         f"got {run.schedule!r}")
    if run.peer == "dualpipev" and run.micro_batches < 2 * run.p:
        raise ValueError(f"peer='dualpipev' needs micro_batches >= 2p = {2 * run.p} "
                         f"(torch's ScheduleDualPipeV), got {run.micro_batches}")


class TorchPipelineRecipe(Recipe):
    """One rank of the peer, trained by the lab's loop: torch's schedule over the same
    stages (``gpt_stages``) as ours."""

    def __init__(self, run, group=None):
        from torch.distributed import pipelining
        super().__init__(run, group)
        self.replica = 0
        p = run.p
        m = run.micro_batches
        gpt = GPT(run.config, run.seed).to(comm.device(group))  # the stages' device
        self.names = {id(t): n for n, t in gpt.named_parameters()}
        where = placement_of(run.schedule, p, run.v, m)
        self.chunks = gpt_stages(gpt, p, self.rank, run.v, run.checkpoint, where=where,
                                 first=run.first_stage_layers, last=run.last_stage_layers)
        stages = [pipelining.PipelineStage(chunk, where.stage(self.rank, k), where.n_stages,
                                           comm.device(group), group=group)
                  for k, chunk in enumerate(self.chunks)]
        name = "ScheduleDualPipeV" if run.peer == "dualpipev" else TORCH_SCHEDULES[run.schedule]
        # scale_grads=True (default): gradients are divided by m, i.e. the mean loss.
        self.schedule = getattr(pipelining, name)(
            stages if run.schedule in MULTI_STAGE else stages[0], m, loss_fn=loss_fn)
        self.first = self.rank == 0
        self.last = any(chunk.last for chunk in self.chunks)
        self.model = torch.nn.ModuleList(self.chunks)
        self.optimizer = self.make_optimizer(self.model.parameters())

    def batch(self, step: int):
        r = self.run
        c = self.run.config
        return get_batch(step, r.batch_size, c.seq_len, c.vocab_size, seed=r.data_seed)

    def before_step(self) -> None:
        dist.barrier(group=self.group)

    def train_step(self, x, y):
        losses = []
        self.schedule.step(*([x] if self.first else []), target=y if self.last else None,
                           losses=losses if self.last else None)
        return sum(t.item() for t in losses) / self.run.micro_batches if self.last else 0.0

    def full_state(self):
        return module_state(self.model, self.names)
