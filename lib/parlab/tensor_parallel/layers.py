"""Megatron's tensor-parallel layers (Shoeybi et al. 2019, §3), built from full weights.

A linear layer Y = X A (torch stores A transposed: ``weight`` is (out, in)) can be
split two ways over t ranks:

* by columns, A = [A_1 .. A_t]: rank r computes Y_r = X A_r, a slice of the output
  features, from the whole input.  ``ColumnParallelLinear``.
* by rows, A = [A_1; ..; A_t]: rank r computes X_r A_r from its slice of the input
  features; Y is the *sum* over ranks.  ``RowParallelLinear``.

Column then row needs no communication in between (each rank's output slice is
exactly the next layer's input slice, and GELU or per-head attention works slice by
slice), and one reduction after: g forward, f backward. Every layer here takes the
*full* initial weight and keeps its rank's slice, so any degree t starts from the
reference model's numbers.

The vocabulary is split the same way: ``VocabParallelEmbedding`` (rows of the table)
and ``vocab_parallel_cross_entropy`` (columns of the logits), which computes the loss
from the ranks' logit slices without ever gathering the (batch, seq, vocab) logits.
"""

from __future__ import annotations

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F

from .. import comm
from . import mappings
from .mappings import tp_size


def shard(full: torch.Tensor, dim: int, group, parts: int = 1) -> torch.Tensor:
    """This rank's slice of ``full`` along ``dim``. ``parts`` > 1: ``full`` is ``parts``
    blocks side by side (qkv = [q | k | v]) and the rank takes its slice of each, so
    that it owns whole heads of q, k and v alike."""
    t, r = tp_size(group), dist.get_rank(group)
    blocks = full.chunk(parts, dim)
    return torch.cat([b.chunk(t, dim)[r] for b in blocks], dim).clone()


def _param(t: torch.Tensor | None, sequence_parallel: bool = False, split=None):
    """A parameter, labelled for what comes after backward and for reassembly:
    ``split`` = (dim, parts) if it is a slice of the reference tensor (see ``shard``),
    None if every rank holds all of it."""
    if t is None:
        return None
    p = nn.Parameter(t)
    # Replicated on every rank but fed only this rank's sequence shard: its gradient is
    # partial and must be summed over the group after backward (Korthikanti §4.2.2).
    p.sequence_parallel = sequence_parallel
    p.tp_split = split
    return p


# --- the column-parallel matmul with its communication fused in (Megatron-LM's
# LinearWithGradAccumulationAndAsyncCommunication, written small) ----------------------

def unshard(shards: list[torch.Tensor], split) -> torch.Tensor:
    """The reference tensor from every rank's slice (``shard`` undone)."""
    if split is None:
        return shards[0]
    dim, parts = split
    pieces = [s.chunk(parts, dim) for s in shards]
    return torch.cat([torch.cat([p[j] for p in pieces], dim) for j in range(parts)], dim)


class _ColumnParallelMatmul(torch.autograd.Function):
    """Y = X A_r + b_r, where X is either the whole input (f's job is done here: its
    backward all-reduce) or, with sequence parallelism, this rank's sequence shard,
    all-gathered first (Korthikanti's g).

    Two refinements over "f, then a plain linear":
    * with sequence parallelism only the *shard* of X is saved for backward, and it is
      all-gathered again there (Korthikanti §4.2.2): t times fewer bytes kept, one
      more all-gather per layer in backward;
    * with ``overlap``, the input-gradient collective is *started* before the
      weight-gradient matmul and waited for after it, so the two run together.
    """

    @staticmethod
    def forward(ctx, x, weight, bias, group, layer, sequence_parallel, overlap):
        ctx.group, ctx.layer, ctx.sp, ctx.overlap = group, layer, sequence_parallel, overlap
        ctx.has_bias = bias is not None
        total = (mappings.gather_sequence(x, group, layer, "forward", "sp_gather")
                 if sequence_parallel else x)
        ctx.save_for_backward(x, weight)
        return F.linear(total, weight, bias)

    @staticmethod
    def backward(ctx, grad):
        x, weight = ctx.saved_tensors
        group, layer = ctx.group, ctx.layer
        total = (mappings.gather_sequence(x, group, layer, "backward", "sp_regather")
                 if ctx.sp else x)
        grad_input = grad.matmul(weight)                       # (B, T, in): partial over ranks
        wait = _start_input_grad_reduction(grad_input, group, layer, ctx.sp, ctx.overlap)
        grad_2d = grad.reshape(-1, grad.size(-1))
        grad_weight = grad_2d.t().matmul(total.reshape(-1, total.size(-1)))
        grad_bias = grad_2d.sum(0) if ctx.has_bias else None
        grad_input = wait()                                   # overlap: it ran beside the matmul
        return grad_input, grad_weight, grad_bias, None, None, None, None


