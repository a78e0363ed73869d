"""Two peers for our expert parallelism, on the same model, weights and batches.

Core PyTorch has no expert-parallel module (torchtitan and Megatron-LM build theirs
on all_to_all_single), so we compare with:

* ``build_dense``: every rank holds and computes every expert (data parallelism of
  the reference MoE model, ``model.GPT``): no all-to-all at all, more memory and
  E/ep times the expert weights' gradient all-reduce. Same numbers: capacity still
  counts the global batch (the counts all-gather of ``router``).
* ``build_torch_a2a``: our EPGPT with dispatch and combine done by PyTorch's own
  differentiable all-to-all,
  ``torch.distributed._functional_collectives.all_to_all_single_autograd`` (a private
  module in torch 2.13, the one torchtitan's MoE token dispatch uses): it works on gloo
  with uneven splits, and autograd reverses it as ours does.

Each returns (model, sync_grads), as the runner's own ``build`` does; an ``EPRun`` asks
for one by name (``peer``, one of ``PEERS``).
"""

from __future__ import annotations

import torch.distributed as dist
import torch.distributed._functional_collectives as funcol

from .. import comm, trace
from ..model import GPT
from .layers import EPMoE, apply_expert_parallel, set_counts_group
from .groups import make_groups, sync_grads


def build_dense(run, group=None):
    """The reference GPT on every rank (all experts), capacity over the global batch;
    every gradient averaged over the whole group (plain data parallelism)."""
    model = GPT(run.config, run.seed)
    set_counts_group(model, group)

    def average_all(m):
        with trace.tagged(layer="all", direction="backward", operator="dp_grads"):
            comm.all_reduce_grads(m.parameters(), group, 1.0 / dist.get_world_size(group),
                                  "dp_grads")
    return model, average_all


class TorchA2AMoE(EPMoE):
    """EPMoE whose payload all-to-alls are PyTorch's autograd-aware functional one."""

    def send(self, rows, out_splits, in_splits, operator: str):
        group = self.ep_group if self.ep_group is not None else dist.group.WORLD
        out = funcol.all_to_all_single_autograd(rows.contiguous(), out_splits, in_splits,
                                                group)
        return funcol.wait_tensor(out)  # an AsyncCollectiveTensor until waited


def build_torch_a2a(run, group=None):
    """Our expert parallelism with torch's functional all-to-all for dispatch and combine."""
    ep_group, dp_group = make_groups(group, run.ep or dist.get_world_size(group))
    model = GPT(run.config, run.seed)
    apply_expert_parallel(model, group, ep_group, TorchA2AMoE)
    return model, lambda m: sync_grads(m, group, dp_group)


PEERS = {"dense": build_dense, "torch_a2a": build_torch_a2a}
