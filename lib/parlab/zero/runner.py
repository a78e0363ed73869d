"""One ZeRO training run, in the lab's run convention:

    result = zero.run(ZeroRun(config=GPTConfig(...), steps=3, batch_size=8, zero_stage=2),
                      world_size=4)

``ZeroRun.check`` refuses bad input before any process starts; ``train_worker`` is what
each rank executes, on any process group; ``collect`` turns the ranks' returns into a
``RunResult``."""

from __future__ import annotations

from dataclasses import dataclass

import torch.distributed as dist

from .. import trace
from ..data import local_batch
from ..runs import RunResult, TrainRun
from ..validate import check_choice, check_int
from .peers import PEERS, TorchPeer
from .probes import MemoryProbe, Tracer
from .stage3 import ZeroStage3
from .stages import BUCKET_BYTES, STAGES, Stage0DP, ZeroStage1, ZeroStage2

CLASSES = {0: Stage0DP, 1: ZeroStage1, 2: ZeroStage2, 3: ZeroStage3}


@dataclass(frozen=True)
class ZeroRun(TrainRun):
    """A ZeRO run: ``zero_stage`` 0 (plain DP), 1, 2 or 3, or a torch peer "ddp" /
    "fsdp2"; gradients bucketed by ``bucket_bytes`` (stages 0-2, and DDP's
    ``bucket_cap_mb``). The dp ranks each train on an equal slice of ``batch_size``."""
    zero_stage: int | str = 3
    bucket_bytes: int = BUCKET_BYTES

    def check(self, world_size: int) -> None:
        super().check(world_size)
        check_choice("zero_stage", self.zero_stage, STAGES + PEERS)
        check_int("bucket_bytes", self.bucket_bytes)
        if self.batch_size % world_size:
            raise ValueError(f"dp=world_size={world_size} must divide batch_size="
                             f"{self.batch_size} (each rank trains on an equal slice)")


def make(run: ZeroRun, group=None, probe=None, tracer=None):
    """This rank's trainer for ``run`` over ``group``: a ZeRO stage, or a torch peer."""
    if run.zero_stage in PEERS:
        return TorchPeer(run.zero_stage, run.config, run.lr, run.seed, run.weight_decay, group,
                         run.bucket_bytes)
    return CLASSES[run.zero_stage](run.config, run.bucket_bytes, run.lr, run.seed,
                                   run.weight_decay, group, probe, tracer)


def train_worker(run: ZeroRun, group=None) -> dict:
    """Rank side of :func:`run`, data parallel over ``group`` (default: the world).
    Events carry the rank in ``group`` and the step in their meta."""
    rank, world, c = dist.get_rank(group), dist.get_world_size(group), run.config
    probe = MemoryProbe()
    trainer = make(run, group, probe, Tracer())
    losses, comm_bytes, step_times, events = [], [], [], []
    for step in range(run.steps):
        x, y = local_batch(step, run.batch_size, c.seq_len, c.vocab_size, rank, world,
                           run.data_seed)
        probe.reset()
        trace.start()
        t0 = trace.now()
        losses.append(trainer.train_step(x, y))
        step_times.append(trace.now() - t0)
        mine = trace.stop()
        comm_bytes.append(sum(e["bytes_sent"] for e in mine if e["kind"] == "comm"))
        events += [dict(e, rank=rank, meta={**e["meta"], "step": step}) for e in mine]
    params, grads = trainer.full_state()
    return {"rank": rank, "local_losses": losses, "comm_bytes": comm_bytes,
            "bytes_sent": sum(comm_bytes), "step_times": step_times, "events": events,
            "memory": probe.held(trainer),
            "buckets": [len(f.names) for f in getattr(trainer, "flats", [])],
            **({"state_dict": params, "grads": grads} if rank == 0 else {})}


def collect(run: ZeroRun, ranks: list[dict]) -> RunResult:
    """The ``RunResult`` of one group's ``train_worker`` returns, in group rank order."""
    return RunResult.from_replicas(ranks, run.steps, ("rank", "local_losses", "comm_bytes",
                                                      "bytes_sent", "step_times", "buckets"))


def run(run: ZeroRun, world_size: int, timeout: float = 120.0) -> RunResult:
    """Check ``run``, train with ZeRO stage ``run.zero_stage`` (or a torch peer) on
    ``world_size`` ranks, exactly as ``model.reference_train`` does on one device, and
    gather the result: ``memory`` per rank is what it held after the last step (bytes
    by kind, and the peaks of its transient buffers), ``ranks[r]["comm_bytes"]`` the
    traced bytes it sent in each step."""
    from ..launch import launch
    if not isinstance(run, ZeroRun):
        raise ValueError(f"run must be a ZeroRun, got {type(run).__name__}")
    run.check(world_size)
    return collect(run, launch(train_worker, world_size, run, timeout=timeout))
