"""Hybrid sharding (HSDP): ZeRO-3 inside a node, plain data parallelism across nodes.

Zhao et al., "PyTorch FSDP", VLDB 2023, §3.2.2: on F ranks arranged as R replicas of
S = F / R ranks each (a shard group: one node, on fast links), the parameters are
sharded S ways *within* each group and replicated across groups. Forward and backward
all-gather and reduce-scatter only inside the shard group; after the reduce-scatter
each rank all-reduces its gradient *shard* with the ranks holding the same shard in the
other replicas (the replicate group), so only Psi / S bytes per rank cross the slow
links (``cost.hsdp_comm_volume``). Memory per rank is ZeRO-3's over S, not over F.
torch's equivalent is ``fully_shard(module, mesh=mesh)`` on a 2-D ``DeviceMesh`` of shape
(R, S): FSDP2 replicates over the mesh's dimension 0 and shards over dimension 1, whatever
the dimensions are named.

``HybridShard`` is ``FullyShard`` over the shard group plus that one all-reduce when its
round of gradients finishes: the parts compose, nothing is copied.
"""

from __future__ import annotations

import torch
import torch.distributed as dist
import torch.nn as nn

from .. import comm
from ..data_parallel.grad_sync import broadcast_state, used_anywhere
from ..mesh import check_group
from .fully_shard import FullyShard


def hsdp_groups(replicate: int, group=None):
    """(shard group, replicate group) of this rank for ``replicate`` replicas over
    ``group`` (default: the world): consecutive ranks form a shard group (a node), the
    ranks at the same place in each shard group a replicate group. A collective: every
    rank of the world calls it."""
    ranks = list(range(dist.get_world_size())) if group is None else \
        dist.get_process_group_ranks(group)
    if replicate < 1 or len(ranks) % replicate:
        raise ValueError(f"replicate={replicate} must divide the group's {len(ranks)} ranks")
    s = len(ranks) // replicate
    me = dist.get_rank()
    mine = {}
    for name, members in [("shard", [ranks[r * s:(r + 1) * s] for r in range(replicate)]),
                          ("replicate", [ranks[i::s] for i in range(s)])]:
        for m in members:  # every rank creates every group, in the same order
            g = dist.new_group(m)
            if me in m:
                mine[name] = g
    return mine["shard"], mine["replicate"]


class HybridShard(FullyShard):
    """HSDP of ``module``: a ``FullyShard`` over ``shard_group`` (``**kwargs`` are its
    options) whose finished round of gradients is then all-reduced, shard by shard, over
    ``replicate_group``. Train it as a FullyShard: ``parameters()`` are the shards, and
    when backward returns their gradients are the mean over all R x S ranks."""

    def __init__(self, module: nn.Module, shard_group, replicate_group, **kwargs):
        check_group(shard_group, "shard_group")
        replicate = check_group(replicate_group, "replicate_group")
        broadcast_state(module, replicate_group)  # then FullyShard's within the shard group:
        super().__init__(module, shard_group, **kwargs)  # every rank has rank 0's weights
        self.replicate = replicate
        self.replicas = dist.get_world_size(replicate_group)

    def _finish(self) -> None:
        """The shard group's reduce-scatters, then each gradient shard averaged over the
        replicas."""
        super()._finish()
        shards = [s for s in self.shards if s.requires_grad]
        for s, anywhere in zip(shards, used_anywhere([s.grad is not None for s in shards],
                                                     self.replicate)):
            if anywhere and s.grad is None:  # used in another replica only
                s.grad = torch.zeros_like(s)
        comm.all_reduce_grads(shards, self.replicate, 1.0 / self.replicas,
                              label="grad shards (across replicas)", axis="replicate")
