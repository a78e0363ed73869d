"""Notebook 01's first exercise, naive DP's exchange (§1): every rank's gradients become
the average over the ranks, in place.

``my_dp_exchange(grads, rank, world_size)`` runs on real ranks (``core.run_learner``)
after a real backward of a one-layer GPT on each rank's slice of the batch; the checker
compares every tensor on every rank with the mean of all ranks' gradients and names a
wrong answer's rank, parameter, element and error (the sum, a tensor never exchanged).
``exercises.data_parallel`` re-exports the checker and the reference.
"""

from __future__ import annotations

import torch
import torch.distributed as dist

from parlab.data import local_batch
from parlab.model import GPT, GPTConfig
from lessons.common.checkers import core
from lessons.common.i18n import t
from .text import TEXT
from lessons.common import record

__all__ = ["check_dp_exchange", "solution_dp_exchange"]

EXCHANGE_CONFIG = GPTConfig(n_layers=1, d_model=16, n_heads=2, seq_len=8)
EXCHANGE_BATCH = 4  # sequences per rank


# --- the reference, the rank side, the checker -------------------------------------------

def solution_dp_exchange(grads, rank, world_size):
    """Reference: sum every gradient over the ranks, then divide by their number."""
    for g in grads:
        dist.all_reduce(g)  # sum over ranks, in place
        g.div_(world_size)  # the mean of the slice gradients = the full batch's gradient


def _exchange_harness(source: str, name: str) -> dict:
    """Rank side: one backward of the small GPT on this rank's slice of the batch, then
    the learner's exchange on the gradients (in place)."""
    fn = core.load_learner(source, name)
    torch.set_num_threads(1)
    rank, world = dist.get_rank(), dist.get_world_size()
    c = EXCHANGE_CONFIG
    model = GPT(c, seed=0)
    x, y = local_batch(0, EXCHANGE_BATCH * world, c.seq_len, c.vocab_size, rank, world)
    model(x, y)[1].backward()
    names = [n for n, _ in model.named_parameters()]
    grads = [p.grad for p in model.parameters()]
    before = [g.clone() for g in grads]
    try:
        fn(grads, rank, world)
    except NotImplementedError:
        raise core.NotWritten(name) from None
    return {"names": names, "before": before, "after": [g.detach().clone() for g in grads]}


def check_dp_exchange(fn, world_size: int = 4, timeout: float = 30.0) -> dict:
    """Run ``fn(grads, rank, world_size)`` on ``world_size`` ranks after a real backward;
    every rank's every gradient must then equal the mean over ranks."""
    core.check_ranks("world_size", world_size, 2)
    core.check_timeout(timeout)
    results, bad = core.run_learner(_exchange_harness, fn, world_size, timeout=timeout)
    if bad:
        return bad
    names = results[0]["names"]
    mean = [sum(r["before"][i] for r in results) / world_size for i in range(len(names))]
    for rank, r in enumerate(results):
        for i, name in enumerate(names):
            got, want = r["after"][i], mean[i]
            msg = core.compare_tensors(got, want, where=t(TEXT, "exchange_where", rank=rank, name=name),
                                       atol=1e-6, rtol=1e-4)
            if msg:
                return core.verdict(False, msg + _exchange_hint(got, want, r["before"][i],
                                                                world_size))
    return core.verdict(True, t(TEXT, "exchange_ok", world=world_size, tensors=len(names)))


def _exchange_hint(got, want, own, world_size: int) -> str:
    if got.shape != want.shape:
        return ""
    if torch.allclose(got, world_size * want, rtol=1e-4, atol=1e-6):
        return t(TEXT, "exchange_sum", world=world_size)
    if torch.allclose(got, own, rtol=1e-6, atol=1e-8):
        return t(TEXT, "exchange_own")
    return ""


record.watch(globals())  # each check_* above also leaves its verdict in the learner's record
