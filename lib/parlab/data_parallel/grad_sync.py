"""The one gradient-sync interface of the data-parallel family, and what every member needs.

Every data-parallel part -- ``NaiveDP``, ``BucketedDP``, ``CompressedDP`` (whole
gradients), ``ShardedOptimizer`` (ZeRO-1/2), ``FullyShard`` (ZeRO-3) and ``HybridShard``
(HSDP) -- reduces the gradients of a backward pass *inside* that backward, as PyTorch's
DDP and FSDP2 do (and picotron's ``DataParallelBucket``): its hooks launch collectives
as gradients arrive, and the first of them queues a callback on the autograd engine
(``Variable._execution_engine.queue_callback``, what FSDP2 does) that runs once the
whole backward is done and finishes the round: the last buckets are sent, every
collective is waited for, the result is averaged into the gradients. When
``loss.backward()`` returns, the gradients are synchronised; no call is needed.

Two explicit calls, the same on every part:

  no_sync()          gradient accumulation: backward passes inside add up locally and
                     send nothing (DDP's name; FSDP2's ``set_requires_gradient_sync``)
  finish_grad_sync() finish a round now: send what ``no_sync`` held and wait. After a
                     backward outside ``no_sync`` it has nothing left to do (it returns
                     False); it is what a pipeline calls once after its flush, whose
                     backwards all ran under ``no_sync``.

How accumulation over m micro-batches meets each part:

* whole gradients (DP): under ``no_sync`` they add up on every rank and are all-reduced
  once, with the last micro-batch's backward (DDP's pattern) or by ``finish_grad_sync``;
* ZeRO-1/2 and ZeRO-3: under ``no_sync`` the full gradients add up locally, so during the
  step a rank holds them whole, and one reduce-scatter per bucket (per unit) leaves each
  rank its shard at the end -- torchtitan's FSDP + PP. Without ``no_sync`` every
  micro-batch's backward reduce-scatters and its shard is added to the shard gradient:
  the memory stays sharded at m times the traffic -- DeepSpeed's ZeRO-2 default. (ZeRO-3
  reshards its parameters after each micro-batch either way: its all-gathers are
  per forward and backward, not per step.)

Also shared: the broadcast at construction (every replica starts from the group's first
rank's weights, so ranks seeded differently agree), and the agreement on unused
parameters (a parameter no rank used keeps no gradient, so an optimizer skips it as on
one device).
"""

from __future__ import annotations

from contextlib import contextmanager

import torch
import torch.distributed as dist

from .. import comm, trace
from ..mesh import global_rank


class GradSync:
    """The interface above. A part calls ``grad_ready()`` from its hooks whenever a
    gradient arrives during backward, and implements ``_finish()``: send what is still
    to go, wait, average. ``sync`` is False inside ``no_sync()``."""

    sync = True
    _queued = False   # an end-of-backward callback is queued for the running backward
    _pending = False  # gradients arrived (sent or held) since the last finished round

    @contextmanager
    def no_sync(self):
        self.sync = False
        try:
            yield
        finally:
            self.sync = True

    def grad_ready(self) -> None:
        """A gradient arrived: this round has work, and (outside ``no_sync``) the end of
        this backward finishes it. (Called once per gradient: an nn.Module's attribute
        writes go through its ``__setattr__``, so each flag is written only when it
        changes.)"""
        if not self._pending:
            self._pending = True
        if self.sync and not self._queued:
            self._queued = True
            torch.autograd.Variable._execution_engine.queue_callback(self._end_of_backward)

    def _end_of_backward(self) -> None:
        self._queued = False
        # inside backward's call, but after its last gradient: the round's exposed part
        with trace.span(trace.FINISH_GRAD_SYNC, kind="wait"):
            self.finish_grad_sync()

    def finish_grad_sync(self) -> bool:
        """Finish this round: everything sent, waited for and averaged into the
        gradients. Returns whether there was a round to finish (False inside
        ``no_sync``, or when the last backward finished it already)."""
        if not self.sync or not self._pending:
            return False
        self._pending = False
        self._finish()
        return True

    def _finish(self) -> None:
        raise NotImplementedError

    def collective_groups(self) -> list[list]:
        """The parameters that travel together, one list per collective of a round (a
        bucket, a unit; one parameter each for NaiveDP)."""
        raise NotImplementedError


# --- what every member needs -----------------------------------------------------------

@torch.no_grad()
def broadcast_tensors(tensors, group=None) -> None:
    """Make every rank's ``tensors`` (in place) those of the group's first rank."""
    if dist.get_world_size(group) == 1:
        return
    first = global_rank(group, 0)
    for t in tensors:
        dist.broadcast(t.data, src=first, group=group)


def broadcast_state(module: torch.nn.Module, group=None) -> None:
    """Make every rank's parameters and buffers those of the group's first rank."""
    broadcast_tensors([*module.parameters(), *module.buffers()], group)


def trainable(module: torch.nn.Module) -> list[tuple[str, torch.nn.Parameter]]:
    """(name, parameter) of every parameter that trains, each once (a tied parameter
    under its first name), in ``named_parameters`` order."""
    return [(n, p) for n, p in module.named_parameters() if p.requires_grad]


def raise_without_gradient(names: list[str]):
    raise RuntimeError(
        f"{len(names)} parameter(s) got no gradient in this backward pass: "
        f"{', '.join(names[:6])}{' ...' if len(names) > 6 else ''}. Every rank must "
        "reduce the same gradients; if some parameters are unused, pass "
        "find_unused_parameters=True (DDP's option), or freeze them")


def used_anywhere(flags: list[bool], group=None) -> list[bool]:
    """Whether each parameter got a gradient on some rank of ``group`` (``flags``: on this
    one): one MAX all-reduce of a byte per parameter (bookkeeping, untraced)."""
    used = torch.tensor(flags, dtype=torch.uint8, device=comm.device(group))
    if dist.get_world_size(group) > 1:
        dist.all_reduce(used, op=dist.ReduceOp.MAX, group=group)
    return [bool(u) for u in used.tolist()]


def used_parameters(named, find_unused_parameters: bool, group=None) -> list:
    """The (name, parameter) pairs whose gradients the group reduces this step. Without
    ``find_unused_parameters`` every one must have a gradient (else RuntimeError naming
    those without); with it, one MAX all-reduce of a used-mask tells which got one on
    some rank: they get zeros here if they got none, the rest stay without a gradient."""
    if not find_unused_parameters:
        missing = [n for n, p in named if p.grad is None]
        if missing:
            raise_without_gradient(missing)
        return list(named)
    out = []
    for (n, p), anywhere in zip(named, used_anywhere([p.grad is not None for _, p in named], group)):
        if anywhere:
            if p.grad is None:
                p.grad = torch.zeros_like(p)
            out.append((n, p))
    return out
