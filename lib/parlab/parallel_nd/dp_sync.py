"""The data-parallel axis of a composed run: ZeRO stage 0-3 over the right groups.

Every rank holds one TP slice of one (or v) pipeline stage(s); the ranks holding the
*same* slice in the other replicas -- the dp x cp group -- average their gradients (the
mean loss over the global batch is the mean of the replicas' and the sequence shards'
means: equal slices). Experts are the exception: each is held by the ranks of its
expert-data-parallel group only, which already summed the tokens of their EP group, so
their gradients are summed there and divided by dp x cp (Megatron-LM scales expert
gradients the same way). ``DataParallel`` applies ``zero.apply_zero`` to both sets (stage
3 to each stage chunk: FullyShard shards a whole module) and drives the parts through
the family's one interface: ``no_sync`` during the pipeline, ``finish_grad_sync`` after
its flush.

Emulated runs (no real gradients) send the same bytes: zero gradients through the same
collectives a real step would issue.
"""

from __future__ import annotations

from contextlib import ExitStack

import torch
import torch.distributed as dist
import torch.nn as nn

from .. import comm, trace
from ..memory import held_bytes, optimizer_states
from ..model import ADAMW_BETAS
from ..runs import snapshot
from ..tensor_parallel.layers import unshard
from ..zero.stages import apply_zero
from .clip import Piece


class DataParallel:
    """Gradient sync and optimizer of this rank's stage chunks (see the module doc).
    ``experts``: the parameters of the experts this rank holds (EP), the rest are dense."""

    def __init__(self, stages: list, run, groups: dict, experts=(), emulated: bool = False):
        self.stage = run.zero_stage
        self.emulated = emulated
        self.groups = groups
        chain = nn.ModuleList(stages)
        self.params = list(chain.parameters())
        self.experts = {id(p) for p in experts}
        dense = [p for p in self.params if id(p) not in self.experts]
        expert = [p for p in self.params if id(p) in self.experts]
        opt = dict(lr=run.lr, weight_decay=run.weight_decay)
        if emulated:
            self.zeros = []
            self.optimizers = [torch.optim.AdamW(self.params, betas=ADAMW_BETAS, **opt)]
            return
        if self.stage == 3:
            self.zeros = [apply_zero(st, 3, groups["dp_cp"], **opt) for st in stages]
        else:
            self.zeros = [apply_zero(chain, self.stage, groups["dp_cp"], params=dense, **opt)]
            if expert:
                self.zeros.append(apply_zero(chain, self.stage, groups["edp"], params=expert,
                                             divide_by=run.dp * run.cp, **opt))
        self.optimizers = [z.optimizer for z in self.zeros]

    def no_sync(self):
        """During the pipeline: gradients add up over the micro-batches, unsent."""
        stack = ExitStack()
        for z in self.zeros:
            stack.enter_context(z.sync.no_sync())
        return stack

    def finish_grad_sync(self) -> None:
        """After the flush: every part sends what it accumulated, and waits."""
        if self.emulated:
            return self._emulated_reduce()
        for z in self.zeros:
            z.sync.finish_grad_sync()

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
                n = dist.get_world_size(g)
                flat = torch.cat([z.view(-1) for z in zeros])
                flat = torch.cat([flat, flat.new_zeros(-flat.numel() % n)])
                mine = flat.new_empty(flat.numel() // n)
                comm.reduce_scatter_async(mine, flat, g, "dp grads")()
                comm.all_gather_async(flat, mine, g, "dp params")()

    def held_gradients(self) -> list:
        """The averaged gradients this rank steps from, as ``clip.Piece``s: whole ``p.grad``
        (stage 0), or its shard of each parameter (stages 1-3), each with its parameter's
        TP split and whether it is an expert's."""
        return [Piece(g, getattr(p, "tp_split", None), id(p) in self.experts)
                for z in self.zeros for p, g in z.sync.held_gradients()]

    def step(self) -> None:
        for opt in self.optimizers:
            opt.step()

    def zero_grad(self) -> None:
        for opt in self.optimizers:
            opt.zero_grad(set_to_none=True)

    def parameters(self) -> list:
        """What this rank's optimizers step: the parameters, or (stage 3) their shards."""
        return [p for opt in self.optimizers for g in opt.param_groups for p in g["params"]] \
            if self.stage == 3 else self.params

    def memory(self) -> dict:
        params = self.parameters()
        grads = [p.grad for p in params] + [g for z in self.zeros
                                            for _, g in z.sync.held_gradients()]
        return held_bytes(params=params, grads=grads, optimizer=optimizer_states(self.optimizers))


@torch.no_grad()
def full_state(dp: DataParallel, stages, names: dict, groups: dict, fold: dict, me: dict,
               ep: int):
    """(parameters, gradients) by reference name, full, on TP rank 0 of the first replica
    (experts: of the first EP group); (None, None) elsewhere. A collective: every rank
    calls it (ZeRO's shards are gathered over dp x cp, TP slices over TP)."""
    values = {}
    grads = {}
    for z in dp.zeros:
        values.update(z.sync.full_tensors())
        grads.update(z.sync.full_tensors(grads=True))
    buffers = {t: t for st in stages for t in st.buffers() if id(t) in names}
    state = {}
    grad_out = {}
    if fold["dp_cp"] == 0:  # the first replica joins its TP slices (a TP collective)
        for p in [p for p in values if id(p) not in dp.experts]:
            split = getattr(p, "tp_split", None)
            for src, out in ((values, state), (grads, grad_out)):
                if src.get(p) is not None:
                    out[names[id(p)]] = _join(src[p], split, groups["tp"])
        state.update({names[id(t)]: t for t in buffers})
    if fold["dp_cp"] < ep:  # experts: the first EP group holds each once, whole
        for p in [p for p in values if id(p) in dp.experts]:
            state[names[id(p)]] = values[p]
            grad_out[names[id(p)]] = grads.get(p)
    return snapshot(state, grad_out) if me["tp"] == 0 and state else (None, None)


def _join(t: torch.Tensor, split, group) -> torch.Tensor:
    """The reference tensor from every TP rank's slice ``t`` (a TP collective)."""
    tp = dist.get_world_size(group)
    if split is None or tp == 1:
        return t
    shards = [torch.empty_like(t) for _ in range(tp)]
    dist.all_gather(shards, t.contiguous(), group=group)
    return unshard(shards, split)
