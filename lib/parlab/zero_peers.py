"""The peers of ``parlab.zero``: torch's own FSDP2 and DDP behind the same small
interface (``train_step(x, y) -> loss``, ``full_state() -> (params, grads)``), and
an interleaved step timer that runs ours and theirs in the same processes.

Tests use the peers to show that our ZeRO-3 computes what FSDP2 computes;
``bench/zero.py`` and notebook 01 use :func:`step_times` for the speed ratio.
"""

from __future__ import annotations

import statistics

import torch
import torch.distributed as dist

from . import comm, trace
from .cost import check_int
from .model import GPT, GPTConfig
from .data import local_batch
from .zero import PEERS, STAGES, _check, make


class TorchPeer:
    """``kind='fsdp2'``: FSDP2, ``fully_shard`` (Zhao et al., "PyTorch FSDP: Experiences
    on Scaling Fully Sharded Data Parallel", VLDB 2023), each block one FSDP unit and
    the root holding embeddings and head -- the same units as ours.
    ``kind='ddp'``: DistributedDataParallel (Li et al., "PyTorch Distributed", VLDB 2020)."""

    def __init__(self, kind: str, config: GPTConfig, lr: float = 1e-3, seed: int = 0,
                 weight_decay: float = 0.0):
        from torch.distributed.device_mesh import init_device_mesh
        self.kind, self.device = kind, comm.device()
        model = GPT(config, seed).to(self.device)
        if kind == "fsdp2":
            try:
                from torch.distributed.fsdp import fully_shard
            except ImportError:  # torch < 2.6
                from torch.distributed._composable.fsdp import fully_shard
            mesh = init_device_mesh(self.device.type, (dist.get_world_size(),))
            for block in model.blocks:
                fully_shard(block, mesh=mesh)
            fully_shard(model, mesh=mesh)
        else:
            model = torch.nn.parallel.DistributedDataParallel(model)
        self.model = model
        self.optimizer = torch.optim.AdamW(model.parameters(), lr=lr, betas=(0.9, 0.95),
                                           weight_decay=weight_decay)

    def train_step(self, x, y) -> float:
        self.optimizer.zero_grad(set_to_none=True)
        _, loss = self.model(x.to(self.device), y.to(self.device))
        loss.backward()
        self.optimizer.step()
        return loss.item()

    def full_state(self) -> tuple[dict, dict]:
        full = lambda t: t.full_tensor() if hasattr(t, "full_tensor") else t  # noqa: E731  DTensor
        model = self.model.module if self.kind == "ddp" else self.model
        return ({n: full(p.detach()).cpu().clone() for n, p in model.named_parameters()},
                {n: full(p.grad).cpu().clone() for n, p in model.named_parameters()})


def step_times_worker(variants, config, rounds, batch_size, warmup=2):
    """Rank side of :func:`step_times`: ``trace.interleaved`` over one training step of
    each variant (round k trains on batch k, made beforehand so it is not timed).
    Returns {variant: [seconds per round]}."""
    trainers = {v: make(v, config) for v in variants}
    batches = [local_batch(k, batch_size, config.seq_len, config.vocab_size, dist.get_rank(),
                           dist.get_world_size()) for k in range(warmup + rounds)]
    steps = {v: (lambda k, t=t: t.train_step(*batches[k])) for v, t in trainers.items()}
    return trace.interleaved(steps, rounds, warmup)["times"]


def step_times(variants, world_size: int, config: GPTConfig | None = None, rounds: int = 10,
               batch_size: int = 8, warmup: int = 2, timeout: float = 300.0) -> dict:
    """Interleaved A/B step times of ``variants`` (ZeRO stages 0-3, 'ddp', 'fsdp2') on
    ``world_size`` ranks, in the same processes. A step's time is the slowest rank's.
    Returns {variant: {"median": s, "times": [s per round]}}."""
    from .launch import launch
    config = GPTConfig() if config is None else config
    variants = list(variants)
    if not variants:
        raise ValueError("variants must name at least one of "
                         f"{STAGES + PEERS}")
    for v in variants:
        _check(v, world_size, batch_size, 1, config)
    check_int("rounds", rounds)
    res = launch(step_times_worker, world_size, variants, config, rounds, batch_size, warmup,
                 timeout=timeout)
    out = {}
    for v in variants:
        times = [max(r[v][k] for r in res) for k in range(rounds)]
        out[v] = {"median": statistics.median(times), "times": times}
    return out
