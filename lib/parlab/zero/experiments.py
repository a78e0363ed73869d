"""Notebook 01's ZeRO timings and bench/zero.py: an interleaved step timer that runs
ours and PyTorch's in the same processes."""

from __future__ import annotations

import statistics

import torch.distributed as dist

from .. import trace
from ..data import local_batch
from ..model import GPTConfig
from ..validate import check_int
from .peers import PEERS
from .runner import _check, make
from .stages import STAGES


def step_times_worker(variants, config, rounds, batch_size, warmup=2):
    """Rank side of :func:`step_times`: ``trace.interleaved`` over one training step of
    each variant (round k trains on batch k, made beforehand so it is not timed).
    Returns {variant: [seconds per round]}."""
    trainers = {v: make(v, config) for v in variants}
    batches = [local_batch(k, batch_size, config.seq_len, config.vocab_size, dist.get_rank(),
                           dist.get_world_size()) for k in range(warmup + rounds)]
    steps = {v: (lambda k, t=t: t.train_step(*batches[k])) for v, t in trainers.items()}
    return trace.interleaved(steps, rounds, warmup)["times"]


def step_times(variants, world_size: int, config: GPTConfig | None = None, rounds: int = 10,
               batch_size: int = 8, warmup: int = 2, timeout: float = 300.0) -> dict:
    """Interleaved A/B step times of ``variants`` (ZeRO stages 0-3, 'ddp', 'fsdp2') on
    ``world_size`` ranks, in the same processes. A step's time is the slowest rank's.
    Returns {variant: {"median": s, "times": [s per round]}}."""
    from ..launch import launch
    config = GPTConfig() if config is None else config
    variants = list(variants)
    if not variants:
        raise ValueError("variants must name at least one of "
                         f"{STAGES + PEERS}")
    for v in variants:
        _check(v, world_size, batch_size, 1, config)
    check_int("rounds", rounds)
    res = launch(step_times_worker, world_size, variants, config, rounds, batch_size, warmup,
                 timeout=timeout)
    out = {}
    for v in variants:
        times = [max(r[v][k] for r in res) for k in range(rounds)]
        out[v] = {"median": statistics.median(times), "times": times}
    return out
