"""Forward overlap by chunking, measured: the SP MLP's forward (fc1 all-gather -> GEMM,
GELU, fc2 GEMM -> reduce-scatter) with and without ``overlap_chunks``, on CPU ranks.
On CPU the collectives copy on the same cores as the GEMMs, so a ratio near 1 is noise,
not a verdict on GPUs (where the model is ``cost.tp_forward_overlap``)."""

from __future__ import annotations

import statistics
import time

import torch
import torch.distributed as dist
import torch.nn as nn

from parlab import hardware
from parlab.tensor_parallel.parallelize import Colwise, Rowwise, apply_tensor_parallel


def forward_timing_worker(d_model, d_ff, batch, seq_len, chunks, repeats, group=None):
    """Rank worker: one SP MLP per chunk count (same weights), forwards interleaved over
    the chunk counts ``repeats`` times; per chunk count this rank's forward seconds."""
    t, r = dist.get_world_size(group), dist.get_rank(group)
    mlps = {}
    for c in chunks:
        torch.manual_seed(0)
        mlp = nn.Sequential(nn.Linear(d_model, d_ff), nn.GELU(), nn.Linear(d_ff, d_model))
        apply_tensor_parallel(mlp, {"0": Colwise(overlap_chunks=c), "2": Rowwise(overlap_chunks=c)},
                              group, sequence_parallel=True)
        mlps[c] = mlp
    torch.manual_seed(1)
    x = torch.randn(batch, seq_len, d_model)[:, r * seq_len // t:(r + 1) * seq_len // t]
    times = {c: [] for c in chunks}
    with torch.no_grad():
        for i in range(repeats + 1):
            for c in chunks:
                dist.barrier(group)
                t0 = time.perf_counter()
                mlps[c](x)
                if i:  # the first round warms up
                    times[c].append(time.perf_counter() - t0)
    return times


def forward_overlap(tps=(2, 4), chunks=(1, 2, 4), d_model=256, d_ff=1024, batch=8,
                    seq_len=256, repeats=15) -> list[dict]:
    """Per t: rank 0's median forward time per chunk count and its ratio to unchunked."""
    from parlab.launch import launch
    rows = []
    for t in tps:
        times = launch(forward_timing_worker, t, d_model, d_ff, batch, seq_len, chunks, repeats)[0]
        base = statistics.median(times[chunks[0]])
        rows += [dict(tp=t, chunks=c, forward_s=statistics.median(times[c]),
                      ratio=statistics.median(times[c]) / base, samples=len(times[c]),
                      load=hardware.timing_note()[1]) for c in chunks]
    return rows
