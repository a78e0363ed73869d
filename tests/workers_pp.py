"""Rank-side workers for the pipeline sub-group tests (ranks import them by name)."""
import dataclasses

import torch
import torch.distributed as dist

from parlab import mesh
from parlab.pipeline_parallel import train_worker


def pipelines_on_subgroups(runs, peer=False):
    """Cut the world into groups of ``runs[0].p`` consecutive ranks; group i runs
    ``runs[i]`` as a pipeline of its own (ours, or torch's with ``peer``). Returns this
    rank's worker result, with the world rank and the group index beside it."""
    group, index = mesh.split(runs[0].p)
    runs[index].check(dist.get_world_size(group))
    run = dataclasses.replace(runs[index], peer="pipelining") if peer else runs[index]
    out = train_worker(run, group)
    return dict(out, world_rank=dist.get_rank(), group=index)


def executor_on_lists(lists, m: int = 4):
    """One emulated step of the executor given every rank's action lists as data (no
    schedule name anywhere): (this rank's action count, its peak of stashed micro-batches)."""
    from parlab.pipeline_parallel import EmulatedCompute, PipelineExecutor, Placement

    p = dist.get_world_size()
    shape = (1, 2, 4)
    ex = PipelineExecutor(lists, Placement("round-robin", p, 1, m),
                          EmulatedCompute({"F": 0.001, "B": 0.002}, shape, p), shape)
    ex.step([torch.zeros(1, 2, dtype=torch.long) for _ in range(m)], [None] * m)
    return len(ex.actions), ex.peak
