"""Rank-side workers for the tensor-parallel tests (ranks import them by name)."""
import torch.distributed as dist

from parlab import mesh
from parlab.tensor_parallel import mappings, runner, train_worker


def tp_on_subgroups(runs):
    """Cut the world into groups of 2 consecutive ranks; group i trains ``runs[i]``
    tensor-parallel over its own group. Returns this rank's worker result, with the
    world rank and the group index beside it."""
    group, index = mesh.split(2)
    runs[index].check(dist.get_world_size(group))
    return dict(train_worker(runs[index], group), world_rank=dist.get_rank(), group=index)


def _identity(x, group=None, layer=""):
    return x


def buggy_worker(run, bug):
    """train_worker with one classic tensor-parallel mistake planted (restored after:
    the ranks are reused by later tests):
      "no_g"     the row-parallel outputs (and the embedding's) are never summed forward;
      "no_f"     the column-parallel input gradients are never summed backward;
      "no_sp_grad_sync"  with sequence parallelism, the LayerNorm / bias / position-table
                 gradients stay partial (each rank saw only its positions)."""
    saved = mappings.g, mappings.f, runner.sync_sequence_parallel_grads
    if bug == "no_g":
        mappings.g = _identity
    elif bug == "no_f":
        mappings.f = _identity
    elif bug == "no_sp_grad_sync":
        runner.sync_sequence_parallel_grads = lambda model, group=None: None
    else:
        raise ValueError(f"bug={bug!r}")
    try:
        return train_worker(run)
    finally:
        mappings.g, mappings.f, runner.sync_sequence_parallel_grads = saved
