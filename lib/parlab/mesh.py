"""Named process-group axes (a stub until the 3D issue builds ``Mesh(dp=, pp=, tp=)``).

Every strategy's rank-side code takes its process group and never assumes the world
group or the global rank, so that several strategies can share one launch: a 2-rank
data-parallel replica inside a 4-rank job, a tensor-parallel group inside a pipeline
stage. ``split`` is the smallest such layout: the world cut into equal, contiguous
groups.
"""

from __future__ import annotations

import torch.distributed as dist

from .validate import check_int


def split(size: int):
    """Cut the world into groups of ``size`` consecutive ranks and return (the group
    this rank is in, that group's index). Every rank must call it, in the same order:
    ``new_group`` is itself a collective over the world."""
    world = dist.get_world_size()
    check_int("size", size)
    if world % size:
        raise ValueError(f"size={size} must divide the world size {world}")
    mine = None
    for index in range(world // size):
        ranks = list(range(index * size, (index + 1) * size))
        group = dist.new_group(ranks)  # collective: created on every rank
        if dist.get_rank() in ranks:
            mine = (group, index)
    return mine


def global_rank(group, local: int) -> int:
    """The world rank of the ``local``-th member of ``group``: what point-to-point
    calls on the world communicator take as peer."""
    return dist.get_global_rank(group, local) if group is not None else local
