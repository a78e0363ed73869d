"""Gradient clipping by the global norm when the model is split over TP and PP.

``torch.nn.utils.clip_grad_norm_`` on one device computes ||g|| over every gradient and
scales all of them by min(1, max_norm / (||g|| + 1e-6)). Split over a mesh, no rank holds
every gradient, so each rank sums the squares of what it holds and the partial sums are
added over the right groups (Megatron-LM's ``get_grad_norm_fp32`` does the same):

  * a TP-split parameter (``tp_split`` set: a column or row slice) holds a different piece
    on each TP rank: every TP rank counts its piece, and the TP all-reduce adds them;
  * a parameter replicated over TP (layer norms, the row-parallel bias) holds the *same*
    values on every TP rank: only TP rank 0 counts it, or it would be counted t times;
  * each pipeline stage holds different layers: the PP all-reduce adds the stages;
  * data-parallel replicas hold the same, already averaged gradients (plain DP): they
    are not summed over DP, or the norm would grow by sqrt(dp);
  * under ZeRO 1-3 each replica holds only its own 1/dp shard of every averaged gradient
    (the optimizer's shards, ``DataParallel.held_gradients``): the shards are disjoint,
    so every rank counts its own and the sum runs over DP too (DeepSpeed's ZeRO
    optimizer sums its partitions' norms over the DP group the same way);
  * experts (EP, plain DP): each expert is held by its expert-data-parallel replicas and
    differs across the EP group, so the sum runs over EP; the dense parameters, the same
    on every rank of that group, are counted by its first rank only. Under ZeRO the
    dense and expert shards are both disjoint over DP x CP, which holds the EP group:
    the DP sum covers both;
  * CP ranks hold the same averaged gradients as DP replicas do: nothing changes.

The rule in one line: every distinct gradient value is counted on exactly one rank, and
the partial sums are added over groups that together reach all of those ranks. Then
every rank has the same norm and scales its own gradients by the same factor.
"""

from __future__ import annotations

from typing import NamedTuple

import torch
import torch.distributed as dist

EPS = 1e-6  # torch.nn.utils.clip_grad_norm_'s


class Piece(NamedTuple):
    """A gradient this rank holds: the tensor (a whole ``p.grad`` or an optimizer shard's),
    how its parameter is split over TP (None: replicated), and whether it is an expert's."""
    grad: torch.Tensor | None
    tp_split: object = None
    expert: bool = False


def local_square_sum(pieces, tp_rank: int, ep_rank: int = 0) -> torch.Tensor:
    """The squares of this rank's share of the gradient: its TP slices, the TP-replicated
    pieces on TP rank 0 only, and (``ep_rank`` > 0: plain DP with experts) the dense
    pieces on the EP group's first rank only. fp32, one element."""
    total = torch.zeros(1, dtype=torch.float32)
    for piece in pieces:
        if piece.grad is None:
            continue
        if piece.tp_split is None and tp_rank != 0:
            continue  # the same values as TP rank 0's: counted there, once
        if not piece.expert and ep_rank != 0:
            continue  # a dense gradient, the same on the EP group's first rank: counted there
        total += piece.grad.detach().float().pow(2).sum().cpu()
    return total


def sum_over(x: torch.Tensor, groups) -> torch.Tensor:
    """``x`` summed over each group in turn (each a process group or None to skip)."""
    for g in groups:
        if g is not None and dist.get_world_size(g) > 1:
            dist.all_reduce(x, group=g)
    return x


def global_grad_norm(pieces, groups, tp_rank: int, ep_rank: int = 0) -> float:
    """||g|| of the whole model's gradient, the same on every rank of the mesh: the local
    squares summed over ``groups`` (TP, PP, then DP under ZeRO or EP with experts)."""
    return float(sum_over(local_square_sum(pieces, tp_rank, ep_rank), groups).sqrt())


@torch.no_grad()
def clip_grad_norm_(pieces, max_norm: float, groups, tp_rank: int, ep_rank: int = 0) -> float:
    """Scale every held gradient by min(1, max_norm / (||g|| + 1e-6)) as torch's
    clip_grad_norm_ does on one device; returns ||g|| before clipping."""
    norm = global_grad_norm(pieces, groups, tp_rank, ep_rank)
    coef = min(1.0, max_norm / (norm + EPS))
    if coef < 1.0:
        for piece in pieces:
            if piece.grad is not None:
                piece.grad.mul_(coef)
    return norm
