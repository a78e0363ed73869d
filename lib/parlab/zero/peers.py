"""The peers of ``parlab.zero``: torch's own FSDP2, DDP and ZeroRedundancyOptimizer on the
same model, applied as
our stages are (``torch_peer`` returns what ``stages.apply_zero`` returns: the module to
call, its gradient sync, its optimizer). Tests use them to show that our ZeRO-3 computes
what FSDP2 computes; the lesson's step timer (``lessons.l01_data_parallel``) times ours
and theirs in the same processes.
"""

from __future__ import annotations

from contextlib import contextmanager

import torch
import torch.distributed as dist

from ..data_parallel.peers import TorchDDP
from ..model import ADAMW_BETAS
from .stages import Zero, kernel_options

PEERS = ("ddp", "fsdp2", "zero_redundancy")  # torch's own implementations, for comparison


class _Peer(torch.nn.Module):
    """A torch-wrapped model with our parts' gradient-sync interface (torch's own finish
    inside backward too: ``finish_grad_sync`` has nothing to do)."""

    def __init__(self, model, module):
        super().__init__()
        self.model = model
        self.module = module

    def forward(self, *args, **kwargs):
        return self.model(*args, **kwargs)

    @contextmanager
    def no_sync(self):
        if hasattr(self.model, "no_sync"):  # DDP
            with self.model.no_sync():
                yield
            return
        self.model.set_requires_gradient_sync(False)  # FSDP2's name for it
        try:
            yield
        finally:
            self.model.set_requires_gradient_sync(True)

    def finish_grad_sync(self) -> bool:
        return False

    def collective_groups(self) -> list[list]:
        return []  # torch's own buckets / units, not ours to list

    def held_gradients(self) -> list:
        return [(p, _local(p.grad)) for p in self.module.parameters()]

    def full_tensors(self, grads: bool = False) -> dict:
        """{parameter: its full value or gradient}: FSDP2's DTensors gathered (a collective)."""
        def full(t):
            return t.full_tensor() if hasattr(t, "full_tensor") else t
        return {p: full((p.grad if grads else p).detach()) for p in self.module.parameters()
                if not grads or p.grad is not None}


def _local(t):
    """A DTensor's local shard (FSDP2's parameters), or the tensor itself."""
    return t.to_local() if hasattr(t, "to_local") else t


def torch_peer(kind: str, gpt, group=None, bucket_bytes: int = 25 << 20,
               reshard_after_forward: bool = True, replicate: int = 1, lr: float = 1e-3,
               weight_decay: float = 0.0, kernel: str | None = None) -> Zero:
    """``kind='fsdp2'``: FSDP2, ``torch.distributed.fsdp.fully_shard`` (PyTorch's
    documentation, "torch.distributed.fsdp.fully_shard"): each parameter sharded on dim 0
    as a DTensor, each block one FSDP unit and the root holding embeddings and head --
    the same units as our FullyShard's default -- over a DeviceMesh of ``group``, with
    ``reshard_after_forward``; ``replicate`` > 1: HSDP, a 2-D mesh of ``replicate`` x (ranks / replicate)
    (FSDP2 replicates over dim 0 and shards over dim 1; the names we give the dims are
    only labels), consecutive ranks one shard group (as
    ``hybrid.hsdp_groups``).
    ``kind='ddp'``: DistributedDataParallel (Li et al., "PyTorch Distributed", VLDB 2020)
    over ``group``, buckets of ``bucket_bytes``.
    ``kind='zero_redundancy'``: ZeRO-1 as torch ships it, DDP (as above) with
    ``torch.distributed.optim.ZeroRedundancyOptimizer`` around the AdamW: each rank keeps
    the optimizer states of a subset of whole parameters (not a slice of each, as ours),
    steps them after DDP's all-reduce, and broadcasts them to the others, one bucket
    view per rank (``parameters_as_bucket_view=True``, its faster layout: one broadcast
    per rank instead of one per parameter).
    ``kernel``: AdamW's implementation, as ``stages.apply_zero``'s (all three run on
    FSDP2's DTensors and inside ZeroRedundancyOptimizer too).
    Returns a ``stages.Zero``: the module to call (with our parts' interface), itself as
    the sync, and an AdamW as ours."""
    if kind == "fsdp2":
        try:
            from torch.distributed.fsdp import fully_shard
        except ImportError:  # torch < 2.6
            from torch.distributed._composable.fsdp import fully_shard
        device_type = next(gpt.parameters()).device.type
        mesh = (_mesh(group, device_type) if replicate == 1
                else _mesh_2d(group, device_type, replicate))
        for block in gpt.blocks:
            fully_shard(block, mesh=mesh, reshard_after_forward=reshard_after_forward)
        fully_shard(gpt, mesh=mesh, reshard_after_forward=reshard_after_forward)
        model = _Peer(gpt, gpt)
    else:
        model = _Peer(TorchDDP(gpt, group, bucket_bytes), gpt)
    opt = dict(lr=lr, betas=ADAMW_BETAS, weight_decay=weight_decay, **kernel_options(kernel))
    if kind == "zero_redundancy":
        from torch.distributed.optim import ZeroRedundancyOptimizer
        optimizer = ZeroRedundancyOptimizer(gpt.parameters(), torch.optim.AdamW,
                                            process_group=group,
                                            parameters_as_bucket_view=True, **opt)
    else:
        optimizer = torch.optim.AdamW(gpt.parameters(), **opt)
    return Zero(model, model, optimizer)


def _mesh(group, device_type: str):
    """A 1-D DeviceMesh over ``group``: the world's, or a sub-group's."""
    if group is None:
        from torch.distributed.device_mesh import init_device_mesh
        return init_device_mesh(device_type, (dist.get_world_size(),))
    from torch.distributed.device_mesh import DeviceMesh
    return DeviceMesh.from_group(group, device_type)


def _mesh_2d(group, device_type: str, replicate: int):
    """HSDP's 2-D DeviceMesh over ``group`` (default: the world): dim 0 the replicas, dim 1
    the shards, the order FSDP2 reads (the dims' names are labels)."""
    from torch.distributed.device_mesh import DeviceMesh

    from .hybrid import hsdp_groups
    ranks = list(range(dist.get_world_size())) if group is None else \
        dist.get_process_group_ranks(group)
    shard, across = hsdp_groups(replicate, group)
    return DeviceMesh.from_group([across, shard], device_type,
                                 mesh=torch.tensor(ranks).view(replicate, -1),
                                 mesh_dim_names=("replicate", "shard"))
