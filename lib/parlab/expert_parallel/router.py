"""What the router needs from the other ranks: the global counts.

The single-device reference (``parlab.moe``) caps every expert over the WHOLE global
batch and gives the first choices of all tokens priority, then token order (GShard,
Lepikhin et al. 2020, Algorithm 1; Switch, Fedus et al. 2021, §2.2). A rank sees only
its own tokens, so before it can tell which of its assignments fit it needs how many
assignments each earlier rank made to each expert, per choice: one all-gather of the
(top_k, n_experts) counts over every rank that holds a slice of the batch (the whole
run group, data-parallel replicas included). The same counts give Switch's f_i and
DeepSeek-V3's load for the whole batch.

Real systems avoid this all-gather by computing capacity per local "group" of tokens
(Switch's and GShard's groups are a device's tokens); the lab pays it (W k E integers
per layer) so that every expert-parallel run equals the single-device reference, drops
included.
"""

from __future__ import annotations

import torch
import torch.distributed as dist

from .. import comm, trace


def global_counts_hook(group):
    """A ``MoE.counts_hook`` for ``group``: (k, E) counts in, (every rank's counts
    (W, k, E), this rank's index in ``group``) out. Group ranks hold consecutive
    slices of the global batch, in rank order."""
    def hook(counts: torch.Tensor):
        W = dist.get_world_size(group)
        if W == 1:
            return counts.unsqueeze(0), 0
        out = counts.new_empty(W * counts.numel())
        with trace.tagged(direction="forward", operator="global_counts"):
            comm.all_gather(out, counts.reshape(-1), group=group)
        return out.view(W, *counts.shape), dist.get_rank(group)
    return hook
