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

Every operator is a no-op when the group has one rank. Activations are (batch, seq,
hidden); sequence shards are contiguous runs of positions, rank r holding
[r*T/t, (r+1)*T/t). Each collective is traced (``comm``) with the name of the layer it
serves, its pass ("forward"/"backward") and the operator ("f", "g", "sp_gather",
"sp_reduce_scatter") so that notebooks can count them per layer.
"""

from __future__ import annotations

import torch
import torch.distributed as dist

from .. import comm


def tp_size(group=None) -> int:
    return dist.get_world_size(group)


# --- the collectives themselves (out of place: autograd may still need the input) ----

def all_reduce(x: torch.Tensor, group, layer: str, direction: str, operator: str) -> torch.Tensor:
    out = x.contiguous().clone()
    comm.all_reduce(out, group=group, label=layer, layer=layer, direction=direction,
                    operator=operator)
    return out


def gather_sequence(x: torch.Tensor, group, layer: str, direction: str,
                    operator: str) -> torch.Tensor:
    """(B, T/t, h) shards -> (B, T, h): rank r's shard becomes positions r*T/t.. ."""
    t = tp_size(group)
    B, Ts, h = x.shape
    flat = torch.empty(t * x.numel(), dtype=x.dtype, device=x.device)
    comm.all_gather(flat, x.contiguous().view(-1), group=group, label=layer, layer=layer,
                    direction=direction, operator=operator)
    # the gathered buffer is rank-major: (t, B, T/t, h) -> (B, t, T/t, h) -> (B, T, h)
    return flat.view(t, B, Ts, h).transpose(0, 1).reshape(B, t * Ts, h)


def reduce_scatter_sequence(x: torch.Tensor, group, layer: str, direction: str,
                            operator: str) -> torch.Tensor:
    """(B, T, h) partial sums -> (B, T/t, h): this rank's positions, summed over ranks."""
    t = tp_size(group)
    B, T, h = x.shape
    rank_major = x.view(B, t, T // t, h).transpose(0, 1).contiguous().view(-1)
    out = torch.empty(B * (T // t) * h, dtype=x.dtype, device=x.device)
    comm.reduce_scatter(out, rank_major, group=group, label=layer, layer=layer,
                        direction=direction, operator=operator)
    return out.view(B, T // t, h)


def split_sequence(x: torch.Tensor, group) -> torch.Tensor:
    """This rank's contiguous slice of positions (no communication)."""
    t, r = tp_size(group), dist.get_rank(group)
    T = x.size(1)
    return x[:, r * T // t:(r + 1) * T // t]


# --- Megatron's f and g ------------------------------------------------------------

class _CopyToTensorParallel(torch.autograd.Function):
    """f: identity forward, all-reduce backward."""

    @staticmethod
    def forward(ctx, x, group, layer):
        ctx.group, ctx.layer = group, layer
        return x.view_as(x)

    @staticmethod
    def backward(ctx, grad):
        return all_reduce(grad, ctx.group, ctx.layer, "backward", "f"), None, None


class _ReduceFromTensorParallel(torch.autograd.Function):
    """g: all-reduce forward, identity backward."""

    @staticmethod
    def forward(ctx, x, group, layer):
        return all_reduce(x, group, layer, "forward", "g")

    @staticmethod
    def backward(ctx, grad):
        return grad, None, None


def f(x: torch.Tensor, group=None, layer: str = "") -> torch.Tensor:
    """Megatron's f (before a column-parallel layer): identity, all-reduce in backward."""
    return x if tp_size(group) == 1 else _CopyToTensorParallel.apply(x, group, layer)


def g(x: torch.Tensor, group=None, layer: str = "") -> torch.Tensor:
    """Megatron's g (after a row-parallel layer): all-reduce, identity in backward."""
    return x if tp_size(group) == 1 else _ReduceFromTensorParallel.apply(x, group, layer)


# --- sequence parallelism's pair ------------------------------------------------------

class _GatherFromSequenceParallel(torch.autograd.Function):
    """Korthikanti's g: all-gather the sequence forward, reduce-scatter backward."""

    @staticmethod
    def forward(ctx, x, group, layer):
        ctx.group, ctx.layer = group, layer
        return gather_sequence(x, group, layer, "forward", "sp_gather")

    @staticmethod
    def backward(ctx, grad):
        return reduce_scatter_sequence(grad, ctx.group, ctx.layer, "backward", "sp_gather"), \
            None, None


class _ReduceScatterToSequenceParallel(torch.autograd.Function):
    """Korthikanti's g-bar: reduce-scatter the sequence forward, all-gather backward."""

    @staticmethod
    def forward(ctx, x, group, layer):
        ctx.group, ctx.layer = group, layer
        return reduce_scatter_sequence(x, group, layer, "forward", "sp_reduce_scatter")

    @staticmethod
    def backward(ctx, grad):
        return gather_sequence(grad, ctx.group, ctx.layer, "backward", "sp_reduce_scatter"), \
            None, None


def sp_gather(x: torch.Tensor, group=None, layer: str = "") -> torch.Tensor:
    """Sequence shards in, whole sequence out (reduce-scatter of the gradient back)."""
    return x if tp_size(group) == 1 else _GatherFromSequenceParallel.apply(x, group, layer)


def sp_reduce_scatter(x: torch.Tensor, group=None, layer: str = "") -> torch.Tensor:
    """Partial sums of the whole sequence in, summed sequence shard out."""
    return x if tp_size(group) == 1 else _ReduceScatterToSequenceParallel.apply(x, group, layer)