def _start_input_grad_reduction(grad_input, group, layer, sequence_parallel, overlap):
    """Start summing the input gradient over the group (all-reduce; with sequence
    parallelism a reduce-scatter to this rank's positions). Returns wait() -> result.
    Without ``overlap`` the collective completes before this returns."""
    meta = dict(layer=layer, direction="backward",
                operator="sp_gather" if sequence_parallel else "f")
    if not sequence_parallel:
        out = grad_input.contiguous()
        if not overlap:
            comm.all_reduce(out, group=group, label=layer, **meta)
            return lambda: out
        waiter = comm.all_reduce_async(out, group=group, label=layer, **meta)
        return lambda: (waiter(), out)[1]
    t = tp_size(group)
    B, T, h = grad_input.shape
    rank_major = grad_input.view(B, t, T // t, h).transpose(0, 1).contiguous().view(-1)
    out = torch.empty(B * (T // t) * h, dtype=grad_input.dtype, device=grad_input.device)
    if not overlap:
        comm.reduce_scatter(out, rank_major, group=group, label=layer, **meta)
        return lambda: out.view(B, T // t, h)
    waiter = comm.reduce_scatter_async(out, rank_major, group=group, label=layer, **meta)
    return lambda: (waiter(), out.view(B, T // t, h))[1]


class ColumnParallelLinear(nn.Module):
    """Keeps rows ``r`` of the (out, in) weight -- A's columns -- and the matching bias
    slice. Input: the whole activation (or its sequence shard with ``sequence_parallel``);
    output: this rank's slice of the output features. ``parts``: see ``shard``."""

    def __init__(self, weight, bias, group=None, layer: str = "", sequence_parallel=False,
                 overlap=False, parts: int = 1):
        super().__init__()
        self.group, self.layer = group, layer
        self.sequence_parallel, self.overlap = sequence_parallel, overlap
        self.weight = _param(shard(weight, 0, group, parts), split=(0, parts))
        self.bias = _param(None if bias is None else shard(bias, 0, group, parts), split=(0, parts))

    def forward(self, x):
        if tp_size(self.group) == 1:
            return F.linear(x, self.weight, self.bias)
        if not (self.sequence_parallel or self.overlap):   # the textbook form: f, then matmul
            return F.linear(mappings.f(x, self.group, self.layer), self.weight, self.bias)
        return _ColumnParallelMatmul.apply(x, self.weight, self.bias, self.group, self.layer,
                                           self.sequence_parallel, self.overlap)


class RowParallelLinear(nn.Module):
    """Keeps columns ``r`` of the (out, in) weight -- A's rows. Input: this rank's slice
    of the input features; output: the full output after g (or this rank's sequence
    shard of it after g-bar). The bias is added once, after the sum."""

    def __init__(self, weight, bias, group=None, layer: str = "", sequence_parallel=False):
        super().__init__()
        self.group, self.layer, self.sequence_parallel = group, layer, sequence_parallel
        self.weight = _param(shard(weight, 1, group), split=(1, 1))
        self.bias = _param(bias.clone() if bias is not None else None, sequence_parallel)

    def forward(self, x):
        partial = F.linear(x, self.weight)                  # X_r A_r: one term of the sum
        reduce = mappings.sp_reduce_scatter if self.sequence_parallel else mappings.g
        y = reduce(partial, self.group, self.layer)
        return y if self.bias is None else y + self.bias


class VocabParallelEmbedding(nn.Module):
    """Rows [r V/t, (r+1) V/t) of the token table. A rank looks up the ids it owns,
    writes zeros for the others, and g (or g-bar) sums the ranks' partial lookups."""

    def __init__(self, weight, group=None, layer: str = "wte", sequence_parallel=False):
        super().__init__()
        self.group, self.layer, self.sequence_parallel = group, layer, sequence_parallel
        self.weight = _param(shard(weight, 0, group), split=(0, 1))
        rows = self.weight.size(0)
        self.start = dist.get_rank(group) * rows
        self.end = self.start + rows

    def forward(self, idx):
        if tp_size(self.group) == 1:
            return F.embedding(idx, self.weight)
        outside = (idx < self.start) | (idx >= self.end)
        local = (idx - self.start).masked_fill(outside, 0)
        partial = F.embedding(local, self.weight).masked_fill(outside.unsqueeze(-1), 0.0)
        reduce = mappings.sp_reduce_scatter if self.sequence_parallel else mappings.g
        return reduce(partial, self.group, self.layer)


# --- cross-entropy over vocabulary slices --------------------------------------------

class _VocabParallelCrossEntropy(torch.autograd.Function):
    """Mean over tokens of  log sum_v exp(z_v) - z_target,  where each rank holds the
    logits z of its vocabulary slice. Three all-reduces of one number per token (the max,
    for stability; the sum of exponentials; the target's logit, which lives on one rank)
    replace gathering V/t logits per token from every rank. Backward needs none: the
    gradient softmax(z) - onehot(target) is local to each slice."""

    @staticmethod
    def forward(ctx, logits, targets, group, layer):
        z = logits.reshape(-1, logits.size(-1)).float()   # (N, V/t)
        y = targets.reshape(-1)
        start = dist.get_rank(group) * z.size(1)
        m = z.max(dim=1).values
        comm.all_reduce(m, op=dist.ReduceOp.MAX, group=group, label=layer, layer=layer,
                        direction="forward", operator="ce_max")
        exp = (z - m.unsqueeze(1)).exp()
        sum_exp = exp.sum(dim=1)
        comm.all_reduce(sum_exp, group=group, label=layer, layer=layer,
                        direction="forward", operator="ce_sum_exp")
        mine = (y >= start) & (y < start + z.size(1))
        local_y = (y - start).masked_fill(~mine, 0)
        target = z.gather(1, local_y.unsqueeze(1)).squeeze(1).masked_fill(~mine, 0.0)
        comm.all_reduce(target, group=group, label=layer, layer=layer,
                        direction="forward", operator="ce_target")
        loss = sum_exp.log() + m - target                   # per token
        softmax = exp.div_(sum_exp.unsqueeze(1))
        ctx.save_for_backward(softmax, local_y, mine)
        ctx.shape = logits.shape
        return loss.mean()

    @staticmethod
    def backward(ctx, grad):
        softmax, local_y, mine = ctx.saved_tensors
        g = softmax.clone()
        rows = torch.arange(g.size(0), device=g.device)
        g[rows[mine], local_y[mine]] -= 1.0
        g.mul_(grad / g.size(0))
        return g.view(ctx.shape), None, None, None


def vocab_parallel_cross_entropy(logits, targets, group=None, layer: str = "lm_head"):
    """Mean next-token cross-entropy from this rank's (B, T, V/t) logit slice."""
    if tp_size(group) == 1:
        return F.cross_entropy(logits.reshape(-1, logits.size(-1)), targets.reshape(-1))
    return _VocabParallelCrossEntropy.apply(logits, targets, group, layer)
