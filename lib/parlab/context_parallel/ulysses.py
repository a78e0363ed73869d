"""DeepSpeed-Ulysses: trade the sequence shards for head shards around attention.

Jacobs et al., "DeepSpeed Ulysses: System Optimizations for Enabling Training of Extreme
Long Sequence Transformer Models" (2023, arXiv 2309.14509), "Core Design", Fig. 1: each
rank projects its N/P positions into q, k and v; an all-to-all gives every rank the whole
sequence for 1/P of the heads; attention runs per head as on one device (any attention:
dense, causal, FlashAttention); a second all-to-all sends the outputs back to the ranks
that own the positions. The paper's communication analysis: per layer the all-to-alls
carry 3Nh (q, k, v) and Nh (the output) in aggregate, 4Nh/P per link -- constant when N
and P grow together, where Megatron's sequence parallelism sends ~4Nh whatever P.

Each all-to-all here is an autograd function whose backward is the opposite all-to-all,
so a training step issues 4 forward (q, k, v in; output back) and 4 backward (the
output's gradient in; dq, dk, dv back); each moves (cp-1)/cp of one local tensor
(``cost.cp_comm_per_layer``). The degree cp must divide the number of heads: a rank
gets whole heads.

With the zigzag layout the gathered sequence arrives in rank order (chunks 0, 2cp-1, 1,
2cp-2, ...); it is put back in position order before attention, so that the causal mask
is the ordinary triangle, and taken apart again before the return trip.
"""

from __future__ import annotations

import math

import torch
import torch.distributed as dist

from .. import comm, trace
from .layout import shard_sequence, unshard_sequence
from .ring import check_shards


def _all_to_all(send: torch.Tensor, group) -> torch.Tensor:
    """Chunk i of ``send`` (its first dimension) goes to group rank i; chunk j of the
    result came from group rank j."""
    recv = torch.empty_like(send)
    comm.all_to_all(recv, send, group=group)
    return recv


def seq_to_heads(x, group, layout):
    """[B, H, s/cp, d] sequence shard -> [B, H/cp, s, d]: the whole sequence, in position
    order, for this rank's group of heads."""
    n = dist.get_world_size(group)
    B, H, sl, d = x.shape
    send = x.reshape(B, n, H // n, sl, d).transpose(0, 1).contiguous()  # head group first
    recv = _all_to_all(send, group)                                    # source rank first
    return unshard_sequence(recv.unbind(0), 2, layout)


def heads_to_seq(y, group, layout):
    """[B, H/cp, s, d] for this rank's heads -> [B, H, s/cp, d]: every head, this rank's
    positions."""
    n = dist.get_world_size(group)
    send = torch.stack([shard_sequence(y, 2, n, j, layout) for j in range(n)])
    recv = _all_to_all(send, group)                                    # head group first
    B, h, sl, d = recv.shape[1:]
    return recv.transpose(0, 1).reshape(B, n * h, sl, d)


class _SeqToHeads(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, group, layout, operator):
        ctx.args = (group, layout, operator)
        trace.keep_tags(ctx)
        with trace.tagged(direction="forward", operator=operator):
            return seq_to_heads(x, group, layout)

    @staticmethod
    def backward(ctx, grad):
        group, layout, operator = ctx.args
        with trace.tagged_as(ctx, direction="backward", operator=operator):
            return heads_to_seq(grad.contiguous(), group, layout), None, None, None


class _HeadsToSeq(torch.autograd.Function):
    @staticmethod
    def forward(ctx, y, group, layout, operator):
        ctx.args = (group, layout, operator)
        trace.keep_tags(ctx)
        with trace.tagged(direction="forward", operator=operator):
            return heads_to_seq(y, group, layout)

    @staticmethod
    def backward(ctx, grad):
        group, layout, operator = ctx.args
        with trace.tagged_as(ctx, direction="backward", operator=operator):
            return seq_to_heads(grad.contiguous(), group, layout), None, None, None


def attention(q, k, v, causal: bool):
    """Plain attention over the whole sequence for the heads given (autograd does the
    backward, keeping the (s, s) probabilities: Ulysses works with any attention)."""
    trace.probe("attention_scores", q.size(1) * q.size(2) * k.size(2), direction="forward")
    with trace.span("ulysses attention", direction="forward"):
        s = q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))
        if causal:
            T = q.size(-2)
            s = s.masked_fill(torch.ones(T, T, dtype=torch.bool, device=q.device).triu(1),
                              float("-inf"))
        return s.softmax(-1) @ v


def ulysses_attention(q, k, v, causal: bool = True, group=None, layout: str = "contiguous"):
    """Exact (causal) attention of this rank's sequence shard, by two all-to-alls over
    ``group``. q, k, v: [batch, heads, s_local, head_dim], this rank's shards in
    ``layout`` order; returns this rank's shard of the output. The group's size must
    divide the number of heads."""
    check_shards(q, k, v, causal, layout)
    n = dist.get_world_size(group)
    if q.size(1) % n:
        raise ValueError(f"cp={n} must divide n_heads={q.size(1)}: Ulysses gives each rank "
                         "whole heads (so cp <= n_heads)")
    if n == 1:
        return attention(q, k, v, causal)
    q, k, v = (_SeqToHeads.apply(t, group, layout, name) for t, name in ((q, "q"), (k, "k"), (v, "v")))
    return _HeadsToSeq.apply(attention(q, k, v, causal), group, layout, "out")
