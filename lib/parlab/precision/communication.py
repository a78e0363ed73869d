"""The precision of a gradient reduction: what summing in bf16 across ranks costs.

A ring reduce-scatter (``comm.ring_all_reduce``'s first phase) adds one chunk's n
contributions one hop at a time, each partial sum rounded to the wire's dtype: n - 1
roundings in sequence, so |computed - exact| <= gamma_(n-1) sum_i |x_i| with
gamma_k = k u / (1 - k u) (Higham, *Accuracy and Stability of Numerical Algorithms*, 2nd
ed. 2002, §4.2; ``cost.summation_error_bound``). In bf16 u = 2^-8, so at n = 256 ranks the
bound reaches 100%. Two ways out: sum in fp32 and round once at the end ("upcast, reduce,
downcast": twice the bytes on the wire), or send bf16 but add in fp32 on arrival (one
rounding per hop remains on the wire; what NCCL does not do for a bf16 ring).

``ring_order_sum`` replays a ring's order of additions in one process, so a world of 1,024
ranks can be computed here; the tests check it bit for bit against real ranks.
"""

from __future__ import annotations

import torch
import torch.distributed as dist

from .. import comm


def rank_gradients(rank: int, numel: int, seed: int = 0, dtype=torch.bfloat16) -> torch.Tensor:
    """Rank ``rank``'s gradient: a part all ranks share (the true gradient) plus noise of
    the same size (its own micro-batch), rounded to ``dtype``."""
    shared = torch.randn(numel, generator=torch.Generator().manual_seed(seed))
    own = torch.randn(numel, generator=torch.Generator().manual_seed(seed * 7919 + rank + 1))
    return ((shared + own) * 1e-3).to(dtype)


def ring_order_sum(xs: list[torch.Tensor], dtype=torch.bfloat16) -> torch.Tensor:
    """The sum a ring reduce-scatter computes for every element, in ``dtype``: chunk c of
    ``comm.chunk_bounds`` is started by rank c + 1 and picks up ranks c + 2, ..., c, each
    addition rounded to ``dtype`` (one hop = one vector add for all chunks at once)."""
    n = len(xs)
    numel = xs[0].numel()
    stack = torch.stack([x.reshape(-1).to(dtype) for x in xs])       # (rank, element)
    chunk = torch.empty(numel, dtype=torch.long)
    for c, (a, b) in enumerate(comm.chunk_bounds(numel, n)):
        chunk[a:b] = c
    cols = torch.arange(numel)
    acc = stack[(chunk + 1) % n, cols]
    for k in range(2, n + 1):
        acc = acc + stack[(chunk + k) % n, cols]  # one rounding to dtype per hop
    return acc.view_as(xs[0])


def errors(got: torch.Tensor, xs: list[torch.Tensor]) -> dict:
    """Error of a computed sum against the exact one (fp64): the largest and the mean of
    |got - exact| / sum_i |x_i| (the quantity the bound bounds)."""
    stack = torch.stack([x.double() for x in xs])
    exact = stack.sum(0)
    mag = stack.abs().sum(0).clamp_min(1e-300)
    rel = (got.double() - exact).abs() / mag
    return {"max": float(rel.max()), "mean": float(rel.mean())}


def reduce_worker(numel: int = 4096, seed: int = 0) -> dict:
    """On each rank: every way of summing the ranks' bf16 gradients, and its error (this
    rank's chunk for the reduce-scatters, the whole vector for the all-reduces)."""
    r = dist.get_rank()
    n = dist.get_world_size()
    xs = [rank_gradients(i, numel, seed) for i in range(n)]  # every rank's data, to check
    mine = xs[r]
    a, b = comm.chunk_bounds(numel, n)[r]
    out = {}
    ring = comm.ring_all_reduce(mine.clone())
    out["ring bf16"] = errors(ring, xs)
    out["ring = replay"] = bool(torch.equal(ring, ring_order_sum(xs)))
    out["gloo bf16"] = errors(_all_reduce(mine.clone()), xs)
    out["ring fp32, then bf16"] = errors(comm.ring_all_reduce(mine.float()).to(torch.bfloat16), xs)
    rs = comm.ring_reduce_scatter(mine)
    up = comm.ring_reduce_scatter(mine.float()).to(torch.bfloat16)  # upcast, reduce, downcast
    part = [x[a:b] for x in xs]
    out["reduce-scatter bf16"] = errors(rs, part)
    out["reduce-scatter fp32 accumulate"] = errors(up, part)
    out["bytes per element"] = {"bf16": mine.element_size(), "fp32": mine.float().element_size()}
    return out


def _all_reduce(t: torch.Tensor) -> torch.Tensor:
    dist.all_reduce(t)  # gloo's own algorithm, in t's dtype
    return t
