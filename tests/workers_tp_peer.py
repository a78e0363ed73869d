"""Rank-side workers for the tensor-parallel peer tests (ranks import them by name)."""
import dataclasses

import torch.distributed as dist

from parlab import mesh
from parlab.tensor_parallel import train_worker


def torch_tp_on_subgroups(runs):
    """Cut the world into groups of 2 consecutive ranks; group i trains ``runs[i]`` with
    PyTorch's tensor parallelism (a DeviceMesh of its own group). Returns this rank's
    worker result, with the world rank and the group index beside it."""
    group, index = mesh.split(2)
    runs[index].check(dist.get_world_size(group))
    run = dataclasses.replace(runs[index], peer="dtensor")
    return dict(train_worker(run, group), world_rank=dist.get_rank(), group=index)
