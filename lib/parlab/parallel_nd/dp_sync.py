"""The data-parallel axis of a composed run: ZeRO stage 0-3 over the right groups.

Every rank holds one TP slice of one (or v) pipeline stage(s); the ranks holding the
*same* slice in the other replicas -- the dp x cp group -- average their gradients (the
mean loss over the global batch is the mean of the replicas' and the sequence shards'
means: equal slices). Experts are the exception: each is held by the ranks of its
expert-data-parallel group only, which already summed the tokens of their EP group, so
their gradients are summed there and divided by dp x cp (Megatron-LM scales expert
gradients the same way). ``DataParallel`` applies the lab's parts to both sets:

  zero_stage 0  BucketedDP (plain DP, DDP's buckets) + one AdamW
  zero_stage 1  ShardedOptimizer(stage=1): optimizer states partitioned
  zero_stage 2  ShardedOptimizer(stage=2): + gradients partitioned
  zero_stage 3  FullyShard on each stage chunk: + parameters partitioned

Emulated runs (no real gradients) send the same bytes: zero gradients through the same
collectives a real step would issue.
"""

from __future__ import annotations

from contextlib import ExitStack

import torch
import torch.distributed as dist
import torch.nn as nn

from .. import comm, trace
from ..data_parallel.ddp import BucketedDP
from ..expert_parallel.groups import is_expert
from ..memory import held_bytes, optimizer_states
from ..model import ADAMW_BETAS
from ..tensor_parallel.layers import unshard
from ..zero.fully_shard import FullyShard
from ..zero.sharded import ShardedOptimizer
from .clip import Piece


