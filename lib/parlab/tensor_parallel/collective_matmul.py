"""Forward overlap for sequence parallelism: the all-gather before a column-parallel GEMM
and the reduce-scatter after a row-parallel one, cut into chunks and pipelined.

With sequence parallelism (Korthikanti et al. 2022, §4.2.2) the column-parallel layer
all-gathers the sequence and then multiplies, Y = [X_0; ..; X_{t-1}] A_r, and the
row-parallel layer multiplies and then reduce-scatters. The GEMM needs the collective's
result (or the collective needs the GEMM's), so neither hides behind the other *whole*.
But the dependency is row by row: the rows of X that have arrived can be multiplied
while the others travel. Wang et al., "Overlap Communication with Dependent Computation
via Decomposition in Large Deep Learning Models" (ASPLOS 2023, §3), decompose
AllGather + Einsum and Einsum + ReduceScatter into such a loop; Megatron-Core's
``tp_comm_overlap`` with TransformerEngine's userbuffers does it on GPUs. This file is
its "split pipeline" form written small, over the lab's traced async collectives:

  all_gather_matmul     issue the all-gather of chunk k+1, then multiply chunk k
  matmul_reduce_scatter multiply chunk k+1 while chunk k's reduce-scatter runs

Each rank's sequence shard (T/t positions) is cut into ``chunks`` runs of n = T/(t c)
positions; chunk k of rank r covers global positions r T/t + k n .. + n (``positions``).
The first chunk's all-gather (the last chunk's reduce-scatter) has nothing to hide
behind: 1/c of the communication stays exposed (``cost.chunked_overlap``). Backward is
left unchunked (as in layers._ColumnParallelMatmul, whose backward the column side
reuses).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from .. import comm, trace
from .mappings import gather_sequence, tp_size


def check_chunks(chunks, positions_per_rank: int | None = None,
                 sequence_parallel: bool = True) -> int:
    """``chunks`` as an int >= 1, or ValueError naming ``overlap_chunks``: chunking needs
    sequence parallelism (it cuts SP's collectives) and equal runs of positions."""
    if isinstance(chunks, bool) or not isinstance(chunks, int) or chunks < 1:
        raise ValueError(f"overlap_chunks={chunks!r} must be an integer >= 1")
    if chunks > 1 and not sequence_parallel:
        raise ValueError(f"overlap_chunks={chunks} needs sequence_parallel=True: it pipelines "
                         "sequence parallelism's all-gather and reduce-scatter")
    if positions_per_rank is not None and positions_per_rank % chunks:
        raise ValueError(f"overlap_chunks={chunks} must divide the positions each rank "
                         f"holds (seq_len / tp = {positions_per_rank})")
    return chunks


def positions(rank: int, k: int, n: int, shard: int) -> slice:
    """The global sequence positions of chunk ``k`` (``n`` positions) of rank ``rank``'s
    shard (``shard`` = T/t positions): rank-major, as ``mappings.gather_sequence``."""
    return slice(rank * shard + k * n, rank * shard + (k + 1) * n)


# --- all-gather -> GEMM ------------------------------------------------------------------

def all_gather_matmul_forward(x, weight, bias, group, chunks: int):
    """F.linear(gather_sequence(x), weight, bias), with the all-gather of chunk k+1 in
    flight while chunk k is multiplied. x: (B, T/t, in) -> (B, T, out). No autograd."""
    t, (B, Ts, h) = tp_size(group), x.shape
    n = Ts // check_chunks(chunks, Ts)
    out = torch.empty(B, t * Ts, weight.size(0), dtype=x.dtype, device=x.device)
    bufs = [torch.empty(t * B * n * h, dtype=x.dtype, device=x.device) for _ in range(chunks)]

    def start(k):
        piece = x[:, k * n:(k + 1) * n].contiguous().view(-1)
        return comm.all_gather_async(bufs[k], piece, group=group)

    wait = start(0)
    for k in range(chunks):
        following = start(k + 1) if k + 1 < chunks else None   # travels during this GEMM
        wait()
        y = F.linear(bufs[k].view(t, B, n, h), weight, bias)   # (t, B, n, out)
        for r in range(t):
            out[:, positions(r, k, n, Ts)] = y[r]
        wait = following
    return out


# --- GEMM -> reduce-scatter --------------------------------------------------------------

def matmul_reduce_scatter_forward(x, weight, group, chunks: int):
    """reduce_scatter_sequence(F.linear(x, weight)), with chunk k's reduce-scatter in
    flight while chunk k+1 is multiplied. x: (B, T, in) -> (B, T/t, out). No autograd."""
    t, (B, T, _) = tp_size(group), x.shape
    Ts = T // t
    o = weight.size(0)
    n = Ts // check_chunks(chunks, Ts)
    out = torch.empty(B, Ts, o, dtype=x.dtype, device=x.device)
    pending = None
    for k in range(chunks):
        # rank-major send buffer (t, B, n, out): slice r is what rank r keeps of chunk k
        send = torch.stack([F.linear(x[:, positions(r, k, n, Ts)], weight) for r in range(t)])
        got = torch.empty(B * n * o, dtype=x.dtype, device=x.device)
        waiter = comm.reduce_scatter_async(got, send.view(-1), group=group)
        if pending is not None:                                # it ran during this GEMM
            pending[0]()
            out[:, pending[1] * n:(pending[1] + 1) * n] = pending[2].view(B, n, o)
        pending = (waiter, k, got)
    pending[0]()
    out[:, pending[1] * n:(pending[1] + 1) * n] = pending[2].view(B, n, o)
    return out


class _MatmulReduceScatter(torch.autograd.Function):
    """Forward chunked; backward as "F.linear, then g-bar": all-gather the output
    gradient, then the input and weight gradients from it (unchunked)."""

    @staticmethod
    def forward(ctx, x, weight, group, chunks):
        ctx.group = group
        trace.keep_tags(ctx)
        ctx.save_for_backward(x, weight)
        with trace.tagged(direction="forward", operator="sp_reduce_scatter"):
            return matmul_reduce_scatter_forward(x, weight, group, chunks)

    @staticmethod
    def backward(ctx, grad):
        x, weight = ctx.saved_tensors
        with trace.tagged_as(ctx, direction="backward", operator="sp_reduce_scatter"):
            full = gather_sequence(grad.contiguous(), ctx.group)   # (B, T, out)
        grad_x = full.matmul(weight)
        grad_w = full.reshape(-1, full.size(-1)).t().matmul(x.reshape(-1, x.size(-1)))
        return grad_x, grad_w, None, None


def matmul_reduce_scatter(x: torch.Tensor, weight: torch.Tensor, group=None,
                          chunks: int = 1) -> torch.Tensor:
    """The row-parallel layer's forward under sequence parallelism, X_r A_r summed over
    the group and scattered along the sequence, in ``chunks`` pipelined pieces (Wang et
    al. 2023, §3). x: (B, T, in/t) -> (B, T/t, out); no bias (it is added once, after)."""
    if tp_size(group) == 1:
        return F.linear(x, weight)
    check_chunks(chunks, x.size(1) // tp_size(group))
    return _MatmulReduceScatter.apply(x, weight, group, chunks)
