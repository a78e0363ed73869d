"""The reference GPT (``parlab.model``) with its MoE layers expert-parallel, composed
with data parallelism on the same ranks.

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

from .. import comm
from ..model import GPT, GPTConfig
from .layers import EPMoE


def make_groups(group, ep: int):
    """(EP group, expert data-parallel group) of this rank within ``group``: EP groups
    are runs of ``ep`` consecutive group ranks; the replicas of an expert are the ranks
    at the same place in each run. Either is ``group`` itself / None when trivial."""
    W, me = dist.get_world_size(group), dist.get_rank(group)
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


class EPGPT(GPT):
    """This rank's part of the reference GPT: everything replicated but the experts."""

    def __init__(self, config: GPTConfig, seed: int = 0, group=None, ep_group=None,
                 dp_group=None, moe_class=EPMoE):
        super().__init__(config, seed,
                         moe_factory=lambda c, i: moe_class(c, i, group, ep_group))
        self.group, self.ep_group, self.dp_group = group, ep_group, dp_group

    def expert_params(self):
        return [p for n, p in self.named_parameters() if ".moe.experts." in n]

    def replicated_params(self):
        return [p for n, p in self.named_parameters() if ".moe.experts." not in n]


def sync_grads(model: EPGPT) -> None:
    """Replicated parameters: mean over all ranks. Experts: sum over their replicas / W."""
    W = dist.get_world_size(model.group)
    comm.all_reduce_grads(model.replicated_params(), model.group, 1.0 / W, "dp_grads",
                          layer="all", direction="backward", operator="dp_grads")
    if model.dp_group is not None:  # each expert lives on world/ep ranks
        comm.all_reduce_grads(model.expert_params(), model.dp_group, 1.0 / W, "expert_dp_grads",
                              layer="all", direction="backward", operator="expert_dp_grads")
    else:  # one copy of each expert: nothing to sum, only the 1/W of the mean loss
        for p in model.expert_params():
            if p.grad is not None:
                p.grad.mul_(1.0 / W)


def local_tensors(model: EPGPT) -> tuple[dict, dict]:
    """(this rank's state_dict, its gradients by reference name), on the CPU: the
    replicated tensors and this rank's experts; ``runner.collect`` merges the EP group."""
    state = {k: v.detach().cpu().clone() for k, v in model.state_dict().items()}
    grads = {n: p.grad.detach().cpu().clone() for n, p in model.named_parameters()
             if p.grad is not None}
    return state, grads
