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
    are not summed over DP, or the norm would grow by sqrt(dp). (Under ZeRO 1-3 each
    replica steps from its own shard of the gradient: those squares *would* be summed
    over DP, from the optimizer's shards; not composed here, and Run3D says so.)

Then every rank has the same norm and scales its own gradients by the same factor.
"""

from __future__ import annotations

import torch
import torch.distributed as dist

EPS = 1e-6  # torch.nn.utils.clip_grad_norm_'s


def local_square_sum(params, tp_rank: int) -> torch.Tensor:
    """The squares of this rank's share of the gradient: its TP slices, and the
    TP-replicated parameters on TP rank 0 only. fp32, one element."""
    total = torch.zeros(1, dtype=torch.float32)
    for p in params:
        if p.grad is None:
            continue
        if getattr(p, "tp_split", None) is None and tp_rank != 0:
            continue  # the same values as TP rank 0's: counted there, once
        total += p.grad.detach().float().pow(2).sum().cpu()
    return total


def sum_over(x: torch.Tensor, groups) -> torch.Tensor:
    """``x`` summed over each group in turn (each a process group or None to skip)."""
    for g in groups:
        if g is not None and dist.get_world_size(g) > 1:
            dist.all_reduce(x, group=g)
    return x


def global_grad_norm(params, tp_group, pp_group, tp_rank: int) -> float:
    """||g|| of the whole model's gradient, the same on every rank of the mesh."""
    return float(sum_over(local_square_sum(params, tp_rank), (tp_group, pp_group)).sqrt())


@torch.no_grad()
def clip_grad_norm_(params, max_norm: float, tp_group, pp_group, tp_rank: int) -> float:
    """Scale every gradient of ``params`` by min(1, max_norm / (||g|| + 1e-6)) as torch's
    clip_grad_norm_ does on one device; returns ||g|| before clipping."""
    norm = global_grad_norm(params, tp_group, pp_group, tp_rank)
    coef = min(1.0, max_norm / (norm + EPS))
    if coef < 1.0:
        for p in params:
            if p.grad is not None:
                p.grad.mul_(coef)
    return norm
