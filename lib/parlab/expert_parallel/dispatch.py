"""Dispatch and combine: the two all-to-alls of expert parallelism, as autograd functions.

GShard (Lepikhin et al. 2020, §3.2) shards the experts over the devices and moves the
tokens instead of the weights: each MoE layer sends every token to the rank that holds
its expert (dispatch), the expert runs there, and the result comes back (combine):

    counts    all_to_all of the per-expert counts: who will send me how many rows
    dispatch  all_to_all_single, uneven splits: rows grouped by destination rank
    combine   the reverse all_to_all_single: the same splits, swapped

Backward is the same exchange in reverse: the gradient of a dispatch is a combine of
the gradients and vice versa, so each layer costs four payload all-to-alls per step.
Every one is traced (``comm.all_to_all``) with the pass ("forward" or "backward") and
the operator ("counts", "dispatch", "combine"), the layer being the runner's to tag
from outside; ``payload_sent`` and ``payload_recv`` are the exact bytes that left and
reached this rank (the rows a rank keeps for its own experts never travel).
"""

from __future__ import annotations

import math

import torch
import torch.distributed as dist

from .. import comm, trace


def sort_by_expert(experts: torch.Tensor) -> torch.Tensor:
    """The order in which to send the kept assignments: by expert (so by destination
    rank, as experts are numbered rank by rank), stable, so that within one expert the
    rows keep the reference's (token, choice) order."""
    return torch.sort(experts, stable=True).indices


def all_to_all(x: torch.Tensor, out_splits: list[int], in_splits: list[int], group) -> torch.Tensor:
    """Rows ``x[sum(in_splits[:j]) : ...]`` go to group rank j; returns the rows
    received, source rank by source rank (``out_splits[j]`` from rank j)."""
    me = dist.get_rank(group)
    row = math.prod(x.shape[1:]) * x.element_size()
    out = x.new_empty((sum(out_splits),) + tuple(x.shape[1:]))
    comm.all_to_all(out, x.contiguous(), out_splits, in_splits, group=group,
                    payload_sent=(sum(in_splits) - in_splits[me]) * row,
                    payload_recv=(sum(out_splits) - out_splits[me]) * row)
    return out


class _AllToAll(torch.autograd.Function):
    """all_to_all forward; backward, the gradients go back the way the rows came."""

    @staticmethod
    def forward(ctx, x, out_splits, in_splits, group, operator):
        ctx.args = out_splits, in_splits, group, operator
        trace.keep_tags(ctx)
        with trace.tagged(direction="forward", operator=operator):
            return all_to_all(x, out_splits, in_splits, group)

    @staticmethod
    def backward(ctx, grad):
        out_splits, in_splits, group, operator = ctx.args
        # swapped splits: I send back what I received, and get back what I sent
        with trace.tagged_as(ctx, direction="backward", operator=operator):
            back = all_to_all(grad, in_splits, out_splits, group)
        return back, None, None, None, None


def exchange_counts(send_counts: torch.Tensor, group) -> torch.Tensor:
    """(E,) rows this rank sends to each expert -> (ep * E/ep,) rows each source rank
    sends to each of this rank's experts, source-major. Tells every rank how much to
    receive before the payload all-to-all (whose receive sizes must be known)."""
    out = torch.empty_like(send_counts)
    with trace.tagged(direction="forward", operator="counts"):
        comm.all_to_all(out, send_counts.contiguous(), group=group)
    return out


def dispatch(rows, out_splits, in_splits, group):
    """Send each row to the rank of its expert (GShard's dispatch)."""
    return _AllToAll.apply(rows, out_splits, in_splits, group, "dispatch")


def combine(rows, out_splits, in_splits, group):
    """Send the experts' outputs back to their tokens' ranks (GShard's combine); called
    with dispatch's splits swapped."""
    return _AllToAll.apply(rows, out_splits, in_splits, group, "combine")
