"""Notebook 01's ZeRO timings and bench/zero.py: an interleaved step timer that runs
ours and PyTorch's in the same processes."""

from __future__ import annotations

import statistics

import torch.distributed as dist

from .. import trace
from ..cost import ZERO_STAGES
from ..data import local_batch
from ..data_parallel.ddp import DDP_BUCKET_BYTES
from ..model import GPTConfig
from ..validate import check_int
from .peers import PEERS
from ..runs import step_once
from .runner import ZeroRecipe, ZeroRun


def step_times_worker(runs: dict, rounds: int, warmup: int = 2, group=None) -> dict:
    """Rank side of :func:`step_times`: ``trace.interleaved`` over one training step of
    each run ({label: ZeroRun}) over ``group``; round k trains on batch k, made
    beforehand so it is not timed. Returns {label: [seconds per round]}."""
    rank, world = dist.get_rank(group), dist.get_world_size(group)
    trainers = {v: ZeroRecipe(r, group) for v, r in runs.items()}
    batches = {v: [local_batch(k, r.batch_size, r.config.seq_len, r.config.vocab_size, rank,
                               world, r.data_seed) for k in range(warmup + rounds)]
               for v, r in runs.items()}
    steps = {v: (lambda k, t=t, b=batches[v]: step_once(t, k, b[k])) for v, t in trainers.items()}
    return trace.interleaved(steps, rounds, warmup, group=group)["times"]


def step_times(variants, world_size: int, config: GPTConfig | None = None, rounds: int = 10,
               batch_size: int = 8, warmup: int = 2, timeout: float = 300.0,
               bucket_bytes: int = DDP_BUCKET_BYTES) -> dict:
    """Interleaved A/B step times of ``variants`` on ``world_size`` ranks, in the same
    processes. ``variants``: ZeRO stages 0-3 and peers 'ddp', 'fsdp2' (each trained as
    ``ZeroRun(config, batch_size=batch_size, zero_stage=v, bucket_bytes=bucket_bytes)``),
    or a dict {label: ZeroRun}. A step's time is the slowest rank's. Returns {variant or
    label: {"median": s, "times": [s per round]}}."""
    from ..launch import launch
    config = GPTConfig() if config is None else config
    if isinstance(variants, dict):
        runs = dict(variants)
    else:
        runs = {v: ZeroRun(config, batch_size=batch_size, zero_stage=v,
                           bucket_bytes=bucket_bytes) for v in variants}
    if not runs:
        raise ValueError(f"variants must name at least one of {ZERO_STAGES + PEERS}")
    for r in runs.values():
        if not isinstance(r, ZeroRun):
            raise ValueError(f"variants' values must be ZeroRun, got {type(r).__name__}")
        r.check(world_size)
    check_int("rounds", rounds)
    check_int("warmup", warmup, low=0)
    res = launch(step_times_worker, world_size, runs, rounds, warmup, timeout=timeout)
    out = {}
    for v in runs:
        times = [max(r[v][k] for r in res) for k in range(rounds)]
        out[v] = {"median": statistics.median(times), "times": times}
    return out
