"""Expert parallelism composed with data parallelism on the same ranks: the groups and
the gradient sync.

``group`` (W ranks) splits the global batch into W contiguous slices in rank order, as
data parallelism does. It is cut into W/ep EP groups of ep consecutive ranks; each EP
group holds every expert once (E/ep per rank), so expert e has W/ep replicas, one per
EP group, which form its "expert data-parallel" group (DeepSpeed-MoE, Rajbhandari et
al. 2022, §3: expert + data parallelism; GShard §3.2).

Gradients (each rank's loss is the mean over its own tokens, so the global loss is the
mean over ranks): the replicated parameters (attention, router, embeddings...) are
averaged over all W ranks, as in data parallelism; an expert's gradient already holds
the contributions of every token of its EP group (the combine's backward brought them
in), so it is summed over its W/ep replicas and divided by W.
"""

from __future__ import annotations

import torch.distributed as dist

from .. import comm, trace


def make_groups(group, ep: int):
    """(EP group, expert data-parallel group) of this rank within ``group``: EP groups
    are runs of ``ep`` consecutive group ranks; the replicas of an expert are the ranks
    at the same place in each run. Either is ``group`` itself / None when trivial."""
    W = dist.get_world_size(group)
    me = dist.get_rank(group)
    if ep == W:
        return group, None
    ranks = dist.get_process_group_ranks(group) if group is not None else list(range(W))
    ep_ranks = ranks[me // ep * ep:(me // ep + 1) * ep]
    dp_ranks = ranks[me % ep::ep]
    # Only the members create each group (no collective over the whole world), so
    # this works inside any sub-group of the world.
    ep_group = dist.new_group(ep_ranks, use_local_synchronization=True)
    dp_group = dist.new_group(dp_ranks, use_local_synchronization=True)
    return ep_group, dp_group


def sync_grads(model, group=None, dp_group=None) -> None:
    """Replicated parameters: mean over all ranks. Experts (``layers.expert_parameters``:
    those of the expert-parallel layers' experts): sum over their replicas / W."""
    from .layers import expert_parameters
    W = dist.get_world_size(group)
    experts = expert_parameters(model)
    mine = {id(p) for p in experts}
    with trace.tagged(layer="all", direction="backward", operator="dp_grads"):
        comm.all_reduce_grads([p for p in model.parameters() if id(p) not in mine], group,
                              1.0 / W, "dp_grads")
    if dp_group is not None:  # each expert lives on world/ep ranks
        with trace.tagged(layer="all", direction="backward", operator="expert_dp_grads"):
            comm.all_reduce_grads(experts, dp_group, 1.0 / W, "expert_dp_grads")
    else:  # one copy of each expert: nothing to sum, only the 1/W of the mean loss
        for p in experts:
            if p.grad is not None:
                p.grad.mul_(1.0 / W)
