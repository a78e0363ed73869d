"""The peers of ``parlab.zero``: torch's own FSDP2 and DDP behind the same small
interface as ``ZeroDP`` (``train_step(x, y) -> loss``, ``full_state() -> (params,
grads)``). Tests use them to show that our ZeRO-3 computes what FSDP2 computes;
``zero.experiments.step_times`` times ours and theirs in the same processes.
"""

from __future__ import annotations

import torch
import torch.distributed as dist

from .. import comm
from ..model import GPT, GPTConfig

PEERS = ("ddp", "fsdp2")  # torch's own implementations, for comparison


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
