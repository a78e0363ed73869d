"""The expert-parallel MoE layer: the reference's ``parlab.moe.MoE`` with only this
rank's experts, whose ``run_experts`` sends the tokens to the experts and back.

Experts are sharded over the EP group rank by rank: group rank g holds experts
[g E/ep, (g+1) E/ep) (GShard, Lepikhin et al. 2020, §3.2; Switch, Fedus et al. 2021,
§5.4: "expert parallelism"). The router is replicated; routing, capacity and the
auxiliary losses are the reference's code, fed the global counts (``router``).
"""

from __future__ import annotations

import torch
import torch.distributed as dist

from ..model import MLP
from ..moe import MoE, scatter_rows
from . import dispatch
from .router import global_counts_hook


class EPMoE(MoE):
    """Block ``layer``'s MoE layer on this rank. ``group``: every rank holding a slice of
    the batch (capacity is counted over it); ``ep_group``: the ranks sharing the experts
    out (a sub-group of ``group``, or ``group`` itself)."""

    def __init__(self, config, layer: int, group=None, ep_group=None):
        ep, g = dist.get_world_size(ep_group), dist.get_rank(ep_group)
        per = config.n_experts // ep
        super().__init__(config, layer, experts=list(range(g * per, (g + 1) * per)), mlp=MLP)
        self.name, self.ep_group, self.ep, self.per_rank = f"blocks.{layer}.moe", ep_group, ep, per
        self.counts_hook = global_counts_hook(group, self.name)

    def run_experts(self, x2, idx, keep):
        E, k, ep, per = self.config.n_experts, self.config.top_k, self.ep, self.per_rank
        flat = idx.reshape(-1)
        slots = keep.reshape(-1).nonzero().squeeze(-1)          # kept (token, choice) slots
        slots = slots[dispatch.sort_by_expert(flat[slots])]     # grouped by destination
        send = torch.bincount(flat[slots], minlength=E)         # rows per expert
        recv = dispatch.exchange_counts(send, self.ep_group, self.name).view(ep, per)
        in_splits, out_splits = send.view(ep, per).sum(1).tolist(), recv.sum(1).tolist()
        got = self.send(x2[slots // k], out_splits, in_splits, "dispatch")
        # ``got`` is source-major, then expert-major: gather each local expert's rows
        # (sources in rank order = the reference's global token order) and run it once.
        start = (recv.reshape(-1).cumsum(0) - recv.reshape(-1)).view(ep, per).tolist()
        rows, outs = [], []
        for j, expert in enumerate(self.experts.values()):
            mine = torch.cat([torch.arange(start[s][j], start[s][j] + int(recv[s, j]))
                              for s in range(ep)])
            outs.append(expert(got[mine]))
            rows.append(mine)
        y = scatter_rows(torch.cat(outs), torch.cat(rows), got.size(0))
        back = self.send(y, in_splits, out_splits, "combine")
        self.stats["local_tokens"] = {int(e): int(n) for e, n in
                                      zip(self.experts, recv.sum(0).tolist())}
        return scatter_rows(back, slots, idx.numel())

    def send(self, rows, out_splits, in_splits, operator: str):
        """One payload all-to-all over the EP group (looked up on the module at each
        call, so a test can plant a bug there; peers.py swaps in torch's)."""
        fn = dispatch.dispatch if operator == "dispatch" else dispatch.combine
        return fn(rows, out_splits, in_splits, self.ep_group, self.name)
