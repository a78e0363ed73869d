"""The paired communication operators of tensor parallelism, as autograd functions.

Megatron-LM (Shoeybi et al. 2019, §3, Fig. 3) splits each transformer block into a
column-parallel matmul followed by a row-parallel one, and needs exactly two
conjugate operators around that pair:

  f   forward: identity        backward: all-reduce   (before the column-parallel layer)
  g   forward: all-reduce      backward: identity     (after the row-parallel layer)

f sits where every rank needs the *whole* input X: each rank's backward produces only
its part of dL/dX (from its slice of the weight), and the parts must be summed. g sits
where every rank holds a *partial sum* of the output, which must be summed before the
residual add; its gradient is already the same on every rank.

Sequence parallelism (Korthikanti et al. 2022, "Reducing Activation Recomputation in
Large Transformer Models", §4.2.2, Fig. 5) keeps the regions *between* the blocks
(LayerNorm, dropout, residual) split along the sequence, and replaces f and g by

  g     forward: all-gather (sequence)      backward: reduce-scatter   (the paper's g)
  g_bar forward: reduce-scatter (sequence)  backward: all-gather       (the paper's g-bar)

An all-reduce *is* a reduce-scatter followed by an all-gather, so the same bytes move;
what changes is that nothing outside the blocks is stored or computed t times.

Every operator is a no-op when the group has one rank, and takes only ``(x, group)``, as
Megatron's do. Activations are (batch, seq, hidden); sequence shards are contiguous runs
of positions, rank r holding [r*T/t, (r+1)*T/t). Each collective is traced (``comm``)
with its pass ("forward"/"backward") and operator ("f", "g", "sp_gather",
"sp_reduce_scatter"); which layer it served is the runner's to say, from outside
(``trace.label_modules``): a backward keeps the tags its forward ran under.
"""

from __future__ import annotations

import torch
import torch.distributed as dist

from .. import comm, trace


def tp_size(group=None) -> int:
    return dist.get_world_size(group)


# --- the collectives themselves (out of place: autograd may still need the input) ----

def all_reduce(x: torch.Tensor, group) -> torch.Tensor:
    out = x.contiguous().clone()
    comm.all_reduce(out, group=group)
    return out


def gather_sequence(x: torch.Tensor, group) -> torch.Tensor:
    """(B, T/t, h) shards -> (B, T, h): rank r's shard becomes positions r*T/t.. ."""
    t = tp_size(group)
    B, Ts, h = x.shape
    flat = torch.empty(t * x.numel(), dtype=x.dtype, device=x.device)
    comm.all_gather(flat, x.contiguous().view(-1), group=group)
    # the gathered buffer is rank-major: (t, B, T/t, h) -> (B, t, T/t, h) -> (B, T, h)
    return flat.view(t, B, Ts, h).transpose(0, 1).reshape(B, t * Ts, h)


def rank_major(x: torch.Tensor, t: int) -> torch.Tensor:
    """(B, T, h) -> the flat (t, B, T/t, h) buffer a sequence reduce-scatter takes."""
    B, T, h = x.shape
    return x.view(B, t, T // t, h).transpose(0, 1).contiguous().view(-1)


def reduce_scatter_sequence(x: torch.Tensor, group) -> torch.Tensor:
    """(B, T, h) partial sums -> (B, T/t, h): this rank's positions, summed over ranks."""
    t = tp_size(group)
    B, T, h = x.shape
    out = torch.empty(B * (T // t) * h, dtype=x.dtype, device=x.device)
    comm.reduce_scatter(out, rank_major(x, t), group=group)
    return out.view(B, T // t, h)


def split_sequence(x: torch.Tensor, group, dim: int = 1) -> torch.Tensor:
    """This rank's contiguous slice of positions along ``dim`` (no communication)."""
    t = tp_size(group)
    r = dist.get_rank(group)
    T = x.size(dim)
    return x.narrow(dim, r * T // t, T // t)


# --- Megatron's f and g ------------------------------------------------------------

class _CopyToTensorParallel(torch.autograd.Function):
    """f: identity forward, all-reduce backward."""

    @staticmethod
    def forward(ctx, x, group):
        ctx.group = group
        trace.keep_tags(ctx)
        return x.view_as(x)

    @staticmethod
    def backward(ctx, grad):
        with trace.tagged_as(ctx, direction="backward", operator="f"):
            return all_reduce(grad, ctx.group), None


class _ReduceFromTensorParallel(torch.autograd.Function):
    """g: all-reduce forward, identity backward."""

    @staticmethod
    def forward(ctx, x, group):
        with trace.tagged(direction="forward", operator="g"):
            return all_reduce(x, group)

    @staticmethod
    def backward(ctx, grad):
        return grad, None


def f(x: torch.Tensor, group=None) -> torch.Tensor:
    """Megatron's f (before a column-parallel layer): identity, all-reduce in backward."""
    return x if tp_size(group) == 1 else _CopyToTensorParallel.apply(x, group)


def g(x: torch.Tensor, group=None) -> torch.Tensor:
    """Megatron's g (after a row-parallel layer): all-reduce, identity in backward."""
    return x if tp_size(group) == 1 else _ReduceFromTensorParallel.apply(x, group)


# --- sequence parallelism's pair ------------------------------------------------------

class _GatherFromSequenceParallel(torch.autograd.Function):
    """Korthikanti's g: all-gather the sequence forward, reduce-scatter backward."""

    @staticmethod
    def forward(ctx, x, group):
        ctx.group = group
        trace.keep_tags(ctx)
        with trace.tagged(direction="forward", operator="sp_gather"):
            return gather_sequence(x, group)

    @staticmethod
    def backward(ctx, grad):
        with trace.tagged_as(ctx, direction="backward", operator="sp_gather"):
            return reduce_scatter_sequence(grad, ctx.group), None


class _ReduceScatterToSequenceParallel(torch.autograd.Function):
    """Korthikanti's g-bar: reduce-scatter the sequence forward, all-gather backward."""

    @staticmethod
    def forward(ctx, x, group):
        ctx.group = group
        trace.keep_tags(ctx)
        with trace.tagged(direction="forward", operator="sp_reduce_scatter"):
            return reduce_scatter_sequence(x, group)

    @staticmethod
    def backward(ctx, grad):
        with trace.tagged_as(ctx, direction="backward", operator="sp_reduce_scatter"):
            return gather_sequence(grad, ctx.group), None


def sp_gather(x: torch.Tensor, group=None) -> torch.Tensor:
    """Sequence shards in, whole sequence out (reduce-scatter of the gradient back)."""
    return x if tp_size(group) == 1 else _GatherFromSequenceParallel.apply(x, group)


def sp_reduce_scatter(x: torch.Tensor, group=None) -> torch.Tensor:
    """Partial sums of the whole sequence in, summed sequence shard out."""
    return x if tp_size(group) == 1 else _ReduceScatterToSequenceParallel.apply(x, group)
