"""The expert-parallel MoE layer: ``EPMoE.from_moe(moe, group, ep_group)`` is any
``parlab.moe.MoE`` with only this rank's experts, whose ``run_experts`` sends the tokens
to the experts and back; ``EPMoE.from_block(block, group, ep_group, router="gate",
experts="experts", top_k=2, renormalize=True)`` the same for another library's MoE block,
described (``MoE.from_block``). ``apply_expert_parallel`` swaps them into a model.

Experts are sharded over the EP group rank by rank: group rank g holds experts
[g E/ep, (g+1) E/ep) (GShard, Lepikhin et al. 2020, §3.2; Switch, Fedus et al. 2021,
§5.4: "expert parallelism"). The router is replicated; routing, capacity and the
auxiliary losses are the reference's code, fed the global counts (``router``).
"""

from __future__ import annotations

import torch
import torch.distributed as dist
import torch.nn as nn

from ..mesh import check_group
from ..moe import MoE, moe_layers, scatter_rows
from . import dispatch
from .router import global_counts_hook


class EPMoE(MoE):
    """A MoE layer holding experts ``[g E/ep, (g+1) E/ep)`` of the EP group's rank g.
    ``group``: every rank holding a slice of the batch (capacity and the balancing loss
    count over it); ``ep_group``: the ranks sharing the experts out (a sub-group of
    ``group``, or ``group`` itself)."""

    @classmethod
    def from_moe(cls, moe: MoE, group=None, ep_group=None) -> "EPMoE":
        check_group(group)
        check_group(ep_group, "ep_group")
        ep = dist.get_world_size(ep_group)
        g = dist.get_rank(ep_group)
        if moe.n_experts % ep:
            raise ValueError(f"ep={ep} must divide n_experts={moe.n_experts}")
        per = moe.n_experts // ep
        layer = cls(moe.router, {e: moe.experts[str(e)] for e in range(g * per, (g + 1) * per)},
                    top_k=moe.top_k, capacity_factor=moe.capacity_factor,
                    aux_loss_coef=moe.aux_loss_coef, z_loss_coef=moe.z_loss_coef,
                    balancer=moe.balancer, bias_update_rate=moe.bias_update_rate,
                    renormalize=moe.renormalize, layer=moe.layer, shared=moe.shared,
                    routing=moe.routing, expert_gemm=moe.expert_gemm, output=moe.output)
        with torch.no_grad():
            layer.expert_bias.copy_(moe.expert_bias)
        layer.aux_scale = moe.aux_scale
        layer.ep_group = ep_group
        layer.ep = ep
        layer.per_rank = per
        layer.counts_hook = global_counts_hook(group)
        return layer

    @classmethod
    def from_block(cls, block: nn.Module, group=None, ep_group=None, **description) -> "EPMoE":
        """Another library's MoE block (Mixtral's), described by ``description`` (router,
        experts, top_k, renormalize, output...: ``MoE.from_block``), with only this
        rank's experts. ValueError if the block does not fit the description."""
        return cls.from_moe(MoE.from_block(block, **description), group, ep_group)

    def run_experts(self, x2, idx, keep):
        E = self.n_experts
        k = idx.size(1)
        ep = self.ep
        per = self.per_rank
        flat = idx.reshape(-1)
        slots = keep.reshape(-1).nonzero().squeeze(-1)          # kept (token, choice) slots
        slots = slots[dispatch.sort_by_expert(flat[slots])]     # grouped by destination
        send = torch.bincount(flat[slots], minlength=E)         # rows per expert
        recv = dispatch.exchange_counts(send, self.ep_group).view(ep, per)
        in_splits = send.view(ep, per).sum(1).tolist()
        out_splits = recv.sum(1).tolist()
        got = self.send(x2[slots // k], out_splits, in_splits, "dispatch")
        # ``got`` is source-major, then expert-major: gather each local expert's rows
        # (sources in rank order = the reference's global token order) and run it once.
        start = (recv.reshape(-1).cumsum(0) - recv.reshape(-1)).view(ep, per).tolist()
        rows = [torch.cat([torch.arange(start[s][j], start[s][j] + int(recv[s, j]))
                           for s in range(ep)]) for j in range(per)]
        outs = self.expert_outputs(list(self.experts.values()), [got[r] for r in rows])
        y = scatter_rows(torch.cat(outs), torch.cat(rows), got.size(0))
        back = self.send(y, in_splits, out_splits, "combine")
        self.stats["local_tokens"] = {int(e): int(n) for e, n in
                                      zip(self.experts, recv.sum(0).tolist())}
        return scatter_rows(back, slots, idx.numel())

    def send(self, rows, out_splits, in_splits, operator: str):
        """One payload all-to-all over the EP group (looked up on the module at each
        call, so a test can plant a bug there; peers.py swaps in torch's)."""
        fn = dispatch.dispatch if operator == "dispatch" else dispatch.combine
        return fn(rows, out_splits, in_splits, self.ep_group)


def apply_expert_parallel(model: nn.Module, group=None, ep_group=None, cls=EPMoE,
                          blocks=None, **description) -> list[str]:
    """Every MoE layer of ``model`` made expert-parallel, in place; returns their dotted
    names. By default the layers are ``parlab.moe.MoE``'s; ``blocks`` -- a class, or a
    predicate (name, module) -> bool -- picks another library's blocks instead, each
    built by ``MoE.from_block(block, **description)``:

        apply_expert_parallel(model, group, ep_group, blocks=MixtralSparseMoeBlock,
                              router="gate", experts="experts", top_k=2, renormalize=True,
                              output="hidden_and_router_logits")

    Every match is checked before any is swapped: one that does not fit the description
    is a ValueError naming its path, and so is a model where nothing matched."""
    check_group(group)
    check_group(ep_group, "ep_group")
    if blocks is None and description:
        raise ValueError(f"a description ({', '.join(description)}) is for another "
                         "library's blocks: say which with blocks=<class or predicate>")
    if blocks is None:
        matches = lambda name, m: isinstance(m, MoE) and not isinstance(m, EPMoE)  # noqa: E731
    else:
        matches = (lambda name, m: isinstance(m, blocks)) if isinstance(blocks, type) else blocks
    found = [(name, m) for name, m in model.named_modules() if name and matches(name, m)]
    if not found:
        looked = "parlab.moe.MoE layers" if blocks is None else f"blocks matching {blocks!r}"
        raise ValueError(f"apply_expert_parallel found no {looked} in {type(model).__name__}")
    layers = []
    for name, m in found:  # describe them all first: nothing is swapped if one is refused
        try:
            layers.append(m if blocks is None else MoE.from_block(m, **description))
        except ValueError as e:
            raise ValueError(f"{name!r} of {type(model).__name__}: {e}") from None
    for (name, _), moe in zip(found, layers):
        parent, _, child = name.rpartition(".")
        setattr(model.get_submodule(parent), child, cls.from_moe(moe, group, ep_group))
    return [name for name, _ in found]


def expert_parameters(model: nn.Module) -> list:
    """The parameters of the experts ``model``'s expert-parallel layers hold on this rank:
    known by membership in the wrapped experts, never by name (their gradients are summed
    over the expert-data-parallel group, not averaged over every rank)."""
    seen = set()
    out = []
    for m in model.modules():
        if isinstance(m, EPMoE):
            for p in m.experts.parameters():
                if id(p) not in seen:
                    seen.add(id(p))
                    out.append(p)
    return out


def set_counts_group(model: nn.Module, group=None) -> None:
    """Without expert parallelism: every MoE layer still counts capacity and f_i over the
    whole batch, i.e. over the ranks of ``group``."""
    for m in moe_layers(model):
        m.counts_hook = global_counts_hook(group)
