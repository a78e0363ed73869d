"""The collectives ZeRO is made of, launched asynchronously so that backward goes on
while they run, and traced from launch to completion (``trace.in_flight``):

  all_reduce(flat)            flat <- the sum of every rank's flat (plain DP, stage 0)
  reduce_scatter(out, flat)   out <- this rank's 1/n slice of that sum (stages 1-3)
  all_gather(flat, shard)     flat <- every rank's shard, in rank order (``shard`` may
                              be this rank's slice of ``flat``: in place)

Each returns ``wait()``: call it before reading the output. The trace events carry the
bytes a ring algorithm moves per rank (``comm.modelled_bytes``) and ``async_op=True``:
they run *beside* the compute, not instead of it.

Reduce-scatter on gloo. torch's gloo reduce-scatter took 1.5-1.7x the time of an
all-reduce of the same 3.3 MB buffer here (2 and 4 CPU ranks), though it has half the
work to do; with it ZeRO could not match DDP on CPU. We use the pairwise-exchange
algorithm that MPICH uses for long messages instead (Thakur, Rabenseifner & Gropp,
"Optimization of Collective Communication Operations in MPICH", IJHPCA 2005): one
all-to-all sends slice j of the buffer to rank j -- (n-1)/n of the buffer per rank,
the same bytes as a ring reduce-scatter -- and each rank adds up the n slices it
received (measured at 0.4-0.6x the all-reduce). NCCL gets torch's own.
"""

from __future__ import annotations

import torch
import torch.distributed as dist

from .. import comm, trace

# torch 2.13 renamed the flat-tensor forms; older releases have only the old names.
_all_gather = getattr(dist, "all_gather_single", None) or dist.all_gather_into_tensor
_reduce_scatter = getattr(dist, "reduce_scatter_single", None) or dist.reduce_scatter_tensor


def _traced(work, op: str, flat: torch.Tensor, group, label: str):
    return trace.in_flight(work, f"{op} {label}", async_op=True,
                           **comm.modelled_bytes(op, flat.numel() * flat.element_size(), group))


def all_reduce(flat: torch.Tensor, group=None, label: str = ""):
    return _traced(dist.all_reduce(flat, group=group, async_op=True), "all_reduce", flat,
                   group, label)


def reduce_scatter(out: torch.Tensor, flat: torch.Tensor, group=None, label: str = ""):
    n = dist.get_world_size(group)
    if dist.get_backend(group) != "gloo":
        return _traced(_reduce_scatter(out, flat, group=group, async_op=True),
                       "reduce_scatter", flat, group, label)
    received = torch.empty_like(flat)  # slice r of every rank's flat, in rank order
    arrived = _traced(dist.all_to_all_single(received, flat, group=group, async_op=True),
                      "reduce_scatter", flat, group, label)

    def wait():
        arrived()
        torch.sum(received.view(n, -1), 0, out=out)

    return wait


def all_gather(flat: torch.Tensor, shard: torch.Tensor, group=None, label: str = ""):
    return _traced(_all_gather(flat, shard, group=group, async_op=True), "all_gather", flat,
                   group, label)
