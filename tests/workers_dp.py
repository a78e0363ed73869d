"""Rank-side workers for the data-parallel and ZeRO sub-group tests (ranks import them
by name)."""
import torch.distributed as dist

from parlab import data_parallel, mesh, zero


def dp_on_subgroups(runs):
    """Cut the world into groups of 2 consecutive ranks (``mesh.split``); group i trains
    ``runs[i]`` (a DPRun) data parallel over its group. Returns this rank's worker
    result, with the world rank and the group index beside it."""
    group, index = mesh.split(2)
    runs[index].check(dist.get_world_size(group))
    return dict(data_parallel.train_worker(runs[index], group), world_rank=dist.get_rank(),
                group=index)


def zero_on_subgroups(runs):
    """As ``dp_on_subgroups``, with ``runs[i]`` a ZeroRun: a ZeRO stage or a torch peer."""
    group, index = mesh.split(2)
    runs[index].check(dist.get_world_size(group))
    return dict(zero.train_worker(runs[index], group), world_rank=dist.get_rank(), group=index)
