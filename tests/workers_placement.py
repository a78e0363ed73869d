"""Rank-side workers for the dry-run test (tests/parlab/launch/test_dry_run.py): a
strategy's own worker with a CPU-only tensor planted in the model, as a learner's
model might have it. Each plant adds zero or multiplies by one, so that without the
placement check the run is still correct (on a GPU it would fail)."""
from __future__ import annotations

import contextlib

import torch

from parlab import comm
from parlab.launch.placement import PlacementError
from parlab.model import GPT, Block

_forward = Block.forward
_init = GPT.__init__


def _arange_in_forward(self, x, positions=None):
    # the bug: a tensor made without device=, on the CPU whatever x's device
    return _forward(self, x, positions) + torch.zeros(x.shape[-1])


def _init_with_attribute(self, config, seed=0):
    _init(self, config, seed)
    for block in self.blocks:
        # the bug: a plain attribute, which model.to(device) does not move (a buffer would be)
        block.gain = torch.ones(config.d_model)


def _forward_with_attribute(self, x, positions=None):
    return _forward(self, x, positions) * self.gain if hasattr(self, "gain") else _forward(
        self, x, positions)


PLANTS = {"arange_in_forward": {Block: {"forward": _arange_in_forward}},
          "cpu_attribute": {GPT: {"__init__": _init_with_attribute},
                            Block: {"forward": _forward_with_attribute}}}


@contextlib.contextmanager
def planted(name):
    for cls, methods in PLANTS[name].items():
        for attr, fn in methods.items():
            setattr(cls, attr, fn)
    try:
        yield
    finally:
        Block.forward = _forward
        GPT.__init__ = _init


def train_planted(worker, run, plant):
    """``worker(run)`` (a strategy's train_worker) with ``plant`` in every Block."""
    with planted(plant):
        return worker(run)


def where_am_i():
    """comm.device() on this rank, and the staging's result: a ring all-reduce by
    send/recv (staged) of rank+1 over the world."""
    t = torch.full((5,), float(torch.distributed.get_rank() + 1), device=comm.device())
    comm.ring_all_reduce(t)
    return {"device": str(comm.device()), "sum": t.tolist()}


def brought_back():
    """A result brought back with ``.cpu()`` or ``.to("cpu")`` is on the host: it may meet
    expected values made there (tools/gpu_all.py's collectives check does), and not a
    tensor on the device (on a GPU that fails)."""
    x = torch.arange(4.0, device=comm.device())
    want = torch.arange(4.0)  # expected values, made on the host
    seen = {"cpu()": torch.equal(x.cpu(), want), 'to("cpu")': torch.equal(x.to("cpu"), want)}
    try:
        x.cpu() + x
        seen["host copy + device"] = "allowed"
    except PlacementError:
        seen["host copy + device"] = "refused"
    return seen