class DataParallel:
    """Gradient sync and optimizer of this rank's stage chunks (see the module doc)."""

    def __init__(self, stages: list, run, groups: dict, names: dict, emulated: bool = False):
        self.stage, self.emulated, self.groups = run.zero_stage, emulated, groups
        self.names = names
        opt = dict(lr=run.lr, betas=ADAMW_BETAS, weight_decay=run.weight_decay)
        named = [(names[id(p)], p) for st in stages for p in st.parameters()]
        dense = [(n, p) for n, p in named if not is_expert(n)]
        experts = [(n, p) for n, p in named if is_expert(n)]
        everyone = run.dp * run.cp  # replicas of the whole batch
        self.params, self.parts, self.fsdp = [p for _, p in named], [], []
        if emulated or self.stage == 0:
            chain = nn.ModuleList(stages)
            if not emulated:
                self.parts = [BucketedDP(chain, groups["dp_cp"], params=[p for _, p in dense])]
                if experts:
                    self.parts.append(BucketedDP(chain, groups["edp"], divide_by=everyone,
                                                 params=[p for _, p in experts]))
            self.optimizers = [torch.optim.AdamW(self.params, **opt)]
        elif self.stage in (1, 2):
            self.optimizers = [ShardedOptimizer(dense, torch.optim.AdamW, groups["dp_cp"],
                                                self.stage, **opt)]
            if experts:
                self.optimizers.append(ShardedOptimizer(experts, torch.optim.AdamW,
                                                        groups["edp"], self.stage,
                                                        divide_by=everyone, **opt))
            self.parts = self.optimizers
        else:
            self.fsdp = [FullyShard(st, groups["dp_cp"]) for st in stages]
            self.parts = self.fsdp
            self.optimizers = [torch.optim.AdamW([s for f in self.fsdp for s in f.parameters()],
                                                 **opt)]

    def no_sync(self):
        """During the pipeline: gradients add up over the micro-batches, unsent."""
        stack = ExitStack()
        for part in self.parts:
            stack.enter_context(part.no_sync())
        return stack

    def reduce(self) -> None:
        """After the flush: every part sends what it accumulated, and waits."""
        if self.emulated:
            return self._emulated_reduce()
        for part in self.parts:
            (part.reduce_gradients if isinstance(part, ShardedOptimizer) else part.finish_backward)()

    def _emulated_reduce(self) -> None:
        zeros = [torch.zeros_like(p) for p in self.params]
        for p, z in zip(self.params, zeros):
            p.grad = z
        g = self.groups["dp_cp"]
        if dist.get_world_size(g) == 1:
            return
        with trace.tagged(axis="dp"):
            if self.stage == 0:
                comm.all_reduce_grads(self.params, g, 1.0, "dp grads")
            else:  # a reduce-scatter and an all-gather: ZeRO's bytes (3 Psi / 2 for stage 3 aside)
                n, flat = dist.get_world_size(g), torch.cat([z.view(-1) for z in zeros])
                flat = torch.cat([flat, flat.new_zeros(-flat.numel() % n)])
                mine = flat.new_empty(flat.numel() // n)
                comm.reduce_scatter_async(mine, flat, g, "dp grads")()
                comm.all_gather_async(flat, mine, g, "dp params")()

    def held_gradients(self) -> list:
        """The averaged gradients this rank steps from, as ``clip.Piece``s: whole ``p.grad``
        (stage 0), or its shard of each parameter (stages 1-2: the optimizer's; stage 3:
        FullyShard's), each with its parameter's TP split and whether it is an expert's."""
        def piece(p, grad):
            return Piece(grad, getattr(p, "tp_split", None), is_expert(self.names[id(p)]))
        if self.fsdp:
            return [piece(p, s.grad) for f in self.fsdp for u in f.units
                    for p, s in zip(u.params, u.shards)]
        if self.stage in (1, 2):
            return [piece(p, s.grad) for o in self.optimizers for b in o.buckets
                    for p, s in zip(b.params, b.shards)]
        return [piece(p, p.grad) for p in self.params]

    def step(self) -> None:
        for opt in self.optimizers:
            opt.step()

    def zero_grad(self) -> None:
        for opt in self.optimizers:
            opt.zero_grad(set_to_none=True)

    def parameters(self) -> list:
        return [s for f in self.fsdp for s in f.parameters()] if self.fsdp else self.params

    def memory(self) -> dict:
        params = self.parameters()
        grads = [p.grad for p in params] + [s.grad for o in self.optimizers
                                            if isinstance(o, ShardedOptimizer) for s in o.shards()]
        inner = [getattr(o, "inner", o) for o in self.optimizers]
        return held_bytes(params=params, grads=grads, optimizer=optimizer_states(inner))


@torch.no_grad()
def full_state(dp: DataParallel, stages, names: dict, groups: dict, fold: dict, me: dict,
               ep: int):
    """(parameters, gradients) by reference name, full, on TP rank 0 of the first replica
    (experts: of the first EP group); (None, None) elsewhere. A collective: every rank
    calls it (ZeRO's shards are gathered over dp x cp, TP slices over TP)."""
    if dp.fsdp:
        values, grads = {}, {}
        for f in dp.fsdp:
            values.update(f.gather_full())
            grads.update(f.gather_full(grads=True))
    else:
        values = {p: p.detach() for p in dp.params}
        grads = {p: p.grad for p in dp.params if p.grad is not None}
        for o in dp.optimizers:
            if isinstance(o, ShardedOptimizer):  # gathered under the names it was given
                by_name = o.gathered_gradients()
                grads.update({p: by_name[names[id(p)]] for b in o.buckets for p in b.params})
    buffers = {t: t.detach() for st in stages for t in st.buffers() if id(t) in names}
    state, grad_out = {}, {}
    if fold["dp_cp"] == 0:  # the first replica joins its TP slices (a TP collective)
        tp = dist.get_world_size(groups["tp"])
        for p in [p for p in values if not is_expert(names[id(p)])]:
            split = getattr(p, "tp_split", None)
            for src, out in ((values, state), (grads, grad_out)):
                t = src.get(p)
                if t is not None:
                    out[names[id(p)]] = _join(t, split, tp, groups["tp"])
        state.update({names[id(t)]: v.cpu().clone() for t, v in buffers.items()})
    if fold["dp_cp"] < ep:  # experts: the first EP group holds each once, whole
        for p in [p for p in values if is_expert(names[id(p)])]:
            state[names[id(p)]] = values[p].cpu().clone()
            if p in grads:
                grad_out[names[id(p)]] = grads[p].cpu().clone()
    return (state, grad_out) if me["tp"] == 0 and state else (None, None)


def _join(t: torch.Tensor, split, tp: int, group) -> torch.Tensor:
    if split is None or tp == 1:
        return t.cpu().clone()
    shards = [torch.empty_like(t) for _ in range(tp)]
    dist.all_gather(shards, t.contiguous(), group=group)
    return unshard([s.cpu() for s in shards], split)
