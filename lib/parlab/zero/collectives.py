"""The collectives ZeRO is made of, launched asynchronously so that backward goes on
while they run, and traced from launch to completion (``trace.in_flight``):

  all_reduce(flat)            flat <- the sum of every rank's flat (plain DP, stage 0)
  reduce_scatter(out, flat)   out <- this rank's 1/n slice of that sum (stages 1-3)
  all_gather(flat, shard)     flat <- every rank's shard, in rank order (``shard`` may
                              be this rank's slice of ``flat``: in place)

Each returns ``wait()``: call it before reading the output. The trace events carry the
bytes a ring algorithm moves per rank (``comm.modelled_bytes``) and ``async_op=True``:
they run *beside* the compute, not instead of it.

On gloo the reduce-scatter is a pairwise exchange (see ``comm.reduce_scatter_async``:
gloo's own is slower than an all-reduce of the same buffer).
"""

from __future__ import annotations

from .. import comm

all_reduce = comm.all_reduce_async
all_gather = comm.all_gather_async
reduce_scatter = comm.reduce_scatter_async
