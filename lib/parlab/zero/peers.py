"""The peers of ``parlab.zero``: torch's own FSDP2 and DDP behind the same small
interface as our stages (``train_step(x, y) -> loss``, ``full_state() -> (params,
grads)``, ``states()``). Tests use them to show that our ZeRO-3 computes what FSDP2
computes; ``zero.experiments.step_times`` times ours and theirs in the same processes.
"""

from __future__ import annotations

import torch
import torch.distributed as dist

from .. import comm
from ..data_parallel.ddp import DDP_BUCKET_BYTES
from ..memory import optimizer_states
from ..model import GPT, GPTConfig

PEERS = ("ddp", "fsdp2")  # torch's own implementations, for comparison


class TorchPeer:
    """``kind='fsdp2'``: FSDP2, ``torch.distributed.fsdp.fully_shard`` (PyTorch's
    documentation, "torch.distributed.fsdp.fully_shard"): each parameter sharded on
    dim 0 as a DTensor, each block one FSDP unit and the root holding embeddings and
    head -- the same units as our ZeRO-3 -- over a DeviceMesh of ``group``.
    ``kind='ddp'``: DistributedDataParallel (Li et al., "PyTorch Distributed", VLDB
    2020) over ``group``, buckets of ``bucket_bytes``."""

    def __init__(self, kind: str, config: GPTConfig, lr: float = 1e-3, seed: int = 0,
                 weight_decay: float = 0.0, group=None, bucket_bytes: int = DDP_BUCKET_BYTES):
        self.kind, self.device = kind, comm.device(group)
        model = GPT(config, seed).to(self.device)
        if kind == "fsdp2":
            try:
                from torch.distributed.fsdp import fully_shard
            except ImportError:  # torch < 2.6
                from torch.distributed._composable.fsdp import fully_shard
            mesh = _mesh(group, self.device.type)
            for block in model.blocks:
                fully_shard(block, mesh=mesh)
            fully_shard(model, mesh=mesh)
        else:
            model = torch.nn.parallel.DistributedDataParallel(
                model, process_group=group, bucket_cap_mb=bucket_bytes / 2 ** 20)
        self.model = model
        self.optimizer = torch.optim.AdamW(model.parameters(), lr=lr, betas=(0.9, 0.95),
                                           weight_decay=weight_decay)

    def train_step(self, x, y) -> float:
        self.optimizer.zero_grad(set_to_none=True)
        _, loss = self.model(x.to(self.device), y.to(self.device))
        loss.backward()
        self.optimizer.step()
        return loss.item()

    def states(self) -> dict:
        """This rank's parameters, gradients and optimizer states (local shards)."""
        local = lambda t: t.to_local() if hasattr(t, "to_local") else t  # noqa: E731  DTensor
        params = list(self.model.parameters())
        return {"params": [local(p) for p in params],
                "grads": [local(p.grad) for p in params if p.grad is not None],
                "optimizer": [local(v) for v in optimizer_states(self.optimizer)]}

    def full_state(self) -> tuple[dict, dict]:
        full = lambda t: t.full_tensor() if hasattr(t, "full_tensor") else t  # noqa: E731  DTensor
        model = self.model.module if self.kind == "ddp" else self.model
        return ({n: full(p.detach()).cpu().clone() for n, p in model.named_parameters()},
                {n: full(p.grad).cpu().clone() for n, p in model.named_parameters()})


def _mesh(group, device_type: str):
    """A 1-D DeviceMesh over ``group``: the world's, or a sub-group's."""
    if group is None:
        from torch.distributed.device_mesh import init_device_mesh
        return init_device_mesh(device_type, (dist.get_world_size(),))
    from torch.distributed.device_mesh import DeviceMesh
    return DeviceMesh.from_group(group, device_type)
